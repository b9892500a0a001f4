/* idemctl rekey: stored answers re-sealed under the current key (cron). */
#ifndef IDEM_IDEMCTL_REKEY_H
#define IDEM_IDEMCTL_REKEY_H

#include "idemctl_common.h"

extern const char ctl_rekey_usage[];

/* Runs "rekey" with argv[0] = "rekey".  Returns a ctl_exit code; silent
 * on success unless --verbose. */
int ctl_rekey(struct ctl *c, int argc, char **argv);

#endif
