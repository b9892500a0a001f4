/* HTTP responses: parsing CGI output, filtering and serializing headers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "resp.h"

/* RFC 9110 §5.6.2 tchar. */
static int
resp_is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* 1 for a control byte a field value or reason phrase may not carry
 * (RFC 9110 5.5, RFC 9112 4): all but tab. */
static int
resp_is_ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* 1 if p[0..len) equals the C string s, ignoring ASCII case. */
static int
resp_name_eq(const char *p, size_t len, const char *s)
{
	return strlen(s) == len && strncasecmp(p, s, len) == 0;
}

/*
 * Parses "Status: 404 Not Found" / "Status: 404" values: three digits in
 * 100..599, then nothing or a space and a reason.  IDEM_EHANDLER if
 * malformed.  (A 1xx is well formed but refused by the caller: a CGI
 * answers with a final status; "101 Switching Protocols" replayed would
 * hang the client.)  OUT: *code.
 */
static enum idem_err
resp_status_parse(const char *v, size_t vlen, int *code)
{
	if (vlen < 3 || v[0] < '1' || v[0] > '5' || v[1] < '0' ||
	    v[1] > '9' || v[2] < '0' || v[2] > '9')
		return IDEM_EHANDLER;
	if (vlen > 3 && v[3] != ' ' && v[3] != '\t')
		return IDEM_EHANDLER;
	*code = (v[0] - '0') * 100 + (v[1] - '0') * 10 + (v[2] - '0');
	return IDEM_OK;
}

/*
 * The reason phrase of a Status value v (after its code and blanks), when
 * it is one a status line may carry (RFC 9112 4: tab, space, visible and
 * obs-text bytes) and at most RESP_REASON_MAX bytes; else NULL (the
 * gateway's own phrase goes out).  OUT: *rlen.
 */
static const char *
resp_reason(const char *v, size_t vlen, size_t *rlen)
{
	size_t	 i = 3;

	while (i < vlen && (v[i] == ' ' || v[i] == '\t'))
		i++;
	if (i == vlen || vlen - i > RESP_REASON_MAX)
		return NULL;
	*rlen = vlen - i;
	for (; i < vlen; i++)
		if (resp_is_ctl((unsigned char)v[i]))
			return NULL;
	return v + vlen - *rlen;
}

/* Flags of which special headers a block carried. */
struct resp_seen {
	int		 status;	/* the Status code, 0 if none */
	int		 ctype;
	int		 location;
	const char	*reason;	/* its phrase, if one to keep */
	size_t		 reasonlen;
	const char	*why;		/* what made a line invalid */
};

/* Records why a line is invalid: IDEM_EHANDLER. */
static enum idem_err
resp_bad(struct resp_seen *seen, const char *why)
{
	seen->why = why;
	return IDEM_EHANDLER;
}

/*
 * Checks one header line p[0..len) (line end removed) and, if good,
 * appends its normalised form to hdrs or records Status.
 */
static enum idem_err
resp_line(const char *p, size_t len, struct buf *hdrs, struct resp_seen *seen)
{
	size_t	 nlen, i, vs, ve;
	int	 code;

	for (nlen = 0; nlen < len && p[nlen] != ':'; nlen++)
		if (!resp_is_tchar((unsigned char)p[nlen]))
			return resp_bad(seen, "a header name with a byte that "
			    "is not a token's (a space, a non-ASCII byte, or a "
			    "line without a colon)");
	if (nlen == 0)
		return resp_bad(seen, "a header line with no name");
	if (nlen == len)
		return resp_bad(seen, "a header line without a colon");
	for (i = nlen + 1; i < len; i++)
		if (p[i] == '\0' || p[i] == '\r' || p[i] == '\n')
			return resp_bad(seen, "a header value with a NUL or a "
			    "bare CR");
	/* Optional whitespace around the value is not part of it. */
	vs = nlen + 1;
	while (vs < len && (p[vs] == ' ' || p[vs] == '\t'))
		vs++;
	ve = len;
	while (ve > vs && (p[ve - 1] == ' ' || p[ve - 1] == '\t'))
		ve--;
	if (resp_name_eq(p, nlen, "Status")) {
		if (seen->status)
			return resp_bad(seen, "two Status lines");
		if (resp_status_parse(p + vs, ve - vs, &code) != IDEM_OK ||
		    code > 599)
			return resp_bad(seen, "a Status that is not a code "
			    "from 100 to 599");
		if (code < 200)
			return resp_bad(seen, "a 1xx Status (a CGI gives a "
			    "final answer)");
		seen->status = code;
		seen->reason = resp_reason(p + vs, ve - vs, &seen->reasonlen);
		return IDEM_OK;
	}
	/* RFC 9110 5.5: no control byte but tab in a value that goes on.
	 * Apache refuses a whole answer for one (kept, it would be a 500
	 * to every retry); the line goes, the answer stays, the same for
	 * the first client and every replay. */
	for (i = vs; i < ve; i++)
		if (resp_is_ctl((unsigned char)p[i])) {
			seen->why = "a header line with a control byte in its "
			    "value dropped";
			return IDEM_OK;
		}

	if (resp_name_eq(p, nlen, "Content-Type"))
		seen->ctype = 1;
	else if (resp_name_eq(p, nlen, "Location")) {
		if (ve == vs)
			return resp_bad(seen, "an empty Location");
		seen->location = 1;
	}
	if (buf_add(hdrs, p, nlen) != IDEM_OK ||
	    buf_add(hdrs, ": ", 2) != IDEM_OK ||
	    buf_add(hdrs, p + vs, ve - vs) != IDEM_OK ||
	    buf_add(hdrs, "\r\n", 2) != IDEM_OK)
		return IDEM_ETOOBIG;
	return IDEM_OK;
}

/*
 * Puts "Status: CODE REASON" first in hdrs: the handler's reason phrase
 * goes out with the first answer and with every replay (reply_head),
 * as fcgiwrap passes it on.
 */
static enum idem_err
resp_keep_reason(struct buf *hdrs, int code, const char *reason, size_t len)
{
	struct buf	 h;

	buf_init(&h, hdrs->max);
	if (buf_printf(&h, "Status: %03d %.*s\r\n", code, (int)len,
	    reason) != IDEM_OK || buf_add(&h, hdrs->p, hdrs->len) != IDEM_OK) {
		buf_free(&h);
		return IDEM_ETOOBIG;
	}
	buf_free(hdrs);
	*hdrs = h;
	return IDEM_OK;
}

enum idem_err
resp_parse_cgi(const char *p, size_t len, struct answer *out, size_t *used,
    const char **why)
{
	struct buf		 h;
	struct resp_seen	 seen = { 0, 0, 0, NULL, 0, NULL };
	const char		*nl;
	size_t			 off = 0, ll, scan;
	enum idem_err		 er;

	buf_init(&h, RESP_HEAD_MAX);
	/* Never look past the limit: a block that long is refused anyway. */
	scan = len > RESP_HEAD_MAX ? RESP_HEAD_MAX : len;
	for (;;) {
		nl = memchr(p + off, '\n', scan - off);
		if (nl == NULL) {
			er = len > RESP_HEAD_MAX ? IDEM_ETOOBIG : IDEM_EAGAIN;
			goto out;
		}
		ll = (size_t)(nl - (p + off));
		if (ll > 0 && p[off + ll - 1] == '\r')
			ll--;
		if (ll == 0) {
			off = (size_t)(nl - p) + 1;
			break;
		}
		/* A complete bad line fails now rather than after 64 KiB. */
		if ((er = resp_line(p + off, ll, &h, &seen)) != IDEM_OK)
			goto out;
		off = (size_t)(nl - p) + 1;
	}
	/* No header line at all is no CGI answer.  Header lines without
	 * Status, Content-Type or Location go out as 200 with no
	 * Content-Type, as under fcgiwrap: RFC 3875 6.3.1 has the server
	 * not guess one. */
	if (h.len == 0 && !seen.status) {
		er = resp_bad(&seen, "no header line (a blank line first)");
		goto out;
	}
	if (seen.reason != NULL && (er = resp_keep_reason(&h, seen.status,
	    seen.reason, seen.reasonlen)) != IDEM_OK)
		goto out;
	buf_free(&out->hdrs);
	out->hdrs = h;
	out->status = seen.status ? seen.status :
	    seen.location ? 302 : 200;
	*used = off;
	if (why != NULL)
		*why = seen.why;
	return IDEM_OK;
out:
	if (er == IDEM_ETOOBIG)
		seen.why = "a header block over 64 KiB";
	if (why != NULL)
		*why = seen.why;
	buf_free(&h);
	return er;
}

int
resp_hdr_dropped_on_replay(const char *name, size_t len)
{
	static const char *const names[] = { "Connection", "Keep-Alive",
		"TE", "Trailer", "Transfer-Encoding", "Upgrade", NULL };
	size_t	 i;

	for (i = 0; names[i] != NULL; i++)
		if (resp_name_eq(name, len, names[i]))
			return 1;
	return len >= 6 && strncasecmp(name, "Proxy-", 6) == 0;
}

/*
 * Iterates the "Name: value\r\n" lines of hdrs.  *off is the cursor; on
 * return 1 the name and value of the next line are set.
 */
static int
resp_hdr_next(const struct buf *hdrs, size_t *off, const char **name,
    size_t *nlen, const char **val, size_t *vlen)
{
	const char	*p, *end, *colon, *eol;

	if (hdrs->p == NULL || *off >= hdrs->len)
		return 0;
	p = hdrs->p + *off;
	end = hdrs->p + hdrs->len;
	eol = memchr(p, '\n', (size_t)(end - p));
	if (eol == NULL)
		eol = end;
	*off = (size_t)(eol - hdrs->p) + (eol < end ? 1 : 0);
	if (eol > p && eol[-1] == '\r')
		eol--;
	colon = memchr(p, ':', (size_t)(eol - p));
	if (colon == NULL)
		colon = eol;
	*name = p;
	*nlen = (size_t)(colon - p);
	*val = colon < eol ? colon + 1 : eol;
	while (*val < eol && (**val == ' ' || **val == '\t'))
		(*val)++;
	*vlen = (size_t)(eol - *val);
	return 1;
}

/* 1 if name appears as a token of a Connection header value in hdrs. */
static int
resp_conn_listed(const struct buf *hdrs, const char *name, size_t nlen)
{
	const char	*n, *v, *t;
	size_t		 off = 0, nl, vl, i, tl;

	while (resp_hdr_next(hdrs, &off, &n, &nl, &v, &vl)) {
		if (!resp_name_eq(n, nl, "Connection"))
			continue;
		for (i = 0; i < vl;) {
			while (i < vl && (v[i] == ',' || v[i] == ' ' ||
			    v[i] == '\t'))
				i++;
			t = v + i;
			while (i < vl && v[i] != ',' && v[i] != ' ' &&
			    v[i] != '\t')
				i++;
			tl = (size_t)(v + i - t);
			if (tl == nlen && tl > 0 &&
			    strncasecmp(t, name, tl) == 0)
				return 1;
		}
	}
	return 0;
}

/* 1 if name (nlen bytes) is one of the n names of drop. */
static int
resp_listed(const char *name, size_t nlen, char *const *drop, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (resp_name_eq(name, nlen, drop[i]))
			return 1;
	return 0;
}

/* One client's session: never stored, never replayed (SPEC 2). */
static char *const resp_cookies[] = { "Set-Cookie", "Set-Cookie2" };
#define RESP_NCOOKIES	(sizeof(resp_cookies) / sizeof(resp_cookies[0]))

/* Appends to out the lines of in that are not hop-by-hop, not named in
 * its Connection header, not cookies (resp_cookies) when cookies is set,
 * and not among the ndrop names of drop. */
static enum idem_err
resp_hdrs_keep(const struct buf *in, int cookies, char *const *drop,
    size_t ndrop, struct buf *out)
{
	const char	*n, *v;
	size_t		 off = 0, nl, vl, start = out->len;
	enum idem_err	 er;

	while (resp_hdr_next(in, &off, &n, &nl, &v, &vl)) {
		if (nl == 0 || resp_hdr_dropped_on_replay(n, nl) ||
		    resp_conn_listed(in, n, nl) ||
		    (cookies && resp_listed(n, nl, resp_cookies,
		    RESP_NCOOKIES)) ||
		    resp_listed(n, nl, drop, ndrop))
			continue;
		if ((er = buf_add(out, n, nl)) != IDEM_OK ||
		    (er = buf_add(out, ": ", 2)) != IDEM_OK ||
		    (er = buf_add(out, v, vl)) != IDEM_OK ||
		    (er = buf_add(out, "\r\n", 2)) != IDEM_OK) {
			/* Leave out as it was rather than half a header. */
			out->len = start;
			if (out->p != NULL)
				out->p[start] = '\0';
			return er;
		}
	}
	return IDEM_OK;
}

enum idem_err
resp_hdrs_for_replay(const struct buf *in, char *const *drop, size_t ndrop,
    struct buf *out)
{
	/* One client's session is never another's, whatever the route
	 * lists (SPEC 2: a replay drops Set-Cookie). */
	return resp_hdrs_keep(in, 1, drop, ndrop, out);
}

/* Drops the lines of hdrs named one of the n names (but the first such
 * line, with keep_first), in place. */
static void
resp_hdrs_strip(struct buf *hdrs, char *const *names, size_t n,
    int keep_first)
{
	const char	*nm, *v;
	size_t		 off = 0, start, nl, vl, w = 0;

	for (start = 0; resp_hdr_next(hdrs, &off, &nm, &nl, &v, &vl);
	    start = off) {
		if (resp_listed(nm, nl, names, n) && keep_first-- <= 0)
			continue;
		memmove(hdrs->p + w, hdrs->p + start, off - start);
		w += off - start;
	}
	hdrs->len = w;
	if (hdrs->p != NULL)
		hdrs->p[w] = '\0';
}

const char *
resp_hands_off(const struct buf *hdrs)
{
	static const char *const names[] = { "X-Accel-Redirect",
		"X-Sendfile", "X-Sendfile2", "X-Sendfile-Temporary",
		"X-LIGHTTPD-send-file", NULL };
	const char	*nm, *v;
	size_t		 off = 0, nl, vl, i;

	while (resp_hdr_next(hdrs, &off, &nm, &nl, &v, &vl))
		for (i = 0; names[i] != NULL; i++)
			if (resp_name_eq(nm, nl, names[i]))
				return names[i];
	return NULL;
}

void
resp_hdr_remove(struct buf *hdrs, const char *name)
{
	char	*names[1];

	names[0] = (char *)name;
	resp_hdrs_strip(hdrs, names, 1, 0);
}

/* A Content-Length value: a plain number of at most 18 digits, or -1. */
static int64_t
resp_clen_value(const char *v, size_t vlen)
{
	int64_t	 n = 0;
	size_t	 i;

	if (vlen == 0 || vlen > 18)
		return -1;
	for (i = 0; i < vlen; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		n = n * 10 + (v[i] - '0');
	}
	return n;
}

int64_t
resp_content_length(struct buf *hdrs)
{
	static char *const	 names[] = { "Content-Length" };
	const char		*nm, *v;
	size_t			 off = 0, nl, vl, lines = 0;
	int64_t			 n = -1, x;

	while (resp_hdr_next(hdrs, &off, &nm, &nl, &v, &vl)) {
		if (!resp_name_eq(nm, nl, names[0]))
			continue;
		if ((x = resp_clen_value(v, vl)) < 0 || (lines > 0 && x != n))
			return -1;
		n = x;
		lines++;
	}
	/* One value said more than once (RFC 9110 8.6): said once, where it
	 * first was. */
	if (lines > 1)
		resp_hdrs_strip(hdrs, names, 1, 1);
	return n;
}

void
resp_drop_cookies(struct buf *hdrs)
{
	resp_hdrs_strip(hdrs, resp_cookies, RESP_NCOOKIES, 0);
}

void
resp_drop_idem_names(struct buf *hdrs)
{
	static char *const	 ours[] = { "Idempotent-Replayed",
		"Idempotency-Result", "Idempotency-Expires" };

	resp_hdrs_strip(hdrs, ours, 3, 0);
}

enum idem_err
resp_drop_idem_hdrs(struct buf *hdrs)
{
	struct buf		 kept;
	enum idem_err		 er;

	resp_drop_idem_names(hdrs);
	/* Then what only the handler's own connection meant: the lines a
	 * replay repeats are the ones the first client gets. */
	buf_init(&kept, hdrs->max);
	if ((er = resp_hdrs_keep(hdrs, 0, NULL, 0, &kept)) != IDEM_OK) {
		buf_free(&kept);
		return er;
	}
	buf_free(hdrs);
	*hdrs = kept;
	return IDEM_OK;
}

const char *
resp_hdr_get(const struct buf *hdrs, const char *name, size_t *vlen)
{
	const char	*n, *v;
	size_t		 off = 0, nl, vl;

	while (resp_hdr_next(hdrs, &off, &n, &nl, &v, &vl))
		if (resp_name_eq(n, nl, name)) {
			*vlen = vl;
			return v;
		}
	return NULL;
}
