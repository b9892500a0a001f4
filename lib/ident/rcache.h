/* A worker's memory of completed answers: hot-key retries skip the store. */
#ifndef IDEM_RCACHE_H
#define IDEM_RCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "answer.h"
#include "err.h"
#include "fp.h"
#include "ident.h"

/*
 * Why this is safe.  A completed row never changes while it is live: it
 * only expires (ttl) or is deleted or edited by hand (idemctl forget, SQL).
 * Entries expire locally no later than the row does.  For deletes and
 * edits, migration 002's triggers bump a counter (idem_epoch) whenever a
 * live completed row is deleted or changed; each worker reads it every
 * RCACHE_POLL_MS (a locking read, which waits while a delete is in
 * flight), and a read that started at time T vouches for the cache until
 * T + RCACHE_VALID_MS.  A changed counter empties the cache; a failed read
 * empties it too and stops hits until a read succeeds.  So RCACHE_VALID_MS
 * after a delete commits, no worker replays the row from memory; idemctl
 * forget waits that long before it returns.
 */
#define RCACHE_POLL_MS		25
#define RCACHE_VALID_MS		250
#define RCACHE_FORGET_WAIT_MS	(RCACHE_VALID_MS + 50)
/* Ceiling on any entry's life, whatever the row's ttl. */
#define RCACHE_MAX_AGE_MS	60000

struct rcache;

/* What rcache_get found: borrowed until rcache_release(). */
struct rcache_hit {
	void			*entry;
	const struct answer	*ans;
};

/* A cache holding at most budget bytes (entries over budget / 8 are not
 * kept).  It vouches for nothing until the first rcache_vouch(). */
enum idem_err rcache_new(size_t budget, struct rcache **out);
void rcache_free(struct rcache *rc);	/* NULL is a no-op; no hits held */

/* Bytes an answer is charged against the budget. */
size_t rcache_cost(size_t keylen, size_t hdrslen, size_t bodylen);

/* The generation to pass to rcache_put: read it before the store read
 * that produced the answer, so a flush in between voids the put. */
uint64_t rcache_gen(struct rcache *rc);

/*
 * Copies answer a in: the completed row of id's (scope, key) with id's
 * fingerprint, which the store says expires at expires_us
 * (CLOCK_MONOTONIC, µs; measured from before the store statement, so never
 * late).  Dropped when gen is stale, the cache is not vouched for, or the
 * answer is too big.
 */
void rcache_put(struct rcache *rc, uint64_t gen, const struct idem_id *id,
    const struct answer *a, int64_t expires_us, int64_t now_us);

/*
 * 1 and *hit filled when id's (scope, key) is cached with id's
 * fingerprint, live at now_us, and the cache is vouched for; the caller
 * then replays hit->ans and calls rcache_release().  0 otherwise (ask the
 * store: a fingerprint mismatch, say, is the store's to answer).
 */
int rcache_get(struct rcache *rc, const struct idem_id *id, int64_t now_us,
    struct rcache_hit *hit);
void rcache_release(struct rcache *rc, struct rcache_hit *hit);

/* 1 if id's (scope, key) has an entry, whatever its fingerprint or age
 * (a cheap question before computing the fingerprint for rcache_get);
 * counts nothing. */
int rcache_holds(struct rcache *rc, const struct idem_id *id);

/* A store read that started at polled_us saw epoch: empties the cache if
 * epoch changed, and vouches for it until polled_us + RCACHE_VALID_MS. */
void rcache_vouch(struct rcache *rc, uint64_t epoch, int64_t polled_us);

/* The store could not be read: empty the cache, vouch for nothing. */
void rcache_distrust(struct rcache *rc);

/* Entries and bytes held, hits and misses so far. */
struct rcache_info {
	size_t		 entries;
	size_t		 bytes;
	uint64_t	 hits;
	uint64_t	 misses;
};
void rcache_info(struct rcache *rc, struct rcache_info *out);

/* The most entries one bucket holds (a walk of the whole table under
 * the lock: for tests and diagnostics, not for a request's path). */
size_t rcache_longest_chain(struct rcache *rc);


#endif
