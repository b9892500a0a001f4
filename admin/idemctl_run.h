/* idemctl run: a job or queue consumer made idempotent on the gateway store. */
#ifndef IDEM_IDEMCTL_RUN_H
#define IDEM_IDEMCTL_RUN_H

#include "idemctl_common.h"

extern const char ctl_run_usage[];

/* idemctl run --key KEY [options] -- COMMAND [ARG...] */
int ctl_run(struct ctl *c, int argc, char **argv);

#endif
