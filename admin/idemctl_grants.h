/* idemctl grants: the MySQL statements that create idemgate's users. */
#ifndef IDEM_IDEMCTL_GRANTS_H
#define IDEM_IDEMCTL_GRANTS_H

#include "idemctl_common.h"

extern const char ctl_grants_usage[];

/* Runs "grants" with argv[0] = "grants": prints SQL on stdout.  Returns a
 * ctl_exit code. */
int ctl_grants(struct ctl *c, int argc, char **argv);

#endif
