/* A FastCGI client: forwards one request to an upstream app (PHP-FPM...). */
#ifndef IDEM_UPSTREAM_H
#define IDEM_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct upstream_req {
	const char	 *addr;		/* "unix:/path.sock" or "tcp:host:port" */
	char *const	 *params;	/* "NAME=value", NULL-terminated; borrowed */
	const void	 *body;
	size_t		  bodylen;
	int64_t		  timeout_ms;	/* whole exchange; 0 = none */
	const char	 *tag;		/* prefix for FCGI_STDERR lines in the log */

	/* Receives the app's FCGI_STDOUT bytes (a CGI response) as they
	 * arrive; a non-OK return aborts the exchange with that error. */
	enum idem_err	(*out)(void *arg, const void *p, size_t n);
	void		(*tick)(void *arg);	/* as in struct cgi_run */
	int64_t		  tick_ms;
	void		 *arg;
};

/*
 * Sends one FCGI_RESPONDER request (BEGIN_REQUEST, PARAMS, STDIN) on a new
 * connection and reads STDOUT/STDERR until END_REQUEST, with poll so a
 * large body and a large answer cannot deadlock.  IDEM_EHANDLER if the app
 * cannot be reached or breaks the protocol (502), IDEM_ETIMEOUT past
 * timeout_ms (504), IDEM_OK when END_REQUEST arrived.  OUT: app_status
 * (the END_REQUEST appStatus).  A failed or timed-out connect is
 * IDEM_EHANDLER (with timeout_ms 0, connect waits at most 10 s).  An out()
 * error is returned as is; params encoding past 4 MiB gives IDEM_ETOOBIG.
 * HTTP_PROXY is never forwarded (httpoxy); with a body and no (or an
 * empty) CONTENT_LENGTH, CONTENT_LENGTH=bodylen is sent.  STDERR is logged
 * line by line under tag, at most 64 KiB per request.
 */
enum idem_err upstream_exec(const struct upstream_req *r, int *app_status);

#endif
