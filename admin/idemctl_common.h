/* What idemctl's commands share: exit codes, config and store set-up, output helpers. */
#ifndef IDEM_IDEMCTL_COMMON_H
#define IDEM_IDEMCTL_COMMON_H

#include <stddef.h>
#include <stdio.h>

#include "cfg.h"
#include "fp.h"
#include "store.h"

#define CTL_DEFAULT_CONFIG	"/etc/idemgate/idemgate.conf"

/* Exit codes; documented in --help and idemctl.8. */
enum ctl_exit {
	CTL_OK = 0,
	CTL_EUSAGE = 1,		/* unknown command or flag, bad argument */
	CTL_ECONFIG = 2,	/* config file missing or invalid */
	CTL_ESTORE = 3,		/* database unreachable or a query failed */
	CTL_EBUSY = 4,		/* another cleanup holds the lock */
	/* 5 is unused: a cleanup stopped at --max-seconds exits 0. */
	CTL_ESCHEMA = 6,	/* schema missing or older than this build */
	CTL_ENOKEY = 7,		/* show/forget: no such key */
	CTL_EINPROGRESS = 8,	/* forget: key in progress (use --force) */
	CTL_EPRIV = 9,		/* check: privileges missing */
	/* run (sysexits.h, so queue consumers know what to do) */
	CTL_RUN_DATAERR = 65,	/* key reused for other argv or stdin */
	CTL_RUN_UNAVAILABLE = 69,	/* store unreachable: nothing ran */
	CTL_RUN_TEMPFAIL = 75,	/* still running elsewhere: try later */
};

/* One invocation: the options every command takes, and what they open. */
struct ctl {
	const char	*cfgpath;	/* -c FILE */
	const char	*mysql_group;	/* -g GROUP, over [gateway]'s */
	int		 verbose;	/* -v / --verbose */
	struct cfg	*cfg;		/* owned; ctl_close() frees */
	struct store	*st;		/* owned; ctl_close() frees */
};

/* Prints "idemctl: " + the message + newline on stderr. */
void ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints one usage error line and a hint naming cmd's --help (cmd may be
 * NULL); returns CTL_EUSAGE. */
int ctl_usage_err(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Reports a getopt_long() failure (ch is '?' or ':') for cmd as one usage
 * line plus a --help hint; returns CTL_EUSAGE.  argv as given to getopt.
 */
int ctl_opt_err(const char *cmd, int ch, char **argv);

/* What ctl_opt_common() returns for -h / --help. */
#define CTL_HELP	(-1)

/*
 * The options every command shares, for the default: case of its getopt
 * loop: -v / --verbose and -c / --config FILE (CTL_OK), -h / --help
 * (prints usage on stdout, CTL_HELP), anything else (one usage line,
 * CTL_EUSAGE).
 */
int ctl_opt_common(struct ctl *c, const char *cmd, int ch, const char *usage,
    char **argv);

/* Loads c->cfgpath.  On failure prints one line and returns CTL_ECONFIG. */
int ctl_load(struct ctl *c);

/* ctl_load() if needed, then connects.  Returns a ctl_exit code, having
 * printed one line on failure. */
int ctl_connect(struct ctl *c);

/* Fails with one line and CTL_ESCHEMA unless the schema is at least the
 * version this build expects (run after ctl_connect()). */
int ctl_need_schema(struct ctl *c);

/* Frees what ctl_load()/ctl_connect() opened.  Safe to call twice. */
void ctl_close(struct ctl *c);

/*
 * Parses a --scope value: "none", "remote_user:NAME" or
 * "header:HEADER-NAME:VALUE" (the header name is matched case-blind) into
 * the scope hash the gateway stores; "job" or "job:NAME" for the keys of
 * `idemctl run`.  0 on success, -1 on a bad value.  OUT: out.
 */
int ctl_parse_scope(const char *s, unsigned char out[FP_LEN]);

/* Parses a KEY argument like the gateway parses the header (bare token or
 * quoted Structured-Field string).  0 on success.  out: FP_KEY_MAX + 1 bytes.
 * OUT: out, len. */
int ctl_parse_key(const char *s, char *out, size_t *len);

/* Parses a whole decimal number in [min, max].  0 on success. OUT: v. */
int ctl_parse_long(const char *s, long min, long max, long *v);

/* Writes n bytes of p with backslash, control and non-ASCII bytes escaped
 * (\\, \n, \t, \xHH) so a key or route cannot forge output lines. */
void ctl_put_escaped(FILE *f, const char *p, size_t n);

/* Formats unix time t as UTC ISO 8601 with milliseconds
 * ("2024-05-01T12:00:00.123Z"); "-" for t <= 0. */
void ctl_fmt_time(double t, char *out, size_t outlen);

#endif
