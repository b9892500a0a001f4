/* The statement helpers of idemctl's and idemtop's store modules (lib/store_admin.c, lib/store_cleanup.c). */
#ifndef IDEM_STORE_SA_H
#define IDEM_STORE_SA_H

#include <stddef.h>
#include <stdint.h>

#include <mysql.h>

#include "err.h"
#include "store.h"

/* The last error of this thread's operator query (store_admin_error()). */
extern _Thread_local char sa_err[512];

void sa_seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The store's connection, or NULL (sa_err set) when not connected. */
MYSQL *sa_conn(struct store *st);

/* Prepares sql; NULL (with sa_err set) on failure.  sa_close() frees. */
MYSQL_STMT *sa_prepare(MYSQL *m, const char *sql);
void sa_close(MYSQL_STMT *s);

/* Binds in (may be NULL), executes, binds out (may be NULL) and buffers
 * the result set. */
enum idem_err sa_run(MYSQL_STMT *s, MYSQL_BIND *in, MYSQL_BIND *out);

/* 0 row fetched, 1 no more rows, -1 error (sa_err set). */
int sa_fetch(MYSQL_STMT *s);

/* A statement without data; transaction control (not prepared). */
enum idem_err sa_simple(MYSQL *m, const char *sql);
enum idem_err sa_query(MYSQL *m, const char *sql);

void bind_u64(MYSQL_BIND *b, uint64_t *v);
void bind_i64(MYSQL_BIND *b, int64_t *v);
void bind_dbl(MYSQL_BIND *b, double *v, my_bool *isnull);
/* Input bytes (text or binary); *len must stay valid until execute. */
void bind_in(MYSQL_BIND *b, const void *p, unsigned long *len);
/* Output into a fixed buffer of cap bytes (one kept for the NUL). */
void bind_out(MYSQL_BIND *b, char *p, size_t cap, unsigned long *len,
    my_bool *isnull);
/* Terminates an output string fetched with bind_out(). */
void out_term(char *p, size_t cap, unsigned long len, my_bool isnull);

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

#endif
