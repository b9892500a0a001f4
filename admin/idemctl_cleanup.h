/* idemctl cleanup: the cron job that removes expired keys in small batches. */
#ifndef IDEM_IDEMCTL_CLEANUP_H
#define IDEM_IDEMCTL_CLEANUP_H

#include "idemctl_common.h"

extern const char ctl_cleanup_usage[];

/* Runs "cleanup" with argv[0] = "cleanup".  Returns a ctl_exit code;
 * silent on success unless --verbose or --dry-run. */
int ctl_cleanup(struct ctl *c, int argc, char **argv);

#endif
