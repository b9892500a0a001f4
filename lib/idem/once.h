/* The idempotent run: claim or wait, answer what the store found, record. */
#ifndef IDEM_ONCE_H
#define IDEM_ONCE_H

#include <stdint.h>

#include "err.h"
#include "ident.h"
#include "recorder.h"
#include "store.h"

/*
 * One key on its way through the run core, shared by the gateway
 * (fcgi/guard.c) and `idemctl run` (admin/idemctl_run.c).  The caller
 * builds the identity (how a request or a job is identified is its own),
 * then:
 *
 *	once_init	 the store, the identity, the tag of log lines
 *	once_claim	 claim the key, or wait while another owner runs it
 *	once_dispatch	 what the claim found: the caller's run (the key is
 *			 ours: lease.h keeps it while it runs), replay or
 *			 refusal
 *	once_outcome	 what the run's end means for the key
 *	once_record	 write that to the store (or the recorder)
 *	once_reset	 let the claim go
 *
 * Each caller keeps only what differs: how it runs and how it answers.
 */
struct once {
	struct store		*st;
	struct recorder		*rec;	/* NULL: no retries of a record */
	const struct idem_id	*id;	/* borrowed */
	const char		*tag;	/* for log lines; borrowed */
	struct claim		 c;
	int64_t			 read_us;	/* when the last claim began */
	int64_t			 waited_ms;	/* on another owner's run */
};

void once_init(struct once *o, struct store *st, const struct idem_id *id,
    const char *tag);
void once_reset(struct once *o);

/*
 * Claims o->id, waiting up to wait_ms while another owner runs it
 * (store_claim_wait).  IDEM_OK: o->c.state says what the store found.
 * A store error otherwise (store_last_error says which).
 */
enum idem_err once_claim(struct once *o, int64_t wait_ms);

/* When the claim began, CLOCK_MONOTONIC ms (lease_init's claimed_ms). */
int64_t once_claimed_ms(const struct once *o);

/*
 * What a caller does with each state a claim can end in: run (CLAIM_NEW,
 * the key is ours), replay (CLAIM_DONE), or refuse (the key's request
 * differs; it ran and left only a tombstone or an answer we cannot
 * open; it is busy past the wait).
 * arg is the caller's.
 */
struct once_ops {
	void	(*run)(struct once *o, void *arg);
	void	(*replay)(struct once *o, void *arg);
	void	(*mismatch)(struct once *o, void *arg);
	void	(*tombstone)(struct once *o, void *arg);
	void	(*busy)(struct once *o, void *arg);
	/* It ran, but its sealed answer cannot be opened (o->c.seal_er,
	 * o->c.seal_kid): never run again. */
	void	(*sealed)(struct once *o, void *arg);
};

/* Calls the op for o->c.state (after once_claim gave IDEM_OK). */
void once_dispatch(struct once *o, const struct once_ops *ops, void *arg);

/*
 * How the run of an owned key ended, to choose what the store keeps.
 * er: IDEM_OK when it gave an answer (a status);  IDEM_ELEASE when it was
 * stopped because the lease was lost; IDEM_EBROKEN when it may have done
 * the work without a whole answer; another error when it gave none (the
 * caller answers for it).  whole: the answer was kept whole (not too large,
 * not streamed).  released: the caller's rule frees its status (a retry
 * may do better: release_statuses, a job's failure).
 */
struct once_end {
	enum idem_err	 er;
	int		 whole;
	int		 released;
};

/*
 * The outcome to record.  An answer not kept whole (part of it may be out:
 * it cannot be taken back) is released only when the run ended (er
 * IDEM_OK) with a released status, else kept as a tombstone.  A whole one
 * (or none): REC_TOMBSTONE when an upstream may have done the work
 * (IDEM_EBROKEN: never run again, whatever its status); REC_RELEASE when
 * the lease was lost or the status is released; else REC_COMPLETE.
 */
enum rec_op once_outcome(const struct once_end *e);

/* The counter an outcome adds to: created, tombstoned or released. */
enum stat_id once_stat(enum rec_op op);

/*
 * Writes the outcome of the key o owns: op, with answer a (NULL for a
 * release; only its status for a tombstone).  When the store fails (down,
 * restarting, connection lost), o->rec (if set) keeps it and writes it
 * when it can: the key stays in progress meanwhile, never free for a
 * second run.  An answer the store refuses leaves a tombstone.
 * IDEM_OK: *done is the op written or kept (REC_TOMBSTONE after a refused
 * answer).  IDEM_ENOTFOUND: the key is no longer ours (forgotten, taken
 * over).  Another error: nothing could be written.  Logged under o->tag.
 */
enum idem_err once_record(struct once *o, enum rec_op op,
    const struct answer *a, enum rec_op *done);

#endif
