/* One FastCGI request: params, route, body, dispatch to the guard, reply. */
#ifndef IDEM_REQUEST_H
#define IDEM_REQUEST_H

#include <stddef.h>

#include "buf.h"
#include "cfg.h"
#include "err.h"
#include "problem.h"
#include "reply.h"

struct hkey;
struct park;
struct reader;

struct store;
struct stats;

/* What a request thread owns; all borrowed by the requests it serves. */
struct gw_ctx {
	const struct cfg	*cfg;
	struct store		*st;		/* this thread's connection */
	struct stats		*stats;		/* the worker's accumulator */
	struct rcache		*rc;		/* the worker's replay cache or
						 * NULL */
	struct recorder		*rec;		/* the worker's recorder or
						 * NULL */
	struct linger		*linger;	/* ends lingering handlers, or
						 * NULL */
	struct hkey		*hk;		/* the worker's: how keys are
						 * hashed (NULL: plain) */
	const char		*owner;		/* "host:pid" */
	struct reader		*rd;		/* the worker's: parks
						 * waiters (NULL: they
						 * wait in the thread) */
	int			 idx;		/* this thread's on the
						 * board */
};

/* Entries route_pick rewrites when it finds the script inside PATH_INFO. */
#define ROUTE_SPLIT_MAX	3

/* One parsed request.  Strings point into the FastCGI params (borrowed)
 * except path, script, script_env and script_walk, which are owned. */
struct request {
	struct gw_ctx		*ctx;
	char *const		*envp;		/* all params */
	char			**params;	/* envp minus client replay
						 * headers */
	const struct route	*route;
	const char		*method;
	char			*path;		/* REQUEST_URI up to '?',
						 * normalised */
	const char		*query;
	const char		*ctype;
	struct buf		 body;
	int			 had_length;	/* CONTENT_LENGTH was given */
	struct reply		*out;
	char			*script;	/* HANDLER_SCRIPT: the file
						 * (owned) */
	enum idem_err		 script_err;	/* why script is NULL */
	const char		*script_tail;	/* PATH_INFO beyond the
						 * script */
	char			*script_env[ROUTE_SPLIT_MAX + 1];
						/* SCRIPT_NAME, PATH_INFO
						 * (PATH_TRANSLATED) split
						 * at the script found in
						 * PATH_INFO (owned) */
	char			*script_walk;	/* without SCRIPT_FILENAME:
						 * DOCUMENT_ROOT, '\0',
						 * SCRIPT_NAME + PATH_INFO
						 * (owned) */
	char			 tag[96];	/* "METHOD path" for log
						 * lines */
	int			 cache_missed;	/* the reader asked the
						 * replay cache: no hit */
	struct park		*park;		/* the job's, or NULL:
						 * never parked */
};

struct job;

/*
 * Serves one request the reader read whole (fcgi/reader.h): applies the
 * route's limits, answers gateway errors, hands the rest to the guard,
 * and writes the answer as FastCGI records on j's connection.  Never
 * fails: everything is answered or logged.  Returns 1 if the connection
 * may serve another request (FCGI_KEEP_CONN and a whole answer).  When
 * the guard asks to park the request (j->park.want, fcgi/park.h), nothing
 * is written and j keeps its body: reader_park it, or serve it again.
 */
int request_serve(struct gw_ctx *ctx, struct job *j);

/*
 * The largest bodies the reader fingerprints itself (a canonical
 * fingerprint of a deeply nested 1 MiB JSON body takes about 100 ms,
 * during which no connection of the worker is read); larger ones go to
 * a request thread.
 */
#define QUICK_BODY_MAX		(64 * 1024)
#define QUICK_CANON_MAX		(4 * 1024)

/*
 * The reader's quick answer, on its own thread (ctx->st is NULL): when
 * j is a protected request on a route that names no script, its body is
 * within QUICK_BODY_MAX (QUICK_CANON_MAX with fingerprint = canonical),
 * and the replay cache holds its answer, writes that replay (the CGI-style
 * answer, not yet framed) to out and returns 1.  Otherwise writes nothing
 * and returns 0, j unchanged but for j->cache_missed: a request thread
 * serves it (request_serve).
 */
int request_cached(struct gw_ctx *ctx, struct job *j, struct reply *out);

/*
 * Writes the j->unsent bytes that end j->fc.reply, which the reader could
 * not send without blocking, waiting for the web server up to
 * client_timeout.  Returns 1 if the connection may serve another request.
 */
int request_flush(struct gw_ctx *ctx, struct job *j);

#endif
