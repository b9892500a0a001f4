/*
 * Replica lag, for idemctl cleanup --max-lag: how far behind the replicas
 * named in [cleanup] replicas (option-file groups, one per replica) are,
 * asked with SHOW REPLICA STATUS (SHOW SLAVE STATUS on servers that do not
 * know it), as pt-archiver's --check-slave-lag does.
 */
#ifndef IDEM_LAG_H
#define IDEM_LAG_H

#include <stddef.h>

#include "cfg.h"
#include "err.h"

struct lag;

/* One connection per group of c->replicas (space-separated; none is an
 * error).  Connects lazily, on the first lag_worst().  OUT: *out, freed
 * with lag_free().  IDEM_EINVAL (no replicas), IDEM_ENOMEM. */
enum idem_err lag_open(const struct cfg *c, struct lag **out);
void lag_free(struct lag *l);

/*
 * The worst lag over the replicas, in seconds: -1 when one is not
 * replicating (Seconds_Behind_Master is NULL: a thread stopped), which
 * counts as behind.  *who: that replica's group (valid until lag_free).
 * IDEM_ESTORE when a replica cannot be asked or is not a replica
 * (lag_error() says which and why).
 */
enum idem_err lag_worst(struct lag *l, long long *secs, const char **who);
const char *lag_error(const struct lag *l);

#endif
