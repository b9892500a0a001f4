/* Unit tests for key parsing, request fingerprints, scope hashes and lock names. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "check.h"
#include "fp.h"

/* 1 if raw parses to exactly want. */
static int
key_ok(const char *raw, size_t rawlen, const char *want, size_t wantlen)
{
	char	 out[FP_KEY_MAX + 1];
	size_t	 n = 9999;

	memset(out, 'Z', sizeof(out));
	if (key_parse(raw, rawlen, out, &n) != IDEM_OK)
		return 0;
	return n == wantlen && memcmp(out, want, n) == 0 && out[n] == '\0';
}

#define OK(raw, want) key_ok(raw, strlen(raw), want, strlen(want))

/* 1 if raw is refused and out / outlen are left alone. */
static int
key_bad(const char *raw, size_t rawlen)
{
	char	 out[FP_KEY_MAX + 1];
	size_t	 n = 4242;

	memset(out, 'Z', sizeof(out));
	return key_parse(raw, rawlen, out, &n) == IDEM_EINVAL && n == 4242 &&
	    out[0] == 'Z';
}

#define BAD(raw) key_bad(raw, strlen(raw))

static void
test_key(void)
{
	char	 raw[600], want[300];
	size_t	 i;

	CHECK(OK("abc", "abc"));
	CHECK(OK("\"abc\"", "abc"));
	CHECK(OK("  abc\t", "abc"));
	CHECK(OK(" \"abc\" ", "abc"));
	CHECK(OK("8e0d2a8c-6c4f-4f0e-9b43-0f2d9b6ad1c7",
	    "8e0d2a8c-6c4f-4f0e-9b43-0f2d9b6ad1c7"));
	CHECK(OK("\"8e0d2a8c-6c4f-4f0e-9b43-0f2d9b6ad1c7\"",
	    "8e0d2a8c-6c4f-4f0e-9b43-0f2d9b6ad1c7"));
	CHECK(OK("42", "42"));
	CHECK(OK("a:b/c=d+e?f", "a:b/c=d+e?f"));
	CHECK(OK("\"a b\"", "a b"));
	CHECK(OK("\"a\\\"b\"", "a\"b"));
	CHECK(OK("\"a\\\\b\"", "a\\b"));
	CHECK(OK("\"a,b;c\"", "a,b;c"));
	CHECK(OK("\" a \"", " a "));
	CHECK(OK("~", "~"));

	CHECK(BAD(""));
	CHECK(BAD("   "));
	CHECK(BAD("\"\""));
	/* blank: an unset variable's key, shared by all its requests */
	CHECK(BAD("\" \""));
	CHECK(BAD("\"   \""));
	CHECK(BAD(" \"\" "));
	CHECK(BAD("a b"));
	CHECK(BAD("a\tb"));
	CHECK(BAD("\"a\tb\""));
	CHECK(BAD("a\x7f"));
	CHECK(BAD("\"a\x7f\""));
	CHECK(BAD("a\x01"));
	CHECK(BAD("a\r\n"));
	CHECK(BAD("caf\xc3\xa9"));
	CHECK(BAD("\"caf\xc3\xa9\""));
	CHECK(BAD("\"abc"));
	CHECK(BAD("abc\""));
	CHECK(BAD("a\"bc"));
	CHECK(BAD("\"abc\\\""));
	CHECK(BAD("\"a\\ab\""));
	CHECK(BAD("\"a\\\""));
	CHECK(BAD("\"abc\"x"));
	CHECK(BAD("\"abc\" x"));
	CHECK(BAD("\"a\", \"b\""));
	CHECK(BAD("a, b"));
	CHECK(BAD("a,b"));
	/* RFC 8941 parameters: the key's value ignores them; malformed
	 * ones are trailing garbage. */
	CHECK(OK("\"a\";p=1", "a"));
	CHECK(OK("a;p=1", "a"));
	CHECK(OK("\"a\"; p=?1;q;r=\"x;y\";s=:AQID:;t=-1.5;u=tok/1;*v=w",
	    "a"));
	CHECK(OK(" \"a b\";p=1 ", "a b"));
	CHECK(BAD("\"a\";"));
	CHECK(BAD("\"a\";P=1"));
	CHECK(BAD("\"a\";p="));
	CHECK(BAD("\"a\";p=1,"));
	CHECK(BAD("\"a\";p=1, \"b\""));
	CHECK(BAD("\"a\";p=\"x"));
	CHECK(BAD("\"a\";p=?2"));
	CHECK(BAD("\"a\";p=1-"));
	CHECK(BAD("\"a\" ;p=1"));
	CHECK(BAD(";p=1"));
	CHECK(BAD("a;"));
	CHECK(BAD("a\\b"));
	CHECK(BAD("\"a\"\"b\""));
	CHECK(key_bad("a\0b", 3));
	CHECK(key_bad("\"a\0b\"", 5));
	CHECK(key_bad(NULL, 0));
	/* rawlen is honoured: bytes past it are not part of the value. */
	CHECK(key_ok("abc,def", 3, "abc", 3));

	/* 255 bytes is the limit, bare and quoted; 256 is refused. */
	memset(want, 'k', 256);
	want[255] = '\0';
	CHECK(OK(want, want));
	raw[0] = '"';
	memcpy(raw + 1, want, 255);
	memcpy(raw + 256, "\"", 2);
	CHECK(OK(raw, want));
	want[255] = 'k';
	want[256] = '\0';
	CHECK(BAD(want));
	raw[0] = '"';
	memcpy(raw + 1, want, 256);
	memcpy(raw + 257, "\"", 2);
	CHECK(BAD(raw));
	/* Escapes count after unquoting: 255 escaped quotes are 255 bytes. */
	raw[0] = '"';
	for (i = 0; i < 255; i++)
		memcpy(raw + 1 + 2 * i, "\\\"", 2);
	memcpy(raw + 511, "\"", 2);
	memset(want, '"', 255);
	want[255] = '\0';
	CHECK(OK(raw, want));
	memcpy(raw + 511, "\\\"\"", 4);
	CHECK(BAD(raw));
	/* Padding does not count. */
	memset(raw, ' ', 100);
	memset(raw + 100, 'k', 255);
	memset(raw + 355, '\t', 100);
	raw[455] = '\0';
	memset(want, 'k', 255);
	want[255] = '\0';
	CHECK(OK(raw, want));
}

/* SHA-256 of one buffer, computed independently of fp.c's field code. */
static void
sha(const void *p, size_t n, unsigned char out[FP_LEN])
{
	unsigned int	 len;

	EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

/* Appends an 8-byte big-endian length and the bytes. */
/* fp_request over a request without fingerprint headers. */
#define fp_of(m, p, q, t, b, n, out) \
	fp_request(&(struct fp_req){ .method = (m), .path = (p), \
	    .query = (q), .ctype = (t), .body = (b), .bodylen = (n) }, (out))

static size_t
field(unsigned char *dst, const char *s, size_t n)
{
	size_t	 i;

	for (i = 0; i < 8; i++)
		dst[i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
	memcpy(dst + 8, s, n);
	return 8 + n;
}

static void
test_request(void)
{
	unsigned char	 a[FP_LEN], b[FP_LEN], want[FP_LEN], in[256];
	size_t		 n = 0;

	n += field(in + n, "POST", 4);
	n += field(in + n, "/pay", 4);
	n += field(in + n, "x=1", 3);
	n += field(in + n, "application/json", 16);
	n += field(in + n, "{\"a\":1}", 7);
	sha(in, n, want);
	fp_of("POST", "/pay", "x=1", "application/json", "{\"a\":1}", 7, a);
	CHECK(memcmp(a, want, FP_LEN) == 0);

	/* Same input, same fingerprint. */
	fp_of("POST", "/pay", "x=1", "application/json", "{\"a\":1}", 7, b);
	CHECK(memcmp(a, b, FP_LEN) == 0);
	/* Every field counts. */
	fp_of("PATCH", "/pay", "x=1", "application/json", "{\"a\":1}", 7, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	fp_of("POST", "/pay/", "x=1", "application/json", "{\"a\":1}", 7, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	/* A query in its one spelling: an escaped unreserved character is
	 * the character, other escapes match in either case; '+' and
	 * "%2B" differ (a space and a plus to a form decoder), as do "~"
	 * and "%257E"; a long query too. */
	{
		static const char *const same[][2] = {
			{ "d=%7e", "d=~" }, { "d=%7E&x=%41", "d=~&x=A" },
			{ "a=%2b", "a=%2B" }, { "a=%e2%82%ac", "a=%E2%82%AC" },
			{ "%", "%" }, { "a=%4", "a=%4" }, { "a=%zz", "a=%zz" },
		};
		static const char *const other[][2] = {
			{ "a=+", "a=%2B" }, { "a=~", "a=%257E" },
			{ "a=%2F", "a=/" }, { "a=%4", "a=%04" },
		};
		unsigned char	 x[FP_LEN], y[FP_LEN];
		char		*big1, *big2;
		size_t		 i, k, len;

		for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
			fp_of("POST", "/p", same[i][0], "", "", 0, x);
			fp_of("POST", "/p", same[i][1], "", "", 0, y);
			CHECK(memcmp(x, y, FP_LEN) == 0);
		}
		for (i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
			fp_of("POST", "/p", other[i][0], "", "", 0, x);
			fp_of("POST", "/p", other[i][1], "", "", 0, y);
			CHECK(memcmp(x, y, FP_LEN) != 0);
		}
		/* Queries of 4095, 4096 (the stack buffer) and 4097 bytes and
		 * more: one escape at the end, in either spelling. */
		for (len = 4095; len <= 4097; len++) {
			big1 = malloc(len + 1);
			big2 = malloc(len - 2 + 1);
			if (big1 == NULL || big2 == NULL) {
				free(big1);
				free(big2);
				continue;
			}
			memset(big1, 'q', len - 3);
			memcpy(big1 + len - 3, "%7e", 4);
			memset(big2, 'q', len - 3);
			memcpy(big2 + len - 3, "~", 2);
			fp_of("POST", "/p", big1, "", "", 0, x);
			fp_of("POST", "/p", big2, "", "", 0, y);
			CHECK(memcmp(x, y, FP_LEN) == 0);
			big1[len - 1] = 'F';	/* "%7F": not unreserved */
			fp_of("POST", "/p", big1, "", "", 0, x);
			CHECK(memcmp(x, y, FP_LEN) != 0);
			free(big1);
			free(big2);
		}
		big1 = malloc(3 * 5000 + 1);
		big2 = malloc(5000 + 1);
		if (big1 != NULL && big2 != NULL) {
			for (k = 0; k < 5000; k++) {
				memcpy(big1 + 3 * k, "%7E", 3);
				big2[k] = '~';
			}
			big1[3 * 5000] = big2[5000] = '\0';
			fp_of("POST", "/p", big1, "", "", 0, x);
			fp_of("POST", "/p", big2, "", "", 0, y);
			CHECK(memcmp(x, y, FP_LEN) == 0);
		}
		free(big1);
		free(big2);
	}
	fp_of("POST", "/pay", "x=2", "application/json", "{\"a\":1}", 7, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	fp_of("POST", "/pay", "x=1", "text/plain", "{\"a\":1}", 7, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	fp_of("POST", "/pay", "x=1", "application/json", "{\"a\":2}", 7, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	/* Moving bytes between fields changes the fingerprint. */
	fp_of("POST", "/pa", "yx=1", "application/json", "{\"a\":1}", 7, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	fp_of("POST", "/pay", "x=1application/json", "", "{\"a\":1}", 7, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	/* NULL counts as empty; bodies are binary-safe. */
	fp_of(NULL, NULL, NULL, NULL, NULL, 0, a);
	fp_of("", "", "", "", "", 0, b);
	CHECK(memcmp(a, b, FP_LEN) == 0);
	fp_of("POST", "/", "", "", "a\0b", 3, a);
	fp_of("POST", "/", "", "", "a\0c", 3, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
	fp_of("POST", "/", "", "", "a\0b", 2, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
}

/* Fingerprint headers: none is the plain request; each one counts. */
static void
test_request_more(void)
{
	const char	*more[] = { "x-tenant=a", "x-tenant=b" };
	struct fp_req	 q = { .method = "POST", .path = "/pay",
	    .ctype = "text/plain", .body = "x", .bodylen = 1 };
	unsigned char	 plain[FP_LEN], a[FP_LEN], b[FP_LEN];

	fp_request(&q, plain);
	q.more = more;
	fp_request(&q, a);
	CHECK(memcmp(plain, a, FP_LEN) == 0);
	q.nmore = 1;
	fp_request(&q, a);
	CHECK(memcmp(plain, a, FP_LEN) != 0);
	q.more = more + 1;
	fp_request(&q, b);
	CHECK(memcmp(a, b, FP_LEN) != 0);
}

static void
test_scope_lock(void)
{
	unsigned char	 s1[FP_LEN], s2[FP_LEN], want[FP_LEN], in[128];
	char		 hex[2 * FP_LEN + 1], l1[FP_LOCKNAME_LEN], l2[FP_LOCKNAME_LEN];
	size_t		 n = 0, i;

	n += field(in + n, "header:x-api-key", 16);
	n += field(in + n, "secret", 6);
	sha(in, n, want);
	fp_scope("header:x-api-key", "secret", s1);
	CHECK(memcmp(s1, want, FP_LEN) == 0);
	fp_scope("header:x-api-key", "secreT", s2);
	CHECK(memcmp(s1, s2, FP_LEN) != 0);
	fp_scope("header:x-api-ke", "ysecret", s2);
	CHECK(memcmp(s1, s2, FP_LEN) != 0);
	fp_scope("none", NULL, s1);
	fp_scope("none", "", s2);
	CHECK(memcmp(s1, s2, FP_LEN) == 0);
	fp_scope("remote_user", "", s2);
	CHECK(memcmp(s1, s2, FP_LEN) != 0);

	/* Hex: known vector (SHA-256 of "abc"). */
	sha("abc", 3, want);
	fp_hex(want, FP_LEN, hex);
	CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad") == 0);
	fp_hex(want, 0, hex);
	CHECK(hex[0] == '\0');
	{
		static const unsigned char b[] = { 0x00, 0x0f, 0xf0, 0xff };

		fp_hex(b, sizeof(b), hex);
		CHECK(strcmp(hex, "000ff0ff") == 0);
	}

	/* Lock name: "idem:" + first 24 bytes of SHA-256(scope || key). */
	fp_scope("none", "", s1);
	memcpy(in, s1, FP_LEN);
	memcpy(in + FP_LEN, "k-1", 3);
	sha(in, FP_LEN + 3, want);
	fp_hex(want, 24, hex);
	memset(l1, 'Z', sizeof(l1));
	fp_lockname(s1, "k-1", 3, l1);
	CHECK(strlen(l1) == 53 && strlen(l1) < 64);
	CHECK(strncmp(l1, "idem:", 5) == 0 && strcmp(l1 + 5, hex) == 0);
	for (i = 5; i < 53; i++)
		if (!((l1[i] >= '0' && l1[i] <= '9') ||
		    (l1[i] >= 'a' && l1[i] <= 'f')))
			break;
	CHECK(i == 53);
	fp_lockname(s1, "k-1", 3, l2);
	CHECK(strcmp(l1, l2) == 0);
	fp_lockname(s1, "k-2", 3, l2);
	CHECK(strcmp(l1, l2) != 0);
	fp_lockname(s2, "k-1", 3, l2);
	CHECK(strcmp(l1, l2) != 0);
	fp_lockname(s1, "k-1x", 3, l2);
	CHECK(strcmp(l1, l2) == 0);
}

int
main(void)
{
	test_key();
	test_request();
	test_request_more();
	test_scope_lock();
	return CHECK_DONE();
}
