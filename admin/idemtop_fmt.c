/* idemtop's text helpers: the cell grid, escaping, masking, numbers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idemtop_fmt.h"
#include "store.h"

enum idem_err
grid_init(struct top_grid *g, int w, int h)
{
	size_t	 n;

	if (w < 1)
		w = 1;
	if (h < 1)
		h = 1;
	n = (size_t)w * (size_t)h;
	g->cp = calloc(n, sizeof(*g->cp));
	g->at = calloc(n, sizeof(*g->at));
	if (g->cp == NULL || g->at == NULL) {
		free(g->cp);
		free(g->at);
		memset(g, 0, sizeof(*g));
		return IDEM_ENOMEM;
	}
	g->w = w;
	g->h = h;
	grid_clear(g);
	return IDEM_OK;
}

void
grid_free(struct top_grid *g)
{
	if (g == NULL)
		return;
	free(g->cp);
	free(g->at);
	memset(g, 0, sizeof(*g));
}

void
grid_clear(struct top_grid *g)
{
	size_t	 i, n = (size_t)g->w * (size_t)g->h;

	for (i = 0; i < n; i++) {
		g->cp[i] = ' ';
		g->at[i] = TA_NORMAL;
	}
}

static void
cell(struct top_grid *g, int y, int x, int attr, uint32_t cp)
{
	if (y < 0 || y >= g->h || x < 0 || x >= g->w)
		return;
	g->cp[(size_t)y * g->w + x] = cp;
	g->at[(size_t)y * g->w + x] = (unsigned char)attr;
}

/* Decodes one UTF-8 sequence; malformed bytes come out as '?'. */
static uint32_t
utf8_next(const unsigned char **sp)
{
	const unsigned char *s = *sp;
	uint32_t	 cp;
	int		 n, i;

	if (s[0] < 0x80) {
		*sp = s + 1;
		return s[0];
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 1;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 2;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 3;
		cp = s[0] & 0x07;
	} else {
		*sp = s + 1;
		return '?';
	}
	for (i = 1; i <= n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*sp = s + i;
			return '?';
		}
		cp = cp << 6 | (s[i] & 0x3f);
	}
	*sp = s + n + 1;
	return cp;
}

int
grid_put(struct top_grid *g, int y, int x, int attr, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t	 cp;

	while (*p != '\0') {
		cp = utf8_next(&p);
		/* Text reaching the grid is escaped already; this keeps a
		 * stray control byte from ever reaching the terminal. */
		if (cp < 0x20 || cp == 0x7f)
			cp = '?';
		cell(g, y, x++, attr, cp);
	}
	return x;
}

int
grid_printf(struct top_grid *g, int y, int x, int attr, const char *fmt, ...)
{
	char	 line[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return grid_put(g, y, x, attr, line);
}

/* Columns s takes (code points). */
static int
text_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int	 n = 0;

	while (*p != '\0') {
		utf8_next(&p);
		n++;
	}
	return n;
}

void
grid_field(struct top_grid *g, int y, const struct grid_span *f, int attr,
    const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int	 w = text_width(s), x = f->x, width = f->width, pad, i;

	if (width <= 0)
		return;
	pad = w < width ? width - w : 0;
	for (i = 0; i < width; i++)
		cell(g, y, x + i, attr, ' ');
	if (f->right)
		x += pad;
	for (i = 0; *p != '\0' && i < width; i++) {
		uint32_t cp = utf8_next(&p);

		if (cp < 0x20 || cp == 0x7f)
			cp = '?';
		/* Mark a clipped field so nobody mistakes it for the whole. */
		if (w > width && i == width - 1 && width > 1)
			cp = '>';
		cell(g, y, x + i, attr, cp);
	}
}

void
grid_attr(struct top_grid *g, int y, int x0, int x1, int attr)
{
	int	 x;

	if (y < 0 || y >= g->h)
		return;
	for (x = x0 < 0 ? 0 : x0; x < x1 && x < g->w; x++)
		g->at[(size_t)y * g->w + x] = (unsigned char)attr;
}

void
grid_fill(struct top_grid *g, int y, int x, int n, int attr, uint32_t cp)
{
	int	 i;

	for (i = 0; i < n; i++)
		cell(g, y, x + i, attr, cp);
}

size_t
grid_line(const struct top_grid *g, int y, char *out, size_t cap, int utf8)
{
	size_t	 n = 0, last = 0;
	uint32_t cp;
	int	 x;
	char	 enc[4];
	size_t	 k, i;

	if (cap == 0)
		return 0;
	out[0] = '\0';
	if (y < 0 || y >= g->h)
		return 0;
	for (x = 0; x < g->w; x++) {
		cp = g->cp[(size_t)y * g->w + x];
		if (cp < 0x80) {
			enc[0] = (char)cp;
			k = 1;
		} else if (!utf8) {
			enc[0] = '?';
			k = 1;
		} else if (cp < 0x800) {
			enc[0] = (char)(0xc0 | cp >> 6);
			enc[1] = (char)(0x80 | (cp & 0x3f));
			k = 2;
		} else if (cp < 0x10000) {
			enc[0] = (char)(0xe0 | cp >> 12);
			enc[1] = (char)(0x80 | (cp >> 6 & 0x3f));
			enc[2] = (char)(0x80 | (cp & 0x3f));
			k = 3;
		} else {
			enc[0] = (char)(0xf0 | cp >> 18);
			enc[1] = (char)(0x80 | (cp >> 12 & 0x3f));
			enc[2] = (char)(0x80 | (cp >> 6 & 0x3f));
			enc[3] = (char)(0x80 | (cp & 0x3f));
			k = 4;
		}
		if (n + k >= cap)
			break;
		for (i = 0; i < k; i++)
			out[n++] = enc[i];
		if (cp != ' ')
			last = n;
	}
	out[last] = '\0';
	return last;
}

int
grid_find(const struct top_grid *g, const char *needle)
{
	char	 line[4096];
	int	 y;

	for (y = 0; y < g->h; y++) {
		grid_line(g, y, line, sizeof(line), 1);
		if (strstr(line, needle) != NULL)
			return y;
	}
	return -1;
}

size_t
fmt_escape(const char *s, size_t len, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t	 i, n = 0;
	unsigned char c;

	if (cap == 0)
		return 0;
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c == '\\') {
			if (n + 2 >= cap)
				break;
			out[n++] = '\\';
			out[n++] = '\\';
		} else if (c < 0x20 || c >= 0x7f) {
			if (n + 4 >= cap)
				break;
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		} else {
			if (n + 1 >= cap)
				break;
			out[n++] = (char)c;
		}
	}
	out[n] = '\0';
	return n;
}

size_t
fmt_mask_key(const char *key, size_t len, char *out, size_t cap)
{
	char	 m[4 + 8 + 2];
	size_t	 n = 0, stars, i;

	if (len == 0)
		return fmt_escape("", 0, out, cap);
	if (len <= 6) {
		m[n++] = key[0];
		stars = len - 1;
		if (stars > 8)
			stars = 8;
		for (i = 0; i < stars; i++)
			m[n++] = '*';
		return fmt_escape(m, n, out, cap);
	}
	memcpy(m, key, 4);
	n = 4;
	stars = len - 6 > 8 ? 8 : len - 6;
	for (i = 0; i < stars; i++)
		m[n++] = '*';
	m[n++] = key[len - 2];
	m[n++] = key[len - 1];
	return fmt_escape(m, n, out, cap);
}

void
fmt_dur(int64_t ms, char *out, size_t cap)
{
	const char *sign = "";
	int64_t	 s;

	if (ms < 0) {
		sign = "-";
		ms = ms == INT64_MIN ? INT64_MAX : -ms;
	}
	s = ms / 1000;
	if (ms < 1000)
		snprintf(out, cap, "%s%lldms", sign, (long long)ms);
	else if (s < 60)
		snprintf(out, cap, "%s%llds", sign, (long long)s);
	else if (s < 3600)
		snprintf(out, cap, "%s%lldm%02llds", sign, (long long)(s / 60),
		    (long long)(s % 60));
	else if (s < 86400)
		snprintf(out, cap, "%s%lldh%02lldm", sign,
		    (long long)(s / 3600), (long long)(s % 3600 / 60));
	else
		snprintf(out, cap, "%s%lldd%02lldh", sign,
		    (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

void
fmt_count(uint64_t n, char *out, size_t cap)
{
	if (n < 10000000)
		snprintf(out, cap, "%llu", (unsigned long long)n);
	else if (n < 10000000000ULL)
		snprintf(out, cap, "%.1fM", n / 1e6);
	else
		snprintf(out, cap, "%.1fG", n / 1e9);
}

void
fmt_pct(uint64_t num, uint64_t den, char *out, size_t cap)
{
	if (den == 0)
		snprintf(out, cap, "-");
	else
		snprintf(out, cap, "%.1f%%", 100.0 * (double)num / (double)den);
}

void
fmt_time(int64_t unix_s, char *out, size_t cap)
{
	struct tm tm;
	time_t	 t = (time_t)unix_s;

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(out, cap, "%m-%d %H:%M:%S", &tm) == 0)
		snprintf(out, cap, "?");
}

void
fmt_quantile(int64_t q, int64_t last_le_ms, int64_t max_ms, char *out,
    size_t cap)
{
	if (q == STAT_WAIT_INF && max_ms > last_le_ms)
		q = max_ms;
	if (q == STAT_WAIT_NONE)
		snprintf(out, cap, "-");
	else if (q == STAT_WAIT_INF) {
		if (last_le_ms % 1000 == 0)
			snprintf(out, cap, ">%llds",
			    (long long)(last_le_ms / 1000));
		else
			snprintf(out, cap, ">%lldms", (long long)last_le_ms);
	} else if (q < 1000)
		snprintf(out, cap, "<=%lldms", (long long)q);
	else if (q % 1000 == 0)
		snprintf(out, cap, "<=%llds", (long long)(q / 1000));
	else
		snprintf(out, cap, "<=%.1fs", q / 1000.0);
}
