/* Unit tests for the gateway's FastCGI input: records, limits, params, refusals. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fconn.h"

/* Appends a record to b. */
static void
rec(struct buf *b, int type, int id, const void *p, size_t n)
{
	CHECK(fcgi_record(b, type, (uint16_t)id, p, n) == IDEM_OK);
}

static void
begin(struct buf *b, int id, int role, int flags)
{
	CHECK(fcgi_begin(b, (uint16_t)id, role, flags) == IDEM_OK);
}

/* A name-value pair with 1-byte lengths. */
static size_t
pair(unsigned char *o, const char *n, const char *v)
{
	size_t	 nl = strlen(n), vl = strlen(v);

	o[0] = (unsigned char)nl;
	o[1] = (unsigned char)vl;
	memcpy(o + 2, n, nl);
	memcpy(o + 2 + nl, v, vl);
	return 2 + nl + vl;
}

static void
test_request(void)
{
	struct fconn	 c;
	struct buf	 in;
	unsigned char	 pv[256];
	size_t		 n = 0, used = 0, i;
	char		**env;

	buf_init(&in, 1 << 20);
	begin(&in, 7, 1, 1);
	n += pair(pv + n, "REQUEST_METHOD", "POST");
	n += pair(pv + n, "REQUEST_URI", "/pay");
	n += pair(pv + n, "A=B", "dropped: '=' in the name");
	rec(&in, FCGI_PARAMS, 7, pv, n);
	rec(&in, FCGI_PARAMS, 7, NULL, 0);
	rec(&in, FCGI_STDIN, 7, "amount=1", 8);
	rec(&in, FCGI_STDIN, 7, NULL, 0);

	/* Byte by byte: EAGAIN until the last byte, then the request. */
	fconn_init(&c, 4096, 100);
	for (i = 0; i + 1 < in.len; i++)
		if (fconn_feed(&c, in.p + i, 1, &used) != IDEM_EAGAIN)
			break;
	CHECK(i + 1 == in.len);
	CHECK(fconn_feed(&c, in.p + i, 1, &used) == IDEM_OK && used == 1);
	CHECK(c.id == 7 && c.keep_conn == 1 && c.body_over == 0);
	CHECK(c.body.len == 8 && memcmp(c.body.p, "amount=1", 8) == 0);
	CHECK(fconn_params(&c, &env) == IDEM_OK);
	CHECK(env[0] != NULL && strcmp(env[0], "REQUEST_METHOD=POST") == 0);
	CHECK(env[1] != NULL && strcmp(env[1], "REQUEST_URI=/pay") == 0);
	CHECK(env[2] == NULL);
	free(env);
	fconn_reset(&c);

	/* Body at max is whole; max + 1 is refused (413 later, no reuse),
	 * the rest of it read and dropped to the end of STDIN, so the web
	 * server is not cut off mid-send. */
	fconn_init(&c, 4096, 8);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_OK);
	CHECK(c.body_over == 0 && c.body.len == 8);
	fconn_reset(&c);
	c.max_body = 7;
	fconn_reset(&c);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_OK);
	CHECK(c.body_over == 1 && c.keep_conn == 0 && used == in.len);
	CHECK(c.body.len == 0 && c.discarded == 8);
	fconn_reset(&c);
	/* Past FCONN_DISCARD_MAX dropped, the request ends where it is. */
	{
		struct buf	 big;
		static char	 chunk[65535];
		uint64_t	 fed = 0;
		enum idem_err	 er = IDEM_EAGAIN;

		buf_init(&big, 1 << 20);
		rec(&big, FCGI_STDIN, 7, chunk, sizeof(chunk));
		fconn_init(&c, 4096, 8);
		/* the head and params of in, without its STDIN */
		CHECK(fconn_feed(&c, in.p, in.len - 2 * FCGI_HDR_LEN - 8,
		    &used) == IDEM_EAGAIN);
		while (er == IDEM_EAGAIN && fed < FCONN_DISCARD_MAX + (2 << 20)) {
			er = fconn_feed(&c, big.p, big.len, &used);
			fed += used;
		}
		CHECK(er == IDEM_OK && c.stdin_done && c.body_over);
		CHECK(c.discarded > FCONN_DISCARD_MAX &&
		    fed < FCONN_DISCARD_MAX + (1 << 20));
		fconn_reset(&c);
		buf_free(&big);
	}

	/* Params past max_params: the connection goes. */
	fconn_init(&c, n - 1, 100);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_EINVAL);
	fconn_reset(&c);
	fconn_init(&c, n, 100);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_OK);
	fconn_reset(&c);
	buf_free(&c.params);
	buf_free(&c.body);
	buf_free(&c.reply);
	buf_free(&in);
}

static void
test_crafted(void)
{
	/* CVE-2025-23016 and kin: lengths past the record. */
	static const unsigned char lens[][8] = {
		{ 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xfe },
		{ 0xbf, 0xff, 0xff, 0xff, 0xbf, 0xff, 0xff, 0xff },
		{ 0xff, 0xff, 0xff, 0xf0, 0x80, 0, 0, 0x20 },
	};
	struct fconn	 c;
	struct buf	 in;
	unsigned char	 pv[16];
	size_t		 i, used;
	char		**env;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		buf_init(&in, 4096);
		begin(&in, 1, 1, 0);
		memcpy(pv, lens[i], 8);
		memset(pv + 8, 'A', 8);
		rec(&in, FCGI_PARAMS, 1, pv, sizeof(pv));
		rec(&in, FCGI_PARAMS, 1, NULL, 0);
		rec(&in, FCGI_STDIN, 1, NULL, 0);
		fconn_init(&c, 4096, 100);
		CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_OK);
		CHECK(fconn_params(&c, &env) == IDEM_EINVAL);
		fconn_reset(&c);
		buf_free(&c.params);
		buf_free(&c.body);
		buf_free(&c.reply);
		buf_free(&in);
	}
	/* Not version 1; stdin before params end; params after their end. */
	fconn_init(&c, 4096, 100);
	CHECK(fconn_feed(&c, "\x02\x01\0\x01\0\x08\0\0", 8, &used) ==
	    IDEM_EINVAL);
	fconn_reset(&c);
	buf_init(&in, 4096);
	begin(&in, 1, 1, 0);
	rec(&in, FCGI_STDIN, 1, "x", 1);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_EINVAL);
	fconn_reset(&c);
	buf_free(&in);
	buf_free(&c.params);
	buf_free(&c.body);
	buf_free(&c.reply);
}

static void
test_refusals(void)
{
	struct fconn	 c;
	struct buf	 in;
	unsigned char	 gv[64];
	size_t		 used, n;

	/* GET_VALUES is answered: no multiplexing. */
	buf_init(&in, 4096);
	n = pair(gv, "FCGI_MPXS_CONNS", "");
	rec(&in, FCGI_GET_VALUES, 0, gv, n);
	fconn_init(&c, 4096, 100);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_EAGAIN);
	CHECK(c.reply.len > 8 && (unsigned char)c.reply.p[1] ==
	    FCGI_GET_VALUES_RESULT);
	CHECK(memmem(c.reply.p, c.reply.len, "FCGI_MPXS_CONNS0", 16) != NULL);
	fconn_reset(&c);
	buf_reset(&in);
	/* A second request on the connection: CANT_MPX_CONN; a role other
	 * than responder: UNKNOWN_ROLE (with KEEP_CONN the connection
	 * stays). */
	begin(&in, 3, 2, FCGI_KEEP_CONN);
	begin(&in, 1, 1, 0);
	begin(&in, 2, 1, 0);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_EAGAIN);
	CHECK(c.id == 1 && c.reply.len == 32);
	CHECK(c.reply.p[1] == FCGI_END_REQUEST && c.reply.p[3] == 3 &&
	    c.reply.p[12] == FCGI_UNKNOWN_ROLE);
	CHECK(c.reply.p[16 + 3] == 2 &&
	    c.reply.p[16 + 12] == FCGI_CANT_MPX_CONN);
	fconn_reset(&c);
	buf_reset(&in);
	/* Without KEEP_CONN the refusal ends the connection: what comes
	 * after it is not read. */
	begin(&in, 4, 3, 0);
	begin(&in, 1, 1, 0);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_EIO);
	CHECK(c.id == 0 && c.reply.len == 16 && c.reply.p[3] == 4 &&
	    c.reply.p[12] == FCGI_UNKNOWN_ROLE);
	fconn_reset(&c);
	buf_reset(&in);
	/* ABORT_REQUEST of the request being read: END_REQUEST, and the
	 * connection ends. */
	begin(&in, 5, 1, FCGI_KEEP_CONN);
	n = pair(gv, "REQUEST_METHOD", "POST");
	rec(&in, FCGI_PARAMS, 5, gv, n);
	rec(&in, FCGI_ABORT_REQUEST, 5, "", 0);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_EIO);
	CHECK(c.reply.len == 16 && c.reply.p[1] == FCGI_END_REQUEST &&
	    c.reply.p[3] == 5 && c.reply.p[12] == FCGI_REQUEST_COMPLETE);
	fconn_reset(&c);
	buf_free(&in);
	buf_free(&c.params);
	buf_free(&c.body);
	buf_free(&c.reply);
}

/*
 * A second BEGIN_REQUEST for the request being read breaks its stream:
 * the connection goes, and no END_REQUEST is said for the live id (the
 * web server would read its request as answered).
 */
static void
test_begin_twice(void)
{
	struct fconn	 c;
	struct buf	 in;
	unsigned char	 pv[64];
	size_t		 used, n;

	buf_init(&in, 4096);
	begin(&in, 1, 1, 1);
	n = pair(pv, "REQUEST_METHOD", "POST");
	rec(&in, FCGI_PARAMS, 1, pv, n);
	begin(&in, 1, 1, 1);
	fconn_init(&c, 4096, 100);
	CHECK(fconn_feed(&c, in.p, in.len, &used) == IDEM_EINVAL);
	CHECK(c.reply.len == 0);
	fconn_reset(&c);
	buf_free(&in);
	buf_free(&c.params);
	buf_free(&c.body);
	buf_free(&c.reply);
}

int
main(void)
{
	test_request();
	test_crafted();
	test_refusals();
	test_begin_twice();
	return CHECK_DONE();
}
