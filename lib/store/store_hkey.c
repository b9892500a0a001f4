/* The store's hashing key, and rows hashed before it (lib/ident/hkey.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>
#include <mysqld_error.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "clock.h"
#include "log.h"
#include "seal.h"
#include "store_admin.h"
#include "store_hkey.h"
#include "store_int.h"

/* The associated data of the wrapped hashing key: nothing else opens. */
#define HK_AD		"idemgate hashing key 1"
#define HK_WRAPPED	(HKEY_LEN + SEAL_TAG_LEN)

/* idem_hash_key's row as read. */
struct hk_row {
	char		 kid[CFG_SECRET_ID_MAX + 1];
	unsigned char	 nonce[SEAL_NONCE_LEN];
	unsigned char	 wrapped[HK_WRAPPED + 16];
	unsigned long	 kidlen, nlen, wlen;
	my_bool		 kidnull;
};

/* Reads idem_hash_key's row into r.  IDEM_ENOTFOUND when there is none. */
static enum idem_err
hk_read(struct store *st, struct hk_row *r)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[3];
	enum idem_err	 er;

	memset(r, 0, sizeof(*r));
	if ((s = store_prepare(st, "SELECT seal_kid, seal_nonce, wrapped"
	    " FROM idem_hash_key WHERE id = 1")) == NULL)
		return IDEM_ESTORE;
	memset(res, 0, sizeof(res));
	store_out_text(&res[0], r->kid, sizeof(r->kid), &r->kidlen,
	    &r->kidnull);
	store_out_blob(&res[1], r->nonce, sizeof(r->nonce), &r->nlen, NULL);
	store_out_blob(&res[2], r->wrapped, sizeof(r->wrapped), &r->wlen,
	    NULL);
	if ((er = store_run(st, s, NULL, res)) == IDEM_OK)
		er = store_fetch(st, s);
	store_stmt_close(s);
	store_out_text_end(r->kid, sizeof(r->kid), r->kidlen, r->kidnull);
	return er;
}

/* Wraps k under the file's key cur: a fresh nonce into nonce, the
 * ciphertext and tag into out. */
static enum idem_err
hk_wrap(const struct cfg_secret *cur, const unsigned char k[HKEY_LEN],
    unsigned char nonce[SEAL_NONCE_LEN], unsigned char out[HK_WRAPPED])
{
	if (RAND_bytes(nonce, SEAL_NONCE_LEN) != 1)
		return IDEM_ESYS;
	return seal_encrypt(cur->key, nonce, HK_AD, sizeof(HK_AD) - 1, k,
	    HKEY_LEN, out);
}

/* Makes the store's hashing key, under cur, unless another process made
 * it first (INSERT IGNORE: the first one stays). */
static enum idem_err
hk_make(struct store *st, const struct cfg_secret *cur)
{
	unsigned char	 k[HKEY_LEN], nonce[SEAL_NONCE_LEN], w[HK_WRAPPED];
	MYSQL_BIND	 in[4];
	enum idem_err	 er;

	if (RAND_bytes(k, sizeof(k)) != 1)
		return store_fail(st, IDEM_ESYS, "no random bytes for the "
		    "hashing key");
	er = hk_wrap(cur, k, nonce, w);
	OPENSSL_cleanse(k, sizeof(k));
	if (er != IDEM_OK)
		return store_fail(st, er, "cannot wrap the hashing key: %s",
		    idem_strerror(er));
	store_bind_str(&in[0], cur->id);
	store_bind_blob(&in[1], nonce, sizeof(nonce));
	store_bind_blob(&in[2], w, sizeof(w));
	store_bind_str(&in[3], st->cfg->host_name != NULL ?
	    st->cfg->host_name : "");
	return store_simple(st, "INSERT IGNORE INTO idem_hash_key (id,"
	    " seal_kid, seal_nonce, wrapped, created_at, created_by)"
	    " VALUES (1, ?, ?, ?, NOW(6), ?)", in, NULL);
}

/* Opens r under the file's key of its id into k, or says in why (one
 * line) why not: IDEM_ENOTFOUND, IDEM_ESEAL. */
static enum idem_err
hk_unwrap(const struct cfg *cfg, const struct hk_row *r,
    unsigned char k[HKEY_LEN], char *why, size_t whylen)
{
	const struct cfg_secret	*sk = cfg_secret(cfg, r->kid);

	if (sk == NULL) {
		snprintf(why, whylen, "the store's hashing key is wrapped "
		    "under key id %s, which %s does not hold: put that line "
		    "back (idemctl rekey then wraps it under the current key)",
		    r->kid, cfg->secret_key_file);
		return IDEM_ENOTFOUND;
	}
	if (r->nlen != SEAL_NONCE_LEN || r->wlen != HK_WRAPPED ||
	    seal_decrypt(sk->key, r->nonce, HK_AD, sizeof(HK_AD) - 1,
	    r->wrapped, HK_WRAPPED, k) != IDEM_OK) {
		snprintf(why, whylen, "the store's hashing key does not open "
		    "under key id %s of %s: another key under the same id?",
		    r->kid, cfg->secret_key_file);
		return IDEM_ESEAL;
	}
	return IDEM_OK;
}

static void
hk_refuse(struct hkey *hk, const char *why)
{
	snprintf(hk->why, sizeof(hk->why), "%s", why);
	atomic_store_explicit(&hk->state, HKEY_REFUSED, memory_order_release);
}

enum idem_err
store_hkey_keyed_rows(struct store *st, int *keyed)
{
	long long	 v = 0;
	enum idem_err	 er;

	er = store_query_int(st, "SELECT EXISTS(SELECT 1 FROM idem_keys"
	    " WHERE hashed = 1)", &v);
	*keyed = v > 0;
	return er;
}

/* store_hkey_resolve with hk->mu held. */
static enum idem_err
hk_resolve(struct store *st, struct hkey *hk)
{
	const struct cfg_secret	*cur = cfg_secret(st->cfg, NULL);
	struct hk_row		 r;
	char			 why[sizeof(hk->why)];
	enum idem_err		 er;
	int			 keyed;

	if ((er = store_connect(st)) != IDEM_OK)
		return er;
	er = hk_read(st, &r);
	/* No hashing key, yet rows hashed under one: it was lost (a
	 * restore or copy without idem_hash_key).  Neither plain hashes
	 * nor a new key would find any of them: every key would run
	 * again. */
	if (er == IDEM_ENOTFOUND) {
		if ((er = store_hkey_keyed_rows(st, &keyed)) != IDEM_OK)
			return er;
		if (keyed) {
			hk_refuse(hk, "idem_hash_key is empty but rows of "
			    "idem_keys are keyed (hashed = 1): the store's "
			    "hashing key was lost (a restore or copy without "
			    "that table?): put its row back");
			return IDEM_OK;
		}
		er = IDEM_ENOTFOUND;
	}
	if (er == IDEM_ENOTFOUND && (cur == NULL || hk->no_make)) {
		atomic_store_explicit(&hk->state, HKEY_PLAIN,
		    memory_order_release);
		return IDEM_OK;
	}
	if (er == IDEM_ENOTFOUND && (er = hk_make(st, cur)) == IDEM_OK)
		er = hk_read(st, &r);
	if (er == IDEM_ENOTFOUND)
		return store_fail(st, IDEM_ESTORE, "idem_hash_key still "
		    "empty after its INSERT");
	if (er != IDEM_OK)
		return er;
	if (cur == NULL) {
		hk_refuse(hk, "the store's scope hashes and fingerprints are "
		    "keyed (idem_hash_key) but this config sets no "
		    "secret_key_file: set the key file the store was keyed "
		    "with");
		return IDEM_OK;
	}
	if (hk_unwrap(st->cfg, &r, hk->k, why, sizeof(why)) != IDEM_OK) {
		hk_refuse(hk, why);
		return IDEM_OK;
	}
	if ((er = hkey_arm(hk)) != IDEM_OK) {
		OPENSSL_cleanse(hk->k, sizeof(hk->k));
		return store_fail(st, er, "no memory to key the hashing key");
	}
	atomic_store_explicit(&hk->state, HKEY_KEYED, memory_order_release);
	return store_hkey_refresh(st, hk);
}

enum idem_err
store_hkey_resolve(struct store *st, struct hkey *hk)
{
	enum idem_err	 er = IDEM_OK;

	pthread_mutex_lock(&hk->mu);
	if (hkey_state(hk) == HKEY_UNKNOWN)
		er = hk_resolve(st, hk);
	pthread_mutex_unlock(&hk->mu);
	return er;
}

enum idem_err
store_hkey_refresh(struct store *st, struct hkey *hk)
{
	struct hk_row	 r;
	long long	 v = 0;
	enum idem_err	 er;

	if (hkey_state(hk) != HKEY_UNKNOWN &&
	    (er = store_connect(st)) != IDEM_OK)
		return er;
	switch (hkey_state(hk)) {
	case HKEY_UNKNOWN:
		return store_hkey_resolve(st, hk);
	case HKEY_PLAIN:
		/* A keyed gateway came: plain hashes would miss its rows. */
		if ((er = hk_read(st, &r)) == IDEM_ENOTFOUND)
			return IDEM_OK;
		if (er == IDEM_OK)
			hk_refuse(hk, "the store's scope hashes and "
			    "fingerprints became keyed (idem_hash_key) but "
			    "this config sets no secret_key_file: set the key "
			    "file the store was keyed with, and reload");
		return er;
	case HKEY_KEYED:
		if ((er = store_query_int(st, "SELECT EXISTS(SELECT 1 FROM"
		    " idem_keys WHERE hashed = 0)", &v)) == IDEM_OK)
			atomic_store(&hk->legacy, v > 0);
		return er;
	default:
		return IDEM_OK;
	}
}

void
store_seal_row_bind(MYSQL_BIND *res, struct seal_row *r)
{
	memset(res, 0, SEAL_ROW_COLS * sizeof(*res));
	store_out_blob(&res[0], r->scope, sizeof(r->scope), &r->slen, NULL);
	store_out_text(&res[1], r->key, sizeof(r->key), &r->klen, &r->knull);
	res[1].buffer_type = MYSQL_TYPE_BLOB;
	store_out_text(&res[2], r->route, sizeof(r->route), &r->rlen,
	    &r->rnull);
	store_out_text(&res[3], r->kid, sizeof(r->kid), &r->kidlen,
	    &r->kidnull);
	store_out_blob(&res[4], r->nonce, sizeof(r->nonce), &r->nlen,
	    &r->nnull);
	store_out_blob(&res[5], NULL, 0, &r->blen, &r->bnull);
}

enum idem_err
store_seal_row_read(struct store *st, MYSQL_STMT *s, MYSQL_BIND *in,
    MYSQL_BIND *res, struct seal_row *r)
{
	enum idem_err	 er;

	if ((er = store_run(st, s, in, res)) == IDEM_OK)
		er = store_fetch(st, s);
	if (er == IDEM_OK && !r->bnull && r->blen > 0 && !r->kidnull)
		er = store_row_blob(st, s, &res[5], 5, r->blen, &r->ct);
	if (er != IDEM_OK)
		return er;
	store_out_text_end(r->key, sizeof(r->key), r->klen, r->knull);
	store_out_text_end(r->route, sizeof(r->route), r->rlen, r->rnull);
	store_out_text_end(r->kid, sizeof(r->kid), r->kidlen, r->kidnull);
	if (r->klen >= sizeof(r->key))
		r->klen = sizeof(r->key) - 1;
	return IDEM_OK;
}

/* A row hashed before the key, as read for its conversion. */
struct old_row {
	struct seal_row	 r;
	unsigned char	 fp[FP_LEN];
	int64_t		 state, live;
	unsigned long	 flen;
};

/*
 * Reads row o->r.id if it is still hashed plain.  live: in progress and
 * its lease or run deadline not passed (its owner may still complete it,
 * with its own plain identity).  IDEM_ENOTFOUND when it is gone or
 * converted.
 */
static enum idem_err
old_read(struct store *st, struct old_row *o)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1], res[SEAL_ROW_COLS + 3];
	enum idem_err	 er;

	if ((s = store_prepare(st, "SELECT " SEAL_ROW_SQL ", fingerprint,"
	    " state, state = 0 AND (lease_until > NOW(6) OR"
	    " COALESCE(run_deadline > NOW(6), 0)) FROM idem_keys"
	    " WHERE id = ? AND hashed = 0")) == NULL)
		return IDEM_ESTORE;
	store_bind_u64(&in[0], &o->r.id);
	store_seal_row_bind(res, &o->r);
	memset(&res[SEAL_ROW_COLS], 0, 3 * sizeof(*res));
	store_out_blob(&res[6], o->fp, sizeof(o->fp), &o->flen, NULL);
	store_out_i64(&res[7], &o->state, NULL);
	store_out_i64(&res[8], &o->live, NULL);
	er = store_seal_row_read(st, s, in, res, &o->r);
	store_stmt_close(s);
	if (er != IDEM_OK)
		return er;
	if (o->r.slen != FP_LEN || o->flen != FP_LEN)
		return store_fail(st, IDEM_ESTORE, "row %llu: scope or "
		    "fingerprint is not a digest", (unsigned long long)o->r.id);
	return IDEM_OK;
}

/*
 * The sealed answer of r, opened under its key with its plain identity
 * and sealed again under the current key for its keyed scope nscope.
 * OUT: nonce, *ct (malloc'd) of *len bytes.  IDEM_ESEAL when it does not
 * open here (its key id is not in the file, or the tag fails).
 */
static enum idem_err
old_reseal(struct store *st, const struct seal_row *r,
    const unsigned char nscope[FP_LEN], unsigned char nonce[SEAL_NONCE_LEN],
    unsigned char **ct, size_t *len)
{
	const struct cfg_secret	*old = cfg_secret(st->cfg, r->kid);
	const struct cfg_secret	*cur = cfg_secret(st->cfg, NULL);
	struct seal_ad		 ad;
	struct answer		 a;
	enum idem_err		 er;

	answer_init(&a, ADMIN_SEALED_MAX, ADMIN_SEALED_MAX);
	seal_ad_set(&ad, r->scope, r->key, r->klen, r->route);
	if (old == NULL || cur == NULL || r->nnull ||
	    r->nlen != SEAL_NONCE_LEN || seal_open(old->key, &ad, r->nonce,
	    r->ct.p, r->ct.len, &a) != IDEM_OK) {
		answer_free(&a);
		return IDEM_ESEAL;
	}
	seal_ad_set(&ad, nscope, r->key, r->klen, r->route);
	er = seal_answer(cur->key, &ad, &a, nonce, ct, len);
	answer_free(&a);
	if (er != IDEM_OK)
		return store_fail(st, er, "cannot seal the answer: %s",
		    idem_strerror(er));
	return IDEM_OK;
}

/*
 * Sets row id aside (hashed = 2): a keyed row of its key exists, so its
 * plain one can never be converted.  Only a gateway without the key,
 * still running after the store became keyed, writes such a row (a run
 * of its own).  The keyed row answers the key; this one is kept, with
 * its answer, until it expires, but no claim looks it up again.
 */
static enum idem_err
old_set_aside(struct store *st, const struct old_row *o)
{
	MYSQL_BIND	 in[1];
	enum idem_err	 er;

	store_bind_u64(&in[0], &o->r.id);
	if ((er = store_simple(st, "UPDATE idem_keys SET hashed = 2"
	    " WHERE id = ? AND hashed = 0", in, NULL)) != IDEM_OK)
		return er;
	log_warn("store: row %llu, hashed plain by a gateway without the "
	    "key after the store became keyed, set aside (hashed = 2): "
	    "the keyed row of its key answers",
	    (unsigned long long)o->r.id);
	return IDEM_ENOTFOUND;
}

/* The guarded write of a conversion: the row as it was read, or nothing.
 * A keyed row of the same key already there (1062) wins: this one is set
 * aside (IDEM_ENOTFOUND). */
static enum idem_err
old_write(struct store *st, const struct old_row *o,
    const unsigned char nscope[FP_LEN], const unsigned char nfp[FP_LEN],
    const unsigned char *ct, size_t len, const unsigned char *nonce,
    uint64_t *n)
{
	const struct cfg_secret	*cur = cfg_secret(st->cfg, NULL);
	MYSQL_BIND		 in[9];
	enum idem_err		 er;

	store_bind_blob(&in[0], nscope, FP_LEN);
	store_bind_blob(&in[1], nfp, FP_LEN);
	store_bind_in(&in[2], MYSQL_TYPE_BLOB, ct, ct != NULL ? len : 0);
	store_bind_in(&in[3], MYSQL_TYPE_STRING, ct != NULL ? cur->id : NULL,
	    ct != NULL ? strlen(cur->id) : 0);
	store_bind_in(&in[4], MYSQL_TYPE_BLOB, ct != NULL ? nonce : NULL,
	    ct != NULL ? SEAL_NONCE_LEN : 0);
	store_bind_u64(&in[5], &o->r.id);
	store_bind_i64(&in[6], &o->state);
	store_bind_in(&in[7], MYSQL_TYPE_BLOB, o->r.nnull ? NULL : o->r.nonce,
	    o->r.nnull ? 0 : o->r.nlen);
	store_bind_blob(&in[8], o->fp, FP_LEN);
	er = store_simple(st, "UPDATE idem_keys SET scope = ?,"
	    " fingerprint = ?, hashed = 1,"
	    " resp_body = COALESCE(?, resp_body),"
	    " seal_kid = COALESCE(?, seal_kid),"
	    " seal_nonce = COALESCE(?, seal_nonce)"
	    " WHERE id = ? AND hashed = 0 AND state = ?"
	    " AND seal_nonce <=> ? AND fingerprint = ?", in, n);
	if (er != IDEM_OK && store_errno(st) == ER_DUP_ENTRY)
		return old_set_aside(st, o);
	return er;
}

enum idem_err
store_hkey_convert(struct store *st, const struct hkey *hk, uint64_t id,
    char *kid, size_t kidlen)
{
	struct old_row	 o;
	unsigned char	 nscope[FP_LEN], nfp[FP_LEN], nonce[SEAL_NONCE_LEN];
	unsigned char	*ct = NULL;
	size_t		 len = 0;
	uint64_t	 n = 0;
	enum idem_err	 er;

	if (hkey_state(hk) != HKEY_KEYED)
		return store_fail(st, IDEM_EINVAL, "no hashing key");
	memset(&o, 0, sizeof(o));
	o.r.id = id;
	buf_init(&o.r.ct, ADMIN_SEALED_MAX);
	if ((er = old_read(st, &o)) != IDEM_OK)
		goto out;
	if (o.live) {
		er = IDEM_EBUSY;
		goto out;
	}
	hkey_hmac(hk, o.r.scope, nscope);
	hkey_hmac(hk, o.fp, nfp);
	if (!o.r.kidnull && (er = old_reseal(st, &o.r, nscope, nonce, &ct,
	    &len)) != IDEM_OK) {
		if (kid != NULL)
			snprintf(kid, kidlen, "%s", o.r.kid);
		goto out;
	}
	if ((er = old_write(st, &o, nscope, nfp, ct, len, nonce, &n)) ==
	    IDEM_OK && n == 0)
		er = IDEM_EAGAIN;
out:
	free(ct);
	buf_free(&o.r.ct);
	return er;
}

enum idem_err
store_hkey_adopt(struct store *st, const struct idem_id *id, struct claim *c)
{
	MYSQL_BIND	 par[2];
	int64_t		 rid = 0;
	enum idem_err	 er;

	if (id->hk == NULL || hkey_state(id->hk) != HKEY_KEYED ||
	    !atomic_load(&id->hk->legacy))
		return IDEM_OK;
	store_bind_blob(&par[0], id->plain_scope, FP_LEN);
	store_bind_blob(&par[1], id->key, id->keylen);
	if ((er = store_scalar(st, STMT_LEGACY, par, 1, &rid)) ==
	    IDEM_ENOTFOUND)
		return IDEM_OK;
	if (er != IDEM_OK)
		return er;
	er = store_hkey_convert(st, id->hk, (uint64_t)rid, c->seal_kid,
	    sizeof(c->seal_kid));
	switch (er) {
	case IDEM_ENOTFOUND:		/* converted or gone meanwhile */
		return IDEM_OK;
	case IDEM_EBUSY:
		/* Its plain owner runs it still: wait, polling (its lock
		 * is under the plain name, which we do not wait on). */
		c->state = CLAIM_BUSY;
		c->nap_us = STORE_REPOLL_US;
		return IDEM_EBUSY;
	case IDEM_ESEAL:
		c->state = CLAIM_SEALED;
		c->seal_er = cfg_secret(st->cfg, c->seal_kid) == NULL ?
		    IDEM_ENOTFOUND : IDEM_ESEAL;
		return IDEM_ESEAL;
	default:
		return er;
	}
}

/* store_hkey_rekey's rewrap: k (open) wrapped again under cur, guarded
 * by the row as read.  OUT: *n 1 if it was written. */
static enum idem_err
hk_rewrap(struct store *st, const struct hk_row *r,
    const unsigned char k[HKEY_LEN], const struct cfg_secret *cur,
    uint64_t *n)
{
	unsigned char	 nonce[SEAL_NONCE_LEN], w[HK_WRAPPED];
	MYSQL_BIND	 in[5];
	enum idem_err	 er;

	if ((er = hk_wrap(cur, k, nonce, w)) != IDEM_OK)
		return store_fail(st, er, "cannot wrap the hashing key: %s",
		    idem_strerror(er));
	store_bind_str(&in[0], cur->id);
	store_bind_blob(&in[1], nonce, sizeof(nonce));
	store_bind_blob(&in[2], w, sizeof(w));
	store_bind_str(&in[3], r->kid);
	store_bind_blob(&in[4], r->nonce, SEAL_NONCE_LEN);
	return store_simple(st, "UPDATE idem_hash_key SET seal_kid = ?,"
	    " seal_nonce = ?, wrapped = ? WHERE id = 1 AND seal_kid = ? AND"
	    " seal_nonce = ?", in, n);
}

enum idem_err
store_hkey_rewrap(struct store *st, const struct hkey *hk, int *done)
{
	const struct cfg_secret	*cur = cfg_secret(st->cfg, NULL);
	struct hk_row		 r;
	uint64_t		 n = 0;
	enum idem_err		 er;

	*done = 0;
	if (cur == NULL || hkey_state(hk) != HKEY_KEYED)
		return store_fail(st, IDEM_EINVAL, "no hashing key");
	if ((er = hk_read(st, &r)) != IDEM_OK)
		return er;
	if (strcmp(r.kid, cur->id) == 0)
		return IDEM_OK;
	if ((er = hk_rewrap(st, &r, hk->k, cur, &n)) == IDEM_OK)
		*done = n == 1;
	return er;
}

enum idem_err
store_hkey_kid(struct store *st, char *kid, size_t kidlen)
{
	struct hk_row	 r;
	enum idem_err	 er;

	if ((er = hk_read(st, &r)) == IDEM_OK)
		snprintf(kid, kidlen, "%s", r.kid);
	return er;
}

enum idem_err
store_hkey_old_ids(struct store *st, int64_t limit, uint64_t *last,
    uint64_t *ids, size_t *n)
{
	return store_ids_after(st, "SELECT id FROM idem_keys WHERE"
	    " hashed = 0 AND id > ? ORDER BY id LIMIT ?", NULL, 0, limit,
	    last, ids, n);
}
