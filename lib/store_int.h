/* Internals shared by the lib/store*.c files (not for callers). */
#ifndef IDEM_STORE_INT_H
#define IDEM_STORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <mysql.h>

#include "store.h"

/* Keys a connection remembers having completed or replayed. */
#define STORE_SEEN_SLOTS	256

/* The prepared statements of lib/store.c, by number. */
enum stmt_id {
	STMT_CLAIM,
	STMT_READ,
	STMT_READ_CAUSAL,	/* STMT_READ; on Galera, a causal read */
	STMT_TAKEOVER,
	STMT_RELOCK,
	STMT_WAITLOCK,
	STMT_UNLOCK,
	STMT_RENEW,
	STMT_COMPLETE,
	STMT_TOMBSTONE,
	STMT_RELEASE,
	STMT_WAIT_INC,
	STMT_WAIT_DEC,
	STMT_COUNTERS,
	STMT_QUOTA,
	STMT_EPOCH,
	STMT_BOOT,
	STMT__COUNT
};

/* Their SQL text, by number (STMT_COUNTERS: NULL, lib/store_counters.c
 * builds it). */
extern const char *const store_stmt_sql[STMT__COUNT];
/* Galera's text where it differs (NULL: the same); lib/store.c says why. */
extern const char *const store_stmt_sql_galera[STMT__COUNT];

/* One connection (lib/store_conn.c) and what the claim logic
 * (lib/store.c) remembers about it. */
struct store {
	const struct cfg	*cfg;
	MYSQL			*my;		/* NULL when disconnected */
	MYSQL_STMT		*stmt[STMT__COUNT];
	unsigned		 errnum;	/* last server/client error */
	unsigned long		 generation;	/* connects so far */
	/* When the server started (unix seconds, rounded up; 0: unknown).
	 * Its named locks are only as old as that: see store_claim. */
	int64_t			 boot_s;
	int64_t			 max_packet;	/* server's, 0 unknown */
	int			 galera;	/* a Galera node: no named locks */
	/* mysql_group may list several groups (one per node): the one in
	 * use, and the one the next connect tries first. */
	unsigned		 group_cur, group_next;
	char			 group[128];	/* the one in use */
	uint64_t		 round_trips;	/* statements executed */
	/* Set by a claim that found a key's lock free while its lease was
	 * live (the owner died): store_wait then sleeps out the lease
	 * instead of waking at once on the free lock, again and again. */
	/* Keys this connection recently completed or replayed (a hint, not
	 * a truth: a hit only decides which statement goes first). */
	uint64_t		 seen[STORE_SEEN_SLOTS];
	char			 err[256];
};

/*
 * Executes statement sid (prepared on first use per connection) with
 * params par.  A lost connection is closed (the next call reconnects and
 * re-prepares); with retry set, a statement safe to repeat is tried once
 * more on a fresh connection.  OUT: *out, the executed statement.
 */
enum idem_err store_exec(struct store *st, enum stmt_id sid, MYSQL_BIND *par,
    int retry, MYSQL_STMT **out);

/* retry bits: STORE_RETRY is the 1 above; STORE_RETRY_CERT also repeats,
 * on the same connection, a statement a Galera cluster refused at commit
 * (1213, certification; 1205) -- for statements whose repeat is harmless
 * and whose loss is not an answer (complete, renew, release). */
#define STORE_RETRY		1
#define STORE_RETRY_CERT	2

/* The same for a statement whose text its module builds (store_stmt_sql[sid]
 * is NULL): sql is read only when sid is first prepared on a connection. */
enum idem_err store_exec_sql(struct store *st, enum stmt_id sid,
    const char *sql, MYSQL_BIND *par, int retry, MYSQL_STMT **out);

/* The SQL (malloc'd, NULL when out of memory) that adds the counter rows
 * before @idem_cut to idem_counters_total, per host and route, every
 * counter column built from stat_names like the gateway's INSERT. */
char *store_counters_fold_sql(void);

/* A text statement (DDL, transaction control: nothing to prepare) on the
 * current connection, its result discarded; errors recorded as for
 * store_exec.  Call store_connect first. */
enum idem_err store_query(struct store *st, const char *sql, size_t len);

/* A text query returning one integer: *v (NULL as -1); IDEM_ENOTFOUND if
 * it returned no row. */
enum idem_err store_query_int(struct store *st, const char *sql,
    long long *v);

/* 1 while a connection is up. */
int store_connected(const struct store *st);

/* Input binds; p is borrowed until the execute.  A NULL blob/string with
 * len 0 binds SQL NULL for store_bind_in, '' for store_bind_blob. */
void store_bind_in(MYSQL_BIND *b, enum enum_field_types t, const void *p,
    size_t len);
void store_bind_blob(MYSQL_BIND *b, const void *p, size_t len);
void store_bind_str(MYSQL_BIND *b, const char *s);
void store_bind_u64(MYSQL_BIND *b, const uint64_t *v);
void store_bind_i64(MYSQL_BIND *b, const int64_t *v);
void store_bind_i32(MYSQL_BIND *b, const int32_t *v);

/* A fixed-size result column into p (an int32_t for MYSQL_TYPE_LONG, a
 * 64-bit integer for MYSQL_TYPE_LONGLONG).  Sets only the type, buffer
 * and sign, so is_null and length set before stay. */
void store_bind_out(MYSQL_BIND *b, enum enum_field_types t, void *p,
    int is_unsigned);

/* Runs statement sid, which returns one row of n BIGINTs (n at most
 * STORE_SCALARS_MAX): v[0..n) (NULL as -1).  IDEM_ENOTFOUND if it
 * returned no row. */
#define STORE_SCALARS_MAX	4
enum idem_err store_scalars(struct store *st, enum stmt_id sid,
    MYSQL_BIND *par, int retry, int64_t *v, size_t n);

/* The same for one BIGINT: *v. */
enum idem_err store_scalar(struct store *st, enum stmt_id sid, MYSQL_BIND *par,
    int retry, int64_t *v);


/* Closes the connection and every prepared statement on it. */
void store_disconnect(struct store *st);

/* Records errnum/text as the last error (text for logs only). */
void store_set_error(struct store *st, unsigned errnum, const char *text);


/* 1 if errnum means the connection is unusable and must be reopened. */
int store_conn_lost(unsigned errnum);

/* 1 if errnum means the statement lost to another transaction (deadlock,
 * lock wait timeout; on Galera, a certification failure): nothing of it
 * was applied, so an autocommitted one may simply be repeated. */
int store_lost_to_other(unsigned errnum);

/* Counts successful connects; a change means locks were lost. */
unsigned long store_generation(const struct store *st);

/* Prepared statements executed so far (for tests of the hot path). */
uint64_t store_round_trips(const struct store *st);

#endif
