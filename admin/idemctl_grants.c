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
"(each statement may be applied again).  ROLE: migrate, gateway, cleanup,\n"
"console (default: all four).  The names come\n"
"from the config's option file (mysql_defaults_file): the database and\n"
"the gateway's user from its group ([gateway] mysql_group), the others'\n"
"users from [idem_migrate], [idem_cleanup] and [idem_console]; a password\n"
"there is used, else a CHANGE-ME placeholder is printed.  Without them,\n"
"the names of sql/grants.sql.  Nothing is connected to.\n"
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

int
ctl_grants(struct ctl *c, int argc, char **argv)
{
	const char		*host = "localhost", *file, *group;
	const struct ctl_opt	 opts[] = {
		{ .name = "host", .letter = 'H', .kind = CTL_OPT_STRING,
		  .dst = &host },
		{ NULL },
	};
	const struct ctl_cmdline cl = { .cmd = "grants",
	    .usage = ctl_grants_usage, .opts = opts, .operands = -1 };
	char			 db[GRANTS_NAME_MAX], user[GRANTS_NAME_MAX];
	char			 pw[GRANTS_NAME_MAX], gw_group[GRANTS_NAME_MAX];
	char			 err[600];
	size_t			 i;
	int			 argi, rc, placeholder = 0, k;

	if ((rc = ctl_opts_parse(c, &cl, argc, argv, &argi)) != CTL_OK)
		return rc < 0 ? CTL_OK : rc;
	if (*host == '\0')
		return ctl_usage_err("grants", "--host must not be empty");
	for (k = argi; k < argc; k++)
		if (grant_user(argv[k]) < 0)
			return ctl_usage_err("grants", "unknown role '%s' "
			    "(migrate, gateway, cleanup, console)", argv[k]);
	if ((rc = ctl_load(c)) != CTL_OK)
		return rc;
	file = c->cfg->mysql_defaults_file;
	/* The names come from it: one that cannot be read is said, not
	 * replaced by the defaults. */
	if (cfg_check_option_group(c->cfg, NULL, err, sizeof(err)) !=
	    IDEM_OK) {
		ctl_err("grants: %s", err);
		return CTL_ECONFIG;
	}
	if (!cfg_word(c->cfg->mysql_group != NULL ? c->cfg->mysql_group :
	    "idemgate", 0, gw_group, sizeof(gw_group)))
		snprintf(gw_group, sizeof(gw_group), "idemgate");
	if (!cfg_option_file_value(file, gw_group, "database", db,
	    sizeof(db)) || db[0] == '\0')
		snprintf(db, sizeof(db), "idemgate");

	printf("-- idemgate's MySQL users (idemctl grants), for %s\n",
	    c->cfgpath);
	fputs("CREATE DATABASE IF NOT EXISTS `", stdout);
	put_quoted(db, '`');
	fputs("`;\n", stdout);
	for (i = 0; i < NGRANT_USERS; i++) {
		if (!grant_wanted(i, argv + argi, argc - argi))
			continue;
		group = grant_users[i].group != NULL ? grant_users[i].group :
		    gw_group;
		if (!cfg_option_file_value(file, group, "user", user,
		    sizeof(user)) || user[0] == '\0')
			snprintf(user, sizeof(user), "idem_%s",
			    grant_users[i].role);
		if (!cfg_option_file_value(file, group, "password", pw,
		    sizeof(pw)) || pw[0] == '\0') {
			snprintf(pw, sizeof(pw), "CHANGE-ME-%s",
			    grant_users[i].role);
			placeholder = 1;
		}
		printf("\n-- %s: option-file group [%s]\n",
		    grant_users[i].role, group);
		fputs("CREATE USER IF NOT EXISTS ", stdout);
		put_account(user, host);
		fputs(" IDENTIFIED BY '", stdout);
		put_quoted(pw, '\0');
		fputs("';\n", stdout);
		if (strcmp(grant_users[i].role, "migrate") == 0) {
			fputs("GRANT ALL PRIVILEGES ON `", stdout);
			put_quoted(db, '`');
			fputs("`.* TO ", stdout);
			put_account(user, host);
			fputs(";\n", stdout);
		} else
			put_table_grants(grant_users[i].role, db, user, host);
	}
	if (placeholder)
		fputs("\n-- Replace every CHANGE-ME with the password of that "
		    "user's group in the option file.\n", stdout);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		ctl_err("grants: cannot write the statements");
		return CTL_EUSAGE;
	}
	return CTL_OK;
}
