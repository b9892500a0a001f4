/* Idempotency flow between route and handler: claim, run, record, replay. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "board.h"
#include "canon.h"
#include "cgi_env.h"
#include "clock.h"
#include "fp.h"
#include "path.h"
#include "guard.h"
#include "handler.h"
#include "lease.h"
#include "linger.h"
#include "store_hkey.h"
#include "log.h"
#include "once.h"
#include "params.h"
#include "proc.h"
#include "rand.h"
#include "park.h"
#include "rcache.h"
#include "reader.h"
#include "recorder.h"
#include "request.h"
#include "resp.h"
#include "stats.h"
#include "store.h"

#define HDR_CREATED	"Idempotency-Result: created\r\n"
#define HDR_REUSED	"Idempotent-Replayed: true\r\n"			\
			"Idempotency-Result: reused\r\n"
#define HDR_EXPIRES	"Idempotency-Expires: "
/* The extra header lines of a created or reused answer. */
#define GUARD_EXTRA_MAX	160
#define STORE_RETRY_S	5

enum idem_err
guard_header_param(const char *name, char *out, size_t outlen)
{
	size_t	 i, n = strlen(name);

	if (n + 6 > outlen)
		return IDEM_ETOOBIG;
	memcpy(out, "HTTP_", 5);
	for (i = 0; i < n; i++)
		out[5 + i] = name[i] == '-' ? '_' :
		    (char)toupper((unsigned char)name[i]);
	out[5 + n] = '\0';
	return IDEM_OK;
}




static void
count(struct request *r, enum stat_id id)
{
	if (r->ctx->stats != NULL)
		stats_add(r->ctx->stats, r->route->prefix, id, 1);
}

/*
 * Runs the handler without idempotency, streaming its answer.  ours: a
 * protected request run so (no key, or the store down and on_store_error
 * = pass): the handler's own Idempotent-Replayed, Idempotency-Result and
 * Idempotency-Expires are dropped, as on a kept answer, so that no answer
 * of this route claims a replay idemgate did not make.
 */
static void
guard_plain(struct request *r, int ours)
{
	struct sink	 s;
	enum idem_err	 er;

	sink_init(&s, 0, 0, NULL, r->out);
	s.drop_idem = ours;
	er = handler_run(r, &s, NULL);
	if (er != IDEM_OK) {
		/* Once the head is out, only a broken transfer tells the
		 * client that the rest is missing; a head still in our
		 * buffer is taken back for the gateway's answer. */
		if (s.streaming && !reply_retract(r->out))
			reply_abort(r->out);
		else
			reply_problem(r->out, problem_from_err(er), 0, 0, NULL);
	}
	sink_free(&s);
}





/* One protected request on its way through the guard. */
struct guarded {
	struct request	*r;
	struct idem_id	 id;
	char		 key[FP_KEY_MAX + 1];
	char		 lkey[40];	/* the key as logs show it */
	struct once	 o;
	uint64_t	 gen;		/* replay cache's, before the read */
	int		 owned;		/* the key is ours, on the board */
	uint64_t	 lockhash;	/* fp_lockhash of id.lockname */
	uint64_t	 run;		/* IDEMGATE_RUN of its CGI run */
	pid_t		 spawned;	/* ...which started a program: its
					 * pid, its group's id; 0 none */
	int		 ended;		/* ...which ended with its answer */
};

/* Where a step left the request: answered already, or to go on. */
enum guard_next {
	GUARD_ANSWERED,
	GUARD_GO_ON,
};

/*
 * The key g owned is done with (recorded, or given up): off the board,
 * and its waiters here, parked in any worker, look again (fcgi/park.h).
 */
static void
guard_disown(struct guarded *g)
{
	struct gw_ctx	*ctx = g->r->ctx;

	if (!g->owned)
		return;
	g->owned = 0;
	board_own(ctx->idx, 0);
	board_done(g->lockhash);
	if (ctx->rd != NULL)
		reader_poke_parked(ctx->rd);
}

/* Writes the outcome of the key g owns (lib/idem/once.h: once_record),
 * counting a refused answer kept as a tombstone. */
static void
guard_record(struct guarded *g, enum rec_op op, const struct answer *a)
{
	enum rec_op	 done;
	char		 mark[CGI_RUN_LEN];
	int		 n;

	/* Released, a retry may run at once: what this run left behind
	 * goes first, so the two never run side by side: its process
	 * group if it still lingers (a program running on after a whole
	 * answer whose status releases, a child in the background) with
	 * what left the group while its parent lives, then what still
	 * carries the run's mark.  (A run that timed out or crashed was
	 * ended so already.) */
	if (op == REC_RELEASE && g->run != 0 && g->spawned > 0) {
		n = linger_kill(g->r->ctx->linger, g->spawned);
		snprintf(mark, sizeof(mark), CGI_RUN_FMT,
		    (unsigned long long)g->run);
		if (proc_kill_env(mark) + n > 0)
			log_warn("%s: key %s: killed what its run left "
			    "running", g->r->tag, g->lkey);
	}
	/* A run known over keys its answer for its ttl alone. */
	g->o.c.run_over = g->ended;
	if (once_record(&g->o, op, a, &done) == IDEM_OK &&
	    op == REC_COMPLETE && done == REC_TOMBSTONE)
		count(g->r, STAT_TOMBSTONED);
	guard_disown(g);
}

/* The extra header lines of an answer: result and when the key may run
 * again (an HTTP-date). */
static void
guard_extra(char *out, size_t outlen, const char *result, int64_t expires_s)
{
	struct tm	 tm;
	time_t		 t = (time_t)expires_s;
	char		 date[64];

	if (expires_s <= 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm) ==
	    0) {
		snprintf(out, outlen, "%s", result);
		return;
	}
	snprintf(out, outlen, "%s" HDR_EXPIRES "%s\r\n", result, date);
}

/* Wall-clock now + us, in whole seconds rounded up: an HTTP-date has no
 * fraction. */
static int64_t
guard_expiry_s(int64_t us)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + us +
	    999999) / 1000000;
}

/*
 * The extra header lines of a created answer, and (returned) the second
 * its Idempotency-Expires names: ttl from now, rounded up; unless the run
 * is known to have ended with its answer (g->ended), or the run's
 * deadline (claimed at once_claimed_ms) if later, the end of time for an
 * unbounded run.  Passed on with the answer to the store, which ends the
 * key on that second or later (TTL_END in lib/store/store_sql.c), never
 * earlier.
 */
static int64_t
guard_created(const struct guarded *g, char *out, size_t outlen)
{
	int64_t	 s = guard_expiry_s(g->r->route->ttl_ms * 1000), run_s;

	if (!g->ended && g->id.run_ms < 0)
		s = ANSWER_END_OF_TIME;
	else if (!g->ended && (run_s = guard_expiry_s((g->id.run_ms -
	    (clock_now_ms() - once_claimed_ms(&g->o))) * 1000)) > s)
		s = run_s;
	guard_extra(out, outlen, HDR_CREATED, s);
	return s;
}

/* The handler gave no answer (er): ours is a problem.  An upstream that
 * may have done the work is never run again; a lost lease is never
 * stored (the next owner runs it), nor a status release_statuses frees. */
static void
guard_failed(struct guarded *g, enum idem_err er)
{
	struct request	*r = g->r;
	enum problem	 prob = problem_from_err(er);
	struct answer	 made;
	struct once_end	 e = { er, 1, 0 };
	char		 created[GUARD_EXTRA_MAX];

	answer_init(&made, 4096, 4096);
	made.status = problem_status(prob);
	/* A script the lookup refused (404, 403) never ran: nothing to
	 * keep, and a retry after a deploy finds the file. */
	e.released = cfg_releases(r->route, made.status) ||
	    er == IDEM_ENOTFOUND || er == IDEM_EFORBIDDEN;
	switch (once_outcome(&e)) {
	case REC_TOMBSTONE:
		count(r, STAT_TOMBSTONED);
		guard_record(g, REC_TOMBSTONE, &made);
		reply_problem(r->out, prob, 0, 0, NULL);
		break;
	case REC_RELEASE:
		/* The client need not wait for a store that may be gone: a
		 * retry meanwhile gets 409, never a run. */
		count(r, STAT_RELEASED);
		reply_problem(r->out, prob, er == IDEM_ELEASE ? STORE_RETRY_S :
		    0, 0, NULL);
		if (er == IDEM_ELEASE)
			reply_finish(r->out);
		guard_record(g, REC_RELEASE, NULL);
		break;
	default:
		/* store_5xx = yes. */
		if (problem_render(prob, NULL, 0, 0, &made.hdrs, &made.body) !=
		    IDEM_OK) {
			guard_record(g, REC_RELEASE, NULL);
			reply_problem(r->out, PROB_INTERNAL, 0, 0, NULL);
			break;
		}
		count(r, STAT_CREATED);
		made.expires_s = guard_created(g, created, sizeof(created));
		guard_record(g, REC_COMPLETE, &made);
		reply_answer(r->out, &made, created);
		break;
	}
	answer_free(&made);
}

/*
 * The answer was too large to keep: the head and part of the body went
 * out, or are on their way.  Broken off, it must look broken, and the key
 * is never run again; whole, it is run again only for a failure a retry
 * may repeat.  Broken off before any of it left (all still in our
 * buffer), it is taken back: a failure like any other (a timeout's 504,
 * the key released).
 */
static void
guard_streamed(struct guarded *g, struct sink *s, enum idem_err er)
{
	const struct once_end	 e = { er, 0,
	    cfg_releases(g->r->route, s->ans.status) };
	enum rec_op		 op = once_outcome(&e);

	if (er != IDEM_OK) {
		if (reply_retract(g->r->out)) {
			guard_failed(g, er);
			return;
		}
		reply_abort(g->r->out);
	}
	count(g->r, once_stat(op));
	guard_record(g, op, op == REC_RELEASE ? NULL : &s->ans);
}

/* The handler answered (whole, kept): it is delivered all the same, and
 * kept for retries unless release_statuses frees its status (5xx by
 * default: a retry may do better).  One whose body the web server
 * replaces (X-Accel-Redirect) is a tombstone: a replay of it would serve
 * the file as it is then, not the answer the first client got. */
static void
guard_handled(struct guarded *g, const struct answer *a)
{
	struct request		*r = g->r;
	const struct once_end	 e = { IDEM_OK, 1,
	    cfg_releases(r->route, a->status) };
	char			 created[GUARD_EXTRA_MAX];
	const char		*off;
	struct answer		 kept;
	struct buf		 rh;

	if (once_outcome(&e) == REC_RELEASE) {
		count(r, STAT_RELEASED);
		guard_record(g, REC_RELEASE, NULL);
		reply_answer(r->out, a, NULL);
		return;
	}
	buf_init(&rh, RESP_HEAD_MAX);
	if ((off = resp_hands_off(&a->hdrs)) != NULL)
		log_warn("%s: the answer has the web server serve its body "
		    "(%s): delivered once, not kept; retries get 410",
		    r->tag, off);
	if (off == NULL && resp_hdrs_for_replay(&a->hdrs,
	    r->route->store_drop, r->route->nstore_drop, &rh) == IDEM_OK) {
		count(r, STAT_CREATED);
		answer_borrow(&kept, a->status, rh.p, rh.len, a->body.p,
		    a->body.len);
		kept.expires_s = guard_created(g, created, sizeof(created));
		guard_record(g, REC_COMPLETE, &kept);
	} else {
		count(r, STAT_TOMBSTONED);
		kept = *a;	/* borrowed: the date goes with it */
		kept.expires_s = guard_created(g, created, sizeof(created));
		guard_record(g, REC_TOMBSTONE, &kept);
	}
	reply_answer(r->out, a, created);
	buf_free(&rh);
}

/* An owned upstream run passed the route's timeout: the client gets its
 * 504 now; the run goes on and its answer is recorded for the retries. */
struct overdue {
	struct request	*r;
	struct sink	*s;
	int64_t		 left_ms;	/* to the run's end, at most */
	int		 settling;	/* END_REQUEST came, the client was
					 * answered (guard_settle) */
};

/* The most a key in progress's Retry-After says: the route's wait (a
 * retry waits that long itself, woken by the run's end), or with wait = 0
 * (retries answered at once) a lease, so they do not poll every second. */
static int64_t
guard_retry_cap(const struct route *rt)
{
	return rt->wait_ms > 0 ? rt->wait_ms : rt->lease_ms;
}

static void
guard_overdue(void *arg)
{
	struct overdue	*o = arg;
	struct request	*r = o->r;

	if (o->settling)	/* answered at END_REQUEST */
		return;
	log_warn("%s: no answer after %lld ms; the client gets 504, the "
	    "upstream run goes on and its answer will be kept", r->tag,
	    (long long)r->route->timeout_ms);
	/* Part of an answer too large to keep already went out: broken
	 * off, it must look broken. */
	if (o->s->streaming) {
		reply_abort(r->out);
		return;
	}
	reply_problem(r->out, PROB_HANDLER_TIMEOUT,
	    lease_retry_after(o->left_ms, guard_retry_cap(r->route)), 0,
	    NULL);
	reply_finish(r->out);
}

/*
 * An owned upstream run said END_REQUEST.  1 if its key is to be released
 * (its status is one release_statuses frees, or it said nothing): not
 * before the run is over, then, which END_REQUEST does not prove
 * (PHP-FPM says it at fastcgi_finish_request() and runs on); a retry
 * must not run beside it.  A whole answer goes to the client now; the
 * key stays in progress until the app closes the connection (its run
 * ended), or is kept as a tombstone if it still runs at run_limit.
 */
static int
guard_settle(void *arg)
{
	struct overdue	*o = arg;
	struct sink	*s = o->s;
	struct reply	*out = o->r->out;

	if (s->have_head ? !cfg_releases(o->r->route, s->ans.status) :
	    s->raw.len > 0)
		return 0;
	/* What the client gets once the run is over, now: the answer
	 * (the rest of one streaming), the gateway's 502 for one that is
	 * not whole, a streaming one broken off. */
	o->settling = 1;
	if (sink_whole(s, o->r->method)) {
		if (!s->streaming)
			reply_answer(out, &s->ans, NULL);
		reply_finish(out);
	} else if (!s->streaming || reply_retract(out)) {
		reply_problem(out, PROB_BAD_GATEWAY, 0, 0, NULL);
		reply_finish(out);
	} else
		reply_abort(out);
	return 1;
}

/*
 * We own the key: run the handler once, record the outcome, answer.  An
 * upstream run is read to its end (END_REQUEST) or to the run deadline
 * the claim recorded, whatever the client's timeout: it cannot be stopped,
 * so its key is never free while it may still run.  Without run_limit it
 * is read until the key's ttl.
 */
static void
guard_run_owned(struct guarded *g)
{
	struct request		*r = g->r;
	const struct route	*rt = r->route;
	struct lease		 l;
	struct sink		 s;
	struct run_hooks	 h;
	struct overdue		 od;
	char			 created[GUARD_EXTRA_MAX];
	int64_t			 run_ms = cfg_run_ms(rt);
	enum idem_err		 er;

	/* Only a streamed answer's head goes out before it is recorded. */
	guard_created(g, created, sizeof(created));
	lease_init(&l, &g->o, rt->handler != HANDLER_FASTCGI);
	sink_init(&s, 1, rt->max_response, created, r->out);
	s.route = rt;
	memset(&h, 0, sizeof(h));
	h.tick = lease_tick;
	h.tick_arg = &l;
	h.tick_ms = lease_tick_ms(rt->lease_ms);
	h.fence = g->o.c.fence;
	/* The lock's name names the key as we read it (scope, key, keyed
	 * when the store is): one fence row per key for the app, whatever
	 * the client's spelling (quotes, parameters). */
	h.key_id = idem_id_hex(&g->id);
	if (rt->handler != HANDLER_FASTCGI) {
		h.run = g->run = rand_u64();
		h.spawned = &g->spawned;
		h.ended = &g->ended;
	}
	memset(&od, 0, sizeof(od));
	od.r = r;
	od.s = &s;
	/* An upstream still running at run_limit (SPEC 2c) leaves a
	 * tombstone: its answer is read up to then, not up to the run
	 * deadline the claim recorded (run_limit and the slack an
	 * application's own limit takes to act), which only bounds when
	 * the key may be taken over. */
	if (rt->handler == HANDLER_FASTCGI && rt->run_limit_ms > 0)
		run_ms = rt->run_limit_ms;
	od.left_ms = (run_ms < 0 ? rt->ttl_ms : run_ms) -
	    (clock_now_ms() - once_claimed_ms(&g->o));
	if (od.left_ms < 1)
		od.left_ms = 1;
	h.overdue = guard_overdue;
	h.overdue_arg = &od;
	h.settle = guard_settle;
	h.run_limit_ms = od.left_ms;
	od.left_ms -= rt->timeout_ms;
	er = handler_run(r, &s, &h);
	if (s.streaming)
		guard_streamed(g, &s, er);
	else if (er == IDEM_OK)
		guard_handled(g, &s.ans);
	else
		guard_failed(g, er);
	if (r->out->failed)
		log_info("%s: client went away; answer recorded", r->tag);
	sink_free(&s);
}

/* The store failed before the handler ran: reject or run unprotected. */
static void
guard_store_error(struct request *r)
{
	log_err("%s: idempotency store unavailable: %s", r->tag,
	    store_last_error(r->ctx->st));
	count(r, STAT_STORE_ERRORS);
	if (r->route->on_store_error == STORE_ERR_PASS)
		guard_plain(r, 1);
	else
		reply_problem(r->out, PROB_STORE_UNAVAILABLE, STORE_RETRY_S, 0,
		    NULL);
}

void
guard_key_for_log(const char *key, size_t keylen, char *out, size_t outlen)
{
	size_t	 shown = keylen / 4;

	if (shown > 8)
		shown = 8;
	snprintf(out, outlen, "%.*s...(%zu bytes)", (int)shown, key, keylen);
}

/* 1 if header name is in r's params more than once. */
static int
guard_twice(const struct request *r, const char *name)
{
	char	 pname[300];
	int	 twice = 0;

	if (guard_header_param(name, pname, sizeof(pname)) == IDEM_OK)
		(void)request_param_once(r->envp, pname, &twice);
	return twice;
}

/* The name of a header that identifies the request (the key, a scope
 * header, a fingerprint header) and arrived more than once, or NULL;
 * raw gets the key header's value (NULL when absent). */
static const char *
guard_ambiguous(const struct request *r, const char **raw)
{
	const struct route	*rt = r->route;
	char			 pname[300];
	size_t			 i;
	int			 twice = 0;

	*raw = NULL;
	if (guard_header_param(rt->key_header, pname, sizeof(pname)) ==
	    IDEM_OK)
		*raw = request_param_once(r->envp, pname, &twice);
	if (twice)
		return rt->key_header;
	if (rt->scope == SCOPE_HEADER && guard_twice(r, rt->scope_header))
		return rt->scope_header;
	for (i = 0; i < rt->nfp_headers; i++)
		if (guard_twice(r, rt->fp_headers[i]))
			return rt->fp_headers[i];
	return NULL;
}

/* The scope: its kind ("none", "remote_user", "header:name" in lower
 * case) in kind and its value, or NULL when the request has none.  An
 * Authorization value is read by meaning (fp_auth_norm; *owned is
 * then the string to fp_auth_free). */
static const char *
guard_scope(const struct request *r, char *kind, size_t kindlen,
    char **owned)
{
	const struct route	*rt = r->route;
	char			 pname[300];
	const char		*v = NULL;

	switch (rt->scope) {
	case SCOPE_REMOTE_USER:
		snprintf(kind, kindlen, "remote_user");
		v = request_param(r->envp, "REMOTE_USER");
		break;
	case SCOPE_HEADER:
		snprintf(kind, kindlen, "header:%s", rt->scope_header);
		for (char *p = kind; *p != '\0'; p++)
			*p = (char)tolower((unsigned char)*p);
		if (guard_header_param(rt->scope_header, pname,
		    sizeof(pname)) == IDEM_OK)
			v = request_param(r->envp, pname);
		if (v != NULL && strcasecmp(rt->scope_header,
		    "authorization") == 0 && (*owned = fp_auth_norm(v)) !=
		    NULL)
			v = *owned;
		break;
	default:
		snprintf(kind, kindlen, "none");
		return "";
	}
	return v != NULL && *v != '\0' ? v : NULL;
}

/*
 * The query of REQUEST_URI (up to any '#') in its one spelling
 * (path_query_normalize) when that is not QUERY_STRING's: a rewrite that
 * kept the client's query only there (Apache's RewriteRule without QSA)
 * or added to it (a front controller's "?q=$uri&$args").  An application
 * that reads REQUEST_URI sees it, so it is part of the request; spellings
 * a web server normalises one way and not the other (lighttpd: "%7e" in
 * REQUEST_URI, "~" in QUERY_STRING) are the same.  OUT: *out (free()) and
 * *len, *out NULL when there is none; or IDEM_ENOMEM.
 */
static enum idem_err
guard_uri_query(const struct request *r, char **out, size_t *len)
{
	const char	*uri = request_param(r->envp, "REQUEST_URI"), *q;
	const char	*qs = r->query != NULL ? r->query : "";
	size_t		 qlen, qslen = strlen(qs), na, nb;
	char		*a, *b;

	*out = NULL;
	if (uri == NULL || (q = strchr(uri, '?')) == NULL)
		return IDEM_OK;
	q++;
	qlen = strcspn(q, "#");
	/* The usual case, as the client spelled it: nothing to look at. */
	if (qlen == qslen && memcmp(q, qs, qlen) == 0)
		return IDEM_OK;
	if ((a = malloc(qlen + 1)) == NULL ||
	    (b = malloc(qslen + 1)) == NULL) {
		free(a);
		return IDEM_ENOMEM;
	}
	na = path_query_normalize(q, qlen, a);
	nb = path_query_normalize(qs, qslen, b);
	if (na == nb && memcmp(a, b, na) == 0) {
		free(a);
		a = NULL;
	}
	free(b);
	*out = a;
	*len = na;
	return IDEM_OK;
}

enum idem_err
guard_fingerprint(const struct request *r, unsigned char fp[FP_LEN])
{
	const struct route	*rt = r->route;
	char			*more[CFG_MAX_FP_HEADERS + 1], pname[300];
	char			*uq;
	const char		*v, *ctype = r->ctype;
	struct buf		 canon;
	size_t			 i, n = 0, qlen;
	enum idem_err		 er = IDEM_OK;
	int			 whole;

	for (i = 0; i < rt->nfp_headers && er == IDEM_OK; i++) {
		v = NULL;
		if (guard_header_param(rt->fp_headers[i], pname,
		    sizeof(pname)) == IDEM_OK)
			v = request_param(r->envp, pname);
		if (asprintf(&more[n], "%s%s%s", rt->fp_headers[i],
		    v != NULL ? "=" : "", v != NULL ? v : "") < 0)
			er = IDEM_ENOMEM;
		else
			n++;
	}
	/* "?" names no header: no fingerprint_headers entry can be it.
	 * Absent (the usual case), the fingerprint is what it always was. */
	if (er == IDEM_OK && (er = guard_uri_query(r, &uq, &qlen)) ==
	    IDEM_OK && uq != NULL) {
		if (asprintf(&more[n], "?REQUEST_URI=%.*s", (int)qlen, uq) < 0)
			er = IDEM_ENOMEM;
		else
			n++;
		free(uq);
	}
	buf_init(&canon, CANON_MAX(r->body.len));
	whole = er == IDEM_OK && rt->fingerprint == FPMODE_CANONICAL &&
	    canon_body(r->ctype, r->body.p, r->body.len, &canon, &ctype);
	if (er == IDEM_OK)
		fp_request(&(struct fp_req){ .method = r->method,
		    .path = r->path, .query = r->query, .ctype = ctype,
		    .body = whole ? canon.p : r->body.p,
		    .bodylen = whole ? canon.len : r->body.len,
		    .more = (const char *const *)more, .nmore = n }, fp);
	buf_free(&canon);
	for (i = 0; i < n; i++)
		free(more[i]);
	return er;
}

/* What guard_identity found. */
enum ident {
	IDENT_OK,		/* g->id holds all but the fingerprint */
	IDENT_AMBIGUOUS,	/* an identifying header came twice */
	IDENT_PLAIN,		/* no key, and none is required */
	IDENT_NO_KEY,
	IDENT_BAD_KEY,
	IDENT_NO_SCOPE,
};

/*
 * The key and the scope, into g->id (and g->key, g->lkey) with the
 * route's terms; the fingerprint is left to guard_fingerprint.  Answers
 * and logs nothing, so the reader may ask it too (guard_cached); *dup
 * gets the header of IDENT_AMBIGUOUS.
 */
static enum ident
guard_identity(struct guarded *g, const char **dup)
{
	struct request		*r = g->r;
	const struct route	*rt = r->route;
	char			 kind[600], *owned = NULL;
	const char		*raw, *sval;
	size_t			 keylen, n;

	/* One header given twice: which one the handler reads is anyone's
	 * guess (lighttpd passes X-Tenant and X_Tenant both as
	 * HTTP_X_TENANT), so nothing runs under either. */
	if ((*dup = guard_ambiguous(r, &raw)) != NULL)
		return IDENT_AMBIGUOUS;
	if (raw == NULL)
		return rt->require_key ? IDENT_NO_KEY : IDENT_PLAIN;
	if (key_parse(raw, strlen(raw), g->key, &keylen) != IDEM_OK ||
	    !cfg_key_format_ok(rt, g->key, keylen))
		return IDENT_BAD_KEY;
	guard_key_for_log(g->key, keylen, g->lkey, sizeof(g->lkey));
	if ((sval = guard_scope(r, kind, sizeof(kind), &owned)) == NULL) {
		fp_auth_free(owned);
		return IDENT_NO_SCOPE;
	}
	if (rt->keys_per_route) {
		/* The same key on another route is another key. */
		n = strlen(kind);
		snprintf(kind + n, sizeof(kind) - n, " route:%s", rt->prefix);
	}
	fp_scope(kind, sval, g->id.scope);
	fp_auth_free(owned);
	g->id.key = g->key;
	g->id.keylen = keylen;
	g->id.route = rt->prefix;
	g->id.method = r->method;
	g->id.owner = r->ctx->owner;
	g->id.ttl_ms = rt->ttl_ms;
	g->id.lease_ms = rt->lease_ms;
	g->id.run_ms = cfg_run_ms(rt);
	return IDENT_OK;
}

/*
 * How this worker hashes keys, resolved on first use if the flusher has
 * not yet (lib/store/store_hkey.h).  IDEM_OK when id can be keyed (or is
 * plain by design); else the request was answered: 503 while the store
 * cannot say, 500 store-key-missing when this gateway cannot hash as
 * the store does.
 */
static enum idem_err
guard_hkey(struct request *r)
{
	/* Per process, so per worker: one line a minute, not a request. */
	static struct log_every	 every;
	struct hkey		*hk = r->ctx->hk;
	uint64_t		 n = 0;

	if (hk == NULL)
		return IDEM_OK;
	if (hkey_state(hk) == HKEY_UNKNOWN &&
	    store_hkey_resolve(r->ctx->st, hk) != IDEM_OK) {
		guard_store_error(r);
		return IDEM_ESTORE;
	}
	if (hkey_state(hk) == HKEY_REFUSED) {
		count(r, STAT_STORE_ERRORS);
		if (log_every(&every, clock_now_ms(), 60 * 1000, &n)) {
			if (n > 1)
				log_err("%s: %s (%llu requests refused since)",
				    r->tag, hk->why, (unsigned long long)n);
			else
				log_err("%s: %s", r->tag, hk->why);
		}
		reply_problem(r->out, PROB_HASH_KEY_MISSING, 0, 0, NULL);
		return IDEM_ESEAL;
	}
	return IDEM_OK;
}

/*
 * Step 1, identify: the key, the scope and the fingerprint, into g->id.
 * GUARD_GO_ON when the request is to be protected; GUARD_ANSWERED when a
 * missing or invalid key or scope answered it already, or no key where
 * none is required ran it straight through.
 */
static enum guard_next
guard_identify(struct guarded *g)
{
	struct request	*r = g->r;
	const char	*dup;
	char		 detail[192];

	switch (guard_identity(g, &dup)) {
	case IDENT_OK:
		break;
	case IDENT_AMBIGUOUS:
		count(r, STAT_INVALID_KEY);
		log_info("%s: header %s given more than once", r->tag, dup);
		reply_problem(r->out, PROB_AMBIGUOUS_HEADER, 0, 0, NULL);
		return GUARD_ANSWERED;
	case IDENT_PLAIN:
		count(r, STAT_PASSTHROUGH);
		guard_plain(r, 1);
		return GUARD_ANSWERED;
	case IDENT_NO_KEY:
		count(r, STAT_MISSING_KEY);
		log_info("%s: no idempotency key", r->tag);
		/* Name the header this route reads (key_header: a token). */
		snprintf(detail, sizeof(detail), "This endpoint requires an "
		    "%s header.", r->route->key_header);
		reply_problem_detail(r->out, PROB_MISSING_KEY, detail);
		return GUARD_ANSWERED;
	case IDENT_BAD_KEY:
		count(r, STAT_INVALID_KEY);
		log_info("%s: invalid idempotency key", r->tag);
		reply_problem(r->out, PROB_INVALID_KEY, 0, 0, NULL);
		return GUARD_ANSWERED;
	case IDENT_NO_SCOPE:
		count(r, STAT_MISSING_KEY);
		log_info("%s: key %s without scope value", r->tag, g->lkey);
		reply_problem(r->out, PROB_MISSING_SCOPE, 0, 0, NULL);
		return GUARD_ANSWERED;
	}
	if (guard_fingerprint(r, g->id.fp) != IDEM_OK) {
		log_err("%s: out of memory", r->tag);
		reply_problem(r->out, PROB_INTERNAL, 0, 0, NULL);
		return GUARD_ANSWERED;
	}
	if (guard_hkey(r) != IDEM_OK)
		return GUARD_ANSWERED;
	idem_id_key(&g->id, r->ctx->hk);
	return GUARD_GO_ON;
}

/* Replays hit, the replay cache's answer for g, and counts it. */
static void
guard_replay_cached(struct guarded *g, struct rcache_hit *hit)
{
	struct request	*r = g->r;
	char		 extra[GUARD_EXTRA_MAX];

	count(r, STAT_REUSED);
	count(r, STAT_CACHE_HITS);
	guard_extra(extra, sizeof(extra), HDR_REUSED, hit->ans->expires_s);
	reply_answer(r->out, hit->ans, extra);
	rcache_release(r->ctx->rc, hit);
}

/* A parked waiter is done waiting: out of the row's waiters column. */
static void
guard_unpark(struct guarded *g)
{
	struct park	*pk = g->r->park;

	if (pk == NULL || !pk->counted || pk->want)
		return;
	pk->counted = 0;
	(void)store_waiter(g->r->ctx->st, &g->id, -1);
}

/*
 * After a claim: 1 if the key is busy and the request is to wait for it
 * parked, without this thread (fcgi/park.h); counted in the row's
 * waiters meanwhile, for idemtop.  0 when it is to be answered now: its
 * wait, if it had one, is in g->o.waited_ms.
 */
static int
guard_park(struct guarded *g)
{
	struct request	*r = g->r;
	struct park	*pk = r->park;
	int64_t		 now = clock_now_ms();

	if (g->o.c.state == CLAIM_BUSY &&
	    park_busy(pk, r->route->wait_ms, g->o.c.nap_us, now)) {
		if (!pk->counted &&
		    store_waiter(r->ctx->st, &g->id, 1) == IDEM_OK)
			pk->counted = 1;
		return 1;
	}
	if (pk->since_ms > 0)
		g->o.waited_ms = now - pk->since_ms;
	return 0;
}

/*
 * Step 2, look up: the replay cache, then the store (claim; while another
 * owner runs the key, the request parks and claims again when woken, or,
 * without a reader to park it, waits here and claims again).  GUARD_GO_ON
 * when g->o.c says what the store found; GUARD_ANSWERED when the cache
 * answered, the store failed, or the request parked (nothing written).
 */
static enum guard_next
guard_lookup(struct guarded *g)
{
	struct request	*r = g->r;
	struct rcache_hit hit;

	if (r->ctx->rc != NULL) {
		/* The reader asked the cache for this request already. */
		if (!r->cache_missed && rcache_get(r->ctx->rc, &g->id,
		    clock_now_us(), &hit)) {
			guard_replay_cached(g, &hit);
			return GUARD_ANSWERED;
		}
		/* Before the store read: a flush after it voids our put. */
		g->gen = rcache_gen(r->ctx->rc);
	}
	/* Only the store needs the lock name: a cache hit never does. */
	idem_id_name_lock(&g->id);
	g->lockhash = fp_lockhash(g->id.lockname);
	if (r->park != NULL)
		park_arm(r->park, g->lockhash);
	if (once_claim(&g->o, r->park != NULL ? 0 : r->route->wait_ms) !=
	    IDEM_OK) {
		guard_store_error(r);
		return GUARD_ANSWERED;
	}
	if (r->park != NULL && guard_park(g))
		return GUARD_ANSWERED;
	if (g->o.waited_ms > 0 && r->ctx->stats != NULL)
		stats_wait(r->ctx->stats, r->route->prefix, g->o.waited_ms);
	return GUARD_GO_ON;
}

/*
 * new_keys_per_minute: counts this new key of its scope, fleet-wide.
 * Over the limit (or when it cannot be counted) the key is released
 * unrun and the request answered here.
 */
static enum guard_next
guard_over_quota(struct guarded *g)
{
	struct request		*r = g->r;
	const struct route	*rt = r->route;
	uint64_t		 n = 0;
	int			 wait_s;

	if (rt->new_keys_per_minute == 0)
		return GUARD_GO_ON;
	if (store_quota_take(r->ctx->st, g->id.scope, &n) != IDEM_OK) {
		guard_record(g, REC_RELEASE, NULL);
		guard_store_error(r);
		return GUARD_ANSWERED;
	}
	if (n <= rt->new_keys_per_minute)
		return GUARD_GO_ON;
	count(r, STAT_QUOTA_REJECTED);
	log_info("%s: key %s over new_keys_per_minute (%u)", r->tag, g->lkey,
	    rt->new_keys_per_minute);
	guard_record(g, REC_RELEASE, NULL);
	/* The window is the server's minute; ours is within a second. */
	wait_s = 60 - (int)(time(NULL) % 60);
	reply_problem(r->out, PROB_TOO_MANY_KEYS, wait_s, 0, NULL);
	return GUARD_ANSWERED;
}

/* Step 3, answer (once_dispatch): the key is ours, so run the handler;
 * or say what the store found. */
static void
guard_owned(struct once *o, void *arg)
{
	struct guarded	*g = arg;

	g->owned = 1;
	board_own(g->r->ctx->idx, g->lockhash);
	if (guard_over_quota(g) == GUARD_GO_ON)
		guard_run_owned(g);
}

static void
guard_replay(struct once *o, void *arg)
{
	struct guarded	*g = arg;
	struct request	*r = g->r;
	char		 extra[GUARD_EXTRA_MAX];

	count(r, STAT_REUSED);
	/* Rows stored before cookies were never kept may hold one: it is
	 * the first client's, never another's (nor the cache's). */
	resp_drop_cookies(&o->c.ans.hdrs);
	/* The row's own end, read with it: a whole second (TTL_END), so
	 * the date names the second the key ends on (a row kept from before
	 * ends mid-second: the second before that end, never one after). */
	if (o->c.ans.expires_s <= 0)
		o->c.ans.expires_s = guard_expiry_s(o->c.expires_in_us);
	guard_extra(extra, sizeof(extra), HDR_REUSED, o->c.ans.expires_s);
	reply_answer(r->out, &o->c.ans, extra);
	/* A replayed key is a retried key: keep it for the next. */
	if (r->ctx->rc != NULL)
		rcache_put(r->ctx->rc, g->gen, &g->id, &o->c.ans,
		    o->read_us + o->c.expires_in_us, clock_now_us());
}

static void
guard_mismatch(struct once *o, void *arg)
{
	struct guarded	*g = arg;

	count(g->r, STAT_MISMATCHED);
	log_info("%s: key %s reused for a different request", g->r->tag,
	    g->lkey);
	reply_problem(g->r->out, PROB_KEY_MISMATCH, 0, 0, NULL);
}

static void
guard_tombstone(struct once *o, void *arg)
{
	struct guarded	*g = arg;

	reply_problem(g->r->out, PROB_NOT_STORED, 0, o->c.ans.status, NULL);
}

static void
guard_sealed(struct once *o, void *arg)
{
	struct guarded	*g = arg;

	if (o->c.seal_er == IDEM_ENOTFOUND)
		log_err("%s: key %s: its stored answer is sealed under key id "
		    "'%s', which secret_key_file does not hold; not run "
		    "again", g->r->tag, g->lkey, o->c.seal_kid);
	else if (o->c.seal_er == IDEM_ESEAL)
		log_err("%s: key %s: its stored answer (key id '%s') fails "
		    "its authentication tag: wrong key material, or the row "
		    "was moved or altered in the store; not run again",
		    g->r->tag, g->lkey, o->c.seal_kid);
	else
		log_err("%s: key %s: cannot open its stored answer: %s",
		    g->r->tag, g->lkey, idem_strerror(o->c.seal_er));
	reply_problem(g->r->out, PROB_STORE_KEY_MISSING, 0, 0, NULL);
}

static void
guard_busy(struct once *o, void *arg)
{
	struct guarded	*g = arg;

	count(g->r, STAT_CONFLICTED);
	log_info("%s: key %s still in progress after %lld ms", g->r->tag,
	    g->lkey, (long long)o->waited_ms);
	reply_problem(g->r->out, PROB_KEY_IN_PROGRESS,
	    lease_retry_after(o->c.lease_left_ms,
	    guard_retry_cap(g->r->route)), 0, NULL);
}

static const struct once_ops guard_ops = {
	.run = guard_owned,
	.replay = guard_replay,
	.mismatch = guard_mismatch,
	.tombstone = guard_tombstone,
	.busy = guard_busy,
	.sealed = guard_sealed,
};

void
guard_serve(struct request *r)
{
	struct guarded	 g;

	if (!cfg_protects(r->route, r->method)) {
		count(r, STAT_PASSTHROUGH);
		guard_plain(r, 0);
		return;
	}
	memset(&g, 0, sizeof(g));
	g.r = r;
	if (guard_identify(&g) != GUARD_GO_ON)
		return;
	once_init(&g.o, r->ctx->st, &g.id, r->tag);
	g.o.rec = r->ctx->rec;
	/* A parked request is counted once, when it first came. */
	if (r->park == NULL || r->park->since_ms == 0)
		count(r, STAT_REQUESTS);
	if (r->park != NULL && r->park->gone)
		log_info("%s: key %s: the web server hung up while it waited",
		    r->tag, g.lkey);
	else if (guard_lookup(&g) == GUARD_GO_ON)
		once_dispatch(&g.o, &guard_ops, &g);
	guard_disown(&g);
	guard_unpark(&g);
	once_reset(&g.o);
}

int
guard_cached(struct request *r)
{
	struct guarded		 g;
	struct rcache_hit	 hit;
	const char		*dup;

	if (r->ctx->rc == NULL || !cfg_protects(r->route, r->method))
		return 0;
	memset(&g, 0, sizeof(g));
	g.r = r;
	/* A key the cache does not hold costs no fingerprint here: the
	 * request thread computes it once. */
	if (guard_identity(&g, &dup) != IDENT_OK || !hkey_ready(r->ctx->hk))
		return 0;	/* not resolved, or refused: the thread says */
	idem_id_key_scope(&g.id, r->ctx->hk);
	if (!rcache_holds(r->ctx->rc, &g.id) ||
	    guard_fingerprint(r, g.id.fp) != IDEM_OK)
		return 0;
	idem_id_key_fp(&g.id);
	if (!rcache_get(r->ctx->rc, &g.id, clock_now_us(), &hit)) {
		r->cache_missed = 1;
		return 0;
	}
	count(r, STAT_REQUESTS);
	guard_replay_cached(&g, &hit);
	return 1;
}
