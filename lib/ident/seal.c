/* Sealing stored answers: AES-256-GCM bound to the row they belong to. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "seal.h"

/* Status (2 bytes) and header length (4 bytes) before the headers. */
#define SEAL_HEAD	6

/* Appends a two-byte length and at most SEAL_FIELD_MAX bytes of p. */
static void
ad_field(struct seal_ad *ad, const void *p, size_t len)
{
	if (len > SEAL_FIELD_MAX)
		len = SEAL_FIELD_MAX;
	ad->b[ad->len++] = (unsigned char)(len >> 8);
	ad->b[ad->len++] = (unsigned char)len;
	if (len > 0)
		memcpy(ad->b + ad->len, p, len);
	ad->len += len;
}

void
seal_ad_set(struct seal_ad *ad, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, const char *route)
{
	memcpy(ad->b, scope, FP_LEN);
	ad->len = FP_LEN;
	ad_field(ad, key, keylen);
	ad_field(ad, route, route != NULL ? strlen(route) : 0);
}

/*
 * Runs one GCM pass over the parts of in (n of them) into out.  enc: 1
 * encrypt (the tag goes to tag), 0 decrypt (tag is checked).
 */
struct part {
	const void	*p;
	size_t		 len;
};

static enum idem_err
gcm(int enc, const unsigned char *key, const unsigned char *nonce,
    const void *ad, size_t adlen, const struct part *in, size_t n,
    unsigned char *out, unsigned char *tag)
{
	EVP_CIPHER_CTX	*x;
	enum idem_err	 er = IDEM_ESYS;
	size_t		 i, done, chunk;
	int		 olen;

	if ((x = EVP_CIPHER_CTX_new()) == NULL)
		return IDEM_ENOMEM;
	if (EVP_CipherInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) !=
	    1 || EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN,
	    SEAL_NONCE_LEN, NULL) != 1 ||
	    EVP_CipherInit_ex(x, NULL, NULL, key, nonce, enc) != 1)
		goto out;
	if (adlen > 0 && EVP_CipherUpdate(x, NULL, &olen, ad, (int)adlen) != 1)
		goto out;
	for (i = 0; i < n; i++)
		/* EVP takes int lengths: feed a large body in slices. */
		for (done = 0; done < in[i].len; done += chunk) {
			chunk = in[i].len - done;
			if (chunk > INT_MAX / 2)
				chunk = INT_MAX / 2;
			if (EVP_CipherUpdate(x, out, &olen,
			    (const unsigned char *)in[i].p + done,
			    (int)chunk) != 1)
				goto out;
			out += olen;
		}
	if (!enc && EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, SEAL_TAG_LEN,
	    tag) != 1)
		goto out;
	if (EVP_CipherFinal_ex(x, out, &olen) != 1) {
		er = enc ? IDEM_ESYS : IDEM_ESEAL;
		goto out;
	}
	if (enc && EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, SEAL_TAG_LEN,
	    tag) != 1)
		goto out;
	er = IDEM_OK;
out:
	EVP_CIPHER_CTX_free(x);
	return er;
}

enum idem_err
seal_encrypt(const unsigned char *key, const unsigned char *nonce,
    const void *ad, size_t adlen, const void *in, size_t len,
    unsigned char *out)
{
	const struct part	 p = { in, len };

	return gcm(1, key, nonce, ad, adlen, &p, 1, out, out + len);
}

enum idem_err
seal_decrypt(const unsigned char *key, const unsigned char *nonce,
    const void *ad, size_t adlen, const void *in, size_t len,
    unsigned char *out)
{
	const struct part	 p = { in, len - SEAL_TAG_LEN };
	unsigned char		 tag[SEAL_TAG_LEN];
	enum idem_err		 er;

	if (len < SEAL_TAG_LEN)
		return IDEM_ESEAL;
	memcpy(tag, (const unsigned char *)in + p.len, SEAL_TAG_LEN);
	er = gcm(0, key, nonce, ad, adlen, &p, 1, out, tag);
	/* Plaintext that failed its tag is not to be trusted, or kept. */
	if (er != IDEM_OK)
		OPENSSL_cleanse(out, p.len);
	return er;
}

enum idem_err
seal_answer(const unsigned char *key, const struct seal_ad *ad,
    const struct answer *a, unsigned char nonce[SEAL_NONCE_LEN],
    unsigned char **out, size_t *outlen)
{
	unsigned char	 head[SEAL_HEAD];
	struct part	 p[3];
	unsigned char	*o;
	size_t		 len;
	enum idem_err	 er;

	if (a->hdrs.len > UINT32_MAX)
		return IDEM_ETOOBIG;
	head[0] = (unsigned char)(a->status >> 8);
	head[1] = (unsigned char)a->status;
	head[2] = (unsigned char)(a->hdrs.len >> 24);
	head[3] = (unsigned char)(a->hdrs.len >> 16);
	head[4] = (unsigned char)(a->hdrs.len >> 8);
	head[5] = (unsigned char)a->hdrs.len;
	p[0] = (struct part){ head, SEAL_HEAD };
	p[1] = (struct part){ a->hdrs.p, a->hdrs.len };
	p[2] = (struct part){ a->body.p, a->body.len };
	len = SEAL_HEAD + a->hdrs.len + a->body.len;
	/* A nonce repeated under one key would undo GCM: never reuse one,
	 * never make one up without the system's randomness. */
	if (RAND_bytes(nonce, SEAL_NONCE_LEN) != 1)
		return IDEM_ESYS;
	if ((o = malloc(len + SEAL_TAG_LEN)) == NULL)
		return IDEM_ENOMEM;
	if ((er = gcm(1, key, nonce, ad->b, ad->len, p, 3, o, o + len)) !=
	    IDEM_OK) {
		free(o);
		return er;
	}
	*out = o;
	*outlen = len + SEAL_TAG_LEN;
	return IDEM_OK;
}

/* Splits the opened form pt (len bytes) into out. */
static enum idem_err
open_parts(const unsigned char *pt, size_t len, struct answer *out)
{
	size_t		 hlen;
	enum idem_err	 er;

	if (len < SEAL_HEAD)
		return IDEM_ESEAL;
	hlen = (size_t)pt[2] << 24 | (size_t)pt[3] << 16 |
	    (size_t)pt[4] << 8 | pt[5];
	if (hlen > len - SEAL_HEAD)
		return IDEM_ESEAL;
	if ((er = buf_add(&out->hdrs, pt + SEAL_HEAD, hlen)) != IDEM_OK ||
	    (er = buf_add(&out->body, pt + SEAL_HEAD + hlen,
	    len - SEAL_HEAD - hlen)) != IDEM_OK)
		return er;
	out->status = pt[0] << 8 | pt[1];
	return IDEM_OK;
}

enum idem_err
seal_open(const unsigned char *key, const struct seal_ad *ad,
    const unsigned char *nonce, const void *in, size_t len,
    struct answer *out)
{
	unsigned char	*pt;
	size_t		 ptlen;
	enum idem_err	 er;

	if (len < SEAL_TAG_LEN + SEAL_HEAD)
		return IDEM_ESEAL;
	ptlen = len - SEAL_TAG_LEN;
	if ((pt = malloc(ptlen)) == NULL)
		return IDEM_ENOMEM;
	er = seal_decrypt(key, nonce, ad->b, ad->len, in, len, pt);
	if (er == IDEM_OK && (er = open_parts(pt, ptlen, out)) != IDEM_OK) {
		buf_reset(&out->hdrs);
		buf_reset(&out->body);
	}
	OPENSSL_cleanse(pt, ptlen);
	free(pt);
	return er;
}
