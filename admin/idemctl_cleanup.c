/* idemctl cleanup: the cron job that removes expired keys in small batches. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "idemctl_cleanup.h"
#include "lag.h"
#include "log.h"
#include "store_admin.h"

const char ctl_cleanup_usage[] =
"usage: idemctl [-c FILE] cleanup [--batch N] [--max-seconds S] [--sleep MS]\n"
"                                 [--max-lag D] [--dry-run] [--verbose]\n"
"\n"
"Deletes expired keys and abandoned in-progress keys in batches committed\n"
"one by one, then prunes fleet counters and run records past their\n"
"retention.  Never overlaps another run (MySQL named lock\n"
"'" CLEANUP_LOCK_NAME "').  Every run is recorded in idem_cleanup_runs and\n"
"logged to syslog.  Prints nothing on success (for cron).\n"
"\n"
"  -b, --batch N        rows per DELETE (default [cleanup] batch, 1000)\n"
"  -t, --max-seconds S  stop between batches after S seconds; the run is\n"
"                       recorded 'partial', the next one goes on, and the\n"
"                       exit is 0, quiet (-v says so) (default [cleanup]\n"
"                       max_seconds, unlimited)\n"
"  -s, --sleep MS       pause between batches (default [cleanup] sleep, 0)\n"
"  -L, --max-lag D      before each batch, pause while a replica of\n"
"                       [cleanup] replicas is more than D behind (SHOW\n"
"                       REPLICA STATUS; a stopped replica counts as\n"
"                       behind), e.g. 10s (default [cleanup] max_lag, off)\n"
"  -n, --dry-run        count what would go, change nothing; prints the\n"
"                       counts and records a run with outcome 'dry-run'\n"
"  -v, --verbose        print a summary line on success\n"
"  -c, --config FILE    config file (default " CTL_DEFAULT_CONFIG ")\n"
"\n"
"Exit: 0 ok (or stopped at --max-seconds), 1 usage, 2 config, 3 database,\n"
"      4 another cleanup is running, 6 schema missing or old.\n";

/* --max-lag: the replicas, checked at most once a second. */
struct lag_gate {
	struct lag	*lag;
	int64_t		 max_ms;
	int64_t		 next_check;	/* clock_now_ms() of the next check */
	int64_t		 paused_ms;	/* in all */
};

#define LAG_CHECK_MS	1000

static enum idem_err
lag_pause(void *arg, int64_t deadline, char *err, size_t errlen)
{
	struct lag_gate	*g = arg;
	const char	*who;
	long long	 secs;
	int64_t		 now, nap, paused = 0;

	for (;;) {
		now = clock_now_ms();
		if (now < g->next_check)
			return IDEM_OK;
		if (lag_worst(g->lag, &secs, &who) != IDEM_OK) {
			snprintf(err, errlen, "%s", lag_error(g->lag));
			return IDEM_ESTORE;
		}
		if (secs >= 0 && secs * 1000 <= g->max_ms) {
			if (paused > 0)
				log_info("cleanup resumed after %lld ms: "
				    "replicas within max_lag", (long long)paused);
			g->next_check = now + LAG_CHECK_MS;
			return IDEM_OK;
		}
		if (paused == 0) {
			if (secs < 0)
				log_info("cleanup paused: replica [%s] is not "
				    "replicating", who);
			else
				log_info("cleanup paused: replica [%s] is "
				    "%lld s behind (max_lag %lld s)", who, secs,
				    (long long)(g->max_ms / 1000));
		}
		if (deadline != 0 && now >= deadline)
			return IDEM_ETIMEOUT;
		nap = LAG_CHECK_MS;
		if (deadline != 0 && deadline - now < nap)
			nap = deadline - now;
		clock_sleep_ms(nap);
		paused += nap;
		g->paused_ms += nap;
	}
}

static void
cleanup_summary(FILE *f, const struct cleanup_opts *o,
    const struct cleanup_result *r)
{
	double	 secs = (double)r->elapsed_ms / 1000.0;
	double	 rate = secs > 0 ? (double)(r->rows_deleted +
	    r->stale_released) / secs : 0;

	if (o->dry_run) {
		fprintf(f, "cleanup dry run: would delete %llu expired keys "
		    "and %llu stale in-progress keys, prune %llu counter rows "
		    "and %llu run records\n",
		    (unsigned long long)r->rows_deleted,
		    (unsigned long long)r->stale_released,
		    (unsigned long long)r->counters_pruned,
		    (unsigned long long)r->runs_pruned);
		return;
	}
	fprintf(f, "cleanup %s: deleted %llu expired keys, released %llu "
	    "stale in-progress keys, pruned %llu counter rows and %llu run "
	    "records in %u batches, %.3f s (%.0f keys/s)\n", r->outcome,
	    (unsigned long long)r->rows_deleted,
	    (unsigned long long)r->stale_released,
	    (unsigned long long)r->counters_pruned,
	    (unsigned long long)r->runs_pruned, r->batches, secs, rate);
}

int
ctl_cleanup(struct ctl *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "max-seconds", required_argument, NULL, 't' },
		{ "sleep", required_argument, NULL, 's' },
		{ "max-lag", required_argument, NULL, 'L' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cleanup_opts	 o;
	struct cleanup_result	 r;
	struct lag_gate		 gate;
	long			 batch = -1, maxs = -1, sleepms = -1;
	int64_t			 maxlag = -1;
	int			 ch, rc, dry = 0;
	enum idem_err		 er;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":b:t:s:L:nvc:h", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'b':
			if (ctl_parse_long(optarg, 1, 1000000, &batch) != 0)
				return ctl_usage_err("cleanup", "--batch wants "
				    "a number from 1 to 1000000, not '%s'",
				    optarg);
			break;
		case 't':
			if (ctl_parse_long(optarg, 0, 86400 * 7, &maxs) != 0)
				return ctl_usage_err("cleanup", "--max-seconds "
				    "wants whole seconds (0 = no limit), not "
				    "'%s'", optarg);
			break;
		case 's':
			if (ctl_parse_long(optarg, 0, 60000, &sleepms) != 0)
				return ctl_usage_err("cleanup", "--sleep wants "
				    "milliseconds from 0 to 60000, not '%s'",
				    optarg);
			break;
		case 'L':
			if (cfg_parse_duration(optarg, &maxlag) != 0)
				return ctl_usage_err("cleanup", "--max-lag "
				    "wants a duration such as 10s, not '%s'",
				    optarg);
			break;
		case 'n':
			dry = 1;
			break;
		default:
			if ((rc = ctl_opt_common(c, "cleanup", ch, ctl_cleanup_usage, argv)) !=
			    CTL_OK)
				return rc == CTL_HELP ? CTL_OK : rc;
			break;
		}
	}
	if (optind < argc)
		return ctl_usage_err("cleanup", "unexpected argument '%s'",
		    argv[optind]);

	/* One syslog line per run, whatever the terminal verbosity. */
	log_open("idemctl", 1);
	log_set_level(LOG_LVL_INFO);
	if ((rc = ctl_load(c)) != CTL_OK)
		return rc;
	memset(&o, 0, sizeof(o));
	o.batch = batch > 0 ? (int)batch : c->cfg->cleanup_batch;
	if (o.batch < 1)
		o.batch = 1000;
	o.max_ms = maxs >= 0 ? (int64_t)maxs * 1000 : c->cfg->cleanup_max_ms;
	o.sleep_ms = sleepms >= 0 ? sleepms : c->cfg->cleanup_sleep_ms;
	o.dry_run = dry;
	o.stale_after_ms = c->cfg->stale_after_ms;
	o.counters_retention_ms = c->cfg->counters_retention_ms;
	o.runs_retention_ms = c->cfg->runs_retention_ms;
	o.host = c->cfg->host_name != NULL ? c->cfg->host_name : "unknown";

	memset(&gate, 0, sizeof(gate));
	gate.max_ms = maxlag >= 0 ? maxlag : c->cfg->cleanup_max_lag_ms;
	if (gate.max_ms > 0 && !dry) {
		er = lag_open(c->cfg, &gate.lag);
		if (er == IDEM_EINVAL) {
			ctl_err("cleanup: --max-lag needs the replicas to watch: "
			    "[cleanup] replicas = GROUP... (option-file groups)");
			return CTL_ECONFIG;
		}
		if (er != IDEM_OK) {
			ctl_err("cleanup: out of memory");
			return CTL_ESTORE;
		}
		o.pause = lag_pause;
		o.pause_arg = &gate;
	}

	if ((rc = ctl_connect(c)) != CTL_OK) {
		log_err("cleanup failed: database unreachable");
		lag_free(gate.lag);
		return rc;
	}
	if ((rc = ctl_need_schema(c)) != CTL_OK) {
		log_err("cleanup failed: schema missing or old");
		lag_free(gate.lag);
		return rc;
	}

	er = store_admin_cleanup(c->st, &o, &r);
	lag_free(gate.lag);
	if (gate.paused_ms > 0 && c->verbose)
		printf("cleanup paused %.1f s for replica lag\n",
		    (double)gate.paused_ms / 1000.0);
	switch (er) {
	case IDEM_OK:
		log_info("cleanup %s: run %llu deleted %llu expired, released "
		    "%llu stale, pruned %llu counter rows, %u batches, %lld ms",
		    r.outcome, (unsigned long long)r.run_id,
		    (unsigned long long)r.rows_deleted,
		    (unsigned long long)r.stale_released,
		    (unsigned long long)r.counters_pruned, r.batches,
		    (long long)r.elapsed_ms);
		if (c->verbose || dry)
			cleanup_summary(stdout, &o, &r);
		return CTL_OK;
	case IDEM_EBUSY:
		log_warn("cleanup skipped: already running on another "
		    "connection");
		ctl_err("cleanup already running on another connection");
		return CTL_EBUSY;
	case IDEM_ETIMEOUT:
		log_warn("cleanup partial: run %llu %s; deleted %llu expired, "
		    "released %llu stale, %u batches",
		    (unsigned long long)r.run_id, r.reason,
		    (unsigned long long)r.rows_deleted,
		    (unsigned long long)r.stale_released, r.batches);
		/* A normal outcome for cron: quiet, like success. */
		if (c->verbose)
			printf("cleanup partial: %s after deleting %llu keys; "
			    "the next run continues\n", r.reason,
			    (unsigned long long)(r.rows_deleted +
			    r.stale_released));
		return CTL_OK;
	case IDEM_EINVAL:
		ctl_err("cleanup: %s", store_last_error(c->st));
		return CTL_EUSAGE;
	default:
		log_err("cleanup failed: %s", store_last_error(c->st));
		ctl_err("cleanup failed: %s", store_last_error(c->st));
		return CTL_ESTORE;
	}
}
