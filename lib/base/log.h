/* Logging to stderr or syslog, one line per call, safe from any thread. */
#ifndef IDEM_LOG_H
#define IDEM_LOG_H

#include <stdatomic.h>
#include <stdint.h>

enum log_level {
	LOG_LVL_ERR,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
};

/*
 * Sets the program name and destination.  use_syslog != 0 sends lines to
 * syslog(LOG_DAEMON); otherwise each line is written to stderr with one
 * write(2), prefixed by time, ident and pid.  Callable again (SIGHUP).
 */
void log_open(const char *ident, int use_syslog);

/* Lines above level are dropped (default LOG_LVL_INFO). */
void log_set_level(enum log_level level);

/*
 * Logs one line.  Control characters in the formatted text are escaped so
 * a hostile value cannot forge log lines.  Never log secrets.
 */
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * What keeps an error that repeats with every request to one line per
 * period (as lighttpd and nginx do): shared by threads, zeroed to start.
 */
struct log_every {
	_Atomic int64_t		 next_ms;	/* a line may go from then */
	_Atomic uint64_t	 held;		/* occurrences not logged */
};

/*
 * Counts one occurrence at now_ms (clock_now_ms()).  1 when it is to be
 * logged (the first, then the first one every_ms after the last line),
 * with *n the occurrences since the last line, this one included (1 for
 * the first line); else 0 and it is counted for the next line.
 */
int log_every(struct log_every *le, int64_t now_ms, int64_t every_ms,
    uint64_t *n);

#define log_err(...)	log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)	log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)	log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
