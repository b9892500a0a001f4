/* Idempotency keys, request fingerprints and scope hashes (OpenSSL SHA-256). */
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fp.h"
#include "log.h"
#include "path.h"

static int
is_ows(unsigned char ch)
{
	return ch == ' ' || ch == '\t';
}

/* RFC 8941 3.1.2: lcalpha / DIGIT / "_" / "-" / "." / "*". */
static int
sf_key_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	    ch == '_' || ch == '-' || ch == '.' || ch == '*';
}

/* RFC 9110 tchar, with ":" and "/" as an sf-token allows. */
static int
sf_token_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || strchr("!#$%&'*+-.^_`|~:/", ch) !=
	    NULL;
}

/*
 * The sf-string at p[i], a '"' (RFC 8941 4.2.5: printable ASCII, only \"
 * and \\ escapes), before e: the index past its closing quote, or 0 if
 * it is none.  Unless out is NULL its value goes there, *n bytes, at
 * most max (more: 0).
 */
static size_t
sf_string_end(const char *p, size_t i, size_t e, char *out, size_t max,
    size_t *n)
{
	unsigned char	 ch;

	for (i++; i < e; i++) {
		ch = (unsigned char)p[i];
		if (ch == '"')
			return i + 1;
		if (ch < 0x20 || ch > 0x7e)
			return 0;
		if (ch == '\\') {
			if (++i == e)
				return 0;
			ch = (unsigned char)p[i];
			if (ch != '"' && ch != '\\')
				return 0;
		}
		if (out != NULL) {
			if (*n == max)
				return 0;
			out[(*n)++] = (char)ch;
		}
	}
	return 0;
}

/* The end of the bare item at p[i] (RFC 8941 3.3: integer or decimal,
 * string, token, byte sequence, boolean) before e, or 0 if there is
 * none. */
static size_t
sf_bare_item_end(const char *p, size_t i, size_t e)
{
	unsigned char	 ch = (unsigned char)p[i];

	if (ch == '"')
		return sf_string_end(p, i, e, NULL, 0, NULL);
	if (ch == ':') {
		for (i++; i < e && p[i] != ':'; i++)
			if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqr"
			    "stuvwxyz0123456789+/=", p[i]) == NULL ||
			    p[i] == '\0')
				return 0;
		return i < e ? i + 1 : 0;
	}
	if (ch == '?')
		return i + 1 < e && (p[i + 1] == '0' || p[i + 1] == '1') ?
		    i + 2 : 0;
	if (ch == '-' || (ch >= '0' && ch <= '9')) {
		for (i++; i < e && ((p[i] >= '0' && p[i] <= '9') ||
		    p[i] == '.'); i++)
			;
		return p[i - 1] == '-' || p[i - 1] == '.' ? 0 : i;
	}
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '*') {
		for (i++; i < e && sf_token_char((unsigned char)p[i]); i++)
			;
		return i;
	}
	return 0;
}

/* 1 if p[i..e) is nothing but RFC 8941 parameters (";" *SP key
 * [ "=" bare-item ], again and again): the key's value ignores them. */
static int
sf_params_ok(const char *p, size_t i, size_t e)
{
	while (i < e) {
		if (p[i++] != ';')
			return 0;
		while (i < e && p[i] == ' ')
			i++;
		if (i == e || !((p[i] >= 'a' && p[i] <= 'z') || p[i] == '*'))
			return 0;
		while (i < e && sf_key_char((unsigned char)p[i]))
			i++;
		if (i < e && p[i] == '=' &&
		    (i + 1 == e || (i = sf_bare_item_end(p, i + 1, e)) == 0))
			return 0;
	}
	return 1;
}

enum idem_err
key_parse(const char *raw, size_t rawlen, char *out, size_t *outlen)
{
	char		 tmp[FP_KEY_MAX + 1];
	size_t		 b = 0, e = rawlen, i, n = 0;
	unsigned char	 ch;

	if (raw == NULL)
		return IDEM_EINVAL;
	while (b < e && is_ows((unsigned char)raw[b]))
		b++;
	while (e > b && is_ows((unsigned char)raw[e - 1]))
		e--;
	if (b == e)
		return IDEM_EINVAL;
	if (raw[b] == '"') {
		/* Unterminated, too long, or something but parameters (a
		 * second value) after it. */
		if ((i = sf_string_end(raw, b, e, tmp, FP_KEY_MAX, &n)) == 0 ||
		    !sf_params_ok(raw, i, e))
			return IDEM_EINVAL;
	} else {
		for (i = b; i < e && raw[i] != ';'; i++) {
			ch = (unsigned char)raw[i];
			if (ch <= 0x20 || ch >= 0x7f || ch == '"' ||
			    ch == ',' || ch == '\\')
				return IDEM_EINVAL;
			if (n == FP_KEY_MAX)
				return IDEM_EINVAL;
			tmp[n++] = (char)ch;
		}
		if (!sf_params_ok(raw, i, e))
			return IDEM_EINVAL;
	}
	tmp[n] = '\0';
	/* Empty, or blank (a quoted string of spaces): a client's unset
	 * variable, which would put all its requests under one key. */
	if (strspn(tmp, " ") == n)
		return IDEM_EINVAL;
	memcpy(out, tmp, n + 1);
	*outlen = n;
	return IDEM_OK;
}

/*
 * Digests cannot be skipped or faked: a zeroed fingerprint would make
 * unrelated requests replay each other's answers.  OpenSSL failing here
 * means memory is gone, so the process stops instead.
 */
static EVP_MD		*sha256_md;
static pthread_once_t	 sha256_once = PTHREAD_ONCE_INIT;

/*
 * SHA-256 fetched from the provider once, for the life of the process.
 * EVP_sha256() makes every EVP_DigestInit_ex look the algorithm up again
 * (a lock and a table search: 0.8 us against 0.2 us a digest here), and
 * a request takes two or three digests.
 */
static void
sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA2-256", NULL);
}

static EVP_MD_CTX *
sha_begin(void)
{
	EVP_MD_CTX	*ctx = EVP_MD_CTX_new();
	const EVP_MD	*md;

	(void)pthread_once(&sha256_once, sha256_fetch);
	md = sha256_md != NULL ? sha256_md : EVP_sha256();
	if (ctx == NULL || EVP_DigestInit_ex(ctx, md, NULL) != 1) {
		log_err("SHA-256 unavailable");
		abort();
	}
	return ctx;
}

static void
sha_add(EVP_MD_CTX *ctx, const void *p, size_t n)
{
	if (n > 0 && EVP_DigestUpdate(ctx, p, n) != 1) {
		log_err("SHA-256 update failed");
		abort();
	}
}

/* Adds n as 8 bytes big-endian, then the n bytes. */
static void
sha_add_field(EVP_MD_CTX *ctx, const void *p, size_t n)
{
	unsigned char	 be[8];
	uint64_t	 v = (uint64_t)n;
	int		 i;

	for (i = 7; i >= 0; i--) {
		be[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
	sha_add(ctx, be, sizeof(be));
	sha_add(ctx, p, n);
}

static void
sha_add_str(EVP_MD_CTX *ctx, const char *s)
{
	sha_add_field(ctx, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

static void
sha_end(EVP_MD_CTX *ctx, unsigned char out[FP_LEN])
{
	unsigned int	 len = 0;

	if (EVP_DigestFinal_ex(ctx, out, &len) != 1 || len != FP_LEN) {
		log_err("SHA-256 final failed");
		abort();
	}
	EVP_MD_CTX_free(ctx);
}

/* The query in its one spelling (path_query_normalize): one request
 * through lighttpd, which decodes "%7E", and through nginx, which does
 * not, is one request.  Out of memory (a query over 4 KiB): as it came,
 * which costs a 422 at worst, never a wrong replay. */
static void
fp_add_query(EVP_MD_CTX *ctx, const char *query)
{
	char	 stack[4096], *buf = stack;
	size_t	 len = query != NULL ? strlen(query) : 0;

	if (len == 0 || (len > sizeof(stack) && (buf = malloc(len)) == NULL)) {
		sha_add_field(ctx, len > 0 ? query : "", len);
		return;
	}
	sha_add_field(ctx, buf, path_query_normalize(query, len, buf));
	if (buf != stack)
		free(buf);
}

void
fp_request(const struct fp_req *q, unsigned char fp[FP_LEN])
{
	EVP_MD_CTX	*ctx = sha_begin();
	unsigned char	 n[8];
	size_t		 i;

	sha_add_str(ctx, q->method);
	sha_add_str(ctx, q->path);
	fp_add_query(ctx, q->query);
	sha_add_str(ctx, q->ctype);
	sha_add_field(ctx, q->body != NULL ? q->body : "",
	    q->body != NULL ? q->bodylen : 0);
	if (q->nmore > 0) {
		for (i = 0; i < 8; i++)
			n[i] = (unsigned char)((uint64_t)q->nmore >>
			    (56 - 8 * i));
		EVP_DigestUpdate(ctx, n, sizeof(n));
		for (i = 0; i < q->nmore; i++)
			sha_add_str(ctx, q->more[i]);
	}
	sha_end(ctx, fp);
}

void
fp_scope(const char *kind, const char *value, unsigned char out[FP_LEN])
{
	EVP_MD_CTX	*ctx = sha_begin();

	sha_add_str(ctx, kind);
	sha_add_str(ctx, value);
	sha_end(ctx, out);
}

void
fp_hex(const unsigned char *p, size_t n, char *out)
{
	static const char	 hex[] = "0123456789abcdef";
	size_t			 i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 0x0f];
	}
	out[2 * n] = '\0';
}

void
fp_lockname(const unsigned char scope[FP_LEN], const char *key, size_t keylen,
    char out[FP_LOCKNAME_LEN])
{
	EVP_MD_CTX	*ctx = sha_begin();
	unsigned char	 h[FP_LEN];

	/* The scope hash has a fixed length, so scope || key is unambiguous. */
	sha_add(ctx, scope, FP_LEN);
	sha_add(ctx, key, keylen);
	sha_end(ctx, h);
	memcpy(out, "idem:", 5);
	fp_hex(h, 24, out + 5);
	OPENSSL_cleanse(h, sizeof(h));
}

uint64_t
fp_lockhash(const char lockname[FP_LOCKNAME_LEN])
{
	uint64_t	 h = 0;
	int		 i;
	char		 c;

	for (i = 5; i < 21; i++) {
		c = lockname[i];
		h = h << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
	}
	return h | 1;
}

/*
 * An Authorization value by meaning (RFC 9110 section 11.1): the scheme
 * is case-insensitive and the space after it may repeat, so "Bearer abc",
 * "bearer abc" and "Bearer  abc" are one client.  The credentials are
 * left as they are.  Returns a new string (free()), or NULL.
 */
char *
fp_auth_norm(const char *v)
{
	size_t	 n, s, c;
	char	*out;

	/* A web server hands the value over trimmed; idemctl's may not be. */
	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);

	if ((out = malloc(n + 1)) == NULL)
		return NULL;
	for (s = 0; s < n && v[s] != ' ' && v[s] != '\t'; s++)
		out[s] = (char)tolower((unsigned char)v[s]);
	for (c = s; c < n && (v[c] == ' ' || v[c] == '\t'); c++)
		;
	if (c == n) {
		/* No scheme, or no credentials: the value is all there is
		 * (a bare API key), case and all. */
		memcpy(out, v, n + 1);
		return out;
	}
	out[s] = ' ';
	memcpy(out + s + 1, v + c, n - c + 1);
	return out;
}

void
fp_auth_free(char *v)
{
	if (v == NULL)
		return;
	OPENSSL_cleanse(v, strlen(v));
	free(v);
}
