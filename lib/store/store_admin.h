/* The store's operator queries: cleanup, key inspection, fleet counters. */
#ifndef IDEM_STORE_ADMIN_H
#define IDEM_STORE_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "fp.h"
#include "store.h"

/*
 * Every call here needs a connected store (store_connect() succeeded).
 * On IDEM_ESTORE (and the other failures) store_last_error() holds a
 * one-line text for logs and operators (never for HTTP clients).
 */

/* Name of the MySQL named lock that keeps cleanup runs from overlapping. */
#define CLEANUP_LOCK_NAME	"idemgate-cleanup"

struct cleanup_opts {
	int		 batch;			/* rows per DELETE, >= 1 */
	int64_t		 max_ms;		/* 0 = no time limit */
	int64_t		 sleep_ms;		/* pause between batches */
	int		 dry_run;		/* count only, change nothing */
	/* In-progress rows are stale this long past their lease. */
	int64_t		 stale_after_ms;
	/* A lapsed lease counts only once the server has been up this long
	 * (the longest lease configured): a restart, or an outage its
	 * owners could not renew through, lapses live owners' leases too,
	 * and they renew within a lease once it is back (as a takeover's
	 * floor, lib/store/store.c). */
	int64_t		 live_floor_ms;
	int64_t		 counters_retention_ms;
	int64_t		 runs_retention_ms;
	const char	*host;			/* for idem_cleanup_runs */
	/* Called before each batch when set (--max-lag): returns once the
	 * run may go on (IDEM_OK), when deadline (0: none) passed
	 * (IDEM_ETIMEOUT), or on an error, with its text in err, that ends
	 * the run. */
	enum idem_err	(*pause)(void *arg, int64_t deadline, char *err,
			    size_t errlen);
	void		*pause_arg;
};

struct cleanup_result {
	uint64_t	 run_id;		/* idem_cleanup_runs.id, or 0 */
	uint64_t	 rows_deleted;		/* expired keys (dry: to go) */
	uint64_t	 stale_released;	/* abandoned in-progress keys */
	uint64_t	 counters_pruned;	/* idem_counters rows */
	uint64_t	 runs_pruned;		/* idem_cleanup_runs rows */
	/* DELETEs on idem_keys that removed rows */
	unsigned	 batches;
	int64_t		 elapsed_ms;
	char		 outcome[16];		/* ok partial failed dry-run */
	char		 reason[256];
};

/*
 * One cleanup run.  Takes GET_LOCK(CLEANUP_LOCK_NAME ":" the database's
 * name, 0) on the store's connection (IDEM_EBUSY if another connection
 * holds it; nothing recorded), records the run in idem_cleanup_runs (outcome 'running', updated at the
 * end), marks runs left 'running' by a dead process as failed, then deletes
 * in autocommitted batches of o->batch rows:
 *   1. expired keys (expires_at passed; in-progress ones only once their
 *      lease passed too), by the expiry index;
 *   2. in-progress keys whose lease passed more than stale_after_ms ago,
 *      by the (state, lease_until) index;
 *   3. idem_counters rows older than counters_retention_ms, and
 *   4. idem_cleanup_runs rows older than runs_retention_ms.
 * A phase ends with the first batch that removes fewer than o->batch rows.
 * When max_ms passes the run stops between batches: IDEM_ETIMEOUT, outcome
 * 'partial'.  A dry run counts (SELECT COUNT(*)) what each phase would
 * remove, records outcome 'dry-run' and changes no key or counter.
 * out is filled as far as the run went, also on failure.  OUT: out.
 */
enum idem_err store_admin_cleanup(struct store *st,
    const struct cleanup_opts *o, struct cleanup_result *out);

#define REKEY_LOCK_NAME	"idemgate-rekey"

struct rekey_opts {
	int		 batch;			/* rows per batch, >= 1 */
	int64_t		 max_ms;		/* 0 = no time limit */
	const char	*host;			/* for idem_rekey_runs */
};

struct rekey_result {
	uint64_t	 run_id;		/* idem_rekey_runs.id, or 0 */
	uint64_t	 rekeyed;		/* re-sealed under to_kid */
	uint64_t	 changed;		/* claimed or rewritten meanwhile */
	uint64_t	 unreadable;		/* key id not in the file, or
						 * the tag failed: left as is */
	uint64_t	 hashed;		/* hashed before the key: now
						 * keyed (lib/ident/hkey.h) */
	int		 rewrapped;		/* the hashing key, under
						 * to_kid now */
	unsigned	 batches;
	int64_t		 elapsed_ms;
	char		 to_kid[CFG_SECRET_ID_MAX + 1];
	char		 outcome[16];		/* ok partial failed */
	char		 reason[256];
};

/*
 * One rekey run: the store's hashing key is wrapped again under the
 * current key (the last line of secret_key_file) if another wraps it;
 * rows hashed before the key are converted to keyed hashes
 * (store_hkey_convert); then every row sealed under another key id than
 * the current one is opened and sealed again under the current key with
 * a fresh nonce.  Takes REKEY_LOCK_NAME as cleanup
 * takes its lock (IDEM_EBUSY, nothing recorded, if another run holds it),
 * records the run in idem_rekey_runs, and walks the rows by id in batches
 * of o->batch.  Each row is written with an UPDATE guarded by the key id
 * and nonce it was read with, so a row a gateway claimed or completed
 * meanwhile is left alone (counted as changed).  A row whose key id the
 * file lacks, or whose tag fails, is left as it is (unreadable).  When
 * max_ms passes the run stops between batches: IDEM_ETIMEOUT, outcome
 * 'partial'.  IDEM_EINVAL when no key is set; IDEM_ESEAL (nothing done,
 * nothing recorded) when the file lacks the key that wraps the store's
 * hashing key.  OUT: out, as far as the
 * run went, also on failure.
 */
enum idem_err store_admin_rekey(struct store *st, const struct rekey_opts *o,
    struct rekey_result *out);

/* How many idem_keys rows one key id seals ("" for rows in clear). */
struct kid_count {
	char		 kid[CFG_SECRET_ID_MAX + 1];
	uint64_t	 rows;
};

/* The rows per key id, by id, at most max of them.  OUT: out[0..*n). */
enum idem_err store_admin_kid_counts(struct store *st, struct kid_count *out,
    size_t max, size_t *n);

/* Key states as idemctl names them. */
enum admin_key_state {
	AKEY_IN_PROGRESS,
	AKEY_COMPLETED,
	AKEY_TOMBSTONE,
	AKEY_EXPIRED,		/* ttl passed, cleanup has not removed it yet */
};

const char *admin_key_state_name(enum admin_key_state s);

/* One idem_keys row.  Strings are copied (NUL-terminated); times are unix
 * seconds with microseconds. */
struct admin_key {
	uint64_t		 id;
	enum admin_key_state	 state;
	int			 raw_state;	/* column value: 0, 1, 2 */
	int			 lease_live;	/* in progress, lease live */
	int			 run_live;	/* in progress, its run
						 * deadline not passed */
	char			 route[256];
	char			 method[17];
	char			 owner[256];
	unsigned char		 fp[FP_LEN];
	uint64_t		 waiters;
	double			 created_at;
	double			 expires_at;
	double			 lease_until;
	double			 completed_at;	/* 0 if not completed */
	int			 has_resp;
	int			 resp_status;
	uint64_t		 resp_size;
	/* The key id its answer is sealed under; "" in clear.  A sealed
	 * answer whose key the file holds is opened (opened set,
	 * resp_status its status); open_er says why not otherwise
	 * (IDEM_ENOTFOUND: no such key id, IDEM_ESEAL: the tag failed). */
	char			 seal_kid[CFG_SECRET_ID_MAX + 1];
	int			 opened;
	enum idem_err		 open_er;
	double			 now;		/* the server's clock */
};

/* The most a sealed answer may take when idemctl opens it. */
#define ADMIN_SEALED_MAX	((size_t)80 * 1024 * 1024)

/*
 * The scope digests stored with key, by row id: up to max into out; *n
 * counts them all.  For an operator who cannot compute a keyed scope
 * (show without the hashing key).
 */
enum idem_err store_admin_key_scopes(struct store *st, const char *key,
    size_t keylen, unsigned char (*out)[FP_LEN], size_t max, size_t *n);

/*
 * Reads the row for (scope, key).  IDEM_ENOTFOUND if there is none.
 * With body != NULL the stored response body is appended to it (bounded by
 * body->max: IDEM_ETOOBIG past it); of a sealed answer, only once opened
 * (out->opened).  OUT: out.
 */
enum idem_err store_admin_key_get(struct store *st,
    const unsigned char scope[FP_LEN], const char *key, size_t keylen,
    struct admin_key *out, struct buf *body);

/*
 * Sets on this connection what tells an in-progress row's owner gone
 * (store_int.h: OWNER_GONE), for cleanup and the forget rule: whether the
 * server has been up live_floor_ms (the longest configured lease; an
 * owner whose server restarted under it reconnects within one), and
 * whether a held named lock keeps a row (one server; not on Galera).
 * Without it no in-progress row goes unforced.  A reconnect forgets it.
 */
enum idem_err store_admin_owner_facts(struct store *st,
    int64_t live_floor_ms);

/*
 * Deletes the row for (scope, key) if it is completed or a tombstone; an
 * in-progress row only with force, unless its run is over (lease lapsed,
 * run deadline passed) and its owner gone (store_admin_owner_facts).
 * IDEM_ENOTFOUND: no such row; IDEM_EBUSY: in progress and not forced
 * (nothing deleted).  One statement, so a row claimed meanwhile is safe.
 * Returns once no gateway may replay the deleted answer from memory
 * (RCACHE_FORGET_WAIT_MS, lib/ident/rcache.h).
 */
enum idem_err store_admin_key_forget(struct store *st,
    const unsigned char scope[FP_LEN], const char *key, size_t keylen,
    int force);

/* The same rule for the row with this id (idemtop's forget, which only
 * offers rows in progress, forces).  *deleted: 1 if it went. */
enum idem_err store_admin_forget_id(struct store *st, uint64_t id, int force,
    int *deleted);

/* Which keys a bulk forget takes: those of one route, by the status of
 * their stored answer and by age.  Strings are borrowed. */
struct forget_filter {
	const char	*route;		/* the stored route, byte for byte */
	int		 status_lo;	/* answers in [lo, hi]; 0: any row */
	int		 status_hi;
	int64_t		 since_ms;	/* created within; 0: any age */
	int		 force;		/* in-progress keys too */
};

/* What store_admin_route_count found, and the bounds that keep the
 * forget to it. */
struct forget_plan {
	uint64_t	 n;		/* keys the forget rule lets go */
	uint64_t	 kept;		/* in progress, kept (no force) */
	uint64_t	 max_id;	/* rows claimed later are spared */
	char		 cutoff[32];	/* created_at >= this; "" any age */
};

/* Rows per DELETE of a bulk forget. */
#define FORGET_BATCH	500

/*
 * Counts the keys of f (a consistent, non-locking read) and fixes the
 * window they were counted in: the newest row id and the created_at
 * cutoff, both on the server.  OUT: out.
 */
enum idem_err store_admin_route_count(struct store *st,
    const struct forget_filter *f, struct forget_plan *out);

/*
 * Forgets the keys of f within plan p, by the one forget rule
 * (store_admin_key_forget): ids found by a non-locking read, FORGET_BATCH
 * at a time, each batch one autocommitted DELETE by primary key that
 * checks the filter and the rule again, so a row claimed or changed
 * meanwhile is not touched.  Once any row went it returns only when no
 * gateway may replay a deleted answer from memory (RCACHE_FORGET_WAIT_MS),
 * also on failure.  OUT: *forgotten, rows deleted (also on failure).
 */
enum idem_err store_admin_route_forget(struct store *st,
    const struct forget_filter *f, const struct forget_plan *p,
    uint64_t *forgotten);

/* Counters summed over idem_counters rows, per route or for the fleet. */
struct admin_stat {
	char		 host[256];	/* by_host: its host, else "" */
	char		 route[256];
	uint64_t	 n[STAT__COUNT];
	/* The wait histogram, not cumulative. */
	uint64_t	 wait_bucket[STAT_WAIT_BUCKETS];
	uint64_t	 wait_sum_ms;
};

/*
 * Sums counters per route over minutes from since_s seconds ago (0: every
 * row still retained, and what cleanup folded), only route if not NULL,
 * sorted by route; by_host: per host and route, sorted by both.  *rows is
 * malloc'd (free() it), *nrows may be 0.  OUT: rows, nrows.
 */
enum idem_err store_admin_stats(struct store *st, int64_t since_s,
    const char *route, int by_host, struct admin_stat **rows,
    size_t *nrows);

/* Live table state for gauges. */
struct admin_gauges {
	/* Rows by state: in progress, completed, tombstone. */
	uint64_t	 rows[3];
	uint64_t	 expired;		/* past expiry, any state */
	uint64_t	 waiters;		/* sum over in-progress rows */
	uint64_t	 past_lease;		/* in progress, lease run out */
	double		 oldest_in_progress_s;	/* age, 0 if none */
	int		 has_cleanup;		/* a finished run, not dry */
	double		 last_cleanup_end;	/* unix seconds */
	int		 last_cleanup_ok;	/* it succeeded (store_admin.c) */
	int		 has_cleanup_ok;
	double		 last_cleanup_ok_end;	/* the last run that did */
};

enum idem_err store_admin_gauges(struct store *st, struct admin_gauges *out);

/* One privilege probe: table and statement kind ("SELECT", "INSERT",
 * "UPDATE", "DELETE"); 0 if the server refused to prepare it. */
struct admin_priv {
	const char	*table;
	const char	*what;
	int		 ok;
};

/* The server's max_allowed_packet (a stored answer must fit in it).
 * OUT: *bytes. */
enum idem_err store_admin_max_packet(struct store *st, uint64_t *bytes);

/* Which protocol the connection speaks (lib/store/store.h, "Two modes"). */
struct admin_mode {
	int		 galera;	/* a Galera node */
	int		 nodes;		/* wsrep_cluster_size */
	char		 state[32];	/* wsrep_local_state_comment: Synced */
	char		 group[128];	/* the mysql_group that answered */
	/* How the connection reaches the server: over TCP (not a unix
	 * socket), its TLS cipher ("" without TLS), and whether the client
	 * verifies the server's certificate (ssl-verify-server-cert). */
	int		 tcp;
	char		 cipher[64];
	int		 verified;
	/* On a Galera node: idem_quota is a MEMORY table, which Galera does
	 * not replicate (sql/011). */
	int		 quota_memory;
};
enum idem_err store_admin_mode(struct store *st, struct admin_mode *m);

/*
 * Probes the privileges the gateway and idemctl need by preparing (never
 * executing) one statement per (table, kind); privileges are checked when
 * a statement is prepared.  Fills up to max entries.  OUT: privs, n.
 */
enum idem_err store_admin_privileges(struct store *st,
    struct admin_priv *privs, size_t max, size_t *n);

#endif
