/* The INI configuration shared by idemgate, idemctl and idemtop: parse, validate, route. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"

#define CFG_MAX_FILE	(1024 * 1024)	/* whole file */
#define CFG_MAX_LINE	4096		/* one line, without its newline */
#define CFG_MAX_PREFIX	255		/* route column in the store */
#define CFG_MAX_HOST	64		/* host label in counters and owners */
#define CFG_MAX_METHOD	16		/* method column in the store */
#define CFG_MAX_SHOWN	64		/* bytes of a bad value quoted in messages */
/* Ten years: callers add durations to clocks without overflow checks. */
#define CFG_MAX_DURATION_MS	(3650LL * 86400 * 1000)

enum sect {
	SECT_NONE = 0,
	SECT_GATEWAY = 1 << 0,
	SECT_IDEM = 1 << 1,
	SECT_ROUTE = 1 << 2,
	SECT_CLEANUP = 1 << 3,
	SECT_CONSOLE = 1 << 4,
};

enum key_id {
	/* [idempotency] and [route] */
	K_IDEMPOTENCY, K_KEY_HEADER, K_METHODS, K_REQUIRE_KEY, K_SCOPE, K_TTL,
	K_WAIT, K_LEASE, K_STORE_5XX, K_MAX_BODY, K_MAX_RESPONSE,
	K_ON_STORE_ERROR, K_TIMEOUT,
	/* [route] only */
	K_HANDLER, K_SCRIPT_ROOT,
	/* [gateway] */
	K_LISTEN, K_SOCKET_OWNER, K_SOCKET_MODE, K_THREADS, K_WORKERS, K_LOG,
	K_MYSQL_DEFAULTS_FILE, K_MYSQL_GROUP, K_HOST_NAME, K_MAX_PARAMS,
	K_COUNTERS_FLUSH, K_REPLAY_CACHE,
	/* [cleanup] */
	K_BATCH, K_SLEEP, K_MAX_SECONDS, K_STALE_AFTER, K_COUNTERS_RETENTION,
	K_RUNS_RETENTION,
	/* [console] */
	K_REFRESH, K_CLEANUP_WARN_AFTER,
	K__MAX
};

#define RI	(SECT_IDEM | SECT_ROUTE)

static const struct cfg_key {
	const char	*name;
	unsigned	 sects;
} keys[K__MAX] = {
	[K_IDEMPOTENCY] = { "idempotency", RI },
	[K_KEY_HEADER] = { "key_header", RI },
	[K_METHODS] = { "methods", RI },
	[K_REQUIRE_KEY] = { "require_key", RI },
	[K_SCOPE] = { "scope", RI },
	[K_TTL] = { "ttl", RI },
	[K_WAIT] = { "wait", RI },
	[K_LEASE] = { "lease", RI },
	[K_STORE_5XX] = { "store_5xx", RI },
	[K_MAX_BODY] = { "max_body", RI },
	[K_MAX_RESPONSE] = { "max_response", RI },
	[K_ON_STORE_ERROR] = { "on_store_error", RI },
	[K_TIMEOUT] = { "timeout", RI },
	[K_HANDLER] = { "handler", SECT_ROUTE },
	[K_SCRIPT_ROOT] = { "script_root", SECT_ROUTE },
	[K_LISTEN] = { "listen", SECT_GATEWAY },
	[K_SOCKET_OWNER] = { "socket_owner", SECT_GATEWAY },
	[K_SOCKET_MODE] = { "socket_mode", SECT_GATEWAY },
	[K_THREADS] = { "threads", SECT_GATEWAY },
	[K_WORKERS] = { "workers", SECT_GATEWAY },
	[K_LOG] = { "log", SECT_GATEWAY },
	[K_MYSQL_DEFAULTS_FILE] = { "mysql_defaults_file", SECT_GATEWAY },
	[K_MYSQL_GROUP] = { "mysql_group", SECT_GATEWAY },
	[K_HOST_NAME] = { "host_name", SECT_GATEWAY },
	[K_MAX_PARAMS] = { "max_params", SECT_GATEWAY },
	[K_COUNTERS_FLUSH] = { "counters_flush", SECT_GATEWAY },
	[K_REPLAY_CACHE] = { "replay_cache", SECT_GATEWAY },
	[K_BATCH] = { "batch", SECT_CLEANUP },
	[K_SLEEP] = { "sleep", SECT_CLEANUP },
	[K_MAX_SECONDS] = { "max_seconds", SECT_CLEANUP },
	[K_STALE_AFTER] = { "stale_after", SECT_CLEANUP },
	[K_COUNTERS_RETENTION] = { "counters_retention", SECT_CLEANUP },
	[K_RUNS_RETENTION] = { "runs_retention", SECT_CLEANUP },
	[K_REFRESH] = { "refresh", SECT_CONSOLE },
	[K_CLEANUP_WARN_AFTER] = { "cleanup_warn_after", SECT_CONSOLE },
};

/* Where a route's keys were set, for folding and late checks. */
struct route_state {
	uint64_t	 seen;		/* bit per enum key_id */
	int		 sr_line, sr_col; /* script_root */
};

struct parser {
	const char		*name;
	char			*err;
	size_t			 errlen;
	int			 check_fs;	/* cfg_load: script_root must exist */
	struct cfg		*c;
	struct route		 defs;		/* built-ins with [idempotency] over them */
	struct route_state	*rs;		/* parallel to c->routes */
	size_t			 cap;
	enum sect		 sect;
	unsigned		 sects_seen;	/* non-route sections, once each */
	uint64_t		 seen;		/* keys of the current non-route section */
	struct route		*route;		/* current [route], or NULL */
	struct route_state	*rstate;
	char			 sectname[CFG_MAX_PREFIX + 16];
	int			 line;
};

static const char *const sect_names[] = {
	"gateway", "idempotency", "route", "cleanup", "console",
};

/* Formats "NAME:LINE:COL: message" (no position when line is 0). */
static enum idem_err
perr(struct parser *p, enum idem_err er, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static enum idem_err
perr(struct parser *p, enum idem_err er, int line, int col, const char *fmt, ...)
{
	va_list	 ap;
	int	 n = 0;

	if (p->err == NULL || p->errlen == 0)
		return er;
	if (line > 0)
		n = snprintf(p->err, p->errlen, "%s:%d:%d: ", p->name, line, col);
	else
		n = snprintf(p->err, p->errlen, "%s: ", p->name);
	if (n < 0 || (size_t)n >= p->errlen)
		return er;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return er;
}

static int
is_ws(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* RFC 9110 tchar. */
static int
is_tchar(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return 1;
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
		return 1;
	return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int
is_token(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (!is_tchar((unsigned char)*s))
			return 0;
	return 1;
}

/* Decimal digits only, no sign; 0 on success. */
static int
parse_u64(const char *s, const char **end, uint64_t *v)
{
	uint64_t	 n = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*end = s;
	*v = n;
	return 0;
}

int
cfg_parse_duration(const char *s, int64_t *ms)
{
	uint64_t	 n, mul;
	const char	*u;

	if (s == NULL || parse_u64(s, &u, &n) != 0)
		return -1;
	if (strcmp(u, "ms") == 0)
		mul = 1;
	else if (*u == '\0' || strcmp(u, "s") == 0)
		mul = 1000;
	else if (strcmp(u, "m") == 0)
		mul = 60 * 1000;
	else if (strcmp(u, "h") == 0)
		mul = 3600 * 1000;
	else if (strcmp(u, "d") == 0)
		mul = 86400 * 1000;
	else
		return -1;
	if (n > (uint64_t)INT64_MAX / mul)
		return -1;
	*ms = (int64_t)(n * mul);
	return 0;
}

int
cfg_parse_size(const char *s, size_t *bytes)
{
	uint64_t	 n, mul;
	const char	*u;

	if (s == NULL || parse_u64(s, &u, &n) != 0)
		return -1;
	if (*u == '\0')
		mul = 1;
	else if (u[1] != '\0')
		return -1;
	else if (*u == 'K' || *u == 'k')
		mul = 1024;
	else if (*u == 'M' || *u == 'm')
		mul = 1024 * 1024;
	else if (*u == 'G' || *u == 'g')
		mul = 1024 * 1024 * 1024;
	else
		return -1;
	if (n > (uint64_t)SIZE_MAX / mul)
		return -1;
	*bytes = (size_t)(n * mul);
	return 0;
}

/* on/off, yes/no, true/false, 1/0 in any case; -1 if none. */
static int
parse_bool(const char *s)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };
	size_t	 i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return 1;
		if (strcasecmp(s, no[i]) == 0)
			return 0;
	}
	return -1;
}

/* "unix:/abs" or "tcp:host:port" (host may be [v6]); 0 if well formed. */
static int
check_addr(const char *s)
{
	const char	*colon, *h;
	uint64_t	 port;
	const char	*end;
	size_t		 hlen;

	if (strncmp(s, "unix:", 5) == 0) {
		/* sun_path holds 108 bytes with its NUL. */
		return s[5] == '/' && strlen(s + 5) < 108 ? 0 : -1;
	}
	if (strncmp(s, "tcp:", 4) != 0)
		return -1;
	h = s + 4;
	if ((colon = strrchr(h, ':')) == NULL)
		return -1;
	hlen = (size_t)(colon - h);
	if (hlen == 0 || hlen > 255)
		return -1;
	if (h[0] == '[' && h[hlen - 1] != ']')
		return -1;
	if (h[0] != '[' && memchr(h, ':', hlen) != NULL)
		return -1;
	if (parse_u64(colon + 1, &end, &port) != 0 || *end != '\0' ||
	    port == 0 || port > 65535)
		return -1;
	return 0;
}

static int
check_listen(const char *s)
{
	uint64_t	 fd;
	const char	*end;

	if (strncmp(s, "fd:", 3) == 0)
		return parse_u64(s + 3, &end, &fd) == 0 && *end == '\0' &&
		    fd <= 65535 ? 0 : -1;
	return check_addr(s);
}

/* "user:group", "user" or ":group", names without spaces or more colons. */
static int
check_owner(const char *s)
{
	const char	*colon = strchr(s, ':');
	const char	*q;

	if (*s == '\0' || strcmp(s, ":") == 0)
		return -1;
	if (colon != NULL && (strchr(colon + 1, ':') != NULL || colon[1] == '\0'))
		return -1;
	for (q = s; *q != '\0'; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return -1;
	return 0;
}

static enum idem_err
set_str(struct parser *p, char **dst, const char *v)
{
	char	*s = strdup(v);

	if (s == NULL)
		return perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	free(*dst);
	*dst = s;
	return IDEM_OK;
}

static void
methods_free(struct route *r)
{
	size_t	 i;

	for (i = 0; i < r->nmethods; i++) {
		free(r->methods[i]);
		r->methods[i] = NULL;
	}
	r->nmethods = 0;
}

static enum idem_err
parse_methods(struct parser *p, struct route *r, const char *v, int line,
    int col)
{
	char		*tmp[CFG_MAX_METHODS];
	char		 word[CFG_MAX_METHOD + 1];
	size_t		 n = 0, i, wl;
	const char	*s = v, *w;
	enum idem_err	 er = IDEM_OK;

	while (*s != '\0') {
		while (is_ws(*s))
			s++;
		if (*s == '\0')
			break;
		for (w = s; *s != '\0' && !is_ws(*s); s++)
			;
		wl = (size_t)(s - w);
		if (wl > CFG_MAX_METHOD) {
			er = perr(p, IDEM_ECONFIG, line, col + (int)(w - v),
			    "method longer than %d bytes", CFG_MAX_METHOD);
			goto fail;
		}
		for (i = 0; i < wl; i++) {
			if (!is_tchar((unsigned char)w[i])) {
				er = perr(p, IDEM_ECONFIG, line,
				    col + (int)(w - v + i),
				    "bad method '%.*s'", (int)wl, w);
				goto fail;
			}
			word[i] = w[i] >= 'a' && w[i] <= 'z' ?
			    (char)(w[i] - 'a' + 'A') : w[i];
		}
		word[wl] = '\0';
		for (i = 0; i < n; i++)
			if (strcmp(tmp[i], word) == 0)
				break;
		if (i < n)
			continue;	/* "POST POST" means POST */
		if (n == CFG_MAX_METHODS) {
			er = perr(p, IDEM_ECONFIG, line, col + (int)(w - v),
			    "more than %d methods", CFG_MAX_METHODS);
			goto fail;
		}
		if ((tmp[n] = strdup(word)) == NULL) {
			er = perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
			goto fail;
		}
		n++;
	}
	if (n == 0) {
		er = perr(p, IDEM_ECONFIG, line, col, "no methods listed");
		goto fail;
	}
	methods_free(r);
	memcpy(r->methods, tmp, n * sizeof(tmp[0]));
	r->nmethods = n;
	return IDEM_OK;
fail:
	for (i = 0; i < n; i++)
		free(tmp[i]);
	return er;
}

static enum idem_err
parse_handler(struct parser *p, struct route *r, const char *v)
{
	free(r->program);
	free(r->upstream);
	r->program = r->upstream = NULL;
	r->handler = HANDLER_NONE;
	if (strcmp(v, "script") == 0) {
		r->handler = HANDLER_SCRIPT;
		return IDEM_OK;
	}
	if (strncmp(v, "cgi:", 4) == 0 && v[4] == '/') {
		r->handler = HANDLER_CGI;
		return set_str(p, &r->program, v + 4);
	}
	if (strncmp(v, "fastcgi:", 8) == 0 && check_addr(v + 8) == 0) {
		r->handler = HANDLER_FASTCGI;
		return set_str(p, &r->upstream, v + 8);
	}
	return IDEM_EINVAL;
}

static enum idem_err
parse_scope(struct parser *p, struct route *r, const char *v)
{
	char	*h, *q;

	if (strcmp(v, "none") == 0 || strcmp(v, "remote_user") == 0) {
		free(r->scope_header);
		r->scope_header = NULL;
		r->scope = v[0] == 'n' ? SCOPE_NONE : SCOPE_REMOTE_USER;
		return IDEM_OK;
	}
	if (strncmp(v, "header:", 7) != 0 || !is_token(v + 7) ||
	    strlen(v + 7) > 128)
		return IDEM_EINVAL;
	if ((h = strdup(v + 7)) == NULL)
		return perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	/* Header names are case-insensitive; one spelling for the hash. */
	for (q = h; *q != '\0'; q++)
		if (*q >= 'A' && *q <= 'Z')
			*q = (char)(*q - 'A' + 'a');
	free(r->scope_header);
	r->scope_header = h;
	r->scope = SCOPE_HEADER;
	return IDEM_OK;
}

/* Durations that must be positive to make sense. */
static int
need_positive(enum key_id id)
{
	switch (id) {
	case K_TTL: case K_LEASE: case K_TIMEOUT: case K_COUNTERS_FLUSH:
	case K_COUNTERS_RETENTION: case K_RUNS_RETENTION: case K_REFRESH:
	case K_CLEANUP_WARN_AFTER: case K_STALE_AFTER:
		return 1;
	default:
		return 0;
	}
}

/* A duration key: well formed, at most ten years, positive where needed. */
static enum idem_err
parse_dur(struct parser *p, enum key_id id, const char *v, int64_t *ms,
    int line, int col)
{
	const char	*k = keys[id].name;
	int64_t		 n;

	if (cfg_parse_duration(v, &n) != 0)
		return perr(p, IDEM_ECONFIG, line, col,
		    "bad duration '%.*s' for %s", CFG_MAX_SHOWN, v, k);
	if (n == 0 && need_positive(id))
		return perr(p, IDEM_ECONFIG, line, col,
		    "%s must be greater than 0", k);
	if (n > CFG_MAX_DURATION_MS)
		return perr(p, IDEM_ECONFIG, line, col,
		    "%s must be at most 3650d", k);
	*ms = n;
	return IDEM_OK;
}

static enum idem_err
parse_int_range(struct parser *p, const char *v, int lo, int hi, int *out,
    const char *key, int line, int col)
{
	uint64_t	 n;
	const char	*end;

	if (parse_u64(v, &end, &n) != 0 || *end != '\0' || n < (uint64_t)lo ||
	    n > (uint64_t)hi)
		return perr(p, IDEM_ECONFIG, line, col,
		    "bad number '%.*s' for %s (%d..%d)", CFG_MAX_SHOWN, v, key,
		    lo, hi);
	*out = (int)n;
	return IDEM_OK;
}

static enum idem_err
set_route_key(struct parser *p, struct route *r, enum key_id id,
    const char *v, int line, int col)
{
	const char	*k = keys[id].name;
	int64_t		 ms;
	size_t		 sz;
	int		 b;
	enum idem_err	 er;

	switch (id) {
	case K_IDEMPOTENCY: case K_REQUIRE_KEY: case K_STORE_5XX:
		if ((b = parse_bool(v)) < 0)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad boolean '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		if (id == K_IDEMPOTENCY)
			r->idempotency = b;
		else if (id == K_REQUIRE_KEY)
			r->require_key = b;
		else
			r->store_5xx = b;
		return IDEM_OK;
	case K_KEY_HEADER:
		if (!is_token(v) || strlen(v) > 128)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad header name '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		return set_str(p, &r->key_header, v);
	case K_METHODS:
		return parse_methods(p, r, v, line, col);
	case K_SCOPE:
		er = parse_scope(p, r, v);
		if (er == IDEM_EINVAL)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad scope '%.*s' (none, remote_user or header:NAME)",
			    CFG_MAX_SHOWN, v);
		return er;
	case K_TTL: case K_WAIT: case K_LEASE: case K_TIMEOUT:
		if ((er = parse_dur(p, id, v, &ms, line, col)) != IDEM_OK)
			return er;
		if (id == K_TTL)
			r->ttl_ms = ms;
		else if (id == K_WAIT)
			r->wait_ms = ms;
		else if (id == K_LEASE)
			r->lease_ms = ms;
		else
			r->timeout_ms = ms;
		return IDEM_OK;
	case K_MAX_BODY: case K_MAX_RESPONSE:
		if (cfg_parse_size(v, &sz) != 0)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad size '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		if (sz > (size_t)1 << 30)
			return perr(p, IDEM_ECONFIG, line, col,
			    "%s must be at most 1G", k);
		if (id == K_MAX_BODY)
			r->max_body = sz;
		else
			r->max_response = sz;
		return IDEM_OK;
	case K_ON_STORE_ERROR:
		if (strcmp(v, "reject") == 0)
			r->on_store_error = STORE_ERR_REJECT;
		else if (strcmp(v, "pass") == 0)
			r->on_store_error = STORE_ERR_PASS;
		else
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad value '%.*s' for %s (reject or pass)",
			    CFG_MAX_SHOWN, v, k);
		return IDEM_OK;
	case K_HANDLER:
		er = parse_handler(p, r, v);
		if (er == IDEM_EINVAL)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad handler '%.*s' (cgi:/path, script, "
			    "fastcgi:unix:/path or fastcgi:tcp:host:port)",
			    CFG_MAX_SHOWN, v);
		return er;
	case K_SCRIPT_ROOT: {
		char		*rp;
		struct stat	 st;

		if (v[0] != '/')
			return perr(p, IDEM_ECONFIG, line, col,
			    "script_root must be an absolute path");
		p->rstate->sr_line = line;
		p->rstate->sr_col = col;
		if ((rp = realpath(v, NULL)) == NULL) {
			if (p->check_fs)
				return perr(p, IDEM_ECONFIG, line, col,
				    "script_root '%.*s': %s", CFG_MAX_SHOWN, v,
				    strerror(errno));
			return set_str(p, &r->script_root, v);
		}
		if (p->check_fs && (stat(rp, &st) != 0 || !S_ISDIR(st.st_mode))) {
			free(rp);
			return perr(p, IDEM_ECONFIG, line, col,
			    "script_root '%.*s' is not a directory",
			    CFG_MAX_SHOWN, v);
		}
		free(r->script_root);
		r->script_root = rp;
		return IDEM_OK;
	}
	default:
		return perr(p, IDEM_ECONFIG, line, col, "internal: key %s", k);
	}
}

static enum idem_err
set_global_key(struct parser *p, enum key_id id, const char *v, int line,
    int col)
{
	struct cfg	*c = p->c;
	const char	*k = keys[id].name;
	int64_t		 ms;
	int64_t		*dst = NULL;
	size_t		 sz;
	const char	*q;
	unsigned	 mode;

	switch (id) {
	case K_LISTEN:
		if (check_listen(v) != 0)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad listen address '%.*s' (unix:/path, "
			    "tcp:host:port or fd:N)", CFG_MAX_SHOWN, v);
		return set_str(p, &c->listen, v);
	case K_SOCKET_OWNER:
		if (check_owner(v) != 0)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad socket_owner '%.*s' (user:group, user or "
			    ":group)", CFG_MAX_SHOWN, v);
		return set_str(p, &c->socket_owner, v);
	case K_SOCKET_MODE:
		mode = 0;
		for (q = v; *q >= '0' && *q <= '7' && q - v < 5; q++)
			mode = mode * 8 + (unsigned)(*q - '0');
		if (q == v || *q != '\0' || mode > 0777)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad octal mode '%.*s' for socket_mode",
			    CFG_MAX_SHOWN, v);
		if (mode & 0007)
			return perr(p, IDEM_ECONFIG, line, col,
			    "socket_mode %04o: socket must not be "
			    "world-accessible", mode);
		c->socket_mode = mode;
		return IDEM_OK;
	case K_THREADS:
		return parse_int_range(p, v, 1, 1024, &c->threads, k, line, col);
	case K_WORKERS:
		return parse_int_range(p, v, 1, 64, &c->workers, k, line, col);
	case K_BATCH:
		return parse_int_range(p, v, 1, 100000, &c->cleanup_batch, k,
		    line, col);
	case K_LOG:
		if (strcmp(v, "stderr") == 0)
			c->log_syslog = 0;
		else if (strcmp(v, "syslog") == 0)
			c->log_syslog = 1;
		else
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad value '%.*s' for log (stderr or syslog)",
			    CFG_MAX_SHOWN, v);
		return IDEM_OK;
	case K_MYSQL_DEFAULTS_FILE:
		return set_str(p, &c->mysql_defaults_file, v);
	case K_MYSQL_GROUP:
		return set_str(p, &c->mysql_group, v);
	case K_HOST_NAME:
		for (q = v; *q != '\0'; q++)
			if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f)
				break;
		if (*q != '\0' || strlen(v) > CFG_MAX_HOST)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad host_name '%.*s' (up to %d visible ASCII bytes)",
			    CFG_MAX_SHOWN, v, CFG_MAX_HOST);
		return set_str(p, &c->host_name, v);
	case K_MAX_PARAMS:
		if (cfg_parse_size(v, &sz) != 0)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad size '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		if (sz < 1024 || sz > 16 * 1024 * 1024)
			return perr(p, IDEM_ECONFIG, line, col,
			    "%s must be between 1K and 16M", k);
		c->max_params = sz;
		return IDEM_OK;
	case K_REPLAY_CACHE:
		if (cfg_parse_size(v, &sz) != 0)
			return perr(p, IDEM_ECONFIG, line, col,
			    "bad size '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		if (sz != 0 && (sz < 64 * 1024 || sz > 1024 * 1024 * 1024))
			return perr(p, IDEM_ECONFIG, line, col,
			    "%s must be 0 (off) or between 64K and 1G", k);
		c->replay_cache = sz;
		return IDEM_OK;
	case K_COUNTERS_FLUSH: dst = &c->counters_flush_ms; break;
	case K_SLEEP: dst = &c->cleanup_sleep_ms; break;
	case K_MAX_SECONDS: dst = &c->cleanup_max_ms; break;
	case K_STALE_AFTER: dst = &c->stale_after_ms; break;
	case K_COUNTERS_RETENTION: dst = &c->counters_retention_ms; break;
	case K_RUNS_RETENTION: dst = &c->runs_retention_ms; break;
	case K_REFRESH: dst = &c->refresh_ms; break;
	case K_CLEANUP_WARN_AFTER: dst = &c->cleanup_warn_ms; break;
	default:
		return perr(p, IDEM_ECONFIG, line, col, "internal: key %s", k);
	}
	if (parse_dur(p, id, v, &ms, line, col) != IDEM_OK)
		return IDEM_ECONFIG;
	*dst = ms;
	return IDEM_OK;
}

/* Built-in defaults of every [idempotency] key. */
static enum idem_err
route_defaults(struct parser *p, struct route *r)
{
	static const char *const m[] = { "POST", "PATCH" };
	size_t	 i;

	r->timeout_ms = 30 * 1000;
	r->idempotency = 1;
	r->require_key = 0;
	r->scope = SCOPE_NONE;
	r->ttl_ms = 24LL * 3600 * 1000;
	r->wait_ms = 10 * 1000;
	r->lease_ms = 60 * 1000;
	r->store_5xx = 0;
	r->max_body = 1024 * 1024;
	r->max_response = 8 * 1024 * 1024;
	r->on_store_error = STORE_ERR_REJECT;
	if (set_str(p, &r->key_header, "Idempotency-Key") != IDEM_OK)
		return IDEM_ENOMEM;
	for (i = 0; i < 2; i++) {
		if ((r->methods[i] = strdup(m[i])) == NULL)
			return perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
		r->nmethods++;
	}
	return IDEM_OK;
}

static void
route_clear(struct route *r)
{
	free(r->prefix);
	free(r->program);
	free(r->script_root);
	free(r->upstream);
	free(r->key_header);
	free(r->scope_header);
	methods_free(r);
	memset(r, 0, sizeof(*r));
}

/* Copies what the route did not set from the [idempotency] defaults. */
static enum idem_err
route_fold(struct parser *p, struct route *r, uint64_t seen)
{
	const struct route	*d = &p->defs;
	size_t			 i;

#define UNSET(k)	((seen & ((uint64_t)1 << (k))) == 0)
	if (UNSET(K_IDEMPOTENCY))
		r->idempotency = d->idempotency;
	if (UNSET(K_REQUIRE_KEY))
		r->require_key = d->require_key;
	if (UNSET(K_STORE_5XX))
		r->store_5xx = d->store_5xx;
	if (UNSET(K_TTL))
		r->ttl_ms = d->ttl_ms;
	if (UNSET(K_WAIT))
		r->wait_ms = d->wait_ms;
	if (UNSET(K_LEASE))
		r->lease_ms = d->lease_ms;
	if (UNSET(K_TIMEOUT))
		r->timeout_ms = d->timeout_ms;
	if (UNSET(K_MAX_BODY))
		r->max_body = d->max_body;
	if (UNSET(K_MAX_RESPONSE))
		r->max_response = d->max_response;
	if (UNSET(K_ON_STORE_ERROR))
		r->on_store_error = d->on_store_error;
	if (UNSET(K_KEY_HEADER) &&
	    set_str(p, &r->key_header, d->key_header) != IDEM_OK)
		return IDEM_ENOMEM;
	if (UNSET(K_SCOPE)) {
		r->scope = d->scope;
		if (d->scope_header != NULL &&
		    set_str(p, &r->scope_header, d->scope_header) != IDEM_OK)
			return IDEM_ENOMEM;
	}
	if (UNSET(K_METHODS)) {
		methods_free(r);
		for (i = 0; i < d->nmethods; i++) {
			if ((r->methods[i] = strdup(d->methods[i])) == NULL)
				return perr(p, IDEM_ENOMEM, 0, 0,
				    "out of memory");
			r->nmethods++;
		}
	}
#undef UNSET
	return IDEM_OK;
}

static int
route_cmp(const void *a, const void *b)
{
	const struct route	*x = a, *y = b;
	size_t			 lx = strlen(x->prefix), ly = strlen(y->prefix);

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(x->prefix, y->prefix);
}

/* "[route /prefix]": checks the prefix and opens a new route. */
static enum idem_err
open_route(struct parser *p, const char *prefix, int col)
{
	struct cfg		*c = p->c;
	struct route		*nr;
	struct route_state	*ns;
	const char		*q;
	size_t			 i, ncap;

	if (prefix[0] != '/')
		return perr(p, IDEM_ECONFIG, p->line, col,
		    "route prefix '%.*s' must start with '/'", CFG_MAX_SHOWN,
		    prefix);
	if (strlen(prefix) > CFG_MAX_PREFIX)
		return perr(p, IDEM_ECONFIG, p->line, col,
		    "route prefix longer than %d bytes", CFG_MAX_PREFIX);
	for (q = prefix; *q != '\0'; q++)
		if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f ||
		    *q == '?' || *q == '#')
			return perr(p, IDEM_ECONFIG, p->line, col + (int)(q - prefix),
			    "bad character in route prefix");
	for (i = 0; i < c->nroutes; i++)
		if (strcmp(c->routes[i].prefix, prefix) == 0)
			return perr(p, IDEM_ECONFIG, p->line, col,
			    "duplicate [route %s] (first on line %d)", prefix,
			    c->routes[i].line);
	if (c->nroutes == p->cap) {
		ncap = p->cap ? p->cap * 2 : 8;
		if ((nr = realloc(c->routes, ncap * sizeof(*nr))) == NULL)
			return perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
		c->routes = nr;
		if ((ns = realloc(p->rs, ncap * sizeof(*ns))) == NULL)
			return perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
		p->rs = ns;
		p->cap = ncap;
	}
	nr = &c->routes[c->nroutes];
	memset(nr, 0, sizeof(*nr));
	memset(&p->rs[c->nroutes], 0, sizeof(p->rs[0]));
	if ((nr->prefix = strdup(prefix)) == NULL)
		return perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	nr->line = p->line;
	c->nroutes++;
	p->route = nr;
	p->rstate = &p->rs[c->nroutes - 1];
	p->sect = SECT_ROUTE;
	snprintf(p->sectname, sizeof(p->sectname), "route %s", prefix);
	return IDEM_OK;
}

/* A "[...]" line; s points at '[' which is at column col. */
static enum idem_err
parse_section(struct parser *p, char *s, int col)
{
	char		*end, *name, *rest, *q;
	size_t		 i;
	unsigned	 bit;

	if ((end = strchr(s, ']')) == NULL)
		return perr(p, IDEM_ECONFIG, p->line, col,
		    "missing ']' in section header");
	for (q = end + 1; is_ws(*q); q++)
		;
	if (*q != '\0' && *q != ';' && *q != '#')
		return perr(p, IDEM_ECONFIG, p->line, col + (int)(q - s),
		    "unexpected text after section header");
	*end = '\0';
	for (name = s + 1; is_ws(*name); name++)
		;
	for (q = end; q > name && is_ws(q[-1]); q--)
		;
	*q = '\0';
	p->route = NULL;
	p->rstate = NULL;
	p->seen = 0;
	if (strncmp(name, "route", 5) == 0 && (is_ws(name[5]) || name[5] == '\0')) {
		for (rest = name + 5; is_ws(*rest); rest++)
			;
		if (*rest == '\0')
			return perr(p, IDEM_ECONFIG, p->line, col,
			    "[route] needs a path prefix: [route /path]");
		return open_route(p, rest, col + (int)(rest - s));
	}
	for (i = 0; i < sizeof(sect_names) / sizeof(sect_names[0]); i++)
		if (i != 2 && strcmp(name, sect_names[i]) == 0)
			break;
	if (i == sizeof(sect_names) / sizeof(sect_names[0]))
		return perr(p, IDEM_ECONFIG, p->line, col + (int)(name - s),
		    "unknown section [%.*s]", CFG_MAX_SHOWN, name);
	bit = 1u << i;
	if (p->sects_seen & bit)
		return perr(p, IDEM_ECONFIG, p->line, col,
		    "duplicate section [%s]", name);
	p->sects_seen |= bit;
	p->sect = (enum sect)bit;
	snprintf(p->sectname, sizeof(p->sectname), "%s", name);
	return IDEM_OK;
}

/* A "key = value" line; s is the line from its first non-blank (column col). */
static enum idem_err
parse_pair(struct parser *p, char *s, int col)
{
	char		*eq, *kend, *v, *o, *q;
	int		 vcol;
	size_t		 i;
	uint64_t	*seen, bit;

	if ((eq = strchr(s, '=')) == NULL)
		return perr(p, IDEM_ECONFIG, p->line, col,
		    "expected 'key = value'");
	for (kend = eq; kend > s && is_ws(kend[-1]); kend--)
		;
	if (kend == s)
		return perr(p, IDEM_ECONFIG, p->line, col, "missing key before '='");
	for (q = s; q < kend; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') ||
		    *q == '_' || (*q >= 'A' && *q <= 'Z') || *q == '-'))
			return perr(p, IDEM_ECONFIG, p->line, col + (int)(q - s),
			    "bad key name (expected 'key = value')");
	*kend = '\0';
	if (p->sect == SECT_NONE)
		return perr(p, IDEM_ECONFIG, p->line, col,
		    "key '%.*s' outside of any section", CFG_MAX_SHOWN, s);

	for (i = 0; i < K__MAX; i++)
		if (strcmp(keys[i].name, s) == 0)
			break;
	if (i == K__MAX || (keys[i].sects & p->sect) == 0)
		return perr(p, IDEM_ECONFIG, p->line, col,
		    "unknown key '%.*s' in [%s]", CFG_MAX_SHOWN, s, p->sectname);

	/* The value: quoted, or up to a comment that follows blanks. */
	for (v = eq + 1; is_ws(*v); v++)
		;
	vcol = col + (int)(v - s);
	if (*v == '"') {
		for (o = v, q = v + 1; *q != '"'; q++) {
			if (*q == '\0')
				return perr(p, IDEM_ECONFIG, p->line, vcol,
				    "unterminated quoted value");
			if (*q == '\\') {
				if (q[1] != '"' && q[1] != '\\')
					return perr(p, IDEM_ECONFIG, p->line,
					    col + (int)(q - s),
					    "bad escape in quoted value "
					    "(only \\\" and \\\\)");
				q++;
			}
			*o++ = *q;
		}
		for (q++; is_ws(*q); q++)
			;
		if (*q != '\0' && *q != ';' && *q != '#')
			return perr(p, IDEM_ECONFIG, p->line, col + (int)(q - s),
			    "unexpected text after quoted value");
		*o = '\0';
		if (*v == '\0')
			return perr(p, IDEM_ECONFIG, p->line, vcol,
			    "missing value for %.*s", CFG_MAX_SHOWN, s);
		vcol++;		/* point into the quotes */
	} else {
		for (q = v; *q != '\0'; q++)
			if ((*q == ';' || *q == '#') && (q == v || is_ws(q[-1])))
				break;
		while (q > v && is_ws(q[-1]))
			q--;
		*q = '\0';
		if (*v == '\0')
			return perr(p, IDEM_ECONFIG, p->line, vcol,
			    "missing value for %.*s", CFG_MAX_SHOWN, s);
	}

	seen = p->sect == SECT_ROUTE ? &p->rstate->seen : &p->seen;
	bit = (uint64_t)1 << i;
	if (*seen & bit)
		return perr(p, IDEM_ECONFIG, p->line, col,
		    "duplicate key '%s' in [%s]", s, p->sectname);
	*seen |= bit;
	if (p->sect == SECT_ROUTE)
		return set_route_key(p, p->route, (enum key_id)i, v, p->line,
		    vcol);
	if (p->sect == SECT_IDEM)
		return set_route_key(p, &p->defs, (enum key_id)i, v, p->line,
		    vcol);
	return set_global_key(p, (enum key_id)i, v, p->line, vcol);
}

static enum idem_err
parse_line(struct parser *p, char *line, size_t len)
{
	size_t	 i;
	char	*s;

	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)line[i];

		if (ch == '\0')
			return perr(p, IDEM_ECONFIG, p->line, (int)i + 1,
			    "NUL byte");
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return perr(p, IDEM_ECONFIG, p->line, (int)i + 1,
			    "control character 0x%02x", ch);
	}
	line[len] = '\0';
	for (s = line; is_ws(*s); s++)
		;
	if (*s == '\0' || *s == ';' || *s == '#')
		return IDEM_OK;
	if (*s == '[')
		return parse_section(p, s, (int)(s - line) + 1);
	return parse_pair(p, s, (int)(s - line) + 1);
}

/* Checks each route, folds [idempotency] in and sorts. */
static enum idem_err
finish(struct parser *p)
{
	struct cfg	*c = p->c;
	struct route	*r;
	size_t		 i;
	enum idem_err	 er;
	char		 host[256];

	for (i = 0; i < c->nroutes; i++) {
		r = &c->routes[i];
		if (r->handler == HANDLER_NONE)
			return perr(p, IDEM_ECONFIG, r->line, 1,
			    "[route %s] has no handler", r->prefix);
		if (r->handler == HANDLER_SCRIPT && r->script_root == NULL)
			return perr(p, IDEM_ECONFIG, r->line, 1,
			    "[route %s]: handler = script needs script_root",
			    r->prefix);
		if (r->handler != HANDLER_SCRIPT && r->script_root != NULL)
			return perr(p, IDEM_ECONFIG, p->rs[i].sr_line,
			    p->rs[i].sr_col,
			    "script_root applies only to handler = script");
		if ((er = route_fold(p, r, p->rs[i].seen)) != IDEM_OK)
			return er;
	}
	if (c->nroutes > 1)
		qsort(c->routes, c->nroutes, sizeof(c->routes[0]), route_cmp);
	if (c->host_name == NULL) {
		if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		host[CFG_MAX_HOST] = '\0';
		if (set_str(p, &c->host_name, host) != IDEM_OK)
			return IDEM_ENOMEM;
	}
	return IDEM_OK;
}

static enum idem_err
cfg_new(struct parser *p)
{
	struct cfg	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	p->c = c;
	c->socket_mode = 0660;
	c->threads = 32;
	c->workers = 2;
	c->max_params = 64 * 1024;
	c->counters_flush_ms = 5 * 1000;
	c->replay_cache = 8 * 1024 * 1024;
	c->cleanup_batch = 1000;
	c->cleanup_sleep_ms = 0;
	c->cleanup_max_ms = 0;
	c->stale_after_ms = 3600 * 1000;
	c->counters_retention_ms = 7LL * 86400 * 1000;
	c->runs_retention_ms = 30LL * 86400 * 1000;
	c->refresh_ms = 2 * 1000;
	c->cleanup_warn_ms = 2 * 3600 * 1000;
	if (set_str(p, &c->path, p->name) != IDEM_OK ||
	    set_str(p, &c->listen, "unix:/run/idemgate/idemgate.sock") != IDEM_OK ||
	    set_str(p, &c->mysql_group, "idemgate") != IDEM_OK)
		return IDEM_ENOMEM;
	return route_defaults(p, &p->defs);
}

static enum idem_err
parse_text(const char *text, size_t len, const char *name, int check_fs,
    struct cfg **out, char *err, size_t errlen)
{
	struct parser	 p;
	char		 line[CFG_MAX_LINE + 1];
	size_t		 off = 0, ll;
	const char	*nl;
	enum idem_err	 er;

	memset(&p, 0, sizeof(p));
	p.name = name != NULL ? name : "(config)";
	p.err = err;
	p.errlen = errlen;
	p.check_fs = check_fs;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (text == NULL && len > 0)
		return perr(&p, IDEM_ECONFIG, 0, 0, "no text");
	if (len > CFG_MAX_FILE) {
		er = perr(&p, IDEM_ECONFIG, 0, 0, "file larger than 1 MiB");
		goto out;
	}
	if ((er = cfg_new(&p)) != IDEM_OK)
		goto out;
	while (off < len) {
		p.line++;
		nl = memchr(text + off, '\n', len - off);
		ll = nl != NULL ? (size_t)(nl - (text + off)) : len - off;
		if (ll > 0 && text[off + ll - 1] == '\r')
			ll--;	/* CRLF files */
		if (ll > CFG_MAX_LINE) {
			er = perr(&p, IDEM_ECONFIG, p.line, CFG_MAX_LINE + 1,
			    "line longer than %d bytes", CFG_MAX_LINE);
			goto out;
		}
		memcpy(line, text + off, ll);
		if ((er = parse_line(&p, line, ll)) != IDEM_OK)
			goto out;
		off = nl != NULL ? (size_t)(nl - text) + 1 : len;
	}
	if ((er = finish(&p)) != IDEM_OK)
		goto out;
	*out = p.c;
	p.c = NULL;
out:
	cfg_free(p.c);
	route_clear(&p.defs);
	free(p.rs);
	return er;
}

enum idem_err
cfg_parse(const char *text, size_t len, const char *name, struct cfg **out,
    char *err, size_t errlen)
{
	return parse_text(text, len, name, 0, out, err, errlen);
}

enum idem_err
cfg_load(const char *path, struct cfg **out, char *err, size_t errlen)
{
	struct parser	 p;
	struct stat	 st;
	char		*text = NULL;
	size_t		 len = 0;
	ssize_t		 n;
	int		 fd = -1;
	enum idem_err	 er;

	memset(&p, 0, sizeof(p));
	p.name = path;
	p.err = err;
	p.errlen = errlen;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		er = perr(&p, IDEM_ESYS, 0, 0, "%s", strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		er = perr(&p, IDEM_ECONFIG, 0, 0, "not a regular file");
		goto out;
	}
	/* One byte past the limit tells a file that is too large. */
	if ((text = malloc(CFG_MAX_FILE + 1)) == NULL) {
		er = perr(&p, IDEM_ENOMEM, 0, 0, "out of memory");
		goto out;
	}
	while (len < CFG_MAX_FILE + 1) {
		n = read(fd, text + len, CFG_MAX_FILE + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			er = perr(&p, IDEM_ESYS, 0, 0, "%s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	er = parse_text(text, len, path, 1, out, err, errlen);
out:
	free(text);
	if (fd >= 0)
		close(fd);
	return er;
}

void
cfg_free(struct cfg *c)
{
	size_t	 i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nroutes; i++)
		route_clear(&c->routes[i]);
	free(c->routes);
	free(c->path);
	free(c->listen);
	free(c->socket_owner);
	free(c->mysql_defaults_file);
	free(c->mysql_group);
	free(c->host_name);
	free(c);
}

int
cfg_check_gateway(const struct cfg *c, char *err, size_t errlen)
{
	if (c->nroutes == 0) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: no [route] section: idemgate "
			    "has nothing to serve", c->path);
		return -1;
	}
	return 0;
}

const struct route *
cfg_route(const struct cfg *c, const char *path)
{
	const struct route	*r;
	size_t			 i, n;

	if (c == NULL || path == NULL)
		return NULL;
	/* Sorted longest first, so the first match is the longest. */
	for (i = 0; i < c->nroutes; i++) {
		r = &c->routes[i];
		n = strlen(r->prefix);
		if (strncmp(path, r->prefix, n) != 0)
			continue;
		if (r->prefix[n - 1] == '/' || path[n] == '\0' || path[n] == '/')
			return r;
	}
	return NULL;
}

int
cfg_protects(const struct route *r, const char *method)
{
	size_t	 i;

	if (r == NULL || method == NULL || !r->idempotency)
		return 0;
	for (i = 0; i < r->nmethods; i++)
		if (strcmp(r->methods[i], method) == 0)
			return 1;
	return 0;
}
