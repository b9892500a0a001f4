/* A protected request's identity: scope, key, fingerprint, lock name, route. */
#include <string.h>

#include "ident.h"

void
idem_id_key_scope(struct idem_id *id, const struct hkey *hk)
{
	memcpy(id->plain_scope, id->scope, FP_LEN);
	id->hk = NULL;
	/* Read once: the fingerprint follows id->hk, not a later state. */
	if (hk == NULL || hkey_state(hk) != HKEY_KEYED)
		return;
	id->hk = hk;
	hkey_hmac(hk, id->plain_scope, id->scope);
}

void
idem_id_key_fp(struct idem_id *id)
{
	unsigned char	 d[FP_LEN];

	if (id->hk == NULL)
		return;
	memcpy(d, id->fp, FP_LEN);
	hkey_hmac(id->hk, d, id->fp);
}

void
idem_id_key(struct idem_id *id, const struct hkey *hk)
{
	idem_id_key_scope(id, hk);
	idem_id_key_fp(id);
}

void
idem_id_name_lock(struct idem_id *id)
{
	fp_lockname(id->scope, id->key, id->keylen, id->lockname);
}
