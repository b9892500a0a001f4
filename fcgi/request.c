/* One FastCGI request: params, route, body, dispatch to the guard, reply. */
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcgiapp.h>

#include "guard.h"
#include "log.h"
#include "path.h"
#include "request.h"
#include "route.h"

#define BODY_CHUNK	16384

void
reply_bytes(struct reply *o, const void *p, size_t n)
{
	if (o->failed || n == 0)
		return;
	if (o->write(o->arg, p, n) != 0) {
		o->failed = 1;
		return;
	}
	o->sent += n;
}

void
reply_abort(struct reply *o)
{
	if (o->abort != NULL)
		o->abort(o->arg);
	o->failed = 1;
}

void
reply_full(struct reply *o, int status, const void *hdrs, size_t hdrslen,
    const char *extra, const void *body, size_t bodylen)
{
	char	 line[80];
	int	 n;

	n = snprintf(line, sizeof(line), "Status: %d %s\r\n", status,
	    problem_reason(status));
	reply_bytes(o, line, (size_t)n);
	reply_bytes(o, hdrs, hdrslen);
	if (extra != NULL)
		reply_bytes(o, extra, strlen(extra));
	reply_bytes(o, "\r\n", 2);
	reply_bytes(o, body, bodylen);
}

void
reply_problem(struct reply *o, enum problem p, int retry_after,
    int original_status, const char *extra)
{
	struct buf	 hdrs, body;

	buf_init(&hdrs, 4096);
	buf_init(&body, 4096);
	if (problem_render(p, retry_after, original_status, &hdrs, &body) !=
	    IDEM_OK) {
		/* Out of memory: a bare status is still an answer. */
		buf_reset(&hdrs);
		buf_reset(&body);
	}
	reply_full(o, problem_status(p), hdrs.p, hdrs.len, extra, body.p,
	    body.len);
	buf_free(&hdrs);
	buf_free(&body);
}

const char *
request_param(char *const *envp, const char *name)
{
	size_t	 nl = strlen(name);

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, name, nl) == 0 && (*envp)[nl] == '=')
			return *envp + nl + 1;
	return NULL;
}

size_t
request_params_size(char *const *envp)
{
	size_t	 n = 0;

	for (; envp != NULL && *envp != NULL; envp++)
		n += strlen(*envp);
	return n;
}

char *
request_path(char *const *envp)
{
	const char	*uri, *sn, *pi;
	size_t		 len;
	char		*p;

	uri = request_param(envp, "REQUEST_URI");
	if (uri != NULL && *uri != '\0') {
		len = strcspn(uri, "?#");
		if ((p = malloc(len + 1)) == NULL)
			return NULL;
		memcpy(p, uri, len);
		p[len] = '\0';
		return p;
	}
	sn = request_param(envp, "SCRIPT_NAME");
	pi = request_param(envp, "PATH_INFO");
	if (sn == NULL)
		sn = "";
	if (pi == NULL)
		pi = "";
	if (*sn == '\0' && *pi == '\0')
		return strdup("/");
	if (asprintf(&p, "%s%s", sn, pi) < 0)
		return NULL;
	return p;
}

int
request_content_length(const char *s, size_t *out)
{
	size_t	 v = 0;

	if (s == NULL || *s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > ((size_t)-1 - 9) / 10)
			return -1;
		v = v * 10 + (size_t)(*s - '0');
	}
	*out = v;
	return 0;
}

char **
request_params_filter(char *const *envp)
{
	static const char *const drop[] = {
		"HTTP_IDEMPOTENT_REPLAYED=", "HTTP_IDEMPOTENCY_RESULT=",
	};
	size_t	 n = 0, i, j;
	char	**out;

	while (envp != NULL && envp[n] != NULL)
		n++;
	if ((out = calloc(n + 1, sizeof(*out))) == NULL)
		return NULL;
	for (i = 0, j = 0; i < n; i++) {
		if (strncmp(envp[i], drop[0], strlen(drop[0])) == 0 ||
		    strncmp(envp[i], drop[1], strlen(drop[1])) == 0)
			continue;
		out[j++] = envp[i];
	}
	out[j] = NULL;
	return out;
}

/*
 * Shuts the connection down under libfcgi, so no END_REQUEST follows: the
 * web server sees its backend fail mid-answer and breaks off the client's
 * transfer.  libfcgi still closes the descriptor itself.
 */
static void
fcgx_abort(void *arg)
{
	FCGX_Request	*req = arg;

	if (req->ipcFd >= 0)
		shutdown(req->ipcFd, SHUT_RDWR);
}

static int
fcgx_write(void *arg, const void *p, size_t n)
{
	FCGX_Stream	*out = ((FCGX_Request *)arg)->out;
	int		 chunk;

	while (n > 0) {
		chunk = n > 1 << 20 ? 1 << 20 : (int)n;
		if (FCGX_PutStr(p, chunk, out) != chunk)
			return -1;
		p = (const char *)p + chunk;
		n -= (size_t)chunk;
	}
	return 0;
}

/*
 * Reads the body under max_body.  Returns 0 when read, 1 when too large
 * (413), -1 when the client went away mid-body (no answer possible) or
 * memory ran out.
 */
static int
request_read_body(struct request *r, FCGX_Request *req)
{
	const char	*cl;
	size_t		 want = 0, want_left;
	char		*chunk;
	int		 n, rv = -1;

	cl = request_param(r->envp, "CONTENT_LENGTH");
	if (request_content_length(cl, &want) == 0) {
		r->had_length = 1;
		if (want > r->route->max_body)
			return 1;
	}
	if ((chunk = malloc(BODY_CHUNK)) == NULL)
		return -1;
	want_left = want;
	for (;;) {
		int	 ask = BODY_CHUNK;

		if (r->had_length) {
			if (want_left == 0)
				break;
			if (want_left < (size_t)ask)
				ask = (int)want_left;
		}
		n = FCGX_GetStr(chunk, ask, req->in);
		if (n <= 0) {
			if (r->had_length) {
				log_warn("%s: body ended after %zu of %zu "
				    "bytes", r->tag, r->body.len, want);
				goto out;
			}
			break;
		}
		if (buf_add(&r->body, chunk, (size_t)n) != IDEM_OK) {
			rv = 1;
			goto out;
		}
		if (r->had_length)
			want_left -= (size_t)n;
	}
	rv = 0;
out:
	free(chunk);
	return rv;
}

void
request_serve(struct gw_ctx *ctx, void *fr)
{
	FCGX_Request	*req = fr;
	struct reply	 out = { fcgx_write, fcgx_abort, req, 0, 0 };
	struct request	 r;
	char		*raw;
	int		 rv;

	memset(&r, 0, sizeof(r));
	r.ctx = ctx;
	r.envp = req->envp;
	r.out = &out;
	buf_init(&r.body, 0);
	r.method = request_param(r.envp, "REQUEST_METHOD");
	if (r.method == NULL || *r.method == '\0')
		r.method = "GET";
	r.query = request_param(r.envp, "QUERY_STRING");
	r.ctype = request_param(r.envp, "CONTENT_TYPE");
	if ((raw = request_path(r.envp)) == NULL ||
	    (r.path = path_normalize(raw, strlen(raw))) == NULL) {
		free(raw);
		log_err("out of memory");
		reply_problem(&out, PROB_INTERNAL, 0, 0, NULL);
		return;
	}
	free(raw);
	snprintf(r.tag, sizeof(r.tag), "%.15s %.70s", r.method, r.path);

	if (request_params_size(r.envp) > ctx->cfg->max_params) {
		log_warn("%s: params over %zu bytes", r.tag,
		    ctx->cfg->max_params);
		reply_problem(&out, PROB_HEADERS_TOO_LARGE, 0, 0, NULL);
		goto out;
	}
	route_pick(ctx->cfg, &r);
	if (r.route == NULL) {
		log_info("%s: no route", r.tag);
		reply_problem(&out, PROB_NOT_FOUND, 0, 0, NULL);
		goto out;
	}
	if ((r.params = request_params_filter(r.envp)) == NULL) {
		log_err("%s: out of memory", r.tag);
		reply_problem(&out, PROB_INTERNAL, 0, 0, NULL);
		goto out;
	}
	buf_init(&r.body, r.route->max_body);
	rv = request_read_body(&r, req);
	if (rv == 1) {
		log_warn("%s: body over %zu bytes", r.tag,
		    r.route->max_body);
		reply_problem(&out, PROB_BODY_TOO_LARGE, 0, 0, NULL);
		goto out;
	}
	if (rv < 0)
		goto out;
	guard_serve(&r);
out:
	buf_free(&r.body);
	free(r.params);
	free(r.script);
	free(r.path);
}
