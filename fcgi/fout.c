/* Answer to the web server on its connection: STDOUT records, END_REQUEST. */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fastcgi.h"
#include "fout.h"

/* STDOUT record content gathered before a write (a record holds 65535). */
#define FOUT_CHUNK	32768

struct fout {
	int		 fd;
	uint16_t	 id;
	int64_t		 timeout_ms;
	struct buf	 recs;		/* records not yet written */
	unsigned char	 data[FOUT_CHUNK];
	size_t		 len;
	int		 flushed;	/* a STDOUT record went out */
};

enum idem_err
fout_new(int fd, uint16_t id, int64_t timeout_ms, struct fout **out)
{
	struct fout	*o;

	/* Not calloc: data (32 KiB) is written before it is read, and
	 * zeroing it was a visible part of every answer's cost. */
	if ((o = malloc(sizeof(*o))) == NULL)
		return IDEM_ENOMEM;
	o->fd = fd;
	o->id = id;
	o->timeout_ms = timeout_ms;
	o->len = 0;
	o->flushed = 0;
	buf_init(&o->recs, 2 * FOUT_CHUNK);
	*out = o;
	return IDEM_OK;
}

void
fout_free(struct fout *o)
{
	if (o == NULL)
		return;
	buf_free(&o->recs);
	free(o);
}

enum idem_err
fout_send_all(int fd, const void *vp, size_t n, int64_t timeout_ms)
{
	const char	*p = vp;
	struct pollfd	 pfd = { fd, POLLOUT, 0 };
	ssize_t		 w;

	while (n > 0) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			int	 k = poll(&pfd, 1, (int)timeout_ms);

			if (k > 0)
				continue;
			if (k == 0)
				return IDEM_ETIMEOUT;
		}
		return IDEM_EIO;
	}
	return IDEM_OK;
}

/* Writes all of p; IDEM_EIO when the peer is gone, IDEM_ETIMEOUT when it
 * took nothing for the timeout. */
static enum idem_err
fout_send(struct fout *o, const void *vp, size_t n)
{
	return fout_send_all(o->fd, vp, n, o->timeout_ms);
}

/* Sends what is gathered as one STDOUT record. */
static enum idem_err
fout_flush(struct fout *o)
{
	enum idem_err	 er;

	if (o->len == 0)
		return IDEM_OK;
	buf_reset(&o->recs);
	if ((er = fcgi_record(&o->recs, FCGI_STDOUT, o->id, o->data,
	    o->len)) != IDEM_OK)
		return er;
	o->len = 0;
	o->flushed = 1;
	return fout_send(o, o->recs.p, o->recs.len);
}

/* reply.write's and reply.flush's answer for er. */
static int
fout_said(enum idem_err er)
{
	return er == IDEM_OK ? 0 : er == IDEM_ETIMEOUT ? -2 : -1;
}

/* reply.write: 0, -1 when the web server is gone, -2 when it took nothing
 * for the writer's timeout. */
static int
fout_write(void *arg, const void *vp, size_t n)
{
	struct fout	*o = arg;
	const char	*p = vp;
	size_t		 k;
	enum idem_err	 er;

	while (n > 0) {
		k = sizeof(o->data) - o->len;
		if (k > n)
			k = n;
		memcpy(o->data + o->len, p, k);
		o->len += k;
		p += k;
		n -= k;
		if (o->len == sizeof(o->data) &&
		    (er = fout_flush(o)) != IDEM_OK)
			return fout_said(er);
	}
	return 0;
}

/* What is gathered, the end of STDOUT and END_REQUEST: one write. */
enum idem_err
fout_end(struct fout *o)
{
	enum idem_err	 er;

	buf_reset(&o->recs);
	if (o->len > 0 && (er = fcgi_record(&o->recs, FCGI_STDOUT, o->id,
	    o->data, o->len)) != IDEM_OK)
		return er;
	o->len = 0;
	if ((er = fcgi_record(&o->recs, FCGI_STDOUT, o->id, NULL, 0)) !=
	    IDEM_OK ||
	    (er = fcgi_end(&o->recs, o->id, 0, FCGI_REQUEST_COMPLETE)) !=
	    IDEM_OK)
		return er;
	return fout_send(o, o->recs.p, o->recs.len);
}

/* reply.end: 0, or -1 when the end did not reach the web server. */
static int
fout_finish(void *arg)
{
	struct fout	*o = arg;
	enum idem_err	 er = fout_end(o);

	shutdown(o->fd, SHUT_RDWR);
	return er == IDEM_OK ? 0 : -1;
}

/* reply.abort */
static void
fout_abort(void *arg)
{
	struct fout	*o = arg;

	o->len = 0;
	shutdown(o->fd, SHUT_RDWR);
}

/* reply.flush: what is gathered goes now, as one STDOUT record. */
static int
fout_send_on(void *arg)
{
	return fout_said(fout_flush(arg));
}

/* reply.retract */
static int
fout_retract(void *arg)
{
	struct fout	*o = arg;

	if (o->flushed)
		return -1;
	o->len = 0;
	return 0;
}

struct reply
fout_reply(struct fout *o)
{
	return (struct reply){ fout_write, fout_abort, o, 0, 0, fout_finish,
	    0, fout_retract, fout_send_on, 0 };
}
