/* Tests of the store's connections against a real MariaDB (env IDEM_TEST_MYCNF): the seen-key shortcut, the replay cache's epoch, counters, reconnects, an unreachable server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>

#include "../lib/check.h"
#include "clock.h"
#include "stats.h"
#include "store.h"
#include "store_int.h"
#include "store_fixture.h"

static long long
sql_int(struct store *st, const char *q)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	long long	 v = -1;

	if (mysql_query(store_mysql(st), q) != 0)
		return -2;
	if ((res = mysql_store_result(store_mysql(st))) == NULL)
		return -3;
	if ((row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
		v = atoll(row[0]);
	mysql_free_result(res);
	return v;
}

/*
 * A connection that completed or replayed a key reads its retries with one
 * statement; anything but a live completed row with the same fingerprint
 * still takes the full claim.
 */
static void
test_seen(void)
{
	struct store	*a = open_store(), *b = open_store();
	struct idem_id	 id, other;
	struct claim	 c, d;
	uint64_t	 rt0;

	claim_init(&c);
	claim_init(&d);
	mkid(&id, "seen-1", "amount=5");
	CHECK(store_claim(a, &id, &c) == IDEM_OK && c.state == CLAIM_NEW);
	CHECK(complete(a, &c, 201, "X-A: 1\r\n", 8, "paid", 4,
	    60000) == IDEM_OK);
	rt0 = store_round_trips(a);
	CHECK(store_claim(a, &id, &c) == IDEM_OK && c.state == CLAIM_DONE);
	CHECK(store_round_trips(a) - rt0 == 1);
	CHECK(c.ans.status == 201 && c.ans.body.len == 4 &&
	    memcmp(c.ans.body.p, "paid", 4) == 0);
	CHECK(c.ans.hdrs.len == 8 && memcmp(c.ans.hdrs.p, "X-A: 1\r\n", 8) == 0);

	/* Another connection: two statements first, one once it has seen. */
	rt0 = store_round_trips(b);
	CHECK(store_claim(b, &id, &d) == IDEM_OK && d.state == CLAIM_DONE);
	CHECK(store_round_trips(b) - rt0 == 2);
	rt0 = store_round_trips(b);
	CHECK(store_claim(b, &id, &d) == IDEM_OK && d.state == CLAIM_DONE);
	CHECK(store_round_trips(b) - rt0 == 1);

	/* Seen, but a different body: still 422. */
	mkid(&other, "seen-1", "amount=6");
	CHECK(store_claim(a, &other, &c) == IDEM_OK &&
	    c.state == CLAIM_MISMATCH);

	/* Seen, then forgotten by an operator: new again, and a second
	 * seen connection finds it in progress. */
	CHECK(sql_int(a, "DELETE FROM idem_keys WHERE idem_key = 'seen-1'")
	    == -3);
	CHECK(store_claim(a, &id, &c) == IDEM_OK && c.state == CLAIM_NEW);
	CHECK(c.locked == 1);
	CHECK(store_claim(b, &id, &d) == IDEM_OK && d.state == CLAIM_BUSY);
	CHECK(store_release(a, &c) == IDEM_OK);

	claim_reset(&c);
	claim_reset(&d);
	store_free(a);
	store_free(b);
}

/* The replay-cache epoch moves only when a live answer is deleted or
 * edited; the claim reports how long a replayed answer has left. */
static void
test_epoch(void)
{
	struct store	*a = open_store(), *b = open_store();
	struct idem_id	 id, gone;
	struct claim	 c, d;
	uint64_t	 e0 = 0, e1 = 0;
	time_t		 t0;
	char		 q[128];

	claim_init(&c);
	claim_init(&d);
	CHECK(store_epoch(a, &e0) == IDEM_OK);
	mkid(&id, "epoch-1", "amount=1");
	CHECK(store_claim(a, &id, &c) == IDEM_OK && c.state == CLAIM_NEW);
	CHECK(store_renew(a, &c, 5000) == IDEM_OK);
	CHECK(complete(a, &c, 200, NULL, 0, "ok", 2, 60000) == IDEM_OK);
	CHECK(store_claim(b, &id, &d) == IDEM_OK && d.state == CLAIM_DONE);
	printf("# ttl left on replay: %lld us\n", (long long)d.expires_in_us);
	/* ttl from the completion, ended on the next whole second. */
	CHECK(d.expires_in_us > 55000000 && d.expires_in_us <= 61000000);
	/* A released key and an expired one taken over: no change. */
	mkid(&gone, "epoch-2", "amount=2");
	CHECK(store_claim(a, &gone, &c) == IDEM_OK && c.state == CLAIM_NEW);
	CHECK(store_release(a, &c) == IDEM_OK);
	gone.ttl_ms = 1;
	CHECK(store_claim(a, &gone, &c) == IDEM_OK && c.state == CLAIM_NEW);
	CHECK(complete(a, &c, 200, NULL, 0, "x", 1, 1) == IDEM_OK);
	sleep_past_ttl(1);
	CHECK(store_claim(b, &gone, &d) == IDEM_OK && d.state == CLAIM_NEW);
	CHECK(complete(b, &d, 200, NULL, 0, "y", 1, 1) == IDEM_OK);
	sleep_past_ttl(1);
	/* The waiters count of a live answer, and an expired row's delete. */
	CHECK(sql_int(a, "UPDATE idem_keys SET waiters = waiters + 1 WHERE"
	    " idem_key = 'epoch-1'") == -3);
	CHECK(sql_int(a, "DELETE FROM idem_keys WHERE idem_key = 'epoch-2'")
	    == -3);
	CHECK(store_epoch(b, &e1) == IDEM_OK && e1 == e0);
	/* Edit a live answer, then delete it: one bump each. */
	CHECK(sql_int(a, "UPDATE idem_keys SET resp_body = 'no' WHERE"
	    " idem_key = 'epoch-1'") == -3);
	CHECK(store_epoch(b, &e1) == IDEM_OK && e1 == e0 + 1);
	/* Everyday writes take no lock on the epoch row: a complete left
	 * open in a transaction does not hold up the epoch read. */
	mkid(&gone, "epoch-3", "amount=3");
	CHECK(store_claim(a, &gone, &c) == IDEM_OK && c.state == CLAIM_NEW);
	CHECK(sql_int(a, "START TRANSACTION") == -3);
	CHECK(sql_int(a, "UPDATE idem_keys SET state = 1, resp_status = 200,"
	    " expires_at = NOW(6) + INTERVAL 1 DAY WHERE idem_key = 'epoch-3'")
	    == -3);
	e1 = 0;
	CHECK(store_epoch(b, &e1) == IDEM_OK && e1 == e0 + 1);
	CHECK(sql_int(a, "COMMIT") == -3);
	snprintf(q, sizeof(q), "DO RELEASE_LOCK('%s')", c.lockname);
	CHECK(sql_int(a, q) == -3);
	/* A delete not yet committed: the epoch read waits for it (a
	 * locking read: no walk through a long undo chain, and never the
	 * value from before a bump as if it were current). */
	CHECK(sql_int(a, "START TRANSACTION") == -3);
	CHECK(sql_int(a, "DELETE FROM idem_keys WHERE idem_key = 'epoch-1'")
	    == -3);
	e1 = 0;
	t0 = time(NULL);
	CHECK(store_epoch(b, &e1) == IDEM_ESTORE && e1 == 0);
	CHECK(time(NULL) - t0 <= 3);	/* gives up after a second */
	CHECK(sql_int(a, "COMMIT") == -3);
	CHECK(store_epoch(b, &e1) == IDEM_OK && e1 == e0 + 2);
	claim_reset(&c);
	claim_reset(&d);
	store_free(a);
	store_free(b);
}

static void
test_counters(void)
{
	struct store	*st = open_store();
	struct stat_row	 r[2];
	struct stats	*s = NULL;

	CHECK(store_connect(st) == IDEM_OK);
	memset(r, 0, sizeof(r));
	r[0].minute = 1700000040;
	r[0].route = "/pay";
	r[0].n[STAT_REQUESTS] = 3;
	r[0].n[STAT_PASSTHROUGH] = 1;
	r[0].wait_bucket[9] = 2;
	r[0].wait_sum_ms = 20000;
	r[1] = r[0];
	r[1].route = "/other";
	CHECK(store_counters_add(st, "h1", r, 2) == IDEM_OK);
	CHECK(store_counters_add(st, "h1", r, 1) == IDEM_OK);
	CHECK(sql_int(st, "SELECT requests FROM idem_counters WHERE "
	    "host='h1' AND route='/pay' AND minute='2023-11-14 22:14:00'") == 6);
	CHECK(sql_int(st, "SELECT passthrough + wait_b9 FROM idem_counters "
	    "WHERE host='h1' AND route='/pay'") == 6);
	CHECK(sql_int(st, "SELECT wait_sum_ms FROM idem_counters WHERE "
	    "host='h1' AND route='/other'") == 20000);

	/* stats: accumulate, flush, flush again adds nothing */
	CHECK(stats_new(&s) == IDEM_OK);
	stats_add(s, "/s", STAT_REQUESTS, 5);
	stats_add(s, "/s", STAT_CREATED, 2);
	stats_wait(s, "/s", 7);
	stats_wait(s, "/s", 70000);
	CHECK(stats_flush(s, st, "h2") == IDEM_OK);
	CHECK(stats_flush(s, st, "h2") == IDEM_OK);
	CHECK(sql_int(st, "SELECT SUM(requests) FROM idem_counters WHERE "
	    "host='h2' AND route='/s'") == 5);
	CHECK(sql_int(st, "SELECT SUM(waited), SUM(wait_b0) FROM "
	    "idem_counters WHERE host='h2' AND route='/s'") == 2);
	CHECK(sql_int(st, "SELECT SUM(wait_b0) + 10 * SUM(wait_b9) FROM "
	    "idem_counters WHERE host='h2' AND route='/s'") == 11);
	CHECK(sql_int(st, "SELECT SUM(wait_sum_ms) FROM idem_counters WHERE "
	    "host='h2' AND route='/s'") == 70007);
	stats_free(s);
	store_free(st);
}

/* Kills st's connection from another session (as a server restart would). */
static void
kill_conn(struct store *killer, struct store *st)
{
	char	 q[64];

	snprintf(q, sizeof(q), "KILL CONNECTION %lu",
	    mysql_thread_id(store_mysql(st)));
	CHECK(mysql_query(store_mysql(killer), q) == 0);
}

static void
test_reconnect(void)
{
	struct store	*a = open_store(), *k = open_store(), *b = open_store();
	struct idem_id	 id;
	struct claim	 c, d;
	unsigned long	 gen;
	char		 q[256];
	int		 i, held;

	claim_init(&c);
	claim_init(&d);
	CHECK(store_connect(a) == IDEM_OK && store_connect(k) == IDEM_OK);

	/* A dead connection is noticed, reopened, statements re-prepared
	 * and the claim repeated once: the caller sees no error. */
	mkid(&id, "reconn-1", "x");
	gen = store_generation(a);
	kill_conn(k, a);
	CHECK(store_claim(a, &id, &c) == IDEM_OK && c.state == CLAIM_NEW);
	CHECK(store_generation(a) == gen + 1);

	/* The owner's connection dies mid-request: its lock is gone; a
	 * renew reconnects and takes the lock back, so the key is not
	 * taken over and a waiter keeps sleeping. */
	kill_conn(k, a);
	CHECK(store_renew(a, &c, 200) == IDEM_OK);
	clock_sleep_ms(300);
	CHECK(store_claim(b, &id, &d) == IDEM_OK);
	CHECK(d.state == CLAIM_BUSY && d.lease_left_ms == 0);
	CHECK(complete(a, &c, 200, NULL, 0, "r", 1, 60000) == IDEM_OK);
	CHECK(store_claim(b, &id, &d) == IDEM_OK && d.state == CLAIM_DONE);

	/* KILL returns before the killed session has let its locks go: the
	 * renew on the fresh connection must still end up holding the lock,
	 * every time, not only when the old session was quick. */
	mkid(&id, "reconn-loop", "x");
	CHECK(store_claim(a, &id, &c) == IDEM_OK && c.state == CLAIM_NEW);
	for (i = 0, held = 0; i < 40; i++) {
		kill_conn(k, a);
		if (store_renew(a, &c, 60000) != IDEM_OK)
			continue;
		snprintf(q, sizeof(q), "SELECT IS_USED_LOCK('%s') = %lu",
		    c.lockname, mysql_thread_id(store_mysql(a)));
		held += sql_int(k, q) == 1;
	}
	CHECK(held == 40);
	CHECK(store_release(a, &c) == IDEM_OK);

	/* complete on a killed connection is repeated on a fresh one. */
	mkid(&id, "reconn-2", "x");
	CHECK(store_claim(a, &id, &c) == IDEM_OK && c.state == CLAIM_NEW);
	kill_conn(k, a);
	CHECK(complete(a, &c, 200, NULL, 0, "r2", 2, 60000) == IDEM_OK);
	CHECK(store_claim(b, &id, &d) == IDEM_OK && d.state == CLAIM_DONE);
	CHECK(d.ans.body.len == 2);

	claim_reset(&c);
	claim_reset(&d);
	store_free(a);
	store_free(b);
	store_free(k);
}

static void
test_unreachable(void)
{
	struct cfg	 bad;
	struct store	*st = NULL;
	struct idem_id	 id;
	struct claim	 c;
	char		 path[] = "/tmp/idem-test-XXXXXX";
	int		 fd;
	int64_t		 t0;

	fd = mkstemp(path);
	CHECK(fd >= 0);
	dprintf(fd, "[idemgate]\nsocket=/nonexistent/mysql.sock\n"
	    "user=nobody\n");
	close(fd);
	memset(&bad, 0, sizeof(bad));
	bad.mysql_defaults_file = path;
	bad.mysql_group = "idemgate";
	CHECK(store_new(&bad, &st) == IDEM_OK);
	claim_init(&c);
	mkid(&id, "down", "x");
	t0 = clock_now_us();
	CHECK(store_claim(st, &id, &c) == IDEM_ESTORE);
	CHECK(clock_now_us() - t0 < 3000000);
	CHECK(strlen(store_last_error(st)) > 0);
	claim_reset(&c);
	store_free(st);
	unlink(path);
}

int
main(void)
{
	struct store	*st;
	int		 n = -1;

	if (store_fixture_init() != 0)
		return 1;
	CHECK(store_global_init() == IDEM_OK);
	/* A database of its own: the schema first. */
	CHECK((st = open_store()) != NULL);
	CHECK(st != NULL && store_migrate(st, &n) == IDEM_OK);
	store_free(st);
	test_seen();
	test_epoch();
	test_counters();
	test_reconnect();
	test_unreachable();
	store_global_end();
	return CHECK_DONE();
}
