/* idemtop's SQL: read-only SELECTs over counters, keys and runs; forget. */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_admin.h"
#include "store_int.h"
#include "store_top.h"

#define Q_COLS		24
#define Q_COLCAP	512	/* widest: VARBINARY(255), VARCHAR(255) */

/* One prepared statement with every result column bound as text. */
struct q {
	MYSQL_STMT	*stmt;
	MYSQL_BIND	 res[Q_COLS];
	char		 buf[Q_COLS][Q_COLCAP];
	unsigned long	 len[Q_COLS];
	my_bool		 isnull[Q_COLS];
	my_bool		 trunc[Q_COLS];
	unsigned	 ncols;
};

static void
q_close(struct q *q)
{
	if (q == NULL)
		return;
	store_stmt_close(q->stmt);
	free(q);
}

/*
 * Prepares sql, binds nparams (at most 4) signed integers, executes and
 * binds the result columns as text.  NULL on failure (the store's error).
 */
static struct q *
q_run(struct store *st, const char *sql, const int64_t *params,
    size_t nparams)
{
	MYSQL_BIND	 pb[4];
	struct q	*q;
	unsigned	 i;

	if ((q = calloc(1, sizeof(*q))) == NULL) {
		store_fail(st, IDEM_ENOMEM, "out of memory");
		return NULL;
	}
	if ((q->stmt = store_prepare(st, sql)) == NULL)
		goto fail;
	q->ncols = mysql_stmt_field_count(q->stmt);
	if (q->ncols > Q_COLS) {
		store_fail(st, IDEM_EINVAL, "too many columns");
		goto fail;
	}
	for (i = 0; i < nparams && i < 4; i++)
		store_bind_i64(&pb[i], &params[i]);
	for (i = 0; i < q->ncols; i++) {
		store_out_text(&q->res[i], q->buf[i], Q_COLCAP, &q->len[i],
		    &q->isnull[i]);
		q->res[i].error = &q->trunc[i];
	}
	/* Buffered, so a slow screen never holds a server cursor. */
	if (store_run(st, q->stmt, nparams > 0 ? pb : NULL,
	    q->ncols > 0 ? q->res : NULL) != IDEM_OK)
		goto fail;
	return q;
fail:
	q_close(q);
	return NULL;
}

/* What q_next() found. */
enum q_step {
	Q_ROW,		/* a row, in q's buffers */
	Q_END,		/* no more rows */
	Q_FAILED,	/* the fetch failed (store_last_error) */
};

static enum q_step
q_next(struct store *st, struct q *q)
{
	unsigned	 i;
	enum idem_err	 er;

	if ((er = store_fetch(st, q->stmt)) != IDEM_OK)
		return er == IDEM_ENOTFOUND ? Q_END : Q_FAILED;
	/* Truncated only for columns wider than Q_COLCAP, which the schema
	 * does not have: clipped rather than failed. */
	for (i = 0; i < q->ncols; i++)
		store_out_text_end(q->buf[i], Q_COLCAP, q->len[i],
		    q->isnull[i]);
	return Q_ROW;
}

static int64_t
q_int(const struct q *q, unsigned i)
{
	return q->isnull[i] ? 0 : strtoll(q->buf[i], NULL, 10);
}

static uint64_t
q_u64(const struct q *q, unsigned i)
{
	return q->isnull[i] || q->buf[i][0] == '-' ? 0 :
	    strtoull(q->buf[i], NULL, 10);
}

/* Copies column i (bytes, NUL-terminated, clipped to cap - 1); length. */
static size_t
q_text(const struct q *q, unsigned i, char *out, size_t cap)
{
	size_t	 n = q->len[i];

	if (n > cap - 1)
		n = cap - 1;
	memcpy(out, q->buf[i], n);
	out[n] = '\0';
	return n;
}

static const char SQL_NOW[] =
    "SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";

static const char SQL_MINUTES[] =
    "SELECT UNIX_TIMESTAMP(minute), SUM(requests), SUM(created),"
    " SUM(reused), SUM(mismatched), SUM(conflicted), SUM(waited),"
    " SUM(released), SUM(store_errors), SUM(quota_rejected)"
    " FROM idem_counters WHERE minute >= FROM_UNIXTIME(?)"
    " GROUP BY minute";

static const char SQL_ROUTES[] =
    "SELECT route, SUM(requests), SUM(created), SUM(reused),"
    " SUM(mismatched), SUM(conflicted), SUM(waited), SUM(released),"
    " SUM(store_errors), SUM(quota_rejected)" STAT_WAIT_COLS
    " FROM idem_counters WHERE minute >= FROM_UNIXTIME(?)"
    " GROUP BY route ORDER BY SUM(requests) DESC, route LIMIT 500";

static const char SQL_INPROG[] =
    "SELECT COUNT(*), COALESCE(SUM(waiters), 0),"
    " COALESCE(MAX(TIMESTAMPDIFF(MICROSECOND, created_at, NOW(6))), 0) DIV 1000,"
    " COALESCE(SUM(lease_until < NOW(6)), 0)"
    " FROM idem_keys WHERE state = 0";

static const char SQL_KEYS[] =
    "SELECT id, idem_key, scope, route, owner,"
    " TIMESTAMPDIFF(MICROSECOND, created_at, NOW(6)) DIV 1000,"
    " TIMESTAMPDIFF(MICROSECOND, NOW(6), lease_until) DIV 1000, waiters"
    " FROM idem_keys WHERE state = 0 ORDER BY created_at, id LIMIT 1000";

/* A run not ended whose cleanup lock nobody holds was killed or cut off
 * (the next run marks it failed).  On Galera the lock is a row of
 * idem_locks the console may not read: such a run is taken at its word. */
#define RUN_GONE							\
    "(ended_at IS NULL AND IS_USED_LOCK(LEFT(CONCAT('" CLEANUP_LOCK_NAME	\
    "', ':', DATABASE()), 64)) IS NULL AND NOT COALESCE((SELECT"	\
    " VARIABLE_VALUE = 'ON' FROM information_schema.GLOBAL_VARIABLES"	\
    " WHERE VARIABLE_NAME = 'WSREP_ON'), 0))"

static const char SQL_RUNS[] =
    "SELECT id, host, UNIX_TIMESTAMP(started_at),"
    " IF((ended_at IS NULL AND outcome <> 'running') OR " RUN_GONE ", -1,"
    " TIMESTAMPDIFF(MICROSECOND, started_at, COALESCE(ended_at, NOW(6)))"
    " DIV 1000), ended_at IS NULL AND NOT " RUN_GONE ","
    " rows_deleted, stale_released, batches,"
    " IF(" RUN_GONE ", 'failed', outcome),"
    " IF(" RUN_GONE " AND reason = '', 'gone: no run holds the cleanup"
    " lock (killed?)', reason)"
    " FROM idem_cleanup_runs ORDER BY started_at DESC, id DESC LIMIT 100";

static const char SQL_LAST_OK[] =
    "SELECT COALESCE(FLOOR(UNIX_TIMESTAMP(MAX(COALESCE(ended_at,"
    " started_at)))), -1)"
    " FROM idem_cleanup_runs WHERE " CLEANUP_SUCCEEDED;


/* Runs a query that yields one row and stores its integer columns. */
static enum idem_err
one_row(struct store *st, const char *sql, int64_t *vals, unsigned nvals)
{
	struct q	*q;
	unsigned	 i;
	enum q_step	 step;

	if ((q = q_run(st, sql, NULL, 0)) == NULL)
		return IDEM_ESTORE;
	step = q_next(st, q);
	if (step == Q_ROW)
		for (i = 0; i < nvals && i < q->ncols; i++)
			vals[i] = q_int(q, i);
	q_close(q);
	if (step == Q_END)
		store_fail(st, IDEM_ESTORE, "no row");
	return step == Q_ROW ? IDEM_OK : IDEM_ESTORE;
}

static enum idem_err
fetch_clock(struct store *st, struct top_snap *s)
{
	return one_row(st, SQL_NOW, &s->now_ms, 1);
}

static enum idem_err
fetch_inprog(struct store *st, struct top_snap *s)
{
	int64_t		 v[4];
	enum idem_err	 er;

	if ((er = one_row(st, SQL_INPROG, v, 4)) != IDEM_OK)
		return er;
	s->inprog = v[0] < 0 ? 0 : (uint64_t)v[0];
	s->waiting = v[1] < 0 ? 0 : (uint64_t)v[1];
	s->oldest_ms = v[2];
	s->past_lease = v[3] < 0 ? 0 : (uint64_t)v[3];
	return IDEM_OK;
}

static enum idem_err
fetch_last_ok(struct store *st, struct top_snap *s)
{
	return one_row(st, SQL_LAST_OK, &s->last_ok, 1);
}

static enum idem_err
fetch_minutes(struct store *st, struct top_snap *s)
{
	struct q	*q;
	int64_t		 cur, from, ago;
	unsigned	 i;
	enum q_step	 step = Q_END;

	cur = s->now_ms / 1000 / 60 * 60;
	from = cur - (TOP_MINUTES - 1) * 60;
	if ((q = q_run(st, SQL_MINUTES, &from, 1)) == NULL)
		return IDEM_ESTORE;
	while ((step = q_next(st, q)) == Q_ROW) {
		ago = (cur - q_int(q, 0)) / 60;
		/* Rows stamped ahead of the database clock (a writer with a
		 * skewed clock) count as the current minute. */
		if (ago < 0)
			ago = 0;
		if (ago >= TOP_MINUTES)
			continue;
		for (i = 0; i < TOPC__COUNT; i++)
			s->per_min[ago].n[i] += q_u64(q, 1 + i);
	}
	q_close(q);
	return step == Q_END ? IDEM_OK : IDEM_ESTORE;
}

static enum idem_err
fetch_routes(struct store *st, struct top_snap *s)
{
	struct q	*q;
	struct top_route *r;
	int64_t		 from;
	unsigned	 i;
	enum q_step	 step = Q_END;

	from = s->now_ms / 1000 / 60 * 60 - (TOP_ROUTE_WINDOW_MIN - 1) * 60;
	if ((q = q_run(st, SQL_ROUTES, &from, 1)) == NULL)
		return IDEM_ESTORE;
	s->routes = calloc(TOP_MAX_ROUTES, sizeof(*s->routes));
	if (s->routes == NULL) {
		q_close(q);
		return store_fail(st, IDEM_ENOMEM, "out of memory");
	}
	while (s->nroutes < TOP_MAX_ROUTES &&
	    (step = q_next(st, q)) == Q_ROW) {
		r = &s->routes[s->nroutes++];
		q_text(q, 0, r->route, sizeof(r->route));
		for (i = 0; i < TOPC__COUNT; i++)
			r->c.n[i] = q_u64(q, 1 + i);
		r->wait_sum_ms = q_u64(q, 1 + TOPC__COUNT);
		for (i = 0; i < STAT_WAIT_BUCKETS; i++)
			r->wait_bucket[i] = q_u64(q, 2 + TOPC__COUNT + i);
	}
	if (s->nroutes == TOP_MAX_ROUTES)
		step = Q_END;
	q_close(q);
	return step == Q_END ? IDEM_OK : IDEM_ESTORE;
}

static enum idem_err
fetch_keys(struct store *st, struct top_snap *s)
{
	struct q	*q;
	struct top_key	*k;
	enum q_step	 step = Q_END;

	if ((q = q_run(st, SQL_KEYS, NULL, 0)) == NULL)
		return IDEM_ESTORE;
	s->keys = calloc(TOP_MAX_KEYS, sizeof(*s->keys));
	if (s->keys == NULL) {
		q_close(q);
		return store_fail(st, IDEM_ENOMEM, "out of memory");
	}
	while (s->nkeys < TOP_MAX_KEYS &&
	    (step = q_next(st, q)) == Q_ROW) {
		k = &s->keys[s->nkeys++];
		k->id = q_u64(q, 0);
		k->keylen = q_text(q, 1, k->key, sizeof(k->key));
		if (q->len[2] == FP_LEN)
			memcpy(k->scope, q->buf[2], FP_LEN);
		q_text(q, 3, k->route, sizeof(k->route));
		q_text(q, 4, k->owner, sizeof(k->owner));
		k->age_ms = q_int(q, 5);
		k->lease_left_ms = q_int(q, 6);
		k->waiters = q_u64(q, 7);
	}
	if (s->nkeys == TOP_MAX_KEYS)
		step = Q_END;
	q_close(q);
	return step == Q_END ? IDEM_OK : IDEM_ESTORE;
}

static enum idem_err
fetch_runs(struct store *st, struct top_snap *s)
{
	struct q	*q;
	struct top_run	*r;
	enum q_step	 step = Q_END;

	if ((q = q_run(st, SQL_RUNS, NULL, 0)) == NULL)
		return IDEM_ESTORE;
	s->runs = calloc(TOP_MAX_RUNS, sizeof(*s->runs));
	if (s->runs == NULL) {
		q_close(q);
		return store_fail(st, IDEM_ENOMEM, "out of memory");
	}
	while (s->nruns < TOP_MAX_RUNS &&
	    (step = q_next(st, q)) == Q_ROW) {
		r = &s->runs[s->nruns++];
		r->id = q_u64(q, 0);
		q_text(q, 1, r->host, sizeof(r->host));
		r->started = q_int(q, 2);
		r->duration_ms = q_int(q, 3);
		r->running = q_int(q, 4) != 0;
		r->rows_deleted = q_u64(q, 5);
		r->stale_released = q_u64(q, 6);
		r->batches = q_u64(q, 7);
		q_text(q, 8, r->outcome, sizeof(r->outcome));
		q_text(q, 9, r->reason, sizeof(r->reason));
	}
	if (s->nruns == TOP_MAX_RUNS)
		step = Q_END;
	q_close(q);
	return step == Q_END ? IDEM_OK : IDEM_ESTORE;
}

void
top_snap_init(struct top_snap *s)
{
	memset(s, 0, sizeof(*s));
	s->last_ok = -1;
}

void
top_snap_free(struct top_snap *s)
{
	if (s == NULL)
		return;
	free(s->keys);
	free(s->routes);
	free(s->runs);
	top_snap_init(s);
}

/* A snapshot's reads, in order, named for the operator's error line. */
static const struct {
	const char	*what;
	enum idem_err	(*fetch)(struct store *, struct top_snap *);
} top_steps[] = {
	{ "clock", fetch_clock },
	{ "counters", fetch_minutes },
	{ "in progress", fetch_inprog },
	{ "keys", fetch_keys },
	{ "routes", fetch_routes },
	{ "cleanup runs", fetch_runs },
	{ "last cleanup", fetch_last_ok },
};

/* Connects st if needed; on failure err says why. */
static enum idem_err
top_connect(struct store *st, char *err, size_t errlen)
{
	if (store_connect(st) == IDEM_OK)
		return IDEM_OK;
	snprintf(err, errlen, "connect: %s", store_last_error(st));
	return IDEM_ESTORE;
}

enum idem_err
store_top_fetch(struct store *st, struct top_snap *out, char *err,
    size_t errlen)
{
	struct top_snap	 s;
	enum idem_err	 er;
	size_t		 i;

	if ((er = top_connect(st, err, errlen)) != IDEM_OK)
		return er;
	top_snap_init(&s);
	for (i = 0; i < sizeof(top_steps) / sizeof(top_steps[0]); i++)
		if ((er = top_steps[i].fetch(st, &s)) != IDEM_OK) {
			snprintf(err, errlen, "%s: %s", top_steps[i].what,
			    store_last_error(st));
			top_snap_free(&s);
			return er;
		}
	top_snap_free(out);
	*out = s;
	return IDEM_OK;
}

enum idem_err
store_top_forget(struct store *st, uint64_t id, int *deleted, char *err,
    size_t errlen)
{
	enum idem_err	 er;

	if ((er = top_connect(st, err, errlen)) != IDEM_OK)
		return er;
	er = store_admin_forget_id(st, id, 1, deleted);
	if (er != IDEM_OK)
		snprintf(err, errlen, "forget: %s", store_last_error(st));
	return er;
}
