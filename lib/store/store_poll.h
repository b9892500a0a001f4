/* How a waiter that cannot be told "done" polls: one schedule for all. */
#ifndef IDEM_STORE_POLL_H
#define IDEM_STORE_POLL_H

#include <stdint.h>

/*
 * A key whose owner is out of reach of a wake-up (another Galera node,
 * another gateway) is polled: the first pause STORE_POLL_MIN_US, each
 * next one twice the last, up to STORE_POLL_MAX_US, so a finished key is
 * seen within that and a long wait costs a claim every 40 ms.  Used by
 * store_claim_wait (idemctl run on Galera) and by parked requests
 * (fcgi/park.h).
 */
#define STORE_POLL_MIN_US	2000
#define STORE_POLL_MAX_US	40000

/* The pause after one of prev_us (0: none yet), in µs. */
int64_t store_poll_next(int64_t prev_us);

#endif
