/* The statement helpers of the operator store modules: prepare, bind, run, one error channel per thread. */
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
#include "store_sa.h"

_Thread_local char sa_err[512];

const char *
store_admin_error(void)
{
	return sa_err;
}

void
sa_seterr(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(sa_err, sizeof(sa_err), fmt, ap);
	va_end(ap);
}

MYSQL *
sa_conn(struct store *st)
{
	MYSQL	*m = store_mysql(st);

	if (m == NULL)
		sa_seterr("not connected to the database");
	return m;
}

/* Prepares sql; NULL (with sa_err set) on failure. */
MYSQL_STMT *
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

void
sa_close(MYSQL_STMT *s)
{
	if (s != NULL)
		mysql_stmt_close(s);
}

/* Binds in (may be NULL), executes, binds out (may be NULL) and buffers
 * the result set. */
enum idem_err
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
int
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

void
bind_u64(MYSQL_BIND *b, uint64_t *v)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = v;
	b->is_unsigned = 1;
}

void
bind_i64(MYSQL_BIND *b, int64_t *v)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = v;
}

void
bind_dbl(MYSQL_BIND *b, double *v, my_bool *isnull)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_DOUBLE;
	b->buffer = v;
	b->is_null = isnull;
}

/* Input bytes (text or binary); *len must stay valid until execute. */
void
bind_in(MYSQL_BIND *b, const void *p, unsigned long *len)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_BLOB;
	b->buffer = (void *)(uintptr_t)p;
	b->buffer_length = *len;
	b->length = len;
}

/* Output into a fixed buffer of cap bytes (one kept for the NUL). */
void
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
void
out_term(char *p, size_t cap, unsigned long len, my_bool isnull)
{
	if (isnull)
		len = 0;
	if (len > cap - 1)
		len = cap - 1;
	p[len] = '\0';
}

/* Transaction control, which is not prepared. */
enum idem_err
sa_query(MYSQL *m, const char *sql)
{
	if (mysql_query(m, sql) == 0)
		return IDEM_OK;
	sa_seterr("%s", mysql_error(m));
	return IDEM_ESTORE;
}

/* Runs a statement without data (lock handling, bookkeeping). */
enum idem_err
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
