/* Reading upstream records: STDOUT to sink, STDERR to log, to END_REQUEST. */
#ifndef IDEM_UPSTREAM_RD_H
#define IDEM_UPSTREAM_RD_H

#include <stddef.h>

#include "err.h"
#include "errlog.h"
#include "fastcgi.h"
#include "upstream.h"

#define UPSTREAM_REQ_ID		1	/* one request per connection */

/*
 * The records one app sends on one connection, parsed as they come in
 * pieces of any size (no I/O: upstream.c reads the socket).  Zeroed
 * (memset, calloc), it is ready for the first byte.
 */
struct upstream_rd {
	unsigned char	 hdr[FCGI_HDR_LEN];
	size_t		 hdr_have;
	int		 type;
	size_t		 content_left;
	size_t		 pad_left;
	int		 skip;		/* content not for us: drop it */
	unsigned char	 end[FCGI_BODY_LEN];
	size_t		 end_have;
	int		 done;		/* END_REQUEST seen */
	int		 refused;	/* ...saying the app did not take it */
	int		 spoke;		/* STDOUT came: the app took it */
	int		 app_status;
	struct errlog	 el;		/* STDERR, bounded as a CGI's */
};

/*
 * Feeds n bytes the app sent.  STDOUT content goes to r->ex.out; STDERR
 * is logged a line at a time under r's tag, bounded as a CGI's stderr
 * (lib/run/errlog.h).
 * Nothing is read past END_REQUEST (rd->done, its appStatus in
 * rd->app_status).  IDEM_OK to go on; IDEM_EHANDLER when END_REQUEST
 * refused the request before any STDOUT (rd->refused); IDEM_EBROKEN when
 * the app broke the protocol, or refused what it had answered (logged);
 * else the error r->ex.out returned.
 */
enum idem_err upstream_rd_feed(const struct upstream_req *r,
    struct upstream_rd *rd, const char *p, size_t n);

/* Logs the STDERR line still gathered, if any, and the count of what
 * was dropped. */
void upstream_rd_flush(const struct upstream_req *r, struct upstream_rd *rd);

#endif
