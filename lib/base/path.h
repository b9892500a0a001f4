/* Request paths in one spelling: what routes and fingerprints match on. */
#ifndef IDEM_PATH_H
#define IDEM_PATH_H

#include <stddef.h>

/*
 * Normalises a URL path (RFC 3986 §6.2.2): percent-encoded unreserved
 * characters (ALPHA DIGIT - . _ ~) are decoded and other escapes get
 * upper-case hex, repeated slashes are merged, "." and ".." segments are
 * resolved (never above the root), and a missing leading "/" is added.
 * Every spelling a web server resolves to the same file therefore gives
 * the same result: "//a/%62/./c/../d" is "/a/b/d".  in is len bytes (no
 * NUL needed); the result is never longer than len + 1.  Returns a
 * malloc'd string (caller frees) or NULL when out of memory.
 */
char *path_normalize(const char *in, size_t len);

/*
 * A query string's escapes in one spelling (RFC 3986 6.2.2.1 and
 * 6.2.2.2; path_normalize's first pass): percent-encoded unreserved
 * characters decoded, other escapes with upper-case hex; nothing else
 * changes ('+' stays '+': form decoding
 * reads it as a space, "%2B" as a plus).  Web servers differ here
 * (lighttpd decodes "%7E", nginx and Apache pass it on).  Writes at most
 * len bytes to out (no NUL); returns how many.
 */
size_t path_query_normalize(const char *in, size_t len, char *out);

/* The value of one hex digit (either case), or -1. */
int path_hexval(char c);

/* 1 if c is an unreserved character (RFC 3986: ALPHA DIGIT - . _ ~). */
int path_unreserved(int c);

#endif
