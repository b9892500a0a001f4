/* The idempotency flow between route and handler: claim, run, record, replay. */
#ifndef IDEM_GUARD_H
#define IDEM_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"

struct request;

/*
 * Serves r (route chosen, body read): protected requests go through the
 * store (claim / wait / run once / complete or release / replay), the
 * rest run straight through.  Answers everything; never fails.
 */
void guard_serve(struct request *r);

/*
 * Param name of a request header: "HTTP_" + name upper-cased with '-' ->
 * '_'.  0 on success, -1 if it does not fit in outlen.
 */
int guard_header_param(const char *name, char *out, size_t outlen);

/* Retry-After seconds for a 409: the lease left rounded up, at least 1. */
int guard_retry_after(int64_t lease_left_ms);

/* Period of lease renewals while a handler runs: lease / 3, at least
 * 100 ms. */
int64_t guard_tick_ms(int64_t lease_ms);

/*
 * Log form of a key: never the whole key (a key is as good as a secret to
 * whoever could replay it), only its first quarter (8 bytes at most, the
 * log escapes them) and its length: "ord...(10 bytes)".
 */
void guard_key_for_log(const char *key, size_t keylen, char *out,
    size_t outlen);

/* How long before its lease ends an owner that could not renew stops its
 * handler: a fifth of the lease, within 300 ms .. 5 s, at most half. */
int64_t guard_stop_margin(int64_t lease_ms);

#endif
