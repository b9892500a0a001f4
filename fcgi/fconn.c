/* The FastCGI responder side of one connection: records in, one request out (no I/O). */
#include <stdlib.h>
#include <string.h>

#include "fconn.h"

#define FCGI_VERSION	1
#define FCGI_RESPONDER	1
#define FCGI_KEEP_CONN	1

void
fconn_init(struct fconn *c, size_t max_params, size_t max_body)
{
	memset(c, 0, sizeof(*c));
	c->max_params = max_params;
	c->max_body = max_body;
	buf_init(&c->params, max_params);
	buf_init(&c->body, max_body);
	buf_init(&c->reply, 64 * 1024);
}

void
fconn_reset(struct fconn *c)
{
	size_t	 mp = c->max_params, mb = c->max_body;

	buf_free(&c->params);
	buf_free(&c->body);
	buf_free(&c->reply);
	fconn_init(c, mp, mb);
}

enum idem_err
fconn_record(struct buf *out, int type, uint16_t id, const void *p, size_t n)
{
	unsigned char	 h[FCGI_HDR_LEN];
	static const unsigned char pad[8];
	size_t		 padn = (8 - n % 8) % 8;
	enum idem_err	 er;

	if (n > FCGI_MAX_CONTENT)
		return IDEM_ETOOBIG;
	h[0] = FCGI_VERSION;
	h[1] = (unsigned char)type;
	h[2] = (unsigned char)(id >> 8);
	h[3] = (unsigned char)id;
	h[4] = (unsigned char)(n >> 8);
	h[5] = (unsigned char)n;
	h[6] = (unsigned char)padn;
	h[7] = 0;
	if ((er = buf_add(out, h, sizeof(h))) != IDEM_OK ||
	    (er = buf_add(out, p, n)) != IDEM_OK)
		return er;
	return buf_add(out, pad, padn);
}

enum idem_err
fconn_end(struct buf *out, uint16_t id, int ps)
{
	unsigned char	 b[8] = { 0, 0, 0, 0, (unsigned char)ps, 0, 0, 0 };

	return fconn_record(out, FCGI_END_REQUEST, id, b, sizeof(b));
}

/* Reads a name or value length at p (1 or 4 bytes); 0 if past end. */
static size_t
fconn_len(const unsigned char *p, size_t left, size_t *len)
{
	if (left < 1)
		return 0;
	if ((p[0] & 0x80) == 0) {
		*len = p[0];
		return 1;
	}
	if (left < 4)
		return 0;
	*len = ((size_t)(p[0] & 0x7f) << 24) | ((size_t)p[1] << 16) |
	    ((size_t)p[2] << 8) | p[3];
	return 4;
}

/*
 * Reads one name-value pair's lengths at p[*off] (of n bytes) and checks
 * that name and value lie inside: -1 if not.  *off then points at the
 * name.  This check comes before anything is allocated for the pair.
 */
static int
fconn_pair(const unsigned char *p, size_t n, size_t *off, size_t *nl,
    size_t *vl)
{
	size_t	 k, o = *off;

	if ((k = fconn_len(p + o, n - o, nl)) == 0)
		return -1;
	o += k;
	if ((k = fconn_len(p + o, n - o, vl)) == 0)
		return -1;
	o += k;
	if (*nl > n - o || *vl > n - o - *nl)
		return -1;
	*off = o;
	return 0;
}

/* Answers FCGI_GET_VALUES with what we are: no multiplexing. */
static enum idem_err
fconn_get_values(struct fconn *c, const unsigned char *p, size_t n)
{
	static const char *const known[][2] = {
		{ "FCGI_MPXS_CONNS", "0" },
		{ "FCGI_MAX_CONNS", "1024" },
		{ "FCGI_MAX_REQS", "1024" },
	};
	unsigned char	 out[512];
	size_t		 o = 0, off = 0, nl, vl, i;

	while (off < n) {
		if (fconn_pair(p, n, &off, &nl, &vl) != 0)
			return IDEM_EINVAL;
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
			size_t	 kl = strlen(known[i][0]);
			size_t	 kv = strlen(known[i][1]);

			if (nl != kl || memcmp(p + off, known[i][0], kl) != 0 ||
			    o + 2 + kl + kv > sizeof(out))
				continue;
			out[o++] = (unsigned char)kl;
			out[o++] = (unsigned char)kv;
			memcpy(out + o, known[i][0], kl);
			o += kl;
			memcpy(out + o, known[i][1], kv);
			o += kv;
		}
		off += nl + vl;
	}
	return fconn_record(&c->reply, FCGI_GET_VALUES_RESULT, 0, out, o);
}

/* The record's request id, type and content length. */
#define HDR_TYPE(c)	((c)->hdr[1])
#define HDR_ID(c)	((uint16_t)((c)->hdr[2] << 8 | (c)->hdr[3]))
#define HDR_CLEN(c)	((size_t)(c)->hdr[4] << 8 | (c)->hdr[5])

/* 1 if the record's content goes straight into params or body. */
static int
fconn_streamed(const struct fconn *c)
{
	return c->id != 0 && HDR_ID(c) == c->id &&
	    (HDR_TYPE(c) == FCGI_PARAMS || HDR_TYPE(c) == FCGI_STDIN);
}

/* A header is in: checks what can be checked before the content. */
static enum idem_err
fconn_header(struct fconn *c)
{
	if (c->hdr[0] != FCGI_VERSION)
		return IDEM_EINVAL;
	c->cleft = HDR_CLEN(c);
	c->pleft = c->hdr[6];
	c->slen = 0;
	if (!fconn_streamed(c))
		return IDEM_OK;
	if (HDR_TYPE(c) == FCGI_PARAMS && c->params_done)
		return IDEM_EINVAL;
	if (HDR_TYPE(c) == FCGI_STDIN && (!c->params_done || c->stdin_done))
		return IDEM_EINVAL;
	return IDEM_OK;
}

/* Content bytes of a streamed record. */
static enum idem_err
fconn_content(struct fconn *c, const unsigned char *p, size_t n)
{
	if (HDR_TYPE(c) == FCGI_PARAMS)
		/* Past max_params: the connection goes (431 is not worth
		 * a crafted client's memory). */
		return buf_add(&c->params, p, n) == IDEM_OK ? IDEM_OK :
		    IDEM_EINVAL;
	if (c->body_over)
		return IDEM_OK;
	if (buf_add(&c->body, p, n) != IDEM_OK)
		c->body_over = 1;
	return IDEM_OK;
}

/* A whole record is in (content in c->small unless streamed). */
static enum idem_err
fconn_record_in(struct fconn *c)
{
	const unsigned char	*p = c->small;
	size_t			 clen = HDR_CLEN(c);
	uint16_t		 id = HDR_ID(c);
	int			 type = HDR_TYPE(c);

	if (fconn_streamed(c)) {
		if (clen > 0)
			return IDEM_OK;
		if (type == FCGI_PARAMS)
			c->params_done = 1;
		else
			c->stdin_done = 1;
		return IDEM_OK;
	}
	if (id == 0) {
		unsigned char	 u[8] = { (unsigned char)type };

		if (type == FCGI_GET_VALUES)
			return clen > sizeof(c->small) ? IDEM_EINVAL :
			    fconn_get_values(c, p, clen);
		return fconn_record(&c->reply, FCGI_UNKNOWN_TYPE, 0, u,
		    sizeof(u));
	}
	if (type == FCGI_BEGIN_REQUEST) {
		/* A second BEGIN for the live id breaks that request's
		 * stream, like PARAMS after their end: the connection
		 * goes.  Refusing it with END_REQUEST would end the live
		 * request in the web server's eyes before its answer. */
		if (clen != 8 || (c->id != 0 && id == c->id))
			return IDEM_EINVAL;
		if (c->id != 0)		/* one request at a time */
			return fconn_end(&c->reply, id, FCGI_CANT_MPX_CONN);
		if (((p[0] << 8) | p[1]) != FCGI_RESPONDER)
			return fconn_end(&c->reply, id, FCGI_UNKNOWN_ROLE);
		c->id = id;
		c->keep_conn = (p[2] & FCGI_KEEP_CONN) != 0;
		return IDEM_OK;
	}
	/* Records of requests we did not begin (or refused): ignored. */
	if (id != c->id)
		return IDEM_OK;
	switch (type) {
	case FCGI_ABORT_REQUEST:
		/* The web server gave up before we answered. */
		return IDEM_EINVAL;
	case FCGI_DATA:
		return IDEM_OK;		/* filter role only */
	default:
		return IDEM_EINVAL;
	}
}

enum idem_err
fconn_feed(struct fconn *c, const void *vp, size_t n, size_t *used)
{
	const unsigned char	*p = vp;
	size_t			 off = 0, k;
	enum idem_err		 er;

	while (off < n) {
		if (c->hlen < FCGI_HDR_LEN) {
			k = FCGI_HDR_LEN - c->hlen;
			if (k > n - off)
				k = n - off;
			memcpy(c->hdr + c->hlen, p + off, k);
			c->hlen += k;
			off += k;
			if (c->hlen < FCGI_HDR_LEN)
				break;
			if ((er = fconn_header(c)) != IDEM_OK)
				return er;
		}
		k = c->cleft < n - off ? c->cleft : n - off;
		if (k > 0) {
			if (fconn_streamed(c)) {
				if ((er = fconn_content(c, p + off, k)) !=
				    IDEM_OK)
					return er;
				if (c->body_over) {
					/* Too large: the request ends here,
					 * answered 413, the connection not
					 * reused. */
					c->stdin_done = 1;
					c->keep_conn = 0;
					*used = off + k;
					return IDEM_OK;
				}
			} else if (c->slen + k <= sizeof(c->small)) {
				memcpy(c->small + c->slen, p + off, k);
				c->slen += k;
			} else
				c->slen = sizeof(c->small) + 1;	/* too big */
			c->cleft -= k;
			off += k;
		}
		k = c->pleft < n - off ? c->pleft : n - off;
		c->pleft -= k;
		off += k;
		if (c->cleft > 0 || c->pleft > 0)
			break;
		/* A whole record. */
		c->hlen = 0;
		if (!fconn_streamed(c) && c->slen > sizeof(c->small) &&
		    HDR_TYPE(c) != FCGI_DATA && HDR_TYPE(c) != FCGI_GET_VALUES)
			return IDEM_EINVAL;
		if ((er = fconn_record_in(c)) != IDEM_OK)
			return er;
		if (c->params_done && c->stdin_done) {
			*used = off;
			return IDEM_OK;
		}
	}
	*used = off;
	return IDEM_EAGAIN;
}

enum idem_err
fconn_params(const struct fconn *c, char ***out)
{
	const unsigned char	*p = (const unsigned char *)c->params.p;
	size_t			 n = c->params.len, off, nl, vl, np = 0;
	size_t			 bytes = 0;
	char			**env, *s;

	/* Pass 1: validate and size; pass 2: copy. */
	for (off = 0; off < n;) {
		if (fconn_pair(p, n, &off, &nl, &vl) != 0)
			return IDEM_EINVAL;
		np++;
		bytes += nl + vl + 2;
		off += nl + vl;
	}
	if ((env = malloc((np + 1) * sizeof(*env) + bytes + 1)) == NULL)
		return IDEM_ENOMEM;
	s = (char *)(env + np + 1);
	np = 0;
	for (off = 0; off < n;) {
		(void)fconn_pair(p, n, &off, &nl, &vl);	/* checked above */
		if (nl > 0 && memchr(p + off, '=', nl) == NULL &&
		    memchr(p + off, '\0', nl) == NULL) {
			env[np++] = s;
			memcpy(s, p + off, nl);
			s += nl;
			*s++ = '=';
			memcpy(s, p + off + nl, vl);
			s += vl;
			*s++ = '\0';
		}
		off += nl + vl;
	}
	env[np] = NULL;
	*out = env;
	return IDEM_OK;
}
