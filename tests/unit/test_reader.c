/* Unit tests for the reader's parked requests when it stops. */
#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/check.h"
#include "clock.h"
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

int
main(void)
{
	test_stop_parked();
	return CHECK_DONE();
}
