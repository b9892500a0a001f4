/* The store's operator queries: cleanup, key inspection, fleet counters. */
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
#include "store_admin.h"

static _Thread_local char sa_err[512];

const char *
store_admin_error(void)
{
	return sa_err;
}

static void
sa_seterr(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(sa_err, sizeof(sa_err), fmt, ap);
	va_end(ap);
}

static MYSQL *
sa_conn(struct store *st)
{
	MYSQL	*m = store_mysql(st);

	if (m == NULL)
		sa_seterr("not connected to the database");
	return m;
}

/* Prepares sql; NULL (with sa_err set) on failure. */
static MYSQL_STMT *
sa_prepare(MYSQL *m, const char *sql)
{
	MYSQL_STMT	*s;

	if ((s = mysql_stmt_init(m)) == NULL) {
		sa_seterr("out of memory");
		return NULL;
	}
	if (mysql_stmt_prepare(s, sql, strlen(sql)) != 0) {
		sa_seterr("%s", mysql_stmt_error(s));
		mysql_stmt_close(s);
		return NULL;
	}
	return s;
}

static void
sa_close(MYSQL_STMT *s)
{
	if (s != NULL)
		mysql_stmt_close(s);
}

/* Binds in (may be NULL), executes, binds out (may be NULL) and buffers
 * the result set. */
static enum idem_err
sa_run(MYSQL_STMT *s, MYSQL_BIND *in, MYSQL_BIND *out)
{
	if (in != NULL && mysql_stmt_bind_param(s, in) != 0)
		goto fail;
	if (mysql_stmt_execute(s) != 0)
		goto fail;
	if (out != NULL) {
		if (mysql_stmt_bind_result(s, out) != 0)
			goto fail;
		if (mysql_stmt_store_result(s) != 0)
			goto fail;
	}
	return IDEM_OK;
fail:
	sa_seterr("%s", mysql_stmt_error(s));
	return IDEM_ESTORE;
}

/* 0 row fetched, 1 no more rows, -1 error (sa_err set). */
static int
sa_fetch(MYSQL_STMT *s)
{
	int	 rc = mysql_stmt_fetch(s);

	if (rc == 0 || rc == MYSQL_DATA_TRUNCATED)
		return 0;	/* strings are cut to their buffers on purpose */
	if (rc == MYSQL_NO_DATA)
		return 1;
	sa_seterr("%s", mysql_stmt_error(s));
	return -1;
}

static void
bind_u64(MYSQL_BIND *b, uint64_t *v)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = v;
	b->is_unsigned = 1;
}

static void
bind_i64(MYSQL_BIND *b, int64_t *v)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = v;
}

static void
bind_dbl(MYSQL_BIND *b, double *v, my_bool *isnull)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_DOUBLE;
	b->buffer = v;
	b->is_null = isnull;
}

/* Input bytes (text or binary); *len must stay valid until execute. */
static void
bind_in(MYSQL_BIND *b, const void *p, unsigned long *len)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_BLOB;
	b->buffer = (void *)(uintptr_t)p;
	b->buffer_length = *len;
	b->length = len;
}

/* Output into a fixed buffer of cap bytes (one kept for the NUL). */
static void
bind_out(MYSQL_BIND *b, char *p, size_t cap, unsigned long *len,
    my_bool *isnull)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = p;
	b->buffer_length = cap - 1;
	b->length = len;
	b->is_null = isnull;
}

/* Terminates an output string fetched with bind_out(). */
static void
out_term(char *p, size_t cap, unsigned long len, my_bool isnull)
{
	if (isnull)
		len = 0;
	if (len > cap - 1)
		len = cap - 1;
	p[len] = '\0';
}

/* --- cleanup ------------------------------------------------------------ */

/* The counter columns, in stat_id order, then wait_sum_ms and buckets. */
#define COUNTER_COLS_PLAIN						\
	"requests, created, reused, mismatched, conflicted, waited, "	\
	"released, tombstoned, store_errors, missing_key, invalid_key, " \
	"passthrough, quota_rejected, wait_sum_ms, wait_b0, wait_b1, "	\
	"wait_b2, wait_b3, wait_b4, wait_b5, wait_b6, wait_b7, wait_b8, " \
	"wait_b9"

#define STAT_COLS							\
	"SUM(requests), SUM(created), SUM(reused), SUM(mismatched), "	\
	"SUM(conflicted), SUM(waited), SUM(released), SUM(tombstoned), " \
	"SUM(store_errors), SUM(missing_key), SUM(invalid_key), "	\
	"SUM(passthrough), SUM(quota_rejected), SUM(wait_sum_ms), "	\
	"SUM(wait_b0), SUM(wait_b1), " \
	"SUM(wait_b2), SUM(wait_b3), SUM(wait_b4), SUM(wait_b5), "	\
	"SUM(wait_b6), SUM(wait_b7), SUM(wait_b8), SUM(wait_b9)"

/*
 * The phases of a run.  Each DELETE takes its age in microseconds (or
 * seconds) and a LIMIT; the COUNT twin is the dry-run form with the same
 * condition.  ORDER BY follows an index so each batch reads only the rows
 * it deletes.
 */
struct phase {
	const char	*name;
	const char	*del;
	const char	*count;
	int		 use_age;	/* first parameter: an age in ms */
};

static const struct phase phases[] = {
	{ "expired",
	  "DELETE FROM idem_keys WHERE expires_at < NOW(6) AND "
	  "(state <> 0 OR lease_until < NOW(6)) ORDER BY expires_at LIMIT ?",
	  "SELECT COUNT(*) FROM idem_keys WHERE expires_at < NOW(6) AND "
	  "(state <> 0 OR lease_until < NOW(6))", 0 },
	{ "stale",
	  "DELETE FROM idem_keys WHERE state = 0 AND lease_until < "
	  "NOW(6) - INTERVAL ? * 1000 MICROSECOND ORDER BY lease_until LIMIT ?",
	  "SELECT COUNT(*) FROM idem_keys WHERE state = 0 AND lease_until < "
	  "NOW(6) - INTERVAL ? * 1000 MICROSECOND", 1 },
	{ "counters",
	  "DELETE FROM idem_counters WHERE minute < "
	  "NOW() - INTERVAL ? * 1000 MICROSECOND ORDER BY minute LIMIT ?",
	  "SELECT COUNT(*) FROM idem_counters WHERE minute < "
	  "NOW() - INTERVAL ? * 1000 MICROSECOND", 1 },
	{ "runs",
	  "DELETE FROM idem_cleanup_runs WHERE started_at < "
	  "NOW(6) - INTERVAL ? * 1000 MICROSECOND AND outcome <> 'running' "
	  "ORDER BY started_at LIMIT ?",
	  "SELECT COUNT(*) FROM idem_cleanup_runs WHERE started_at < "
	  "NOW(6) - INTERVAL ? * 1000 MICROSECOND AND outcome <> 'running'", 1 },
	/* new_keys_per_minute counts of minutes that are over */
	{ "quota",
	  "DELETE FROM idem_quota WHERE minute < UNIX_TIMESTAMP() DIV 60 - 1 "
	  "LIMIT ?",
	  "SELECT COUNT(*) FROM idem_quota WHERE minute < "
	  "UNIX_TIMESTAMP() DIV 60 - 1", 0 },
};

enum { PH_EXPIRED, PH_STALE, PH_COUNTERS, PH_RUNS, PH_QUOTA, PH__COUNT };

static int
run_retryable(MYSQL_STMT *s)
{
	unsigned	 e = mysql_stmt_errno(s);

	return e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT;
}

/* Counts what phase p would remove.  OUT: n. */
static enum idem_err
phase_count(MYSQL *m, int p, int64_t age_ms, uint64_t *n)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1], out[1];
	enum idem_err	 er;
	uint64_t	 v = 0;

	if ((s = sa_prepare(m, phases[p].count)) == NULL)
		return IDEM_ESTORE;
	bind_i64(&in[0], &age_ms);
	bind_u64(&out[0], &v);
	er = sa_run(s, phases[p].use_age ? in : NULL, out);
	if (er == IDEM_OK && sa_fetch(s) < 0)
		er = IDEM_ESTORE;
	if (er == IDEM_OK)
		*n = v;
	sa_close(s);
	return er;
}

/*
 * Deletes in batches until a batch removes fewer than o->batch rows or the
 * deadline (0: none) passes (IDEM_ETIMEOUT).  Adds to *n and *batches as it
 * goes.
 */
static enum idem_err
phase_delete(MYSQL *m, int p, int64_t age_ms, const struct cleanup_opts *o,
    int64_t deadline, uint64_t *n, unsigned *batches)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[2];
	enum idem_err	 er = IDEM_OK;
	int64_t		 limit = o->batch;
	int		 tries, k = 0;

	if ((s = sa_prepare(m, phases[p].del)) == NULL)
		return IDEM_ESTORE;
	if (phases[p].use_age)
		bind_i64(&in[k++], &age_ms);
	bind_i64(&in[k++], &limit);
	if (mysql_stmt_bind_param(s, in) != 0) {
		sa_seterr("%s", mysql_stmt_error(s));
		er = IDEM_ESTORE;
		goto out;
	}
	for (;;) {
		uint64_t	 got;

		if (deadline != 0 && clock_now_ms() >= deadline) {
			er = IDEM_ETIMEOUT;
			break;
		}
		/* A batch that lost a deadlock to the gateway is simply retried:
		 * autocommit means nothing of it was applied. */
		for (tries = 0;; tries++) {
			if (mysql_stmt_execute(s) == 0)
				break;
			if (tries < 3 && run_retryable(s)) {
				clock_sleep_ms(50);
				continue;
			}
			sa_seterr("%s", mysql_stmt_error(s));
			er = IDEM_ESTORE;
			goto out;
		}
		got = mysql_stmt_affected_rows(s);
		*n += got;
		if (got > 0 && (p == PH_EXPIRED || p == PH_STALE))
			(*batches)++;
		if (got < (uint64_t)o->batch)
			break;
		if (o->sleep_ms > 0) {
			int64_t	 ms = o->sleep_ms;

			if (deadline != 0 && clock_now_ms() + ms > deadline)
				ms = deadline - clock_now_ms();
			clock_sleep_ms(ms);
		}
	}
out:
	sa_close(s);
	return er;
}

/* Transaction control, which is not prepared. */
static enum idem_err
sa_query(MYSQL *m, const char *sql)
{
	if (mysql_query(m, sql) == 0)
		return IDEM_OK;
	sa_seterr("%s", mysql_error(m));
	return IDEM_ESTORE;
}

/* INSERT ... SELECT of the counter rows before @idem_cut into the
 * totals, adding to what is there. */
static char *
fold_sql(void)
{
	static const char *const cols[] = {
		"requests", "created", "reused", "mismatched", "conflicted",
		"waited", "released", "tombstoned", "store_errors",
		"missing_key", "invalid_key", "passthrough", "quota_rejected",
		"wait_sum_ms", "wait_b0", "wait_b1", "wait_b2", "wait_b3",
		"wait_b4", "wait_b5", "wait_b6", "wait_b7", "wait_b8", "wait_b9",
	};
	struct buf	 b;
	size_t		 i;
	enum idem_err	 er;

	buf_init(&b, 8192);
	er = buf_addstr(&b, "INSERT INTO idem_counters_total (host, route, "
	    COUNTER_COLS_PLAIN ") SELECT host, route, " STAT_COLS
	    " FROM idem_counters WHERE minute < @idem_cut GROUP BY host, route"
	    " ON DUPLICATE KEY UPDATE ");
	for (i = 0; er == IDEM_OK && i < sizeof(cols) / sizeof(cols[0]); i++)
		er = buf_printf(&b, "%s%s = %s + VALUES(%s)", i ? ", " : "",
		    cols[i], cols[i], cols[i]);
	if (er != IDEM_OK) {
		buf_free(&b);
		return NULL;
	}
	return b.p;
}

/*
 * The counters phase: rows past their retention are added to
 * idem_counters_total and deleted in one transaction, so the totals that
 * metrics report (retained rows + totals) never go down.  OUT: *n rows.
 */
static enum idem_err
counters_fold(MYSQL *m, int64_t age_ms, uint64_t *n)
{
	MYSQL_STMT	*s = NULL;
	MYSQL_BIND	 in[1];
	char		*sql = NULL;
	enum idem_err	 er;

	if ((er = sa_query(m, "START TRANSACTION")) != IDEM_OK)
		return er;
	bind_i64(&in[0], &age_ms);
	if ((s = sa_prepare(m, "SET @idem_cut = NOW() - INTERVAL ? * 1000 "
	    "MICROSECOND")) == NULL || (er = sa_run(s, in, NULL)) != IDEM_OK)
		goto fail;
	sa_close(s);
	s = NULL;
	if ((sql = fold_sql()) == NULL) {
		sa_seterr("out of memory");
		goto fail;
	}
	if ((er = sa_query(m, sql)) != IDEM_OK)
		goto fail;
	if ((s = sa_prepare(m, "DELETE FROM idem_counters WHERE minute < "
	    "@idem_cut")) == NULL || (er = sa_run(s, NULL, NULL)) != IDEM_OK)
		goto fail;
	*n += mysql_stmt_affected_rows(s);
	sa_close(s);
	free(sql);
	return sa_query(m, "COMMIT");
fail:
	sa_close(s);
	free(sql);
	/* A failed ROLLBACK must not hide why. */
	(void)mysql_query(m, "ROLLBACK");
	return IDEM_ESTORE;
}

/* Runs a statement without data (lock handling, bookkeeping). */
static enum idem_err
sa_simple(MYSQL *m, const char *sql)
{
	MYSQL_STMT	*s;
	enum idem_err	 er;

	if ((s = sa_prepare(m, sql)) == NULL)
		return IDEM_ESTORE;
	er = sa_run(s, NULL, NULL);
	sa_close(s);
	return er;
}

/* GET_LOCK(name, 0): 1 taken, 0 held elsewhere, -1 error. */
static int
cleanup_lock(MYSQL *m)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1], out[1];
	unsigned long	 len = strlen(CLEANUP_LOCK_NAME);
	int64_t		 v = 0;
	my_bool		 isnull = 0;
	int		 rc = -1;

	if ((s = sa_prepare(m, "SELECT GET_LOCK(?, 0)")) == NULL)
		return -1;
	bind_in(&in[0], CLEANUP_LOCK_NAME, &len);
	bind_i64(&out[0], &v);
	out[0].is_null = &isnull;
	if (sa_run(s, in, out) == IDEM_OK && sa_fetch(s) == 0)
		rc = (!isnull && v == 1) ? 1 : 0;
	sa_close(s);
	return rc;
}

static void
cleanup_unlock(MYSQL *m)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1];
	unsigned long	 len = strlen(CLEANUP_LOCK_NAME);

	if ((s = sa_prepare(m, "DO RELEASE_LOCK(?)")) == NULL)
		return;
	bind_in(&in[0], CLEANUP_LOCK_NAME, &len);
	(void)sa_run(s, in, NULL);
	sa_close(s);
}

static enum idem_err
run_start(MYSQL *m, const struct cleanup_opts *o, uint64_t *id)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[2];
	unsigned long	 hlen = strlen(o->host);
	int64_t		 dry = o->dry_run ? 1 : 0;
	enum idem_err	 er;

	/* We hold the lock, so any run still 'running' died on its way. */
	er = sa_simple(m, "UPDATE idem_cleanup_runs SET outcome = 'failed', "
	    "reason = 'interrupted (process died or lost its connection)' "
	    "WHERE outcome = 'running'");
	if (er != IDEM_OK)
		return er;
	if ((s = sa_prepare(m, "INSERT INTO idem_cleanup_runs (host, "
	    "started_at, dry_run, outcome) VALUES (?, NOW(6), ?, 'running')"))
	    == NULL)
		return IDEM_ESTORE;
	bind_in(&in[0], o->host, &hlen);
	bind_i64(&in[1], &dry);
	er = sa_run(s, in, NULL);
	if (er == IDEM_OK)
		*id = mysql_stmt_insert_id(s);
	sa_close(s);
	return er;
}

static enum idem_err
run_finish(MYSQL *m, const struct cleanup_result *r)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[7];
	uint64_t	 v[4], id = r->run_id;
	uint64_t	 batches = r->batches;
	unsigned long	 olen = strlen(r->outcome), rlen = strlen(r->reason);
	enum idem_err	 er;

	if ((s = sa_prepare(m, "UPDATE idem_cleanup_runs SET ended_at = NOW(6), "
	    "rows_deleted = ?, stale_released = ?, counters_pruned = ?, "
	    "batches = ?, outcome = ?, reason = ? WHERE id = ?")) == NULL)
		return IDEM_ESTORE;
	v[0] = r->rows_deleted;
	v[1] = r->stale_released;
	v[2] = r->counters_pruned;
	v[3] = batches;
	bind_u64(&in[0], &v[0]);
	bind_u64(&in[1], &v[1]);
	bind_u64(&in[2], &v[2]);
	bind_u64(&in[3], &v[3]);
	bind_in(&in[4], r->outcome, &olen);
	bind_in(&in[5], r->reason, &rlen);
	bind_u64(&in[6], &id);
	er = sa_run(s, in, NULL);
	sa_close(s);
	return er;
}

enum idem_err
store_admin_cleanup(struct store *st, const struct cleanup_opts *o,
    struct cleanup_result *out)
{
	MYSQL		*m;
	enum idem_err	 er;
	int64_t		 start = clock_now_ms(), deadline = 0;
	int64_t		 ages[PH__COUNT];
	uint64_t	*dst[PH__COUNT], quota_pruned = 0;
	int		 p, locked;

	memset(out, 0, sizeof(*out));
	snprintf(out->outcome, sizeof(out->outcome), "failed");
	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	if (o->batch < 1) {
		sa_seterr("batch size must be at least 1");
		return IDEM_EINVAL;
	}
	if ((locked = cleanup_lock(m)) < 0)
		return IDEM_ESTORE;
	if (locked == 0) {
		sa_seterr("cleanup already running on another connection");
		return IDEM_EBUSY;
	}
	if ((er = run_start(m, o, &out->run_id)) != IDEM_OK)
		goto unlock;
	if (o->max_ms > 0)
		deadline = start + o->max_ms;

	ages[PH_EXPIRED] = 0;
	ages[PH_STALE] = o->stale_after_ms;
	ages[PH_COUNTERS] = o->counters_retention_ms;
	ages[PH_RUNS] = o->runs_retention_ms;
	ages[PH_QUOTA] = 0;
	dst[PH_EXPIRED] = &out->rows_deleted;
	dst[PH_STALE] = &out->stale_released;
	dst[PH_COUNTERS] = &out->counters_pruned;
	dst[PH_RUNS] = &out->runs_pruned;
	dst[PH_QUOTA] = &quota_pruned;
	for (p = 0; p < PH__COUNT; p++) {
		if (o->dry_run)
			er = phase_count(m, p, ages[p], dst[p]);
		else if (p == PH_COUNTERS)
			er = counters_fold(m, ages[p], dst[p]);
		else
			er = phase_delete(m, p, ages[p], o, deadline, dst[p],
			    &out->batches);
		if (er != IDEM_OK)
			break;
	}

	if (er == IDEM_OK)
		snprintf(out->outcome, sizeof(out->outcome), "%s",
		    o->dry_run ? "dry-run" : "ok");
	else if (er == IDEM_ETIMEOUT) {
		snprintf(out->outcome, sizeof(out->outcome), "partial");
		snprintf(out->reason, sizeof(out->reason),
		    "time limit of %lld ms reached during %s rows",
		    (long long)o->max_ms, phases[p].name);
		sa_seterr("%s", out->reason);
	} else
		snprintf(out->reason, sizeof(out->reason), "%s rows: %.200s",
		    phases[p].name, sa_err);
	out->elapsed_ms = clock_now_ms() - start;
	/* Keep the first error's text if recording the end fails too. */
	{
		char	 saved[sizeof(sa_err)];

		memcpy(saved, sa_err, sizeof(saved));
		if (run_finish(m, out) != IDEM_OK && er == IDEM_OK)
			er = IDEM_ESTORE;
		else
			memcpy(sa_err, saved, sizeof(saved));
	}
unlock:
	cleanup_unlock(m);
	return er;
}

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

enum idem_err
store_admin_key_get(struct store *st, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, struct admin_key *out, struct buf *body)
{
	MYSQL		*m;
	MYSQL_STMT	*s = NULL;
	MYSQL_BIND	 in[2], res[15];
	unsigned long	 slen = FP_LEN, klen = keylen;
	unsigned long	 rlen, mlen, olen, flen, blen = 0;
	my_bool		 rnull, mnull, onull, fnull, cnull, stnull, sznull;
	my_bool		 tnull[3];
	struct admin_key k;
	uint64_t	 state = 0, live = 0, status = 0;
	char		 fpbuf[FP_LEN + 1];
	enum idem_err	 er;
	int		 rc;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	memset(&k, 0, sizeof(k));
	if ((s = sa_prepare(m, "SELECT id, state, route, method, owner, "
	    "fingerprint, waiters, UNIX_TIMESTAMP(created_at), "
	    "UNIX_TIMESTAMP(expires_at), UNIX_TIMESTAMP(lease_until), "
	    "UNIX_TIMESTAMP(completed_at), resp_status, resp_size, "
	    "UNIX_TIMESTAMP(NOW(6)), "
	    "(state = 0 AND lease_until >= NOW(6)) + 2 * (expires_at < NOW(6)) "
	    "FROM idem_keys WHERE scope = ? AND idem_key = ?"))
	    == NULL)
		return IDEM_ESTORE;
	bind_in(&in[0], scope, &slen);
	bind_in(&in[1], key, &klen);
	bind_u64(&res[0], &k.id);
	bind_u64(&res[1], &state);
	bind_out(&res[2], k.route, sizeof(k.route), &rlen, &rnull);
	bind_out(&res[3], k.method, sizeof(k.method), &mlen, &mnull);
	bind_out(&res[4], k.owner, sizeof(k.owner), &olen, &onull);
	bind_out(&res[5], fpbuf, sizeof(fpbuf), &flen, &fnull);
	res[5].buffer_type = MYSQL_TYPE_BLOB;
	bind_u64(&res[6], &k.waiters);
	bind_dbl(&res[7], &k.created_at, &tnull[0]);
	bind_dbl(&res[8], &k.expires_at, &tnull[1]);
	bind_dbl(&res[9], &k.lease_until, &tnull[2]);
	bind_dbl(&res[10], &k.completed_at, &cnull);
	bind_u64(&res[11], &status);
	res[11].is_null = &stnull;
	bind_u64(&res[12], &k.resp_size);
	res[12].is_null = &sznull;
	bind_dbl(&res[13], &k.now, NULL);
	bind_u64(&res[14], &live);
	if ((er = sa_run(s, in, res)) != IDEM_OK)
		goto out;
	if ((rc = sa_fetch(s)) < 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	if (rc == 1) {
		sa_seterr("no such key");
		er = IDEM_ENOTFOUND;
		goto out;
	}
	out_term(k.route, sizeof(k.route), rlen, rnull);
	out_term(k.method, sizeof(k.method), mlen, mnull);
	out_term(k.owner, sizeof(k.owner), olen, onull);
	if (!fnull && flen >= FP_LEN)
		memcpy(k.fp, fpbuf, FP_LEN);
	if (cnull)
		k.completed_at = 0;
	k.raw_state = (int)state;
	k.lease_live = (live & 1) != 0;
	k.has_resp = !stnull;
	k.resp_status = stnull ? 0 : (int)status;
	if (sznull)
		k.resp_size = 0;
	if (live & 2)
		k.state = AKEY_EXPIRED;
	else if (state == 0)
		k.state = AKEY_IN_PROGRESS;
	else if (state == 1)
		k.state = AKEY_COMPLETED;
	else
		k.state = AKEY_TOMBSTONE;
	sa_close(s);
	s = NULL;

	if (body != NULL) {
		MYSQL_BIND	 b[1];
		my_bool		 bnull = 0;
		char		 dummy[1];

		/* Fetch the length first, then the bytes into a buffer sized
		 * for them (bounded by body->max). */
		if ((s = sa_prepare(m, "SELECT resp_body FROM idem_keys WHERE "
		    "id = ?")) == NULL) {
			er = IDEM_ESTORE;
			goto out;
		}
		memset(b, 0, sizeof(b));
		b[0].buffer_type = MYSQL_TYPE_BLOB;
		b[0].buffer = dummy;
		b[0].buffer_length = 0;
		b[0].length = &blen;
		b[0].is_null = &bnull;
		bind_u64(&in[0], &k.id);
		if ((er = sa_run(s, in, b)) != IDEM_OK)
			goto out;
		if ((rc = sa_fetch(s)) != 0) {
			if (rc == 1) {
				sa_seterr("no such key");
				er = IDEM_ENOTFOUND;
			} else
				er = IDEM_ESTORE;
			goto out;
		}
		if (!bnull && blen > 0) {
			char	*tmp;

			if (blen > body->max - body->len) {
				sa_seterr("stored body too large (%lu bytes)",
				    blen);
				er = IDEM_ETOOBIG;
				goto out;
			}
			if ((tmp = malloc(blen)) == NULL) {
				er = IDEM_ENOMEM;
				goto out;
			}
			b[0].buffer = tmp;
			b[0].buffer_length = blen;
			if (mysql_stmt_fetch_column(s, &b[0], 0, 0) != 0) {
				sa_seterr("%s", mysql_stmt_error(s));
				free(tmp);
				er = IDEM_ESTORE;
				goto out;
			}
			er = buf_add(body, tmp, blen);
			free(tmp);
			if (er != IDEM_OK)
				goto out;
		}
	}
	*out = k;
	er = IDEM_OK;
out:
	sa_close(s);
	return er;
}

/*
 * The one forget rule, for idemctl and idemtop alike: a row in progress
 * goes only with force (its owner may still be running it); and the call
 * returns only once no gateway may replay the answer from memory
 * (lib/rcache.h).  sql deletes by the binds in; OUT: *n rows deleted.
 */
static enum idem_err
forget_rows(struct store *st, const char *sql, MYSQL_BIND *in, uint64_t *n)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	enum idem_err	 er;

	*n = 0;
	if ((m = sa_conn(st)) == NULL || (s = sa_prepare(m, sql)) == NULL)
		return IDEM_ESTORE;
	er = sa_run(s, in, NULL);
	if (er == IDEM_OK)
		*n = mysql_stmt_affected_rows(s);
	sa_close(s);
	/* A no-op under autocommit; makes the delete stick if it is off. */
	if (er == IDEM_OK)
		mysql_commit(m);
	if (er == IDEM_OK && *n > 0)
		clock_sleep_ms(RCACHE_FORGET_WAIT_MS);
	return er;
}

/* In progress and not expired: only with force. */
#define FORGET_UNLESS_LIVE \
	" AND (? = 1 OR state <> 0 OR expires_at < NOW(6))"

enum idem_err
store_admin_key_forget(struct store *st, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, int force)
{
	MYSQL_BIND	 in[3];
	unsigned long	 slen = FP_LEN, klen = keylen;
	int64_t		 f = force ? 1 : 0;
	struct admin_key k;
	enum idem_err	 er;
	uint64_t	 n;

	bind_in(&in[0], scope, &slen);
	bind_in(&in[1], key, &klen);
	bind_i64(&in[2], &f);
	er = forget_rows(st, "DELETE FROM idem_keys WHERE scope = ? AND"
	    " idem_key = ?" FORGET_UNLESS_LIVE, in, &n);
	if (er != IDEM_OK || n > 0)
		return er;
	/* Nothing deleted: tell a missing key from a busy one. */
	if ((er = store_admin_key_get(st, scope, key, keylen, &k, NULL)) !=
	    IDEM_OK)
		return er;
	sa_seterr("key is in progress (owner %s)", k.owner);
	return IDEM_EBUSY;
}

enum idem_err
store_admin_forget_id(struct store *st, uint64_t id, int force,
    int *deleted)
{
	MYSQL_BIND	 in[2];
	int64_t		 f = force ? 1 : 0;
	enum idem_err	 er;
	uint64_t	 n, rid = id;

	bind_u64(&in[0], &rid);
	bind_i64(&in[1], &f);
	er = forget_rows(st, "DELETE FROM idem_keys WHERE id = ?"
	    FORGET_UNLESS_LIVE, in, &n);
	*deleted = n > 0;
	return er;
}

/* --- counters and gauges ------------------------------------------------- */


enum idem_err
store_admin_stats(struct store *st, int64_t since_s, const char *route,
    struct admin_stat **rows, size_t *nrows)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[3], res[1 + STAT__COUNT + 1 + STAT_WAIT_BUCKETS];
	struct admin_stat cur, *v = NULL, *nv;
	size_t		 n = 0, cap = 0;
	unsigned long	 rlen, qlen = route ? strlen(route) : 0;
	my_bool		 rnull, qnull = route == NULL;
	int64_t		 since = since_s;
	enum idem_err	 er;
	int		 i, k, rc;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	if (STAT__COUNT != 13) {
		sa_seterr("counter list changed; rebuild idemctl");
		return IDEM_EINVAL;
	}
	/* minute >= the start of the minute since_s seconds ago; all time
	 * (since_s 0) adds what cleanup folded into idem_counters_total. */
	if ((s = sa_prepare(m, "SELECT route, " STAT_COLS " FROM ("
	    "SELECT route, " COUNTER_COLS_PLAIN " FROM idem_counters "
	    "WHERE (? = 0 OR minute >= NOW() - INTERVAL ? SECOND - "
	    "INTERVAL SECOND(NOW()) SECOND) AND (? IS NULL OR route = ?) "
	    "UNION ALL SELECT route, " COUNTER_COLS_PLAIN
	    " FROM idem_counters_total WHERE ? = 0 AND (? IS NULL OR "
	    "route = ?)) x GROUP BY route ORDER BY route")) == NULL)
		return IDEM_ESTORE;
	bind_i64(&in[0], &since);
	bind_i64(&in[1], &since);
	bind_in(&in[2], route ? route : "", &qlen);
	in[2].is_null = &qnull;
	/* The same values again; MySQL numbers each placeholder. */
	{
		MYSQL_BIND	 all[7];

		all[0] = in[0];
		all[1] = in[1];
		all[2] = in[2];
		all[3] = in[2];
		all[4] = in[0];
		all[5] = in[2];
		all[6] = in[2];
		bind_out(&res[0], cur.route, sizeof(cur.route), &rlen, &rnull);
		k = 1;
		for (i = 0; i < STAT__COUNT; i++)
			bind_u64(&res[k++], &cur.n[i]);
		bind_u64(&res[k++], &cur.wait_sum_ms);
		for (i = 0; i < STAT_WAIT_BUCKETS; i++)
			bind_u64(&res[k++], &cur.wait_bucket[i]);
		er = sa_run(s, all, res);
	}
	if (er != IDEM_OK)
		goto out;
	for (;;) {
		memset(&cur, 0, sizeof(cur));
		if ((rc = sa_fetch(s)) < 0) {
			er = IDEM_ESTORE;
			goto out;
		}
		if (rc == 1)
			break;
		out_term(cur.route, sizeof(cur.route), rlen, rnull);
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL) {
				er = IDEM_ENOMEM;
				goto out;
			}
			v = nv;
		}
		v[n++] = cur;
	}
	*rows = v;
	*nrows = n;
	v = NULL;
out:
	free(v);
	sa_close(s);
	return er;
}

enum idem_err
store_admin_gauges(struct store *st, struct admin_gauges *out)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[4];
	struct admin_gauges g;
	uint64_t	 state, cnt, wsum;
	double		 d1, d2;
	my_bool		 n1, n2;
	char		 oc[17];
	unsigned long	 oclen;
	my_bool		 ocnull;
	enum idem_err	 er;
	int		 rc;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	memset(&g, 0, sizeof(g));

	/* The (state, lease_until) index answers this without the rows. */
	if ((s = sa_prepare(m, "SELECT state, COUNT(*), COALESCE(SUM(waiters), 0) "
	    "FROM idem_keys GROUP BY state")) == NULL)
		return IDEM_ESTORE;
	bind_u64(&res[0], &state);
	bind_u64(&res[1], &cnt);
	bind_u64(&res[2], &wsum);
	if ((er = sa_run(s, NULL, res)) != IDEM_OK)
		goto out;
	while ((rc = sa_fetch(s)) == 0) {
		if (state < 3)
			g.rows[state] = cnt;
		if (state == 0)
			g.waiters = wsum;
	}
	if (rc < 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	sa_close(s);

	if ((s = sa_prepare(m, "SELECT (SELECT COUNT(*) FROM idem_keys WHERE "
	    "expires_at < NOW(6)), (SELECT UNIX_TIMESTAMP(NOW(6)) - "
	    "UNIX_TIMESTAMP(MIN(created_at)) FROM idem_keys WHERE state = 0)"))
	    == NULL)
		return IDEM_ESTORE;
	bind_u64(&res[0], &g.expired);
	bind_dbl(&res[1], &d1, &n1);
	if ((er = sa_run(s, NULL, res)) != IDEM_OK)
		goto out;
	if (sa_fetch(s) != 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	g.oldest_in_progress_s = n1 ? 0 : d1;
	sa_close(s);

	if ((s = sa_prepare(m, "SELECT UNIX_TIMESTAMP(ended_at), outcome FROM "
	    "idem_cleanup_runs WHERE dry_run = 0 AND ended_at IS NOT NULL "
	    "ORDER BY id DESC LIMIT 1")) == NULL)
		return IDEM_ESTORE;
	bind_dbl(&res[0], &d2, &n2);
	bind_out(&res[1], oc, sizeof(oc), &oclen, &ocnull);
	if ((er = sa_run(s, NULL, res)) != IDEM_OK)
		goto out;
	if ((rc = sa_fetch(s)) < 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	if (rc == 0 && !n2) {
		out_term(oc, sizeof(oc), oclen, ocnull);
		g.has_cleanup = 1;
		g.last_cleanup_end = d2;
		g.last_cleanup_ok = strcmp(oc, "ok") == 0;
	}
	sa_close(s);

	if ((s = sa_prepare(m, "SELECT UNIX_TIMESTAMP(MAX(ended_at)) FROM "
	    "idem_cleanup_runs WHERE dry_run = 0 AND outcome = 'ok'")) == NULL)
		return IDEM_ESTORE;
	bind_dbl(&res[0], &d2, &n2);
	if ((er = sa_run(s, NULL, res)) != IDEM_OK)
		goto out;
	if ((rc = sa_fetch(s)) < 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	if (rc == 0 && !n2) {
		g.has_cleanup_ok = 1;
		g.last_cleanup_ok_end = d2;
	}
	*out = g;
out:
	sa_close(s);
	return er;
}

/* --- privileges and helpers ---------------------------------------------- */

static const struct {
	const char	*table;
	const char	*what;
	const char	*sql;
} probes[] = {
	{ "idem_keys", "SELECT", "SELECT id FROM idem_keys WHERE 1 = 0" },
	{ "idem_keys", "INSERT", "INSERT INTO idem_keys (id) SELECT 0 FROM DUAL WHERE 1 = 0" },
	{ "idem_keys", "UPDATE", "UPDATE idem_keys SET waiters = waiters WHERE 1 = 0" },
	{ "idem_keys", "DELETE", "DELETE FROM idem_keys WHERE 1 = 0" },
	{ "idem_counters", "SELECT", "SELECT minute FROM idem_counters WHERE 1 = 0" },
	{ "idem_counters", "INSERT", "INSERT INTO idem_counters (minute) SELECT NOW() FROM DUAL WHERE 1 = 0" },
	{ "idem_counters", "UPDATE", "UPDATE idem_counters SET requests = requests WHERE 1 = 0" },
	{ "idem_counters", "DELETE", "DELETE FROM idem_counters WHERE 1 = 0" },
	{ "idem_cleanup_runs", "SELECT", "SELECT id FROM idem_cleanup_runs WHERE 1 = 0" },
	{ "idem_cleanup_runs", "INSERT", "INSERT INTO idem_cleanup_runs (id) SELECT 0 FROM DUAL WHERE 1 = 0" },
	{ "idem_cleanup_runs", "UPDATE", "UPDATE idem_cleanup_runs SET reason = reason WHERE 1 = 0" },
	{ "idem_cleanup_runs", "DELETE", "DELETE FROM idem_cleanup_runs WHERE 1 = 0" },
	{ "idem_schema", "SELECT", "SELECT version FROM idem_schema WHERE 1 = 0" },
	{ "idem_epoch", "SELECT", "SELECT n FROM idem_epoch WHERE 1 = 0" },
	{ "idem_quota", "SELECT", "SELECT n FROM idem_quota WHERE 1 = 0" },
	{ "idem_quota", "INSERT", "INSERT INTO idem_quota (n) SELECT 0 FROM DUAL WHERE 1 = 0" },
	{ "idem_quota", "UPDATE", "UPDATE idem_quota SET n = n WHERE 1 = 0" },
	{ "idem_quota", "DELETE", "DELETE FROM idem_quota WHERE 1 = 0" },
	{ "idem_counters_total", "SELECT", "SELECT route FROM idem_counters_total WHERE 1 = 0" },
	{ "idem_counters_total", "INSERT", "INSERT INTO idem_counters_total (route) SELECT '' FROM DUAL WHERE 1 = 0" },
	{ "idem_counters_total", "UPDATE", "UPDATE idem_counters_total SET requests = requests WHERE 1 = 0" },
};

enum idem_err
store_admin_max_packet(struct store *st, uint64_t *bytes)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[1];
	uint64_t	 v = 0;
	enum idem_err	 er;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	if ((s = sa_prepare(m, "SELECT @@max_allowed_packet")) == NULL)
		return IDEM_ESTORE;
	bind_u64(&res[0], &v);
	if ((er = sa_run(s, NULL, res)) == IDEM_OK) {
		if (sa_fetch(s) == 0)
			*bytes = v;
		else
			er = IDEM_ESTORE;
	}
	sa_close(s);
	return er;
}

enum idem_err
store_admin_privileges(struct store *st, struct admin_priv *privs, size_t max,
    size_t *n)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	size_t		 i, k = 0;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]) && k < max; i++) {
		privs[k].table = probes[i].table;
		privs[k].what = probes[i].what;
		s = sa_prepare(m, probes[i].sql);
		privs[k].ok = s != NULL;
		sa_close(s);
		k++;
	}
	*n = k;
	return IDEM_OK;
}

int64_t
admin_wait_percentile(const uint64_t bucket[STAT_WAIT_BUCKETS], double p)
{
	uint64_t	 total = 0, want, cum = 0;
	int		 i;

	for (i = 0; i < STAT_WAIT_BUCKETS; i++)
		total += bucket[i];
	if (total == 0)
		return -2;
	/* The smallest bucket whose cumulative count reaches p * total. */
	want = (uint64_t)(p * (double)total);
	if ((double)want < p * (double)total)
		want++;
	if (want == 0)
		want = 1;
	for (i = 0; i < STAT_WAIT_BUCKETS - 1; i++) {
		cum += bucket[i];
		if (cum >= want)
			return stat_wait_le_ms[i];
	}
	return -1;
}
