/* idemtop's screens and keys: state, key handling and rendering into a grid. */
#ifndef IDEM_IDEMTOP_UI_H
#define IDEM_IDEMTOP_UI_H

#include <stddef.h>
#include <stdint.h>

#include "idemtop_fmt.h"
#include "store_top.h"

enum top_screen {
	SCR_OVERVIEW = 1,
	SCR_INPROG = 2,
	SCR_ROUTES = 3,
	SCR_RUNS = 4,
};
#define TOP_NSCREENS	4

/* What the main loop must do after a key. */
enum top_action {
	ACT_NONE,
	ACT_QUIT,
	ACT_REFRESH,	/* fetch now (unpaused, interval changed) */
	ACT_REDRAW,	/* repaint the whole terminal (Ctrl-L) */
	ACT_FORGET,	/* confirmed: delete key ui->pending_id */
	ACT_CLEANUP,	/* confirmed: run idemctl cleanup */
};

#define TOP_FILTER_MAX	64

/* Keys beyond bytes, as the terminal layer translates them (the UI code
 * stays free of curses so it can be tested without a terminal). */
enum top_keycode {
	TK_UP = 0x1001,
	TK_DOWN,
	TK_PGUP,
	TK_PGDN,
	TK_HOME,
	TK_END,
	TK_ENTER,
	TK_BACKSPACE,
	TK_BTAB,
	TK_RESIZE,
};

/* Everything the operator can change, plus messages to show.  Plain data:
 * the caller owns it and may read any field. */
struct top_ui {
	int		 screen;			/* enum top_screen */
	int		 sort[TOP_NSCREENS + 1];	/* column per screen */
	int		 invert[TOP_NSCREENS + 1];
	int		 sel[TOP_NSCREENS + 1];		/* selected row */
	/* The selected row's identity, kept across a refresh. */
	char		 sel_ident[TOP_NSCREENS + 1][TOP_TEXT_MAX];
	int		 scroll[TOP_NSCREENS + 1];	/* first row shown */
	char		 filter[TOP_FILTER_MAX];	/* substring, "" none */
	char		 saved[TOP_FILTER_MAX];		/* filter before '/' */
	int		 editing;			/* typing a filter */
	int		 help;
	int		 detail;
	int		 paused;
	int64_t		 refresh_ms;
	int64_t		 warn_ms;			/* cleanup_warn_after */
	int		 write;				/* --write */
	int		 confirm;			/* 0, 'f' or 'c' */
	uint64_t	 pending_id;			/* key to forget */
	char		 status[256];			/* last message */
	char		 error[256];			/* source trouble */
	int		 utf8;				/* may draw blocks */
	int		 batch;				/* plain, every row */
	int		 page;				/* last draw's page */
};

/* Defaults: overview, oldest first, busiest route first, newest run first. */
void top_ui_init(struct top_ui *ui, int64_t refresh_ms, int64_t warn_ms,
    int write, int utf8);

/*
 * Around a refresh: top_ui_remember() notes which row is selected on each
 * screen of s (a key or run by id, a route by name), top_ui_follow() moves
 * each selection to where that row is in the new s, so the cursor stays on
 * the row, not the position.  A row that is gone keeps the position.
 */
void top_ui_remember(struct top_ui *ui, const struct top_snap *s);
void top_ui_follow(struct top_ui *ui, const struct top_snap *s);

/*
 * Applies one key (a byte or a TK_ code) against snapshot s (may
 * be NULL before the first fetch).  Returns what the caller must do.
 */
enum top_action top_ui_key(struct top_ui *ui, const struct top_snap *s,
    int key);

/*
 * Draws the current screen of s (NULL: "waiting for data") into g, which
 * is cleared first.  Interactive: title, tabs, body, status line, overlays.
 * Batch: the body only, every row.
 */
void top_ui_draw(struct top_ui *ui, const struct top_snap *s,
    struct top_grid *g);

/* Rows screen would list for s under the current filter. */
size_t top_ui_rows(const struct top_ui *ui, const struct top_snap *s,
    int screen);

/* "Overview", "In progress", "Routes", "Cleanup jobs". */
const char *top_screen_name(int screen);

/* Fleet totals over per_min[from..to] (inclusive).  OUT: c. */
void top_sum(const struct top_snap *s, int from, int to,
    struct top_counts *c);

#endif
