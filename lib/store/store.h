/* The MySQL/MariaDB store: the only place that speaks SQL (hot path). */
#ifndef IDEM_STORE_H
#define IDEM_STORE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "answer.h"
#include "buf.h"
#include "cfg.h"
#include "err.h"
#include "fp.h"
#include "ident.h"
#include "seal.h"

/*
 * One connection with its prepared statements.  Not thread-safe: one per
 * thread.  Connects lazily and reconnects (re-preparing statements) after
 * the server went away, so callers just retry on their next request.
 */
struct store;

/*
 * Two modes, chosen per connection at connect, with no config: on one
 * server (or any server without wsrep_on) claims, waits and takeovers lean
 * on MySQL named locks (GET_LOCK); on a Galera node, where a named lock is
 * local to its node, the same statements run without them: the unique key
 * and certification decide a claim, the lease alone says an owner is
 * alive, waiters poll (lib/store/store.c says what each statement does in each
 * mode).  mysql_group may list several option-file groups (one per node):
 * the first that answers is used; a lost connection moves to the next.
 */

/*
 * Once per process, before any thread starts: mysql_library_init.
 * store_new() calls it too (pthread_once), but a threaded program should
 * call it from main() first.  store_global_end() at exit.
 */
enum idem_err store_global_init(void);
void store_global_end(void);

/* Each thread that uses a store calls these at its start and end. */
enum idem_err store_thread_init(void);
void store_thread_end(void);

/*
 * Creates a store for cfg's mysql_defaults_file / mysql_group (a MySQL
 * option file with host/socket/port/user/password/database).  Does not
 * connect yet.  cfg is borrowed and must outlive the store.
 */
enum idem_err store_new(const struct cfg *cfg, struct store **out);
void store_free(struct store *st);		/* NULL is a no-op */

/* Connects now if not connected.  IDEM_ESTORE if unreachable. */
enum idem_err store_connect(struct store *st);

/*
 * Deadlines.  A connect takes at most STORE_CONNECT_MS (connect, then the
 * handshake under the read timeout).  Every statement of the hot path
 * must answer within the store's call budget: three quarters of the
 * shortest configured lease's stop margin (cfg_lease_margin_ms), at most
 * STORE_CALL_MAX_MS; past it the call fails as a lost connection
 * (IDEM_ESTORE), however the network behaves (a partition that drops
 * packets blocks a read for ever).  A call cut off is never repeated.
 */
#define STORE_CONNECT_TIMEOUT_S	1
/* The client library's own read timeout: a fallback only, above the
 * longest GET_LOCK slice (STORE_WAIT_SLICE_MS); deadlines are ours. */
#define STORE_READ_TIMEOUT_S	5
#define STORE_CONNECT_MS	3000
#define STORE_CALL_MAX_MS	2000

/* The next statement (and a connect it needs) gets ms instead of the
 * call budget. */
void store_deadline(struct store *st, int64_t ms);

/*
 * For a long-lived process's request threads (the gateway's): a lapsed
 * lease is taken over only once a lease has passed since the server
 * started and since this process last found it gone or out of reach.
 * A server that took long to start (crash recovery) counts its uptime
 * from before it listened, while owners could not yet reconnect.  Not
 * for short-lived processes (idemctl run), which saw no outage.
 */
void store_set_resident(struct store *st);

/* For operator commands (migrate, cleanup): the client library's long
 * read timeout, set before connecting, for statements that take long. */
void store_set_patient(struct store *st);


/* The server's last error text, for logs only (never for clients). */
const char *store_last_error(const struct store *st);

/* Last MySQL error number (0 after a success of store_exec). */
unsigned store_errno(const struct store *st);

/* What an operator should do about the last error ("schema missing: run
 * idemctl migrate"), or NULL when there is no better advice. */
const char *store_hint(const struct store *st);

enum claim_state {
	CLAIM_NEW,		/* ours: run the handler, then
				 * complete/release */
	CLAIM_DONE,		/* completed with the same fingerprint:
				 * replay */
	CLAIM_MISMATCH,		/* same key, different fingerprint: 422 */
	CLAIM_BUSY,		/* in progress elsewhere: store_wait, claim
				 * again */
	CLAIM_TOMBSTONE,	/* answer was too large to keep: error, no
				 * rerun */
	CLAIM_AGAIN,		/* the row changed under the claim: claim
				 * again */
	CLAIM_SEALED,		/* completed, same fingerprint, but sealed
				 * under a key we lack or failing its tag:
				 * error, no rerun */
};

/*
 * Lost connections kept open (at most this many per claim).  A call that
 * times out while its connection holds a live claim's named lock (the
 * server frozen, or every path to it cut) makes the client library close
 * the socket; the server, once back, would end that session and drop the
 * lock, and a retry elsewhere could take the key over (its lease lapsed,
 * its run deadline passed) before the owner's answer is written.  The
 * socket is kept open instead (a dup), so the session and its lock live
 * on until the claim's outcome is written, or its owner dies.
 */
#define STORE_GRAVES		4

/*
 * Result of store_claim().  For CLAIM_DONE, ans holds the stored answer
 * (owned; claim_reset() frees).  For CLAIM_NEW, id and token name the row
 * we own.  For CLAIM_TOMBSTONE, ans.status is the first answer's.  For
 * CLAIM_BUSY, lease_left_ms is the live lease, and nap_us, when not 0, the
 * time store_wait sleeps instead of waiting on the lock (nobody holds it
 * to wake a waiter).
 */
struct claim {
	enum claim_state state;
	uint64_t	 id;
	uint64_t	 token;
	int		 locked;	/* we hold the named lock */
	int64_t		 lease_left_ms;
	int64_t		 nap_us;
	int64_t		 expires_in_us;	/* CLAIM_DONE: ttl left when read */
	struct answer	 ans;
	char		 lockname[FP_LOCKNAME_LEN];
	unsigned long	 conn_gen;	/* store connection the lock is on */
	/* CLAIM_NEW: IDEMGATE_FENCE, larger at each claim or takeover of
	 * the key (row id * STORE_FENCE_STEP + takeovers). */
	uint64_t	 fence;
	/* CLAIM_NEW: the row's identity, bound into its sealed answer. */
	struct seal_ad	 ad;
	/* CLAIM_SEALED: the row's key id, and IDEM_ENOTFOUND (no such key
	 * in the file) or IDEM_ESEAL (the tag failed: wrong key material,
	 * or the ciphertext was moved or altered). */
	char		 seal_kid[CFG_SECRET_ID_MAX + 1];
	enum idem_err	 seal_er;
	/* Sockets of lost connections whose session holds the key's named
	 * lock (store_graves_take), owned: claim_reset closes them. */
	int		 grave[STORE_GRAVES];
	uint64_t	 grave_id[STORE_GRAVES];	/* their sessions */
	unsigned	 ngrave;
	/* CLAIM_NEW, set by the owner before its outcome is recorded: the
	 * run ended with its answer (nothing of it runs on), so the key
	 * ends at its ttl, not at its run deadline (store_complete). */
	int		 run_over;
	/* A claim that failed after its INSERT (or takeover) was sent: a
	 * row of the key may be ours under doubt_token (0: none) though
	 * its id was never learnt.  store_release deletes it by key and
	 * token (c->id 0), so the key is free once the store answers, not
	 * a lease and a run deadline later. */
	uint64_t	 doubt_token;
	unsigned char	 doubt_scope[FP_LEN];
	char		 doubt_key[FP_KEY_MAX];
	size_t		 doubt_keylen;
};

#define STORE_FENCE_STEP	1000000u

void claim_init(struct claim *c);
void claim_reset(struct claim *c);

/* Moves the kept sockets of st's live claim (see STORE_GRAVES) into c,
 * for whoever writes its outcome later (lib/idem/recorder.h); st's claim
 * is then no longer live. */
void store_graves_take(struct store *st, struct claim *c);

/*
 * One claim attempt.  An INSERT whose duplicate-key error is the normal
 * path for a retry (no SELECT-then-INSERT window).  A finished row whose
 * ttl passed, or an in-progress row whose lease expired, whose owner no
 * longer holds the named lock and whose run deadline (claim + id->run_ms,
 * on the server's clock) passed, is taken over by exactly one caller
 * (conditional UPDATE) and reported as CLAIM_NEW; a lapsed lease counts
 * only once the server has been up for id->lease_ms (a restart drops live
 * owners' locks too).  On CLAIM_NEW the caller holds the key's named lock
 * until store_complete/store_tombstone/store_release.  A row that changed
 * between the statements (or a connection lost between them) gives
 * CLAIM_AGAIN: the caller claims again, within its own bound.  OUT: c.
 */
enum idem_err store_claim(struct store *st, const struct idem_id *id,
    struct claim *c);

/*
 * After CLAIM_BUSY: blocks (without polling) until the key's owner
 * releases its named lock or wait_ms passes (or sleeps out c->nap_us, at
 * most wait_ms); then the caller claims again.  Also counts this waiter in
 * the row's waiters column while waiting, for idemtop.
 */
enum idem_err store_wait(struct store *st, const struct idem_id *id,
    const struct claim *c, int64_t wait_ms);

/*
 * Counts a waiter in (delta > 0) or out of the row's waiters column, for
 * a waiter that waits without store_wait (the gateway parks its waiters:
 * fcgi/park.h).  No-op on Galera.
 */
enum idem_err store_waiter(struct store *st, const struct idem_id *id,
    int delta);

/*
 * A flag (a signal handler's) that ends store_claim_wait's wait early,
 * as if wait_ms had passed, within STORE_STOP_MS of it being set (a
 * waiting `idemctl run` told to stop).  NULL: none.
 */
#define STORE_STOP_MS	250
void store_set_stop(struct store *st, const volatile sig_atomic_t *flag);

/*
 * The claim as the gateway and `idemctl run` make it: store_claim, and
 * while the key is busy elsewhere (or changed under the claim),
 * store_wait and claim again, until wait_ms passes (or the stop flag is
 * set).  On return c->state is never CLAIM_AGAIN (CLAIM_BUSY when the
 * wait ran out).  OUT: c,
 * *read_us (CLOCK_MONOTONIC µs before the last claim: a won lease runs
 * from there), *waited_ms.
 */
enum idem_err store_claim_wait(struct store *st, const struct idem_id *id,
    int64_t wait_ms, struct claim *c, int64_t *read_us, int64_t *waited_ms);

/*
 * Counts one new key of scope in the current minute (server time) across
 * the fleet, in one statement.  OUT: *n, the count with this one.
 */
enum idem_err store_quota_take(struct store *st,
    const unsigned char scope[FP_LEN], uint64_t *n);

/* The replay-cache epoch (idem_epoch), which migration 002's triggers
 * bump when a live completed row is deleted or changed.  OUT: *epoch. */
enum idem_err store_epoch(struct store *st, uint64_t *epoch);

/* Pushes the lease of an owned row lease_ms into the future. */
enum idem_err store_renew(struct store *st, const struct claim *c,
    int64_t lease_ms);

/*
 * Stores the handler's answer a (its replayable header lines; the body
 * binary-safe), marks the row completed with expiry now + ttl_ms and
 * drops the named lock.  With a secret_key_file loaded (cfg_load_secrets)
 * the status, headers and body are sealed under its current key, bound
 * to the row (c->ad); a later claim opens them (or says CLAIM_SEALED).  IDEM_ETOOBIG (nothing sent) when a cannot fit
 * the server's max_allowed_packet.
 */
enum idem_err store_complete(struct store *st, const struct claim *c,
    const struct answer *a, int64_t ttl_ms);

/* Marks the row a tombstone (answer too large to keep; status kept) and
 * drops the named lock.  Retries get an error, never a second run.  It
 * ends as store_complete's row does (expires_s: the second the first
 * answer named, 0 for none). */
enum idem_err store_tombstone(struct store *st, const struct claim *c,
    int status, int64_t expires_s, int64_t ttl_ms);

/* Deletes the owned row (5xx, crash, timeout) and drops the named lock so
 * a retry runs the handler again. */
enum idem_err store_release(struct store *st, const struct claim *c);

/* Fleet counters, one row per (minute, host, route), added to (INSERT ...
 * ON DUPLICATE KEY UPDATE col = col + VALUES(col)). */
enum stat_id {
	STAT_REQUESTS,		/* protected requests */
	STAT_CREATED,
	STAT_REUSED,
	STAT_MISMATCHED,	/* 422 */
	STAT_CONFLICTED,	/* 409 */
	STAT_WAITED,
	STAT_RELEASED,
	STAT_TOMBSTONED,
	STAT_STORE_ERRORS,
	STAT_MISSING_KEY,
	STAT_INVALID_KEY,
	STAT_PASSTHROUGH,	/* requests the guard did not protect */
	STAT_QUOTA_REJECTED,	/* 429: new_keys_per_minute */
	STAT_CACHE_HITS,	/* replays from the replay cache (of reused) */
	STAT__COUNT
};

/* Wait-time histogram upper bounds in ms; the last bucket is +Inf. */
#define STAT_WAIT_BUCKETS	10
extern const int64_t stat_wait_le_ms[STAT_WAIT_BUCKETS - 1];

/* The bucket a wait of wait_ms falls in: the first whose bound it does not
 * pass, the last (+Inf) past them all; a negative wait counts as 0. */
size_t stat_wait_bucket(int64_t wait_ms);

/* stat_wait_percentile's answers that are not a bound; they sort below
 * and above every bound. */
#define STAT_WAIT_NONE	(-1)		/* no waits at all */
#define STAT_WAIT_INF	INT64_MAX	/* in the +Inf bucket */

/* The wait histogram's percentile p (0 < p <= 1): the upper bound in ms of
 * the bucket holding it, STAT_WAIT_INF for the +Inf bucket, STAT_WAIT_NONE
 * when bucket[] is all 0.  Callers say "no data" in their own words. */
int64_t stat_wait_percentile(const uint64_t bucket[STAT_WAIT_BUCKETS],
    double p);

/* Column names, for SQL and for idemctl/idemtop output. */
extern const char *const stat_names[STAT__COUNT];

struct stat_row {
	int64_t		 minute;	/* unix time, multiple of 60 */
	const char	*route;
	uint64_t	 n[STAT__COUNT];
	uint64_t	 wait_bucket[STAT_WAIT_BUCKETS]; /* not cumulative */
	uint64_t	 wait_sum_ms;
};

enum idem_err store_counters_add(struct store *st, const char *host,
    const struct stat_row *rows, size_t nrows);

/* Schema version this build expects (highest sql/NNN-*.sql). */
int store_schema_expected(void);
/* 1 when version (0: none) is older than this build's, why then saying
 * so with the fix, for one line; 0 otherwise. */
int store_schema_old(int version, char *why, size_t len);
/* Version in the database, 0 if no schema yet.  OUT: version. */
enum idem_err store_schema_version(struct store *st, int *version);
/* Applies missing migrations in order; safe to run twice.  OUT: applied. */
enum idem_err store_migrate(struct store *st, int *applied);

struct st_mysql;

/*
 * A client handle (mysql_init) set to read cfg's mysql_defaults_file and
 * option-file group, with a 2 s connect timeout, read_timeout_s and no
 * silent reconnect; the caller adds its own options and connects.
 * IDEM_ECONFIG, with why in err, when the option file will not do
 * (cfg_check_option_group: never the default socket); IDEM_ENOMEM.
 * OUT: *out, set only on success.
 */
enum idem_err store_mysql_init(const struct cfg *cfg, const char *group,
    unsigned read_timeout_s, char *err, size_t errlen,
    struct st_mysql **out);

/* Makes a connected handle's socket close-on-exec (the client library
 * leaves it open across exec): no program started later inherits it. */
void store_cloexec(struct st_mysql *my);

#endif
