/* Handlers left running after a complete answer, ended at their timeout. */
#ifndef IDEM_LINGER_H
#define IDEM_LINGER_H

#include <sys/types.h>

#include <stdint.h>

#include "err.h"

/*
 * A CGI answer is complete when the program exits or closes its stdout, or
 * when its body reaches its Content-Length; the program, or a child it
 * left holding stdout, may still be running then.  The answer goes out at
 * once and the group is handed here: a thread of its own drains and drops
 * what the group still writes, reaps the leader once it has exited and
 * nothing holds the pipes, and at the deadline kills the whole group
 * (SIGKILL), with what left it (setsid, a daemon's double fork): found
 * as the leader's descendants while it lives, and by the run's mark in
 * their environment (run, IDEMGATE_RUN; 0: none), and reaps.  The leader is reaped here and nowhere else, so its
 * pid (the group's id) cannot be reused while the group is signalled.
 */
struct linger;

enum idem_err linger_new(struct linger **out);

/*
 * Takes over the group of leader pid (spawned with POSIX_SPAWN_SETPGROUP,
 * not reaped; it may have exited) and the read ends of its stdout and
 * stderr (out_fd, err_fd; -1 if closed; ownership passes here), until
 * deadline_ms (CLOCK_MONOTONIC).  If it cannot be kept (out of memory),
 * the group is killed and reaped at once.
 */
void linger_add(struct linger *lg, pid_t pid, int out_fd, int err_fd,
    int64_t deadline_ms, uint64_t run);

/*
 * The same for a group whose leader has exited and been reaped while
 * members are left (a child in the background, its pipes let go): killed
 * at deadline_ms unless none is left by then.  Its id stays the group's
 * while a member lives; the linger looks every 100 ms.
 */
void linger_add_group(struct linger *lg, pid_t pgid, int64_t deadline_ms,
    uint64_t run);

/* 1 if a process of group pgid lives (its leader reaped, the id is the
 * group's while one does). */
int linger_group_lives(pid_t pgid);

/*
 * Ends now the group of leader pid if it still lingers here (a run whose
 * key is released: a retry must not run beside it), with what left the
 * group while its leader lives (proc_kill_escaped); a pid not held here
 * is left alone: its group ended and the number may be another's.  How
 * many it killed (the group counts one).
 */
int linger_kill(struct linger *lg, pid_t pid);

/* Groups still lingering. */
size_t linger_count(struct linger *lg);

/* Kills every group still lingering, reaps, stops.  NULL is a no-op. */
void linger_free(struct linger *lg);

#endif
