/* idemgate: the FastCGI idempotency gateway's command line. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cfg.h"
#include "log.h"
#include "problem.h"
#include "super.h"
#include "version.h"

#define DEFAULT_CONFIG		"/etc/idemgate/idemgate.conf"

static void
usage(FILE *f)
{
	fprintf(f, "usage: idemgate [-c FILE] [-t] [-V] [-h]\n"
	    "  -c, --config FILE  configuration (default " DEFAULT_CONFIG ")\n"
	    "  -t, --test         check the configuration, its cgi: programs\n"
	    "                     and its MySQL option file, print "
	    "\"syntax ok\"\n"
	    "                     and exit\n"
	    "  -V, --version      print the version and exit\n"
	    "  -h, --help         this help\n"
	    "Runs in the foreground; logs to stderr or syslog.  SIGTERM or\n"
	    "SIGINT drains and exits, SIGHUP reloads the configuration.\n");
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "test", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char	*path = DEFAULT_CONFIG;
	struct cfg	*cfg = NULL;
	char		 err[1024];
	int		 ch, check = 0;

	signal(SIGPIPE, SIG_IGN);
	while ((ch = getopt_long(argc, argv, "c:thV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 't':
			check = 1;
			break;
		case 'V':
			printf("idemgate %s\n", IDEM_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	log_open("idemgate", 0);
	if (cfg_load(path, &cfg, err, sizeof(err)) != IDEM_OK) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	/* A key file refused stops the start: answers are never stored in
	 * clear by mistake. */
	if (cfg_load_secrets(cfg, err, sizeof(err)) != IDEM_OK) {
		fprintf(stderr, "%s\n", err);
		cfg_free(cfg);
		return 1;
	}
	if (check) {
		if (cfg_check_gateway(cfg, err, sizeof(err)) != 0 ||
		    cfg_check_files(cfg, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			cfg_free(cfg);
			return 1;
		}
		(void)cfg_warnings(cfg, stderr);
		if (cfg->secret_key_file == NULL)
			fprintf(stderr, "%s: note: answers stored in clear "
			    "(no secret_key_file)\n", cfg->path);
		cfg_free(cfg);
		printf("syntax ok\n");
		return 0;
	}
	/* A missing option file would be the default socket, silently. */
	if (cfg_check_option_file(cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		cfg_free(cfg);
		return 1;
	}
	log_open("idemgate", cfg->log_syslog);
	problem_set_base(cfg->problem_base_url);
	return super_run(cfg);
}
