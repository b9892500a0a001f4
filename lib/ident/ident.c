/* A protected request's identity: scope, key, fingerprint, lock name, route. */
#include "ident.h"

void
idem_id_name_lock(struct idem_id *id)
{
	fp_lockname(id->scope, id->key, id->keylen, id->lockname);
}
