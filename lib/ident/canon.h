/* Request bodies by meaning (canonical fingerprint): JSON, forms, multipart. */
#ifndef IDEM_CANON_H
#define IDEM_CANON_H

#include <stddef.h>

#include "buf.h"

/* The content type a canonical form is fingerprinted under. */
#define CANON_CTYPE	" canonical"

/* Room a canonical form of a len-byte body may take (out's max). */
#define CANON_MAX(len)	(4 * (len) + 4096)

/*
 * The canonical form of body (len bytes) declared as ctype, so that two
 * requests that mean the same give the same bytes, and two that a common
 * parser (PHP, Python, Node) reads differently never do:
 * - JSON (application/json, any +json), parsed strictly (RFC 8259) and
 *   written back with object names sorted (by their bytes), no
 *   insignificant whitespace, strings as UTF-8 (escapes decoded) and
 *   every number as the exact decimal it denotes (1 = 1.0 = 1e0 = 10e-1;
 *   9007199254740993 is not 9007199254740992; never through a double).
 *   Not parsed: a name twice (however escaped), invalid UTF-8, a lone
 *   surrogate, nesting deeper than 128, an exponent over 10^8.
 * - application/x-www-form-urlencoded: the pairs percent-decoded ('+' is
 *   a space), length-prefixed, in a stable sort by the variable PHP
 *   reads each into (leading spaces dropped, ' ' and '.' as '_', up to
 *   the first '[' that a ']' closes; an unclosed '[' is a '_' too): pairs
 *   of one name, or of names PHP reads as one variable (a[] and a[x],
 *   a.b and a_b, a[b and a_b), keep their order.  More than 1000 pairs
 *   (PHP's max_input_vars) do not parse.
 * - multipart/form-data: its parts in order, each with its header lines
 *   (names lower-cased, values trimmed) and its body, length-prefixed;
 *   the boundary is not part of it.  Not parsed: anything but white space
 *   before the first delimiter or after the closing one, the boundary
 *   string anywhere but in a delimiter, a folded header line, a bare CR
 *   or LF in a header block, a header name that is no token, a content
 *   type naming "boundary" twice or a boundary with a comma.
 * The canonical form starts with the media type it was read as (the
 * bare type of a JSON body, so application/merge-patch+json is not
 * application/json-patch+json) and, in the same field, its parameters
 * but for the boundary and charset=utf-8 (sorted, names and a charset's
 * value lower-cased, quoted values unquoted; more than 16, over 1024
 * bytes, one named twice, a backslash in a quoted one or one that does
 * not parse: not parsed).  Returns 1 with out filled and
 * *ctype_out set to CANON_CTYPE, which no Content-Type can be (web
 * servers trim the space it starts with), so a canonical form never
 * meets the exact bytes of another body; 0 when the type is none of
 * these or the body does not parse as it (the caller keeps the exact
 * bytes and its type).  Time is linear in len times the nesting depth;
 * memory is linear in len.
 */
int canon_body(const char *ctype, const void *body, size_t len,
    struct buf *out, const char **ctype_out);

#endif
