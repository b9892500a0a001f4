/* Running legacy CGI programs: script lookup, spawn and I/O. */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgi.h"
#include "clock.h"
#include "errlog.h"
#include "linger.h"
#include "log.h"
#include "proc.h"

/* After stdout's EOF, how long to wait for the exit. */
#define CGI_EOF_GRACE_MS	100
#define CGI_IOBUF		65536

/* 1 if path has a ".." component. */
static int
cgi_has_dotdot(const char *path)
{
	const char	*p = path;

	while (*p != '\0') {
		const char *e = strchr(p, '/');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == 2 && p[0] == '.' && p[1] == '.')
			return 1;
		if (e == NULL)
			break;
		p = e + 1;
	}
	return 0;
}

/* 1 if path lies strictly inside dir (a prefix ending on a "/"). */
static int
cgi_under(const char *dir, const char *path)
{
	size_t	 dl = strlen(dir);

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	if (dl == 1 && dir[0] == '/')
		return path[0] == '/' && path[1] != '\0';
	return strncmp(path, dir, dl) == 0 && path[dl] == '/' &&
	    path[dl + 1] != '\0';
}

/*
 * script spelled through another name of the root (a document root or a
 * script_root reached through a symlink): its directory's longest part
 * that exists is resolved, and when that is rroot or below, out is the
 * script under it (the rest of the path as given) and 0; else -1, whether
 * that part lies elsewhere or nothing of it is there, so a path outside
 * the root learns nothing of what exists there.
 */
static int
cgi_respell(const char *rroot, const char *script, char *out, size_t outlen)
{
	char		 dir[PATH_MAX], rdir[PATH_MAX];
	const char	*rest;
	char		*slash;
	size_t		 dl;

	if ((rest = strrchr(script, '/')) == NULL || rest[1] == '\0' ||
	    rest == script)
		return -1;
	dl = (size_t)(rest - script);
	if (dl >= sizeof(dir))
		return -1;
	memcpy(dir, script, dl);
	dir[dl] = '\0';
	/* Up to the longest part that is there (a missing directory, or
	 * the script itself with a path after it, is looked up later: 404
	 * or the walk along PATH_INFO). */
	while (realpath(dir, rdir) == NULL) {
		if ((errno != ENOENT && errno != ENOTDIR) ||
		    (slash = strrchr(dir, '/')) == NULL || slash == dir)
			return -1;
		*slash = '\0';
	}
	if (strcmp(rdir, rroot) != 0 && !cgi_under(rroot, rdir))
		return -1;
	if (snprintf(out, outlen, "%s%s", rdir, script + strlen(dir)) >=
	    (int)outlen)
		return -1;
	return 0;
}

/* Says why a script was refused (why may be NULL); returns er. */
static enum idem_err
cgi_refuse(enum idem_err er, char *why, size_t whylen, const char *fmt, ...)
{
	va_list	 ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return er;
}

enum idem_err
cgi_script_resolve_why(const char *root, const char *script, char *out,
    size_t outlen, char *why, size_t whylen)
{
	char		 rroot[PATH_MAX], rscript[PATH_MAX], alt[PATH_MAX];
	struct stat	 sb;
	size_t		 l;

	if (script == NULL || script[0] == '\0')
		return cgi_refuse(IDEM_ENOTFOUND, why, whylen, "no script");
	if (root == NULL)
		return cgi_refuse(IDEM_EFORBIDDEN, why, whylen,
		    "no script_root");
	if (script[0] != '/' || cgi_has_dotdot(script))
		return cgi_refuse(IDEM_EFORBIDDEN, why, whylen,
		    "not an absolute path without '..'");
	if (realpath(root, rroot) == NULL) {
		log_err("script_root %s: %s", root, strerror(errno));
		return cgi_refuse(IDEM_EFORBIDDEN, why, whylen,
		    "script_root %s: %s", root, strerror(errno));
	}
	/*
	 * Judge the name before touching the file system, so a path
	 * outside the root cannot be probed for existence (403 either way).
	 */
	if (!cgi_under(root, script) && !cgi_under(rroot, script)) {
		if (cgi_respell(rroot, script, alt, sizeof(alt)) != 0)
			return cgi_refuse(IDEM_EFORBIDDEN, why, whylen,
			    "outside script_root %s", rroot);
		script = alt;
	}
	if (realpath(script, rscript) == NULL)
		return cgi_refuse(errno == ENOENT || errno == ENOTDIR ?
		    IDEM_ENOTFOUND : IDEM_EFORBIDDEN, why, whylen, "%s",
		    strerror(errno));
	/* Symlinks may not lead out of the root. */
	if (!cgi_under(rroot, rscript))
		return cgi_refuse(IDEM_EFORBIDDEN, why, whylen, "resolves to "
		    "%s, outside script_root %s (a symlink out of the root)",
		    rscript, rroot);
	if (stat(rscript, &sb) == -1)
		return cgi_refuse(IDEM_ENOTFOUND, why, whylen, "%s: %s",
		    rscript, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return cgi_refuse(IDEM_EFORBIDDEN, why, whylen,
		    "resolves to %s: not a regular file", rscript);
	if ((sb.st_mode & 0111) == 0 ||
	    faccessat(AT_FDCWD, rscript, X_OK, AT_EACCESS) == -1)
		return cgi_refuse(IDEM_EFORBIDDEN, why, whylen,
		    "resolves to %s: not executable", rscript);
	l = strlen(rscript);
	if (l >= outlen)
		return cgi_refuse(IDEM_ETOOBIG, why, whylen, "path too long");
	memcpy(out, rscript, l + 1);
	return IDEM_OK;
}

enum idem_err
cgi_script_resolve(const char *root, const char *script, char *out,
    size_t outlen)
{
	return cgi_script_resolve_why(root, script, out, outlen, NULL, 0);
}

/*
 * pipe2(O_CLOEXEC) whose ends are both >= 3, so the dup2 onto the
 * child's 0/1/2 can never clobber another pipe end (a gateway started
 * with 1 or 2 closed would otherwise get them back from pipe2).
 * IDEM_ESYS with errno set on failure.
 */
static enum idem_err
cgi_pipe(int fds[2])
{
	int	 i, nfd;

	if (pipe2(fds, O_CLOEXEC) == -1)
		return IDEM_ESYS;
	for (i = 0; i < 2; i++) {
		if (fds[i] >= 3)
			continue;
		if ((nfd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) == -1) {
			close(fds[0]);
			close(fds[1]);
			return IDEM_ESYS;
		}
		close(fds[i]);
		fds[i] = nfd;
	}
	return IDEM_OK;
}

static void
cgi_close(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void
cgi_nonblock(int fd)
{
	int	 fl = fcntl(fd, F_GETFL);

	if (fl != -1)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* The signals the gateway may ignore or catch, back to their default in
 * the program (any other it catches goes back too). */
static const int cgi_sigdefault[] = { SIGPIPE, SIGHUP, SIGINT, SIGQUIT,
	SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM, SIGXFSZ, SIGXCPU,
	SIGTTIN, SIGTTOU, SIGTSTP, SIGURG, SIGWINCH };

/* The kernel's struct sigaction (raw rt_sigaction: no library wrapper
 * runs in the vfork child, which shares our memory). */
struct cgi_ksigaction {
	void		*handler;
	unsigned long	 flags;
	void		*restorer;
	unsigned long	 mask;
};

/*
 * In the vfork child, signals all blocked: every signal caught here, and
 * those of cgi_sigdefault, back to the default, so no handler of ours
 * runs in the child once it unblocks them.
 */
static void
cgi_child_signals(void)
{
	struct cgi_ksigaction	 old, dfl;
	size_t			 i;
	int			 sig, reset;

	memset(&dfl, 0, sizeof(dfl));
	dfl.handler = (void *)SIG_DFL;
	for (sig = 1; sig < 65; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (syscall(SYS_rt_sigaction, sig, NULL, &old,
		    sizeof(old.mask)) != 0)
			continue;
		reset = old.handler != (void *)SIG_DFL &&
		    old.handler != (void *)SIG_IGN;
		for (i = 0; !reset && i < sizeof(cgi_sigdefault) /
		    sizeof(cgi_sigdefault[0]); i++)
			reset = cgi_sigdefault[i] == sig;
		if (reset)
			(void)syscall(SYS_rt_sigaction, sig, &dfl, NULL,
			    sizeof(dfl.mask));
	}
}

/*
 * The vfork child: its own process group (so a timeout kills what it
 * started too), SIGKILL when the thread that started it dies (so a run
 * never outlives its worker, even one killed with -9 along with its
 * supervisor), fds 0/1/2 and nothing else, no signal blocked.  Only
 * system calls: it shares the parent's memory until exec.  errno in *cerr
 * if it cannot exec.
 */
static void __attribute__((noreturn))
cgi_child(const struct cgi_run *r, const char *dir, char *const *argv,
    char *const *envp, pid_t parent, int in, int out, int err,
    volatile int *cerr)
{
	sigset_t	 none;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent ||
	    setpgid(0, 0) != 0)
		goto fail;
	/* in, out and err are at least 3 (cgi_pipe), or err is 2 itself
	 * (err_through: kept open across exec, as posix_spawn's dup2 of an
	 * fd onto itself did): dup2 in this order never clobbers one. */
	if (dup2(in, 0) == -1 || dup2(out, 1) == -1 ||
	    (err != 2 ? dup2(err, 2) == -1 : fcntl(2, F_SETFD, 0) == -1))
		goto fail;
	proc_closefrom(3);
	proc_nofile_child();
	if (dir != NULL && chdir(dir) != 0)
		goto fail;
	cgi_child_signals();
	sigemptyset(&none);
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL,
	    sizeof(unsigned long));
	if (strchr(r->program, '/') != NULL)
		execve(r->program, argv, envp);
	else
		execvpe(r->program, argv, envp);
fail:
	*cerr = errno != 0 ? errno : EINVAL;
	_exit(127);
}

/* vfork and nothing else in this frame: the child never returns here. */
static pid_t
cgi_vfork(const struct cgi_run *r, const char *dir, char *const *argv,
    char *const *envp, pid_t parent, int in, int out, int err,
    volatile int *cerr)
{
	pid_t	 pid;

	if ((pid = vfork()) == 0)
		cgi_child(r, dir, argv, envp, parent, in, out, err, cerr);
	return pid;
}

/*
 * Starts the program with fds 0/1/2 on the given pipe ends and nothing
 * else: every other descriptor of the gateway (listen socket, FastCGI
 * connections, MySQL connections, other requests' pipes) is closed in the
 * child, whatever its close-on-exec flag, because another thread may have
 * opened it a moment ago without one (libfcgi's accept, the MySQL client).
 * vfork, not posix_spawn: the child sets its parent-death signal, which
 * posix_spawn cannot.  All signals stay blocked in this thread meanwhile,
 * so no handler of ours runs in the child.  -1 on error.
 */
static pid_t
cgi_spawn(const struct cgi_run *r, int in, int out, int err)
{
	static char *const	 noenv[] = { NULL };
	char			 dir[PATH_MAX];
	char			*argv1[2], *slash;
	char *const		*argv = r->argv;
	char *const		*envp = r->env != NULL ? r->env : noenv;
	sigset_t		 all, old;
	volatile int		 cerr = 0;
	pid_t			 parent = getpid(), pid;

	if (strlen(r->program) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(dir, r->program);
	if ((slash = strrchr(dir, '/')) == NULL)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (argv == NULL) {
		argv1[0] = (char *)r->program;
		argv1[1] = NULL;
		argv = argv1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = cgi_vfork(r, r->keep_cwd ? NULL : dir, argv, envp, parent, in,
	    out, err, &cerr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid == -1)
		return -1;
	if (cerr != 0) {
		while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
			;
		errno = cerr;
		return -1;
	}
	return pid;
}

/* Fills st from a waitpid() status. */
static void
cgi_status_set(struct cgi_status *st, int ws, int timed_out)
{
	st->exited = WIFEXITED(ws) ? 1 : 0;
	st->exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 0;
	st->signo = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
	st->timed_out = timed_out;
	st->lingering = 0;
}

static int
cgi_reap(pid_t pid)
{
	int	 ws = 0;

	while (waitpid(pid, &ws, 0) == -1 && errno == EINTR)
		;
	return ws;
}

/* SIGTERM to the group, SIGKILL after grace_ms if the program has not
 * exited by then; reaps it.  Returns its wait status. */
static int
cgi_stop(pid_t pid, int64_t grace_ms)
{
	int64_t		 end = clock_now_ms() + grace_ms;
	struct timespec	 ts = { 0, 10 * 1000000 };
	int		 ws = 0;

	kill(-pid, SIGTERM);
	while (clock_now_ms() < end) {
		if (waitpid(pid, &ws, WNOHANG) == pid) {
			/* Its children go with it. */
			kill(-pid, SIGKILL);
			return ws;
		}
		nanosleep(&ts, NULL);
	}
	kill(-pid, SIGKILL);
	return cgi_reap(pid);
}

static int
cgi_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* 1 (and *ws) once the program has exited; it is left unreaped, so its
 * pid, its group's id, stays its own. */
static int
cgi_exited(pid_t pid, int *ws)
{
	siginfo_t	 si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
	    si.si_pid != pid)
		return 0;
	if (si.si_code == CLD_EXITED)
		*ws = (si.si_status & 0xff) << 8;
	else
		*ws = si.si_status & 0x7f;	/* killed or dumped */
	return 1;
}

/* The log prefix of a run. */
static const char *
cgi_tag(const struct cgi_run *r)
{
	return r->ex.tag != NULL ? r->ex.tag : "cgi";
}

void
cgi_clock_start(struct cgi_clock *c, const struct cgi_exchange *ex,
    int64_t now)
{
	c->start = now;
	c->overdue = 0;
	c->deadline = ex->timeout_ms > 0 ? now + ex->timeout_ms : -1;
	/* An upstream's run limit may come before the client's timeout:
	 * the run ends there all the same (cgi_clock_check). */
	if (ex->overdue != NULL && ex->run_limit_ms > 0 && (c->deadline < 0 ||
	    now + ex->run_limit_ms < c->deadline))
		c->deadline = now + ex->run_limit_ms;
	c->next_tick = ex->tick != NULL && ex->tick_ms > 0 ?
	    now + ex->tick_ms : -1;
	c->flush_at = -1;
}

void
cgi_clock_fed(struct cgi_clock *c, const struct cgi_exchange *ex)
{
	/* No clock read where there is nothing to flush (a kept answer). */
	if (ex->flush != NULL && c->flush_at < 0)
		c->flush_at = clock_now_ms() + CGI_FLUSH_MS;
}

enum idem_err
cgi_clock_check(struct cgi_clock *c, const struct cgi_exchange *ex,
    int64_t now)
{
	int64_t	 next;

	if (c->deadline >= 0 && now >= c->deadline) {
		if (ex->overdue == NULL)
			return IDEM_ETIMEOUT;
		if (c->overdue || (ex->run_limit_ms > 0 &&
		    now >= c->start + ex->run_limit_ms))
			return IDEM_EBROKEN;
		c->overdue = 1;
		ex->overdue(ex->arg);
		c->deadline = ex->run_limit_ms > 0 ? c->start +
		    ex->run_limit_ms : -1;
		if (c->deadline >= 0 && now >= c->deadline)
			return IDEM_EBROKEN;
	}
	if (c->next_tick >= 0 && now >= c->next_tick) {
		if ((next = ex->tick(ex->arg)) < 0)
			return IDEM_ELEASE;
		c->next_tick = now + next;
	}
	if (c->flush_at >= 0 && now >= c->flush_at) {
		c->flush_at = -1;
		return ex->flush(ex->arg);
	}
	return IDEM_OK;
}

int64_t
cgi_clock_wait(const struct cgi_clock *c, int64_t now)
{
	int64_t	 wait_ms = c->deadline >= 0 ? c->deadline - now : -1;

	if (c->next_tick >= 0 && (wait_ms < 0 || c->next_tick - now < wait_ms))
		wait_ms = c->next_tick - now;
	if (c->flush_at >= 0 && (wait_ms < 0 || c->flush_at - now < wait_ms))
		wait_ms = c->flush_at > now ? c->flush_at - now : 0;
	if (wait_ms > INT_MAX)
		wait_ms = INT_MAX;
	return wait_ms;
}

/* One run's I/O state. */
struct cgi_io {
	const struct cgi_run	*r;
	pid_t			 pid;
	int64_t			 started;
	struct cgi_clock	 clk;
	int64_t			 eof_end;	/* stdout closed: exit by */
	int			 fin, fout, ferr, pidfd;
	size_t			 woff;		/* body bytes written */
	int			 exited;	/* leader exited, unreaped */
	int			 ws;		/* its status when exited */
	int			 complete;	/* the answer is whole */
	int			 start_errno;	/* not started: why */
	struct errlog		 el;
};

/* Reads stdout once; out() gets the bytes.  0, or an out() error. */
static enum idem_err
cgi_read_out(struct cgi_io *io)
{
	const struct cgi_exchange *ex = &io->r->ex;
	char			 buf[CGI_IOBUF];
	ssize_t			 k;
	enum idem_err		 er;

	k = read(io->fout, buf, sizeof(buf));
	if (k > 0) {
		if ((er = ex->out(ex->arg, buf, (size_t)k)) != IDEM_OK)
			return er;
		cgi_clock_fed(&io->clk, ex);
		if (ex->complete != NULL && ex->complete(ex->arg))
			io->complete = 1;
		return IDEM_OK;
	}
	if (k == -1 && (errno == EAGAIN || errno == EINTR))
		return IDEM_EAGAIN;
	/* EOF: the answer is complete; no one reads stdin any more. */
	cgi_close(&io->fout);
	cgi_close(&io->fin);
	return IDEM_OK;
}

static void
cgi_read_err(struct cgi_io *io)
{
	char	 buf[CGI_IOBUF];
	ssize_t	 k;

	k = read(io->ferr, buf, sizeof(buf));
	if (k > 0)
		errlog_add(&io->el, buf, (size_t)k);
	else if (k == 0 || (errno != EAGAIN && errno != EINTR))
		cgi_close(&io->ferr);
}

static void
cgi_write_in(struct cgi_io *io)
{
	const char	*body = io->r->ex.body;
	size_t		 len = io->r->ex.bodylen;
	ssize_t		 k;

	k = write(io->fin, body + io->woff, len - io->woff);
	if (k > 0)
		io->woff += (size_t)k;
	else if (k == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	else if (k == -1 && errno != EPIPE)
		log_warn("%s: writing stdin: %s", cgi_tag(io->r),
		    strerror(errno));
	/* Done, or the program stopped reading: either way, EOF now. */
	if (k <= 0 || io->woff == len)
		cgi_close(&io->fin);
}

/*
 * The program exited: what it wrote is in the pipe.  A child may still
 * hold stdout; the answer is whole all the same.  Takes at most what a
 * pipe holds, and a little (a child may keep writing).  0, or an out()
 * error.
 */
static enum idem_err
cgi_io_exited(struct cgi_io *io)
{
	enum idem_err	 er = IDEM_OK;
	int		 i;

	io->exited = 1;
	for (i = 0; i < 16 && io->fout >= 0 && !io->complete &&
	    (er = cgi_read_out(io)) == IDEM_OK; i++)
		;
	if (er != IDEM_OK && er != IDEM_EAGAIN)
		return er;
	io->complete = 1;
	return IDEM_OK;
}

/*
 * Stdout closed: complete.  A moment to exit first, so a crash (exit by
 * signal) still counts as one.  1 once the answer is complete.
 */
static int
cgi_io_eof(struct cgi_io *io, int64_t now)
{
	if (io->fout >= 0 || io->r->until_exit)
		return 0;
	if (io->eof_end < 0)
		io->eof_end = now + CGI_EOF_GRACE_MS;
	if (now < io->eof_end)
		return 0;
	io->complete = 1;
	return 1;
}

/* The descriptors to poll; returns their count. */
static int
cgi_io_pollset(const struct cgi_io *io, struct pollfd pfd[4])
{
	int	 n = 0;

	if (io->fin >= 0)
		pfd[n++] = (struct pollfd){ io->fin, POLLOUT, 0 };
	if (io->fout >= 0)
		pfd[n++] = (struct pollfd){ io->fout, POLLIN, 0 };
	if (io->ferr >= 0)
		pfd[n++] = (struct pollfd){ io->ferr, POLLIN, 0 };
	if (io->pidfd >= 0)
		pfd[n++] = (struct pollfd){ io->pidfd, POLLIN, 0 };
	return n;
}

/*
 * Waits for the pipes, the exit or the next time limit, then serves the
 * pipes that are ready.  IDEM_OK, IDEM_ESYS (poll failed), or an out()
 * error.
 */
static enum idem_err
cgi_io_wait(struct cgi_io *io, int64_t now)
{
	struct pollfd	 pfd[4];
	int64_t		 wait_ms;
	int		 n, i;
	enum idem_err	 er;

	n = cgi_io_pollset(io, pfd);
	wait_ms = cgi_clock_wait(&io->clk, now);
	if (io->eof_end >= 0 && (wait_ms < 0 || io->eof_end - now < wait_ms))
		wait_ms = io->eof_end - now;
	/* Without a pidfd, look for the exit every few ms. */
	if (io->pidfd < 0 && (wait_ms < 0 || wait_ms > 20))
		wait_ms = 20;
	if (poll(pfd, (nfds_t)n, (int)wait_ms) == -1) {
		if (errno == EINTR)
			return IDEM_OK;
		log_err("%s: poll: %s", cgi_tag(io->r), strerror(errno));
		return IDEM_ESYS;
	}
	for (i = 0; i < n && !io->complete; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == io->fin)
			cgi_write_in(io);
		else if (pfd[i].fd == io->fout) {
			er = cgi_read_out(io);
			if (er != IDEM_OK && er != IDEM_EAGAIN)
				return er;
		} else if (pfd[i].fd == io->ferr)
			cgi_read_err(io);
		/* a readable pidfd: the next round sees the exit */
	}
	return IDEM_OK;
}

/*
 * A last look without waiting, before a stop: takes what stdout holds;
 * 1 when the answer is complete (the program exited, closed stdout, or
 * reached its Content-Length), so it is kept rather than stopped.
 */
static int
cgi_io_last_look(struct cgi_io *io)
{
	enum idem_err	 er = IDEM_OK;
	int		 i;

	if (!io->exited && cgi_exited(io->pid, &io->ws))
		return cgi_io_exited(io) == IDEM_OK;
	for (i = 0; i < 64 && io->fout >= 0 && !io->complete &&
	    (er = cgi_read_out(io)) == IDEM_OK; i++)
		;
	if (er != IDEM_OK && er != IDEM_EAGAIN)
		return 0;
	if (io->fout < 0 && !io->r->until_exit)
		io->complete = 1;
	return io->complete;
}

/*
 * Runs the spawned child's I/O until its answer is complete (stdout EOF,
 * the program's exit, or the announced Content-Length reached), the
 * deadline, a tick's stop, or an out() failure.
 */
static enum idem_err
cgi_io_run(struct cgi_io *io)
{
	const struct cgi_exchange *ex = &io->r->ex;
	int64_t			 now;
	enum idem_err		 er;

	io->el.tag = ex->tag;
	cgi_clock_start(&io->clk, ex, clock_now_ms());
	io->eof_end = -1;
	if (ex->bodylen == 0 || ex->body == NULL)
		cgi_close(&io->fin);
	while (!io->complete) {
		now = clock_now_ms();
		if ((er = cgi_clock_check(&io->clk, ex, now)) != IDEM_OK) {
			/* Told to stop: the answer may be whole already (the
			 * program finished while the tick waited). */
			if (er == IDEM_ELEASE && cgi_io_last_look(io))
				return IDEM_OK;
			return er;
		}
		if (!io->exited && cgi_exited(io->pid, &io->ws))
			return cgi_io_exited(io);
		if (cgi_io_eof(io, now))
			break;
		if ((er = cgi_io_wait(io, now)) != IDEM_OK)
			return er;
	}
	return IDEM_OK;
}

/*
 * Spawns io->r's program on new pipes; io gets our ends, non-blocking.
 * IDEM_EHANDLER (logged) if it could not be started.
 */
static enum idem_err
cgi_io_start(struct cgi_io *io)
{
	const struct cgi_run	*r = io->r;
	int			 pin[2] = { -1, -1 }, pout[2] = { -1, -1 };
	int			 perr[2] = { -1, -1 };
	enum idem_err		 er = IDEM_EHANDLER;

	if (cgi_pipe(pin) != IDEM_OK || cgi_pipe(pout) != IDEM_OK ||
	    (!r->err_through && cgi_pipe(perr) != IDEM_OK)) {
		io->start_errno = errno;
		log_err("%s: pipe: %s", cgi_tag(r), strerror(errno));
		goto close;
	}
	io->started = clock_now_ms();
	io->pid = cgi_spawn(r, pin[0], pout[1], r->err_through ?
	    STDERR_FILENO : perr[1]);
	if (io->pid == -1) {
		io->start_errno = errno;
		log_err("%s: cannot start %s: %s", cgi_tag(r), r->program,
		    strerror(errno));
		goto close;
	}
	if (r->started != NULL)
		r->started(io->pid, r->started_arg);
	/* The child's ends: keeping them would hide EOF from us. */
	cgi_close(&pin[0]);
	cgi_close(&pout[1]);
	cgi_close(&perr[1]);
	cgi_nonblock(pin[1]);
	cgi_nonblock(pout[0]);
	if (perr[0] >= 0)
		cgi_nonblock(perr[0]);
	io->fin = pin[1];
	io->fout = pout[0];
	io->ferr = perr[0];
	pin[1] = pout[0] = perr[0] = -1;
	io->pidfd = cgi_pidfd(io->pid);
	er = IDEM_OK;
close:
	cgi_close(&pin[0]);
	cgi_close(&pin[1]);
	cgi_close(&pout[0]);
	cgi_close(&pout[1]);
	cgi_close(&perr[0]);
	cgi_close(&perr[1]);
	return er;
}

/* What the program said on stderr before it was done. */
static void
cgi_io_err_tail(struct cgi_io *io)
{
	size_t	 before;
	int	 k;

	for (k = 0; k < 16 && io->ferr >= 0; k++) {
		before = errlog_seen(&io->el);
		cgi_read_err(io);
		if (errlog_seen(&io->el) == before)
			break;
	}
}

/*
 * Complete.  Whatever still runs (the program, or children holding its
 * pipes) may go on until the timeout: the linger ends it then.
 */
static void
cgi_io_complete(struct cgi_io *io, struct cgi_status *st)
{
	const struct cgi_run	*r = io->r;

	if (io->exited && io->fout < 0 && io->ferr < 0) {
		/* A job's group ends with it: what it left running there
		 * (a child that let go of its pipes) would outlive the run.
		 * The leader is not reaped yet, so the group's id is still
		 * its own. */
		if (r->until_exit)
			kill(-io->pid, SIGKILL);
		cgi_status_set(st, cgi_reap(io->pid), 0);
		/* A CGI's: the group lives on while a member does (its id
		 * pinned by them), and so does the run, to its timeout. */
		if (r->until_exit || !linger_group_lives(io->pid))
			return;
		st->lingering = 1;
		if (r->linger != NULL && r->ex.timeout_ms > 0)
			linger_add_group(r->linger, io->pid,
			    io->started + r->ex.timeout_ms, r->run);
		else
			kill(-io->pid, SIGKILL);
		return;
	}
	if (io->exited)
		cgi_status_set(st, io->ws, 0);
	else
		memset(st, 0, sizeof(*st));
	st->lingering = 1;
	if (r->linger != NULL && r->ex.timeout_ms > 0) {
		linger_add(r->linger, io->pid, io->fout, io->ferr,
		    io->started + r->ex.timeout_ms, r->run);
		io->fout = io->ferr = -1;
	} else {
		/* Nobody to end it later: end it now (its answer is whole:
		 * the kill is not a crash). */
		kill(-io->pid, SIGKILL);
		(void)cgi_reap(io->pid);
	}
}

/*
 * Not complete (er): a tick's stop or a job's timeout stops the group
 * (SIGTERM, then SIGKILL); a timeout or an out() error kills it at once.
 */
static void
cgi_io_abort(struct cgi_io *io, enum idem_err er, struct cgi_status *st)
{
	const struct cgi_run	*r = io->r;
	int			 graceful = r->stop_grace_ms > 0;

	/* What left the group (setsid) while its parent lives goes with
	 * the group: a kill of the group misses it, and once its parent
	 * is gone it is out of sight. */
	(void)proc_kill_escaped(io->pid);
	/* Lease lost, or nobody reads the answer any more: SIGTERM first. */
	if (er == IDEM_ELEASE || er == IDEM_EIO)
		cgi_status_set(st, cgi_stop(io->pid, CGI_STOP_GRACE_MS), 0);
	else if (er == IDEM_ETIMEOUT && graceful)
		cgi_status_set(st, cgi_stop(io->pid, r->stop_grace_ms), 1);
	else {
		kill(-io->pid, SIGKILL);
		cgi_status_set(st, cgi_reap(io->pid), er == IDEM_ETIMEOUT);
	}
	/* A timeout's one log line; a job's, stopped gently, is a warning. */
	if (er == IDEM_ETIMEOUT)
		log_msg(graceful ? LOG_LVL_WARN : LOG_LVL_ERR,
		    "%s: %s timed out after %lld ms; %s", cgi_tag(r),
		    r->program, (long long)r->ex.timeout_ms,
		    graceful ? "stopped" : "killed");
}

enum idem_err
cgi_exec(const struct cgi_run *r, struct cgi_status *st)
{
	struct cgi_io	 io;
	enum idem_err	 er;

	memset(&io, 0, sizeof(io));
	io.r = r;
	io.fin = io.fout = io.ferr = io.pidfd = -1;
	if ((er = cgi_io_start(&io)) != IDEM_OK) {
		memset(st, 0, sizeof(*st));
		st->start_errno = io.start_errno;
		return er;
	}
	er = cgi_io_run(&io);
	if (er == IDEM_OK)
		cgi_io_err_tail(&io);
	errlog_end(&io.el);
	cgi_close(&io.pidfd);
	cgi_close(&io.fin);
	if (er == IDEM_OK)
		cgi_io_complete(&io, st);
	else
		cgi_io_abort(&io, er, st);
	cgi_close(&io.fout);
	cgi_close(&io.ferr);
	return er;
}
