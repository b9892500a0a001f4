/* Reads whole FastCGI requests off the listen socket for request threads. */
#ifndef IDEM_READER_H
#define IDEM_READER_H

#include <stdint.h>

#include "cfg.h"
#include "err.h"
#include "fconn.h"
#include "park.h"
#include "reply.h"

/*
 * One thread per worker accepts connections and reads them (epoll) until a
 * request is whole: params and body, under client_timeout from the first
 * byte and the config's limits.  Only then does a request thread take it,
 * so clients that trickle, however many, hold no request thread; one
 * that misses the deadline is cut off.  A crafted record costs only the
 * connection that carries it (fcgi/fconn.c).
 */
struct reader;

/* A request read whole, for one request thread. */
struct job {
	int		 fd;		/* the connection, non-blocking */
	struct fconn	 fc;		/* params, body, FastCGI id */
	int64_t		 deadline_ms;	/* while reading */
	int		 started;	/* a byte of this request came */
	int		 kept;		/* reused after a keep_conn request */
	int		 polled;	/* in the reader's epoll set */
	size_t		 held;		/* counted in the reader's pending */
	size_t		 queued;	/* counted in its queued bytes */
	int		 cache_missed;	/* the reader asked the replay
					 * cache: no hit */
	size_t		 unsent;	/* the reader's answer, all but
					 * these last bytes of fc.reply
					 * sent: a thread writes them */
	struct park	 park;		/* a waiter parked (fcgi/park.h) */
	int		 linger;	/* unread input may follow: drain
					 * it before closing */
	int		 refused;	/* over max_pending_body: its body
					 * is dropped as it comes, then 503 */
	struct job	*next;
};

/*
 * A request the reader may answer itself, from memory, before any request
 * thread sees it (fcgi/request.h: request_cached): 1 and the answer
 * written to out, or 0 and nothing written.  It must not block.
 */
typedef int reader_quick_fn(void *arg, struct job *j, struct reply *out);

/* Starts the reader on listen_fd (made non-blocking); web_addrs is
 * FCGI_WEB_SERVER_ADDRS or NULL; quick (or NULL) is asked about every
 * whole request first, with quick_arg.  All borrowed. */
enum idem_err reader_new(const struct cfg *cfg, int listen_fd,
    const char *web_addrs, reader_quick_fn *quick, void *quick_arg,
    struct reader **out);

/* Blocks until a request is whole (the caller owns the job until
 * reader_done) or the reader stopped (NULL). */
struct job *reader_next(struct reader *rd);

/* The request is answered: with reuse (FCGI_KEEP_CONN, answer whole) the
 * connection goes back to reading, else it is closed.  Frees j. */
void reader_done(struct reader *rd, struct job *j, int reuse);

/*
 * Parks j, a waiter (j->park.want: the guard found its key busy), until
 * park_due says it is to look again; then reader_next hands it to a
 * request thread again.  0, or -1 when it cannot be parked (the reader
 * stopped, too many are, or its body would take the bytes parked past
 * max_pending_body): the caller serves it with j->park.final.
 */
int reader_park(struct reader *rd, struct job *j);

/* A key this worker owned is done: parked requests, if there are any,
 * look now (a waiter parked after this looks when it parks). */
void reader_poke_parked(struct reader *rd);

/*
 * Stops accepting.  Connections accepted, and those waiting in the backlog
 * now, are read to the end (within client_timeout from now, or cut off)
 * and handed out; kept connections idle between requests are closed.
 * Parked requests are handed out at once, final.  reader_next returns
 * NULL once the reader thread is done and nothing is left to serve.
 */
void reader_stop(struct reader *rd);

/* Stops at once (no drain), closes every connection, frees.  NULL:
 * no-op. */
void reader_free(struct reader *rd);

#endif
