/* One FastCGI request: params, route, body, then the guard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fconn.h"
#include "fout.h"
#include "guard.h"
#include "log.h"
#include "params.h"
#include "path.h"
#include "reader.h"
#include "request.h"
#include "route.h"
#include "status.h"

/* How the body the reader collected fits the route. */
enum body_fit {
	BODY_WHOLE,		/* taken into the request */
	BODY_TOO_LARGE,		/* past max_body: 413 */
	BODY_SHORT,		/* less than CONTENT_LENGTH: no answer */
	BODY_LONG,		/* more than CONTENT_LENGTH: 400 */
	BODY_BAD_LENGTH,	/* CONTENT_LENGTH no length: 400 */
};

/* What request_admit left to do. */
enum admit {
	ADMIT_GUARD,		/* r is ready for the guard */
	ADMIT_ANSWERED,		/* the gateway answered itself */
	ADMIT_NO_ANSWER,	/* none possible (the body was cut short) */
};

/*
 * How the body the reader collected fits the route, CONTENT_LENGTH
 * (*want, when given) and max_body; sets r->had_length.  Moves nothing.
 */
static enum body_fit
request_body_fit(struct request *r, const struct job *j, size_t *want)
{
	const char	*cl;

	*want = 0;
	cl = request_param(r->envp, "CONTENT_LENGTH");
	if (request_content_length(cl, want) == IDEM_OK) {
		r->had_length = 1;
		if (*want > r->route->max_body)
			return BODY_TOO_LARGE;
	} else if (cl != NULL && *cl != '\0')
		return BODY_BAD_LENGTH;
	if (j->fc.body_over || j->fc.body.len > r->route->max_body)
		return BODY_TOO_LARGE;
	if (r->had_length && j->fc.body.len < *want)
		return BODY_SHORT;
	if (r->had_length && j->fc.body.len > *want)
		return BODY_LONG;
	return BODY_WHOLE;
}

/*
 * Takes the body the reader collected, under the route's max_body.
 * BODY_SHORT when it is shorter than CONTENT_LENGTH said (the client went
 * away mid-body: no answer possible); BODY_LONG when longer (a web server
 * that lies, a crafted record: which length the handler would read is
 * anyone's guess), and BODY_BAD_LENGTH when CONTENT_LENGTH is given but
 * not digits alone ("3abc", "-1", "0x5": PHP reads 3, a CGI may read
 * anything) for the same reason.
 */
static enum body_fit
request_take_body(struct request *r, struct job *j)
{
	enum body_fit	 fit;
	size_t		 want;

	if ((fit = request_body_fit(r, j, &want)) == BODY_SHORT ||
	    fit == BODY_LONG)
		log_warn("%s: body of %zu bytes where CONTENT_LENGTH says %zu: "
		    "%s", r->tag, j->fc.body.len, want, j->fc.body.len < want ?
		    "cut short" : "longer than announced");
	if (fit == BODY_BAD_LENGTH)
		log_warn("%s: CONTENT_LENGTH is not a length (digits only)",
		    r->tag);
	if (fit != BODY_WHOLE)
		return fit;
	/* The body moves into the request (no copy). */
	r->body = j->fc.body;
	r->body.max = r->route->max_body;
	buf_init(&j->fc.body, 0);
	return BODY_WHOLE;
}

/*
 * Reads what r needs from its params (envp: borrowed for r's life):
 * method, query, content type, normalized path and the log tag.
 * IDEM_ENOMEM.
 */
static enum idem_err
request_fill(struct request *r, char **envp)
{
	char	*raw;

	r->envp = envp;
	r->method = request_param(r->envp, "REQUEST_METHOD");
	if (r->method == NULL || *r->method == '\0')
		r->method = "GET";
	r->query = request_param(r->envp, "QUERY_STRING");
	r->ctype = request_param(r->envp, "CONTENT_TYPE");
	if ((raw = request_path(r->envp)) == NULL ||
	    (r->path = path_normalize(raw, strlen(raw))) == NULL) {
		free(raw);
		return IDEM_ENOMEM;
	}
	free(raw);
	snprintf(r->tag, sizeof(r->tag), "%.15s %.70s", r->method, r->path);
	return IDEM_OK;
}

/*
 * Everything before the guard: the gateway's own answers (out of memory,
 * params too large, the status page, no route, body too large) go out
 * here.
 */
static enum admit
request_admit(struct gw_ctx *ctx, struct request *r, char **envp,
    struct job *j)
{
	enum body_fit	 fit;

	if (request_fill(r, envp) != IDEM_OK) {
		log_err("out of memory");
		reply_problem(r->out, PROB_INTERNAL, 0, 0, NULL);
		return ADMIT_ANSWERED;
	}
	if (request_params_size(r->envp) > ctx->cfg->max_params) {
		log_warn("%s: params over %zu bytes", r->tag,
		    ctx->cfg->max_params);
		reply_problem(r->out, PROB_HEADERS_TOO_LARGE, 0, 0, NULL);
		return ADMIT_ANSWERED;
	}
	/* The status page is the gateway's own: no route, no key. */
	if (ctx->cfg->status_path != NULL &&
	    strcmp(r->path, ctx->cfg->status_path) == 0) {
		status_serve(r->out, r->method, r->query, ctx->st);
		return ADMIT_ANSWERED;
	}
	route_pick(ctx->cfg, r);
	if (r->route == NULL) {
		log_info("%s: no route", r->tag);
		reply_problem(r->out, PROB_NOT_FOUND, 0, 0, NULL);
		return ADMIT_ANSWERED;
	}
	if ((r->params = request_params_filter(r->envp,
	    (char *const *)r->script_env)) == NULL) {
		log_err("%s: out of memory", r->tag);
		reply_problem(r->out, PROB_INTERNAL, 0, 0, NULL);
		return ADMIT_ANSWERED;
	}
	if ((fit = request_take_body(r, j)) == BODY_TOO_LARGE) {
		log_warn("%s: body over %zu bytes", r->tag,
		    r->route->max_body);
		reply_problem(r->out, PROB_BODY_TOO_LARGE, 0, 0, NULL);
		return ADMIT_ANSWERED;
	}
	if (fit == BODY_LONG || fit == BODY_BAD_LENGTH) {
		reply_problem(r->out, PROB_BODY_MISMATCH, 0, 0, NULL);
		return ADMIT_ANSWERED;
	}
	return fit == BODY_SHORT ? ADMIT_NO_ANSWER : ADMIT_GUARD;
}

int
request_serve(struct gw_ctx *ctx, struct job *j)
{
	struct fout	*o;
	struct reply	 out;
	struct request	 r;
	char		**envp = NULL;
	enum admit	 ad;
	size_t		 i;
	int		 whole = 0;

	if (fout_new(j->fd, j->fc.id, ctx->cfg->client_timeout_ms > 0 ?
	    ctx->cfg->client_timeout_ms : 30000, &o) != IDEM_OK) {
		log_err("out of memory");
		return 0;
	}
	out = fout_reply(o);
	memset(&r, 0, sizeof(r));
	r.ctx = ctx;
	r.out = &out;
	buf_init(&r.body, 0);
	r.cache_missed = j->cache_missed;
	r.park = ctx->rd != NULL ? &j->park : NULL;
	j->park.want = 0;
	if (fconn_params(&j->fc, &envp) != IDEM_OK) {
		log_warn("invalid FastCGI params; connection closed");
		goto done;
	}
	if ((ad = request_admit(ctx, &r, envp, j)) == ADMIT_GUARD)
		guard_serve(&r);
	if (j->park.want) {
		/* Unanswered: the body goes back with the job; woken, it
		 * may find the answer in the replay cache (another waiter's
		 * replay put it there). */
		j->fc.body = r.body;
		buf_init(&r.body, 0);
		j->cache_missed = 0;
		goto done;
	}
	/* Hung up on while parked: nobody to answer. */
	if (ad != ADMIT_NO_ANSWER && !j->park.gone && !out.failed &&
	    !out.finished && fout_end(o) == IDEM_OK)
		whole = 1;
done:
	buf_free(&r.body);
	free(r.params);
	free(r.script);
	for (i = 0; r.script_env[i] != NULL; i++)
		free(r.script_env[i]);
	free(r.script_walk);
	free(r.path);
	free(envp);
	fout_free(o);
	/* The connection serves another request only after a whole one. */
	return whole && j->fc.keep_conn && !j->fc.body_over;
}

int
request_cached(struct gw_ctx *ctx, struct job *j, struct reply *out)
{
	struct request	 r;
	char		**envp = NULL;
	size_t		 want;
	int		 done = 0;

	memset(&r, 0, sizeof(r));
	r.ctx = ctx;
	r.out = out;
	if (fconn_params(&j->fc, &envp) != IDEM_OK ||
	    request_fill(&r, envp) != IDEM_OK ||
	    request_params_size(envp) > ctx->cfg->max_params)
		goto out;
	if (ctx->cfg->status_path != NULL &&
	    strcmp(r.path, ctx->cfg->status_path) == 0)
		goto out;
	/* A script route resolves its file (and may log why it refuses
	 * one): the request thread does that, once. */
	r.route = cfg_route(ctx->cfg, r.path);
	if (r.route == NULL || r.route->handler == HANDLER_SCRIPT ||
	    request_body_fit(&r, j, &want) != BODY_WHOLE ||
	    j->fc.body.len > (r.route->fingerprint == FPMODE_CANONICAL ?
	    QUICK_CANON_MAX : QUICK_BODY_MAX))
		goto out;
	r.body = j->fc.body;	/* borrowed: the job keeps it */
	done = guard_cached(&r);
	j->cache_missed = r.cache_missed;
out:
	free(r.path);
	free(envp);
	return done;
}

int
request_flush(struct gw_ctx *ctx, struct job *j)
{
	const struct buf	*b = &j->fc.reply;

	if (fout_send_all(j->fd, b->p + b->len - j->unsent, j->unsent,
	    ctx->cfg->client_timeout_ms > 0 ? ctx->cfg->client_timeout_ms :
	    30000) != IDEM_OK)
		return 0;
	return j->fc.keep_conn && !j->fc.body_over;
}
