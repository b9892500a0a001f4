/* Tests of the run core's choices: the outcome a run's end leaves on a key. */
#include <stdio.h>
#include <string.h>

#include "../lib/check.h"
#include "once.h"

static enum rec_op
outcome(enum idem_err er, int whole, int released)
{
	const struct once_end	 e = { er, whole, released };

	return once_outcome(&e);
}

static void
test_whole(void)
{
	/* An answer kept whole: recorded unless its status is released. */
	CHECK(outcome(IDEM_OK, 1, 0) == REC_COMPLETE);
	CHECK(outcome(IDEM_OK, 1, 1) == REC_RELEASE);
	/* A problem of our own (no answer from the handler): the same. */
	CHECK(outcome(IDEM_EHANDLER, 1, 0) == REC_COMPLETE);
	CHECK(outcome(IDEM_ETIMEOUT, 1, 1) == REC_RELEASE);
	/* A lost lease is never stored: the next owner runs the key. */
	CHECK(outcome(IDEM_ELEASE, 1, 0) == REC_RELEASE);
	/* An upstream that may have done the work is never run again,
	 * whatever release_statuses says of its status. */
	CHECK(outcome(IDEM_EBROKEN, 1, 0) == REC_TOMBSTONE);
	CHECK(outcome(IDEM_EBROKEN, 1, 1) == REC_TOMBSTONE);
}

static void
test_not_whole(void)
{
	/* Part of it went out: a tombstone, unless it ended well with a
	 * released status (a retry may do better). */
	CHECK(outcome(IDEM_OK, 0, 0) == REC_TOMBSTONE);
	CHECK(outcome(IDEM_OK, 0, 1) == REC_RELEASE);
	/* Broken off, it is never released, not even for a lost lease. */
	CHECK(outcome(IDEM_EIO, 0, 1) == REC_TOMBSTONE);
	CHECK(outcome(IDEM_ELEASE, 0, 1) == REC_TOMBSTONE);
	CHECK(outcome(IDEM_EBROKEN, 0, 1) == REC_TOMBSTONE);
}

static void
test_stat(void)
{
	CHECK(once_stat(REC_COMPLETE) == STAT_CREATED);
	CHECK(once_stat(REC_TOMBSTONE) == STAT_TOMBSTONED);
	CHECK(once_stat(REC_RELEASE) == STAT_RELEASED);
}

/* Each op records which it was. */
static void
op_run(struct once *o, void *arg)
{
	*(int *)arg = 1;
}

static void
op_replay(struct once *o, void *arg)
{
	*(int *)arg = 2;
}

static void
op_mismatch(struct once *o, void *arg)
{
	*(int *)arg = 3;
}

static void
op_tombstone(struct once *o, void *arg)
{
	*(int *)arg = 4;
}

static void
op_busy(struct once *o, void *arg)
{
	*(int *)arg = 5;
}

static void
op_sealed(struct once *o, void *arg)
{
	*(int *)arg = 6;
}

static void
test_dispatch(void)
{
	const struct once_ops	 ops = { op_run, op_replay, op_mismatch,
	    op_tombstone, op_busy, op_sealed };
	const enum claim_state	 st[] = { CLAIM_NEW, CLAIM_DONE,
	    CLAIM_MISMATCH, CLAIM_TOMBSTONE, CLAIM_BUSY, CLAIM_SEALED };
	struct idem_id		 id;
	struct once		 o;
	size_t			 i;
	int			 called;

	memset(&id, 0, sizeof(id));
	once_init(&o, NULL, &id, "test");
	for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		called = 0;
		o.c.state = st[i];
		once_dispatch(&o, &ops, &called);
		CHECK(called == (int)i + 1);
	}
	once_reset(&o);
}

int
main(void)
{
	test_whole();
	test_not_whole();
	test_stat();
	test_dispatch();
	return CHECK_DONE();
}
