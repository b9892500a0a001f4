/* A FastCGI client: forwards one request to an upstream app (PHP-FPM...). */
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "fastcgi.h"
#include "log.h"
#include "upstream.h"
#include "upstream_rd.h"

#define UP_PARAMS_MAX		(4 * 1024 * 1024)
#define UP_CONNECT_MAX_MS	10000	/* connect limit when timeout_ms is 0 */
#define UP_RBUF			65536	/* bytes read at once */
#define UP_INLINE_BODY		16384	/* bodies sent with the head */

/*
 * Encodes BEGIN_REQUEST and the PARAMS stream.  HTTP_PROXY is not
 * forwarded (httpoxy); an unknown (empty) CONTENT_LENGTH gets the body's
 * length so the app reads the whole (chunked) body, and stays as sent
 * without one.
 */
static enum idem_err
up_encode_head(const struct upstream_req *r, struct buf *out)
{
	struct buf	 pb;
	char		 cl[32];
	const char	*e, *eq;
	size_t		 i, nlen;
	int		 has_cl = 0;
	enum idem_err	 er;

	buf_init(&pb, UP_PARAMS_MAX);
	/* Kept, the app closes the connection when its run is over, not
	 * at its END_REQUEST (cgi_exchange.settle). */
	er = fcgi_begin(out, UPSTREAM_REQ_ID, FCGI_RESPONDER,
	    r->ex.settle != NULL ? FCGI_KEEP_CONN : 0);
	if (er != IDEM_OK)
		goto out;
	for (i = 0; r->params != NULL && r->params[i] != NULL; i++) {
		e = r->params[i];
		if ((eq = strchr(e, '=')) == NULL || eq == e)
			continue;
		nlen = (size_t)(eq - e);
		if (nlen == 10 && strncmp(e, "HTTP_PROXY", 10) == 0)
			continue;
		if (nlen == 14 && strncmp(e, "CONTENT_LENGTH", 14) == 0) {
			if (eq[1] == '\0' && r->ex.bodylen > 0)
				continue;
			has_cl = 1;
		}
		if ((er = fcgi_pair_append(&pb, e, nlen, eq + 1,
		    strlen(eq + 1))) != IDEM_OK)
			goto out;
	}
	if (!has_cl && r->ex.bodylen > 0) {
		snprintf(cl, sizeof(cl), "%zu", r->ex.bodylen);
		if ((er = fcgi_pair_append(&pb, "CONTENT_LENGTH", 14, cl,
		    strlen(cl))) != IDEM_OK)
			goto out;
	}
	er = fcgi_stream(out, FCGI_PARAMS, UPSTREAM_REQ_ID, pb.p, pb.len);
out:
	buf_free(&pb);
	return er;
}

/* ---- connecting ---- */

/* Waits for a non-blocking connect on fd until deadline.  0 on success. */
static int
up_connect_wait(int fd, int64_t deadline)
{
	struct pollfd	 pfd = { fd, POLLOUT, 0 };
	int64_t		 left;
	int		 rc, soerr = 0;
	socklen_t	 sl = sizeof(soerr);

	for (;;) {
		left = deadline - clock_now_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		rc = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (rc == -1 && errno == EINTR)
			continue;
		if (rc == -1)
			return -1;
		if (rc == 1)
			break;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1)
		return -1;
	if (soerr != 0) {
		errno = soerr;
		return -1;
	}
	return 0;
}

static int
up_connect_sa(const struct sockaddr *sa, socklen_t salen, int64_t deadline)
{
	int	 fd;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return -1;
	if (connect(fd, sa, salen) == 0)
		return fd;
	if ((errno == EINPROGRESS || errno == EINTR) &&
	    up_connect_wait(fd, deadline) == 0)
		return fd;
	{
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return -1;
}

/* Connects to "unix:/path" or "tcp:host:port".  -1 (errno) on failure. */
static int
up_connect(const char *addr, int64_t deadline)
{
	struct sockaddr_un	 sun;
	struct addrinfo		 hints, *res = NULL, *ai;
	char			 host[256];
	const char		*hp, *colon, *port;
	size_t			 hl;
	int			 fd = -1, rc;

	if (strncmp(addr, "unix:", 5) == 0) {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		if (strlen(addr + 5) == 0 ||
		    strlen(addr + 5) >= sizeof(sun.sun_path)) {
			errno = addr[5] == '\0' ? EINVAL : ENAMETOOLONG;
			return -1;
		}
		memcpy(sun.sun_path, addr + 5, strlen(addr + 5));
		return up_connect_sa((struct sockaddr *)&sun, sizeof(sun),
		    deadline);
	}
	if (strncmp(addr, "tcp:", 4) != 0) {
		errno = EINVAL;
		return -1;
	}
	hp = addr + 4;
	if ((colon = strrchr(hp, ':')) == NULL || colon[1] == '\0') {
		errno = EINVAL;
		return -1;
	}
	port = colon + 1;
	hl = (size_t)(colon - hp);
	/* [::1]:9000 */
	if (hl >= 2 && hp[0] == '[' && hp[hl - 1] == ']') {
		hp++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(host, hp, hl);
	host[hl] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		errno = rc == EAI_SYSTEM ? errno : EHOSTUNREACH;
		return -1;
	}
	for (ai = res; ai != NULL && fd == -1; ai = ai->ai_next)
		fd = up_connect_sa(ai->ai_addr, ai->ai_addrlen, deadline);
	freeaddrinfo(res);
	return fd;
}

int
upstream_connect(const char *addr, int64_t timeout_ms)
{
	return up_connect(addr, clock_now_ms() + timeout_ms);
}

/* ---- the exchange ---- */

/* What is left to send: the head buffer, then STDIN records of the body. */
struct up_wr {
	const char	*head;
	size_t		 headlen, headoff;
	const char	*body;
	size_t		 bodylen, bodyoff;	/* body bytes framed so far */
	unsigned char	 rh[FCGI_HDR_LEN];	/* current record header */
	size_t		 rhlen, rhoff;
	size_t		 chunk_left;	/* body bytes of the current record */
	size_t		 pad;		/* padding after the current record */
	int		 eof_sent;	/* empty STDIN queued */
	int		 done;
};

/* Fills iov with the next bytes to send.  Returns the iov count. */
static int
up_wr_next(struct up_wr *w, struct iovec iov[2])
{
	static const unsigned char zero[8];

	for (;;) {
		if (w->headoff < w->headlen) {
			iov[0].iov_base = (char *)w->head + w->headoff;
			iov[0].iov_len = w->headlen - w->headoff;
			return 1;
		}
		if (w->rhoff < w->rhlen) {
			iov[0].iov_base = w->rh + w->rhoff;
			iov[0].iov_len = w->rhlen - w->rhoff;
			if (w->chunk_left == 0)
				return 1;
			iov[1].iov_base = (char *)w->body + w->bodyoff;
			iov[1].iov_len = w->chunk_left;
			return 2;
		}
		if (w->chunk_left > 0) {
			iov[0].iov_base = (char *)w->body + w->bodyoff;
			iov[0].iov_len = w->chunk_left;
			return 1;
		}
		if (w->pad > 0) {
			iov[0].iov_base = (char *)zero;
			iov[0].iov_len = w->pad;
			return 1;
		}
		/* Next record. */
		if (w->bodyoff < w->bodylen) {
			size_t n = w->bodylen - w->bodyoff;

			if (n > FCGI_CHUNK_MAX)
				n = FCGI_CHUNK_MAX;
			w->pad = fcgi_hdr_encode(w->rh, FCGI_STDIN,
			    UPSTREAM_REQ_ID, n);
			w->rhlen = FCGI_HDR_LEN;
			w->rhoff = 0;
			w->chunk_left = n;
			continue;
		}
		if (!w->eof_sent) {
			(void)fcgi_hdr_encode(w->rh, FCGI_STDIN,
			    UPSTREAM_REQ_ID, 0);
			w->rhlen = FCGI_HDR_LEN;
			w->rhoff = 0;
			w->eof_sent = 1;
			continue;
		}
		w->done = 1;
		return 0;
	}
}

/* Accounts for n bytes sent from what up_wr_next() offered. */
static void
up_wr_sent(struct up_wr *w, size_t n)
{
	size_t	 k;

	if (w->headoff < w->headlen) {
		w->headoff += n;
		return;
	}
	if (w->rhoff < w->rhlen) {
		k = w->rhlen - w->rhoff;
		k = k < n ? k : n;
		w->rhoff += k;
		n -= k;
	}
	if (n > 0 && w->chunk_left > 0) {
		k = w->chunk_left < n ? w->chunk_left : n;
		w->chunk_left -= k;
		w->bodyoff += k;
		n -= k;
	} else if (n > 0 && w->pad > 0)
		w->pad -= n;
}

/* One request's connection: what is left to send, what came back. */
struct up_io {
	const struct upstream_req *r;
	struct cgi_clock	 clk;
	int			 fd;
	int			 wr_open;	/* more to send, the app
						 * reads */
	struct up_wr		 w;
	struct upstream_rd	*rd;
	char			*rbuf;		/* UP_RBUF bytes */
};

/*
 * Encodes the head into head and connects (by the
 * deadline, else UP_CONNECT_MAX_MS from start).  IDEM_EHANDLER (logged)
 * if the app cannot be reached.
 */
static enum idem_err
up_io_open(struct up_io *io, struct buf *head, int64_t start)
{
	const struct upstream_req *r = io->r;
	enum idem_err		 er;

	if ((er = up_encode_head(r, head)) != IDEM_OK) {
		log_err("%s: cannot encode the FastCGI params: %s",
		    upstream_tag(r), idem_strerror(er));
		return er;
	}
	if ((io->fd = up_connect(r->addr, io->clk.deadline >= 0 ?
	    io->clk.deadline : start + UP_CONNECT_MAX_MS)) == -1) {
		log_err("%s: cannot connect to %s: %s", upstream_tag(r),
		    r->addr, strerror(errno));
		return IDEM_EHANDLER;
	}
	io->w.body = r->ex.body;
	io->w.bodylen = r->ex.body != NULL ? r->ex.bodylen : 0;
	/* A small body, and its end, go in the head's write. */
	if (io->w.bodylen <= UP_INLINE_BODY) {
		if ((er = fcgi_stream(head, FCGI_STDIN, UPSTREAM_REQ_ID,
		    io->w.body, io->w.bodylen)) != IDEM_OK) {
			log_err("%s: out of memory", upstream_tag(r));
			return er;
		}
		io->w.bodylen = 0;
		io->w.eof_sent = 1;
	}
	io->w.head = head->p;
	io->w.headlen = head->len;
	return IDEM_OK;
}

/* Sends what the socket takes now; stops sending at the end or when the
 * app no longer reads.  1 when all it offered went, else 0. */
static int
up_io_send(struct up_io *io)
{
	struct iovec	 iov[2];
	struct msghdr	 mh;
	ssize_t		 k;
	int		 niov;

	if ((niov = up_wr_next(&io->w, iov)) == 0) {
		io->wr_open = 0;
		return 0;
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)niov;
	/* MSG_NOSIGNAL: a closed app is an error code here, never a SIGPIPE. */
	k = sendmsg(io->fd, &mh, MSG_NOSIGNAL);
	if (k > 0) {
		up_wr_sent(&io->w, (size_t)k);
		return (size_t)k == iov[0].iov_len +
		    (niov > 1 ? iov[1].iov_len : 0);
	}
	if (k == -1 && errno != EAGAIN && errno != EINTR) {
		/* The app may answer without reading all input; keep
		 * reading. */
		log_debug("%s: send: %s", upstream_tag(io->r), strerror(errno));
		io->wr_open = 0;
	}
	return 0;
}

/* Sends what the socket takes before the first poll: a connected socket
 * mostly takes a small request whole, and then only its answer is
 * waited for. */
static void
up_io_send_now(struct up_io *io)
{
	while (io->wr_open && up_io_send(io))
		;
}

/* Reads once and parses it.  IDEM_OK, or the error that ends the run. */
static enum idem_err
up_io_recv(struct up_io *io)
{
	const struct upstream_req *r = io->r;
	ssize_t			 k;

	k = read(io->fd, io->rbuf, UP_RBUF);
	if (k == -1 && (errno == EAGAIN || errno == EINTR))
		return IDEM_OK;
	if (k <= 0) {
		log_err("%s: %s closed the connection before END_REQUEST%s%s",
		    upstream_tag(r), r->addr, k == -1 ? ": " : "",
		    k == -1 ? strerror(errno) : "");
		return IDEM_EBROKEN;
	}
	cgi_clock_fed(&io->clk, &r->ex);
	return upstream_rd_feed(r, io->rd, io->rbuf, (size_t)k);
}

/* The deadline and the tick at now (logged when they end the run). */
static enum idem_err
up_io_clock(struct up_io *io, int64_t now)
{
	const struct upstream_req *r = io->r;
	enum idem_err		 er;

	er = cgi_clock_check(&io->clk, &r->ex, now);
	if (er == IDEM_ETIMEOUT)
		log_err("%s: %s timed out after %lld ms", upstream_tag(r),
		    r->addr, (long long)r->ex.timeout_ms);
	else if (er == IDEM_EBROKEN)
		log_err("%s: %s still running at its run limit (%lld ms); "
		    "its answer is given up", upstream_tag(r), r->addr,
		    (long long)r->ex.run_limit_ms);
	return er;
}

/*
 * One round: the deadline and the tick, then a poll and what it allows.
 * IDEM_OK to go on (the answer is whole when io->rd->done), else the
 * error that ends the run (on a tick's stop, IDEM_ELEASE: closing the
 * connection aborts the request).
 */
static enum idem_err
up_io_round(struct up_io *io)
{
	const struct upstream_req *r = io->r;
	struct pollfd		 pfd;
	int64_t			 now = clock_now_ms();
	int			 rc;
	enum idem_err		 er;

	if ((er = up_io_clock(io, now)) != IDEM_OK)
		return er;
	pfd.fd = io->fd;
	pfd.events = POLLIN | (io->wr_open ? POLLOUT : 0);
	pfd.revents = 0;
	rc = poll(&pfd, 1, (int)cgi_clock_wait(&io->clk, now));
	if (rc == -1 && errno == EINTR)
		return IDEM_OK;
	if (rc == -1) {
		log_err("%s: poll: %s", upstream_tag(r), strerror(errno));
		return IDEM_ESYS;
	}
	if (rc == 0)
		return IDEM_OK;
	if (io->wr_open && (pfd.revents & (POLLOUT | POLLERR | POLLHUP)))
		(void)up_io_send(io);
	if (pfd.revents & (POLLIN | POLLERR | POLLHUP))
		return up_io_recv(io);
	return IDEM_OK;
}

/*
 * After END_REQUEST, when the caller must know the run is over: our side
 * of the connection is shut, and it is read (anything more dropped) to
 * the app's close, under the same clock.  IDEM_OK at the close.
 */
static enum idem_err
up_io_settle(struct up_io *io)
{
	const struct upstream_req *r = io->r;
	struct pollfd		 pfd;
	ssize_t			 k;
	int64_t			 now, t0 = clock_now_ms();
	int			 rc;
	enum idem_err		 er;

	(void)shutdown(io->fd, SHUT_WR);
	for (;;) {
		now = clock_now_ms();
		if ((er = up_io_clock(io, now)) != IDEM_OK)
			return er;
		pfd.fd = io->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		rc = poll(&pfd, 1, (int)cgi_clock_wait(&io->clk, now));
		if (rc == -1 && errno != EINTR) {
			log_err("%s: poll: %s", upstream_tag(r),
			    strerror(errno));
			return IDEM_EBROKEN;	/* its end unknown */
		}
		if (rc <= 0)
			continue;
		k = read(io->fd, io->rbuf, UP_RBUF);
		if (k == -1 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k > 0)
			continue;
		if (clock_now_ms() - t0 >= 1000)
			log_info("%s: %s ran on %lld ms after its END_REQUEST",
			    upstream_tag(r), r->addr,
			    (long long)(clock_now_ms() - t0));
		return IDEM_OK;		/* closed (or reset): the run is
					 * over */
	}
}

enum idem_err
upstream_exec(const struct upstream_req *r, int *app_status)
{
	struct up_io	 io;
	struct upstream_rd rd;
	char		 rbuf[UP_RBUF];	/* on the stack: no 64 KiB from
					 * the heap per request */
	struct buf	 head;
	int64_t		 start = clock_now_ms();
	enum idem_err	 er;

	memset(&io, 0, sizeof(io));
	memset(&rd, 0, sizeof(rd));
	io.rd = &rd;
	io.rbuf = rbuf;
	io.r = r;
	io.fd = -1;
	io.wr_open = 1;
	buf_init(&head, UP_PARAMS_MAX + UP_PARAMS_MAX / 8 + 64);
	cgi_clock_start(&io.clk, &r->ex, start);
	if ((er = up_io_open(&io, &head, start)) != IDEM_OK)
		goto out;
	/* The clock before the first byte, as before every later one: a
	 * connect that outlasted a tick (TCP, SYNs retried) renews the
	 * lease first, and a lost lease sends nothing. */
	if ((er = up_io_clock(&io, clock_now_ms())) == IDEM_OK) {
		up_io_send_now(&io);
		while ((er = up_io_round(&io)) == IDEM_OK && !io.rd->done)
			;
		if (er == IDEM_OK && r->ex.settle != NULL &&
		    r->ex.settle(r->ex.arg))
			er = up_io_settle(&io);
	}
	if (er == IDEM_OK)
		*app_status = io.rd->app_status;
	/* Connected and not refused, the app may have run: whatever ended
	 * the exchange early (an answer the sink refused, no memory, a
	 * failed poll), its key must not be freed. */
	else if (er != IDEM_ETIMEOUT && er != IDEM_ELEASE && !io.rd->refused)
		er = IDEM_EBROKEN;
out:
	upstream_rd_flush(r, io.rd);
	if (io.fd != -1)
		close(io.fd);
	buf_free(&head);
	return er;
}
