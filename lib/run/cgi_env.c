/* The clean CGI/1.1 environment a handler gets from a request's params. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cgi_env.h"

#define CGI_PATH_DEFAULT	"/usr/local/bin:/usr/bin:/bin"

/* 1 if the "NAME=value" entry e has exactly this name. */
static int
cgi_env_is(const char *e, const char *name)
{
	size_t	 n = strlen(name);

	return strncmp(e, name, n) == 0 && e[n] == '=';
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

/* Sets "name=value" in env[0..*n), replacing an entry of the same name. */
static enum idem_err
cgi_env_put(char **env, size_t *n, const char *entry, size_t nlen)
{
	char	*dup;
	size_t	 i;

	if ((dup = strdup(entry)) == NULL)
		return IDEM_ENOMEM;
	for (i = 0; i < *n; i++)
		if (strncmp(env[i], entry, nlen + 1) == 0) {
			free(env[i]);
			env[i] = dup;
			return IDEM_OK;
		}
	env[(*n)++] = dup;
	env[*n] = NULL;
	return IDEM_OK;
}

/*
 * Copies the params a program may see into env (room for all of them);
 * OUT: *has_path, *has_cl when params carry PATH, a non-empty
 * CONTENT_LENGTH.
 */
static enum idem_err
cgi_env_take(char **env, size_t *n, char *const *params, size_t np,
    const char *script, int *has_path, int *has_cl)
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
			*has_cl = 1;
		}
		if (cgi_env_is(e, "PATH"))
			*has_path = 1;
		if ((er = cgi_env_put(env, n, e, (size_t)(eq - e))) != IDEM_OK)
			return er;
	}
	return IDEM_OK;
}

/* Sets SCRIPT_FILENAME=script in env. */
static enum idem_err
cgi_env_script(char **env, size_t *n, const char *script)
{
	size_t		 sl = strlen(script);
	char		*e;
	enum idem_err	 er;

	if ((e = malloc(sl + sizeof("SCRIPT_FILENAME="))) == NULL)
		return IDEM_ENOMEM;
	memcpy(e, "SCRIPT_FILENAME=", 16);
	memcpy(e + 16, script, sl + 1);
	er = cgi_env_put(env, n, e, 15);
	free(e);
	return er;
}

enum idem_err
cgi_env_build(char *const *params, const char *script, size_t bodylen,
    int had_body, uint64_t fence, char ***out)
{
	char		**env;
	char		  tmp[64];
	size_t		  np = 0, n = 0;
	int		  has_path = 0, has_cl = 0;
	enum idem_err	  er;

	while (params != NULL && params[np] != NULL)
		np++;
	/* Room for every param plus the entries set here, and NULL. */
	if ((env = calloc(np + 8, sizeof(*env))) == NULL)
		return IDEM_ENOMEM;
	if ((er = cgi_env_take(env, &n, params, np, script, &has_path,
	    &has_cl)) != IDEM_OK)
		goto fail;
	if ((er = cgi_env_put(env, &n, "GATEWAY_INTERFACE=CGI/1.1", 17)) !=
	    IDEM_OK)
		goto fail;
	if (!has_path &&
	    (er = cgi_env_put(env, &n, "PATH=" CGI_PATH_DEFAULT, 4)) != IDEM_OK)
		goto fail;
	if (had_body && !has_cl) {
		snprintf(tmp, sizeof(tmp), "CONTENT_LENGTH=%zu", bodylen);
		if ((er = cgi_env_put(env, &n, tmp, 14)) != IDEM_OK)
			goto fail;
	}
	if (script != NULL && (er = cgi_env_script(env, &n, script)) != IDEM_OK)
		goto fail;
	if (fence != 0) {
		snprintf(tmp, sizeof(tmp), "IDEMGATE_FENCE=%llu",
		    (unsigned long long)fence);
		if ((er = cgi_env_put(env, &n, tmp, 14)) != IDEM_OK)
			goto fail;
	}
	*out = env;
	return IDEM_OK;
fail:
	cgi_env_free(env);
	return er;
}
