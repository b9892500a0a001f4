/* Outcomes of owned keys the store could not take yet, retried until stored. */
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
 * or get 409, and lib/store/store.c lets nobody take it over while its
 * server has been up less than a lease, so the write lands first after a
 * restart.
 */
struct recorder;

#define RECORDER_RETRY_MS	100
#define RECORDER_RETRY_MAX_MS	250

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

/* Where one write of an outcome goes: the key c owns, kept ttl_ms. */
struct rec_write {
	struct store		*st;
	const struct claim	*c;
	int64_t			 ttl_ms;
	const char		*tag;	/* for log lines */
};

/*
 * One write of *op, with answer a (NULL for a release).  An answer that
 * cannot fit the server's max_allowed_packet is kept as a tombstone
 * instead (*op says so); any other failure (a restart's "shutdown in
 * progress", a lost connection) is the caller's to retry
 * (lib/idem/once.h: once_record).  IDEM_ENOTFOUND: the row is no longer
 * the claim's.
 */
enum idem_err recorder_write(const struct rec_write *w, enum rec_op *op,
    const struct answer *a);

/* "answer", "tombstone" or "release", for log lines. */
const char *rec_op_name(enum rec_op op);

/* Outcomes not yet written (one being tried counts); *lost (if not
 * NULL): those given up for good, the key's ttl passed or the row no
 * longer the claim's. */
size_t recorder_pending(struct recorder *rc, size_t *lost);

/*
 * Stops the thread after trying what is pending for up to drain_ms more,
 * logs what could not be written, frees everything.  NULL is a no-op.
 */
void recorder_free(struct recorder *rc, int64_t drain_ms);

#endif
