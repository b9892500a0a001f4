/* The store's operator queries: keys, fleet counters, gauges, privileges. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "clock.h"
#include "rcache.h"
#include "seal.h"
#include "store_admin.h"
#include "store_int.h"

/* --- keys ----------------------------------------------------------------- */

const char *
admin_key_state_name(enum admin_key_state s)
{
	switch (s) {
	case AKEY_IN_PROGRESS:
		return "in-progress";
	case AKEY_COMPLETED:
		return "completed";
	case AKEY_TOMBSTONE:
		return "tombstone";
	case AKEY_EXPIRED:
		return "expired";
	}
	return "unknown";
}

/* The row of a key as store_admin_key_get reads it: the columns with no
 * place of their own in struct admin_key, and their lengths and NULLs. */
struct key_row {
	struct admin_key k;
	uint64_t	 state, live, status;
	char		 fp[FP_LEN + 1];
	unsigned long	 rlen, mlen, olen, flen;
	my_bool		 rnull, mnull, onull, fnull, cnull, stnull, sznull;
	my_bool		 tnull[3];
	unsigned long	 kidlen;
	my_bool		 kidnull;
};

/* Unix time of a DATETIME column, in seconds with a fraction: past 2038
 * too (UNIX_TIMESTAMP gives NULL there in MariaDB 10.11, and an unbounded
 * run's key ends in 9999). */
#define UNIX_S(col)							\
	"TIMESTAMPDIFF(MICROSECOND, " SQL_EPOCH ", " col ") / 1000000"

static const char SQL_KEY_GET[] =
    "SELECT id, state, route, method, owner, fingerprint, waiters, "
    UNIX_S("created_at") ", " UNIX_S("expires_at") ", "
    UNIX_S("lease_until") ", " UNIX_S("completed_at") ","
    " resp_status, resp_size, " UNIX_S("NOW(6)") ","
    " (state = 0 AND lease_until >= NOW(6)) + 2 * (expires_at < NOW(6)) +"
    " 4 * (state = 0 AND run_deadline IS NOT NULL AND run_deadline > NOW(6)),"
    " seal_kid FROM idem_keys WHERE scope = ? AND idem_key = ?";

static void
key_bind(MYSQL_BIND *res, struct key_row *r)
{
	struct admin_key *k = &r->k;

	store_out_u64(&res[0], &k->id, NULL);
	store_out_u64(&res[1], &r->state, NULL);
	store_out_text(&res[2], k->route, sizeof(k->route), &r->rlen,
	    &r->rnull);
	store_out_text(&res[3], k->method, sizeof(k->method), &r->mlen,
	    &r->mnull);
	store_out_text(&res[4], k->owner, sizeof(k->owner), &r->olen,
	    &r->onull);
	store_out_text(&res[5], r->fp, sizeof(r->fp), &r->flen, &r->fnull);
	res[5].buffer_type = MYSQL_TYPE_BLOB;
	store_out_u64(&res[6], &k->waiters, NULL);
	store_out_dbl(&res[7], &k->created_at, &r->tnull[0]);
	store_out_dbl(&res[8], &k->expires_at, &r->tnull[1]);
	store_out_dbl(&res[9], &k->lease_until, &r->tnull[2]);
	store_out_dbl(&res[10], &k->completed_at, &r->cnull);
	store_out_u64(&res[11], &r->status, &r->stnull);
	store_out_u64(&res[12], &k->resp_size, &r->sznull);
	store_out_dbl(&res[13], &k->now, NULL);
	store_out_u64(&res[14], &r->live, NULL);
	store_out_text(&res[15], k->seal_kid, sizeof(k->seal_kid), &r->kidlen,
	    &r->kidnull);
}

/* What the fetched columns say, in struct admin_key's terms. */
static void
key_decode(struct key_row *r)
{
	struct admin_key *k = &r->k;

	store_out_text_end(k->route, sizeof(k->route), r->rlen, r->rnull);
	store_out_text_end(k->method, sizeof(k->method), r->mlen, r->mnull);
	store_out_text_end(k->owner, sizeof(k->owner), r->olen, r->onull);
	if (!r->fnull && r->flen >= FP_LEN)
		memcpy(k->fp, r->fp, FP_LEN);
	if (r->cnull)
		k->completed_at = 0;
	k->raw_state = (int)r->state;
	k->lease_live = (r->live & 1) != 0;
	k->run_live = (r->live & 4) != 0;
	store_out_text_end(k->seal_kid, sizeof(k->seal_kid), r->kidlen,
	    r->kidnull);
	k->has_resp = !r->stnull || k->seal_kid[0] != '\0';
	k->resp_status = r->stnull ? 0 : (int)r->status;
	if (r->sznull)
		k->resp_size = 0;
	if (r->live & 2)
		k->state = AKEY_EXPIRED;
	else if (r->state == 0)
		k->state = AKEY_IN_PROGRESS;
	else if (r->state == 1)
		k->state = AKEY_COMPLETED;
	else
		k->state = AKEY_TOMBSTONE;
}

/*
 * Prepares sql, runs it with in (may be NULL) and fetches its first row
 * into res.  OUT: *open, the statement with its row, for the caller to
 * close (set only on IDEM_OK).  IDEM_ENOTFOUND if there is no row.
 */
static enum idem_err
first_row(struct store *st, const char *sql, MYSQL_BIND *in,
    MYSQL_BIND *res, MYSQL_STMT **open)
{
	MYSQL_STMT	*s;
	enum idem_err	 er;

	if ((s = store_prepare(st, sql)) == NULL)
		return IDEM_ESTORE;
	if ((er = store_run(st, s, in, res)) == IDEM_OK)
		er = store_fetch(st, s);
	if (er != IDEM_OK) {
		store_stmt_close(s);
		return er;
	}
	*open = s;
	return IDEM_OK;
}

/* The same for a read of at most one row, closed at once; OUT: *found
 * whether it returned one.  The gauges are a handful of such reads. */
static enum idem_err
one_row(struct store *st, const char *sql, MYSQL_BIND *res, int *found)
{
	MYSQL_STMT	*s;
	enum idem_err	 er;

	er = first_row(st, sql, NULL, res, &s);
	*found = er == IDEM_OK;
	if (er == IDEM_OK)
		store_stmt_close(s);
	return er == IDEM_ENOTFOUND ? IDEM_OK : er;
}

/* The stored resp_body of row id into body (bounded by body->max) and,
 * when nonce is not NULL, its seal_nonce into nonce (OUT: *noncelen,
 * 0 for NULL). */
static enum idem_err
key_body(struct store *st, uint64_t id, struct buf *body,
    unsigned char nonce[SEAL_NONCE_LEN], unsigned long *noncelen)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1], b[2];
	unsigned char	 nb[SEAL_NONCE_LEN];
	unsigned long	 blen = 0, nlen = 0;
	my_bool		 bnull = 0, nnull = 0;
	enum idem_err	 er;

	/* The length first, then the bytes into a buffer sized for them. */
	memset(b, 0, sizeof(b));
	store_out_blob(&b[0], NULL, 0, &blen, &bnull);
	store_out_blob(&b[1], nb, sizeof(nb), &nlen, &nnull);
	store_bind_u64(&in[0], &id);
	er = first_row(st, "SELECT resp_body, seal_nonce FROM idem_keys"
	    " WHERE id = ?", in, b, &s);
	if (er == IDEM_ENOTFOUND)
		return store_fail(st, er, "no such key");
	if (er != IDEM_OK)
		return er;
	if (!bnull && blen > 0)
		er = store_row_blob(st, s, &b[0], 0, blen, body);
	store_stmt_close(s);
	if (er == IDEM_OK && nonce != NULL) {
		*noncelen = nnull || nlen != sizeof(nb) ? 0 : nlen;
		memcpy(nonce, nb, sizeof(nb));
	}
	return er;
}

/*
 * Opens the sealed answer of k, the row of (scope, key), when the key file
 * holds its key id: k->resp_status then says its status, k->opened is set
 * and body (when not NULL) gets its body.  k->open_er says why not
 * otherwise (IDEM_ENOTFOUND: no such key id; IDEM_ESEAL: the tag failed).
 */
static enum idem_err
key_open(struct store *st, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, struct admin_key *k, struct buf *body)
{
	const struct cfg_secret	*sk;
	struct seal_ad		 ad;
	struct buf		 ct;
	struct answer		 a;
	unsigned char		 nonce[SEAL_NONCE_LEN];
	unsigned long		 nlen = 0;
	enum idem_err		 er;

	if ((sk = cfg_secret(st->cfg, k->seal_kid)) == NULL) {
		k->open_er = IDEM_ENOTFOUND;
		return IDEM_OK;
	}
	buf_init(&ct, ADMIN_SEALED_MAX);
	answer_init(&a, ADMIN_SEALED_MAX, body != NULL ? body->max :
	    ADMIN_SEALED_MAX);
	if ((er = key_body(st, k->id, &ct, nonce, &nlen)) != IDEM_OK)
		goto out;
	seal_ad_set(&ad, scope, key, keylen, k->route);
	k->open_er = nlen != SEAL_NONCE_LEN ? IDEM_ESEAL :
	    seal_open(sk->key, &ad, nonce, ct.p, ct.len, &a);
	if (k->open_er == IDEM_ENOMEM || k->open_er == IDEM_ETOOBIG) {
		er = store_fail(st, k->open_er, "cannot open the answer: %s",
		    idem_strerror(k->open_er));
		goto out;
	}
	if (k->open_er != IDEM_OK)
		goto out;
	k->opened = 1;
	k->resp_status = a.status;
	if (body != NULL && a.body.len > 0)
		er = buf_add(body, a.body.p, a.body.len);
out:
	answer_free(&a);
	buf_free(&ct);
	return er;
}

enum idem_err
store_admin_key_get(struct store *st, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, struct admin_key *out, struct buf *body)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[2], res[16];
	struct key_row	 r;
	enum idem_err	 er;

	memset(&r, 0, sizeof(r));
	store_bind_blob(&in[0], scope, FP_LEN);
	store_bind_blob(&in[1], key, keylen);
	key_bind(res, &r);
	er = first_row(st, SQL_KEY_GET, in, res, &s);
	if (er == IDEM_ENOTFOUND)
		return store_fail(st, er, "no such key");
	if (er != IDEM_OK)
		return er;
	store_stmt_close(s);
	key_decode(&r);
	if (r.k.seal_kid[0] != '\0' && r.k.has_resp)
		er = key_open(st, scope, key, keylen, &r.k, body);
	else if (body != NULL)
		er = key_body(st, r.k.id, body, NULL, NULL);
	if (er != IDEM_OK)
		return er;
	*out = r.k;
	return IDEM_OK;
}

enum idem_err
store_admin_key_scopes(struct store *st, const char *key, size_t keylen,
    unsigned char (*out)[FP_LEN], size_t max, size_t *n)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1], res[1];
	unsigned char	 d[FP_LEN];
	unsigned long	 len = 0;
	enum idem_err	 er;

	*n = 0;
	if ((s = store_prepare(st, "SELECT scope FROM idem_keys WHERE"
	    " idem_key = ? ORDER BY id")) == NULL)
		return IDEM_ESTORE;
	store_bind_blob(&in[0], key, keylen);
	memset(res, 0, sizeof(res));
	store_out_blob(&res[0], d, sizeof(d), &len, NULL);
	er = store_run(st, s, in, res);
	while (er == IDEM_OK && (er = store_fetch(st, s)) == IDEM_OK) {
		if (len == FP_LEN && *n < max)
			memcpy(out[*n], d, FP_LEN);
		(*n)++;
	}
	store_stmt_close(s);
	return er == IDEM_ENOTFOUND ? IDEM_OK : er;
}

enum idem_err
store_admin_owner_facts(struct store *st, int64_t live_floor_ms)
{
	MYSQL_BIND	 in[2];
	int64_t		 locks = st->galera ? 0 : 1;

	/* Galera takes no named locks (store.h): the lease alone. */
	store_bind_i64(&in[0], &live_floor_ms);
	store_bind_i64(&in[1], &locks);
	return store_simple(st, "SET @idem_live_floor = (SELECT VARIABLE_VALUE"
	    " * 1000 >= ? FROM information_schema.GLOBAL_STATUS WHERE"
	    " VARIABLE_NAME = 'UPTIME'), @idem_locks = ?", in, NULL);
}

/*
 * The one forget rule, for idemctl and idemtop alike: a row in progress
 * goes only with force (its owner may still be running it), unless its
 * run is over and its owner gone (FORGET_UNLESS_LIVE); and the call
 * returns only once no gateway may replay the answer from memory
 * (lib/ident/rcache.h).  sql deletes by the binds in; OUT: *n rows deleted.
 */
static enum idem_err
forget_rows(struct store *st, const char *sql, MYSQL_BIND *in, uint64_t *n)
{
	enum idem_err	 er;

	*n = 0;
	if ((er = store_simple(st, sql, in, n)) != IDEM_OK)
		return er;
	if (*n > 0)
		clock_sleep_ms(RCACHE_FORGET_WAIT_MS);
	return IDEM_OK;
}

enum idem_err
store_admin_key_forget(struct store *st, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, int force)
{
	MYSQL_BIND	 in[3];
	int64_t		 f = force ? 1 : 0;
	struct admin_key k;
	enum idem_err	 er;
	uint64_t	 n;

	store_bind_blob(&in[0], scope, FP_LEN);
	store_bind_blob(&in[1], key, keylen);
	store_bind_i64(&in[2], &f);
	er = forget_rows(st, "DELETE FROM idem_keys WHERE scope = ? AND"
	    " idem_key = ?" FORGET_UNLESS_LIVE, in, &n);
	if (er != IDEM_OK || n > 0)
		return er;
	/* Nothing deleted: tell a missing key from a busy one. */
	if ((er = store_admin_key_get(st, scope, key, keylen, &k, NULL)) !=
	    IDEM_OK)
		return er;
	return store_fail(st, IDEM_EBUSY, "key is in progress (owner %s)",
	    k.owner);
}

enum idem_err
store_admin_forget_id(struct store *st, uint64_t id, int force,
    int *deleted)
{
	MYSQL_BIND	 in[2];
	int64_t		 f = force ? 1 : 0;
	enum idem_err	 er;
	uint64_t	 n;

	store_bind_u64(&in[0], &id);
	store_bind_i64(&in[1], &f);
	er = forget_rows(st, "DELETE FROM idem_keys WHERE id = ?"
	    FORGET_UNLESS_LIVE, in, &n);
	*deleted = n > 0;
	return er;
}

/* --- counters and gauges ------------------------------------------------- */

/* minute >= the start of the minute since seconds ago; all time (since 0)
 * adds what cleanup folded into idem_counters_total.  Placeholders: since,
 * since, route, route, since, route, route (route NULL: every route). */
#define SQL_STATS(HOST, BY)						\
    "SELECT " HOST ", route" STAT_COLS " FROM ("				\
    "SELECT host, route" COUNTER_COLS_PLAIN " FROM idem_counters "	\
    "WHERE (? = 0 OR minute >= NOW() - INTERVAL ? SECOND - "		\
    "INTERVAL SECOND(NOW()) SECOND) AND (? IS NULL OR route = ?) "	\
    "UNION ALL SELECT host, route" COUNTER_COLS_PLAIN			\
    " FROM idem_counters_total WHERE ? = 0 AND (? IS NULL OR "		\
    "route = ?)) x GROUP BY " BY " ORDER BY " BY
static const char *const sql_stats[2] = {
	SQL_STATS("''", "route"),
	SQL_STATS("host", "host, route"),
};

/* One row of SQL_STATS into cur (rlen, rnull: [0] host, [1] route). */
static void
stats_bind(MYSQL_BIND *res, struct admin_stat *cur, unsigned long *rlen,
    my_bool *rnull)
{
	int	 i, k = 2;

	store_out_text(&res[0], cur->host, sizeof(cur->host), &rlen[0],
	    &rnull[0]);
	store_out_text(&res[1], cur->route, sizeof(cur->route), &rlen[1],
	    &rnull[1]);
	for (i = 0; i < STAT__COUNT; i++)
		store_out_u64(&res[k++], &cur->n[i], NULL);
	store_out_u64(&res[k++], &cur->wait_sum_ms, NULL);
	for (i = 0; i < STAT_WAIT_BUCKETS; i++)
		store_out_u64(&res[k++], &cur->wait_bucket[i], NULL);
}

/* Appends cur to *v (n used of *cap). */
static enum idem_err
stats_add(struct admin_stat **v, size_t n, size_t *cap,
    const struct admin_stat *cur)
{
	struct admin_stat *nv;

	if (n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		if ((nv = realloc(*v, *cap * sizeof(**v))) == NULL)
			return IDEM_ENOMEM;
		*v = nv;
	}
	(*v)[n] = *cur;
	return IDEM_OK;
}

enum idem_err
store_admin_stats(struct store *st, int64_t since_s, const char *route,
    int by_host, struct admin_stat **rows, size_t *nrows)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[7], res[2 + STAT__COUNT + 1 + STAT_WAIT_BUCKETS];
	struct admin_stat cur, *v = NULL;
	size_t		 n = 0, cap = 0;
	unsigned long	 rlen[2];
	my_bool		 rnull[2];
	enum idem_err	 er;
	int		 i;

	if ((s = store_prepare(st, sql_stats[by_host != 0])) == NULL)
		return IDEM_ESTORE;
	/* MySQL numbers each placeholder: the same values again. */
	for (i = 0; i < 7; i++)
		if (i == 0 || i == 1 || i == 4)
			store_bind_i64(&in[i], &since_s);
		else
			store_bind_in(&in[i], MYSQL_TYPE_STRING, route,
			    route != NULL ? strlen(route) : 0);
	stats_bind(res, &cur, rlen, rnull);
	if ((er = store_run(st, s, in, res)) != IDEM_OK)
		goto out;
	for (;;) {
		memset(&cur, 0, sizeof(cur));
		if ((er = store_fetch(st, s)) != IDEM_OK) {
			if (er == IDEM_ENOTFOUND)
				er = IDEM_OK;	/* no more rows */
			break;
		}
		store_out_text_end(cur.host, sizeof(cur.host), rlen[0],
		    rnull[0]);
		store_out_text_end(cur.route, sizeof(cur.route), rlen[1],
		    rnull[1]);
		if ((er = stats_add(&v, n, &cap, &cur)) != IDEM_OK)
			break;
		n++;
	}
	if (er == IDEM_OK) {
		*rows = v;
		*nrows = n;
		v = NULL;
	}
out:
	free(v);
	store_stmt_close(s);
	return er;
}

/* Rows per state and the waiters on rows in progress. */
static enum idem_err
gauges_rows(struct store *st, struct admin_gauges *g)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[3];
	uint64_t	 state, cnt, wsum;
	enum idem_err	 er;
	enum idem_err	 fe;

	/* The (state, lease_until) index answers this without the rows. */
	if ((s = store_prepare(st, "SELECT state, COUNT(*), "
	    "COALESCE(SUM(waiters), 0) FROM idem_keys GROUP BY state")) == NULL)
		return IDEM_ESTORE;
	store_out_u64(&res[0], &state, NULL);
	store_out_u64(&res[1], &cnt, NULL);
	store_out_u64(&res[2], &wsum, NULL);
	if ((er = store_run(st, s, NULL, res)) == IDEM_OK) {
		while ((fe = store_fetch(st, s)) == IDEM_OK) {
			if (state < 3)
				g->rows[state] = cnt;
			if (state == 0)
				g->waiters = wsum;
		}
		if (fe != IDEM_ENOTFOUND)
			er = fe;
	}
	store_stmt_close(s);
	return er;
}

/* Expired rows, the oldest in progress, those past their lease, and the
 * last cleanup runs. */
static enum idem_err
gauges_times(struct store *st, struct admin_gauges *g)
{
	MYSQL_BIND	 res[3];
	double		 d;
	int64_t		 ok = 0;
	my_bool		 dnull;
	enum idem_err	 er;
	int		 found;

	store_out_u64(&res[0], &g->expired, NULL);
	store_out_dbl(&res[1], &d, &dnull);
	store_out_u64(&res[2], &g->past_lease, NULL);
	/* Expired: what cleanup may delete (its own condition), not rows
	 * past their expiry whose run may go on.  The (state, lease_until)
	 * index answers the third. */
	if ((er = one_row(st, "SELECT (SELECT COUNT(*) FROM idem_keys WHERE "
	    "expires_at < NOW(6) AND " ADMIN_GONE "), (SELECT "
	    "UNIX_TIMESTAMP(NOW(6)) - "
	    "UNIX_TIMESTAMP(MIN(created_at)) FROM idem_keys WHERE state = 0), "
	    "(SELECT COUNT(*) FROM idem_keys WHERE state = 0 AND "
	    "lease_until < NOW(6))", res, &found)) != IDEM_OK)
		return er;
	if (!found)
		return store_fail(st, IDEM_ESTORE, "no row");
	g->oldest_in_progress_s = dnull ? 0 : d;

	store_out_dbl(&res[0], &d, &dnull);
	store_out_i64(&res[1], &ok, NULL);
	if ((er = one_row(st, "SELECT UNIX_TIMESTAMP(ended_at), "
	    CLEANUP_SUCCEEDED " FROM idem_cleanup_runs WHERE dry_run = 0 AND"
	    " ended_at IS NOT NULL ORDER BY id DESC LIMIT 1", res, &found)) !=
	    IDEM_OK)
		return er;
	if (found && !dnull) {
		g->has_cleanup = 1;
		g->last_cleanup_end = d;
		g->last_cleanup_ok = ok == 1;
	}

	store_out_dbl(&res[0], &d, &dnull);
	if ((er = one_row(st, "SELECT UNIX_TIMESTAMP(MAX(ended_at)) FROM "
	    "idem_cleanup_runs WHERE " CLEANUP_SUCCEEDED, res,
	    &found)) != IDEM_OK)
		return er;
	if (found && !dnull) {
		g->has_cleanup_ok = 1;
		g->last_cleanup_ok_end = d;
	}
	return IDEM_OK;
}

enum idem_err
store_admin_gauges(struct store *st, struct admin_gauges *out)
{
	struct admin_gauges g;
	enum idem_err	 er;

	memset(&g, 0, sizeof(g));
	if ((er = gauges_rows(st, &g)) != IDEM_OK ||
	    (er = gauges_times(st, &g)) != IDEM_OK)
		return er;
	*out = g;
	return IDEM_OK;
}

/* --- privileges and helpers ---------------------------------------------- */

/* One statement of each kind on table t that touches no row; col is a
 * column of t, v a value for it. */
#define PROBE_SELECT(t, col)						\
	{ t, "SELECT", "SELECT " col " FROM " t " WHERE 1 = 0" }
#define PROBE_INSERT(t, col, v)						\
	{ t, "INSERT", "INSERT INTO " t " (" col ") SELECT " v		\
	  " FROM DUAL WHERE 1 = 0" }
#define PROBE_UPDATE(t, col)						\
	{ t, "UPDATE", "UPDATE " t " SET " col " = " col " WHERE 1 = 0" }
#define PROBE_DELETE(t)							\
	{ t, "DELETE", "DELETE FROM " t " WHERE 1 = 0" }
/* All four, the UPDATE on column upd. */
#define PROBE_ALL(t, col, v, upd)					\
	PROBE_SELECT(t, col), PROBE_INSERT(t, col, v),			\
	PROBE_UPDATE(t, upd), PROBE_DELETE(t)

static const struct {
	const char	*table;
	const char	*what;
	const char	*sql;
} probes[] = {
	PROBE_ALL("idem_keys", "id", "0", "waiters"),
	PROBE_ALL("idem_counters", "minute", "NOW()", "requests"),
	PROBE_ALL("idem_cleanup_runs", "id", "0", "reason"),
	PROBE_SELECT("idem_schema", "version"),
	PROBE_SELECT("idem_epoch", "n"),
	PROBE_ALL("idem_quota", "n", "0", "n"),
	/* Only cleanup writes it, and never deletes from it. */
	PROBE_SELECT("idem_counters_total", "route"),
	PROBE_INSERT("idem_counters_total", "route", "''"),
	PROBE_UPDATE("idem_counters_total", "requests"),
	PROBE_ALL("idem_locks", "name", "''", "until"),
	/* idemctl rekey's run records. */
	PROBE_SELECT("idem_rekey_runs", "id"),
	PROBE_INSERT("idem_rekey_runs", "id", "0"),
	PROBE_UPDATE("idem_rekey_runs", "reason"),
	/* The hashing key: made by the first keyed gateway or rekey,
	 * wrapped again by rekey (lib/ident/hkey.h). */
	PROBE_SELECT("idem_hash_key", "id"),
	PROBE_INSERT("idem_hash_key", "id", "0"),
	PROBE_UPDATE("idem_hash_key", "seal_kid"),
};

enum idem_err
store_admin_max_packet(struct store *st, uint64_t *bytes)
{
	MYSQL_BIND	 res[1];
	uint64_t	 v = 0;
	enum idem_err	 er;
	int		 found;

	store_out_u64(&res[0], &v, NULL);
	if ((er = one_row(st, "SELECT @@max_allowed_packet", res, &found)) !=
	    IDEM_OK)
		return er;
	if (!found)
		return store_fail(st, IDEM_ESTORE, "no row");
	*bytes = v;
	return IDEM_OK;
}

/* The transport fields of m, from the client library's view of st's
 * connection. */
static void
mode_transport(struct store *st, struct admin_mode *m)
{
	const char	*host = mysql_get_host_info(st->my);
	const char	*cipher = mysql_get_ssl_cipher(st->my);
	my_bool		 verify = 0;

	m->tcp = host != NULL && strstr(host, "TCP/IP") != NULL;
	snprintf(m->cipher, sizeof(m->cipher), "%s", cipher ? cipher : "");
	if (mysql_get_optionv(st->my, MYSQL_OPT_SSL_VERIFY_SERVER_CERT,
	    &verify) == 0)
		m->verified = verify != 0;
}

enum idem_err
store_admin_mode(struct store *st, struct admin_mode *m)
{
	MYSQL_BIND	 res[2];
	unsigned long	 len[2];
	my_bool		 nul[2];
	char		 size[16];
	enum idem_err	 er;
	int		 found;
	long long	 q = 0;

	memset(m, 0, sizeof(*m));
	if (store_need_conn(st) != IDEM_OK)
		return IDEM_ESTORE;
	snprintf(m->group, sizeof(m->group), "%s", st->group);
	mode_transport(st, m);
	if (!(m->galera = st->galera))
		return IDEM_OK;
	store_out_text(&res[0], size, sizeof(size), &len[0], &nul[0]);
	store_out_text(&res[1], m->state, sizeof(m->state), &len[1], &nul[1]);
	if ((er = one_row(st, "SELECT"
	    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
	    "  WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'),"
	    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
	    "  WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT')", res,
	    &found)) != IDEM_OK)
		return er;
	if (!found)
		return store_fail(st, IDEM_ESTORE, "no row");
	store_out_text_end(size, sizeof(size), len[0], nul[0]);
	store_out_text_end(m->state, sizeof(m->state), len[1], nul[1]);
	m->nodes = atoi(size);
	if ((er = store_query_int(st, "SELECT COUNT(*) FROM"
	    " information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND"
	    " TABLE_NAME = 'idem_quota' AND ENGINE = 'MEMORY'", &q)) !=
	    IDEM_OK)
		return er;
	m->quota_memory = q > 0;
	return IDEM_OK;
}

enum idem_err
store_admin_privileges(struct store *st, struct admin_priv *privs, size_t max,
    size_t *n)
{
	MYSQL_STMT	*s;
	size_t		 i, k = 0;

	if (store_need_conn(st) != IDEM_OK)
		return IDEM_ESTORE;
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]) && k < max; i++) {
		privs[k].table = probes[i].table;
		privs[k].what = probes[i].what;
		s = store_prepare(st, probes[i].sql);
		privs[k].ok = s != NULL;
		store_stmt_close(s);
		k++;
	}
	*n = k;
	return IDEM_OK;
}
