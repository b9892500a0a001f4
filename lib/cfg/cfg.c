/* The INI config of idemgate, idemctl and idemtop: parse, validate, route. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cfg.h"
#include "cfg_int.h"
#include "path.h"

static const char *const sect_names[] = {
	"gateway", "idempotency", "route", "cleanup", "console",
};

static void
route_clear(struct route *r)
{
	free(r->prefix);
	free(r->program);
	free(r->script_root);
	free(r->upstream);
	free(r->key_header);
	free(r->scope_header);
	cfg_methods_free(r);
	cfg_policy_clear(r);
	memset(r, 0, sizeof(*r));
}

/* Copies what the route did not set from the [idempotency] defaults. */
static enum idem_err
route_fold(struct parser *p, struct route *r, uint64_t seen)
{
	const struct route	*d = &p->defs;
	size_t			 i;

	if (cfg_fold_plain(p, r, d, seen) != IDEM_OK)
		return IDEM_ENOMEM;
	if (CFG_UNSET(seen, K_SCOPE)) {
		r->scope = d->scope;
		if (d->scope_header != NULL && cfg_set_str(p,
		    &r->scope_header, d->scope_header) != IDEM_OK)
			return IDEM_ENOMEM;
	}
	if (CFG_UNSET(seen, K_METHODS)) {
		cfg_methods_free(r);
		for (i = 0; i < d->nmethods; i++) {
			if ((r->methods[i] = strdup(d->methods[i])) == NULL)
				return cfg_perr(p, IDEM_ENOMEM, 0, 0,
				    "out of memory");
			r->nmethods++;
		}
	}
	/* What a replay can read back whole: an answer over it is kept as
	 * a tombstone, not stored to be refused on every retry. */
	if (r->max_response > (size_t)CFG_MAX_RESPONSE_MAX) {
		r->max_response = (size_t)CFG_MAX_RESPONSE_MAX;
		r->max_response_cut = 1;
	}
	return cfg_policy_fold(p, r, d, seen);
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
	char			*norm;
	size_t			 i, ncap;
	int			 same;

	if (prefix[0] != '/')
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "route prefix '%.*s' must start with '/'", CFG_MAX_SHOWN,
		    prefix);
	if (strlen(prefix) > CFG_MAX_PREFIX)
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "route prefix longer than %d bytes", CFG_MAX_PREFIX);
	for (q = prefix; *q != '\0'; q++)
		if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f ||
		    *q == '?' || *q == '#')
			return cfg_perr(p, IDEM_ECONFIG, p->line,
			    col + (int)(q - prefix),
			    "bad character in route prefix");
	/* Requests are matched in their normal spelling (SPEC 2b): a prefix
	 * in another would match nothing, and its route's terms (a
	 * require_key, a ttl) would silently apply to no request. */
	if ((norm = path_normalize(prefix, strlen(prefix))) == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	same = strcmp(norm, prefix) == 0;
	if (!same)
		(void)cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "route prefix '%s' never matches: requests are matched as "
		    "normalised paths; write [route %s]", prefix, norm);
	free(norm);
	if (!same)
		return IDEM_ECONFIG;
	for (i = 0; i < c->nroutes; i++)
		if (strcmp(c->routes[i].prefix, prefix) == 0)
			return cfg_perr(p, IDEM_ECONFIG, p->line, col,
			    "duplicate [route %s] (first on line %d)", prefix,
			    c->routes[i].line);
	if (c->nroutes == p->cap) {
		ncap = p->cap ? p->cap * 2 : 8;
		if ((nr = realloc(c->routes, ncap * sizeof(*nr))) == NULL)
			return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
		c->routes = nr;
		if ((ns = realloc(p->rs, ncap * sizeof(*ns))) == NULL)
			return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
		p->rs = ns;
		p->cap = ncap;
	}
	nr = &c->routes[c->nroutes];
	memset(nr, 0, sizeof(*nr));
	memset(&p->rs[c->nroutes], 0, sizeof(p->rs[0]));
	if ((nr->prefix = strdup(prefix)) == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
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
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "missing ']' in section header");
	for (q = end + 1; cfg_is_ws(*q); q++)
		;
	if (*q != '\0' && *q != ';' && *q != '#')
		return cfg_perr(p, IDEM_ECONFIG, p->line, col + (int)(q - s),
		    "unexpected text after section header");
	*end = '\0';
	for (name = s + 1; cfg_is_ws(*name); name++)
		;
	for (q = end; q > name && cfg_is_ws(q[-1]); q--)
		;
	*q = '\0';
	p->route = NULL;
	p->rstate = NULL;
	p->seen = 0;
	if (strncmp(name, "route", 5) == 0 &&
	    (cfg_is_ws(name[5]) || name[5] == '\0')) {
		for (rest = name + 5; cfg_is_ws(*rest); rest++)
			;
		if (*rest == '\0')
			return cfg_perr(p, IDEM_ECONFIG, p->line, col,
			    "[route] needs a path prefix: [route /path]");
		return open_route(p, rest, col + (int)(rest - s));
	}
	for (i = 0; i < sizeof(sect_names) / sizeof(sect_names[0]); i++)
		if (i != 2 && strcmp(name, sect_names[i]) == 0)
			break;
	if (i == sizeof(sect_names) / sizeof(sect_names[0]))
		return cfg_perr(p, IDEM_ECONFIG, p->line, col + (int)(name - s),
		    "unknown section [%.*s]", CFG_MAX_SHOWN, name);
	bit = 1u << i;
	if (p->sects_seen & bit)
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "duplicate section [%s]", name);
	p->sects_seen |= bit;
	p->sect = (enum sect)bit;
	snprintf(p->sectname, sizeof(p->sectname), "%s", name);
	return IDEM_OK;
}

static int
is_key_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	    ch == '_' || (ch >= 'A' && ch <= 'Z') || ch == '-';
}

/*
 * The key of a "key = value" line (s, at column col, up to eq): a known key
 * of the current section.  Cuts s after the key.  OUT: *id.
 */
static enum idem_err
pair_key(struct parser *p, char *s, char *eq, int col, enum key_id *id)
{
	char	*kend, *q;
	size_t	 i;

	for (kend = eq; kend > s && cfg_is_ws(kend[-1]); kend--)
		;
	if (kend == s)
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "missing key before '='");
	for (q = s; q < kend; q++)
		if (!is_key_char(*q))
			return cfg_perr(p, IDEM_ECONFIG, p->line,
			    col + (int)(q - s),
			    "bad key name (expected 'key = value')");
	*kend = '\0';
	if (p->sect == SECT_NONE)
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "key '%.*s' outside of any section", CFG_MAX_SHOWN, s);
	for (i = 0; i < K__MAX; i++)
		if (strcmp(cfg_keys[i].name, s) == 0)
			break;
	if (i == K__MAX || (cfg_keys[i].sects & p->sect) == 0)
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "unknown key '%.*s' in [%s]", CFG_MAX_SHOWN, s,
		    p->sectname);
	*id = (enum key_id)i;
	return IDEM_OK;
}

static enum idem_err
missing_value(struct parser *p, int vcol, enum key_id id)
{
	return cfg_perr(p, IDEM_ECONFIG, p->line, vcol,
	    "missing value for %.*s", CFG_MAX_SHOWN, cfg_keys[id].name);
}

/* The quoted value at v ('"') of the line s (column col), unescaped in
 * place. */
static enum idem_err
quoted_value(struct parser *p, char *s, int col, char *v, enum key_id id)
{
	char	*o, *q;

	for (o = v, q = v + 1; *q != '"'; q++) {
		if (*q == '\0')
			return cfg_perr(p, IDEM_ECONFIG, p->line,
			    col + (int)(v - s), "unterminated quoted value");
		if (*q == '\\') {
			if (q[1] != '"' && q[1] != '\\')
				return cfg_perr(p, IDEM_ECONFIG, p->line,
				    col + (int)(q - s), "bad escape in quoted "
				    "value (only \\\" and \\\\)");
			q++;
		}
		*o++ = *q;
	}
	for (q++; cfg_is_ws(*q); q++)
		;
	if (*q != '\0' && *q != ';' && *q != '#')
		return cfg_perr(p, IDEM_ECONFIG, p->line, col + (int)(q - s),
		    "unexpected text after quoted value");
	*o = '\0';
	if (*v == '\0')
		return missing_value(p, col + (int)(v - s), id);
	return IDEM_OK;
}

/* The unquoted value at v (column vcol): up to a comment that follows
 * blanks, less trailing blanks. */
static enum idem_err
plain_value(struct parser *p, char *v, int vcol, enum key_id id)
{
	char	*q;

	for (q = v; *q != '\0'; q++)
		if ((*q == ';' || *q == '#') && (q == v || cfg_is_ws(q[-1])))
			break;
	while (q > v && cfg_is_ws(q[-1]))
		q--;
	*q = '\0';
	/* An empty list is a value: no status releases the key. */
	if (*v == '\0' && !cfg_keys[id].empty_ok)
		return missing_value(p, vcol, id);
	return IDEM_OK;
}

/* Each key once per section. */
static enum idem_err
mark_seen(struct parser *p, enum key_id id, int col)
{
	uint64_t	*seen, bit = (uint64_t)1 << id;

	seen = p->sect == SECT_ROUTE ? &p->rstate->seen : &p->seen;
	if (*seen & bit)
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "duplicate key '%s' in [%s]", cfg_keys[id].name,
		    p->sectname);
	*seen |= bit;
	return IDEM_OK;
}

/* A "key = value" line; s is the line from its first non-blank (column col). */
static enum idem_err
parse_pair(struct parser *p, char *s, int col)
{
	char		*eq, *v;
	int		 vcol, quoted;
	enum key_id	 id = K__MAX;
	enum idem_err	 er;
	void		*base;

	if ((eq = strchr(s, '=')) == NULL)
		return cfg_perr(p, IDEM_ECONFIG, p->line, col,
		    "expected 'key = value'");
	if ((er = pair_key(p, s, eq, col, &id)) != IDEM_OK)
		return er;
	for (v = eq + 1; cfg_is_ws(*v); v++)
		;
	vcol = col + (int)(v - s);
	if ((quoted = *v == '"'))
		er = quoted_value(p, s, col, v, id);
	else
		er = plain_value(p, v, vcol, id);
	if (er != IDEM_OK || (er = mark_seen(p, id, col)) != IDEM_OK)
		return er;
	if (p->sect == SECT_ROUTE)
		base = p->route;
	else if (p->sect == SECT_IDEM)
		base = &p->defs;
	else
		base = p->c;
	/* A quoted value's column is inside the quotes. */
	return cfg_set_key(p, base, id, v, p->line, vcol + quoted);
}

static enum idem_err
parse_line(struct parser *p, char *line, size_t len)
{
	size_t	 i;
	char	*s;

	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)line[i];

		if (ch == '\0')
			return cfg_perr(p, IDEM_ECONFIG, p->line, (int)i + 1,
			    "NUL byte");
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return cfg_perr(p, IDEM_ECONFIG, p->line, (int)i + 1,
			    "control character 0x%02x", ch);
	}
	line[len] = '\0';
	for (s = line; cfg_is_ws(*s); s++)
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
			return cfg_perr(p, IDEM_ECONFIG, r->line, 1,
			    "[route %s] has no handler", r->prefix);
		if (r->handler == HANDLER_SCRIPT && r->script_root == NULL)
			return cfg_perr(p, IDEM_ECONFIG, r->line, 1,
			    "[route %s]: handler = script needs script_root",
			    r->prefix);
		if (r->handler != HANDLER_SCRIPT && r->script_root != NULL)
			return cfg_perr(p, IDEM_ECONFIG, p->rs[i].sr_line,
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
		if (cfg_set_str(p, &c->host_name, host) != IDEM_OK)
			return IDEM_ENOMEM;
	}
	return IDEM_OK;
}

static enum idem_err
cfg_new(struct parser *p)
{
	struct cfg	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	p->c = c;
	c->socket_mode = 0660;
	c->threads = 32;
	c->workers = 2;
	c->max_params = 64 * 1024;
	c->counters_flush_ms = 5 * 1000;
	c->client_timeout_ms = 30 * 1000;
	c->max_pending_body = 64 * 1024 * 1024;
	c->replay_cache = 8 * 1024 * 1024;
	c->cleanup_batch = 1000;
	c->cleanup_sleep_ms = 0;
	c->cleanup_max_ms = 0;
	c->stale_after_ms = 3600 * 1000;
	c->counters_retention_ms = 7LL * 86400 * 1000;
	c->runs_retention_ms = 30LL * 86400 * 1000;
	c->refresh_ms = 2 * 1000;
	c->cleanup_warn_ms = 2 * 3600 * 1000;
	if (cfg_set_str(p, &c->path, p->name) != IDEM_OK ||
	    cfg_set_str(p, &c->listen,
	    "unix:/run/idemgate/idemgate.sock") != IDEM_OK ||
	    cfg_set_str(p, &c->mysql_group, "idemgate") != IDEM_OK)
		return IDEM_ENOMEM;
	return cfg_route_defaults(p, &p->defs);
}

/* A parser whose messages name name and go to err (errlen bytes); with
 * check_fs, script_root must exist. */
static void
parser_init(struct parser *p, const char *name, int check_fs, char *err,
    size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->err = err;
	p->errlen = errlen;
	p->check_fs = check_fs;
}

/* The len bytes of text through p (parser_init).  OUT: *out. */
static enum idem_err
parse_text(struct parser *p, const char *text, size_t len, struct cfg **out)
{
	char		 line[CFG_MAX_LINE + 1];
	size_t		 off = 0, ll;
	const char	*nl;
	enum idem_err	 er;

	if (p->err != NULL && p->errlen > 0)
		p->err[0] = '\0';
	if (text == NULL && len > 0)
		return cfg_perr(p, IDEM_ECONFIG, 0, 0, "no text");
	if (len > CFG_MAX_FILE) {
		er = cfg_perr(p, IDEM_ECONFIG, 0, 0, "file larger than 1 MiB");
		goto out;
	}
	if ((er = cfg_new(p)) != IDEM_OK)
		goto out;
	/* A UTF-8 byte-order mark (Windows editors write one) is no text. */
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		off = 3;
	while (off < len) {
		p->line++;
		nl = memchr(text + off, '\n', len - off);
		ll = nl != NULL ? (size_t)(nl - (text + off)) : len - off;
		if (ll > 0 && text[off + ll - 1] == '\r')
			ll--;	/* CRLF files */
		if (ll > CFG_MAX_LINE) {
			er = cfg_perr(p, IDEM_ECONFIG, p->line,
			    CFG_MAX_LINE + 1, "line longer than %d bytes",
			    CFG_MAX_LINE);
			goto out;
		}
		memcpy(line, text + off, ll);
		if ((er = parse_line(p, line, ll)) != IDEM_OK)
			goto out;
		off = nl != NULL ? (size_t)(nl - text) + 1 : len;
	}
	if ((er = finish(p)) != IDEM_OK)
		goto out;
	/* The [idempotency] defaults stay for keys outside any route
	 * (idemctl run). */
	p->c->defaults = p->defs;
	memset(&p->defs, 0, sizeof(p->defs));
	*out = p->c;
	p->c = NULL;
out:
	cfg_free(p->c);
	route_clear(&p->defs);
	free(p->rs);
	return er;
}

enum idem_err
cfg_parse(const char *text, size_t len, const char *name, struct cfg **out,
    char *err, size_t errlen)
{
	struct parser	 p;

	parser_init(&p, name != NULL ? name : "(config)", 0, err, errlen);
	return parse_text(&p, text, len, out);
}

enum idem_err
cfg_load(const char *path, struct cfg **out, char *err, size_t errlen)
{
	struct parser	 p;
	struct stat	 st;
	char		*text = NULL, why[512];
	size_t		 len = 0;
	ssize_t		 n;
	int		 fd = -1;
	enum idem_err	 er;

	parser_init(&p, path, 1, err, errlen);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		cfg_open_error(errno, path, why, sizeof(why));
		er = cfg_perr(&p, IDEM_ESYS, 0, 0, "%s", why);
		goto out;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		er = cfg_perr(&p, IDEM_ECONFIG, 0, 0, "not a regular file");
		goto out;
	}
	/* One byte past the limit tells a file that is too large. */
	if ((text = malloc(CFG_MAX_FILE + 1)) == NULL) {
		er = cfg_perr(&p, IDEM_ENOMEM, 0, 0, "out of memory");
		goto out;
	}
	while (len < CFG_MAX_FILE + 1) {
		n = read(fd, text + len, CFG_MAX_FILE + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			er = cfg_perr(&p, IDEM_ESYS, 0, 0, "%s",
			    strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	er = parse_text(&p, text, len, out);
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
	route_clear(&c->defaults);
	free(c->path);
	free(c->listen);
	free(c->socket_owner);
	free(c->mysql_defaults_file);
	free(c->mysql_group);
	free(c->host_name);
	free(c->problem_base_url);
	free(c->status_path);
	free(c->replicas);
	free(c->secret_key_file);
	if (c->secrets != NULL)
		OPENSSL_cleanse(c->secrets, c->nsecrets * sizeof(*c->secrets));
	free(c->secrets);
	free(c);
}

int
cfg_status_shadows(const char *status_path, const struct route *r)
{
	size_t	 n = strlen(r->prefix);

	if (strcmp(status_path, r->prefix) == 0)
		return 1;
	return r->prefix[n - 1] != '/' &&
	    strncmp(status_path, r->prefix, n) == 0 &&
	    strcmp(status_path + n, "/") == 0;
}

enum idem_err
cfg_check_gateway(const struct cfg *c, char *err, size_t errlen)
{
	size_t	 i;

	if (c->nroutes == 0) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: no [route] section: "
			    "idemgate has nothing to serve", c->path);
		return IDEM_ECONFIG;
	}
	for (i = 0; c->status_path != NULL && i < c->nroutes; i++) {
		if (!cfg_status_shadows(c->status_path, &c->routes[i]))
			continue;
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s:%d:%d: status_path %s "
			    "hides [route %s] (line %d): its requests would "
			    "get the status page; choose a path no route "
			    "names, such as /idemgate-status", c->path,
			    c->status_path_line, c->status_path_col,
			    c->status_path, c->routes[i].prefix,
			    c->routes[i].line);
		return IDEM_ECONFIG;
	}
	return IDEM_OK;
}

enum idem_err
cfg_set_mysql_group(struct cfg *c, const char *group)
{
	char	*g;

	if ((g = strdup(group)) == NULL)
		return IDEM_ENOMEM;
	free(c->mysql_group);
	c->mysql_group = g;
	return IDEM_OK;
}

enum idem_err
cfg_check_files(const struct cfg *c, char *err, size_t errlen)
{
	const struct route	*r;
	struct stat		 st;
	size_t			 i;
	enum idem_err		 er;

	for (i = 0; i < c->nroutes; i++) {
		r = &c->routes[i];
		if (r->handler != HANDLER_CGI)
			continue;
		if (stat(r->program, &st) != 0 || !S_ISREG(st.st_mode) ||
		    access(r->program, X_OK) != 0) {
			snprintf(err, errlen, "%s:%d:%d: cgi program %s: %s",
			    c->path, r->handler_line, r->handler_col,
			    r->program, stat(r->program, &st) != 0 ?
			    strerror(errno) : !S_ISREG(st.st_mode) ?
			    "not a regular file" : "not executable");
			return IDEM_ECONFIG;
		}
	}
	if ((er = cfg_check_option_file(c, err, errlen)) != IDEM_OK)
		return er;
	return cfg_check_replicas(c, err, errlen);
}

/* The groups the client library reads besides the one it is given. */
static const char *const optfile_client_groups[] = {
	"client", "client-server", "client-mariadb",
};

static int	optfile_has(const char *, const char *, int);
static int	optfile_includes_bad(const char *, char *, size_t);

enum idem_err
cfg_check_option_group(const struct cfg *c, const char *group, char *err,
    size_t errlen)
{
	char		 why[512];
	struct stat	 st;
	int		 fd;

	if (c->mysql_defaults_file == NULL)
		return IDEM_OK;
	/* Opened, not just looked at, and a file, not a directory: MySQL
	 * would fall back to its default socket without a word.
	 * O_NONBLOCK: a FIFO is refused below, not waited on. */
	if ((fd = open(c->mysql_defaults_file, O_RDONLY | O_CLOEXEC |
	    O_NONBLOCK)) < 0) {
		cfg_open_error(errno, c->mysql_defaults_file, why,
		    sizeof(why));
		goto refuse;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(why, sizeof(why), "not a regular file");
		goto refuse;
	}
	close(fd);
	/* What it includes must be there too: a password kept in an
	 * included file that cannot be read logs in without one. */
	if (group == NULL && optfile_includes_bad(c->mysql_defaults_file, why,
	    sizeof(why)))
		goto refuse;
	if (group == NULL || optfile_has(c->mysql_defaults_file, group, 1))
		return IDEM_OK;
	snprintf(why, sizeof(why), "no [%s] group (nor [client]): nothing "
	    "says where the server is", group);
refuse:
	snprintf(err, errlen, "%s:%d:%d: mysql_defaults_file %s: %s (the "
	    "default socket is not tried)", c->path, c->mysql_defaults_line,
	    c->mysql_defaults_col, c->mysql_defaults_file, why);
	return IDEM_ECONFIG;
}

enum idem_err
cfg_check_option_db(const struct cfg *c, const char *group, char *err,
    size_t errlen)
{
	char	 db[256];

	if (c->mysql_defaults_file == NULL || group == NULL ||
	    (cfg_option_file_value(c->mysql_defaults_file, group, "database",
	    db, sizeof(db)) == 1 && db[0] != '\0'))
		return IDEM_OK;
	snprintf(err, errlen, "%s:%d:%d: mysql_defaults_file %s: no database "
	    "= in [%s] (nor [client]): no statement would find its table",
	    c->path, c->mysql_defaults_line, c->mysql_defaults_col,
	    c->mysql_defaults_file, group);
	return IDEM_ECONFIG;
}

enum idem_err
cfg_check_option_file(const struct cfg *c, char *err, size_t errlen)
{
	char		 group[256];
	unsigned	 i;
	enum idem_err	 er;

	if ((er = cfg_check_option_group(c, NULL, err, errlen)) != IDEM_OK)
		return er;
	for (i = 0; cfg_word(c->mysql_group, i, group, sizeof(group)); i++)
		if ((er = cfg_check_option_group(c, group, err, errlen)) !=
		    IDEM_OK ||
		    (er = cfg_check_option_db(c, group, err, errlen)) !=
		    IDEM_OK)
			return er;
	return IDEM_OK;
}

enum idem_err
cfg_check_replicas(const struct cfg *c, char *err, size_t errlen)
{
	char		 group[256];
	unsigned	 i;

	/* A replica's own group: without it (the client groups alone)
	 * cleanup would ask the primary how far behind it is. */
	if (c->mysql_defaults_file == NULL || c->replicas == NULL)
		return IDEM_OK;
	for (i = 0; cfg_word(c->replicas, i, group, sizeof(group)); i++)
		if (!optfile_has(c->mysql_defaults_file, group, 0)) {
			snprintf(err, errlen, "%s:%d:%d: replicas: no [%s] "
			    "group in mysql_defaults_file %s", c->path,
			    c->replicas_line, c->replicas_col, group,
			    c->mysql_defaults_file);
			return IDEM_ECONFIG;
		}
	return IDEM_OK;
}

/* Nesting allowed for !include: a file that includes itself stops. */
#define CFG_OPT_INCLUDE_DEPTH	8

/* What a walk over an option file looks for: group's header, or (key
 * set) the last value key has in it; with clients, the client groups
 * count as group. */
struct optscan {
	const char	*group;
	int		 clients;
	const char	*key;		/* NULL: the header is enough */
	int		 found;
	char		*val;		/* OUT: key's value */
	size_t		 vallen;
	char		 bad[PATH_MAX];	/* OUT: the first !include or
					 * !includedir not read ... */
	int		 bad_errno;	/* ... and why */
	int		 in_dir;	/* reading an !includedir's files */
};

/* Notes the first included file or directory the walk could not read. */
static void
optfile_bad(struct optscan *sc, const char *what, int err)
{
	if (sc->bad[0] != '\0')
		return;
	snprintf(sc->bad, sizeof(sc->bad), "%s", what);
	sc->bad_errno = err;
}

static void	optfile_scan(const char *, struct optscan *, int);

/* !includedir DIR: the *.cnf files in it, as the client library reads. */
static void
optfile_dir_scan(const char *dir, struct optscan *sc, int depth)
{
	struct dirent	*de;
	DIR		*d;
	char		 path[PATH_MAX];
	size_t		 n;

	if ((d = opendir(dir)) == NULL) {
		/* One that is not there holds nothing (distributions name
		 * directories a host may lack); one it cannot read may. */
		if (errno != ENOENT)
			optfile_bad(sc, dir, errno);
		return;
	}
	while (!(sc->found && sc->key == NULL) && (de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (n < 5 || strcmp(de->d_name + n - 4, ".cnf") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* What a directory holds may be another program's (a
		 * server's 0640 cnf): one not read is not refused. */
		sc->in_dir++;
		optfile_scan(path, sc, depth + 1);
		sc->in_dir--;
	}
	closedir(d);
}

/*
 * A "key = value" line's value into sc when its key is sc's, as the
 * client library reads it: the rest of the line without its outer blanks
 * (no comment: '#' is part of it), one leading quote and one trailing
 * quote dropped, and the escapes \n \t \r \b \s \" \' \\ taken (any
 * other backslash stays).
 */
static void
optfile_value(char *line, struct optscan *sc)
{
	static const char	 from[] = "ntrbs\"'\\", to[] = "\n\t\r\b \"'\\";
	char			*eq, *k, *v, *end, *w, *start;
	const char		*e;

	if ((eq = strchr(line, '=')) == NULL)
		return;
	for (k = eq; k > line && (k[-1] == ' ' || k[-1] == '\t'); k--)
		;
	if ((size_t)(k - line) != strlen(sc->key) ||
	    strncmp(line, sc->key, (size_t)(k - line)) != 0)
		return;
	v = eq + 1 + strspn(eq + 1, " \t");
	end = v + strlen(v);
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end > v && (*v == '\'' || *v == '"')) {
		v++;
		if (end > v && (end[-1] == '\'' || end[-1] == '"'))
			end--;
	}
	for (start = w = v; v < end; v++) {
		if (*v == '\\' && v + 1 < end &&
		    (e = strchr(from, v[1])) != NULL) {
			*w++ = to[e - from];
			v++;
		} else
			*w++ = *v;
	}
	*w = '\0';
	/* -1: the value does not fit (a later one may still). */
	sc->found = snprintf(sc->val, sc->vallen, "%s", start) <
	    (int)sc->vallen ? 1 : -1;
}

/* One line of an option file.  Read as MariaDB Connector/C reads it: a
 * header's name runs to the first ']' (what follows is a comment),
 * blanks before the ']' dropped, not those after the '['; !include and
 * !includedir take their path after a space.  *in: inside sc's group. */
static void
optfile_line(char *line, struct optscan *sc, int *in, int depth)
{
	char	*end;
	size_t	 n, i;
	int	 saved;

	line += strspn(line, " \t");
	n = strlen(line);
	while (n > 0 && strchr(" \t\r\n", line[n - 1]) != NULL)
		line[--n] = '\0';
	if (line[0] == '[') {
		if ((end = strchr(line, ']')) == NULL)
			return;
		line++;
		while (end > line && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		*end = '\0';
		*in = strcmp(line, sc->group) == 0;
		for (i = 0; sc->clients && !*in && i < sizeof(
		    optfile_client_groups) / sizeof(optfile_client_groups[0]);
		    i++)
			*in = strcmp(line, optfile_client_groups[i]) == 0;
		if (*in && sc->key == NULL)
			sc->found = 1;
	} else if (strncmp(line, "!includedir ", 12) == 0)
		optfile_dir_scan(line + 12 + strspn(line + 12, " "), sc,
		    depth);
	else if (strncmp(line, "!include ", 9) == 0) {
		/* Named outright, even from a directory's file: refused
		 * if it cannot be read. */
		saved = sc->in_dir;
		sc->in_dir = 0;
		optfile_scan(line + 9 + strspn(line + 9, " "), sc, depth + 1);
		sc->in_dir = saved;
	}
	else if (*in && sc->key != NULL)
		optfile_value(line, sc);
}

static void
optfile_scan(const char *file, struct optscan *sc, int depth)
{
	FILE	*f;
	char	 line[4096];	/* as the client library reads */
	int	 in = 0;

	if (depth > CFG_OPT_INCLUDE_DEPTH)
		return;
	if ((f = fopen(file, "re")) == NULL) {
		if (depth > 0 && sc->in_dir == 0)
			optfile_bad(sc, file, errno);
		return;
	}
	while (!(sc->found && sc->key == NULL) &&
	    fgets(line, sizeof(line), f) != NULL)
		optfile_line(line, sc, &in, depth);
	fclose(f);
}

/* 1 if file has group's header (or, with clients, a client group's),
 * in one read. */
static int
optfile_has(const char *file, const char *group, int clients)
{
	struct optscan	 sc = { .group = group, .clients = clients };

	if (file == NULL || group == NULL)
		return 0;
	optfile_scan(file, &sc, 0);
	return sc.found;
}

/* 1 and why when file includes a file or directory that cannot be read
 * (walked whole: no group is looked for). */
static int
optfile_includes_bad(const char *file, char *why, size_t whylen)
{
	struct optscan	 sc;

	memset(&sc, 0, sizeof(sc));
	sc.group = "\n";		/* no header names it */
	optfile_scan(file, &sc, 0);
	if (sc.bad[0] == '\0')
		return 0;
	snprintf(why, whylen, "it includes %.400s: %s", sc.bad,
	    strerror(sc.bad_errno));
	return 1;
}

int
cfg_option_file_has_group(const char *file, const char *group)
{
	return optfile_has(file, group, 0);
}

int
cfg_option_file_value(const char *file, const char *group, const char *key,
    char *val, size_t vallen)
{
	/* A value comes from the client groups too, as the library reads
	 * them: the last one in the file wins. */
	struct optscan	 sc = { .group = group, .clients = 1, .key = key,
	    .val = val, .vallen = vallen };

	if (file == NULL || group == NULL || key == NULL || vallen == 0)
		return 0;
	optfile_scan(file, &sc, 0);
	return sc.found;
}

int64_t
cfg_route_wait_ms(const struct cfg *c, const char *route)
{
	size_t	 i;

	for (i = 0; i < c->nroutes; i++)
		if (strcmp(c->routes[i].prefix, route) == 0)
			return c->routes[i].wait_ms;
	if (strncmp(route, "job:", 4) == 0)
		return c->defaults.wait_ms;
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
		if (r->prefix[n - 1] == '/' || path[n] == '\0' ||
		    path[n] == '/')
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
