/* Unit tests for idemctl's pure helpers: scope and number parsing, escaping, percentiles, output formats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/check.h"
#include "grants.h"
#include "idemctl_common.h"
#include "idemctl_forget.h"
#include "idemctl_stats.h"
#include "store_admin.h"

/* Runs fn into a memory stream; returns the malloc'd text. */
static char *
capture_esc(const char *s, size_t n)
{
	char	*p = NULL;
	size_t	 len = 0;
	FILE	*f = open_memstream(&p, &len);

	ctl_put_escaped(f, s, n);
	fclose(f);
	return p;
}

/* The privileges idemctl check wants, read from sql/grants.sql. */
static void
test_grants(void)
{
	size_t	 i, gw = 0, cl = 0, co = 0, ins = 0, writes = 0;

	for (i = 0; i < ngrants; i++) {
		gw += strcmp(grants[i].role, "gateway") == 0;
		cl += strcmp(grants[i].role, "cleanup") == 0;
		co += strcmp(grants[i].role, "console") == 0;
		ins += strcmp(grants[i].role, "gateway") == 0 &&
		    strcmp(grants[i].need, "idem_keys:INSERT") == 0;
		/* the console reads only */
		writes += strcmp(grants[i].role, "console") == 0 &&
		    strstr(grants[i].need, ":SELECT") == NULL;
		CHECK(strchr(grants[i].need, ':') != NULL);
	}
	CHECK(gw == 14 && cl == 25 && co == 6);
	CHECK(ins == 1 && writes == 0);
}

/* forget --route's --status and --since values. */
static void
test_forget_filters(void)
{
	struct forget_route_args r;
	int	 lo = -1, hi = -1;

	CHECK(ctl_parse_status("404", &lo, &hi) == 0 && lo == 404 &&
	    hi == 404);
	CHECK(ctl_parse_status("4xx", &lo, &hi) == 0 && lo == 400 &&
	    hi == 499);
	CHECK(ctl_parse_status("5XX", &lo, &hi) == 0 && lo == 500 &&
	    hi == 599);
	/* the bounds: stored answers are 200..599 (a CGI 1xx is a 502) */
	CHECK(ctl_parse_status("200", &lo, &hi) == 0 && lo == 200);
	CHECK(ctl_parse_status("599", &lo, &hi) == 0 && hi == 599);
	lo = hi = -1;
	CHECK(ctl_parse_status("199", &lo, &hi) == -1 && lo == -1 &&
	    hi == -1);
	CHECK(ctl_parse_status("600", &lo, &hi) == -1);
	CHECK(ctl_parse_status("1xx", &lo, &hi) == -1);
	CHECK(ctl_parse_status("6xx", &lo, &hi) == -1);
	CHECK(ctl_parse_status("4x", &lo, &hi) == -1);
	CHECK(ctl_parse_status("4x4", &lo, &hi) == -1);
	CHECK(ctl_parse_status("40", &lo, &hi) == -1);
	CHECK(ctl_parse_status("4040", &lo, &hi) == -1);
	CHECK(ctl_parse_status("404 ", &lo, &hi) == -1);
	CHECK(ctl_parse_status(" 404", &lo, &hi) == -1);
	CHECK(ctl_parse_status("+40", &lo, &hi) == -1);
	CHECK(ctl_parse_status("", &lo, &hi) == -1);
	CHECK(ctl_parse_status(NULL, &lo, &hi) == -1);
	CHECK(lo == -1 && hi == -1);

	memset(&r, 0, sizeof(r));
	CHECK(forget_opt_status("4xx", &r) == 0 && r.status_lo == 400 &&
	    r.status_hi == 499 && strcmp(r.status, "4xx") == 0);
	CHECK(forget_opt_status("abc", &r) == -1 &&
	    strcmp(r.status, "4xx") == 0);
	CHECK(forget_opt_since("2h", &r) == 0 && r.since_ms == 7200000 &&
	    strcmp(r.since, "2h") == 0);
	CHECK(forget_opt_since("1ms", &r) == 0 && r.since_ms == 1);
	CHECK(forget_opt_since("0", &r) == -1 && r.since_ms == 1);
	CHECK(forget_opt_since("2w", &r) == -1);
	CHECK(forget_opt_since("-5m", &r) == -1);
}

int
main(void)
{
	unsigned char	 a[FP_LEN], b[FP_LEN];
	uint64_t	 bk[STAT_WAIT_BUCKETS];
	struct admin_stat rows[2];
	struct admin_gauges g;
	char		 t[40], key[FP_KEY_MAX + 1], *p = NULL;
	size_t		 len = 0, klen;
	long		 v;
	FILE		*f;

	test_grants();
	test_forget_filters();

	/* scopes */
	CHECK(ctl_parse_scope(NULL, a) == 0);
	fp_scope("none", "", b);
	CHECK(memcmp(a, b, FP_LEN) == 0);
	CHECK(ctl_parse_scope("none", a) == 0 && memcmp(a, b, FP_LEN) == 0);
	CHECK(ctl_parse_scope("remote_user:alice", a) == 0);
	fp_scope("remote_user", "alice", b);
	CHECK(memcmp(a, b, FP_LEN) == 0);
	CHECK(ctl_parse_scope("header:X-Api-Key:Se:cret", a) == 0);
	fp_scope("header:x-api-key", "Se:cret", b);
	CHECK(memcmp(a, b, FP_LEN) == 0);
	/* Authorization by meaning, as the gateway reads it */
	fp_scope("header:authorization", "bearer tok", b);
	CHECK(ctl_parse_scope("header:Authorization:Bearer  tok", a) == 0 &&
	    memcmp(a, b, FP_LEN) == 0);
	CHECK(ctl_parse_scope("header:authorization:BEARER tok", a) == 0 &&
	    memcmp(a, b, FP_LEN) == 0);
	CHECK(ctl_parse_scope("header:Authorization: Bearer tok", a) == 0 &&
	    memcmp(a, b, FP_LEN) == 0);
	CHECK(ctl_parse_scope("header:Authorization:Bearer TOK", a) == 0 &&
	    memcmp(a, b, FP_LEN) != 0);
	CHECK(ctl_parse_scope("header::v", a) == -1);
	CHECK(ctl_parse_scope("header:novalue", a) == -1);
	CHECK(ctl_parse_scope("bogus", a) == -1);

	/* keys as the header parser reads them */
	CHECK(ctl_parse_key("\"abc\"", key, &klen) == 0 && klen == 3 &&
	    memcmp(key, "abc", 3) == 0);
	CHECK(ctl_parse_key("a b", key, &klen) != 0);
	CHECK(ctl_parse_key("", key, &klen) != 0);

	/* numbers */
	CHECK(ctl_parse_long("1000", 1, 1000000, &v) == 0 && v == 1000);
	CHECK(ctl_parse_long("1000000", 1, 1000000, &v) == 0);
	CHECK(ctl_parse_long("1000001", 1, 1000000, &v) != 0);
	CHECK(ctl_parse_long("0", 1, 10, &v) != 0);
	CHECK(ctl_parse_long("12x", 1, 100, &v) != 0);
	CHECK(ctl_parse_long(" 1", 1, 100, &v) != 0);
	CHECK(ctl_parse_long("", 1, 100, &v) != 0);

	/* escaping */
	p = capture_esc("a\nb\\c\x01\xff", 7);
	CHECK(strcmp(p, "a\\nb\\\\c\\x01\\xff") == 0);
	free(p);

	/* times */
	ctl_fmt_time(1714564800.25, t, sizeof(t));
	CHECK(strcmp(t, "2024-05-01T12:00:00.250Z") == 0);
	ctl_fmt_time(1714564800.9996, t, sizeof(t));
	CHECK(strcmp(t, "2024-05-01T12:00:01.000Z") == 0);
	ctl_fmt_time(0, t, sizeof(t));
	CHECK(strcmp(t, "-") == 0);

	/* percentiles: upper bound of the bucket holding it */
	memset(bk, 0, sizeof(bk));
	CHECK(stat_wait_percentile(bk, 0.5) == STAT_WAIT_NONE);
	bk[0] = 5;
	bk[1] = 3;
	bk[2] = 1;
	bk[9] = 1;
	CHECK(stat_wait_percentile(bk, 0.5) == 10);
	CHECK(stat_wait_percentile(bk, 0.8) == 50);
	CHECK(stat_wait_percentile(bk, 0.9) == 100);
	CHECK(stat_wait_percentile(bk, 0.95) == STAT_WAIT_INF);
	memset(bk, 0, sizeof(bk));
	bk[8] = 1;
	CHECK(stat_wait_percentile(bk, 0.99) == 10000);

	/* JSON and Prometheus escaping */
	f = open_memstream(&p, &len);
	json_put_string(f, "a\"b\\c\n\x7f");
	fputc('|', f);
	prom_put_label(f, "a\"b\\c\nd");
	fclose(f);
	CHECK(strcmp(p, "\"a\\\"b\\\\c\\u000a\\u007f\"|a\\\"b\\\\c\\nd") == 0);
	free(p);
	/* UTF-8 stays UTF-8; bytes that are not UTF-8 become U+FFFD */
	f = open_memstream(&p, &len);
	json_put_string(f, "/caf\xc3\xa9/\xe2\x82\xac\xf0\x9f\x98\x80|\xff\xc3(|"
	    "\xed\xa0\x80|\xc0\xaf");
	fclose(f);
	CHECK(strcmp(p, "\"/caf\xc3\xa9/\xe2\x82\xac\xf0\x9f\x98\x80|"
	    "\\ufffd\\ufffd(|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\"") == 0);
	free(p);

	/* table: total row and alignment */
	memset(rows, 0, sizeof(rows));
	snprintf(rows[0].route, sizeof(rows[0].route), "/a");
	rows[0].n[STAT_REQUESTS] = 4;
	rows[0].n[STAT_REUSED] = 1;
	snprintf(rows[1].route, sizeof(rows[1].route), "/long\troute");
	rows[1].n[STAT_REQUESTS] = 6;
	f = open_memstream(&p, &len);
	stats_print(f, STATS_TABLE, rows, 2, 3600);
	fclose(f);
	CHECK(strstr(p, "\nTOTAL ") != NULL);
	CHECK(strstr(p, "/long\\troute") != NULL);
	CHECK(strstr(p, " 25.0 ") != NULL);
	{
		char	*l1 = p, *l2 = strchr(p, '\n') + 1;

		CHECK(strchr(l2, '\n') - l2 == strchr(l1, '\n') - l1);
	}
	free(p);

	/* JSON with no rows is still an object with a total */
	f = open_memstream(&p, &len);
	stats_print(f, STATS_JSON, rows, 0, 60);
	fclose(f);
	CHECK(strstr(p, "\"routes\": []") != NULL);
	CHECK(strstr(p, "\"reuse_pct\": null") != NULL);
	CHECK(strstr(p, "\"wait_p50_ms\": null") != NULL);
	free(p);

	/* metrics: cumulative buckets, +Inf equals _count; a host label */
	memset(&g, 0, sizeof(g));
	snprintf(rows[0].host, sizeof(rows[0].host), "web-1");
	rows[0].wait_bucket[0] = 2;
	rows[0].wait_bucket[4] = 1;
	rows[0].wait_bucket[9] = 1;
	rows[0].wait_sum_ms = 12500;
	f = open_memstream(&p, &len);
	metrics_print(f, rows, 1, &g);
	fclose(f);
	CHECK(strstr(p, "# TYPE idemgate_wait_seconds histogram\n") != NULL);
	CHECK(strstr(p, "idemgate_wait_seconds_bucket{host=\"web-1\",route=\"/a\",kind=\"http\",le=\"0.01\"} 2\n") != NULL);
	CHECK(strstr(p, "idemgate_wait_seconds_bucket{host=\"web-1\",route=\"/a\",kind=\"http\",le=\"0.5\"} 3\n") != NULL);
	CHECK(strstr(p, "idemgate_wait_seconds_bucket{host=\"web-1\",route=\"/a\",kind=\"http\",le=\"+Inf\"} 4\n") != NULL);
	CHECK(strstr(p, "idemgate_wait_seconds_count{host=\"web-1\",route=\"/a\",kind=\"http\"} 4\n") != NULL);
	CHECK(strstr(p, "idemgate_wait_seconds_sum{host=\"web-1\",route=\"/a\",kind=\"http\"} 12.500\n") != NULL);
	CHECK(strstr(p, "idemgate_requests_total{host=\"web-1\",route=\"/a\",kind=\"http\"} 4\n") != NULL);
	CHECK(strstr(p, "idemgate_last_cleanup_success 0\n") != NULL);
	free(p);

	/* replays from the cache; keys in progress past their lease */
	rows[0].n[STAT_CACHE_HITS] = 1;
	g.past_lease = 3;
	f = open_memstream(&p, &len);
	metrics_print(f, rows, 1, &g);
	fclose(f);
	CHECK(strstr(p, "# TYPE idemgate_keys_past_lease gauge\n") != NULL);
	CHECK(strstr(p, "\nidemgate_keys_past_lease 3\n") != NULL);
	CHECK(strstr(p, "idemgate_replay_cache_hits_total{host=\"web-1\",route=\"/a\","
	    "kind=\"http\"} 1\n") != NULL);
	free(p);

	return CHECK_DONE();
}
