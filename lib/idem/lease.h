/* Keeping the lease of an owned key while its handler or job runs. */
#ifndef IDEM_LEASE_H
#define IDEM_LEASE_H

#include <stdint.h>

#include "log.h"
#include "once.h"
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
	int			 stoppable;	/* 1: a child of ours (CGI,
						 * job) */
	const char		*tag;		/* for log lines */
	struct log_every	 warned;	/* failed renewals: said once
						 * a second at most */
};

/* A renewal holds the run's I/O up this long at most (a partition). */
#define LEASE_RENEW_MAX_MS	1000

/* While renewals fail, try again this often. */
#define LEASE_RETRY_MS	250
/* The same for an upstream run, which nothing stops. */
#define LEASE_UPSTREAM_RETRY_MS	1000

/*
 * Starts keeping the key o owns (once_dispatch's run), for its identity's
 * lease from when its claim began (once_claimed_ms: the server's lease
 * ends after ours).  stoppable: the run is a child of ours that lease_tick
 * may have stopped (a CGI program, a job); 0 for an upstream run, which
 * goes on whatever we do.  o must outlive l.
 */
void lease_init(struct lease *l, const struct once *o, int stoppable);

/*
 * Renews the lease (signature of cgi_exchange.tick).  Returns the ms
 * until the next call: lease_tick_ms after a renewal; while renewals fail,
 * LEASE_RETRY_MS or what is left.
 *
 * What it decides, it decides by this process's monotonic clock from the
 * last renewal the store acknowledged, never by a call that may block: a
 * renewal is given only the time left before the stop point (ok_until -
 * margin; store_deadline), and a reconnect that could outlast it is not
 * begun.  A stoppable run gets -1 (stop it now) at the stop point, so it
 * is gone (SIGTERM, SIGKILL CGI_STOP_GRACE_MS later) before the lease
 * ends; an upstream run is never stopped for that (it could not be): its
 * key stays in progress until its run deadline (lib/store/store.h).  Either
 * gets -1 when the row is no longer ours (forgotten, taken over).
 */
int64_t lease_tick(void *lease);

/* Period of lease renewals: lease / 3, at least 100 ms. */
int64_t lease_tick_ms(int64_t lease_ms);

/* Retry-After seconds for a key in progress: the lease (or run) left, or
 * the route's wait if shorter, rounded up; at least 1, at most a day. */
int lease_retry_after(int64_t left_ms, int64_t wait_ms);

#endif
