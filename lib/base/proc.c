/* This process's children, as the kernel lists them (proc.h). */
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "proc.h"

ssize_t
proc_children(pid_t *pids, size_t max)
{
	char	 path[64], buf[8192], *p, *end;
	ssize_t	 n, got;
	size_t	 k = 0;
	long	 v;
	int	 fd;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/children",
	    (long)syscall(SYS_gettid));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	/* The kernel gives the list a page or so per read. */
	for (n = 0; n < (ssize_t)sizeof(buf) - 1; n += got) {
		got = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n);
		if (got < 0 && errno == EINTR) {
			got = 0;
			continue;
		}
		if (got < 0) {
			close(fd);
			return -1;
		}
		if (got == 0)
			break;
	}
	close(fd);
	/* A full buffer may end inside a pid: that one is left out. */
	if (n == (ssize_t)sizeof(buf) - 1)
		while (n > 0 && buf[n - 1] != ' ')
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
