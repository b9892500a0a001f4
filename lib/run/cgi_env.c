/* The clean CGI/1.1 environment a handler gets from a request's params. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cgi_env.h"

#define CGI_PATH_DEFAULT	"/usr/local/bin:/usr/bin:/bin"

int
cgi_env_named(const char *e, const char *name, size_t n)
{
	return e[0] == name[0] && strncmp(e, name, n) == 0 && e[n] == '=';
}

/* 1 if the "NAME=value" entry e has exactly this name. */
static int
cgi_env_is(const char *e, const char *name)
{
	return cgi_env_named(e, name, strlen(name));
}

/* 1 if the name part of "NAME=value" (nlen bytes) may reach a program
 * (an upstream: '-' too, as in Apache's SetEnv names). */
static int
cgi_env_name_ok(const char *e, size_t nlen, int upstream)
{
	size_t	 i;

	if (nlen == 0)
		return 0;
	/* httpoxy: a client's "Proxy:" header must not become a proxy
	 * (PHP's getenv() reads FastCGI params too). */
	if (nlen == 10 && strncasecmp(e, "HTTP_PROXY", 10) == 0)
		return 0;
	/* Never '.', ' ' or '[': PHP reads them as '_' in $_SERVER, so a
	 * client's "Idempotency.Key:" (a param HTTP_IDEMPOTENCY.KEY, from
	 * a web server that keeps such names) would stand in for the
	 * header the key was taken from. */
	for (i = 0; i < nlen; i++) {
		char c = e[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '_' ||
		    (upstream && c == '-')))
			return 0;
	}
	if (upstream)
		return 1;
	if (nlen >= 3 && strncmp(e, "LD_", 3) == 0)
		return 0;
	if (nlen >= 10 && strncmp(e, "BASH_FUNC_", 10) == 0)
		return 0;
	/* Startup files a shell-script CGI would source. */
	if ((nlen == 8 && strncmp(e, "BASH_ENV", 8) == 0) ||
	    (nlen == 3 && strncmp(e, "ENV", 3) == 0))
		return 0;
	return 1;
}

void
cgi_env_free(char **env)
{
	free(env);
}

/* An environment being built: n entries in v (room for every one, and
 * NULL after them), what the request's params carried, and room after
 * the pointers for the entries written here (at, left bytes). */
struct env_build {
	char	**v;
	size_t	  n;
	int	  has_path;	/* PATH */
	int	  has_cl;	/* the last CONTENT_LENGTH not empty */
	int	  has_query;	/* QUERY_STRING */
	int	  upstream;	/* FastCGI params, not an environment */
	char	 *at;
	size_t	  left;
};

/* Sets "name=value" in eb, replacing an entry of the same name.  entry
 * is borrowed: it must outlive the environment. */
static void
cgi_env_put(struct env_build *eb, const char *entry, size_t nlen)
{
	size_t	 i;

	/* Each entry against every one before it. */
	for (i = 0; i < eb->n; i++)
		if (cgi_env_named(eb->v[i], entry, nlen)) {
			eb->v[i] = (char *)entry;
			return;
		}
	eb->v[eb->n++] = (char *)entry;
	eb->v[eb->n] = NULL;
}

/* Takes the entry named name (nlen bytes) out of eb, if there is one. */
static void
cgi_env_drop(struct env_build *eb, const char *name, size_t nlen)
{
	size_t	 i;

	for (i = 0; i < eb->n; i++)
		if (cgi_env_named(eb->v[i], name, nlen)) {
			memmove(&eb->v[i], &eb->v[i + 1],
			    (eb->n - i) * sizeof(*eb->v));
			eb->n--;
			return;
		}
}

/* Writes "name=value" into eb's own room and sets it. */
static void
cgi_env_print(struct env_build *eb, size_t nlen, const char *fmt, ...)
{
	va_list	 ap;
	int	 k;

	va_start(ap, fmt);
	k = vsnprintf(eb->at, eb->left, fmt, ap);
	va_end(ap);
	/* cgi_env_build() sized the room for every entry it prints. */
	if (k < 0 || (size_t)k >= eb->left)
		abort();
	cgi_env_put(eb, eb->at, nlen);
	eb->at += (size_t)k + 1;
	eb->left -= (size_t)k + 1;
}

/*
 * Sets the params (np of them) a program may see in eb, noting
 * whether they carry PATH, QUERY_STRING and a non-empty CONTENT_LENGTH.
 */
static void
cgi_env_take(struct env_build *eb, char *const *params, size_t np,
    const char *script)
{
	const char	*e, *eq;
	size_t		 i;

	for (i = 0; i < np; i++) {
		e = params[i];
		if ((eq = strchr(e, '=')) == NULL ||
		    !cgi_env_name_ok(e, (size_t)(eq - e), eb->upstream))
			continue;
		if ((!eb->upstream && cgi_env_is(e, "GATEWAY_INTERFACE")) ||
		    cgi_env_is(e, "IDEMGATE_FENCE") ||
		    cgi_env_is(e, "IDEMGATE_RUN") ||
		    cgi_env_is(e, "IDEMGATE_KEY_ID") ||
		    (script != NULL && cgi_env_is(e, "SCRIPT_FILENAME")))
			continue;
		/* An empty CONTENT_LENGTH (nginx, chunked) means "unknown":
		 * the body's length takes its place when there is a body;
		 * without one a program does not get it, an upstream gets it
		 * as sent (cgi_env_make).  Sent twice, the last one counts,
		 * as it does for the gateway. */
		if (cgi_env_is(e, "CONTENT_LENGTH"))
			eb->has_cl = eq[1] != '\0';
		if (cgi_env_is(e, "PATH"))
			eb->has_path = 1;
		if (cgi_env_is(e, "QUERY_STRING"))
			eb->has_query = 1;
		cgi_env_put(eb, e, (size_t)(eq - e));
	}
}

/* Room for the entries cgi_env_build() prints: CONTENT_LENGTH=,
 * IDEMGATE_FENCE= (20 digits at most each), IDEMGATE_RUN= (16 hex
 * digits), IDEMGATE_KEY_ID= and SCRIPT_FILENAME=. */
#define CGI_ENV_PRINTED	(sizeof("CONTENT_LENGTH=") + 20 + \
			    sizeof("IDEMGATE_FENCE=") + 20 + \
			    sizeof("IDEMGATE_RUN=") + 16 + \
			    sizeof("IDEMGATE_KEY_ID=") + CGI_KEY_ID_MAX + \
			    sizeof("SCRIPT_FILENAME="))

static enum idem_err
cgi_env_make(char *const *params, const char *script, size_t bodylen,
    int had_body, const struct cgi_idem *idem, int upstream, char ***out)
{
	static const struct cgi_idem	 none;
	struct env_build	 eb;
	size_t			 np = 0, room, sl;

	while (params != NULL && params[np] != NULL)
		np++;
	memset(&eb, 0, sizeof(eb));
	eb.upstream = upstream;
	/* One block: room for every param plus the entries set here, and
	 * NULL; then the text of the ones printed here. */
	sl = script != NULL ? strlen(script) : 0;
	room = (np + 9) * sizeof(*eb.v);
	if ((eb.v = malloc(room + CGI_ENV_PRINTED + sl)) == NULL)
		return IDEM_ENOMEM;
	if (idem == NULL)
		idem = &none;
	eb.v[0] = NULL;
	eb.at = (char *)eb.v + room;
	eb.left = CGI_ENV_PRINTED + sl;
	cgi_env_take(&eb, params, np, script);
	if (!upstream && !eb.has_cl && !had_body)
		cgi_env_drop(&eb, "CONTENT_LENGTH", 14);
	if (!upstream) {
		cgi_env_put(&eb, "GATEWAY_INTERFACE=CGI/1.1", 17);
		if (!eb.has_path)
			cgi_env_put(&eb, "PATH=" CGI_PATH_DEFAULT, 4);
		/* RFC 3875 4.1.7: set, empty when the URI has no query. */
		if (!eb.has_query)
			cgi_env_put(&eb, "QUERY_STRING=", 12);
	}
	if (had_body && !eb.has_cl)
		cgi_env_print(&eb, 14, "CONTENT_LENGTH=%zu", bodylen);
	if (script != NULL)
		cgi_env_print(&eb, 15, "SCRIPT_FILENAME=%s", script);
	if (idem->fence != 0)
		cgi_env_print(&eb, 14, "IDEMGATE_FENCE=%llu",
		    (unsigned long long)idem->fence);
	if (idem->run != 0 && !upstream)
		cgi_env_print(&eb, 12, CGI_RUN_FMT,
		    (unsigned long long)idem->run);
	if (idem->key_id != NULL)
		cgi_env_print(&eb, 15, "IDEMGATE_KEY_ID=%.*s", CGI_KEY_ID_MAX,
		    idem->key_id);
	*out = eb.v;
	return IDEM_OK;
}

enum idem_err
cgi_env_build(char *const *params, const char *script, size_t bodylen,
    int had_body, const struct cgi_idem *idem, char ***out)
{
	return cgi_env_make(params, script, bodylen, had_body, idem, 0, out);
}

enum idem_err
cgi_params_build(char *const *params, size_t bodylen, int had_body,
    const struct cgi_idem *idem, char ***out)
{
	return cgi_env_make(params, NULL, bodylen, had_body, idem, 1, out);
}
