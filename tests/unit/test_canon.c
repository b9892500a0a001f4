/* Unit tests for canonical request bodies: JSON, forms, multipart, fallbacks and bounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/check.h"
#include "canon.h"

/* 1 if body a as type ta and body b as type tb have equal canonical
 * forms; -1 if either does not canonicalise. */
static int
canon_eq(const char *ta, const char *a, const char *tb, const char *b)
{
	struct buf	 x, y;
	const char	*ca = ta, *cb = tb;
	int		 r;

	buf_init(&x, CANON_MAX(strlen(a)));
	buf_init(&y, CANON_MAX(strlen(b)));
	if (!canon_body(ta, a, strlen(a), &x, &ca) ||
	    !canon_body(tb, b, strlen(b), &y, &cb))
		r = -1;
	else
		r = x.len == y.len && memcmp(x.p, y.p, x.len) == 0 &&
		    strcmp(ca, cb) == 0;
	buf_free(&x);
	buf_free(&y);
	return r;
}

/* a and b as ctype */
static int
same(const char *ctype, const char *a, const char *b)
{
	return canon_eq(ctype, a, ctype, b);
}

/* body as type a and as type b */
static int
same_type(const char *a, const char *b, const char *body)
{
	return canon_eq(a, body, b, body);
}

static int parses(const char *ctype, const char *a, size_t n);

/* A media type's parameters: a charset of utf-8 is what JSON is and a
 * form is read as without one; any other charset or parameter is
 * another request (a parser decodes or refuses it otherwise). */
static void
test_params(void)
{
	const char	*js = "application/json", *f =
	    "application/x-www-form-urlencoded", *mp =
	    "multipart/form-data; boundary=XYZ", *part =
	    "--XYZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n"
	    "1\r\n--XYZ--\r\n";

	CHECK(same_type(js, "application/json; charset=utf-8", "{}") == 1);
	CHECK(same_type(js, "application/json;charset=\"UTF-8\"", "{}") == 1);
	CHECK(same_type(js, "application/json; CHARSET=Utf-8;", "{}") == 1);
	CHECK(same_type(js, "application/json; charset=iso-8859-1", "{}") == 0);
	CHECK(same_type(js, "application/json; charset=utf-16", "{}") == 0);
	CHECK(same_type(js, "application/json; profile=v2", "{}") == 0);
	CHECK(same_type("application/json; a=1; b=2",
	    "application/json; b=2;a=\"1\"", "{}") == 1);
	CHECK(same_type("application/json; a=1", "application/json; a=2",
	    "{}") == 0);
	CHECK(same_type(f, "application/x-www-form-urlencoded; charset=utf-8",
	    "a=1") == 1);
	CHECK(same_type(f, "application/x-www-form-urlencoded; "
	    "charset=iso-8859-1", "a=1") == 0);
	CHECK(same_type(mp, "multipart/form-data; boundary=XYZ; charset=utf-8",
	    part) == 1);
	CHECK(same_type(mp, "multipart/form-data; boundary=XYZ; charset=latin1",
	    part) == 0);
	/* the parameters are in the type's own field: no body spells them */
	CHECK(canon_eq("application/x-www-form-urlencoded; charset=iso-8859-1",
	    "z=1", f, "params=charset%3Diso-8859-1&z=1") == 0);
	CHECK(canon_eq("application/x-www-form-urlencoded; a=1; b=2", "z=1",
	    f, "params=2&a%3D1=b%3D2&z=1") == 0);
	CHECK(canon_eq("application/x-www-form-urlencoded; a=1", "z=1",
	    f, "form=a%3D1&z=1") == 0);
	/* a name twice: which one a parser takes is its own */
	CHECK(!parses("application/json; charset=utf-8; charset=iso-8859-1",
	    "{}", 2));
	CHECK(!parses("application/json; charset=iso-8859-1; CHARSET=utf-8",
	    "{}", 2));
	CHECK(!parses("application/json; a=1; a=1", "{}", 2));
	CHECK(parses("application/json; a=1; ab=1", "{}", 2));
	/* at most 16 parameters, 1024 bytes of them */
	{
		char	 ct[2048];
		size_t	 i, o;

		o = (size_t)snprintf(ct, sizeof(ct), "application/json");
		for (i = 0; i < 16; i++)
			o += (size_t)snprintf(ct + o, sizeof(ct) - o,
			    "; p%zu=v", i);
		CHECK(parses(ct, "{}", 2));
		snprintf(ct + o, sizeof(ct) - o, "; p16=v");
		CHECK(!parses(ct, "{}", 2));
		/* "a=" + value + NUL within 1024 bytes of names and values */
		memset(ct, 0, sizeof(ct));
		o = (size_t)snprintf(ct, sizeof(ct), "application/json; a=");
		memset(ct + o, 'v', 1020);
		CHECK(parses(ct, "{}", 2));	/* 2 + 1020 + NUL = 1023 */
		ct[o + 1020] = 'v';
		CHECK(!parses(ct, "{}", 2));	/* 1024: no room */
	}
	/* parameters that do not parse: the exact bytes are kept */
	CHECK(!parses("application/json; charset", "{}", 2));
	CHECK(!parses("application/json; charset=\"utf-8", "{}", 2));
	CHECK(!parses("application/json; =x", "{}", 2));
	/* a quoted-pair: PHP ends a boundary at the first '"', Python
	 * unescapes it */
	{
		const char	*bs = "--ab\\\r\nContent-Disposition: form-data; "
		    "name=\"a\"\r\n\r\n1\r\n--ab\\--\r\n";

		/* PHP splits on "ab\", Python on "ab\"; charset=x" */
		CHECK(!parses("multipart/form-data; boundary=\"ab\\\"; "
		    "charset=x\"", bs, strlen(bs)));
	}
	CHECK(!parses("application/json; a=\"x\\\"y\"", "{}", 2));
	CHECK(!parses("application/json; a=1 b", "{}", 2));
}

static int
parses(const char *ctype, const char *a, size_t n)
{
	struct buf	 x;
	const char	*c = ctype;
	int		 r;

	buf_init(&x, CANON_MAX(n));
	r = canon_body(ctype, a, n, &x, &c);
	CHECK(r || (x.len == 0 && c == ctype));
	buf_free(&x);
	return r;
}

static void
test_json(void)
{
	const char	*js = "application/json";
	char		*deep;
	size_t		 i, n = 200000;

	CHECK(same(js, "{\"a\":1,\"b\":[1,2]}", "{ \"b\":[1, 2],\n \"a\":1 }") == 1);
	CHECK(same(js, "{\"a\":1}", "{\"a\":1.0}") == 1);
	CHECK(same(js, "{\"a\":100}", "{\"a\":1e2}") == 1);
	CHECK(same(js, "{\"s\":\"A\\u00e9\"}", "{\"s\":\"A\xc3\xa9\"}") == 1);
	CHECK(same(js, "{\"a\":1}", "{\"a\":2}") == 0);
	CHECK(same(js, "[1,2]", "[2,1]") == 0);
	CHECK(same(js, "{\"a\":\"1\"}", "{\"a\":1}") == 0);
	CHECK(same("application/vnd.api+json", "{\"x\":[]}", "{ \"x\" : [ ] }") == 1);
	CHECK(same("application/json; charset=utf-8", "{\"a\":1}", "{\"a\":1}") == 1);
	/* not JSON, duplicate keys, trailing garbage: exact bytes */
	CHECK(!parses(js, "{\"a\":1,}", 8));
	CHECK(!parses(js, "{\"a\":1,\"a\":2}", 13));
	CHECK(!parses(js, "{} x", 4));
	CHECK(!parses(js, "", 0));
	/* Numbers are exact decimals, never doubles: a double (PHP's) reads
	 * these pairs alike, Python's Decimal and big ints do not. */
	CHECK(same(js, "[1]", "[1.0]") == 1);
	CHECK(same(js, "[1]", "[1e0]") == 1);
	CHECK(same(js, "[1]", "[10e-1]") == 1);
	CHECK(same(js, "[1]", "[0.1e1]") == 1);
	CHECK(same(js, "[-1.50]", "[-15E-1]") == 1);
	CHECK(same(js, "[0]", "[0.000e7]") == 1);
	CHECK(same(js, "[0]", "[-0]") == 0);
	CHECK(same(js, "{\"to\":9007199254740993}",
	    "{\"to\":9007199254740992}") == 0);
	CHECK(same(js, "[0.1000000000000000055511151231257827]", "[0.1]") ==
	    0);
	CHECK(same(js, "[1e999]", "[2e999]") == 0);
	CHECK(same(js, "[1e-999]", "[0]") == 0);
	CHECK(same(js, "[1.2345678901234567890123456789e29]",
	    "[123456789012345678901234567890e0]") == 1);
	/* From 2^53 an integer is not the same number written as a float:
	 * PHP reads the one exactly, the other as a double. */
	CHECK(same(js, "[123456789012345678901234567890]",
	    "[1.2345678901234567890123456789e29]") == 0);
	CHECK(same(js, "[9007199254740993]", "[9007199254740993.0]") == 0);
	CHECK(same(js, "[9007199254740991]", "[9007199254740991.0]") == 1);
	CHECK(same(js, "[-9007199254740992]", "[-9007199254740992]") == 1);
	CHECK(same(js, "[5]", "[5.0]") == 1);
	/* Not JSON numbers: leading zeros, a bare point, a plus, hex. */
	CHECK(!parses(js, "[01]", 4));
	CHECK(!parses(js, "[1.]", 4));
	CHECK(!parses(js, "[.5]", 4));
	CHECK(!parses(js, "[+1]", 4));
	CHECK(!parses(js, "[1e]", 4));
	CHECK(!parses(js, "[0x1]", 5));
	/* an exponent past 10^8: bounded, exact */
	CHECK(!parses(js, "[1e999999999]", 13));
	/* Strings: escapes decoded; invalid UTF-8 (overlong, a surrogate,
	 * cut short) and lone surrogates fall back to the exact bytes. */
	CHECK(same(js, "[\"\\ud83d\\ude00\"]", "[\"\xf0\x9f\x98\x80\"]") == 1);
	CHECK(same(js, "[\"a\\/b\"]", "[\"a/b\"]") == 1);
	CHECK(!parses(js, "[\"\xc0\xaf\"]", 6));
	CHECK(!parses(js, "[\"\xed\xa0\x80\"]", 7));
	CHECK(!parses(js, "[\"\xe2\x82\"]", 6));
	CHECK(!parses(js, "[\"\xff\"]", 5));
	CHECK(!parses(js, "[\"\\ud83d\"]", 10));
	CHECK(!parses(js, "[\"\\ude00x\"]", 11));
	CHECK(!parses(js, "[\"a\tb\"]", 7));
	/* A name twice, even spelled with an escape. */
	CHECK(!parses(js, "{\"a\":1,\"\\u0061\":2}", 18));
	CHECK(same(js, "{\"b\":{\"d\":1,\"c\":2},\"a\":[]}",
	    "{\"a\":[],\"b\":{\"c\":2,\"d\":1}}") == 1);
	CHECK(same(js, "true", " true ") == 1);
	/* The media type is part of it: a merge patch is no JSON patch. */
	CHECK(same("application/merge-patch+json", "[]", "[]") == 1);
	{
		struct buf	 x, y;
		const char	*ca = "application/merge-patch+json";
		const char	*cb = "application/json-patch+json";

		buf_init(&x, 8192);
		buf_init(&y, 8192);
		CHECK(canon_body(ca, "[]", 2, &x, &ca) == 1);
		CHECK(canon_body(cb, "[]", 2, &y, &cb) == 1);
		CHECK(x.len != y.len || memcmp(x.p, y.p, x.len) != 0);
		/* and no Content-Type is the canonical one */
		CHECK(strcmp(ca, CANON_CTYPE) == 0 && ca[0] == ' ');
		buf_free(&x);
		buf_free(&y);
	}
	CHECK(!parses(js, "tru", 3));
	CHECK(!parses(js, "\xef\xbb\xbf{}", 5));	/* a BOM */
	deep = malloc(n);
	for (i = 0; i < n; i++)
		deep[i] = '[';
	CHECK(!parses(js, deep, n));
	free(deep);
	/* other types are not canonicalised */
	CHECK(!parses("text/plain", "{\"a\":1}", 7));
	CHECK(!parses(NULL, "{\"a\":1}", 7));
}

static void
test_form(void)
{
	const char	*f = "application/x-www-form-urlencoded";

	CHECK(same(f, "a=1&b=x%20y", "b=x+y&a=1") == 1);
	/* One name twice keeps its order: PHP reads the last. */
	CHECK(same(f, "amount=1&amount=1000", "amount=1000&amount=1") == 0);
	CHECK(same(f, "a=1&a=2", "a=2&a=1") == 0);
	CHECK(same(f, "a[]=1&a[]=2", "a[]=2&a[]=1") == 0);
	CHECK(same(f, "a=1&b=2&a=3", "b=2&a=1&a=3") == 1);
	/* Names PHP reads as one variable keep their order too. */
	CHECK(same(f, "a[0]=2&a[]=1", "a[]=1&a[0]=2") == 0);
	CHECK(same(f, "a=1&a[]=2", "a[]=2&a=1") == 0);
	CHECK(same(f, "a.b=1&a_b=2", "a_b=2&a.b=1") == 0);
	CHECK(same(f, "a+b=1&a_b=2", "a_b=2&a+b=1") == 0);
	CHECK(same(f, "%20a=1&a=2", "a=2&%20a=1") == 0);
	CHECK(same(f, "card_number=4&cvc=1", "cvc=1&card_number=4") == 1);
	/* An unclosed '[' is a '_' to PHP: a[b is a_b. */
	CHECK(same(f, "a[b=1&a_b=2", "a_b=2&a[b=1") == 0);
	CHECK(same(f, "a[b.c=1&a_b_c=2", "a_b_c=2&a[b.c=1") == 0);
	CHECK(same(f, "x[b]=1&y=2", "y=2&x[b]=1") == 1);
	/* Past 1000 pairs PHP drops the rest: exact bytes. */
	{
		struct buf	 big;
		size_t		 i;

		buf_init(&big, 1 << 20);
		for (i = 0; i < 1000; i++)
			buf_addstr(&big, i ? "&v=1" : "v=1");
		CHECK(parses(f, big.p, big.len));
		buf_addstr(&big, "&v=1");
		CHECK(!parses(f, big.p, big.len));
		buf_free(&big);
	}
	CHECK(same(f, "a=1&&b=2", "b=2&a=1") == 1);
	CHECK(same(f, "a=1&b=2", "a=1&b=3") == 0);
	CHECK(same(f, "a=1", "a=1&b") == 0);
	CHECK(same(f, "a&b=", "a=&b") == 1);	/* both empty values */
	CHECK(same(f, "ab=1", "a=b1") == 0);
	CHECK(!parses(f, "a=%zz", 5));
	CHECK(!parses(f, "a=%2", 4));
	CHECK(parses(f, "", 0));
}

static void
test_multipart(void)
{
	const char *a =
	    "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"
	    "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; "
	    "filename=\"x\"\r\nContent-Type: application/octet-stream\r\n\r\n"
	    "bytes\r\n--XyZ--\r\n";
	const char *b =
	    "\r\n--other-7\r\ncontent-disposition:   form-data; "
	    "name=\"a\"\r\n\r\n1\r\n--other-7\r\nContent-Disposition: "
	    "form-data; name=\"f\"; filename=\"x\"\r\nContent-Type: "
	    "application/octet-stream\r\n\r\nbytes\r\n--other-7--";
	const char *c =
	    "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n2\r\n"
	    "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; "
	    "filename=\"x\"\r\nContent-Type: application/octet-stream\r\n\r\n"
	    "bytes\r\n--XyZ--\r\n";
	struct buf	 x, y;
	const char	*ca, *cb;

	buf_init(&x, CANON_MAX(strlen(a)));
	buf_init(&y, CANON_MAX(strlen(b)));
	ca = cb = NULL;
	CHECK(canon_body("multipart/form-data; boundary=XyZ", a, strlen(a),
	    &x, &ca) == 1);
	CHECK(canon_body("multipart/form-data; boundary=\"other-7\"", b,
	    strlen(b), &y, &cb) == 1);
	CHECK(ca != NULL && cb != NULL && strcmp(ca, cb) == 0);
	CHECK(x.len == y.len && memcmp(x.p, y.p, x.len) == 0);
	buf_reset(&y);
	CHECK(canon_body("multipart/form-data; boundary=XyZ", c, strlen(c),
	    &y, &cb) == 1);
	CHECK(x.len != y.len || memcmp(x.p, y.p, x.len) != 0);
	buf_free(&x);
	buf_free(&y);
	/* Text before the first delimiter or after the closing one (PHP
	 * reads a part there): exact.  White space there is nothing. */
	{
		char	 pre[1024], post[1024];

		snprintf(pre, sizeof(pre), "preamble\r\n%s", a);
		snprintf(post, sizeof(post), "%s--XyZ\r\nContent-Disposition: "
		    "form-data; name=\"a\"\r\n\r\n2\r\n--XyZ--\r\n", a);
		CHECK(!parses("multipart/form-data; boundary=XyZ", pre,
		    strlen(pre)));
		CHECK(!parses("multipart/form-data; boundary=XyZ", post,
		    strlen(post)));
		snprintf(post, sizeof(post), "%s \r\n\r\n", a);
		CHECK(parses("multipart/form-data; boundary=XyZ", post,
		    strlen(post)));
	}
	/* A folded header line, a bare LF in the headers, a non-token
	 * name, the boundary string where it is no delimiter (PHP takes
	 * "\n--XyZ" for one), "boundary" twice in the type: exact. */
	{
		const char *const bad[] = {
		    "--XyZ\r\nContent-Disposition: form-data;\r\n\tname=\"a\""
		    "\r\n\r\n1\r\n--XyZ--\r\n",
		    "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\nX: y"
		    "\r\n\r\n1\r\n--XyZ--\r\n",
		    "--XyZ\r\nContent Disposition: form-data; name=\"a\""
		    "\r\n\r\n1\r\n--XyZ--\r\n",
		    "--XyZ\r\nContent-Disposition: form-data; name=\"a\""
		    "\r\n\r\n1\n--XyZ\r\nX: y\r\n\r\n2\r\n--XyZ--\r\n",
		};
		size_t	 i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			CHECK(!parses("multipart/form-data; boundary=XyZ", bad[i],
			    strlen(bad[i])));
		CHECK(!parses("multipart/form-data; xboundary=Q; boundary=XyZ",
		    a, strlen(a)));
		CHECK(!parses("multipart/form-data; boundary=XyZ,Q", a,
		    strlen(a)));
	}
	/* no closing delimiter, no boundary, wrong boundary: exact */
	CHECK(!parses("multipart/form-data; boundary=XyZ", a, strlen(a) - 9));
	CHECK(!parses("multipart/form-data", a, strlen(a)));
	CHECK(!parses("multipart/form-data; boundary=Q", a, strlen(a)));
}

/*
 * What PHP reads differently, so the exact bytes count: a delimiter line
 * padded before its CRLF (PHP takes it for no delimiter and reads the
 * next part into the one before); empty form pieces past PHP's
 * max_input_vars (it counts them, so where its cut falls moves); a type
 * PHP or a framework would not take as written (a tab after it, a space
 * before it, capitals, a boundary followed by a space).
 */
static void
test_php_reads(void)
{
	const char *mp = "multipart/form-data; boundary=XYZ";
	const char *two =
	    "--XYZ\r\nContent-Disposition: form-data; name=\"amount\"\r\n\r\n"
	    "10\r\n--XYZ\r\nContent-Disposition: form-data; name=\"amount\""
	    "\r\n\r\n1000\r\n--XYZ--\r\n";
	const char *padded =
	    "--XYZ\r\nContent-Disposition: form-data; name=\"amount\"\r\n\r\n"
	    "10\r\n--XYZ \r\nContent-Disposition: form-data; name=\"amount\""
	    "\r\n\r\n1000\r\n--XYZ--\r\n";
	const char *f = "application/x-www-form-urlencoded";
	char		*a, *b;
	size_t		 n = 1500, i;

	CHECK(parses(mp, two, strlen(two)));
	CHECK(!parses(mp, padded, strlen(padded)));

	/* "amount=10" then 1500 '&' then "amount=1000", and the same pairs
	 * with the '&'s after them: PHP reads 10 and 1000. */
	a = malloc(n + 32);
	b = malloc(n + 32);
	if (a != NULL && b != NULL) {
		strcpy(a, "amount=10");
		for (i = 0; i < n; i++)
			strcat(a, "&");
		strcat(a, "amount=1000");
		strcpy(b, "amount=10&amount=1000");
		for (i = 0; i < n; i++)
			strcat(b, "&");
		CHECK(!parses(f, a, strlen(a)));
		CHECK(!parses(f, b, strlen(b)));
	}
	free(a);
	free(b);
	CHECK(parses(f, "a=1&&b=2&", 9));	/* a few are nothing */
	/* 1000 pieces are PHP's max_input_vars; one more is past it. */
	a = malloc(4 * 1001 + 1);
	if (a != NULL) {
		a[0] = '\0';
		for (i = 0; i < 1000; i++)
			strcat(a, i == 0 ? "a=1" : "&a=1");
		CHECK(parses(f, a, strlen(a)));
		strcat(a, "&");
		CHECK(!parses(f, a, strlen(a)));
	}
	free(a);

	CHECK(parses("application/x-www-form-urlencoded; charset=utf-8",
	    "a=1", 3));
	CHECK(parses("application/json ; charset=utf-8", "{}", 2));
	CHECK(!parses("application/x-www-form-urlencoded\t; charset=utf-8",
	    "a=1", 3));
	CHECK(!parses(" application/json", "{}", 2));
	CHECK(!parses("Application/JSON", "{}", 2));
	CHECK(!parses("application/json,text/plain", "{}", 2));
	CHECK(parses("multipart/form-data; boundary=XYZ; charset=utf-8", two,
	    strlen(two)));
	CHECK(!parses("multipart/form-data; boundary=XYZ ; charset=utf-8", two,
	    strlen(two)));
}

int
main(void)
{
	test_json();
	test_form();
	test_multipart();
	test_php_reads();
	test_params();
	return CHECK_DONE();
}
