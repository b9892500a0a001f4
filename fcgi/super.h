/* The supervisor: keeps worker processes alive, drains, reloads. */
#ifndef IDEM_SUPER_H
#define IDEM_SUPER_H

#include "cfg.h"

/*
 * Runs the service with cfg (ownership passes to the supervisor, which
 * frees it and any reloaded config): opens the listen socket, forks
 * cfg->workers workers and restarts any that dies (pausing 1 s when more
 * than 5 died within 10 s).  SIGTERM/SIGINT: workers drain (bounded by the
 * longest route timeout + 5 s, then SIGKILL), the unix socket is removed,
 * returns 0.  SIGHUP: the config file is read again; if valid, a new
 * generation of workers starts with it and the old one drains; if not,
 * the error is logged and the old config kept.  Returns non-zero if the
 * service could not start.
 */
int super_run(struct cfg *cfg);

#endif
