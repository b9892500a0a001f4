/* Waiters parked without a thread, and when each looks at its key again. */
#include <stdint.h>

#include "board.h"
#include "park.h"
#include "store_poll.h"

void
park_arm(struct park *p, uint64_t h)
{
	p->hash = h;
	p->done = board_done_count(h);
	p->want = 0;
}

int
park_busy(struct park *p, int64_t wait_ms, int64_t nap_us, int64_t now)
{
	int64_t	 wake;

	if (p->final || wait_ms <= 0)
		return 0;
	if (p->since_ms == 0) {
		p->since_ms = now;
		p->until_ms = now + wait_ms;
	}
	if (now >= p->until_ms)
		return 0;
	if (nap_us > 0) {
		/* Nobody holds the lock: the lease runs out (1 ms past). */
		wake = now + nap_us / 1000 + 1;
	} else if (board_owned(p->hash)) {
		/* Its owner here moves the done count when it is done; the
		 * look now and then (spread, so waiters of one key do not
		 * all claim at once) finds an owner that died. */
		wake = now + PARK_CHECK_MS +
		    (int64_t)(((uintptr_t)p >> 4) % (PARK_CHECK_MS / 4));
	} else {
		p->pause_us = store_poll_next(p->pause_us);
		wake = now + p->pause_us / 1000;
	}
	p->wake_ms = wake < p->until_ms ? wake : p->until_ms;
	p->want = 1;
	return 1;
}

int
park_due(struct park *p, int64_t now)
{
	uint64_t	 n;

	if (p->gone || now >= p->wake_ms)
		return 1;
	if ((n = board_done_count(p->hash)) == p->done)
		return 0;
	/*
	 * The count is its bucket's, shared with every key whose hash
	 * falls there.  A thread here still owning this key means the
	 * move was another key's, or the key was claimed again since:
	 * busy either way, and its owner moves the count once more when
	 * done (it lets go of the key before it counts).  Claiming now
	 * would be two statements for nothing.
	 */
	if (board_owned(p->hash)) {
		p->done = n;
		return 0;
	}
	return 1;
}
