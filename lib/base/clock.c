/* Monotonic time and sleeping, the one copy every module uses. */
#include <errno.h>
#include <time.h>

#include "clock.h"

int64_t
clock_now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
clock_now_ms(void)
{
	return clock_now_us() / 1000;
}

void
clock_sleep_ms(int64_t ms)
{
	struct timespec	 ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}
