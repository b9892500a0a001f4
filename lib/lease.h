/* Keeping the lease of an owned key while its handler or job runs. */
#ifndef IDEM_LEASE_H
#define IDEM_LEASE_H

#include <stdint.h>

#include "store.h"

/*
 * A key we own (store_claim gave CLAIM_NEW), and how long its lease is
 * surely ours.  The gateway (fcgi/guard.c) and `idemctl run` both keep it
 * with lease_tick, called as struct cgi_exchange's tick.
 */
struct lease {
	struct store		*st;
	const struct claim	*c;
	int64_t			 lease_ms;
	int64_t			 ok_until;	/* CLOCK_MONOTONIC ms */
	int64_t			 margin;	/* stop this much before */
	const char		*tag;		/* for log lines */
};

/* While renewals fail, try again this often. */
#define LEASE_RETRY_MS	250

/* Starts keeping c, claimed at claimed_ms (CLOCK_MONOTONIC, taken before
 * the claim's statement: the server's lease ends after ours). */
void lease_init(struct lease *l, struct store *st, const struct claim *c,
    int64_t lease_ms, int64_t claimed_ms, const char *tag);

/*
 * Renews the lease (signature of cgi_exchange.tick).  Returns the ms
 * until the next call: lease_tick_ms after a renewal; while renewals fail,
 * LEASE_RETRY_MS or what is left.  Returns -1 (stop the handler now) when
 * the lease is about to end without a renewal, or the row is no longer
 * ours, so a takeover never runs beside the handler.
 */
int64_t lease_tick(void *lease);

/* Period of lease renewals: lease / 3, at least 100 ms. */
int64_t lease_tick_ms(int64_t lease_ms);

/* How long before its lease ends an owner that could not renew stops its
 * handler: a fifth of the lease, within 300 ms .. 5 s, at most half. */
int64_t lease_stop_margin(int64_t lease_ms);

/* Retry-After seconds for a key in progress: the lease left rounded up,
 * at least 1, at most a day. */
int lease_retry_after(int64_t lease_left_ms);

#endif
