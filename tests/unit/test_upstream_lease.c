/*
 * The FastCGI client looks at its clock before the first byte it sends:
 * a connect that took past a lease tick renews the lease first, and a
 * lease lost then sends the application nothing (it must not run).
 *
 * This binary has its own clock (clock_now_ms and the rest of
 * lib/base/clock.h, linked in place of lib/base/clock.c): once "skew"
 * is on, every reading is 10 ms past the one before, so any time spent
 * between the exchange's start and its first send passes a 5 ms tick.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/check.h"
#include "clock.h"
#include "upstream.h"

static int	 skew;
static int64_t	 skew_ms;

int64_t
clock_now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (skew)
		skew_ms += 10;
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 +
	    skew_ms * 1000;
}

int64_t
clock_now_ms(void)
{
	return clock_now_us() / 1000;
}

/* Not used on this path; here so lib/base/clock.o stays out. */
void
clock_sleep_ms(int64_t ms)
{
	if (ms > 0)
		(void)poll(NULL, 0, ms > 60000 ? 60000 : (int)ms);
}

struct lease {
	int	 ticks;
};

/* The owner's tick: the store says the lease is gone. */
static int64_t
lost_tick(void *arg)
{
	struct lease	*l = arg;

	l->ticks++;
	return -1;
}

static enum idem_err
no_out(void *arg, const void *p, size_t n)
{
	return IDEM_OK;
}

static void
test_lost_before_first_byte(void)
{
	char *const		 params[] = { "REQUEST_METHOD=POST",
		"SCRIPT_NAME=/pay", "CONTENT_LENGTH=6", NULL };
	struct sockaddr_un	 sun;
	struct upstream_req	 r;
	struct lease		 l = { 0 };
	struct pollfd		 pfd;
	char			 addr[160], got[64];
	ssize_t			 n;
	int			 lfd, cfd, st = -1;
	enum idem_err		 er;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/tmp/idem-upl-%ld.sock",
	    (long)getpid());
	(void)unlink(sun.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sun,
	    sizeof(sun)) == 0 && listen(lfd, 4) == 0);
	if (lfd < 0)
		return;
	snprintf(addr, sizeof(addr), "unix:%s", sun.sun_path);

	memset(&r, 0, sizeof(r));
	r.addr = addr;
	r.params = params;
	r.ex.body = "amount";
	r.ex.bodylen = 6;
	r.ex.timeout_ms = 60000;
	r.ex.tag = "test-upstream-lease";
	r.ex.out = no_out;
	r.ex.tick = lost_tick;
	r.ex.tick_ms = 5;
	r.ex.arg = &l;
	skew = 1;
	er = upstream_exec(&r, &st);
	skew = 0;
	CHECK(er == IDEM_ELEASE);
	CHECK(l.ticks == 1);

	/* The connection waits in the backlog, closed: the application
	 * reads end of file and not one byte of the request. */
	cfd = accept(lfd, NULL, NULL);
	CHECK(cfd >= 0);
	if (cfd >= 0) {
		pfd.fd = cfd;
		pfd.events = POLLIN;
		CHECK(poll(&pfd, 1, 2000) == 1);
		n = read(cfd, got, sizeof(got));
		CHECK(n == 0);
		if (n > 0)
			fprintf(stderr, "# the application got %zd bytes\n",
			    n);
		close(cfd);
	}
	close(lfd);
	(void)unlink(sun.sun_path);
}

int
main(void)
{
	test_lost_before_first_byte();
	return CHECK_DONE();
}
