/* The store's hashing key: scope hashes and fingerprints keyed (HMAC). */
#ifndef IDEM_HKEY_H
#define IDEM_HKEY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

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
 * a worker's threads: state is read without the lock, k is written
 * before state says HKEY_KEYED.
 */
enum hkey_state {
	HKEY_UNKNOWN,		/* not resolved yet: the store was not asked */
	HKEY_PLAIN,		/* no secret_key_file, none in the store */
	HKEY_KEYED,		/* k holds the store's hashing key */
	HKEY_REFUSED		/* cannot hash as the store does: why says */
};

struct hkey {
	pthread_mutex_t		 mu;		/* serialises resolving */
	_Atomic int		 state;		/* enum hkey_state */
	unsigned char		 k[HKEY_LEN];
	/* Rows hashed before the key was set (hashed = 0) may exist: a
	 * claim looks for one under the plain scope too. */
	_Atomic int		 legacy;
	char			 why[300];	/* HKEY_REFUSED: one line */
};

void hkey_init(struct hkey *hk);
void hkey_free(struct hkey *hk);		/* wipes k */

/* The state, read once (acquire). */
enum hkey_state hkey_state(const struct hkey *hk);

/* d's keyed form under the raw key k into out. */
void hkey_hmac(const unsigned char k[HKEY_LEN], const unsigned char d[FP_LEN],
    unsigned char out[FP_LEN]);

#endif
