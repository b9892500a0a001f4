/* A request's FastCGI params as envp ("NAME=value"): lookups, what is read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgi_env.h"
#include "params.h"

const char *
request_param(char *const *envp, const char *name)
{
	size_t		 nl = strlen(name);
	const char	*v = NULL;

	/* Every param is looked at: the last one counts. */
	for (; envp != NULL && *envp != NULL; envp++)
		if (cgi_env_named(*envp, name, nl))
			v = *envp + nl + 1;
	return v;
}

const char *
request_param_once(char *const *envp, const char *name, int *twice)
{
	size_t		 nl = strlen(name);
	const char	*v = NULL;

	*twice = 0;
	for (; envp != NULL && *envp != NULL; envp++) {
		if (!cgi_env_named(*envp, name, nl))
			continue;
		if (v != NULL) {
			*twice = 1;
			break;
		}
		v = *envp + nl + 1;
	}
	return v;
}

size_t
request_params_size(char *const *envp)
{
	size_t	 n = 0;

	for (; envp != NULL && *envp != NULL; envp++)
		n += strlen(*envp);
	return n;
}

/*
 * The path of an absolute-form request target ("http://host/pay", RFC
 * 9112 3.2.2), which Apache passes on in REQUEST_URI as the client sent
 * it: from the first '/' after the authority ("/" when there is none);
 * uri itself when it has no scheme.
 */
static const char *
request_uri_path(const char *uri)
{
	const char	*p = uri;

	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
		return uri;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
	    (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' || *p == '.')
		p++;
	if (strncmp(p, "://", 3) != 0)
		return uri;
	p += 3;
	p += strcspn(p, "/?#");
	return *p == '/' ? p : "/";
}

char *
request_path(char *const *envp)
{
	const char	*uri, *sn, *pi;
	size_t		 len;
	char		*p;

	uri = request_param(envp, "REQUEST_URI");
	if (uri != NULL && *uri != '\0') {
		uri = request_uri_path(uri);
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

enum idem_err
request_content_length(const char *s, size_t *out)
{
	size_t	 v = 0;

	if (s == NULL || *s == '\0')
		return IDEM_EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return IDEM_EINVAL;
		if (v > ((size_t)-1 - 9) / 10)
			return IDEM_EINVAL;
		v = v * 10 + (size_t)(*s - '0');
	}
	*out = v;
	return IDEM_OK;
}

char **
request_params_filter(char *const *envp, char *const *more)
{
	static const char *const drop[] = {
		"HTTP_IDEMPOTENT_REPLAYED=", "HTTP_IDEMPOTENCY_RESULT=",
	};
	size_t	 n = 0, m = 0, i, j;
	char	**out;

	while (envp != NULL && envp[n] != NULL)
		n++;
	while (more != NULL && more[m] != NULL)
		m++;
	if ((out = calloc(n + m + 1, sizeof(*out))) == NULL)
		return NULL;
	for (i = 0, j = 0; i < n; i++) {
		if (strncmp(envp[i], drop[0], strlen(drop[0])) == 0 ||
		    strncmp(envp[i], drop[1], strlen(drop[1])) == 0)
			continue;
		out[j++] = envp[i];
	}
	/* Last: of a name given twice, a program sees the last one
	 * (lib/run/cgi_env.h). */
	for (i = 0; i < m; i++)
		out[j++] = more[i];
	out[j] = NULL;
	return out;
}
