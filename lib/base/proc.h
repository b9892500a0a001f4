/* This process: its standard fds, its children as the kernel lists them. */
#ifndef IDEM_PROC_H
#define IDEM_PROC_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Up to max pids of the calling thread's children (its own and, in a
 * child subreaper, the orphans it was given), from /proc's children list;
 * their number, or -1 when /proc cannot say (no CONFIG_PROC_CHILDREN).
 * A list longer than 8 KiB is cut at a whole pid.
 */
ssize_t proc_children(pid_t *pids, size_t max);

/*
 * What each program does first in main, NULL when done, else why not
 * (the caller says it in one line and exits):
 * - opens /dev/null on each of fds 0, 1 and 2 that is closed, so that no
 *   later socket, pipe or file takes its number: a program started with
 *   "2>&-" would otherwise give its children the database connection as
 *   their stderr, or write its output into it;
 * - makes its memory its own: no core dump, and no other process of the
 *   same user (a handler it started, a job's COMMAND) may read it
 *   through ptrace(2), /proc/PID/mem, environ or maps; only root
 *   (CAP_SYS_PTRACE) still may.  It holds the database password, the
 *   sealing keys and other clients' answers.  A program it executes is
 *   dumpable again (execve resets it).
 */
const char *proc_start(void);

/*
 * At exit (atexit(3)), flushes stdout and, if anything written to it was
 * lost (a full disk, a closed pipe), says so in one line on stderr
 * ("prog: writing output failed") and exits with code instead: a listing
 * or snapshot a cron job sent to a full disk must not look like success.
 * Code that reports a failed write itself clears the error (clearerr) so
 * the line is not said twice.  prog must live until exit.
 */
void proc_stdout_checked(const char *prog, int code);

/*
 * Every connection, parked retry and upstream is a descriptor: raises the
 * soft open-files limit to the hard one (1024 and 524288 under systemd),
 * as systemd advises a service that needs many to do, logging a refusal.
 * proc_nofile_child puts the limit this process started with back, in a
 * child before exec (system calls only: safe after vfork): a program
 * that loops over every possible descriptor, or uses select(2), gets the
 * limit it would have had.
 */
void proc_nofile_raise(void);
void proc_nofile_child(void);

/*
 * Closes every fd from lowfd up: close_range(2), or where that is refused
 * (a kernel before 5.9, a seccomp profile that predates it) one close(2)
 * after another up to RLIMIT_NOFILE, 65536 at most.  System calls only:
 * safe in a vfork child, which shares its parent's memory until exec.
 */
void proc_closefrom(unsigned lowfd);

/*
 * SIGKILLs every process but this one whose environment holds entry (a
 * whole "NAME=value"), as /proc shows the environments this user may
 * read: what a run left behind that escaped its process group (setsid, a
 * daemon's double fork) keeps the environment it was started with.  The
 * number killed.  A scan of /proc: for a run's rare ends, not per request.
 */
int proc_kill_env(const char *entry);

/* The same for any of n entries (none empty), in one look at /proc. */
int proc_kill_env_any(const char *const *entries, size_t n);

/*
 * SIGKILLs every descendant of leader (a process group's leader, alive)
 * that left its group (setsid, setpgid), as /proc lists them now, up to
 * PROC_TREE_MAX: what a kill of the group would miss, found while their
 * parents still live (an orphan goes to a subreaper, out of the tree),
 * whatever became of their environment or user (those of other users
 * only as root can), each only while its parent is still the one it was
 * listed under (a pid freed and taken since is another process's).  The
 * number killed.  For a run's end, not per request.
 */
#define PROC_TREE_MAX	256
int proc_kill_escaped(pid_t leader);

#endif
