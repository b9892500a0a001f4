/* FastCGI responder side of a connection: records in, request out (no I/O). */
#ifndef IDEM_FCONN_H
#define IDEM_FCONN_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "fastcgi.h"

/* Body bytes past max_body read and dropped before a request is cut
 * off where it stands. */
#define FCONN_DISCARD_MAX	((uint64_t)256 << 20)

/*
 * Parses what a web server sends on one FastCGI connection (FastCGI 1.0)
 * and collects one request: its params and its body (stdin).  Every
 * length is checked against the record that carries it before anything is
 * kept, and everything kept is bounded (max_params, max_body), so no
 * record, however crafted, costs more than its connection.  Management
 * records (GET_VALUES) are answered, other roles and a second request on
 * the connection (no multiplexing) refused, through the reply buffer the
 * caller writes out.
 */
struct fconn {
	/* Limits, set before the first fconn_feed. */
	size_t		 max_params;
	size_t		 max_body;

	/* The request being read (id 0: none yet). */
	uint16_t	 id;
	int		 keep_conn;	/* FCGI_KEEP_CONN: reuse afterwards */
	int		 params_done;
	int		 stdin_done;
	int		 body_over;	/* more than max_body came: the
					 * rest is dropped as it comes */
	uint64_t	 discarded;	/* bytes of it dropped */
	struct buf	 params;	/* raw name-value pairs */
	struct buf	 body;

	/* Bytes to send back now (management answers, refusals). */
	struct buf	 reply;

	/* Record being read: params and stdin content goes straight to
	 * params and body; other records' content (small) to small. */
	unsigned char	 hdr[FCGI_HDR_LEN];
	size_t		 hlen;
	struct fcgi_hdr	 rec;		/* hdr decoded, once whole */
	size_t		 cleft, pleft;	/* content, padding still to come */
	unsigned char	 small[1024];
	size_t		 slen;		/* > sizeof(small): too big */
};

void fconn_init(struct fconn *c, size_t max_params, size_t max_body);
/* Frees what it holds; keeps the limits (ready for the next request). */
void fconn_reset(struct fconn *c);

/*
 * Consumes up to n bytes.  IDEM_OK when a whole request is in (params and
 * stdin ended; a body over max_body is read to its end and dropped, or
 * cut FCONN_DISCARD_MAX bytes past it); *used says how many bytes
 * were taken (the rest belongs to a later request).  IDEM_EAGAIN when more
 * are needed (all n taken).  IDEM_EIO when the connection ends once
 * c->reply is out (a role refused without FCGI_KEEP_CONN, an
 * FCGI_ABORT_REQUEST of the request being read).  IDEM_EINVAL on a
 * protocol violation (close the connection).  Check c->reply after every
 * call.
 */
enum idem_err fconn_feed(struct fconn *c, const void *p, size_t n,
    size_t *used);

/*
 * Decodes the params into a NULL-terminated array of "NAME=value" strings
 * (one allocation: free(*out)).  Pairs whose name is empty or holds '=' or
 * NUL are dropped.  IDEM_EINVAL if a length runs past the data.
 */
enum idem_err fconn_params(const struct fconn *c, char ***out);

#endif
