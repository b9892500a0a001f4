/* Request bodies by meaning, for fingerprint = canonical: JSON, forms, multipart. */
#ifndef IDEM_CANON_H
#define IDEM_CANON_H

#include <stddef.h>

#include "buf.h"

/* Room a canonical form of a len-byte body may take (out's max). */
#define CANON_MAX(len)	(4 * (len) + 4096)

/*
 * The canonical form of body (len bytes) declared as ctype, so that two
 * requests that mean the same give the same bytes:
 * - JSON (application/json, any +json): parsed by jansson and written back
 *   with object keys sorted, no insignificant whitespace, every number as
 *   the double it denotes (1, 1.0 and 1e0 are one value) and strings as
 *   code points (escapes decoded); duplicate keys or nesting deeper than
 *   jansson's limit do not parse.
 * - application/x-www-form-urlencoded: the pairs percent-decoded ('+' is
 *   a space) and sorted, length-prefixed.
 * - multipart/form-data: its parts in order, each with its header lines
 *   (names lower-cased, values trimmed) and its body, length-prefixed;
 *   the boundary is not part of it.
 * Returns 1 with out filled and *ctype_out the bare media type (its
 * parameters, a boundary say, are no longer part of the request); 0 when
 * the type is none of these or the body does not parse as it (the caller
 * keeps the exact bytes).  Time and memory are linear in len.
 */
int canon_body(const char *ctype, const void *body, size_t len,
    struct buf *out, const char **ctype_out);

#endif
