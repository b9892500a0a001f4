/* Answer to the web server on its connection: STDOUT records, END_REQUEST. */
#ifndef IDEM_FOUT_H
#define IDEM_FOUT_H

#include <stdint.h>

#include "err.h"
#include "reply.h"

/*
 * Bytes gather in a buffer and go out as STDOUT records of up to 32 KiB;
 * END_REQUEST at the end.  A web server that stops reading for the
 * writer's timeout is given up.
 */
struct fout;

/*
 * A writer for request id on connection fd (borrowed; never closed here,
 * only shut down when the answer ends early).  timeout_ms bounds each
 * wait for the web server to read.  OUT: *out, freed with fout_free.
 * IDEM_ENOMEM.
 */
enum idem_err fout_new(int fd, uint16_t id, int64_t timeout_ms,
    struct fout **out);

/* Frees o (the connection stays open).  NULL: no-op. */
void fout_free(struct fout *o);

/*
 * The reply that writes through o: write sends STDOUT records, abort
 * breaks the connection off with no END_REQUEST (the web server sees its
 * backend fail mid-answer), end finishes the answer and shuts the
 * connection down (the thread stays busy with the run, so the connection
 * is not kept).
 */
struct reply fout_reply(struct fout *o);

/*
 * Ends the answer: what is gathered, an empty STDOUT, END_REQUEST
 * (REQUEST_COMPLETE).  IDEM_EIO when the web server is gone or too slow.
 */
enum idem_err fout_end(struct fout *o);

/*
 * Writes all n bytes at p on fd (non-blocking), waiting up to timeout_ms
 * each time the web server does not read.  IDEM_EIO when it is gone,
 * IDEM_ETIMEOUT when it took nothing for timeout_ms.
 */
enum idem_err fout_send_all(int fd, const void *p, size_t n,
    int64_t timeout_ms);

#endif
