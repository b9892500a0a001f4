/* Monotonic time and sleeping, the one copy every module uses. */
#ifndef IDEM_CLOCK_H
#define IDEM_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC now, in ms and in µs. */
int64_t clock_now_ms(void);
int64_t clock_now_us(void);

/* Sleeps ms (<= 0: not at all), resuming after signals. */
void clock_sleep_ms(int64_t ms);

#endif
