/* idemtop's child command: idemctl cleanup started from the console. */
#ifndef IDEM_IDEMTOP_CMD_H
#define IDEM_IDEMTOP_CMD_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* A running child whose stdout and stderr we collect (bounded). */
struct top_cmd {
	pid_t		 pid;		/* 0 when none runs */
	int		 fd;		/* read end of its output pipe */
	char		 out[256];	/* first bytes of its output */
	size_t		 outlen;
};

/*
 * The path of prog next to the running executable (/proc/self/exe's
 * directory) into out.  IDEM_ENOTFOUND if it is not there or not
 * executable.
 */
enum idem_err top_cmd_sibling(const char *prog, char *out, size_t cap);

/* Starts argv[0] with argv (stdin /dev/null, output to a pipe) in c,
 * which must be idle.  IDEM_EBUSY if a child still runs. */
enum idem_err top_cmd_start(struct top_cmd *c, char *const argv[]);

/*
 * Collects output without blocking.  Returns 1 and sets *status (as from
 * waitpid) once the child has exited, 0 while it runs or when none runs.
 */
int top_cmd_poll(struct top_cmd *c, int *status);

/* Kills (SIGTERM) and reaps a running child; for quitting. */
void top_cmd_stop(struct top_cmd *c);

#endif
