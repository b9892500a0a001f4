/* Growable byte buffers with a hard maximum. */
#ifndef IDEM_BUF_H
#define IDEM_BUF_H

#include <stddef.h>

#include "err.h"

/*
 * p is owned by the buffer and is always NUL-terminated past len (so text
 * can be used as a C string), but the content itself may hold NULs.
 * A buffer never grows past max bytes of content.
 */
struct buf {
	char	*p;
	size_t	 len;
	size_t	 cap;
	size_t	 max;
};

/* Empty buffer that refuses to hold more than max bytes.  No allocation. */
void buf_init(struct buf *b, size_t max);

/*
 * Appends len bytes, failing with IDEM_ETOOBIG rather than growing past
 * b->max so a hostile body cannot exhaust memory.  On failure b is unchanged.
 */
enum idem_err buf_add(struct buf *b, const void *p, size_t len);
enum idem_err buf_addstr(struct buf *b, const char *s);
enum idem_err buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Forgets the content, keeps the memory. */
void buf_reset(struct buf *b);

/* Frees the memory; b is empty (same max) afterwards.  NULL is a no-op. */
void buf_free(struct buf *b);

#endif
