/* The clean CGI/1.1 environment a handler gets from a request's params. */
#ifndef IDEM_CGI_ENV_H
#define IDEM_CGI_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* 1 if the "NAME=value" entry e is named name (n bytes).  It looks at
 * the first byte before strncmp: callers walk every entry. */
int cgi_env_named(const char *e, const char *name, size_t n);

/* What a protected run is told of its key (all 0/NULL: nothing). */
struct cgi_idem {
	uint64_t	 fence;		/* IDEMGATE_FENCE: grows with each
					 * claim (lib/store/store.h) */
	uint64_t	 run;		/* IDEMGATE_RUN (CGI_RUN_FMT): the mark
					 * of what a CGI run leaves behind */
	const char	*key_id;	/* IDEMGATE_KEY_ID: the key as
					 * idemgate knows it (scope and key,
					 * read as the gateway reads them),
					 * hex; at most CGI_KEY_ID_MAX */
};
#define CGI_KEY_ID_MAX	64

/*
 * Builds a clean CGI/1.1 environment (RFC 3875 §4.1) from the request's
 * FastCGI params ("NAME=value" strings, NULL-terminated; borrowed).
 * Nothing of the gateway's own environment is passed.  Dropped: HTTP_PROXY
 * (httpoxy), names that are not [A-Za-z0-9_], LD_*, BASH_FUNC_*, BASH_ENV
 * and ENV, entries without '='; a repeated name keeps its last value.
 * Set or replaced: GATEWAY_INTERFACE=CGI/1.1, PATH (a fixed safe default
 * unless params carry one), QUERY_STRING (empty unless params carry
 * one), SCRIPT_FILENAME=script (if not NULL),
 * CONTENT_LENGTH=bodylen when the request had a body but no (or an empty)
 * CONTENT_LENGTH (chunked transfer).  IDEMGATE_FENCE, IDEMGATE_RUN and
 * IDEMGATE_KEY_ID from params are always dropped; from idem (NULL:
 * none), a fence not 0 is set as IDEMGATE_FENCE (the run of a claimed
 * key), a run not 0 as IDEMGATE_RUN (the mark by which what a run leaves
 * behind outside its process group is found: proc_kill_env), a key_id as
 * IDEMGATE_KEY_ID.  *out (NULL-terminated, one block,
 * freed with cgi_env_free()) points into params for the entries it keeps:
 * params must outlive it.  Set only on success.
 */
enum idem_err cgi_env_build(char *const *params, const char *script,
    size_t bodylen, int had_body, const struct cgi_idem *idem, char ***out);

/*
 * The params an upstream FastCGI app gets: the web server's as it sent
 * them (names of letters, digits, '_' and '-'; an empty CONTENT_LENGTH
 * kept; nothing added), but HTTP_PROXY (httpoxy), the IDEMGATE_FENCE and
 * IDEMGATE_RUN and IDEMGATE_KEY_ID a client could spoof, and names with '.', ' ' or '[',
 * which PHP reads as '_' (another param's name); CONTENT_LENGTH=bodylen
 * when the request had a body but no (or an empty) CONTENT_LENGTH,
 * IDEMGATE_FENCE and IDEMGATE_KEY_ID from idem (its run is not used).
 * As cgi_env_build otherwise.
 */
enum idem_err cgi_params_build(char *const *params, size_t bodylen,
    int had_body, const struct cgi_idem *idem, char ***out);

/* A run's mark, "IDEMGATE_RUN=" and 16 hex digits (unsigned long long). */
#define CGI_RUN_FMT	"IDEMGATE_RUN=%016llx"
#define CGI_RUN_LEN	(sizeof("IDEMGATE_RUN=") + 16)
void cgi_env_free(char **env);

#endif
