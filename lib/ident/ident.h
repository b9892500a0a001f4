/* A protected request's identity: scope, key, fingerprint, lock name, route. */
#ifndef IDEM_IDENT_H
#define IDEM_IDENT_H

#include <stddef.h>
#include <stdint.h>

#include "fp.h"
#include "hkey.h"

/*
 * What identifies one protected request, built once (fcgi/guard.c) and
 * passed by pointer to the replay cache and the store.  Strings are
 * borrowed.
 */
struct idem_id {
	/* fp_scope(), then keyed under hk (idem_id_key) */
	unsigned char	 scope[FP_LEN];
	const char	*key;		/* key_parse() output */
	size_t		 keylen;
	unsigned char	 fp[FP_LEN];	/* fp_request(), keyed as scope */
	/* How scope and fp were hashed (NULL: plain), and the scope's
	 * plain digest, which finds a row stored before the key was set. */
	const struct hkey *hk;
	unsigned char	 plain_scope[FP_LEN];
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

/* Keys id's plain scope and fingerprint under hk when it is HKEY_KEYED
 * (else they stay as they are, id->hk NULL), keeping the plain scope. */
void idem_id_key(struct idem_id *id, const struct hkey *hk);

/* The same in two steps, for a caller that needs the scope before the
 * fingerprint is computed: the scope (and id->hk), then the fingerprint
 * as id->hk says. */
void idem_id_key_scope(struct idem_id *id, const struct hkey *hk);
void idem_id_key_fp(struct idem_id *id);

/* Names id's lock (fp_lockname) once scope, key and keylen are set. */
void idem_id_name_lock(struct idem_id *id);

/* The key as idemgate reads it, once its lock is named: the lock name's
 * hex digits (IDEMGATE_KEY_ID; "idem:" left off). */
static inline const char *
idem_id_hex(const struct idem_id *id)
{
	return id->lockname + sizeof("idem:") - 1;
}

#endif
