/* idemctl migrate and check: the schema and the health of the set-up. */
#ifndef IDEM_IDEMCTL_DB_H
#define IDEM_IDEMCTL_DB_H

#include "idemctl_common.h"

extern const char ctl_migrate_usage[];
extern const char ctl_check_usage[];

/* "migrate": applies missing migrations; prints one line saying what it did. */
int ctl_migrate(struct ctl *c, int argc, char **argv);

/* "check": one "[ ok ]" / "[fail]" / "[warn]" line per finding; exits with
 * the code of the first failure. */
int ctl_check(struct ctl *c, int argc, char **argv);

#endif
