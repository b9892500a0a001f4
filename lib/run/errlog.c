/* A handler's stderr to the log: a bounded prefix per run, then a count. */
#include "errlog.h"
#include "log.h"

static void
errlog_flush(struct errlog *el)
{
	if (el->len == 0)
		return;
	log_warn("%s: %.*s", el->tag != NULL ? el->tag : "handler",
	    (int)el->len, el->line);
	el->logged += el->len;
	el->lines++;
	el->len = 0;
}

void
errlog_add(struct errlog *el, const char *p, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++) {
		if (el->lines >= ERRLOG_LINES ||
		    el->logged + el->len >= ERRLOG_BYTES) {
			el->dropped += n - i;
			return;
		}
		if (p[i] == '\n') {
			if (el->len > 0 && el->line[el->len - 1] == '\r')
				el->len--;
			errlog_flush(el);
			continue;
		}
		if (el->len == sizeof(el->line))
			errlog_flush(el);
		el->line[el->len++] = p[i];
	}
}

size_t
errlog_seen(const struct errlog *el)
{
	return el->logged + el->len + el->dropped;
}

void
errlog_end(struct errlog *el)
{
	errlog_flush(el);
	if (el->dropped > 0) {
		log_warn("%s: %zu more bytes of stderr dropped",
		    el->tag != NULL ? el->tag : "handler", el->dropped);
		el->dropped = 0;
	}
}
