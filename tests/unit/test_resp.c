/* Unit tests for the CGI response parser and the replay header filter. */
#include <stdlib.h>
#include <string.h>

#include "../lib/check.h"
#include "resp.h"

struct pcase {
	const char	*in;
	enum idem_err	 want;
	int		 status;
	const char	*hdrs;	/* expected normalised headers, if OK */
};

static const struct pcase cases[] = {
	{ "Content-Type: text/plain\r\n\r\nbody", IDEM_OK, 200,
	    "Content-Type: text/plain\r\n" },
	{ "Content-Type: text/plain\n\nbody", IDEM_OK, 200,
	    "Content-Type: text/plain\r\n" },
	{ "Content-type:text/html  \n\n", IDEM_OK, 200,
	    "Content-type: text/html\r\n" },
	{ "Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\n", IDEM_OK,
	    404, "Status: 404 Not Found\r\nContent-Type: text/plain\r\n" },
	/* the handler's reason phrase is kept, whatever it says */
	{ "Status: 299  Weird  Reason \nContent-Type: a\n\n", IDEM_OK, 299,
	    "Status: 299 Weird  Reason\r\nContent-Type: a\r\n" },
	{ "Status: 301 Moved\nLocation: /b\n\n", IDEM_OK, 301,
	    "Status: 301 Moved\r\nLocation: /b\r\n" },
	/* one no status line may carry (a control byte), or past 128
	 * bytes: not kept, the gateway's own phrase goes out */
	{ "Status: 404 Not\x01Found\nContent-Type: a\n\n", IDEM_OK, 404,
	    "Content-Type: a\r\n" },
	{ "Status: 201\nContent-Type: a/b\nX-A: 1\n\n", IDEM_OK, 201,
	    "Content-Type: a/b\r\nX-A: 1\r\n" },
	{ "status: 503 Busy\n\n", IDEM_OK, 503, "Status: 503 Busy\r\n" },
	{ "Status: 503\n\n", IDEM_OK, 503, "" },
	{ "Location: /elsewhere\n\n", IDEM_OK, 302, "Location: /elsewhere\r\n" },
	{ "Location: http://x.test/\r\n\r\n", IDEM_OK, 302,
	    "Location: http://x.test/\r\n" },
	{ "Status: 303 See Other\nLocation: /a\n\n", IDEM_OK, 303,
	    "Status: 303 See Other\r\nLocation: /a\r\n" },
	{ "Content-Type: text/plain\nX-Empty:\n\n", IDEM_OK, 200,
	    "Content-Type: text/plain\r\nX-Empty: \r\n" },
	{ "Content-Type: text/plain\r\nSet-Cookie: a=b\n\n", IDEM_OK, 200,
	    "Content-Type: text/plain\r\nSet-Cookie: a=b\r\n" },
	/* a tab and obs-text are a value's; other control bytes are not */
	{ "X-A: a\tb \xe4\nContent-Type: a\n\n", IDEM_OK, 200,
	    "X-A: a\tb \xe4\r\nContent-Type: a\r\n" },
	/* no Content-Type: sent without one (RFC 3875 6.3.1), as fcgiwrap */
	{ "X-Only: 1\n\n", IDEM_OK, 200, "X-Only: 1\r\n" },
	/* incomplete */
	{ "", IDEM_EAGAIN, 0, NULL },
	{ "Content-Type: text/plain", IDEM_EAGAIN, 0, NULL },
	{ "Content-Type: text/plain\r\n", IDEM_EAGAIN, 0, NULL },
	{ "Content-Type: text/plain\r\n\r", IDEM_EAGAIN, 0, NULL },
	/* bad */
	{ "\n", IDEM_EHANDLER, 0, NULL },
	{ "hello world\n\n", IDEM_EHANDLER, 0, NULL },
	{ "hello world\n", IDEM_EHANDLER, 0, NULL },
	{ "Content Type: text/plain\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Content-Type : text/plain\n\n", IDEM_EHANDLER, 0, NULL },
	{ ": text/plain\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Content-Type: a\n b\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Content-Type: a\rb\n\n", IDEM_EHANDLER, 0, NULL },
	/* a value with a control byte: that line goes, the answer stays */
	{ "X-A: a\x01" "b\nContent-Type: a\n\n", IDEM_OK, 200,
	    "Content-Type: a\r\n" },
	{ "X-A: a\x1b[0m\nContent-Type: a\nX-B: b\n\n", IDEM_OK, 200,
	    "Content-Type: a\r\nX-B: b\r\n" },
	{ "X-A: a\x7f\nContent-Type: a\n\n", IDEM_OK, 200,
	    "Content-Type: a\r\n" },
	{ "X\xc3\xa4: 1\nContent-Type: a\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Status: 99\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Status: 600\n\n", IDEM_EHANDLER, 0, NULL },
	/* 1xx is not a final answer: 101 replayed would hang the client */
	{ "Status: 100 Continue\nContent-Type: a\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Status: 101 Switching Protocols\nContent-Type: a\n\n",
	    IDEM_EHANDLER, 0, NULL },
	{ "Status: 199\nContent-Type: a\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Status: 200\nContent-Type: a\n\n", IDEM_OK, 200,
	    "Content-Type: a\r\n" },
	{ "Status: 2000\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Status: abc\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Status:\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Status: 200\nStatus: 200\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Status: 20x OK\n\n", IDEM_EHANDLER, 0, NULL },
	{ "Location:\n\n", IDEM_EHANDLER, 0, NULL },
	{ "HTTP/1.1 200 OK\r\nContent-Type: a\r\n\r\n", IDEM_EHANDLER, 0, NULL },
};

/* Offset just past the first empty line (LF or CRLF). */
static size_t
head_end(const char *s)
{
	const char *p = s;

	for (;;) {
		if (p[0] == '\n')
			return (size_t)(p - s) + 1;
		if (p[0] == '\r' && p[1] == '\n')
			return (size_t)(p - s) + 2;
		p = strchr(p, '\n') + 1;
	}
}

static void
test_table(void)
{
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		struct answer h;
		size_t used = 0, len = strlen(c->in);
		enum idem_err er;

		answer_init(&h, RESP_HEAD_MAX, 0);
		er = resp_parse_cgi(c->in, len, &h, &used, NULL);
		if (er != c->want)
			printf("case %zu: got %d want %d\n", i, er, c->want);
		CHECK(er == c->want);
		if (er == IDEM_OK && c->want == IDEM_OK) {
			size_t blank = head_end(c->in);

			CHECK(h.status == c->status);
			CHECK(used == blank);
			CHECK(h.hdrs.len == strlen(c->hdrs) &&
			    (h.hdrs.len == 0 ||
			    memcmp(h.hdrs.p, c->hdrs, h.hdrs.len) == 0));
		}
		answer_free(&h);
	}
}

/* A refused block says why, for the log. */
static void
test_why(void)
{
	static const struct {
		const char	*in, *why;
	} w[] = {
		{ "hello world\n\n", "not a token's" },
		{ "Xyz\n\n", "without a colon" },
		{ ": a\n\n", "no name" },
		{ "X: a\rb\n\n", "NUL or a bare CR" },
		{ "Status: 200\nStatus: 200\n\n", "two Status" },
		{ "Status: 600\n\n", "100 to 599" },
		{ "Status: 103 Early\n\n", "1xx" },
		{ "Location:\n\n", "empty Location" },
		{ "\n", "no header line" },
	};
	struct answer	 h;
	const char	*why;
	size_t		 i, used;

	answer_init(&h, RESP_HEAD_MAX, 0);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		why = NULL;
		CHECK(resp_parse_cgi(w[i].in, strlen(w[i].in), &h, &used,
		    &why) == IDEM_EHANDLER);
		CHECK(why != NULL && strstr(why, w[i].why) != NULL);
	}
	answer_free(&h);
}

/* NUL inside a value is refused; NUL in the body after the head is fine. */
static void
test_nul(void)
{
	static const char bad[] = "Content-Type: a\0b\n\n";
	static const char good[] = "Content-Type: ab\n\n\0\0body";
	struct answer h;
	size_t used;

	answer_init(&h, RESP_HEAD_MAX, 0);
	CHECK(resp_parse_cgi(bad, sizeof(bad) - 1, &h, &used, NULL) == IDEM_EHANDLER);
	CHECK(resp_parse_cgi(good, sizeof(good) - 1, &h, &used, NULL) == IDEM_OK);
	CHECK(used == 18);
	answer_free(&h);
}

/* Feeding a head one byte at a time: EAGAIN until the blank line. */
static void
test_incremental(void)
{
	const char *in = "Status: 201 Created\r\nContent-Type: x/y\r\n\r\nrest";
	size_t n, used = 0, end = strlen(in) - 4;
	struct answer h;
	int again = 1;

	answer_init(&h, RESP_HEAD_MAX, 0);
	for (n = 0; n < end; n++)
		if (resp_parse_cgi(in, n, &h, &used, NULL) != IDEM_EAGAIN)
			again = 0;
	CHECK(again);
	CHECK(resp_parse_cgi(in, end, &h, &used, NULL) == IDEM_OK);
	CHECK(used == end && h.status == 201);
	/* Parsing into a used head replaces its content. */
	CHECK(resp_parse_cgi(in, strlen(in), &h, &used, NULL) == IDEM_OK);
	CHECK(h.hdrs.len == strlen("Status: 201 Created\r\nContent-Type: x/y\r\n"));
	answer_free(&h);
	answer_free(NULL);
}

/* Builds a head of exactly total bytes (blank line included). */
static char *
big_head(size_t total)
{
	const char *ct = "Content-Type: text/plain\r\n";
	size_t fill, ctl = strlen(ct);
	char *p = malloc(total + 16);

	/* ct + "X: " + filler + "\r\n" + "\r\n" */
	fill = total - ctl - 3 - 2 - 2;
	memcpy(p, ct, ctl);
	memcpy(p + ctl, "X: ", 3);
	memset(p + ctl + 3, 'a', fill);
	memcpy(p + ctl + 3 + fill, "\r\n\r\n", 4);
	memcpy(p + total, "body", 4);
	return p;
}

static void
test_limit(void)
{
	struct answer h;
	size_t used = 0;
	char *p;

	answer_init(&h, RESP_HEAD_MAX, 0);
	p = big_head(RESP_HEAD_MAX);
	CHECK(resp_parse_cgi(p, RESP_HEAD_MAX + 4, &h, &used, NULL) == IDEM_OK);
	CHECK(used == RESP_HEAD_MAX);
	free(p);
	p = big_head(RESP_HEAD_MAX + 1);
	CHECK(resp_parse_cgi(p, RESP_HEAD_MAX, &h, &used, NULL) == IDEM_EAGAIN);
	CHECK(resp_parse_cgi(p, RESP_HEAD_MAX + 1, &h, &used, NULL) == IDEM_ETOOBIG);
	CHECK(resp_parse_cgi(p, RESP_HEAD_MAX + 5, &h, &used, NULL) == IDEM_ETOOBIG);
	free(p);
	answer_free(&h);
}

/* Only the gateway says whether a protected answer is a replay. */
static void
test_drop_idem(void)
{
	struct buf	 h;

	buf_init(&h, RESP_HEAD_MAX);
	buf_addstr(&h, "Idempotent-Replayed: true\r\nContent-Type: a\r\n"
	    "idempotency-result: reused\r\nX-B: 2\r\n"
	    "IDEMPOTENCY-RESULT: x\r\n"
	    "Idempotency-Expires: Thu, 01 Jan 2099 00:00:00 GMT\r\n");
	CHECK(resp_drop_idem_hdrs(&h) == IDEM_OK);
	CHECK(h.len == 25 && strcmp(h.p, "Content-Type: a\r\nX-B: 2\r\n") ==
	    0);
	CHECK(resp_drop_idem_hdrs(&h) == IDEM_OK);
	CHECK(h.len == 25);
	buf_reset(&h);
	CHECK(resp_drop_idem_hdrs(&h) == IDEM_OK);
	CHECK(h.len == 0);
	/* Hop-by-hop lines, and those a Connection line names, never reach
	 * the first client either: its header lines are its replays'. */
	buf_reset(&h);
	buf_addstr(&h, "Transfer-Encoding: chunked\r\nX-A: 1\r\n"
	    "Connection: close, X-Hop\r\nX-Hop: h\r\nKeep-Alive: 5\r\n"
	    "Set-Cookie: s=1\r\n");
	CHECK(resp_drop_idem_hdrs(&h) == IDEM_OK);
	CHECK(strcmp(h.p, "X-A: 1\r\nSet-Cookie: s=1\r\n") == 0);
	buf_free(&h);
}

/* One Content-Length, said once: what every web server reads alike. */
static void
test_content_length(void)
{
	static const struct { const char *in; long long want;
	    const char *out; } cl[] = {
		{ "Content-Type: a\r\n", -1, "Content-Type: a\r\n" },
		{ "Content-Length: 5\r\n", 5, "Content-Length: 5\r\n" },
		{ "content-length: 0\r\nX: 1\r\n", 0,
		    "content-length: 0\r\nX: 1\r\n" },
		/* two numbers: a web server takes the one or the other */
		{ "Content-Length: 5\r\nX: 1\r\nContent-Length: 100\r\n",
		    -1, "Content-Length: 5\r\nX: 1\r\nContent-Length: 100"
		    "\r\n" },
		{ "Content-Length: 3, 3\r\n", -1, "Content-Length: 3, 3\r\n" },
		{ "Content-Length: 5\r\nContent-Length: x\r\n", -1,
		    "Content-Length: 5\r\nContent-Length: x\r\n" },
		{ "Content-Length: 1234567890123456789\r\n", -1,
		    "Content-Length: 1234567890123456789\r\n" },
		/* one number twice: said once, where it first was */
		{ "X: 1\r\nContent-Length: 7\r\nY: 2\r\nCONTENT-LENGTH: 7\r\n"
		    "Z: 3\r\n", 7, "X: 1\r\nContent-Length: 7\r\nY: 2\r\n"
		    "Z: 3\r\n" },
	};
	struct buf	 h;
	size_t		 i;

	buf_init(&h, RESP_HEAD_MAX);
	for (i = 0; i < sizeof(cl) / sizeof(cl[0]); i++) {
		buf_reset(&h);
		buf_addstr(&h, cl[i].in);
		CHECK(resp_content_length(&h) == cl[i].want);
		CHECK(h.len == strlen(cl[i].out) &&
		    strcmp(h.p, cl[i].out) == 0);
	}
	buf_free(&h);
}

static char *const cookies[] = { "Set-Cookie", "Set-Cookie2" };
static char *const other[] = { "location", "X-OTHER" };

static void
test_replay(void)
{
	struct buf in, out;
	const char *v;
	size_t vl;

	buf_init(&in, RESP_HEAD_MAX);
	buf_init(&out, RESP_HEAD_MAX);
	buf_addstr(&in, "Content-Type: text/plain\r\n"
	    "Connection: close, X-Secret\r\n"
	    "Keep-Alive: timeout=5\r\n"
	    "Set-Cookie: s=1\r\n"
	    "set-cookie: s=2\r\n"
	    "Location: /x\r\n"
	    "Proxy-Authenticate: Basic\r\n"
	    "Transfer-Encoding: chunked\r\n"
	    "TE: trailers\r\nTrailer: X\r\nUpgrade: h2c\r\n"
	    "X-Secret: 1\r\n"
	    "ETag: \"abc\"\r\n"
	    "X-Other: y\r\n");
	CHECK(resp_hdrs_for_replay(&in, cookies, 2, &out) == IDEM_OK);
	CHECK(out.len > 0 && strcmp(out.p, "Content-Type: text/plain\r\n"
	    "Location: /x\r\nETag: \"abc\"\r\nX-Other: y\r\n") == 0);
	/* store_headers_drop: the route's names, and cookies whatever
	 * it lists (SPEC 2). */
	buf_reset(&out);
	CHECK(resp_hdrs_for_replay(&in, other, 2, &out) == IDEM_OK);
	CHECK(out.len > 0 && strcmp(out.p, "Content-Type: text/plain\r\n"
	    "ETag: \"abc\"\r\n") == 0);
	buf_reset(&out);
	CHECK(resp_hdrs_for_replay(&in, NULL, 0, &out) == IDEM_OK);
	CHECK(out.len > 0 && resp_hdr_get(&out, "set-cookie", &vl) == NULL);
	buf_reset(&out);

	CHECK(!resp_hdr_dropped_on_replay("SET-COOKIE", 10));
	CHECK(resp_hdr_dropped_on_replay("proxy-connection", 16));
	CHECK(resp_hdr_dropped_on_replay("Connection", 10));
	CHECK(!resp_hdr_dropped_on_replay("Content-Type", 12));
	CHECK(!resp_hdr_dropped_on_replay("Set-Cookies", 11));
	CHECK(!resp_hdr_dropped_on_replay("TEx", 3));

	v = resp_hdr_get(&in, "content-type", &vl);
	CHECK(v != NULL && vl == 10 && memcmp(v, "text/plain", 10) == 0);
	v = resp_hdr_get(&in, "ETAG", &vl);
	CHECK(v != NULL && vl == 5 && memcmp(v, "\"abc\"", 5) == 0);
	CHECK(resp_hdr_get(&in, "Content", &vl) == NULL);
	CHECK(resp_hdr_get(&out, "Set-Cookie", &vl) == NULL);

	/* A full out buffer leaves out unchanged. */
	buf_free(&out);
	buf_init(&out, 30);
	buf_addstr(&out, "A: b\r\n");
	CHECK(resp_hdrs_for_replay(&in, cookies, 2, &out) == IDEM_ETOOBIG);
	CHECK(out.len == 6 && strcmp(out.p, "A: b\r\n") == 0);
	buf_free(&in);
	buf_free(&out);

	/* An empty list. */
	buf_init(&in, 10);
	buf_init(&out, 10);
	CHECK(resp_hdrs_for_replay(&in, NULL, 0, &out) == IDEM_OK &&
	    out.len == 0);
	CHECK(resp_hdr_get(&in, "X", &vl) == NULL);
	buf_free(&in);
	buf_free(&out);
}

/* A reason phrase of RESP_REASON_MAX bytes is kept; one byte more, the
 * gateway's own goes out. */
static void
test_reason_max(void)
{
	char		 in[RESP_REASON_MAX + 64], want[RESP_REASON_MAX + 32];
	struct answer	 h;
	size_t		 used;
	int		 n;

	for (n = RESP_REASON_MAX; n <= RESP_REASON_MAX + 1; n++) {
		snprintf(in, sizeof(in), "Status: 299 %0*d\n\n", n, 7);
		snprintf(want, sizeof(want), "Status: 299 %0*d\r\n", n, 7);
		answer_init(&h, RESP_HEAD_MAX, 0);
		CHECK(resp_parse_cgi(in, strlen(in), &h, &used, NULL) == IDEM_OK);
		CHECK(h.status == 299);
		if (n == RESP_REASON_MAX)
			CHECK(h.hdrs.len == strlen(want) &&
			    memcmp(h.hdrs.p, want, h.hdrs.len) == 0);
		else
			CHECK(h.hdrs.len == 0);
		answer_free(&h);
	}
}

int
main(void)
{
	test_table();
	test_nul();
	test_why();
	test_incremental();
	test_reason_max();
	test_limit();
	test_drop_idem();
	test_content_length();
	test_replay();
	return CHECK_DONE();
}
