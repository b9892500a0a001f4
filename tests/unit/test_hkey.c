/* Unit tests for the keyed HMAC-SHA-256 of scope hashes and fingerprints. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "check.h"
#include "hkey.h"

#define THREADS	4
#define ROUNDS	2000

/* One RFC 4231 case: key and data as bytes, the MAC in hex (want's
 * length: case 5 is truncated to 128 bits). */
struct vec {
	unsigned char	 key[131];
	size_t		 klen;
	const char	*data;
	size_t		 dlen;
	const char	*want;
};

static void
hex(const unsigned char *p, size_t n, char *out)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* 1 if v's MAC through hkey_mac is v->want. */
static int
vec_ok(const struct vec *v)
{
	struct hkey_mac	 m;
	unsigned char	 out[FP_LEN];
	char		 got[2 * FP_LEN + 1];

	if (hkey_mac_init(&m, v->key, v->klen) != IDEM_OK)
		return 0;
	hkey_mac(&m, v->data, v->dlen, out);
	hkey_mac_free(&m);
	hex(out, FP_LEN, got);
	return strncmp(got, v->want, strlen(v->want)) == 0;
}

static void
test_rfc4231(void)
{
	char		 b3[50], b4[50];
	struct vec	 v;
	size_t		 i;

	memset(&v, 0, sizeof(v));
	memset(v.key, 0x0b, v.klen = 20);
	v.data = "Hi There";
	v.dlen = 8;
	v.want = "b0344c61d8db38535ca8afceaf0bf12b"
	    "881dc200c9833da726e9376c2e32cff7";
	CHECK(vec_ok(&v));

	memcpy(v.key, "Jefe", v.klen = 4);
	v.data = "what do ya want for nothing?";
	v.dlen = strlen(v.data);
	v.want = "5bdcc146bf60754e6a042426089575c7"
	    "5a003f089d2739839dec58b964ec3843";
	CHECK(vec_ok(&v));

	memset(b3, 0xdd, sizeof(b3));
	memset(v.key, 0xaa, v.klen = 20);
	v.data = b3;
	v.dlen = sizeof(b3);
	v.want = "773ea91e36800e46854db8ebd09181a7"
	    "2959098b3ef8c122d9635514ced565fe";
	CHECK(vec_ok(&v));

	memset(b4, 0xcd, sizeof(b4));
	for (i = 0; i < 25; i++)
		v.key[i] = (unsigned char)(i + 1);
	v.klen = 25;
	v.data = b4;
	v.dlen = sizeof(b4);
	v.want = "82558a389a443c0ea4cc819899f2083a"
	    "85f0faa3e578f8077a2e3ff46729665b";
	CHECK(vec_ok(&v));

	memset(v.key, 0x0c, v.klen = 20);
	v.data = "Test With Truncation";
	v.dlen = strlen(v.data);
	v.want = "a3b6167473100ee06e0c796c2955552b";
	CHECK(vec_ok(&v));

	/* A key longer than a block (131 bytes) is hashed first. */
	memset(v.key, 0xaa, v.klen = 131);
	v.data = "Test Using Larger Than Block-Size Key - Hash Key First";
	v.dlen = strlen(v.data);
	v.want = "60e431591ee0b67f0d8a26aacbf5b77f"
	    "8e0bc6213728c5140546040f0ee37f54";
	CHECK(vec_ok(&v));

	v.data = "This is a test using a larger than block-size key and a "
	    "larger than block-size data. The key needs to be hashed before "
	    "being used by the HMAC algorithm.";
	v.dlen = strlen(v.data);
	v.want = "9b09ffa71b942fcb27635fbcd5b0e944"
	    "bfdc63644f0713938a7f51535c3a35e2";
	CHECK(vec_ok(&v));
}

/* 1 if hkey_mac under a klen-byte key agrees with the one-shot HMAC on
 * dlen bytes. */
static int
len_ok(size_t klen, size_t dlen)
{
	struct hkey_mac	 m;
	unsigned char	 k[200], d[200], a[FP_LEN], b[FP_LEN];
	unsigned int	 len = 0;

	memset(k, 0x5a, sizeof(k));
	memset(d, 0xa5, sizeof(d));
	if (hkey_mac_init(&m, k, klen) != IDEM_OK)
		return 0;
	hkey_mac(&m, d, dlen, a);
	hkey_mac_free(&m);
	if (HMAC(EVP_sha256(), k, (int)klen, d, dlen, b, &len) == NULL)
		return 0;
	return len == FP_LEN && memcmp(a, b, FP_LEN) == 0;
}

/* Keys at a SHA-256 block (64 bytes, kept) and one past (hashed). */
static void
test_lengths(void)
{
	CHECK(len_ok(0, 0));
	CHECK(len_ok(63, 32));
	CHECK(len_ok(64, 32));
	CHECK(len_ok(65, 32));
	CHECK(len_ok(32, 64));
	CHECK(len_ok(32, 200));
}

/* 1 if hkey_hmac under k agrees with OpenSSL's one-shot HMAC on d. */
static int
same_as_oneshot(struct hkey *hk, const unsigned char d[FP_LEN])
{
	unsigned char	 a[FP_LEN], b[FP_LEN];
	unsigned int	 len = 0;

	hkey_hmac(hk, d, a);
	if (HMAC(EVP_sha256(), hk->k, HKEY_LEN, d, FP_LEN, b, &len) == NULL)
		return 0;
	return len == FP_LEN && memcmp(a, b, FP_LEN) == 0;
}

static void
test_random(void)
{
	struct hkey	 hk;
	unsigned char	 d[FP_LEN];
	int		 i, bad = 0;

	for (i = 0; i < 200; i++) {
		hkey_init(&hk);
		if (RAND_bytes(hk.k, HKEY_LEN) != 1 ||
		    RAND_bytes(d, sizeof(d)) != 1 || hkey_arm(&hk) != IDEM_OK)
			bad++;
		else if (!same_as_oneshot(&hk, d) ||
		    !same_as_oneshot(&hk, d))	/* the shared state unspent */
			bad++;
		hkey_free(&hk);
	}
	CHECK(bad == 0);
}

/* A thread: ROUNDS MACs on the shared key, each against the one-shot. */
static void *
hammer(void *arg)
{
	struct hkey	*hk = arg;
	unsigned char	 d[FP_LEN];
	intptr_t	 bad = 0;
	int		 i;

	for (i = 0; i < ROUNDS; i++) {
		memset(d, i & 0xff, sizeof(d));
		d[0] = (unsigned char)(i >> 8);
		if (!same_as_oneshot(hk, d))
			bad++;
	}
	return (void *)bad;
}

static void
test_threads(void)
{
	struct hkey	 hk;
	pthread_t	 t[THREADS];
	void		*r;
	intptr_t	 bad = 0;
	int		 i;

	hkey_init(&hk);
	CHECK(RAND_bytes(hk.k, HKEY_LEN) == 1);
	CHECK(hkey_arm(&hk) == IDEM_OK);
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, hammer, &hk);
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], &r);
		bad += (intptr_t)r;
	}
	CHECK(bad == 0);
	/* Re-arming replaces the state without leaking the old one. */
	CHECK(hkey_arm(&hk) == IDEM_OK);
	memset(hk.k, 0, sizeof(hk.k));
	CHECK(!same_as_oneshot(&hk, hk.k));
	CHECK(hkey_arm(&hk) == IDEM_OK && same_as_oneshot(&hk, hk.k));
	hkey_free(&hk);
	CHECK(hk.mac.ipad == NULL && hk.mac.opad == NULL);
	CHECK(hk.k[0] == 0);
}

int
main(void)
{
	test_rfc4231();
	test_lengths();
	test_random();
	test_threads();
	return CHECK_DONE();
}
