/* idemctl run: a job or queue consumer made idempotent on the gateway store. */
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "cgi.h"
#include "cgi_env.h"
#include "clock.h"
#include "idemctl_run.h"
#include "lease.h"
#include "log.h"
#include "once.h"
#include "proc.h"
#include "rand.h"
#include "recorder.h"
#include "store.h"
#include "store_hkey.h"

#define RUN_TIMED_OUT		124	/* like timeout(1) */
#define RUN_NOT_FOUND		127	/* like sh and timeout(1): not found */
#define RUN_CANNOT_START	126	/* found, but it cannot be run */
#define RUN_STOP_GRACE_MS	2000	/* SIGTERM, then SIGKILL this much
					 * later */
#define RUN_POLL_MS		100	/* how soon a signal to run reaches
					 * COMMAND */
#define RUN_ROUTE_MAX		200	/* bytes of the name, escaped */
#define KEEPER_SLACK_MS		50	/* see keeper_grace_ms */
/* A run's mark in COMMAND's environment (struct keeper): a name of its
 * own, so a job run from a gateway's CGI keeps the gateway's
 * IDEMGATE_RUN, and one within another job keeps the outer run's mark
 * (a shell keeps one entry per name). */
#define RUN_MARK_FMT		"IDEMCTL_RUN_%016llx=1"
#define RUN_MARK_LEN		(sizeof("IDEMCTL_RUN_=1") + 16)
#define SWEEP_BATCH		256	/* children looked at at once */
#define SWEEP_MAX_MS		500	/* run_sweep's bound: well inside
					 * the lease left after a tick */
#define REAP_EVERY_MS		1000	/* orphans' zombies reaped meanwhile */

extern char **environ;

const char ctl_run_usage[] =
"usage: idemctl [-c FILE] run --key KEY [--scope S] [--ttl D] [--lease D]\n"
"                        [--wait D] [--timeout D] [--store-failures]\n"
"                        -- COMMAND [ARG...]\n"
"\n"
"Runs COMMAND once per KEY on the gateway's store, for cron jobs and queue\n"
"consumers.  stdin (unless a terminal) is read whole and given to COMMAND;\n"
"its stdout and exit status are recorded and given back; stderr passes\n"
"through.  The same KEY with the same argv and stdin prints the recorded\n"
"stdout and exits with the recorded status, without running COMMAND.\n"
"\n"
"  --key KEY          the idempotency key (a message id, a date, ...)\n"
"  --scope S          namespace within the job keys (default: job)\n"
"  --ttl D            how long the outcome is kept ([idempotency] ttl)\n"
"  --lease D          lease, renewed while COMMAND runs ([idempotency] lease;\n"
"                     at least 1s)\n"
"  --wait D           how long to wait for a run elsewhere "
"([idempotency] wait;\n"
"                     0: not at all)\n"
"  --timeout D        stop COMMAND after D (SIGTERM, then SIGKILL); "
"default and 0:\n"
"                     none\n"
"  --store-failures   keep a non-zero status too (default: released, so the\n"
"                     next delivery runs COMMAND again); not 126 or 127,\n"
"                     COMMAND not started\n"
"  -c, --config FILE  idemgate config (default " CTL_DEFAULT_CONFIG ")\n"
"  -h, --help         this text\n"
"\n"
"Exit status: COMMAND's (128+N if killed by signal N, 124 if --timeout\n"
"stopped it, 127 if it was not found, 126 if it could not be run), or\n"
"the recorded one on a\n"
"replay; 65 the key was used with other argv or stdin, or stdin is over\n"
"max_body; 69 the store is unreachable (COMMAND did not run); 74 stdin\n"
"unreadable; 75 still running elsewhere after --wait (deliver again\n"
"later); 6 schema missing (COMMAND did not run); 1 usage; 2 config.\n"
"A closed stdin is empty input.  Output that cannot be written is\n"
"said on stderr (the status stays COMMAND's).\n"
"\n"
"While it owns the key, run is not stopped by job control (Ctrl-Z): it must\n"
"go on renewing the lease while COMMAND runs.  Interrupt it instead.\n";

struct run_args {
	char		 key[FP_KEY_MAX + 1];
	size_t		 keylen;
	const char	*scope;		/* within "job" */
	int64_t		 ttl_ms, lease_ms, wait_ms, timeout_ms;
	int		 store_failures;
	char		**cmd;		/* COMMAND [ARG...], NULL-terminated */
};

/* One job on its way through the run core (lib/idem/once.h). */
struct run_job {
	struct ctl		*c;
	const struct run_args	*a;
	const struct buf	*in;	/* stdin, whole */
	struct once		 o;
	enum stat_id		 what;	/* the counter it adds to */
	int			 rc;	/* our exit code */
};

static volatile sig_atomic_t run_signal;
static volatile sig_atomic_t run_tstp;	/* a SIGTSTP came */

static void
run_on_signal(int sig)
{
	run_signal = sig;
}

/* A duration option into *ms (0 too when zero_ok); CTL_OK or one usage
 * line. */
static int
run_duration(const char *name, const char *v, int zero_ok, int64_t *ms)
{
	if (cfg_parse_duration(v, ms) != 0 || *ms < 0 ||
	    (*ms == 0 && !zero_ok))
		return ctl_usage_err("run", "invalid --%s '%s' (250ms, 10s, "
		    "5m, 72h, 7d; at most %lldd)", name, v,
		    (long long)(CFG_DURATION_MAX_MS / 86400000));
	return CTL_OK;
}

/* The options given as text, checked once the config is loaded. */
struct run_opt_text {
	const char	*key, *ttl, *lease, *wait, *timeout;
};

/* The config's defaults, then the durations given.  CTL_OK or the code. */
static int
run_durations(struct ctl *c, const struct run_opt_text *t, struct run_args *a)
{
	/* --wait 0: never wait (75 at once), as wait = 0 in the config;
	 * --timeout 0: none, as timeout(1). */
	const struct {
		const char	*name, *v;
		int		 zero_ok;
		int64_t		*ms;
	} d[] = {
		{ "ttl", t->ttl, 0, &a->ttl_ms },
		{ "lease", t->lease, 0, &a->lease_ms },
		{ "wait", t->wait, 1, &a->wait_ms },
		{ "timeout", t->timeout, 1, &a->timeout_ms },
	};
	size_t	 i;
	int	 rc;

	if ((rc = ctl_load(c)) != CTL_OK)
		return rc;
	a->ttl_ms = c->cfg->defaults.ttl_ms;
	a->lease_ms = c->cfg->defaults.lease_ms;
	a->wait_ms = c->cfg->defaults.wait_ms;
	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		if (d[i].v != NULL &&
		    (rc = run_duration(d[i].name, d[i].v, d[i].zero_ok,
		    d[i].ms)) != CTL_OK)
			return rc;
	if (t->lease != NULL && a->lease_ms < CFG_LEASE_MIN_MS)
		return ctl_usage_err("run", "invalid --lease '%s': must be at "
		    "least 1s", t->lease);
	return CTL_OK;
}

static int
run_opts(struct ctl *c, int argc, char **argv, struct run_args *a)
{
	struct run_opt_text	 t = { NULL };
	const struct ctl_opt	 opts[] = {
		{ .name = "key", .kind = CTL_OPT_STRING, .dst = &t.key },
		{ .name = "scope", .kind = CTL_OPT_STRING, .dst = &a->scope },
		{ .name = "ttl", .kind = CTL_OPT_STRING, .dst = &t.ttl },
		{ .name = "lease", .kind = CTL_OPT_STRING, .dst = &t.lease },
		{ .name = "wait", .kind = CTL_OPT_STRING, .dst = &t.wait },
		{ .name = "timeout", .kind = CTL_OPT_STRING,
		  .dst = &t.timeout },
		{ .name = "store-failures", .kind = CTL_OPT_FLAG,
		  .dst = &a->store_failures },
		{ NULL },
	};
	/* in order: COMMAND's own options are not ours. */
	const struct ctl_cmdline cl = { .cmd = "run", .usage = ctl_run_usage,
	    .opts = opts, .in_order = 1, .operands = -1 };
	int			 rc, argi;

	if ((rc = ctl_opts_parse(c, &cl, argc, argv, &argi)) != CTL_OK)
		return rc;
	if (t.key == NULL)
		return ctl_usage_err("run", "missing --key KEY");
	if (ctl_parse_key(t.key, a->key, &a->keylen) != 0)
		return ctl_usage_err("run", "invalid key (1 to %d visible "
		    "ASCII bytes, or a quoted string)", FP_KEY_MAX);
	if (argi >= argc)
		return ctl_usage_err("run", "missing COMMAND (after --)");
	a->cmd = argv + argi;
	/* An empty scope is a variable left unset, not the default. */
	if (a->scope != NULL && (a->scope[0] == '\0' ||
	    strcmp(a->scope, "job:") == 0))
		return ctl_usage_err("run", "invalid --scope '%s' (leave it "
		    "out for the default, job)", a->scope);
	if (a->scope != NULL && strncmp(a->scope, "job:", 4) == 0)
		a->scope += 4;
	if (a->scope != NULL && strcmp(a->scope, "job") == 0)
		a->scope = NULL;
	return run_durations(c, &t, a);
}

/* stdin whole, at most max bytes (none when it is a terminal or closed,
 * as cron and "<&-" leave it: empty input, as /dev/null).  CTL_OK, or
 * one line and the exit code. */
static int
run_stdin(struct buf *in)
{
	char	 b[65536];
	ssize_t	 n;

	if (isatty(STDIN_FILENO))
		return CTL_OK;
	for (;;) {
		n = read(STDIN_FILENO, b, sizeof(b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EBADF && in->len == 0)
			return CTL_OK;
		if (n < 0) {
			ctl_err("run: cannot read stdin: %s", strerror(errno));
			return CTL_RUN_IOERR;
		}
		if (n == 0)
			return CTL_OK;
		if (buf_add(in, b, (size_t)n) != IDEM_OK) {
			ctl_err("run: stdin is larger than max_body (%zu "
			    "bytes)", in->max);
			return CTL_RUN_DATAERR;
		}
	}
}

/* Appends n as 8 bytes big-endian. */
static enum idem_err
put_len(struct buf *b, uint64_t n)
{
	unsigned char	 p[8];
	int		 i;

	for (i = 7; i >= 0; i--, n >>= 8)
		p[i] = (unsigned char)(n & 0xff);
	return buf_add(b, p, 8);
}

/*
 * The route that names the job: "job:" and COMMAND's base name, each byte
 * outside printable ASCII (and '\') as \xNN, cut at a whole one to fit
 * routelen (at least 5), so that the route column takes any file name
 * under any character set (a name that is not UTF-8 made every run of the
 * job a store error: exit 69, COMMAND never run).
 */
static void
run_route(const char *cmd0, char *route, size_t routelen)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*p;
	const char		*base = strrchr(cmd0, '/');
	size_t			 n = 0;

	base = base != NULL && base[1] != '\0' ? base + 1 : cmd0;
	for (p = (const unsigned char *)base; *p != '\0'; p++) {
		int	 plain = *p >= 0x20 && *p < 0x7f && *p != '\\';

		if (4 + n + (plain ? 1 : 4) >= routelen)
			break;
		if (plain) {
			route[4 + n++] = (char)*p;
			continue;
		}
		route[4 + n++] = '\\';
		route[4 + n++] = 'x';
		route[4 + n++] = hex[*p >> 4];
		route[4 + n++] = hex[*p & 0xf];
	}
	memcpy(route, "job:", 4);
	route[4 + n] = '\0';
}

/*
 * The job's identity: scope "job" (+ --scope), the key, and a fingerprint
 * over argv and stdin, each length-prefixed so no two different runs
 * share an input.  route names the job for idemtop ("job:" + COMMAND's
 * base name).
 */
static enum idem_err
run_identify(const struct run_args *a, const struct buf *in,
    struct idem_id *id, char *route, size_t routelen)
{
	struct buf	 fpin;
	size_t		 n;
	enum idem_err	 er;

	memset(id, 0, sizeof(*id));
	fp_scope("job", a->scope != NULL ? a->scope : "", id->scope);
	buf_init(&fpin, (size_t)-1);
	for (n = 0; a->cmd[n] != NULL; n++)
		;
	er = put_len(&fpin, n);
	for (n = 0; er == IDEM_OK && a->cmd[n] != NULL; n++)
		if ((er = put_len(&fpin, strlen(a->cmd[n]))) == IDEM_OK)
			er = buf_addstr(&fpin, a->cmd[n]);
	if (er == IDEM_OK)
		er = buf_add(&fpin, in->p, in->len);
	if (er != IDEM_OK) {
		buf_free(&fpin);
		return er;
	}
	fp_request(&(struct fp_req){ .method = "RUN", .path = "",
	    .body = fpin.p, .bodylen = fpin.len }, id->fp);
	buf_free(&fpin);
	id->key = a->key;
	id->keylen = a->keylen;
	idem_id_name_lock(id);
	run_route(a->cmd[0], route, routelen);
	id->route = route;
	id->method = "RUN";
	id->ttl_ms = a->ttl_ms;
	id->lease_ms = a->lease_ms;
	/* COMMAND is our child: stopped at --timeout (SIGTERM, then SIGKILL),
	 * before its lease ends when renewals fail, and with us by the
	 * keeper (SIGTERM, SIGKILL keeper_grace_ms later); without
	 * --timeout the lease and that grace bound it. */
	id->run_ms = (a->timeout_ms > 0 ? a->timeout_ms : 0) +
	    RUN_STOP_GRACE_MS + CFG_KILL_GRACE_MS;
	return IDEM_OK;
}

/*
 * What COMMAND's run exchanges with us (cgi_exchange's arg): its stdout,
 * kept up to max_response and past it written through (the outcome is
 * then kept as a tombstone: never run again, nothing to replay); and the
 * lease, renewed when due.
 */
struct keeper;

/* Our children that are not COMMAND's: the ones we had before it (a
 * shell's "exec idemctl run" hands its own over) and the keeper. */
struct run_kids {
	pid_t	 had[SWEEP_BATCH];
	size_t	 nhad;
	int64_t	 next_reap;	/* CLOCK_MONOTONIC ms */
};

struct run_io {
	struct buf	 b;
	int		 oversized;
	struct lease	 l;
	int64_t		 next_renew;	/* CLOCK_MONOTONIC ms */
	int64_t		 deadline;	/* --timeout's, or 0 */
	int		 stopped;	/* run_tick said stop */
	int		 out_lost;	/* our stdout was given up */
	struct keeper	*k;
	struct run_kids	 kids;
};

static void keeper_check(struct keeper *k);
static void run_reap(struct run_kids *rk, const struct keeper *k);
static int64_t run_tick(void *arg);

/* All of p to our stdout: 0, or the errno that stopped it. */
static int
write_all(const void *vp, size_t n)
{
	const char	*p = vp;
	ssize_t		 w;

	while (n > 0) {
		w = write(STDOUT_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Output that could not be written: one line (the exit status stays
 * COMMAND's, SPEC 8), saying whether a redelivery replays it (kept). */
static void
out_failed(int err, int kept)
{
	ctl_err("run: cannot write stdout (%s): the output is lost%s",
	    strerror(err), kept ? "; a redelivery replays it" : "");
}

/* SIGALRM only breaks a write off (no SA_RESTART). */
static void
run_on_alarm(int sig)
{
	(void)sig;
}

/* Arms (ms > 0) or disarms (0) a SIGALRM every ms. */
static void
run_alarm(int64_t ms)
{
	struct itimerval	 it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = (ms % 1000) * 1000;
	it.it_interval = it.it_value;
	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * Writes COMMAND's output through while it runs.  A reader of our stdout
 * that stalls must not stall the lease with it: a write is broken off by
 * SIGALRM at the next tick (whatever stdout is: a pipe shared with other
 * writers, a pty or a socket may block a write that poll said had room;
 * run is one thread while COMMAND runs, so the signal reaches it), and
 * the tick renews the lease.  When a stop is due (a signal, a lost
 * lease, --timeout), what is left of our stdout is given up: cgi_exec's
 * own clock then stops COMMAND, or finds it already exited (a run that
 * finished is recorded, whatever its reader does).
 */
static void
run_write(struct run_io *o, const void *vp, size_t n)
{
	const char	*p = vp;
	int64_t		 wait;
	ssize_t		 w;

	while (n > 0 && !o->out_lost) {
		if ((wait = run_tick(o)) < 0 || (o->deadline > 0 &&
		    clock_now_ms() >= o->deadline)) {
			ctl_err("run: our stdout is not read and COMMAND must "
			    "stop: the rest of its output is dropped");
			o->out_lost = 1;
			break;
		}
		run_alarm(wait);
		w = write(STDOUT_FILENO, p, n);
		run_alarm(0);
		if (w < 0 && errno == EAGAIN) {
			/* A non-blocking stdout (inherited so): wait for
			 * room, as long as a tick. */
			struct pollfd pfd = { STDOUT_FILENO, POLLOUT, 0 };

			(void)poll(&pfd, 1, (int)wait);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/* Nobody reads our stdout: a tombstone, nothing to
			 * replay, COMMAND's status stays the exit code. */
			out_failed(w < 0 ? errno : EIO, 0);
			o->out_lost = 1;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
}

static enum idem_err
run_out(void *arg, const void *p, size_t n)
{
	struct run_io	*o = arg;

	if (!o->oversized && buf_add(&o->b, p, n) == IDEM_OK)
		return IDEM_OK;
	if (!o->oversized) {
		o->oversized = 1;
		run_write(o, o->b.p, o->b.len);
		buf_free(&o->b);
	}
	run_write(o, p, n);
	return IDEM_OK;
}

static void
run_on_tstp(int sig)
{
	run_tstp = sig;
}

/*
 * Job control while we own a key (on: from the claim until the outcome
 * is recorded).  COMMAND runs in a process group of its own, so a stop
 * (Ctrl-Z) would stop us alone: no renewals while COMMAND goes on, and
 * on Galera a takeover beside it.  Stopping COMMAND with us is no
 * better: a stopped group whose parent dies is continued by the kernel
 * (orphaned, SIGHUP then SIGCONT).  So we are not stopped meanwhile:
 * SIGTSTP is caught and said to be refused (run_tick), SIGTTIN and
 * SIGTTOU are ignored (a background write to the terminal then goes
 * through).  Off: they act as usual again.
 */
static void
run_job_control(int on)
{
	static const int	 sigs[3] = { SIGTSTP, SIGTTIN, SIGTTOU };
	static struct sigaction	 saved[3];	/* what we were given */
	struct sigaction	 sa;
	size_t			 i;

	for (i = 0; i < 3; i++) {
		if (!on) {
			sigaction(sigs[i], &saved[i], NULL);
			continue;
		}
		memset(&sa, 0, sizeof(sa));
		sigemptyset(&sa.sa_mask);
		sa.sa_handler = sigs[i] == SIGTSTP ? run_on_tstp : SIG_IGN;
		sigaction(sigs[i], &sa, &saved[i]);
	}
	run_tstp = 0;
}

/* The tick while COMMAND runs: a signal to us stops it (its group gets
 * SIGTERM, then SIGKILL); the lease is renewed when due. */
static int64_t
run_tick(void *arg)
{
	struct run_io	*t = arg;
	int64_t		 now, next;

	if (t->stopped || run_signal != 0)
		return -1;
	if (run_tstp != 0) {
		run_tstp = 0;
		ctl_err("run: not stopped while COMMAND runs (its lease must "
		    "be renewed): interrupt it instead");
	}
	now = clock_now_ms();
	keeper_check(t->k);
	run_reap(&t->kids, t->k);
	if (now >= t->next_renew) {
		if ((next = lease_tick(&t->l)) < 0) {
			/* Once: the lease is lost for good. */
			t->stopped = 1;
			return -1;
		}
		t->next_renew = now + next;
	}
	next = t->next_renew - now;
	if (next > RUN_POLL_MS)
		next = RUN_POLL_MS;
	return next < 1 ? 1 : next;
}

/* The entries run_env prints. */
struct run_envbuf {
	char	 fence[48];
	char	 key_id[sizeof("IDEMGATE_KEY_ID=") + CGI_KEY_ID_MAX];
};

/* Our environment for COMMAND, without what only idemctl may read, with
 * IDEMGATE_FENCE=fence, IDEMGATE_KEY_ID=key_id (set in b) and the run's
 * mark (RUN_MARK_FMT, in mark), borrowed by env.  Marks we were given
 * stay: the gateway's IDEMGATE_RUN (a CGI of the gateway's that runs a
 * job), an outer run's (a job within a job): what COMMAND starts is
 * theirs too. */
static char **
run_env(uint64_t fence, const char *key_id, struct run_envbuf *b,
    const char *mark)
{
	char	**env;
	size_t	 i, n = 0;

	for (i = 0; environ[i] != NULL; i++)
		;
	if ((env = calloc(i + 4, sizeof(*env))) == NULL)
		return NULL;
	for (i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], "MYSQL_PWD=", 10) != 0 &&
		    strncmp(environ[i], "IDEMGATE_FENCE=", 15) != 0 &&
		    strncmp(environ[i], "IDEMGATE_KEY_ID=", 16) != 0)
			env[n++] = environ[i];
	snprintf(b->fence, sizeof(b->fence), "IDEMGATE_FENCE=%llu",
	    (unsigned long long)fence);
	env[n++] = b->fence;
	snprintf(b->key_id, sizeof(b->key_id), "IDEMGATE_KEY_ID=%.*s",
	    CGI_KEY_ID_MAX, key_id);
	env[n++] = b->key_id;
	env[n] = (char *)mark;
	return env;
}

static void
run_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = run_on_signal;	/* no SA_RESTART: poll wakes */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = run_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Inherited as ignored, children would be reaped by the kernel:
	 * COMMAND's status, and the sweep, need them ours to wait for. */
	signal(SIGCHLD, SIG_DFL);
}

/*
 * The keeper: a process of ours that outlives a run killed with SIGKILL
 * just long enough to end COMMAND's process group, and what COMMAND
 * started outside it (setsid, a daemon's double fork: no longer ours to
 * sweep once we are gone, found by the run's mark in their environment),
 * so nothing a run started goes on after it (a takeover after the lease
 * would otherwise run beside it).  It reads a pipe only the run holds:
 * 'P' and the group's id once COMMAND runs, 'D' once the run reaped it;
 * the pipe's end without 'D' means the run died.
 */
struct keeper {
	int	 fd;
	pid_t	 pid;
	int64_t	 pg;	/* COMMAND's group, once it runs */
	int64_t	 grace_ms;	/* SIGTERM, then SIGKILL this much later */
	char	 mark[RUN_MARK_LEN];	/* in COMMAND's environment */
};

/*
 * The keeper's grace for a lease of lease_ms.  A run killed just before
 * its stop point (or within its own stop's CGI_STOP_GRACE_MS) leaves only
 * the lease's margin before a takeover may start the next run: COMMAND's
 * group must be gone by then, even if it ignores SIGTERM (KEEPER_SLACK_MS
 * for the kill itself and the clocks' rounding).
 */
static int64_t
keeper_grace_ms(int64_t lease_ms)
{
	int64_t	 g = cfg_lease_margin_ms(lease_ms) - CGI_STOP_GRACE_MS -
	    KEEPER_SLACK_MS;

	if (g > RUN_STOP_GRACE_MS)
		g = RUN_STOP_GRACE_MS;
	return g < 0 ? 0 : g;
}

static void
keeper_loop(int fd, int64_t grace_ms, const char *mark)
{
	unsigned char	 tag;
	int64_t		 pg = 0;
	int		 devnull;

	/* Nothing of the run's: not its database connection, not the
	 * stdout its caller waits to see closed. */
	if ((devnull = open("/dev/null", O_RDWR)) >= 0) {
		dup2(devnull, STDIN_FILENO);
		dup2(devnull, STDOUT_FILENO);
		dup2(devnull, STDERR_FILENO);
	}
	if (fd != 3) {
		dup2(fd, 3);
		fd = 3;
	}
	proc_closefrom(4);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	for (;;) {
		ssize_t n = read(fd, &tag, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 1 && tag == 'P' && read(fd, &pg, sizeof(pg)) ==
		    (ssize_t)sizeof(pg))
			continue;
		if (n == 1 && tag == 'D')
			_exit(0);
		break;		/* the run is gone */
	}
	if (pg > 1) {
		/* The group gets its grace; then what left it (and still
		 * carries the mark, as every process of the group does)
		 * goes with it. */
		kill(-(pid_t)pg, SIGTERM);
		if (grace_ms > 0)
			clock_sleep_ms(grace_ms);
		kill(-(pid_t)pg, SIGKILL);
		(void)proc_kill_env(mark);
	}
	_exit(0);
}

/* Starts the keeper; 0, or -1 (COMMAND then runs without one). */
static int
keeper_start(struct keeper *k)
{
	int	 p[2];

	k->fd = -1;
	k->pid = -1;
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	fflush(NULL);
	if ((k->pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (k->pid == 0) {
		/* Out of our process group: a kill of the group we are in
		 * (timeout -s KILL, a cron or service stop) leaves it to end
		 * COMMAND's. */
		setpgid(0, 0);
		close(p[1]);
		keeper_loop(p[0], k->grace_ms, k->mark);
	}
	close(p[0]);
	k->fd = p[1];
	return 0;
}

/* cgi_run.started: tells the keeper which group to end. */
static void
keeper_tell(struct keeper *k)
{
	unsigned char	 msg[1 + sizeof(int64_t)];

	if (k->fd < 0 || k->pg <= 0)
		return;
	msg[0] = 'P';
	memcpy(msg + 1, &k->pg, sizeof(k->pg));
	(void)!write(k->fd, msg, sizeof(msg));
}

static void
keeper_watch(pid_t pid, void *arg)
{
	struct keeper	*k = arg;

	k->pg = pid;
	keeper_tell(k);
}

/* The keeper died (killed on its own): a new one takes its place, so
 * COMMAND still cannot outlive us. */
static void
keeper_check(struct keeper *k)
{
	if (k == NULL || k->pid <= 0 || waitpid(k->pid, NULL, WNOHANG) !=
	    k->pid)
		return;
	if (k->fd >= 0)
		close(k->fd);
	if (keeper_start(k) != 0) {
		ctl_err("run: keeper died and none could be started (%s)",
		    strerror(errno));
		return;
	}
	keeper_tell(k);
}

/* COMMAND is reaped: the keeper may go. */
static void
keeper_done(struct keeper *k)
{
	if (k->fd >= 0) {
		(void)!write(k->fd, "D", 1);
		close(k->fd);
	}
	if (k->pid > 0)
		while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR)
			;
}

/* Notes the children we have before COMMAND starts. */
static void
run_kids_init(struct run_kids *rk)
{
	ssize_t	 n = proc_children(rk->had, SWEEP_BATCH);

	rk->nhad = n > 0 ? (size_t)n : 0;
	rk->next_reap = clock_now_ms() + REAP_EVERY_MS;
}

/* 1 if pid is a child of ours COMMAND did not leave us: the keeper, or
 * one we had before it. */
static int
run_kid_ours(const struct run_kids *rk, pid_t keeper, pid_t pid)
{
	size_t	 i;

	if (pid == keeper)
		return 1;
	for (i = 0; i < rk->nhad; i++)
		if (rk->had[i] == pid)
			return 1;
	return 0;
}

/* 1 if child pid is no escapee left to end: ours (run_kid_ours), or
 * ended and reaped now. */
static int
run_kid_gone(const struct run_kids *rk, pid_t keeper, pid_t pid)
{
	return run_kid_ours(rk, keeper, pid) ||
	    waitpid(pid, NULL, WNOHANG) == pid;
}

/* While COMMAND runs (k its keeper, k->pg COMMAND): the orphans it left
 * us that have ended are reaped (a long consumer's detached helpers
 * would pile up as zombies). */
static void
run_reap(struct run_kids *rk, const struct keeper *k)
{
	pid_t	 pids[SWEEP_BATCH];
	ssize_t	 n, i;
	int64_t	 now = clock_now_ms();

	if (k == NULL || now < rk->next_reap)
		return;
	rk->next_reap = now + REAP_EVERY_MS;
	n = proc_children(pids, SWEEP_BATCH);
	for (i = 0; i < n; i++)
		if (pids[i] != (pid_t)k->pg &&
		    !run_kid_ours(rk, k->pid, pids[i]))
			(void)waitpid(pids[i], NULL, WNOHANG);
}

/*
 * COMMAND's group is ended with it, but a descendant that left the group
 * (setsid, a daemon's double fork) would go on after the run, and beside
 * the next one once the key is released.  We are our descendants'
 * subreaper (run_command): each orphan becomes our child once its parent
 * is gone.  So once COMMAND is reaped, every child of ours but the keeper
 * and those we had before COMMAND is such an escapee: it is killed and
 * reaped, and so are the children it leaves us in turn, for at most
 * SWEEP_MAX_MS (the lease is not renewed meanwhile).  One line says what
 * was ended, and what could not be (not ours to signal, or stuck in the
 * kernel).  (A run killed with -9 leaves this to its keeper, which finds
 * them by the run's mark instead.)
 */
static void
run_sweep(const struct run_kids *rk, pid_t keeper, int64_t pg)
{
	pid_t		 pids[SWEEP_BATCH], killed[SWEEP_BATCH];
	ssize_t		 n, i;
	size_t		 nkilled = 0, escaped = 0, j, left;
	int64_t		 end = clock_now_ms() + SWEEP_MAX_MS;
	struct timespec	 ts = { 0, 5 * 1000000 };
	int		 seen;

	for (;;) {
		if ((n = proc_children(pids, SWEEP_BATCH)) < 0) {
			ctl_err("run: /proc does not list our children: what "
			    "COMMAND left outside its process group is not "
			    "ended");
			return;
		}
		left = 0;
		for (i = 0; i < n; i++) {
			if (run_kid_gone(rk, keeper, pids[i]))
				continue;
			left++;
			for (seen = 0, j = 0; j < nkilled && !seen; j++)
				seen = killed[j] == pids[i];
			if (seen)
				continue;
			if (getpgid(pids[i]) != (pid_t)pg)
				escaped++;
			(void)kill(pids[i], SIGKILL);
			if (nkilled < SWEEP_BATCH)
				killed[nkilled++] = pids[i];
		}
		if (left == 0 || clock_now_ms() >= end)
			break;
		nanosleep(&ts, NULL);
	}
	/* Out of time: what a last look still finds alive (a kill just
	 * sent needs a moment) could not be ended. */
	if (left > 0) {
		nanosleep(&ts, NULL);
		n = proc_children(pids, SWEEP_BATCH);
		for (left = 0, i = 0; i < n; i++)
			if (!run_kid_gone(rk, keeper, pids[i]))
				left++;
	}
	if (escaped > 0)
		ctl_err("run: ended %zu process%s COMMAND left running outside "
		    "its process group", escaped, escaped == 1 ? "" : "es");
	if (left > 0)
		ctl_err("run: %zu process%s COMMAND left could not be ended "
		    "(not ours to signal, or stuck)", left, left == 1 ? "" :
		    "es");
}

/*
 * Runs COMMAND under the lease of the key j owns.  OUT: o (its stdout),
 * *status (its exit status as a shell reports it).  Returns what cgi_exec
 * did: IDEM_OK (it exited), IDEM_ETIMEOUT, IDEM_ELEASE (stopped: a signal
 * to us or a lost lease), IDEM_EHANDLER (not started).
 */
static enum idem_err
run_command(struct run_job *j, struct run_io *o, int *status)
{
	const struct run_args	*a = j->a;
	struct cgi_run		 r;
	struct cgi_status	 st;
	struct keeper		 k;
	char			**env;
	struct run_envbuf	 eb;
	enum idem_err		 er;

	snprintf(k.mark, sizeof(k.mark), RUN_MARK_FMT,
	    (unsigned long long)rand_u64());
	if ((env = run_env(j->o.c.fence, idem_id_hex(j->o.id), &eb,
	    k.mark)) == NULL)
		return IDEM_ENOMEM;
	/* Orphans among COMMAND's descendants become ours (run_sweep). */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	run_kids_init(&o->kids);
	k.pg = 0;
	k.grace_ms = keeper_grace_ms(a->lease_ms);
	if (keeper_start(&k) != 0)
		ctl_err("run: no keeper process (%s): COMMAND would outlive a "
		    "killed run", strerror(errno));
	o->k = &k;
	lease_init(&o->l, &j->o, 1);
	o->next_renew = once_claimed_ms(&j->o) + lease_tick_ms(a->lease_ms);
	o->deadline = a->timeout_ms > 0 ? clock_now_ms() + a->timeout_ms : 0;
	memset(&r, 0, sizeof(r));
	memset(&st, 0, sizeof(st));
	r.program = a->cmd[0];
	r.argv = a->cmd;
	r.env = env;
	r.keep_cwd = 1;
	r.err_through = 1;
	r.until_exit = 1;
	r.stop_grace_ms = RUN_STOP_GRACE_MS;
	r.ex.body = j->in->p;
	r.ex.bodylen = j->in->len;
	r.ex.timeout_ms = a->timeout_ms;
	r.ex.tag = "run";
	r.ex.out = run_out;
	r.ex.tick = run_tick;
	r.ex.tick_ms = RUN_POLL_MS;
	r.ex.arg = o;
	r.started = keeper_watch;
	r.started_arg = &k;
	er = cgi_exec(&r, &st);
	run_sweep(&o->kids, k.pid, k.pg);
	keeper_done(&k);
	o->k = NULL;
	free(env);
	if (er == IDEM_EHANDLER)
		*status = st.start_errno == ENOENT ||
		    st.start_errno == ENOTDIR ? RUN_NOT_FOUND :
		    RUN_CANNOT_START;
	else if (er == IDEM_ETIMEOUT || st.timed_out)
		*status = RUN_TIMED_OUT;
	else if (st.signo != 0)
		*status = 128 + st.signo;
	else
		*status = st.exited ? st.exit_code : RUN_CANNOT_START;
	return er;
}

/* Adds this run to the fleet counters (idemctl stats/metrics), under its
 * route "job:NAME"; best effort, never in the way of the job. */
static void
run_count(struct ctl *c, const char *host, const char *route,
    enum stat_id what, int64_t waited_ms)
{
	struct stat_row	 row;

	memset(&row, 0, sizeof(row));
	row.minute = (int64_t)time(NULL);
	row.route = route;
	row.n[STAT_REQUESTS] = 1;
	row.n[what] = 1;
	if (waited_ms > 0) {
		row.n[STAT_WAITED] = 1;
		row.wait_bucket[stat_wait_bucket(waited_ms)] = 1;
		row.wait_sum_ms = (uint64_t)waited_ms;
	}
	if (store_counters_add(c->st, host, &row, 1) != IDEM_OK && c->verbose)
		ctl_err("run: counters not added: %s", store_last_error(c->st));
}

/* Records the outcome of the run we own (once_record); IDEM_OK, or
 * nothing could be. */
static enum idem_err
run_record(struct run_job *j, enum rec_op op, const struct answer *ans)
{
	struct recorder	*rec = NULL;
	enum rec_op	 done;
	enum idem_err	 er;
	int64_t		 end;
	size_t		 lost = 0;

	/* An outage at this moment: keep trying until the key's ttl, as
	 * the gateway does (SPEC 2b: recorded before forgotten; given up,
	 * the key would run again once its lease and run deadline passed),
	 * or until a signal tells us to stop. */
	if (recorder_new(j->c->cfg, &rec) != IDEM_OK)
		rec = NULL;
	j->o.rec = rec;
	er = once_record(&j->o, op, ans, &done);
	/* A release frees nothing a lapsed lease does not: the key is
	 * taken over once its lease and run deadline pass (COMMAND's group
	 * ended and swept), so the caller is not kept for it. */
	if (rec != NULL && er == IDEM_OK && op != REC_RELEASE &&
	    recorder_pending(rec, NULL) > 0) {
		ctl_err("run: store unreachable; retrying to record the "
		    "outcome for up to %lld s (the key's ttl; interrupt to "
		    "give up)", (long long)(j->a->ttl_ms / 1000));
		end = clock_now_ms() + j->a->ttl_ms;
		while (recorder_pending(rec, NULL) > 0 && run_signal == 0 &&
		    clock_now_ms() < end)
			clock_sleep_ms(50);
	}
	if (rec != NULL && er == IDEM_OK && (recorder_pending(rec, &lost) >
	    0 || lost > 0))
		er = IDEM_ESTORE;
	recorder_free(rec, 0);
	j->o.rec = NULL;
	return er;
}

/* The store answered with an error before anything ran: 6 and one line
 * when its schema is missing or older than this build (a queue must not
 * redeliver for ever what only an operator can mend), else 69. */
static int
run_store_err(struct ctl *c)
{
	char	 why[256];
	int	 v = -1;

	snprintf(why, sizeof(why), "%s", store_last_error(c->st));
	if (store_schema_version(c->st, &v) == IDEM_OK &&
	    v < store_schema_expected()) {
		ctl_err("run: schema %s (run 'idemctl migrate'); COMMAND not "
		    "run", v == 0 ? "missing" : "older than this build");
		return CTL_ESCHEMA;
	}
	ctl_err("run: store unavailable (%s); COMMAND not run", why);
	return CTL_RUN_UNAVAILABLE;
}

/* The key is ours: run COMMAND, record its outcome, give it back. */
static void
run_owned(struct run_job *j)
{
	struct run_io	 o;
	struct answer	 ans;
	struct once_end	 e = { IDEM_OK, 1, 0 };
	enum idem_err	 er;
	enum rec_op	 op;
	int		 status = 0, kept, err;

	memset(&o, 0, sizeof(o));
	buf_init(&o.b, j->c->cfg->defaults.max_response);
	er = run_command(j, &o, &status);
	if (er == IDEM_ENOMEM) {
		ctl_err("run: out of memory");
		status = RUN_CANNOT_START;
	}
	if (er == IDEM_ELEASE && run_signal == 0) {
		/* The lease is lost: someone else may own the key now. */
		ctl_err("run: lease lost; COMMAND stopped, outcome not "
		    "recorded");
		(void)store_release(j->o.st, &j->o.c);
		buf_free(&o.b);
		j->what = STAT_RELEASED;
		j->rc = CTL_RUN_TEMPFAIL;
		return;
	}
	/* Stopped by a signal to us (IDEM_ELEASE: the tick said stop and
	 * COMMAND was still running): a worker that catches SIGTERM exits
	 * 0 all the same, but its work was cut short, and a success
	 * recorded would be replayed to every redelivery.  One that had
	 * finished before the signal came (cgi_exec's last look) is a run
	 * like any other. */
	if (er == IDEM_ELEASE && run_signal != 0 && status == 0)
		status = 128 + run_signal;
	/* Any other end is an exit status (124 timed out, 126 or 127 not
	 * started, 128+N a signal): it is the answer, released unless it
	 * is 0 or --store-failures keeps it.  A COMMAND that never started did
	 * nothing to keep: released all the same (a deploy that had not
	 * put it in place yet must not lock its job out for the ttl). */
	answer_borrow(&ans, status, NULL, 0, o.b.p, o.b.len);
	e.whole = !o.oversized;
	e.released = status != 0 && (!j->a->store_failures ||
	    er == IDEM_EHANDLER || er == IDEM_ENOMEM);
	op = once_outcome(&e);
	j->what = once_stat(op);
	/* Not recorded, COMMAND's status all the same: it ran, and a queue
	 * that acks it will not deliver it again to run it twice. */
	kept = op != REC_RELEASE;
	/* COMMAND's group was ended with it and its orphans swept: the key
	 * lives its ttl. */
	j->o.c.run_over = 1;
	if (run_record(j, op, kept ? &ans : NULL) != IDEM_OK) {
		ctl_err("run: outcome not recorded: a retry may run COMMAND "
		    "again");
		kept = 0;
	}
	if (!o.oversized && (err = write_all(o.b.p, o.b.len)) != 0)
		out_failed(err, kept);
	buf_free(&o.b);
	j->rc = status;
}

/*
 * What the claim on the key says (once_dispatch): run COMMAND (the key is
 * ours), replay the recorded run, or refuse.  Each sets j's exit code and
 * counter.
 */
static void
run_claimed_new(struct once *o, void *arg)
{
	struct run_job	*j = arg;

	if (run_signal != 0) {
		/* Told to stop while it waited: COMMAND never starts. */
		(void)store_release(o->st, &o->c);
		j->rc = 128 + run_signal;
		j->what = STAT_RELEASED;
		return;
	}
	run_job_control(1);
	run_owned(j);
	run_job_control(0);
}

static void
run_replay(struct once *o, void *arg)
{
	struct run_job	*j = arg;
	int		 err;

	j->rc = o->c.ans.status;
	if ((err = write_all(o->c.ans.body.p, o->c.ans.body.len)) != 0)
		out_failed(err, 1);
	j->what = STAT_REUSED;
}

static void
run_mismatch(struct once *o, void *arg)
{
	struct run_job	*j = arg;

	ctl_err("run: key already used with other arguments or stdin");
	j->rc = CTL_RUN_DATAERR;
	j->what = STAT_MISMATCHED;
}

static void
run_tombstone(struct once *o, void *arg)
{
	struct run_job	*j = arg;

	ctl_err("run: key already ran (status %d); its output was too "
	    "large to keep", o->c.ans.status);
	j->rc = o->c.ans.status;
}

static void
run_busy(struct once *o, void *arg)
{
	struct run_job	*j = arg;

	ctl_err("run: key still running elsewhere after %lld ms; try "
	    "again later", (long long)o->waited_ms);
	j->rc = CTL_RUN_TEMPFAIL;
	j->what = STAT_CONFLICTED;
}

static void
run_sealed(struct once *o, void *arg)
{
	struct run_job	*j = arg;

	ctl_err("run: key already ran; its stored output (key id '%s') %s",
	    o->c.seal_kid, o->c.seal_er == IDEM_ENOTFOUND ?
	    "is sealed under a key secret_key_file does not hold" :
	    "does not decrypt (wrong key, or moved or altered)");
	j->rc = CTL_RUN_SOFTWARE;
}

static const struct once_ops run_ops = {
	.run = run_claimed_new,
	.replay = run_replay,
	.mismatch = run_mismatch,
	.tombstone = run_tombstone,
	.busy = run_busy,
	.sealed = run_sealed,
};

int
ctl_run(struct ctl *c, int argc, char **argv)
{
	struct run_args	 a;
	struct run_job	 j = { .c = c, .a = &a, .what = STAT_REQUESTS };
	struct idem_id	 id;
	struct buf	 in;
	char		 route[4 + RUN_ROUTE_MAX + 1], owner[300];
	int		 rc;

	memset(&a, 0, sizeof(a));
	if ((rc = run_opts(c, argc, argv, &a)) != CTL_OK)
		return rc < 0 ? CTL_OK : rc;
	/* Never store an answer in clear that the file says to seal. */
	if (c->secrets_err[0] != '\0') {
		ctl_err("run: %s", c->secrets_err);
		return CTL_ECONFIG;
	}
	buf_init(&in, c->cfg->defaults.max_body);
	j.in = &in;
	once_init(&j.o, NULL, &id, "run");
	if ((rc = run_stdin(&in)) != CTL_OK)
		goto out;
	if (run_identify(&a, &in, &id, route, sizeof(route)) != IDEM_OK) {
		ctl_err("run: out of memory");
		rc = CTL_RUN_UNAVAILABLE;
		goto out;
	}
	/* cfg_load fills host_name in (gethostname) when the file does not. */
	snprintf(owner, sizeof(owner), "%s:%ld", c->cfg->host_name,
	    (long)getpid());
	id.owner = owner;
	run_signals();
	/* Store unreachable: COMMAND does not run (ctl_connect said why);
	 * nor when the option file is missing or names no database, which
	 * no redelivery mends (2, as for the config file itself). */
	c->quick = 1;
	if ((rc = ctl_connect(c)) != CTL_OK) {
		if (rc != CTL_ECONFIG)
			rc = CTL_RUN_UNAVAILABLE;
		goto out;
	}
	/* A writer, as a gateway: the first with a key file keys the
	 * store. */
	c->hk.no_make = 0;
	if (store_hkey_resolve(c->st, &c->hk) != IDEM_OK) {
		rc = run_store_err(c);
		goto out;
	}
	/* A hashing key we cannot open (keyed store, no key file or not
	 * its line): plain hashes would miss the keyed rows and run
	 * COMMAND again.  ctl_hkey says why. */
	if (ctl_hkey(c, "run") != CTL_OK) {
		rc = CTL_RUN_UNAVAILABLE;
		goto out;
	}
	/* Hashed as the store hashes: keyed, its lock named after that. */
	idem_id_key(&id, &c->hk);
	idem_id_name_lock(&id);
	j.o.st = c->st;
	/* A signal ends a wait for a run elsewhere (Ctrl-C, a consumer's
	 * service stopped), not only COMMAND. */
	store_set_stop(c->st, &run_signal);
	if (once_claim(&j.o, a.wait_ms) != IDEM_OK) {
		rc = run_store_err(c);
		goto out;
	}
	if (j.o.c.state == CLAIM_BUSY && run_signal != 0) {
		ctl_err("run: stopped by signal %d while the key ran "
		    "elsewhere", (int)run_signal);
		rc = 128 + run_signal;
		goto out;
	}
	once_dispatch(&j.o, &run_ops, &j);
	rc = j.rc;
	run_count(c, c->cfg->host_name, route, j.what, j.o.waited_ms);
out:
	once_reset(&j.o);
	buf_free(&in);
	return rc;
}
