/* idemctl grants: the MySQL statements that create idemgate's users. */
#include <stdio.h>
#include <string.h>

#include "cfg.h"
#include "grants.h"
#include "idemctl_grants.h"

#define GRANTS_NAME_MAX	256

const char ctl_grants_usage[] =
"usage: idemctl [-c FILE] grants [--host PATTERN] [ROLE...]\n"
"\n"
"Prints the SQL that creates the database and idemgate's least-privilege\n"
"MySQL users, for an administrator to apply (idemctl grants | mariadb -u\n"
"root): idem_migrate (all privileges on the database, for 'idemctl\n"
"migrate'), then the gateway's, cleanup's and the console's users with\n"
"the privileges sql/grants.sql gives them.  Table privileges name tables\n"
"'idemctl migrate' creates, so the order is:\n"
"\n"
"  idemctl grants migrate | mariadb -u root\n"
"  idemctl -g idem_migrate migrate\n"
"  idemctl grants | mariadb -u root\n"
"\n"
"(each statement may be applied again; a user made before gets the option\n"
"file's password).  ROLE: migrate, gateway, cleanup, console; default: the\n"
"gateway's and each other role whose group the option file has.  The names\n"
"come from the config's option file (mysql_defaults_file), read as the\n"
"client library reads it: the database and the gateway's user from its\n"
"group ([gateway] mysql_group), the others' from [idem_migrate],\n"
"[idem_cleanup] and [idem_console].  A user without a password (or with a\n"
"CHANGE-ME placeholder), or two roles with one user, prints nothing and\n"
"exits 2.  Nothing is connected to.\n"
"\n"
"  -H, --host PATTERN   the users' host part (default localhost; '%' or\n"
"                       an address pattern for gateways on other hosts)\n"
"  -c, --config FILE    config file (default " CTL_DEFAULT_CONFIG ")\n"
"\n"
"Exit: 0 ok, 1 usage, 2 config.\n";

/* The users, in the order an administrator applies them. */
static const struct {
	const char	*role;		/* grants[].role; "migrate": all */
	const char	*group;		/* option-file group; NULL: the
					 * config's mysql_group */
} grant_users[] = {
	{ "migrate", "idem_migrate" },
	{ "gateway", NULL },
	{ "cleanup", "idem_cleanup" },
	{ "console", "idem_console" },
};

#define NGRANT_USERS	(sizeof(grant_users) / sizeof(grant_users[0]))

/* The index of role in grant_users, or -1. */
static int
grant_user(const char *role)
{
	size_t	 i;

	for (i = 0; i < NGRANT_USERS; i++)
		if (strcmp(grant_users[i].role, role) == 0)
			return (int)i;
	return -1;
}

/* 1 if user i is among the n roles asked for (none: all). */
static int
grant_wanted(size_t i, char **roles, int n)
{
	int	 k;

	for (k = 0; k < n; k++)
		if (grant_user(roles[k]) == (int)i)
			return 1;
	return n == 0;
}

/* s as a MySQL string literal's contents (quotes and backslashes
 * doubled / escaped), or an identifier's (backticks doubled: tick). */
static void
put_quoted(const char *s, char tick)
{
	for (; *s != '\0'; s++) {
		if (tick != '\0' && *s == tick)
			putchar(tick);
		else if (tick == '\0' && (*s == '\'' || *s == '\\'))
			putchar(*s == '\'' ? '\'' : '\\');
		putchar(*s);
	}
}

/* 'user'@'host' */
static void
put_account(const char *user, const char *host)
{
	putchar('\'');
	put_quoted(user, '\0');
	fputs("'@'", stdout);
	put_quoted(host, '\0');
	putchar('\'');
}

/* db as a database-level grant's pattern: '_', '%' and '\\' escaped. */
static void
put_db_pattern(const char *db)
{
	for (; *db != '\0'; db++) {
		if (*db == '`')
			putchar('`');
		else if (*db == '_' || *db == '%' || *db == '\\')
			putchar('\\');
		putchar(*db);
	}
}

/* The GRANT lines of role: one per table, privileges in grants.sql's
 * order. */
static void
put_table_grants(const char *role, const char *db, const char *user,
    const char *host)
{
	size_t		 i, j, tl;
	const char	*t;
	int		 seen;

	for (i = 0; i < ngrants; i++) {
		if (strcmp(grants[i].role, role) != 0)
			continue;
		t = grants[i].need;
		tl = strcspn(t, ":");
		/* The table's first privilege writes its line. */
		for (seen = 0, j = 0; j < i && !seen; j++)
			seen = strcmp(grants[j].role, role) == 0 &&
			    strncmp(grants[j].need, t, tl + 1) == 0;
		if (seen)
			continue;
		fputs("GRANT ", stdout);
		for (seen = 0, j = i; j < ngrants; j++) {
			if (strcmp(grants[j].role, role) != 0 ||
			    strncmp(grants[j].need, t, tl + 1) != 0)
				continue;
			printf("%s%s", seen++ ? ", " : "",
			    grants[j].need + tl + 1);
		}
		fputs(" ON `", stdout);
		put_quoted(db, '`');
		printf("`.`%.*s` TO ", (int)tl, t);
		put_account(user, host);
		fputs(";\n", stdout);
	}
}

/* One user to create: its role, group and names from the option file. */
struct grant_acct {
	size_t		 i;			/* in grant_users */
	const char	*group;
	char		 user[GRANTS_NAME_MAX];
	char		 pw[GRANTS_NAME_MAX];
};

/* key of group in file into out; CTL_OK, or one line and CTL_ECONFIG
 * when it is missing, empty or too long. */
static int
grant_value(const char *file, const char *group, const char *key,
    char *out, size_t len)
{
	int	 got = cfg_option_file_value(file, group, key, out, len);

	if (got == 1 && out[0] != '\0')
		return CTL_OK;
	ctl_err("grants: %s: [%s] %s %s", file, group, got < 0 ?
	    "has too long a" : "names no", key);
	return CTL_ECONFIG;
}

/*
 * The accounts of the roles asked for (none: every role whose group the
 * option file has, the gateway's always) into a[], their number in *n.
 * CTL_OK, or one line and the code: nothing is printed then, so a pipe
 * into mariadb creates nothing half-done.
 */
static int
grant_accounts(const char *file, const char *gw_group, char **roles,
    int nroles, struct grant_acct *a, size_t *n)
{
	size_t	 i, j;
	int	 rc;

	*n = 0;
	for (i = 0; i < NGRANT_USERS; i++) {
		if (!grant_wanted(i, roles, nroles))
			continue;
		a[*n].i = i;
		a[*n].group = grant_users[i].group != NULL ?
		    grant_users[i].group : gw_group;
		if (grant_users[i].group != NULL &&
		    !cfg_option_file_has_group(file, a[*n].group)) {
			if (nroles == 0)
				continue;	/* not configured: not made */
			ctl_err("grants: %s has no [%s] group for the %s "
			    "user", file, a[*n].group, grant_users[i].role);
			return CTL_ECONFIG;
		}
		if ((rc = grant_value(file, a[*n].group, "user", a[*n].user,
		    sizeof(a[*n].user))) != CTL_OK ||
		    (rc = grant_value(file, a[*n].group, "password",
		    a[*n].pw, sizeof(a[*n].pw))) != CTL_OK)
			return rc;
		/* The placeholders of sql/grants.sql and my.cnf.example. */
		if (strncmp(a[*n].pw, "CHANGE-ME", 9) == 0) {
			ctl_err("grants: %s: [%s] still has the password %s: "
			    "set one first", file, a[*n].group, a[*n].pw);
			return CTL_ECONFIG;
		}
		/* One account for two roles would get both roles'
		 * privileges (the migration user's are all of them). */
		for (j = 0; j < *n; j++)
			if (strcmp(a[j].user, a[*n].user) == 0) {
				ctl_err("grants: the %s and %s users are both "
				    "'%s' in %s: give each its own",
				    grant_users[a[j].i].role,
				    grant_users[i].role, a[*n].user, file);
				return CTL_ECONFIG;
			}
		(*n)++;
	}
	return CTL_OK;
}

int
ctl_grants(struct ctl *c, int argc, char **argv)
{
	const char		*host = "localhost", *file;
	const struct ctl_opt	 opts[] = {
		{ .name = "host", .letter = 'H', .kind = CTL_OPT_STRING,
		  .dst = &host },
		{ NULL },
	};
	const struct ctl_cmdline cl = { .cmd = "grants",
	    .usage = ctl_grants_usage, .opts = opts, .operands = -1 };
	struct grant_acct	 a[NGRANT_USERS];
	char			 db[GRANTS_NAME_MAX], gw_group[GRANTS_NAME_MAX];
	char			 err[600];
	size_t			 n, k;
	int			 argi, rc, j;

	if ((rc = ctl_opts_parse(c, &cl, argc, argv, &argi)) != CTL_OK)
		return rc < 0 ? CTL_OK : rc;
	if (*host == '\0')
		return ctl_usage_err("grants", "--host must not be empty");
	for (j = argi; j < argc; j++)
		if (grant_user(argv[j]) < 0)
			return ctl_usage_err("grants", "unknown role '%s' "
			    "(migrate, gateway, cleanup, console)", argv[j]);
	if ((rc = ctl_load(c)) != CTL_OK)
		return rc;
	file = c->cfg->mysql_defaults_file;
	/* The names come from it: none, or one that cannot be read, is
	 * said, not replaced by made-up names. */
	if (file == NULL) {
		ctl_err("grants: %s sets no mysql_defaults_file: no users to "
		    "print the statements for", c->cfgpath);
		return CTL_ECONFIG;
	}
	if (cfg_check_option_file(c->cfg, err, sizeof(err)) != IDEM_OK) {
		ctl_err("grants: %s", err);
		return CTL_ECONFIG;
	}
	if (!cfg_word(c->cfg->mysql_group != NULL ? c->cfg->mysql_group :
	    "idemgate", 0, gw_group, sizeof(gw_group)))
		snprintf(gw_group, sizeof(gw_group), "idemgate");
	if ((rc = grant_value(file, gw_group, "database", db, sizeof(db))) !=
	    CTL_OK ||
	    (rc = grant_accounts(file, gw_group, argv + argi, argc - argi, a,
	    &n)) != CTL_OK)
		return rc;

	printf("-- idemgate's MySQL users (idemctl grants), for %s\n",
	    c->cfgpath);
	/* The literals below escape backslashes and quotes: read them so,
	 * whatever the session's sql_mode and character set. */
	fputs("SET NAMES utf8mb4;\nSET SESSION sql_mode = '';\n", stdout);
	fputs("CREATE DATABASE IF NOT EXISTS `", stdout);
	put_quoted(db, '`');
	fputs("`;\n", stdout);
	for (k = 0; k < n; k++) {
		printf("\n-- %s: option-file group [%s]\n",
		    grant_users[a[k].i].role, a[k].group);
		fputs("CREATE USER IF NOT EXISTS ", stdout);
		put_account(a[k].user, host);
		fputs(" IDENTIFIED BY '", stdout);
		put_quoted(a[k].pw, '\0');
		/* An account made before keeps its password in step with
		 * the option file. */
		fputs("';\nALTER USER ", stdout);
		put_account(a[k].user, host);
		fputs(" IDENTIFIED BY '", stdout);
		put_quoted(a[k].pw, '\0');
		fputs("';\n", stdout);
		if (strcmp(grant_users[a[k].i].role, "migrate") == 0) {
			/* '_' and '%' match any character in a database
			 * grant: this one is for this database only. */
			fputs("GRANT ALL PRIVILEGES ON `", stdout);
			put_db_pattern(db);
			fputs("`.* TO ", stdout);
			put_account(a[k].user, host);
			fputs(";\n", stdout);
		} else
			put_table_grants(grant_users[a[k].i].role, db,
			    a[k].user, host);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		ctl_err("grants: cannot write the statements");
		clearerr(stdout);	/* said: once */
		return CTL_EUSAGE;
	}
	return CTL_OK;
}
