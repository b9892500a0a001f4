/* Unit-test helpers for running handlers: an output sink, fd counting. */
#ifndef IDEM_TEST_SINK_H
#define IDEM_TEST_SINK_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "err.h"

/* Collects a handler's output; fails once more than fail_after bytes came. */
struct sink {
	struct buf	 b;
	size_t		 total;
	size_t		 fail_after;	/* 0: never fail */
	int		 ticks;
	int		 stop_at_tick;	/* 0: never ask the handler to stop */
	int		 clen_complete;	/* complete() honours Content-Length */
};

static inline void
sink_init(struct sink *s)
{
	memset(s, 0, sizeof(*s));
	buf_init(&s->b, 64 * 1024 * 1024);
}

/* The out() callback of struct cgi_run and struct upstream_req. */
static inline enum idem_err
sink_out(void *arg, const void *p, size_t n)
{
	struct sink *s = arg;

	s->total += n;
	if (s->fail_after > 0 && s->total > s->fail_after)
		return IDEM_ETOOBIG;
	return buf_add(&s->b, p, n);
}

/* The complete() callback: with clen_complete, 1 once the body holds the
 * head's Content-Length (a plain LF head, as the test programs write). */
static inline int
sink_complete_cb(void *arg)
{
	struct sink	*s = arg;
	const char	*cl, *end;

	if (!s->clen_complete || s->b.p == NULL)
		return 0;
	if ((cl = strstr(s->b.p, "Content-Length: ")) == NULL ||
	    (end = strstr(s->b.p, "\n\n")) == NULL)
		return 0;
	return s->b.len - (size_t)(end + 2 - s->b.p) >=
	    (size_t)atol(cl + 16);
}

/* The tick() callback: counts calls, every 50 ms; asks for a stop at
 * call stop_at_tick. */
static inline int64_t
sink_tick(void *arg)
{
	struct sink *s = arg;

	s->ticks++;
	return s->stop_at_tick > 0 && s->ticks >= s->stop_at_tick ? -1 : 50;
}

/* Open file descriptors of this process, -1 if /proc is not there. */
static inline int
count_fds(void)
{
	DIR		*d = opendir("/proc/self/fd");
	struct dirent	*de;
	int		 n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static inline void
sleep_ms(long ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

#endif
