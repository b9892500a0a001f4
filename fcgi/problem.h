/* Gateway-made answers: the one place internal errors become HTTP statuses. */
#ifndef IDEM_PROBLEM_H
#define IDEM_PROBLEM_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

/* Every answer idemgate makes itself (decisions.md table). */
enum problem {
	PROB_MISSING_KEY,	/* 400 */
	PROB_INVALID_KEY,	/* 400 */
	PROB_MISSING_SCOPE,	/* 400 */
	PROB_BODY_MISMATCH,	/* 400: a body longer than CONTENT_LENGTH */
	PROB_AMBIGUOUS_HEADER,	/* 400: key, scope or fingerprint header
				 * twice */
	PROB_NOT_FOUND,		/* 404 */
	PROB_FORBIDDEN,		/* 403 */
	PROB_METHOD_NOT_ALLOWED, /* 405 (the status page) */
	PROB_KEY_IN_PROGRESS,	/* 409 + Retry-After */
	PROB_NOT_STORED,	/* 410, member original_status */
	PROB_BODY_TOO_LARGE,	/* 413 */
	PROB_KEY_MISMATCH,	/* 422 */
	PROB_TOO_MANY_KEYS,	/* 429 + Retry-After: new_keys_per_minute */
	PROB_HEADERS_TOO_LARGE,	/* 431 */
	PROB_INTERNAL,		/* 500 (out of memory and the like) */
	PROB_STORE_KEY_MISSING,	/* 500: a stored answer we cannot open */
	PROB_HASH_KEY_MISSING,	/* 500 store-key-missing: the store's
				 * hashing key we cannot open */
	PROB_BAD_GATEWAY,	/* 502 */
	PROB_STORE_UNAVAILABLE,	/* 503 + Retry-After */
	PROB_OVERLOADED,	/* 503 + Retry-After: max_pending_body */
	PROB_GATEWAY_TIMEOUT,	/* 504 */
	PROB_HANDLER_TIMEOUT,	/* 504 + Retry-After: an upstream still runs */
	PROB__MAX
};

/*
 * Problem types become base + slug (problem_base_url, say
 * "https://docs.example.com/errors/"); NULL or unset: "urn:idemgate:
 * problem:" + slug.  base is borrowed for the life of the process; set it
 * before any thread renders.
 */
void problem_set_base(const char *base);

/* HTTP status of p. */
int problem_status(enum problem p);

/* "missing-key" etc.: the last part of the problem type URI. */
const char *problem_slug(enum problem p);

/*
 * Maps an error from running a handler to the answer the client gets:
 * IDEM_ENOTFOUND 404, IDEM_EFORBIDDEN 403, IDEM_ETIMEOUT 504, IDEM_ENOMEM
 * 500, anything else (bad output, crash, cannot start, upstream down) 502.
 */
enum problem problem_from_err(enum idem_err er);

/* Reason phrase for an HTTP status ("Created"), "" if unknown. */
const char *problem_reason(int status);

/*
 * Renders p as an RFC 9457 application/problem+json answer: header lines
 * ("Name: value\r\n", without Status) appended to hdrs and the JSON
 * document to body.  retry_after > 0 adds Retry-After; original_status > 0
 * adds the member "original_status" (410).  detail, if not NULL, replaces
 * p's own (it must need no JSON escaping).  No internal text is included.
 */
enum idem_err problem_render(enum problem p, const char *detail,
    int retry_after, int original_status, struct buf *hdrs, struct buf *body);

#endif
