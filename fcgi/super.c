/* The supervisor: keeps worker processes alive, drains, reloads. */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "board.h"
#include "clock.h"
#include "listen.h"
#include "log.h"
#include "problem.h"
#include "proc.h"
#include "super.h"
#include "worker.h"

#define DEATHS_MAX	5		/* this many deaths ... */
#define DEATHS_WINDOW	10000		/* ... within this many ms ... */
#define DEATHS_PAUSE	1000		/* ... pause restarts this long */
#define MAX_WORKERS	256
#define ORPHANS_MAX	1024		/* tracked orphans (more: killed) */
#define ORPHANS_SCAN	2048		/* children looked at per sweep */
#define ORPHAN_SWEEP_MS	500		/* how often orphans are looked for */
#define ORPHAN_DEATH_MS	2000		/* after a worker died: kill them all */
#define ORPHAN_FAST_MS	50		/* ... looking this often */
#define ORPHAN_GRACE_MS	60000		/* adoptee's life without a timeout */

struct wproc {
	pid_t		 pid;		/* 0: free slot */
	int		 gen;
	int		 slot;		/* index within its generation */
};

/* A process adopted by the supervisor (a subreaper): a handler, or a
 * child of one, whose parent died. */
struct orphan {
	pid_t		 pid;
	int64_t		 seen_ms;
};

struct super {
	struct cfg	*cfg;		/* current generation's config */
	struct orphan	 orphans[ORPHANS_MAX];
	int		 norphans;
	int64_t		 kill_all_until;	/* a worker died: no grace */
	int		 listen_fd;
	int		 gen;
	struct wproc	 procs[2 * MAX_WORKERS];
	int64_t		 deaths[DEATHS_MAX];	/* ring of recent death times */
	int		 ndeaths;
	int64_t		 restart_at;	/* pause restarts until then */
};

/* Slot i of the scoreboard belongs to procs[i]. */
_Static_assert(2 * MAX_WORKERS <= BOARD_SLOTS, "a board slot per process");

static int	 sig_pipe[2] = { -1, -1 };

static void
on_signal(int sig)
{
	unsigned char	 c = (unsigned char)sig;
	int		 saved = errno;

	(void)!write(sig_pipe[1], &c, 1);
	errno = saved;
}

static int
nworkers(const struct cfg *c)
{
	int	 n = c->workers > 0 ? c->workers : 1;

	return n > MAX_WORKERS ? MAX_WORKERS : n;
}

static void
set_signals(void (*h)(int))
{
	struct sigaction	 sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = h == SIG_DFL ? 0 : SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
}

/* Forks one worker of the current generation into slot. */
static int
spawn(struct super *s, int slot)
{
	struct wproc	*p = NULL;
	pid_t		 pid, parent = getpid();
	size_t		 i;
	int		 rc;

	for (i = 0; i < sizeof(s->procs) / sizeof(s->procs[0]); i++)
		if (s->procs[i].pid == 0) {
			p = &s->procs[i];
			break;
		}
	if (p == NULL)
		return -1;
	board_set((int)(p - s->procs), 0, s->gen);
	pid = fork();
	if (pid < 0) {
		log_err("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* A worker must not outlive its supervisor. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(0);
		close(sig_pipe[0]);
		close(sig_pipe[1]);
		set_signals(SIG_DFL);
		board_attach((int)(p - s->procs));
		rc = worker_run(s->cfg, s->listen_fd);
		/* exit, not _exit: LeakSanitizer checks workers at exit. */
		cfg_free(s->cfg);
		exit(rc);
	}
	p->pid = pid;
	p->gen = s->gen;
	p->slot = slot;
	return 0;
}

static void
spawn_generation(struct super *s)
{
	int	 i;

	for (i = 0; i < nworkers(s->cfg); i++)
		if (spawn(s, i) != 0)
			log_err("cannot start worker %d", i);
}

static int
count_alive(const struct super *s, int gen)
{
	size_t	 i;
	int	 n = 0;

	for (i = 0; i < sizeof(s->procs) / sizeof(s->procs[0]); i++)
		if (s->procs[i].pid != 0 && (gen < 0 || s->procs[i].gen == gen))
			n++;
	return n;
}

static void
signal_gen(struct super *s, int gen, int sig, int except_gen)
{
	size_t	 i;

	for (i = 0; i < sizeof(s->procs) / sizeof(s->procs[0]); i++)
		if (s->procs[i].pid != 0 &&
		    (gen < 0 || s->procs[i].gen == gen) &&
		    s->procs[i].gen != except_gen)
			kill(s->procs[i].pid, sig);
}

/* Notes a death; 1 if workers died too fast and restarts should pause. */
static int
note_death(struct super *s)
{
	int64_t	 t = clock_now_ms();

	s->deaths[s->ndeaths % DEATHS_MAX] = t;
	s->ndeaths++;
	return s->ndeaths >= DEATHS_MAX &&
	    t - s->deaths[(s->ndeaths - DEATHS_MAX) % DEATHS_MAX] <
	    DEATHS_WINDOW;
}

/* Reaps dead children; counts the current generation's missing slots. */
static void
reap(struct super *s, int stopping)
{
	struct wproc	*p;
	pid_t		 pid;
	size_t		 i;
	int		 status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		p = NULL;
		for (i = 0; i < sizeof(s->procs) / sizeof(s->procs[0]); i++)
			if (s->procs[i].pid == pid)
				p = &s->procs[i];
		if (p == NULL)
			continue;	/* an adopted orphan */
		p->pid = 0;
		board_set((int)(p - s->procs), 0, 0);
		/* Its handlers (and their children, setsid or not) are ours
		 * now: they must not outlive it. */
		if (WIFSIGNALED(status) || s->kill_all_until > 0)
			s->kill_all_until = clock_now_ms() + ORPHAN_DEATH_MS;
		if (stopping || p->gen != s->gen) {
			if (WIFSIGNALED(status) && WTERMSIG(status) != SIGTERM)
				log_warn("worker %ld killed by signal %d",
				    (long)pid, WTERMSIG(status));
			continue;
		}
		if (WIFSIGNALED(status))
			log_err("worker %ld killed by signal %d; restarting",
			    (long)pid, WTERMSIG(status));
		else
			log_err("worker %ld exited with status %d; "
			    "restarting", (long)pid, WEXITSTATUS(status));
		if (note_death(s) && s->restart_at <= clock_now_ms()) {
			log_warn("workers die fast; pausing restarts for "
			    "%d ms", DEATHS_PAUSE);
			s->restart_at = clock_now_ms() + DEATHS_PAUSE;
		}
	}
}

/* Restarts missing workers of the current generation unless paused. */
static void
refill(struct super *s)
{
	int	 want, have;

	if (s->restart_at > clock_now_ms())
		return;
	want = nworkers(s->cfg);
	have = count_alive(s, s->gen);
	while (have < want) {
		if (spawn(s, have) != 0)
			break;
		have++;
	}
}

static int
is_worker(const struct super *s, pid_t pid)
{
	size_t	 i;

	for (i = 0; i < sizeof(s->procs) / sizeof(s->procs[0]); i++)
		if (s->procs[i].pid == pid)
			return 1;
	return 0;
}

/* Kills an orphan and, if it leads a group (it called setsid or setpgid,
 * or it is a handler), the group with it. */
static void
orphan_kill(pid_t pid)
{
	if (getpgid(pid) == pid)
		kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

static int64_t longest_timeout(const struct cfg *c);

/*
 * The supervisor is a child subreaper: handlers whose worker died, and
 * children whose handler died (setsid ones too), become its children.
 * Each is killed after the longest route timeout, or at once while a
 * worker's death is recent or kill_all is set.  (They are reaped by
 * reap(), like workers.)
 */
static void
orphans_sweep(struct super *s, int kill_all)
{
	pid_t		 kids[ORPHANS_SCAN];
	struct orphan	 keep[ORPHANS_MAX];
	int64_t		 now = clock_now_ms(), grace;
	ssize_t		 n, k;
	int		 nkeep = 0, i, found;

	grace = longest_timeout(s->cfg);
	if (grace <= 0)
		grace = ORPHAN_GRACE_MS;
	if (s->kill_all_until > 0 && now < s->kill_all_until)
		kill_all = 1;
	else
		s->kill_all_until = 0;
	n = proc_children(kids, ORPHANS_SCAN);
	for (k = 0; k < n; k++) {
		if (is_worker(s, kids[k]))
			continue;
		found = -1;
		for (i = 0; i < s->norphans; i++)
			if (s->orphans[i].pid == kids[k])
				found = i;
		if (kill_all || nkeep == ORPHANS_MAX || (found >= 0 &&
		    now - s->orphans[found].seen_ms >= grace)) {
			log_warn("killing process %ld left behind by a "
			    "handler", (long)kids[k]);
			orphan_kill(kids[k]);
			continue;
		}
		keep[nkeep].pid = kids[k];
		keep[nkeep].seen_ms = found >= 0 ? s->orphans[found].seen_ms :
		    now;
		nkeep++;
	}
	memcpy(s->orphans, keep, (size_t)nkeep * sizeof(keep[0]));
	s->norphans = nkeep;
}

static int64_t
longest_timeout(const struct cfg *c)
{
	int64_t	 t = 0;
	size_t	 i;

	for (i = 0; i < c->nroutes; i++)
		if (c->routes[i].timeout_ms > t)
			t = c->routes[i].timeout_ms;
	return t;
}

static void
reload(struct super *s)
{
	struct cfg	*nc = NULL;
	char		 err[512];

	/* Refused as a start would refuse it. */
	if (cfg_load(s->cfg->path, &nc, err, sizeof(err)) != IDEM_OK ||
	    cfg_load_secrets(nc, err, sizeof(err)) != IDEM_OK ||
	    cfg_check_gateway(nc, err, sizeof(err)) != IDEM_OK ||
	    cfg_check_option_file(nc, err, sizeof(err)) != IDEM_OK) {
		log_err("reload refused, keeping the running config: %s", err);
		cfg_free(nc);
		return;
	}
	if (strcmp(nc->listen ? nc->listen : "", s->cfg->listen ?
	    s->cfg->listen : "") != 0)
		log_warn("reload: listen changed; it takes effect only on "
		    "restart");
	/* The socket was made at start: its owner and mode stay. */
	if (strcmp(nc->socket_owner ? nc->socket_owner : "",
	    s->cfg->socket_owner ? s->cfg->socket_owner : "") != 0 ||
	    nc->socket_mode != s->cfg->socket_mode)
		log_warn("reload: socket_owner or socket_mode changed; it "
		    "takes effect only on restart");
	/* Workers hold their own copy (fork): the old config can go.  The
	 * listen socket stays the same, so keep the value in use. */
	free(nc->listen);
	nc->listen = s->cfg->listen ? strdup(s->cfg->listen) : NULL;
	cfg_free(s->cfg);
	s->cfg = nc;
	/* The workers about to start read it from here: never the freed
	 * config's. */
	problem_set_base(nc->problem_base_url);
	log_open("idemgate", nc->log_syslog);
	s->gen++;
	spawn_generation(s);
	signal_gen(s, -1, SIGTERM, s->gen);
	log_info("config reloaded from %s", nc->path);
}

/* Waits up to ms for a child's exit or a signal; what the signal pipe
 * holds is dropped (shutting down already). */
static void
sig_nap(int ms)
{
	struct pollfd	 pfd = { sig_pipe[0], POLLIN, 0 };
	unsigned char	 buf[64];

	if (poll(&pfd, 1, ms) > 0)
		(void)!read(sig_pipe[0], buf, sizeof(buf));
}

/* SIGTERM to every worker, wait (bounded), SIGKILL the rest. */
static void
shutdown_all(struct super *s)
{
	int64_t		 deadline;
	int		 i;

	signal_gen(s, -1, SIGTERM, -1);
	/* A request still arriving has client_timeout, then its run. */
	deadline = clock_now_ms() + s->cfg->client_timeout_ms +
	    longest_timeout(s->cfg) + 5000;
	reap(s, 1);
	while (count_alive(s, -1) > 0 && clock_now_ms() < deadline) {
		sig_nap(100);
		reap(s, 1);
	}
	if (count_alive(s, -1) > 0) {
		log_warn("workers did not drain in time; killing them");
		signal_gen(s, -1, SIGKILL, -1);
		while (count_alive(s, -1) > 0) {
			sig_nap(100);
			reap(s, 1);
		}
	}
	/* Nothing a handler started outlives the service. */
	for (i = 0; i < 40; i++) {
		siginfo_t	 si;

		orphans_sweep(s, 1);
		reap(s, 1);
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1 &&
		    errno == ECHILD)
			break;
		sig_nap(50);
	}
}

/* The gateway changes no users (README): started as root, its CGI
 * programs run as root too.  Said once at start, as spawn-fcgi and
 * php-fpm speak up about root. */
static void
warn_root(const struct cfg *cfg)
{
	size_t	 i;

	if (geteuid() != 0)
		return;
	for (i = 0; i < cfg->nroutes; i++) {
		if (cfg->routes[i].handler == HANDLER_FASTCGI)
			continue;
		log_warn("running as root: route %s runs its handlers as "
		    "root; start idemgate as an unprivileged user "
		    "(systemd User=, spawn-fcgi -u)", cfg->routes[i].prefix);
		return;
	}
}

/*
 * Opens the signal pipe and the listen socket, becomes the subreaper and
 * starts the first generation.  0, or 1 after logging why (cfg is freed).
 */
static int
super_start(struct super *s, struct cfg *cfg)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->listen_fd = -1;
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		log_err("pipe: %s", strerror(errno));
		cfg_free(cfg);
		return 1;
	}
	if (listen_open(cfg, &s->listen_fd) != IDEM_OK) {
		close(sig_pipe[0]);
		close(sig_pipe[1]);
		cfg_free(cfg);
		return 1;
	}
	set_signals(on_signal);
	/* Always: a reload may turn status_path on. */
	if (board_init() != 0)
		log_warn("cannot map the scoreboard: %s; the status page "
		    "shows nothing", strerror(errno));
	/* Orphaned handlers come to us, not to init: see orphans_sweep. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		log_warn("cannot become a subreaper: %s; handlers may outlive "
		    "a dead worker", strerror(errno));
	log_info("listening on %s with %d workers x %d threads",
	    cfg->listen ? cfg->listen : "fd:0", nworkers(cfg), cfg->threads);
	warn_root(cfg);
	spawn_generation(s);
	return 0;
}

/* How long the loop may sleep: until the next orphan sweep, or less when
 * missing workers may be restarted sooner. */
static int
loop_timeout(const struct super *s)
{
	int	 timeout;

	timeout = s->kill_all_until > 0 ? ORPHAN_FAST_MS : ORPHAN_SWEEP_MS;
	if (count_alive(s, s->gen) < nworkers(s->cfg)) {
		int64_t	 d = s->restart_at - clock_now_ms();

		if (d < timeout)
			timeout = d > 0 ? (int)d : 0;
	}
	return timeout;
}

/* Empties the signal pipe: *term is set on SIGTERM or SIGINT; returns 1
 * on SIGHUP. */
static int
read_signals(int *term)
{
	unsigned char	 buf[64];
	ssize_t		 n, i;
	int		 hup = 0;

	while ((n = read(sig_pipe[0], buf, sizeof(buf))) > 0)
		for (i = 0; i < n; i++) {
			if (buf[i] == SIGTERM || buf[i] == SIGINT)
				*term = 1;
			else if (buf[i] == SIGHUP)
				hup = 1;
		}
	return hup;
}

/* One turn of the loop: waits for a signal or the timeout, reaps, sweeps
 * orphans, reloads on SIGHUP and restarts missing workers.  Returns 0 when
 * it is time to stop. */
static int
super_step(struct super *s)
{
	struct pollfd	 pfd = { sig_pipe[0], POLLIN, 0 };
	int		 term = 0, hup;

	if (poll(&pfd, 1, loop_timeout(s)) < 0 && errno != EINTR)
		return 0;
	hup = read_signals(&term);
	reap(s, term);
	orphans_sweep(s, 0);
	if (term)
		return 0;
	if (hup)
		reload(s);
	refill(s);
	return 1;
}

int
super_run(struct cfg *cfg)
{
	struct super	 s;

	if (super_start(&s, cfg) != 0)
		return 1;
	while (super_step(&s))
		continue;
	log_info("stopping: draining workers");
	listen_stop(s.cfg, s.listen_fd);
	shutdown_all(&s);
	close(s.listen_fd);
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	cfg_free(s.cfg);
	log_info("stopped");
	return 0;
}
