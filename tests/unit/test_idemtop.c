/* Unit tests for idemtop: text helpers, key handling and rendering against the fake source. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/check.h"
#include <sys/wait.h>
#include <time.h>

#include "fp.h"
#include "idemtop_cmd.h"
#include "idemtop_data.h"
#include "idemtop_fmt.h"
#include "idemtop_ui.h"
#include "idemtop_view.h"

#define NOW_MS	1700000000000LL	/* fixed clock for the fake data */

static char line[4096];

static const char *
row(const struct top_grid *g, int y)
{
	grid_line(g, y, line, sizeof(line), 1);
	return line;
}

static int
attr_at(const struct top_grid *g, int y, int x)
{
	return g->at[(size_t)y * g->w + x];
}

/* Column of needle in row y, or -1. */
static int
col_of(const struct top_grid *g, int y, const char *needle)
{
	const char *p;

	row(g, y);
	p = strstr(line, needle);
	return p == NULL ? -1 : (int)(p - line);
}

/* No control code point anywhere: nothing can reach the terminal raw. */
static int
grid_clean(const struct top_grid *g)
{
	size_t	 i, n = (size_t)g->w * (size_t)g->h;

	for (i = 0; i < n; i++)
		if (g->cp[i] < 0x20 || g->cp[i] == 0x7f)
			return 0;
	return 1;
}

static int
grid_ascii(const struct top_grid *g)
{
	size_t	 i, n = (size_t)g->w * (size_t)g->h;

	for (i = 0; i < n; i++)
		if (g->cp[i] >= 0x80)
			return 0;
	return 1;
}

static void
test_fmt(void)
{
	char	 b[128];
	uint64_t buckets[STAT_WAIT_BUCKETS] = { 0 };

	fmt_escape("a\x01" "b\\c\x7f\xc3", 7, b, sizeof(b));
	CHECK(strcmp(b, "a\\x01b\\\\c\\x7f\\xc3") == 0);
	/* never splits an escape at the boundary */
	fmt_escape("ab\x01", 3, b, 5);
	CHECK(strcmp(b, "ab") == 0);
	fmt_escape("abcd", 4, b, 5);
	CHECK(strcmp(b, "abcd") == 0);
	fmt_escape("abcde", 5, b, 5);
	CHECK(strcmp(b, "abcd") == 0);

	fmt_mask_key("abcdefghijklmnop", 16, b, sizeof(b));
	CHECK(strcmp(b, "abcd********op") == 0);
	fmt_mask_key("abcdefg", 7, b, sizeof(b));	/* 6 + 1: one star */
	CHECK(strcmp(b, "abcd*fg") == 0);
	fmt_mask_key("abcdef", 6, b, sizeof(b));	/* short: first byte only */
	CHECK(strcmp(b, "a*****") == 0);
	fmt_mask_key("k", 1, b, sizeof(b));
	CHECK(strcmp(b, "k") == 0);
	fmt_mask_key("\x01\x02\x03\x04zzzzzz\x1b\n", 12, b, sizeof(b));
	CHECK(strcmp(b, "\\x01\\x02\\x03\\x04******\\x1b\\x0a") == 0);

	fmt_dur(850, b, sizeof(b));
	CHECK(strcmp(b, "850ms") == 0);
	fmt_dur(59999, b, sizeof(b));
	CHECK(strcmp(b, "59s") == 0);
	fmt_dur(60000, b, sizeof(b));
	CHECK(strcmp(b, "1m00s") == 0);
	fmt_dur(-35000, b, sizeof(b));
	CHECK(strcmp(b, "-35s") == 0);
	fmt_dur(3 * 3600 * 1000 + 5 * 60000, b, sizeof(b));
	CHECK(strcmp(b, "3h05m") == 0);
	fmt_dur(2 * 86400 * 1000LL + 4 * 3600000, b, sizeof(b));
	CHECK(strcmp(b, "2d04h") == 0);

	fmt_pct(1, 3, b, sizeof(b));
	CHECK(strcmp(b, "33.3%") == 0);
	fmt_pct(1, 0, b, sizeof(b));
	CHECK(strcmp(b, "-") == 0);
	fmt_count(9999999, b, sizeof(b));
	CHECK(strcmp(b, "9999999") == 0);
	fmt_count(10000000, b, sizeof(b));
	CHECK(strcmp(b, "10.0M") == 0);
	fmt_count(12300000000ULL, b, sizeof(b));
	CHECK(strcmp(b, "12.3G") == 0);

	CHECK(stat_wait_percentile(buckets, 0.5) == STAT_WAIT_NONE);
	buckets[0] = 8;
	buckets[5] = 6;
	CHECK(stat_wait_percentile(buckets, 0.5) == 10);
	CHECK(stat_wait_percentile(buckets, 0.95) == 1000);
	buckets[9] = 100;
	CHECK(stat_wait_percentile(buckets, 0.95) == STAT_WAIT_INF);
	fmt_quantile(STAT_WAIT_INF, 10000, 0, b, sizeof(b));
	CHECK(strcmp(b, ">10s") == 0);
	/* A route with wait = 30s: its waits end by 30 s. */
	fmt_quantile(STAT_WAIT_INF, 10000, 30000, b, sizeof(b));
	CHECK(strcmp(b, "<=30s") == 0);
	fmt_quantile(STAT_WAIT_INF, 10000, 5000, b, sizeof(b));
	CHECK(strcmp(b, ">10s") == 0);
	fmt_quantile(2500, 10000, 30000, b, sizeof(b));
	CHECK(strcmp(b, "<=2.5s") == 0);
	fmt_quantile(250, 10000, 0, b, sizeof(b));
	CHECK(strcmp(b, "<=250ms") == 0);
	fmt_quantile(STAT_WAIT_NONE, 10000, 30000, b, sizeof(b));
	CHECK(strcmp(b, "-") == 0);
}

static void
test_overview(const struct top_snap *s)
{
	struct top_grid	 g;
	struct top_ui	 ui;
	int		 y, x;

	top_ui_init(&ui, 2000, 2 * 3600 * 1000, 0, 1);
	CHECK(grid_init(&g, 80, 24) == IDEM_OK);
	top_ui_draw(&ui, s, &g);
	CHECK(grid_clean(&g));
	CHECK(strncmp(row(&g, 0), " idemtop", 8) == 0);
	CHECK(strstr(row(&g, 0), "refresh 2.0s") != NULL);
	CHECK(strstr(row(&g, 1), "1 Overview") != NULL);
	CHECK(strstr(row(&g, 1), "4 Cleanup jobs") != NULL);
	/* now = minute 0: 25/100; 1m = minute 1: 26/110 */
	CHECK(grid_find(&g, "Fleet reuse: now 25.0%  1m 23.6%") == 2);
	y = grid_find(&g, " requests ");
	CHECK(y > 0 && strstr(row(&g, y), "100") != NULL);
	y = grid_find(&g, " store errors");
	CHECK(y > 0);
	/* 4 store errors at minute 3: in 5m and 1h, red; now has none */
	x = col_of(&g, y, "4");
	CHECK(x > 0 && attr_at(&g, y, x) == TA_ALERT);
	CHECK(attr_at(&g, y, 28) == TA_NORMAL);
	CHECK(grid_find(&g, "In progress now: 4 keys, waiting now: 4 "
	    "requests, oldest 1m35s") > 0);
	CHECK(grid_find(&g, "Last cleanup: ") > 0);
	y = grid_find(&g, "Last cleanup: ");
	CHECK(strstr(row(&g, y), "(1m00s ago): running, 200 rows deleted")
	    != NULL);
	CHECK(grid_find(&g, "WARNING: no successful cleanup for 2h59m "
	    "(warn after 2h00m)") > 0);
	CHECK(grid_find(&g, "waits") > 0);
	/* the sparkline: 60 block glyphs under its caption */
	y = grid_find(&g, "Requests per minute, last hour (peak 160/min");
	CHECK(y > 0);
	CHECK(g.cp[(size_t)(y + 1) * g.w + 1] >= 0x2581 &&
	    g.cp[(size_t)(y + 1) * g.w + 1] <= 0x2588);
	CHECK(g.cp[(size_t)(y + 1) * g.w + 60] >= 0x2581);
	CHECK(strstr(row(&g, 23), "q quit") != NULL);
	CHECK(attr_at(&g, 23, 0) == TA_TITLE);

	/* not a UTF-8 locale: an ASCII-only screen */
	ui.utf8 = 0;
	top_ui_draw(&ui, s, &g);
	CHECK(grid_ascii(&g));
	CHECK(grid_find(&g, "Fleet reuse") == 2);
	grid_free(&g);

	/* no data yet */
	CHECK(grid_init(&g, 80, 24) == IDEM_OK);
	top_ui_draw(&ui, NULL, &g);
	CHECK(grid_find(&g, "waiting for data") > 0);
	grid_free(&g);
}

static void
test_inprog(const struct top_snap *s)
{
	struct top_grid	 g;
	struct top_ui	 ui;

	top_ui_init(&ui, 2000, 2 * 3600 * 1000, 0, 1);
	CHECK(top_ui_key(&ui, s, '2') == ACT_NONE);
	CHECK(ui.screen == SCR_INPROG);
	CHECK(grid_init(&g, 80, 24) == IDEM_OK);
	top_ui_draw(&ui, s, &g);
	CHECK(grid_clean(&g));
	CHECK(strstr(row(&g, 2), "4 keys in progress, 4 requests waiting, "
	    "oldest 1m35s, 1 past lease") != NULL);
	CHECK(strstr(row(&g, 3), "KEY") != NULL);
	CHECK(strstr(row(&g, 3), "AGEv") != NULL);
	CHECK(attr_at(&g, 3, 2) == TA_HEAD);
	/* oldest first; selected marker on the first row */
	CHECK(strncmp(row(&g, 4), ">stal********zz", 15) == 0);
	CHECK(strstr(row(&g, 4), "gw1.example") != NULL);
	CHECK(strstr(row(&g, 4), "1m35s") != NULL);
	CHECK(strstr(row(&g, 4), "-35s") != NULL);
	CHECK(attr_at(&g, 4, 3) == TA_SEL);
	/* control bytes in key and route escaped */
	/* 80 columns: an escaped key is clipped, marked with '>' */
	CHECK(strstr(row(&g, 5), " ctl\\x01*****") != NULL);
	CHECK(strstr(row(&g, 5), "/orders\\x07") != NULL);
	CHECK(strstr(row(&g, 5), "gw2.example") != NULL);
	CHECK(strstr(row(&g, 5), ":77") == NULL);	/* host only */
	CHECK(strncmp(row(&g, 7), " k*", 3) == 0);
	/* selection moves; the expired row shows red */
	top_ui_key(&ui, s, TK_DOWN);
	top_ui_draw(&ui, s, &g);
	CHECK(attr_at(&g, 4, 3) == TA_ALERT);
	CHECK(row(&g, 4)[0] == ' ');
	CHECK(row(&g, 5)[0] == '>');
	CHECK(attr_at(&g, 6, 3) == TA_NORMAL);
	top_ui_key(&ui, s, TK_END);
	CHECK(ui.sel[SCR_INPROG] == 3);
	top_ui_key(&ui, s, TK_DOWN);
	CHECK(ui.sel[SCR_INPROG] == 3);
	top_ui_key(&ui, s, TK_HOME);
	CHECK(ui.sel[SCR_INPROG] == 0);
	top_ui_key(&ui, s, TK_PGDN);
	CHECK(ui.sel[SCR_INPROG] == 3);
	top_ui_key(&ui, s, TK_UP);
	top_ui_key(&ui, s, TK_PGUP);
	CHECK(ui.sel[SCR_INPROG] == 0);

	/* sort: '>' goes to LEASE (least left first), I inverts */
	top_ui_key(&ui, s, '>');
	top_ui_draw(&ui, s, &g);
	CHECK(strstr(row(&g, 3), "LEASE^") != NULL);
	CHECK(strncmp(row(&g, 4), ">stal", 5) == 0);
	CHECK(strncmp(row(&g, 7), " k*", 3) == 0);
	top_ui_key(&ui, s, 'I');
	top_ui_draw(&ui, s, &g);
	CHECK(strstr(row(&g, 3), "LEASEv") != NULL);
	CHECK(strncmp(row(&g, 4), ">k*", 3) == 0);
	top_ui_key(&ui, s, '<');
	top_ui_key(&ui, s, '<');
	top_ui_draw(&ui, s, &g);
	CHECK(strstr(row(&g, 3), "OWNER HOST^") != NULL);
	top_ui_key(&ui, s, '>');

	/* filter by host, live while typing; Enter keeps, \ clears */
	top_ui_key(&ui, s, '/');
	CHECK(ui.editing);
	top_ui_key(&ui, s, 'g');
	top_ui_key(&ui, s, 'w');
	top_ui_key(&ui, s, '2');
	top_ui_draw(&ui, s, &g);
	CHECK(strstr(row(&g, 23), "Filter (route, key, host): gw2_") != NULL);
	top_ui_key(&ui, s, '\r');
	CHECK(!ui.editing);
	CHECK(strcmp(ui.filter, "gw2") == 0);
	top_ui_draw(&ui, s, &g);
	CHECK(grid_find(&g, "stal") == -1);
	CHECK(grid_find(&g, "ctl\\x01") == 4);
	CHECK(strstr(row(&g, 2), "filter: gw2") != NULL);
	CHECK(top_ui_rows(&ui, s, SCR_INPROG) == 1);
	/* by route and by key bytes */
	top_ui_key(&ui, s, '\\');
	CHECK(ui.filter[0] == '\0');
	top_ui_key(&ui, s, '/');
	top_ui_key(&ui, s, 'r');
	top_ui_key(&ui, s, 'e');
	top_ui_key(&ui, s, 'f');
	CHECK(top_ui_rows(&ui, s, SCR_INPROG) == 1);
	top_ui_key(&ui, s, TK_BACKSPACE);
	top_ui_key(&ui, s, TK_BACKSPACE);
	top_ui_key(&ui, s, TK_BACKSPACE);
	top_ui_key(&ui, s, 'z');
	top_ui_key(&ui, s, 'z');
	CHECK(top_ui_rows(&ui, s, SCR_INPROG) == 1);
	top_ui_key(&ui, s, 'z');
	top_ui_draw(&ui, s, &g);
	CHECK(grid_find(&g, "(no rows match the filter)") > 0);
	/* Esc restores the filter from before '/' */
	top_ui_key(&ui, s, 27);
	CHECK(ui.filter[0] == '\0');

	/* details */
	top_ui_key(&ui, s, TK_ENTER);
	CHECK(ui.detail);
	top_ui_draw(&ui, s, &g);
	CHECK(grid_find(&g, " details ") > 0);
	CHECK(grid_find(&g, "| id        11") > 0);
	CHECK(grid_find(&g, "lease     -35s (expired)") > 0);
	CHECK(grid_clean(&g));
	top_ui_key(&ui, s, 27);
	CHECK(!ui.detail);
	grid_free(&g);
}

static void
test_routes_runs(const struct top_snap *s)
{
	struct top_grid	 g;
	struct top_ui	 ui;
	int		 y;

	top_ui_init(&ui, 2000, 2 * 3600 * 1000, 0, 1);
	CHECK(grid_init(&g, 132, 40) == IDEM_OK);
	top_ui_key(&ui, s, '3');
	top_ui_draw(&ui, s, &g);
	CHECK(grid_clean(&g));
	CHECK(strstr(row(&g, 2), "3 routes, last 60 minutes") != NULL);
	CHECK(strstr(row(&g, 3), "REQSv") != NULL);
	y = grid_find(&g, "/payments ");
	CHECK(y == 4);
	/* 5000 requests, 1500 reused; waits 40 / 10 / 2 -> p50 <=10ms,
	 * p95 <=500ms */
	CHECK(strstr(row(&g, y), " 5000 ") != NULL);
	CHECK(strstr(row(&g, y), "30.0%") != NULL);
	CHECK(strstr(row(&g, y), "<=10ms") != NULL);
	CHECK(strstr(row(&g, y), "<=500ms") != NULL);
	CHECK(grid_find(&g, "/orders\\x07") == 5);
	y = grid_find(&g, "/payments/refunds");
	CHECK(y == 6 && strstr(row(&g, y), "50.0%") != NULL);
	CHECK(strstr(row(&g, y), " - ") != NULL);	/* no waits */
	/* sort by reuse% */
	top_ui_key(&ui, s, '>');
	top_ui_draw(&ui, s, &g);
	CHECK(grid_find(&g, "/payments/refunds") == 4);
	top_ui_key(&ui, s, TK_ENTER);
	top_ui_draw(&ui, s, &g);
	CHECK(grid_find(&g, "wait buckets") > 0);
	top_ui_key(&ui, s, 27);

	top_ui_key(&ui, s, '4');
	top_ui_draw(&ui, s, &g);
	CHECK(grid_clean(&g));
	CHECK(strstr(row(&g, 2), "WARNING: no successful cleanup for 2h59m")
	    != NULL);
	CHECK(attr_at(&g, 2, 2) == TA_ALERT);
	CHECK(strstr(row(&g, 3), "STARTEDv") != NULL);
	CHECK(strncmp(row(&g, 4), ">cron1", 6) == 0);
	CHECK(strstr(row(&g, 4), "running") != NULL);
	CHECK(strstr(row(&g, 5), "failed") != NULL);
	CHECK(strstr(row(&g, 5), "Lost connection to server") != NULL);
	CHECK(attr_at(&g, 5, 3) == TA_ALERT);
	CHECK(strstr(row(&g, 6), "123456") != NULL);
	CHECK(attr_at(&g, 6, 3) == TA_NORMAL);
	/* filter on host */
	top_ui_key(&ui, s, '/');
	top_ui_key(&ui, s, '2');
	top_ui_key(&ui, s, '\n');
	CHECK(top_ui_rows(&ui, s, SCR_RUNS) == 1);
	/* a recent success: no warning */
	ui.warn_ms = 4 * 3600 * 1000;
	top_ui_draw(&ui, s, &g);
	CHECK(grid_find(&g, "WARNING") == -1);
	grid_free(&g);
}

static void
test_keys(const struct top_snap *s)
{
	struct top_grid	 g;
	struct top_ui	 ui;

	top_ui_init(&ui, 2000, 0, 0, 1);
	CHECK(grid_init(&g, 80, 24) == IDEM_OK);
	CHECK(top_ui_key(&ui, s, '?') == ACT_NONE);
	top_ui_draw(&ui, s, &g);
	CHECK(grid_find(&g, " idemtop help ") > 0);
	CHECK(grid_find(&g, "mode: read-only") > 0);
	CHECK(grid_find(&g, "Ctrl-L") > 0);
	CHECK(grid_clean(&g));
	CHECK(top_ui_key(&ui, s, 'x') == ACT_NONE);	/* closes help */
	CHECK(!ui.help);
	top_ui_key(&ui, s, '?');
	CHECK(top_ui_key(&ui, s, 'q') == ACT_QUIT);

	CHECK(top_ui_key(&ui, s, '\t') == ACT_NONE && ui.screen == 2);
	top_ui_key(&ui, s, '\t');
	top_ui_key(&ui, s, '\t');
	top_ui_key(&ui, s, '\t');
	CHECK(ui.screen == 1);
	top_ui_key(&ui, s, TK_BTAB);
	CHECK(ui.screen == 4);
	CHECK(top_ui_key(&ui, s, 12) == ACT_REDRAW);
	CHECK(top_ui_key(&ui, s, 'p') == ACT_NONE && ui.paused);
	top_ui_draw(&ui, s, &g);
	CHECK(strstr(row(&g, 0), "[PAUSED]") != NULL);
	CHECK(top_ui_key(&ui, s, ' ') == ACT_REFRESH && !ui.paused);
	CHECK(top_ui_key(&ui, s, '+') == ACT_REFRESH);
	CHECK(ui.refresh_ms == 5000);
	top_ui_key(&ui, s, '-');
	top_ui_key(&ui, s, '-');
	CHECK(ui.refresh_ms == 1000);
	top_ui_key(&ui, s, '-');
	top_ui_key(&ui, s, '-');
	CHECK(ui.refresh_ms == 500);
	ui.refresh_ms = 3000;	/* from config, not a step */
	top_ui_key(&ui, s, '+');
	CHECK(ui.refresh_ms == 5000);

	/* read-only: f and c refused */
	top_ui_key(&ui, s, '2');
	CHECK(top_ui_key(&ui, s, 'f') == ACT_NONE && ui.confirm == 0);
	CHECK(strstr(ui.status, "--write") != NULL);
	CHECK(top_ui_key(&ui, s, 'c') == ACT_NONE && ui.confirm == 0);

	/* --write: y/n confirmation */
	ui.write = 1;
	top_ui_key(&ui, s, TK_DOWN);
	CHECK(top_ui_key(&ui, s, 'f') == ACT_NONE && ui.confirm == 'f');
	CHECK(ui.pending_id == 12);
	CHECK(strstr(ui.status, "ctl\\x01********XY") != NULL);
	top_ui_draw(&ui, s, &g);
	CHECK(strstr(row(&g, 23), "y/n") != NULL);
	CHECK(attr_at(&g, 23, 0) == TA_WARN);
	CHECK(grid_clean(&g));
	CHECK(top_ui_key(&ui, s, 'n') == ACT_NONE && ui.confirm == 0);
	CHECK(strcmp(ui.status, "cancelled") == 0);
	top_ui_key(&ui, s, 'f');
	CHECK(top_ui_key(&ui, s, 'y') == ACT_FORGET);
	CHECK(top_ui_key(&ui, s, 'c') == ACT_NONE && ui.confirm == 'c');
	CHECK(top_ui_key(&ui, s, 'y') == ACT_CLEANUP);
	top_ui_key(&ui, s, '1');
	CHECK(top_ui_key(&ui, s, 'f') == ACT_NONE && ui.confirm == 0);

	/* the error line */
	snprintf(ui.error, sizeof(ui.error), "MySQL down, retry in 4s: gone\x1b");
	top_ui_draw(&ui, s, &g);
	CHECK(strstr(row(&g, 23), "MySQL down, retry in 4s: gone\\x1b") != NULL);
	CHECK(attr_at(&g, 23, 0) == TA_ALERT);
	grid_free(&g);
}

static void
test_sizes(const struct top_snap *s)
{
	static const int sizes[][2] = { { 80, 24 }, { 132, 40 }, { 20, 5 },
	    { 1, 1 }, { 300, 3 } };
	struct top_grid	 g;
	struct top_ui	 ui;
	size_t		 i;
	int		 scr, ok = 1;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (grid_init(&g, sizes[i][0], sizes[i][1]) != IDEM_OK) {
			ok = 0;
			continue;
		}
		for (scr = 1; scr <= TOP_NSCREENS; scr++) {
			top_ui_init(&ui, 2000, 3600000, 1, 1);
			ui.screen = scr;
			ui.help = scr == 2;
			ui.detail = scr == 3;
			top_ui_draw(&ui, s, &g);
			ok &= grid_clean(&g);
		}
		grid_free(&g);
	}
	CHECK(ok);
	/* 132 wide: the route column takes the spare width */
	CHECK(grid_init(&g, 132, 40) == IDEM_OK);
	top_ui_init(&ui, 2000, 3600000, 0, 1);
	ui.screen = SCR_INPROG;
	top_ui_draw(&ui, s, &g);
	CHECK(grid_find(&g, "/payments/refunds ") > 0);
	CHECK(grid_find(&g, " ctl\\x01********XY ") == 5);
	CHECK(strlen(row(&g, 3)) > 100);
	grid_free(&g);
	/* 80 wide: nothing past column 80 */
	CHECK(grid_init(&g, 80, 24) == IDEM_OK);
	top_ui_draw(&ui, s, &g);
	CHECK(strlen(row(&g, 3)) <= 80);
	grid_free(&g);
}

static void
test_batch(const struct top_snap *s)
{
	struct top_grid	 g;
	struct top_ui	 ui;

	top_ui_init(&ui, 2000, 3600000, 0, 0);
	ui.batch = 1;
	ui.screen = SCR_INPROG;
	CHECK(grid_init(&g, 132, 8) == IDEM_OK);
	top_ui_draw(&ui, s, &g);
	CHECK(strstr(row(&g, 0), "4 keys in progress") != NULL);
	CHECK(strstr(row(&g, 1), "KEY") != NULL);
	{
		/* one of each: no plural */
		struct top_snap	 one = *s;

		one.inprog = 1;
		one.waiting = 1;
		top_ui_draw(&ui, &one, &g);
		CHECK(strstr(row(&g, 0), "1 key in progress, 1 request waiting")
		    != NULL);
		/* more in progress than listed: the counts are the store's,
		 * not the listed rows' */
		one.inprog = 200001;
		one.past_lease = 200000;
		top_ui_draw(&ui, &one, &g);
		CHECK(strstr(row(&g, 0), "200001 keys in progress") != NULL);
		CHECK(strstr(row(&g, 0), "200000 past lease; the oldest listed")
		    != NULL);
		top_ui_draw(&ui, s, &g);
	}
	if (s->nkeys > 0) {
		/* the unscoped scope is shown by name, as idemctl does */
		struct top_key	*k = &s->keys[0];
		unsigned char	 saved[FP_LEN];
		int		 i, named = 0;

		memcpy(saved, k->scope, FP_LEN);
		fp_scope("none", "", k->scope);
		top_ui_draw(&ui, s, &g);
		for (i = 2; i < 8; i++)
			named += strstr(row(&g, i), " none ") != NULL;
		CHECK(named == 1);
		memcpy(k->scope, saved, FP_LEN);
		top_ui_draw(&ui, s, &g);
	}
	CHECK(strncmp(row(&g, 2), " stal", 5) == 0);	/* no selection */
	CHECK(strncmp(row(&g, 5), " k*", 3) == 0);
	CHECK(grid_find(&g, "q quit") == -1);
	CHECK(grid_ascii(&g));
	grid_free(&g);
}

/* A refresh that reorders rows keeps the cursor on the same row. */
static void
test_follow(const struct top_snap *s)
{
	struct top_ui	 ui;
	struct top_snap	 t;
	struct top_key	*keys;
	size_t		*idx, n, k;
	uint64_t	 id;

	top_ui_init(&ui, 2000, 2 * 3600 * 1000, 1, 1);
	top_ui_key(&ui, s, '2');
	top_ui_key(&ui, s, TK_DOWN);
	CHECK(ui.sel[SCR_INPROG] == 1);
	n = top_view_rows(&ui, s, SCR_INPROG, &idx);
	CHECK(n == s->nkeys && n >= 2);
	id = s->keys[idx[1]].id;
	free(idx);
	top_ui_remember(&ui, s);

	/* The next snapshot has a key older than all: it sorts first. */
	t = *s;
	CHECK((keys = calloc(s->nkeys + 1, sizeof(*keys))) != NULL);
	keys[0] = s->keys[0];
	keys[0].id = 999999;
	keys[0].age_ms = 10 * 3600 * 1000;
	memcpy(keys + 1, s->keys, s->nkeys * sizeof(*keys));
	t.keys = keys;
	t.nkeys = s->nkeys + 1;
	top_ui_follow(&ui, &t);
	CHECK(ui.sel[SCR_INPROG] == 2);
	n = top_view_rows(&ui, &t, SCR_INPROG, &idx);
	CHECK(n == t.nkeys && t.keys[idx[ui.sel[SCR_INPROG]]].id == id);
	CHECK(t.keys[idx[0]].id == 999999);
	free(idx);

	/* The selected key is gone: the position stays. */
	top_ui_remember(&ui, &t);
	for (n = 0, k = 0; k < t.nkeys; k++)
		if (t.keys[k].id != id)
			keys[n++] = t.keys[k];
	t.nkeys = n;
	CHECK(n == s->nkeys);
	top_ui_follow(&ui, &t);
	CHECK(ui.sel[SCR_INPROG] == 2);
	free(keys);
}

static void
test_fake_source(const struct top_snap *canned)
{
	struct top_src	*src;
	struct top_snap	 s;
	char		 err[128];
	int		 deleted;

	top_snap_init(&s);
	CHECK(top_src_fake_new(canned, &src) == IDEM_OK);
	CHECK(src->fetch(src, &s, err, sizeof(err)) == IDEM_OK);
	CHECK(s.nkeys == 4 && s.nroutes == 3 && s.nruns == 3);
	CHECK(s.keys != canned->keys);
	top_src_fake_set_fail(src, "server has gone away");
	CHECK(src->fetch(src, &s, err, sizeof(err)) == IDEM_ESTORE);
	CHECK(strcmp(err, "server has gone away") == 0);
	CHECK(s.nkeys == 4);	/* unchanged on failure */
	top_src_fake_set_fail(src, NULL);
	CHECK(src->forget(src, 12, &deleted, err, sizeof(err)) == IDEM_OK);
	CHECK(deleted == 1);
	CHECK(src->forget(src, 12, &deleted, err, sizeof(err)) == IDEM_OK);
	CHECK(deleted == 0);
	CHECK(src->fetch(src, &s, err, sizeof(err)) == IDEM_OK);
	CHECK(s.nkeys == 3 && s.inprog == 3);
	CHECK(top_src_fake_fetches(src) == 3);
	top_src_free(src);
	top_src_free(NULL);
	top_snap_free(&s);
	top_snap_free(NULL);
}

/* The child runner behind 'c': output collected (bounded), exit seen. */
static void
test_cmd(void)
{
	struct top_cmd	 c;
	struct timespec	 ts = { 0, 20 * 1000 * 1000 };
	char		*argv[] = { "/bin/sh", "-c",
	    "echo cleanup failed: lock; head -c 5000 /dev/zero; exit 3", NULL };
	char		 path[4096];
	int		 st = 0, done = 0, i;

	memset(&c, 0, sizeof(c));
	c.fd = -1;
	CHECK(top_cmd_poll(&c, &st) == 0);
	CHECK(top_cmd_start(&c, argv) == IDEM_OK);
	CHECK(c.pid > 0);
	CHECK(top_cmd_start(&c, argv) == IDEM_EBUSY);
	for (i = 0; i < 250 && !done; i++) {
		done = top_cmd_poll(&c, &st);
		if (!done)
			nanosleep(&ts, NULL);
	}
	CHECK(done);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	CHECK(strncmp(c.out, "cleanup failed: lock\n", 21) == 0);
	CHECK(c.outlen == sizeof(c.out) - 1);
	CHECK(c.pid == 0 && c.fd == -1);
	/* the child gets none of our fds past 2 (the client library leaves
	 * its MySQL socket open across exec) */
	CHECK(dup2(0, 57) == 57);
	argv[2] = "[ -e /proc/$$/fd/57 ] && echo leaked || echo clean";
	CHECK(top_cmd_start(&c, argv) == IDEM_OK);
	for (done = 0, i = 0; i < 250 && !done; i++) {
		done = top_cmd_poll(&c, &st);
		if (!done)
			nanosleep(&ts, NULL);
	}
	CHECK(done && strcmp(c.out, "clean\n") == 0);
	close(57);
	/* a child still running when we quit is stopped and reaped */
	argv[2] = "sleep 5";
	CHECK(top_cmd_start(&c, argv) == IDEM_OK);
	top_cmd_stop(&c);
	CHECK(c.pid == 0);
	CHECK(top_cmd_sibling("no-such-program-here", path, sizeof(path)) ==
	    IDEM_ENOTFOUND);
}

int
main(void)
{
	struct top_snap	 s;

	setenv("TZ", "UTC", 1);
	top_snap_init(&s);
	CHECK(top_fake_fill(&s, NOW_MS) == IDEM_OK);
	test_fmt();
	test_overview(&s);
	test_inprog(&s);
	test_routes_runs(&s);
	test_keys(&s);
	test_sizes(&s);
	test_batch(&s);
	test_follow(&s);
	test_fake_source(&s);
	test_cmd();
	top_snap_free(&s);
	return CHECK_DONE();
}
