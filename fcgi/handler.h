/* Runs a route's handler (cgi, script, fastcgi) into a response sink. */
#ifndef IDEM_HANDLER_H
#define IDEM_HANDLER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "resp.h"

struct reply;
struct request;
struct route;

/*
 * Collects a handler's CGI output.  Until the head parses, bytes are kept
 * in raw.  Unbuffered (unprotected): the head and then the body stream
 * straight to out.  Buffered (protected): the body is kept up to max
 * bytes; past it the sink marks itself oversized and streams (head with
 * extra header lines, what it kept, then the rest).
 */
struct sink {
	int		 buffered;
	size_t		 max;		/* buffered: max_response */
	const char	*extra;		/* header lines added when streaming */
	int		 drop_idem;	/* unbuffered: the handler's own
					 * idempotency headers go too */
	const struct route *route;	/* if set: extra only on a status its
					 * key keeps (not one release_statuses
					 * frees: that answer is neither
					 * created nor kept) */
	struct reply	*out;
	const char	*tag;		/* the request's, for log lines */

	struct buf	 raw;		/* output before the head parsed */
	struct answer	 ans;		/* the head; buffered: the body too */
	int		 have_head;
	int		 streaming;	/* head went to the client */
	int		 oversized;
	int64_t		 clen;		/* Content-Length announced, or -1 */
	uint64_t	 got;		/* body bytes taken so far */
};

void sink_init(struct sink *s, int buffered, size_t max, const char *extra,
    struct reply *out);
void sink_free(struct sink *s);		/* NULL is a no-op */

/*
 * Feeds n bytes of handler output (the signature of cgi_exchange.out).
 * An error aborts the run and is logged here: IDEM_EHANDLER when the head
 * is invalid or too large (502), IDEM_ENOMEM when the body cannot be kept
 * (500).  A client that went away is never an error here.
 */
enum idem_err sink_feed(void *arg, const void *p, size_t n);

/* 1 when the body reached the Content-Length the head announced (the
 * answer is whole even if the handler goes on). */
int sink_complete(void *arg);

/* 1 when the handler's answer, now at its end, is whole: a head, and a
 * body that reached its Content-Length, announced none, or has none
 * whatever it says (204, 304, an answer to method HEAD). */
int sink_whole(const struct sink *s, const char *method);

/* What the owner of a claimed key adds to a run (fcgi/guard.c). */
struct run_hooks {
	/* Called every tick_ms (lease renewal; see cgi_exchange.tick). */
	int64_t		(*tick)(void *);
	void		 *tick_arg;
	int64_t		  tick_ms;
	uint64_t	  fence;	/* IDEMGATE_FENCE; 0: none */
	const char	 *key_id;	/* IDEMGATE_KEY_ID; NULL: none */
	uint64_t	  run;		/* IDEMGATE_RUN of a CGI run (the
					 * mark of what it leaves behind:
					 * lib/run/cgi_env.h); 0: none */
	pid_t		 *spawned;	/* set to the CGI program's pid, its
					 * group's id, once it started
					 * (NULL: not asked) */
	int		 *ended;	/* set to 1 when the run ended with
					 * its answer: a CGI program whose
					 * process group had ended (none
					 * lingers); never an upstream's */
	/*
	 * An upstream's run outlives the client's wait: at the route's
	 * timeout, overdue(overdue_arg) answers the client, and the run goes
	 * on until END_REQUEST or run_limit_ms from its start (see
	 * cgi_exchange.overdue).  Not used for CGI programs.
	 */
	void		(*overdue)(void *);
	void		 *overdue_arg;
	int64_t		  run_limit_ms;
	/* An upstream's END_REQUEST came: 1 to read its connection to the
	 * close, the run's end (see cgi_exchange.settle); settle_arg is
	 * overdue_arg.  Not used for CGI programs. */
	int		(*settle)(void *);
};

/*
 * Runs r's route handler with r's body and params, output into s, with
 * the owner's hooks h (NULL: an unprotected run).  Returns IDEM_OK when s
 * holds (or streamed) a complete answer with a valid head, else the error
 * to answer with (see problem_from_err): IDEM_ENOTFOUND / IDEM_EFORBIDDEN
 * (script lookup), IDEM_ETIMEOUT, IDEM_EHANDLER (bad output, crash,
 * cannot start, upstream down or refusing), IDEM_EBROKEN (an upstream
 * that may have run broke off without END_REQUEST, or ran past
 * run_limit), IDEM_ELEASE, IDEM_ENOMEM.  Logs what went wrong.
 */
enum idem_err handler_run(struct request *r, struct sink *s,
    const struct run_hooks *h);

#endif
