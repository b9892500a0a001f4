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

/* The value of one hex digit (either case), or -1. */
int path_hexval(char c);

/* 1 if c is an unreserved character (RFC 3986: ALPHA DIGIT - . _ ~). */
int path_unreserved(int c);

#endif
