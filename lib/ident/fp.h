/* Idempotency keys, request fingerprints and scope hashes (OpenSSL SHA-256). */
#ifndef IDEM_FP_H
#define IDEM_FP_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define FP_LEN		32	/* SHA-256 */
#define FP_KEY_MAX		255	/* bytes of key after unquoting */

/*
 * Parses an Idempotency-Key header value: optional whitespace around either
 * a bare token (1*255 visible ASCII, no DQUOTE, comma, semicolon, backslash
 * or space) or a Structured-Field string ("abc", \" and \\ escapes, printable
 * ASCII only, RFC 8941 §3.3.3) whose quotes are not part of the key,
 * either followed by RFC 8941 parameters (";p=1"), which are not part of
 * it either (an Item's value ignores them).  Empty, over FP_KEY_MAX
 * bytes, control or non-ASCII bytes, trailing garbage, malformed
 * parameters or several values: IDEM_EINVAL.  On success copies the key to
 * out (FP_KEY_MAX + 1 bytes, NUL-terminated) and its length to *outlen.
 */
enum idem_err key_parse(const char *raw, size_t rawlen, char *out,
    size_t *outlen);

/*
 * What a request's fingerprint covers: method, path, query, content type
 * and body, and the request headers a route names as part of it
 * (fingerprint_headers, each "name=value"; nmore may be 0).  NULL strings
 * count as empty.  All borrowed.
 */
struct fp_req {
	const char		*method, *path, *query, *ctype;
	const void		*body;
	size_t			 bodylen;
	const char *const	*more;
	size_t			 nmore;
};

/*
 * SHA-256 over q's fields, each prefixed with its length as 8 bytes
 * big-endian, so no two different requests can share an input; then, when
 * nmore > 0, their count and each of more[], length-prefixed.  OUT: fp.
 */
void fp_request(const struct fp_req *q, unsigned char fp[FP_LEN]);

/*
 * Scope hash: SHA-256 over kind ("none", "remote_user" or "header:name" in
 * lower case) and value, length-prefixed.  The value (an API key, say) is
 * never stored in clear.  OUT: out.
 */
void fp_scope(const char *kind, const char *value, unsigned char out[FP_LEN]);

/* An Authorization value by meaning (for fp_scope of
 * "header:authorization"): the scheme lower-cased and the
 * white space after it one space; the credentials as they are.  A new
 * string (free()), or NULL when out of memory. */
char *fp_auth_norm(const char *v);

/* Wipes and frees what fp_auth_norm returned (credentials).  NULL: no-op. */
void fp_auth_free(char *v);

/* Writes 2 * n lower-case hex digits and a NUL to out. */
void fp_hex(const unsigned char *p, size_t n, char *out);

/* Name of the MySQL named lock for (scope, key): "idem:" + 48 hex digits
 * (< 64 bytes, MySQL's limit).  out must hold FP_LOCKNAME_LEN bytes. */
#define FP_LOCKNAME_LEN	54
void fp_lockname(const unsigned char scope[FP_LEN], const char *key,
    size_t keylen, char out[FP_LOCKNAME_LEN]);

/* 64 bits of a lock name's hash (its first 16 hex digits), never 0. */
uint64_t fp_lockhash(const char lockname[FP_LOCKNAME_LEN]);

#endif
