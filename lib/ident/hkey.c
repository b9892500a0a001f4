/* The store's hashing key: scope hashes and fingerprints keyed (HMAC). */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "hkey.h"
#include "log.h"

#define MAC_BLOCK	64	/* SHA-256's block */

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
	hkey_mac_free(&hk->mac);
	pthread_mutex_destroy(&hk->mu);
}

enum idem_err
hkey_arm(struct hkey *hk)
{
	hkey_mac_free(&hk->mac);
	return hkey_mac_init(&hk->mac, hk->k, HKEY_LEN);
}

enum hkey_state
hkey_state(const struct hkey *hk)
{
	return (enum hkey_state)atomic_load_explicit(&hk->state,
	    memory_order_acquire);
}

int
hkey_ready(const struct hkey *hk)
{
	enum hkey_state	 s;

	if (hk == NULL)
		return 1;
	s = hkey_state(hk);
	return s == HKEY_KEYED || s == HKEY_PLAIN;
}

/* One pad of a key: SHA-256 begun over the block-long key ^ x.  NULL
 * when OpenSSL cannot. */
static EVP_MD_CTX *
mac_pad(const unsigned char key[MAC_BLOCK], unsigned char x)
{
	unsigned char	 pad[MAC_BLOCK];
	EVP_MD_CTX	*c;
	size_t		 i;

	for (i = 0; i < sizeof(pad); i++)
		pad[i] = key[i] ^ x;
	if ((c = EVP_MD_CTX_new()) != NULL &&
	    (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(c, pad, sizeof(pad)) != 1)) {
		EVP_MD_CTX_free(c);
		c = NULL;
	}
	OPENSSL_cleanse(pad, sizeof(pad));
	return c;
}

enum idem_err
hkey_mac_init(struct hkey_mac *m, const void *k, size_t klen)
{
	unsigned char	 key[MAC_BLOCK];
	enum idem_err	 er = IDEM_OK;

	memset(m, 0, sizeof(*m));
	memset(key, 0, sizeof(key));
	/* RFC 2104: a key longer than a block is replaced by its hash. */
	if (klen > sizeof(key)) {
		if (EVP_Digest(k, klen, key, NULL, EVP_sha256(), NULL) != 1)
			er = IDEM_ENOMEM;
	} else if (klen > 0)
		memcpy(key, k, klen);
	if (er == IDEM_OK && ((m->ipad = mac_pad(key, 0x36)) == NULL ||
	    (m->opad = mac_pad(key, 0x5c)) == NULL)) {
		hkey_mac_free(m);
		er = IDEM_ENOMEM;
	}
	OPENSSL_cleanse(key, sizeof(key));
	return er;
}

void
hkey_mac_free(struct hkey_mac *m)
{
	/* EVP_MD_CTX_free wipes the digest states it frees. */
	EVP_MD_CTX_free(m->ipad);
	EVP_MD_CTX_free(m->opad);
	m->ipad = m->opad = NULL;
}

/*
 * A keyed hash cannot be skipped: a plain one where the store holds keyed
 * ones would not find a key's row and run it again.  OpenSSL failing here
 * means memory is gone, so the process stops instead (as fp.c does).
 * The shared pads are copied, never updated: threads share m.
 */
void
hkey_mac(const struct hkey_mac *m, const void *d, size_t len,
    unsigned char out[FP_LEN])
{
	unsigned char	 in[FP_LEN];
	EVP_MD_CTX	*c;

	if ((c = EVP_MD_CTX_new()) == NULL ||
	    EVP_MD_CTX_copy_ex(c, m->ipad) != 1 ||
	    EVP_DigestUpdate(c, d, len) != 1 ||
	    EVP_DigestFinal_ex(c, in, NULL) != 1 ||
	    EVP_MD_CTX_copy_ex(c, m->opad) != 1 ||
	    EVP_DigestUpdate(c, in, sizeof(in)) != 1 ||
	    EVP_DigestFinal_ex(c, out, NULL) != 1) {
		log_err("HMAC-SHA-256 unavailable");
		abort();
	}
	EVP_MD_CTX_free(c);
}

void
hkey_hmac(const struct hkey *hk, const unsigned char d[FP_LEN],
    unsigned char out[FP_LEN])
{
	hkey_mac(&hk->mac, d, FP_LEN, out);
}
