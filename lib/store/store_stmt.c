/* The store's one way to speak SQL: connect, prepare, text, bind, results. */
#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "clock.h"
#include "store.h"
#include "store_int.h"

/* Repeats of a statement a Galera cluster refused at commit (1, 2, 4 ...
 * ms apart). */
#define CERT_RETRIES	6

enum idem_err
store_stmt_fail(struct store *st, MYSQL_STMT *s)
{
	store_set_error(st, mysql_stmt_errno(s), mysql_stmt_error(s));
	return IDEM_ESTORE;
}

/* When a store of this process last found the server gone or out of
 * reach (CLOCK_MONOTONIC ms; 0: never): a resident store's takeover
 * floor counts from the first connect after it (connect_facts). */
static _Atomic int64_t store_lost_ms;

static void
store_note_lost(void)
{
	atomic_store(&store_lost_ms, clock_now_ms());
}

/* The server is gone or out of reach: noted, and this connection closed. */
static void
drop_lost(struct store *st)
{
	store_note_lost();
	store_disconnect(st);
}

/* A result that failed half-read: the error recorded, the statement ready
 * for its next execute, or the connection closed if it is gone. */
static enum idem_err
result_fail(struct store *st, MYSQL_STMT *s)
{
	store_stmt_fail(st, s);
	if (store_conn_lost(st->errnum))
		drop_lost(st);
	else
		mysql_stmt_free_result(s);
	return IDEM_ESTORE;
}

/* --- statements kept per connection (the hot path) ------------------------ */

/* The prepared statement sid on the current connection. */
static enum idem_err
stmt_get(struct store *st, enum stmt_id sid, const char *sql,
    MYSQL_STMT **out)
{
	MYSQL_STMT	*s;

	if (st->stmt[sid] != NULL) {
		*out = st->stmt[sid];
		return IDEM_OK;
	}
	if (sql == NULL)
		return IDEM_ENOMEM;	/* the caller could not build it */
	if (st->galera && sql == store_stmt_sql[sid] &&
	    store_stmt_sql_galera[sid] != NULL)
		sql = store_stmt_sql_galera[sid];
	if ((s = store_prepare(st, sql)) == NULL)
		return IDEM_ESTORE;
	st->stmt[sid] = s;
	*out = s;
	return IDEM_OK;
}

/* Binds in (may be NULL) and executes; 0, or -1 with s's error. */
static int
stmt_execute(MYSQL_STMT *s, MYSQL_BIND *in)
{
	if (in != NULL && mysql_stmt_bind_param(s, in) != 0)
		return -1;
	return mysql_stmt_execute(s) != 0 ? -1 : 0;
}

enum idem_err
store_exec(struct store *st, enum stmt_id sid, MYSQL_BIND *par, int retry,
    MYSQL_STMT **out)
{
	return store_exec_sql(st, sid, store_stmt_sql[sid], par, retry, out);
}

enum idem_err
store_exec_sql(struct store *st, enum stmt_id sid, const char *sql,
    MYSQL_BIND *par, int retry, MYSQL_STMT **out)
{
	MYSQL_STMT	*s;
	enum idem_err	 er;
	/* A statement run while connecting (STMT_BOOT) keeps the deadline
	 * of the call that connects. */
	int64_t		 outer = store_io_deadline(0);
	struct store	*outer_st = store_io_store(st);
	int		 bound = st->next_ms > 0 || outer > 0;
	int64_t		 budget = st->next_ms > 0 ? st->next_ms : st->call_ms;
	int64_t		 deadline = clock_now_ms() + budget;
	int		 attempt, fresh, cert = 0;

	if (outer > 0 && outer < deadline)
		deadline = outer;
	st->errnum = 0;
	st->next_ms = 0;
	for (attempt = 0; attempt < 2; attempt++) {
		fresh = st->my == NULL;
		/* Under store_deadline a reconnect shares the deadline;
		 * otherwise it has its own, and the statement its budget. */
		store_io_deadline(bound ? deadline : clock_now_ms() +
		    st->connect_ms);
		er = store_connect(st);
		if (!bound)
			deadline = clock_now_ms() + budget;
		store_io_deadline(deadline);
		if (er != IDEM_OK)
			goto out;
		if ((er = stmt_get(st, sid, sql, &s)) == IDEM_OK) {
			st->round_trips++;
			/* The rows are read whole while the deadline holds. */
			if (stmt_execute(s, par) == 0 &&
			    (mysql_stmt_field_count(s) == 0 ||
			    mysql_stmt_store_result(s) == 0)) {
				*out = s;
				goto out;
			}
			er = store_stmt_fail(st, s);
			/* A result read half: ready for the next execute. */
			mysql_stmt_free_result(s);
		}
		if (er == IDEM_ESTORE && clock_now_ms() >= deadline) {
			/* Cut off: the statement may or may not have run, and
			 * the connection is in no known state.  The next
			 * connect tries the next group first, as after a lost
			 * node: a frozen one would cost the next call its
			 * whole deadline too (an owner's renewal, its lease). */
			drop_lost(st);
			st->group_next = st->group_cur + 1;
			er = store_fail(st, IDEM_ESTORE, "no answer from the "
			    "database within %lld ms", (long long)budget);
			goto out;
		}
		if ((retry & STORE_RETRY_CERT) && st->galera &&
		    store_lost_to_other(st->errnum) && cert < CERT_RETRIES) {
			/* Another node's write to the row won: nothing of
			 * ours was applied; the repeat sees its result. */
			clock_sleep_ms(1 << cert++);
			attempt--;
			continue;
		}
		if (er == IDEM_ENOMEM || !store_conn_lost(st->errnum))
			goto out;
		drop_lost(st);
		/* A lost node: the next connect tries the next group. */
		st->group_next = st->group_cur + 1;
		/* A connection that just came up and failed: do not hammer. */
		if (!(retry & STORE_RETRY) || fresh) {
			er = IDEM_ESTORE;
			goto out;
		}
	}
	er = IDEM_ESTORE;
out:
	store_io_deadline(outer);
	store_io_store(outer_st);
	return er;
}

enum idem_err
store_scalars(struct store *st, enum stmt_id sid, MYSQL_BIND *par, int retry,
    int64_t *v, size_t n)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[STORE_SCALARS_MAX];
	int64_t		 val[STORE_SCALARS_MAX];
	my_bool		 isnull[STORE_SCALARS_MAX];
	enum idem_err	 er;
	size_t		 i;
	int		 rc;

	if (n == 0 || n > STORE_SCALARS_MAX)
		return IDEM_EINVAL;
	if ((er = store_exec(st, sid, par, retry, &s)) != IDEM_OK)
		return er;
	for (i = 0; i < n; i++) {
		val[i] = -1;
		store_out_i64(&res[i], &val[i], &isnull[i]);
	}
	if (mysql_stmt_bind_result(s, res) != 0 ||
	    (rc = mysql_stmt_fetch(s)) == 1)
		return result_fail(st, s);
	if (rc == MYSQL_NO_DATA)
		er = IDEM_ENOTFOUND;
	else
		for (i = 0; i < n; i++)
			v[i] = isnull[i] ? -1 : val[i];
	mysql_stmt_free_result(s);
	return er;
}

enum idem_err
store_scalar(struct store *st, enum stmt_id sid, MYSQL_BIND *par, int retry,
    int64_t *v)
{
	return store_scalars(st, sid, par, retry, v, 1);
}

enum idem_err
store_row_fetch(struct store *st, MYSQL_STMT *s, MYSQL_BIND *res)
{
	int	 rc;

	if (mysql_stmt_bind_result(s, res) != 0 ||
	    (rc = mysql_stmt_fetch(s)) == 1)
		return result_fail(st, s);
	if (rc == MYSQL_NO_DATA) {
		mysql_stmt_free_result(s);
		return IDEM_ENOTFOUND;
	}
	/* 0, or MYSQL_DATA_TRUNCATED: blobs are bound without room and
	 * fetched by column. */
	return IDEM_OK;
}

enum idem_err
store_row_blob(struct store *st, MYSQL_STMT *s, MYSQL_BIND *rb, unsigned col,
    unsigned long len, struct buf *b)
{
	char	*p;

	if (len > b->max) {
		mysql_stmt_free_result(s);
		return store_fail(st, IDEM_ETOOBIG,
		    "stored body too large (%lu bytes)", len);
	}
	if ((p = malloc((size_t)len + 1)) == NULL) {
		mysql_stmt_free_result(s);
		return IDEM_ENOMEM;
	}
	if (len > 0) {
		rb->buffer = p;
		rb->buffer_length = len;
		if (mysql_stmt_fetch_column(s, rb, col, 0) != 0) {
			free(p);
			rb->buffer = NULL;
			return result_fail(st, s);
		}
		rb->buffer = NULL;
		rb->buffer_length = 0;
	}
	p[len] = '\0';
	buf_free(b);
	b->p = p;
	b->len = len;
	b->cap = (size_t)len + 1;
	return IDEM_OK;
}

void
store_row_end(MYSQL_STMT *s)
{
	/* Drain so the statement is ready for the next execute. */
	while (mysql_stmt_fetch(s) == 0)
		;
	mysql_stmt_free_result(s);
}

/* --- connecting: a connection and its facts ------------------------------ */

/*
 * The facts of a connection just opened (STMT_BOOT): when the server
 * started, its packet limit, whether it is a Galera node.  Part of
 * connecting, not of a request: not counted.  IDEM_ESTORE if the
 * connection was lost again at once.
 */
static enum idem_err
connect_facts(struct store *st)
{
	int64_t		 facts[5], lost, since;
	uint64_t	 trips;

	trips = st->round_trips;
	st->max_packet = 0;
	st->galera = 0;
	facts[3] = 1;
	if (store_scalars(st, STMT_BOOT, NULL, 0, facts, 5) == IDEM_OK) {
		st->boot_s = facts[0];
		/* A resident's: not before the first connect after this
		 * process last lost the server (store_int.h). */
		lost = atomic_load(&store_lost_ms);
		if (st->resident && lost > 0 && facts[4] > 0) {
			since = facts[4] - (clock_now_ms() - lost) / 1000;
			if (since > st->boot_s)
				st->boot_s = since;
		}
		st->max_packet = facts[1];
		st->galera = facts[2] == 1;
	}
	st->round_trips = trips;
	if (st->my == NULL)
		return IDEM_ESTORE;	/* lost again at once */
	/* A Galera node cut off from the primary component answers every
	 * statement 1047: the next node in mysql_group instead. */
	if (st->galera && facts[3] != 1) {
		store_disconnect(st);
		return store_fail(st, IDEM_ESTORE, "Galera node of group %s "
		    "is not ready (wsrep_ready OFF: not in the primary "
		    "component)", st->group);
	}
	return IDEM_OK;
}

enum idem_err
store_connect(struct store *st)
{
	const char	*list = st->cfg != NULL &&
	    st->cfg->mysql_group != NULL ? st->cfg->mysql_group : "idemgate";
	unsigned	 n, k, i, start;
	enum idem_err	 er = IDEM_ESTORE;

	if (st->my != NULL)
		return IDEM_OK;
	for (n = 0; cfg_word(list, n, st->group, sizeof(st->group)); n++)
		;
	if (n == 0) {
		snprintf(st->group, sizeof(st->group), "idemgate");
		n = 1;
	}
	/* The first that answers, from the one after a lost node.  One that
	 * does not is passed over by the next call too, when this one's
	 * deadline ends the walk before the next answers. */
	start = st->group_next;
	for (k = 0; k < n; k++) {
		i = (start + k) % n;
		if (n > 1)
			cfg_word(list, i, st->group, sizeof(st->group));
		if ((er = store_conn_open(st, st->group)) == IDEM_OK)
			er = connect_facts(st);
		if (er == IDEM_OK) {
			st->group_cur = st->group_next = i;
			/* Sessions of connections lost to this server go
			 * now, not when their close gets through. */
			if (st->nlost > 0)
				store_kill_lost(st);
			if (st->my != NULL)
				return IDEM_OK;
			er = IDEM_ESTORE;
		}
		if (er == IDEM_ENOMEM)
			break;
		store_note_lost();
		st->group_next = (i + 1) % n;
		/* Out of time: the next call starts past this one. */
		if (store_io_expired())
			break;
	}
	return er;
}

/* --- one-off statements (the operator modules) ---------------------------- */

enum idem_err
store_need_conn(struct store *st)
{
	if (st->my != NULL)
		return IDEM_OK;
	return store_fail(st, IDEM_ESTORE, "not connected to the database");
}

MYSQL_STMT *
store_prepare(struct store *st, const char *sql)
{
	MYSQL_STMT	*s;

	if (store_need_conn(st) != IDEM_OK)
		return NULL;
	if ((s = mysql_stmt_init(st->my)) == NULL) {
		store_set_error(st, CR_OUT_OF_MEMORY, "out of memory");
		return NULL;
	}
	if (mysql_stmt_prepare(s, sql, strlen(sql)) != 0) {
		store_stmt_fail(st, s);
		mysql_stmt_close(s);
		return NULL;
	}
	return s;
}

void
store_stmt_close(MYSQL_STMT *s)
{
	if (s != NULL)
		mysql_stmt_close(s);
}

enum idem_err
store_run(struct store *st, MYSQL_STMT *s, MYSQL_BIND *in, MYSQL_BIND *out)
{
	if (stmt_execute(s, in) != 0)
		return store_stmt_fail(st, s);
	if (out != NULL && (mysql_stmt_bind_result(s, out) != 0 ||
	    mysql_stmt_store_result(s) != 0))
		return store_stmt_fail(st, s);
	return IDEM_OK;
}

enum idem_err
store_fetch(struct store *st, MYSQL_STMT *s)
{
	int	 rc = mysql_stmt_fetch(s);

	/* Strings are cut to their buffers on purpose. */
	if (rc == 0 || rc == MYSQL_DATA_TRUNCATED)
		return IDEM_OK;
	if (rc == MYSQL_NO_DATA)
		return IDEM_ENOTFOUND;
	store_stmt_fail(st, s);
	return IDEM_ESTORE;
}

enum idem_err
store_simple(struct store *st, const char *sql, MYSQL_BIND *in,
    uint64_t *rows)
{
	MYSQL_STMT	*s;
	enum idem_err	 er;

	if ((s = store_prepare(st, sql)) == NULL)
		return IDEM_ESTORE;
	if ((er = store_run(st, s, in, NULL)) == IDEM_OK && rows != NULL)
		*rows = mysql_stmt_affected_rows(s);
	mysql_stmt_close(s);
	return er;
}

enum idem_err
store_ids_after(struct store *st, const char *sql, const MYSQL_BIND *in,
    size_t nin, int64_t limit, uint64_t *last, uint64_t *ids, size_t *n)
{
	MYSQL_STMT	*s;
	MYSQL_BIND	 par[STORE_IDS_IN_MAX + 2], res[1];
	uint64_t	 id = 0;
	enum idem_err	 er;

	assert(nin <= STORE_IDS_IN_MAX);
	*n = 0;
	if ((s = store_prepare(st, sql)) == NULL)
		return IDEM_ESTORE;
	if (nin > 0)
		memcpy(par, in, nin * sizeof(*par));
	store_bind_u64(&par[nin], last);
	store_bind_i64(&par[nin + 1], &limit);
	store_out_u64(&res[0], &id, NULL);
	er = store_run(st, s, par, res);
	while (er == IDEM_OK && (er = store_fetch(st, s)) == IDEM_OK &&
	    *n < (size_t)limit) {
		ids[(*n)++] = id;
		*last = id;
	}
	store_stmt_close(s);
	return er == IDEM_ENOTFOUND ? IDEM_OK : er;
}

/* --- text statements (DDL, transaction control) --------------------------- */

enum idem_err
store_query(struct store *st, const char *sql, size_t len)
{
	MYSQL	*my = st->my;

	if (store_need_conn(st) != IDEM_OK)
		return IDEM_ESTORE;
	if (mysql_real_query(my, sql, len) == 0) {
		MYSQL_RES *res = mysql_store_result(my);

		if (res != NULL)
			mysql_free_result(res);
		return IDEM_OK;
	}
	store_set_error(st, mysql_errno(my), mysql_error(my));
	if (store_conn_lost(st->errnum))
		store_disconnect(st);
	return IDEM_ESTORE;
}

enum idem_err
store_query_int(struct store *st, const char *sql, long long *v)
{
	MYSQL		*my = st->my;
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	enum idem_err	 er = IDEM_OK;

	if (store_need_conn(st) != IDEM_OK)
		return IDEM_ESTORE;
	if (mysql_query(my, sql) != 0 ||
	    (res = mysql_store_result(my)) == NULL) {
		store_set_error(st, mysql_errno(my), mysql_error(my));
		if (store_conn_lost(st->errnum))
			store_disconnect(st);
		return IDEM_ESTORE;
	}
	if ((row = mysql_fetch_row(res)) == NULL)
		er = IDEM_ENOTFOUND;
	else
		*v = row[0] != NULL ? strtoll(row[0], NULL, 10) : -1;
	mysql_free_result(res);
	return er;
}

void
store_rollback(struct store *st)
{
	if (st->my == NULL)
		return;
	/* A lost connection took the transaction with it. */
	if (store_conn_lost(st->errnum))
		store_disconnect(st);
	/* A failed ROLLBACK must not hide why the transaction ended. */
	else
		(void)mysql_query(st->my, "ROLLBACK");
}

/* --- binds ---------------------------------------------------------------- */

void
store_bind_in(MYSQL_BIND *b, enum enum_field_types t, const void *p, size_t len)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = t;
	b->buffer = (void *)(uintptr_t)p;
	b->buffer_length = len;
	if (p == NULL && (t == MYSQL_TYPE_BLOB || t == MYSQL_TYPE_STRING))
		b->is_null_value = 1, b->is_null = &b->is_null_value;
}

void
store_bind_blob(MYSQL_BIND *b, const void *p, size_t len)
{
	store_bind_in(b, MYSQL_TYPE_BLOB, p, len);
	if (p == NULL && len == 0) {
		/* empty, not NULL */
		b->buffer = (void *)"";
		b->is_null = NULL;
	}
}

void
store_bind_str(MYSQL_BIND *b, const char *s)
{
	store_bind_in(b, MYSQL_TYPE_STRING, s != NULL ? s : "",
	    s != NULL ? strlen(s) : 0);
}

void
store_bind_u64(MYSQL_BIND *b, const uint64_t *v)
{
	store_bind_in(b, MYSQL_TYPE_LONGLONG, v, sizeof(*v));
	b->is_unsigned = 1;
}

void
store_bind_i64(MYSQL_BIND *b, const int64_t *v)
{
	store_bind_in(b, MYSQL_TYPE_LONGLONG, v, sizeof(*v));
}

void
store_bind_i32(MYSQL_BIND *b, const int32_t *v)
{
	store_bind_in(b, MYSQL_TYPE_LONG, v, sizeof(*v));
}

void
store_bind_out(MYSQL_BIND *b, enum enum_field_types t, void *p,
    int is_unsigned)
{
	b->buffer_type = t;
	b->buffer = p;
	b->buffer_length = t == MYSQL_TYPE_LONG ? 4 : 8;
	b->is_unsigned = is_unsigned != 0;
}

void
store_out_u64(MYSQL_BIND *b, uint64_t *v, my_bool *isnull)
{
	memset(b, 0, sizeof(*b));
	store_bind_out(b, MYSQL_TYPE_LONGLONG, v, 1);
	b->is_null = isnull;
}

void
store_out_i64(MYSQL_BIND *b, int64_t *v, my_bool *isnull)
{
	memset(b, 0, sizeof(*b));
	store_bind_out(b, MYSQL_TYPE_LONGLONG, v, 0);
	b->is_null = isnull;
}

void
store_out_dbl(MYSQL_BIND *b, double *v, my_bool *isnull)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_DOUBLE;
	b->buffer = v;
	b->is_null = isnull;
}

void
store_out_text(MYSQL_BIND *b, char *p, size_t cap, unsigned long *len,
    my_bool *isnull)
{
	store_out_blob(b, p, cap - 1, len, isnull);
	b->buffer_type = MYSQL_TYPE_STRING;
}

void
store_out_text_end(char *p, size_t cap, unsigned long len, my_bool isnull)
{
	if (isnull)
		len = 0;
	if (len > cap - 1)
		len = cap - 1;
	p[len] = '\0';
}

void
store_out_blob(MYSQL_BIND *b, void *p, size_t cap, unsigned long *len,
    my_bool *isnull)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_BLOB;
	b->buffer = p;
	b->buffer_length = cap;
	b->length = len;
	b->is_null = isnull;
}
