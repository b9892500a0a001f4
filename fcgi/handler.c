/* Runs a route's handler (cgi, script, fastcgi) into a response sink. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cgi.h"
#include "cgi_env.h"
#include "handler.h"
#include "log.h"
#include "request.h"
#include "upstream.h"

/* Output before the head parsed: the head limit plus one read's worth. */
#define SINK_RAW_MAX	(RESP_HEAD_MAX + 65536)

void
sink_init(struct sink *s, int buffered, size_t max, const char *extra,
    struct reply *out)
{
	memset(s, 0, sizeof(*s));
	s->buffered = buffered;
	s->max = max;
	s->extra = extra;
	s->out = out;
	s->clen = -1;
	buf_init(&s->raw, SINK_RAW_MAX);
	answer_init(&s->ans, RESP_HEAD_MAX, max);
}

void
sink_free(struct sink *s)
{
	if (s == NULL)
		return;
	buf_free(&s->raw);
	answer_free(&s->ans);
}

static void
sink_send_head(struct sink *s)
{
	int	 keeps = s->route == NULL ||
	    !cfg_releases(s->route, s->ans.status);

	reply_head(s->out, &s->ans, s->buffered && keeps ? s->extra : NULL);
	s->streaming = 1;
}

/*
 * IDEM_EIO when a pass-through answer has nobody to read it any more (the
 * web server closed its connection: the client went away), which stops
 * its run as the web server alone would; a kept answer's run goes on, to
 * be recorded, and so does one whose web server is only slow to read
 * (what it sends is dropped).
 */
static enum idem_err
sink_gone(const struct sink *s)
{
	return !s->buffered && s->out->gone ? IDEM_EIO : IDEM_OK;
}

/* Sends on what a pass-through answer holds back; a kept answer goes out
 * whole or not at all (retractable until then).  As sink_gone. */
static enum idem_err
sink_flush(struct sink *s)
{
	if (!s->streaming || s->buffered)
		return IDEM_OK;
	reply_flush(s->out);
	return sink_gone(s);
}

int
sink_complete(void *arg)
{
	const struct sink	*s = arg;

	return s->have_head && s->clen >= 0 && s->got >= (uint64_t)s->clen;
}

/* The handler's output cannot be an answer: logged once, here. */
static enum idem_err
sink_fail(const struct sink *s, enum idem_err er, const char *what)
{
	log_err("%s: %s", s->tag != NULL ? s->tag : "handler", what);
	return er;
}

static enum idem_err
sink_body(struct sink *s, const char *p, size_t n)
{
	enum idem_err	 er;

	/* Past the announced length is not part of the answer. */
	if (s->clen >= 0 && s->got + n > (uint64_t)s->clen)
		n = (size_t)((uint64_t)s->clen - s->got);
	s->got += n;

	if (s->streaming) {
		reply_bytes(s->out, p, n);
		return sink_gone(s);
	}
	if (n == 0)
		return IDEM_OK;
	er = buf_add(&s->ans.body, p, n);
	if (er == IDEM_ENOMEM)
		return sink_fail(s, er, "out of memory for the answer");
	if (er != IDEM_ETOOBIG)
		return er;
	/* Too large to keep: the client gets it once, streamed. */
	s->oversized = 1;
	sink_send_head(s);
	reply_bytes(s->out, s->ans.body.p, s->ans.body.len);
	reply_bytes(s->out, p, n);
	buf_free(&s->ans.body);
	return IDEM_OK;
}

enum idem_err
sink_feed(void *arg, const void *p, size_t n)
{
	struct sink	*s = arg;
	const char	*why = NULL;
	enum idem_err	 er;
	size_t		 used;

	if (s->have_head)
		return sink_body(s, p, n);
	if (buf_add(&s->raw, p, n) != IDEM_OK)
		return sink_fail(s, IDEM_EHANDLER, "the handler's header "
		    "block is too large");
	er = resp_parse_cgi(s->raw.p, s->raw.len, &s->ans, &used, &why);
	if (er == IDEM_EAGAIN)
		return IDEM_OK;
	if (er != IDEM_OK) {
		log_err("%s: the handler's header block is not valid: %s",
		    s->tag != NULL ? s->tag : "handler",
		    why != NULL ? why : "unreadable");
		return IDEM_EHANDLER;
	}
	if (why != NULL)
		log_warn("%s: %s", s->tag != NULL ? s->tag : "handler", why);
	s->have_head = 1;
	s->clen = resp_content_length(&s->ans.hdrs);
	if (s->buffered) {
		/* A kept answer is replayed as it is: a Content-Length that
		 * is not one number ("3, 3", or 5 and 100 on two lines) goes,
		 * and the web server frames the body, rather than a client
		 * failing on it at every replay. */
		if (s->clen < 0)
			resp_hdr_remove(&s->ans.hdrs, "Content-Length");
		if (resp_drop_idem_hdrs(&s->ans.hdrs) != IDEM_OK)
			return sink_fail(s, IDEM_ENOMEM, "out of memory");
	} else {
		/* RFC 3875 6.3.4: a Transfer-Encoding passed on has the web
		 * server decode a body that is not encoded (lighttpd then
		 * sends none).  The other hop-by-hop lines go on: a 426's
		 * Upgrade, a 407's Proxy-Authenticate are the client's. */
		resp_hdr_remove(&s->ans.hdrs, "Transfer-Encoding");
		if (s->drop_idem)
			resp_drop_idem_names(&s->ans.hdrs);
		sink_send_head(s);
	}
	er = sink_body(s, s->raw.p + used, s->raw.len - used);
	buf_free(&s->raw);
	return er;
}

/*
 * One handler run, whatever its protocol: the request, its sink and the
 * guard's tick, what the backend is given (program, env, exchange) and
 * what it says of the run's end.
 */
struct run_ctx {
	struct request		*r;
	struct sink		*s;
	const struct run_hooks	*h;		/* NULL: unprotected */

	const char		*program;	/* CGI: what runs; else NULL */
	char			**env;
	struct cgi_exchange	 ex;

	struct cgi_status	 st;		/* CGI: how the program ended */
	int			 app_status;	/* FastCGI: END_REQUEST's */
};

/*
 * A handler protocol, in the spirit of lighttpd's gw_backend: run_backend()
 * does what every protocol shares, a backend only speaks its own.
 */
struct backend {
	const char	*env_what;	/* what a failed cgi_env_build()
					 * missed */
	int		 outlives;	/* its run goes on when we stop
					 * reading */
	/* Runs rc's handler.  Its failures are logged there, where they
	 * happen (the sink's, in sink_feed). */
	enum idem_err	(*exec)(struct run_ctx *rc);
	/* After exec() returned IDEM_OK: the run's verdict, logged. */
	enum idem_err	(*verdict)(const struct run_ctx *rc);
};

static enum idem_err
run_out(void *arg, const void *p, size_t n)
{
	struct run_ctx	*rc = arg;

	return sink_feed(rc->s, p, n);
}

static int
run_complete(void *arg)
{
	struct run_ctx	*rc = arg;

	return sink_complete(rc->s);
}

/* ex.flush on a pass-through run: what the handler wrote goes on. */
static enum idem_err
run_flush(void *arg)
{
	struct run_ctx	*rc = arg;

	return sink_flush(rc->s);
}

static int64_t
run_tick(void *arg)
{
	struct run_ctx	*rc = arg;

	return rc->h->tick(rc->h->tick_arg);
}

static void
run_overdue(void *arg)
{
	struct run_ctx	*rc = arg;

	rc->h->overdue(rc->h->overdue_arg);
}

static int
run_settle(void *arg)
{
	struct run_ctx	*rc = arg;

	return rc->h->settle(rc->h->overdue_arg);
}

/* The exchange both kinds of handler share: body in, answer out; the
 * owner's hooks (overdue only for a run that outlives our reading it:
 * an upstream's). */
static void
exchange_fill(struct run_ctx *rc, int outlives)
{
	struct cgi_exchange	*ex = &rc->ex;
	const struct request	*r = rc->r;
	const struct run_hooks	*h = rc->h;

	ex->body = r->body.p;
	ex->bodylen = r->body.len;
	ex->timeout_ms = r->route->timeout_ms;
	ex->tag = r->tag;
	ex->out = run_out;
	ex->complete = run_complete;
	ex->arg = rc;
	if (h == NULL) {
		/* Nothing kept: the answer streams as it comes. */
		ex->flush = run_flush;
		return;
	}
	ex->tick = h->tick != NULL ? run_tick : NULL;
	ex->tick_ms = h->tick_ms;
	if (outlives && h->overdue != NULL) {
		ex->overdue = run_overdue;
		ex->run_limit_ms = h->run_limit_ms;
		if (h->settle != NULL)
			ex->settle = run_settle;
	}
}

/* cgi_run.started: the program runs (the owner's run_hooks.spawned). */
static void
run_started(pid_t pid, void *arg)
{
	*(pid_t *)arg = pid;
}

static enum idem_err
backend_cgi_exec(struct run_ctx *rc)
{
	struct cgi_run	 run;

	memset(&run, 0, sizeof(run));
	run.program = rc->program;
	run.env = rc->env;
	run.linger = rc->r->ctx->linger;
	run.run = rc->h != NULL ? rc->h->run : 0;
	run.ex = rc->ex;
	if (rc->h != NULL && rc->h->spawned != NULL) {
		run.started = run_started;
		run.started_arg = rc->h->spawned;
	}
	return cgi_exec(&run, &rc->st);
}

static enum idem_err
backend_cgi_verdict(const struct run_ctx *rc)
{
	const char	*tag = rc->r->tag;

	/* Died by a signal before its answer was whole: a crash. */
	if (rc->st.signo != 0 && !sink_complete(rc->s)) {
		log_err("%s: handler killed by signal %d", tag, rc->st.signo);
		return IDEM_EHANDLER;
	}
	if (rc->st.exited && rc->st.exit_code != 0)
		log_warn("%s: handler exited with status %d", tag,
		    rc->st.exit_code);
	return IDEM_OK;
}

static enum idem_err
backend_fcgi_exec(struct run_ctx *rc)
{
	struct upstream_req	 ur;

	memset(&ur, 0, sizeof(ur));
	ur.addr = rc->r->route->upstream;
	ur.params = rc->env;
	ur.ex = rc->ex;
	return upstream_exec(&ur, &rc->app_status);
}

static enum idem_err
backend_fcgi_verdict(const struct run_ctx *rc)
{
	if (rc->app_status != 0)
		log_warn("%s: upstream app status %d", rc->r->tag,
		    rc->app_status);
	return IDEM_OK;
}

static const struct backend backend_cgi = {
	"CGI environment", 0, backend_cgi_exec, backend_cgi_verdict
};

static const struct backend backend_fcgi = {
	"FastCGI params", 1, backend_fcgi_exec, backend_fcgi_verdict
};

/*
 * Runs rc's request on be: its environment (SCRIPT_FILENAME=program for
 * a CGI program), the exchange, the run, and the one mapping of how it
 * ended to what handler_run() returns.
 */
static enum idem_err
run_backend(const struct backend *be, struct run_ctx *rc)
{
	struct request	*r = rc->r;
	struct cgi_idem	 idem = { 0, 0, NULL };
	enum idem_err	 er;

	if (rc->h != NULL) {
		idem.fence = rc->h->fence;
		idem.run = rc->h->run;
		idem.key_id = rc->h->key_id;
	}
	if (be == &backend_cgi)
		er = cgi_env_build(r->params, rc->program, r->body.len,
		    !r->had_length && r->body.len > 0, &idem, &rc->env);
	else
		er = cgi_params_build(r->params, r->body.len,
		    !r->had_length && r->body.len > 0, &idem, &rc->env);
	if (er != IDEM_OK) {
		log_err("%s: cannot build %s: %s", r->tag, be->env_what,
		    idem_strerror(er));
		return er == IDEM_ENOMEM ? er : IDEM_EHANDLER;
	}
	exchange_fill(rc, be->outlives);
	er = be->exec(rc);
	cgi_env_free(rc->env);
	rc->env = NULL;
	/* Stopped for it (an upstream's run says EBROKEN), unless its
	 * timeout came first. */
	if (er != IDEM_OK && er != IDEM_ETIMEOUT && rc->h == NULL &&
	    rc->s->out->gone) {
		log_info("%s: the client went away; handler stopped", r->tag);
		return IDEM_EIO;
	}
	/* Each failure was logged where it happened (the runner, the
	 * sink); the guard says why a lease was lost. */
	if (er == IDEM_ETIMEOUT || er == IDEM_ELEASE || er == IDEM_EBROKEN)
		return er;
	if (er != IDEM_OK)
		return er == IDEM_ENOMEM ? er : IDEM_EHANDLER;
	if (rc->h != NULL && rc->h->ended != NULL && be == &backend_cgi &&
	    !rc->st.lingering)
		*rc->h->ended = 1;
	return be->verdict(rc);
}

int
sink_whole(const struct sink *s, const char *method)
{
	/* HEAD, 204 and 304 answers announce a length they carry none of. */
	return s->have_head && (s->clen < 0 || s->got >= (uint64_t)s->clen ||
	    s->ans.status == 204 || s->ans.status == 304 ||
	    (method != NULL && strcmp(method, "HEAD") == 0));
}

enum idem_err
handler_run(struct request *r, struct sink *s, const struct run_hooks *h)
{
	struct run_ctx	 rc;
	enum idem_err	 er;

	memset(&rc, 0, sizeof(rc));
	rc.r = r;
	rc.s = s;
	s->tag = r->tag;
	rc.h = h;
	switch (r->route->handler) {
	case HANDLER_CGI:
		rc.program = r->route->program;
		er = run_backend(&backend_cgi, &rc);
		break;
	case HANDLER_SCRIPT:
		/* route_pick() resolved it, under this route's script_root. */
		if (r->script == NULL)
			return r->script_err != IDEM_OK ? r->script_err :
			    IDEM_ENOTFOUND;
		rc.program = r->script;
		er = run_backend(&backend_cgi, &rc);
		break;
	case HANDLER_FASTCGI:
		er = run_backend(&backend_fcgi, &rc);
		break;
	default:
		log_err("%s: route %s has no handler", r->tag,
		    r->route->prefix);
		return IDEM_EHANDLER;
	}
	/* An app we cannot stop that said something did run (its work
	 * too, maybe): broken, never run again, as when its answer is found
	 * invalid while it comes (run_backend); one that said nothing
	 * failed, as a CGI that prints nothing. */
	if (er == IDEM_OK && !s->have_head) {
		log_err("%s: handler ended without a complete header block",
		    r->tag);
		er = r->route->handler == HANDLER_FASTCGI && s->raw.len > 0 ?
		    IDEM_EBROKEN : IDEM_EHANDLER;
	}
	/* Fewer bytes than announced: the web server would wait for the
	 * rest, and so would every replay's client; one that frames the
	 * body itself (Apache chunks it) would end it cleanly, short.  The
	 * run did happen (its work too, maybe): broken off, never run
	 * again; unless the handler itself said it failed with a status the
	 * route releases.  An answer already streaming is broken off too. */
	if (er == IDEM_OK && s->have_head && !sink_whole(s, r->method)) {
		log_err("%s: handler ended its body after %llu of the %lld "
		    "bytes its Content-Length announced", r->tag,
		    (unsigned long long)s->got, (long long)s->clen);
		er = cfg_releases(r->route, s->ans.status) ? IDEM_EHANDLER :
		    IDEM_EBROKEN;
	}
	return er;
}
