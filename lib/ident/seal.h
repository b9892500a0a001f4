/* Sealing stored answers: AES-256-GCM bound to the row they belong to. */
#ifndef IDEM_SEAL_H
#define IDEM_SEAL_H

#include <stddef.h>

#include "answer.h"
#include "err.h"
#include "fp.h"

#define SEAL_KEY_LEN	32
#define SEAL_NONCE_LEN	12
#define SEAL_TAG_LEN	16
/* A field of the associated data is cut at this many bytes (the store's
 * columns hold no more). */
#define SEAL_FIELD_MAX	255
#define SEAL_AD_MAX	(FP_LEN + 2 * (2 + SEAL_FIELD_MAX))

/*
 * The associated data of a row: its scope digest, then its key and its
 * route, each after a two-byte big-endian length, so that no bytes can
 * slide from one field to the next.  A ciphertext moved to another row
 * fails its tag.
 */
struct seal_ad {
	unsigned char	 b[SEAL_AD_MAX];
	size_t		 len;
};

/* Fills ad for the row (scope, key of keylen bytes, route). */
void seal_ad_set(struct seal_ad *ad, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, const char *route);

/*
 * AES-256-GCM of in (len bytes) under key and the 12-byte nonce, with
 * associated data ad (adlen bytes), into out: len bytes of ciphertext
 * then the 16-byte tag (out has room for len + SEAL_TAG_LEN).
 * IDEM_ENOMEM or IDEM_ESYS when OpenSSL fails.
 */
enum idem_err seal_encrypt(const unsigned char *key,
    const unsigned char *nonce, const void *ad, size_t adlen,
    const void *in, size_t len, unsigned char *out);

/*
 * The inverse: in is len bytes (ciphertext then tag, len >=
 * SEAL_TAG_LEN); out gets len - SEAL_TAG_LEN bytes.  IDEM_ESEAL when
 * the tag does not match (wrong key, nonce or ad; altered bytes): out
 * is then wiped.
 */
enum idem_err seal_decrypt(const unsigned char *key,
    const unsigned char *nonce, const void *ad, size_t adlen,
    const void *in, size_t len, unsigned char *out);

/*
 * Seals a's status, header lines and body under key with a fresh random
 * nonce (written to nonce) and ad.  *out (malloc'd, the caller frees)
 * holds *outlen bytes: the sealed form of a 2-byte status, a 4-byte
 * header length, the headers and the body, then the tag.  IDEM_ETOOBIG
 * for headers past 4 GiB; IDEM_ENOMEM; IDEM_ESYS when no random bytes.
 */
enum idem_err seal_answer(const unsigned char *key, const struct seal_ad *ad,
    const struct answer *a, unsigned char nonce[SEAL_NONCE_LEN],
    unsigned char **out, size_t *outlen);

/*
 * Opens what seal_answer made into out (initialised, empty: its maxima
 * apply).  IDEM_ESEAL when the tag fails or the sealed form is not one
 * (out left empty); IDEM_ETOOBIG past out's maxima; IDEM_ENOMEM.
 */
enum idem_err seal_open(const unsigned char *key, const struct seal_ad *ad,
    const unsigned char *nonce, const void *in, size_t len,
    struct answer *out);

#endif
