/* Values of the configuration keys: durations, sizes, addresses, methods, handlers, scopes. */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cfg_int.h"

const struct cfg_key cfg_keys[K__MAX] = {
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
	[K_RELEASE_STATUSES] = { "release_statuses", RI },
	[K_KEY_FORMAT] = { "key_format", RI },
	[K_KEYS_PER_ROUTE] = { "keys_per_route", RI },
	[K_FP_HEADERS] = { "fingerprint_headers", RI },
	[K_FINGERPRINT] = { "fingerprint", RI },
	[K_NEW_KEYS_PER_MINUTE] = { "new_keys_per_minute", RI },
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
	[K_CLIENT_TIMEOUT] = { "client_timeout", SECT_GATEWAY },
	[K_PROBLEM_BASE_URL] = { "problem_base_url", SECT_GATEWAY },
	[K_STATUS_PATH] = { "status_path", SECT_GATEWAY },
	[K_BATCH] = { "batch", SECT_CLEANUP },
	[K_SLEEP] = { "sleep", SECT_CLEANUP },
	[K_MAX_SECONDS] = { "max_seconds", SECT_CLEANUP },
	[K_STALE_AFTER] = { "stale_after", SECT_CLEANUP },
	[K_COUNTERS_RETENTION] = { "counters_retention", SECT_CLEANUP },
	[K_RUNS_RETENTION] = { "runs_retention", SECT_CLEANUP },
	[K_MAX_LAG] = { "max_lag", SECT_CLEANUP },
	[K_REPLICAS] = { "replicas", SECT_CLEANUP },
	[K_REFRESH] = { "refresh", SECT_CONSOLE },
	[K_CLEANUP_WARN_AFTER] = { "cleanup_warn_after", SECT_CONSOLE },
};

int
cfg_is_ws(char ch)
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

enum idem_err
cfg_set_str(struct parser *p, char **dst, const char *v)
{
	char	*s = strdup(v);

	if (s == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	free(*dst);
	*dst = s;
	return IDEM_OK;
}

void
cfg_methods_free(struct route *r)
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
		while (cfg_is_ws(*s))
			s++;
		if (*s == '\0')
			break;
		for (w = s; *s != '\0' && !cfg_is_ws(*s); s++)
			;
		wl = (size_t)(s - w);
		if (wl > CFG_MAX_METHOD) {
			er = cfg_perr(p, IDEM_ECONFIG, line, col + (int)(w - v),
			    "method longer than %d bytes", CFG_MAX_METHOD);
			goto fail;
		}
		for (i = 0; i < wl; i++) {
			if (!is_tchar((unsigned char)w[i])) {
				er = cfg_perr(p, IDEM_ECONFIG, line,
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
			er = cfg_perr(p, IDEM_ECONFIG, line, col + (int)(w - v),
			    "more than %d methods", CFG_MAX_METHODS);
			goto fail;
		}
		if ((tmp[n] = strdup(word)) == NULL) {
			er = cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
			goto fail;
		}
		n++;
	}
	if (n == 0) {
		er = cfg_perr(p, IDEM_ECONFIG, line, col, "no methods listed");
		goto fail;
	}
	cfg_methods_free(r);
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
		return cfg_set_str(p, &r->program, v + 4);
	}
	if (strncmp(v, "fastcgi:", 8) == 0 && check_addr(v + 8) == 0) {
		r->handler = HANDLER_FASTCGI;
		return cfg_set_str(p, &r->upstream, v + 8);
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
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	/* Header names are case-insensitive; one spelling for the hash. */
	for (q = h; *q != '\0'; q++)
		if (*q >= 'A' && *q <= 'Z')
			*q = (char)(*q - 'A' + 'a');
	free(r->scope_header);
	r->scope_header = h;
	r->scope = SCOPE_HEADER;
	return IDEM_OK;
}

/*
 * 1 when v is at most max bytes of visible ASCII (spaces too if spaces),
 * none of them in bad.
 */
static int
visible(const char *v, int spaces, const char *bad, size_t max)
{
	const unsigned char	*q;

	for (q = (const unsigned char *)v; *q != '\0'; q++)
		if (*q < ' ' || *q >= 0x7f || (*q == ' ' && !spaces) ||
		    strchr(bad, *q) != NULL)
			return 0;
	return (size_t)(q - (const unsigned char *)v) <= max;
}

/* Durations that must be positive to make sense. */
static int
need_positive(enum key_id id)
{
	switch (id) {
	case K_TTL: case K_LEASE: case K_TIMEOUT: case K_COUNTERS_FLUSH:
	case K_CLIENT_TIMEOUT:
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
	const char	*k = cfg_keys[id].name;
	int64_t		 n;

	if (cfg_parse_duration(v, &n) != 0)
		return cfg_perr(p, IDEM_ECONFIG, line, col,
		    "bad duration '%.*s' for %s", CFG_MAX_SHOWN, v, k);
	if (n == 0 && need_positive(id))
		return cfg_perr(p, IDEM_ECONFIG, line, col,
		    "%s must be greater than 0", k);
	if (n > CFG_MAX_DURATION_MS)
		return cfg_perr(p, IDEM_ECONFIG, line, col,
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
		return cfg_perr(p, IDEM_ECONFIG, line, col,
		    "bad number '%.*s' for %s (%d..%d)", CFG_MAX_SHOWN, v, key,
		    lo, hi);
	*out = (int)n;
	return IDEM_OK;
}

enum idem_err
cfg_set_route_key(struct parser *p, struct route *r, enum key_id id,
    const char *v, int line, int col)
{
	const char	*k = cfg_keys[id].name;
	int64_t		 ms;
	size_t		 sz;
	int		 b;
	enum idem_err	 er;

	switch (id) {
	case K_IDEMPOTENCY: case K_REQUIRE_KEY: case K_STORE_5XX:
	case K_KEYS_PER_ROUTE:
		if ((b = parse_bool(v)) < 0)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad boolean '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		if (id == K_IDEMPOTENCY)
			r->idempotency = b;
		else if (id == K_REQUIRE_KEY)
			r->require_key = b;
		else if (id == K_KEYS_PER_ROUTE)
			r->keys_per_route = b;
		else
			r->store_5xx = b;
		return IDEM_OK;
	case K_RELEASE_STATUSES: case K_KEY_FORMAT: case K_FP_HEADERS:
	case K_FINGERPRINT: case K_NEW_KEYS_PER_MINUTE:
		return cfg_set_policy_key(p, r, id, v, line, col);
	case K_KEY_HEADER:
		if (!is_token(v) || strlen(v) > 128)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad header name '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		return cfg_set_str(p, &r->key_header, v);
	case K_METHODS:
		return parse_methods(p, r, v, line, col);
	case K_SCOPE:
		er = parse_scope(p, r, v);
		if (er == IDEM_EINVAL)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
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
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad size '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		if (sz > (size_t)1 << 30)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
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
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad value '%.*s' for %s (reject or pass)",
			    CFG_MAX_SHOWN, v, k);
		return IDEM_OK;
	case K_HANDLER:
		r->handler_line = line;
		r->handler_col = col;
		er = parse_handler(p, r, v);
		if (er == IDEM_EINVAL)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad handler '%.*s' (cgi:/path, script, "
			    "fastcgi:unix:/path or fastcgi:tcp:host:port)",
			    CFG_MAX_SHOWN, v);
		return er;
	case K_SCRIPT_ROOT: {
		char		*rp;
		struct stat	 st;

		if (v[0] != '/')
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "script_root must be an absolute path");
		p->rstate->sr_line = line;
		p->rstate->sr_col = col;
		if ((rp = realpath(v, NULL)) == NULL) {
			if (p->check_fs)
				return cfg_perr(p, IDEM_ECONFIG, line, col,
				    "script_root '%.*s': %s", CFG_MAX_SHOWN, v,
				    strerror(errno));
			return cfg_set_str(p, &r->script_root, v);
		}
		if (p->check_fs && (stat(rp, &st) != 0 || !S_ISDIR(st.st_mode))) {
			free(rp);
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "script_root '%.*s' is not a directory",
			    CFG_MAX_SHOWN, v);
		}
		free(r->script_root);
		r->script_root = rp;
		return IDEM_OK;
	}
	default:
		return cfg_perr(p, IDEM_ECONFIG, line, col, "internal: key %s", k);
	}
}

enum idem_err
cfg_set_global_key(struct parser *p, enum key_id id, const char *v, int line,
    int col)
{
	struct cfg	*c = p->c;
	const char	*k = cfg_keys[id].name;
	int64_t		 ms;
	int64_t		*dst = NULL;
	size_t		 sz;
	const char	*q;
	unsigned	 mode;

	switch (id) {
	case K_LISTEN:
		if (check_listen(v) != 0)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad listen address '%.*s' (unix:/path, "
			    "tcp:host:port or fd:N)", CFG_MAX_SHOWN, v);
		return cfg_set_str(p, &c->listen, v);
	case K_SOCKET_OWNER:
		if (check_owner(v) != 0)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad socket_owner '%.*s' (user:group, user or "
			    ":group)", CFG_MAX_SHOWN, v);
		return cfg_set_str(p, &c->socket_owner, v);
	case K_SOCKET_MODE:
		mode = 0;
		for (q = v; *q >= '0' && *q <= '7' && q - v < 5; q++)
			mode = mode * 8 + (unsigned)(*q - '0');
		if (q == v || *q != '\0' || mode > 0777)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad octal mode '%.*s' for socket_mode",
			    CFG_MAX_SHOWN, v);
		if (mode & 0007)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
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
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad value '%.*s' for log (stderr or syslog)",
			    CFG_MAX_SHOWN, v);
		return IDEM_OK;
	case K_MYSQL_DEFAULTS_FILE:
		c->mysql_defaults_line = line;
		c->mysql_defaults_col = col;
		return cfg_set_str(p, &c->mysql_defaults_file, v);
	case K_MYSQL_GROUP:
		return cfg_set_str(p, &c->mysql_group, v);
	case K_HOST_NAME:
		if (!visible(v, 0, "", CFG_MAX_HOST))
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad host_name '%.*s' (up to %d visible ASCII bytes)",
			    CFG_MAX_SHOWN, v, CFG_MAX_HOST);
		return cfg_set_str(p, &c->host_name, v);
	case K_PROBLEM_BASE_URL:
		/* Goes into JSON and a header unescaped: visible ASCII only,
		 * no quote or backslash. */
		if (*v == '\0' || !visible(v, 0, "\"\\", 512))
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad problem_base_url '%.*s' (a URL of visible "
			    "ASCII, no quotes)", CFG_MAX_SHOWN, v);
		return cfg_set_str(p, &c->problem_base_url, v);
	case K_STATUS_PATH:
		/* A path the web server passes on, compared byte for byte. */
		if (*v != '/' || !visible(v, 0, "?%", 256))
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad status_path '%.*s' (an absolute path of "
			    "visible ASCII, no '?' or '%%')", CFG_MAX_SHOWN, v);
		return cfg_set_str(p, &c->status_path, v);
	case K_REPLICAS:
		if (!visible(v, 1, "[]", 1024))
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad replicas '%.*s' (option-file group names, "
			    "space-separated)", CFG_MAX_SHOWN, v);
		return cfg_set_str(p, &c->replicas, v);
	case K_MAX_PARAMS:
		if (cfg_parse_size(v, &sz) != 0)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad size '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		if (sz < 1024 || sz > 16 * 1024 * 1024)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "%s must be between 1K and 16M", k);
		c->max_params = sz;
		return IDEM_OK;
	case K_REPLAY_CACHE:
		if (cfg_parse_size(v, &sz) != 0)
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "bad size '%.*s' for %s", CFG_MAX_SHOWN, v, k);
		if (sz != 0 && (sz < 64 * 1024 || sz > 1024 * 1024 * 1024))
			return cfg_perr(p, IDEM_ECONFIG, line, col,
			    "%s must be 0 (off) or between 64K and 1G", k);
		c->replay_cache = sz;
		return IDEM_OK;
	case K_COUNTERS_FLUSH: dst = &c->counters_flush_ms; break;
	case K_CLIENT_TIMEOUT: dst = &c->client_timeout_ms; break;
	case K_SLEEP: dst = &c->cleanup_sleep_ms; break;
	case K_MAX_SECONDS: dst = &c->cleanup_max_ms; break;
	case K_STALE_AFTER: dst = &c->stale_after_ms; break;
	case K_COUNTERS_RETENTION: dst = &c->counters_retention_ms; break;
	case K_RUNS_RETENTION: dst = &c->runs_retention_ms; break;
	case K_MAX_LAG: dst = &c->cleanup_max_lag_ms; break;
	case K_REFRESH: dst = &c->refresh_ms; break;
	case K_CLEANUP_WARN_AFTER: dst = &c->cleanup_warn_ms; break;
	default:
		return cfg_perr(p, IDEM_ECONFIG, line, col, "internal: key %s", k);
	}
	if (parse_dur(p, id, v, &ms, line, col) != IDEM_OK)
		return IDEM_ECONFIG;
	*dst = ms;
	return IDEM_OK;
}

/* Built-in defaults of every [idempotency] key. */
enum idem_err
cfg_route_defaults(struct parser *p, struct route *r)
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
	cfg_policy_defaults(r);
	if (cfg_set_str(p, &r->key_header, "Idempotency-Key") != IDEM_OK)
		return IDEM_ENOMEM;
	for (i = 0; i < 2; i++) {
		if ((r->methods[i] = strdup(m[i])) == NULL)
			return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
		r->nmethods++;
	}
	return IDEM_OK;
}
