/* A worker's memory of completed answers: a bounded LRU hash of replays. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "clock.h"
#include "rcache.h"

#define RCACHE_BUCKETS	1024		/* power of two */

struct entry {
	struct entry	*chain;		/* next in the bucket */
	struct entry	*newer, *older;	/* LRU list */
	unsigned	 refs;		/* hits being replayed */
	int		 linked;	/* in the table (else freed
					 * at refs 0) */
	uint64_t	 hash;
	int64_t		 expires_us;
	size_t		 size;		/* charged to the budget */
	unsigned char	 scope[FP_LEN];
	unsigned char	 fp[FP_LEN];
	size_t		 keylen;
	struct answer	 ans;		/* borrows data */
	char		 data[];	/* key, headers, body */
};

struct rcache {
	pthread_mutex_t	 mu;
	size_t		 budget;
	size_t		 bytes;
	size_t		 entries;
	uint64_t	 gen;
	uint64_t	 epoch;
	int		 have_epoch;
	atomic_llong	 valid_until_us;	/* 0: vouched for by nobody */
	atomic_ullong	 hits, misses;
	uint64_t	 seed[2];	/* key_hash's secrets */
	struct entry	*newest, *oldest;
	struct entry	*table[RCACHE_BUCKETS];
};

/*
 * FNV-1a over the scope digest and the key from a secret start, then
 * mixed with a second secret (splitmix64's finalizer): keys are the
 * client's to choose and the scope digest is known without a hashing
 * key, so with a fixed hash a client could put every entry in one
 * bucket and make each lookup walk them all, under the lock.
 */
static uint64_t
key_hash(const struct rcache *rc, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen)
{
	uint64_t	 h = rc->seed[0];
	size_t		 i;

	for (i = 0; i < FP_LEN; i++)
		h = (h ^ scope[i]) * 0x100000001b3ull;
	for (i = 0; i < keylen; i++)
		h = (h ^ (unsigned char)key[i]) * 0x100000001b3ull;
	h ^= rc->seed[1];
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

enum idem_err
rcache_new(size_t budget, struct rcache **out)
{
	struct rcache	*rc;

	if ((rc = calloc(1, sizeof(*rc))) == NULL)
		return IDEM_ENOMEM;
	if (pthread_mutex_init(&rc->mu, NULL) != 0) {
		free(rc);
		return IDEM_ENOMEM;
	}
	if (RAND_bytes((unsigned char *)rc->seed, sizeof(rc->seed)) != 1) {
		pthread_mutex_destroy(&rc->mu);
		free(rc);
		return IDEM_ESYS;
	}
	rc->budget = budget;
	atomic_init(&rc->valid_until_us, 0);
	atomic_init(&rc->hits, 0);
	atomic_init(&rc->misses, 0);
	*out = rc;
	return IDEM_OK;
}

/* Takes e out of the table and the LRU list; frees it unless in use.
 * Called with mu held. */
static void
unlink_entry(struct rcache *rc, struct entry *e)
{
	struct entry	**pp = &rc->table[e->hash & (RCACHE_BUCKETS - 1)];

	while (*pp != e)
		pp = &(*pp)->chain;
	*pp = e->chain;
	if (e->newer != NULL)
		e->newer->older = e->older;
	else
		rc->newest = e->older;
	if (e->older != NULL)
		e->older->newer = e->newer;
	else
		rc->oldest = e->newer;
	e->linked = 0;
	rc->bytes -= e->size;
	rc->entries--;
	if (e->refs == 0)
		free(e);
}

/* Drops every entry and voids puts in flight.  Called with mu held. */
static void
flush_locked(struct rcache *rc)
{
	while (rc->newest != NULL)
		unlink_entry(rc, rc->newest);
	rc->gen++;
}

void
rcache_free(struct rcache *rc)
{
	if (rc == NULL)
		return;
	flush_locked(rc);
	pthread_mutex_destroy(&rc->mu);
	free(rc);
}

size_t
rcache_cost(size_t keylen, size_t hdrslen, size_t bodylen)
{
	return sizeof(struct entry) + keylen + hdrslen + bodylen;
}

uint64_t
rcache_gen(struct rcache *rc)
{
	uint64_t	 g;

	pthread_mutex_lock(&rc->mu);
	g = rc->gen;
	pthread_mutex_unlock(&rc->mu);
	return g;
}

/* The entry of (scope, key) or NULL.  Called with mu held. */
static struct entry *
find(struct rcache *rc, uint64_t h, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen)
{
	struct entry	*e;

	for (e = rc->table[h & (RCACHE_BUCKETS - 1)]; e != NULL; e = e->chain)
		if (e->hash == h && e->keylen == keylen &&
		    memcmp(e->scope, scope, FP_LEN) == 0 &&
		    memcmp(e->data, key, keylen) == 0)
			return e;
	return NULL;
}

/* Moves e to the newest end of the LRU list.  Called with mu held. */
static void
touch(struct rcache *rc, struct entry *e)
{
	if (rc->newest == e)
		return;
	/* e has a newer neighbour, so it is not the newest */
	e->newer->older = e->older;
	if (e->older != NULL)
		e->older->newer = e->newer;
	else
		rc->oldest = e->newer;
	e->older = rc->newest;
	e->newer = NULL;
	rc->newest->newer = e;
	rc->newest = e;
}

void
rcache_put(struct rcache *rc, uint64_t gen, const struct idem_id *id,
    const struct answer *a, int64_t expires_us, int64_t now_us)
{
	struct entry	*e, *old;
	size_t		 size, keylen = id->keylen;
	size_t		 hdrslen = a->hdrs.len, bodylen = a->body.len;
	char		*p;

	if (expires_us > now_us + (int64_t)RCACHE_MAX_AGE_MS * 1000)
		expires_us = now_us + (int64_t)RCACHE_MAX_AGE_MS * 1000;
	if (expires_us <= now_us || keylen > FP_KEY_MAX)
		return;
	/* No overflow: each part is bounded well below SIZE_MAX / 4. */
	if (hdrslen > rc->budget || bodylen > rc->budget)
		return;
	size = rcache_cost(keylen, hdrslen, bodylen);
	if (size > rc->budget / 8)
		return;
	if ((e = malloc(size)) == NULL)
		return;			/* a cache may forget */
	memset(e, 0, sizeof(*e));
	e->hash = key_hash(rc, id->scope, id->key, keylen);
	e->expires_us = expires_us;
	e->size = size;
	memcpy(e->scope, id->scope, FP_LEN);
	memcpy(e->fp, id->fp, FP_LEN);
	e->keylen = keylen;
	p = e->data;
	memcpy(p, id->key, keylen);
	if (hdrslen > 0)
		memcpy(p + keylen, a->hdrs.p, hdrslen);
	if (bodylen > 0)
		memcpy(p + keylen + hdrslen, a->body.p, bodylen);
	answer_borrow(&e->ans, a->status, p + keylen, hdrslen,
	    p + keylen + hdrslen, bodylen);
	e->ans.expires_s = a->expires_s;

	pthread_mutex_lock(&rc->mu);
	if (gen != rc->gen ||
	    now_us >= atomic_load(&rc->valid_until_us)) {
		pthread_mutex_unlock(&rc->mu);
		free(e);
		return;
	}
	if ((old = find(rc, e->hash, id->scope, id->key, keylen)) != NULL)
		unlink_entry(rc, old);
	while (rc->oldest != NULL && rc->bytes + size > rc->budget)
		unlink_entry(rc, rc->oldest);
	e->linked = 1;
	e->chain = rc->table[e->hash & (RCACHE_BUCKETS - 1)];
	rc->table[e->hash & (RCACHE_BUCKETS - 1)] = e;
	e->older = rc->newest;
	if (rc->newest != NULL)
		rc->newest->newer = e;
	else
		rc->oldest = e;
	rc->newest = e;
	rc->bytes += size;
	rc->entries++;
	pthread_mutex_unlock(&rc->mu);
}

int
rcache_get(struct rcache *rc, const struct idem_id *id, int64_t now_us,
    struct rcache_hit *hit)
{
	struct entry	*e;
	uint64_t	 h;

	if (now_us >= atomic_load(&rc->valid_until_us)) {
		atomic_fetch_add(&rc->misses, 1);
		return 0;
	}
	h = key_hash(rc, id->scope, id->key, id->keylen);
	pthread_mutex_lock(&rc->mu);
	e = find(rc, h, id->scope, id->key, id->keylen);
	if (e != NULL && now_us >= e->expires_us) {
		unlink_entry(rc, e);
		e = NULL;
	}
	if (e == NULL || CRYPTO_memcmp(e->fp, id->fp, FP_LEN) != 0) {
		pthread_mutex_unlock(&rc->mu);
		atomic_fetch_add(&rc->misses, 1);
		return 0;
	}
	e->refs++;
	touch(rc, e);
	pthread_mutex_unlock(&rc->mu);
	atomic_fetch_add(&rc->hits, 1);
	hit->entry = e;
	hit->ans = &e->ans;
	return 1;
}

int
rcache_holds(struct rcache *rc, const struct idem_id *id)
{
	uint64_t	 h;
	int		 held;

	if (atomic_load(&rc->valid_until_us) == 0)
		return 0;
	h = key_hash(rc, id->scope, id->key, id->keylen);
	pthread_mutex_lock(&rc->mu);
	held = find(rc, h, id->scope, id->key, id->keylen) != NULL;
	pthread_mutex_unlock(&rc->mu);
	return held;
}

void
rcache_release(struct rcache *rc, struct rcache_hit *hit)
{
	struct entry	*e = hit->entry;

	if (e == NULL)
		return;
	pthread_mutex_lock(&rc->mu);
	if (--e->refs == 0 && !e->linked)
		free(e);
	pthread_mutex_unlock(&rc->mu);
	hit->entry = NULL;
}

void
rcache_vouch(struct rcache *rc, uint64_t epoch, int64_t polled_us)
{
	pthread_mutex_lock(&rc->mu);
	/* Empty before vouching: nothing from before the change survives. */
	if (!rc->have_epoch || epoch != rc->epoch) {
		flush_locked(rc);
		rc->epoch = epoch;
		rc->have_epoch = 1;
	}
	atomic_store(&rc->valid_until_us,
	    polled_us + (int64_t)RCACHE_VALID_MS * 1000);
	pthread_mutex_unlock(&rc->mu);
}

void
rcache_distrust(struct rcache *rc)
{
	pthread_mutex_lock(&rc->mu);
	atomic_store(&rc->valid_until_us, 0);
	flush_locked(rc);
	rc->have_epoch = 0;
	pthread_mutex_unlock(&rc->mu);
}

void
rcache_info(struct rcache *rc, struct rcache_info *out)
{
	pthread_mutex_lock(&rc->mu);
	out->entries = rc->entries;
	out->bytes = rc->bytes;
	pthread_mutex_unlock(&rc->mu);
	out->hits = atomic_load(&rc->hits);
	out->misses = atomic_load(&rc->misses);
}

size_t
rcache_longest_chain(struct rcache *rc)
{
	struct entry	*e;
	size_t		 i, n, most = 0;

	pthread_mutex_lock(&rc->mu);
	for (i = 0; i < RCACHE_BUCKETS; i++) {
		for (n = 0, e = rc->table[i]; e != NULL; e = e->chain)
			n++;
		if (n > most)
			most = n;
	}
	pthread_mutex_unlock(&rc->mu);
	return most;
}
