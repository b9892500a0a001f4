/* Config key values: durations, sizes, addresses, methods, handlers, scopes. */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cfg_int.h"

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

/* Decimal digits only, no sign; IDEM_EINVAL if none or past
 * UINT64_MAX.  OUT: *end, after the digits; *v. */
static enum idem_err
parse_u64(const char *s, const char **end, uint64_t *v)
{
	uint64_t	 n = 0;

	if (*s < '0' || *s > '9')
		return IDEM_EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return IDEM_EINVAL;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*end = s;
	*v = n;
	return IDEM_OK;
}

enum idem_err
cfg_parse_duration(const char *s, int64_t *ms)
{
	uint64_t	 n, mul;
	const char	*u;

	if (s == NULL || parse_u64(s, &u, &n) != IDEM_OK)
		return IDEM_EINVAL;
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
		return IDEM_EINVAL;
	if (n > (uint64_t)CFG_DURATION_MAX_MS / mul)
		return IDEM_EINVAL;
	*ms = (int64_t)(n * mul);
	return IDEM_OK;
}

enum idem_err
cfg_parse_size(const char *s, size_t *bytes)
{
	uint64_t	 n, mul;
	const char	*u;

	if (s == NULL || parse_u64(s, &u, &n) != IDEM_OK)
		return IDEM_EINVAL;
	if (*u == '\0')
		mul = 1;
	else if (u[1] != '\0')
		return IDEM_EINVAL;
	else if (*u == 'K' || *u == 'k')
		mul = 1024;
	else if (*u == 'M' || *u == 'm')
		mul = 1024 * 1024;
	else if (*u == 'G' || *u == 'g')
		mul = 1024 * 1024 * 1024;
	else
		return IDEM_EINVAL;
	if (n > (uint64_t)SIZE_MAX / mul)
		return IDEM_EINVAL;
	*bytes = (size_t)(n * mul);
	return IDEM_OK;
}

/* on/off, yes/no, true/false, 1/0 in any case; IDEM_EINVAL if none.
 * OUT: *b, 1 or 0. */
static enum idem_err
parse_bool(const char *s, int *b)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };
	size_t	 i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*b = 1;
			return IDEM_OK;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*b = 0;
			return IDEM_OK;
		}
	}
	return IDEM_EINVAL;
}

/* "unix:/abs" or "tcp:host:port" (host may be [v6]); 1 if well formed. */
static int
is_addr(const char *s)
{
	const char	*colon, *h;
	uint64_t	 port;
	const char	*end;
	size_t		 hlen;

	if (strncmp(s, "unix:", 5) == 0) {
		/* sun_path holds 108 bytes with its NUL. */
		return s[5] == '/' && strlen(s + 5) < 108;
	}
	if (strncmp(s, "tcp:", 4) != 0)
		return 0;
	h = s + 4;
	if ((colon = strrchr(h, ':')) == NULL)
		return 0;
	hlen = (size_t)(colon - h);
	if (hlen == 0 || hlen > 255)
		return 0;
	if (h[0] == '[' && h[hlen - 1] != ']')
		return 0;
	if (h[0] != '[' && memchr(h, ':', hlen) != NULL)
		return 0;
	return parse_u64(colon + 1, &end, &port) == IDEM_OK && *end == '\0' &&
	    port != 0 && port <= 65535;
}

static int
ok_listen(const char *s)
{
	uint64_t	 fd;
	const char	*end;

	if (strncmp(s, "fd:", 3) == 0)
		return parse_u64(s + 3, &end, &fd) == IDEM_OK && *end == '\0' &&
		    fd <= 65535;
	return is_addr(s);
}

/* "user:group", "user" or ":group", names without spaces or more colons. */
static int
ok_owner(const char *s)
{
	const char	*colon = strchr(s, ':');
	const char	*q;

	if (*s == '\0' || strcmp(s, ":") == 0)
		return 0;
	if (colon != NULL &&
	    (strchr(colon + 1, ':') != NULL || colon[1] == '\0'))
		return 0;
	for (q = s; *q != '\0'; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return 0;
	return 1;
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

static int
ok_header(const char *v)
{
	return is_token(v) && strlen(v) <= 128;
}

static int
ok_host_name(const char *v)
{
	return visible(v, 0, "", CFG_MAX_HOST);
}

/* Goes into JSON and a header unescaped: visible ASCII only, no quote or
 * backslash. */
static int
ok_problem_base_url(const char *v)
{
	return *v != '\0' && visible(v, 0, "\"\\", 512);
}

/* A path the web server passes on, compared byte for byte. */
static int
ok_status_path(const char *v)
{
	return *v == '/' && visible(v, 0, "?%", 256);
}

static int
ok_replicas(const char *v)
{
	return visible(v, 1, "[]", 1024);
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

/* "bad WHAT 'value' for KEY". */
static enum idem_err
bad_for(struct parser *p, const struct cfg_val *kv, const char *what)
{
	return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col,
	    "bad %s '%.*s' for %s", what, CFG_MAX_SHOWN, kv->v, kv->key->name);
}

/* "KEY must be ...". */
static enum idem_err
out_of_range(struct parser *p, const struct cfg_val *kv, const char *range)
{
	return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col, "%s %s",
	    kv->key->name, range);
}

/* The setters of each kind of value, dst pointing at the key's field. */

static enum idem_err
set_bool(struct parser *p, const struct cfg_val *kv, void *dst)
{
	int	 b;

	if (parse_bool(kv->v, &b) != IDEM_OK)
		return bad_for(p, kv, "boolean");
	*(int *)dst = b;
	return IDEM_OK;
}

static enum idem_err
set_int(struct parser *p, const struct cfg_val *kv, void *dst)
{
	const struct cfg_key	*k = kv->key;
	uint64_t		 n;
	const char		*end;

	if (parse_u64(kv->v, &end, &n) != IDEM_OK || *end != '\0' ||
	    n < (uint64_t)k->lo || n > (uint64_t)k->hi)
		return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col,
		    "bad number '%.*s' for %s (%d..%d)", CFG_MAX_SHOWN, kv->v,
		    k->name, (int)k->lo, (int)k->hi);
	*(int *)dst = (int)n;
	return IDEM_OK;
}

/* Well formed, at most ten years, and more than 0 where lo is 1, at
 * least lo past that. */
static enum idem_err
set_dur(struct parser *p, const struct cfg_val *kv, void *dst)
{
	const struct cfg_key	*k = kv->key;
	int64_t			 n;
	char			 least[64];

	if (cfg_parse_duration(kv->v, &n) != IDEM_OK)
		return bad_for(p, kv, "duration");
	if (n < k->lo && k->lo <= 1)
		return out_of_range(p, kv, "must be greater than 0");
	if (n < k->lo) {
		/* A minimum of whole seconds (lease). */
		snprintf(least, sizeof(least), "must be at least %llds",
		    (long long)(k->lo / 1000));
		return out_of_range(p, kv, least);
	}
	if (n > CFG_MAX_DURATION_MS)
		return out_of_range(p, kv, "must be at most 3650d");
	*(int64_t *)dst = n;
	return IDEM_OK;
}

static enum idem_err
set_size(struct parser *p, const struct cfg_val *kv, void *dst)
{
	const struct cfg_key	*k = kv->key;
	size_t			 sz;

	if (cfg_parse_size(kv->v, &sz) != IDEM_OK)
		return bad_for(p, kv, "size");
	if (!(k->zero_off && sz == 0) &&
	    (sz < (size_t)k->lo || sz > (size_t)k->hi))
		return out_of_range(p, kv, k->range);
	*(size_t *)dst = sz;
	return IDEM_OK;
}

/* The enums are stored through an int. */
_Static_assert(sizeof(enum store_err_mode) == sizeof(int) &&
    sizeof(enum fp_mode) == sizeof(int), "enum keys are int-sized");

/* One of k->words: its index. */
static enum idem_err
set_enum(struct parser *p, const struct cfg_val *kv, void *dst)
{
	const struct cfg_key	*k = kv->key;
	char			 w[16];
	unsigned		 i;

	for (i = 0; cfg_word(k->words, i, w, sizeof(w)); i++)
		if (strcmp(kv->v, w) == 0) {
			*(int *)dst = (int)i;
			return IDEM_OK;
		}
	return cfg_bad(p, kv, k->what, k->tail);
}

static enum idem_err
set_str(struct parser *p, const struct cfg_val *kv, void *dst)
{
	const struct cfg_key	*k = kv->key;

	if (k->ok != NULL && !k->ok(kv->v))
		return cfg_bad(p, kv, k->what, k->tail);
	return cfg_set_str(p, dst, kv->v);
}

/* The keys with logic of their own. */

/* One method of a methods list (wl bytes at w, column col) into word,
 * upper case. */
static enum idem_err
method_word(struct parser *p, const char *w, size_t wl, int line, int col,
    char *word)
{
	size_t	 i;

	if (wl > CFG_MAX_METHOD)
		return cfg_perr(p, IDEM_ECONFIG, line, col,
		    "method longer than %d bytes", CFG_MAX_METHOD);
	for (i = 0; i < wl; i++) {
		if (!is_tchar((unsigned char)w[i]))
			return cfg_perr(p, IDEM_ECONFIG, line, col + (int)i,
			    "bad method '%.*s'", (int)wl, w);
		word[i] = w[i] >= 'a' && w[i] <= 'z' ?
		    (char)(w[i] - 'a' + 'A') : w[i];
	}
	word[wl] = '\0';
	return IDEM_OK;
}

/* "POST PUT": blank-separated, upper-cased, each once. */
static enum idem_err
set_methods(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct route	*r = dst;
	char		*tmp[CFG_MAX_METHODS];
	char		 word[CFG_MAX_METHOD + 1];
	size_t		 n = 0, i;
	const char	*s = kv->v, *w;
	int		 col;
	enum idem_err	 er = IDEM_OK;

	while (*s != '\0') {
		while (cfg_is_ws(*s))
			s++;
		if (*s == '\0')
			break;
		for (w = s; *s != '\0' && !cfg_is_ws(*s); s++)
			;
		col = kv->col + (int)(w - kv->v);
		er = method_word(p, w, (size_t)(s - w), kv->line, col, word);
		if (er != IDEM_OK)
			goto fail;
		for (i = 0; i < n; i++)
			if (strcmp(tmp[i], word) == 0)
				break;
		if (i < n)
			continue;	/* "POST POST" means POST */
		if (n == CFG_MAX_METHODS) {
			er = cfg_perr(p, IDEM_ECONFIG, kv->line, col,
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
		er = cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col,
		    "no methods listed");
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
set_handler(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct route	*r = dst;
	const char	*v = kv->v;

	r->handler_line = kv->line;
	r->handler_col = kv->col;
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
	if (strncmp(v, "fastcgi:", 8) == 0 && is_addr(v + 8)) {
		r->handler = HANDLER_FASTCGI;
		return cfg_set_str(p, &r->upstream, v + 8);
	}
	return cfg_bad(p, kv, "handler", " (cgi:/path, script, "
	    "fastcgi:unix:/path or fastcgi:tcp:host:port)");
}

static enum idem_err
set_scope(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct route	*r = dst;
	const char	*v = kv->v;
	char		*h, *q;

	if (strcmp(v, "none") == 0 || strcmp(v, "remote_user") == 0) {
		free(r->scope_header);
		r->scope_header = NULL;
		r->scope = v[0] == 'n' ? SCOPE_NONE : SCOPE_REMOTE_USER;
		return IDEM_OK;
	}
	if (strncmp(v, "header:", 7) != 0 || !ok_header(v + 7))
		return cfg_bad(p, kv, "scope",
		    " (none, remote_user or header:NAME)");
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

/* Resolved with realpath; cfg_parse keeps a root that does not exist as
 * written, cfg_load refuses it. */
static enum idem_err
set_script_root(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct route	*r = dst;
	const char	*v = kv->v;
	char		*rp;
	struct stat	 st;

	if (v[0] != '/')
		return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col,
		    "script_root must be an absolute path");
	p->rstate->sr_line = kv->line;
	p->rstate->sr_col = kv->col;
	if ((rp = realpath(v, NULL)) == NULL) {
		if (p->check_fs)
			return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col,
			    "script_root '%.*s': %s", CFG_MAX_SHOWN, v,
			    strerror(errno));
		return cfg_set_str(p, &r->script_root, v);
	}
	if (p->check_fs && (stat(rp, &st) != 0 || !S_ISDIR(st.st_mode))) {
		free(rp);
		return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col,
		    "script_root '%.*s' is not a directory", CFG_MAX_SHOWN, v);
	}
	free(r->script_root);
	r->script_root = rp;
	return IDEM_OK;
}

/* Octal, up to 0777, with nothing for others. */
static enum idem_err
set_socket_mode(struct parser *p, const struct cfg_val *kv, void *dst)
{
	const char	*v = kv->v, *q;
	unsigned	 mode = 0;

	for (q = v; *q >= '0' && *q <= '7' && q - v < 5; q++)
		mode = mode * 8 + (unsigned)(*q - '0');
	if (q == v || *q != '\0' || mode > 0777)
		return bad_for(p, kv, "octal mode");
	if (mode & 0007)
		return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col,
		    "socket_mode %04o: socket must not be world-accessible",
		    mode);
	*(unsigned *)dst = mode;
	return IDEM_OK;
}

/* Where it was set, for cfg_check_option_file's message. */
static enum idem_err
set_mysql_defaults_file(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct cfg	*c = dst;

	c->mysql_defaults_line = kv->line;
	c->mysql_defaults_col = kv->col;
	return cfg_set_str(p, &c->mysql_defaults_file, kv->v);
}

/* Where it was set, for cfg_load_secrets' messages. */
static enum idem_err
set_secret_key_file(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct cfg	*c = dst;

	if (kv->v[0] != '/')
		return cfg_bad(p, kv, "secret_key_file", " (an absolute path)");
	c->secret_line = kv->line;
	c->secret_col = kv->col;
	return cfg_set_str(p, &c->secret_key_file, kv->v);
}

/* A string key whose position later checks name (cfg_check_gateway,
 * idemgate -t). */
static enum idem_err
set_str_at(struct parser *p, const struct cfg_val *kv, char **dst,
    int *line, int *col)
{
	*line = kv->line;
	*col = kv->col;
	return set_str(p, kv, dst);
}

static enum idem_err
set_socket_owner(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct cfg	*c = dst;

	return set_str_at(p, kv, &c->socket_owner, &c->socket_owner_line,
	    &c->socket_owner_col);
}

static enum idem_err
set_replicas(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct cfg	*c = dst;

	return set_str_at(p, kv, &c->replicas, &c->replicas_line,
	    &c->replicas_col);
}

static enum idem_err
set_status_path(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct cfg	*c = dst;

	return set_str_at(p, kv, &c->status_path, &c->status_path_line,
	    &c->status_path_col);
}

#define QUOTE_(x)	#x
#define QUOTE(x)	QUOTE_(x)
#define ROUTE(f)	offsetof(struct route, f)
#define CONF(f)		offsetof(struct cfg, f)
#define POSITIVE	1
#define GIB		((int64_t)1 << 30)

#define BOOL(n, s, off_) \
	{ .name = (n), .sects = (s), .set = set_bool, .off = (off_) }
#define INT(n, s, off_, lo_, hi_) \
	{ .name = (n), .sects = (s), .set = set_int, .off = (off_), \
	  .lo = (lo_), .hi = (hi_) }
#define DUR(n, s, off_, lo_) \
	{ .name = (n), .sects = (s), .set = set_dur, .off = (off_), \
	  .lo = (lo_) }
#define SIZE(n, s, off_, lo_, hi_, zero_off_, range_) \
	{ .name = (n), .sects = (s), .set = set_size, .off = (off_), \
	  .lo = (lo_), .hi = (hi_), .zero_off = (zero_off_), .range = (range_) }
#define ENUM(n, s, off_, words_, what_, tail_) \
	{ .name = (n), .sects = (s), .set = set_enum, .off = (off_), \
	  .words = (words_), .what = (what_), .tail = (tail_) }
#define STR(n, s, off_, ok_, what_, tail_) \
	{ .name = (n), .sects = (s), .set = set_str, .off = (off_), \
	  .ok = (ok_), .what = (what_), .tail = (tail_) }
#define OWN(n, s, set_, off_) \
	{ .name = (n), .sects = (s), .set = (set_), .off = (off_) }
/* A string with a setter of its own (set_str_at). */
#define STR_AT(n, s, set_, ok_, what_, tail_) \
	{ .name = (n), .sects = (s), .set = (set_), .ok = (ok_), \
	  .what = (what_), .tail = (tail_) }

const struct cfg_key cfg_keys[K__MAX] = {
	/* [idempotency] and [route] */
	[K_IDEMPOTENCY] = BOOL("idempotency", RI, ROUTE(idempotency)),
	[K_KEY_HEADER] = STR("key_header", RI, ROUTE(key_header), ok_header,
	    "header name", " for key_header"),
	[K_METHODS] = OWN("methods", RI, set_methods, 0),
	[K_REQUIRE_KEY] = BOOL("require_key", RI, ROUTE(require_key)),
	[K_SCOPE] = OWN("scope", RI, set_scope, 0),
	[K_TTL] = DUR("ttl", RI, ROUTE(ttl_ms), POSITIVE),
	[K_WAIT] = DUR("wait", RI, ROUTE(wait_ms), 0),
	[K_LEASE] = DUR("lease", RI, ROUTE(lease_ms), CFG_LEASE_MIN_MS),
	[K_STORE_5XX] = BOOL("store_5xx", RI, ROUTE(store_5xx)),
	[K_MAX_BODY] = SIZE("max_body", RI, ROUTE(max_body), 0, GIB, 0,
	    "must be at most 1G"),
	[K_MAX_RESPONSE] = SIZE("max_response", RI, ROUTE(max_response), 0,
	    GIB, 0, "must be at most 1G"),
	[K_ON_STORE_ERROR] = ENUM("on_store_error", RI, ROUTE(on_store_error),
	    "reject pass", "value", " for on_store_error (reject or pass)"),
	[K_TIMEOUT] = DUR("timeout", RI, ROUTE(timeout_ms), POSITIVE),
	[K_RELEASE_STATUSES] = { .name = "release_statuses", .sects = RI,
	    .set = cfg_set_release, .empty_ok = 1 },
	[K_KEY_FORMAT] = OWN("key_format", RI, cfg_set_key_format, 0),
	[K_KEYS_PER_ROUTE] = BOOL("keys_per_route", RI, ROUTE(keys_per_route)),
	[K_FP_HEADERS] = OWN("fingerprint_headers", RI, cfg_set_fp_headers, 0),
	[K_FINGERPRINT] = ENUM("fingerprint", RI, ROUTE(fingerprint),
	    "exact canonical", "fingerprint", " (exact or canonical)"),
	[K_NEW_KEYS_PER_MINUTE] = OWN("new_keys_per_minute", RI,
	    cfg_set_new_keys, ROUTE(new_keys_per_minute)),
	[K_RUN_LIMIT] = DUR("run_limit", RI, ROUTE(run_limit_ms), POSITIVE),
	[K_STORE_HEADERS_DROP] = { .name = "store_headers_drop", .sects = RI,
	    .set = cfg_set_store_drop, .empty_ok = 1 },

	/* [route] only */
	[K_HANDLER] = OWN("handler", SECT_ROUTE, set_handler, 0),
	[K_SCRIPT_ROOT] = OWN("script_root", SECT_ROUTE, set_script_root, 0),

	/* [gateway] */
	[K_LISTEN] = STR("listen", SECT_GATEWAY, CONF(listen), ok_listen,
	    "listen address", " (unix:/path, tcp:host:port or fd:N)"),
	[K_SOCKET_OWNER] = STR_AT("socket_owner", SECT_GATEWAY,
	    set_socket_owner, ok_owner, "socket_owner",
	    " (user:group, user or :group)"),
	[K_SOCKET_MODE] = OWN("socket_mode", SECT_GATEWAY, set_socket_mode,
	    CONF(socket_mode)),
	[K_THREADS] = INT("threads", SECT_GATEWAY, CONF(threads), 1, 1024),
	[K_WORKERS] = INT("workers", SECT_GATEWAY, CONF(workers), 1, 64),
	[K_LOG] = ENUM("log", SECT_GATEWAY, CONF(log_syslog), "stderr syslog",
	    "value", " for log (stderr or syslog)"),
	[K_MYSQL_DEFAULTS_FILE] = OWN("mysql_defaults_file", SECT_GATEWAY,
	    set_mysql_defaults_file, 0),
	[K_MYSQL_GROUP] = STR("mysql_group", SECT_GATEWAY, CONF(mysql_group),
	    NULL, NULL, NULL),
	[K_HOST_NAME] = STR("host_name", SECT_GATEWAY, CONF(host_name),
	    ok_host_name, "host_name",
	    " (up to " QUOTE(CFG_MAX_HOST) " visible ASCII bytes)"),
	[K_MAX_PARAMS] = SIZE("max_params", SECT_GATEWAY, CONF(max_params),
	    1024, 16 * 1024 * 1024, 0, "must be between 1K and 16M"),
	[K_COUNTERS_FLUSH] = DUR("counters_flush", SECT_GATEWAY,
	    CONF(counters_flush_ms), POSITIVE),
	[K_REPLAY_CACHE] = SIZE("replay_cache", SECT_GATEWAY,
	    CONF(replay_cache), 64 * 1024, GIB, 1,
	    "must be 0 (off) or between 64K and 1G"),
	[K_CLIENT_TIMEOUT] = DUR("client_timeout", SECT_GATEWAY,
	    CONF(client_timeout_ms), POSITIVE),
	[K_MAX_PENDING_BODY] = SIZE("max_pending_body", SECT_GATEWAY,
	    CONF(max_pending_body), 1024 * 1024, 64 * GIB, 0,
	    "must be between 1M and 64G"),
	[K_PROBLEM_BASE_URL] = STR("problem_base_url", SECT_GATEWAY,
	    CONF(problem_base_url), ok_problem_base_url, "problem_base_url",
	    " (a URL of visible ASCII, no quotes)"),
	[K_STATUS_PATH] = STR_AT("status_path", SECT_GATEWAY,
	    set_status_path, ok_status_path, "status_path",
	    " (an absolute path of visible ASCII, no '?' or '%')"),
	[K_SECRET_KEY_FILE] = OWN("secret_key_file", SECT_GATEWAY,
	    set_secret_key_file, 0),

	/* [cleanup] */
	[K_BATCH] = INT("batch", SECT_CLEANUP, CONF(cleanup_batch), 1,
	    CFG_CLEANUP_BATCH_MAX),
	[K_SLEEP] = DUR("sleep", SECT_CLEANUP, CONF(cleanup_sleep_ms), 0),
	[K_MAX_SECONDS] = DUR("max_seconds", SECT_CLEANUP,
	    CONF(cleanup_max_ms), 0),
	[K_STALE_AFTER] = DUR("stale_after", SECT_CLEANUP,
	    CONF(stale_after_ms), POSITIVE),
	[K_COUNTERS_RETENTION] = DUR("counters_retention", SECT_CLEANUP,
	    CONF(counters_retention_ms), POSITIVE),
	[K_RUNS_RETENTION] = DUR("runs_retention", SECT_CLEANUP,
	    CONF(runs_retention_ms), POSITIVE),
	[K_MAX_LAG] = DUR("max_lag", SECT_CLEANUP, CONF(cleanup_max_lag_ms), 0),
	[K_REPLICAS] = STR_AT("replicas", SECT_CLEANUP, set_replicas,
	    ok_replicas, "replicas",
	    " (option-file group names, space-separated)"),

	/* [console] */
	[K_REFRESH] = DUR("refresh", SECT_CONSOLE, CONF(refresh_ms), POSITIVE),
	[K_CLEANUP_WARN_AFTER] = DUR("cleanup_warn_after", SECT_CONSOLE,
	    CONF(cleanup_warn_ms), POSITIVE),
};

#undef BOOL
#undef INT
#undef DUR
#undef SIZE
#undef ENUM
#undef STR
#undef STR_AT
#undef OWN

enum idem_err
cfg_set_key(struct parser *p, void *base, enum key_id id, const char *v,
    int line, int col)
{
	const struct cfg_key	*k = &cfg_keys[id];
	struct cfg_val		 kv = { k, v, line, col };

	return k->set(p, &kv, (char *)base + k->off);
}

/* How many bytes a key's field has when it is a plain value, 0 if it is
 * not one. */
static size_t
plain_size(const struct cfg_key *k)
{
	if (k->set == set_bool || k->set == set_int || k->set == set_enum)
		return sizeof(int);
	if (k->set == set_dur)
		return sizeof(int64_t);
	if (k->set == set_size)
		return sizeof(size_t);
	return 0;
}

enum idem_err
cfg_fold_plain(struct parser *p, struct route *r, const struct route *d,
    uint64_t seen)
{
	const struct cfg_key	*k;
	const char		*from, *str;
	char			*to;
	size_t			 id, n;

	for (id = 0; id < K__MAX; id++) {
		k = &cfg_keys[id];
		if ((k->sects & SECT_IDEM) == 0 || !CFG_UNSET(seen, id))
			continue;
		from = (const char *)d + k->off;
		to = (char *)r + k->off;
		if ((n = plain_size(k)) != 0) {
			memcpy(to, from, n);
			continue;
		}
		str = k->set == set_str ? *(char *const *)from : NULL;
		if (str != NULL && cfg_set_str(p, (char **)to, str) != IDEM_OK)
			return IDEM_ENOMEM;
	}
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
	if (cfg_policy_defaults(p, r) != IDEM_OK)
		return IDEM_ENOMEM;
	if (cfg_set_str(p, &r->key_header, "Idempotency-Key") != IDEM_OK)
		return IDEM_ENOMEM;
	for (i = 0; i < 2; i++) {
		if ((r->methods[i] = strdup(m[i])) == NULL)
			return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
		r->nmethods++;
	}
	return IDEM_OK;
}
