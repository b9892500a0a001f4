/* idemctl cleanup SQL: expired, stale keys in batches, totals, runs, quotas;
 * the lock that keeps runs of a cron job apart. */
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

/* --- cleanup ------------------------------------------------------------ */


/*
 * The phases of a run.  Each DELETE takes its age in microseconds (or
 * seconds) and a LIMIT; the COUNT twin is the dry-run form with the same
 * condition.  ORDER BY follows an index so each batch reads only the rows
 * it deletes.
 *
 * The key phases walk instead (pick set): rows of idem_keys that are
 * past the column but may not go yet (a run still going, an unbounded
 * run's row) would otherwise be read, and locked, by every batch's
 * DELETE, a lease renewal waiting on them.  Plain reads (no locks)
 * find the next batch's first row and its end after a cursor on (column,
 * id), the index's own order; the DELETE then takes that range alone.
 * Rows that stay are read about once a run, and locked only by the batch
 * whose range they lie in.
 */
struct phase {
	const char	*name;
	const char	*del;		/* walked: the range[, age] */
	const char	*count;
	int		 use_age;	/* an age in ms */
	const char	*pick;		/* walked: PICK, LAST; else NULL */
	const char	*last;
};

/* The two walked phases' conditions, and what each walks on.  PICK
 * finds the row at an offset after a place (col, col, id[, age],
 * offset): the first of the next batch, then its end; LAST, when there
 * are fewer, the last row after the first (the same but the offset).
 * RANGE deletes from the first to the end, both in (first col, end col,
 * first col, first id, end col, end id[, age]). */
/* A row in progress goes only once its owner is gone (OWNER_GONE, by
 * the facts store_admin_owner_facts set for the run). */
#define EXPIRED_WHERE	"expires_at < NOW(6) AND " ADMIN_GONE \
	" AND (state <> 0 OR " OWNER_GONE ")"
#define STALE_WHERE	"state = 0 AND lease_until < NOW(6) - " \
	"INTERVAL ? * 1000 MICROSECOND AND " ADMIN_RUN_PAST " AND " OWNER_GONE
#define AFTER(col, where) \
	"SELECT " col ", id FROM idem_keys WHERE " col " >= ? AND (" col \
	" > ? OR id > ?) AND " where " ORDER BY "
#define PICK(col, where) \
	AFTER(col, where) col ", id LIMIT 1 OFFSET ?"
#define LAST(col, where) \
	AFTER(col, where) col " DESC, id DESC LIMIT 1"
#define RANGE(col) \
	"DELETE FROM idem_keys WHERE " col " BETWEEN ? AND ? AND (" col \
	" > ? OR id >= ?) AND (" col " < ? OR id <= ?) AND "

static const struct phase phases[] = {
	/* A row goes only once its run is surely over (its run deadline
	 * passed; never for an unbounded run; NULL: a row from before
	 * migration 006, the lease alone), finished or not: deleted, its
	 * key could run again beside it.  (A finished row's expiry is past
	 * its run deadline already, but not one written by an older
	 * build.) */
	{ "expired",
	  RANGE("expires_at") EXPIRED_WHERE,
	  "SELECT COUNT(*) FROM idem_keys WHERE " EXPIRED_WHERE,
	  0, PICK("expires_at", EXPIRED_WHERE),
	  LAST("expires_at", EXPIRED_WHERE) },
	{ "stale",
	  RANGE("lease_until") STALE_WHERE,
	  "SELECT COUNT(*) FROM idem_keys WHERE " STALE_WHERE,
	  1, PICK("lease_until", STALE_WHERE),
	  LAST("lease_until", STALE_WHERE) },
	/* folded into the totals, not deleted alone: counters_fold */
	{ "counters", NULL,
	  "SELECT COUNT(*) FROM idem_counters WHERE minute < "
	  "NOW() - INTERVAL ? * 1000 MICROSECOND", 1, NULL, NULL },
	{ "runs",
	  "DELETE FROM idem_cleanup_runs WHERE started_at < "
	  "NOW(6) - INTERVAL ? * 1000 MICROSECOND AND outcome <> 'running' "
	  "ORDER BY started_at LIMIT ?",
	  "SELECT COUNT(*) FROM idem_cleanup_runs WHERE started_at < "
	  "NOW(6) - INTERVAL ? * 1000 MICROSECOND AND outcome <> 'running'",
	  1, NULL, NULL },
	/* new_keys_per_minute counts of minutes that are over */
	{ "quota",
	  "DELETE FROM idem_quota WHERE minute < UNIX_TIMESTAMP() DIV 60 - 1 "
	  "LIMIT ?",
	  "SELECT COUNT(*) FROM idem_quota WHERE minute < "
	  "UNIX_TIMESTAMP() DIV 60 - 1", 0, NULL, NULL },
};

enum { PH_EXPIRED, PH_STALE, PH_COUNTERS, PH_RUNS, PH_QUOTA, PH__COUNT };

/* Counts what phase p would remove.  OUT: n. */
static enum idem_err
phase_count(struct store *st, int p, int64_t age_ms, uint64_t *n)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[1], out[1];
	enum idem_err	 er;
	uint64_t	 v = 0;

	if ((s = store_prepare(st, phases[p].count)) == NULL)
		return IDEM_ESTORE;
	store_bind_i64(&in[0], &age_ms);
	store_out_u64(&out[0], &v, NULL);
	er = store_run(st, s, phases[p].use_age ? in : NULL, out);
	if (er == IDEM_OK && store_fetch(st, s) == IDEM_ESTORE)
		er = IDEM_ESTORE;
	if (er == IDEM_OK)
		*n = v;
	store_stmt_close(s);
	return er;
}

/* What every batch of one run needs: the store, the options, the lock
 * that keeps other runs out (NULL: none to renew) and the deadline
 * (CLOCK_MONOTONIC ms; 0: none). */
struct sweep {
	struct store			*st;
	const struct cleanup_opts	*o;
	struct store_hold		*h;
	int64_t				 deadline;
	const struct cleanup_result	*out;		/* counts so far */
	int64_t				 progress_at;	/* last written */
};

/* How often a run's row gets its counts so far: a run that dies (kill
 * -9, the server gone) keeps what it did, up to a second before. */
#define CLEANUP_PROGRESS_MS	1000

#define STR_(x)	#x
#define STR(x)	STR_(x)
/* A string literal and its length, for store_query. */
#define STRLEN(lit)	lit, sizeof(lit) - 1

/* Repeats of cleanup's work that lost to another transaction. */
#define LOST_REPEATS	3
#define LOST_PAUSE_MS	50

/*
 * After work that ended with er: 1 if it lost to another transaction (a
 * deadlock or lock wait with the gateway, a Galera certification), so
 * nothing of it was applied and it may simply be repeated, after a pause;
 * *tries counts the repeats.
 */
static int
lost_repeat(struct store *st, enum idem_err er, int *tries)
{
	if (er != IDEM_ESTORE || *tries >= LOST_REPEATS ||
	    !store_lost_to_other(store_errno(st)))
		return 0;
	(*tries)++;
	clock_sleep_ms(LOST_PAUSE_MS);
	return 1;
}

/* Executes one batch (autocommitted), repeated if it lost. */
static enum idem_err
batch_run(struct store *st, MYSQL_STMT *s, MYSQL_BIND *in)
{
	enum idem_err	 er;
	int		 tries = 0;

	do
		er = store_run(st, s, in, NULL);
	while (lost_repeat(st, er, &tries));
	return er;
}

/* The counts so far into the run's row, once a CLEANUP_PROGRESS_MS.  A
 * failure here is the next batch's to report. */
static void
run_progress(struct sweep *sw)
{
	const struct cleanup_result	*r = sw->out;
	MYSQL_BIND			 in[4];
	uint64_t			 batches;

	if (r == NULL || r->run_id == 0 || sw->o->dry_run ||
	    clock_now_ms() - sw->progress_at < CLEANUP_PROGRESS_MS)
		return;
	sw->progress_at = clock_now_ms();
	batches = r->batches;
	store_bind_u64(&in[0], &r->rows_deleted);
	store_bind_u64(&in[1], &r->stale_released);
	store_bind_u64(&in[2], &batches);
	store_bind_u64(&in[3], &r->run_id);
	(void)store_simple(sw->st, "UPDATE idem_cleanup_runs SET "
	    "rows_deleted = ?, stale_released = ?, batches = ? WHERE id = ? "
	    "AND outcome = 'running'", in, NULL);
}

/* Before a batch: the lock row renewed, and o->pause (the replica gate)
 * asked; IDEM_ETIMEOUT at the deadline. */
static enum idem_err
batch_gate(struct sweep *sw)
{
	const struct cleanup_opts	*o = sw->o;
	char				 why[256] = "";
	enum idem_err			 er;

	if (sw->deadline != 0 && clock_now_ms() >= sw->deadline)
		return IDEM_ETIMEOUT;
	store_hold_keep(sw->h);
	run_progress(sw);
	if (o->pause == NULL)
		return IDEM_OK;
	er = o->pause(o->pause_arg, sw->deadline, why, sizeof(why));
	if (er != IDEM_OK && er != IDEM_ETIMEOUT)
		store_fail(sw->st, er, "%s", why);
	return er;
}

/* Between two batches: o->sleep_ms, cut at the deadline. */
static void
batch_pause(const struct sweep *sw)
{
	int64_t	 ms = sw->o->sleep_ms;

	if (ms <= 0)
		return;
	if (sw->deadline != 0 && clock_now_ms() + ms > sw->deadline)
		ms = sw->deadline - clock_now_ms();
	clock_sleep_ms(ms);
}

/*
 * Deletes in batches until a batch removes fewer than o->batch rows or the
 * deadline passes (IDEM_ETIMEOUT).  Adds to *n.
 */
static enum idem_err
phase_delete(struct sweep *sw, int p, int64_t age_ms, uint64_t *n)
{
	struct store	*st = sw->st;
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[2];
	enum idem_err	 er;
	int64_t		 limit = sw->o->batch;
	uint64_t	 got;
	int		 k = 0;

	if ((s = store_prepare(st, phases[p].del)) == NULL)
		return IDEM_ESTORE;
	if (phases[p].use_age)
		store_bind_i64(&in[k++], &age_ms);
	store_bind_i64(&in[k++], &limit);
	for (;;) {
		if ((er = batch_gate(sw)) != IDEM_OK ||
		    (er = batch_run(st, s, in)) != IDEM_OK)
			break;
		got = mysql_stmt_affected_rows(s);
		*n += got;
		if (got < (uint64_t)sw->o->batch)
			break;
		batch_pause(sw);
	}
	store_stmt_close(s);
	return er;
}

/* A DATETIME(6) as text, and the cursor's start: before any row. */
#define WALK_TIME_MAX	40
#define WALK_START	"1000-01-01 00:00:00"

/* A place in a walk: a row's column (as text) and id. */
struct walk_at {
	char		 t[WALK_TIME_MAX];
	uint64_t	 id;
};

/* The row s finds after *at (offset given to PICK, NULL for LAST) into
 * *row: 1 found, 0 none, -1 an error.  A read without locks. */
static int
walk_find(struct sweep *sw, MYSQL_STMT *s, int p, const struct walk_at *at,
    const int64_t *age_ms, const int64_t *offset, struct walk_at *row)
{
	MYSQL_BIND	 in[5], out[2];
	my_bool		 nul = 0;
	unsigned long	 len = 0;
	enum idem_err	 er;
	int		 k = 0;

	store_bind_str(&in[k++], at->t);
	store_bind_str(&in[k++], at->t);
	store_bind_u64(&in[k++], &at->id);
	if (phases[p].use_age)
		store_bind_i64(&in[k++], age_ms);
	if (offset != NULL)
		store_bind_i64(&in[k++], offset);
	store_out_text(&out[0], row->t, sizeof(row->t), &len, &nul);
	store_out_u64(&out[1], &row->id, NULL);
	if (store_run(sw->st, s, in, out) != IDEM_OK)
		return -1;
	er = store_fetch(sw->st, s);
	store_out_text_end(row->t, sizeof(row->t), len, nul);
	mysql_stmt_free_result(s);
	return er == IDEM_OK ? 1 : er == IDEM_ENOTFOUND ? 0 : -1;
}

/* The next batch after *cur: its first row and its end (the o->batch-th
 * row, or the last there is; *full says which).  1 found, 0 none left,
 * -1 an error. */
static int
walk_next(struct sweep *sw, MYSQL_STMT *pick, MYSQL_STMT *last, int p,
    const struct walk_at *cur, const int64_t *age_ms, struct walk_at *first,
    struct walk_at *end, int *full)
{
	const int64_t	 zero = 0, offset = sw->o->batch - 2;
	int		 found;

	if ((found = walk_find(sw, pick, p, cur, age_ms, &zero, first)) != 1)
		return found;
	*full = 1;
	*end = *first;
	if (sw->o->batch < 2)
		return 1;
	if ((found = walk_find(sw, pick, p, first, age_ms, &offset,
	    end)) != 0)
		return found;
	*full = 0;
	if ((found = walk_find(sw, last, p, first, age_ms, NULL, end)) == 0)
		*end = *first;
	return found < 0 ? -1 : 1;
}

/*
 * A key phase, walked (struct phase): batches of o->batch rows after a
 * cursor, each deleted by its range, the last one up to the last row
 * left; it ends there, or when a batch deletes none (what it found
 * changed meanwhile: the next run's), or at the deadline (IDEM_ETIMEOUT).
 * Adds to *n and *batches.
 */
static enum idem_err
phase_walk(struct sweep *sw, int p, int64_t age_ms, uint64_t *n,
    unsigned *batches)
{
	struct store	*st = sw->st;
	MYSQL_STMT	*pick, *last = NULL, *del = NULL;
	MYSQL_BIND	 in[7];
	struct walk_at	 cur = { WALK_START, 0 }, first, end;
	enum idem_err	 er = IDEM_OK;
	uint64_t	 got;
	int		 found, full = 0;

	if ((pick = store_prepare(st, phases[p].pick)) == NULL ||
	    (last = store_prepare(st, phases[p].last)) == NULL ||
	    (del = store_prepare(st, phases[p].del)) == NULL) {
		er = IDEM_ESTORE;
		goto out;
	}
	for (;;) {
		if ((er = batch_gate(sw)) != IDEM_OK)
			break;
		found = walk_next(sw, pick, last, p, &cur, &age_ms, &first,
		    &end, &full);
		if (found < 0)
			er = IDEM_ESTORE;
		if (found != 1)
			break;
		store_bind_str(&in[0], first.t);
		store_bind_str(&in[1], end.t);
		store_bind_str(&in[2], first.t);
		store_bind_u64(&in[3], &first.id);
		store_bind_str(&in[4], end.t);
		store_bind_u64(&in[5], &end.id);
		if (phases[p].use_age)
			store_bind_i64(&in[6], &age_ms);
		if ((er = batch_run(st, del, in)) != IDEM_OK)
			break;
		got = mysql_stmt_affected_rows(del);
		*n += got;
		if (got > 0)
			(*batches)++;
		if (!full || got == 0)
			break;
		cur = end;
		batch_pause(sw);
	}
out:
	if (pick != NULL)
		store_stmt_close(pick);
	if (last != NULL)
		store_stmt_close(last);
	if (del != NULL)
		store_stmt_close(del);
	return er;
}

/*
 * The counters phase: rows past their retention are added to
 * idem_counters_total and deleted, a batch of minutes at a time, each in
 * one transaction, so the totals that metrics report (retained rows +
 * totals) never go down.  A batch ends at the minute of the o->batch-th
 * row left (a minute is never split; with fewer rows left, it takes them
 * all: the last batch).  OUT: *n rows.
 */
static enum idem_err
fold_once(struct store *st, int64_t batch, uint64_t *n)
{
	MYSQL_BIND	 in[1];
	int64_t		 offset = batch - 1;
	char		*sql = NULL;
	enum idem_err	 er;

	if ((er = store_query(st, STRLEN("START TRANSACTION"))) != IDEM_OK)
		return er;
	store_bind_i64(&in[0], &offset);
	if ((er = store_simple(st, "SET @idem_upto = COALESCE((SELECT minute "
	    "FROM idem_counters WHERE minute < @idem_cut ORDER BY minute "
	    "LIMIT 1 OFFSET ?), @idem_cut)", in, NULL)) != IDEM_OK)
		goto fail;
	if ((sql = store_counters_fold_sql()) == NULL) {
		er = store_fail(st, IDEM_ENOMEM, "out of memory");
		goto fail;
	}
	if ((er = store_query(st, sql, strlen(sql))) != IDEM_OK ||
	    (er = store_simple(st, "DELETE FROM idem_counters WHERE minute < "
	    "@idem_cut AND minute <= @idem_upto", NULL, n)) != IDEM_OK ||
	    (er = store_query(st, STRLEN("COMMIT"))) != IDEM_OK)
		goto fail;
	free(sql);
	return IDEM_OK;
fail:
	free(sql);
	store_rollback(st);
	return IDEM_ESTORE;
}

/* The fold, a batch at a time (fold_once), each repeated whole if it lost
 * to another transaction (on Galera, to a gateway's counters flush on
 * another node), until a batch folds fewer than o->batch rows or the
 * deadline passes (IDEM_ETIMEOUT).  Adds to *n. */
static enum idem_err
counters_fold(struct sweep *sw, int64_t age_ms, uint64_t *n)
{
	struct store	*st = sw->st;
	MYSQL_BIND	 in[1];
	enum idem_err	 er;
	uint64_t	 rows;
	int		 tries;

	store_bind_i64(&in[0], &age_ms);
	if ((er = store_simple(st, "SET @idem_cut = NOW() - INTERVAL ? * "
	    "1000 MICROSECOND", in, NULL)) != IDEM_OK)
		return er;
	for (;;) {
		if ((er = batch_gate(sw)) != IDEM_OK)
			return er;
		tries = 0;
		do {
			rows = 0;
			er = fold_once(st, sw->o->batch, &rows);
		} while (lost_repeat(st, er, &tries));
		if (er != IDEM_OK)
			return er;
		*n += rows;
		if (rows < (uint64_t)sw->o->batch)
			return IDEM_OK;
		batch_pause(sw);
	}
}


/* A lock row outlives a run that died by at most this. */
#define HOLD_TTL_S	120
#define HOLD_RENEW_MS	10000

/* Runs sql with the lock's name and, unless NULL, owner as string
 * parameters (in that order); *v gets the one integer it returns, if
 * any.  IDEM_ESTORE on error (store_errno() says which). */
static enum idem_err
hold_sql(struct store_hold *h, const char *sql, const char *p1,
    const char *p2, int64_t *v)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[2], out[1];
	my_bool		 isnull = 0;
	enum idem_err	 er = IDEM_ESTORE;

	if ((s = store_prepare(h->st, sql)) == NULL)
		return IDEM_ESTORE;
	store_bind_str(&in[0], p1);
	if (p2 != NULL)
		store_bind_str(&in[1], p2);
	if (v != NULL) {
		*v = 0;
		store_out_i64(&out[0], v, &isnull);
	}
	if (store_run(h->st, s, in, v != NULL ? out : NULL) == IDEM_OK &&
	    (v == NULL || store_fetch(h->st, s) == IDEM_OK))
		er = IDEM_OK;
	if (v != NULL && isnull)
		*v = -1;
	store_stmt_close(s);
	return er;
}

/* A named lock is the server's, not the database's: the name is the
 * run's (cleanup, rekey) and the database's, so two stores on one server
 * do not hold each other up (at most 64 characters, MariaDB's limit). */
#define HOLD_LOCK_SQL	"LEFT(CONCAT(?, ':', DATABASE()), 64)"

/* Takes the lock; IDEM_EBUSY if another run holds it, IDEM_ESTORE on
 * error. */
enum idem_err
store_hold_take(struct store_hold *h, struct store *st, const char *name,
    const char *host)
{
	int64_t		 v;

	h->name = name;
	h->row = st->galera;
	if (!h->row) {
		if (hold_sql(h, "SELECT GET_LOCK(" HOLD_LOCK_SQL ", 0)", h->name,
		    NULL, &v) != IDEM_OK)
			return IDEM_ESTORE;
		return v == 1 ? IDEM_OK : IDEM_EBUSY;
	}
	snprintf(h->owner, sizeof(h->owner), "%.100s:%ld:%lld", host,
	    (long)getpid(), (long long)clock_now_us());
	/* MariaDB assigns left to right: until sees the new owner. */
	if (hold_sql(h, "INSERT INTO idem_locks (name, owner, until)"
	    " VALUES (?, ?, NOW(6) + INTERVAL " STR(HOLD_TTL_S) " SECOND)"
	    " ON DUPLICATE KEY UPDATE"
	    " owner = IF(until < NOW(6), VALUES(owner), owner),"
	    " until = IF(owner = VALUES(owner), VALUES(until), until)",
	    h->name, h->owner, NULL) != IDEM_OK)
		/* Another node's take won at commit. */
		return store_errno(st) == ER_LOCK_DEADLOCK ||
		    store_errno(st) == ER_DUP_ENTRY ? IDEM_EBUSY : IDEM_ESTORE;
	if (hold_sql(h, "SET STATEMENT wsrep_sync_wait = 1 FOR"
	    " SELECT owner = ? FROM idem_locks WHERE name = ?", h->owner,
	    h->name, &v) != IDEM_OK)
		return IDEM_ESTORE;
	h->renewed_ms = clock_now_ms();
	return v == 1 ? IDEM_OK : IDEM_EBUSY;
}

/* Between batches: a lock row is renewed now and then. */
void
store_hold_keep(struct store_hold *h)
{
	if (h == NULL || !h->row ||
	    clock_now_ms() - h->renewed_ms < HOLD_RENEW_MS)
		return;
	if (hold_sql(h, "UPDATE idem_locks SET until = NOW(6) + INTERVAL "
	    STR(HOLD_TTL_S) " SECOND WHERE name = ? AND owner = ?",
	    h->name, h->owner, NULL) == IDEM_OK)
		h->renewed_ms = clock_now_ms();
}

void
store_hold_drop(struct store_hold *h)
{
	if (!h->row)
		(void)hold_sql(h, "DO RELEASE_LOCK(" HOLD_LOCK_SQL ")", h->name,
		    NULL, NULL);
	else
		(void)hold_sql(h, "DELETE FROM idem_locks WHERE name = ? AND"
		    " owner = ?", h->name, h->owner, NULL);
}

static enum idem_err
run_start(struct store *st, const struct cleanup_opts *o, uint64_t *id)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[2];
	int64_t		 dry = o->dry_run ? 1 : 0;
	enum idem_err	 er;

	/* We hold the lock, so any run still 'running' died on its way. */
	er = store_simple(st, "UPDATE idem_cleanup_runs SET outcome = "
	    "'failed', reason = 'interrupted (process died or lost its "
	    "connection)' WHERE outcome = 'running'", NULL, NULL);
	if (er != IDEM_OK)
		return er;
	if ((s = store_prepare(st, "INSERT INTO idem_cleanup_runs (host, "
	    "started_at, dry_run, outcome) VALUES (?, NOW(6), ?, 'running')"))
	    == NULL)
		return IDEM_ESTORE;
	store_bind_str(&in[0], o->host);
	store_bind_i64(&in[1], &dry);
	er = store_run(st, s, in, NULL);
	if (er == IDEM_OK)
		*id = mysql_stmt_insert_id(s);
	store_stmt_close(s);
	return er;
}

static enum idem_err
run_finish(struct store *st, const struct cleanup_result *r)
{
	MYSQL_BIND	 in[7];
	uint64_t	 batches = r->batches;

	store_bind_u64(&in[0], &r->rows_deleted);
	store_bind_u64(&in[1], &r->stale_released);
	store_bind_u64(&in[2], &r->counters_pruned);
	store_bind_u64(&in[3], &batches);
	store_bind_str(&in[4], r->outcome);
	store_bind_str(&in[5], r->reason);
	store_bind_u64(&in[6], &r->run_id);
	return store_simple(st, "UPDATE idem_cleanup_runs SET ended_at = "
	    "NOW(6), rows_deleted = ?, stale_released = ?, counters_pruned = "
	    "?, batches = ?, outcome = ?, reason = ? WHERE id = ?", in, NULL);
}

/* Every phase in order (counted only, on a dry run), until one fails or
 * the deadline passes.  OUT: *failed the phase that stopped the run. */
static enum idem_err
run_phases(struct sweep *sw, struct cleanup_result *out, int *failed)
{
	struct store			*st = sw->st;
	const struct cleanup_opts	*o = sw->o;
	int64_t				 ages[PH__COUNT];
	uint64_t			*dst[PH__COUNT], quota_pruned = 0;
	enum idem_err			 er = IDEM_OK;
	int				 p;

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
	if ((er = store_admin_owner_facts(st, o->live_floor_ms)) != IDEM_OK) {
		*failed = PH_EXPIRED;
		return er;
	}
	for (p = 0; p < PH__COUNT; p++) {
		if (o->dry_run)
			er = phase_count(st, p, ages[p], dst[p]);
		else if (p == PH_COUNTERS)
			er = counters_fold(sw, ages[p], dst[p]);
		else if (phases[p].pick != NULL)
			er = phase_walk(sw, p, ages[p], dst[p],
			    &out->batches);
		else
			er = phase_delete(sw, p, ages[p], dst[p]);
		if (er != IDEM_OK)
			break;
	}
	*failed = p;
	return er;
}

/* The run's outcome and reason from how its phases ended. */
static void
run_outcome(struct store *st, const struct cleanup_opts *o, enum idem_err er,
    int p, struct cleanup_result *out)
{
	if (er == IDEM_OK)
		snprintf(out->outcome, sizeof(out->outcome), "%s",
		    o->dry_run ? "dry-run" : "ok");
	else if (er == IDEM_ETIMEOUT) {
		snprintf(out->outcome, sizeof(out->outcome), "partial");
		snprintf(out->reason, sizeof(out->reason),
		    "time limit of %lld ms reached during %s rows",
		    (long long)o->max_ms, phases[p].name);
		store_fail(st, er, "%s", out->reason);
	} else
		snprintf(out->reason, sizeof(out->reason), "%s rows: %.200s",
		    phases[p].name, store_last_error(st));
}

enum idem_err
store_admin_cleanup(struct store *st, const struct cleanup_opts *o,
    struct cleanup_result *out)
{
	enum idem_err	 er, fer;
	int64_t		 start = clock_now_ms();
	struct store_hold h;
	struct sweep	 sw;
	int		 p, tries = 0;
	char		 saved[sizeof(st->err)];

	memset(out, 0, sizeof(*out));
	snprintf(out->outcome, sizeof(out->outcome), "failed");
	if (store_need_conn(st) != IDEM_OK)
		return IDEM_ESTORE;
	if (o->batch < 1)
		return store_fail(st, IDEM_EINVAL,
		    "batch size must be at least 1");
	memset(&h, 0, sizeof(h));
	h.st = st;
	if ((er = store_hold_take(&h, st, CLEANUP_LOCK_NAME, o->host)) == IDEM_EBUSY)
		return store_fail(st, IDEM_EBUSY,
		    "cleanup already running on another connection");
	if (er != IDEM_OK)
		return IDEM_ESTORE;
	do
		er = run_start(st, o, &out->run_id);
	while (lost_repeat(st, er, &tries));
	if (er != IDEM_OK)
		goto unlock;
	sw.st = st;
	sw.o = o;
	sw.h = &h;
	sw.deadline = o->max_ms > 0 ? start + o->max_ms : 0;
	sw.out = out;
	sw.progress_at = clock_now_ms();
	er = run_phases(&sw, out, &p);
	run_outcome(st, o, er, p, out);
	out->elapsed_ms = clock_now_ms() - start;
	/* Keep the first error's text if recording the end fails too. */
	memcpy(saved, st->err, sizeof(saved));
	tries = 0;
	do
		fer = run_finish(st, out);
	while (lost_repeat(st, fer, &tries));
	if (fer != IDEM_OK && er == IDEM_OK)
		er = IDEM_ESTORE;
	else
		memcpy(st->err, saved, sizeof(saved));
unlock:
	store_hold_drop(&h);
	return er;
}
