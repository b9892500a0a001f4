/* idemctl cleanup: the cron job that removes expired keys in small batches. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
"'" CLEANUP_LOCK_NAME ":DATABASE').  Every run is recorded in\n"
"idem_cleanup_runs and\n"
"logged to syslog.  Prints nothing on success (for cron).\n"
"\n"
"  -b, --batch N        rows per DELETE (default [cleanup] batch, 1000)\n"
"  -t, --max-seconds S  stop between batches after S seconds (or a\n"
"                       duration: 4m); the run is\n"
"                       recorded 'partial', the next one goes on, and the\n"
"                       exit is 0, quiet (-v says so) (default [cleanup]\n"
"                       max_seconds, unlimited)\n"
"  -s, --sleep MS       pause between batches, in ms (or a duration: 1s)\n"
"                       (default [cleanup] sleep, 0)\n"
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
				    "replicas within max_lag",
				    (long long)paused);
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

/* The longest --sleep and --max-seconds. */
#define CLEANUP_SLEEP_MAX_MS	(3600 * 1000L)
#define CLEANUP_MAX_S		(86400 * 7L)

/* What the command line asks of a cleanup; -1: the config's. */
struct cleanup_args {
	long		 batch, max_ms, sleep_ms;
	int64_t		 max_lag_ms;
	int		 dry;
};

/*
 * A pause or a limit: a duration with its unit (500ms, 2s, 4m), or a bare
 * number in bare_ms milliseconds (--sleep MS and --max-seconds S as they
 * always were), from 0 to max_ms.  0 and *ms, or -1.
 */
static int
cleanup_ms(const char *v, long bare_ms, int64_t max_ms, long *ms)
{
	int64_t	 d;
	char	*end;
	long	 n;

	if (*v >= '0' && *v <= '9') {
		errno = 0;
		n = strtol(v, &end, 10);
		if (*end == '\0') {
			if (errno != 0 || n > max_ms / bare_ms)
				return -1;
			*ms = n * bare_ms;
			return 0;
		}
	}
	if (cfg_parse_duration(v, &d) != IDEM_OK || d < 0 || d > max_ms)
		return -1;
	*ms = (long)d;
	return 0;
}

static int
parse_sleep(const char *v, void *dst)
{
	return cleanup_ms(v, 1, CLEANUP_SLEEP_MAX_MS, dst);
}

static int
parse_max_seconds(const char *v, void *dst)
{
	return cleanup_ms(v, 1000, CLEANUP_MAX_S * 1000, dst);
}

static int
cleanup_args(struct ctl *c, int argc, char **argv, struct cleanup_args *a)
{
	const struct ctl_opt	 opts[] = {
		{ .name = "batch", .letter = 'b', .kind = CTL_OPT_LONG,
		  .dst = &a->batch, .min = 1, .max = CFG_CLEANUP_BATCH_MAX,
		  .wants = "a number from 1 to 100000" },
		{ .name = "max-seconds", .letter = 't', .kind = CTL_OPT_PARSE,
		  .dst = &a->max_ms, .parse = parse_max_seconds,
		  .wants = "whole seconds or a duration such as 4m, up to 7d "
		  "(0 = no limit)" },
		{ .name = "sleep", .letter = 's', .kind = CTL_OPT_PARSE,
		  .dst = &a->sleep_ms, .parse = parse_sleep,
		  .wants = "milliseconds or a duration such as 1s, up to 1h" },
		{ .name = "max-lag", .letter = 'L', .kind = CTL_OPT_DURATION,
		  .dst = &a->max_lag_ms, .wants = "a duration such as 10s" },
		{ .name = "dry-run", .letter = 'n', .kind = CTL_OPT_FLAG,
		  .dst = &a->dry },
		{ NULL },
	};
	const struct ctl_cmdline cl = { .cmd = "cleanup",
	    .usage = ctl_cleanup_usage, .opts = opts };
	int			 argi;

	a->batch = a->max_ms = a->sleep_ms = -1;
	a->max_lag_ms = -1;
	a->dry = 0;
	return ctl_opts_parse(c, &cl, argc, argv, &argi);
}

/* The run's settings: the command line's, else the config's.  OUT: o. */
static void
cleanup_settings(const struct cfg *cfg, const struct cleanup_args *a,
    struct cleanup_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->batch = a->batch > 0 ? (int)a->batch : cfg->cleanup_batch;
	if (o->batch < 1)
		o->batch = 1000;
	o->max_ms = a->max_ms >= 0 ? (int64_t)a->max_ms : cfg->cleanup_max_ms;
	o->sleep_ms = a->sleep_ms >= 0 ? a->sleep_ms : cfg->cleanup_sleep_ms;
	o->dry_run = a->dry;
	o->stale_after_ms = cfg->stale_after_ms;
	o->live_floor_ms = ctl_longest_lease_ms(cfg);
	o->counters_retention_ms = cfg->counters_retention_ms;
	o->runs_retention_ms = cfg->runs_retention_ms;
	o->host = cfg->host_name != NULL ? cfg->host_name : "unknown";
}

/* --max-lag (or [cleanup] max_lag) on a real run: the replicas to watch
 * between batches.  Without [cleanup] replicas there is none to fall
 * behind: the run goes on (-v says so; so does check).  CTL_OK (OUT: g,
 * o's pause) or one line and the code. */
static int
cleanup_gate(const struct ctl *c, const struct cleanup_args *a,
    struct lag_gate *g, struct cleanup_opts *o)
{
	const struct cfg	*cfg = c->cfg;
	char			 why[1024];
	enum idem_err		 er;

	memset(g, 0, sizeof(*g));
	g->max_ms = a->max_lag_ms >= 0 ? a->max_lag_ms :
	    cfg->cleanup_max_lag_ms;
	if (g->max_ms <= 0 || a->dry)
		return CTL_OK;
	/* A replica group the option file lacks: the client groups alone
	 * would have it ask the primary how far behind it is. */
	if (cfg_check_replicas(cfg, why, sizeof(why)) != IDEM_OK) {
		ctl_err("cleanup: %s", why);
		return CTL_ECONFIG;
	}
	er = lag_open(cfg, &g->lag);
	if (er == IDEM_EINVAL) {
		if (c->verbose)
			printf("cleanup: --max-lag: no [cleanup] replicas "
			    "configured, none watched\n");
		return CTL_OK;
	}
	if (er != IDEM_OK) {
		ctl_err("cleanup: out of memory");
		return CTL_ESTORE;
	}
	o->pause = lag_pause;
	o->pause_arg = g;
	return CTL_OK;
}

/* Connects and checks the schema, logging a failure to syslog too. */
static int
cleanup_connect(struct ctl *c)
{
	int	 rc;

	if ((rc = ctl_connect(c)) != CTL_OK) {
		log_err("cleanup failed: database unreachable");
		return rc;
	}
	if ((rc = ctl_need_schema(c)) != CTL_OK)
		log_err("cleanup failed: schema missing or old");
	return rc;
}

/* Logs what store_admin_cleanup() did (er, r) and says it as cron wants:
 * nothing on success unless asked.  Returns the exit code. */
static int
cleanup_report(const struct ctl *c, const struct cleanup_opts *o,
    const struct cleanup_result *r, enum idem_err er)
{
	switch (er) {
	case IDEM_OK:
		log_info("cleanup %s: run %llu deleted %llu expired, released "
		    "%llu stale, pruned %llu counter rows, %u batches, %lld ms",
		    r->outcome, (unsigned long long)r->run_id,
		    (unsigned long long)r->rows_deleted,
		    (unsigned long long)r->stale_released,
		    (unsigned long long)r->counters_pruned, r->batches,
		    (long long)r->elapsed_ms);
		if (c->verbose || o->dry_run)
			cleanup_summary(stdout, o, r);
		return CTL_OK;
	case IDEM_EBUSY:
		log_warn("cleanup skipped: already running on another "
		    "connection");
		ctl_err("cleanup already running on another connection");
		return CTL_EBUSY;
	case IDEM_ETIMEOUT:
		log_warn("cleanup partial: run %llu %s; deleted %llu expired, "
		    "released %llu stale, %u batches",
		    (unsigned long long)r->run_id, r->reason,
		    (unsigned long long)r->rows_deleted,
		    (unsigned long long)r->stale_released, r->batches);
		/* A normal outcome for cron: quiet, like success. */
		if (c->verbose)
			printf("cleanup partial: %s after deleting %llu keys; "
			    "the next run continues\n", r->reason,
			    (unsigned long long)(r->rows_deleted +
			    r->stale_released));
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

int
ctl_cleanup(struct ctl *c, int argc, char **argv)
{
	struct cleanup_args	 a;
	struct cleanup_opts	 o;
	struct cleanup_result	 r;
	struct lag_gate		 gate;
	int			 rc;
	enum idem_err		 er = IDEM_OK;

	if ((rc = cleanup_args(c, argc, argv, &a)) != CTL_OK)
		return rc == CTL_HELP ? CTL_OK : rc;
	/* One syslog line per run, whatever the terminal verbosity. */
	log_open("idemctl", 1);
	log_set_level(LOG_LVL_INFO);
	if ((rc = ctl_load(c)) != CTL_OK)
		return rc;
	cleanup_settings(c->cfg, &a, &o);
	if ((rc = cleanup_gate(c, &a, &gate, &o)) != CTL_OK)
		return rc;
	if ((rc = cleanup_connect(c)) == CTL_OK)
		er = store_admin_cleanup(c->st, &o, &r);
	lag_free(gate.lag);
	if (rc != CTL_OK)
		return rc;
	if (gate.paused_ms > 0 && c->verbose)
		printf("cleanup paused %.1f s for replica lag\n",
		    (double)gate.paused_ms / 1000.0);
	return cleanup_report(c, &o, &r, er);
}
