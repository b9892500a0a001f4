/* The MySQL/MariaDB store's hot path: claim, wait, renew, complete, release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>
#include <mysqld_error.h>
#include <openssl/crypto.h>

#include "clock.h"
#include "rand.h"
#include "store.h"
#include "store_hkey.h"
#include "store_int.h"
#include "store_poll.h"

/*
 * Round trips per request (measured in tests/unit/test_store.c):
 *   fresh key:  claim = 1 (INSERT ... SELECT ... WHERE GET_LOCK(name, 0)),
 *               complete = 1 (UPDATE whose SET also evaluates RELEASE_LOCK);
 *   replay:     claim = 2 (the INSERT's duplicate error, then one SELECT that
 *               also drops the lock the INSERT took); 1 (that SELECT alone,
 *               taking no lock) when this connection recently completed or
 *               replayed the key: retries come in bursts.
 *   A retry served by the worker's replay cache (lib/ident/rcache.h, used by
 *   fcgi/guard.c) makes none.
 *
 * Why the folds are safe:
 * - The INSERT takes the key's named lock before it inserts, in the same
 *   statement.  A duplicate-key error therefore means we hold the lock;
 *   zero rows and no error means someone else holds it.
 * - Only the lock holder may take a row over (ttl passed, or in progress
 *   with a lapsed lease: holding the lock proves the owner's connection is
 *   gone), and only by a conditional UPDATE, so exactly one caller wins.
 * - A free lock proves nothing just after the server restarted: a restart
 *   drops every named lock, live owners' too.  So a lapsed lease counts
 *   only once the server has been up for a whole lease (the takeover
 *   floor, from STMT_BOOT at connect): a live owner reconnects, takes its
 *   lock back and renews or completes well within that (fcgi/guard.c
 *   retries every few hundred ms), a dead one does not.  An owner that
 *   cannot renew stops its handler before its lease ends (fcgi/guard.c),
 *   so a takeover never runs beside it.
 * - complete releases the lock inside its UPDATE, before the commit.  A
 *   woken waiter claims again with the INSERT, whose duplicate check is a
 *   locking read: it waits for the UPDATE's row lock, that is for the
 *   commit, so it never sees the row as it was before completion.
 */

/* Cap on a stored answer read back by store_claim (the caller's
 * max_response is not known here): the largest max_response. */
#define CLAIM_MAX_BODY		((size_t)CFG_MAX_RESPONSE_MAX)
#define CLAIM_MAX_HDRS		(1u * 1024 * 1024)
/* Claim/wait rounds of store_claim_wait; its deadline ends it long before. */
#define CLAIM_ROUNDS		1000
/* store_renew: how long a relock after a reconnect waits at most for the
 * killed session to let the key's lock go. */
#define RELOCK_WAIT_MS		250

static void
seen_add(struct store *st, const char *lockname)
{
	uint64_t	 h = fp_lockhash(lockname);

	st->seen[h % STORE_SEEN_SLOTS] = h;
}

static int
seen_has(const struct store *st, const char *lockname)
{
	uint64_t	 h = fp_lockhash(lockname);

	return st->seen[h % STORE_SEEN_SLOTS] == h;
}

void
claim_init(struct claim *c)
{
	memset(c, 0, sizeof(*c));
	answer_init(&c->ans, CLAIM_MAX_HDRS, CLAIM_MAX_BODY);
}

void
claim_reset(struct claim *c)
{
	while (c->ngrave > 0)
		close(c->grave[--c->ngrave]);
	answer_free(&c->ans);
	claim_init(c);
}

/* Affected (found) rows of the last execute; -1 on error. */
static int64_t
stmt_rows(MYSQL_STMT *s)
{
	my_ulonglong	 n = mysql_stmt_affected_rows(s);

	return n == (my_ulonglong)-1 ? -1 : (int64_t)n;
}

/* Drops the named lock (best effort; the connection's end drops it too).
 * On Galera no claim takes one: nothing to drop. */
static enum idem_err
store_unlock(struct store *st, const char *lockname)
{
	MYSQL_BIND	 par[1];
	MYSQL_STMT	*s;

	if (st->galera)
		return IDEM_OK;
	store_bind_str(&par[0], lockname);
	return store_exec(st, STMT_UNLOCK, par, 0, &s);
}

static int64_t
ms_to_us(int64_t ms)
{
	if (ms < 0)
		ms = 0;
	if (ms > INT64_MAX / 1000)
		ms = INT64_MAX / 1000;
	return ms * 1000;
}

/* The run deadline's offset from the claim: run_us, or SQL NULL (no
 * bound: the run is never judged over) when id->run_ms is negative. */
static void
run_bind(MYSQL_BIND *b, const struct idem_id *id, int64_t *run_us)
{
	if (id->run_ms < 0)
		store_bind_in(b, MYSQL_TYPE_NULL, NULL, 0);
	else
		store_bind_i64(b, run_us);
}

/* Unix second before which no lapsed lease may be taken over: a lease
 * after the server started (0 when its start is unknown). */
static int64_t
takeover_floor(const struct store *st, int64_t lease_ms)
{
	/* On Galera no lock is lost with a node: the lease alone counts. */
	if (st->boot_s <= 0 || st->galera)
		return 0;
	return st->boot_s + (lease_ms < 0 ? 0 : lease_ms + 999) / 1000;
}

#define READ_COLS	17

/* What STMT_READ saw, bound straight to its columns; the stored answer
 * goes to the claim. */
struct row {
	uint64_t	 id;
	unsigned char	 fp[FP_LEN];
	unsigned long	 fplen;
	int32_t		 state;
	uint64_t	 token;
	int32_t		 lease_live;
	int32_t		 live;		/* ttl not passed */
	int64_t		 lease_left_us;
	int64_t		 kept;		/* 1: we still hold the named lock */
	int64_t		 expires_left_us;	/* ttl left (<= 0: passed) */
	int64_t		 takeovers;
	unsigned long	 hlen, blen;
	char		 route[SEAL_FIELD_MAX + 1];
	unsigned long	 routelen;
	char		 kid[CFG_SECRET_ID_MAX + 1];
	unsigned long	 kidlen;
	unsigned char	 nonce[SEAL_NONCE_LEN];
	unsigned long	 noncelen;
	enum idem_err	 seal_er;	/* sealed: what opening it gave */
	int64_t		 expires_at_s;	/* its end, unix time */
	my_bool		 nul[READ_COLS];
};

/* Binds STMT_READ's result columns to r and c's status. */
static void
read_bind(MYSQL_BIND *res, struct row *r, struct claim *c)
{
	int	 i;

	memset(res, 0, READ_COLS * sizeof(*res));
	for (i = 0; i < READ_COLS; i++)
		res[i].is_null = &r->nul[i];
	store_bind_out(&res[0], MYSQL_TYPE_LONGLONG, &r->id, 1);
	store_out_blob(&res[1], r->fp, sizeof(r->fp), &r->fplen, &r->nul[1]);
	store_bind_out(&res[2], MYSQL_TYPE_LONG, &r->state, 0);
	store_bind_out(&res[3], MYSQL_TYPE_LONGLONG, &r->token, 1);
	store_bind_out(&res[4], MYSQL_TYPE_LONG, &r->lease_live, 0);
	store_bind_out(&res[5], MYSQL_TYPE_LONG, &r->live, 0);
	store_bind_out(&res[6], MYSQL_TYPE_LONGLONG, &r->lease_left_us, 0);
	store_bind_out(&res[7], MYSQL_TYPE_LONG, &c->ans.status, 0);
	/* Headers and body: fetched by column. */
	store_out_blob(&res[8], NULL, 0, &r->hlen, &r->nul[8]);
	store_out_blob(&res[9], NULL, 0, &r->blen, &r->nul[9]);
	store_bind_out(&res[10], MYSQL_TYPE_LONGLONG, &r->kept, 0);
	store_bind_out(&res[11], MYSQL_TYPE_LONGLONG, &r->expires_left_us, 0);
	store_bind_out(&res[12], MYSQL_TYPE_LONGLONG, &r->takeovers, 0);
	store_out_text(&res[13], r->route, sizeof(r->route), &r->routelen,
	    &r->nul[13]);
	store_out_text(&res[14], r->kid, sizeof(r->kid), &r->kidlen,
	    &r->nul[14]);
	store_out_blob(&res[15], r->nonce, sizeof(r->nonce), &r->noncelen,
	    &r->nul[15]);
	store_bind_out(&res[16], MYSQL_TYPE_LONGLONG, &r->expires_at_s, 0);
}

/*
 * Opens the sealed answer ct of the row r of id into c->ans, or says in
 * r->seal_er why not: IDEM_ENOTFOUND (its key id is not in the file),
 * IDEM_ESEAL (the tag failed), IDEM_ENOMEM.
 */
static void
read_open(struct store *st, const struct idem_id *id, struct row *r,
    const struct buf *ct, struct claim *c)
{
	const struct cfg_secret	*k;
	struct seal_ad		 ad;

	r->kid[r->kidlen < sizeof(r->kid) ? r->kidlen : 0] = '\0';
	r->route[r->routelen < sizeof(r->route) ? r->routelen : 0] = '\0';
	snprintf(c->seal_kid, sizeof(c->seal_kid), "%s", r->kid);
	if ((k = cfg_secret(st->cfg, r->kid)) == NULL) {
		r->seal_er = IDEM_ENOTFOUND;
		return;
	}
	if (r->noncelen != SEAL_NONCE_LEN) {
		r->seal_er = IDEM_ESEAL;
		return;
	}
	seal_ad_set(&ad, id->scope, id->key, id->keylen, r->route);
	r->seal_er = seal_open(k->key, &ad, r->nonce, ct->p, ct->len,
	    &c->ans);
}

/* The rest of store_read for a sealed answer: reads the ciphertext and
 * opens it (r->seal_er says how that went). */
static enum idem_err
read_sealed(struct store *st, const struct idem_id *id, MYSQL_STMT *s,
    MYSQL_BIND *res, struct row *r, struct claim *c)
{
	struct buf	 ct;
	enum idem_err	 er;

	buf_init(&ct, CLAIM_MAX_HDRS + CLAIM_MAX_BODY + 64);
	if ((er = store_row_blob(st, s, &res[9], 9, r->blen, &ct)) ==
	    IDEM_OK) {
		store_row_end(s);
		/* A sealed row keeps none of its headers in clear: some
		 * there were put in by hand, and would go out before the
		 * sealed ones (a Location, a Set-Cookie).  Altered. */
		if (!r->nul[8]) {
			buf_reset(&c->ans.hdrs);
			r->seal_er = IDEM_ESEAL;
		} else
			read_open(st, id, r, &ct, c);
	}
	buf_free(&ct);
	return er;
}

/* Whom a read of a key's row is for. */
struct reader {
	int		 held;		/* we hold the key's named lock */
	uint64_t	 token;		/* our claim's token (0: none) */
	int		 causal;	/* Galera: see other nodes' writes */
};

/*
 * Reads the row of id for rd and, when rd->held, drops the named lock
 * unless the row may be taken over.  A stored answer (status, and for a
 * completed row of the same fingerprint its headers and body) goes to
 * c->ans.  IDEM_ENOTFOUND if there is no row (the lock is then still
 * held).
 */
static enum idem_err
store_read(struct store *st, const struct idem_id *id,
    const struct reader *rd, struct claim *c, struct row *r)
{
	MYSQL_BIND	 par[11], res[READ_COLS];
	MYSQL_STMT	*s;
	int64_t		 floor_s = takeover_floor(st, id->lease_ms);
	int32_t		 heldv = rd->held;
	uint64_t	 mytoken = rd->token;
	enum idem_err	 er;

	store_bind_blob(&par[0], id->fp, FP_LEN);
	store_bind_blob(&par[1], id->fp, FP_LEN);
	store_bind_blob(&par[2], id->fp, FP_LEN);
	store_bind_i32(&par[3], &heldv);
	store_bind_blob(&par[4], id->fp, FP_LEN);
	store_bind_i64(&par[5], &floor_s);
	store_bind_u64(&par[6], &mytoken);
	store_bind_str(&par[7], id->lockname);
	store_bind_blob(&par[8], id->scope, FP_LEN);
	store_bind_blob(&par[9], id->key, id->keylen);
	/* Not repeated on reconnect: the RELEASE_LOCK in it is tied to the
	 * lost connection anyway, the caller starts over. */
	if ((er = store_exec(st, rd->causal ? STMT_READ_CAUSAL : STMT_READ,
	    par, 0, &s)) != IDEM_OK)
		return er;

	memset(r, 0, sizeof(*r));
	read_bind(res, r, c);
	if ((er = store_row_fetch(st, s, res)) != IDEM_OK)
		return er;
	if (r->fplen != FP_LEN)
		memset(r->fp, 0, FP_LEN);
	if (r->nul[6])
		r->lease_left_us = 0;
	if (r->nul[7])
		c->ans.status = 0;
	r->kept = rd->held && !r->nul[10] && r->kept == 1;
	if (r->nul[11])
		r->expires_left_us = 0;
	if (r->nul[12])
		r->takeovers = 0;
	if (r->nul[16])
		r->expires_at_s = 0;
	if (!r->nul[8] && (er = store_row_blob(st, s, &res[8], 8, r->hlen,
	    &c->ans.hdrs)) != IDEM_OK)
		return er;
	if (!r->nul[9] && !r->nul[14])
		return read_sealed(st, id, s, res, r, c);
	if (!r->nul[9] && (er = store_row_blob(st, s, &res[9], 9, r->blen,
	    &c->ans.body)) != IDEM_OK)
		return er;
	store_row_end(s);
	/* A finished row (a tombstone's status is sealed too) with a nonce
	 * but no key id, or a key id but no body, is a sealed row altered
	 * (its key id or ciphertext taken away): never replayed as a row in
	 * clear, "Status: 0" with the ciphertext or nothing for a body.
	 * (An empty nonce is what older builds' hash conversion left on a
	 * clear row.) */
	if (r->state != 0 && (r->nul[14] ? !r->nul[15] && r->noncelen > 0 :
	    r->nul[9]))
		r->seal_er = IDEM_ESEAL;
	return IDEM_OK;
}

/* The conditional UPDATE that gives a row to exactly one caller. */
static enum idem_err
store_takeover(struct store *st, const struct idem_id *id, uint64_t rowid,
    uint64_t seen_token, uint64_t token, int *won)
{
	MYSQL_BIND	 par[12];
	MYSQL_STMT	*s;
	int64_t		 lease_us = ms_to_us(id->lease_ms);
	int64_t		 run_us = ms_to_us(id->run_ms);
	int64_t		 ttl_us = ms_to_us(id->ttl_ms);
	int64_t		 floor_s = takeover_floor(st, id->lease_ms);
	enum idem_err	 er;

	store_bind_blob(&par[0], id->fp, FP_LEN);
	store_bind_str(&par[1], id->route);
	store_bind_str(&par[2], id->method);
	store_bind_str(&par[3], id->owner);
	store_bind_u64(&par[4], &token);
	store_bind_i64(&par[5], &lease_us);
	run_bind(&par[6], id, &run_us);
	store_bind_i64(&par[7], &ttl_us);
	store_bind_u64(&par[8], &rowid);
	store_bind_u64(&par[9], &seen_token);
	store_bind_i64(&par[10], &floor_s);
	store_bind_u64(&par[11], &token);
	if ((er = store_exec(st, STMT_TAKEOVER, par, 0, &s)) != IDEM_OK) {
		/* Galera: another node's write to the row won. */
		if (st->galera && (st->errnum == ER_LOCK_DEADLOCK ||
		    st->errnum == ER_DUP_ENTRY)) {
			*won = 0;
			return IDEM_OK;
		}
		return er;
	}
	*won = stmt_rows(s) == 1;
	return IDEM_OK;
}

/* Marks c as ours: the row id, our token, the lock on this connection,
 * the fence of this claim (takeovers: the row's count with ours). */
static enum idem_err
claim_won(struct store *st, const struct idem_id *id, struct claim *c,
    uint64_t rowid, uint64_t token, uint64_t takeovers)
{
	c->state = CLAIM_NEW;
	c->id = rowid;
	c->token = token;
	c->fence = rowid * STORE_FENCE_STEP + takeovers;
	c->locked = !st->galera;
	c->conn_gen = st->generation;
	/* Whatever an earlier claim of this connection left kept is not
	 * this one's. */
	store_graves_close(st);
	st->held = c->locked;
	st->lock_gen = st->generation;
	seal_ad_set(&c->ad, id->scope, id->key, id->keylen, id->route);
	return IDEM_OK;
}

/* The retry of a key this connection just saw completed: one plain read
 * (no lock taken).  1 when it found the answer still there. */
static int
claim_seen(struct store *st, const struct idem_id *id, struct claim *c)
{
	static const struct reader	 plain;	/* no lock, no token */
	struct row			 r;

	if (!seen_has(st, id->lockname))
		return 0;
	if (store_read(st, id, &plain, c, &r) == IDEM_OK && r.live &&
	    r.state == 1 && r.seal_er == IDEM_OK &&
	    CRYPTO_memcmp(r.fp, id->fp, FP_LEN) == 0) {
		c->state = CLAIM_DONE;
		c->id = r.id;
		c->expires_in_us = r.expires_left_us;
		c->ans.expires_s = r.expires_at_s;
		return 1;
	}
	/* Anything else takes the full path. */
	claim_reset(c);
	memcpy(c->lockname, id->lockname, sizeof(c->lockname));
	return 0;
}

/*
 * The INSERT that claims a fresh key.  *held: 1 when the key's row exists
 * and we took its lock (on Galera, where there is none: always), 0 when
 * someone else holds the lock.  *other: on Galera, another node's INSERT
 * won at commit (1213), so its row may not be applied here yet.
 */
static enum idem_err
claim_insert(struct store *st, const struct idem_id *id, struct claim *c,
    uint64_t token, int *held, int *other)
{
	MYSQL_BIND	 par[12];
	MYSQL_STMT	*s;
	int32_t		 hashed = id->hk != NULL;
	int64_t		 lease_us = ms_to_us(id->lease_ms);
	int64_t		 run_us = ms_to_us(id->run_ms);
	int64_t		 ttl_us = ms_to_us(id->ttl_ms);
	enum idem_err	 er;

	store_bind_blob(&par[0], id->scope, FP_LEN);
	store_bind_blob(&par[1], id->key, id->keylen);
	store_bind_str(&par[2], id->route);
	store_bind_str(&par[3], id->method);
	store_bind_blob(&par[4], id->fp, FP_LEN);
	store_bind_i32(&par[5], &hashed);
	store_bind_str(&par[6], id->owner);
	store_bind_u64(&par[7], &token);
	store_bind_i64(&par[8], &lease_us);
	run_bind(&par[9], id, &run_us);
	store_bind_i64(&par[10], &ttl_us);
	store_bind_str(&par[11], id->lockname);
	/*
	 * Repeatable after a reconnect: the token stays the same, so if the
	 * first INSERT did land, the retry finds our own row and takes it
	 * back (STMT_READ keeps the lock for our token).
	 */
	er = store_exec(st, STMT_CLAIM, par, 1, &s);
	*other = 0;
	if (er == IDEM_OK && stmt_rows(s) == 1)
		return claim_won(st, id, c, mysql_stmt_insert_id(s), token, 0);
	if (er == IDEM_OK)
		*held = 0;	/* someone else holds the lock */
	else if (st->errnum == ER_DUP_ENTRY)
		*held = 1;	/* the INSERT took the lock first */
	else if (st->galera && st->errnum == ER_LOCK_DEADLOCK)
		*held = *other = 1;	/* lost to another node's INSERT */
	else
		return er;
	return IDEM_EAGAIN;
}

/* What an existing row r means for the claim, when it is not ours to
 * take over. */
static void
claim_judge(struct store *st, const struct idem_id *id, struct claim *c,
    const struct row *r, int held)
{
	c->id = r->id;
	if (!r->live) {
		/* Expired but someone else holds the lock: that one takes it
		 * over (or is about to); wait for it. */
		c->state = CLAIM_BUSY;
		return;
	}
	if (CRYPTO_memcmp(r->fp, id->fp, FP_LEN) != 0) {
		c->state = CLAIM_MISMATCH;
		return;
	}
	switch (r->state) {
	case 1:
		if ((c->seal_er = r->seal_er) != IDEM_OK) {
			/* Never run again: the answer is there, unreadable
			 * to us. */
			c->state = CLAIM_SEALED;
			return;
		}
		c->state = CLAIM_DONE;
		c->expires_in_us = r->expires_left_us;
		c->ans.expires_s = r->expires_at_s;
		seen_add(st, id->lockname);
		return;
	case 2:
		/* ans.status is the first answer's, so the 410 can say what
		 * the client missed; sealed, it must open as a completed
		 * row's answer must (store-key-missing otherwise). */
		if ((c->seal_er = r->seal_er) != IDEM_OK) {
			c->state = CLAIM_SEALED;
			return;
		}
		c->state = CLAIM_TOMBSTONE;
		return;
	}
	/* In progress.  A lapsed lease whose lock is still held: the owner
	 * is alive (or a takeover is under way), so it is not ours. */
	c->state = CLAIM_BUSY;
	c->lease_left_ms = r->lease_live ? (r->lease_left_us + 999) / 1000 :
	    0;
	/* (On Galera nobody ever holds one: store_claim_wait polls.) */
	if (held && !st->galera)
		/* Nobody holds the lock to wake a waiter: sleep out the live
		 * lease, or (lapsed, but the server is too fresh to judge)
		 * look again shortly. */
		c->nap_us = r->lease_live ? r->lease_left_us : STORE_REPOLL_US;
}

enum idem_err
store_claim(struct store *st, const struct idem_id *id, struct claim *c)
{
	struct row	 r;
	struct reader	 rd;
	uint64_t	 token;
	unsigned long	 gen;
	enum idem_err	 er;
	int		 held = 0, won, other = 0, sent = 0;

	claim_reset(c);
	memcpy(c->lockname, id->lockname, sizeof(c->lockname));
	if (claim_seen(st, id, c))
		return IDEM_OK;
	/* A row of this key from before the hashing key: made keyed first,
	 * so the INSERT below finds it. */
	if ((er = store_hkey_adopt(st, id, c)) == IDEM_EBUSY ||
	    er == IDEM_ESEAL)
		return IDEM_OK;
	if (er != IDEM_OK)
		goto out;
	token = rand_u64();	/* the claim's owner token */
	sent = 1;
	if ((er = claim_insert(st, id, c, token, &held, &other)) == IDEM_OK)
		return IDEM_OK;		/* a fresh key: ours */
	/* From here on sent stays: a retry inside store_exec may have
	 * landed the INSERT before its duplicate-key answer, and the
	 * release only ever deletes a row under this claim's token. */
	if (er != IDEM_EAGAIN)
		goto out;
	gen = st->generation;
	rd.held = held;
	rd.token = token;
	rd.causal = other;
	er = store_read(st, id, &rd, c, &r);
	if (er == IDEM_ENOTFOUND) {
		/* Gone between the two statements. */
		if (held && (er = store_unlock(st, id->lockname)) != IDEM_OK)
			goto out;
		c->state = CLAIM_AGAIN;
		return IDEM_OK;
	}
	if (er == IDEM_ESTORE && st->my == NULL) {
		/* The lock went with the connection: start over. */
		c->state = CLAIM_AGAIN;
		return IDEM_OK;
	}
	if (er != IDEM_OK)
		goto out;
	if (!r.kept) {
		claim_judge(st, id, c, &r, held);
		return IDEM_OK;
	}
	/* Expired, or in progress with a dead owner: ours to take over. */
	answer_free(&c->ans);
	if ((er = store_takeover(st, id, r.id, r.token, token, &won)) !=
	    IDEM_OK)
		goto out;
	if (won && st->generation == gen)
		return claim_won(st, id, c, r.id, token,
		    (uint64_t)r.takeovers + 1);
	if ((er = store_unlock(st, id->lockname)) != IDEM_OK)
		goto out;
	c->state = CLAIM_AGAIN;
	return IDEM_OK;
out:
	claim_reset(c);
	if (sent && er == IDEM_ESTORE && id->keylen <= sizeof(c->doubt_key)) {
		/* Cut off, or lost, with the statement sent: it may have
		 * landed. */
		c->doubt_token = token;
		memcpy(c->doubt_scope, id->scope, FP_LEN);
		memcpy(c->doubt_key, id->key, id->keylen);
		c->doubt_keylen = id->keylen;
	}
	return er;
}

enum idem_err
store_waiter(struct store *st, const struct idem_id *id, int delta)
{
	MYSQL_BIND	 par[2];
	MYSQL_STMT	*s;

	/* Not on Galera: the count would be a row every node writes. */
	if (st->galera)
		return IDEM_OK;
	store_bind_blob(&par[0], id->scope, FP_LEN);
	store_bind_blob(&par[1], id->key, id->keylen);
	return store_exec(st, delta > 0 ? STMT_WAIT_INC : STMT_WAIT_DEC, par,
	    0, &s);
}

enum idem_err
store_wait(struct store *st, const struct idem_id *id, const struct claim *c,
    int64_t wait_ms)
{
	MYSQL_BIND	 wpar[3];
	double		 secs;
	int64_t		 got = 0, nap_us;
	enum idem_err	 er = IDEM_OK, er2;

	if (wait_ms < 0)
		wait_ms = 0;
	if ((er = store_waiter(st, id, 1)) != IDEM_OK)
		return er;
	if (c->nap_us > 0 || st->galera) {
		/* Nobody holds the lock to wake us: sleep out the lease (to
		 * 1 ms past it).  On Galera, where nobody ever does: the
		 * poll's pause, then store_claim_wait reads again. */
		nap_us = c->nap_us + (st->galera ? 0 : 1000);
		if (nap_us > ms_to_us(wait_ms))
			nap_us = ms_to_us(wait_ms);
		if (nap_us > 60000000)
			nap_us = 60000000;
		if (st->stop != NULL && nap_us > ms_to_us(STORE_STOP_MS))
			nap_us = ms_to_us(STORE_STOP_MS);
		if (nap_us > 0)
			usleep((useconds_t)nap_us);
	} else {
		/* In slices, so its read deadline stays short; the caller
		 * claims again after each (and looks at its stop flag). */
		if (wait_ms > STORE_WAIT_SLICE_MS)
			wait_ms = STORE_WAIT_SLICE_MS;
		if (st->stop != NULL && wait_ms > STORE_STOP_MS)
			wait_ms = STORE_STOP_MS;
		secs = (double)wait_ms / 1000.0;  /* MariaDB takes fractions */
		store_deadline(st, wait_ms + st->call_ms);
		store_bind_str(&wpar[0], id->lockname);
		store_bind_in(&wpar[1], MYSQL_TYPE_DOUBLE, &secs, sizeof(secs));
		store_bind_str(&wpar[2], id->lockname);
		er = store_scalar(st, STMT_WAITLOCK, wpar, 0, &got);
	}
	/* Uncount ourselves even after a failed wait (on a fresh
	 * connection if the wait lost its own). */
	er2 = store_waiter(st, id, -1);
	return er != IDEM_OK ? er : er2;
}

void
store_set_stop(struct store *st, const volatile sig_atomic_t *flag)
{
	st->stop = flag;
}

enum idem_err
store_claim_wait(struct store *st, const struct idem_id *id, int64_t wait_ms,
    struct claim *c, int64_t *read_us, int64_t *waited_ms)
{
	int64_t		 deadline = clock_now_ms() + wait_ms, left, t0;
	int64_t		 poll_us = 0;
	enum idem_err	 er;
	int		 rounds;

	*waited_ms = 0;
	/* Rounds of STORE_STOP_MS under a stop flag: as many more. */
	for (rounds = 0; rounds < CLAIM_ROUNDS * (st->stop != NULL ?
	    STORE_WAIT_SLICE_MS / STORE_STOP_MS : 1); rounds++) {
		*read_us = clock_now_us();
		if ((er = store_claim(st, id, c)) != IDEM_OK)
			return er;
		left = deadline - clock_now_ms();
		if (st->stop != NULL && *st->stop != 0)
			left = 0;
		if (c->state == CLAIM_AGAIN && left > 0)
			continue;
		if (c->state != CLAIM_BUSY || left <= 0)
			break;
		if (st->galera) {
			/* Polls (store_poll.h): a finished key is seen
			 * within STORE_POLL_MAX_US. */
			poll_us = store_poll_next(poll_us);
			c->nap_us = poll_us;
		}
		t0 = clock_now_ms();
		er = store_wait(st, id, c, left);
		*waited_ms += clock_now_ms() - t0;
		if (er != IDEM_OK)
			return er;
	}
	if (c->state == CLAIM_AGAIN)
		c->state = CLAIM_BUSY;
	return IDEM_OK;
}

enum idem_err
store_quota_take(struct store *st, const unsigned char scope[FP_LEN],
    uint64_t *n)
{
	MYSQL_BIND	 par[1];
	MYSQL_STMT	*s;
	enum idem_err	 er;
	uint64_t	 id;

	store_bind_blob(&par[0], scope, FP_LEN);
	/* Not repeated after a lost connection: a count that may have
	 * landed must not land twice.  Refused by Galera's certification
	 * (another node added to the same row), nothing landed: again. */
	if ((er = store_exec(st, STMT_QUOTA, par, STORE_RETRY_CERT, &s)) !=
	    IDEM_OK)
		return er;
	id = mysql_stmt_insert_id(s);
	*n = id == 0 ? 1 : id;
	return IDEM_OK;
}

enum idem_err
store_epoch(struct store *st, uint64_t *epoch)
{
	int64_t		 v = -1;
	enum idem_err	 er;

	if ((er = store_scalar(st, STMT_EPOCH, NULL, 1, &v)) != IDEM_OK)
		return er;
	if (v < 0) {
		return store_fail(st, IDEM_ENOTFOUND,
		    "idem_epoch holds no counter");
	}
	*epoch = (uint64_t)v;
	return IDEM_OK;
}

enum idem_err
store_renew(struct store *st, const struct claim *c, int64_t lease_ms)
{
	MYSQL_BIND	 par[5];
	MYSQL_STMT	*s;
	int64_t		 lease_us = ms_to_us(lease_ms);
	uint64_t	 rid = c->id, tok = c->token;
	enum idem_err	 er;
	int64_t		 got, wait_ms;
	uint64_t	 tid;

	store_bind_i64(&par[0], &lease_us);
	store_bind_u64(&par[1], &rid);
	store_bind_u64(&par[2], &tok);
	if ((er = store_exec(st, STMT_RENEW, par,
	    STORE_RETRY | STORE_RETRY_CERT, &s)) != IDEM_OK)
		return er;
	if (stmt_rows(s) != 1)
		return IDEM_ENOTFOUND;
	if (c->locked && st->generation != c->conn_gen) {
		/* Reconnected since the claim: that connection's lock is
		 * gone; take it back so waiters keep sleeping on it.  The
		 * killed session may still hold it a moment: wait for that
		 * within a third of the call's deadline, 250 ms at most (a
		 * tick must not hold the run's I/O up); a later tick tries
		 * again while it is not ours. */
		wait_ms = st->call_ms / 3 < RELOCK_WAIT_MS ? st->call_ms / 3 :
		    RELOCK_WAIT_MS;
		tid = st->ngrave > 0 ? st->grave_tid : 0;
		store_bind_str(&par[0], c->lockname);
		store_bind_str(&par[1], c->lockname);
		store_bind_u64(&par[2], &tid);
		store_bind_str(&par[3], c->lockname);
		store_bind_i64(&par[4], &wait_ms);
		/* 1: this connection holds it now; 2: a kept session of
		 * ours still does (STORE_GRAVES). */
		if (store_scalar(st, STMT_RELOCK, par, 0, &got) == IDEM_OK &&
		    got == 1)
			st->lock_gen = st->generation;
	}
	return IDEM_OK;
}

/* UPDATE (which also drops the lock) for complete and tombstone. */
static enum idem_err
store_finish(struct store *st, const struct claim *c, enum stmt_id sid,
    MYSQL_BIND *par)
{
	MYSQL_STMT	*s;
	enum idem_err	 er;
	int64_t		 n;

	/* Safe to repeat: the same values land on the same row. */
	if ((er = store_exec(st, sid, par, STORE_RETRY | STORE_RETRY_CERT,
	    &s)) != IDEM_OK) {
		/* The UPDATE failed (say, an answer over max_allowed_packet):
		 * do not leave waiters asleep on a lock nobody will drop. */
		if (c->locked && st->my != NULL)
			(void)store_unlock(st, c->lockname);
		return er;
	}
	/* Written, or never to be: the kept sessions may go. */
	n = stmt_rows(s);
	store_graves_kill(st, c);
	store_graves_close(st);
	if (n == 1) {
		if (sid == STMT_COMPLETE)
			seen_add(st, c->lockname);
		return IDEM_OK;
	}
	/* Not ours any more (taken over or forgotten): the RELEASE_LOCK in
	 * the SET was never evaluated. */
	if (c->locked)
		(void)store_unlock(st, c->lockname);
	return IDEM_ENOTFOUND;
}

/* Binds par[1..3] and par[5..6] of STMT_COMPLETE for a: in clear, or
 * sealed into *ct (the caller frees) under the current key. */
static enum idem_err
complete_bind(struct store *st, const struct claim *c, const struct answer *a,
    MYSQL_BIND *par, int32_t *st32, unsigned char *nonce, unsigned char **ct)
{
	const struct cfg_secret	*k = cfg_secret(st->cfg, NULL);
	size_t			 len;
	enum idem_err		 er;

	if (k == NULL) {
		store_bind_i32(&par[1], st32);
		store_bind_blob(&par[2], a->hdrs.len > 0 ? a->hdrs.p : NULL,
		    a->hdrs.len);
		store_bind_blob(&par[3], a->body.len > 0 ? a->body.p : NULL,
		    a->body.len);
		store_bind_in(&par[5], MYSQL_TYPE_STRING, NULL, 0);
		store_bind_in(&par[6], MYSQL_TYPE_BLOB, NULL, 0);
		return IDEM_OK;
	}
	if ((er = seal_answer(k->key, &c->ad, a, nonce, ct, &len)) != IDEM_OK)
		return store_fail(st, er, "cannot seal the answer: %s",
		    idem_strerror(er));
	store_bind_in(&par[1], MYSQL_TYPE_NULL, NULL, 0);
	store_bind_in(&par[2], MYSQL_TYPE_BLOB, NULL, 0);
	store_bind_blob(&par[3], *ct, len);
	store_bind_str(&par[5], k->id);
	store_bind_blob(&par[6], nonce, SEAL_NONCE_LEN);
	return IDEM_OK;
}

/* The second an Idempotency-Expires named (TTL_END's first ?), within
 * what a DATETIME holds; 0: none. */
static int64_t
end_named(int64_t expires_s)
{
	return expires_s > 0 && expires_s < ANSWER_END_OF_TIME ? expires_s :
	    0;
}

enum idem_err
store_complete(struct store *st, const struct claim *c,
    const struct answer *a, int64_t ttl_ms)
{
	MYSQL_BIND	 par[12];
	int32_t		 st32 = a->status, over = c->run_over;
	uint64_t	 size = a->body.len, rid = c->id, tok = c->token;
	int64_t		 ttl_us = ms_to_us(ttl_ms);
	int64_t		 named_s = end_named(a->expires_s);
	unsigned char	 nonce[SEAL_NONCE_LEN], *ct = NULL;
	enum idem_err	 er;

	/* The row's other columns, the seal and the protocol take well
	 * under 4 KiB. */
	if (st->max_packet > 0 && (int64_t)(a->hdrs.len + a->body.len) + 4096 >
	    st->max_packet)
		return store_fail(st, IDEM_ETOOBIG, "answer of %zu bytes does "
		    "not fit max_allowed_packet (%lld)",
		    a->hdrs.len + a->body.len, (long long)st->max_packet);

	store_bind_str(&par[0], c->lockname);
	if ((er = complete_bind(st, c, a, par, &st32, nonce, &ct)) != IDEM_OK)
		return er;
	store_bind_u64(&par[4], &size);
	store_bind_i32(&par[7], &over);
	store_bind_i64(&par[8], &named_s);
	store_bind_i64(&par[9], &ttl_us);
	store_bind_u64(&par[10], &rid);
	store_bind_u64(&par[11], &tok);
	er = store_finish(st, c, STMT_COMPLETE, par);
	free(ct);
	return er;
}

enum idem_err
store_tombstone(struct store *st, const struct claim *c, int status,
    int64_t expires_s, int64_t ttl_ms)
{
	const struct cfg_secret	*k = cfg_secret(st->cfg, NULL);
	MYSQL_BIND		 par[10];
	int32_t			 st32 = status, over = c->run_over;
	uint64_t		 rid = c->id, tok = c->token;
	struct answer		 bare;
	int64_t			 ttl_us = ms_to_us(ttl_ms);
	int64_t			 named_s = end_named(expires_s);
	unsigned char		 nonce[SEAL_NONCE_LEN], *ct = NULL;
	size_t			 len = 0;
	enum idem_err		 er;

	store_bind_str(&par[0], c->lockname);
	/* With a key the status too is sealed, as a completed row's is:
	 * an answer with no headers and no body. */
	answer_borrow(&bare, status, NULL, 0, NULL, 0);
	if (k != NULL && (er = seal_answer(k->key, &c->ad, &bare, nonce,
	    &ct, &len)) != IDEM_OK)
		return store_fail(st, er, "cannot seal the status: %s",
		    idem_strerror(er));
	if (k != NULL)
		store_bind_in(&par[1], MYSQL_TYPE_NULL, NULL, 0);
	else
		store_bind_i32(&par[1], &st32);
	store_bind_in(&par[2], MYSQL_TYPE_BLOB, ct, len);
	store_bind_in(&par[3], MYSQL_TYPE_STRING, k != NULL ? k->id : NULL,
	    k != NULL ? strlen(k->id) : 0);
	store_bind_in(&par[4], MYSQL_TYPE_BLOB, k != NULL ? nonce : NULL,
	    k != NULL ? SEAL_NONCE_LEN : 0);
	store_bind_i32(&par[5], &over);
	store_bind_i64(&par[6], &named_s);
	store_bind_i64(&par[7], &ttl_us);
	store_bind_u64(&par[8], &rid);
	store_bind_u64(&par[9], &tok);
	er = store_finish(st, c, STMT_TOMBSTONE, par);
	free(ct);
	return er;
}

/* store_release of a claim in doubt (c->doubt_token): whether or not a
 * row of ours was there, nothing of the key is ours now. */
static enum idem_err
release_doubt(struct store *st, const struct claim *c)
{
	MYSQL_BIND	 par[3];
	MYSQL_STMT	*s;
	uint64_t	 tok = c->doubt_token;

	store_bind_blob(&par[0], c->doubt_scope, FP_LEN);
	store_bind_blob(&par[1], c->doubt_key, c->doubt_keylen);
	store_bind_u64(&par[2], &tok);
	return store_exec(st, STMT_RELEASE_DOUBT, par,
	    STORE_RETRY | STORE_RETRY_CERT, &s);
}

enum idem_err
store_release(struct store *st, const struct claim *c)
{
	MYSQL_BIND	 par[2];
	MYSQL_STMT	*s;
	uint64_t	 rid = c->id, tok = c->token;
	enum idem_err	 er, er2 = IDEM_OK;
	int64_t		 n = 0;

	if (c->id == 0 && c->doubt_token != 0)
		return release_doubt(st, c);

	store_bind_u64(&par[0], &rid);
	store_bind_u64(&par[1], &tok);
	/* Deleting twice is harmless. */
	er = store_exec(st, STMT_RELEASE, par, STORE_RETRY | STORE_RETRY_CERT,
	    &s);
	if (er == IDEM_OK)
		n = stmt_rows(s);
	/* After the commit, so a woken waiter finds the row gone. */
	if (c->locked)
		er2 = store_unlock(st, c->lockname);
	if (er != IDEM_OK)
		return er;
	store_graves_kill(st, c);
	store_graves_close(st);
	if (er2 != IDEM_OK)
		return er2;
	return n == 1 ? IDEM_OK : IDEM_ENOTFOUND;
}
