/* The poll schedule of waiters that cannot be woken (store_poll.h). */
#include <stdint.h>

#include "store_poll.h"

int64_t
store_poll_next(int64_t prev_us)
{
	if (prev_us <= 0)
		return STORE_POLL_MIN_US;
	return prev_us >= STORE_POLL_MAX_US / 2 ? STORE_POLL_MAX_US :
	    prev_us * 2;
}
