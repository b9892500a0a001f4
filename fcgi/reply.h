/* Writing an answer to the client: the last step, after guard and handler. */
#ifndef IDEM_REPLY_H
#define IDEM_REPLY_H

#include <stddef.h>

#include "answer.h"
#include "problem.h"

/*
 * Where the answer goes.  write returns 0 or -1 when the client is gone;
 * after a failure reply_* calls drop further bytes (failed stays 1), so a
 * protected run always finishes and is recorded.
 */
struct reply {
	/* 0; -1 when the client is gone; -2 (some writers) when it took
	 * nothing for the writer's timeout, gone or not. */
	int	(*write)(void *arg, const void *p, size_t n);
	/* Ends the exchange without its proper end (NULL: just stop
	 * writing), so the client sees a broken transfer. */
	void	(*abort)(void *arg);
	void	 *arg;
	int	  failed;
	size_t	  sent;		/* bytes accepted by write */
	/* Ends the exchange properly now (NULL: nothing to do); see
	 * reply_finish. */
	int	(*end)(void *arg);
	int	  finished;	/* the exchange is over: writes are dropped */
	/* Drops what was written but has not left yet: 0 when nothing had
	 * reached the client (NULL: cannot tell), else -1. */
	int	(*retract)(void *arg);
	/* Sends on what was written and waits in a buffer (NULL: nothing
	 * waits); as write. */
	int	(*flush)(void *arg);
	int	  gone;		/* a write or flush found the client gone
				 * (-1), not just slow */
};

/*
 * Breaks off an answer whose head already went out: the client must see a
 * broken transfer, never a short answer that looks whole.  Later reply_*
 * calls write nothing.
 */
void reply_abort(struct reply *o);

/*
 * Takes back an answer none of which has reached the client yet (it sits
 * in o's buffer): 1 and o is as new, ready for another answer; else 0
 * (some of it went out: only reply_abort is left).
 */
int reply_retract(struct reply *o);

/*
 * Ends the client's exchange with what was written so far, whole (a
 * gateway answer given before the run is over: the owner goes on reading
 * the handler and recording its answer).  Later reply_* calls write
 * nothing.
 */
void reply_finish(struct reply *o);

/* Sends on what o holds back, unless the client already went away. */
void reply_flush(struct reply *o);

/* Writes n bytes unless the client already went away. */
void reply_bytes(struct reply *o, const void *p, size_t n);

/* Writes a's head: "Status: N Reason\r\n", its header lines, extra
 * (header lines or NULL) and the blank line. */
void reply_head(struct reply *o, const struct answer *a, const char *extra);

/* Writes a whole: its head (with extra, as above) and its body. */
void reply_answer(struct reply *o, const struct answer *a, const char *extra);

/* Writes the problem+json answer for p (see problem_render); extra adds
 * header lines (NULL: none). */
void reply_problem(struct reply *o, enum problem p, int retry_after,
    int original_status, const char *extra);

/* The same with a detail of its own instead of p's (problem_render). */
void reply_problem_detail(struct reply *o, enum problem p, const char *detail);

#endif
