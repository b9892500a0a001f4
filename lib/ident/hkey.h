/* The store's hashing key: scope hashes and fingerprints keyed (HMAC). */
#ifndef IDEM_HKEY_H
#define IDEM_HKEY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <openssl/types.h>

#include "err.h"
#include "fp.h"

#define HKEY_LEN	32

/*
 * With a secret_key_file, a stored scope hash or fingerprint is
 * HMAC-SHA-256 under the store's hashing key over the plain SHA-256
 * digest (fp_scope, fp_request): a dump without the key cannot be
 * checked against a guessed card number or user name.  The hashing key
 * is one random key per store, made once, kept in idem_hash_key wrapped
 * under a key of the file (lib/store/store_hkey.c); rotating the file's
 * keys never changes it, so a key is found and compared after a rotation
 * exactly as before.
 *
 * How this process hashes, resolved once against the store.  Shared by
 * a worker's threads: state is read without the lock, k and mac are
 * written (hkey_arm) before state says HKEY_KEYED and not after.
 */
enum hkey_state {
	HKEY_UNKNOWN,		/* not resolved yet: the store was not asked */
	HKEY_PLAIN,		/* no secret_key_file, none in the store */
	HKEY_KEYED,		/* k holds the store's hashing key */
	HKEY_REFUSED		/* cannot hash as the store does: why says */
};

/*
 * A keyed HMAC-SHA-256 (RFC 2104): the key's inner and outer pads hashed
 * once, so each MAC hashes only its input and the inner digest.  Made
 * once per key; shared read-only by threads (each MAC works on copies).
 */
struct hkey_mac {
	EVP_MD_CTX		*ipad;
	EVP_MD_CTX		*opad;
};

struct hkey {
	pthread_mutex_t		 mu;		/* serialises resolving */
	_Atomic int		 state;		/* enum hkey_state */
	unsigned char		 k[HKEY_LEN];
	struct hkey_mac		 mac;		/* k's, once it is set */
	/* Rows hashed before the key was set (hashed = 0) may exist: a
	 * claim looks for one under the plain scope too. */
	_Atomic int		 legacy;
	char			 why[300];	/* HKEY_REFUSED: one line */
	/* Set by a process that only reads (idemctl show, forget, ...):
	 * a store with no hashing key yet is read with plain hashes, never
	 * keyed by it (store_hkey_resolve).  Gateways, idemctl run and
	 * rekey leave it 0. */
	int			 no_make;
};

void hkey_init(struct hkey *hk);
void hkey_free(struct hkey *hk);		/* wipes k and its mac */

/*
 * Makes hk->mac from hk->k, once k is set and before the state says
 * HKEY_KEYED.  IDEM_ENOMEM when OpenSSL cannot; hk->mac is then unset.
 */
enum idem_err hkey_arm(struct hkey *hk);

/* The state, read once (acquire). */
enum hkey_state hkey_state(const struct hkey *hk);

/* 1 if keys can be hashed now, without asking the store: hk is NULL (a
 * plain config) or resolved (HKEY_KEYED or HKEY_PLAIN). */
int hkey_ready(const struct hkey *hk);

/* d's keyed form under hk's key (armed, HKEY_KEYED) into out. */
void hkey_hmac(const struct hkey *hk, const unsigned char d[FP_LEN],
    unsigned char out[FP_LEN]);

/*
 * m keyed with the klen bytes at k (any length: a key longer than a
 * SHA-256 block is hashed first).  IDEM_ENOMEM when OpenSSL cannot; m is
 * then unset.  hkey_mac_free(m) wipes and frees; an unset m is a no-op.
 */
enum idem_err hkey_mac_init(struct hkey_mac *m, const void *k, size_t klen);
void hkey_mac_free(struct hkey_mac *m);

/* HMAC-SHA-256 of the len bytes at d under m into out.  Thread-safe:
 * m is only read. */
void hkey_mac(const struct hkey_mac *m, const void *d, size_t len,
    unsigned char out[FP_LEN]);

#endif
