/* Tests of the in-process counters: buckets, bounds, threads, flush. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>

#include "../lib/check.h"
#include "cfg.h"
#include "stats.h"
#include "store.h"
#include "store_int.h"

static void
test_buckets(void)
{
	struct stats	*s = NULL;
	struct stat_row	 r;
	size_t		 n;

	CHECK(stats_new(&s) == IDEM_OK);
	stats_add(s, "/a", STAT_REQUESTS, 3);
	stats_add(s, "/a", STAT_CREATED, 1);
	stats_add(s, "/b", STAT_REQUESTS, 1);
	stats_add(s, NULL, STAT_PASSTHROUGH, 1);	/* counted under "/" */
	stats_add(s, "/a", STAT__COUNT, 1);		/* ignored */
	stats_wait(s, "/a", 10);	/* b0: <= 10 */
	stats_wait(s, "/a", 11);	/* b1 */
	stats_wait(s, "/a", 10000);	/* b8 */
	stats_wait(s, "/a", 10001);	/* b9: +Inf */
	stats_wait(s, "/a", -5);	/* b0, counted as 0 */
	n = stats_pending(s, "/a", &r);
	CHECK(n == 3);
	CHECK(r.n[STAT_REQUESTS] == 3 && r.n[STAT_CREATED] == 1);
	CHECK(r.n[STAT_WAITED] == 5);
	CHECK(r.wait_bucket[0] == 2 && r.wait_bucket[1] == 1);
	CHECK(r.wait_bucket[8] == 1 && r.wait_bucket[9] == 1);
	CHECK(r.wait_sum_ms == 10 + 11 + 10000 + 10001);
	stats_pending(s, "/", &r);
	CHECK(r.n[STAT_PASSTHROUGH] == 1);
	stats_free(s);
	stats_free(NULL);
}

static void
test_bound(void)
{
	struct stats	*s = NULL;
	struct stat_row	 r;
	char		 route[64];
	char		 longr[600];
	uint64_t	 total = 0;
	size_t		 n;
	int		 i;

	CHECK(stats_new(&s) == IDEM_OK);
	for (i = 0; i < 3000; i++) {
		snprintf(route, sizeof(route), "/r%d", i);
		stats_add(s, route, STAT_REQUESTS, 1);
	}
	n = stats_pending(s, "(other)", &r);
	CHECK(n <= 1024);
	/* nothing lost while the minute lasts: the overflow is in (other) */
	for (i = 0; i < 3000; i++) {
		snprintf(route, sizeof(route), "/r%d", i);
		stats_pending(s, route, &r);
		total += r.n[STAT_REQUESTS];
	}
	stats_pending(s, "(other)", &r);
	total += r.n[STAT_REQUESTS];
	CHECK(total == 3000);
	CHECK(r.n[STAT_REQUESTS] > 0);
	stats_free(s);

	/* routes are cut at 255 bytes */
	CHECK(stats_new(&s) == IDEM_OK);
	memset(longr, 'x', sizeof(longr) - 1);
	longr[sizeof(longr) - 1] = '\0';
	stats_add(s, longr, STAT_REQUESTS, 1);
	longr[255] = '\0';
	stats_pending(s, longr, &r);
	CHECK(r.n[STAT_REQUESTS] == 1);
	stats_free(s);
}

struct adder {
	struct stats	*s;
	int		 n;
};

static void *
add_main(void *arg)
{
	struct adder	*a = arg;
	int		 i;

	for (i = 0; i < a->n; i++) {
		stats_add(a->s, "/t", STAT_REQUESTS, 1);
		if (i % 100 == 0)
			stats_wait(a->s, "/t", i % 300);
	}
	return NULL;
}

static void
test_threads(void)
{
	struct stats	*s = NULL;
	struct adder	 a = { NULL, 20000 };
	struct stat_row	 r;
	pthread_t	 th[4];
	int		 i;

	CHECK(stats_new(&s) == IDEM_OK);
	a.s = s;
	for (i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, add_main, &a);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	stats_pending(s, "/t", &r);
	CHECK(r.n[STAT_REQUESTS] == 80000);
	CHECK(r.n[STAT_WAITED] == 800);
	stats_free(s);
}

/* A flush to an unreachable store keeps the counts; a later one lands. */
static void
test_flush(void)
{
	struct cfg	 bad, good;
	struct store	*down = NULL, *up = NULL;
	struct stats	*s = NULL;
	struct stat_row	 r;
	const char	*cnf = getenv("IDEM_TEST_MYCNF");
	char		 path[] = "/tmp/idem-stats-XXXXXX";
	int		 fd, applied;
	MYSQL_RES	*res;
	MYSQL_ROW	 row;

	fd = mkstemp(path);
	CHECK(fd >= 0);
	dprintf(fd, "[idemgate]\nsocket=/nonexistent/mysql.sock\n");
	close(fd);
	memset(&bad, 0, sizeof(bad));
	bad.mysql_defaults_file = path;
	bad.mysql_group = "idemgate";
	CHECK(store_new(&bad, &down) == IDEM_OK);
	CHECK(stats_new(&s) == IDEM_OK);
	CHECK(stats_flush(s, down, "h") == IDEM_OK);	/* nothing to do */
	stats_add(s, "/f", STAT_REQUESTS, 7);
	stats_wait(s, "/f", 30);
	CHECK(stats_flush(s, down, "h") == IDEM_ESTORE);
	CHECK(stats_flush(s, down, "h") == IDEM_ESTORE);
	stats_add(s, "/f", STAT_REQUESTS, 1);
	stats_pending(s, "/f", &r);
	CHECK(r.n[STAT_REQUESTS] == 8 && r.n[STAT_WAITED] == 1);
	CHECK(r.wait_bucket[1] == 1 && r.wait_sum_ms == 30);
	store_free(down);
	unlink(path);

	if (cnf == NULL || *cnf == '\0') {
		printf("# IDEM_TEST_MYCNF not set: flush to MariaDB skipped\n");
		stats_free(s);
		return;
	}
	memset(&good, 0, sizeof(good));
	good.mysql_defaults_file = (char *)cnf;
	good.mysql_group = "idemgate";
	CHECK(store_new(&good, &up) == IDEM_OK);
	CHECK(store_migrate(up, &applied) == IDEM_OK);
	CHECK(mysql_query(store_mysql(up), "DELETE FROM idem_counters WHERE "
	    "host = 'stats-test'") == 0);
	CHECK(stats_flush(s, up, "stats-test") == IDEM_OK);
	CHECK(stats_pending(s, "/f", &r) == 0);
	CHECK(mysql_query(store_mysql(up), "SELECT SUM(requests), "
	    "SUM(waited), SUM(wait_b1), SUM(wait_sum_ms) FROM idem_counters "
	    "WHERE host = 'stats-test' AND route = '/f'") == 0);
	res = mysql_store_result(store_mysql(up));
	CHECK(res != NULL);
	row = res != NULL ? mysql_fetch_row(res) : NULL;
	CHECK(row != NULL && row[0] != NULL && strcmp(row[0], "8") == 0);
	CHECK(row != NULL && row[1] != NULL && strcmp(row[1], "1") == 0);
	CHECK(row != NULL && row[2] != NULL && strcmp(row[2], "1") == 0);
	CHECK(row != NULL && row[3] != NULL && strcmp(row[3], "30") == 0);
	if (res != NULL)
		mysql_free_result(res);
	store_free(up);
	stats_free(s);
}

int
main(void)
{
	CHECK(store_global_init() == IDEM_OK);
	test_buckets();
	test_bound();
	test_threads();
	test_flush();
	store_global_end();
	return CHECK_DONE();
}
