/* Unit tests for when a parked request looks at its key again. */
#include <stdint.h>
#include <unistd.h>

#include "board.h"
#include "check.h"
#include "park.h"
#include "store_poll.h"

/* An owner elsewhere: wakes follow the store's poll schedule, in ms,
 * and never pass the end of the wait. */
static void
test_poll(void)
{
	struct park	 p = { 0 };
	int64_t		 now = 1000, us = 0;
	int		 i, ok = 1;

	park_arm(&p, 42);
	for (i = 0; i < 8; i++) {
		us = store_poll_next(us);
		ok = ok && park_busy(&p, 5000, 0, now) == 1 && p.want &&
		    p.wake_ms == now + us / 1000;
		now = p.wake_ms;
	}
	CHECK(ok && us == STORE_POLL_MAX_US);
	/* 20 ms before the end: woken at the end, not 40 ms on. */
	CHECK(park_busy(&p, 5000, 0, 1000 + 5000 - 20) == 1 &&
	    p.wake_ms == 1000 + 5000);
	CHECK(park_busy(&p, 5000, 0, 1000 + 5000) == 0);
}

/* A lapsed lease is slept out, 1 ms past; wait 0 never parks. */
static void
test_nap(void)
{
	struct park	 p = { 0 };

	park_arm(&p, 7);
	CHECK(park_busy(&p, 0, 0, 100) == 0);
	CHECK(park_busy(&p, 1000, 2500, 100) == 1 && p.wake_ms == 103);
	p.final = 1;
	CHECK(park_busy(&p, 1000, 0, 200) == 0);
}

/*
 * The done counts are shared by hash bucket: another key's completion
 * in the bucket moves the count, but while a thread here still owns
 * this key the waiter stays parked (and follows the count); once its
 * owner lets go and counts, it is due.
 */
static void
test_bucket(void)
{
	const uint64_t	 h = 0x1234, other = 0x1234 + ((uint64_t)7 << 40);
	struct park	 p = { 0 };

	CHECK(board_init() == 0);
	board_set(0, (int)getpid(), 1);
	board_attach(0);
	CHECK(board_me() != NULL);
	if (board_me() == NULL)
		return;
	atomic_store(&board_me()->threads, 2);
	board_own(1, h);			/* thread 1 owns the key */
	park_arm(&p, h);
	CHECK(park_busy(&p, 30000, 0, 1000) == 1);
	CHECK(park_due(&p, 1001) == 0);
	board_done(other);			/* another key, same bucket */
	CHECK(board_done_count(h) != p.done);	/* the count moved */
	CHECK(park_due(&p, 1002) == 0);
	CHECK(p.done == board_done_count(h));
	board_own(1, 0);			/* the owner is done */
	board_done(h);
	CHECK(park_due(&p, 1003) == 1);
	/* Owned elsewhere (not on this board): any move is looked at. */
	park_arm(&p, other);
	p.wake_ms = 60000;
	board_done(h);
	CHECK(park_due(&p, 1004) == 1);
	p.gone = 1;
	p.done = board_done_count(other);
	CHECK(park_due(&p, 1005) == 1);		/* hung up */
	board_set(0, 0, 0);
}

int
main(void)
{
	test_poll();
	test_nap();
	test_bucket();
	return CHECK_DONE();
}
