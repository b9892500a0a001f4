/* Running legacy CGI programs: script lookup, spawn and I/O. */
#ifndef IDEM_CGI_H
#define IDEM_CGI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * fcgiwrap-style lookup: script (SCRIPT_FILENAME) must resolve, with
 * symlinks followed, to a regular executable file inside root (realpath'd)
 * and contain no ".." component.  IDEM_ENOTFOUND if it does not exist
 * (404), IDEM_EFORBIDDEN if outside root, not regular or not executable
 * (403).  On success copies the resolved path to out (outlen bytes).
 */
enum idem_err cgi_script_resolve(const char *root, const char *script,
    char *out, size_t outlen);

/* The same, and on failure the reason in why (whylen bytes): the rule
 * that refused it and, when it resolved, the resolved path. */
enum idem_err cgi_script_resolve_why(const char *root, const char *script,
    char *out, size_t outlen, char *why, size_t whylen);

/* What a handler run exchanges with its caller, CGI program or upstream
 * FastCGI app alike (struct upstream_req has one too). */
struct cgi_exchange {
	const void	 *body;		/* request body, written to the
					 * handler */
	size_t		  bodylen;
	int64_t		  timeout_ms;	/* whole run; 0 = none */
	const char	 *tag;		/* prefix for stderr lines in the log */

	/*
	 * Receives the handler's output (a CGI response) as it arrives.  A
	 * non-OK return aborts the run (a program's process group is killed
	 * and reaped) and the run returns that error.
	 */
	enum idem_err	(*out)(void *arg, const void *p, size_t n);

	/* If set, called after out(): 1 when the answer is whole (its body
	 * reached the Content-Length it announced), so the run ends there. */
	int		(*complete)(void *arg);

	/*
	 * If set, called tick_ms after the start and then when the previous
	 * call asked: it returns the ms until the next call (the guard renews
	 * its lease here), or a negative value to stop the handler at once
	 * (a program's group gets SIGTERM, then SIGKILL CGI_STOP_GRACE_MS
	 * later); the run then returns IDEM_ELEASE.
	 */
	int64_t		(*tick)(void *arg);
	int64_t		  tick_ms;
	void		 *arg;

	/*
	 * If set (a run idemgate cannot stop: an upstream), reaching
	 * timeout_ms is not the run's end: overdue(arg) is called once (the
	 * client gets its answer) and the run goes on until it ends by
	 * itself or run_limit_ms from the start passes (0: no limit), which
	 * returns IDEM_EBROKEN; a run_limit_ms that comes first ends the run
	 * there, overdue() never called.
	 */
	void		(*overdue)(void *arg);
	int64_t		  run_limit_ms;

	/*
	 * If set (an upstream's run), called once END_REQUEST came: 1 when
	 * the caller must know the run is over before it goes on (its key
	 * is to be released).  END_REQUEST is not the end of every run:
	 * PHP-FPM says it at fastcgi_finish_request() and the script runs
	 * on.  So the request asks the app to keep the connection
	 * (FCGI_KEEP_CONN), and the connection is then read to its close,
	 * which PHP-FPM makes only once the script ended; the clock (tick,
	 * overdue, run_limit_ms) goes on meanwhile.
	 */
	int		(*settle)(void *arg);

	/*
	 * If set, called once output given to out() has waited
	 * CGI_FLUSH_MS for more: the caller sends on what it gathered (a
	 * pass-through answer streams as the handler writes it, as under
	 * fcgiwrap, rather than in 32 KiB records or at the end).  A
	 * non-OK return aborts the run as out()'s does.
	 */
	enum idem_err	(*flush)(void *arg);
};

/* How long output given to out() may wait for more before ex->flush. */
#define CGI_FLUSH_MS	10

/*
 * A run's deadline and tick schedule, from its exchange: both handler
 * kinds keep time the same way.
 */
struct cgi_clock {
	int64_t	 start;
	int64_t	 deadline;	/* -1: none */
	int64_t	 next_tick;	/* -1: none */
	int	 overdue;	/* past timeout_ms, ex->overdue called */
	int64_t	 flush_at;	/* -1: nothing given to out() waits */
};

/* Starts c at now (ms, clock_now_ms()) for ex's timeout and tick. */
void cgi_clock_start(struct cgi_clock *c, const struct cgi_exchange *ex,
    int64_t now);

/* IDEM_ETIMEOUT past the deadline (with ex->overdue: calls it at
 * timeout_ms, then IDEM_EBROKEN past run_limit_ms, whichever order they
 * come in); calls ex->tick when
 * it is due and IDEM_ELEASE if it says stop; else IDEM_OK. */
enum idem_err cgi_clock_check(struct cgi_clock *c,
    const struct cgi_exchange *ex, int64_t now);

/* Output went to ex->out just now: ex->flush, if set, is due CGI_FLUSH_MS
 * later (cgi_clock_check calls it, and returns its error; cgi_clock_wait
 * wakes for it). */
void cgi_clock_fed(struct cgi_clock *c, const struct cgi_exchange *ex);

/* ms until the deadline or the next tick, whichever comes first, at most
 * INT_MAX; -1 when there is neither (a poll timeout). */
int64_t cgi_clock_wait(const struct cgi_clock *c, int64_t now);

/* How long a handler stopped by tick() has between SIGTERM and SIGKILL. */
#define CGI_STOP_GRACE_MS	200

struct linger;

struct cgi_run {
	const char	 *program;	/* absolute path, run as argv[0];
					 * without a '/', looked up in PATH */
	char *const	 *argv;		/* NULL: { program } */
	char *const	 *env;		/* from cgi_env_build() */
	struct linger	 *linger;	/* ends lingering groups; NULL: now */
	uint64_t	  run;		/* the run's IDEMGATE_RUN mark in env
					 * (lib/run/cgi_env.h), 0: none: what
					 * left its group with it is killed
					 * with a lingering group */
	struct cgi_exchange ex;

	/* A job (idemctl run) rather than a CGI program: */
	int		  keep_cwd;	/* 1: start in our working directory,
					 * not the program's */
	int		  err_through;	/* 1: the program's stderr is ours
					 * (live), not the log */
	int		  until_exit;	/* 1: complete only when it exits
					 * (its status is the answer);
					 * what it left running in its
					 * group is killed then */
	int64_t		  stop_grace_ms;	/* at timeout: 0 SIGKILL, else
						 * SIGTERM first, SIGKILL
						 * after */
	/* If set, called once the program runs, with its pid (which is
	 * also its process group). */
	void		(*started)(pid_t pid, void *arg);
	void		 *started_arg;
};

struct cgi_status {
	int		 exited;	/* 1: exit_code valid */
	int		 exit_code;
	int		 signo;		/* killed by this signal, else 0 */
	int		 timed_out;	/* 1: we killed it at timeout_ms */
	int		 lingering;	/* 1: complete while still running */
	int		 start_errno;	/* not started (IDEM_EHANDLER from
					 * cgi_exec before it ran): why */
};

/*
 * Runs r->program (vfork, exec) in its own process group, with a clean
 * environment, working directory = the program's directory, stdin/stdout/
 * stderr on pipes; it inherits fds 0, 1 and 2 and no other.  The body is
 * written to stdin while stdout and stderr are read (poll), so a program
 * that ignores stdin or writes a lot cannot deadlock; EPIPE on stdin is
 * not an error.  stderr reaches the log line by line under r->ex.tag, 20
 * lines or 4 KiB per run at most, then a count of what was dropped.
 *
 * The answer is complete, and IDEM_OK returned, when the program exits,
 * or closes stdout (it then has 100 ms to exit, so a crash is told from
 * an exit: see st), or when ex.complete() says so.  Whatever is still
 * running then (the program, or a child holding its stdout) is handed to
 * r->linger, which kills the group at ex.timeout_ms from the start
 * (st->lingering; without a linger it is killed now).  Otherwise the
 * child is reaped before return.  At ex.timeout_ms before completion the
 * group gets SIGKILL and IDEM_ETIMEOUT is returned (logged here, the one
 * line a timeout gets); a tick's stop gives IDEM_ELEASE (see tick);
 * IDEM_EHANDLER if it could not be started; an out() error kills the
 * group and is returned.  OUT: st (on every return
 * but IDEM_EHANDLER).  Needs SIGCHLD not ignored in the calling process
 * (waitpid); the caller ignores SIGPIPE.
 */
enum idem_err cgi_exec(const struct cgi_run *r, struct cgi_status *st);

#endif
