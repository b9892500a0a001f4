/* Request policy keys (SPEC section 9): statuses, key rules, fingerprints. */
#include <sys/stat.h>

#include <ctype.h>
#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cfg_int.h"

#define MAX_KEYS_PER_MINUTE	1000000

static void
release_set(struct route *r, int lo, int hi)
{
	int	 s;

	for (s = lo; s <= hi && s < 600; s++)
		r->release[s / 8] |= (unsigned char)(1u << (s % 8));
}

/* The next item of a list separated by spaces, tabs or commas: its start
 * (advancing *v past it) and length in *n; NULL at the end. */
static const char *
next_item(const char **v, size_t *n)
{
	const char	*p = *v;

	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	for (*n = 0; p[*n] != '\0' && p[*n] != ' ' && p[*n] != '\t' &&
	    p[*n] != ','; (*n)++)
		;
	*v = p + *n;
	return *n > 0 ? p : NULL;
}

/* Keeps one header name of a list (n bytes, checked) in r. */
typedef enum idem_err hdr_add_fn(struct parser *p, struct route *r,
    const char *name, size_t n);

/* A list of header names in a route: where it counts them, how many it
 * takes, the bytes besides letters and digits a name may have, how it
 * keeps one. */
struct hdr_list {
	const size_t	*count;
	size_t		 max;
	const char	*punct;
	hdr_add_fn	*add;
};

/*
 * Walks kv's header names, space or comma separated (empty items
 * skipped), refusing more than l->max names, one over 128 bytes or one
 * with a byte neither alphanumeric nor in l->punct, with messages that
 * name kv's key; hands each good one to l->add.
 */
static enum idem_err
header_list(struct parser *p, const struct cfg_val *kv, struct route *r,
    const struct hdr_list *l)
{
	const char	*v = kv->v, *item;
	const char	*key = kv->key->name;
	size_t		 n, i;
	enum idem_err	 er;

	while ((item = next_item(&v, &n)) != NULL) {
		if (*l->count == l->max || n > 128)
			return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col,
			    "%s: at most %zu names of 128 bytes", key, l->max);
		for (i = 0; i < n; i++)
			if (!isalnum((unsigned char)item[i]) &&
			    strchr(l->punct, item[i]) == NULL)
				return cfg_perr(p, IDEM_ECONFIG, kv->line,
				    kv->col, "bad header name in %s '%.*s'",
				    key, (int)n, item);
		if ((er = l->add(p, r, item, n)) != IDEM_OK)
			return er;
	}
	return IDEM_OK;
}

int64_t
cfg_run_ms(const struct route *r)
{
	if (r->handler != HANDLER_FASTCGI)
		return r->timeout_ms + CFG_KILL_GRACE_MS;
	if (r->run_limit_ms <= 0)
		return -1;
	return r->run_limit_ms + r->run_limit_ms / 3 + CFG_KILL_GRACE_MS;
}

int64_t
cfg_lease_margin_ms(int64_t lease_ms)
{
	int64_t	 m = lease_ms / 5;

	if (m < 300)
		m = 300;
	if (m > 5000)
		m = 5000;
	if (m > lease_ms / 2)
		m = lease_ms / 2;
	return m;
}

int
cfg_optfile_exposed(const struct cfg *c, char *why, size_t len)
{
	struct stat	 sb;

	if (c->mysql_defaults_file == NULL ||
	    stat(c->mysql_defaults_file, &sb) != 0 ||
	    (sb.st_mode & (S_IROTH | S_IWGRP | S_IWOTH)) == 0)
		return 0;
	snprintf(why, len, "mysql_defaults_file %s is %s by others (mode "
	    "%04o): it holds the store's password; chmod 0640 (or 0600)",
	    c->mysql_defaults_file, sb.st_mode & (S_IWGRP | S_IWOTH) ?
	    "writable" : "readable", (unsigned)(sb.st_mode & 07777));
	return 1;
}

int
cfg_warnings(const struct cfg *c, FILE *f)
{
	const struct route	*r;
	size_t			 i;
	int			 n = 0;
	char			 why[PATH_MAX + 160];

	if (cfg_optfile_exposed(c, why, sizeof(why))) {
		fprintf(f, "%s:%d:%d: warning: %s\n", c->path,
		    c->mysql_defaults_line, c->mysql_defaults_col, why);
		n++;
	}

	for (i = 0; i < c->nroutes; i++) {
		int64_t	 run_ms;

		r = &c->routes[i];
		if (r->max_response_cut) {
			fprintf(f, "%s:%d:1: warning: route %s: max_response "
			    "above 64M taken as 64M: a replay reads a stored "
			    "answer back whole, 64M at most; a larger one is "
			    "kept as a tombstone\n", c->path, r->line,
			    r->prefix);
			n++;
		}
		run_ms = r->handler == HANDLER_FASTCGI ? r->run_limit_ms :
		    r->timeout_ms;
		if (r->idempotency && run_ms > 0 && r->ttl_ms < run_ms) {
			/* A finished key whose run may go on lives until
			 * its run deadline whatever its ttl (TTL_END,
			 * lib/store/store_sql.c): such a ttl does not say
			 * how long those keys live. */
			fprintf(f, "%s:%d:%d: warning: route %s: ttl is "
			    "shorter than a run may last (%s): a finished "
			    "key whose run may go on is kept past it, until "
			    "its run deadline\n", c->path,
			    r->handler_line, r->handler_col, r->prefix,
			    r->handler == HANDLER_FASTCGI ? "run_limit" :
			    "timeout");
			n++;
		}
		if (r->handler != HANDLER_FASTCGI || !r->idempotency ||
		    r->run_limit_ms > 0)
			continue;
		fprintf(f, "%s:%d:%d: warning: route %s: fastcgi: upstream "
		    "without run_limit: its runs count as unbounded and its "
		    "keys never expire nor are taken over; set run_limit to "
		    "the application's hard limit (PHP-FPM: "
		    "request_terminate_timeout)\n", c->path, r->handler_line,
		    r->handler_col, r->prefix);
		n++;
	}
	return n;
}

int
cfg_releases(const struct route *r, int status)
{
	if (status < 0 || status >= 600)
		return 0;
	if (r->store_5xx && status >= 500)
		return 0;
	return (r->release[status / 8] >> (status % 8)) & 1;
}

/* "429 408 5xx" (codes 200..599 or classes 2xx..5xx, spaces or commas);
 * empty: no status releases the key. */
enum idem_err
cfg_set_release(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct route	*r = dst;
	const char	*v = kv->v;
	char		 tok[16];
	const char	*item;
	size_t		 n;
	int		 code;

	memset(r->release, 0, sizeof(r->release));
	while ((item = next_item(&v, &n)) != NULL) {
		if (n >= sizeof(tok))
			n = sizeof(tok) - 1;	/* quoted cut: refused below */
		memcpy(tok, item, n);
		tok[n] = '\0';
		if (n == 3 && tok[0] >= '2' && tok[0] <= '5' &&
		    (tok[1] == 'x' || tok[1] == 'X') &&
		    (tok[2] == 'x' || tok[2] == 'X')) {
			code = (tok[0] - '0') * 100;
			release_set(r, code, code + 99);
			continue;
		}
		if (n != 3 || !isdigit((unsigned char)tok[0]) ||
		    !isdigit((unsigned char)tok[1]) ||
		    !isdigit((unsigned char)tok[2]))
			goto bad;
		code = atoi(tok);
		if (code < 200 || code > 599)
			goto bad;
		release_set(r, code, code);
	}
	return IDEM_OK;
bad:
	return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col, "bad "
	    "release_statuses '%s' (codes 200..599 or classes like 5xx)", tok);
}

static void
regex_clear(struct route *r)
{
	if (r->key_re != NULL) {
		regfree(r->key_re);
		free(r->key_re);
		r->key_re = NULL;
	}
	free(r->key_regex);
	r->key_regex = NULL;
}

static enum idem_err
set_regex(struct parser *p, struct route *r, const char *src, int line,
    int col)
{
	regex_t		*re;
	char		 msg[128];
	int		 rc;

	if ((re = calloc(1, sizeof(*re))) == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	if ((rc = regcomp(re, src, REG_EXTENDED | REG_NOSUB)) != 0) {
		regerror(rc, re, msg, sizeof(msg));
		free(re);
		return cfg_perr(p, IDEM_ECONFIG, line, col, "bad key_format "
		    "regex '%.*s': %s", CFG_MAX_SHOWN, src, msg);
	}
	regex_clear(r);
	if (cfg_set_str(p, &r->key_regex, src) != IDEM_OK) {
		regfree(re);
		free(re);
		return IDEM_ENOMEM;
	}
	r->key_re = re;
	r->key_format = KEYFMT_REGEX;
	return IDEM_OK;
}

/* any, uuid, or /ERE/ */
enum idem_err
cfg_set_key_format(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct route	*r = dst;
	const char	*v = kv->v;
	char		*src;
	size_t		 n = strlen(v);
	enum idem_err	 er;

	if (strcmp(v, "any") == 0 || strcmp(v, "uuid") == 0) {
		regex_clear(r);
		r->key_format = v[0] == 'a' ? KEYFMT_ANY : KEYFMT_UUID;
		return IDEM_OK;
	}
	if (n < 3 || v[0] != '/' || v[n - 1] != '/')
		return cfg_bad(p, kv, "key_format", " (any, uuid or /regex/)");
	if ((src = strndup(v + 1, n - 2)) == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	er = set_regex(p, r, src, kv->line, kv->col);
	free(src);
	return er;
}

static int
is_hex(char ch)
{
	return isxdigit((unsigned char)ch) != 0;
}

int
cfg_key_format_ok(const struct route *r, const char *key, size_t len)
{
	size_t	 i;

	switch (r->key_format) {
	case KEYFMT_UUID:
		if (len != 36)
			return 0;
		for (i = 0; i < 36; i++) {
			if (i == 8 || i == 13 || i == 18 || i == 23) {
				if (key[i] != '-')
					return 0;
			} else if (!is_hex(key[i]))
				return 0;
		}
		return 1;
	case KEYFMT_REGEX:
		/* key_parse output is NUL-terminated and has no NUL. */
		return r->key_re != NULL &&
		    regexec(r->key_re, key, 0, NULL, 0) == 0;
	default:
		return 1;
	}
}

/* Keeps a lower-case copy of the n bytes of name in r's
 * fingerprint_headers. */
static enum idem_err
fp_header_add(struct parser *p, struct route *r, const char *name,
    size_t n)
{
	char	*h;
	size_t	 i;

	if ((h = strndup(name, n)) == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	for (i = 0; i < n; i++)
		h[i] = (char)tolower((unsigned char)h[i]);
	r->fp_headers[r->nfp_headers++] = h;
	return IDEM_OK;
}

/* Header names (letters, digits, '-' and '_'), space or comma separated;
 * kept lower case. */
enum idem_err
cfg_set_fp_headers(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct route	*r = dst;
	size_t		 i;

	for (i = 0; i < r->nfp_headers; i++)
		free(r->fp_headers[i]);
	r->nfp_headers = 0;
	return header_list(p, kv, r, &(struct hdr_list){ &r->nfp_headers,
	    CFG_MAX_FP_HEADERS, "-_", fp_header_add });
}

/* 0..MAX_KEYS_PER_MINUTE; dst is the route's new_keys_per_minute. */
enum idem_err
cfg_set_new_keys(struct parser *p, const struct cfg_val *kv, void *dst)
{
	const char	*v = kv->v;
	char		*end;
	unsigned long	 n;

	n = strtoul(v, &end, 10);
	if (*v < '0' || *v > '9' || *end != '\0' || n > MAX_KEYS_PER_MINUTE)
		return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col, "bad "
		    "new_keys_per_minute '%.*s' (0..%d)", CFG_MAX_SHOWN, v,
		    MAX_KEYS_PER_MINUTE);
	*(uint32_t *)dst = (uint32_t)n;
	return IDEM_OK;
}

/* Frees r's store_headers_drop names. */
static void
store_drop_clear(struct route *r)
{
	size_t	 i;

	for (i = 0; i < r->nstore_drop; i++)
		free(r->store_drop[i]);
	r->nstore_drop = 0;
}

/* Appends a copy of the n bytes of name to r's store_headers_drop. */
static enum idem_err
store_drop_add(struct parser *p, struct route *r, const char *name, size_t n)
{
	char	*h;

	if ((h = strndup(name, n)) == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	r->store_drop[r->nstore_drop++] = h;
	return IDEM_OK;
}

/* Header names (RFC 9110 tokens), space or comma separated; empty: every
 * header is stored. */
enum idem_err
cfg_set_store_drop(struct parser *p, const struct cfg_val *kv, void *dst)
{
	struct route	*r = dst;

	store_drop_clear(r);
	return header_list(p, kv, r, &(struct hdr_list){ &r->nstore_drop,
	    CFG_MAX_STORE_DROP, "!#$%&'*+-.^_`|~", store_drop_add });
}

enum idem_err
cfg_policy_defaults(struct parser *p, struct route *r)
{
	memset(r->release, 0, sizeof(r->release));
	release_set(r, 500, 599);
	/* What replays have never repeated: a session cookie is the first
	 * client's, not every retry's. */
	store_drop_clear(r);
	if (store_drop_add(p, r, "Set-Cookie", 10) != IDEM_OK ||
	    store_drop_add(p, r, "Set-Cookie2", 11) != IDEM_OK)
		return IDEM_ENOMEM;
	return IDEM_OK;
}

void
cfg_policy_clear(struct route *r)
{
	size_t	 i;

	regex_clear(r);
	for (i = 0; i < r->nfp_headers; i++)
		free(r->fp_headers[i]);
	r->nfp_headers = 0;
	store_drop_clear(r);
}

enum idem_err
cfg_policy_fold(struct parser *p, struct route *r, const struct route *d,
    uint64_t seen)
{
	size_t		 i;
	enum idem_err	 er;

	if (CFG_UNSET(seen, K_RELEASE_STATUSES))
		memcpy(r->release, d->release, sizeof(r->release));
	if (CFG_UNSET(seen, K_NEW_KEYS_PER_MINUTE))
		r->new_keys_per_minute = d->new_keys_per_minute;
	if (CFG_UNSET(seen, K_KEY_FORMAT)) {
		r->key_format = d->key_format;
		if (d->key_format == KEYFMT_REGEX &&
		    (er = set_regex(p, r, d->key_regex, 0, 0)) != IDEM_OK)
			return er;
	}
	if (CFG_UNSET(seen, K_FP_HEADERS))
		for (i = 0; i < d->nfp_headers; i++) {
			if ((r->fp_headers[i] = strdup(d->fp_headers[i])) ==
			    NULL)
				return cfg_perr(p, IDEM_ENOMEM, 0, 0,
				    "out of memory");
			r->nfp_headers++;
		}
	if (CFG_UNSET(seen, K_STORE_HEADERS_DROP))
		for (i = 0; i < d->nstore_drop; i++)
			if (store_drop_add(p, r, d->store_drop[i],
			    strlen(d->store_drop[i])) != IDEM_OK)
				return IDEM_ENOMEM;
	return IDEM_OK;
}
