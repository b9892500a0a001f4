/* The idempotent run: claim or wait, answer what the store found, record. */
#include <string.h>

#include "log.h"
#include "once.h"

void
once_init(struct once *o, struct store *st, const struct idem_id *id,
    const char *tag)
{
	memset(o, 0, sizeof(*o));
	o->st = st;
	o->id = id;
	o->tag = tag;
	claim_init(&o->c);
}

void
once_reset(struct once *o)
{
	claim_reset(&o->c);
}

enum idem_err
once_claim(struct once *o, int64_t wait_ms)
{
	enum idem_err	 er;

	er = store_claim_wait(o->st, o->id, wait_ms, &o->c, &o->read_us,
	    &o->waited_ms);
	/* Failed with its INSERT (or takeover) sent: a row of ours may be
	 * there, which would hold the key a lease and a run deadline for a
	 * run that never starts.  The recorder deletes it (by key and
	 * token) once the store answers. */
	if (er != IDEM_OK && o->c.doubt_token != 0 && o->rec != NULL &&
	    recorder_add(o->rec, REC_RELEASE, &o->c, NULL, o->id->ttl_ms) ==
	    IDEM_OK)
		log_warn("%s: store failed during the claim; a row it may "
		    "have left is released when the store answers", o->tag);
	return er;
}

int64_t
once_claimed_ms(const struct once *o)
{
	return o->read_us / 1000;
}

void
once_dispatch(struct once *o, const struct once_ops *ops, void *arg)
{
	switch (o->c.state) {
	case CLAIM_NEW:
		ops->run(o, arg);
		break;
	case CLAIM_DONE:
		ops->replay(o, arg);
		break;
	case CLAIM_MISMATCH:
		ops->mismatch(o, arg);
		break;
	case CLAIM_TOMBSTONE:
		ops->tombstone(o, arg);
		break;
	case CLAIM_SEALED:
		ops->sealed(o, arg);
		break;
	default:	/* CLAIM_BUSY */
		ops->busy(o, arg);
		break;
	}
}

enum rec_op
once_outcome(const struct once_end *e)
{
	if (!e->whole)
		return e->er == IDEM_OK && e->released ? REC_RELEASE :
		    REC_TOMBSTONE;
	if (e->er == IDEM_EBROKEN)
		return REC_TOMBSTONE;
	if (e->er == IDEM_ELEASE || e->released)
		return REC_RELEASE;
	return REC_COMPLETE;
}

enum stat_id
once_stat(enum rec_op op)
{
	switch (op) {
	case REC_COMPLETE:
		return STAT_CREATED;
	case REC_TOMBSTONE:
		return STAT_TOMBSTONED;
	default:
		return STAT_RELEASED;
	}
}

enum idem_err
once_record(struct once *o, enum rec_op op, const struct answer *a,
    enum rec_op *done)
{
	const struct rec_write	 w = { o->st, &o->c, o->id->ttl_ms, o->tag };
	enum idem_err		 er;

	for (;;) {
		if ((er = recorder_write(&w, &op, a)) == IDEM_OK) {
			*done = op;
			return IDEM_OK;
		}
		if (er == IDEM_ENOTFOUND) {
			log_err("%s: key no longer ours (forgotten or taken "
			    "over); its %s is not recorded", o->tag,
			    rec_op_name(op));
			return er;
		}
		/* Whatever else failed (an outage, a restart under way) may
		 * pass: the recorder tries again until it lands. */
		/* The sessions kept for its lock go with it. */
		if (er == IDEM_ESTORE && o->rec != NULL)
			store_graves_take(o->st, &o->c);
		if (er == IDEM_ESTORE && o->rec != NULL &&
		    recorder_add(o->rec, op, &o->c, a, o->id->ttl_ms) ==
		    IDEM_OK) {
			o->c.ngrave = 0;	/* the recorder's now */
			log_warn("%s: store failed (%s); the %s is kept and "
			    "written when it can be", o->tag,
			    store_last_error(o->st), rec_op_name(op));
			*done = op;
			return IDEM_OK;
		}
		log_err("%s: cannot record %s: %s", o->tag, rec_op_name(op),
		    er == IDEM_ESTORE ? store_last_error(o->st) :
		    idem_strerror(er));
		if (op != REC_COMPLETE)
			return er;
		op = REC_TOMBSTONE;
		log_info("%s: keeping the key as a tombstone", o->tag);
	}
}
