/* idemctl forget --route: every key of one route, by status and age. */
#ifndef IDEM_IDEMCTL_FORGET_H
#define IDEM_IDEMCTL_FORGET_H

#include <stdint.h>

#include "idemctl_common.h"

/* What forget --route was given; strings are borrowed from argv. */
struct forget_route_args {
	const char	*route;		/* --route PREFIX; NULL: not given */
	const char	*status;	/* --status as typed; NULL: any */
	int		 status_lo;	/* the answers it covers */
	int		 status_hi;
	const char	*since;		/* --since as typed; NULL: any age */
	int64_t		 since_ms;
	int		 dry_run;	/* --dry-run: count only */
	int		 yes;		/* --yes: do not ask */
};

/*
 * Parses a --status value: a code ("404", 200..599) or a class ("4xx",
 * 2xx..5xx, x in either case) into the range of codes it covers.  0 on
 * success, -1 for anything else.  OUT: lo, hi (set only on success).
 */
int ctl_parse_status(const char *s, int *lo, int *hi);

/* CTL_OPT_PARSE hooks for --status and --since (a duration > 0, the
 * config's syntax); dst is a struct forget_route_args. */
int forget_opt_status(const char *s, void *dst);
int forget_opt_since(const char *s, void *dst);

/*
 * forget --route, its options parsed (force: --force).  Prints the count,
 * then stops (--dry-run), asks on a terminal (no --yes), refuses when
 * standard input is not one (no --yes), or forgets.  Returns an exit code.
 */
int ctl_forget_route(struct ctl *c, const struct forget_route_args *a,
    int force);

#endif
