/* idemctl cleanup's SQL: expired and stale keys in batches, counters folded into totals, old runs and quota counts. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "clock.h"
#include "rcache.h"
#include "store_admin.h"
#include "store_int.h"
#include "store_sa.h"

/* --- cleanup ------------------------------------------------------------ */


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

struct hold;
static void hold_keep(struct hold *h);

#define STR_(x)	#x
#define STR(x)	STR_(x)

/*
 * Deletes in batches until a batch removes fewer than o->batch rows or the
 * deadline (0: none) passes (IDEM_ETIMEOUT).  Adds to *n and *batches as it
 * goes.
 */
static enum idem_err
phase_delete(MYSQL *m, int p, int64_t age_ms, const struct cleanup_opts *o,
    struct hold *h, int64_t deadline, uint64_t *n, unsigned *batches)
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
		hold_keep(h);
		if (o->pause != NULL) {
			char	 why[sizeof(sa_err)] = "";

			if ((er = o->pause(o->pause_arg, deadline, why,
			    sizeof(why))) == IDEM_ETIMEOUT)
				break;
			if (er != IDEM_OK) {
				sa_seterr("%s", why);
				goto out;
			}
		}
		/* A batch that lost a deadlock to the gateway is simply retried:
		 * autocommit means nothing of it was applied. */
		for (tries = 0;; tries++) {
			if (mysql_stmt_execute(s) == 0)
				break;
			if (tries < 3 &&
			    store_lost_to_other(mysql_stmt_errno(s))) {
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
	if ((sql = store_counters_fold_sql()) == NULL) {
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


/*
 * What keeps two cleanup runs apart: on one server the named lock
 * CLEANUP_LOCK_NAME on this connection; on Galera, where a named lock is
 * local to its node, the idem_locks row of that name (sql/005), held until
 * its 'until' and renewed as the run goes.
 */
struct hold {
	MYSQL		*m;
	int		 row;		/* Galera: the lock row */
	char		 owner[160];
	int64_t		 renewed_ms;	/* clock_now_ms() of the last renewal */
};

/* A lock row outlives a run that died by at most this. */
#define HOLD_TTL_S	120
#define HOLD_RENEW_MS	10000

/* Runs sql with the lock's name and, unless NULL, owner as string
 * parameters (in that order); *v gets the one integer it returns, if
 * any.  -1 on error, with errno-like *err set to the server's. */
static int
hold_sql(struct hold *h, const char *sql, const char *p1, const char *p2,
    int64_t *v, unsigned *err)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[2], out[1];
	unsigned long	 l1 = strlen(p1), l2 = p2 != NULL ? strlen(p2) : 0;
	my_bool		 isnull = 0;
	int		 rc = -1;

	*err = 0;
	if ((s = sa_prepare(h->m, sql)) == NULL) {
		*err = mysql_errno(h->m);
		return -1;
	}
	bind_in(&in[0], p1, &l1);
	if (p2 != NULL)
		bind_in(&in[1], p2, &l2);
	if (v != NULL) {
		*v = 0;
		bind_i64(&out[0], v);
		out[0].is_null = &isnull;
	}
	if (sa_run(s, in, v != NULL ? out : NULL) == IDEM_OK &&
	    (v == NULL || sa_fetch(s) == 0))
		rc = 0;
	else
		*err = mysql_stmt_errno(s);
	if (v != NULL && isnull)
		*v = -1;
	sa_close(s);
	return rc;
}

/* 1 taken, 0 held elsewhere, -1 error. */
static int
hold_take(struct hold *h, struct store *st, const char *host)
{
	int64_t		 v;
	unsigned	 err;

	h->row = st->galera;
	if (!h->row) {
		if (hold_sql(h, "SELECT GET_LOCK(?, 0)", CLEANUP_LOCK_NAME,
		    NULL, &v, &err) != 0)
			return -1;
		return v == 1;
	}
	snprintf(h->owner, sizeof(h->owner), "%.100s:%ld:%lld", host,
	    (long)getpid(), (long long)clock_now_us());
	/* MariaDB assigns left to right: until sees the new owner. */
	if (hold_sql(h, "INSERT INTO idem_locks (name, owner, until)"
	    " VALUES (?, ?, NOW(6) + INTERVAL " STR(HOLD_TTL_S) " SECOND)"
	    " ON DUPLICATE KEY UPDATE"
	    " owner = IF(until < NOW(6), VALUES(owner), owner),"
	    " until = IF(owner = VALUES(owner), VALUES(until), until)",
	    CLEANUP_LOCK_NAME, h->owner, NULL, &err) != 0)
		/* Another node's take won at commit. */
		return err == ER_LOCK_DEADLOCK || err == ER_DUP_ENTRY ? 0 : -1;
	if (hold_sql(h, "SET STATEMENT wsrep_sync_wait = 1 FOR"
	    " SELECT owner = ? FROM idem_locks WHERE name = ?", h->owner,
	    CLEANUP_LOCK_NAME, &v, &err) != 0)
		return -1;
	h->renewed_ms = clock_now_ms();
	return v == 1;
}

/* Between batches: a lock row is renewed now and then. */
static void
hold_keep(struct hold *h)
{
	unsigned	 err;

	if (h == NULL || !h->row ||
	    clock_now_ms() - h->renewed_ms < HOLD_RENEW_MS)
		return;
	if (hold_sql(h, "UPDATE idem_locks SET until = NOW(6) + INTERVAL "
	    STR(HOLD_TTL_S) " SECOND WHERE name = ? AND owner = ?",
	    CLEANUP_LOCK_NAME, h->owner, NULL, &err) == 0)
		h->renewed_ms = clock_now_ms();
}

static void
hold_drop(struct hold *h)
{
	unsigned	 err;

	if (!h->row)
		(void)hold_sql(h, "DO RELEASE_LOCK(?)", CLEANUP_LOCK_NAME,
		    NULL, NULL, &err);
	else
		(void)hold_sql(h, "DELETE FROM idem_locks WHERE name = ? AND"
		    " owner = ?", CLEANUP_LOCK_NAME, h->owner, NULL, &err);
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
	struct hold	 h;
	int		 p, locked;

	memset(out, 0, sizeof(*out));
	snprintf(out->outcome, sizeof(out->outcome), "failed");
	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	if (o->batch < 1) {
		sa_seterr("batch size must be at least 1");
		return IDEM_EINVAL;
	}
	memset(&h, 0, sizeof(h));
	h.m = m;
	if ((locked = hold_take(&h, st, o->host)) < 0) {
		sa_seterr("%s", mysql_error(m));
		return IDEM_ESTORE;
	}
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
			er = phase_delete(m, p, ages[p], o, &h, deadline, dst[p],
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
	hold_drop(&h);
	return er;
}

