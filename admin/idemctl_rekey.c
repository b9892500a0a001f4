/* idemctl rekey: stored answers re-sealed under the current key (cron). */
#include <stdio.h>
#include <string.h>

#include "idemctl_rekey.h"
#include "log.h"
#include "store_admin.h"

#define REKEY_BATCH	500

const char ctl_rekey_usage[] =
"usage: idemctl [-c FILE] rekey [--batch N] [--max-seconds S] [--verbose]\n"
"\n"
"Re-seals every stored answer sealed under an older key id of\n"
"secret_key_file with the current key (its last line), and wraps the\n"
"store's hashing key under it too, so that the older line can then be\n"
"deleted from the file ('idemctl check' counts the rows under each key\n"
"id).  Rows stored before a key was set get keyed scope hashes and\n"
"fingerprints.  Each row is rewritten only if no gateway changed it\n"
"meanwhile.  Rows under a key id the file no longer holds stay as they\n"
"are (unreadable: crypto-shredded).  Never overlaps another run (MySQL\n"
"named lock '" REKEY_LOCK_NAME ":DATABASE').  Every run is recorded in\n"
"idem_rekey_runs and logged to syslog.  Prints nothing on success (for\n"
"cron).\n"
"\n"
"  -b, --batch N        rows per batch (default 500)\n"
"  -t, --max-seconds S  stop between batches after S seconds; the run is\n"
"                       recorded 'partial', the next one goes on, and the\n"
"                       exit is 0, quiet (-v says so) (default: no limit)\n"
"  -v, --verbose        print a summary line on success\n"
"  -c, --config FILE    config file (default " CTL_DEFAULT_CONFIG ")\n"
"\n"
"Exit: 0 ok (or stopped at --max-seconds), 1 usage, 2 config (no key\n"
"      file, or one that cannot be read), 3 database, 4 another rekey is\n"
"      running, 6 schema missing or old.\n";

/* The run's settings from the command line.  OUT: o. */
static int
rekey_args(struct ctl *c, int argc, char **argv, struct rekey_opts *o)
{
	long			 batch = REKEY_BATCH, max_s = 0;
	const struct ctl_opt	 opts[] = {
		{ .name = "batch", .letter = 'b', .kind = CTL_OPT_LONG,
		  .dst = &batch, .min = 1, .max = 100000,
		  .wants = "a number from 1 to 100000" },
		{ .name = "max-seconds", .letter = 't', .kind = CTL_OPT_LONG,
		  .dst = &max_s, .min = 0, .max = 86400 * 7,
		  .wants = "whole seconds (0 = no limit)" },
		{ NULL },
	};
	const struct ctl_cmdline cl = { .cmd = "rekey",
	    .usage = ctl_rekey_usage, .opts = opts };
	int			 argi, rc;

	if ((rc = ctl_opts_parse(c, &cl, argc, argv, &argi)) != CTL_OK)
		return rc;
	memset(o, 0, sizeof(*o));
	o->batch = (int)batch;
	o->max_ms = (int64_t)max_s * 1000;
	return CTL_OK;
}

/* The key file, which rekey cannot do without.  CTL_OK or one line and
 * CTL_ECONFIG. */
static int
rekey_keys(const struct ctl *c)
{
	if (c->cfg->secret_key_file == NULL) {
		ctl_err("rekey: no secret_key_file in %s: answers are stored "
		    "in clear, nothing to re-seal", c->cfgpath);
		return CTL_ECONFIG;
	}
	if (c->secrets_err[0] != '\0') {
		ctl_err("rekey: %s", c->secrets_err);
		return CTL_ECONFIG;
	}
	return CTL_OK;
}

/* Logs what store_admin_rekey() did (er, r) and says it as cron wants:
 * nothing on success unless asked.  Returns the exit code. */
static int
rekey_report(const struct ctl *c, const struct rekey_result *r,
    enum idem_err er)
{
	switch (er) {
	case IDEM_OK:
	case IDEM_ETIMEOUT:
		log_info("rekey %s: run %llu re-sealed %llu rows under key %s,"
		    " %llu rows keyed, %llu changed meanwhile, %llu "
		    "unreadable, %u batches, %lld ms%s", r->outcome,
		    (unsigned long long)r->run_id,
		    (unsigned long long)r->rekeyed, r->to_kid,
		    (unsigned long long)r->hashed,
		    (unsigned long long)r->changed,
		    (unsigned long long)r->unreadable, r->batches,
		    (long long)r->elapsed_ms, r->rewrapped ?
		    "; hashing key wrapped under it" : "");
		if (r->unreadable > 0)
			log_warn("rekey: %llu rows are under a key id the key "
			    "file lacks, or fail their tag: left as they are",
			    (unsigned long long)r->unreadable);
		if (c->verbose)
			printf("rekey %s: re-sealed %llu rows under key %s, "
			    "%llu rows keyed (%llu changed meanwhile, %llu "
			    "unreadable)%s%s\n", r->outcome,
			    (unsigned long long)r->rekeyed, r->to_kid,
			    (unsigned long long)r->hashed,
			    (unsigned long long)r->changed,
			    (unsigned long long)r->unreadable,
			    r->rewrapped ? "; hashing key wrapped under it" :
			    "",
			    er == IDEM_ETIMEOUT ? "; the next run continues" :
			    "");
		return CTL_OK;
	case IDEM_ESEAL:
		log_err("rekey refused: %s", store_last_error(c->st));
		ctl_err("rekey refused: %s", store_last_error(c->st));
		return CTL_ECONFIG;
	case IDEM_EBUSY:
		log_warn("rekey skipped: already running on another "
		    "connection");
		ctl_err("rekey already running on another connection");
		return CTL_EBUSY;
	default:
		log_err("rekey failed: %s", store_last_error(c->st));
		ctl_err("rekey failed: %s", store_last_error(c->st));
		return CTL_ESTORE;
	}
}

int
ctl_rekey(struct ctl *c, int argc, char **argv)
{
	struct rekey_opts	 o;
	struct rekey_result	 r;
	enum idem_err		 er;
	int			 rc;

	if ((rc = rekey_args(c, argc, argv, &o)) != CTL_OK)
		return rc == CTL_HELP ? CTL_OK : rc;
	log_open("idemctl", 1);
	log_set_level(LOG_LVL_INFO);
	if ((rc = ctl_load(c)) != CTL_OK || (rc = rekey_keys(c)) != CTL_OK)
		return rc;
	o.host = c->cfg->host_name != NULL ? c->cfg->host_name : "unknown";
	if ((rc = ctl_connect(c)) != CTL_OK) {
		log_err("rekey failed: database unreachable");
		return rc;
	}
	if ((rc = ctl_need_schema(c)) != CTL_OK)
		return rc;
	er = store_admin_rekey(c->st, &o, &r);
	return rekey_report(c, &r, er);
}
