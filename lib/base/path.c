/* Request paths in one spelling: what routes and fingerprints match on. */
#include <stdlib.h>
#include <string.h>

#include "path.h"

int
path_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
path_unreserved(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/* One escape at in[i] ("%XY") in its one spelling at out: the bytes
 * written, or 0 when in[i] starts no escape. */
static size_t
path_escape_norm(const char *in, size_t len, size_t i, char *out)
{
	int	 hi, lo, c;

	if (in[i] != '%' || i + 2 >= len || (hi = path_hexval(in[i + 1])) < 0 ||
	    (lo = path_hexval(in[i + 2])) < 0)
		return 0;
	c = hi * 16 + lo;
	if (path_unreserved(c)) {
		out[0] = (char)c;
		return 1;
	}
	out[0] = '%';
	out[1] = "0123456789ABCDEF"[hi];
	out[2] = "0123456789ABCDEF"[lo];
	return 3;
}

size_t
path_query_normalize(const char *in, size_t len, char *out)
{
	size_t	 i, n = 0, k;

	for (i = 0; i < len; i++) {
		if ((k = path_escape_norm(in, len, i, out + n)) > 0) {
			n += k;
			i += 2;
		} else
			out[n++] = in[i];
	}
	return n;
}

/* Drops the last segment of out[0..*n) (and its slash), for "..". */
static void
path_pop(char *out, size_t *n)
{
	while (*n > 1 && out[*n - 1] != '/')
		(*n)--;
	/* out[*n - 1] is now the slash before the dropped segment. */
	if (*n > 1)
		(*n)--;
}

char *
path_normalize(const char *in, size_t len)
{
	char	*dec, *out;
	size_t	 i, n, seg, o;

	/* Pass 1: decode the unreserved escapes; keep the rest encoded. */
	if ((dec = malloc(len + 2)) == NULL)
		return NULL;
	dec[0] = '/';
	n = 1 + path_query_normalize(in, len, dec + 1);
	/* Pass 2: segments; "/" + segment at a time, merging slashes. */
	if ((out = malloc(n + 2)) == NULL) {
		free(dec);
		return NULL;
	}
	o = 0;
	out[o++] = '/';
	for (i = 0; i < n;) {
		while (i < n && dec[i] == '/')
			i++;
		if (i == n)
			break;
		seg = i;
		while (i < n && dec[i] != '/')
			i++;
		if (i - seg == 1 && dec[seg] == '.') {
			/* "/a/." is "/a/": the directory itself. */
			if (i == n && out[o - 1] != '/')
				out[o++] = '/';
			continue;
		}
		if (i - seg == 2 && dec[seg] == '.' && dec[seg + 1] == '.') {
			path_pop(out, &o);
			if (i == n && out[o - 1] != '/')
				out[o++] = '/';
			continue;
		}
		if (out[o - 1] != '/')
			out[o++] = '/';
		memcpy(out + o, dec + seg, i - seg);
		o += i - seg;
	}
	/* A trailing slash names a directory: keep it. */
	if (dec[n - 1] == '/' && out[o - 1] != '/')
		out[o++] = '/';
	out[o] = '\0';
	free(dec);
	return out;
}
