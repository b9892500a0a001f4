/* idemgate: the FastCGI idempotency gateway's command line. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cfg.h"
#include "log.h"
#include "problem.h"
#include "super.h"

#define IDEMGATE_VERSION	"0.1.0"
#define DEFAULT_CONFIG		"/etc/idemgate/idemgate.conf"

static void
usage(FILE *f)
{
	fprintf(f, "usage: idemgate [-c FILE] [-t] [-V] [-h]\n"
	    "  -c FILE  configuration (default " DEFAULT_CONFIG ")\n"
	    "  -t       check the configuration and exit\n"
	    "  -V       print the version and exit\n"
	    "  -h       this help\n"
	    "Runs in the foreground; logs to stderr or syslog.  SIGTERM or\n"
	    "SIGINT drains and exits, SIGHUP reloads the configuration.\n");
}

int
main(int argc, char *argv[])
{
	const char	*path = DEFAULT_CONFIG;
	struct cfg	*cfg = NULL;
	char		 err[1024];
	int		 ch, check = 0;

	signal(SIGPIPE, SIG_IGN);
	while ((ch = getopt(argc, argv, "c:thV")) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 't':
			check = 1;
			break;
		case 'V':
			printf("idemgate %s\n", IDEMGATE_VERSION);
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
	if (check) {
		cfg_free(cfg);
		return 0;
	}
	log_open("idemgate", cfg->log_syslog);
	problem_set_base(cfg->problem_base_url);
	return super_run(cfg);
}
