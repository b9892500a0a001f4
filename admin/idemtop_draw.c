/* idemtop's drawing: title, tabs, the four screens, overlays, status. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fp.h"
#include "idemtop_ui.h"
#include "idemtop_view.h"

/* The host part of an owner "host:pid". */
static void
owner_host(const char *owner, char *out, size_t cap)
{
	const char *colon = strrchr(owner, ':');
	size_t	 n = colon != NULL ? (size_t)(colon - owner) : strlen(owner);

	fmt_escape(owner, n, out, cap);
}


#define TABLE_COLS_MAX	10

/* A table screen's columns and where each sits across the screen. */
struct table_layout {
	const struct col	*cols;
	int			 ncols;
	struct grid_span	 span[TABLE_COLS_MAX];
};

/* Spans of t's columns for a table width w (col 0 is a marker). */
static void
layout(struct table_layout *t, int w)
{
	const struct col *cols = t->cols;
	int	 i, used = 1, flex = 0, spare, x = 1, give;

	for (i = 0; i < t->ncols; i++) {
		used += cols[i].width + 1;
		flex += cols[i].flex;
	}
	spare = w > used ? w - used : 0;
	for (i = 0; i < t->ncols; i++) {
		give = flex > 0 ? spare * cols[i].flex / flex : 0;
		t->span[i].x = x;
		t->span[i].width = cols[i].width + give;
		t->span[i].right = cols[i].right;
		x += t->span[i].width + 1;
	}
}

static void
draw_header(const struct top_ui *ui, struct top_grid *g, int y,
    const struct table_layout *t)
{
	const struct col *cols = t->cols;
	char	 name[32];
	int	 i, sorted;

	grid_fill(g, y, 0, g->w, TA_HEAD, ' ');
	for (i = 0; i < t->ncols; i++) {
		sorted = ui->sort[ui->screen] == i;
		if (sorted) {
			int desc = cols[i].desc ^ ui->invert[ui->screen];

			snprintf(name, sizeof(name), "%s%s", cols[i].name,
			    desc ? "v" : "^");
		} else
			snprintf(name, sizeof(name), "%s", cols[i].name);
		grid_field(g, y, &t->span[i], TA_HEAD, name);
	}
}

/* The busiest of the last hour's full minutes, in requests. */
static uint64_t
per_min_peak(const struct top_snap *s)
{
	uint64_t max = 0;
	int	 i;

	for (i = 0; i < TOP_MINUTES - 1; i++)
		if (s->per_min[i].n[TOPC_REQUESTS] > max)
			max = s->per_min[i].n[TOPC_REQUESTS];
	return max;
}

static void
spark(const struct top_ui *ui, const struct top_snap *s, struct top_grid *g,
    int y, int x)
{
	static const uint32_t blocks[] = {
		0x2581, 0x2582, 0x2583, 0x2584, 0x2585, 0x2586, 0x2587, 0x2588,
	};
	static const char ramp[] = ".:-=+*#%@";
	uint64_t max = per_min_peak(s), v;
	int	 i, lvl, n = TOP_MINUTES - 1;

	for (i = 0; i < n; i++) {
		/* oldest on the left, the current minute on the right */
		v = s->per_min[n - 1 - i].n[TOPC_REQUESTS];
		if (v == 0 || max == 0) {
			grid_put(g, y, x + i, TA_NORMAL, ui->utf8 ? " " : "_");
			continue;
		}
		if (ui->utf8) {
			lvl = (int)((v * 8 - 1) / max);
			grid_fill(g, y, x + i, 1, TA_OK,
			    blocks[lvl > 7 ? 7 : lvl]);
		} else {
			lvl = (int)((v * 9 - 1) / max);
			grid_fill(g, y, x + i, 1, TA_OK,
			    (uint32_t)ramp[lvl > 8 ? 8 : lvl]);
		}
	}
}

/* 1 with the cleanup warning in out, 0 with "" when the last success is
 * recent enough (or no warning is asked for). */
static int
cleanup_warning(const struct top_ui *ui, const struct top_snap *s, char *out,
    size_t cap)
{
	char	 age[32], lim[32];
	int64_t	 since;

	out[0] = '\0';
	if (ui->warn_ms <= 0)
		return 0;
	fmt_dur(ui->warn_ms, lim, sizeof(lim));
	if (s->last_ok < 0) {
		snprintf(out, cap, "WARNING: no successful cleanup run "
		    "recorded (warn after %s)", lim);
		return 1;
	}
	since = s->now_ms - s->last_ok * 1000;
	if (since <= ui->warn_ms)
		return 0;
	fmt_dur(since, age, sizeof(age));
	snprintf(out, cap, "WARNING: no successful cleanup for %s "
	    "(warn after %s)", age, lim);
	return 1;
}

/* Draws the fleet reuse line and the counter table for now, 1m, 5m and
 * 1h from row y; returns the row after the table's blank line. */
static int
overview_counts(const struct top_snap *s, struct top_grid *g, int y)
{
	static const struct {
		const char	*label;
		int		 id;
	} lines[] = {
		{ "requests", TOPC_REQUESTS },
		{ "created", TOPC_CREATED },
		{ "reused", TOPC_REUSED },
		{ "422 mismatch", TOPC_MISMATCHED },
		{ "409 conflict", TOPC_CONFLICTED },
		{ "waits", TOPC_WAITED },
		{ "released", TOPC_RELEASED },
		{ "store errors", TOPC_STORE_ERRORS },
	};
	static const char *const hdr[4] = { "now", "1m", "5m", "1h" };
	struct grid_span at[4];
	struct top_counts c[4];
	char	 t[4][32];
	int	 i, k, x, attr;

	top_sum(s, 0, 0, &c[0]);
	top_sum(s, 1, 1, &c[1]);
	top_sum(s, 1, 5, &c[2]);
	top_sum(s, 1, 60, &c[3]);
	for (i = 0; i < 4; i++)
		fmt_pct(c[i].n[TOPC_REUSED], c[i].n[TOPC_REQUESTS], t[i],
		    sizeof(t[i]));
	x = grid_put(g, y, 1, TA_BOLD, "Fleet reuse");
	grid_printf(g, y, x, TA_NORMAL, ": now %s  1m %s  5m %s  1h %s",
	    t[0], t[1], t[2], t[3]);
	grid_put(g, y + 1, 1, TA_NORMAL,
	    "(reused / protected requests; 1m, 5m, 1h = last full minutes)");
	y += 3;
	grid_fill(g, y - 1, 0, g->w < 66 ? g->w : 66, TA_HEAD, ' ');
	for (i = 0; i < 4; i++) {
		at[i] = (struct grid_span){ 18 + 12 * i, 11, 1 };
		grid_field(g, y - 1, &at[i], TA_HEAD, hdr[i]);
	}
	for (k = 0; k < (int)(sizeof(lines) / sizeof(lines[0])); k++) {
		grid_put(g, y + k, 1, TA_NORMAL, lines[k].label);
		for (i = 0; i < 4; i++) {
			uint64_t v = c[i].n[lines[k].id];

			fmt_count(v, t[i], sizeof(t[i]));
			attr = lines[k].id == TOPC_STORE_ERRORS && v > 0 ?
			    TA_ALERT : TA_NORMAL;
			grid_field(g, y + k, &at[i], attr, t[i]);
		}
	}
	return y + k + 1;
}

/* Draws the newest cleanup run on row y, its outcome colored. */
static void
overview_last_run(const struct top_snap *s, struct top_grid *g, int y)
{
	const struct top_run *r;
	char	 a[32], b[32], esc[TOP_TEXT_MAX * 4];
	int	 x, attr;

	if (s->nruns == 0) {
		grid_put(g, y, 1, TA_NORMAL, "Last cleanup: none recorded");
		return;
	}
	r = &s->runs[0];
	fmt_time(r->started, a, sizeof(a));
	fmt_dur(s->now_ms - r->started * 1000, b, sizeof(b));
	fmt_escape(r->outcome, strlen(r->outcome), esc, sizeof(esc));
	attr = strcmp(r->outcome, "ok") == 0 ? TA_OK :
	    strcmp(r->outcome, "failed") == 0 ? TA_ALERT : TA_WARN;
	x = grid_printf(g, y, 1, TA_NORMAL, "Last cleanup: %s (%s ago): ", a,
	    b);
	x = grid_put(g, y, x, attr, esc);
	grid_printf(g, y, x, TA_NORMAL, ", %llu rows deleted, %llu stale",
	    (unsigned long long)r->rows_deleted,
	    (unsigned long long)r->stale_released);
}

static void
draw_overview(struct top_ui *ui, const struct top_snap *s, struct top_grid *g,
    int y)
{
	char	 a[32], line[512];

	y = overview_counts(s, g, y);
	fmt_count(per_min_peak(s), a, sizeof(a));
	grid_printf(g, y++, 1, TA_NORMAL, "Requests per minute, last hour "
	    "(peak %s/min, now on the right):", a);
	spark(ui, s, g, y++, 1);
	fmt_dur(s->oldest_ms, a, sizeof(a));
	grid_printf(g, y++, 1, s->waiting > 0 ? TA_WARN : TA_NORMAL,
	    "In progress now: %llu key%s, waiting now: %llu request%s, "
	    "oldest %s", (unsigned long long)s->inprog,
	    s->inprog == 1 ? "" : "s", (unsigned long long)s->waiting,
	    s->waiting == 1 ? "" : "s", s->inprog > 0 ? a : "-");
	overview_last_run(s, g, y++);
	if (cleanup_warning(ui, s, line, sizeof(line)))
		grid_put(g, y++, 1, TA_ALERT, line);
}

/* Draws one table row's cell texts; attr for the whole row. */
static void
draw_cells(struct top_grid *g, int y, const struct table_layout *t,
    char (*cells)[TOP_TEXT_MAX * 4], int attr, int selected)
{
	int	 i;

	grid_fill(g, y, 0, g->w, selected ? TA_SEL : attr, ' ');
	grid_put(g, y, 0, selected ? TA_SEL : attr, selected ? ">" : " ");
	for (i = 0; i < t->ncols; i++)
		grid_field(g, y, &t->span[i], selected ? TA_SEL : attr,
		    cells[i]);
}

/* A scope as idemctl spells it when it can be named (the hash of "none"
 * or of a job with no --scope), else the first bytes of its hash. */
static void
scope_name(const unsigned char scope[FP_LEN], size_t hexbytes, char *out,
    size_t outlen)
{
	unsigned char	 h[FP_LEN];

	fp_scope("none", "", h);
	if (memcmp(scope, h, FP_LEN) == 0) {
		snprintf(out, outlen, "none");
		return;
	}
	fp_scope("job", "", h);
	if (memcmp(scope, h, FP_LEN) == 0) {
		snprintf(out, outlen, "job");
		return;
	}
	fp_hex(scope, hexbytes, out);
}

/* A cleanup run's duration: "?" when it is not known. */
static void
run_dur(const struct top_run *r, char *out, size_t cap)
{
	if (r->duration_ms < 0)
		snprintf(out, cap, "?");
	else
		fmt_dur(r->duration_ms, out, cap);
}

/* Route r's wait percentile p as text, bounded by the route's wait. */
static void
route_q_text(const struct top_route *r, double p, char *out, size_t cap)
{
	fmt_quantile(top_route_q(r, p), stat_wait_le_ms[STAT_WAIT_BUCKETS - 2],
	    r->wait_ms, out, cap);
}

static int
row_cells(const struct top_snap *s, int screen, size_t i,
    char (*c)[TOP_TEXT_MAX * 4])
{
	int	 attr = TA_NORMAL;

	if (screen == SCR_INPROG) {
		const struct top_key *k = &s->keys[i];

		fmt_mask_key(k->key, k->keylen, c[0], sizeof(c[0]));
		scope_name(k->scope, 4, c[1], TOP_TEXT_MAX * 4);
		fmt_escape(k->route, strlen(k->route), c[2], sizeof(c[2]));
		owner_host(k->owner, c[3], sizeof(c[3]));
		fmt_dur(k->age_ms, c[4], sizeof(c[4]));
		fmt_dur(k->lease_left_ms, c[5], sizeof(c[5]));
		snprintf(c[6], sizeof(c[6]), "%llu",
		    (unsigned long long)k->waiters);
		if (k->lease_left_ms < 0)
			attr = TA_ALERT;
	} else if (screen == SCR_ROUTES) {
		const struct top_route *r = &s->routes[i];

		fmt_escape(r->route, strlen(r->route), c[0], sizeof(c[0]));
		fmt_count(r->c.n[TOPC_REQUESTS], c[1], sizeof(c[1]));
		fmt_pct(r->c.n[TOPC_REUSED], r->c.n[TOPC_REQUESTS], c[2],
		    sizeof(c[2]));
		fmt_count(r->c.n[TOPC_MISMATCHED], c[3], sizeof(c[3]));
		fmt_count(r->c.n[TOPC_CONFLICTED], c[4], sizeof(c[4]));
		fmt_count(r->c.n[TOPC_WAITED], c[5], sizeof(c[5]));
		route_q_text(r, 0.5, c[6], sizeof(c[6]));
		route_q_text(r, 0.95, c[7], sizeof(c[7]));
		fmt_count(r->c.n[TOPC_RELEASED], c[8], sizeof(c[8]));
		if (r->c.n[TOPC_STORE_ERRORS] > 0)
			attr = TA_ALERT;
	} else {
		const struct top_run *r = &s->runs[i];

		fmt_escape(r->host, strlen(r->host), c[0], sizeof(c[0]));
		fmt_time(r->started, c[1], sizeof(c[1]));
		run_dur(r, c[2], sizeof(c[2]));
		fmt_count(r->rows_deleted, c[3], sizeof(c[3]));
		fmt_count(r->stale_released, c[4], sizeof(c[4]));
		fmt_count(r->batches, c[5], sizeof(c[5]));
		fmt_escape(r->outcome, strlen(r->outcome), c[6], sizeof(c[6]));
		fmt_escape(r->reason, strlen(r->reason), c[7], sizeof(c[7]));
		if (strcmp(r->outcome, "failed") == 0)
			attr = TA_ALERT;
		else if (r->running || strcmp(r->outcome, "partial") == 0)
			attr = TA_WARN;
	}
	return attr;
}

static void
draw_summary(struct top_ui *ui, const struct top_snap *s, struct top_grid *g,
    int y, size_t shown)
{
	char	 a[32], w[512];

	switch (ui->screen) {
	case SCR_INPROG:
		/* Counted by the store, not from the rows listed (the oldest
		 * TOP_MAX_KEYS), which the line says when it is fewer. */
		fmt_dur(s->oldest_ms, a, sizeof(a));
		grid_printf(g, y, 1, s->past_lease > 0 ? TA_ALERT : TA_NORMAL,
		    "%llu key%s in progress, %llu request%s waiting, oldest "
		    "%s, %llu past lease%s", (unsigned long long)s->inprog,
		    s->inprog == 1 ? "" : "s", (unsigned long long)s->waiting,
		    s->waiting == 1 ? "" : "s", s->inprog > 0 ? a : "-",
		    (unsigned long long)s->past_lease,
		    s->nkeys < s->inprog ? "; the oldest listed" : "");
		break;
	case SCR_ROUTES:
		grid_printf(g, y, 1, TA_NORMAL, "%zu routes, last %d minutes "
		    "(reuse, waits and p50/p95 wait per route)", shown,
		    TOP_ROUTE_WINDOW_MIN);
		break;
	case SCR_RUNS:
		if (cleanup_warning(ui, s, w, sizeof(w)))
			grid_put(g, y, 1, TA_ALERT, w);
		else
			grid_printf(g, y, 1, TA_OK, "%zu recent cleanup runs; "
			    "last success within the warning interval", shown);
		break;
	}
}

static void
draw_table(struct top_ui *ui, const struct top_snap *s, struct top_grid *g,
    int y, int bottom)
{
	struct table_layout t;
	char	 cells[TABLE_COLS_MAX][TOP_TEXT_MAX * 4];
	int	 scr = ui->screen, page, r, attr;
	size_t	*idx, n;

	t.cols = top_screen_cols(scr, &t.ncols);
	n = top_view_rows(ui, s, scr, &idx);
	draw_summary(ui, s, g, y, n);
	if (ui->filter[0] != '\0') {
		char esc[TOP_FILTER_MAX * 4];

		fmt_escape(ui->filter, strlen(ui->filter), esc, sizeof(esc));
		grid_printf(g, y, g->w - 1 - (int)strlen(esc) - 9, TA_BOLD,
		    " filter: %s", esc);
	}
	layout(&t, g->w);
	draw_header(ui, g, y + 1, &t);
	y += 2;
	page = bottom - y;
	if (page < 1)
		page = 1;
	ui->page = page;
	top_clamp_sel(ui, scr, n);
	if (ui->batch)
		ui->scroll[scr] = 0;
	else if (ui->sel[scr] < ui->scroll[scr])
		ui->scroll[scr] = ui->sel[scr];
	else if (ui->sel[scr] >= ui->scroll[scr] + page)
		ui->scroll[scr] = ui->sel[scr] - page + 1;
	if (ui->scroll[scr] > (int)n - page)
		ui->scroll[scr] = (int)n - page;
	if (ui->scroll[scr] < 0)
		ui->scroll[scr] = 0;
	if (n == 0)
		grid_put(g, y, 1, TA_NORMAL, ui->filter[0] != '\0' ?
		    "(no rows match the filter)" : "(none)");
	for (r = 0; r < page && (size_t)(ui->scroll[scr] + r) < n; r++) {
		int	 at = ui->scroll[scr] + r;

		attr = row_cells(s, scr, idx[at], cells);
		draw_cells(g, y + r, &t, cells, attr,
		    !ui->batch && at == ui->sel[scr]);
	}
	free(idx);
}

/* A framed box of lines centred in g. */
static void
draw_box(struct top_grid *g, const char *title, char (*lines)[200], int n)
{
	int	 i, w = (int)strlen(title) + 4, h = n + 2, x, y;

	for (i = 0; i < n; i++)
		if ((int)strlen(lines[i]) + 4 > w)
			w = (int)strlen(lines[i]) + 4;
	if (w > g->w)
		w = g->w;
	if (h > g->h)
		h = g->h;
	x = (g->w - w) / 2;
	y = (g->h - h) / 2;
	for (i = 0; i < h; i++)
		grid_fill(g, y + i, x, w, TA_TITLE, ' ');
	grid_fill(g, y, x, w, TA_TITLE, '-');
	grid_fill(g, y + h - 1, x, w, TA_TITLE, '-');
	for (i = 0; i < h; i++) {
		grid_put(g, y + i, x, TA_TITLE,
		    i == 0 || i == h - 1 ? "+" : "|");
		grid_put(g, y + i, x + w - 1, TA_TITLE,
		    i == 0 || i == h - 1 ? "+" : "|");
	}
	grid_printf(g, y, x + 2, TA_TITLE, " %s ", title);
	for (i = 0; i < n && i < h - 2; i++)
		grid_field(g, y + 1 + i, &(struct grid_span){ x + 2, w - 4, 0 },
		    TA_TITLE, lines[i]);
}

static void
draw_help(const struct top_ui *ui, struct top_grid *g)
{
	static const char *const text[] = {
		"1-4, Tab   screens: overview, in progress, routes, cleanup",
		"q          quit",
		"p, Space   pause / resume refreshing",
		"+ / -      refresh interval longer / shorter",
		"/          filter rows (route, key, host); Enter keeps",
		"\\          clear the filter",
		"< >        sort column;  I  invert the order",
		"arrows, PgUp, PgDn, Home, End   move the selection",
		"Enter      details of the selected row",
		"Ctrl-L     redraw the screen",
		"f          forget the selected key (--write, asks y/n)",
		"c          run idemctl cleanup now (--write, asks y/n)",
		"",
		"Rows past their lease are red.  Any key closes this help.",
	};
	char	 lines[16][200];
	int	 i, n = (int)(sizeof(text) / sizeof(text[0]));

	for (i = 0; i < n; i++)
		snprintf(lines[i], sizeof(lines[i]), "%s", text[i]);
	snprintf(lines[n++], sizeof(lines[0]), "mode: %s",
	    ui->write ? "read-write (--write)" : "read-only");
	draw_box(g, "idemtop help", lines, n);
}

/* The details box being filled: its lines and scratch space for the
 * escaped or formatted value of the line in hand. */
struct detail {
	char	 lines[12][200];
	int	 n;
	char	 esc[TOP_TEXT_MAX * 4];
	char	 val[80];
};

/* Appends a line; past the box's capacity the line is dropped. */
static void __attribute__((format(printf, 2, 3)))
detail_add(struct detail *d, const char *fmt, ...)
{
	va_list	 ap;

	if (d->n >= (int)(sizeof(d->lines) / sizeof(d->lines[0])))
		return;
	va_start(ap, fmt);
	vsnprintf(d->lines[d->n++], sizeof(d->lines[0]), fmt, ap);
	va_end(ap);
}

/* "label     text", text escaped and clipped to 150 bytes. */
static void
detail_text(struct detail *d, const char *label, const char *text)
{
	fmt_escape(text, strlen(text), d->esc, sizeof(d->esc));
	detail_add(d, "%-10s%.150s", label, d->esc);
}

static void
detail_num(struct detail *d, const char *label, uint64_t v)
{
	detail_add(d, "%-10s%llu", label, (unsigned long long)v);
}

/* "label     duration" followed by suffix. */
static void
detail_dur(struct detail *d, const char *label, int64_t ms,
    const char *suffix)
{
	fmt_dur(ms, d->val, sizeof(d->val));
	detail_add(d, "%-10s%s%s", label, d->val, suffix);
}

static void
detail_key(struct detail *d, const struct top_key *r)
{
	detail_num(d, "id", r->id);
	fmt_mask_key(r->key, r->keylen, d->esc, sizeof(d->esc));
	detail_add(d, "key       %.120s (%zu bytes)", d->esc, r->keylen);
	scope_name(r->scope, FP_LEN, d->val, sizeof(d->val));	/* 65 bytes */
	detail_add(d, "scope     %s", d->val);
	detail_text(d, "route", r->route);
	detail_text(d, "owner", r->owner);
	detail_dur(d, "age", r->age_ms, "");
	detail_dur(d, "lease", r->lease_left_ms,
	    r->lease_left_ms < 0 ? " (expired)" : " left");
	detail_num(d, "waiters", r->waiters);
}

static void
detail_route(struct detail *d, const struct top_route *r)
{
	size_t	 l;
	int	 i;

	detail_text(d, "route", r->route);
	detail_add(d, "requests %llu created %llu reused %llu released %llu",
	    (unsigned long long)r->c.n[TOPC_REQUESTS],
	    (unsigned long long)r->c.n[TOPC_CREATED],
	    (unsigned long long)r->c.n[TOPC_REUSED],
	    (unsigned long long)r->c.n[TOPC_RELEASED]);
	detail_add(d, "store errors %llu, waits %llu, wait total %llums, "
	    "quota 429s %llu", (unsigned long long)r->c.n[TOPC_STORE_ERRORS],
	    (unsigned long long)r->c.n[TOPC_WAITED],
	    (unsigned long long)r->wait_sum_ms,
	    (unsigned long long)r->c.n[TOPC_QUOTA]);
	d->esc[0] = '\0';
	for (i = 0; i < STAT_WAIT_BUCKETS; i++) {
		l = strlen(d->esc);
		snprintf(d->esc + l, sizeof(d->esc) - l, "%s%llu", i ? " " : "",
		    (unsigned long long)r->wait_bucket[i]);
	}
	detail_add(d, "wait buckets (<=10ms..+Inf): %.150s", d->esc);
}

static void
detail_run(struct detail *d, const struct top_run *r)
{
	detail_num(d, "run id", r->id);
	detail_text(d, "host", r->host);
	fmt_time(r->started, d->val, sizeof(d->val));
	detail_add(d, "started   %s", d->val);
	run_dur(r, d->val, sizeof(d->val));
	detail_add(d, "%-10s%s%s", "duration", d->val,
	    r->running ? " (running)" : r->duration_ms < 0 ?
	    " (it died: its end is not known)" : "");
	detail_add(d, "deleted   %llu rows, %llu stale released, %llu batches",
	    (unsigned long long)r->rows_deleted,
	    (unsigned long long)r->stale_released,
	    (unsigned long long)r->batches);
	detail_text(d, "outcome", r->outcome);
	detail_text(d, "reason", r->reason);
}

/* The details box of the selected row; closes itself when there is none. */
static void
draw_detail(struct top_ui *ui, const struct top_snap *s, struct top_grid *g)
{
	struct detail	 d;
	size_t		*idx, n, at;
	int		 scr = ui->screen;

	n = top_view_rows(ui, s, scr, &idx);
	if (n == 0 || ui->sel[scr] < 0 || (size_t)ui->sel[scr] >= n) {
		free(idx);
		ui->detail = 0;
		return;
	}
	at = idx[ui->sel[scr]];
	free(idx);
	d.n = 0;
	if (scr == SCR_INPROG)
		detail_key(&d, &s->keys[at]);
	else if (scr == SCR_ROUTES)
		detail_route(&d, &s->routes[at]);
	else
		detail_run(&d, &s->runs[at]);
	detail_add(&d, "%s", "");
	detail_add(&d, "Enter or Esc closes");
	draw_box(g, "details", d.lines, d.n);
}

static void
draw_bars(struct top_ui *ui, const struct top_snap *s, struct top_grid *g)
{
	char	 t[32], line[512];
	int	 i, x;

	grid_fill(g, 0, 0, g->w, TA_TITLE, ' ');
	x = grid_put(g, 0, 1, TA_TITLE, "idemtop");
	if (s != NULL) {
		struct tm tm;
		time_t	 now = (time_t)(s->now_ms / 1000);

		if (localtime_r(&now, &tm) != NULL &&
		    strftime(t, sizeof(t), "%H:%M:%S", &tm) > 0)
			x = grid_printf(g, 0, x, TA_TITLE, "  %s", t);
	}
	x = grid_printf(g, 0, x, TA_TITLE, "  refresh %.1fs",
	    ui->refresh_ms / 1000.0);
	if (ui->paused)
		x = grid_put(g, 0, x, TA_TITLE, "  [PAUSED]");
	if (ui->write)
		x = grid_put(g, 0, x, TA_TITLE, "  [WRITE]");
	grid_put(g, 0, g->w - 8, TA_TITLE, "? help");

	x = 0;
	for (i = 1; i <= TOP_NSCREENS; i++) {
		snprintf(line, sizeof(line), " %d %s ", i, top_screen_name(i));
		x = grid_put(g, 1, x, i == ui->screen ? TA_SEL : TA_NORMAL,
		    line) + 1;
	}

	grid_fill(g, g->h - 1, 0, g->w, TA_TITLE, ' ');
	if (ui->editing) {
		char esc[TOP_FILTER_MAX * 4];

		fmt_escape(ui->filter, strlen(ui->filter), esc, sizeof(esc));
		grid_printf(g, g->h - 1, 0, TA_TITLE,
		    "Filter (route, key, host): %s_   Enter keeps, Esc cancels",
		    esc);
	} else if (ui->confirm != 0) {
		grid_put(g, g->h - 1, 0, TA_WARN, ui->status);
		grid_attr(g, g->h - 1, 0, g->w, TA_WARN);
	} else if (ui->error[0] != '\0') {
		fmt_escape(ui->error, strlen(ui->error), line, sizeof(line));
		grid_put(g, g->h - 1, 0, TA_ALERT, line);
		grid_attr(g, g->h - 1, 0, g->w, TA_ALERT);
	} else if (ui->status[0] != '\0') {
		fmt_escape(ui->status, strlen(ui->status), line, sizeof(line));
		grid_put(g, g->h - 1, 0, TA_TITLE, line);
	} else {
		grid_put(g, g->h - 1, 0, TA_TITLE, "q quit  ? help  "
		    "1-4 screens  / filter  p pause  +/- refresh");
	}
}

void
top_ui_draw(struct top_ui *ui, const struct top_snap *s, struct top_grid *g)
{
	int	 y0 = ui->batch ? 0 : 2;
	int	 bottom = ui->batch ? g->h : g->h - 1;

	grid_clear(g);
	if (!ui->batch)
		draw_bars(ui, s, g);
	if (s == NULL) {
		grid_put(g, y0 + 1, 1, TA_NORMAL, "waiting for data...");
		goto overlays;
	}
	if (ui->screen == SCR_OVERVIEW)
		draw_overview(ui, s, g, y0);
	else
		draw_table(ui, s, g, y0, bottom);
	if (ui->detail && !ui->batch)
		draw_detail(ui, s, g);
overlays:
	if (ui->help && !ui->batch)
		draw_help(ui, g);
}
