/* A FastCGI client: forwards one request to an upstream app (PHP-FPM...). */
#ifndef IDEM_UPSTREAM_H
#define IDEM_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "cgi.h"
#include "err.h"

struct upstream_req {
	const char	 *addr;		/* "unix:/path.sock" or
					 * "tcp:host:port" */
	char *const	 *params;	/* "NAME=value", NULL-terminated;
					 * borrowed */
	/* out gets the app's FCGI_STDOUT bytes; FCGI_STDERR lines are
	 * logged under tag. */
	struct cgi_exchange ex;
};

/* r's name in log lines: ex.tag, else "upstream". */
static inline const char *
upstream_tag(const struct upstream_req *r)
{
	return r->ex.tag != NULL ? r->ex.tag : "upstream";
}

/*
 * Sends one FCGI_RESPONDER request (BEGIN_REQUEST, PARAMS, STDIN) on a new
 * connection and reads STDOUT/STDERR until END_REQUEST, with poll so a
 * large body and a large answer cannot deadlock.  IDEM_OK when
 * END_REQUEST arrived.  IDEM_EHANDLER when the app surely did not run the
 * request: it cannot be reached (a failed or timed-out connect; with
 * timeout_ms 0, connect waits at most 10 s) or refused it (END_REQUEST
 * with a protocolStatus other than REQUEST_COMPLETE).  IDEM_EBROKEN when
 * it may have: it closed the connection without END_REQUEST or broke the
 * protocol, out() refused its answer, a poll failed, or it still ran at
 * ex.run_limit_ms (with ex.overdue).
 * IDEM_ETIMEOUT past timeout_ms without ex.overdue (504; logged here, the
 * one line a timeout gets).  OUT: app_status (the END_REQUEST appStatus).
 * Params encoding past 4 MiB gives IDEM_ETOOBIG (nothing sent).
 * HTTP_PROXY is never forwarded (httpoxy); with a body and no (or an
 * empty) CONTENT_LENGTH, CONTENT_LENGTH=bodylen is sent.  STDERR is
 * logged line by line under tag, at most 64 KiB per request.
 */
enum idem_err upstream_exec(const struct upstream_req *r, int *app_status);

/*
 * Connects to addr ("unix:/path.sock" or "tcp:host:port") as
 * upstream_exec does, waiting at most timeout_ms: a non-blocking,
 * close-on-exec fd the caller closes, or -1 with errno (ETIMEDOUT past
 * the wait; EINVAL for a bad addr).
 */
int upstream_connect(const char *addr, int64_t timeout_ms);

#endif
