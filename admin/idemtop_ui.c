/* idemtop's screen state: key handling, filtering and sorting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idemtop_ui.h"
#include "idemtop_view.h"

static const int64_t refresh_steps[] = {
	500, 1000, 2000, 5000, 10000, 30000, 60000,
};
#define NSTEPS	(sizeof(refresh_steps) / sizeof(refresh_steps[0]))

static const struct col inprog_cols[] = {
	{ "KEY", 14, 1, 0, 0 },
	{ "SCOPE", 8, 0, 0, 0 },
	{ "ROUTE", 12, 3, 0, 0 },
	{ "OWNER HOST", 12, 2, 0, 0 },
	{ "AGE", 7, 0, 1, 1 },
	{ "LEASE", 7, 0, 1, 0 },
	{ "WAITERS", 7, 0, 1, 1 },
};

static const struct col route_cols[] = {
	{ "ROUTE", 14, 1, 0, 0 },
	{ "REQS", 7, 0, 1, 1 },
	{ "REUSE%", 6, 0, 1, 1 },
	{ "422", 5, 0, 1, 1 },
	{ "409", 5, 0, 1, 1 },
	{ "WAITS", 6, 0, 1, 1 },
	{ "P50", 8, 0, 1, 1 },
	{ "P95", 8, 0, 1, 1 },
	{ "RELEASED", 8, 0, 1, 1 },
};

static const struct col run_cols[] = {
	{ "HOST", 8, 1, 0, 0 },
	{ "STARTED", 14, 0, 0, 1 },
	{ "DURATION", 8, 0, 1, 1 },
	{ "DELETED", 8, 0, 1, 1 },
	{ "STALE", 5, 0, 1, 1 },
	{ "BATCHES", 7, 0, 1, 1 },
	{ "OUTCOME", 8, 0, 0, 0 },
	{ "REASON", 6, 2, 0, 0 },
};

#define NCOLS(a)	((int)(sizeof(a) / sizeof((a)[0])))

const struct col *
top_screen_cols(int screen, int *n)
{
	switch (screen) {
	case SCR_INPROG:
		*n = NCOLS(inprog_cols);
		return inprog_cols;
	case SCR_ROUTES:
		*n = NCOLS(route_cols);
		return route_cols;
	case SCR_RUNS:
		*n = NCOLS(run_cols);
		return run_cols;
	default:
		*n = 0;
		return NULL;
	}
}

const char *
top_screen_name(int screen)
{
	switch (screen) {
	case SCR_OVERVIEW:
		return "Overview";
	case SCR_INPROG:
		return "In progress";
	case SCR_ROUTES:
		return "Routes";
	case SCR_RUNS:
		return "Cleanup jobs";
	default:
		return "?";
	}
}

void
top_ui_init(struct top_ui *ui, int64_t refresh_ms, int64_t warn_ms,
    int write, int utf8)
{
	memset(ui, 0, sizeof(*ui));
	ui->screen = SCR_OVERVIEW;
	ui->sort[SCR_INPROG] = 4;	/* age, oldest first */
	ui->sort[SCR_ROUTES] = 1;	/* requests, busiest first */
	ui->sort[SCR_RUNS] = 1;		/* started, newest first */
	ui->refresh_ms = refresh_ms > 0 ? refresh_ms : 2000;
	ui->warn_ms = warn_ms;
	ui->write = write;
	ui->utf8 = utf8;
	ui->page = 10;
}

void
top_sum(const struct top_snap *s, int from, int to, struct top_counts *c)
{
	int	 i, k;

	memset(c, 0, sizeof(*c));
	for (i = from; i <= to && i < TOP_MINUTES; i++)
		for (k = 0; k < TOPC__COUNT; k++)
			c->n[k] += s->per_min[i].n[k];
}

static int
has(const char *hay, size_t len, const char *needle)
{
	return memmem(hay, len, needle, strlen(needle)) != NULL;
}

/* Filter is a case-sensitive substring of route, key or host. */
static int
row_matches(const struct top_ui *ui, const struct top_snap *s, int screen,
    size_t i)
{
	const char *f = ui->filter;

	if (f[0] == '\0')
		return 1;
	switch (screen) {
	case SCR_INPROG:
		return has(s->keys[i].route, strlen(s->keys[i].route), f) ||
		    has(s->keys[i].key, s->keys[i].keylen, f) ||
		    has(s->keys[i].owner, strlen(s->keys[i].owner), f);
	case SCR_ROUTES:
		return has(s->routes[i].route, strlen(s->routes[i].route), f);
	case SCR_RUNS:
		return has(s->runs[i].host, strlen(s->runs[i].host), f) ||
		    has(s->runs[i].outcome, strlen(s->runs[i].outcome), f);
	}
	return 1;
}

static size_t
screen_len(const struct top_snap *s, int screen)
{
	if (s == NULL)
		return 0;
	switch (screen) {
	case SCR_INPROG:
		return s->nkeys;
	case SCR_ROUTES:
		return s->nroutes;
	case SCR_RUNS:
		return s->nruns;
	}
	return 0;
}

size_t
top_ui_rows(const struct top_ui *ui, const struct top_snap *s, int screen)
{
	size_t	 i, n = 0, len = screen_len(s, screen);

	for (i = 0; i < len; i++)
		n += row_matches(ui, s, screen, i);
	return n;
}

struct sortctx {
	const struct top_snap *s;
	int		 screen;
	int		 col;
	int		 dir;		/* 1 ascending, -1 descending */
};

static int
cmp_u(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int
cmp_i(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static uint64_t
reuse_permille(const struct top_route *r)
{
	uint64_t d = r->c.n[TOPC_REQUESTS];

	return d == 0 ? 0 : r->c.n[TOPC_REUSED] * 1000 / d;
}

int64_t
top_route_q(const struct top_route *r, double p)
{
	return stat_wait_percentile(r->wait_bucket, p);
}

/* Routes x and y by counter id, and by wait percentile p. */
static int
cmp_count(const struct top_route *x, const struct top_route *y, int id)
{
	return cmp_u(x->c.n[id], y->c.n[id]);
}

static int
cmp_q(const struct top_route *x, const struct top_route *y, double p)
{
	return cmp_i(top_route_q(x, p), top_route_q(y, p));
}

static int
cmp_row(const void *pa, const void *pb, void *arg)
{
	const struct sortctx *c = arg;
	size_t	 a = *(const size_t *)pa, b = *(const size_t *)pb;
	int	 r = 0;

	if (c->screen == SCR_INPROG) {
		const struct top_key *x = &c->s->keys[a], *y = &c->s->keys[b];

		switch (c->col) {
		case 0:
			r = memcmp(x->key, y->key, x->keylen < y->keylen ?
			    x->keylen : y->keylen);
			if (r == 0)
				r = cmp_u(x->keylen, y->keylen);
			break;
		case 1: r = memcmp(x->scope, y->scope, FP_LEN); break;
		case 2: r = strcmp(x->route, y->route); break;
		case 3: r = strcmp(x->owner, y->owner); break;
		case 4: r = cmp_i(x->age_ms, y->age_ms); break;
		case 5: r = cmp_i(x->lease_left_ms, y->lease_left_ms); break;
		case 6: r = cmp_u(x->waiters, y->waiters); break;
		}
	} else if (c->screen == SCR_ROUTES) {
		const struct top_route *x = &c->s->routes[a];
		const struct top_route *y = &c->s->routes[b];

		switch (c->col) {
		case 0: r = strcmp(x->route, y->route); break;
		case 1: r = cmp_count(x, y, TOPC_REQUESTS); break;
		case 2: r = cmp_u(reuse_permille(x), reuse_permille(y)); break;
		case 3: r = cmp_count(x, y, TOPC_MISMATCHED); break;
		case 4: r = cmp_count(x, y, TOPC_CONFLICTED); break;
		case 5: r = cmp_count(x, y, TOPC_WAITED); break;
		case 6: r = cmp_q(x, y, 0.5); break;
		case 7: r = cmp_q(x, y, 0.95); break;
		case 8: r = cmp_count(x, y, TOPC_RELEASED); break;
		}
	} else if (c->screen == SCR_RUNS) {
		const struct top_run *x = &c->s->runs[a], *y = &c->s->runs[b];

		switch (c->col) {
		case 0: r = strcmp(x->host, y->host); break;
		case 1: r = cmp_i(x->started, y->started); break;
		case 2: r = cmp_i(x->duration_ms, y->duration_ms); break;
		case 3: r = cmp_u(x->rows_deleted, y->rows_deleted); break;
		case 4: r = cmp_u(x->stale_released, y->stale_released); break;
		case 5: r = cmp_u(x->batches, y->batches); break;
		case 6: r = strcmp(x->outcome, y->outcome); break;
		case 7: r = strcmp(x->reason, y->reason); break;
		}
	}
	/* Ties keep the store's order (stable across refreshes). */
	if (r == 0)
		return cmp_u(a, b);
	return r * c->dir;
}

/*
 * Indices into the snapshot array of screen, filtered and sorted, in
 * display order.  Returns how many; *out is malloc'd (NULL when 0).
 */
size_t
top_view_rows(const struct top_ui *ui, const struct top_snap *s, int screen,
    size_t **out)
{
	struct sortctx	 c;
	const struct col *cols;
	size_t		*idx, i, n = 0, len = screen_len(s, screen);
	int		 ncols;

	*out = NULL;
	if (len == 0 || (idx = calloc(len, sizeof(*idx))) == NULL)
		return 0;
	for (i = 0; i < len; i++)
		if (row_matches(ui, s, screen, i))
			idx[n++] = i;
	cols = top_screen_cols(screen, &ncols);
	c.s = s;
	c.screen = screen;
	c.col = ui->sort[screen] < ncols ? ui->sort[screen] : 0;
	c.dir = cols[c.col].desc ? -1 : 1;
	if (ui->invert[screen])
		c.dir = -c.dir;
	qsort_r(idx, n, sizeof(*idx), cmp_row, &c);
	*out = idx;
	return n;
}

/* A name for row i of screen that holds across snapshots. */
static void
row_ident(const struct top_snap *s, int screen, size_t i, char *out,
    size_t cap)
{
	switch (screen) {
	case SCR_INPROG:
		snprintf(out, cap, "%llu", (unsigned long long)s->keys[i].id);
		break;
	case SCR_ROUTES:
		snprintf(out, cap, "%s", s->routes[i].route);
		break;
	case SCR_RUNS:
		snprintf(out, cap, "%llu", (unsigned long long)s->runs[i].id);
		break;
	default:
		out[0] = '\0';
	}
}

void
top_ui_remember(struct top_ui *ui, const struct top_snap *s)
{
	size_t	*idx, n;
	int	 scr;

	for (scr = SCR_INPROG; scr <= SCR_RUNS; scr++) {
		ui->sel_ident[scr][0] = '\0';
		n = top_view_rows(ui, s, scr, &idx);
		if (ui->sel[scr] >= 0 && (size_t)ui->sel[scr] < n)
			row_ident(s, scr, idx[ui->sel[scr]], ui->sel_ident[scr],
			    sizeof(ui->sel_ident[scr]));
		free(idx);
	}
}

void
top_ui_follow(struct top_ui *ui, const struct top_snap *s)
{
	char	 id[TOP_TEXT_MAX];
	size_t	*idx, n, j;
	int	 scr;

	for (scr = SCR_INPROG; scr <= SCR_RUNS; scr++) {
		if (ui->sel_ident[scr][0] == '\0')
			continue;
		n = top_view_rows(ui, s, scr, &idx);
		for (j = 0; j < n; j++) {
			row_ident(s, scr, idx[j], id, sizeof(id));
			if (strcmp(id, ui->sel_ident[scr]) == 0) {
				ui->sel[scr] = (int)j;
				break;
			}
		}
		free(idx);
	}
}

/* Clamps the selection to n rows. */
void
top_clamp_sel(struct top_ui *ui, int screen, size_t n)
{
	if (ui->sel[screen] >= (int)n)
		ui->sel[screen] = (int)n - 1;
	if (ui->sel[screen] < 0)
		ui->sel[screen] = 0;
}

static void
set_status(struct top_ui *ui, const char *msg)
{
	snprintf(ui->status, sizeof(ui->status), "%s", msg);
}

static enum top_action
key_filter(struct top_ui *ui, int key)
{
	size_t	 n = strlen(ui->filter);

	switch (key) {
	case '\n':
	case '\r':
	case TK_ENTER:
		ui->editing = 0;
		return ACT_NONE;
	case 27:	/* Esc */
		ui->editing = 0;
		memcpy(ui->filter, ui->saved, sizeof(ui->filter));
		return ACT_NONE;
	case TK_BACKSPACE:
	case 127:
	case 8:
		if (n > 0)
			ui->filter[n - 1] = '\0';
		return ACT_NONE;
	}
	if (key >= 0x20 && key < 0x7f && n + 1 < sizeof(ui->filter)) {
		ui->filter[n] = (char)key;
		ui->filter[n + 1] = '\0';
	}
	return ACT_NONE;
}

/* The row under the selection on the in-progress screen, or NULL. */
static const struct top_key *
selected_key(const struct top_ui *ui, const struct top_snap *s)
{
	const struct top_key *k = NULL;
	size_t		*idx, n;

	n = top_view_rows(ui, s, SCR_INPROG, &idx);
	if (n > 0 && ui->sel[SCR_INPROG] >= 0 &&
	    (size_t)ui->sel[SCR_INPROG] < n)
		k = &s->keys[idx[ui->sel[SCR_INPROG]]];
	free(idx);
	return k;
}

static void
refresh_step(struct top_ui *ui, int dir)
{
	size_t	 i;

	for (i = 0; i < NSTEPS && refresh_steps[i] < ui->refresh_ms; i++)
		;
	/* i: first step >= current interval */
	if (dir > 0) {
		if (i < NSTEPS && refresh_steps[i] == ui->refresh_ms)
			i++;
		if (i >= NSTEPS)
			i = NSTEPS - 1;
	} else {
		i = i == 0 ? 0 : i - 1;
	}
	ui->refresh_ms = refresh_steps[i];
	snprintf(ui->status, sizeof(ui->status), "refresh every %.1fs",
	    ui->refresh_ms / 1000.0);
}

/* What a key's action sees: the snapshot and this screen's row count. */
struct key_ctx {
	const struct top_snap	*s;	/* may be NULL */
	int			 scr;
	int			 key;
	size_t			 n;	/* rows on scr */
};

typedef enum top_action (*key_fn)(struct top_ui *, const struct key_ctx *);

static enum top_action
key_quit(struct top_ui *ui, const struct key_ctx *c)
{
	return ACT_QUIT;
}

static enum top_action
key_help(struct top_ui *ui, const struct key_ctx *c)
{
	ui->help = 1;
	return ACT_NONE;
}

static enum top_action
show_screen(struct top_ui *ui, int screen)
{
	ui->screen = screen;
	ui->detail = 0;
	return ACT_NONE;
}

static enum top_action
key_screen(struct top_ui *ui, const struct key_ctx *c)
{
	return show_screen(ui, c->key - '0');
}

static enum top_action
key_next_screen(struct top_ui *ui, const struct key_ctx *c)
{
	return show_screen(ui, ui->screen % TOP_NSCREENS + 1);
}

static enum top_action
key_prev_screen(struct top_ui *ui, const struct key_ctx *c)
{
	return show_screen(ui, (ui->screen + TOP_NSCREENS - 2) % TOP_NSCREENS +
	    1);
}

static enum top_action
key_pause(struct top_ui *ui, const struct key_ctx *c)
{
	ui->paused = !ui->paused;
	set_status(ui, ui->paused ? "paused" : "resumed");
	return ui->paused ? ACT_NONE : ACT_REFRESH;
}

static enum top_action
key_slower(struct top_ui *ui, const struct key_ctx *c)
{
	refresh_step(ui, 1);
	return ACT_REFRESH;
}

static enum top_action
key_faster(struct top_ui *ui, const struct key_ctx *c)
{
	refresh_step(ui, -1);
	return ACT_REFRESH;
}

static enum top_action
key_edit_filter(struct top_ui *ui, const struct key_ctx *c)
{
	memcpy(ui->saved, ui->filter, sizeof(ui->saved));
	ui->editing = 1;
	return ACT_NONE;
}

static enum top_action
key_clear_filter(struct top_ui *ui, const struct key_ctx *c)
{
	ui->filter[0] = '\0';
	set_status(ui, "filter cleared");
	return ACT_NONE;
}

/* '<' ',' sort by the column to the left, '>' '.' to the right. */
static enum top_action
key_sort(struct top_ui *ui, const struct key_ctx *c)
{
	int	 ncols, step = c->key == '<' || c->key == ',' ? -1 : 1;

	if (top_screen_cols(c->scr, &ncols) == NULL)
		return ACT_NONE;
	ui->sort[c->scr] = (ui->sort[c->scr] + ncols + step) % ncols;
	ui->invert[c->scr] = 0;
	return ACT_NONE;
}

static enum top_action
key_invert(struct top_ui *ui, const struct key_ctx *c)
{
	ui->invert[c->scr] = !ui->invert[c->scr];
	return ACT_NONE;
}

/* Moves the selection to row sel, kept within the rows. */
static enum top_action
select_row(struct top_ui *ui, const struct key_ctx *c, int sel)
{
	ui->sel[c->scr] = sel;
	top_clamp_sel(ui, c->scr, c->n);
	return ACT_NONE;
}

static int
page_step(const struct top_ui *ui)
{
	return ui->page > 1 ? ui->page - 1 : 1;
}

static enum top_action
key_up(struct top_ui *ui, const struct key_ctx *c)
{
	return select_row(ui, c, ui->sel[c->scr] - 1);
}

static enum top_action
key_down(struct top_ui *ui, const struct key_ctx *c)
{
	return select_row(ui, c, ui->sel[c->scr] + 1);
}

static enum top_action
key_page_up(struct top_ui *ui, const struct key_ctx *c)
{
	return select_row(ui, c, ui->sel[c->scr] - page_step(ui));
}

static enum top_action
key_page_down(struct top_ui *ui, const struct key_ctx *c)
{
	return select_row(ui, c, ui->sel[c->scr] + page_step(ui));
}

static enum top_action
key_home(struct top_ui *ui, const struct key_ctx *c)
{
	return select_row(ui, c, 0);
}

static enum top_action
key_end(struct top_ui *ui, const struct key_ctx *c)
{
	return select_row(ui, c, (int)c->n - 1);
}

static enum top_action
key_detail(struct top_ui *ui, const struct key_ctx *c)
{
	if (c->scr != SCR_OVERVIEW && c->n > 0)
		ui->detail = 1;
	return ACT_NONE;
}

static enum top_action
key_redraw(struct top_ui *ui, const struct key_ctx *c)
{
	return ACT_REDRAW;
}

/* 'f': asks to forget the key selected on screen 2 (--write only). */
static enum top_action
key_forget(struct top_ui *ui, const struct key_ctx *c)
{
	const struct top_key *k;
	char		 masked[64];

	if (!ui->write) {
		set_status(ui, "read-only: start idemtop with --write "
		    "to forget keys");
		return ACT_NONE;
	}
	if (c->scr != SCR_INPROG || c->s == NULL ||
	    (k = selected_key(ui, c->s)) == NULL) {
		set_status(ui, "select a key on screen 2 first");
		return ACT_NONE;
	}
	ui->pending_id = k->id;
	ui->confirm = 'f';
	fmt_mask_key(k->key, k->keylen, masked, sizeof(masked));
	snprintf(ui->status, sizeof(ui->status),
	    "Forget key %s (id %llu)? y/n", masked,
	    (unsigned long long)k->id);
	return ACT_NONE;
}

/* 'c': asks to run idemctl cleanup now (--write only). */
static enum top_action
key_cleanup(struct top_ui *ui, const struct key_ctx *c)
{
	if (!ui->write) {
		set_status(ui, "read-only: start idemtop with --write "
		    "to run a cleanup");
		return ACT_NONE;
	}
	ui->confirm = 'c';
	set_status(ui, "Start idemctl cleanup now? y/n");
	return ACT_NONE;
}

static const struct {
	int	 key;
	key_fn	 fn;
} keys[] = {
	{ 'q', key_quit }, { 'Q', key_quit },
	{ '?', key_help }, { 'h', key_help },
	{ '1', key_screen }, { '2', key_screen }, { '3', key_screen },
	{ '4', key_screen },
	{ '\t', key_next_screen }, { TK_BTAB, key_prev_screen },
	{ 'p', key_pause }, { ' ', key_pause },
	{ '+', key_slower }, { '=', key_slower },
	{ '-', key_faster }, { '_', key_faster },
	{ '/', key_edit_filter }, { '\\', key_clear_filter },
	{ '<', key_sort }, { ',', key_sort }, { '>', key_sort },
	{ '.', key_sort }, { 'I', key_invert },
	{ TK_UP, key_up }, { 'k', key_up },
	{ TK_DOWN, key_down }, { 'j', key_down },
	{ TK_PGUP, key_page_up }, { TK_PGDN, key_page_down },
	{ TK_HOME, key_home }, { 'g', key_home },
	{ TK_END, key_end }, { 'G', key_end },
	{ '\n', key_detail }, { '\r', key_detail }, { TK_ENTER, key_detail },
	{ 12, key_redraw },	/* Ctrl-L */
	{ 'f', key_forget }, { 'c', key_cleanup },
};

#define NKEYS	(sizeof(keys) / sizeof(keys[0]))

/* The answer to "y/n" after 'f' or 'c'. */
static enum top_action
key_confirm(struct top_ui *ui, int key)
{
	int	 was = ui->confirm;

	ui->confirm = 0;
	if (key == 'y' || key == 'Y') {
		set_status(ui, was == 'f' ? "forgetting..." :
		    "starting cleanup...");
		return was == 'f' ? ACT_FORGET : ACT_CLEANUP;
	}
	set_status(ui, "cancelled");
	return ACT_NONE;
}

enum top_action
top_ui_key(struct top_ui *ui, const struct top_snap *s, int key)
{
	struct key_ctx	 c;
	size_t		 i;

	if (ui->editing)
		return key_filter(ui, key);
	if (ui->confirm != 0)
		return key_confirm(ui, key);
	if (ui->help) {
		ui->help = 0;
		return key == 'q' ? ACT_QUIT : ACT_NONE;
	}
	if (ui->detail && (key == 27 || key == '\n' || key == '\r' ||
	    key == TK_ENTER)) {
		ui->detail = 0;
		return ACT_NONE;
	}
	c.s = s;
	c.scr = ui->screen;
	c.key = key;
	c.n = top_ui_rows(ui, s, c.scr);
	for (i = 0; i < NKEYS; i++)
		if (keys[i].key == key)
			return keys[i].fn(ui, &c);
	return ACT_NONE;
}
