/* What idemctl's commands share: exit codes, config, store set-up, output. */
#ifndef IDEM_IDEMCTL_COMMON_H
#define IDEM_IDEMCTL_COMMON_H

#include <stddef.h>
#include <stdio.h>

#include "cfg.h"
#include "fp.h"
#include "hkey.h"
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
	CTL_ENOKEY = 7,		/* show/forget: no such key (or answer) */
	CTL_EINPROGRESS = 8,	/* forget, show --body: key in progress */
	CTL_EPRIV = 9,		/* check: privileges missing */
	/* run (sysexits.h, so queue consumers know what to do) */
	CTL_RUN_DATAERR = 65,	/* key reused for other argv or stdin */
	CTL_RUN_UNAVAILABLE = 69,	/* store unreachable: nothing ran */
	CTL_RUN_SOFTWARE = 70,	/* ran before; its output unreadable */
	CTL_RUN_IOERR = 74,	/* stdin unreadable */
	CTL_RUN_TEMPFAIL = 75,	/* still running elsewhere: try later */
};

/* One invocation: the options every command takes, and what they open. */
struct ctl {
	const char	*cfgpath;	/* -c FILE */
	const char	*mysql_group;	/* -g GROUP, over [gateway]'s */
	int		 verbose;	/* -v / --verbose */
	struct cfg	*cfg;		/* owned; ctl_close() frees */
	/* Why secret_key_file could not be read ("" when it was, or is
	 * unset): show and check say so, run refuses. */
	char		 secrets_err[512];
	struct store	*st;		/* owned; ctl_close() frees */
	/* How the store hashes keys (ctl_hkey resolves it). */
	struct hkey	 hk;
	/* 1: the store keeps the gateway's short deadlines (run owns keys
	 * under a lease); else it is patient (long operator statements). */
	int		 quick;
};

/* Prints "idemctl: " + the message + newline on stderr. */
void ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints one usage error line and a hint naming cmd's --help (cmd may be
 * NULL); returns CTL_EUSAGE. */
int ctl_usage_err(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* How a command's option stores its value (struct ctl_opt.dst). */
enum ctl_opt_kind {
	CTL_OPT_FLAG,		/* no value; *(int *)dst = 1 */
	CTL_OPT_STRING,		/* *(const char **)dst = the value (borrowed) */
	CTL_OPT_LONG,		/* *(long *)dst = a whole number in
				 * [min, max] */
	CTL_OPT_DURATION,	/* *(int64_t *)dst = ms (cfg_parse_duration) */
	CTL_OPT_PARSE,		/* parse(value, dst) == 0 stores it */
	CTL_OPT_PRINT,		/* no value; prints text on stdout, stops:
				 * CTL_HELP */
};

/*
 * One option of a command.  A value LONG or PARSE refuses is reported as
 * "--NAME wants WANTS, not 'VALUE'"; options not given keep
 * what dst holds.  Long-only options (letter 0) get
 * getopt values 1000 + their index in the table.
 */
struct ctl_opt {
	const char		*name;		/* --NAME */
	int			 letter;	/* -L, or 0 */
	enum ctl_opt_kind	 kind;
	void			*dst;
	const char		*wants;		/* LONG, DURATION, PARSE */
	long			 min, max;	/* LONG */
	int			(*parse)(const char *, void *);	/* PARSE */
	const char		*text;		/* PRINT */
	int			 elsewhere;	/* another command's: refused */
};

/* A command's command line: its options (then -v, -c FILE, -h), operands. */
struct ctl_cmdline {
	const char		*cmd;		/* in messages; NULL:
						 * idemctl's */
	const char		*usage;		/* what -h / --help prints */
	const struct ctl_opt	*opts;		/* ends with { NULL } */
	int			 in_order;	/* the first operand ends
						 * options */
	int			 operands;	/* at most; -1: any number */
};

/* What ctl_opts_parse() returns for -h / --help. */
#define CTL_HELP	(-1)

/*
 * Parses argv[1..] with cl's options and the ones every command shares:
 * -v / --verbose, -c / --config FILE (into c) and -h / --help.  Returns
 * CTL_OK (OUT: *argi, the first operand), CTL_HELP (usage printed) or
 * CTL_EUSAGE (one usage line and a --help hint printed).
 */
int ctl_opts_parse(struct ctl *c, const struct ctl_cmdline *cl, int argc,
    char **argv, int *argi);

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

/*
 * After ctl_connect: resolves c->hk against the store (lib/ident/hkey.h).
 * CTL_OK; else one line and CTL_ECONFIG (this config cannot hash as the
 * store does) or CTL_ESTORE.
 */
int ctl_hkey(struct ctl *c, const char *cmd);

/* The longest lease cfg gives (the default's or a route's): how long an
 * owner whose server restarted under it may take to come back. */
int64_t ctl_longest_lease_ms(const struct cfg *cfg);

/* After ctl_connect: sets what tells an in-progress row's owner gone
 * (store_admin_owner_facts) for the unforced forget rule, from the
 * config's longest lease.  CTL_OK; else one line and CTL_ESTORE. */
int ctl_owner_facts(struct ctl *c, const char *cmd);

/*
 * The scope digests to look a key up under, in order: the keyed form of
 * plain when the store is keyed, then plain itself (a row stored before
 * the key was set).  OUT: out[0..*n).  Needs ctl_hkey first.
 */
void ctl_scopes(const struct ctl *c, const unsigned char plain[FP_LEN],
    unsigned char out[2][FP_LEN], size_t *n);

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
