/* Outcomes of owned keys that the store could not take at once, retried until they land. */
#ifndef IDEM_RECORDER_H
#define IDEM_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "err.h"
#include "store.h"

/*
 * A handler ran; its outcome must reach the store or the key would be run
 * again once its lease lapsed.  When the store is unreachable at that
 * moment, the recorder keeps the outcome (a copy) and a thread of its own,
 * on its own connection, writes it again and again (every RECORDER_RETRY_MS
 * at first, then less often) until it lands, the row is no longer the
 * claim's (forgotten, or taken over after the owner was judged dead), or
 * the key's ttl passes.  Meanwhile the row stays in progress: retries wait
 * or get 409, and lib/store.c lets nobody take it over while its server
 * has been up less than a lease, so the write lands first after a restart.
 */
struct recorder;

#define RECORDER_RETRY_MS	100
#define RECORDER_RETRY_MAX_MS	1000

enum rec_op {
	REC_COMPLETE,	/* store_complete: the answer to replay */
	REC_TOMBSTONE,	/* store_tombstone: delivered, too large to keep */
	REC_RELEASE,	/* store_release: a retry may run it again */
};

/* Starts the recorder's thread (its store connects lazily).  cfg is
 * borrowed and must outlive it. */
enum idem_err recorder_new(const struct cfg *cfg, struct recorder **out);

/*
 * Hands over the write of c's outcome: op, and the answer a (NULL for
 * REC_RELEASE; only its status for REC_TOMBSTONE).  Both are copied, not
 * kept.  IDEM_ENOMEM if it cannot be kept.
 */
enum idem_err recorder_add(struct recorder *rc, enum rec_op op,
    const struct claim *c, const struct answer *a, int64_t ttl_ms);

/*
 * Writes the outcome of the key c owns: op, with answer a (NULL for a
 * release).  When the store fails (down, restarting, connection lost),
 * rc (if not NULL) keeps it and writes it when it can: the key stays in
 * progress meanwhile, never free for a second run.  An answer that cannot
 * fit the server's max_allowed_packet leaves a tombstone: in progress,
 * the key would be taken over once its lease lapsed.  Returns the op written or kept
 * (REC_TOMBSTONE after a refused answer), or -1 if none could be (logged
 * under tag).
 */
int record_outcome(struct store *st, struct recorder *rc,
    const struct claim *c, enum rec_op op, const struct answer *a,
    int64_t ttl_ms, const char *tag);

/* Outcomes not yet written. */
size_t recorder_pending(struct recorder *rc);

/*
 * Stops the thread after trying what is pending for up to drain_ms more,
 * logs what could not be written, frees everything.  NULL is a no-op.
 */
void recorder_free(struct recorder *rc, int64_t drain_ms);

#endif
