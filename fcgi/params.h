/* A request's FastCGI params as envp ("NAME=value"): lookups, what is read. */
#ifndef IDEM_PARAMS_H
#define IDEM_PARAMS_H

#include <stddef.h>

#include "err.h"

/*
 * Pure functions of envp, below the request's modules (request, route,
 * guard, handler all read params through here).  Their names keep the
 * request_ prefix they had when they lived in request.c.
 */

/*
 * Value of param name in envp (NULL-terminated "NAME=value"), or NULL.
 * A param sent twice (nginx with a second fastcgi_param QUERY_STRING
 * after the included ones) is its last value: the one a CGI program's
 * environment and PHP-FPM keep, so the route, the fingerprint and the
 * handler all read the same request.
 */
const char *request_param(char *const *envp, const char *name);

/* request_param, and *twice = 1 when name is in envp more than once: a
 * web server that maps both X-Tenant and X_Tenant to HTTP_X_TENANT
 * (lighttpd) sends both. */
const char *request_param_once(char *const *envp, const char *name,
    int *twice);

/* Sum of the lengths of all params (names and values). */
size_t request_params_size(char *const *envp);

/*
 * Request path: REQUEST_URI up to '?' or '#' (an absolute-form target's
 * from the '/' after its authority), else SCRIPT_NAME + PATH_INFO, else
 * "/".  Returns a malloc'd string or NULL (out of memory).
 */
char *request_path(char *const *envp);

/* Strict CONTENT_LENGTH: digits only, no overflow; else IDEM_EINVAL. */
enum idem_err request_content_length(const char *s, size_t *out);

/* Copies envp into a new NULL-terminated array (strings borrowed) without
 * HTTP_IDEMPOTENT_REPLAYED and HTTP_IDEMPOTENCY_RESULT, then more (NULL:
 * none), whose entries override envp's of the same name where a handler
 * sees them.  Free with free(). */
char **request_params_filter(char *const *envp, char *const *more);

#endif
