/* This process and what it starts: std fds, children, leftovers (proc.h). */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"

/*
 * Up to size - 1 bytes of the /proc file path into buf, NUL-terminated
 * (the kernel gives such files a page or so per read); their number, or
 * -1 when it cannot be opened or read.
 */
static ssize_t
proc_read(const char *path, char *buf, size_t size)
{
	ssize_t	 n, got;
	int	 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	for (n = 0; n < (ssize_t)size - 1; n += got) {
		got = read(fd, buf + n, size - 1 - (size_t)n);
		if (got < 0 && errno == EINTR) {
			got = 0;
			continue;
		}
		if (got < 0) {
			close(fd);
			return -1;
		}
		if (got == 0)
			break;
	}
	close(fd);
	buf[n] = '\0';
	return n;
}

/* Appends to pids (from *k, up to max) the pids of a /proc "children"
 * file at path; -1 when it cannot be read.  A list longer than 8 KiB is
 * cut at a whole pid. */
static int
proc_read_pids(const char *path, pid_t *pids, size_t max, size_t *k)
{
	char	 buf[8192], *p, *end;
	ssize_t	 n;
	long	 v;

	if ((n = proc_read(path, buf, sizeof(buf))) < 0)
		return -1;
	/* A full buffer may end inside a pid: that one is left out. */
	if (n == (ssize_t)sizeof(buf) - 1)
		while (n > 0 && buf[n - 1] != ' ')
			n--;
	buf[n] = '\0';
	for (p = buf; *p != '\0' && *k < max; p = end) {
		v = strtol(p, &end, 10);
		if (end == p)
			break;
		if (v > 0)
			pids[(*k)++] = (pid_t)v;
	}
	return 0;
}

ssize_t
proc_children(pid_t *pids, size_t max)
{
	char	 path[64];
	size_t	 k = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/children",
	    (long)syscall(SYS_gettid));
	if (proc_read_pids(path, pids, max, &k) < 0)
		return -1;
	return (ssize_t)k;
}

/* Environment entries to look for (proc_kill_env_any), each whole. */
struct proc_entry {
	const char *const	*entries;
	size_t			 n;
};

/* 1 if pid's environment holds one of *arg's entries (a struct
 * proc_entry), whole. */
static int
proc_env_holds(long pid, const void *arg)
{
	const struct proc_entry	*e = arg;
	char			 path[64], buf[65536];
	ssize_t			 n;
	size_t			 i, k;

	snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	if ((n = proc_read(path, buf, sizeof(buf))) <= 0)
		return 0;
	/* Entries are NUL-separated: match one whole. */
	for (i = 0; i < (size_t)n; i += strlen(buf + i) + 1)
		for (k = 0; k < e->n; k++)
			if (strcmp(buf + i, e->entries[k]) == 0)
				return 1;
	return 0;
}

/* pid's parent as /proc/PID/stat says, or -1. */
static long
proc_ppid(long pid)
{
	char	 path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	/* "PID (COMM) STATE PPID ...": COMM may hold anything, ')' too. */
	if (proc_read(path, buf, sizeof(buf)) <= 0 ||
	    (p = strrchr(buf, ')')) == NULL)
		return -1;
	return strlen(p) > 4 ? strtol(p + 4, NULL, 10) : -1;
}

/* A process found in a leader's tree: its pid and the parent it was
 * listed under (proc_kill_escaped). */
struct proc_kin {
	pid_t	 leader, parent;
};

/* 1 if pid is still the one listed under kin's parent (not a process
 * that took a freed pid since) and has left kin's leader's group. */
static int
proc_escaped(long pid, const void *arg)
{
	const struct proc_kin	*k = arg;

	return proc_ppid(pid) == (long)k->parent &&
	    getpgid((pid_t)pid) != k->leader;
}

#define PROC_BARE	(-2)	/* proc_take: no pidfds here, the bare pid */

/*
 * Takes pid to be killed if still(pid, arg) says so: its pidfd, opened
 * before the look, so a pid freed and reused in between is never the one
 * killed; PROC_BARE on a kernel without pidfds; -1 when it is not to be
 * killed (or a pidfd was refused otherwise, no fds left: left to the
 * sweep).
 */
static int
proc_take(long pid, int (*still)(long, const void *), const void *arg)
{
	int	 fd;

#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
	if ((fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0)) >= 0) {
		if (still(pid, arg))
			return fd;
		close(fd);
		return -1;
	}
	if (errno != ENOSYS)
		return -1;
#endif
	(void)fd;
	return still(pid, arg) ? PROC_BARE : -1;
}

/* SIGKILLs what proc_take took (and closes its pidfd): 1 if it did. */
static int
proc_kill_taken(long pid, int h)
{
	int	 n = 0;

	if (h == PROC_BARE)
		return kill((pid_t)pid, SIGKILL) == 0;
	if (h < 0)
		return 0;
#if defined(SYS_pidfd_send_signal)
	n = syscall(SYS_pidfd_send_signal, h, SIGKILL, NULL, 0) == 0;
#endif
	close(h);
	return n;
}

/* SIGKILLs pid if still(pid, arg) says so: 1 if it did (proc_take). */
static int
proc_kill_if(long pid, int (*still)(long, const void *), const void *arg)
{
	return proc_kill_taken(pid, proc_take(pid, still, arg));
}

/* proc_start's first part: 0, or -1 when /dev/null cannot be opened. */
static int
proc_std_fds(void)
{
	int	 fd, n;

	for (fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		/* The lowest free number: fd itself, those below are open. */
		if ((n = open("/dev/null", O_RDWR)) < 0)
			return -1;
		if (n != fd) {
			close(n);
			return -1;
		}
	}
	return 0;
}

const char *
proc_start(void)
{
	if (proc_std_fds() != 0)
		return "cannot open /dev/null";
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return "cannot make its memory private (PR_SET_DUMPABLE)";
	return NULL;
}

static const char	*out_prog;
static int		 out_code;

static void
proc_stdout_at_exit(void)
{
	int	 err = 0;

	if (fflush(stdout) != 0)
		err = errno;
	if (!ferror(stdout))
		return;
	if (err != 0)
		fprintf(stderr, "%s: writing output failed: %s\n", out_prog,
		    strerror(err));
	else
		fprintf(stderr, "%s: writing output failed\n", out_prog);
	_exit(out_code);
}

void
proc_stdout_checked(const char *prog, int code)
{
	out_prog = prog;
	out_code = code;
	(void)atexit(proc_stdout_at_exit);
}

/* Appends to pids (up to max, from *n) the children of pid, every
 * thread's, as /proc lists them. */
static void
proc_kids_of(pid_t pid, pid_t *pids, size_t max, size_t *n)
{
	char		 path[96];
	struct dirent	*de;
	DIR		*d;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	if ((d = opendir(path)) == NULL)
		return;
	while (*n < max && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%.16s/children",
		    (long)pid, de->d_name);
		(void)proc_read_pids(path, pids, max, n);
	}
	closedir(d);
}

int
proc_kill_escaped(pid_t leader)
{
	pid_t		 pids[PROC_TREE_MAX], parent[PROC_TREE_MAX];
	int		 taken[PROC_TREE_MAX];
	struct proc_kin	 kin = { leader, 0 };
	size_t		 n = 0, i, j, before;
	int		 killed = 0;

	if (leader <= 1)
		return 0;
	/* The whole tree first: a parent killed first would hand its
	 * children to a subreaper, out of our sight.  Each with the parent
	 * it was listed under. */
	proc_kids_of(leader, pids, PROC_TREE_MAX, &n);
	for (j = 0; j < n; j++)
		parent[j] = leader;
	for (i = 0; i < n; i++) {
		before = n;
		proc_kids_of(pids[i], pids, PROC_TREE_MAX, &n);
		for (j = before; j < n; j++)
			parent[j] = pids[i];
	}
	/* A pid freed since the listing may be another process by then:
	 * taken only while its parent is still the one it was listed under
	 * (the look is through its pidfd: proc_take).  Every look first,
	 * while the tree holds together, then every kill, parents first: a
	 * child killed first would let its parent run on a moment (the
	 * rest of a script), and a parent killed before its child's look
	 * would hand the child to a subreaper; a child taken is killed
	 * through its pidfd wherever it went. */
	for (i = 0; i < n; i++) {
		kin.parent = parent[i];
		taken[i] = proc_take(pids[i], proc_escaped, &kin);
	}
	for (i = 0; i < n; i++)
		killed += proc_kill_taken(pids[i], taken[i]);
	return killed;
}

int
proc_kill_env(const char *entry)
{
	return *entry != '\0' ? proc_kill_env_any(&entry, 1) : 0;
}

int
proc_kill_env_any(const char *const *entries, size_t nentries)
{
	struct dirent	*de;
	DIR		*d;
	struct proc_entry e = { entries, nentries };
	long		 pid, self = (long)getpid();
	uid_t		 uid = geteuid();
	struct stat	 st;
	char		*end;
	int		 n = 0;

	if (nentries == 0 || (d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		pid = strtol(de->d_name, &end, 10);
		if (end == de->d_name || *end != '\0' || pid <= 1 ||
		    pid == self)
			continue;
		/* Only this user's: what a run starts is (a stat, where a
		 * look at the environment costs more). */
		if (fstatat(dirfd(d), de->d_name, &st, 0) != 0 ||
		    st.st_uid != uid)
			continue;
		n += proc_kill_if(pid, proc_env_holds, &e);
	}
	closedir(d);
	return n;
}

static struct rlimit	nofile_start;	/* before proc_nofile_raise */
static int		nofile_raised;

void
proc_nofile_raise(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	nofile_start = rl;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		log_warn("cannot raise the open files limit from %llu: %s",
		    (unsigned long long)nofile_start.rlim_cur,
		    strerror(errno));
		return;
	}
	nofile_raised = 1;
}

void
proc_nofile_child(void)
{
	if (nofile_raised)
		(void)setrlimit(RLIMIT_NOFILE, &nofile_start);
}

void
proc_closefrom(unsigned lowfd)
{
	struct rlimit	 rl;
	rlim_t		 fd, max = 65536;

	if (syscall(SYS_close_range, lowfd, ~0U, 0U) == 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < max)
		max = rl.rlim_cur;
	for (fd = lowfd; fd < max; fd++)
		(void)syscall(SYS_close, (long)fd);
}
