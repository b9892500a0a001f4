/* Hot-path SQL, one server and Galera (lib/store/store.c: why each is safe). */
#include <stddef.h>

#include "store_int.h"

#define LEASE_US	"DATE_ADD(NOW(6), INTERVAL ? MICROSECOND)"
/*
 * An in-progress row's run is surely over and its owner judged gone: the
 * lease lapsed, at least a lease after the server started (a restart
 * drops live owners' locks too: ? is that floor), and the run deadline
 * passed (an unbounded run's is the end of time).  A lapsed lease alone
 * never is: an upstream run (PHP-FPM) goes on after its owner stopped
 * reading it.
 */
#define RUN_OVER							\
	"(lease_until <= NOW(6) AND NOW(6) >= FROM_UNIXTIME(?)"		\
	" AND (run_deadline <= NOW(6) OR run_deadline IS NULL))"
/*
 * The row's run deadline rounded up to a whole second (none before
 * migration 006: no floor).  A finished key ends no earlier: a run may
 * go on after its answer (PHP's fastcgi_finish_request(), a CGI's
 * lingering child) or after its owner gave up on it (a tombstone), and a
 * key that ended before would be taken over beside it.  An unbounded
 * run's (fastcgi: without run_limit) is the end of time: never taken
 * over, as SPEC 2c says.
 */
#define RUN_END								\
	"DATE_ADD(" SQL_EPOCH ", INTERVAL (TIMESTAMPDIFF(MICROSECOND, "	\
	SQL_EPOCH ", COALESCE(run_deadline, " SQL_EPOCH "))"		\
	" + 999999) DIV 1000000 SECOND)"
/*
 * When the owner knows its run ended with its answer (? = 1: a CGI whose
 * process group had ended, a job), the run deadline becomes now, and the
 * key lives its ttl; otherwise (an upstream, a CGI lingering) it stays.
 * Before TTL_END in the SET: MariaDB's SET sees values assigned before.
 */
#define RUN_ENDED							\
	"run_deadline = IF(? = 1, LEAST(run_deadline, NOW(6)),"		\
	" run_deadline), "
/*
 * A finished key's end, on a whole second: the second the first answer's
 * Idempotency-Expires named (the first ?, unix time; 0 for none), ttl
 * (the second ?, µs) from now rounded up, or the run's end (RUN_END),
 * whichever is latest, so the key never ends before the date its client
 * was given (the gateway's clock may trail the server's, a second may
 * turn between the two), an answer recorded late still lives its ttl,
 * and no run of the key can still go on when it ends.  Replays read the
 * second back (READ_SQL's last column) and name it: header and row agree.
 */
#define TTL_END								\
	"GREATEST(DATE_ADD(" SQL_EPOCH ", INTERVAL ? SECOND),"		\
	" DATE_ADD(" SQL_EPOCH ", INTERVAL"				\
	" (TIMESTAMPDIFF(MICROSECOND, " SQL_EPOCH ", NOW(6))"		\
	" + ? + 999999)"						\
	" DIV 1000000 SECOND), " RUN_END ")"
/* A run deadline ? µs from now; SQL NULL for ?: unbounded, the end of
 * time (a NULL column is a row from before migration 006: the lease
 * alone). */
#define RUN_US								\
	"COALESCE(DATE_ADD(NOW(6), INTERVAL ? MICROSECOND),"		\
	" TIMESTAMP'9999-12-31 23:59:59')"

/*
 * One text per statement for both modes.  On Galera (lib/store/store.h, "Two
 * modes") the named-lock calls are left out: a lock is local to its node
 * there.  Each mode's variant keeps the same placeholders, so one binding
 * serves both; "? IS NULL" stands for a lock name it does not use.
 */
#define CLAIM_SQL(TAKE)							\
	"INSERT INTO idem_keys (scope, idem_key, route, method,"	\
	" fingerprint, hashed, state, owner, owner_token, waiters,"	\
	" created_at, lease_until, run_deadline, expires_at)"		\
	" SELECT ?, ?, ?, ?, ?, ?, 0, ?, ?, 0, NOW(6), " LEASE_US ", "	\
	RUN_US ", " LEASE_US " FROM DUAL WHERE " TAKE
#define READ_SQL(DROP)							\
	"SELECT id, fingerprint, state, owner_token,"			\
	" lease_until > NOW(6), expires_at > NOW(6),"			\
	" TIMESTAMPDIFF(MICROSECOND, NOW(6), lease_until),"		\
	" IF(state IN (1, 2) AND fingerprint = ?, resp_status, NULL),"	\
	" IF(state = 1 AND fingerprint = ?, resp_headers, NULL),"	\
	" IF(state IN (1, 2) AND fingerprint = ?, resp_body, NULL),"	\
	" IF(?, IF((state <> 0 AND expires_at <= NOW(6)) OR (state = 0"	\
	"   AND (((fingerprint = ? OR expires_at <= NOW(6)) AND "	\
	RUN_OVER							\
	"   ) OR owner_token = ?)), 1,"					\
	"   " DROP "), 0),"						\
	" TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at), takeovers,"	\
	" route, seal_kid, seal_nonce,"					\
	" TIMESTAMPDIFF(SECOND, " SQL_EPOCH ", expires_at)"		\
	" FROM idem_keys WHERE scope = ? AND idem_key = ?"
/* waiters first: MariaDB's SET sees values assigned before it. */
#define TAKEOVER_SQL							\
	"UPDATE idem_keys SET"						\
	" waiters = IF(expires_at <= NOW(6), 0, waiters),"		\
	" state = 0, fingerprint = ?, route = ?, method = ?,"		\
	" owner = ?, owner_token = ?, created_at = NOW(6),"		\
	" lease_until = " LEASE_US ","					\
	" run_deadline = " RUN_US ", takeovers = takeovers + 1,"	\
	" expires_at = " LEASE_US ", completed_at = NULL,"		\
	" resp_status = NULL, resp_headers = NULL, resp_body = NULL,"	\
	" resp_size = NULL, seal_kid = NULL, seal_nonce = NULL"		\
	" WHERE id = ? AND ((state <> 0 AND expires_at <= NOW(6)) OR"	\
	" (state = 0 AND owner_token = ? AND (" RUN_OVER " OR"		\
	" owner_token = ?)))"
#define COMPLETE_SQL(DROP)						\
	"UPDATE idem_keys SET"						\
	" waiters = waiters + " DROP ","				\
	" state = 1, resp_status = ?, resp_headers = ?, resp_body = ?,"	\
	" resp_size = ?, seal_kid = ?, seal_nonce = ?,"			\
	" completed_at = NOW(6), " RUN_ENDED "expires_at = " TTL_END	\
	" WHERE id = ? AND owner_token = ?"
#define TOMBSTONE_SQL(DROP)						\
	"UPDATE idem_keys SET"						\
	" waiters = waiters + " DROP ","				\
	" state = 2, resp_status = ?, resp_headers = NULL,"		\
	" resp_body = ?, resp_size = NULL, seal_kid = ?, seal_nonce = ?,"	\
	" completed_at = NOW(6), " RUN_ENDED "expires_at = " TTL_END	\
	" WHERE id = ? AND owner_token = ?"
#define EPOCH_SQL(SYNC)							\
	"SET STATEMENT innodb_lock_wait_timeout = 1" SYNC " FOR"	\
	" SELECT n FROM idem_epoch WHERE id = 1 LOCK IN SHARE MODE"
#define LEGACY_SQL							\
	"SELECT id FROM idem_keys WHERE scope = ? AND idem_key = ?"	\
	" AND hashed = 0"
#define DROP_LOCK	"0 * COALESCE(RELEASE_LOCK(?), 0)"
#define NO_LOCK		"0 * (? IS NULL)"

const char *const store_stmt_sql[STMT__COUNT] = {
	[STMT_CLAIM] = CLAIM_SQL("GET_LOCK(?, 0) = 1"),
	/*
	 * kept: when we hold the lock (first ? = 1) and the row may be taken
	 * over (finished and its ttl passed; or in progress, same fingerprint
	 * or ttl passed, and its run over (RUN_OVER), or the token is ours
	 * from before a reconnect) the lock is kept for the takeover;
	 * otherwise it is dropped right here.
	 */
	[STMT_READ] = READ_SQL(DROP_LOCK),
	[STMT_READ_CAUSAL] = READ_SQL(DROP_LOCK),
	[STMT_TAKEOVER] = TAKEOVER_SQL,
	/* GET_LOCK nests in MariaDB: never take a lock we already hold (1),
	 * nor one a session we keep for it holds (2: the third ?, its id;
	 * store.h: STORE_GRAVES).  A killed session lets its locks go some
	 * time after KILL returns (later still on a loaded server): wait ?
	 * ms for it, within the call's deadline (store.c: store_renew).
	 * Only waiters, which give the lock straight back, can hold it
	 * otherwise: the renew just proved the lease ours. */
	[STMT_RELOCK] =
	    "SELECT CASE WHEN IS_USED_LOCK(?) <=> CONNECTION_ID() THEN 1"
	    " WHEN IS_USED_LOCK(?) <=> ? THEN 2"
	    " ELSE GET_LOCK(?, ? / 1000) END",
	/* Sleeps until the lock comes free and gives it straight back, in
	 * one statement, so a queue of waiters drains without round trips. */
	[STMT_WAITLOCK] =
	    "SELECT IF(GET_LOCK(?, ?) = 1,"
	    " 1 + 0 * COALESCE(RELEASE_LOCK(?), 0), 0)",
	[STMT_UNLOCK] = "DO RELEASE_LOCK(?)",
	[STMT_RENEW] =
	    "UPDATE idem_keys SET lease_until = " LEASE_US
	    " WHERE id = ? AND owner_token = ? AND state = 0",
	[STMT_COMPLETE] = COMPLETE_SQL(DROP_LOCK),
	[STMT_TOMBSTONE] = TOMBSTONE_SQL(DROP_LOCK),
	[STMT_RELEASE] =
	    "DELETE FROM idem_keys WHERE id = ? AND owner_token = ?",
	/* By key: the row id of a claim cut off was never learnt.  Only a
	 * row under the claim's own (random) token, still in progress. */
	[STMT_RELEASE_DOUBT] =
	    "DELETE FROM idem_keys WHERE scope = ? AND idem_key = ? AND"
	    " owner_token = ? AND state = 0",
	[STMT_WAIT_INC] =
	    "UPDATE idem_keys SET waiters = waiters + 1"
	    " WHERE scope = ? AND idem_key = ?",
	[STMT_WAIT_DEC] =
	    "UPDATE idem_keys SET waiters = GREATEST(waiters, 1) - 1"
	    " WHERE scope = ? AND idem_key = ?",
	[STMT_COUNTERS] = NULL,		/* built from stat_names */
	/* The count comes back as the insert id (0: the first). */
	[STMT_QUOTA] = "INSERT INTO idem_quota (scope, minute, n)"
	    " VALUES (?, UNIX_TIMESTAMP() DIV 60, 1)"
	    " ON DUPLICATE KEY UPDATE n = LAST_INSERT_ID(n + 1)",
	/* Bumped by migration 002's triggers: see lib/ident/rcache.h.  A
	 * locking read waits for a delete in flight to commit, instead of
	 * reading the value from before it (through as many undo records
	 * as the delete has rows); a second at most, so a stop is never
	 * held up. */
	/* The server's start, so a restart (which drops every named lock)
	 * is not taken for the death of every owner: see store_claim. */
	/* With it, max_allowed_packet: an answer that cannot fit is refused
	 * before it is sent (sent, it costs the connection and would look
	 * like an outage).  One round trip for both at connect. */
	/* And whether this is a Galera node (NULL where the server has no
	 * such variable, as on MySQL). */
	[STMT_BOOT] = "SELECT CAST(CEILING(UNIX_TIMESTAMP(NOW(6))) -"
	    " VARIABLE_VALUE AS SIGNED), @@max_allowed_packet,"
	    " (SELECT VARIABLE_VALUE = 'ON'"
	    "  FROM information_schema.GLOBAL_VARIABLES"
	    "  WHERE VARIABLE_NAME = 'WSREP_ON'),"
	    " (SELECT VARIABLE_VALUE = 'ON'"
	    "  FROM information_schema.GLOBAL_STATUS"
	    "  WHERE VARIABLE_NAME = 'WSREP_READY'),"
	    " CAST(CEILING(UNIX_TIMESTAMP(NOW(6))) AS SIGNED)"
	    " FROM information_schema.GLOBAL_STATUS"
	    " WHERE VARIABLE_NAME = 'UPTIME'",
	[STMT_EPOCH] = EPOCH_SQL(""),
	/* lib/store/store_hkey.c: a row stored before the hashing key. */
	[STMT_LEGACY] = LEGACY_SQL,
	/* The session of the id given, if it is this user's, from our
	 * address with the port given (as the server writes it: our own
	 * session's host with its port swapped), and not this one: through
	 * a proxy or a NAT that changes ports, none is. */
	[STMT_LOST_ID] =
	    "SELECT p.ID FROM information_schema.PROCESSLIST p,"
	    " information_schema.PROCESSLIST me"
	    " WHERE me.ID = CONNECTION_ID() AND p.ID = ? AND p.ID <> me.ID"
	    " AND p.USER = me.USER AND p.HOST = CONCAT(LEFT(me.HOST,"
	    " LENGTH(me.HOST) - LENGTH(SUBSTRING_INDEX(me.HOST, ':', -1))),"
	    " ?)",
	[STMT_KILL] = "KILL CONNECTION ?",
};

/*
 * Galera's variants; NULL: the same text as above.  Statements only the
 * single-server mode runs (the lock statements, the waiters count) have
 * none.  Causal reads (wsrep_sync_wait) only where a stale read could do
 * harm:
 * - the takeover UPDATE (3: its WHERE reads): a lease renewed on another
 *   node but not applied here yet must not look lapsed;
 * - the read after a claim lost to another node's INSERT (1213), whose
 *   row may not be applied here yet;
 * - the replay cache's epoch: a forget on another node must reach this
 *   node's caches within RCACHE_VALID_MS.
 * Not on the plain read of a replay or a waiter's poll: a row is only
 * ever read older, never wrong (states only move forward, and a read
 * after our own INSERT's duplicate error sees the row that caused it),
 * so a stale read costs a poll, not a promise.
 */
const char *const store_stmt_sql_galera[STMT__COUNT] = {
	[STMT_CLAIM] = CLAIM_SQL("? IS NOT NULL"),
	[STMT_READ] = READ_SQL(NO_LOCK),
	[STMT_READ_CAUSAL] = "SET STATEMENT wsrep_sync_wait = 1 FOR "
	    READ_SQL(NO_LOCK),
	[STMT_TAKEOVER] = "SET STATEMENT wsrep_sync_wait = 3 FOR "
	    TAKEOVER_SQL,
	[STMT_COMPLETE] = COMPLETE_SQL(NO_LOCK),
	[STMT_TOMBSTONE] = TOMBSTONE_SQL(NO_LOCK),
	[STMT_EPOCH] = EPOCH_SQL(", wsrep_sync_wait = 1"),
	/* Causal: a row another node converted must not look unconverted. */
	[STMT_LEGACY] = "SET STATEMENT wsrep_sync_wait = 1 FOR " LEGACY_SQL,
};
