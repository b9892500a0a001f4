/* The FastCGI listen socket: unix, tcp or inherited, and who may connect. */
#ifndef IDEM_LISTEN_H
#define IDEM_LISTEN_H

#include <sys/types.h>
#include <stddef.h>

#include "cfg.h"
#include "err.h"

/*
 * Opens cfg->listen:
 *   unix:/path   created under umask 0177 (never world-accessible, not even
 *                between bind and chmod), then chown'd to socket_owner and
 *                chmod'ed to socket_mode.  A stale socket (nobody answers
 *                on it) is unlinked first; a live one is an error.
 *   tcp:host:port  (host may be [v6]); SO_REUSEADDR.
 *   fd:N         an inherited listening socket (spawn-fcgi, lighttpd
 *                bin-path and mod_fcgid pass fd 0).  Under systemd socket
 *                activation (LISTEN_PID = our pid, LISTEN_FDS >= 1) fd:0
 *                means the first passed socket, fd 3.
 * Logs the reason on failure.  OUT: fd.
 */
enum idem_err listen_open(const struct cfg *cfg, int *fd);

/*
 * Resolves socket_owner ("user:group", "user" or ":group") into ids,
 * (uid_t)-1 / (gid_t)-1 for a part it does not give.  0, or -1 with the
 * reason ("no user www") in why.
 */
int listen_owner_ids(const char *spec, uid_t *uid, gid_t *gid, char *why,
    size_t whylen);

/*
 * Stops a listener we made taking connections, for good (a stop, not a
 * reload): a connect gets "connection refused" at once, where it would
 * wait in the backlog for a drain that never reads it; a unix: path is
 * unlinked (a new instance may bind it before this one has drained).
 * Connections already queued on a unix socket can still be accepted (a
 * TCP listener resets its queue, as nginx's close does).  An inherited
 * socket is left alone: its owner (systemd) queues for the next start.
 */
void listen_stop(const struct cfg *cfg, int fd);

/*
 * 1 if the peer of connection fd may talk to us: FCGI_WEB_SERVER_ADDRS
 * (comma-separated IPv4/IPv6 addresses) is unset or empty, the peer is not
 * an IP socket, or its address is listed.  addrs may be NULL.
 */
int listen_peer_allowed(int fd, const char *addrs);

/* Same test on a textual peer address (for tests). */
int listen_addr_listed(const char *peer, const char *addrs);

#endif
