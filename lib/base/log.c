/* Logging to stderr or syslog, one line per call, safe from any thread. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static char		 log_ident[32] = "idemgate";
static int		 log_syslog;
static enum log_level	 log_level = LOG_LVL_INFO;

void
log_open(const char *ident, int use_syslog)
{
	snprintf(log_ident, sizeof(log_ident), "%s", ident);
	if (log_syslog)
		closelog();
	log_syslog = use_syslog;
	if (use_syslog)
		openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_set_level(enum log_level level)
{
	log_level = level;
}

/* Copies src into dst escaping control bytes as \xHH; always terminates. */
static void
log_escape(char *dst, size_t dstlen, const char *src)
{
	size_t	 o = 0;

	for (; *src != '\0' && o + 5 < dstlen; src++) {
		unsigned char c = (unsigned char)*src;

		if (c < 0x20 || c == 0x7f) {
			snprintf(dst + o, dstlen - o, "\\x%02x", c);
			o += 4;
		} else
			dst[o++] = (char)c;
	}
	dst[o] = '\0';
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char		 raw[2048], esc[4096], line[4300], ts[32];
	va_list		 ap;
	struct tm	 tm;
	struct timespec	 now;
	int		 n;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	log_escape(esc, sizeof(esc), raw);
	if (log_syslog) {
		syslog(prio[level], "%s", esc);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ldZ %s[%ld] %s: %s\n", ts,
	    now.tv_nsec / 1000000, log_ident, (long)getpid(), names[level],
	    esc);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	/* One write per line keeps lines from different threads whole. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

int
log_every(struct log_every *le, int64_t now_ms, int64_t every_ms,
    uint64_t *n)
{
	int64_t	 next = atomic_load(&le->next_ms);

	/* One thread wins the period; the others count toward the next. */
	if (now_ms < next || !atomic_compare_exchange_strong(&le->next_ms,
	    &next, now_ms + every_ms)) {
		atomic_fetch_add(&le->held, 1);
		return 0;
	}
	*n = atomic_exchange(&le->held, 0) + 1;
	return 1;
}
