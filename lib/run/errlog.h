/* A handler's stderr to the log: a bounded prefix per run, then a count. */
#ifndef IDEM_ERRLOG_H
#define IDEM_ERRLOG_H

#include <stddef.h>

#define ERRLOG_LINE_MAX		1024	/* stderr bytes per log line */
#define ERRLOG_LINES		20	/* log lines per run ... */
#define ERRLOG_BYTES		4096	/* ... and bytes; the rest is counted */

/*
 * Gathers stderr bytes and logs them a line at a time (a line longer
 * than ERRLOG_LINE_MAX is cut into several), under tag, until a run has
 * logged ERRLOG_LINES lines or ERRLOG_BYTES bytes; what comes after is
 * only counted, and errlog_end() logs the count.  Zeroed, then tag set.
 */
struct errlog {
	const char	*tag;
	char		 line[ERRLOG_LINE_MAX];
	size_t		 len;
	size_t		 logged;	/* bytes logged so far */
	int		 lines;
	size_t		 dropped;
};

void errlog_add(struct errlog *el, const char *p, size_t n);
/* Bytes taken so far, logged, pending or dropped. */
size_t errlog_seen(const struct errlog *el);
/* Logs the line gathered, if any, and the count of what was dropped. */
void errlog_end(struct errlog *el);

#endif
