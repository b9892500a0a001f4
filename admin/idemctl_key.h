/* idemctl show and forget: one key, looked up by (scope, key). */
#ifndef IDEM_IDEMCTL_KEY_H
#define IDEM_IDEMCTL_KEY_H

#include "idemctl_common.h"

extern const char ctl_show_usage[];
extern const char ctl_forget_usage[];

/* "show KEY [--scope S] [--body]". */
int ctl_show(struct ctl *c, int argc, char **argv);

/* "forget KEY [--scope S] [--force]". */
int ctl_forget(struct ctl *c, int argc, char **argv);

#endif
