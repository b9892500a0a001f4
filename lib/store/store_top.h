/* Read-only queries behind idemtop: counters, keys in progress, cleanups. */
#ifndef IDEM_STORE_TOP_H
#define IDEM_STORE_TOP_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "fp.h"
#include "store.h"

#define TOP_MINUTES	61	/* the current minute and the 60 before it */
#define TOP_MAX_KEYS	1000	/* in-progress rows listed (oldest first) */
#define TOP_MAX_ROUTES	500
#define TOP_MAX_RUNS	100
#define TOP_TEXT_MAX	256	/* VARCHAR(255) + NUL */

/* The counters idemtop shows, a subset of enum stat_id. */
enum top_count {
	TOPC_REQUESTS,
	TOPC_CREATED,
	TOPC_REUSED,
	TOPC_MISMATCHED,	/* 422 */
	TOPC_CONFLICTED,	/* 409 */
	TOPC_WAITED,
	TOPC_RELEASED,
	TOPC_STORE_ERRORS,
	TOPC_QUOTA,		/* 429: new_keys_per_minute */
	TOPC__COUNT
};

struct top_counts {
	uint64_t	 n[TOPC__COUNT];
};

/* One in-progress row.  key holds keylen raw bytes (NUL after them). */
struct top_key {
	uint64_t	 id;
	char		 key[FP_KEY_MAX + 1];
	size_t		 keylen;
	unsigned char	 scope[FP_LEN];
	char		 route[TOP_TEXT_MAX];
	char		 owner[TOP_TEXT_MAX];	/* "host:pid" */
	int64_t		 age_ms;
	int64_t		 lease_left_ms;		/* negative: lease expired */
	uint64_t	 waiters;
};

/* One route's totals over the routes window (TOP_ROUTE_WINDOW_MIN). */
struct top_route {
	char		 route[TOP_TEXT_MAX];
	struct top_counts c;
	/* The wait histogram, not cumulative. */
	uint64_t	 wait_bucket[STAT_WAIT_BUCKETS];
	uint64_t	 wait_sum_ms;
	int64_t		 wait_ms;	/* its wait in the config, 0 unknown */
};

/* Minutes (the current one included) summed in the routes screen. */
#define TOP_ROUTE_WINDOW_MIN	60

/* One idemctl cleanup run. */
struct top_run {
	uint64_t	 id;
	char		 host[TOP_TEXT_MAX];
	int64_t		 started;		/* unix seconds */
	int64_t		 duration_ms;		/* so far, if still running;
						 * -1: not known (a run that
						 * died, found 'failed') */
	int		 running;		/* no ended_at yet */
	uint64_t	 rows_deleted;
	uint64_t	 stale_released;
	uint64_t	 batches;
	char		 outcome[17];
	char		 reason[TOP_TEXT_MAX];
};

/*
 * Everything idemtop shows, read in one refresh.  Times come from the
 * database's clock so a skewed console host does not distort ages.
 * The arrays are owned by the snapshot; top_snap_free() releases them.
 */
struct top_snap {
	int64_t		 now_ms;		/* database time, unix ms */
	/* Fleet totals per minute: per_min[0] is the current (partial)
	 * minute, per_min[i] the minute i minutes before it. */
	struct top_counts per_min[TOP_MINUTES];
	uint64_t	 inprog;		/* keys in progress now */
	uint64_t	 waiting;		/* SUM(waiters) of those */
	int64_t		 oldest_ms;		/* age of the oldest, 0: none */
	uint64_t	 past_lease;		/* of those, past their lease */
	/* End of the last ok cleanup (unix seconds), -1 if none. */
	int64_t		 last_ok;
	struct top_key	*keys;			/* oldest first */
	size_t		 nkeys;
	struct top_route *routes;		/* most requests first */
	size_t		 nroutes;
	struct top_run	*runs;			/* newest first */
	size_t		 nruns;
};

/* Zeroes s (no allocation). */
void top_snap_init(struct top_snap *s);

/* Frees the arrays and zeroes s.  NULL is a no-op. */
void top_snap_free(struct top_snap *s);

/*
 * Reads a fresh snapshot with read-only prepared SELECTs (a SELECT-only
 * MySQL user is enough).  Connects st if needed.  On success *out (which
 * must be initialised) is freed and replaced; on failure it is unchanged
 * and a one-line reason (server text, for the operator) is written to err.
 */
enum idem_err store_top_fetch(struct store *st, struct top_snap *out,
    char *err, size_t errlen);

/*
 * Deletes the key row with this id (idemtop --write "forget"), by the
 * one forget rule (store_admin_forget_id, forced: idemtop offers rows in
 * progress).  *deleted is 1 if a row went, 0 if it was already gone.
 * Needs DELETE privilege.
 */
enum idem_err store_top_forget(struct store *st, uint64_t id, int *deleted,
    char *err, size_t errlen);

#endif
