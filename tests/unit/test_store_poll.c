/* Unit tests for the poll schedule of waiters that cannot be woken. */
#include <stdint.h>

#include "check.h"
#include "store_poll.h"

int
main(void)
{
	static const int64_t	 want[] = { 2000, 4000, 8000, 16000, 32000,
				    40000, 40000 };
	int64_t			 us = 0, sum = 0;
	size_t			 i;
	int			 ok = 1;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		us = store_poll_next(us);
		ok = ok && us == want[i];
	}
	CHECK(ok);
	/* At the cap and one under it. */
	CHECK(store_poll_next(STORE_POLL_MAX_US) == STORE_POLL_MAX_US);
	CHECK(store_poll_next(STORE_POLL_MAX_US / 2) == STORE_POLL_MAX_US);
	CHECK(store_poll_next(STORE_POLL_MAX_US / 2 - 1) ==
	    STORE_POLL_MAX_US - 2);
	CHECK(store_poll_next(-1) == STORE_POLL_MIN_US);
	/* Bounded: a long wait polls at most every STORE_POLL_MAX_US. */
	for (us = 0, i = 0; i < 1000; i++)
		sum += (us = store_poll_next(us));
	CHECK(sum == 62000 + 995 * (int64_t)STORE_POLL_MAX_US &&
	    us == STORE_POLL_MAX_US);
	return CHECK_DONE();
}
