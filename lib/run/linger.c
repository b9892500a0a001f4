/* Handlers left running after a complete answer, ended at their timeout. */
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgi_env.h"
#include "clock.h"
#include "linger.h"
#include "log.h"
#include "proc.h"

#define LINGER_TICK_MS	100
#define LINGER_MAX	4096		/* groups; past this, killed at once */
#define LINGER_SWEEP_MAX 64		/* marks swept in one look at /proc */

struct lgroup {
	pid_t		 pid;
	int		 fd[2];		/* stdout, stderr read ends;
					 * -1 closed */
	int64_t		 deadline_ms;
	int		 reaped;	/* the leader is gone: pid is only the
					 * group's id, pinned by its members */
	uint64_t	 run;		/* the run's mark (IDEMGATE_RUN); 0:
					 * none */
};

struct linger {
	pthread_t	 tid;
	pthread_mutex_t	 mu;
	struct lgroup	*g;
	size_t		 n, cap;
	int		 stop;
};

/* 1 while g's id is still its group's, to be signalled: its leader not
 * reaped, or (the leader gone) a member pinning it. */
static int
lg_held(const struct lgroup *g)
{
	return !g->reaped || linger_group_lives(g->pid);
}

/* Kills what carries one of the n runs' marks: an escapee whose parent
 * had exited (the leader that answered and left) is out of the leader's
 * tree.  One look at every process of our user in /proc: never with the
 * lock held. */
static void
lg_sweep(const uint64_t *runs, size_t n)
{
	char		 marks[LINGER_SWEEP_MAX][CGI_RUN_LEN];
	const char	*m[LINGER_SWEEP_MAX];
	size_t		 i, k = 0;

	for (i = 0; i < n && k < LINGER_SWEEP_MAX; i++) {
		if (runs[i] == 0)
			continue;
		snprintf(marks[k], sizeof(marks[k]), CGI_RUN_FMT,
		    (unsigned long long)runs[i]);
		m[k] = marks[k];
		k++;
	}
	(void)proc_kill_env_any(m, k);
}

/* Kills the group, with what left it while the leader lives, and reaps
 * the leader (lg_sweep goes with it where the lock is not held). */
static void
lg_end(struct lgroup *g, int kill_it)
{
	int	 i, ws;

	if (kill_it) {
		/* The tree first, while the leader holds it together. */
		if (!g->reaped)
			(void)proc_kill_escaped(g->pid);
		if (lg_held(g))
			kill(-g->pid, SIGKILL);
	}
	while (!g->reaped && waitpid(g->pid, &ws, 0) == -1 && errno == EINTR)
		;
	for (i = 0; i < 2; i++)
		if (g->fd[i] >= 0)
			close(g->fd[i]);
}

/* Drops what is readable on fd; closes it at EOF or error. */
static void
lg_drain(int *fd)
{
	char	 buf[4096];
	ssize_t	 k;

	for (;;) {
		k = read(*fd, buf, sizeof(buf));
		if (k > 0)
			continue;
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1 && errno == EAGAIN)
			return;
		close(*fd);
		*fd = -1;
		return;
	}
}

int
linger_group_lives(pid_t pgid)
{
	/* EPERM: a member of another user's (a setuid program) lives. */
	return kill(-pgid, 0) == 0 || errno == EPERM;
}

/* 1 if the group is done: leader exited (not reaped) and pipes closed;
 * a group whose leader is gone, once no member is left. */
static int
lg_done(struct lgroup *g)
{
	siginfo_t	 si;

	if (g->reaped)
		return !linger_group_lives(g->pid);
	if (g->fd[0] >= 0)
		lg_drain(&g->fd[0]);
	if (g->fd[1] >= 0)
		lg_drain(&g->fd[1]);
	if (g->fd[0] >= 0 || g->fd[1] >= 0)
		return 0;
	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)g->pid, &si, WEXITED | WNOHANG |
	    WNOWAIT) == 0 && si.si_pid == g->pid;
}

static void *
lg_main(void *arg)
{
	struct linger	*lg = arg;
	struct lgroup	 g;
	uint64_t	 sweep[LINGER_SWEEP_MAX];
	size_t		 i, nsweep;
	int64_t		 now;
	int		 end, late;

	for (;;) {
		pthread_mutex_lock(&lg->mu);
		if (lg->stop) {
			pthread_mutex_unlock(&lg->mu);
			break;
		}
		nsweep = 0;
		now = clock_now_ms();
		for (i = 0; i < lg->n;) {
			late = now >= lg->g[i].deadline_ms;
			end = late || lg_done(&lg->g[i]);
			if (!end) {
				i++;
				continue;
			}
			/* Its marks are swept after the lock: no room left
			 * for one this tick, it waits for the next. */
			if (late && lg->g[i].run != 0 &&
			    nsweep == LINGER_SWEEP_MAX) {
				i++;
				continue;
			}
			/* The leader is done: reaped, its group may live on
			 * in a member (a child in the background, pipes let
			 * go), which is kept to the deadline. */
			if (!late && !lg->g[i].reaped) {
				lg_end(&lg->g[i], 0);
				lg->g[i].reaped = 1;
				lg->g[i].fd[0] = lg->g[i].fd[1] = -1;
				if (linger_group_lives(lg->g[i].pid)) {
					i++;
					continue;
				}
			}
			g = lg->g[i];
			lg->g[i] = lg->g[--lg->n];
			if (late)
				log_warn("handler group %ld still running at "
				    "its timeout; killed", (long)g.pid);
			/* The leader has exited or is killed now: quick. */
			lg_end(&g, late);
			if (late && g.run != 0)
				sweep[nsweep++] = g.run;
		}
		pthread_mutex_unlock(&lg->mu);
		lg_sweep(sweep, nsweep);
		clock_sleep_ms(LINGER_TICK_MS);
	}
	return NULL;
}

enum idem_err
linger_new(struct linger **out)
{
	struct linger	*lg;

	if ((lg = calloc(1, sizeof(*lg))) == NULL)
		return IDEM_ENOMEM;
	pthread_mutex_init(&lg->mu, NULL);
	if (pthread_create(&lg->tid, NULL, lg_main, lg) != 0) {
		pthread_mutex_destroy(&lg->mu);
		free(lg);
		return IDEM_ESYS;
	}
	*out = lg;
	return IDEM_OK;
}

static void
lg_add(struct linger *lg, struct lgroup g)
{
	struct lgroup	*ng;
	size_t		 cap;

	pthread_mutex_lock(&lg->mu);
	if (lg->n == lg->cap && lg->cap < LINGER_MAX) {
		cap = lg->cap ? lg->cap * 2 : 16;
		if ((ng = realloc(lg->g, cap * sizeof(*ng))) != NULL) {
			lg->g = ng;
			lg->cap = cap;
		}
	}
	if (lg->n < lg->cap) {
		lg->g[lg->n++] = g;
		pthread_mutex_unlock(&lg->mu);
		return;
	}
	pthread_mutex_unlock(&lg->mu);
	log_warn("too many lingering handler groups; killing %ld now",
	    (long)g.pid);
	lg_end(&g, 1);
	lg_sweep(&g.run, 1);
}

void
linger_add(struct linger *lg, pid_t pid, int out_fd, int err_fd,
    int64_t deadline_ms, uint64_t run)
{
	lg_add(lg, (struct lgroup){ pid, { out_fd, err_fd }, deadline_ms, 0,
	    run });
}

void
linger_add_group(struct linger *lg, pid_t pgid, int64_t deadline_ms,
    uint64_t run)
{
	lg_add(lg, (struct lgroup){ pgid, { -1, -1 }, deadline_ms, 1, run });
}

int
linger_kill(struct linger *lg, pid_t pid)
{
	size_t	 i;
	int	 n = 0;

	if (lg == NULL || pid <= 1)
		return 0;
	/* Held, the entry's leader is not reaped under us (lg_main reaps
	 * with the lock held): pid is still the group's. */
	pthread_mutex_lock(&lg->mu);
	for (i = 0; i < lg->n; i++) {
		if (lg->g[i].pid != pid)
			continue;
		if (!lg->g[i].reaped)
			n = proc_kill_escaped(pid);
		if (lg_held(&lg->g[i]) && kill(-pid, SIGKILL) == 0)
			n++;
		break;
	}
	pthread_mutex_unlock(&lg->mu);
	return n;
}

size_t
linger_count(struct linger *lg)
{
	size_t	 n;

	pthread_mutex_lock(&lg->mu);
	n = lg->n;
	pthread_mutex_unlock(&lg->mu);
	return n;
}

void
linger_free(struct linger *lg)
{
	uint64_t	 runs[LINGER_SWEEP_MAX];
	size_t		 i, n = 0;

	if (lg == NULL)
		return;
	pthread_mutex_lock(&lg->mu);
	lg->stop = 1;
	pthread_mutex_unlock(&lg->mu);
	pthread_join(lg->tid, NULL);
	for (i = 0; i < lg->n; i++) {
		lg_end(&lg->g[i], 1);
		if (lg->g[i].run != 0)
			runs[n++] = lg->g[i].run;
		if (n == LINGER_SWEEP_MAX || (i + 1 == lg->n && n > 0)) {
			lg_sweep(runs, n);
			n = 0;
		}
	}
	free(lg->g);
	pthread_mutex_destroy(&lg->mu);
	free(lg);
}
