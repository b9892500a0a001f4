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
	size_t	 i, n = 0, seg, o;
	int	 hi, lo;

	/* Pass 1: decode the unreserved escapes; keep the rest encoded. */
	if ((dec = malloc(len + 2)) == NULL)
		return NULL;
	dec[n++] = '/';
	for (i = 0; i < len; i++) {
		if (in[i] == '%' && i + 2 < len &&
		    (hi = path_hexval(in[i + 1])) >= 0 &&
		    (lo = path_hexval(in[i + 2])) >= 0) {
			int c = hi * 16 + lo;

			if (path_unreserved(c))
				dec[n++] = (char)c;
			else {
				dec[n++] = '%';
				dec[n++] = "0123456789ABCDEF"[hi];
				dec[n++] = "0123456789ABCDEF"[lo];
			}
			i += 2;
		} else
			dec[n++] = in[i];
	}
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
