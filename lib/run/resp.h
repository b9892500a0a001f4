/* HTTP responses: parsing CGI output, filtering and serializing headers. */
#ifndef IDEM_RESP_H
#define IDEM_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "answer.h"
#include "buf.h"
#include "err.h"

#define RESP_HEAD_MAX	(64 * 1024)	/* CGI header block limit */
#define RESP_REASON_MAX	128		/* a longer reason phrase is not
					 * kept: the gateway's goes out */

/*
 * Parses a CGI response header block (RFC 3875 §6.2) at the start of
 * p[0..len): lines end in LF or CRLF, the block ends at an empty line.
 * "Status: 201 Created" sets status (200..599: a 1xx is invalid output)
 * and, with a reason phrase, is kept as hdrs' first line (reply_head
 * sends it as the status line); a Location without Status gives 302
 * (a local "/path" redirect too); otherwise 200.  At least one header
 * line is required.  Lines without a colon,
 * names with bytes outside RFC 9110 token chars, values with CR/LF/NUL,
 * or a bad Status: IDEM_EHANDLER (as soon as such a line is complete, even
 * before the blank line).  No blank line yet within len bytes:
 * IDEM_EAGAIN (IDEM_ETOOBIG once len > RESP_HEAD_MAX).  On success sets
 * out's status and hdrs (at most RESP_HEAD_MAX; out must be initialised,
 * its body is left alone) and *used to the bytes consumed, blank line
 * included.  A line whose value holds a control byte other than tab is
 * dropped.  *why (when why is not NULL) says, for the log, what was wrong
 * on IDEM_EHANDLER or IDEM_ETOOBIG, and on IDEM_OK what was dropped, or
 * is NULL.
 */
enum idem_err resp_parse_cgi(const char *p, size_t len, struct answer *out,
    size_t *used, const char **why);

/* 1 if name (len bytes) is a hop-by-hop header (Connection, Keep-Alive,
 * Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade), which a replay must
 * not repeat.  Case-insensitive. */
int resp_hdr_dropped_on_replay(const char *name, size_t len);

/*
 * Appends the lines of in that a replay may repeat, and so the store may
 * keep, to out: not hop-by-hop (see above), not named in a Connection
 * header, not Set-Cookie or Set-Cookie2, not among the ndrop names
 * of drop (a route's store_headers_drop, case-insensitive; drop may be
 * NULL when ndrop is 0).  in is a protected answer's, so resp_drop_idem_hdrs already ran on
 * it.  On failure out is unchanged.
 */
enum idem_err resp_hdrs_for_replay(const struct buf *in,
    char *const *drop, size_t ndrop, struct buf *out);

/*
 * Drops the Idempotent-Replayed, Idempotency-Result and
 * Idempotency-Expires lines from hdrs (on a protected route only the
 * gateway says whether an answer is a replay and when its key expires),
 * and the hop-by-hop ones resp_hdrs_for_replay leaves out (RFC 3875
 * 6.3.4: a handler must not send them; a Transfer-Encoding passed on makes
 * the web server decode a body that is not encoded): the first client
 * gets the header lines its replays get.  IDEM_ENOMEM leaves the
 * hop-by-hop lines in.
 */
enum idem_err resp_drop_idem_hdrs(struct buf *hdrs);

/* The first part of that alone: only the three idempotency lines go
 * (a pass-through answer keeps its hop-by-hop lines: a 426's Upgrade, a
 * 407's Proxy-Authenticate are the client's).  Never fails. */
void resp_drop_idem_names(struct buf *hdrs);

/*
 * The name of the first line of hdrs that has the web server answer with
 * something else than the body that follows (nginx's X-Accel-Redirect,
 * lighttpd's and mod_xsendfile's X-Sendfile, X-Sendfile2,
 * X-Sendfile-Temporary and X-LIGHTTPD-send-file: a file or location
 * served in its place), or NULL.
 * Such an answer's body is not what the client gets, so it cannot be
 * kept for a replay.
 */
const char *resp_hands_off(const struct buf *hdrs);

/* Drops every line of hdrs named name (case-insensitive), in place. */
void resp_hdr_remove(struct buf *hdrs, const char *name);

/*
 * The Content-Length of the answer's hdrs: the plain number its
 * Content-Length lines give, or -1 when there is none, or one is not a
 * plain number, or two give different numbers (a web server would take
 * the one or the other).  Lines repeating one number are made one, in
 * place (RFC 9110 8.6), so no web server refuses the head for it.
 */
int64_t resp_content_length(struct buf *hdrs);

/* Drops the Set-Cookie and Set-Cookie2 lines of hdrs, in place: what
 * resp_hdrs_for_replay never keeps (for answers kept before it did). */
void resp_drop_cookies(struct buf *hdrs);

/* Finds header name in hdrs (case-insensitive); returns a pointer to the
 * value (not NUL-terminated at line end) and its length in *vlen, or NULL. */
const char *resp_hdr_get(const struct buf *hdrs, const char *name,
    size_t *vlen);

#endif
