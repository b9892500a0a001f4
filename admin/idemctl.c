/* idemctl CLI: cron cleanup, migrate, check, show, forget, stats, metrics. */
#include <stdio.h>
#include <string.h>

#include "idemctl_cleanup.h"
#include "idemctl_common.h"
#include "idemctl_db.h"
#include "idemctl_grants.h"
#include "idemctl_key.h"
#include "idemctl_rekey.h"
#include "idemctl_run.h"
#include "idemctl_stats.h"
#include "log.h"
#include "proc.h"
#include "version.h"


static const struct {
	const char	*name;
	int		(*run)(struct ctl *, int, char **);
	const char	*usage;
	const char	*summary;
} cmds[] = {
	{ "cleanup", ctl_cleanup, ctl_cleanup_usage,
	  "delete expired keys in batches (run from cron)" },
	{ "migrate", ctl_migrate, ctl_migrate_usage,
	  "create or upgrade the database schema" },
	{ "check", ctl_check, ctl_check_usage,
	  "check config, database, schema and privileges" },
	{ "grants", ctl_grants, ctl_grants_usage,
	  "print the SQL that creates idemgate's MySQL users" },
	{ "show", ctl_show, ctl_show_usage,
	  "show one key (--body: its stored response body)" },
	{ "forget", ctl_forget, ctl_forget_usage,
	  "delete a key (or a route's, --route) so it runs again" },
	{ "stats", ctl_stats, ctl_stats_usage,
	  "fleet counters per route (table, tsv, json)" },
	{ "metrics", ctl_metrics, ctl_metrics_usage,
	  "Prometheus text for node_exporter's textfile collector" },
	{ "rekey", ctl_rekey, ctl_rekey_usage,
	  "re-seal stored answers under the current key (cron)" },
	{ "run", ctl_run, ctl_run_usage,
	  "run a job or queue consumer once per --key" },
};

#define NCMDS	(sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
	size_t	 i;

	fputs("usage: idemctl [-c FILE] [-v] COMMAND [options]\n"
	    "       idemctl COMMAND --help | --help | --version\n\n"
	    "Commands:\n", f);
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].summary);
	fputs("\nOptions:\n"
	    "  -c, --config FILE  idemgate config file (default "
	    CTL_DEFAULT_CONFIG ");\n"
	    "                     its [gateway] mysql_defaults_file names the "
	    "database\n"
	    "  -g, --mysql-group G  the option-file group to log in with "
	    "(default\n"
	    "                     [gateway] mysql_group): one config, one user "
	    "per\n"
	    "                     job, e.g. idem_cleanup for cron, "
	    "idem_console\n"
	    "  -v, --verbose      say more (cleanup: a summary line)\n"
	    "  -h, --help         this text; 'idemctl COMMAND --help' for one "
	    "command\n"
	    "  -V, --version      print the version\n\n"
	    "Exit codes:\n"
	    "  0 ok (cleanup: also stopped   6 schema missing or older than "
	    "this build\n"
	    "    at --max-seconds)\n"
	    "  1 usage (command, flag, key); forget --route not confirmed\n"
	    "  2 config file invalid        7 no such key (show, forget)\n"
	    "  3 database unreachable or    8 key in progress (forget "
	    "without --force)\n"
	    "    a query failed             9 privileges missing (check)\n"
	    "  4 another cleanup (rekey) is running\n"
	    "  run: COMMAND's status or the recorded one; 65 key used with "
	    "other\n"
	    "  input, 69 store unreachable, 74 stdin unreadable, 75 still\n"
	    "  running elsewhere\n", f);
}

/* The text of usage(), for -h / --help.  OUT: out. */
static void
usage_text(char *out, size_t len)
{
	FILE	*f = fmemopen(out, len, "w");

	out[0] = '\0';
	if (f == NULL)
		return;
	usage(f);
	fclose(f);
	out[len - 1] = '\0';
}

int
main(int argc, char **argv)
{
	struct ctl	 c;
	char		 help[4096];
	const struct ctl_opt opts[] = {
		{ .name = "version", .letter = 'V', .kind = CTL_OPT_PRINT,
		  .text = "idemctl " IDEM_VERSION "\n" },
		{ .name = "mysql-group", .letter = 'g', .kind = CTL_OPT_STRING,
		  .dst = &c.mysql_group },
		{ NULL },
	};
	const struct ctl_cmdline cl = { .usage = help, .opts = opts,
	    .in_order = 1, .operands = -1 };
	const char	*why;
	size_t		 i;
	int		 rc, argi;

	if ((why = proc_start()) != NULL) {
		fprintf(stderr, "idemctl: %s\n", why);
		return 1;
	}
	/* A listing, the help or the version lost on a full disk: exit 3. */
	proc_stdout_checked("idemctl", CTL_ESTORE);
	memset(&c, 0, sizeof(c));
	hkey_init(&c.hk);
	/* Only run (and rekey, its own) may make the store's hashing key:
	 * a look with a key file keys no store. */
	c.hk.no_make = 1;
	usage_text(help, sizeof(help));
	if ((rc = ctl_opts_parse(&c, &cl, argc, argv, &argi)) != CTL_OK)
		return rc == CTL_HELP ? CTL_OK : rc;
	/* '' (a variable left unset), or blanks, would log in as the
	 * gateway. */
	if (c.mysql_group != NULL &&
	    c.mysql_group[strspn(c.mysql_group, " \t")] == '\0')
		return ctl_usage_err(NULL, "--mysql-group wants a group name, "
		    "not '%s'", c.mysql_group);
	if (argi >= argc)
		return ctl_usage_err(NULL, "missing command (cleanup, migrate, "
		    "check, show, forget, stats, metrics, rekey, run)");
	for (i = 0; i < NCMDS; i++)
		if (strcmp(argv[argi], cmds[i].name) == 0)
			break;
	if (i == NCMDS) {
		if (strcmp(argv[argi], "help") == 0) {
			fputs(help, stdout);
			return CTL_OK;
		}
		return ctl_usage_err(NULL, "unknown command '%s'",
		    argv[argi]);
	}
	/* The store logs its own progress at info level; an operator at a
	 * terminal wants only our one line unless asking for more. */
	log_open("idemctl", 0);
	log_set_level(c.verbose ? LOG_LVL_INFO : LOG_LVL_WARN);
	rc = cmds[i].run(&c, argc - argi, argv + argi);
	ctl_close(&c);
	hkey_free(&c.hk);
	return rc;
}
