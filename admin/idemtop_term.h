/* idemtop's terminal: curses set-up, painting a grid, reading keys. */
#ifndef IDEM_IDEMTOP_TERM_H
#define IDEM_IDEMTOP_TERM_H

#include "err.h"
#include "idemtop_fmt.h"

struct top_term;

/*
 * Starts curses on stdin/stdout (newterm): no echo, cbreak, keypad, no
 * cursor.  Colors when the terminal has them and NO_COLOR is unset or
 * empty; otherwise attributes only (reverse, bold, underline).  Resizes
 * arrive as TK_RESIZE through ncurses' own SIGWINCH handling.  OUT: t.
 */
enum idem_err term_open(struct top_term **out);

/* Ends curses and frees t (delscreen).  NULL is a no-op. */
void term_close(struct top_term *t);

/* Current size in columns and rows. */
void term_size(struct top_term *t, int *w, int *h);

/* Paints g (same size as the terminal) and refreshes. */
void term_paint(struct top_term *t, const struct top_grid *g);

/* Clears and repaints everything on the next paint (Ctrl-L). */
void term_redraw(struct top_term *t);

/* Waits up to timeout_ms for a key: a byte, a TK_ code, or -1. */
int term_key(struct top_term *t, int timeout_ms);

/* 1 if colors are in use (for tests and the help text). */
int term_has_color(const struct top_term *t);

#endif
