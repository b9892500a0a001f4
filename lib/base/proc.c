/* This process's children, as the kernel lists them (proc.h). */
#include <sys/syscall.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "proc.h"

ssize_t
proc_children(pid_t *pids, size_t max)
{
	char	 path[64], buf[8192], *p, *end;
	ssize_t	 n;
	size_t	 k = 0;
	long	 v;
	int	 fd;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/children",
	    (long)syscall(SYS_gettid));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -1;
	/* A full buffer may end inside a pid: that one is left out. */
	while (n == (ssize_t)sizeof(buf) - 1 && n > 0 && buf[n - 1] != ' ')
		n--;
	buf[n] = '\0';
	for (p = buf; *p != '\0' && k < max; p = end) {
		v = strtol(p, &end, 10);
		if (end == p)
			break;
		if (v > 0)
			pids[k++] = (pid_t)v;
	}
	return (ssize_t)k;
}
