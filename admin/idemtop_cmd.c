/* idemtop's child command: idemctl cleanup started from the console. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "idemtop_cmd.h"

extern char **environ;

enum idem_err
top_cmd_sibling(const char *prog, char *out, size_t cap)
{
	char	 self[4096], *slash;
	ssize_t	 n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return IDEM_ENOTFOUND;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return IDEM_ENOTFOUND;
	*slash = '\0';
	if ((size_t)snprintf(out, cap, "%s/%s", self, prog) >= cap)
		return IDEM_ETOOBIG;
	return access(out, X_OK) == 0 ? IDEM_OK : IDEM_ENOTFOUND;
}

/* Spawns argv with stdout and stderr on wfd; with closefrom, nothing of
 * ours past 2 (the MySQL socket is close-on-exec already: store_cloexec).
 * posix_spawn's error, 0 on success. */
static int
top_cmd_spawn(struct top_cmd *c, char *const argv[], int wfd, int closefrom)
{
	posix_spawn_file_actions_t fa;
	int	 rc;

	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return rc;
	if ((rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
	    O_RDONLY, 0)) == 0 &&
	    (rc = posix_spawn_file_actions_adddup2(&fa, wfd, 1)) == 0 &&
	    (rc = posix_spawn_file_actions_adddup2(&fa, wfd, 2)) == 0 &&
	    (!closefrom ||
	    (rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3)) == 0))
		rc = posix_spawn(&c->pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

enum idem_err
top_cmd_start(struct top_cmd *c, char *const argv[])
{
	int	 p[2], rc;

	if (c->pid > 0)
		return IDEM_EBUSY;
	if (pipe2(p, O_CLOEXEC) != 0)
		return IDEM_ESYS;
	/* glibc closes past 2 with close_range, else by reading
	 * /proc/self/fd: where neither works the spawn fails, and the
	 * command runs all the same, with what is close-on-exec closed. */
	if ((rc = top_cmd_spawn(c, argv, p[1], 1)) != 0)
		rc = top_cmd_spawn(c, argv, p[1], 0);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		c->pid = 0;
		errno = rc;
		return IDEM_ESYS;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	c->fd = p[0];
	c->outlen = 0;
	c->out[0] = '\0';
	return IDEM_OK;
}

static void
drain(struct top_cmd *c)
{
	char	 junk[512];
	ssize_t	 n;

	if (c->fd < 0)
		return;
	for (;;) {
		n = read(c->fd, junk, sizeof(junk));
		if (n <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(c->fd);
				c->fd = -1;
			}
			return;
		}
		/* Keep the first bytes (the one-line failure), drop the rest
		 * so a chatty child cannot grow memory. */
		if (c->outlen + 1 < sizeof(c->out)) {
			size_t k = (size_t)n;

			if (k > sizeof(c->out) - 1 - c->outlen)
				k = sizeof(c->out) - 1 - c->outlen;
			memcpy(c->out + c->outlen, junk, k);
			c->outlen += k;
			c->out[c->outlen] = '\0';
		}
	}
}

int
top_cmd_poll(struct top_cmd *c, int *status)
{
	pid_t	 r;

	if (c->pid <= 0)
		return 0;
	drain(c);
	r = waitpid(c->pid, status, WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return 0;
	drain(c);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->pid = 0;
	return 1;
}

void
top_cmd_stop(struct top_cmd *c)
{
	int	 st;

	if (c->pid <= 0)
		return;
	kill(c->pid, SIGTERM);
	waitpid(c->pid, &st, 0);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->pid = 0;
}
