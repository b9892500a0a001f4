/* Unit tests for the reader: parked requests (stops, hang-ups), drains. */
#include <sys/socket.h>
#include <sys/un.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/check.h"
#include "clock.h"
#include "fastcgi.h"
#include "reader.h"

/*
 * A parked request whose wake is far off is handed out, final, by
 * reader_stop while the reader thread keeps planning its looks at it
 * (every PARK_TICK_MS): both touch the next look, which must not race
 * (a ThreadSanitizer build of this test says so).
 */
static void
test_stop_parked(void)
{
	static const char text[] = "[route /x]\nhandler = cgi:/bin/true\n";
	struct cfg	*c = NULL;
	struct reader	*rd = NULL;
	struct job	*j, *got;
	char		 err[256];
	int		 sv[2] = { -1, -1 };

	CHECK(cfg_parse(text, strlen(text), "t.conf", &c, err,
	    sizeof(err)) == IDEM_OK);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	if (c == NULL || sv[0] < 0)
		goto out;
	CHECK(reader_new(c, sv[0], NULL, NULL, NULL, &rd) == IDEM_OK);
	if (rd == NULL || (j = calloc(1, sizeof(*j))) == NULL)
		goto out;
	j->fd = -1;
	park_arm(&j->park, 12345);
	CHECK(park_busy(&j->park, 60000, 0, clock_now_ms()) == 1);
	j->park.wake_ms = clock_now_ms() + 60000;
	CHECK(reader_park(rd, j) == 0);
	clock_sleep_ms(3 * PARK_TICK_MS);	/* the reader looks, again */
	reader_stop(rd);
	got = reader_next(rd);
	CHECK(got == j && got->park.final == 1);
	if (got != NULL)
		reader_done(rd, got, 0);
	CHECK(reader_next(rd) == NULL);
out:
	reader_free(rd);
	cfg_free(c);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
}

/* A job parked on fd, its wake a minute off. */
static struct job *
parked_on(struct reader *rd, int fd)
{
	struct job	*j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->fd = fd;
	park_arm(&j->park, 777);
	(void)park_busy(&j->park, 60000, 0, clock_now_ms());
	j->park.wake_ms = clock_now_ms() + 60000;
	CHECK(reader_park(rd, j) == 0);
	return j;
}

/*
 * The web server hanging up on a parked request hands it out at once,
 * gone (nobody to answer), long before its wake; one whose web server
 * only shut down its sending half counts as gone too (README: as nginx
 * takes a client's); one still connected stays parked until the stop.
 */
static void
test_parked_hangup(void)
{
	static const char text[] = "[route /x]\nhandler = cgi:/bin/true\n";
	struct cfg	*c = NULL;
	struct reader	*rd = NULL;
	struct job	*a, *h, *live, *got;
	char		 err[256];
	int		 sv[2] = { -1, -1 }, pa[2] = { -1, -1 },
			 ph[2] = { -1, -1 }, pl[2] = { -1, -1 };
	int64_t		 t0;

	CHECK(cfg_parse(text, strlen(text), "t.conf", &c, err,
	    sizeof(err)) == IDEM_OK);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pa) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, ph) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pl) == 0);
	if (c == NULL || sv[0] < 0 || pa[0] < 0 || ph[0] < 0 || pl[0] < 0)
		goto out;
	CHECK(reader_new(c, sv[0], NULL, NULL, NULL, &rd) == IDEM_OK);
	if (rd == NULL)
		goto out;
	t0 = clock_now_ms();
	a = parked_on(rd, pa[0]);
	h = parked_on(rd, ph[0]);
	live = parked_on(rd, pl[0]);
	clock_sleep_ms(3 * PARK_TICK_MS);
	close(pa[1]);
	pa[1] = -1;
	got = reader_next(rd);
	CHECK(got == a && got->park.gone == 1 && got->park.final == 0);
	if (got != NULL)
		reader_done(rd, got, 0);	/* closes pa[0] */
	pa[0] = -1;
	CHECK(shutdown(ph[1], SHUT_WR) == 0);
	got = reader_next(rd);
	CHECK(got == h && got->park.gone == 1);
	if (got != NULL)
		reader_done(rd, got, 0);
	ph[0] = -1;
	CHECK(clock_now_ms() - t0 < 5000);
	reader_stop(rd);
	got = reader_next(rd);
	CHECK(got == live && got->park.gone == 0 && got->park.final == 1);
	if (got != NULL)
		reader_done(rd, got, 0);
	pl[0] = -1;
	CHECK(reader_next(rd) == NULL);
out:
	reader_free(rd);
	cfg_free(c);
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (pa[i] >= 0)
			close(pa[i]);
		if (ph[i] >= 0)
			close(ph[i]);
		if (pl[i] >= 0)
			close(pl[i]);
	}
}

/* A whole FastCGI request for id 1, GET /x, into b; flags as
 * BEGIN_REQUEST's (FCGI_KEEP_CONN). */
static void
request_bytes_flags(struct buf *b, int flags)
{
	struct buf	 pairs;

	buf_init(&pairs, 4096);
	CHECK(fcgi_pair_append(&pairs, "REQUEST_METHOD", 14, "GET", 3) ==
	    IDEM_OK);
	CHECK(fcgi_pair_append(&pairs, "SCRIPT_NAME", 11, "/x", 2) ==
	    IDEM_OK);
	CHECK(fcgi_begin(b, 1, FCGI_RESPONDER, flags) == IDEM_OK);
	CHECK(fcgi_record(b, FCGI_PARAMS, 1, pairs.p, pairs.len) == IDEM_OK);
	CHECK(fcgi_record(b, FCGI_PARAMS, 1, NULL, 0) == IDEM_OK);
	CHECK(fcgi_record(b, FCGI_STDIN, 1, NULL, 0) == IDEM_OK);
	buf_free(&pairs);
}

static void
request_bytes(struct buf *b)
{
	request_bytes_flags(b, 0);
}

/* A listening Unix socket at a fresh path (written to sun); -1 if not. */
static int
listener(struct sockaddr_un *sun)
{
	int	 fd;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "/tmp/idem-rd-%ld.sock",
	    (long)getpid());
	(void)unlink(sun->sun_path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)sun, sizeof(*sun)) != 0 ||
	    listen(fd, 16) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
dial(const struct sockaddr_un *sun)
{
	int	 fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (fd >= 0 && connect(fd, (const struct sockaddr *)sun,
	    sizeof(*sun)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Hands out and drops what rd has until it is done; how many it had. */
static int
drain_count(struct reader *rd)
{
	struct job	*j;
	int		 got = 0;

	while ((j = reader_next(rd)) != NULL) {
		got++;
		reader_done(rd, j, 0);
	}
	return got;
}

/*
 * A stopping reader reads to the end what it accepted: a request half
 * sent when reader_stop came is handed out once whole.  And a connection
 * waiting in the backlog when it stops is taken too: workers share the
 * socket with EPOLLEXCLUSIVE, so the reader woken for it may be the one
 * stopping, and no other would look until the next connection came.
 */
static void
test_stop_drains(void)
{
	static const char text[] = "[gateway]\nclient_timeout = 500ms\n"
	    "[route /x]\nhandler = cgi:/bin/true\n";
	struct cfg		*c = NULL;
	struct reader		*rd = NULL;
	struct sockaddr_un	 sun;
	struct buf		 req;
	struct job		*j;
	char			 err[256], c1;
	int			 lfd, half = -1, queued = -1;
	int64_t			 t0;
	size_t			 cut;

	buf_init(&req, 4096);
	request_bytes(&req);
	cut = req.len / 2;
	CHECK(cfg_parse(text, strlen(text), "t.conf", &c, err,
	    sizeof(err)) == IDEM_OK);
	lfd = listener(&sun);
	CHECK(lfd >= 0);
	if (c == NULL || lfd < 0)
		goto out;

	/* Half a request when the stop comes. */
	CHECK(reader_new(c, lfd, NULL, NULL, NULL, &rd) == IDEM_OK);
	if (rd == NULL)
		goto out;
	half = dial(&sun);
	CHECK(half >= 0 && write(half, req.p, cut) == (ssize_t)cut);
	clock_sleep_ms(100);		/* accepted, read in part */
	reader_stop(rd);
	clock_sleep_ms(50);
	CHECK(half >= 0 && write(half, req.p + cut, req.len - cut) ==
	    (ssize_t)(req.len - cut));
	CHECK(drain_count(rd) == 1);
	reader_free(rd);
	rd = NULL;

	/* Half a request that never ends: the drain ends at client_timeout
	 * (the config's 500 ms), the connection cut off. */
	close(half);
	CHECK(reader_new(c, lfd, NULL, NULL, NULL, &rd) == IDEM_OK);
	if (rd == NULL)
		goto out;
	half = dial(&sun);
	CHECK(half >= 0 && write(half, req.p, cut) == (ssize_t)cut);
	clock_sleep_ms(100);
	t0 = clock_now_ms();
	reader_stop(rd);
	CHECK(drain_count(rd) == 0);
	t0 = clock_now_ms() - t0;
	CHECK(t0 >= 300 && t0 < 3000);
	CHECK(half >= 0 && read(half, &c1, 1) == 0);	/* closed */
	reader_free(rd);
	rd = NULL;

	/* A whole request in the backlog when the stop comes (the reader
	 * may also take it before it sees the stop: handed out as well). */
	queued = dial(&sun);
	CHECK(queued >= 0 && write(queued, req.p, req.len) ==
	    (ssize_t)req.len);
	CHECK(reader_new(c, lfd, NULL, NULL, NULL, &rd) == IDEM_OK);
	if (rd == NULL)
		goto out;
	reader_stop(rd);
	CHECK(drain_count(rd) == 1);
	reader_free(rd);
	rd = NULL;

	/* A kept connection handed back as the stop comes, the start of
	 * its next request waiting: read within client_timeout like any
	 * other, not the 300 s a kept connection may idle. */
	close(queued);
	buf_reset(&req);
	request_bytes_flags(&req, FCGI_KEEP_CONN);
	CHECK(reader_new(c, lfd, NULL, NULL, NULL, &rd) == IDEM_OK);
	if (rd == NULL)
		goto out;
	queued = dial(&sun);
	CHECK(queued >= 0 && write(queued, req.p, req.len) ==
	    (ssize_t)req.len);
	if ((j = reader_next(rd)) != NULL) {
		CHECK(write(queued, req.p, 10) == 10);
		clock_sleep_ms(20);
		t0 = clock_now_ms();
		reader_done(rd, j, 1);
		reader_stop(rd);
		CHECK(drain_count(rd) == 0);
		t0 = clock_now_ms() - t0;
		CHECK(t0 < 3000);
		if (t0 >= 3000)
			fprintf(stderr, "# the drain took %lld ms\n",
			    (long long)t0);
	} else
		CHECK(!"the kept request was handed out");
out:
	reader_free(rd);
	cfg_free(c);
	buf_free(&req);
	if (half >= 0)
		close(half);
	if (queued >= 0)
		close(queued);
	if (lfd >= 0) {
		close(lfd);
		(void)unlink(sun.sun_path);
	}
}

int
main(void)
{
	test_stop_parked();
	test_parked_hangup();
	test_stop_drains();
	return CHECK_DONE();
}
