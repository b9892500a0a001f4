/* Writing an answer to the client: the last step, after guard and handler. */
#include <stdio.h>
#include <string.h>

#include "reply.h"

void
reply_bytes(struct reply *o, const void *p, size_t n)
{
	int	 r;

	if (o->failed || o->finished || n == 0)
		return;
	if ((r = o->write(o->arg, p, n)) != 0) {
		o->failed = 1;
		o->gone = r == -1;
		return;
	}
	o->sent += n;
}

void
reply_flush(struct reply *o)
{
	int	 r;

	if (o->failed || o->finished || o->flush == NULL)
		return;
	if ((r = o->flush(o->arg)) != 0) {
		o->failed = 1;
		o->gone = r == -1;
	}
}

void
reply_finish(struct reply *o)
{
	if (o->failed || o->finished)
		return;
	if (o->end != NULL && o->end(o->arg) != 0)
		o->failed = 1;
	o->finished = 1;
}

void
reply_abort(struct reply *o)
{
	if (o->abort != NULL)
		o->abort(o->arg);
	o->failed = 1;
}

int
reply_retract(struct reply *o)
{
	if (o->failed || o->finished || o->retract == NULL ||
	    o->retract(o->arg) != 0)
		return 0;
	o->sent = 0;
	return 1;
}

/*
 * 1 when hdrs begins with the handler's own status line for status
 * (resp_keep_reason: "Status: 201 Done\r\n"), which then goes out as the
 * status line.
 */
static int
reply_own_status(const struct buf *hdrs, int status)
{
	char	 line[16];
	int	 n;

	n = snprintf(line, sizeof(line), "Status: %03d ", status);
	return hdrs->len > (size_t)n && memcmp(hdrs->p, line, (size_t)n) == 0;
}

void
reply_head(struct reply *o, const struct answer *a, const char *extra)
{
	char		 line[80];
	const char	*reason;
	int		 n;

	if (!reply_own_status(&a->hdrs, a->status)) {
		/* A code without a registered phrase goes bare: the web
		 * server gives its own (never "208 " with an empty one). */
		reason = problem_reason(a->status);
		n = snprintf(line, sizeof(line), "Status: %d%s%s\r\n",
		    a->status, *reason != '\0' ? " " : "", reason);
		reply_bytes(o, line, (size_t)n);
	}
	reply_bytes(o, a->hdrs.p, a->hdrs.len);
	if (extra != NULL)
		reply_bytes(o, extra, strlen(extra));
	reply_bytes(o, "\r\n", 2);
}

void
reply_answer(struct reply *o, const struct answer *a, const char *extra)
{
	reply_head(o, a, extra);
	reply_bytes(o, a->body.p, a->body.len);
}

static void
reply_problem_as(struct reply *o, enum problem p, const char *detail,
    int retry_after, int original_status, const char *extra)
{
	struct answer	 a;

	answer_init(&a, 4096, 4096);
	if (problem_render(p, detail, retry_after, original_status, &a.hdrs,
	    &a.body) != IDEM_OK) {
		/* Out of memory: a bare status is still an answer. */
		buf_reset(&a.hdrs);
		buf_reset(&a.body);
	}
	a.status = problem_status(p);
	reply_answer(o, &a, extra);
	answer_free(&a);
}

void
reply_problem(struct reply *o, enum problem p, int retry_after,
    int original_status, const char *extra)
{
	reply_problem_as(o, p, NULL, retry_after, original_status, extra);
}

void
reply_problem_detail(struct reply *o, enum problem p, const char *detail)
{
	reply_problem_as(o, p, detail, 0, 0, NULL);
}
