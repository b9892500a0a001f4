/*
 * The status page (status_path in [gateway], off by default), as php-fpm's
 * pm.status_path: every worker's threads (busy, idle), requests in flight
 * and the oldest one's age, whole requests waiting for a thread, the
 * store's state and the replay cache's hits, from the scoreboard
 * (fcgi/board.h).  Plain text; JSON with "?json" in the query.  Never
 * protected by idempotency and never passed to a handler.
 */
#ifndef IDEM_STATUS_H
#define IDEM_STATUS_H

#include "reply.h"

struct store;

/* Answers one status request on out.  st (this thread's connection, or
 * NULL) is asked once whether the store answers now. */
void status_serve(struct reply *out, const char *method, const char *query,
    struct store *st);

#endif
