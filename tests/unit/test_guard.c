/* Unit tests for idemgate's pure request logic: sink, problems, params, peers. */
#include <stdlib.h>
#include <string.h>

#include "../lib/check.h"
#include "guard.h"
#include "lease.h"
#include "handler.h"
#include "listen.h"
#include "params.h"
#include "problem.h"
#include "request.h"

/* A client that keeps what it gets, or fails after `limit` bytes. */
struct mem_client {
	struct buf	 got;
	size_t		 limit;
};

static int
mem_write(void *arg, const void *p, size_t n)
{
	struct mem_client	*m = arg;

	if (m->got.len + n > m->limit)
		return -1;
	return buf_add(&m->got, p, n) == IDEM_OK ? 0 : -1;
}

static void
client_init(struct mem_client *m, struct reply *o, size_t limit)
{
	buf_init(&m->got, 1 << 20);
	m->limit = limit;
	memset(o, 0, sizeof(*o));
	o->write = mem_write;
	o->arg = m;
}

static void
test_problem(void)
{
	struct buf	 h, b;

	buf_init(&h, 4096);
	buf_init(&b, 4096);
	CHECK(problem_render(PROB_KEY_IN_PROGRESS, NULL, 3, 0, &h, &b) == IDEM_OK);
	CHECK(strstr(h.p, "Content-Type: application/problem+json\r\n") != NULL);
	CHECK(strstr(h.p, "Cache-Control: no-store\r\n") != NULL);
	CHECK(strstr(h.p, "Retry-After: 3\r\n") != NULL);
	CHECK(strstr(b.p, "\"type\":\"urn:idemgate:problem:key-in-progress\"") != NULL);
	CHECK(strstr(b.p, "\"status\":409") != NULL);
	CHECK(strstr(b.p, "original_status") == NULL);
	buf_reset(&h);
	buf_reset(&b);
	CHECK(problem_render(PROB_NOT_STORED, NULL, 0, 201, &h, &b) == IDEM_OK);
	CHECK(strstr(h.p, "Retry-After") == NULL);
	CHECK(strstr(b.p, "\"original_status\":201") != NULL);
	CHECK(strstr(b.p, "response-not-stored") != NULL);
	buf_free(&h);
	buf_free(&b);

	CHECK(problem_status(problem_from_err(IDEM_ETIMEOUT)) == 504);
	CHECK(problem_status(problem_from_err(IDEM_EHANDLER)) == 502);
	CHECK(problem_status(problem_from_err(IDEM_EIO)) == 502);
	CHECK(problem_status(problem_from_err(IDEM_ENOTFOUND)) == 404);
	CHECK(problem_status(problem_from_err(IDEM_EFORBIDDEN)) == 403);
	CHECK(problem_status(PROB_HEADERS_TOO_LARGE) == 431);
	CHECK(problem_status(PROB_BODY_TOO_LARGE) == 413);
	CHECK(problem_status(PROB_KEY_MISMATCH) == 422);
	CHECK(problem_status(PROB_STORE_UNAVAILABLE) == 503);
	CHECK(strcmp(problem_slug(PROB_MISSING_SCOPE), "missing-scope") == 0);
}

static void
test_guard_helpers(void)
{
	char	 p[32];

	CHECK(guard_header_param("Idempotency-Key", p, sizeof(p)) == IDEM_OK);
	CHECK(strcmp(p, "HTTP_IDEMPOTENCY_KEY") == 0);
	CHECK(guard_header_param("x-api-key", p, sizeof(p)) == IDEM_OK);
	CHECK(strcmp(p, "HTTP_X_API_KEY") == 0);
	/* "HTTP_" + 26 + NUL == 32 fits; one more does not. */
	CHECK(guard_header_param("abcdefghijklmnopqrstuvwxyz", p, sizeof(p)) == IDEM_OK);
	CHECK(guard_header_param("abcdefghijklmnopqrstuvwxyz1", p, sizeof(p)) == IDEM_ETOOBIG);
	/* Authorization by meaning: scheme case and repeated spaces. */
	{
		static const char *const same[] = { "Bearer abc",
			"bearer abc", "Bearer  abc", "BEARER \t abc" };
		char	*n;
		size_t	 i;

		for (i = 0; i < 4; i++) {
			n = fp_auth_norm(same[i]);
			CHECK(n != NULL && strcmp(n, "bearer abc") == 0);
			free(n);
		}
		n = fp_auth_norm("Bearer ABC");
		CHECK(n != NULL && strcmp(n, "bearer ABC") == 0);
		free(n);
		n = fp_auth_norm("Basic dXNlcjpw YQ==");
		CHECK(n != NULL && strcmp(n, "basic dXNlcjpw YQ==") == 0);
		free(n);
		/* A bare key has no scheme: its case is its meaning. */
		n = fp_auth_norm("AbC123");
		CHECK(n != NULL && strcmp(n, "AbC123") == 0);
		free(n);
	}
	CHECK(problem_status(PROB_AMBIGUOUS_HEADER) == 400);
	CHECK(strcmp(problem_slug(PROB_AMBIGUOUS_HEADER), "ambiguous-header") ==
	    0);
	CHECK(lease_retry_after(0, 10000) == 1);
	CHECK(lease_retry_after(-5, 10000) == 1);
	CHECK(lease_retry_after(1000, 10000) == 1);
	CHECK(lease_retry_after(1001, 10000) == 2);
	CHECK(lease_retry_after(59500, 60000) == 60);
	/* the route's wait when shorter: a retry waits that long itself */
	CHECK(lease_retry_after(59500, 10000) == 10);
	CHECK(lease_retry_after(59500, 0) == 1);
	/* an unbounded run never says come back after the key's ttl */
	CHECK(lease_retry_after(INT64_MAX / 2, 10000) == 10);
	CHECK(lease_tick_ms(60000) == 20000);
	CHECK(lease_tick_ms(30) == 100);
	CHECK(cfg_lease_margin_ms(60000) == 5000);
	CHECK(cfg_lease_margin_ms(3000) == 600);
	CHECK(cfg_lease_margin_ms(1000) == 300);
	CHECK(cfg_lease_margin_ms(400) == 200);
	{
		char	 l[64];

		guard_key_for_log("order-1001", 10, l, sizeof(l));
		CHECK(strcmp(l, "or...(10 bytes)") == 0);
		guard_key_for_log("abc", 3, l, sizeof(l));
		CHECK(strcmp(l, "...(3 bytes)") == 0);
		guard_key_for_log("0123456789abcdef0123456789abcdef0123", 36,
		    l, sizeof(l));
		CHECK(strcmp(l, "01234567...(36 bytes)") == 0);
	}
}

static void
test_request_helpers(void)
{
	char	*env1[] = { "REQUEST_URI=/pay/x?a=1#f", "QUERY_STRING=a=1",
	    "HTTP_IDEMPOTENCY_RESULT=reused", "HTTP_X=1",
	    "HTTP_IDEMPOTENT_REPLAYED=true", NULL };
	char	*env2[] = { "SCRIPT_NAME=/cgi", "PATH_INFO=/p", NULL };
	char	*env3[] = { NULL };
	char	**f, *p;
	size_t	 n;

	CHECK(strcmp(request_param(env1, "QUERY_STRING"), "a=1") == 0);
	CHECK(request_param(env1, "QUERY") == NULL);
	CHECK(request_params_size(env1) == strlen(env1[0]) + strlen(env1[1]) +
	    strlen(env1[2]) + strlen(env1[3]) + strlen(env1[4]));
	p = request_path(env1);
	CHECK(p != NULL && strcmp(p, "/pay/x") == 0);
	free(p);
	p = request_path(env2);
	CHECK(p != NULL && strcmp(p, "/cgi/p") == 0);
	free(p);
	p = request_path(env3);
	CHECK(p != NULL && strcmp(p, "/") == 0);
	free(p);
	/* An absolute-form target (Apache passes it on as sent): its path. */
	{
		static const char *const abs[][2] = {
			{ "http://localhost/api/charge?a=1", "/api/charge" },
			{ "HTTPS://h:8443/pay", "/pay" },
			{ "http://h", "/" }, { "http://h?x=1", "/" },
			{ "svn+ssh://h/x", "/x" },
			/* not a scheme: as they are */
			{ "/a/http://b/c", "/a/http://b/c" },
			{ "1http://h/x", "1http://h/x" },
			{ "http:/x", "http:/x" },
		};
		char	 uri[128], *e[2] = { uri, NULL };
		size_t	 i;

		for (i = 0; i < sizeof(abs) / sizeof(abs[0]); i++) {
			snprintf(uri, sizeof(uri), "REQUEST_URI=%s", abs[i][0]);
			p = request_path(e);
			CHECK(p != NULL && strcmp(p, abs[i][1]) == 0);
			free(p);
		}
	}

	CHECK(request_content_length("0", &n) == IDEM_OK && n == 0);
	CHECK(request_content_length("1048576", &n) == IDEM_OK && n == 1048576);
	CHECK(request_content_length("", &n) == IDEM_EINVAL);
	CHECK(request_content_length("12a", &n) == IDEM_EINVAL);
	CHECK(request_content_length("-1", &n) == IDEM_EINVAL);
	CHECK(request_content_length("99999999999999999999999", &n) == IDEM_EINVAL);

	f = request_params_filter(env1, NULL);
	CHECK(f != NULL);
	CHECK(f[0] == env1[0] && f[1] == env1[1] && f[2] == env1[3] &&
	    f[3] == NULL);
	free(f);
}

static const char head[] = "Content-Type: text/plain\r\n"
    "Idempotency-Result: forged\r\nStatus: 201 Created\r\n\r\n";

static void
test_sink_unbuffered(void)
{
	struct mem_client	 m;
	struct reply		 o;
	struct sink		 s;

	client_init(&m, &o, (size_t)-1);
	sink_init(&s, 0, 0, NULL, &o);
	/* Head split over two writes. */
	CHECK(sink_feed(&s, head, 10) == IDEM_OK);
	CHECK(!s.have_head && m.got.len == 0);
	CHECK(sink_feed(&s, head + 10, sizeof(head) - 11) == IDEM_OK);
	CHECK(s.have_head && s.streaming);
	CHECK(sink_feed(&s, "body", 4) == IDEM_OK);
	CHECK(strncmp(m.got.p, "Status: 201 Created\r\n", 21) == 0);
	/* Unprotected answers pass through untouched. */
	CHECK(strstr(m.got.p, "Idempotency-Result: forged") != NULL);
	CHECK(m.got.len > 4 && memcmp(m.got.p + m.got.len - 6, "\r\nbody", 6) == 0);
	sink_free(&s);
	buf_free(&m.got);
}

static void
test_sink_buffered(size_t bodylen, int want_oversized)
{
	struct mem_client	 m;
	struct reply		 o;
	struct sink		 s;
	char			*body;

	body = malloc(bodylen + 1);
	memset(body, 'x', bodylen);
	client_init(&m, &o, (size_t)-1);
	sink_init(&s, 1, 100, "Idempotency-Result: created\r\n", &o);
	CHECK(sink_feed(&s, head, sizeof(head) - 1) == IDEM_OK);
	CHECK(s.have_head && !s.streaming);
	CHECK(strstr(s.ans.hdrs.p, "Idempotency-Result") == NULL);
	CHECK(strstr(s.ans.hdrs.p, "Content-Type: text/plain") != NULL);
	CHECK(sink_feed(&s, body, bodylen / 2) == IDEM_OK);
	CHECK(sink_feed(&s, body + bodylen / 2, bodylen - bodylen / 2) ==
	    IDEM_OK);
	CHECK(s.oversized == want_oversized);
	if (want_oversized) {
		CHECK(s.streaming);
		CHECK(strstr(m.got.p, "Idempotency-Result: created\r\n") != NULL);
		CHECK(m.got.len >= bodylen &&
		    memcmp(m.got.p + m.got.len - bodylen, body, bodylen) == 0);
	} else {
		CHECK(m.got.len == 0 && s.ans.body.len == bodylen);
	}
	sink_free(&s);
	buf_free(&m.got);
	free(body);
}

static void
test_sink_errors(void)
{
	struct mem_client	 m;
	struct reply		 o;
	struct sink		 s;
	char			*big;

	client_init(&m, &o, (size_t)-1);
	sink_init(&s, 1, 100, NULL, &o);
	CHECK(sink_feed(&s, "no colon here\r\n\r\n", 17) == IDEM_EHANDLER);
	sink_free(&s);

	/* A head that never ends is refused, not buffered forever. */
	big = malloc(RESP_HEAD_MAX + 70000);
	memset(big, 'a', RESP_HEAD_MAX + 70000);
	sink_init(&s, 1, 100, NULL, &o);
	CHECK(sink_feed(&s, big, RESP_HEAD_MAX + 70000) == IDEM_EHANDLER);
	sink_free(&s);
	free(big);

	/* A client that goes away stops a pass-through run (nobody reads
	 * its answer) ... */
	buf_free(&m.got);
	client_init(&m, &o, 5);
	sink_init(&s, 0, 0, NULL, &o);
	CHECK(sink_feed(&s, head, sizeof(head) - 1) == IDEM_EIO);
	CHECK(o.failed == 1);
	sink_free(&s);
	buf_free(&m.got);
	/* ... never a kept one, even streamed (too large to keep): it is
	 * recorded. */
	client_init(&m, &o, 5);
	sink_init(&s, 1, 4, NULL, &o);
	CHECK(sink_feed(&s, head, sizeof(head) - 1) == IDEM_OK);
	CHECK(sink_feed(&s, "more than four", 14) == IDEM_OK);
	CHECK(s.oversized && o.failed == 1);
	CHECK(sink_feed(&s, "more", 4) == IDEM_OK);
	sink_free(&s);
	buf_free(&m.got);
}

/* 1 if an answer of status with no headers of its own has head want. */
static int
bare_head(int status, const char *want)
{
	struct mem_client	 m;
	struct reply		 o;
	struct answer		 a;
	int			 same;

	answer_init(&a, 1024, 1024);
	a.status = status;
	client_init(&m, &o, (size_t)-1);
	reply_head(&o, &a, NULL);
	same = m.got.len == strlen(want) &&
	    memcmp(m.got.p, want, m.got.len) == 0;
	buf_free(&m.got);
	answer_free(&a);
	return same;
}

static void
test_reply(void)
{
	struct mem_client	 m;
	struct reply		 o;

	client_init(&m, &o, (size_t)-1);
	reply_problem(&o, PROB_MISSING_KEY, 0, 0, NULL);
	CHECK(strncmp(m.got.p, "Status: 400 Bad Request\r\n", 25) == 0);
	CHECK(strstr(m.got.p, "\r\n\r\n{\"type\":\"urn:idemgate:problem:missing-key\"") != NULL);
	buf_free(&m.got);

	/* A handler's bare status gets its registered phrase, or none (the
	 * web server's own), never an empty one. */
	CHECK(bare_head(208, "Status: 208 Already Reported\r\n\r\n"));
	CHECK(bare_head(299, "Status: 299\r\n\r\n"));
}

static void
test_peers(void)
{
	CHECK(listen_addr_listed("127.0.0.1", NULL) == 1);
	CHECK(listen_addr_listed("127.0.0.1", "") == 1);
	CHECK(listen_addr_listed("127.0.0.1", "127.0.0.1") == 1);
	CHECK(listen_addr_listed("127.0.0.1", "10.0.0.1, 127.0.0.1") == 1);
	CHECK(listen_addr_listed("127.0.0.2", "10.0.0.1,127.0.0.1") == 0);
	CHECK(listen_addr_listed("127.0.0.1", "127.0.0.10") == 0);
	CHECK(listen_addr_listed("::1", "127.0.0.1,::1") == 1);
	CHECK(listen_addr_listed("::1", "127.0.0.1") == 0);
	CHECK(listen_addr_listed("garbage", "127.0.0.1") == 0);
}

/* fp of a POST with these params (route: exact fingerprint, no headers). */
static void
fp_of(char **envp, unsigned char fp[FP_LEN])
{
	struct route	 rt;
	struct request	 r;

	memset(&rt, 0, sizeof(rt));
	memset(&r, 0, sizeof(r));
	r.envp = envp;
	r.route = &rt;
	r.method = "POST";
	r.path = "/pay";
	r.query = request_param(envp, "QUERY_STRING");
	r.ctype = "application/json";
	r.body.p = "{}";
	r.body.len = 2;
	CHECK(guard_fingerprint(&r, fp) == IDEM_OK);
}

/*
 * What the handler reads is what is fingerprinted: a param sent twice
 * is its last value (as a CGI environment and PHP-FPM keep it), and a
 * query a rewrite left only in REQUEST_URI counts; where REQUEST_URI's
 * query is QUERY_STRING, the fingerprint is the one it always was.
 */
static void
test_fingerprint_reads(void)
{
	char		*twice[] = { "QUERY_STRING=amount=10",
	    "QUERY_STRING=amount=1000", NULL };
	char		*rw10[] = { "REQUEST_URI=/pay?amount=10",
	    "QUERY_STRING=r=pay", NULL };
	char		*rw1000[] = { "REQUEST_URI=/pay?amount=1000",
	    "QUERY_STRING=r=pay", NULL };
	char		*plain[] = { "REQUEST_URI=/pay?r=pay#x",
	    "QUERY_STRING=r=pay", NULL };
	char		*bare[] = { "REQUEST_URI=/pay", "QUERY_STRING=", NULL };
	/* lighttpd: the original in REQUEST_URI, QUERY_STRING normalised */
	char		*norm[] = { "REQUEST_URI=/pay?a=%7e%2f",
	    "QUERY_STRING=a=~%2F", NULL };
	char		*front[] = { "REQUEST_URI=/pay?amount=10",
	    "QUERY_STRING=q=/pay&amount=10", NULL };
	/* The same rewrite behind two web servers: REQUEST_URI's query as
	 * the client spelled it, and as another spelled it; one request */
	char		*rwl[] = { "REQUEST_URI=/pay?amount=%7e10",
	    "QUERY_STRING=r=pay", NULL };
	char		*rwu[] = { "REQUEST_URI=/pay?amount=~10",
	    "QUERY_STRING=r=pay", NULL };
	unsigned char	 a[FP_LEN], b[FP_LEN], old[FP_LEN];

	CHECK(strcmp(request_param(twice, "QUERY_STRING"), "amount=1000") ==
	    0);
	fp_of(rw10, a);
	fp_of(rw1000, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	fp_of(plain, a);
	fp_request(&(struct fp_req){ .method = "POST", .path = "/pay",
	    .query = "r=pay", .ctype = "application/json", .body = "{}",
	    .bodylen = 2 }, old);
	CHECK(memcmp(a, old, FP_LEN) == 0);
	fp_of(bare, a);
	fp_request(&(struct fp_req){ .method = "POST", .path = "/pay",
	    .query = "", .ctype = "application/json", .body = "{}",
	    .bodylen = 2 }, old);
	CHECK(memcmp(a, old, FP_LEN) == 0);
	fp_of(norm, a);
	fp_request(&(struct fp_req){ .method = "POST", .path = "/pay",
	    .query = "a=~%2F", .ctype = "application/json", .body = "{}",
	    .bodylen = 2 }, old);
	CHECK(memcmp(a, old, FP_LEN) == 0);
	fp_of(front, a);		/* a front controller's query */
	fp_request(&(struct fp_req){ .method = "POST", .path = "/pay",
	    .query = "q=/pay&amount=10", .ctype = "application/json",
	    .body = "{}", .bodylen = 2 }, old);
	CHECK(memcmp(a, old, FP_LEN) != 0);
	fp_of(rwl, a);
	fp_of(rwu, b);
	CHECK(memcmp(a, b, FP_LEN) == 0);
	fp_of(rw10, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
}

int
main(void)
{
	test_problem();
	test_guard_helpers();
	test_request_helpers();
	test_fingerprint_reads();
	test_sink_unbuffered();
	test_sink_buffered(100, 0);	/* n == max: kept */
	test_sink_buffered(101, 1);	/* n == max + 1: streamed, tombstone */
	test_sink_buffered(0, 0);
	test_sink_errors();
	test_reply();
	test_peers();
	return CHECK_DONE();
}
