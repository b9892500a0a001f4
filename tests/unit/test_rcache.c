/* Tests of the replay cache: hits, misses, vouching, expiry, budget, threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/check.h"
#include "rcache.h"

#define MS	1000LL		/* µs */
#define T0	(1000000 * MS)	/* an arbitrary monotonic "now" */

static unsigned char	 scope_a[FP_LEN], scope_b[FP_LEN];
static unsigned char	 fp_1[FP_LEN], fp_2[FP_LEN];

/* The identity (scope, key, fp) that rcache_put/get take. */
static struct idem_id
ident(const unsigned char *scope, const char *key, size_t keylen,
    const unsigned char *fp)
{
	struct idem_id	 id;

	memset(&id, 0, sizeof(id));
	memcpy(id.scope, scope, FP_LEN);
	memcpy(id.fp, fp, FP_LEN);
	id.key = key;
	id.keylen = keylen;
	return id;
}

static void
put_raw(struct rcache *rc, uint64_t gen, const unsigned char *scope,
    const char *key, size_t keylen, const unsigned char *fp, int status,
    const char *hdrs, size_t hdrslen, const char *body, size_t bodylen,
    int64_t expires, int64_t now)
{
	struct idem_id	 id = ident(scope, key, keylen, fp);
	struct answer	 a;

	answer_borrow(&a, status, hdrs, hdrslen, body, bodylen);
	rcache_put(rc, gen, &id, &a, expires, now);
}

static int
get_raw(struct rcache *rc, const unsigned char *scope, const char *key,
    size_t keylen, const unsigned char *fp, int64_t now,
    struct rcache_hit *h)
{
	struct idem_id	 id = ident(scope, key, keylen, fp);

	return rcache_get(rc, &id, now, h);
}

static void
put(struct rcache *rc, const char *key, const unsigned char *fp,
    const char *body, size_t bodylen, int64_t expires, int64_t now)
{
	put_raw(rc, rcache_gen(rc), scope_a, key, strlen(key), fp, 201,
	    "Content-Type: text/plain\r\n", 26, body, bodylen, expires, now);
}

static int
has(struct rcache *rc, const unsigned char *scope, const char *key,
    const unsigned char *fp, int64_t now)
{
	struct rcache_hit	 h;

	if (!get_raw(rc, scope, key, strlen(key), fp, now, &h))
		return 0;
	rcache_release(rc, &h);
	return 1;
}

static void
test_hit_and_miss(void)
{
	struct rcache		*rc = NULL;
	struct rcache_hit	 h;
	struct rcache_info	 info;
	const char		 body[] = "a\0b\r\n\0";
	struct idem_id		 id;

	CHECK(rcache_new(1024 * 1024, &rc) == IDEM_OK);
	/* Vouched for by nobody yet: puts are dropped. */
	put(rc, "k1", fp_1, body, sizeof(body), T0 + 1000 * MS, T0);
	id = ident(scope_a, "k1", 2, fp_1);
	CHECK(rcache_holds(rc, &id) == 0);
	rcache_vouch(rc, 7, T0);
	CHECK(!has(rc, scope_a, "k1", fp_1, T0 + MS));

	put(rc, "k1", fp_1, body, sizeof(body), T0 + 1000 * MS, T0);
	memset(&h, 0, sizeof(h));
	CHECK(get_raw(rc, scope_a, "k1", 2, fp_1, T0 + MS, &h) == 1);
	CHECK(h.ans->status == 201);
	CHECK(h.ans->hdrs.len == 26 &&
	    memcmp(h.ans->hdrs.p, "Content-Type: text/plain\r\n", 26) == 0);
	CHECK(h.ans->body.len == sizeof(body) &&
	    memcmp(h.ans->body.p, body, sizeof(body)) == 0);
	rcache_release(rc, &h);
	CHECK(h.entry == NULL);

	CHECK(!has(rc, scope_a, "k1", fp_2, T0 + MS));	/* other request */
	CHECK(!has(rc, scope_b, "k1", fp_1, T0 + MS));	/* other scope */
	CHECK(!has(rc, scope_a, "k2", fp_1, T0 + MS));	/* other key */
	CHECK(!has(rc, scope_a, "k", fp_1, T0 + MS));	/* a prefix */
	CHECK(has(rc, scope_a, "k1", fp_1, T0 + MS));	/* still there */
	/* holds: (scope, key) alone, whatever the fingerprint; no count. */
	id = ident(scope_a, "k1", 2, fp_2);
	CHECK(rcache_holds(rc, &id) == 1);
	id = ident(scope_b, "k1", 2, fp_1);
	CHECK(rcache_holds(rc, &id) == 0);
	id = ident(scope_a, "k", 1, fp_1);
	CHECK(rcache_holds(rc, &id) == 0);

	/* A second put of the same key replaces the first. */
	put(rc, "k1", fp_1, "new", 3, T0 + 1000 * MS, T0 + 2 * MS);
	CHECK(get_raw(rc, scope_a, "k1", 2, fp_1, T0 + 3 * MS, &h) == 1);
	CHECK(h.ans->body.len == 3 && memcmp(h.ans->body.p, "new", 3) == 0);
	rcache_release(rc, &h);
	rcache_info(rc, &info);
	CHECK(info.entries == 1);
	CHECK(info.bytes == rcache_cost(2, 26, 3));
	CHECK(info.hits == 3);
	CHECK(info.misses == 5);

	/* No headers and an empty body are an answer too. */
	put_raw(rc, rcache_gen(rc), scope_a, "e", 1, fp_1, 204, NULL, 0,
	    NULL, 0, T0 + 1000 * MS, T0);
	CHECK(get_raw(rc, scope_a, "e", 1, fp_1, T0 + MS, &h) == 1);
	CHECK(h.ans->status == 204 && h.ans->hdrs.len == 0 && h.ans->body.len == 0);
	rcache_release(rc, &h);
	rcache_free(rc);
	rcache_free(NULL);
}

static void
test_expiry_and_window(void)
{
	struct rcache	*rc = NULL;

	CHECK(rcache_new(1024 * 1024, &rc) == IDEM_OK);
	rcache_vouch(rc, 1, T0);
	put(rc, "k", fp_1, "x", 1, T0 + 100 * MS, T0);
	/* The row's expiry: live up to the µs before, gone at it. */
	CHECK(has(rc, scope_a, "k", fp_1, T0 + 100 * MS - 1));
	CHECK(!has(rc, scope_a, "k", fp_1, T0 + 100 * MS));
	CHECK(!has(rc, scope_a, "k", fp_1, T0 + 99 * MS));	/* dropped */
	/* Expiring now: not kept. */
	put(rc, "k", fp_1, "x", 1, T0, T0);
	CHECK(!has(rc, scope_a, "k", fp_1, T0));

	/* A poll at T0 vouches up to T0 + RCACHE_VALID_MS, not at it. */
	put(rc, "w", fp_1, "x", 1, T0 + 3600 * 1000 * MS, T0);
	CHECK(has(rc, scope_a, "w", fp_1, T0 + RCACHE_VALID_MS * MS - 1));
	CHECK(!has(rc, scope_a, "w", fp_1, T0 + RCACHE_VALID_MS * MS));
	/* A later poll with the same epoch renews it; the entry survived. */
	rcache_vouch(rc, 1, T0 + RCACHE_VALID_MS * MS);
	CHECK(has(rc, scope_a, "w", fp_1, T0 + RCACHE_VALID_MS * MS + 1));

	/* RCACHE_MAX_AGE_MS caps a long ttl. */
	rcache_vouch(rc, 1, T0 + RCACHE_MAX_AGE_MS * MS - 1);
	CHECK(has(rc, scope_a, "w", fp_1, T0 + RCACHE_MAX_AGE_MS * MS - 1));
	CHECK(!has(rc, scope_a, "w", fp_1, T0 + RCACHE_MAX_AGE_MS * MS));
	rcache_free(rc);
}

static void
test_epoch_gen_distrust(void)
{
	struct rcache		*rc = NULL;
	struct rcache_hit	 h;
	uint64_t		 g;

	CHECK(rcache_new(1024 * 1024, &rc) == IDEM_OK);
	rcache_vouch(rc, 5, T0);
	put(rc, "k", fp_1, "x", 1, T0 + 1000 * MS, T0);
	CHECK(has(rc, scope_a, "k", fp_1, T0 + MS));
	/* The epoch moved (a forget): everything goes. */
	rcache_vouch(rc, 6, T0 + 2 * MS);
	CHECK(!has(rc, scope_a, "k", fp_1, T0 + 3 * MS));

	/* A put whose store read started before a flush is void. */
	g = rcache_gen(rc);
	rcache_vouch(rc, 7, T0 + 4 * MS);
	put_raw(rc, g, scope_a, "k", 1, fp_1, 200, NULL, 0, "x", 1,
	    T0 + 1000 * MS, T0 + 5 * MS);
	CHECK(!has(rc, scope_a, "k", fp_1, T0 + 6 * MS));
	/* The same epoch again flushes nothing: a current gen still puts. */
	g = rcache_gen(rc);
	rcache_vouch(rc, 7, T0 + 7 * MS);
	put_raw(rc, g, scope_a, "k", 1, fp_1, 200, NULL, 0, "x", 1,
	    T0 + 1000 * MS, T0 + 8 * MS);
	CHECK(has(rc, scope_a, "k", fp_1, T0 + 9 * MS));

	/* A hit being replayed survives a flush (freed on release). */
	CHECK(get_raw(rc, scope_a, "k", 1, fp_1, T0 + 9 * MS, &h) == 1);
	rcache_distrust(rc);
	CHECK(h.ans->body.len == 1 && h.ans->body.p[0] == 'x');
	rcache_release(rc, &h);
	/* Distrusted: no hits, no puts, until a poll succeeds again... */
	CHECK(!has(rc, scope_a, "k", fp_1, T0 + 10 * MS));
	put(rc, "k", fp_1, "x", 1, T0 + 1000 * MS, T0 + 10 * MS);
	CHECK(!has(rc, scope_a, "k", fp_1, T0 + 11 * MS));
	/* ...and then it starts empty, even with the old epoch. */
	rcache_vouch(rc, 7, T0 + 12 * MS);
	CHECK(!has(rc, scope_a, "k", fp_1, T0 + 13 * MS));
	rcache_free(rc);
}

static void
test_budget(void)
{
	struct rcache		*rc = NULL;
	struct rcache_hit	 h;
	struct rcache_info	 info;
	size_t			 budget = 64 * 1024, max, body;
	char			*big, key[16];
	int			 i;

	CHECK(rcache_new(budget, &rc) == IDEM_OK);
	rcache_vouch(rc, 1, T0);
	max = budget / 8;
	CHECK((big = calloc(1, max)) != NULL);
	/* An answer costing exactly budget / 8 is kept; a byte more is not. */
	body = max - rcache_cost(2, 26, 0);
	put(rc, "b1", fp_1, big, body, T0 + 1000 * MS, T0);
	CHECK(has(rc, scope_a, "b1", fp_1, T0 + MS));
	put(rc, "b2", fp_1, big, body + 1, T0 + 1000 * MS, T0);
	CHECK(!has(rc, scope_a, "b2", fp_1, T0 + MS));

	/* Eight more of that size push out the least recently used. */
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "e%d", i);
		put(rc, key, fp_1, big, body, T0 + 1000 * MS, T0);
		if (i == 3)	/* b1 becomes the most recently used */
			CHECK(has(rc, scope_a, "b1", fp_1, T0 + MS));
		if (i == 6)
			CHECK(has(rc, scope_a, "e0", fp_1, T0 + MS));
	}
	rcache_info(rc, &info);
	CHECK(info.bytes == budget);
	CHECK(info.entries == 8);
	CHECK(has(rc, scope_a, "b1", fp_1, T0 + MS));
	CHECK(has(rc, scope_a, "e0", fp_1, T0 + MS));
	CHECK(has(rc, scope_a, "e7", fp_1, T0 + MS));
	CHECK(!has(rc, scope_a, "e1", fp_1, T0 + MS));	/* the oldest */

	/* Keys over FP_KEY_MAX are not keys. */
	memset(big, 'k', FP_KEY_MAX + 1);
	put_raw(rc, rcache_gen(rc), scope_a, big, FP_KEY_MAX + 1, fp_1,
	    200, NULL, 0, "x", 1, T0 + 1000 * MS, T0);
	CHECK(get_raw(rc, scope_a, big, FP_KEY_MAX + 1, fp_1, T0 + MS,
	    &h) == 0);
	put_raw(rc, rcache_gen(rc), scope_a, big, FP_KEY_MAX, fp_1,
	    200, NULL, 0, "x", 1, T0 + 1000 * MS, T0);
	CHECK(get_raw(rc, scope_a, big, FP_KEY_MAX, fp_1, T0 + MS,
	    &h) == 1);
	rcache_release(rc, &h);
	free(big);
	rcache_free(rc);
}

/* Threads: every hit must be the answer that was put for its key. */
#define NT	4
#define ROUNDS	20000

static struct rcache	*shared;

static void *
hammer(void *arg)
{
	struct rcache_hit	 h;
	char			 key[16], want[32];
	int			 id = (int)(intptr_t)arg, i, k, bad = 0;

	for (i = 0; i < ROUNDS; i++) {
		k = (i * 7 + id) % 50;
		snprintf(key, sizeof(key), "key-%d", k);
		snprintf(want, sizeof(want), "body of key-%d", k);
		if (get_raw(shared, scope_a, key, strlen(key), fp_1,
		    T0 + MS, &h)) {
			if (h.ans->body.len != strlen(want) ||
			    memcmp(h.ans->body.p, want, h.ans->body.len) != 0)
				bad++;
			rcache_release(shared, &h);
		} else
			put_raw(shared, rcache_gen(shared), scope_a, key,
			    strlen(key), fp_1, 200, NULL, 0, want,
			    strlen(want), T0 + 1000 * MS, T0 + MS);
		if (id == 0 && i % 1000 == 0)	/* the keeper; flushes too */
			rcache_vouch(shared, (uint64_t)(i / 5000), T0);
	}
	return (void *)(intptr_t)bad;
}

static void
test_threads(void)
{
	pthread_t		 t[NT];
	struct rcache_info	 info;
	void			*ret;
	int			 i, bad = 0;

	/* Small: evictions happen while other threads hold hits. */
	CHECK(rcache_new(64 * 1024, &shared) == IDEM_OK);
	rcache_vouch(shared, 0, T0);
	for (i = 0; i < NT; i++)
		pthread_create(&t[i], NULL, hammer, (void *)(intptr_t)i);
	for (i = 0; i < NT; i++) {
		pthread_join(t[i], &ret);
		bad += (int)(intptr_t)ret;
	}
	CHECK(bad == 0);
	rcache_info(shared, &info);
	CHECK(info.hits + info.misses == (uint64_t)NT * ROUNDS);
	CHECK(info.hits > 0);
	CHECK(info.bytes <= 64 * 1024);
	rcache_free(shared);
}

/* The hash the cache had: FNV-1a from its fixed start, no secret. */
static uint64_t
fixed_hash(const unsigned char *scope, const char *key, size_t keylen)
{
	uint64_t	 h = 0xcbf29ce484222325ull;
	size_t		 i;

	for (i = 0; i < FP_LEN; i++)
		h = (h ^ scope[i]) * 0x100000001b3ull;
	for (i = 0; i < keylen; i++)
		h = (h ^ (unsigned char)key[i]) * 0x100000001b3ull;
	return h;
}

/*
 * Keys a client picked to share a bucket under a hash anyone can
 * compute (64 of them, found by trying): each cache hashes with secrets
 * of its own, so they spread, and no lookup walks them all.
 */
static void
test_chosen_keys(void)
{
	struct rcache	*rc = NULL;
	char		 keys[64][16];
	uint64_t	 want = 0;
	int64_t		 now = 1000000;
	int		 n = 0, i;

	for (i = 0; n < 64 && i < 10000000; i++) {
		snprintf(keys[n], sizeof(keys[n]), "k%d", i);
		if (n == 0)
			want = fixed_hash(scope_a, keys[0], strlen(keys[0])) &
			    1023;
		if ((fixed_hash(scope_a, keys[n], strlen(keys[n])) & 1023) ==
		    want)
			n++;
	}
	CHECK(n == 64);
	CHECK(rcache_new(1 << 20, &rc) == IDEM_OK);
	if (rc == NULL)
		return;
	rcache_vouch(rc, 1, now);
	for (i = 0; i < n; i++)
		put(rc, keys[i], fp_1, "x", 1, now + 60000000, now);
	CHECK(has(rc, scope_a, keys[63], fp_1, now));
	CHECK(rcache_longest_chain(rc) < 16);
	rcache_free(rc);
}

int
main(void)
{
	memset(scope_a, 'a', FP_LEN);
	memset(scope_b, 'b', FP_LEN);
	memset(fp_1, 1, FP_LEN);
	memset(fp_2, 2, FP_LEN);
	test_hit_and_miss();
	test_expiry_and_window();
	test_epoch_gen_distrust();
	test_budget();
	test_threads();
	test_chosen_keys();
	return CHECK_DONE();
}
