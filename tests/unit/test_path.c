/* Unit tests for path normalisation: one spelling per file a web server resolves. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "path.h"

/* 1 if in normalises to want. */
static int
norm_is(const char *in, const char *want)
{
	char	*got = path_normalize(in, strlen(in));
	int	 ok = got != NULL && strcmp(got, want) == 0;

	if (!ok)
		printf("# %s -> %s (want %s)\n", in, got ? got : "(null)",
		    want);
	free(got);
	return ok;
}

int
main(void)
{
	CHECK(norm_is("/cgi-bin/pay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("//cgi-bin/pay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("/cgi-bin//pay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("/cgi-bin/%70ay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("/cgi-bin/%70%61%79%2E%63gi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("/cgi-bin/./pay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("/x/../cgi-bin/pay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("/cgi-bin/%2e/pay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("/x/%2E%2E/cgi-bin/pay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("/../../cgi-bin/pay.cgi", "/cgi-bin/pay.cgi"));
	CHECK(norm_is("cgi-bin/pay.cgi", "/cgi-bin/pay.cgi"));
	/* Reserved characters stay encoded, hex upper-cased. */
	CHECK(norm_is("/a%2fb", "/a%2Fb"));
	CHECK(norm_is("/a%2Fb", "/a%2Fb"));
	CHECK(norm_is("/a%00b", "/a%00b"));
	CHECK(norm_is("/a%20b", "/a%20b"));
	/* Broken escapes are kept as they are. */
	CHECK(norm_is("/a%", "/a%"));
	CHECK(norm_is("/a%6", "/a%6"));
	CHECK(norm_is("/a%zz", "/a%zz"));
	CHECK(norm_is("/a%7", "/a%7"));
	/* Directories keep their trailing slash. */
	CHECK(norm_is("/a/b/", "/a/b/"));
	CHECK(norm_is("/a/b//", "/a/b/"));
	CHECK(norm_is("/a/.", "/a/"));
	CHECK(norm_is("/a/b/..", "/a/"));
	CHECK(norm_is("/a/..", "/"));
	CHECK(norm_is("/..", "/"));
	CHECK(norm_is("/", "/"));
	CHECK(norm_is("", "/"));
	CHECK(norm_is("///", "/"));
	CHECK(norm_is("/...", "/..."));
	CHECK(norm_is("/a/.b/..c", "/a/.b/..c"));
	return CHECK_DONE();
}
