/* Fleet counters: one row per (minute, host, route), added to. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mysql.h>

#include "store.h"
#include "store_int.h"

#define COL_NAME(c)	#c,
#define COL_ONE(c)	+ 1

const char *const stat_names[STAT__COUNT] = {
	COUNTER_STAT_COLUMNS(COL_NAME)
};

/* Every counter column, stat_names' then the wait histogram's. */
static const char *const counter_cols[] = { COUNTER_COLUMNS(COL_NAME) };
#define COUNTER_COLS	(sizeof(counter_cols) / sizeof(counter_cols[0]))

_Static_assert(0 COUNTER_STAT_COLUMNS(COL_ONE) == STAT__COUNT,
    "COUNTER_STAT_COLUMNS names every stat_id");
_Static_assert(0 COUNTER_WAIT_COLUMNS(COL_ONE) == 1 + STAT_WAIT_BUCKETS,
    "COUNTER_WAIT_COLUMNS has wait_sum_ms and every bucket");

const int64_t stat_wait_le_ms[STAT_WAIT_BUCKETS - 1] = {
	10, 50, 100, 250, 500, 1000, 2500, 5000, 10000
};

size_t
stat_wait_bucket(int64_t wait_ms)
{
	size_t	 b;

	for (b = 0; b < STAT_WAIT_BUCKETS - 1; b++)
		if (wait_ms <= stat_wait_le_ms[b])
			break;
	return b;
}

int64_t
stat_wait_percentile(const uint64_t bucket[STAT_WAIT_BUCKETS], double p)
{
	uint64_t	 total = 0, want, cum = 0;
	size_t		 i;

	for (i = 0; i < STAT_WAIT_BUCKETS; i++)
		total += bucket[i];
	if (total == 0)
		return STAT_WAIT_NONE;
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
	return STAT_WAIT_INF;
}

/*
 * Appends fmt once per counter column, after lead the first time and sep
 * after that; in fmt, %1$s is the column's name.
 */
static enum idem_err
cols_add(struct buf *b, const char *lead, const char *sep, const char *fmt)
{
	size_t		 i;
	enum idem_err	 er = IDEM_OK;

	for (i = 0; er == IDEM_OK && i < COUNTER_COLS; i++)
		if ((er = buf_addstr(b, i ? sep : lead)) == IDEM_OK)
			er = buf_printf(b, fmt, counter_cols[i]);
	return er;
}

/* The statement as built, or NULL (out of memory). */
static char *
sql_done(struct buf *b, enum idem_err er)
{
	if (er != IDEM_OK) {
		buf_free(b);
		return NULL;
	}
	return b->p;
}

/* INSERT ... ON DUPLICATE KEY UPDATE c = c + VALUES(c) for every column. */
static char *
counters_sql(void)
{
	struct buf	 b;
	enum idem_err	 er;

	buf_init(&b, 8192);
	er = buf_addstr(&b, "INSERT INTO idem_counters (minute, host, route");
	if (er == IDEM_OK)
		er = cols_add(&b, ", ", ", ", "%1$s");
	if (er == IDEM_OK)
		er = buf_addstr(&b, ") VALUES (FROM_UNIXTIME(?), ?, ?");
	if (er == IDEM_OK)
		er = cols_add(&b, ", ", ", ", "?");
	if (er == IDEM_OK)
		er = buf_addstr(&b, ") ON DUPLICATE KEY UPDATE ");
	if (er == IDEM_OK)
		er = cols_add(&b, "", ", ", "%1$s = %1$s + VALUES(%1$s)");
	return sql_done(&b, er);
}

char *
store_counters_fold_sql(void)
{
	struct buf	 b;
	enum idem_err	 er;

	buf_init(&b, 8192);
	er = buf_addstr(&b, "INSERT INTO idem_counters_total (host, route");
	if (er == IDEM_OK)
		er = cols_add(&b, ", ", ", ", "%1$s");
	if (er == IDEM_OK)
		er = buf_addstr(&b, ") SELECT host, route");
	if (er == IDEM_OK)
		er = cols_add(&b, ", ", ", ", "SUM(%1$s)");
	if (er == IDEM_OK)
		er = buf_addstr(&b, " FROM idem_counters"
		    " WHERE minute < @idem_cut AND minute <= @idem_upto"
		    " GROUP BY host, route ON DUPLICATE KEY UPDATE ");
	if (er == IDEM_OK)
		er = cols_add(&b, "", ", ", "%1$s = %1$s + VALUES(%1$s)");
	return sql_done(&b, er);
}

static char		*add_sql;	/* built once, kept for the process */
static pthread_once_t	 add_sql_once = PTHREAD_ONCE_INIT;

static void
add_sql_build(void)
{
	add_sql = counters_sql();
}

enum idem_err
store_counters_add(struct store *st, const char *host,
    const struct stat_row *rows, size_t nrows)
{
	MYSQL_BIND	 par[3 + COUNTER_COLS];
	MYSQL_STMT	*s;
	uint64_t	 v[COUNTER_COLS];
	int64_t		 minute;
	size_t		 i, j;
	enum idem_err	 er;

	if (nrows == 0)
		return IDEM_OK;
	pthread_once(&add_sql_once, add_sql_build);
	if ((er = store_connect(st)) != IDEM_OK)
		return er;
	/* All rows or none, so a failed flush can be retried whole (one
	 * row is one statement: all or none by itself). */
	if (nrows > 1 && (er = store_query(st, "START TRANSACTION", 17)) !=
	    IDEM_OK)
		return er;
	for (i = 0; i < nrows; i++) {
		minute = rows[i].minute - rows[i].minute % 60;
		store_bind_i64(&par[0], &minute);
		store_bind_str(&par[1], host);
		store_bind_str(&par[2], rows[i].route);
		for (j = 0; j < STAT__COUNT; j++)
			v[j] = rows[i].n[j];
		v[STAT__COUNT] = rows[i].wait_sum_ms;
		for (j = 0; j < STAT_WAIT_BUCKETS; j++)
			v[STAT__COUNT + 1 + j] = rows[i].wait_bucket[j];
		for (j = 0; j < COUNTER_COLS; j++)
			store_bind_u64(&par[3 + j], &v[j]);
		/* Not repeated: an add that may have landed must not land
		 * twice.  The caller keeps the rows for its next flush. */
		if ((er = store_exec_sql(st, STMT_COUNTERS, add_sql, par, 0,
		    &s)) != IDEM_OK)
			goto fail;
	}
	if (nrows == 1 || (er = store_query(st, "COMMIT", 6)) == IDEM_OK)
		return IDEM_OK;
fail:
	if (nrows > 1)
		store_rollback(st);
	return er;
}
