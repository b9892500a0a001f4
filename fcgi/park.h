/* Waiters parked without a thread, and when each looks at its key again. */
#ifndef IDEM_PARK_H
#define IDEM_PARK_H

#include <stdint.h>

/*
 * A request whose key another owner runs does not hold a request thread
 * while it waits: the guard finds it busy and asks to park it
 * (park_busy), the worker gives it back to the reader (reader_park), and
 * the reader hands it to a thread again, which claims again from the
 * start, when
 *	- the key's owner in this gateway is done: every worker's owner
 *	  moves the key's board_done count (fcgi/board.h), which parked
 *	  requests compare with what they read before their claim;
 *	- its wake time comes: an owner elsewhere (another gateway, another
 *	  Galera node) is polled on the store's schedule (2 ms doubling
 *	  to 40 ms, lib/store/store_poll.h); a live owner here is looked
 *	  at every PARK_CHECK_MS (to a quarter more) all the same, which
 *	  finds one that died; a lapsed lease is slept out;
 *	- its wait (the route's wait) is over, or the worker stops: it
 *	  claims once more and is answered (409 when still busy);
 *	- the web server hangs up on it (its client gave up): it only
 *	  leaves the row's waiters column (gone), so its place and its
 *	  bytes are free at once, not when its wait would have ended.
 */
#define PARK_CHECK_MS		1000
/* How often the reader compares parked requests' done counts. */
#define PARK_TICK_MS		5

struct park {
	int64_t		 since_ms;	/* first found busy; 0: never */
	int64_t		 until_ms;	/* its wait ends: claim, answer */
	int64_t		 wake_ms;	/* looks again by then */
	int64_t		 pause_us;	/* an owner elsewhere: the poll's */
	uint64_t	 hash;		/* the key's lock hash */
	uint64_t	 done;		/* board_done_count before the claim */
	int		 counted;	/* in the row's waiters column */
	int		 final;		/* park no more: answer */
	int		 gone;		/* the web server hung up while
					 * parked: nobody to answer */
	int		 watched;	/* in the reader's hang-up set */
	int		 want;		/* the guard asks to be parked */
};

/*
 * The guard, before it claims the key of lock hash h: remembers what
 * happened to h's keys so far.
 */
void park_arm(struct park *p, uint64_t h);

/*
 * The guard, after the claim found the key busy at now, with the
 * claim's nap_us (a lapsed lease to sleep out, 0 when a live owner holds
 * the lock): 1 if the request may park, with its wake time planned and
 * p->want set; 0 if it is to be answered now (its wait is over, it is
 * final, or wait_ms is 0).  since_ms and until_ms are set on the first.
 */
int park_busy(struct park *p, int64_t wait_ms, int64_t nap_us, int64_t now);

/* The reader: 1 if the parked request is to look again now (its done
 * count moved, and no thread here owns its key any more: p->done
 * follows a move that was another key's). */
int park_due(struct park *p, int64_t now);

#endif
