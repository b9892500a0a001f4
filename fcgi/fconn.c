/* FastCGI responder side of a connection: records in, request out (no I/O). */
#include <stdlib.h>
#include <string.h>

#include "fconn.h"

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

/* Answers FCGI_GET_VALUES with what we are: no multiplexing. */
static enum idem_err
fconn_get_values(struct fconn *c, const unsigned char *p, size_t n)
{
	static const char *const known[][2] = {
		{ "FCGI_MPXS_CONNS", "0" },
		{ "FCGI_MAX_CONNS", "1024" },
		{ "FCGI_MAX_REQS", "1024" },
	};
	struct buf	 out;
	size_t		 off = 0, nl, vl, i, kl, kv;
	enum idem_err	 er = IDEM_OK;

	buf_init(&out, 512);
	while (off < n && er == IDEM_OK) {
		if ((er = fcgi_pair_decode(p, n, &off, &nl, &vl)) != IDEM_OK)
			break;
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
			kl = strlen(known[i][0]);
			kv = strlen(known[i][1]);
			/* A name asked for again and again: what does not
			 * fit is left out. */
			if (nl != kl || memcmp(p + off, known[i][0], kl) != 0 ||
			    out.len + 2 + kl + kv > out.max)
				continue;
			if ((er = fcgi_pair_append(&out, known[i][0], kl,
			    known[i][1], kv)) != IDEM_OK)
				break;
		}
		off += nl + vl;
	}
	if (er == IDEM_OK)
		er = fcgi_record(&c->reply, FCGI_GET_VALUES_RESULT, 0, out.p,
		    out.len);
	buf_free(&out);
	return er;
}

/* 1 if the record's content goes straight into params or body. */
static int
fconn_streamed(const struct fconn *c)
{
	return c->id != 0 && c->rec.id == c->id &&
	    (c->rec.type == FCGI_PARAMS || c->rec.type == FCGI_STDIN);
}

/* A header is in: checks what can be checked before the content. */
static enum idem_err
fconn_header(struct fconn *c)
{
	fcgi_hdr_decode(c->hdr, &c->rec);
	if (c->rec.version != FCGI_VERSION_1)
		return IDEM_EINVAL;
	c->cleft = c->rec.clen;
	c->pleft = c->rec.plen;
	c->slen = 0;
	if (!fconn_streamed(c))
		return IDEM_OK;
	if (c->rec.type == FCGI_PARAMS && c->params_done)
		return IDEM_EINVAL;
	if (c->rec.type == FCGI_STDIN && (!c->params_done || c->stdin_done))
		return IDEM_EINVAL;
	return IDEM_OK;
}

/* Content bytes of a streamed record. */
static enum idem_err
fconn_content(struct fconn *c, const unsigned char *p, size_t n)
{
	if (c->rec.type == FCGI_PARAMS)
		/* Past max_params: the connection goes (431 is not worth
		 * a crafted client's memory). */
		return buf_add(&c->params, p, n) == IDEM_OK ? IDEM_OK :
		    IDEM_EINVAL;
	if (c->body_over)
		return IDEM_OK;
	if (buf_add(&c->body, p, n) != IDEM_OK) {
		/* Refused whole (413): what was kept goes now. */
		c->body_over = 1;
		buf_free(&c->body);
	}
	return IDEM_OK;
}

/* Says END_REQUEST for id; IDEM_EIO when the connection ends with it. */
static enum idem_err
fconn_end(struct fconn *c, uint16_t id, int status, int last)
{
	enum idem_err	 er;

	if ((er = fcgi_end(&c->reply, id, 0, status)) != IDEM_OK)
		return er;
	return last ? IDEM_EIO : IDEM_OK;
}

/* A whole record is in (content in c->small unless streamed). */
static enum idem_err
fconn_record_in(struct fconn *c)
{
	const unsigned char	*p = c->small;
	size_t			 clen = c->rec.clen;
	uint16_t		 id = c->rec.id;
	int			 type = c->rec.type;
	int			 role, flags;

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
		if (type == FCGI_GET_VALUES)
			return clen > sizeof(c->small) ? IDEM_EINVAL :
			    fconn_get_values(c, p, clen);
		return fcgi_unknown_type(&c->reply, type);
	}
	if (type == FCGI_BEGIN_REQUEST) {
		/* A second BEGIN for the live id breaks that request's
		 * stream, like PARAMS after their end: the connection
		 * goes.  Refusing it with END_REQUEST would end the live
		 * request in the web server's eyes before its answer. */
		if (clen != FCGI_BODY_LEN || id == c->id)
			return IDEM_EINVAL;
		if (c->id != 0)		/* one request at a time */
			return fcgi_end(&c->reply, id, 0, FCGI_CANT_MPX_CONN);
		fcgi_begin_decode(p, &role, &flags);
		/* Refused; without KEEP_CONN that ends the connection, as
		 * any answer would. */
		if (role != FCGI_RESPONDER)
			return fconn_end(c, id, FCGI_UNKNOWN_ROLE,
			    (flags & FCGI_KEEP_CONN) == 0);
		c->id = id;
		c->keep_conn = (flags & FCGI_KEEP_CONN) != 0;
		return IDEM_OK;
	}
	/* Records of requests we did not begin (or refused): ignored. */
	if (id != c->id)
		return IDEM_OK;
	switch (type) {
	case FCGI_ABORT_REQUEST:
		/* The web server gave up before the request was whole: it
		 * is ended as the protocol says, and so is the connection
		 * (what else it sent for this request is not read). */
		return fconn_end(c, id, FCGI_REQUEST_COMPLETE, 1);
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
				/* Too large (413, the connection not
				 * reused): the rest is read and dropped, so
				 * a web server that sends the whole body
				 * before it reads (Apache, nginx) gets the
				 * answer, not a broken pipe.  Past
				 * FCONN_DISCARD_MAX the request ends
				 * here. */
				if (c->body_over) {
					c->keep_conn = 0;
					c->discarded += k;
				}
				if (c->discarded > FCONN_DISCARD_MAX) {
					c->stdin_done = 1;
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
		    c->rec.type != FCGI_DATA && c->rec.type != FCGI_GET_VALUES)
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
		if (fcgi_pair_decode(p, n, &off, &nl, &vl) != IDEM_OK)
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
		/* Checked in pass 1. */
		(void)fcgi_pair_decode(p, n, &off, &nl, &vl);
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
