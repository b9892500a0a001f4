/* The store's hashing key: scope hashes and fingerprints keyed (HMAC). */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "hkey.h"
#include "log.h"

void
hkey_init(struct hkey *hk)
{
	memset(hk, 0, sizeof(*hk));
	pthread_mutex_init(&hk->mu, NULL);
	atomic_store(&hk->state, HKEY_UNKNOWN);
	atomic_store(&hk->legacy, 0);
}

void
hkey_free(struct hkey *hk)
{
	OPENSSL_cleanse(hk->k, sizeof(hk->k));
	pthread_mutex_destroy(&hk->mu);
}

enum hkey_state
hkey_state(const struct hkey *hk)
{
	return (enum hkey_state)atomic_load_explicit(&hk->state,
	    memory_order_acquire);
}

/*
 * A keyed hash cannot be skipped: a plain one where the store holds keyed
 * ones would not find a key's row and run it again.  OpenSSL failing here
 * means memory is gone, so the process stops instead (as fp.c does).
 */
void
hkey_hmac(const unsigned char k[HKEY_LEN], const unsigned char d[FP_LEN],
    unsigned char out[FP_LEN])
{
	unsigned int	 len = 0;

	if (HMAC(EVP_sha256(), k, HKEY_LEN, d, FP_LEN, out, &len) == NULL ||
	    len != FP_LEN) {
		log_err("HMAC-SHA-256 unavailable");
		abort();
	}
}
