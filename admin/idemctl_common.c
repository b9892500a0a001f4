/* What idemctl's commands share: exit codes, config, store set-up, output. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idemctl_common.h"
#include "store_admin.h"
#include "store_hkey.h"

void
ctl_err(const char *fmt, ...)
{
	char	 line[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "idemctl: %s\n", line);
}

int
ctl_usage_err(const char *cmd, const char *fmt, ...)
{
	char	 line[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One line, as every failure (cron mails it whole). */
	if (cmd != NULL)
		fprintf(stderr, "idemctl: %s: %s (see 'idemctl %s --help')\n",
		    cmd, line, cmd);
	else
		fprintf(stderr, "idemctl: %s (see 'idemctl --help')\n", line);
	return CTL_EUSAGE;
}

/* Room for a command's options and the shared ones. */
#define OPTS_MAX	16
/* getopt values of long-only options: 1000 + their index. */
#define OPT_LONG_ONLY	1000

/* Reports a getopt_long() failure (ch is '?' or ':'); CTL_EUSAGE. */
static int
opt_err(const char *cmd, int ch, char **argv)
{
	const char	*arg = optind > 0 ? argv[optind - 1] : "?";

	/* An option is named as typed: a long one by its name (optopt is
	 * its letter, or a number past 255 where it has none). */
	if (ch == ':') {
		if (strncmp(arg, "--", 2) != 0 && optopt > 0 && optopt < 256 &&
		    optopt != ':')
			return ctl_usage_err(cmd, "option '-%c' needs a value",
			    optopt);
		return ctl_usage_err(cmd, "option '%s' needs a value", arg);
	}
	if (optopt > 0 && optopt < 256)
		return ctl_usage_err(cmd, "unknown option '-%c'", optopt);
	return ctl_usage_err(cmd, "unknown option '%s'", arg);
}

static int
opt_has_arg(const struct ctl_opt *o)
{
	return o->kind != CTL_OPT_FLAG && o->kind != CTL_OPT_PRINT;
}

/* A command line's options, and the same spelled for getopt_long(). */
struct opt_tables {
	const struct ctl_opt	*all[OPTS_MAX];
	struct option		 longopts[OPTS_MAX];	/* ends with zeros */
	char			 shorts[2 + 2 * OPTS_MAX];
	size_t			 n;			/* options in all */
};

/* Lists the options of cl then of common[] (ncommon) in t->all, and spells
 * them for getopt_long().  OUT: t. */
static void
opt_tables(const struct ctl_cmdline *cl, const struct ctl_opt *common,
    size_t ncommon, struct opt_tables *t)
{
	const struct ctl_opt	*o;
	struct option		*lo;
	size_t			 i, n = 0;
	char			*sp = t->shorts;

	for (o = cl->opts; o->name != NULL; o++)
		t->all[n++] = o;
	for (i = 0; i < ncommon; i++)
		t->all[n++] = &common[i];
	assert(n < OPTS_MAX);
	if (cl->in_order)
		*sp++ = '+';
	*sp++ = ':';
	for (i = 0; i < n; i++) {
		o = t->all[i];
		lo = &t->longopts[i];
		lo->name = o->name;
		lo->has_arg = opt_has_arg(o) ? required_argument : no_argument;
		lo->flag = NULL;
		lo->val = o->letter != 0 ? o->letter : OPT_LONG_ONLY + (int)i;
		if (o->letter == 0 || o->elsewhere)
			continue;
		*sp++ = (char)o->letter;
		if (opt_has_arg(o))
			*sp++ = ':';
	}
	memset(&t->longopts[n], 0, sizeof(t->longopts[n]));
	*sp = '\0';
	t->n = n;
}

/* Stores value v of option o; CTL_OK, CTL_HELP or one usage line. */
static int
opt_store(const char *cmd, const struct ctl_opt *o, const char *v)
{
	long	 n;

	if (o->elsewhere)
		return ctl_usage_err(cmd, "unknown option '--%s'", o->name);
	switch (o->kind) {
	case CTL_OPT_FLAG:
		*(int *)o->dst = 1;
		return CTL_OK;
	case CTL_OPT_STRING:
		*(const char **)o->dst = v;
		return CTL_OK;
	case CTL_OPT_LONG:
		if (ctl_parse_long(v, o->min, o->max, &n) != 0)
			break;
		*(long *)o->dst = n;
		return CTL_OK;
	case CTL_OPT_DURATION:
		if (cfg_parse_duration(v, o->dst) != 0)
			break;
		return CTL_OK;
	case CTL_OPT_PARSE:
		if (o->parse(v, o->dst) != 0)
			break;
		return CTL_OK;
	case CTL_OPT_PRINT:
		fputs(o->text, stdout);
		return CTL_HELP;
	}
	return ctl_usage_err(cmd, "--%s wants %s, not '%s'", o->name, o->wants,
	    v);
}

int
ctl_opts_parse(struct ctl *c, const struct ctl_cmdline *cl, int argc,
    char **argv, int *argi)
{
	const struct ctl_opt	 common[] = {
		{ .name = "verbose", .letter = 'v', .kind = CTL_OPT_FLAG,
		  .dst = &c->verbose },
		{ .name = "config", .letter = 'c', .kind = CTL_OPT_STRING,
		  .dst = &c->cfgpath },
		{ .name = "help", .letter = 'h', .kind = CTL_OPT_PRINT,
		  .text = cl->usage },
	};
	struct opt_tables	 t;
	unsigned char		 seen[OPTS_MAX] = { 0 };
	size_t			 i;
	int			 ch, rc;

	opt_tables(cl, common, sizeof(common) / sizeof(common[0]), &t);
	/* -c before the command counts: "idemctl -c A run -c B". */
	for (i = 0; i < t.n; i++)
		if (t.all[i]->dst == &c->cfgpath && c->cfgpath != NULL)
			seen[i] = 1;
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, t.shorts, t.longopts, NULL)) !=
	    -1) {
		for (i = 0; i < t.n; i++)
			if (ch == t.longopts[i].val)
				break;
		if (ch == '?' || ch == ':' || i == t.n)
			return opt_err(cl->cmd, ch, argv);
		/* Which of two keys (or configs) was meant: not ours to
		 * guess.  Flags may repeat. */
		if (t.all[i]->kind != CTL_OPT_FLAG &&
		    t.all[i]->kind != CTL_OPT_PRINT && seen[i]++)
			return ctl_usage_err(cl->cmd, "--%s given twice",
			    t.all[i]->name);
		if ((rc = opt_store(cl->cmd, t.all[i], optarg)) != CTL_OK)
			return rc;
	}
	if (cl->operands >= 0 && argc - optind > cl->operands)
		return ctl_usage_err(cl->cmd, "unexpected argument '%s'",
		    argv[optind + cl->operands]);
	*argi = optind;
	return CTL_OK;
}

int
ctl_load(struct ctl *c)
{
	char		 err[512];
	enum idem_err	 er;

	if (c->cfg != NULL)
		return CTL_OK;
	if (c->cfgpath == NULL)
		c->cfgpath = CTL_DEFAULT_CONFIG;
	er = cfg_load(c->cfgpath, &c->cfg, err, sizeof(err));
	if (er != IDEM_OK) {
		if (err[0] == '\0')
			snprintf(err, sizeof(err), "%s: %s", c->cfgpath,
			    idem_strerror(er));
		ctl_err("%s", err);
		return CTL_ECONFIG;
	}
	/* An operator without the key file still runs stats, cleanup and
	 * show (which then says what it cannot open). */
	if (cfg_load_secrets(c->cfg, c->secrets_err, sizeof(c->secrets_err))
	    == IDEM_OK)
		c->secrets_err[0] = '\0';
	if (c->mysql_group != NULL &&
	    cfg_set_mysql_group(c->cfg, c->mysql_group) != IDEM_OK) {
		ctl_err("out of memory");
		return CTL_ECONFIG;
	}
	return CTL_OK;
}

int
ctl_connect(struct ctl *c)
{
	char		 err[1024];
	int		 rc;
	enum idem_err	 er;

	if ((rc = ctl_load(c)) != CTL_OK)
		return rc;
	if (c->st == NULL) {
		/* A missing option file or group, or one naming no database,
		 * is the configuration's fault, not a passing outage. */
		if (cfg_check_option_file(c->cfg, err, sizeof(err)) !=
		    IDEM_OK) {
			ctl_err("%s", err);
			return CTL_ECONFIG;
		}
		er = store_new(c->cfg, &c->st);
		if (er != IDEM_OK) {
			ctl_err("database: %s", idem_strerror(er));
			return CTL_ESTORE;
		}
		if (!c->quick)
			store_set_patient(c->st);
	}
	if (store_connect(c->st) != IDEM_OK) {
		const char	*e = store_last_error(c->st);

		ctl_err("database unreachable: %s",
		    e != NULL && *e != '\0' ? e : "connection failed");
		return CTL_ESTORE;
	}
	return CTL_OK;
}

int
ctl_need_schema(struct ctl *c)
{
	char	 why[160];
	int	 v = 0;

	if (store_schema_version(c->st, &v) != IDEM_OK) {
		ctl_err("database: cannot read schema version: %s",
		    store_last_error(c->st));
		return CTL_ESTORE;
	}
	if (store_schema_old(v, why, sizeof(why))) {
		ctl_err("%s", why);
		return CTL_ESCHEMA;
	}
	return CTL_OK;
}

int
ctl_hkey(struct ctl *c, const char *cmd)
{
	if (store_hkey_resolve(c->st, &c->hk) != IDEM_OK) {
		ctl_err("%s: %s", cmd, store_last_error(c->st));
		return CTL_ESTORE;
	}
	if (hkey_state(&c->hk) != HKEY_REFUSED)
		return CTL_OK;
	/* A key file that could not be read explains the refusal best. */
	ctl_err("%s: %s", cmd, c->secrets_err[0] != '\0' ? c->secrets_err :
	    c->hk.why);
	return CTL_ECONFIG;
}

int64_t
ctl_longest_lease_ms(const struct cfg *cfg)
{
	int64_t	 ms = cfg->defaults.lease_ms;
	size_t	 i;

	for (i = 0; i < cfg->nroutes; i++)
		if (cfg->routes[i].lease_ms > ms)
			ms = cfg->routes[i].lease_ms;
	return ms;
}

int
ctl_owner_facts(struct ctl *c, const char *cmd)
{
	if (store_admin_owner_facts(c->st, ctl_longest_lease_ms(c->cfg)) ==
	    IDEM_OK)
		return CTL_OK;
	ctl_err("%s: %s", cmd, store_last_error(c->st));
	return CTL_ESTORE;
}

void
ctl_scopes(const struct ctl *c, const unsigned char plain[FP_LEN],
    unsigned char out[2][FP_LEN], size_t *n)
{
	*n = 0;
	if (hkey_state(&c->hk) == HKEY_KEYED)
		hkey_hmac(&c->hk, plain, out[(*n)++]);
	memcpy(out[(*n)++], plain, FP_LEN);
}

void
ctl_close(struct ctl *c)
{
	store_free(c->st);
	c->st = NULL;
	cfg_free(c->cfg);
	c->cfg = NULL;
}

int
ctl_parse_scope(const char *s, unsigned char out[FP_LEN])
{
	char		 kind[8 + 256];
	const char	*colon;
	size_t		 i, n;

	if (s == NULL || strcmp(s, "none") == 0) {
		fp_scope("none", "", out);
		return 0;
	}
	if (strncmp(s, "remote_user:", 12) == 0) {
		fp_scope("remote_user", s + 12, out);
		return 0;
	}
	/* idemctl run's keys: a namespace no HTTP request reaches. */
	if (strcmp(s, "job") == 0) {
		fp_scope("job", "", out);
		return 0;
	}
	if (strncmp(s, "job:", 4) == 0) {
		fp_scope("job", s + 4, out);
		return 0;
	}
	if (strncmp(s, "header:", 7) == 0) {
		s += 7;
		if ((colon = strchr(s, ':')) == NULL || colon == s)
			return -1;
		n = (size_t)(colon - s);
		if (n > 255)
			return -1;
		memcpy(kind, "header:", 7);
		for (i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)s[i];

			if (ch <= 0x20 || ch >= 0x7f)
				return -1;
			kind[7 + i] = (char)tolower(ch);
		}
		kind[7 + n] = '\0';
		/* by meaning, as the gateway reads it */
		if (strcmp(kind, "header:authorization") == 0) {
			char	*v = fp_auth_norm(colon + 1);

			if (v == NULL)
				return -1;
			fp_scope(kind, v, out);
			fp_auth_free(v);
			return 0;
		}
		fp_scope(kind, colon + 1, out);
		return 0;
	}
	return -1;
}

int
ctl_parse_key(const char *s, char *out, size_t *len)
{
	return key_parse(s, strlen(s), out, len) == IDEM_OK ? 0 : -1;
}

int
ctl_parse_long(const char *s, long min, long max, long *v)
{
	char	*end;
	long	 n;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || n < min || n > max)
		return -1;
	*v = n;
	return 0;
}

void
ctl_put_escaped(FILE *f, const char *p, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch == '\\')
			fputs("\\\\", f);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
}

void
ctl_fmt_time(double t, char *out, size_t outlen)
{
	struct tm	 tm;
	time_t		 s;
	long		 ms;
	char		 base[32];

	if (!(t > 0) || t > (double)ANSWER_END_OF_TIME) {
		snprintf(out, outlen, "-");
		return;
	}
	s = (time_t)t;
	ms = (long)((t - (double)s) * 1000.0 + 0.5);
	if (ms >= 1000) {
		s++;
		ms -= 1000;
	}
	gmtime_r(&s, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, outlen, "%s.%03ldZ", base, ms);
}
