/* Request bodies by meaning (canonical fingerprint): JSON, forms, multipart. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "canon.h"
#include "path.h"

/* Form fields: PHP (max_input_vars) and Node's qs read 1000; past that
 * a reorder changes which ones they drop. */
#define CANON_MAX_PAIRS		1000
#define CANON_MAX_PARTS		1000	/* multipart parts */
#define CANON_MAX_PARAMS	16	/* media type parameters */
#define CANON_PARAM_BYTES	1024	/* their names and values, at most */

enum media { MEDIA_OTHER, MEDIA_JSON, MEDIA_FORM, MEDIA_MULTIPART };

/* The media type of ctype and, for multipart, its boundary (borrowed
 * into ctype, *blen bytes). */
static enum media
media_of(const char *ctype, const char **boundary, size_t *blen)
{
	const char	*semi, *p, *end;
	size_t		 n;

	if (ctype == NULL)
		return MEDIA_OTHER;
	/*
	 * PHP cuts the type at the first ';', ',' or space (so a leading
	 * space leaves it none, and a tab stays in it), and frameworks
	 * match it case-sensitively (Laravel's "/json"): the type is taken
	 * only as PHP and they would take it, lower case, followed by
	 * spaces at most before its parameters.
	 */
	semi = strchr(ctype, ';');
	n = semi != NULL ? (size_t)(semi - ctype) : strlen(ctype);
	while (n > 0 && ctype[n - 1] == ' ')
		n--;
	for (p = ctype; p < ctype + n; p++)
		if (*p == ' ' || *p == '\t' || *p == ',' || isupper(
		    (unsigned char)*p))
			return MEDIA_OTHER;
	if ((n == 16 && strncasecmp(ctype, "application/json", 16) == 0) ||
	    (n > 17 && strncasecmp(ctype, "application/", 12) == 0 &&
	    strncasecmp(ctype + n - 5, "+json", 5) == 0))
		return MEDIA_JSON;
	if (n == 33 && strncasecmp(ctype, "application/x-www-form-urlencoded",
	    33) == 0)
		return MEDIA_FORM;
	if (n != 19 || strncasecmp(ctype, "multipart/form-data", 19) != 0 ||
	    semi == NULL)
		return MEDIA_OTHER;
	/* boundary=... or boundary="..." among the parameters, and the word
	 * nowhere else (PHP finds it by strstr) */
	if (strcasestr(semi, "boundary") == NULL ||
	    strcasestr(strcasestr(semi, "boundary") + 8, "boundary") != NULL)
		return MEDIA_OTHER;
	for (p = semi; (p = strchr(p, ';')) != NULL;) {
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "boundary=", 9) != 0)
			continue;
		p += 9;
		if (*p == '"') {
			p++;
			if ((end = strchr(p, '"')) == NULL)
				return MEDIA_OTHER;
		} else {
			for (end = p; *end != '\0' && *end != ';' &&
			    *end != ' ' && *end != '\t'; end++)
				if (*end == ',')	/* PHP ends it there */
					return MEDIA_OTHER;
			/* PHP ends it at ';' only: "b ;" is "b " to it. */
			if (*end == ' ' || *end == '\t')
				return MEDIA_OTHER;
		}
		if (end == p || end - p > 70)
			return MEDIA_OTHER;
		*boundary = p;
		*blen = (size_t)(end - p);
		return MEDIA_MULTIPART;
	}
	return MEDIA_OTHER;
}

/* The bare media type of ctype, lower-cased, into t (tlen bytes): what
 * the canonical form keeps of the type.  -1 if it does not fit. */
static int
media_name(const char *ctype, char *t, size_t tlen)
{
	size_t	 n, i;

	while (*ctype == ' ' || *ctype == '\t')
		ctype++;
	n = strcspn(ctype, ";");
	while (n > 0 && (ctype[n - 1] == ' ' || ctype[n - 1] == '\t'))
		n--;
	if (n >= tlen)
		return -1;
	for (i = 0; i < n; i++)
		t[i] = (char)tolower((unsigned char)ctype[i]);
	t[n] = '\0';
	return 0;
}

/* Appends p (n bytes) with its length as 8 bytes big-endian. */
static int
put_field(struct buf *out, const void *p, size_t n)
{
	unsigned char	 l[8];
	int		 i;

	for (i = 0; i < 8; i++)
		l[i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
	return buf_add(out, l, 8) == IDEM_OK &&
	    buf_add(out, n > 0 ? p : "", n) == IDEM_OK ? 0 : -1;
}

static int
param_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 if parameters a and b ("name=value") have one name. */
static int
param_same_name(const char *a, const char *b)
{
	size_t	 n = strcspn(a, "=");

	return strncmp(a, b, n + 1) == 0;
}

/*
 * Appends the canonical form's first field: tag (the media type it was
 * read as) and the type's parameters (RFC 9110 8.3.1) in ctype, but for
 * the multipart boundary and a charset of utf-8 (what JSON is by
 * definition, and what a form is read as without one), each
 * length-prefixed after the tag as "name=value", the name and a
 * charset's value lower-cased, a quoted value unquoted, sorted.  One
 * field, so no body can spell it.  A body a parser decodes under another
 * charset, or reads by another profile, is another request.  -1 when the
 * parameters do not parse, name one twice, or are too many or too long.
 */
static int
media_tag(const char *tag, const char *ctype, struct buf *out)
{
	char		 store[CANON_PARAM_BYTES], *list[CANON_MAX_PARAMS];
	const char	*p = strchr(ctype, ';');
	size_t		 used = 0, n = 0, i, nlen;
	struct buf	 t;
	int		 rc = -1;

	while (p != NULL && *p != '\0') {
		char	*q = store + used;

		if (*p++ != ';')
			return -1;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;		/* a trailing ';' adds nothing */
		for (nlen = 0; isalnum((unsigned char)p[nlen]) ||
		    (p[nlen] != '\0' && strchr("!#$%&'*+-.^_`|~",
		    p[nlen]) != NULL); nlen++)
			;
		if (nlen == 0 || p[nlen] != '=' || used + nlen + 2 >=
		    sizeof(store) || n == CANON_MAX_PARAMS)
			return -1;
		for (i = 0; i < nlen; i++)
			q[i] = (char)tolower((unsigned char)p[i]);
		q[nlen] = '=';
		used += nlen + 1;
		p += nlen + 1;
		if (*p == '"') {
			/* A quoted-pair is read two ways (PHP's boundary
			 * ends at the first '"'; Python unescapes): none. */
			for (p++; *p != '"'; p++) {
				if (*p == '\\' || *p == '\0' ||
				    used + 2 >= sizeof(store))
					return -1;
				store[used++] = *p;
			}
			p++;
		} else {
			for (; *p != '\0' && *p != ';' && *p != ' ' &&
			    *p != '\t'; p++) {
				if (used + 2 >= sizeof(store))
					return -1;
				store[used++] = *p;
			}
		}
		store[used++] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(q, "charset=", 8) == 0)
			for (i = 8; q[i] != '\0'; i++)
				q[i] = (char)tolower((unsigned char)q[i]);
		list[n++] = q;
	}
	qsort(list, n, sizeof(list[0]), param_cmp);
	/* "charset=a; charset=b": which one a parser takes is its own. */
	for (i = 1; i < n; i++)
		if (param_same_name(list[i - 1], list[i]))
			return -1;
	buf_init(&t, CANON_PARAM_BYTES * 2 + 256);
	if (buf_add(&t, tag, strlen(tag)) != IDEM_OK)
		goto out;
	for (i = 0; i < n; i++) {
		if (strcmp(list[i], "charset=utf-8") == 0 ||
		    strncmp(list[i], "boundary=", 9) == 0)
			continue;
		if (put_field(&t, list[i], strlen(list[i])) != 0)
			goto out;
	}
	rc = put_field(out, t.p, t.len);
out:
	buf_free(&t);
	return rc;
}

/* ---- JSON, strictly (RFC 8259), written back canonically ----
 *
 * Not through a library's numbers: two bodies are one only when every
 * common parser reads them alike, and a double (jansson's, PHP's) makes
 * 9007199254740993 and 9007199254740992 one.  Numbers are kept as exact
 * decimals, strings as validated UTF-8; anything a parser may read in
 * more than one way (duplicate names, even by escapes; invalid UTF-8; a
 * lone surrogate; nesting past CANON_MAX_DEPTH) does not parse.
 */

#define CANON_MAX_DEPTH		128	/* PHP's json_decode allows 512 */
#define CANON_MAX_EXP		100000000	/* |exponent| */

struct jp {
	const unsigned char	*p, *end;
	int			 depth;
};

static void
jp_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
	    *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int
jp_hex4(struct jp *j, unsigned *v)
{
	int	 i, h;

	if (j->end - j->p < 4)
		return -1;
	*v = 0;
	for (i = 0; i < 4; i++) {
		if ((h = path_hexval((char)j->p[i])) < 0)
			return -1;
		*v = *v << 4 | (unsigned)h;
	}
	j->p += 4;
	return 0;
}

/* Appends code point c as UTF-8. */
static int
put_utf8(struct buf *b, unsigned c)
{
	unsigned char	 u[4];
	size_t		 n;

	if (c < 0x80) {
		u[0] = (unsigned char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (unsigned char)(0xc0 | c >> 6);
		u[1] = (unsigned char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (unsigned char)(0xe0 | c >> 12);
		u[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
		u[2] = (unsigned char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | c >> 18);
		u[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
		u[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
		u[3] = (unsigned char)(0x80 | (c & 0x3f));
		n = 4;
	}
	return buf_add(b, u, n) == IDEM_OK ? 0 : -1;
}

/* One UTF-8 sequence at j->p, well-formed (no overlong form, no
 * surrogate, at most U+10FFFF): its code point, or -1. */
static long
jp_utf8(struct jp *j)
{
	const unsigned char	*p = j->p;
	unsigned		 c, n, i, min;

	if (p[0] < 0x80) {
		j->p++;
		return p[0];
	}
	if ((p[0] & 0xe0) == 0xc0) {
		n = 1; c = p[0] & 0x1f; min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 2; c = p[0] & 0x0f; min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 3; c = p[0] & 0x07; min = 0x10000;
	} else
		return -1;
	if ((size_t)(j->end - p) < n + 1)
		return -1;
	for (i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return -1;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return -1;
	j->p += n + 1;
	return (long)c;
}

/* A string at j->p ('"'), decoded into b (its bytes, UTF-8). */
static int
jp_string(struct jp *j, struct buf *b)
{
	unsigned	 c, lo;
	long		 u;

	j->p++;
	for (;;) {
		if (j->p >= j->end)
			return -1;
		if (*j->p == '"') {
			j->p++;
			return 0;
		}
		if (*j->p < 0x20)
			return -1;
		if (*j->p != '\\') {
			if ((u = jp_utf8(j)) < 0 ||
			    put_utf8(b, (unsigned)u) != 0)
				return -1;
			continue;
		}
		if (++j->p >= j->end)
			return -1;
		switch (*j->p++) {
		case '"': c = '"'; break;
		case '\\': c = '\\'; break;
		case '/': c = '/'; break;
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u':
			if (jp_hex4(j, &c) != 0 || (c >= 0xdc00 && c <= 0xdfff))
				return -1;
			if (c >= 0xd800 && c <= 0xdbff) {
				/* a pair, or nothing every parser agrees on */
				if (j->end - j->p < 6 || j->p[0] != '\\' ||
				    j->p[1] != 'u')
					return -1;
				j->p += 2;
				if (jp_hex4(j, &lo) != 0 || lo < 0xdc00 ||
				    lo > 0xdfff)
					return -1;
				c = 0x10000 + ((c - 0xd800) << 10) +
				    (lo - 0xdc00);
			}
			break;
		default:
			return -1;
		}
		if (put_utf8(b, c) != 0)
			return -1;
	}
}

/* Writes decoded string bytes s (n) as a canonical JSON string. */
static int
put_jstring(struct buf *out, const char *s, size_t n)
{
	static const char	 hex[] = "0123456789abcdef";
	char			 e[6] = { '\\', 'u', '0', '0', 0, 0 };
	size_t			 i, run = 0;

	if (buf_add(out, "\"", 1) != IDEM_OK)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		if (buf_add(out, s + run, i - run) != IDEM_OK)
			return -1;
		run = i + 1;
		if (c == '"' || c == '\\') {
			e[1] = (char)c;
			if (buf_add(out, e, 2) != IDEM_OK)
				return -1;
			e[1] = 'u';
			continue;
		}
		e[4] = hex[c >> 4];
		e[5] = hex[c & 15];
		if (buf_add(out, e, 6) != IDEM_OK)
			return -1;
	}
	if (buf_add(out, s + run, n - run) != IDEM_OK ||
	    buf_add(out, "\"", 1) != IDEM_OK)
		return -1;
	return 0;
}

/*
 * A number, written as the exact decimal it denotes: sign, significant
 * digits without leading or trailing zeros, and a power of ten
 * ("-15e-1" for -1.50; "0" or "-0" for zero), so 1, 1.0, 1e0 and 10e-1
 * are one value and 9007199254740993 is not 9007199254740992.  An integer
 * written without fraction or exponent from 2^53 up gets an "i": PHP
 * reads it exactly (an int, or with JSON_BIGINT_AS_STRING a string) but
 * the same value written as 9.007199254740993e15 as a double, another
 * number.  Below 2^53 every double is exact and 5 is 5.0.
 */
static int
jp_number(struct jp *j, struct buf *out)
{
	const unsigned char	*p = j->p, *d0, *f0 = NULL, *dend;
	long			 exp = 0, fraclen = 0, trail = 0;
	int			 neg = 0, eneg = 0, big;
	char			 tail[32];
	size_t			 nd;
	const unsigned char	*q;

	if (p < j->end && *p == '-') {
		neg = 1;
		p++;
	}
	if (p >= j->end || !isdigit(*p))
		return -1;
	d0 = p;
	if (*p == '0')
		p++;
	else
		while (p < j->end && isdigit(*p))
			p++;
	dend = p;
	if (p < j->end && *p == '.') {
		f0 = ++p;
		while (p < j->end && isdigit(*p))
			p++;
		if (p == f0)
			return -1;
		fraclen = p - f0;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		if (p >= j->end || !isdigit(*p))
			return -1;
		for (; p < j->end && isdigit(*p); p++) {
			exp = exp * 10 + (*p - '0');
			if (exp > CANON_MAX_EXP)
				return -1;
		}
		if (eneg)
			exp = -exp;
	}
	j->p = p;
	/* The digits: integer part, then fraction, significant only. */
	if (neg && buf_add(out, "-", 1) != IDEM_OK)
		return -1;
	nd = 0;
	for (q = d0; q < dend; q++)
		if (nd > 0 || *q != '0') {
			if (buf_add(out, q, 1) != IDEM_OK)
				return -1;
			nd++;
		}
	for (q = f0; f0 != NULL && q < f0 + fraclen; q++) {
		if (nd == 0 && *q == '0')
			continue;
		if (buf_add(out, q, 1) != IDEM_OK)
			return -1;
		nd++;
	}
	if (nd == 0)
		return buf_add(out, "0", 1) == IDEM_OK ? 0 : -1;
	big = f0 == NULL && !eneg && exp == 0 && dend == p &&
	    (nd > 16 || (nd == 16 && memcmp(out->p + out->len - nd,
	    "9007199254740992", 16) >= 0));
	while (out->p[out->len - 1 - trail] == '0')
		trail++;
	out->len -= (size_t)trail;
	snprintf(tail, sizeof(tail), "e%ld%s", exp - fraclen + trail,
	    big ? "i" : "");
	return buf_add(out, tail, strlen(tail)) == IDEM_OK ? 0 : -1;
}

static int jp_value(struct jp *j, struct buf *out);

struct member {
	size_t	 koff, klen, voff, vlen;	/* in the object's scratch */
};

static int
member_cmp(const void *a, const void *b, void *base)
{
	const struct member	*x = a, *y = b;
	const char		*k = base;
	int			 c;

	c = memcmp(k + x->koff, k + y->koff, x->klen < y->klen ? x->klen :
	    y->klen);
	if (c != 0)
		return c;
	return x->klen < y->klen ? -1 : x->klen > y->klen;
}

/* An object: its members sorted by name (decoded bytes); a name twice,
 * however spelled, does not parse. */
static int
jp_object(struct jp *j, struct buf *out)
{
	struct buf	 sc;
	struct member	*m = NULL, *nm;
	size_t		 n = 0, cap = 0, i;
	int		 rc = -1;

	buf_init(&sc, out->max);
	j->p++;
	jp_ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		rc = buf_add(out, "{}", 2) == IDEM_OK ? 0 : -1;
		goto done;
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			if ((nm = realloc(m, cap * sizeof(*m))) == NULL)
				goto done;
			m = nm;
		}
		jp_ws(j);
		if (j->p >= j->end || *j->p != '"')
			goto done;
		m[n].koff = sc.len;
		if (jp_string(j, &sc) != 0)
			goto done;
		m[n].klen = sc.len - m[n].koff;
		jp_ws(j);
		if (j->p >= j->end || *j->p++ != ':')
			goto done;
		jp_ws(j);
		m[n].voff = sc.len;
		if (jp_value(j, &sc) != 0)
			goto done;
		m[n].vlen = sc.len - m[n].voff;
		n++;
		jp_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			break;
		}
		goto done;
	}
	qsort_r(m, n, sizeof(*m), member_cmp, sc.p);
	for (i = 1; i < n; i++)
		if (member_cmp(&m[i - 1], &m[i], sc.p) == 0)
			goto done;
	if (buf_add(out, "{", 1) != IDEM_OK)
		goto done;
	for (i = 0; i < n; i++)
		if ((i > 0 && buf_add(out, ",", 1) != IDEM_OK) ||
		    put_jstring(out, sc.p + m[i].koff, m[i].klen) != 0 ||
		    buf_add(out, ":", 1) != IDEM_OK ||
		    buf_add(out, sc.p + m[i].voff, m[i].vlen) != IDEM_OK)
			goto done;
	rc = buf_add(out, "}", 1) == IDEM_OK ? 0 : -1;
done:
	free(m);
	buf_free(&sc);
	return rc;
}

static int
jp_array(struct jp *j, struct buf *out)
{
	j->p++;
	if (buf_add(out, "[", 1) != IDEM_OK)
		return -1;
	jp_ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		return buf_add(out, "]", 1) == IDEM_OK ? 0 : -1;
	}
	for (;;) {
		jp_ws(j);
		if (jp_value(j, out) != 0)
			return -1;
		jp_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			if (buf_add(out, ",", 1) != IDEM_OK)
				return -1;
			continue;
		}
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			return buf_add(out, "]", 1) == IDEM_OK ? 0 : -1;
		}
		return -1;
	}
}

static int
jp_literal(struct jp *j, struct buf *out, const char *word)
{
	size_t	 n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return -1;
	j->p += n;
	return buf_add(out, word, n) == IDEM_OK ? 0 : -1;
}

static int
jp_value(struct jp *j, struct buf *out)
{
	struct buf	 s;
	int		 rc;

	if (j->p >= j->end)
		return -1;
	switch (*j->p) {
	case '{':
	case '[':
		if (++j->depth > CANON_MAX_DEPTH)
			return -1;
		rc = *j->p == '{' ? jp_object(j, out) : jp_array(j, out);
		j->depth--;
		return rc;
	case '"':
		buf_init(&s, out->max);
		rc = jp_string(j, &s) == 0 && put_jstring(out, s.p != NULL ?
		    s.p : "", s.len) == 0 ? 0 : -1;
		buf_free(&s);
		return rc;
	case 't':
		return jp_literal(j, out, "true");
	case 'f':
		return jp_literal(j, out, "false");
	case 'n':
		return jp_literal(j, out, "null");
	default:
		return jp_number(j, out);
	}
}

static int
canon_json(const char *body, size_t len, struct buf *out)
{
	struct jp	 j;

	j.p = (const unsigned char *)body;
	j.end = j.p + len;
	j.depth = 0;
	jp_ws(&j);
	if (jp_value(&j, out) != 0)
		return 0;
	jp_ws(&j);
	return j.p == j.end;
}

/* Percent-decodes p[0..n) ('+' is a space) in place; new length or -1. */
static long
form_decode(char *p, size_t n)
{
	size_t	 r, w = 0;
	int	 hi, lo;

	for (r = 0; r < n; r++) {
		if (p[r] == '+')
			p[w++] = ' ';
		else if (p[r] != '%')
			p[w++] = p[r];
		else {
			if (r + 2 >= n)
				return -1;
			if ((hi = path_hexval(p[r + 1])) < 0 ||
			    (lo = path_hexval(p[r + 2])) < 0)
				return -1;
			p[w++] = (char)(hi * 16 + lo);
			r += 2;
		}
	}
	return (long)w;
}

struct pair {
	const char	*p;		/* "name\0value" decoded */
	size_t		 nlen, vlen;
	size_t		 idx;		/* its place in the body */
	char		*var;		/* the variable PHP reads it into */
	size_t		 varlen;
};

/*
 * The variable a form field's name sets in PHP ($_POST): leading spaces
 * dropped, ' ' and '.' read as '_', up to the first '[' (a[], a[x] and
 * a set one variable) or a NUL.  Two names PHP reads as one variable
 * keep their order: the last one wins there, or they fill one array.
 */
static void
pair_var(struct pair *pr)
{
	const char	*n = pr->p, *e = pr->p + pr->nlen, *br, *nul;
	size_t		 k = 0;
	int		 plain;

	if ((nul = memchr(n, '\0', pr->nlen)) != NULL)
		e = nul;
	while (n < e && *n == ' ')
		n++;
	/* A '[' without a ']' after it is no array: PHP reads it, and any
	 * later ' ', '.' or '[', as '_', all one plain name. */
	br = n < e ? memchr(n, '[', (size_t)(e - n)) : NULL;
	plain = br == NULL || memchr(br, ']', (size_t)(e - br)) == NULL;
	for (; n < e && (plain || *n != '['); n++)
		pr->var[k++] = *n == ' ' || *n == '.' || *n == '[' ? '_' : *n;
	pr->varlen = k;
}

/* By variable, then as they came: a stable sort. */
static int
pair_cmp(const void *a, const void *b)
{
	const struct pair	*x = a, *y = b;
	int			 c;

	c = memcmp(x->var, y->var, x->varlen < y->varlen ? x->varlen :
	    y->varlen);
	if (c != 0)
		return c;
	if (x->varlen != y->varlen)
		return x->varlen < y->varlen ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int
canon_form(const char *body, size_t len, struct buf *out)
{
	struct pair	*pairs = NULL;
	char		*copy, *f, *eq, *vars = NULL;
	size_t		 n = 0, pieces = 0, i, start, end;
	long		 nl, vl;
	int		 rc = 0;

	if ((copy = malloc(len + 1)) == NULL)
		return 0;
	if (len > 0)
		memcpy(copy, body, len);
	copy[len] = '\0';
	if ((pairs = calloc(CANON_MAX_PAIRS, sizeof(*pairs))) == NULL ||
	    (vars = malloc(len + 1)) == NULL)
		goto out;
	for (start = 0; start <= len; start = end + 1) {
		for (end = start; end < len && copy[end] != '&'; end++)
			;
		/* An empty piece ("a=1&&b=2") is no pair, but PHP counts it
		 * against max_input_vars all the same: where the cut falls
		 * depends on it, so it counts here too. */
		if (++pieces > CANON_MAX_PAIRS)
			goto out;
		if (end == start)
			continue;
		f = copy + start;
		copy[end] = '\0';
		eq = memchr(f, '=', end - start);
		if (eq == NULL)
			eq = copy + end;	/* "flag": empty value */
		nl = form_decode(f, (size_t)(eq - f));
		vl = eq < copy + end ? form_decode(eq + 1,
		    (size_t)(copy + end - eq - 1)) : 0;
		if (nl < 0 || vl < 0)
			goto out;
		/* name and value side by side: "name\0value" */
		f[nl] = '\0';
		if (eq < copy + end)
			memmove(f + nl + 1, eq + 1, (size_t)vl);
		pairs[n].p = f;
		pairs[n].nlen = (size_t)nl;
		pairs[n].vlen = (size_t)vl;
		pairs[n].idx = n;
		pairs[n].var = vars + (f - copy);
		pair_var(&pairs[n]);
		n++;
	}
	qsort(pairs, n, sizeof(*pairs), pair_cmp);
	for (i = 0; i < n; i++)
		if (put_field(out, pairs[i].p, pairs[i].nlen) != 0 ||
		    put_field(out, pairs[i].p + pairs[i].nlen + 1,
		    pairs[i].vlen) != 0)
			goto out;
	rc = 1;
out:
	free(vars);
	free(pairs);
	free(copy);
	return rc;
}

/* 1 if c may stand in an HTTP token (a header name). */
static int
token_char(char c)
{
	return c > 32 && c < 127 && strchr("()<>@,;:\\\"/[]?={}", c) == NULL;
}

/* One part's header block p[0..n): each line "Name: value", names
 * lower-cased and values trimmed, length-prefixed. */
static int
part_headers(const char *p, size_t n, struct buf *out)
{
	char		 line[1024];
	const char	*eol, *colon, *v, *ve;
	size_t		 ll, nl, i;

	while (n > 0) {
		eol = memmem(p, n, "\r\n", 2);
		ll = eol != NULL ? (size_t)(eol - p) : n;
		colon = memchr(p, ':', ll);
		if (colon == NULL || colon == p ||
		    (size_t)(colon - p) >= sizeof(line) / 2)
			return -1;
		nl = (size_t)(colon - p);
		/* A token for a name, no bare CR or LF anywhere: a folded
		 * line or a lone LF is read as a value by some parsers and
		 * as a new header by others. */
		for (i = 0; i < ll; i++)
			if (p[i] == '\r' || p[i] == '\n' || (i < nl &&
			    !token_char(p[i])))
				return -1;
		for (i = 0; i < nl; i++)
			line[i] = (char)tolower((unsigned char)p[i]);
		line[nl] = ':';
		for (v = colon + 1, ve = p + ll; v < ve && (*v == ' ' ||
		    *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if ((size_t)(ve - v) > sizeof(line) - nl - 2)
			return -1;
		memcpy(line + nl + 1, v, (size_t)(ve - v));
		if (put_field(out, line, nl + 1 + (size_t)(ve - v)) != 0)
			return -1;
		if (eol == NULL)
			break;
		n -= ll + 2;
		p += ll + 2;
	}
	return 0;
}

/* 1 if [p, end) is empty or spaces, tabs, CRs and LFs only. */
static int
only_space(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			return 0;
	return 1;
}

static int
canon_multipart(const char *body, size_t len, const char *b, size_t blen,
    struct buf *out)
{
	char		 delim[80];
	const char	*p, *end = body + len, *next, *hend, *q;
	size_t		 dlen, parts = 0, marks = 0;

	/* "--" boundary, then "\r\n--" boundary between parts */
	delim[0] = '\r';
	delim[1] = '\n';
	delim[2] = '-';
	delim[3] = '-';
	memcpy(delim + 4, b, blen);
	dlen = 4 + blen;
	/* "--boundary" where it is no delimiter (after a lone LF, say,
	 * which PHP takes for one): read differently by different parsers.
	 * Every mark must be a delimiter we use. */
	for (q = body; (q = memmem(q, (size_t)(end - q), delim + 2,
	    dlen - 2)) != NULL; q += dlen - 2)
		marks++;
	/* The first delimiter opens the body, or follows white space only:
	 * a preamble of text is read by some parsers and not others. */
	if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0)
		p = body + dlen - 2;
	else if ((p = memmem(body, len, delim, dlen)) != NULL &&
	    only_space(body, p))
		p += dlen;
	else
		return 0;
	for (;;) {
		/* The close delimiter; after it, white space only (PHP reads
		 * a part that follows it). */
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return parts > 0 && marks == parts + 1 &&
			    only_space(p + 2, end);
		/* CRLF at once: RFC 2046 allows transport padding here, but
		 * PHP takes a padded line for no delimiter (and reads the
		 * part after it into the one before). */
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			return 0;
		p += 2;
		if ((next = memmem(p, (size_t)(end - p), delim, dlen)) ==
		    NULL || ++parts > CANON_MAX_PARTS)
			return 0;
		if (next - p >= 2 && p[0] == '\r' && p[1] == '\n')
			hend = p;	/* no headers */
		else if ((hend = memmem(p, (size_t)(next - p), "\r\n\r\n",
		    4)) == NULL)
			return 0;
		if (put_field(out, "part", 4) != 0 ||
		    part_headers(p, (size_t)(hend - p), out) != 0)
			return 0;
		hend += hend == p ? 2 : 4;
		if (put_field(out, "body", 4) != 0 ||
		    put_field(out, hend, (size_t)(next - hend)) != 0)
			return 0;
		p = next + dlen;
	}
}

int
canon_body(const char *ctype, const void *body, size_t len,
    struct buf *out, const char **ctype_out)
{
	const char	*b = NULL;
	size_t		 blen = 0;
	char		 media[256];
	int		 ok = 0;

	buf_reset(out);
	if (body == NULL)
		body = "";
	switch (media_of(ctype, &b, &blen)) {
	case MEDIA_JSON:
		ok = media_name(ctype, media, sizeof(media)) == 0 &&
		    media_tag(media, ctype, out) == 0 &&
		    canon_json(body, len, out);
		break;
	case MEDIA_FORM:
		ok = media_tag("form", ctype, out) == 0 &&
		    canon_form(body, len, out);
		break;
	case MEDIA_MULTIPART:
		ok = media_tag("multipart", ctype, out) == 0 &&
		    canon_multipart(body, len, b, blen, out);
		break;
	default:
		break;
	}
	if (!ok)
		buf_reset(out);
	else
		*ctype_out = CANON_CTYPE;
	return ok;
}
