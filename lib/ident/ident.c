/* A protected request's identity: scope, key, fingerprint, lock name, route. */
#include <string.h>

#include "ident.h"

void
idem_id_key(struct idem_id *id, const struct hkey *hk)
{
	unsigned char	 d[FP_LEN];

	memcpy(id->plain_scope, id->scope, FP_LEN);
	id->hk = NULL;
	/* Read once: both digests keyed, or neither. */
	if (hk == NULL || hkey_state(hk) != HKEY_KEYED)
		return;
	id->hk = hk;
	hkey_hmac(hk->k, id->plain_scope, id->scope);
	memcpy(d, id->fp, FP_LEN);
	hkey_hmac(hk->k, d, id->fp);
}

void
idem_id_name_lock(struct idem_id *id)
{
	fp_lockname(id->scope, id->key, id->keylen, id->lockname);
}
