/* Unit tests for sealed answers: AES-256-GCM, its vector, its binding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "seal.h"

/* Decodes the hex string h into out; returns the byte count. */
static size_t
unhex(const char *h, unsigned char *out)
{
	size_t	 n = 0;
	unsigned int v;

	for (; h[0] != '\0' && h[1] != '\0'; h += 2) {
		if (sscanf(h, "%2x", &v) != 1)
			break;
		out[n++] = (unsigned char)v;
	}
	return n;
}

/* The GCM specification's test case 16 (AES-256, 96-bit IV, AAD). */
static void
test_vector(void)
{
	unsigned char	 k[32], iv[12], a[20], p[60], c[60 + 16], t[16];
	unsigned char	 got[60 + 16], back[60];
	size_t		 pl;

	unhex("feffe9928665731c6d6a8f9467308308"
	    "feffe9928665731c6d6a8f9467308308", k);
	unhex("cafebabefacedbaddecaf888", iv);
	unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2", a);
	pl = unhex("d9313225f88406e5a55909c5aff5269a"
	    "86a7a9531534f7da2e4c303d8a318a72"
	    "1c3c0c95956809532fcf0e2449a6b525"
	    "b16aedf5aa0de657ba637b39", p);
	unhex("522dc1f099567d07f47f37a32a84427d"
	    "643a8cdcbfe5c0c97598a2bd2555d1aa"
	    "8cb08e48590dbb3da7b08b1056828838"
	    "c5f61e6393ba7a0abcc9f662", c);
	unhex("76fc6ece0f4e1768cddf8853bb2d551b", t);
	memcpy(c + 60, t, 16);
	CHECK(pl == 60);
	CHECK(seal_encrypt(k, iv, a, sizeof(a), p, pl, got) == IDEM_OK);
	CHECK(memcmp(got, c, 60) == 0);
	CHECK(memcmp(got + 60, t, 16) == 0);
	CHECK(seal_decrypt(k, iv, a, sizeof(a), c, sizeof(c), back) ==
	    IDEM_OK);
	CHECK(memcmp(back, p, 60) == 0);
	c[75] ^= 1;
	CHECK(seal_decrypt(k, iv, a, sizeof(a), c, sizeof(c), back) ==
	    IDEM_ESEAL);
	CHECK(seal_decrypt(k, iv, a, sizeof(a), c, 15, back) == IDEM_ESEAL);
}

static const unsigned char key1[32] = { 1, 2, 3 };
static const unsigned char key2[32] = { 9, 8, 7 };

/* Seals a small answer for (scope, key, route) into *ct. */
static int
seal_one(const unsigned char *k, const struct seal_ad *ad,
    unsigned char nonce[12], unsigned char **ct, size_t *len)
{
	struct answer	 a;
	int		 ok;

	answer_init(&a, 1024, 1024);
	a.status = 201;
	buf_addstr(&a.hdrs, "Content-Type: text/plain\r\nX-Pay: pay_42\r\n");
	buf_add(&a.body, "id=pay_42\0card=4242", 19);
	ok = seal_answer(k, ad, &a, nonce, ct, len) == IDEM_OK;
	answer_free(&a);
	return ok;
}

static void
test_round_trip(void)
{
	unsigned char	 scope[FP_LEN] = { 0 }, nonce[12], nonce2[12];
	unsigned char	*ct, *ct2;
	struct seal_ad	 ad, other;
	struct answer	 out;
	size_t		 len, len2;

	seal_ad_set(&ad, scope, "k-1", 3, "/payments");
	CHECK(seal_one(key1, &ad, nonce, &ct, &len));
	CHECK(len == 6 + 41 + 19 + SEAL_TAG_LEN);
	CHECK(memmem(ct, len, "pay_42", 6) == NULL);
	answer_init(&out, 1024, 1024);
	CHECK(seal_open(key1, &ad, nonce, ct, len, &out) == IDEM_OK);
	CHECK(out.status == 201);
	CHECK(out.hdrs.len == 41 && memcmp(out.hdrs.p,
	    "Content-Type: text/plain\r\nX-Pay: pay_42\r\n", 41) == 0);
	CHECK(out.body.len == 19 && memcmp(out.body.p, "id=pay_42\0card=4242",
	    19) == 0);
	answer_free(&out);

	/* A fresh nonce each time: the same answer never seals alike. */
	CHECK(seal_one(key1, &ad, nonce2, &ct2, &len2));
	CHECK(memcmp(nonce, nonce2, 12) != 0);
	CHECK(len2 == len && memcmp(ct, ct2, len) != 0);
	free(ct2);

	/* Wrong key. */
	answer_init(&out, 1024, 1024);
	CHECK(seal_open(key2, &ad, nonce, ct, len, &out) == IDEM_ESEAL);
	CHECK(out.status == 0 && out.hdrs.len == 0 && out.body.len == 0);

	/* One flipped bit anywhere: ciphertext, tag, nonce. */
	ct[10] ^= 0x20;
	CHECK(seal_open(key1, &ad, nonce, ct, len, &out) == IDEM_ESEAL);
	ct[10] ^= 0x20;
	ct[len - 1] ^= 1;
	CHECK(seal_open(key1, &ad, nonce, ct, len, &out) == IDEM_ESEAL);
	ct[len - 1] ^= 1;
	nonce[0] ^= 1;
	CHECK(seal_open(key1, &ad, nonce, ct, len, &out) == IDEM_ESEAL);
	nonce[0] ^= 1;

	/* The row's identity is bound in: another key, route or scope, and
	 * bytes slid from the key into the route, all fail. */
	seal_ad_set(&other, scope, "k-2", 3, "/payments");
	CHECK(seal_open(key1, &other, nonce, ct, len, &out) == IDEM_ESEAL);
	seal_ad_set(&other, scope, "k-1", 3, "/refunds");
	CHECK(seal_open(key1, &other, nonce, ct, len, &out) == IDEM_ESEAL);
	seal_ad_set(&other, scope, "k-1/", 4, "payments");
	CHECK(seal_open(key1, &other, nonce, ct, len, &out) == IDEM_ESEAL);
	scope[31] = 1;
	seal_ad_set(&other, scope, "k-1", 3, "/payments");
	CHECK(seal_open(key1, &other, nonce, ct, len, &out) == IDEM_ESEAL);

	/* Truncated below the smallest sealed form. */
	CHECK(seal_open(key1, &ad, nonce, ct, SEAL_TAG_LEN + 5, &out) ==
	    IDEM_ESEAL);
	/* And still whole: it opens. */
	CHECK(seal_open(key1, &ad, nonce, ct, len, &out) == IDEM_OK);
	answer_free(&out);
	free(ct);
}

/* The boundary: an empty answer seals and opens; an answer past out's
 * maxima is refused. */
static void
test_limits(void)
{
	unsigned char	 scope[FP_LEN] = { 0 }, nonce[12], *ct;
	struct seal_ad	 ad;
	struct answer	 a, out;
	size_t		 len;

	seal_ad_set(&ad, scope, "k", 1, "/");
	answer_init(&a, 16, 16);
	a.status = 204;
	CHECK(seal_answer(key1, &ad, &a, nonce, &ct, &len) == IDEM_OK);
	CHECK(len == 6 + SEAL_TAG_LEN);
	answer_init(&out, 16, 16);
	CHECK(seal_open(key1, &ad, nonce, ct, len, &out) == IDEM_OK);
	CHECK(out.status == 204 && out.body.len == 0);
	answer_free(&out);
	free(ct);

	buf_add(&a.body, "0123456789abcdef", 16);
	CHECK(seal_answer(key1, &ad, &a, nonce, &ct, &len) == IDEM_OK);
	answer_init(&out, 16, 16);
	CHECK(seal_open(key1, &ad, nonce, ct, len, &out) == IDEM_OK);
	answer_free(&out);
	answer_init(&out, 16, 15);
	CHECK(seal_open(key1, &ad, nonce, ct, len, &out) == IDEM_ETOOBIG);
	CHECK(out.body.len == 0);
	answer_free(&out);
	free(ct);
	answer_free(&a);
}

int
main(void)
{
	test_vector();
	test_round_trip();
	test_limits();
	return CHECK_DONE();
}
