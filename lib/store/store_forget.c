/* Forgetting keys in bulk: every key of one route, by answer and age. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "clock.h"
#include "rcache.h"
#include "store_admin.h"
#include "store_int.h"

/*
 * The filter, FILTER_BINDS placeholders: route (byte for byte: the
 * column's collation would join /Pay and /pay), whether a status range
 * applies, the range, and the created_at cutoff (NULL: any age) twice.
 */
#define FILTER							\
	" route = CAST(? AS BINARY)"					\
	" AND (? = 0 OR resp_status BETWEEN ? AND ?)"			\
	" AND (? IS NULL OR created_at >= ?)"
#define FILTER_BINDS	6

static const char SQL_PLAN[] =
    "SELECT COALESCE(MAX(id), 0), DATE_FORMAT(NOW(6) - INTERVAL ? * 1000"
    " MICROSECOND, '%Y-%m-%d %H:%i:%s.%f') FROM idem_keys";

/* Placeholders: max id, then FILTER. */
static const char SQL_COUNT[] =
    "SELECT COUNT(*), COALESCE(SUM(state = 0 AND NOT " ADMIN_ABANDONED "), 0)"
    " FROM idem_keys WHERE id <= ? AND" FILTER;

/* Placeholders: after id, max id, FILTER, force, limit. */
static const char SQL_IDS[] =
    "SELECT id FROM idem_keys WHERE id > ? AND id <= ? AND" FILTER
    FORGET_UNLESS_LIVE " ORDER BY id LIMIT ?";

/* The values FILTER's placeholders point at. */
struct filter_vals {
	int64_t		 has_status, lo, hi;
	const char	*cut;
	size_t		 cutlen;
};

/* Binds FILTER's placeholders into b (FILTER_BINDS of them) from f and
 * p's cutoff; v holds the values until the execute. */
static void
filter_bind(MYSQL_BIND *b, const struct forget_filter *f,
    const struct forget_plan *p, struct filter_vals *v)
{
	v->has_status = f->status_lo > 0;
	v->lo = f->status_lo;
	v->hi = f->status_hi;
	v->cut = p->cutoff[0] != '\0' ? p->cutoff : NULL;
	v->cutlen = v->cut != NULL ? strlen(v->cut) : 0;
	store_bind_str(&b[0], f->route);
	store_bind_i64(&b[1], &v->has_status);
	store_bind_i64(&b[2], &v->lo);
	store_bind_i64(&b[3], &v->hi);
	store_bind_in(&b[4], MYSQL_TYPE_STRING, v->cut, v->cutlen);
	store_bind_in(&b[5], MYSQL_TYPE_STRING, v->cut, v->cutlen);
}

/* Runs s with in and reads its one row into res. */
static enum idem_err
one_result(struct store *st, const char *sql, MYSQL_BIND *in,
    MYSQL_BIND *res)
{
	MYSQL_STMT	*s;
	enum idem_err	 er;

	if ((s = store_prepare(st, sql)) == NULL)
		return IDEM_ESTORE;
	if ((er = store_run(st, s, in, res)) == IDEM_OK &&
	    (er = store_fetch(st, s)) == IDEM_ENOTFOUND)
		er = store_fail(st, IDEM_ESTORE, "no row from a count");
	store_stmt_close(s);
	return er;
}

/* The newest row id and the cutoff of f's window.  OUT: p. */
static enum idem_err
plan_window(struct store *st, const struct forget_filter *f,
    struct forget_plan *p)
{
	MYSQL_BIND	 in[1], res[2];
	int64_t		 ms = f->since_ms;
	unsigned long	 clen = 0;
	my_bool		 cnull = 0;
	enum idem_err	 er;

	store_bind_i64(&in[0], &ms);
	store_out_u64(&res[0], &p->max_id, NULL);
	store_out_text(&res[1], p->cutoff, sizeof(p->cutoff), &clen, &cnull);
	if ((er = one_result(st, SQL_PLAN, in, res)) != IDEM_OK)
		return er;
	store_out_text_end(p->cutoff, sizeof(p->cutoff), clen, cnull);
	if (f->since_ms <= 0)
		p->cutoff[0] = '\0';
	return IDEM_OK;
}

enum idem_err
store_admin_route_count(struct store *st, const struct forget_filter *f,
    struct forget_plan *out)
{
	MYSQL_BIND		 in[1 + FILTER_BINDS], res[2];
	struct forget_plan	 p;
	struct filter_vals	 v;
	uint64_t		 all = 0, live = 0;
	enum idem_err		 er;

	memset(&p, 0, sizeof(p));
	if ((er = plan_window(st, f, &p)) != IDEM_OK)
		return er;
	store_bind_u64(&in[0], &p.max_id);
	filter_bind(&in[1], f, &p, &v);
	store_out_u64(&res[0], &all, NULL);
	store_out_u64(&res[1], &live, NULL);
	if ((er = one_result(st, SQL_COUNT, in, res)) != IDEM_OK)
		return er;
	p.kept = f->force ? 0 : live;
	p.n = all - p.kept;
	*out = p;
	return IDEM_OK;
}

/* One bulk forget's statements and their binds: the id read, and the
 * DELETE of FORGET_BATCH ids (unused ones 0, which no row has). */
struct sweep {
	struct store		*st;
	MYSQL_STMT		*ids;
	MYSQL_STMT		*del;
	MYSQL_BIND		 ids_in[2 + FILTER_BINDS + 2];
	MYSQL_BIND		 del_in[FORGET_BATCH + FILTER_BINDS + 1];
	struct filter_vals	 v;
	uint64_t		 after, max_id, id;
	int64_t			 force, limit;
	uint64_t		 batch[FORGET_BATCH];
};

/* "DELETE ... WHERE id IN (?, ... FORGET_BATCH) AND" FILTER and the
 * rule: malloc'd, NULL when out of memory. */
static char *
delete_sql(void)
{
	static const char head[] = "DELETE FROM idem_keys WHERE id IN (";
	static const char tail[] = ") AND" FILTER FORGET_UNLESS_LIVE;
	size_t		 len = sizeof(head) + 3 * FORGET_BATCH + sizeof(tail);
	char		*sql, *q;
	int		 i;

	if ((sql = malloc(len)) == NULL)
		return NULL;
	q = sql + sizeof(head) - 1;
	memcpy(sql, head, sizeof(head) - 1);
	for (i = 0; i < FORGET_BATCH; i++)
		q += sprintf(q, i == 0 ? "?" : ", ?");
	memcpy(q, tail, sizeof(tail));
	return sql;
}

/* Prepares w's statements and binds them to w's values. */
static enum idem_err
sweep_open(struct sweep *w, const struct forget_filter *f,
    const struct forget_plan *p)
{
	char		*sql;
	int		 i;

	w->max_id = p->max_id;
	w->force = f->force ? 1 : 0;
	w->limit = FORGET_BATCH;
	if ((sql = delete_sql()) == NULL)
		return store_fail(w->st, IDEM_ENOMEM, "out of memory");
	w->del = store_prepare(w->st, sql);
	free(sql);
	if (w->del == NULL ||
	    (w->ids = store_prepare(w->st, SQL_IDS)) == NULL)
		return IDEM_ESTORE;
	store_bind_u64(&w->ids_in[0], &w->after);
	store_bind_u64(&w->ids_in[1], &w->max_id);
	filter_bind(&w->ids_in[2], f, p, &w->v);
	store_bind_i64(&w->ids_in[2 + FILTER_BINDS], &w->force);
	store_bind_i64(&w->ids_in[3 + FILTER_BINDS], &w->limit);
	for (i = 0; i < FORGET_BATCH; i++)
		store_bind_u64(&w->del_in[i], &w->batch[i]);
	filter_bind(&w->del_in[FORGET_BATCH], f, p, &w->v);
	store_bind_i64(&w->del_in[FORGET_BATCH + FILTER_BINDS], &w->force);
	return IDEM_OK;
}

/* The next batch of ids after w->after into w->batch (the rest 0).
 * OUT: *n, how many. */
static enum idem_err
sweep_read(struct sweep *w, size_t *n)
{
	MYSQL_BIND	 res[1];
	enum idem_err	 er;

	*n = 0;
	memset(w->batch, 0, sizeof(w->batch));
	store_out_u64(&res[0], &w->id, NULL);
	if ((er = store_run(w->st, w->ids, w->ids_in, res)) != IDEM_OK)
		return er;
	while (*n < FORGET_BATCH && (er = store_fetch(w->st, w->ids)) ==
	    IDEM_OK)
		w->batch[(*n)++] = w->id;
	mysql_stmt_free_result(w->ids);
	if (er == IDEM_ESTORE)
		return er;
	if (*n > 0)
		w->after = w->batch[*n - 1];
	return IDEM_OK;
}

enum idem_err
store_admin_route_forget(struct store *st, const struct forget_filter *f,
    const struct forget_plan *p, uint64_t *forgotten)
{
	struct sweep	*w;
	enum idem_err	 er;
	size_t		 n;

	*forgotten = 0;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return store_fail(st, IDEM_ENOMEM, "out of memory");
	w->st = st;
	if ((er = sweep_open(w, f, p)) != IDEM_OK)
		goto out;
	/* Each DELETE autocommits: locks on FORGET_BATCH rows at most, for
	 * one statement, so the gateways' claims go on around it. */
	while ((er = sweep_read(w, &n)) == IDEM_OK && n > 0) {
		if ((er = store_run(st, w->del, w->del_in, NULL)) != IDEM_OK)
			break;
		*forgotten += mysql_stmt_affected_rows(w->del);
		if (n < FORGET_BATCH)
			break;
	}
out:
	store_stmt_close(w->ids);
	store_stmt_close(w->del);
	free(w);
	if (*forgotten > 0)
		clock_sleep_ms(RCACHE_FORGET_WAIT_MS);
	return er;
}
