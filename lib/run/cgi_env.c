/* The clean CGI/1.1 environment a handler gets from a request's params. */
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

/* 1 if the name part of "NAME=value" (nlen bytes) may reach a program. */
static int
cgi_env_name_ok(const char *e, size_t nlen)
{
	size_t	 i;

	if (nlen == 0)
		return 0;
	for (i = 0; i < nlen; i++) {
		char c = e[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	/* httpoxy: a client's "Proxy:" header must not become a proxy. */
	if (nlen == 10 && strncasecmp(e, "HTTP_PROXY", 10) == 0)
		return 0;
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
	size_t	 i;

	if (env == NULL)
		return;
	for (i = 0; env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/* An environment being built: n entries in v (room for every one, and
 * NULL after them), and what the request's params carried. */
struct env_build {
	char	**v;
	size_t	  n;
	int	  has_path;	/* PATH */
	int	  has_cl;	/* a non-empty CONTENT_LENGTH */
	int	  has_query;	/* QUERY_STRING */
};

/* Sets "name=value" in eb, replacing an entry of the same name. */
static enum idem_err
cgi_env_put(struct env_build *eb, const char *entry, size_t nlen)
{
	char	*dup;
	size_t	 i;

	if ((dup = strdup(entry)) == NULL)
		return IDEM_ENOMEM;
	/* Each entry against every one before it. */
	for (i = 0; i < eb->n; i++)
		if (cgi_env_named(eb->v[i], entry, nlen)) {
			free(eb->v[i]);
			eb->v[i] = dup;
			return IDEM_OK;
		}
	eb->v[eb->n++] = dup;
	eb->v[eb->n] = NULL;
	return IDEM_OK;
}

/*
 * Copies the params (np of them) a program may see into eb, noting
 * whether they carry PATH, QUERY_STRING and a non-empty CONTENT_LENGTH.
 */
static enum idem_err
cgi_env_take(struct env_build *eb, char *const *params, size_t np,
    const char *script)
{
	const char	*e, *eq;
	size_t		 i;
	enum idem_err	 er;

	for (i = 0; i < np; i++) {
		e = params[i];
		if ((eq = strchr(e, '=')) == NULL ||
		    !cgi_env_name_ok(e, (size_t)(eq - e)))
			continue;
		if (cgi_env_is(e, "GATEWAY_INTERFACE") ||
		    cgi_env_is(e, "IDEMGATE_FENCE") ||
		    (script != NULL && cgi_env_is(e, "SCRIPT_FILENAME")))
			continue;
		/* An empty CONTENT_LENGTH (nginx, chunked) means "unknown". */
		if (cgi_env_is(e, "CONTENT_LENGTH")) {
			if (eq[1] == '\0')
				continue;
			eb->has_cl = 1;
		}
		if (cgi_env_is(e, "PATH"))
			eb->has_path = 1;
		if (cgi_env_is(e, "QUERY_STRING"))
			eb->has_query = 1;
		if ((er = cgi_env_put(eb, e, (size_t)(eq - e))) != IDEM_OK)
			return er;
	}
	return IDEM_OK;
}

/* Sets SCRIPT_FILENAME=script in eb. */
static enum idem_err
cgi_env_script(struct env_build *eb, const char *script)
{
	size_t		 sl = strlen(script);
	char		*e;
	enum idem_err	 er;

	if ((e = malloc(sl + sizeof("SCRIPT_FILENAME="))) == NULL)
		return IDEM_ENOMEM;
	memcpy(e, "SCRIPT_FILENAME=", 16);
	memcpy(e + 16, script, sl + 1);
	er = cgi_env_put(eb, e, 15);
	free(e);
	return er;
}

enum idem_err
cgi_env_build(char *const *params, const char *script, size_t bodylen,
    int had_body, uint64_t fence, char ***out)
{
	struct env_build	 eb;
	char			 tmp[64];
	size_t			 np = 0;
	enum idem_err		 er;

	while (params != NULL && params[np] != NULL)
		np++;
	memset(&eb, 0, sizeof(eb));
	/* Room for every param plus the entries set here, and NULL. */
	if ((eb.v = calloc(np + 9, sizeof(*eb.v))) == NULL)
		return IDEM_ENOMEM;
	if ((er = cgi_env_take(&eb, params, np, script)) != IDEM_OK)
		goto fail;
	if ((er = cgi_env_put(&eb, "GATEWAY_INTERFACE=CGI/1.1", 17)) !=
	    IDEM_OK)
		goto fail;
	if (!eb.has_path &&
	    (er = cgi_env_put(&eb, "PATH=" CGI_PATH_DEFAULT, 4)) != IDEM_OK)
		goto fail;
	/* RFC 3875 4.1.7: set, empty when the URI has no query. */
	if (!eb.has_query &&
	    (er = cgi_env_put(&eb, "QUERY_STRING=", 12)) != IDEM_OK)
		goto fail;
	if (had_body && !eb.has_cl) {
		snprintf(tmp, sizeof(tmp), "CONTENT_LENGTH=%zu", bodylen);
		if ((er = cgi_env_put(&eb, tmp, 14)) != IDEM_OK)
			goto fail;
	}
	if (script != NULL && (er = cgi_env_script(&eb, script)) != IDEM_OK)
		goto fail;
	if (fence != 0) {
		snprintf(tmp, sizeof(tmp), "IDEMGATE_FENCE=%llu",
		    (unsigned long long)fence);
		if ((er = cgi_env_put(&eb, tmp, 14)) != IDEM_OK)
			goto fail;
	}
	*out = eb.v;
	return IDEM_OK;
fail:
	cgi_env_free(eb.v);
	return er;
}
