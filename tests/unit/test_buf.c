/* Unit tests for bounded buffers and for logging (escaping, levels, one line per call). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "log.h"

static void
test_buf(void)
{
	struct buf	 b;
	char		*big;
	size_t		 i;

	buf_init(&b, 8);
	CHECK(b.p == NULL && b.len == 0 && b.max == 8);
	CHECK(buf_add(&b, "", 0) == IDEM_OK && b.len == 0 && b.p[0] == '\0');
	CHECK(buf_add(&b, "abc", 3) == IDEM_OK && b.len == 3);
	CHECK(strcmp(b.p, "abc") == 0);
	CHECK(buf_addstr(&b, "defgh") == IDEM_OK && b.len == 8);
	CHECK(strcmp(b.p, "abcdefgh") == 0);
	/* Full at n == max; one more byte is refused and changes nothing. */
	CHECK(buf_add(&b, "i", 1) == IDEM_ETOOBIG);
	CHECK(b.len == 8 && strcmp(b.p, "abcdefgh") == 0);
	CHECK(buf_add(&b, "", 0) == IDEM_OK && b.len == 8);
	CHECK(buf_printf(&b, "%d", 1) == IDEM_ETOOBIG && b.len == 8);
	/* A length that would overflow size_t is refused, not wrapped. */
	CHECK(buf_add(&b, "x", (size_t)-1) == IDEM_ETOOBIG && b.len == 8);
	buf_reset(&b);
	CHECK(b.len == 0 && b.p != NULL && b.p[0] == '\0' && b.max == 8);
	CHECK(buf_add(&b, "123456789", 9) == IDEM_ETOOBIG && b.len == 0);
	CHECK(buf_printf(&b, "%s-%d", "ab", 12345) == IDEM_OK);
	CHECK(b.len == 8 && strcmp(b.p, "ab-12345") == 0);
	buf_reset(&b);
	CHECK(buf_printf(&b, "%s", "123456789") == IDEM_ETOOBIG && b.len == 0);
	CHECK(buf_printf(&b, "%s", "") == IDEM_OK && b.len == 0);
	/* Content may hold NULs; the terminator stays past len. */
	CHECK(buf_add(&b, "a\0b", 3) == IDEM_OK && b.len == 3);
	CHECK(memcmp(b.p, "a\0b", 4) == 0);
	buf_free(&b);
	CHECK(b.p == NULL && b.len == 0 && b.cap == 0 && b.max == 8);
	buf_free(&b);
	buf_free(NULL);

	/* max 0 holds nothing at all. */
	buf_init(&b, 0);
	CHECK(buf_add(&b, "x", 1) == IDEM_ETOOBIG && b.p == NULL);
	CHECK(buf_add(&b, "", 0) == IDEM_OK && b.len == 0);
	buf_free(&b);

	/* Growth keeps content across reallocations, up to max exactly. */
	buf_init(&b, 100000);
	for (i = 0; i < 10000; i++)
		if (buf_add(&b, "0123456789", 10) != IDEM_OK)
			break;
	CHECK(i == 10000 && b.len == 100000 && b.cap > b.len);
	CHECK(memcmp(b.p + 99990, "0123456789", 10) == 0 && b.p[b.len] == '\0');
	CHECK(buf_add(&b, "x", 1) == IDEM_ETOOBIG);
	buf_free(&b);

	big = malloc(5000);
	if (big != NULL) {
		memset(big, 'q', 4999);
		big[4999] = '\0';
		buf_init(&b, 4999);
		CHECK(buf_printf(&b, "%s", big) == IDEM_OK && b.len == 4999);
		buf_reset(&b);
		CHECK(buf_addstr(&b, big) == IDEM_OK);
		buf_free(&b);
		buf_init(&b, 4998);
		CHECK(buf_printf(&b, "%s", big) == IDEM_ETOOBIG && b.len == 0);
		buf_free(&b);
		free(big);
	}
}

/* Runs the logging calls with stderr redirected to a file; returns its text. */
static char *
capture(void (*fn)(void))
{
	char	 path[] = "/tmp/test_buf.XXXXXX";
	int	 fd, saved;
	char	*text = NULL;
	ssize_t	 n;

	if ((fd = mkstemp(path)) < 0)
		return NULL;
	unlink(path);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	if ((text = calloc(1, 16384)) != NULL) {
		n = pread(fd, text, 16383, 0);
		if (n < 0)
			n = 0;
		text[n] = '\0';
	}
	close(fd);
	return text;
}

static void
log_lines(void)
{
	char	 big[3000];

	log_open("test_buf", 0);
	log_set_level(LOG_LVL_INFO);
	log_info("hello %d", 42);
	log_err("forged\nline\r\x1b[31m\x7f end");
	log_debug("not shown");
	log_warn("warned");
	log_set_level(LOG_LVL_DEBUG);
	log_debug("now shown");
	log_set_level(LOG_LVL_ERR);
	log_warn("dropped");
	log_err("kept");
	memset(big, 'L', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_err("%s", big);
	log_set_level(LOG_LVL_INFO);
}

static int
count_lines(const char *s)
{
	int	 n = 0;

	for (; *s != '\0'; s++)
		if (*s == '\n')
			n++;
	return n;
}

static void
test_log(void)
{
	char	*t = capture(log_lines);

	CHECK(t != NULL);
	if (t == NULL)
		return;
	CHECK(strstr(t, "test_buf[") != NULL);
	CHECK(strstr(t, "info: hello 42\n") != NULL);
	/* Control bytes are escaped: one call, one line. */
	CHECK(strstr(t, "error: forged\\x0aline\\x0d\\x1b[31m\\x7f end\n") != NULL);
	CHECK(strstr(t, "not shown") == NULL);
	CHECK(strstr(t, "warn: warned\n") != NULL);
	CHECK(strstr(t, "debug: now shown\n") != NULL);
	CHECK(strstr(t, "dropped") == NULL);
	CHECK(strstr(t, "error: kept\n") != NULL);
	/* Long messages are cut, never split into a second line. */
	CHECK(strstr(t, "LLLLLLLLLL") != NULL);
	CHECK(count_lines(t) == 6);
	/* Every line starts with a UTC timestamp. */
	CHECK(t[4] == '-' && t[10] == 'T' && strchr(t, 'Z') != NULL);
	free(t);
}

/* One line a period, the next one counting what came between. */
static void
test_log_every(void)
{
	struct log_every	 le;
	uint64_t		 n = 0;
	int			 i, lines = 0;

	memset(&le, 0, sizeof(le));
	CHECK(log_every(&le, 1000, 60000, &n) == 1 && n == 1);
	for (i = 0; i < 20; i++)
		lines += log_every(&le, 1000 + i * 100, 60000, &n);
	CHECK(lines == 0);
	/* 59.999 s after the line: still held; at 60 s: the next line. */
	CHECK(log_every(&le, 60999, 60000, &n) == 0);
	n = 0;
	CHECK(log_every(&le, 61000, 60000, &n) == 1 && n == 22);
	CHECK(log_every(&le, 61001, 60000, &n) == 0);
	CHECK(log_every(&le, 200000, 60000, &n) == 1 && n == 2);
}

int
main(void)
{
	test_buf();
	test_log();
	test_log_every();
	return CHECK_DONE();
}
