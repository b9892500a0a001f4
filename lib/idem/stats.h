/* In-process fleet counters, flushed to the store off the request path. */
#ifndef IDEM_STATS_H
#define IDEM_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "store.h"

/* Thread-safe accumulator for one gateway process. */
struct stats;

enum idem_err stats_new(struct stats **out);
void stats_free(struct stats *s);	/* NULL is a no-op */

/* Adds n to counter id of route (borrowed; copied on first use). Cheap:
 * one mutex, no I/O. */
void stats_add(struct stats *s, const char *route, enum stat_id id,
    uint64_t n);

/* Records one wait of wait_ms (also counts STAT_WAITED). */
void stats_wait(struct stats *s, const char *route, int64_t wait_ms);

/*
 * Moves what accumulated into the store under host, one row per (minute,
 * route).  On store failure the counts are kept (merged back) for the next
 * flush, bounded so a long outage cannot grow memory without end.
 */
enum idem_err stats_flush(struct stats *s, struct store *st,
    const char *host);

/*
 * What is pending (not yet flushed) for route, summed over minutes, into
 * out (out->route is set to NULL, out->minute to 0).  For tests and status
 * output.  Returns the number of pending (minute, route) rows overall.
 */
size_t stats_pending(struct stats *s, const char *route,
    struct stat_row *out);

#endif
