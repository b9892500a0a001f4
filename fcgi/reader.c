/* Reads whole FastCGI requests off the listen socket for request threads. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "board.h"
#include "clock.h"
#include "listen.h"
#include "log.h"
#include "reader.h"
#include "reply.h"

/* Reads of 64 KiB one connection gets per turn of the loop. */
#define READER_READS_MAX	16
#define READER_CONNS_MAX	4096	/* connections being read, per worker */
#define READER_READY_MAX	4096	/* whole requests waiting for a
					 * thread */
#define READER_IDLE_MS		300000	/* a kept connection may idle this */
#define READER_TICK_MS		1000
#define READER_ACCEPT_PAUSE_MS	100	/* out of descriptors: not accepting */
#define READER_YIELD_MS		10	/* no idle thread here, one elsewhere:
					 * not accepting */
#define READER_PARK_MAX		4096	/* waiters parked, per worker */
/* A request still arriving with no more than this buffered is never
 * refused for max_pending_body: small requests pass while large stalled
 * ones hold the budget. */
#define READER_SMALL		(64 * 1024)

/* How a reader stops: reading to the end what it accepted (reader_stop),
 * or at once (reader_free). */
#define READER_DRAIN		1
#define READER_HALT		2

struct reader {
	const struct cfg	*cfg;
	const char		*web_addrs;
	int			 lfd, ep, evfd;
	int			 nudge;		/* shared with the other
						 * workers (board_nudge_fd),
						 * or -1 */
	int			 yielded;	/* accept_at is a yield: the
						 * nudge is out of the set */
	int			 pep;		/* parked connections: a
						 * hang-up (under mu) */
	int64_t			 accept_at;	/* not accepting (out of
						 * descriptors) until then;
						 * 0: accepting */
	int64_t			 emfile_logged;	/* when last said */
	int64_t			 timeout_ms;
	size_t			 max_body;
	pthread_t		 tid;
	int			 started;

	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	struct job		*ready, *ready_tail;	/* for request
							 * threads */
	size_t			 nready;
	size_t			 nidle;		/* threads in reader_next */
	atomic_size_t		 queued;	/* bytes the ready ones hold
						 * (read without mu) */
	struct job		*back;		/* returned for reuse */
	struct job		*parked;	/* waiters (fcgi/park.h) */
	size_t			 nparked;
	size_t			 parked_bytes;	/* their params and bodies */
	int64_t			 park_next;	/* look at parked ones then */
	int			 stop;		/* READER_DRAIN, READER_HALT */
	int			 done;		/* the reader thread ended */

	/* Reader thread only. */
	int			 draining;	/* stopping: no more accepts */
	int64_t			 drain_end_ms;	/* draining: every connection
						 * is done by then */
	struct job		**conns;	/* being read */
	size_t			 nconns;
	size_t			 pending;	/* bytes they buffered */
	size_t			 max_pending;
	reader_quick_fn		*quick;		/* or NULL */
	void			*quick_arg;
	struct buf		 http;		/* a quick answer */
	struct buf		 out;		/* its records */
};

static void
job_close(struct job *j)
{
	char	 junk[4096];
	int	 i;

	if (j == NULL)
		return;
	/* Input left unread makes close() reset a TCP connection, which
	 * throws away the answer still in the send queue: say we are done,
	 * then read what came (a bounded, non-blocking look). */
	if (j->fd >= 0 && j->linger) {
		(void)shutdown(j->fd, SHUT_WR);
		for (i = 0; i < 256 && recv(j->fd, junk, sizeof(junk),
		    MSG_DONTWAIT) > 0; i++)
			;
	}
	if (j->fd >= 0)
		close(j->fd);
	buf_free(&j->fc.params);
	buf_free(&j->fc.body);
	buf_free(&j->fc.reply);
	free(j);
}

/* What j's request holds in memory: params and body. */
static size_t
job_bytes(const struct job *j)
{
	return j->fc.params.len + j->fc.body.len;
}

/* Stops reading j (it leaves the epoll set and the list). */
static void
reader_forget(struct reader *rd, struct job *j)
{
	size_t	 i;

	if (j->polled)
		epoll_ctl(rd->ep, EPOLL_CTL_DEL, j->fd, NULL);
	j->polled = 0;
	rd->pending -= j->held;
	j->held = 0;
	for (i = 0; i < rd->nconns; i++)
		if (rd->conns[i] == j) {
			rd->conns[i] = rd->conns[--rd->nconns];
			break;
		}
}

/* Puts j in the epoll set (once).  0, or -1 when it cannot be. */
static int
reader_poll(struct reader *rd, struct job *j)
{
	struct epoll_event	 ev;

	if (j->polled)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = j;
	if (epoll_ctl(rd->ep, EPOLL_CTL_ADD, j->fd, &ev) != 0)
		return -1;
	j->polled = 1;
	return 0;
}

/*
 * Starts reading j: a new connection, which must send its request within
 * client_timeout, or one kept for its next request, which may idle longer.
 * A kept one is polled at once; a new one is read first (the web server
 * sends its request as it connects) and polled only if that read finds
 * too little, which spares the epoll set two changes per request.
 * 0, or -1 if j was closed.
 */
static int
reader_watch(struct reader *rd, struct job *j, int64_t now, int kept)
{
	if (rd->nconns == READER_CONNS_MAX) {
		log_warn("too many FastCGI connections being read; one "
		    "closed");
		job_close(j);
		return -1;
	}
	j->started = 0;
	j->kept = kept;
	j->cache_missed = 0;
	j->unsent = 0;
	j->polled = 0;
	memset(&j->park, 0, sizeof(j->park));
	j->deadline_ms = now + (kept ? READER_IDLE_MS : rd->timeout_ms);
	/* Kept ones come back during a drain too (a thread's reuse, a
	 * quick answer): none outlives it. */
	if (rd->draining && j->deadline_ms > rd->drain_end_ms)
		j->deadline_ms = rd->drain_end_ms;
	if (kept && reader_poll(rd, j) != 0) {
		job_close(j);
		return -1;
	}
	rd->conns[rd->nconns++] = j;
	return 0;
}

static void	reader_input(struct reader *, struct job *, int64_t);

/* Stops accepting until until_ms (reader_accept_resume): the listen
 * socket, and with nudge the shared eventfd too, leave the epoll set,
 * unless a pause already took them out. */
static void
reader_accept_off(struct reader *rd, int64_t until_ms, int nudge)
{
	if (rd->accept_at == 0) {
		(void)epoll_ctl(rd->ep, EPOLL_CTL_DEL, rd->lfd, NULL);
		if (nudge) {
			(void)epoll_ctl(rd->ep, EPOLL_CTL_DEL, rd->nudge,
			    NULL);
			rd->yielded = 1;
		}
		board_accepting(0);
	}
	rd->accept_at = until_ms;
}

/*
 * Out of descriptors (or memory): the listen socket stays readable, so
 * it leaves the epoll set for READER_ACCEPT_PAUSE_MS, as nginx does,
 * rather than wake this reader at once again and again; said once every
 * 10 s at most.  Other workers, and this one's open connections, go on.
 */
static void
reader_accept_pause(struct reader *rd, int64_t now, int err)
{
	if (rd->emfile_logged == 0 || now - rd->emfile_logged >= 10000) {
		log_err("accept: %s; not accepting for %d ms (raise the "
		    "open files limit: LimitNOFILE=)", strerror(err),
		    READER_ACCEPT_PAUSE_MS);
		rd->emfile_logged = now;
	}
	reader_accept_off(rd, now + READER_ACCEPT_PAUSE_MS, 0);
}

/*
 * Every idle request thread of this worker has a request waiting for it
 * while another worker has one idle: this reader stops accepting for
 * READER_YIELD_MS and nudges the others' readers, so a burst of slow
 * requests spreads over the workers instead of queueing behind one
 * worker's threads.  With no idle thread anywhere it goes on accepting
 * (a cached replay needs no thread).  1 if it yields.
 */
static int
reader_yields(struct reader *rd, int64_t now)
{
	uint64_t	 one = 1;
	int		 full;

	/* A drain takes what waits: the others may be draining too. */
	if (rd->nudge < 0 || rd->draining)
		return 0;
	pthread_mutex_lock(&rd->mu);
	full = rd->nready >= rd->nidle;
	pthread_mutex_unlock(&rd->mu);
	if (!full || !board_idle_elsewhere())
		return 0;
	reader_accept_off(rd, now + READER_YIELD_MS, 1);
	/* Out of this set first: the kernel wakes a reader that waits. */
	(void)!write(rd->nudge, &one, sizeof(one));
	return 1;
}

/* Puts the listen socket (or the nudge) in the epoll set, shared. */
static int
reader_poll_shared(struct reader *rd, int *fdp)
{
	struct epoll_event	 ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	ev.data.ptr = fdp;
	return epoll_ctl(rd->ep, EPOLL_CTL_ADD, *fdp, &ev);
}

/* Takes the listen socket back into the epoll set once a pause is over;
 * the time to look again otherwise. */
static int64_t
reader_accept_resume(struct reader *rd, int64_t now, int64_t next)
{
	if (rd->accept_at == 0 || rd->draining)
		return next;
	if (now < rd->accept_at)
		return rd->accept_at < next ? rd->accept_at : next;
	if (rd->yielded && reader_poll_shared(rd, &rd->nudge) == 0)
		rd->yielded = 0;
	if (reader_poll_shared(rd, &rd->lfd) == 0) {
		rd->accept_at = 0;
		board_accepting(1);
	} else
		rd->accept_at = now + READER_ACCEPT_PAUSE_MS;
	return next;
}

/* A peer FCGI_WEB_SERVER_ADDRS does not list: one line every 10 s at
 * most, with how many there were (anyone who reaches the port may open
 * connections faster than a log takes lines). */
static void
reader_refused_peer(int64_t now)
{
	static struct log_every	 every;
	uint64_t		 n = 0;

	if (!log_every(&every, now, 10 * 1000, &n))
		return;
	if (n > 1)
		log_warn("connections from peers not in FCGI_WEB_SERVER_ADDRS "
		    "refused: %llu since the last line",
		    (unsigned long long)n);
	else
		log_warn("connection from a peer not in "
		    "FCGI_WEB_SERVER_ADDRS refused");
}

/* Accepts up to 64 connections; 1 if there may be more. */
static int
reader_accept(struct reader *rd, int64_t now)
{
	struct job	*j;
	int		 fd, i;

	for (i = 0; i < 64; i++) {
		if (reader_yields(rd, now))
			return 0;
		fd = accept4(rd->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE ||
		    errno == ENOBUFS || errno == ENOMEM)) {
			reader_accept_pause(rd, now, errno);
			return 0;
		}
		if (fd < 0)
			return 0;	/* EAGAIN: another worker took it, or
					 * none */
		if (!listen_peer_allowed(fd, rd->web_addrs)) {
			reader_refused_peer(now);
			close(fd);
			continue;
		}
		if ((j = calloc(1, sizeof(*j))) == NULL) {
			close(fd);
			continue;
		}
		j->fd = fd;
		/* Room past max_params, so an oversized header block gets its
		 * 431 from the request thread; past that, the connection
		 * goes. */
		fconn_init(&j->fc, 2 * rd->cfg->max_params, rd->max_body);
		if (reader_watch(rd, j, now, 0) == 0)
			reader_input(rd, j, now);
	}
	return 1;
}

/* Writes what the protocol wants said now (small); 0, -1 on failure. */
static int
reader_reply(struct job *j)
{
	ssize_t	 w;

	if (j->fc.reply.len == 0)
		return 0;
	w = send(j->fd, j->fc.reply.p, j->fc.reply.len, MSG_NOSIGNAL);
	if (w < 0 || (size_t)w != j->fc.reply.len)
		return -1;
	buf_reset(&j->fc.reply);
	return 0;
}

/* Collects an answer the reader makes itself, for reply_problem. */
static int
reader_collect(void *arg, const void *p, size_t n)
{
	return buf_add(arg, p, n) == IDEM_OK ? 0 : -1;
}

/*
 * Answers j's request with problem p (Retry-After: 1) before it is whole:
 * STDOUT, then END_REQUEST, not waiting, then the end of what j sends.
 * The web server may still be sending: j stays open for reading, its
 * input dropped until it ends, so the answer is not lost to a reset.
 */
static void
reader_refuse(struct job *j, enum problem p)
{
	struct buf	 out;
	struct reply	 o = { .write = reader_collect, .arg = &out };

	buf_init(&out, 8192);
	reply_problem(&o, p, 1, 0, NULL);
	buf_reset(&j->fc.reply);
	if (!o.failed &&
	    fcgi_stream(&j->fc.reply, FCGI_STDOUT, j->fc.id, out.p,
	    out.len) == IDEM_OK &&
	    fcgi_end(&j->fc.reply, j->fc.id, 0, FCGI_REQUEST_COMPLETE) ==
	    IDEM_OK)
		(void)reader_reply(j);
	buf_free(&out);
	/* Nothing more goes out: the FIN ends the answer for a web server
	 * that reads to the close (nginx without fastcgi_keep_conn), which
	 * then stops sending and closes its side. */
	buf_reset(&j->fc.reply);
	(void)shutdown(j->fd, SHUT_WR);
}

/* What max_pending_body bounds: bytes of requests still arriving and of
 * those (and unsent answers) waiting in the ready queue.  Reader thread. */
static size_t
reader_held(const struct reader *rd)
{
	return rd->pending + atomic_load_explicit(&rd->queued,
	    memory_order_relaxed);
}

/*
 * Counts what j buffers into the worker's pending bytes.  Past
 * max_pending_body (with what the ready queue holds), a request still
 * arriving that holds more than READER_SMALL, while the others hold more
 * than READER_SMALL too, is refused (503): one request alone is bounded
 * by max_body, and small ones always pass.  A refused request's body goes
 * at once, its 503 goes at once, and the rest of its body is read and
 * dropped as it comes, as for 413 (fconn): a web server that sends the
 * whole body before it reads (Apache, nginx) gets the answer, not a
 * broken pipe (nginx made that a 502).
 */
static void
reader_account(struct reader *rd, struct job *j)
{
	size_t	 now = j->fc.params.len + j->fc.body.len, all;

	rd->pending = rd->pending - j->held + now;
	j->held = now;
	all = reader_held(rd);
	/* Others holding no more than a small request's bytes leave j
	 * alone: bounded by its max_body. */
	if (j->refused || all <= rd->max_pending || now <= READER_SMALL ||
	    all - now <= READER_SMALL || j->fc.id == 0)
		return;
	log_warn("requests arriving or waiting for a thread hold %zu bytes, "
	    "over max_pending_body (%zu): one holding %zu refused (503)",
	    all, rd->max_pending, now);
	reader_refuse(j, PROB_OVERLOADED);
	j->refused = 1;
	j->fc.body_over = 1;
	buf_free(&j->fc.body);
	rd->pending -= j->held - j->fc.params.len;
	j->held = j->fc.params.len;
}

/* Queues j for a request thread (rd->mu held). */
static void
reader_push(struct reader *rd, struct job *j)
{
	j->next = NULL;
	if (rd->ready_tail != NULL)
		rd->ready_tail->next = j;
	else
		rd->ready = j;
	rd->ready_tail = j;
	rd->nready++;
	j->queued = job_bytes(j) + j->unsent;
	atomic_fetch_add_explicit(&rd->queued, j->queued,
	    memory_order_relaxed);
	board_queued(rd->nready);
}

/* Wakes the reader thread (its eventfd). */
static void
reader_poke(struct reader *rd)
{
	uint64_t	 one = 1;

	(void)!write(rd->evfd, &one, sizeof(one));
}

/* Wakes n request threads for what reader_push queued, after rd->mu is
 * let go: a thread woken under it would only wait for it again. */
static void
reader_wake(struct reader *rd, size_t n)
{
	if (n == 1)
		pthread_cond_signal(&rd->cv);
	else if (n > 1)
		pthread_cond_broadcast(&rd->cv);
}

/* Hands a whole request to the request threads. */
static void
reader_ready(struct reader *rd, struct job *j)
{
	pthread_mutex_lock(&rd->mu);
	if (rd->nready >= READER_READY_MAX) {
		pthread_mutex_unlock(&rd->mu);
		log_warn("too many requests waiting for a thread; one "
		    "refused");
		/* Part of a quick answer gone already: the web server
		 * must see it broken off, not ended. */
		if (j->unsent == 0) {
			(void)fcgi_end(&j->fc.reply, j->fc.id, 0,
			    FCGI_OVERLOADED);
			(void)reader_reply(j);
		}
		job_close(j);
		return;
	}
	reader_push(rd, j);
	pthread_mutex_unlock(&rd->mu);
	reader_wake(rd, 1);
}

/*
 * A parked connection is watched for the web server hanging up (its
 * client gave up), so its place and bytes are not held until its wait
 * ends.  Only a hang-up: bytes the web server sends meanwhile wait in
 * the socket.  Not watched (no room in the kernel) it waits as before.
 * rd->mu held, in both.
 */
static void
reader_watch_parked(struct reader *rd, struct job *j)
{
	struct epoll_event	 ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLRDHUP;
	ev.data.ptr = j;
	j->park.watched = epoll_ctl(rd->pep, EPOLL_CTL_ADD, j->fd, &ev) == 0;
}

static void
reader_unwatch(struct reader *rd, struct job *j)
{
	if (j->park.watched)
		(void)epoll_ctl(rd->pep, EPOLL_CTL_DEL, j->fd, NULL);
	j->park.watched = 0;
}

/*
 * Marks the parked connections the web server hung up on: they are due
 * (park_due), and the next reader_unpark hands them out.  Their events
 * are taken under rd->mu, which every unpark holds too: a connection in
 * the set is parked, and no thread has it.  1 if any was marked.
 */
static int
reader_hangups(struct reader *rd)
{
	struct epoll_event	 evs[64];
	struct job		*j;
	int			 n, i;

	pthread_mutex_lock(&rd->mu);
	n = epoll_wait(rd->pep, evs, 64, 0);
	for (i = 0; i < n; i++) {
		j = evs[i].data.ptr;
		j->park.gone = 1;
		/* Level-triggered: out of the set, or it fires again. */
		reader_unwatch(rd, j);
	}
	pthread_mutex_unlock(&rd->mu);
	return n > 0;
}

/*
 * Hands the parked requests that are to look again (all of them, final,
 * when stopping) back to the request threads (rd->mu held); plans the
 * next look at the rest.  A woken one is never refused: it was counted
 * when it came.
 */
static size_t
reader_unpark_locked(struct reader *rd, int64_t now)
{
	struct job	**pp = &rd->parked, *j;
	int64_t		 next = now + READER_TICK_MS;
	size_t		 woken = 0;

	while ((j = *pp) != NULL) {
		if (!rd->stop && !park_due(&j->park, now)) {
			if (j->park.wake_ms < next)
				next = j->park.wake_ms;
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		rd->nparked--;
		rd->parked_bytes -= job_bytes(j);
		reader_unwatch(rd, j);
		if (rd->stop)
			j->park.final = 1;
		reader_push(rd, j);
		woken++;
	}
	/* Owners in other workers say "done" only through the board. */
	if (rd->nparked > 0 && now + PARK_TICK_MS < next)
		next = now + PARK_TICK_MS;
	rd->park_next = rd->nparked > 0 ? next : INT64_MAX;
	board_parked(rd->nparked);
	return woken;
}

/* reader_unpark_locked under the lock; returns the next look planned. */
static int64_t
reader_unpark(struct reader *rd, int64_t now)
{
	size_t	 woken;
	int64_t	 next;

	pthread_mutex_lock(&rd->mu);
	woken = reader_unpark_locked(rd, now);
	next = rd->park_next;
	pthread_mutex_unlock(&rd->mu);
	reader_wake(rd, woken);
	return next;
}

/* Frees what a large quick answer left in b: the reader keeps little. */
static void
reader_trim(struct buf *b)
{
	if (b->cap > READER_SMALL)
		buf_free(b);
	else
		buf_reset(b);
}

/*
 * Offers j, whole, to the quick answer.  If it answers, the records go
 * out in one send; what the web server cannot take at once is left to a
 * request thread (j->unsent), so the reader never blocks.  1 if j was
 * answered (or is gone), 0 if a request thread is to serve it.
 */
static int
reader_quick(struct reader *rd, struct job *j, int64_t now)
{
	struct reply	 o = { .write = reader_collect, .arg = &rd->http };
	struct buf	*rest = &j->fc.reply;
	struct board_slot *me = board_me();
	ssize_t		 w;

	/* What a quick answer cannot send at once waits in the ready
	 * queue: once it holds max_pending_body with what is still
	 * arriving, replays go to request threads, which wait for the web
	 * server to read instead of holding copies. */
	if (rd->quick == NULL || reader_held(rd) > rd->max_pending ||
	    !rd->quick(rd->quick_arg, j, &o))
		return 0;
	if (o.failed || fcgi_stream(&rd->out, FCGI_STDOUT, j->fc.id,
	    rd->http.p, rd->http.len) != IDEM_OK ||
	    fcgi_end(&rd->out, j->fc.id, 0, FCGI_REQUEST_COMPLETE) != IDEM_OK)
		goto out;	/* out of memory: the connection goes */
	w = send(j->fd, rd->out.p, rd->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		w = 0;
	if (w < 0)
		goto out;	/* the web server went away */
	if ((size_t)w < rd->out.len) {
		/* A request thread waits for the web server to read the
		 * rest (and counts the request served). */
		buf_reset(rest);
		rest->max = rd->out.len;
		if (buf_add(rest, rd->out.p + w, rd->out.len - (size_t)w) !=
		    IDEM_OK)
			goto out;
		j->unsent = rest->len;
		reader_ready(rd, j);
		j = NULL;
		goto out;
	}
	if (me != NULL)
		atomic_fetch_add(&me->served, 1);
	if (j->fc.keep_conn && !j->fc.body_over) {
		fconn_reset(&j->fc);
		reader_watch(rd, j, now, 1);
		j = NULL;
	}
out:
	job_close(j);
	reader_trim(&rd->http);
	reader_trim(&rd->out);
	return 1;
}

/* Reads what j has; hands it over once whole, closes it on error. */
static void
reader_input(struct reader *rd, struct job *j, int64_t now)
{
	unsigned char	 buf[65536];
	ssize_t		 k;
	size_t		 used;
	enum idem_err	 er;
	int		 reads = 0;

	for (;;) {
		/* A fast sender (a long body, or one read and dropped past
		 * max_body) yields after READER_READS_MAX reads: the epoll
		 * set (level-triggered) brings it back after the others. */
		if (reads++ == READER_READS_MAX) {
			if (reader_poll(rd, j) != 0) {
				reader_forget(rd, j);
				job_close(j);
			}
			return;
		}
		k = read(j->fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			if (reader_poll(rd, j) != 0) {
				reader_forget(rd, j);
				job_close(j);
			}
			return;
		}
		if (k <= 0) {
			/* The web server went away before the request was
			 * whole: nobody to answer. */
			reader_forget(rd, j);
			job_close(j);
			return;
		}
		if (!j->started) {
			j->started = 1;
			/* A drain gives each one client_timeout from its
			 * start, not from its first byte. */
			if (!rd->draining)
				j->deadline_ms = now + rd->timeout_ms;
		}
		er = fconn_feed(&j->fc, buf, (size_t)k, &used);
		/* A refused one's answer is out and its side shut: what the
		 * protocol would say now (a GET_VALUES) goes unsaid. */
		if (j->refused)
			buf_reset(&j->fc.reply);
		else if (reader_reply(j) != 0)
			er = IDEM_EINVAL;
		if (er == IDEM_EAGAIN) {
			reader_account(rd, j);
			continue;
		}
		reader_forget(rd, j);
		if (er == IDEM_EIO) {	/* ended, as the protocol says */
			j->linger = 1;
			job_close(j);
			return;
		}
		if (er != IDEM_OK) {
			log_warn("invalid FastCGI input; connection closed");
			job_close(j);
			return;
		}
		if (used != (size_t)k) {
			/* Bytes past a whole request (another request's
			 * BEGIN: multiplexing we said we do not do) cost
			 * that whole request nothing: it is answered, and
			 * the connection then closes, unread. */
			if (!j->fc.body_over)
				log_warn("FastCGI records past a whole "
				    "request; the connection closes after "
				    "its answer");
			j->fc.keep_conn = 0;
			j->linger = 1;
		}
		if (j->refused) {	/* answered: its body is read */
			job_close(j);
			return;
		}
		if (j->fc.body_over)
			j->linger = 1;	/* the rest of the body is unread */
		if (!reader_quick(rd, j, now))
			reader_ready(rd, j);
		return;
	}
}

/* Cuts off connections past their deadline. */
static int64_t
reader_expire(struct reader *rd, int64_t now)
{
	int64_t		 next = now + READER_TICK_MS;
	size_t		 i;
	struct job	*j;

	for (i = 0; i < rd->nconns;) {
		j = rd->conns[i];
		if (now < j->deadline_ms) {
			if (j->deadline_ms < next)
				next = j->deadline_ms;
			i++;
			continue;
		}
		/* A refused one was answered and said so: its body's
		 * end is what did not come. */
		if (!j->refused && (j->started || !j->kept))
			log_warn("FastCGI request not received within "
			    "client_timeout (%lld ms); connection closed",
			    (long long)rd->timeout_ms);
		reader_forget(rd, j);
		job_close(j);
	}
	return next;
}

/* Takes back the connections request threads returned for reuse. */
static void
reader_take_back(struct reader *rd, int64_t now)
{
	struct job	*j, *next;

	pthread_mutex_lock(&rd->mu);
	j = rd->back;
	rd->back = NULL;
	pthread_mutex_unlock(&rd->mu);
	for (; j != NULL; j = next) {
		next = j->next;
		reader_watch(rd, j, now, 1);
	}
}

/*
 * Closes kept connections idle between requests (draining): the web
 * server opens a new one for its next request.  One with bytes waiting
 * is not idle: it is read (it is polled) like the others.  A request the
 * web server writes after this look meets a closed connection, as with
 * any server closing an idle kept connection.
 */
static void
reader_close_idle(struct reader *rd)
{
	size_t		 i;
	struct job	*j;
	char		 c;

	for (i = 0; i < rd->nconns;) {
		j = rd->conns[i];
		if (!j->kept || j->started ||
		    recv(j->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
			i++;
			continue;
		}
		reader_forget(rd, j);
		job_close(j);
	}
}

/*
 * Starts a drain: the listen socket leaves the epoll set, and what waits
 * on it now is accepted (up to READER_CONNS_MAX being read), to be read
 * to the end here.  The workers share the socket with EPOLLEXCLUSIVE, so
 * the kernel wakes one of them per connection; had this reader been the
 * one woken and then gone, the connection would wait in the backlog until
 * another arrived.  Every connection has client_timeout from now at most:
 * the drain ends within it.
 */
static void
reader_drain_start(struct reader *rd, int64_t now)
{
	size_t	 i;

	rd->draining = 1;
	board_accepting(0);
	rd->drain_end_ms = now + rd->timeout_ms;
	(void)epoll_ctl(rd->ep, EPOLL_CTL_DEL, rd->lfd, NULL);
	if (rd->nudge >= 0)
		(void)epoll_ctl(rd->ep, EPOLL_CTL_DEL, rd->nudge, NULL);
	for (i = 0; i < READER_CONNS_MAX / 64 &&
	    rd->nconns < READER_CONNS_MAX && reader_accept(rd, now); i++)
		;
	for (i = 0; i < rd->nconns; i++)
		if (rd->conns[i]->deadline_ms > rd->drain_end_ms)
			rd->conns[i]->deadline_ms = rd->drain_end_ms;
}

static void *
reader_main(void *arg)
{
	struct reader		*rd = arg;
	struct epoll_event	 evs[64];
	int64_t			 now, next, park_next;
	uint64_t		 v;
	int			 n, i, stop, poked;

	next = clock_now_ms() + READER_TICK_MS;
	for (;;) {
		now = clock_now_ms();
		n = epoll_wait(rd->ep, evs, 64, next > now ?
		    (int)(next - now) : 0);
		/* reader_stop plans park_next too: read both locked. */
		pthread_mutex_lock(&rd->mu);
		stop = rd->stop;
		park_next = rd->park_next;
		pthread_mutex_unlock(&rd->mu);
		now = clock_now_ms();
		if (stop == READER_HALT)
			break;
		if (stop == READER_DRAIN && !rd->draining)
			reader_drain_start(rd, now);
		poked = 0;
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &rd->lfd) {
				if (!rd->draining)
					(void)reader_accept(rd, now);
			} else if (evs[i].data.ptr == &rd->nudge) {
				/* Another worker had no idle thread. */
				(void)!read(rd->nudge, &v, sizeof(v));
				if (!rd->draining && rd->accept_at == 0)
					(void)reader_accept(rd, now);
			} else if (evs[i].data.ptr == &rd->evfd) {
				(void)!read(rd->evfd, &v, sizeof(v));
				reader_take_back(rd, now);
				poked = 1;
			} else if (evs[i].data.ptr == &rd->pep) {
				if (reader_hangups(rd))
					poked = 1;
			} else
				reader_input(rd, evs[i].data.ptr, now);
		}
		if (poked || now >= park_next)
			park_next = reader_unpark(rd, now);
		next = reader_expire(rd, now);
		next = reader_accept_resume(rd, now, next);
		if (rd->draining) {
			/* Returned before the stop, its poke maybe not yet
			 * seen: read, not left until the threads end. */
			reader_take_back(rd, now);
			reader_close_idle(rd);
			if (rd->nconns == 0)
				break;
		}
		if (park_next < next)
			next = park_next;
	}
	pthread_mutex_lock(&rd->mu);
	rd->done = 1;
	pthread_cond_broadcast(&rd->cv);
	pthread_mutex_unlock(&rd->mu);
	return NULL;
}

enum idem_err
reader_new(const struct cfg *cfg, int listen_fd, const char *web_addrs,
    reader_quick_fn *quick, void *quick_arg, struct reader **out)
{
	struct reader		*rd;
	struct epoll_event	 ev;
	size_t			 i;
	int			 fl;

	if ((rd = calloc(1, sizeof(*rd))) == NULL)
		return IDEM_ENOMEM;
	rd->cfg = cfg;
	rd->web_addrs = web_addrs;
	rd->lfd = listen_fd;
	rd->timeout_ms = cfg->client_timeout_ms > 0 ? cfg->client_timeout_ms :
	    30000;
	/* The route is known only once params are in: read bodies up to
	 * the largest max_body; the request thread applies its route's. */
	rd->max_body = 0;
	for (i = 0; i < cfg->nroutes; i++)
		if (cfg->routes[i].max_body > rd->max_body)
			rd->max_body = cfg->routes[i].max_body;
	rd->max_body++;		/* one more byte tells "too large" */
	rd->max_pending = cfg->max_pending_body;
	rd->quick = quick;
	rd->quick_arg = quick_arg;
	rd->nudge = board_nudge_fd();
	rd->park_next = INT64_MAX;
	/* A cached answer is at most an eighth of the cache; its records
	 * add a header per 64 KiB. */
	buf_init(&rd->http, cfg->replay_cache + 4096);
	buf_init(&rd->out, 2 * (cfg->replay_cache + 4096));
	/* Bodies over 128K get memory of their own, handed back when freed.
	 * Left alone, glibc raises this threshold at the first such free
	 * and keeps later bodies in the heap: a burst of stalled uploads
	 * would stay resident after its connections went. */
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	pthread_mutex_init(&rd->mu, NULL);
	pthread_cond_init(&rd->cv, NULL);
	rd->ep = epoll_create1(EPOLL_CLOEXEC);
	rd->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rd->pep = epoll_create1(EPOLL_CLOEXEC);
	rd->conns = calloc(READER_CONNS_MAX, sizeof(*rd->conns));
	if (rd->ep < 0 || rd->evfd < 0 || rd->pep < 0 || rd->conns == NULL)
		goto fail;
	/* Shared with the other workers: each takes what it can. */
	if ((fl = fcntl(listen_fd, F_GETFL)) == -1 ||
	    fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) == -1)
		goto fail;
	if (reader_poll_shared(rd, &rd->lfd) != 0 ||
	    (rd->nudge >= 0 && reader_poll_shared(rd, &rd->nudge) != 0))
		goto fail;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &rd->evfd;
	if (epoll_ctl(rd->ep, EPOLL_CTL_ADD, rd->evfd, &ev) != 0)
		goto fail;
	ev.data.ptr = &rd->pep;
	if (epoll_ctl(rd->ep, EPOLL_CTL_ADD, rd->pep, &ev) != 0)
		goto fail;
	board_accepting(1);
	if (pthread_create(&rd->tid, NULL, reader_main, rd) != 0)
		goto fail;
	rd->started = 1;
	*out = rd;
	return IDEM_OK;
fail:
	log_err("cannot start the FastCGI reader: %s", strerror(errno));
	reader_free(rd);
	return IDEM_ESYS;
}

struct job *
reader_next(struct reader *rd)
{
	struct job	*j;

	pthread_mutex_lock(&rd->mu);
	rd->nidle++;
	while (rd->ready == NULL && !rd->done)
		pthread_cond_wait(&rd->cv, &rd->mu);
	rd->nidle--;
	j = rd->ready;
	if (j != NULL) {
		rd->ready = j->next;
		if (rd->ready == NULL)
			rd->ready_tail = NULL;
		rd->nready--;
		atomic_fetch_sub_explicit(&rd->queued, j->queued,
		    memory_order_relaxed);
		j->queued = 0;
		board_queued(rd->nready);
	}
	pthread_mutex_unlock(&rd->mu);
	return j;
}

void
reader_done(struct reader *rd, struct job *j, int reuse)
{
	pthread_mutex_lock(&rd->mu);
	if (!reuse || rd->stop) {
		pthread_mutex_unlock(&rd->mu);
		job_close(j);
		return;
	}
	fconn_reset(&j->fc);
	j->next = rd->back;
	rd->back = j;
	pthread_mutex_unlock(&rd->mu);
	reader_poke(rd);
}

int
reader_park(struct reader *rd, struct job *j)
{
	size_t	 n = job_bytes(j);

	pthread_mutex_lock(&rd->mu);
	/* Parked requests keep their bodies: under max_pending_body as
	 * requests still arriving are, small ones always. */
	if (rd->stop || rd->nparked >= READER_PARK_MAX ||
	    (n > READER_SMALL && rd->parked_bytes + n > rd->max_pending)) {
		pthread_mutex_unlock(&rd->mu);
		return -1;
	}
	j->park.want = 0;
	j->next = rd->parked;
	rd->parked = j;
	rd->nparked++;
	rd->parked_bytes += n;
	reader_watch_parked(rd, j);
	board_parked(rd->nparked);
	pthread_mutex_unlock(&rd->mu);
	/* The reader plans its next look with this one in. */
	reader_poke(rd);
	return 0;
}

void
reader_poke_parked(struct reader *rd)
{
	size_t	 n;

	pthread_mutex_lock(&rd->mu);
	n = rd->nparked;
	pthread_mutex_unlock(&rd->mu);
	if (n > 0)
		reader_poke(rd);
}

/* Raises rd->stop to how (READER_DRAIN, then READER_HALT); wakes the
 * reader thread and the request threads. */
static void
reader_halt(struct reader *rd, int how)
{
	pthread_mutex_lock(&rd->mu);
	if (rd->stop < how)
		rd->stop = how;
	/* Parked requests are answered now, by the threads still there. */
	(void)reader_unpark_locked(rd, clock_now_ms());
	pthread_cond_broadcast(&rd->cv);
	pthread_mutex_unlock(&rd->mu);
	if (rd->evfd >= 0)
		reader_poke(rd);
}

void
reader_stop(struct reader *rd)
{
	reader_halt(rd, READER_DRAIN);
}

void
reader_free(struct reader *rd)
{
	struct job	*j, *next;
	size_t		 i;

	if (rd == NULL)
		return;
	if (rd->started) {
		reader_halt(rd, READER_HALT);
		pthread_join(rd->tid, NULL);
	}
	for (i = 0; i < rd->nconns; i++)
		job_close(rd->conns[i]);
	for (j = rd->ready; j != NULL; j = next) {
		next = j->next;
		job_close(j);
	}
	for (j = rd->back; j != NULL; j = next) {
		next = j->next;
		job_close(j);
	}
	for (j = rd->parked; j != NULL; j = next) {
		next = j->next;
		job_close(j);
	}
	free(rd->conns);
	buf_free(&rd->http);
	buf_free(&rd->out);
	if (rd->ep >= 0)
		close(rd->ep);
	if (rd->evfd >= 0)
		close(rd->evfd);
	if (rd->pep >= 0)
		close(rd->pep);
	pthread_cond_destroy(&rd->cv);
	pthread_mutex_destroy(&rd->mu);
	free(rd);
}
