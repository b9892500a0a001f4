/* idemtop's text helpers: a cell grid, escaping, masking and number formats. */
#ifndef IDEM_IDEMTOP_FMT_H
#define IDEM_IDEMTOP_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* What a cell looks like; the terminal maps these to colors or to
 * monochrome attributes. */
enum top_attr {
	TA_NORMAL,
	TA_BOLD,
	TA_TITLE,	/* title and status bars */
	TA_HEAD,	/* column headers */
	TA_SEL,		/* selected row */
	TA_ALERT,	/* past lease, failed run, store errors: red */
	TA_WARN,	/* running cleanup, stale warnings: yellow */
	TA_OK,		/* successful cleanup: green */
	TA__COUNT
};

/*
 * A screen's worth of cells, each a Unicode code point and a top_attr.
 * Rendering writes here; the terminal or batch printer reads it.  Writes
 * outside the grid are clipped, never errors.
 */
struct top_grid {
	int		 w;
	int		 h;
	uint32_t	*cp;
	unsigned char	*at;
};

/* Allocates a w x h grid of spaces.  OUT: g. */
enum idem_err grid_init(struct top_grid *g, int w, int h);
/* Frees the cells; g is 0x0 afterwards.  NULL is a no-op. */
void grid_free(struct top_grid *g);
/* Fills with spaces, TA_NORMAL. */
void grid_clear(struct top_grid *g);

/* Writes UTF-8 text s from (y, x), clipped at the right edge; returns the
 * column after the text. */
int grid_put(struct top_grid *g, int y, int x, int attr, const char *s);
int grid_printf(struct top_grid *g, int y, int x, int attr, const char *fmt,
    ...) __attribute__((format(printf, 5, 6)));
/* Where a field sits in a row: from column x, width columns wide, its
 * text aligned right if right != 0, else left. */
struct grid_span {
	int	 x;
	int	 width;
	int	 right;
};

/* Writes s padded with spaces (or clipped) to exactly the span f of row
 * y. */
void grid_field(struct top_grid *g, int y, const struct grid_span *f,
    int attr, const char *s);
/* Sets the attribute of columns [x0, x1) of row y. */
void grid_attr(struct top_grid *g, int y, int x0, int x1, int attr);
/* Fills row y from x with code point cp. */
void grid_fill(struct top_grid *g, int y, int x, int n, int attr,
    uint32_t cp);

/*
 * Text of row y, UTF-8 (utf8 != 0) or ASCII (others as '?'), trailing
 * spaces trimmed, NUL-terminated in out (clipped to cap).  Returns length.
 */
size_t grid_line(const struct top_grid *g, int y, char *out, size_t cap,
    int utf8);
/* First row whose text contains needle, or -1. */
int grid_find(const struct top_grid *g, const char *needle);

/*
 * Copies len bytes of s to out as printable ASCII: control bytes, DEL and
 * bytes >= 0x80 become \xHH, a backslash becomes \\.  Never splits an
 * escape; always NUL-terminates (cap > 0).  Returns the length written.
 */
size_t fmt_escape(const char *s, size_t len, char *out, size_t cap);

/*
 * An idempotency key for display: the first 4 and last 2 bytes, the rest
 * as '*' (at most 8 of them, so the width does not reveal the length),
 * then escaped as fmt_escape.  Keys of 6 bytes or less show only their
 * first byte.
 */
size_t fmt_mask_key(const char *key, size_t len, char *out, size_t cap);

/* "850ms", "42s", "5m03s", "3h05m", "2d04h"; negative with a '-'. */
void fmt_dur(int64_t ms, char *out, size_t cap);
/* Exact below ten million, then "12.3M", "1.2G". */
void fmt_count(uint64_t n, char *out, size_t cap);
/* num/den as "42.0%", "-" when den is 0. */
void fmt_pct(uint64_t num, uint64_t den, char *out, size_t cap);
/* "MM-DD HH:MM:SS" in local time. */
void fmt_time(int64_t unix_s, char *out, size_t cap);

/* A stat_wait_percentile result q as text: "-" for no waits, "<=250ms",
 * "<=2.5s"; past the last bound last_le_ms, "<=30s" when the waits' own
 * limit max_ms (a route's wait) is known and larger, ">10s" otherwise. */
void fmt_quantile(int64_t q, int64_t last_le_ms, int64_t max_ms, char *out,
    size_t cap);

#endif
