/* idemctl rekey SQL: stored answers re-sealed under the current key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "clock.h"
#include "seal.h"
#include "store_admin.h"
#include "store_hkey.h"
#include "store_int.h"

/*
 * Reads row r->id, if it is still sealed, into r (its ciphertext into
 * r->ct).  IDEM_ENOTFOUND when it is gone or no longer sealed.
 */
static enum idem_err
rekey_read(struct store *st, struct seal_row *r)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1], res[SEAL_ROW_COLS];
	enum idem_err	 er;

	if ((s = store_prepare(st, "SELECT " SEAL_ROW_SQL " FROM idem_keys"
	    " WHERE id = ? AND seal_kid IS NOT NULL")) == NULL)
		return IDEM_ESTORE;
	store_bind_u64(&in[0], &r->id);
	store_seal_row_bind(res, r);
	er = store_seal_row_read(st, s, in, res, r);
	store_stmt_close(s);
	if (er != IDEM_OK)
		return er;
	if (r->slen != FP_LEN || r->nnull || r->nlen != SEAL_NONCE_LEN)
		r->kid[0] = '\0';	/* not a row we sealed: leave it */
	return IDEM_OK;
}

/*
 * Writes ct (len bytes, sealed under cur with nonce) over row r, guarded
 * by the kid and nonce it was read with: a row a gateway claimed or
 * rewrote meanwhile is left alone.  OUT: *n rows changed (0 or 1).
 */
static enum idem_err
rekey_write(struct store *st, const struct seal_row *r, const char *cur,
    const unsigned char *nonce, const unsigned char *ct, size_t len,
    uint64_t *n)
{
	MYSQL_BIND	 in[6];

	store_bind_blob(&in[0], ct, len);
	store_bind_str(&in[1], cur);
	store_bind_blob(&in[2], nonce, SEAL_NONCE_LEN);
	store_bind_u64(&in[3], &r->id);
	store_bind_str(&in[4], r->kid);
	store_bind_blob(&in[5], r->nonce, SEAL_NONCE_LEN);
	return store_simple(st, "UPDATE idem_keys SET resp_body = ?,"
	    " seal_kid = ?, seal_nonce = ? WHERE id = ? AND seal_kid = ?"
	    " AND seal_nonce = ?", in, n);
}

/* A guarded write of a row landed (n = 1: sealed under the current key)
 * or found it changed meanwhile (n = 0). */
static void
rekey_tally(struct rekey_result *out, uint64_t n)
{
	if (n == 1)
		out->rekeyed++;
	else
		out->changed++;
}

/* Re-seals row id under the current key cur, counting what became of it
 * in out. */
static enum idem_err
rekey_one(struct store *st, uint64_t id, const struct cfg_secret *cur,
    struct rekey_result *out)
{
	struct seal_row		 r;
	const struct cfg_secret	*old;
	struct seal_ad		 ad;
	struct answer		 a;
	unsigned char		 nonce[SEAL_NONCE_LEN], *ct = NULL;
	size_t			 len;
	uint64_t		 n = 0;
	enum idem_err		 er;

	memset(&r, 0, sizeof(r));
	r.id = id;
	buf_init(&r.ct, ADMIN_SEALED_MAX);
	answer_init(&a, ADMIN_SEALED_MAX, ADMIN_SEALED_MAX);
	if ((er = rekey_read(st, &r)) == IDEM_ENOTFOUND ||
	    (er == IDEM_OK && strcmp(r.kid, cur->id) == 0)) {
		out->changed++;
		er = IDEM_OK;
		goto out;
	}
	/* A row larger than a replay could read (stored under an older,
	 * larger max_response) is passed over like any other this run
	 * cannot open (counted unreadable; idemctl check still counts it
	 * under its key): the rest are still re-sealed. */
	if (er == IDEM_ETOOBIG) {
		out->unreadable++;
		er = IDEM_OK;
		goto out;
	}
	if (er != IDEM_OK)
		goto out;
	seal_ad_set(&ad, r.scope, r.key, r.klen < sizeof(r.key) ? r.klen :
	    sizeof(r.key) - 1, r.route);
	if (r.kid[0] == '\0' || (old = cfg_secret(st->cfg, r.kid)) == NULL ||
	    seal_open(old->key, &ad, r.nonce, r.ct.p, r.ct.len, &a) !=
	    IDEM_OK) {
		out->unreadable++;
		goto out;
	}
	if ((er = seal_answer(cur->key, &ad, &a, nonce, &ct, &len)) !=
	    IDEM_OK) {
		er = store_fail(st, er, "cannot seal the answer: %s",
		    idem_strerror(er));
		goto out;
	}
	if ((er = rekey_write(st, &r, cur->id, nonce, ct, len, &n)) ==
	    IDEM_OK)
		rekey_tally(out, n);
out:
	free(ct);
	answer_free(&a);
	buf_free(&r.ct);
	return er;
}

/*
 * Up to limit ids of rows sealed under another key than cur, past *last,
 * into ids.  OUT: *n, *last the highest id read.
 */
static enum idem_err
rekey_ids(struct store *st, const char *cur, int64_t limit, uint64_t *last,
    uint64_t *ids, size_t *n)
{
	MYSQL_BIND	 in[1];

	store_bind_str(&in[0], cur);
	return store_ids_after(st, "SELECT id FROM idem_keys WHERE"
	    " seal_kid IS NOT NULL AND seal_kid <> ? AND id > ?"
	    " ORDER BY id LIMIT ?", in, 1, limit, last, ids, n);
}

/*
 * A finished row (completed, or a tombstone: its status) stored in clear
 * (before the key was set, or by a build that had none), as read to seal
 * it: its identity into r, its answer into a, its owner's token into
 * *tok.  IDEM_ENOTFOUND when it is gone, sealed, or no longer finished.
 */
static enum idem_err
clear_read(struct store *st, struct seal_row *r, struct answer *a,
    uint64_t *tok)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1], res[SEAL_ROW_COLS + 3];
	int64_t		 status = 0;
	unsigned long	 hlen = 0;
	my_bool		 hnull = 1;
	enum idem_err	 er;

	if ((s = store_prepare(st, "SELECT " SEAL_ROW_SQL ", resp_status,"
	    " resp_headers, owner_token FROM idem_keys WHERE id = ? AND"
	    " state IN (1, 2) AND hashed = 1 AND seal_kid IS NULL")) == NULL)
		return IDEM_ESTORE;
	store_bind_u64(&in[0], &r->id);
	store_seal_row_bind(res, r);
	store_out_i64(&res[6], &status, NULL);
	store_out_blob(&res[7], NULL, 0, &hlen, &hnull);
	store_out_u64(&res[8], tok, NULL);
	if ((er = store_run(st, s, in, res)) == IDEM_OK)
		er = store_fetch(st, s);
	if (er == IDEM_OK && !r->bnull && r->blen > 0)
		er = store_row_blob(st, s, &res[5], 5, r->blen, &a->body);
	if (er == IDEM_OK && !hnull && hlen > 0)
		er = store_row_blob(st, s, &res[7], 7, hlen, &a->hdrs);
	store_stmt_close(s);
	if (er != IDEM_OK)
		return er;
	store_out_text_end(r->key, sizeof(r->key), r->klen, r->knull);
	store_out_text_end(r->route, sizeof(r->route), r->rlen, r->rnull);
	if (r->klen >= sizeof(r->key))
		r->klen = sizeof(r->key) - 1;
	a->status = (int)status;
	return IDEM_OK;
}

/*
 * Seals finished row id, stored in clear, under the current key cur, as
 * the gateway seals an answer (status and headers inside), counting it in
 * out (rekeyed).  The write is guarded by the row's owner token and
 * state: a row taken over meanwhile is left alone (changed).
 */
static enum idem_err
clear_one(struct store *st, uint64_t id, const struct cfg_secret *cur,
    struct rekey_result *out)
{
	struct seal_row	 r;
	struct seal_ad	 ad;
	struct answer	 a;
	MYSQL_BIND	 in[5];
	unsigned char	 nonce[SEAL_NONCE_LEN], *ct = NULL;
	size_t		 len;
	uint64_t	 tok = 0, n = 0;
	enum idem_err	 er;

	memset(&r, 0, sizeof(r));
	r.id = id;
	answer_init(&a, ADMIN_SEALED_MAX, ADMIN_SEALED_MAX);
	if ((er = clear_read(st, &r, &a, &tok)) == IDEM_ENOTFOUND) {
		out->changed++;
		er = IDEM_OK;
		goto out;
	}
	if (er != IDEM_OK && er != IDEM_ETOOBIG)
		goto out;
	if (er == IDEM_ETOOBIG || r.slen != FP_LEN) {
		er = IDEM_OK;
		out->unreadable++;	/* not a row we wrote: leave it */
		goto out;
	}
	seal_ad_set(&ad, r.scope, r.key, r.klen, r.route);
	if ((er = seal_answer(cur->key, &ad, &a, nonce, &ct, &len)) !=
	    IDEM_OK) {
		er = store_fail(st, er, "cannot seal the answer: %s",
		    idem_strerror(er));
		goto out;
	}
	store_bind_blob(&in[0], ct, len);
	store_bind_str(&in[1], cur->id);
	store_bind_blob(&in[2], nonce, SEAL_NONCE_LEN);
	store_bind_u64(&in[3], &r.id);
	store_bind_u64(&in[4], &tok);
	er = store_simple(st, "UPDATE idem_keys SET resp_status = NULL,"
	    " resp_headers = NULL, resp_body = ?, seal_kid = ?,"
	    " seal_nonce = ? WHERE id = ? AND owner_token = ? AND state IN"
	    " (1, 2) AND seal_kid IS NULL", in, &n);
	if (er == IDEM_OK)
		rekey_tally(out, n);
out:
	free(ct);
	answer_free(&a);
	return er;
}

/* Up to limit ids of finished rows stored in clear, past *last, into
 * ids.  OUT: *n, *last the highest id read. */
static enum idem_err
clear_ids(struct store *st, int64_t limit, uint64_t *last, uint64_t *ids,
    size_t *n)
{
	return store_ids_after(st, "SELECT id FROM idem_keys WHERE"
	    " seal_kid IS NULL AND state IN (1, 2) AND hashed = 1 AND id > ?"
	    " ORDER BY id LIMIT ?", NULL, 0, limit, last, ids, n);
}

/* Converts row id, hashed before the key, counting what became of it. */
static enum idem_err
rekey_hash_one(struct store *st, const struct hkey *hk, uint64_t id,
    struct rekey_result *out)
{
	switch (store_hkey_convert(st, hk, id, NULL, 0)) {
	case IDEM_OK:
		out->hashed++;
		return IDEM_OK;
	case IDEM_ENOTFOUND:
	case IDEM_EBUSY:
	case IDEM_EAGAIN:
		out->changed++;
		return IDEM_OK;
	case IDEM_ESEAL:
		out->unreadable++;
		return IDEM_OK;
	default:
		return IDEM_ESTORE;
	}
}

/*
 * One walk over the rows: with hk, those hashed before the key
 * (rekey_hash_one); with clear, the finished ones stored in clear
 * (clear_one); else those sealed under another key than cur (rekey_one).
 */
struct rekey_pass {
	const struct hkey	*hk;
	const struct cfg_secret	*cur;
	int			 clear;
};

static enum idem_err
pass_ids(struct store *st, const struct rekey_pass *p, int64_t limit,
    uint64_t *last, uint64_t *ids, size_t *n)
{
	if (p->hk != NULL)
		return store_hkey_old_ids(st, limit, last, ids, n);
	if (p->clear)
		return clear_ids(st, limit, last, ids, n);
	return rekey_ids(st, p->cur->id, limit, last, ids, n);
}

static enum idem_err
pass_one(struct store *st, const struct rekey_pass *p, uint64_t id,
    struct rekey_result *out)
{
	if (p->hk != NULL)
		return rekey_hash_one(st, p->hk, id, out);
	if (p->clear)
		return clear_one(st, id, p->cur, out);
	return rekey_one(st, id, p->cur, out);
}

/* The batches of one pass, until one comes back short or the deadline
 * (clock_now_ms(); 0: none) passes (IDEM_ETIMEOUT). */
static enum idem_err
rekey_batches(struct store *st, const struct rekey_opts *o,
    struct store_hold *h, const struct rekey_pass *p, int64_t deadline,
    struct rekey_result *out)
{
	uint64_t	*ids, last = 0;
	size_t		 n, i;
	enum idem_err	 er;

	if ((ids = calloc((size_t)o->batch, sizeof(*ids))) == NULL)
		return store_fail(st, IDEM_ENOMEM, "out of memory");
	for (;;) {
		if (deadline != 0 && clock_now_ms() >= deadline) {
			er = IDEM_ETIMEOUT;
			break;
		}
		store_hold_keep(h);
		er = pass_ids(st, p, o->batch, &last, ids, &n);
		for (i = 0; er == IDEM_OK && i < n; i++)
			er = pass_one(st, p, ids[i], out);
		if (er != IDEM_OK)
			break;
		if (n > 0)
			out->batches++;
		if (n < (size_t)o->batch)
			break;
	}
	free(ids);
	return er;
}

static enum idem_err
rekey_start(struct store *st, const struct rekey_opts *o, const char *kid,
    uint64_t *id)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[2];
	enum idem_err	 er;

	/* We hold the lock, so any run still 'running' died on its way. */
	er = store_simple(st, "UPDATE idem_rekey_runs SET outcome = 'failed',"
	    " reason = 'interrupted (process died or lost its connection)'"
	    " WHERE outcome = 'running'", NULL, NULL);
	if (er != IDEM_OK)
		return er;
	if ((s = store_prepare(st, "INSERT INTO idem_rekey_runs (host,"
	    " started_at, to_kid) VALUES (?, NOW(6), ?)")) == NULL)
		return IDEM_ESTORE;
	store_bind_str(&in[0], o->host);
	store_bind_str(&in[1], kid);
	if ((er = store_run(st, s, in, NULL)) == IDEM_OK)
		*id = mysql_stmt_insert_id(s);
	store_stmt_close(s);
	return er;
}

static enum idem_err
rekey_finish(struct store *st, const struct rekey_result *r)
{
	MYSQL_BIND	 in[8];
	uint64_t	 batches = r->batches;

	store_bind_u64(&in[0], &r->rekeyed);
	store_bind_u64(&in[1], &r->changed);
	store_bind_u64(&in[2], &r->unreadable);
	store_bind_u64(&in[3], &r->hashed);
	store_bind_u64(&in[4], &batches);
	store_bind_str(&in[5], r->outcome);
	store_bind_str(&in[6], r->reason);
	store_bind_u64(&in[7], &r->run_id);
	return store_simple(st, "UPDATE idem_rekey_runs SET ended_at = NOW(6),"
	    " rows_rekeyed = ?, rows_changed = ?, rows_unreadable = ?,"
	    " rows_hashed = ?, batches = ?, outcome = ?, reason = ?"
	    " WHERE id = ?", in, NULL);
}

/* The run's outcome and reason from how its batches ended. */
static void
rekey_outcome(struct store *st, const struct rekey_opts *o, enum idem_err er,
    struct rekey_result *out)
{
	if (er == IDEM_OK)
		snprintf(out->outcome, sizeof(out->outcome), "ok");
	else if (er == IDEM_ETIMEOUT) {
		snprintf(out->outcome, sizeof(out->outcome), "partial");
		snprintf(out->reason, sizeof(out->reason),
		    "time limit of %lld ms reached", (long long)o->max_ms);
		store_fail(st, er, "%s", out->reason);
	} else
		snprintf(out->reason, sizeof(out->reason), "%.250s",
		    store_last_error(st));
}

enum idem_err
store_admin_rekey(struct store *st, const struct rekey_opts *o,
    struct rekey_result *out)
{
	const struct cfg_secret	*cur = cfg_secret(st->cfg, NULL);
	struct store_hold	 h;
	struct hkey		 hk;
	enum idem_err		 er, fer;
	int64_t			 start = clock_now_ms(), deadline;
	char			 saved[sizeof(st->err)];

	memset(out, 0, sizeof(*out));
	snprintf(out->outcome, sizeof(out->outcome), "failed");
	if (cur == NULL)
		return store_fail(st, IDEM_EINVAL, "no secret_key_file: "
		    "nothing to re-seal under");
	if (o->batch < 1)
		return store_fail(st, IDEM_EINVAL,
		    "batch size must be at least 1");
	snprintf(out->to_kid, sizeof(out->to_kid), "%s", cur->id);
	if (store_need_conn(st) != IDEM_OK)
		return IDEM_ESTORE;
	hkey_init(&hk);
	memset(&h, 0, sizeof(h));
	h.st = st;
	/* The lock first: a rekey refused for it changes nothing, not even
	 * the hashing key a first rekey makes. */
	if ((er = store_hold_take(&h, st, REKEY_LOCK_NAME, o->host)) ==
	    IDEM_EBUSY) {
		er = store_fail(st, IDEM_EBUSY,
		    "rekey already running on another connection");
		goto out;
	}
	if (er != IDEM_OK) {
		er = IDEM_ESTORE;
		goto out;
	}
	if ((er = store_hkey_resolve(st, &hk)) != IDEM_OK)
		goto unlock;
	if (hkey_state(&hk) != HKEY_KEYED) {
		er = store_fail(st, IDEM_ESEAL, "%s", hk.why);
		goto unlock;
	}
	if ((er = rekey_start(st, o, cur->id, &out->run_id)) != IDEM_OK)
		goto unlock;
	deadline = o->max_ms > 0 ? start + o->max_ms : 0;
	/* The hashing key first, then the rows hashed before it, then the
	 * answers stored in clear (before the key), then the rows sealed
	 * under older keys. */
	if ((er = store_hkey_rewrap(st, &hk, &out->rewrapped)) == IDEM_OK &&
	    (er = rekey_batches(st, o, &h, &(struct rekey_pass){ .hk = &hk },
	    deadline, out)) == IDEM_OK &&
	    (er = rekey_batches(st, o, &h, &(struct rekey_pass){ .cur = cur,
	    .clear = 1 }, deadline, out)) == IDEM_OK)
		er = rekey_batches(st, o, &h, &(struct rekey_pass){ .cur = cur },
		    deadline, out);
	rekey_outcome(st, o, er, out);
	out->elapsed_ms = clock_now_ms() - start;
	/* Keep the first error's text if recording the end fails too. */
	memcpy(saved, st->err, sizeof(saved));
	if ((fer = rekey_finish(st, out)) != IDEM_OK && er == IDEM_OK)
		er = fer;
	else
		memcpy(st->err, saved, sizeof(saved));
unlock:
	store_hold_drop(&h);
out:
	hkey_free(&hk);
	return er;
}

enum idem_err
store_admin_kid_counts(struct store *st, struct kid_count *out, size_t max,
    size_t *n)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[2];
	struct kid_count k;
	unsigned long	 len = 0;
	my_bool		 isnull = 0;
	enum idem_err	 er;

	*n = 0;
	if ((s = store_prepare(st, "SELECT seal_kid, COUNT(*) FROM idem_keys"
	    " GROUP BY seal_kid ORDER BY seal_kid")) == NULL)
		return IDEM_ESTORE;
	memset(&k, 0, sizeof(k));
	store_out_text(&res[0], k.kid, sizeof(k.kid), &len, &isnull);
	store_out_u64(&res[1], &k.rows, NULL);
	er = store_run(st, s, NULL, res);
	while (er == IDEM_OK && (er = store_fetch(st, s)) == IDEM_OK) {
		store_out_text_end(k.kid, sizeof(k.kid), len, isnull);
		if (*n < max)
			out[(*n)++] = k;
	}
	store_stmt_close(s);
	return er == IDEM_ENOTFOUND ? IDEM_OK : er;
}
