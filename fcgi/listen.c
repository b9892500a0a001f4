/* The FastCGI listen socket: unix, tcp or inherited, and who may connect. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "listen.h"
#include "log.h"

#define LISTEN_BACKLOG	1024

int
listen_owner_ids(const char *spec, uid_t *uid, gid_t *gid, char *why,
    size_t whylen)
{
	char		 user[256], *colon;
	struct passwd	*pw;
	struct group	*gr;

	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (snprintf(user, sizeof(user), "%s", spec) >= (int)sizeof(user)) {
		snprintf(why, whylen, "too long");
		return -1;
	}
	if ((colon = strchr(user, ':')) != NULL) {
		*colon = '\0';
		if (colon[1] != '\0') {
			if ((gr = getgrnam(colon + 1)) == NULL) {
				snprintf(why, whylen, "no group %s", colon + 1);
				return -1;
			}
			*gid = gr->gr_gid;
		}
	}
	if (user[0] != '\0') {
		if ((pw = getpwnam(user)) == NULL) {
			snprintf(why, whylen, "no user %s", user);
			return -1;
		}
		*uid = pw->pw_uid;
	}
	return 0;
}

/* Unlinks path if it is a socket nobody listens on. */
static int
unlink_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat	 sb;
	int		 fd, rc;

	if (lstat(path, &sb) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(sb.st_mode)) {
		log_err("%s exists and is not a socket", path);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0) {
		log_err("%s: another process is listening on it", path);
		return -1;
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		log_err("cannot remove stale socket %s: %s", path,
		    strerror(errno));
		return -1;
	}
	log_info("removed stale socket %s", path);
	return 0;
}

/* A unix socket path's room, without its NUL (which it may lack). */
#define SUN_PATH_MAX	sizeof(((struct sockaddr_un *)0)->sun_path)

/* 1 when listen_open took an inherited socket: it is not ours to unlink. */
static int	listen_inherited;

/* 1 if systemd handed this process its sockets (LISTEN_PID is ours,
 * LISTEN_FDS at least 1): the first is fd 3. */
static int
systemd_activated(void)
{
	const char	*lpid = getenv("LISTEN_PID"), *lfds = getenv("LISTEN_FDS");

	return lpid != NULL && lfds != NULL &&
	    strtol(lpid, NULL, 10) == (long)getpid() &&
	    strtol(lfds, NULL, 10) >= 1;
}

/* The path the unix socket fd is bound to, into path (NUL-terminated);
 * 1, or 0 when fd is no unix socket with a path. */
static int
unix_sock_path(int fd, char path[SUN_PATH_MAX + 1])
{
	struct sockaddr_un	 sa;
	socklen_t		 len = sizeof(sa);

	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
	    sa.sun_family != AF_UNIX || len <= offsetof(struct sockaddr_un,
	    sun_path) || sa.sun_path[0] == '\0')
		return 0;
	memcpy(path, sa.sun_path, SUN_PATH_MAX);
	path[SUN_PATH_MAX] = '\0';
	return 1;
}

/* 1 if fd is a listening stream socket bound to the unix path. */
static int
is_listening_at(int fd, const char *path)
{
	char		 bound[SUN_PATH_MAX + 1];
	socklen_t	 olen;
	int		 v = 0;

	olen = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &olen) != 0 ||
	    v != 1)
		return 0;
	return unix_sock_path(fd, bound) && strcmp(bound, path) == 0;
}

/*
 * Takes the socket handed over as fd for ours: 0, or -1 (logged) if it is
 * not one idemgate would make itself, a unix socket whose file anyone may
 * write to (anyone could send it FastCGI params, REMOTE_USER among them).
 * A path that cannot be looked at (unlinked, another mount namespace) is
 * let be, with a warning.  Taken, it leaves LISTEN_* behind and never
 * reaches a handler.
 */
static int
take_inherited(int fd)
{
	char		 path[SUN_PATH_MAX + 1];
	struct stat	 sb;

	if (unix_sock_path(fd, path)) {
		if (stat(path, &sb) != 0)
			log_warn("%s: the socket handed over (fd %d): its mode "
			    "cannot be seen: %s", path, fd, strerror(errno));
		else if ((sb.st_mode & 0002) != 0) {
			log_err("%s: the socket handed over (fd %d) is "
			    "world-writable (mode %04o); give it SocketMode=0660 "
			    "(spawn-fcgi: -M 0660) and the web server's group",
			    path, fd, (unsigned)(sb.st_mode & 07777));
			return -1;
		}
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
		log_warn("fd %d: cannot set close-on-exec: %s", fd,
		    strerror(errno));
	return 0;
}

/*
 * The socket at path, when a service manager already listens on it for
 * us: on fd 0 (systemd's StandardInput=socket, as the shipped unit has
 * it) or systemd's first LISTEN_FDS socket (fd 3).  So the one config
 * serves started by hand and socket-activated.  fd, -1 (none), or -2
 * (refused, logged).
 */
static int
inherited_unix(const char *path)
{
	int	 fd = -1;

	if (is_listening_at(0, path))
		fd = 0;
	else if (systemd_activated() && is_listening_at(3, path))
		fd = 3;
	if (fd < 0)
		return -1;
	if (take_inherited(fd) != 0)
		return -2;
	log_info("%s: inherited as fd %d (socket activation); its owner and "
	    "mode are the service manager's", path, fd);
	listen_inherited = 1;
	return fd;
}

/*
 * Gives the socket just bound at path its owner (set_owner) and mode,
 * through one descriptor of what is there now, never following a link:
 * whoever may write the socket's directory could otherwise swap the path
 * for a link between bind() and chmod(), and have the mode (and group) of
 * a file of their choosing changed.  Anything but a socket is refused.
 */
static int
own_socket(const char *path, int set_owner, uid_t uid, gid_t gid,
    mode_t mode)
{
	struct stat	 sb;
	char		 self[64];
	int		 pfd, rc = -1;

	if ((pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(pfd, &sb) != 0) {
		log_err("%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISSOCK(sb.st_mode)) {
		log_err("%s: no longer the socket just made (replaced by "
		    "someone who may write its directory?)", path);
		goto out;
	}
	if (set_owner && fchownat(pfd, "", uid, gid, AT_EMPTY_PATH) != 0) {
		log_err("chown %s: %s", path, strerror(errno));
		goto out;
	}
	/* An O_PATH descriptor takes no fchmod(); its /proc name is the
	 * same inode.  Without /proc, the path again, links refused. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	if (chmod(self, mode) != 0 && (errno != ENOENT ||
	    fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW) != 0)) {
		log_err("chmod %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (pfd >= 0)
		close(pfd);
	return rc;
}

static enum idem_err
open_unix(const struct cfg *cfg, const char *path, int *out)
{
	struct sockaddr_un	 sa;
	mode_t			 old;
	uid_t			 uid = (uid_t)-1;
	gid_t			 gid = (gid_t)-1;
	char			 why[300];
	int			 fd, rc;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("socket path too long: %s", path);
		return IDEM_ECONFIG;
	}
	memcpy(sa.sun_path, path, strlen(path));
	if ((fd = inherited_unix(path)) >= 0) {
		*out = fd;
		return IDEM_OK;
	}
	if (fd == -2)
		return IDEM_ECONFIG;
	if (cfg->socket_owner != NULL && listen_owner_ids(cfg->socket_owner,
	    &uid, &gid, why, sizeof(why)) != 0) {
		log_err("socket_owner %s: %s", cfg->socket_owner, why);
		return IDEM_ECONFIG;
	}
	if (unlink_stale(path, &sa) != 0)
		return IDEM_ESYS;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		log_err("socket: %s", strerror(errno));
		return IDEM_ESYS;
	}
	/* Owner-only from the first instant; widened below on purpose. */
	old = umask(0177);
	rc = bind(fd, (const struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0) {
		log_err("bind %s: %s", path, strerror(errno));
		goto fail;
	}
	if (own_socket(path, cfg->socket_owner != NULL, uid, gid,
	    cfg->socket_mode & 0775) != 0)
		goto fail_unlink;
	if (listen(fd, LISTEN_BACKLOG) != 0) {
		log_err("listen %s: %s", path, strerror(errno));
		goto fail_unlink;
	}
	*out = fd;
	return IDEM_OK;
fail_unlink:
	unlink(path);
fail:
	close(fd);
	return IDEM_ESYS;
}

static enum idem_err
open_tcp(const char *spec, int *out)
{
	struct addrinfo	 hints, *res = NULL, *ai;
	char		 host[256], *port;
	int		 fd = -1, one = 1, rc;

	if (snprintf(host, sizeof(host), "%s", spec) >= (int)sizeof(host) ||
	    (port = strrchr(host, ':')) == NULL) {
		log_err("bad tcp listen address: %s", spec);
		return IDEM_ECONFIG;
	}
	*port++ = '\0';
	if (host[0] == '[') {
		size_t	 n = strlen(host);

		if (n < 2 || host[n - 1] != ']') {
			log_err("bad tcp listen address: %s", spec);
			return IDEM_ECONFIG;
		}
		host[n - 1] = '\0';
		memmove(host, host + 1, n - 1);
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host[0] ? host : NULL, port, &hints,
	    &res)) != 0) {
		log_err("tcp:%s: %s", spec, gai_strerror(rc));
		return IDEM_ECONFIG;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, LISTEN_BACKLOG) == 0)
			break;
		log_err("bind tcp:%s: %s", spec, strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return IDEM_ESYS;
	*out = fd;
	return IDEM_OK;
}

static enum idem_err
open_fd(const char *spec, int *out)
{
	char		*end;
	long		 n;
	int		 type;
	socklen_t	 len = sizeof(type);

	errno = 0;
	n = strtol(spec, &end, 10);
	if (errno != 0 || *end != '\0' || end == spec || n < 0 || n > 65535) {
		log_err("bad listen fd: %s", spec);
		return IDEM_ECONFIG;
	}
	/* systemd socket activation: the first socket is fd 3. */
	if (n == 0 && systemd_activated())
		n = 3;
	if (getsockopt((int)n, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
	    type != SOCK_STREAM) {
		log_err("fd %ld is not a stream socket", n);
		return IDEM_ECONFIG;
	}
	if (take_inherited((int)n) != 0)
		return IDEM_ECONFIG;
	listen_inherited = 1;
	*out = (int)n;
	return IDEM_OK;
}

enum idem_err
listen_open(const struct cfg *cfg, int *fd)
{
	const char	*l = cfg->listen;

	if (l == NULL)
		l = "fd:0";
	if (strncmp(l, "unix:", 5) == 0)
		return open_unix(cfg, l + 5, fd);
	if (strncmp(l, "tcp:", 4) == 0)
		return open_tcp(l + 4, fd);
	if (strncmp(l, "fd:", 3) == 0)
		return open_fd(l + 3, fd);
	log_err("bad listen address: %s", l);
	return IDEM_ECONFIG;
}

void
listen_stop(const struct cfg *cfg, int fd)
{
	if (listen_inherited)
		return;
	if (fd >= 0)
		(void)shutdown(fd, SHUT_RD);
	if (cfg->listen != NULL && strncmp(cfg->listen, "unix:", 5) == 0)
		unlink(cfg->listen + 5);
}

int
listen_addr_listed(const char *peer, const char *addrs)
{
	unsigned char	 a[16], b[16];
	char		 item[64];
	const char	*p, *e;
	int		 fam;
	size_t		 n;

	if (addrs == NULL || *addrs == '\0')
		return 1;
	fam = strchr(peer, ':') != NULL ? AF_INET6 : AF_INET;
	if (inet_pton(fam, peer, a) != 1)
		return 0;
	for (p = addrs; *p != '\0'; p = *e ? e + 1 : e) {
		e = strchr(p, ',');
		if (e == NULL)
			e = p + strlen(p);
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		n = (size_t)(e - p);
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 0 || n >= sizeof(item))
			continue;
		memcpy(item, p, n);
		item[n] = '\0';
		if (inet_pton(fam, item, b) == 1 &&
		    memcmp(a, b, fam == AF_INET ? 4 : 16) == 0)
			return 1;
	}
	return 0;
}

int
listen_peer_allowed(int fd, const char *addrs)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);
	char			 peer[INET6_ADDRSTRLEN];
	const void		*ap;

	if (addrs == NULL || *addrs == '\0')
		return 1;
	if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		ap = &((struct sockaddr_in *)&ss)->sin_addr;
	else if (ss.ss_family == AF_INET6) {
		struct in6_addr	*a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;

		ap = a6;
		/* An IPv4 client on a dual-stack socket. */
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			if (inet_ntop(AF_INET, &a6->s6_addr[12], peer,
			    sizeof(peer)) == NULL)
				return 0;
			return listen_addr_listed(peer, addrs);
		}
	} else
		return 1;
	if (inet_ntop(ss.ss_family, ap, peer, sizeof(peer)) == NULL)
		return 0;
	return listen_addr_listed(peer, addrs);
}
