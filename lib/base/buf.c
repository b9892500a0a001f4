/* Growable byte buffers with a hard maximum. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

void
buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

/* Makes room for need more bytes plus the terminating NUL. */
static enum idem_err
buf_grow(struct buf *b, size_t need)
{
	size_t	 want, ncap;
	char	*np;

	if (need > b->max || b->len > b->max - need)
		return IDEM_ETOOBIG;
	want = b->len + need + 1;
	if (want <= b->cap)
		return IDEM_OK;
	ncap = b->cap ? b->cap : 256;
	while (ncap < want)
		ncap = ncap > ((size_t)-1) / 2 ? want : ncap * 2;
	np = realloc(b->p, ncap);
	if (np == NULL)
		return IDEM_ENOMEM;
	b->p = np;
	b->cap = ncap;
	return IDEM_OK;
}

enum idem_err
buf_add(struct buf *b, const void *p, size_t len)
{
	enum idem_err	 er;

	if ((er = buf_grow(b, len)) != IDEM_OK)
		return er;
	if (len > 0)
		memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = '\0';
	return IDEM_OK;
}

enum idem_err
buf_addstr(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

enum idem_err
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list		 ap;
	int		 n;
	enum idem_err	 er;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return IDEM_EINVAL;
	if ((er = buf_grow(b, (size_t)n)) != IDEM_OK)
		return er;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return IDEM_OK;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

void
buf_free(struct buf *b)
{
	if (b == NULL)
		return;
	free(b->p);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
}
