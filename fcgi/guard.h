/* Idempotency flow between route and handler: claim, run, record, replay. */
#ifndef IDEM_GUARD_H
#define IDEM_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "err.h"
#include "fp.h"

struct request;

/*
 * Serves r (route chosen, body read): protected requests go through the
 * store (claim / wait / run once / complete or release / replay), the
 * rest run straight through.  Answers everything; never fails.
 */
void guard_serve(struct request *r);

/*
 * The reader's question (fcgi/reader.h): if r, route chosen and body
 * borrowed, is a protected request the replay cache holds with r's
 * fingerprint, writes that replay to r->out (counted as guard_serve
 * counts it) and returns 1.  Otherwise writes, logs and counts nothing
 * and returns 0 (r->cache_missed = 1 when the cache was asked and
 * missed): the request goes to a request thread.  Needs no store.
 */
int guard_cached(struct request *r);

/*
 * Param name of a request header: "HTTP_" + name upper-cased with '-' ->
 * '_'.  IDEM_ETOOBIG if it does not fit in outlen.
 */
enum idem_err guard_header_param(const char *name, char *out,
    size_t outlen);

/*
 * The request's fingerprint (lib/ident/fp.h) into fp: method, normalised
 * path, query, content type and body (fingerprint = canonical: the
 * body's meaning, lib/ident/canon.h), the headers fingerprint_headers
 * names, each as "name=value" ("name" when absent), and REQUEST_URI's
 * query when it is not QUERY_STRING.  IDEM_ENOMEM.
 */
enum idem_err guard_fingerprint(const struct request *r,
    unsigned char fp[FP_LEN]);

/*
 * Log form of a key: never the whole key (a key is as good as a secret to
 * whoever could replay it), only its first quarter (8 bytes at most, the
 * log escapes them) and its length: "ord...(10 bytes)".
 */
void guard_key_for_log(const char *key, size_t keylen, char *out,
    size_t outlen);


#endif
