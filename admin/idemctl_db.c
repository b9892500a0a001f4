/* idemctl migrate and check: the schema and the health of the set-up. */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "grants.h"
#include "idemctl_db.h"
#include "store_admin.h"
#include "store_hkey.h"

const char ctl_migrate_usage[] =
"usage: idemctl [-c FILE] migrate\n"
"\n"
"Applies the schema migrations this build carries that the database lacks,\n"
"in order; safe to run again.  Prints one line: the schema version and how\n"
"many migrations were applied.  Needs CREATE and ALTER on the database.\n"
"\n"
"Exit: 0 ok, 1 usage, 2 config, 3 database.\n";

const char ctl_check_usage[] =
"usage: idemctl [-c FILE] check [--role gateway|cleanup|console]\n"
"\n"
"Checks the config file, that the database is reachable, that the schema is\n"
"current, and which programs the MySQL user has privileges enough for\n"
"(gateway: idemgate; cleanup: idemctl cleanup/forget; console: idemtop and\n"
"idemctl show/stats/metrics; see sql/grants.sql).  One line per finding,\n"
"starting '[ ok ]', '[warn]' or '[fail]'.  Without --role or -g, each\n"
"program is checked as the user of its own option-file group when the file\n"
"has it ([idem_cleanup], [idem_console]; the gateway: the config's group),\n"
"and that user's gaps fail; other gaps are warnings unless no program can\n"
"run.  With -g, that group's user for every program; with --role ROLE,\n"
"that program's missing privileges fail.\n"
"\n"
"Exit: 0 all ok (warnings allowed), 1 usage, 2 config, 3 database,\n"
"      6 schema, 9 privileges missing.\n";

int
ctl_migrate(struct ctl *c, int argc, char **argv)
{
	static const struct ctl_opt opts[] = { { NULL } };
	const struct ctl_cmdline cl = { .cmd = "migrate",
	    .usage = ctl_migrate_usage, .opts = opts };
	int		 rc, argi, applied = 0, v = 0;
	enum idem_err	 er;

	if ((rc = ctl_opts_parse(c, &cl, argc, argv, &argi)) != CTL_OK)
		return rc == CTL_HELP ? CTL_OK : rc;
	if ((rc = ctl_connect(c)) != CTL_OK)
		return rc;
	if ((er = store_migrate(c->st, &applied)) != IDEM_OK) {
		/* 1419: triggers with binary logging on (every Galera node). */
		ctl_err("migrate failed: %s%s", store_last_error(c->st),
		    store_errno(c->st) == 1419 ? " -- set "
		    "log_bin_trust_function_creators = 1 on the server (every "
		    "node of a cluster), or migrate as a user with SUPER" : "");
		return CTL_ESTORE;
	}
	if (store_schema_version(c->st, &v) != IDEM_OK) {
		ctl_err("migrate: cannot read schema version: %s",
		    store_last_error(c->st));
		return CTL_ESTORE;
	}
	if (applied == 0)
		printf("schema at version %d, already current\n", v);
	else
		printf("schema at version %d, applied %d migration%s\n", v,
		    applied, applied == 1 ? "" : "s");
	return CTL_OK;
}

static void
finding(const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
finding(const char *tag, const char *fmt, ...)
{
	va_list	 ap;

	printf("[%s] ", tag);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void
fmt_age(double secs, char *out, size_t len)
{
	if (secs < 120)
		snprintf(out, len, "%.0f s", secs);
	else if (secs < 7200)
		snprintf(out, len, "%.0f min", secs / 60);
	else if (secs < 172800)
		snprintf(out, len, "%.1f h", secs / 3600);
	else
		snprintf(out, len, "%.1f d", secs / 86400);
}

/*
 * The programs one config file may serve with a least-privilege user;
 * what each needs comes from sql/grants.sql (lib/store/grants.h).  group:
 * the option-file group of that program's user, as the README and
 * etc/my.cnf.example name it (the gateway's is the config's mysql_group).
 */
static const struct {
	const char	*name;
	const char	*who;
	const char	*group;
} roles[] = {
	{ "gateway", "idemgate", NULL },
	{ "cleanup", "idemctl cleanup/forget", "idem_cleanup" },
	{ "console", "idemtop, idemctl show/stats/metrics", "idem_console" },
};

#define NROLES	(sizeof(roles) / sizeof(roles[0]))
/* Room for the headers and the rest of the statement. */
#define CHECK_PACKET_SLACK	(64 * 1024)
#define CHECK_NPRIVS		32

static int
has_priv(const struct admin_priv *p, size_t n, const char *need)
{
	size_t		 i, tl = strcspn(need, ":");

	for (i = 0; i < n; i++)
		if (strlen(p[i].table) == tl &&
		    strncmp(p[i].table, need, tl) == 0 &&
		    strcmp(p[i].what, need + tl + 1) == 0)
			return p[i].ok;
	return 0;
}

/* What role r needs that p lacks, ", "-separated; "" when fit.  OUT:
 * missing. */
static void
role_missing(const struct admin_priv *p, size_t n, size_t r, char *missing,
    size_t len)
{
	size_t		 k, off = 0;

	missing[0] = '\0';
	for (k = 0; k < ngrants; k++) {
		if (strcmp(grants[k].role, roles[r].name) != 0 ||
		    has_priv(p, n, grants[k].need))
			continue;
		off += (size_t)snprintf(missing + off, len - off, "%s%s",
		    off ? ", " : "", grants[k].need);
		if (off >= len)
			off = len - 1;
	}
}

/*
 * One line for role r as the user whose privileges p holds: ok, or its
 * gaps tagged gap ("warn" or "fail").  via follows the role's name
 * (", group [G]" or ""), hint the list of gaps.  Returns 1 when fit.
 */
static int
report_role(const struct admin_priv *p, size_t n, size_t r, const char *gap,
    const char *via, const char *hint)
{
	char		 missing[512];

	role_missing(p, n, r, missing, sizeof(missing));
	if (missing[0] == '\0') {
		finding(" ok ", "privileges enough for %s (%s)%s",
		    roles[r].name, roles[r].who, via);
		return 1;
	}
	finding(gap, "privileges missing for %s (%s)%s: %s%s", roles[r].name,
	    roles[r].who, via, missing, hint);
	return 0;
}

/* The last line when no program could run with these users. */
static int
check_none_fit(void)
{
	finding("fail", "privileges: no user here can serve idemgate, "
	    "idemctl cleanup or the console (see sql/grants.sql)");
	return CTL_EPRIV;
}

/*
 * One line per role.  Without --role, a role the user cannot fill is a
 * warning and only a user fit for none fails; with --role, that role's
 * gaps fail.  Returns CTL_OK or CTL_EPRIV.
 */
static int
check_roles(const struct admin_priv *p, size_t n, const char *want)
{
	size_t		 r;
	int		 fit = 0, result = CTL_OK;

	for (r = 0; r < NROLES; r++) {
		int	 wanted = want != NULL &&
		    strcmp(want, roles[r].name) == 0;

		if (want != NULL && !wanted)
			continue;
		if (report_role(p, n, r, wanted ? "fail" : "warn", "", ""))
			fit++;
		else if (wanted)
			result = CTL_EPRIV;
	}
	if (want == NULL && fit == 0)
		result = check_none_fit();
	return result;
}

/*
 * Role r as the user of its own option-file group, which exists for it:
 * gaps fail.  *fit counts a fit role.  Returns CTL_OK, CTL_EPRIV, or the
 * code of a failed log-in.
 */
static int
check_group_role(struct ctl *c, size_t r, int *fit)
{
	struct ctl		 sub = { .cfgpath = c->cfgpath,
	    .mysql_group = roles[r].group, .verbose = c->verbose };
	struct admin_priv	 privs[CHECK_NPRIVS];
	char			 via[64];
	size_t			 n = 0;
	int			 rc;

	if ((rc = ctl_connect(&sub)) != CTL_OK) {
		finding("fail", "%s: database unreachable as group [%s] of %s",
		    roles[r].name, roles[r].group,
		    c->cfg->mysql_defaults_file);
		ctl_close(&sub);
		return rc;
	}
	store_admin_privileges(sub.st, privs, CHECK_NPRIVS, &n);
	ctl_close(&sub);
	snprintf(via, sizeof(via), ", group [%s]", roles[r].group);
	if (!report_role(privs, n, r, "fail", via, ""))
		return CTL_EPRIV;
	(*fit)++;
	return CTL_OK;
}

/*
 * No --role, no -g: each program as the user it runs as.  A role whose
 * group ([idem_cleanup], [idem_console]) the option file has is checked
 * as that group's user, the gateway as the config's (its own): their gaps
 * fail.  A role whose group is missing is checked as the config's user,
 * where a gap is a warning that says how to check it.
 */
static int
check_role_groups(struct ctl *c, const struct admin_priv *p, size_t n)
{
	const char	*file = c->cfg->mysql_defaults_file;
	char		 hint[512];
	size_t		 r;
	int		 fit = 0, rc, result = CTL_OK;

	for (r = 0; r < NROLES; r++) {
		if (roles[r].group != NULL &&
		    cfg_option_file_has_group(file, roles[r].group)) {
			rc = check_group_role(c, r, &fit);
			if (result == CTL_OK)
				result = rc;
			continue;
		}
		/* The config's group is the gateway's own user: what it
		 * lacks, idemgate lacks (503 on every protected request). */
		if (roles[r].group == NULL) {
			if (report_role(p, n, r, "fail", "", ""))
				fit++;
			else if (result == CTL_OK)
				result = CTL_EPRIV;
			continue;
		}
		snprintf(hint, sizeof(hint), "; no [%s] group in %s: "
		    "add one with the %s user (sql/grants.sql), or run "
		    "'idemctl -g GROUP check --role %s'",
		    roles[r].group, file ? file : "mysql_defaults_file",
		    roles[r].group, roles[r].name);
		fit += report_role(p, n, r, "warn", "", hint);
	}
	if (fit == 0)
		result = check_none_fit();
	return result;
}

/* --role: one of roles[]. */
static int
parse_role(const char *v, void *dst)
{
	size_t	 r;

	for (r = 0; r < NROLES; r++)
		if (strcmp(v, roles[r].name) == 0) {
			*(const char **)dst = v;
			return 0;
		}
	return -1;
}

static int
check_opts(struct ctl *c, int argc, char **argv, const char **role)
{
	const struct ctl_opt	 opts[] = {
		{ .name = "role", .letter = 'r', .kind = CTL_OPT_PARSE,
		  .dst = role, .parse = parse_role,
		  .wants = "gateway, cleanup or console" },
		{ NULL },
	};
	const struct ctl_cmdline cl = { .cmd = "check",
	    .usage = ctl_check_usage, .opts = opts };
	int			 argi;

	return ctl_opts_parse(c, &cl, argc, argv, &argi);
}

/*
 * A stored answer travels in one packet: its body, its headers and the
 * statement around them must fit the server's max_allowed_packet.  One
 * that does not is delivered once and kept as a tombstone (410 on retry).
 */
static void
check_packet(struct ctl *c)
{
	const struct route	*worst = NULL;
	uint64_t		 packet = 0;
	size_t			 i;

	if (store_admin_max_packet(c->st, &packet) != IDEM_OK)
		return;
	for (i = 0; i < c->cfg->nroutes; i++)
		if (worst == NULL ||
		    c->cfg->routes[i].max_response > worst->max_response)
			worst = &c->cfg->routes[i];
	if (worst == NULL)
		return;
	if ((uint64_t)worst->max_response + CHECK_PACKET_SLACK > packet)
		finding("warn", "max_response of route %s (%zu bytes) does not "
		    "fit the server's max_allowed_packet (%llu) with %d KiB to "
		    "spare: larger answers are delivered once and kept as "
		    "tombstones", worst->prefix, worst->max_response,
		    (unsigned long long)packet, CHECK_PACKET_SLACK / 1024);
	else
		finding(" ok ", "max_allowed_packet %llu holds max_response "
		    "%zu", (unsigned long long)packet, worst->max_response);
}

/* Over TCP, whether the store's traffic (answers, keys) is protected:
 * TLS, with the server's certificate verified.  A unix socket stays on
 * the host: nothing to say. */
static void
check_transport(const struct ctl *c, const struct admin_mode *m)
{
	const char	*file = c->cfg->mysql_defaults_file ?
	    c->cfg->mysql_defaults_file : "the option file";

	if (!m->tcp)
		return;
	/* The client library reads a bare ssl-verify-server-cert as off:
	 * the line to write says = 1. */
	if (m->cipher[0] == '\0')
		finding("warn", "store reached over TCP without TLS: answers "
		    "and keys cross the network in clear; set ssl-ca = FILE "
		    "and ssl-verify-server-cert = 1 in group [%s] of %s",
		    m->group, file);
	else if (!m->verified)
		finding("warn", "store reached over TLS (%s) without "
		    "verifying the server's name: set ssl-ca = FILE and "
		    "ssl-verify-server-cert = 1 in group [%s] of %s",
		    m->cipher, m->group, file);
	else
		finding(" ok ", "store reached over TLS (%s), server "
		    "certificate verified", m->cipher);
}

/* Which protocol: one server with named locks, or a Galera node. */
static void
check_mode(struct ctl *c)
{
	struct admin_mode	 m;

	if (store_admin_mode(c->st, &m) != IDEM_OK) {
		finding("warn", "mode unknown: %s", store_last_error(c->st));
		return;
	}
	if (!m.galera)
		finding(" ok ", "single server (named locks), group [%s]",
		    m.group);
	else if (strcmp(m.state, "Synced") == 0)
		finding(" ok ", "galera, %d node%s, synced, group [%s]",
		    m.nodes, m.nodes == 1 ? "" : "s", m.group);
	else
		finding("warn", "galera, %d node%s, this node %s (not "
		    "synced), group [%s]", m.nodes, m.nodes == 1 ? "" : "s",
		    m.state, m.group);
	if (m.galera && m.quota_memory)
		finding("warn", "idem_quota is a MEMORY table, which Galera "
		    "does not replicate: new_keys_per_minute counts each "
		    "node's keys apart; replace it with an empty InnoDB one "
		    "(README, Running on Galera)");
	check_transport(c, &m);
}

/* Whether stored answers are sealed (SPEC section 11), and the store's
 * password kept from other users. */
static int
check_secrets(struct ctl *c)
{
	const struct cfg_secret	*k = cfg_secret(c->cfg, NULL);
	char			 why[PATH_MAX + 160];

	if (cfg_optfile_exposed(c->cfg, why, sizeof(why)))
		finding("warn", "%s", why);
	if (c->cfg->secret_key_file == NULL)
		finding("warn", "answers stored in clear (no "
		    "secret_key_file)");
	else if (c->secrets_err[0] != '\0') {
		/* Not readable by this user (an operator's check), its mode
		 * fine (stat needs no read permission) or not to be seen
		 * (no search permission on its directory): the gateway's
		 * user may read it.  Anything else refuses the gateway's start:
		 * a failure. */
		struct stat	 sb;

		if (access(c->cfg->secret_key_file, R_OK) != 0 &&
		    errno == EACCES &&
		    (stat(c->cfg->secret_key_file, &sb) != 0 ? errno ==
		    EACCES : S_ISREG(sb.st_mode) && (sb.st_mode & (S_IWGRP |
		    S_IWOTH | S_IROTH)) == 0)) {
			finding("warn", "%s", c->secrets_err);
			return CTL_OK;
		}
		finding("fail", "%s", c->secrets_err);
		return CTL_ECONFIG;
	} else if (k != NULL)
		finding(" ok ", "answers sealed, current key %s (%zu key%s)",
		    k->id, c->cfg->nsecrets, c->cfg->nsecrets == 1 ? "" : "s");
	return CTL_OK;
}

/*
 * The key id that wraps the store's hashing key (lib/ident/hkey.h) into
 * hkid, and what it means: made by the first keyed gateway, it must stay
 * in the file until rekey wraps it under the current key.  cur NULL: no
 * key file.  CTL_ECONFIG when no gateway with this config could hash as
 * the store does.
 */
static int
check_hkid(struct ctl *c, const struct cfg_secret *cur, char *hkid,
    size_t len)
{
	enum idem_err	 er = store_hkey_kid(c->st, hkid, len);
	int		 keyed = 0;

	if (er == IDEM_ENOTFOUND &&
	    (er = store_hkey_keyed_rows(c->st, &keyed)) == IDEM_OK) {
		if (keyed) {
			finding("fail", "idem_hash_key is empty but rows of "
			    "idem_keys are keyed (hashed = 1): the store's "
			    "hashing key was lost; put its row back (every "
			    "gateway answers 500 store-key-missing)");
			return CTL_ECONFIG;
		}
		er = IDEM_ENOTFOUND;
	}
	if (er == IDEM_ENOTFOUND && cur == NULL)
		return CTL_OK;
	if (er == IDEM_ENOTFOUND)
		finding(" ok ", "hashing key not made yet (the first keyed "
		    "gateway or 'idemctl rekey' makes it)");
	else if (er != IDEM_OK)
		finding("warn", "hashing key unreadable: %s",
		    store_last_error(c->st));
	else if (cur == NULL) {
		finding("fail", "the store's scope hashes and fingerprints "
		    "are keyed (hashing key wrapped under key %s) but this "
		    "config sets no secret_key_file: its gateway answers "
		    "500 store-key-missing", hkid);
		return CTL_ECONFIG;
	} else if (cfg_secret(c->cfg, hkid) == NULL) {
		finding("fail", "the hashing key is wrapped under key %s, "
		    "which the key file lacks: a gateway with it answers 500 "
		    "store-key-missing; put that line back", hkid);
		return CTL_ECONFIG;
	} else
		finding(" ok ", "scope hashes and fingerprints keyed "
		    "(hashing key wrapped under key %s%s)", hkid,
		    strcmp(hkid, cur->id) == 0 ? ", current" : ": run "
		    "'idemctl rekey'");
	return CTL_OK;
}

/* With a key file: how many rows each key id seals, so an operator knows
 * when an older line may go (after idemctl rekey); and the hashing key.
 * CTL_OK, or check_hkid's refusal. */
static int
check_kids(struct ctl *c)
{
	struct kid_count	 kc[64];
	const struct cfg_secret	*cur = cfg_secret(c->cfg, NULL);
	const struct cfg_secret	*sk;
	char			 hkid[CFG_SECRET_ID_MAX + 1] = "";
	size_t			 n = 0, i, j;
	int			 rc;

	if (c->cfg->secret_key_file != NULL && cur == NULL)
		return CTL_OK;		/* unreadable: check_secrets said so */
	rc = check_hkid(c, cur, hkid, sizeof(hkid));
	if (cur == NULL || store_admin_kid_counts(c->st, kc,
	    sizeof(kc) / sizeof(kc[0]), &n) != IDEM_OK)
		return rc;
	for (i = 0; i < n; i++) {
		if (kc[i].kid[0] == '\0')
			finding(" ok ", "%llu rows without a sealed answer "
			    "(in progress, tombstones, or answers from "
			    "before the key: 'idemctl rekey' seals those)",
			    (unsigned long long)kc[i].rows);
		else if (strcmp(kc[i].kid, cur->id) == 0)
			finding(" ok ", "key %s: %llu rows (current)",
			    kc[i].kid, (unsigned long long)kc[i].rows);
		else if (cfg_secret(c->cfg, kc[i].kid) != NULL)
			finding("warn", "key %s: %llu rows (older key: run "
			    "'idemctl rekey', then its line can go)",
			    kc[i].kid, (unsigned long long)kc[i].rows);
		else
			finding("warn", "key %s: %llu rows, not in the key "
			    "file: unreadable until they expire", kc[i].kid,
			    (unsigned long long)kc[i].rows);
	}
	for (j = 0; j < c->cfg->nsecrets; j++) {
		for (i = 0; i < n; i++)
			if (strcmp(kc[i].kid, c->cfg->secrets[j].id) == 0)
				break;
		sk = &c->cfg->secrets[j];
		if (i < n)
			continue;
		if (sk != cur && strcmp(sk->id, hkid) == 0)
			finding("warn", "key %s: no rows, but it wraps the "
			    "hashing key: run 'idemctl rekey', then its line "
			    "can go", sk->id);
		else
			finding(" ok ", "key %s: no rows%s", sk->id, sk == cur ?
			    " (current)" : " (its line can be deleted)");
	}
	return rc;
}

/* The schema's version against this build's; CTL_OK, or the code. */
static int
check_schema(struct ctl *c)
{
	char	 why[160];
	int	 v = 0, want = store_schema_expected();

	if (store_schema_version(c->st, &v) != IDEM_OK) {
		finding("fail", "schema version unreadable: %s",
		    store_last_error(c->st));
		return CTL_ESTORE;
	}
	if (store_schema_old(v, why, sizeof(why))) {
		finding("fail", "%s", why);
		return CTL_ESCHEMA;
	}
	if (v > want)
		finding("warn", "schema at version %d, newer than this build "
		    "(%d)", v, want);
	else
		finding(" ok ", "schema at version %d (current)", v);
	return CTL_OK;
}

/* The cleanup gauges as the console's or cleanup's user, when the
 * config's own (the gateway's) may not read the runs; -1 if neither. */
static int
gauges_as_role(struct ctl *c, struct admin_gauges *g)
{
	static const char *const groups[] = { "idem_console", "idem_cleanup" };
	struct ctl	 sub;
	size_t		 i;
	int		 ok = -1;

	for (i = 0; i < 2 && ok != 0; i++) {
		if (!cfg_option_file_has_group(c->cfg->mysql_defaults_file,
		    groups[i]))
			continue;
		memset(&sub, 0, sizeof(sub));
		sub.cfgpath = c->cfgpath;
		sub.mysql_group = groups[i];
		sub.verbose = c->verbose;
		if (ctl_connect(&sub) == CTL_OK &&
		    store_admin_gauges(sub.st, g) == IDEM_OK)
			ok = 0;
		ctl_close(&sub);
	}
	return ok;
}

/* Whether cleanup runs from cron, and keeps up. */
static void
check_cleanups(struct ctl *c)
{
	struct admin_gauges	 g;
	char			 age[32];
	double			 ago;

	/* Said, not passed over: the gateway's user may not read the runs
	 * (the console's and cleanup's may: asked as them when the option
	 * file has their groups). */
	if (store_admin_gauges(c->st, &g) != IDEM_OK &&
	    gauges_as_role(c, &g) != 0) {
		finding("warn", "cannot tell whether cleanup runs: %s (run "
		    "check as the console's user: -g idem_console)",
		    store_last_error(c->st));
		return;
	}
	if (!g.has_cleanup_ok && g.expired > 0)
		finding("warn", "no successful cleanup run recorded "
		    "(schedule 'idemctl cleanup' from cron)");
	else if (!g.has_cleanup_ok)
		finding(" ok ", "no cleanup run recorded yet; no key has "
		    "expired");
	else {
		ago = (double)time(NULL) - g.last_cleanup_ok_end;
		fmt_age(ago > 0 ? ago : 0, age, sizeof(age));
		finding(ago * 1000 > (double)c->cfg->cleanup_warn_ms ? "warn" :
		    " ok ", "last successful cleanup %s ago", age);
	}
	if (g.expired > 0)
		finding(g.has_cleanup_ok ? " ok " : "warn",
		    "%llu expired keys waiting for cleanup",
		    (unsigned long long)g.expired);
	if (c->cfg->cleanup_max_lag_ms > 0 && (c->cfg->replicas == NULL ||
	    c->cfg->replicas[0] == '\0'))
		finding("warn", "[cleanup] max_lag set, but no [cleanup] "
		    "replicas: cleanup watches none");
}

int
ctl_check(struct ctl *c, int argc, char **argv)
{
	struct admin_priv	 privs[CHECK_NPRIVS];
	size_t			 n = 0;
	const char		*role = NULL;
	char			 why[1024];
	int			 rc, result, config_rc;

	if ((rc = check_opts(c, argc, argv, &role)) != 0)
		return rc < 0 ? CTL_OK : rc;
	if (c->cfgpath == NULL)
		c->cfgpath = CTL_DEFAULT_CONFIG;
	if ((rc = ctl_load(c)) != CTL_OK) {
		finding("fail", "config %s is not valid (see above)",
		    c->cfgpath);
		return rc;
	}
	finding(" ok ", "config %s valid (%zu route%s)", c->cfgpath,
	    c->cfg->nroutes, c->cfg->nroutes == 1 ? "" : "s");
	config_rc = check_secrets(c);
	/* Only cleanup uses them: said here, not in every command's way. */
	if (cfg_check_replicas(c->cfg, why, sizeof(why)) != IDEM_OK) {
		finding("fail", "%s", why);
		if (config_rc == CTL_OK)
			config_rc = CTL_ECONFIG;
	}
	if ((rc = ctl_connect(c)) != CTL_OK) {
		finding("fail", "database unreachable (option file %s, "
		    "group [%s])", c->cfg->mysql_defaults_file ?
		    c->cfg->mysql_defaults_file : "(none)",
		    c->cfg->mysql_group ? c->cfg->mysql_group : "idemgate");
		return rc;
	}
	finding(" ok ", "database reachable");
	check_mode(c);

	if ((result = check_schema(c)) != CTL_OK)
		return result;

	store_admin_privileges(c->st, privs, CHECK_NPRIVS, &n);
	/* -g or --role: one user, as asked; else each role's own group. */
	if (role != NULL || c->mysql_group != NULL)
		rc = check_roles(privs, n, role);
	else
		rc = check_role_groups(c, privs, n);
	if (rc != CTL_OK)
		result = rc;

	check_packet(c);
	check_cleanups(c);
	if ((rc = check_kids(c)) != CTL_OK && result == CTL_OK)
		result = rc;
	return result == CTL_OK ? config_rc : result;
}
