/* Internals shared by the lib/store*.c files (not for callers). */
#ifndef IDEM_STORE_INT_H
#define IDEM_STORE_INT_H

#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

#include <mysql.h>

#include "store.h"

/* A waiter's pause when no lock can wake it and the lease has lapsed
 * (µs). */
#define STORE_REPOLL_US		100000

/* Keys a connection remembers having completed or replayed. */
#define STORE_SEEN_SLOTS	256

/* The prepared statements of lib/store/store.c, by number. */
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
	STMT_RELEASE_DOUBT,	/* a claim that may have landed: store.c */
	STMT_WAIT_INC,
	STMT_WAIT_DEC,
	STMT_COUNTERS,
	STMT_QUOTA,
	STMT_EPOCH,
	STMT_BOOT,
	STMT_LEGACY,		/* a row hashed before the key: store_hkey.c */
	STMT_LOST_ID,		/* a session we lost: store_conn.c */
	STMT_KILL,
	STMT__COUNT
};

/* Their SQL text, by number (STMT_COUNTERS: NULL, lib/store/store_counters.c
 * builds it). */
extern const char *const store_stmt_sql[STMT__COUNT];
/* Galera's text where it differs (NULL: the same); lib/store/store.c says
 * why. */
extern const char *const store_stmt_sql_galera[STMT__COUNT];

/* A TCP connection of ours the server may still hold a session for: the
 * server it went to, our port, its session id, when it was given up. */
#define STORE_LOST_MAX	8
struct store_lost {
	struct sockaddr_storage	 peer;
	socklen_t		 peerlen;
	unsigned		 port;
	uint64_t		 id;
	int64_t			 at_ms;
};

/* One connection (lib/store/store_conn.c) and what the claim logic
 * (lib/store/store.c) remembers about it. */
struct store {
	const struct cfg	*cfg;
	const volatile sig_atomic_t *stop;	/* ends waits when non-zero
						 * (store_set_stop) */
	MYSQL			*my;		/* NULL when disconnected */
	MYSQL_STMT		*stmt[STMT__COUNT];
	unsigned		 errnum;	/* last server/client error */
	unsigned long		 generation;	/* connects so far */
	/* When the server started (unix seconds, rounded up; 0: unknown),
	 * or, for a resident store (store_set_resident), the server's time
	 * when this process last lost it, if later.  Its named locks are
	 * only as old as the start, and a server may start long before it
	 * listens (crash recovery): live owners reconnect once it does, as
	 * this process tried to.  See store_claim. */
	int64_t			 boot_s;
	int			 resident;
	int64_t			 max_packet;	/* server's, 0 unknown */
	int			 galera;	/* Galera: no named locks */
	/* mysql_group may list several groups (one per node): the one in
	 * use, and the one the next connect tries first. */
	unsigned		 group_cur, group_next;
	char			 group[128];	/* the one in use */
	uint64_t		 round_trips;	/* statements executed */
	/* Keys this connection recently completed or replayed (a hint, not
	 * a truth: a hit only decides which statement goes first). */
	uint64_t		 seen[STORE_SEEN_SLOTS];
	char			 err[512];

	/* Deadlines (lib/store/store.h): every kept statement's budget, the
	 * next one's (store_deadline; 0: call_ms), the read timeout the
	 * client library is given at connect. */
	int64_t			 call_ms;
	int64_t			 connect_ms;	/* a reconnect's budget */
	int64_t			 next_ms;
	unsigned		 read_timeout_s;

	/* The live claim's named lock (STORE_GRAVES in store.h): held, on
	 * connection lock_gen; the sockets kept of lost connections whose
	 * session holds it, and the last one's session id. */
	int			 held;
	unsigned long		 lock_gen;
	int			 grave[STORE_GRAVES];
	uint64_t		 grave_id[STORE_GRAVES];
	unsigned		 ngrave;
	uint64_t		 grave_tid;

	/* TCP connections given up on a timeout, whose sessions the server
	 * may keep (their close lost in a partition): ended with KILL once
	 * a connection to the same server answers (store_kill_lost). */
	struct store_lost	 lost[STORE_LOST_MAX];
	unsigned		 nlost;
	int			 killing;	/* in store_kill_lost */
};

/* This thread's store in a call, for the socket wait's timeout to keep
 * the socket of a connection holding a live claim's lock (store.h:
 * STORE_GRAVES).  Returns the store it replaces. */
struct store *store_io_store(struct store *st);

/* Closes st's kept sockets: its claim's outcome is written, or it has no
 * live claim any more. */
void store_graves_close(struct store *st);

/*
 * Ends, with KILL, the server's sessions of st's kept sockets and of c's
 * (c may be NULL): the claim's outcome is written, and a socket closed in
 * a partition may take minutes to tell the server (its FIN retransmitted
 * behind unacknowledged bytes), the key's named lock held all that while.
 * Only a session on the server st is connected to, with the id the
 * connection had, from our port as the server sees it, of this user.
 */
void store_graves_kill(struct store *st, const struct claim *c);

/* Ends the sessions of st->lost on the server st just connected to. */
void store_kill_lost(struct store *st);

/* This thread's store calls give up at deadline (CLOCK_MONOTONIC ms;
 * 0: no deadline): every wait of the client library on its socket ends
 * by then (lib/store/store_conn.c).  Returns the deadline it replaces. */
int64_t store_io_deadline(int64_t deadline);

/* 1 when this thread's deadline has passed. */
int store_io_expired(void);

/*
 * Opens st->my to the option-file group's server (lib/store/store_conn.c),
 * counting a generation; no statement runs yet (store_connect then reads
 * the server's facts).  IDEM_ENOMEM or IDEM_ESTORE, the error recorded.
 */
enum idem_err store_conn_open(struct store *st, const char *group);

/* A waiter's GET_LOCK waits this long at most per statement: a read
 * deadline then stays short, and the waiter claims again after it. */
#define STORE_WAIT_SLICE_MS	2000

/*
 * The one statement layer (lib/store/store_stmt.c).  Every store module speaks
 * SQL through it and records its errors in the connection: the last one is
 * store_last_error()/store_errno(), whoever failed.
 */

/*
 * Executes the kept statement sid (prepared on first use per connection)
 * with params par.  A lost connection is closed (the next call reconnects
 * and re-prepares); with retry set, a statement safe to repeat is tried
 * once more on a fresh connection.  OUT: *out, the executed statement.
 */
enum idem_err store_exec(struct store *st, enum stmt_id sid, MYSQL_BIND *par,
    int retry, MYSQL_STMT **out);

/* retry bits: STORE_RETRY is the 1 above; STORE_RETRY_CERT repeats, on
 * the same connection, a statement a Galera cluster refused at commit
 * (1213, certification; 1205): nothing of it was applied -- for
 * statements whose loss is not an answer (complete, renew, release, the
 * quota's count). */
#define STORE_RETRY		1
#define STORE_RETRY_CERT	2

/* The same for a statement whose text its module builds (store_stmt_sql[sid]
 * is NULL): sql is read only when sid is first prepared on a connection. */
enum idem_err store_exec_sql(struct store *st, enum stmt_id sid,
    const char *sql, MYSQL_BIND *par, int retry, MYSQL_STMT **out);

/* Runs kept statement sid, which returns one row of n BIGINTs (n at most
 * STORE_SCALARS_MAX): v[0..n) (NULL as -1).  IDEM_ENOTFOUND if it
 * returned no row. */
#define STORE_SCALARS_MAX	5
enum idem_err store_scalars(struct store *st, enum stmt_id sid,
    MYSQL_BIND *par, int retry, int64_t *v, size_t n);

/* The same for one BIGINT: *v. */
enum idem_err store_scalar(struct store *st, enum stmt_id sid, MYSQL_BIND *par,
    int retry, int64_t *v);

/*
 * The first row of an executed kept statement into res (blob columns bound
 * without room, read next with store_row_blob; then store_row_end).
 * IDEM_ENOTFOUND (result freed) if there is none; on IDEM_ESTORE the
 * result is freed or the lost connection closed.
 */
enum idem_err store_row_fetch(struct store *st, MYSQL_STMT *s,
    MYSQL_BIND *res);

/* Column col of the fetched row, len bytes (its length from the fetch),
 * into b (replacing what it held; NUL after the bytes), bounded by b->max
 * (IDEM_ETOOBIG).  On failure the result is freed (store_row_fetch). */
enum idem_err store_row_blob(struct store *st, MYSQL_STMT *s, MYSQL_BIND *rb,
    unsigned col, unsigned long len, struct buf *b);

/* Ends a row read with store_row_fetch. */
void store_row_end(MYSQL_STMT *s);

/*
 * One-off statements, on the current connection only: a lost connection is
 * an error, never a silent reconnect (a lock held on it would be gone).
 * store_prepare: NULL on failure.  store_run binds in (may be NULL),
 * executes, binds out (may be NULL) and buffers the result set.
 * store_fetch: IDEM_OK a row, IDEM_ENOTFOUND no more rows, IDEM_ESTORE
 * an error.
 */
MYSQL_STMT *store_prepare(struct store *st, const char *sql);
/* IDEM_OK while connected, else IDEM_ESTORE with "not connected" as the
 * error: the one-off statements' precondition. */
enum idem_err store_need_conn(struct store *st);
enum idem_err store_run(struct store *st, MYSQL_STMT *s, MYSQL_BIND *in,
    MYSQL_BIND *out);
enum idem_err store_fetch(struct store *st, MYSQL_STMT *s);
void store_stmt_close(MYSQL_STMT *s);		/* NULL is a no-op */

/* Prepares, runs with in (may be NULL) and closes sql.  OUT: *rows (may
 * be NULL) the rows it changed. */
enum idem_err store_simple(struct store *st, const char *sql, MYSQL_BIND *in,
    uint64_t *rows);

/*
 * The next batch of a walk over idem_keys by id: sql is "SELECT id FROM
 * idem_keys WHERE ... AND id > ? ORDER BY id LIMIT ?", its first nin
 * (at most STORE_IDS_IN_MAX) parameters in (borrowed), its last two
 * *last and limit.  Up to limit ids into ids.  OUT: *n, *last the
 * highest id read.
 */
#define STORE_IDS_IN_MAX	2
enum idem_err store_ids_after(struct store *st, const char *sql,
    const MYSQL_BIND *in, size_t nin, int64_t limit, uint64_t *last,
    uint64_t *ids, size_t *n);

/* A text statement (DDL, transaction control: nothing to prepare) on the
 * current connection, its result discarded. */
enum idem_err store_query(struct store *st, const char *sql, size_t len);

/* Rolls the open transaction back, keeping the error that ended it (a
 * lost connection, which took it along, is closed). */
void store_rollback(struct store *st);

/* A text query returning one integer: *v (NULL as -1); IDEM_ENOTFOUND if
 * it returned no row. */
enum idem_err store_query_int(struct store *st, const char *sql,
    long long *v);

/* Records errnum/text as the last error ("errnum: text"). */
void store_set_error(struct store *st, unsigned errnum, const char *text);

/* Records s's error; IDEM_ESTORE. */
enum idem_err store_stmt_fail(struct store *st, MYSQL_STMT *s);

/* Records an error of idemgate's own (no server number; the text as
 * formatted); returns er. */
enum idem_err store_fail(struct store *st, enum idem_err er, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

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

/* Result columns, the bind cleared first; isnull may be NULL. */
void store_out_u64(MYSQL_BIND *b, uint64_t *v, my_bool *isnull);
void store_out_i64(MYSQL_BIND *b, int64_t *v, my_bool *isnull);
void store_out_dbl(MYSQL_BIND *b, double *v, my_bool *isnull);
/* Text into a fixed buffer of cap bytes (one kept for the NUL);
 * store_out_text_end terminates it after the fetch. */
void store_out_text(MYSQL_BIND *b, char *p, size_t cap, unsigned long *len,
    my_bool *isnull);
void store_out_text_end(char *p, size_t cap, unsigned long len,
    my_bool isnull);
/* Bytes into a buffer of cap bytes, their length to *len; p NULL and cap
 * 0 fetch the length alone (the bytes later, by column).  isnull may be
 * NULL where the column never is. */
void store_out_blob(MYSQL_BIND *b, void *p, size_t cap, unsigned long *len,
    my_bool *isnull);

/*
 * What keeps two runs of one cron job (cleanup, rekey) apart: on one
 * server the named lock of that name on this connection; on Galera, where
 * a named lock is local to its node, the idem_locks row of that name
 * (sql/005), held until its 'until' and renewed as the run goes.
 */
struct store_hold {
	struct store	*st;
	const char	*name;		/* borrowed */
	int		 row;		/* Galera: the lock row */
	char		 owner[160];
	int64_t		 renewed_ms;	/* clock_now_ms() of the last renewal */
};

/* Takes the lock name (h zeroed, h->st set before); IDEM_EBUSY if another
 * run holds it, IDEM_ESTORE on error.  host goes into a lock row's owner. */
enum idem_err store_hold_take(struct store_hold *h, struct store *st,
    const char *name, const char *host);
/* Between batches: a lock row is renewed now and then.  NULL: no-op. */
void store_hold_keep(struct store_hold *h);
void store_hold_drop(struct store_hold *h);

/* Unix time 0 as a DATETIME (the sessions run in UTC, '+00:00'): times
 * counted from it have no 2038 limit (UNIX_TIMESTAMP and FROM_UNIXTIME
 * have one in MariaDB 10.11). */
#define SQL_EPOCH	"TIMESTAMP'1970-01-01 00:00:00'"

/* A row's run deadline passed (NULL: a row from before migration 006,
 * which kept none). */
#define ADMIN_RUN_PAST \
	"(run_deadline < NOW(6) OR run_deadline IS NULL)"
/* An in-progress row whose run is over: its owner's lease lapsed (its
 * ttl says nothing of that: a lease renewal does not move it) and its run
 * deadline passed. */
#define ADMIN_RUN_OVER \
	"(lease_until < NOW(6) AND " ADMIN_RUN_PAST ")"
/* A row no run of whose key can still go on: finished, or its owner's
 * lease lapsed, and its run deadline passed.  A finished key's run may
 * outlive its answer (PHP after fastcgi_finish_request(), a CGI's
 * lingering child, an upstream given up as a tombstone): its row gone,
 * a retry would run beside it.  Only then may cleanup delete a row. */
#define ADMIN_GONE \
	"((state <> 0 OR lease_until < NOW(6)) AND " ADMIN_RUN_PAST ")"

/* An in-progress row's owner is gone, by the facts store_admin_owner_facts
 * set on this connection: the server has been up a whole lease
 * (@idem_live_floor; NULL on a connection that did not set it: no owner is
 * gone), and, on one server, no session holds the key's named lock
 * (lib/ident/fp.c: fp_lockname).  An owner cut off longer than its lease
 * (a frozen server keeps its session), or one whose server restarted under
 * it, still has an answer to write (its recorder): with its row gone a
 * retry would run again and the answer be lost. */
#define OWNER_GONE \
	"(@idem_live_floor AND (@idem_locks = 0 OR IS_USED_LOCK(CONCAT("	\
	"'idem:', LEFT(SHA2(CONCAT(scope, idem_key), 256), 48))) IS NULL))"
/* An in-progress row whose run is over and whose owner is gone: 1 or 0. */
#define ADMIN_ABANDONED \
	"COALESCE(" ADMIN_RUN_OVER " AND " OWNER_GONE ", 0)"

/* A cleanup run that succeeded, for idemctl metrics and idemtop alike: it
 * finished, or it stopped at its time limit (partial: a normal outcome for
 * cron, SPEC 10) having deleted something.  One that deleted nothing before
 * its limit (held back by a stopped replica, say) did not: the backlog only
 * grows.  A dry run deletes nothing and never counts. */
#define CLEANUP_SUCCEEDED						\
	"(dry_run = 0 AND (outcome = 'ok' OR (outcome = 'partial' AND"	\
	" rows_deleted + stale_released + counters_pruned > 0)))"

/* The one forget rule's condition (store_admin.c): a row in progress
 * goes only with force, its one placeholder (0 or 1), unless abandoned.
 * A finished row goes: forgetting it is the operator's word that its key
 * may run again (README: before its run deadline, beside what of its run
 * may go on). */
#define FORGET_UNLESS_LIVE \
	" AND (? = 1 OR state <> 0 OR " ADMIN_ABANDONED ")"

/* The SQL (malloc'd, NULL when out of memory) that adds the counter rows
 * before @idem_cut and up to @idem_upto (a batch's last minute) to
 * idem_counters_total, per host and route, every counter column from
 * COUNTER_COLUMNS like the gateway's INSERT. */
char *store_counters_fold_sql(void);

/*
 * The counter columns of idem_counters and idem_counters_total, the one
 * list that stat_names, the gateway's INSERT, cleanup's fold and the
 * SELECTs below are made of: X(column) for each, the counters in stat_id
 * order, then wait_sum_ms and a column per bucket (STAT_WAIT_BUCKETS).
 */
#define COUNTER_STAT_COLUMNS(X)						\
	X(requests) X(created) X(reused) X(mismatched) X(conflicted)	\
	X(waited) X(released) X(tombstoned) X(store_errors)		\
	X(missing_key) X(invalid_key) X(passthrough) X(quota_rejected)	\
	X(cache_hits)
#define COUNTER_WAIT_COLUMNS(X)						\
	X(wait_sum_ms) X(wait_b0) X(wait_b1) X(wait_b2) X(wait_b3)	\
	X(wait_b4) X(wait_b5) X(wait_b6) X(wait_b7) X(wait_b8) X(wait_b9)
#define COUNTER_COLUMNS(X)						\
	COUNTER_STAT_COLUMNS(X) COUNTER_WAIT_COLUMNS(X)

#define COUNTER_COL_PLAIN(c)	", " #c
#define COUNTER_COL_SUM(c)	", SUM(" #c ")"
/* ", requests, created, ..., wait_b9": every column, each after ", ". */
#define COUNTER_COLS_PLAIN	COUNTER_COLUMNS(COUNTER_COL_PLAIN)
/* ", SUM(requests), ..., SUM(wait_b9)". */
#define STAT_COLS		COUNTER_COLUMNS(COUNTER_COL_SUM)
/* ", SUM(wait_sum_ms), SUM(wait_b0), ..., SUM(wait_b9)". */
#define STAT_WAIT_COLS		COUNTER_WAIT_COLUMNS(COUNTER_COL_SUM)

/* 1 while a connection is up. */
int store_connected(const struct store *st);

/* The connection's client handle, for tests that inspect the server
 * behind the store's back; NULL when disconnected. */
MYSQL *store_mysql(struct store *st);

/* Closes the connection and every prepared statement on it. */
void store_disconnect(struct store *st);


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

/*
 * A row's identity and sealed answer, as rekey and the hashing key's
 * conversion read it (lib/store/store_hkey.c): SEAL_ROW_SQL's columns
 * first in a SELECT, bound by store_seal_row_bind to res[0..5].
 */
#define SEAL_ROW_SQL	"scope, idem_key, route, seal_kid, seal_nonce, resp_body"
#define SEAL_ROW_COLS	6
struct seal_row {
	uint64_t	 id;
	unsigned char	 scope[FP_LEN];
	char		 key[FP_KEY_MAX + 1];
	char		 route[256];
	char		 kid[CFG_SECRET_ID_MAX + 1];
	unsigned char	 nonce[SEAL_NONCE_LEN];
	unsigned long	 slen, klen, rlen, kidlen, nlen, blen;
	my_bool		 knull, rnull, kidnull, nnull, bnull;
	struct buf	 ct;		/* the ciphertext, when sealed */
};

void store_seal_row_bind(MYSQL_BIND *res, struct seal_row *r);

/* Runs s with in, fetches its one row into res (bound as above, more
 * columns after them allowed) and reads r's ciphertext; the texts are
 * ended, klen cut to what key holds.  IDEM_ENOTFOUND when no row. */
enum idem_err store_seal_row_read(struct store *st, MYSQL_STMT *s,
    MYSQL_BIND *in, MYSQL_BIND *res, struct seal_row *r);

#endif
