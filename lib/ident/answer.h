/* One answer: what a handler said, what the store keeps, what a retry gets. */
#ifndef IDEM_ANSWER_H
#define IDEM_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/*
 * The one shape of an HTTP answer, from the handler's output (fcgi/
 * handler.h's sink) through the store's row and the replay cache to the
 * reply.  hdrs holds "Name: value\r\n" lines without Status, in the
 * handler's order; body is binary-safe.  status is 200..599 once set.
 */
struct answer {
	int		 status;
	struct buf	 hdrs;
	struct buf	 body;
	int64_t		 expires_s;	/* stored: unix time its key may run
					 * again (Idempotency-Expires);
					 * 0 unknown */
};

/* The last second a DATETIME holds, 9999-12-31 23:59:59 UTC: the end of
 * an unbounded run, and past any expiry a key can be given. */
#define ANSWER_END_OF_TIME	253402300799LL

/* An empty answer whose parts never grow past the given maxima. */
void answer_init(struct answer *a, size_t hdrs_max, size_t body_max);

/* Frees the parts; a is empty (same maxima) afterwards.  NULL: no-op. */
void answer_free(struct answer *a);

/*
 * Points a at bytes it does not own (a cache entry's, say): a must never
 * be freed or grown through.  For handing a borrowed answer to calls that
 * take const struct answer *.
 */
void answer_borrow(struct answer *a, int status, const void *hdrs,
    size_t hdrslen, const void *body, size_t bodylen);

#endif
