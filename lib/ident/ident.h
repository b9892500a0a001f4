/* A protected request's identity: scope, key, fingerprint, lock name, route. */
#ifndef IDEM_IDENT_H
#define IDEM_IDENT_H

#include <stddef.h>
#include <stdint.h>

#include "fp.h"

/*
 * What identifies one protected request, built once (fcgi/guard.c) and
 * passed by pointer to the replay cache and the store.  Strings are
 * borrowed.
 */
struct idem_id {
	unsigned char	 scope[FP_LEN];	/* fp_scope() */
	const char	*key;		/* key_parse() output */
	size_t		 keylen;
	unsigned char	 fp[FP_LEN];	/* fp_request() */
	char		 lockname[FP_LOCKNAME_LEN];	/* fp_lockname() */
	const char	*route;		/* route prefix */
	const char	*method;
	const char	*owner;		/* "host:pid" of this gateway */
	int64_t		 ttl_ms;
	int64_t		 lease_ms;
	/* How long a run of this key can go on after its claim, at most
	 * (the run deadline); -1: no bound is known (never taken over). */
	int64_t		 run_ms;
};

/* Names id's lock (fp_lockname) once scope, key and keylen are set. */
void idem_id_name_lock(struct idem_id *id);

#endif
