/* FastCGI 1.0 on the wire: constants, record headers and name-value pairs. */
#ifndef IDEM_FASTCGI_H
#define IDEM_FASTCGI_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

/*
 * The one place FastCGI's layout is written: the responder's reader
 * (fconn), its writer (fout) and the client to upstream apps (upstream)
 * all encode and decode through here.  No I/O.
 */

#define FCGI_VERSION_1		1
#define FCGI_HDR_LEN		8	/* a record header */
#define FCGI_BODY_LEN		8	/* BEGIN_REQUEST's and END_REQUEST's */
#define FCGI_MAX_CONTENT	65535	/* content bytes one record holds */
#define FCGI_CHUNK_MAX		65528	/* ...8-aligned: a stream's records */
#define FCGI_KEEP_CONN		1	/* BEGIN_REQUEST flag */

/* Record types. */
enum fcgi_type {
	FCGI_BEGIN_REQUEST = 1, FCGI_ABORT_REQUEST, FCGI_END_REQUEST,
	FCGI_PARAMS, FCGI_STDIN, FCGI_STDOUT, FCGI_STDERR, FCGI_DATA,
	FCGI_GET_VALUES, FCGI_GET_VALUES_RESULT, FCGI_UNKNOWN_TYPE,
};

/* Roles a BEGIN_REQUEST asks for. */
enum fcgi_role {
	FCGI_RESPONDER = 1, FCGI_AUTHORIZER, FCGI_FILTER,
};

/* END_REQUEST protocol status. */
enum fcgi_status {
	FCGI_REQUEST_COMPLETE = 0, FCGI_CANT_MPX_CONN, FCGI_OVERLOADED,
	FCGI_UNKNOWN_ROLE,
};

/* A record header, decoded. */
struct fcgi_hdr {
	int		 version;
	int		 type;
	uint16_t	 id;
	size_t		 clen;		/* content bytes */
	size_t		 plen;		/* padding bytes after them */
};

/*
 * Writes the header of a record of type for request id with clen content
 * bytes (clen <= FCGI_MAX_CONTENT) into h.  Returns the padding that
 * follows the content, so the record is a multiple of 8 bytes.
 */
size_t fcgi_hdr_encode(unsigned char h[FCGI_HDR_LEN], int type, uint16_t id,
    size_t clen);

/* Reads the header at h (FCGI_HDR_LEN bytes) into out; checks nothing. */
void fcgi_hdr_decode(const unsigned char h[FCGI_HDR_LEN],
    struct fcgi_hdr *out);

/*
 * Appends a record (type, request id, n content bytes at p, padding) to
 * out.  IDEM_ETOOBIG if n > FCGI_MAX_CONTENT (nothing appended), or the
 * error of buf_add (out may then hold part of the record).
 */
enum idem_err fcgi_record(struct buf *out, int type, uint16_t id,
    const void *p, size_t n);

/*
 * Appends n bytes at p as a stream: records of type of up to
 * FCGI_CHUNK_MAX bytes, then the empty record that ends it.  Errors as
 * fcgi_record.
 */
enum idem_err fcgi_stream(struct buf *out, int type, uint16_t id,
    const void *p, size_t n);

/* Appends BEGIN_REQUEST for id asking for role, with flags. */
enum idem_err fcgi_begin(struct buf *out, uint16_t id, int role, int flags);

/* Reads a BEGIN_REQUEST body (FCGI_BODY_LEN bytes). */
void fcgi_begin_decode(const unsigned char b[FCGI_BODY_LEN], int *role,
    int *flags);

/* Appends END_REQUEST for id with app_status and protocol status ps. */
enum idem_err fcgi_end(struct buf *out, uint16_t id, uint32_t app_status,
    int ps);

/* Reads an END_REQUEST body (FCGI_BODY_LEN bytes). */
void fcgi_end_decode(const unsigned char b[FCGI_BODY_LEN],
    uint32_t *app_status, int *ps);

/* Appends UNKNOWN_TYPE: the management record of type is not known. */
enum idem_err fcgi_unknown_type(struct buf *out, int type);

/*
 * Appends a name-value pair: each length in 1 byte below 128, else in 4.
 * IDEM_ETOOBIG if a length is past 0x7fffffff, else buf_add's error (b
 * may then hold part of the pair).
 */
enum idem_err fcgi_pair_append(struct buf *b, const void *name, size_t nl,
    const void *val, size_t vl);

/*
 * Reads the lengths of the pair at p[*off] (p holds n bytes) and checks
 * that name and value lie inside p before anything is kept for them.
 * IDEM_OK: *off points at the name, *nl and *vl are set; the value
 * follows the name, and the next pair the value.  IDEM_EINVAL if a
 * length or the pair runs past n (*off unchanged).
 */
enum idem_err fcgi_pair_decode(const unsigned char *p, size_t n,
    size_t *off, size_t *nl, size_t *vl);

#endif
