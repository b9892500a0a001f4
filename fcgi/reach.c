/* idemgate -t as the gateway's user: its files, upstreams, socket owner. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reach.h"
#include "listen.h"
#include "upstream.h"

/* ---- who ---- */

/* The user pw as it will be after initgroups(3). */
static enum idem_err
user_of(const struct passwd *pw, struct reach_user *u, char *err,
    size_t errlen)
{
	int	 n = REACH_MAX_GROUPS;

	snprintf(u->name, sizeof(u->name), "%s", pw->pw_name);
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	if (getgrouplist(pw->pw_name, pw->pw_gid, u->groups, &n) < 0) {
		snprintf(err, errlen, "user %s is in more than %d groups",
		    pw->pw_name, REACH_MAX_GROUPS);
		return IDEM_EINVAL;
	}
	u->ngroups = n;
	return IDEM_OK;
}

/* The caller as it is: its own groups, which systemd may have given it
 * beyond /etc/group (SupplementaryGroups=). */
static enum idem_err
user_self(struct reach_user *u, char *err, size_t errlen)
{
	struct passwd	*pw = getpwuid(geteuid());
	int		 n;

	if (pw != NULL)
		snprintf(u->name, sizeof(u->name), "%s", pw->pw_name);
	else
		snprintf(u->name, sizeof(u->name), "%lu",
		    (unsigned long)geteuid());
	u->uid = geteuid();
	u->gid = getegid();
	u->groups[0] = u->gid;
	if ((n = getgroups(REACH_MAX_GROUPS - 1, u->groups + 1)) < 0) {
		snprintf(err, errlen, "getgroups: %s", strerror(errno));
		return IDEM_ESYS;
	}
	u->ngroups = n + 1;
	return IDEM_OK;
}

enum idem_err
reach_user_pick(const char *name, int service, struct reach_user *u,
    char *err, size_t errlen)
{
	struct passwd	*pw;

	memset(u, 0, sizeof(*u));
	if (name != NULL) {
		if ((pw = getpwnam(name)) == NULL) {
			snprintf(err, errlen, "-u %s: no such user", name);
			return IDEM_EINVAL;
		}
		if (pw->pw_uid == geteuid())
			return user_self(u, err, errlen);
		if (geteuid() != 0) {
			snprintf(err, errlen, "-u %s: only root can check "
			    "as another user", name);
			return IDEM_EINVAL;
		}
		u->change = 1;
		return user_of(pw, u, err, errlen);
	}
	if (service && geteuid() == 0 &&
	    (pw = getpwnam(REACH_DEFAULT_USER)) != NULL && pw->pw_uid != 0) {
		u->change = u->implied = 1;
		return user_of(pw, u, err, errlen);
	}
	return user_self(u, err, errlen);
}

static int
user_in_group(const struct reach_user *u, gid_t gid)
{
	int	 i;

	for (i = 0; i < u->ngroups; i++)
		if (u->groups[i] == gid)
			return 1;
	return 0;
}

int
reach_mode_allows(const struct stat *st, const struct reach_user *u,
    mode_t want)
{
	/* Root passes every directory and socket permission check. */
	if (u->uid == 0)
		return 1;
	if (st->st_uid == u->uid)
		return (st->st_mode & (want << 6)) != 0;
	if (user_in_group(u, st->st_gid))
		return (st->st_mode & (want << 3)) != 0;
	return (st->st_mode & want) != 0;
}

/* ---- why a connect was refused ---- */

/* "owner:group" of st, by name where there is one. */
static void
owner_names(const struct stat *st, char *out, size_t outlen)
{
	struct passwd	*pw = getpwuid(st->st_uid);
	char		 user[64];
	struct group	*gr;

	if (pw != NULL)
		snprintf(user, sizeof(user), "%s", pw->pw_name);
	else
		snprintf(user, sizeof(user), "%lu", (unsigned long)st->st_uid);
	if ((gr = getgrgid(st->st_gid)) != NULL)
		snprintf(out, outlen, "%s:%s", user, gr->gr_name);
	else
		snprintf(out, outlen, "%s:%lu", user,
		    (unsigned long)st->st_gid);
}

/*
 * "no PERM permission on WHAT PATH (owner:group mode)" and the fix:
 * joining the group that has the permission, or giving it to one.
 */
static void
deny_text(const char *what, const char *path, const struct stat *st,
    const struct reach_user *u, mode_t want, char *why, size_t whylen)
{
	char		 own[160], *grp;
	const char	*perm = want == S_IXOTH ? "search" : "write";
	int		 n;

	owner_names(st, own, sizeof(own));
	grp = strchr(own, ':') + 1;
	n = snprintf(why, whylen, "no %s permission on %s %s (%s %04o)",
	    perm, what, path, own, (unsigned)(st->st_mode & 07777));
	if (n < 0 || (size_t)n >= whylen)
		return;
	why += n;
	whylen -= (size_t)n;
	if (st->st_uid == u->uid)
		snprintf(why, whylen, ": its owner %s lacks it: chmod u+%c %s",
		    u->name, want == S_IXOTH ? 'x' : 'w', path);
	else if ((st->st_mode & (want << 3)) && !user_in_group(u, st->st_gid))
		snprintf(why, whylen, ", and %s is not in group %s: "
		    "adduser %s %s, then restart idemgate", u->name, grp,
		    u->name, grp);
	else if (want == S_IXOTH)
		snprintf(why, whylen, ": give it to a group %s is in "
		    "(chgrp, chmod g+x) or to everyone (chmod o+x)", u->name);
	else
		snprintf(why, whylen, ": give it to a group %s is in "
		    "(PHP-FPM: listen.group, listen.mode = 0660)", u->name);
}

void
reach_unix_denied(const char *path, const struct reach_user *u, char *why,
    size_t whylen)
{
	char		 dir[PATH_MAX];
	struct stat	 st;
	size_t		 i, n = strlen(path);

	if (n >= sizeof(dir))
		n = sizeof(dir) - 1;
	/* Every directory on the way, from the root: connect needs search
	 * permission on each. */
	for (i = 0; i < n; i++) {
		if (path[i] != '/')
			continue;
		memcpy(dir, path, i == 0 ? 1 : i);
		dir[i == 0 ? 1 : i] = '\0';
		if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
		    !reach_mode_allows(&st, u, S_IXOTH)) {
			deny_text("directory", dir, &st, u, S_IXOTH, why,
			    whylen);
			return;
		}
	}
	if (stat(path, &st) == 0 && !reach_mode_allows(&st, u, S_IWOTH)) {
		deny_text("socket", path, &st, u, S_IWOTH, why, whylen);
		return;
	}
	snprintf(why, whylen, "permission denied, though the modes allow it "
	    "(a security module such as AppArmor or SELinux?)");
}

/* ---- the checks ---- */

enum idem_err
reach_socket_owner(const struct cfg *c, const struct reach_user *u,
    char *err, size_t errlen)
{
	char		 why[300], fix[300];
	uid_t		 uid;
	gid_t		 gid;

	if (c->socket_owner == NULL || c->listen == NULL ||
	    strncmp(c->listen, "unix:", 5) != 0)
		return IDEM_OK;
	if (listen_owner_ids(c->socket_owner, &uid, &gid, why,
	    sizeof(why)) != 0)
		goto refuse;
	if (u->uid == 0)
		return IDEM_OK;
	fix[0] = '\0';
	if (uid != (uid_t)-1 && uid != u->uid)
		snprintf(why, sizeof(why), "user %s may not give its socket "
		    "to another user", u->name);
	else if (gid != (gid_t)-1 && !user_in_group(u, gid)) {
		snprintf(why, sizeof(why), "user %s may not give its socket "
		    "to a group it is not in", u->name);
		snprintf(fix, sizeof(fix), "add %s to the group (adduser "
		    "%s %s), ", u->name, u->name, strchr(c->socket_owner,
		    ':') + 1);
	} else
		return IDEM_OK;
	snprintf(err, errlen, "%s:%d:%d: socket_owner %s: %s (chown: "
	    "Operation not permitted): run idemgate as root, take the socket "
	    "from systemd (idemgate.socket's SocketUser= and SocketGroup=, "
	    "listen = fd:0), %sor drop socket_owner (the socket gets the "
	    "directory's group when the directory is setgid)", c->path,
	    c->socket_owner_line, c->socket_owner_col, c->socket_owner, why,
	    fix);
	return IDEM_ECONFIG;
refuse:
	snprintf(err, errlen, "%s:%d:%d: socket_owner %s: %s", c->path,
	    c->socket_owner_line, c->socket_owner_col, c->socket_owner, why);
	return IDEM_ECONFIG;
}

/* 1 if a route before r forwards to the same upstream (checked once). */
static int
upstream_seen(const struct cfg *c, size_t r)
{
	size_t	 i;

	for (i = 0; i < r; i++)
		if (c->routes[i].handler == HANDLER_FASTCGI &&
		    strcmp(c->routes[i].upstream, c->routes[r].upstream) == 0)
			return 1;
	return 0;
}

/* Connects to r's upstream once.  A refused permission is the error; an
 * upstream that is not there now is a warning. */
static enum idem_err
reach_upstream(const struct cfg *c, const struct route *r,
    const struct reach_user *u, FILE *warn, int *warned, char *err,
    size_t errlen)
{
	char	 why[PATH_MAX + 400];
	int	 fd, e;

	if ((fd = upstream_connect(r->upstream, REACH_CONNECT_MS)) >= 0) {
		close(fd);
		return IDEM_OK;
	}
	e = errno;
	if (e == EACCES || e == EPERM) {
		if (strncmp(r->upstream, "unix:", 5) == 0)
			reach_unix_denied(r->upstream + 5, u, why,
			    sizeof(why));
		else
			snprintf(why, sizeof(why), "%s", strerror(e));
		snprintf(err, errlen, "%s:%d:%d: route %s: fastcgi: %s: user "
		    "%s may not connect: %s", c->path, r->handler_line,
		    r->handler_col, r->prefix, r->upstream, u->name, why);
		return IDEM_ECONFIG;
	}
	fprintf(warn, "%s:%d:%d: warning: route %s: fastcgi: %s: cannot "
	    "connect now: %s (requests get 502 until it answers)\n", c->path,
	    r->handler_line, r->handler_col, r->prefix, r->upstream,
	    strerror(e));
	(*warned)++;
	return IDEM_OK;
}

enum idem_err
reach_check(const struct cfg *c, const struct reach_user *u, FILE *warn,
    int *warned, char *err, size_t errlen)
{
	enum idem_err	 er;
	size_t		 i;

	if ((er = cfg_check_secrets(c, err, errlen)) != IDEM_OK ||
	    (er = cfg_check_files(c, err, errlen)) != IDEM_OK ||
	    (er = reach_socket_owner(c, u, err, errlen)) != IDEM_OK)
		return er;
	for (i = 0; i < c->nroutes; i++) {
		if (c->routes[i].handler != HANDLER_FASTCGI ||
		    upstream_seen(c, i))
			continue;
		er = reach_upstream(c, &c->routes[i], u, warn, warned, err,
		    errlen);
		if (er != IDEM_OK)
			return er;
	}
	return IDEM_OK;
}

/* ---- as another user ---- */

/* Becomes u for good, as the service manager would start it. */
static int
become(const struct reach_user *u, char *err, size_t errlen)
{
	if (initgroups(u->name, u->gid) != 0 || setgid(u->gid) != 0 ||
	    setuid(u->uid) != 0) {
		snprintf(err, errlen, "cannot check as user %s: %s", u->name,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* The child: becomes u, checks, sends its error (if any) on fd.  Exit
 * 0 clean, 2 warned, 1 refused. */
static void
child_reach(const struct cfg *c, const struct reach_user *u, int fd)
{
	char	 err[2048];
	int	 warned = 0;
	size_t	 n;

	err[0] = '\0';
	if (become(u, err, sizeof(err)) == 0 &&
	    reach_check(c, u, stderr, &warned, err, sizeof(err)) == IDEM_OK)
		_exit(warned > 0 ? 2 : 0);
	n = strlen(err);
	if (write(fd, err, n) != (ssize_t)n)
		_exit(3);
	_exit(1);
}

/* Reads the child's message from fd into err, up to errlen - 1 bytes. */
static void
read_msg(int fd, char *err, size_t errlen)
{
	size_t	 got = 0;
	ssize_t	 n;

	while (got + 1 < errlen) {
		n = read(fd, err + got, errlen - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	err[got] = '\0';
}

enum idem_err
reach_check_as(const struct cfg *c, const struct reach_user *u, int *warned,
    char *err, size_t errlen)
{
	pid_t	 pid;
	int	 p[2], st;

	if (!u->change)
		return reach_check(c, u, stderr, warned, err, errlen);
	if (pipe2(p, O_CLOEXEC) != 0)
		goto fail;
	/* Nothing buffered may be written twice. */
	fflush(NULL);
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		goto fail;
	}
	if (pid == 0) {
		close(p[0]);
		child_reach(c, u, p[1]);
	}
	close(p[1]);
	read_msg(p[0], err, errlen);
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		(*warned)++;
	if (WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 2))
		return IDEM_OK;
	if (err[0] == '\0')
		snprintf(err, errlen, "checking as user %s failed (wait "
		    "status %d)", u->name, st);
	return IDEM_ECONFIG;
fail:
	snprintf(err, errlen, "cannot check as user %s: %s", u->name,
	    strerror(errno));
	return IDEM_ESYS;
}
