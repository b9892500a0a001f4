/* idemtop's terminal: curses set-up, painting a grid, reading keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idemtop_term.h"
#include "idemtop_ui.h"

#include <curses.h>

struct top_term {
	SCREEN		*scr;
	int		 color;
	attr_t		 attr[TA__COUNT];
	short		 pair[TA__COUNT];
};

static void
term_colors(struct top_term *t)
{
	const char *nc = getenv("NO_COLOR");

	/* Monochrome: every distinction still visible without color. */
	t->attr[TA_NORMAL] = A_NORMAL;
	t->attr[TA_BOLD] = A_BOLD;
	t->attr[TA_TITLE] = A_REVERSE;
	t->attr[TA_HEAD] = A_BOLD | A_UNDERLINE;
	t->attr[TA_SEL] = A_BOLD | A_UNDERLINE;
	t->attr[TA_ALERT] = A_REVERSE | A_BOLD;
	t->attr[TA_WARN] = A_BOLD;
	t->attr[TA_OK] = A_NORMAL;
	if ((nc != NULL && nc[0] != '\0') || !has_colors() ||
	    start_color() == ERR)
		return;
	use_default_colors();
	init_pair(1, COLOR_BLACK, COLOR_CYAN);		/* title */
	init_pair(2, COLOR_BLACK, COLOR_GREEN);		/* header */
	init_pair(3, COLOR_BLACK, COLOR_WHITE);		/* selection */
	init_pair(4, COLOR_RED, -1);			/* alert */
	init_pair(5, COLOR_YELLOW, -1);			/* warn */
	init_pair(6, COLOR_GREEN, -1);			/* ok */
	t->color = 1;
	t->attr[TA_TITLE] = A_NORMAL;
	t->pair[TA_TITLE] = 1;
	t->attr[TA_HEAD] = A_NORMAL;
	t->pair[TA_HEAD] = 2;
	t->attr[TA_SEL] = A_BOLD;
	t->pair[TA_SEL] = 3;
	t->attr[TA_ALERT] = A_BOLD;
	t->pair[TA_ALERT] = 4;
	t->attr[TA_WARN] = A_BOLD;
	t->pair[TA_WARN] = 5;
	t->pair[TA_OK] = 6;
}

enum idem_err
term_open(struct top_term **out)
{
	struct top_term	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return IDEM_ENOMEM;
	if ((t->scr = newterm(NULL, stdout, stdin)) == NULL) {
		free(t);
		return IDEM_ESYS;
	}
	set_term(t->scr);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	term_colors(t);
	*out = t;
	return IDEM_OK;
}

void
term_close(struct top_term *t)
{
	if (t == NULL)
		return;
	endwin();
	delscreen(t->scr);
	free(t);
}

void
term_size(struct top_term *t, int *w, int *h)
{
	getmaxyx(stdscr, *h, *w);
}

void
term_paint(struct top_term *t, const struct top_grid *g)
{
	cchar_t	 cc;
	wchar_t	 wc[2];
	int	 x, y, a, maxy, maxx;

	getmaxyx(stdscr, maxy, maxx);
	for (y = 0; y < g->h && y < maxy; y++)
		for (x = 0; x < g->w && x < maxx; x++) {
			a = g->at[(size_t)y * g->w + x];
			if (a >= TA__COUNT)
				a = TA_NORMAL;
			wc[0] = (wchar_t)g->cp[(size_t)y * g->w + x];
			wc[1] = L'\0';
			setcchar(&cc, wc, t->attr[a], t->pair[a], NULL);
			/* The bottom-right cell "fails" (no room to advance the
			 * cursor) after drawing; that is fine. */
			mvadd_wch(y, x, &cc);
		}
	refresh();
}

void
term_redraw(struct top_term *t)
{
	clearok(curscr, TRUE);
}

int
term_key(struct top_term *t, int timeout_ms)
{
	int	 ch;

	timeout(timeout_ms);
	ch = getch();
	switch (ch) {
	case ERR:
		return -1;
	case KEY_UP:
		return TK_UP;
	case KEY_DOWN:
		return TK_DOWN;
	case KEY_PPAGE:
		return TK_PGUP;
	case KEY_NPAGE:
		return TK_PGDN;
	case KEY_HOME:
		return TK_HOME;
	case KEY_END:
		return TK_END;
	case KEY_ENTER:
		return TK_ENTER;
	case KEY_BACKSPACE:
		return TK_BACKSPACE;
	case KEY_BTAB:
		return TK_BTAB;
	case KEY_RESIZE:
		return TK_RESIZE;
	}
	return ch >= 0 && ch < 256 ? ch : -1;
}

int
term_has_color(const struct top_term *t)
{
	return t->color;
}
