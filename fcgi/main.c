/* idemgate: the FastCGI idempotency gateway's command line. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "log.h"
#include "problem.h"
#include "proc.h"
#include "reach.h"
#include "store_hkey.h"
#include "super.h"
#include "version.h"

#define DEFAULT_CONFIG		"/etc/idemgate/idemgate.conf"

static void
usage(FILE *f)
{
	fprintf(f, "usage: idemgate [-c FILE] [-t [-u USER]] [-V] [-h]\n"
	    "  -c, --config FILE  configuration (default " DEFAULT_CONFIG ")\n"
	    "  -t, --test         check the configuration, its cgi: programs,\n"
	    "                     its MySQL option file, its fastcgi:\n"
	    "                     upstreams and socket_owner as the gateway's\n"
	    "                     user, print \"syntax ok\" and exit\n"
	    "  -u, --user USER    with -t as root: check as USER (default\n"
	    "                     for " DEFAULT_CONFIG ":\n"
	    "                     " REACH_DEFAULT_USER
	    " when that user exists)\n"
	    "  -V, --version      print the version and exit\n"
	    "  -h, --help         this help\n"
	    "Runs in the foreground; logs to stderr or syslog.  SIGTERM or\n"
	    "SIGINT drains and exits, SIGHUP reloads the configuration.\n");
}

/* A command line it cannot take: one line (why, and what when not
 * NULL), exit 2. */
static int
bad_usage(const char *why, const char *what)
{
	fprintf(stderr, "idemgate: %s%s%s (idemgate -h for help)\n", why,
	    what != NULL ? " " : "", what != NULL ? what : "");
	return 2;
}

/* The option getopt stopped at: a long one as given (--name), a short
 * one as -X (in buf: several may share one argument). */
static const char *
opt_named(const char *arg, int opt, char buf[3])
{
	if (opt == 0 || strncmp(arg, "--", 2) == 0)
		return arg;
	buf[0] = '-';
	buf[1] = (char)opt;
	buf[2] = '\0';
	return buf;
}

/* 1 if path is the config the packaged idemgate.service runs. */
static int
service_config(const char *path)
{
	struct stat	 a, b;

	return stat(path, &a) == 0 && stat(DEFAULT_CONFIG, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* idemgate -t: exit 0 ("syntax ok"), 1 (a finding) or 2 (bad -u). */
static int
test_config(const struct cfg *cfg, const char *user)
{
	struct reach_user	 u;
	char			 err[2048];
	int			 warned = 0, rc = 1;

	if (reach_user_pick(user, service_config(cfg->path), &u, err,
	    sizeof(err)) != IDEM_OK) {
		fprintf(stderr, "idemgate: %s\n", err);
		return 2;
	}
	if (cfg_check_gateway(cfg, err, sizeof(err)) != IDEM_OK ||
	    reach_check_as(cfg, &u, &warned, err, sizeof(err)) != IDEM_OK)
		fprintf(stderr, "%s\n", err);
	else
		rc = 0;
	/* Only when there is something to say: the shipped service's own
	 * check prints "syntax ok" alone. */
	if (u.implied && (rc != 0 || warned > 0))
		fprintf(stderr, "idemgate: checked as user %s (-u USER checks "
		    "as another)\n", u.name);
	if (rc != 0)
		return rc;
	(void)cfg_warnings(cfg, stderr);
	if (cfg->secret_key_file == NULL)
		fprintf(stderr, "%s: note: answers stored in clear "
		    "(no secret_key_file)\n", cfg->path);
	printf("syntax ok\n");
	return 0;
}

/*
 * A gateway that cannot hash keys as the store does (lib/ident/hkey.h)
 * says so at once, in one line; it still starts and answers every
 * protected request 500 store-key-missing (SPEC 11), so nothing runs
 * again.  The first keyed gateway makes the store's hashing key here.  A
 * store that cannot be reached now is the workers' to ask later.  Asked
 * from a child, so the supervisor never loads the MySQL library, and for
 * START_HKEY_MS at most: a store cut off must not hold the start up.
 */
#define START_HKEY_MS	2000
static void
start_hkey(const struct cfg *cfg)
{
	struct store	*st = NULL;
	struct hkey	 hk;
	pid_t		 pid;
	int		 rc = 0, status = 0, waited;

	if ((pid = fork()) < 0)
		return;
	if (pid > 0) {
		for (waited = 0; waited < START_HKEY_MS; waited += 20) {
			if (waitpid(pid, &status, WNOHANG) != 0)
				return;
			usleep(20000);
		}
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		return;
	}
	hkey_init(&hk);
	if (store_new(cfg, &st) == IDEM_OK &&
	    store_hkey_resolve(st, &hk) == IDEM_OK &&
	    hkey_state(&hk) == HKEY_REFUSED) {
		log_err("%s (every protected request gets 500 "
		    "store-key-missing)", hk.why);
		rc = 1;
	}
	store_free(st);
	hkey_free(&hk);
	store_global_end();
	_exit(rc);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "test", no_argument, NULL, 't' },
		{ "user", required_argument, NULL, 'u' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char	*path = DEFAULT_CONFIG, *user = NULL, *why;
	struct cfg	*cfg = NULL;
	char		 err[1024];
	char		 shortopt[3];
	int		 ch, check = 0, rc;

	if ((why = proc_start()) != NULL) {
		fprintf(stderr, "idemgate: %s\n", why);
		return 1;
	}
	/* -t's "syntax ok", the help or the version lost: exit 1. */
	proc_stdout_checked("idemgate", 1);
	signal(SIGPIPE, SIG_IGN);
	opterr = 0;	/* one line of our own, not getopt's and the usage */
	while ((ch = getopt_long(argc, argv, ":c:tu:hV", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 't':
			check = 1;
			break;
		case 'u':
			user = optarg;
			break;
		case 'V':
			printf("idemgate %s\n", IDEM_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			return bad_usage("this option needs a value:",
			    opt_named(argv[optind - 1], optopt, shortopt));
		default:
			return bad_usage("unknown option",
			    opt_named(argv[optind - 1], optopt, shortopt));
		}
	}
	if (optind != argc)
		return bad_usage("unexpected argument", argv[optind]);
	/* The gateway takes its user from whoever starts it (systemd,
	 * spawn-fcgi -u): -u only says whom -t checks as. */
	if (user != NULL && !check)
		return bad_usage("-u USER goes with -t", NULL);
	log_open("idemgate", 0);
	if (cfg_load(path, &cfg, err, sizeof(err)) != IDEM_OK) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	/* A key file refused stops the start: answers are never stored in
	 * clear by mistake.  -t reads it as the user it checks as. */
	if (!check && cfg_load_secrets(cfg, err, sizeof(err)) != IDEM_OK) {
		fprintf(stderr, "%s\n", err);
		cfg_free(cfg);
		return 1;
	}
	if (check) {
		rc = test_config(cfg, user);
		cfg_free(cfg);
		return rc;
	}
	/* What -t refuses never starts (no routes, a route the status page
	 * hides); a missing option file would be the default socket,
	 * silently. */
	if (cfg_check_gateway(cfg, err, sizeof(err)) != IDEM_OK ||
	    cfg_check_option_file(cfg, err, sizeof(err)) != IDEM_OK) {
		fprintf(stderr, "%s\n", err);
		cfg_free(cfg);
		return 1;
	}
	log_open("idemgate", cfg->log_syslog);
	proc_nofile_raise();
	start_hkey(cfg);
	problem_set_base(cfg->problem_base_url);
	return super_run(cfg);
}
