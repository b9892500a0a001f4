/* The idempotency flow between route and handler: claim, run, record, replay. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fp.h"
#include "guard.h"
#include "handler.h"
#include "clock.h"
#include "log.h"
#include "rcache.h"
#include "recorder.h"
#include "request.h"
#include "resp.h"
#include "stats.h"
#include "store.h"

#define HDR_CREATED	"Idempotency-Result: created\r\n"
#define HDR_REUSED	"Idempotent-Replayed: true\r\nIdempotency-Result: reused\r\n"
#define STORE_RETRY_S	5
/* While lease renewals fail, try again this often. */
#define GUARD_RENEW_RETRY_MS	250
/* Claim/wait rounds per request; the wait deadline ends it long before. */
#define CLAIM_ROUNDS	1000

int
guard_header_param(const char *name, char *out, size_t outlen)
{
	size_t	 i, n = strlen(name);

	if (n + 6 > outlen)
		return -1;
	memcpy(out, "HTTP_", 5);
	for (i = 0; i < n; i++)
		out[5 + i] = name[i] == '-' ? '_' :
		    (char)toupper((unsigned char)name[i]);
	out[5 + n] = '\0';
	return 0;
}

int
guard_retry_after(int64_t lease_left_ms)
{
	int64_t	 s = (lease_left_ms + 999) / 1000;

	if (s < 1)
		s = 1;
	if (s > 86400)
		s = 86400;
	return (int)s;
}

int64_t
guard_tick_ms(int64_t lease_ms)
{
	int64_t	 t = lease_ms / 3;

	return t < 100 ? 100 : t;
}


static void
count(struct request *r, enum stat_id id)
{
	if (r->ctx->stats != NULL)
		stats_add(r->ctx->stats, r->route->prefix, id, 1);
}

/* Runs the handler without idempotency, streaming its answer. */
static void
guard_plain(struct request *r)
{
	struct sink	 s;
	enum idem_err	 er;

	sink_init(&s, 0, 0, NULL, r->out);
	er = handler_run(r, &s, NULL, NULL, 0);
	if (er != IDEM_OK) {
		/* Once the head is out, only a broken transfer tells the
		 * client that the rest is missing. */
		if (s.streaming)
			reply_abort(r->out);
		else
			reply_problem(r->out, problem_from_err(er), 0, 0, NULL);
	}
	sink_free(&s);
}

/* A key we own, and how long its lease is surely ours. */
struct owned {
	struct request	*r;
	struct claim	*c;
	int64_t		 ok_until;	/* CLOCK_MONOTONIC ms */
	int64_t		 margin;	/* stop the handler this much before */
};

int64_t
guard_stop_margin(int64_t lease_ms)
{
	int64_t	 m = lease_ms / 5;

	if (m < 300)
		m = 300;
	if (m > 5000)
		m = 5000;
	if (m > lease_ms / 2)
		m = lease_ms / 2;
	return m;
}

/*
 * The handler's tick: renews the lease.  While renewals fail it tries
 * again every GUARD_RENEW_RETRY_MS; when the lease is about to end
 * without one (or the row is no longer ours) it has the handler stopped,
 * so a takeover never runs beside it.
 */
static int64_t
guard_renew(void *arg)
{
	struct owned	*o = arg;
	int64_t		 lease = o->r->route->lease_ms, t0, left;
	enum idem_err	 er;

	t0 = clock_now_ms();
	er = store_renew(o->r->ctx->st, o->c, lease);
	if (er == IDEM_OK) {
		/* The server's lease starts after t0: ours is shorter. */
		o->ok_until = t0 + lease;
		return guard_tick_ms(lease);
	}
	if (er == IDEM_ENOTFOUND) {
		log_err("%s: key no longer ours (forgotten or taken over); "
		    "stopping the handler", o->r->tag);
		return -1;
	}
	left = o->ok_until - o->margin - clock_now_ms();
	if (left <= 0) {
		log_err("%s: lease not renewed in time (%s); stopping the "
		    "handler before it ends", o->r->tag,
		    store_last_error(o->r->ctx->st));
		return -1;
	}
	log_warn("%s: lease renewal failed: %s; %lld ms left", o->r->tag,
	    store_last_error(o->r->ctx->st), (long long)left);
	return left < GUARD_RENEW_RETRY_MS ? left : GUARD_RENEW_RETRY_MS;
}

static const char *const rec_what[] = {
	[REC_COMPLETE] = "answer", [REC_TOMBSTONE] = "tombstone",
	[REC_RELEASE] = "release",
};

/*
 * Writes the outcome of an owned key.  When the store is down the
 * recorder keeps it and writes it when the store is back: the key stays
 * in progress meanwhile, never free for a second run.  An answer the
 * store refuses (say, over its max_allowed_packet) leaves a tombstone:
 * in progress, the key would be taken over once its lease lapsed.
 */
static void
guard_record(struct request *r, struct claim *c, enum rec_op op, int status,
    const void *hdrs, size_t hdrslen, const void *body, size_t bodylen)
{
	struct store	*st = r->ctx->st;
	int64_t		 ttl = r->route->ttl_ms;
	enum idem_err	 er;

	for (;;) {
		if (op == REC_COMPLETE)
			er = store_complete(st, c, status, hdrs, hdrslen,
			    body, bodylen, ttl);
		else if (op == REC_TOMBSTONE)
			er = store_tombstone(st, c, status, ttl);
		else
			er = store_release(st, c);
		if (er == IDEM_OK)
			break;
		if (er == IDEM_ENOTFOUND) {
			log_err("%s: key no longer ours (forgotten or taken "
			    "over); its %s is not recorded", r->tag,
			    rec_what[op]);
			break;
		}
		if (er == IDEM_ESTORE && store_unreachable(st) && r->ctx->rec !=
		    NULL && recorder_add(r->ctx->rec, op, c, status, hdrs,
		    hdrslen, body, bodylen, ttl) == IDEM_OK) {
			log_warn("%s: store unreachable (%s); the %s is kept "
			    "and written when it is back", r->tag,
			    store_last_error(st), rec_what[op]);
			break;
		}
		log_err("%s: cannot record %s: %s", r->tag, rec_what[op],
		    er == IDEM_ESTORE ? store_last_error(st) :
		    idem_strerror(er));
		if (op != REC_COMPLETE)
			break;
		op = REC_TOMBSTONE;
		count(r, STAT_TOMBSTONED);
		log_info("%s: keeping the key as a tombstone", r->tag);
	}
}

/* We own the key: run the handler once, record the outcome, answer. */
static void
guard_run_owned(struct request *r, struct claim *c, int64_t claimed_ms)
{
	const struct route	*rt = r->route;
	struct owned		 o = { r, c, 0, 0 };
	struct sink		 s;
	struct buf		 ph, pb, rh;
	enum problem		 prob = PROB_BAD_GATEWAY;
	enum idem_err		 er;
	int			 status, gw_made = 0;

	buf_init(&ph, 4096);
	buf_init(&pb, 4096);
	buf_init(&rh, RESP_HEAD_MAX);
	o.ok_until = claimed_ms + rt->lease_ms;
	o.margin = guard_stop_margin(rt->lease_ms);
	sink_init(&s, 1, rt->max_response, HDR_CREATED, r->out);
	er = handler_run(r, &s, guard_renew, &o, guard_tick_ms(rt->lease_ms));
	if (er == IDEM_OK)
		status = s.head.status;
	else {
		prob = problem_from_err(er);
		status = problem_status(prob);
		gw_made = 1;
	}

	if (s.streaming) {
		/* Too large to keep: the head and part of the body already
		 * went out.  Broken off, it must look broken, and the key is
		 * never run again; whole, it is run again only for a failure
		 * a retry may repeat. */
		if (er != IDEM_OK) {
			reply_abort(r->out);
			count(r, STAT_TOMBSTONED);
			guard_record(r, c, REC_TOMBSTONE, s.head.status, NULL,
			    0, NULL, 0);
		} else if (status >= 500 && !rt->store_5xx) {
			count(r, STAT_RELEASED);
			guard_record(r, c, REC_RELEASE, 0, NULL, 0, NULL, 0);
		} else {
			count(r, STAT_TOMBSTONED);
			guard_record(r, c, REC_TOMBSTONE, status, NULL, 0,
			    NULL, 0);
		}
		goto out;
	}

	/* A lost lease is never stored: the next owner runs it. */
	if (er == IDEM_ELEASE || (status >= 500 && !rt->store_5xx)) {
		count(r, STAT_RELEASED);
		guard_record(r, c, REC_RELEASE, 0, NULL, 0, NULL, 0);
		if (gw_made)
			reply_problem(r->out, prob, er == IDEM_ELEASE ?
			    STORE_RETRY_S : 0, 0, NULL);
		else
			reply_full(r->out, status, s.head.hdrs.p,
			    s.head.hdrs.len, NULL, s.body.p, s.body.len);
		goto out;
	}

	if (gw_made) {
		/* store_5xx = yes, or a 4xx of our own (script lookup). */
		if (problem_render(prob, 0, 0, &ph, &pb) != IDEM_OK) {
			guard_record(r, c, REC_RELEASE, 0, NULL, 0, NULL, 0);
			reply_problem(r->out, PROB_INTERNAL, 0, 0, NULL);
			goto out;
		}
		count(r, STAT_CREATED);
		guard_record(r, c, REC_COMPLETE, status, ph.p, ph.len, pb.p,
		    pb.len);
		reply_full(r->out, status, ph.p, ph.len, HDR_CREATED, pb.p,
		    pb.len);
		goto out;
	}

	/* The handler ran: its answer is delivered all the same. */
	count(r, STAT_CREATED);
	if (resp_hdrs_for_replay(&s.head.hdrs, &rh) == IDEM_OK)
		guard_record(r, c, REC_COMPLETE, status, rh.p, rh.len,
		    s.body.p, s.body.len);
	else
		guard_record(r, c, REC_TOMBSTONE, status, NULL, 0, NULL, 0);
	reply_full(r->out, status, s.head.hdrs.p, s.head.hdrs.len,
	    HDR_CREATED, s.body.p, s.body.len);
out:
	if (r->out->failed)
		log_info("%s: client went away; answer recorded", r->tag);
	sink_free(&s);
	buf_free(&ph);
	buf_free(&pb);
	buf_free(&rh);
}

/* The store failed before the handler ran: reject or run unprotected. */
static void
guard_store_error(struct request *r)
{
	log_err("%s: idempotency store unavailable: %s", r->tag,
	    store_last_error(r->ctx->st));
	count(r, STAT_STORE_ERRORS);
	if (r->route->on_store_error == STORE_ERR_PASS)
		guard_plain(r);
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

void
guard_serve(struct request *r)
{
	const struct route	*rt = r->route;
	struct store		*st = r->ctx->st;
	struct req_id		 id;
	struct claim		 c;
	char			 pname[300], key[FP_KEY_MAX + 1], lkey[40];
	char			 kind[300];
	const char		*raw, *sval = "";
	struct rcache_hit	 hit;
	size_t			 keylen = 0;
	uint64_t		 gen = 0;
	int64_t			 deadline, t0, waited = 0, left, read_us = 0;
	int			 rounds, released, retry = 1;
	enum idem_err		 er;

	if (!cfg_protects(rt, r->method)) {
		count(r, STAT_PASSTHROUGH);
		guard_plain(r);
		return;
	}
	if (guard_header_param(rt->key_header, pname, sizeof(pname)) != 0)
		raw = NULL;
	else
		raw = request_param(r->envp, pname);
	if (raw == NULL) {
		if (rt->require_key) {
			count(r, STAT_MISSING_KEY);
			log_info("%s: no idempotency key", r->tag);
			reply_problem(r->out, PROB_MISSING_KEY, 0, 0, NULL);
		} else {
			count(r, STAT_PASSTHROUGH);
			guard_plain(r);
		}
		return;
	}
	if (key_parse(raw, strlen(raw), key, &keylen) != IDEM_OK) {
		count(r, STAT_INVALID_KEY);
		log_info("%s: invalid idempotency key", r->tag);
		reply_problem(r->out, PROB_INVALID_KEY, 0, 0, NULL);
		return;
	}
	guard_key_for_log(key, keylen, lkey, sizeof(lkey));

	memset(&id, 0, sizeof(id));
	switch (rt->scope) {
	case SCOPE_REMOTE_USER:
		sval = request_param(r->envp, "REMOTE_USER");
		snprintf(kind, sizeof(kind), "remote_user");
		break;
	case SCOPE_HEADER:
		if (guard_header_param(rt->scope_header, pname,
		    sizeof(pname)) == 0)
			sval = request_param(r->envp, pname);
		else
			sval = NULL;
		snprintf(kind, sizeof(kind), "header:%s", rt->scope_header);
		for (char *p = kind; *p != '\0'; p++)
			*p = (char)tolower((unsigned char)*p);
		break;
	default:
		snprintf(kind, sizeof(kind), "none");
		break;
	}
	if (sval == NULL || (rt->scope != SCOPE_NONE && *sval == '\0')) {
		count(r, STAT_MISSING_KEY);
		log_info("%s: key %s without scope value", r->tag, lkey);
		reply_problem(r->out, PROB_MISSING_SCOPE, 0, 0, NULL);
		return;
	}
	fp_scope(kind, sval, id.scope);
	fp_request(r->method, r->path, r->query, r->ctype, r->body.p,
	    r->body.len, id.fp);
	id.key = key;
	id.keylen = keylen;
	id.route = rt->prefix;
	id.method = r->method;
	id.owner = r->ctx->owner;
	id.ttl_ms = rt->ttl_ms;
	id.lease_ms = rt->lease_ms;
	count(r, STAT_REQUESTS);

	if (r->ctx->rc != NULL) {
		if (rcache_get(r->ctx->rc, id.scope, key, keylen, id.fp,
		    rcache_now_us(), &hit)) {
			count(r, STAT_REUSED);
			reply_full(r->out, hit.status, hit.hdrs, hit.hdrslen,
			    HDR_REUSED, hit.body, hit.bodylen);
			rcache_release(r->ctx->rc, &hit);
			return;
		}
		/* Before the store read: a flush after it voids our put. */
		gen = rcache_gen(r->ctx->rc);
	}
	claim_init(&c);
	deadline = clock_now_ms() + rt->wait_ms;
	for (rounds = 0; rounds < CLAIM_ROUNDS; rounds++) {
		claim_reset(&c);
		read_us = rcache_now_us();
		if (store_claim(st, &id, &c) != IDEM_OK) {
			guard_store_error(r);
			goto out;
		}
		if (c.state != CLAIM_BUSY)
			break;
		retry = guard_retry_after(c.lease_left_ms);
		left = deadline - clock_now_ms();
		if (left <= 0)
			break;
		t0 = clock_now_ms();
		er = store_wait(st, &id, left, &released);
		waited += clock_now_ms() - t0;
		if (er != IDEM_OK) {
			guard_store_error(r);
			goto out;
		}
	}
	if (waited > 0 && r->ctx->stats != NULL)
		stats_wait(r->ctx->stats, rt->prefix, waited);

	switch (c.state) {
	case CLAIM_NEW:
		guard_run_owned(r, &c, read_us / 1000);
		break;
	case CLAIM_DONE:
		count(r, STAT_REUSED);
		reply_full(r->out, c.status, c.hdrs.p, c.hdrs.len, HDR_REUSED,
		    c.body.p, c.body.len);
		/* A replayed key is a retried key: keep it for the next. */
		if (r->ctx->rc != NULL)
			rcache_put(r->ctx->rc, gen, id.scope, key, keylen,
			    id.fp, c.status, c.hdrs.p, c.hdrs.len, c.body.p,
			    c.body.len, read_us + c.expires_in_us,
			    rcache_now_us());
		break;
	case CLAIM_MISMATCH:
		count(r, STAT_MISMATCHED);
		log_info("%s: key %s reused for a different request", r->tag,
		    lkey);
		reply_problem(r->out, PROB_KEY_MISMATCH, 0, 0, NULL);
		break;
	case CLAIM_TOMBSTONE:
		reply_problem(r->out, PROB_NOT_STORED, 0, c.status, NULL);
		break;
	case CLAIM_BUSY:
		count(r, STAT_CONFLICTED);
		log_info("%s: key %s still in progress after %lld ms", r->tag,
		    lkey, (long long)waited);
		reply_problem(r->out, PROB_KEY_IN_PROGRESS, retry, 0, NULL);
		break;
	}
out:
	claim_reset(&c);
}
