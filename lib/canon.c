/* Request bodies by meaning, for fingerprint = canonical: JSON, forms, multipart. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "canon.h"
#include "path.h"

#define CANON_MAX_PAIRS		10000	/* form fields */
#define CANON_MAX_PARTS		1000	/* multipart parts */

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
	while (*ctype == ' ' || *ctype == '\t')
		ctype++;
	semi = strchr(ctype, ';');
	n = semi != NULL ? (size_t)(semi - ctype) : strlen(ctype);
	while (n > 0 && (ctype[n - 1] == ' ' || ctype[n - 1] == '\t'))
		n--;
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
	/* boundary=... or boundary="..." among the parameters */
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
		} else
			for (end = p; *end != '\0' && *end != ';' &&
			    *end != ' ' && *end != '\t'; end++)
				;
		if (end == p || end - p > 70)
			return MEDIA_OTHER;
		*boundary = p;
		*blen = (size_t)(end - p);
		return MEDIA_MULTIPART;
	}
	return MEDIA_OTHER;
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
canon_json(const char *body, size_t len, struct buf *out)
{
	json_t		*root;
	json_error_t	 err;
	size_t		 need;
	char		*p;
	int		 rc = 0;

	root = json_loadb(body, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
	    JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &err);
	if (root == NULL)
		return 0;
	need = json_dumpb(root, NULL, 0, JSON_COMPACT | JSON_SORT_KEYS |
	    JSON_ENSURE_ASCII | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	if (need > 0 && (p = malloc(need)) != NULL) {
		if (json_dumpb(root, p, need, JSON_COMPACT | JSON_SORT_KEYS |
		    JSON_ENSURE_ASCII | JSON_ENCODE_ANY |
		    JSON_REAL_PRECISION(17)) == need &&
		    buf_add(out, p, need) == IDEM_OK)
			rc = 1;
		free(p);
	}
	json_decref(root);
	return rc;
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
};

static int
pair_cmp(const void *a, const void *b)
{
	const struct pair	*x = a, *y = b;
	size_t			 xl = x->nlen + 1 + x->vlen;
	size_t			 yl = y->nlen + 1 + y->vlen;
	int			 c;

	c = memcmp(x->p, y->p, xl < yl ? xl : yl);
	if (c != 0)
		return c;
	return xl < yl ? -1 : xl > yl;
}

static int
canon_form(const char *body, size_t len, struct buf *out)
{
	struct pair	*pairs = NULL;
	char		*copy, *f, *eq;
	size_t		 n = 0, i, start, end;
	long		 nl, vl;
	int		 rc = 0;

	if ((copy = malloc(len + 1)) == NULL)
		return 0;
	if (len > 0)
		memcpy(copy, body, len);
	copy[len] = '\0';
	if ((pairs = calloc(CANON_MAX_PAIRS, sizeof(*pairs))) == NULL)
		goto out;
	for (start = 0; start <= len; start = end + 1) {
		for (end = start; end < len && copy[end] != '&'; end++)
			;
		if (end == start)
			continue;	/* "a=1&&b=2": no pair */
		if (n == CANON_MAX_PAIRS)
			goto out;
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
	free(pairs);
	free(copy);
	return rc;
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
		if (colon == NULL || (size_t)(colon - p) >= sizeof(line) / 2)
			return -1;
		nl = (size_t)(colon - p);
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

static int
canon_multipart(const char *body, size_t len, const char *b, size_t blen,
    struct buf *out)
{
	char		 delim[80];
	const char	*p, *end = body + len, *next, *hend;
	size_t		 dlen, parts = 0;

	/* "--" boundary, then "\r\n--" boundary between parts */
	delim[0] = '\r';
	delim[1] = '\n';
	delim[2] = '-';
	delim[3] = '-';
	memcpy(delim + 4, b, blen);
	dlen = 4 + blen;
	/* the first delimiter may open the body (no CRLF before it) */
	if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0)
		p = body + dlen - 2;
	else if ((p = memmem(body, len, delim, dlen)) != NULL)
		p += dlen;
	else
		return 0;
	for (;;) {
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return parts > 0;	/* the close delimiter */
		/* transport padding, then CRLF */
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			return 0;
		p += 2;
		if ((next = memmem(p, (size_t)(end - p), delim, dlen)) == NULL ||
		    ++parts > CANON_MAX_PARTS)
			return 0;
		if (next - p >= 2 && p[0] == '\r' && p[1] == '\n')
			hend = p;	/* no headers */
		else if ((hend = memmem(p, (size_t)(next - p), "\r\n\r\n", 4)) ==
		    NULL)
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
	int		 ok = 0;

	buf_reset(out);
	if (body == NULL)
		body = "";
	switch (media_of(ctype, &b, &blen)) {
	case MEDIA_JSON:
		ok = canon_json(body, len, out);
		*ctype_out = ok ? "application/json" : *ctype_out;
		break;
	case MEDIA_FORM:
		ok = canon_form(body, len, out);
		*ctype_out = ok ? "application/x-www-form-urlencoded" :
		    *ctype_out;
		break;
	case MEDIA_MULTIPART:
		ok = canon_multipart(body, len, b, blen, out);
		*ctype_out = ok ? "multipart/form-data" : *ctype_out;
		break;
	default:
		break;
	}
	if (!ok)
		buf_reset(out);
	return ok;
}
