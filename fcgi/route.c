/* Which route serves a request: its normalised path, for scripts the file. */
#include <sys/stat.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgi.h"
#include "log.h"
#include "params.h"
#include "path.h"
#include "request.h"
#include "route.h"

/*
 * SCRIPT_FILENAME, less the "proxy:fcgi://host:port" that Apache's
 * mod_proxy_fcgi puts in front of the file (as PHP-FPM strips it).
 */
static const char *
route_script_param(struct request *r)
{
	const char	*sf = request_param(r->envp, "SCRIPT_FILENAME");
	const char	*p;

	if (sf == NULL || strncmp(sf, "proxy:", 6) != 0)
		return sf;
	if ((p = strstr(sf, "://")) == NULL ||
	    (p = strchr(p + 3, '/')) == NULL)
		return sf;
	while (p[1] == '/')
		p++;
	return p;
}

/*
 * The script was found consumed bytes into PATH_INFO: the program sees
 * RFC 3875's split at it (4.1.13, 4.1.5), SCRIPT_NAME naming it and
 * PATH_INFO what follows, as the web server would have split it had it
 * known; PATH_TRANSLATED, when given, follows PATH_INFO (4.1.6).
 */
static void
route_split(struct request *r, const char *sn, const char *pi,
    size_t consumed)
{
	const char	*dr = request_param(r->envp, "DOCUMENT_ROOT");
	const char	*tail = pi + consumed;
	char		*e[ROUTE_SPLIT_MAX] = { NULL, NULL, NULL };
	int		 n = 0, i;

	if (asprintf(&e[0], "SCRIPT_NAME=%s%.*s", sn != NULL ? sn : "",
	    (int)consumed, pi) < 0)
		e[0] = NULL;
	if (asprintf(&e[1], "PATH_INFO=%s", tail) < 0)
		e[1] = NULL;
	n = 2;
	if (request_param(r->envp, "PATH_TRANSLATED") != NULL) {
		if (asprintf(&e[2], "PATH_TRANSLATED=%s%s", *tail != '\0' &&
		    dr != NULL ? dr : "", tail) < 0)
			e[2] = NULL;
		n = 3;
	}
	for (i = 0; i < n && e[i] != NULL; i++)
		;
	if (i < n) {
		/* out of memory: the web server's split, as it was */
		for (i = 0; i < n; i++)
			free(e[i]);
		return;
	}
	for (i = 0; i < n; i++)
		r->script_env[i] = e[i];
}

/*
 * Without SCRIPT_FILENAME, fcgiwrap's other way (fcgiwrap(8)): the file is
 * DOCUMENT_ROOT + SCRIPT_NAME, and what of SCRIPT_NAME + PATH_INFO lies
 * past it is the PATH_INFO.  Sets *sf to DOCUMENT_ROOT and *pi to
 * SCRIPT_NAME + PATH_INFO (r->script_walk, owned; route_set_script
 * freed any before) for route_script's walk; -1 when either is missing.
 */
static int
route_docroot_walk(struct request *r, const char **sf, const char **pi)
{
	const char	*dr = request_param(r->envp, "DOCUMENT_ROOT");
	const char	*sn = request_param(r->envp, "SCRIPT_NAME");
	const char	*info = request_param(r->envp, "PATH_INFO");
	size_t		 dl;
	int		 n;

	if (dr == NULL || *dr != '/' || sn == NULL || *sn == '\0')
		return -1;
	/* The root without its trailing slashes ("/" stays). */
	dl = strlen(dr);
	while (dl > 1 && dr[dl - 1] == '/')
		dl--;
	n = asprintf(&r->script_walk, "%.*s%c%s%s%s", (int)dl, dr, '\0',
	    *sn == '/' ? "" : "/", sn, info != NULL ? info : "");
	if (n < 0) {
		r->script_walk = NULL;
		return -1;
	}
	*sf = r->script_walk;
	*pi = r->script_walk + dl + 1;
	return 0;
}

/*
 * Finds the script to run like fcgiwrap: SCRIPT_FILENAME itself, or, when
 * the web server split the path elsewhere (lighttpd's prefix mapping gives
 * SCRIPT_FILENAME = root/dir and PATH_INFO = /file.cgi/more), the longest
 * prefix of SCRIPT_FILENAME + PATH_INFO that resolves; without
 * SCRIPT_FILENAME, of DOCUMENT_ROOT + SCRIPT_NAME + PATH_INFO.  The error
 * of the longest candidate is the answer when none does.  r->script_tail
 * is set to what of PATH_INFO lies beyond the script.
 */
static enum idem_err
route_script(const struct route *rt, struct request *r, char *out,
    size_t outlen)
{
	const char	*sf, *pi, *sn;
	char		 cand[PATH_MAX], *slash, why[PATH_MAX + 160];
	char		 firstwhy[PATH_MAX + 160];
	size_t		 sflen;
	enum idem_err	 er, first;

	sf = route_script_param(r);
	pi = request_param(r->envp, "PATH_INFO");
	sn = request_param(r->envp, "SCRIPT_NAME");
	if (sf == NULL || *sf == '\0') {
		if (route_docroot_walk(r, &sf, &pi) != 0) {
			log_warn("%s: no SCRIPT_FILENAME (nor DOCUMENT_ROOT "
			    "and SCRIPT_NAME)", r->tag);
			return IDEM_ENOTFOUND;
		}
		sn = "";
	}
	r->script_tail = pi != NULL && *pi == '/' ? pi : "";
	why[0] = firstwhy[0] = '\0';
	er = cgi_script_resolve_why(rt->script_root, sf, out, outlen, why,
	    sizeof(why));
	if (er == IDEM_OK || pi == NULL || *pi != '/')
		goto out;
	sflen = strlen(sf);
	if (snprintf(cand, sizeof(cand), "%s%s", sf, pi) >= (int)sizeof(cand))
		goto out;
	first = IDEM_OK;
	while (strlen(cand) > sflen) {
		er = cgi_script_resolve_why(rt->script_root, cand, out,
		    outlen, why, sizeof(why));
		if (er == IDEM_OK) {
			r->script_tail = pi + (strlen(cand) - sflen);
			route_split(r, sn, pi, strlen(cand) - sflen);
			goto out;
		}
		if (first == IDEM_OK) {
			first = er;
			memcpy(firstwhy, why, sizeof(firstwhy));
		}
		if (er != IDEM_ENOTFOUND)
			break;
		if ((slash = strrchr(cand, '/')) == NULL)
			break;
		*slash = '\0';
	}
	er = first;
	memcpy(why, firstwhy, sizeof(why));
out:
	if (er != IDEM_OK) {
		log_warn("%s: script %s%s refused: %s (%s)", r->tag, sf,
		    pi != NULL ? pi : "", idem_strerror(er), why);
		if (er != IDEM_ENOTFOUND)
			er = IDEM_EFORBIDDEN;
	}
	return er;
}

/*
 * Where the web server mapped the request's path: the URL prefix url
 * ("" for the whole tree; no trailing slash) onto the directory dir, as
 * SCRIPT_NAME and SCRIPT_FILENAME show it (their common tail, from a
 * slash: Apache's Alias /api/ /srv/legacy/, lighttpd's alias.url, nginx's
 * alias, or a plain document root); other paths under docroot
 * (DOCUMENT_ROOT).  Both realpath'd; "" when not known.
 */
struct route_map {
	char	 url[PATH_MAX];
	char	 dir[PATH_MAX];
	char	 docroot[PATH_MAX];
};

/* The request's route_map into m: 0, or -1 when neither part is known. */
static int
route_map_of(struct request *r, struct route_map *m)
{
	const char	*dr, *sf, *sn;
	char		 tmp[PATH_MAX];
	size_t		 i, j;

	m->url[0] = m->dir[0] = m->docroot[0] = '\0';
	dr = request_param(r->envp, "DOCUMENT_ROOT");
	if (dr != NULL && *dr != '\0' && realpath(dr, m->docroot) == NULL)
		m->docroot[0] = '\0';
	sf = route_script_param(r);
	sn = request_param(r->envp, "SCRIPT_NAME");
	if (sf != NULL && sn != NULL && sn[0] == '/') {
		i = strlen(sf);
		j = strlen(sn);
		while (i > 0 && j > 0 && sf[i - 1] == sn[j - 1]) {
			i--;
			j--;
		}
		/* the common tail from a slash */
		while (sf[i] != '\0' && sf[i] != '/') {
			i++;
			j++;
		}
		if (sf[i] == '/' && i < sizeof(tmp) && j < sizeof(m->url)) {
			memcpy(tmp, sf, i);
			tmp[i] = '\0';
			if (realpath(i > 0 ? tmp : "/", m->dir) != NULL) {
				memcpy(m->url, sn, j);
				m->url[j] = '\0';
			} else
				m->dir[0] = '\0';
		}
	}
	return m->dir[0] != '\0' || m->docroot[0] != '\0' ? 0 : -1;
}

/*
 * If the route's own path (its prefix, mapped as m says) is the file f
 * (by its path, or a hard link to it: the same inode) or a directory
 * holding it, returns the rest of f's path below it ("" or "/x.cgi");
 * else NULL.
 */
static const char *
route_names_file(const struct route_map *m, const struct route *rt,
    const char *f)
{
	char		 cand[PATH_MAX], real[PATH_MAX];
	struct stat	 a, b;
	size_t		 l = strlen(m->url);
	int		 n;

	if (m->dir[0] != '\0' && strncmp(rt->prefix, m->url, l) == 0 &&
	    (rt->prefix[l] == '\0' || rt->prefix[l] == '/'))
		n = snprintf(cand, sizeof(cand), "%s%s", m->dir, rt->prefix + l);
	else if (m->docroot[0] != '\0')
		n = snprintf(cand, sizeof(cand), "%s%s", m->docroot, rt->prefix);
	else
		return NULL;
	if (n < 0 || n >= (int)sizeof(cand) || realpath(cand, real) == NULL)
		return NULL;
	l = strlen(real);
	if (strncmp(real, f, l) == 0 && (f[l] == '\0' || f[l] == '/'))
		return f + l;
	if (stat(real, &a) == 0 && S_ISREG(a.st_mode) && stat(f, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return f + strlen(f);
	return NULL;
}

/*
 * The request's path becomes the route's own spelling of the file (plus
 * what follows the script), so a retry through another spelling is the
 * same request.
 */
static void
route_respell(struct request *r, const struct route *x, const char *rest)
{
	const char	*pi = r->script_tail;
	size_t		 pl = strlen(x->prefix);
	char		*np;

	if (pl > 0 && x->prefix[pl - 1] == '/' && rest[0] == '/')
		pl--;
	if (asprintf(&np, "%.*s%s%s", (int)pl, x->prefix, rest,
	    pi != NULL ? pi : "") < 0)
		return;		/* out of memory: keep the path we have */
	free(r->path);
	r->path = np;
}

static void
route_set_script(struct request *r, const struct route *rt)
{
	char	 out[PATH_MAX];
	size_t	 i;

	free(r->script);
	r->script = NULL;
	for (i = 0; r->script_env[i] != NULL; i++) {
		free(r->script_env[i]);
		r->script_env[i] = NULL;
	}
	free(r->script_walk);
	r->script_walk = NULL;
	r->script_err = route_script(rt, r, out, sizeof(out));
	if (r->script_err == IDEM_OK && (r->script = strdup(out)) == NULL)
		r->script_err = IDEM_ENOMEM;
}

/* How close route x is to file f (route_names_file): the length of the
 * real path it holds f under, SIZE_MAX for f itself (or another name of
 * it); 0 when it holds it not.  *rest as route_names_file sets it. */
static size_t
route_holds(const struct route_map *m, const struct route *x, const char *f,
    const char **rest)
{
	if (x->handler != HANDLER_SCRIPT ||
	    (*rest = route_names_file(m, x, f)) == NULL)
		return 0;
	return **rest == '\0' ? SIZE_MAX : (size_t)(*rest - f);
}

/* How strong route x's terms are: idempotency, then a key required. */
static int
route_strength(const struct route *x)
{
	return x->idempotency ? 1 + (x->require_key != 0) : 0;
}

/* 1 if route x lies under route rt in the URL tree (rt's prefix, then a
 * new segment of x's). */
static int
route_under(const struct route *x, const struct route *rt)
{
	size_t	 l = strlen(rt->prefix);

	return strlen(x->prefix) > l && strncmp(x->prefix, rt->prefix, l) ==
	    0 && (l == 0 || rt->prefix[l - 1] == '/' || x->prefix[l] == '/');
}

/* 1 if routes a and b run the same handler: the same program, or the
 * same upstream. */
static int
route_same_handler(const struct route *a, const struct route *b)
{
	if (a->handler != b->handler)
		return 0;
	if (a->handler == HANDLER_CGI)
		return a->program != NULL && b->program != NULL &&
		    strcmp(a->program, b->program) == 0;
	if (a->handler == HANDLER_FASTCGI)
		return a->upstream != NULL && b->upstream != NULL &&
		    strcmp(a->upstream, b->upstream) == 0;
	return 0;
}

/*
 * The route of r's path as a web server that decodes an encoded slash in
 * the path it maps reads it (nginx; lighttpd with url-path-2f-decode):
 * it resolves the ".." that makes, so "/api/x/..%2Fcharge" is what
 * "/api/charge" names to the program behind it.  That route, and that
 * spelling of the path, when it runs the same program (or upstream) as
 * rt with stronger terms (no move ever weakens them, nor runs another
 * program than the spelling's route: a web server that does not decode
 * it may have let the request through for that one); else rt.  (A
 * script route is decided by its file below, whatever the spelling.)
 */
static const struct route *
route_slash(const struct cfg *cfg, struct request *r, const struct route *rt)
{
	const struct route	*x;
	const char		*p;
	char			*d, *n;
	size_t			 k = 0;

	if (strstr(r->path, "%2F") == NULL ||
	    (d = malloc(strlen(r->path) + 1)) == NULL)
		return rt;
	for (p = r->path; *p != '\0'; p++)
		if (strncmp(p, "%2F", 3) == 0) {
			d[k++] = '/';
			p += 2;
		} else
			d[k++] = *p;
	n = path_normalize(d, k);
	free(d);
	if (n == NULL)
		return rt;
	x = cfg_route(cfg, n);
	if (x == NULL || rt == NULL || !route_same_handler(x, rt) ||
	    route_strength(x) <= route_strength(rt)) {
		free(n);
		return rt;
	}
	free(r->path);
	r->path = n;
	return x;
}

void
route_pick(const struct cfg *cfg, struct request *r)
{
	const struct route	*rt, *x, *best = NULL;
	const char		*rest, *best_rest = NULL, *own_rest = NULL;
	struct route_map	 m;
	size_t			 i, held, own, most = 0;
	int			 k, kbest = 0, krt;

	r->route = rt = route_slash(cfg, r, cfg_route(cfg, r->path));
	if (rt == NULL || rt->handler != HANDLER_SCRIPT)
		return;
	route_set_script(r, rt);
	if (r->script == NULL || route_map_of(r, &m) != 0)
		return;
	/*
	 * The file decides as far as it safely can.  A route naming the file
	 * itself (or another name of it) takes it from whatever route the
	 * spelling matched (SPEC 2b).  A route whose path is a directory
	 * holding the file takes it from a route it lies under (a nested,
	 * closer route), or from one that does not hold the file at all (the
	 * spelling and the file disagree: an encoded slash, a rewrite); never
	 * from another route that holds it, whatever their names' lengths: a
	 * link into a protected directory does not lift its terms.  Of
	 * several, the strongest terms (idempotency, then a key required),
	 * then the closest to the file; the matched route keeps a tie.  No
	 * move ever weakens the terms.
	 */
	own = route_holds(&m, rt, r->script, &own_rest);
	krt = route_strength(rt);
	for (i = 0; i < cfg->nroutes; i++) {
		x = &cfg->routes[i];
		if (x == rt || (held = route_holds(&m, x, r->script,
		    &rest)) == 0 ||
		    (held != SIZE_MAX && own != 0 && !route_under(x, rt)) ||
		    (k = route_strength(x)) < krt)
			continue;
		if (best == NULL || k > kbest || (k == kbest && held > most)) {
			best = x;
			best_rest = rest;
			most = held;
			kbest = k;
		}
	}
	if (best != NULL && (own == 0 || kbest > krt ||
	    (kbest == krt && most > own))) {
		route_respell(r, best, best_rest);
		r->route = best;
		route_set_script(r, best);
		return;
	}
	/* The matched route's own spelling of the file: a retry through a
	 * link to it in the same directory is the same request. */
	if (own != 0)
		route_respell(r, rt, own_rest);
}
