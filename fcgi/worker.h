/* A worker process: request threads on the shared listen socket. */
#ifndef IDEM_WORKER_H
#define IDEM_WORKER_H

#include "cfg.h"

/*
 * Runs a worker on listen_fd with cfg (inherited from the supervisor) until
 * SIGTERM or SIGINT, then drains: requests in flight finish, idle threads
 * stop accepting, counters are flushed, everything is freed.  Returns the
 * process exit status (0 after a clean drain).  Call in a fresh child
 * process before any thread exists.
 */
int worker_run(const struct cfg *cfg, int listen_fd);

#endif
