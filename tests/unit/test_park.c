/* Unit tests for when a parked request looks at its key again. */
#include <stdint.h>

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

int
main(void)
{
	test_poll();
	test_nap();
	return CHECK_DONE();
}
