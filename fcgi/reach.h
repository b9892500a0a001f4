/*
 * What idemgate -t checks as the user the gateway runs as: the files it
 * opens, each fastcgi: upstream it connects to, and the socket_owner it
 * gives its unix socket.  The shipped idemgate.service runs -t as user
 * idemgate itself; root checks as another user (-u, or the service's
 * user for the service's config) in a child process that becomes it
 * (fork, initgroups, setgid, setuid), so the answer is the one the
 * gateway will get, not root's.
 */
#ifndef IDEM_REACH_H
#define IDEM_REACH_H

#include <sys/stat.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdio.h>

#include "cfg.h"
#include "err.h"

#define REACH_MAX_GROUPS	256
/* How long -t waits for a tcp: upstream to accept. */
#define REACH_CONNECT_MS	1000

/* A user the checks run as: its name, ids and every group it is in. */
struct reach_user {
	char	 name[64];
	uid_t	 uid;
	gid_t	 gid;				/* primary group */
	gid_t	 groups[REACH_MAX_GROUPS];	/* with gid */
	int	 ngroups;
	int	 change;	/* 1: not the caller; -t switches to it */
	int	 implied;	/* 1: the service's, for root without -u */
};

/* The system user the packaged units run the gateway as. */
#define REACH_DEFAULT_USER	CFG_SERVICE_USER

/*
 * Who -t checks as: name (-u) when given; else, for root checking the
 * config the packaged idemgate.service runs (service: 1), the system user
 * REACH_DEFAULT_USER when it exists (implied = 1); else the caller.  Only
 * root may name another user.  IDEM_OK, or IDEM_EINVAL with one line in
 * err (no such user, not root).  OUT: u.
 */
enum idem_err reach_user_pick(const char *name, int service,
    struct reach_user *u, char *err, size_t errlen);

/* 1 if st's mode lets u do what want asks (S_IROTH, S_IWOTH or S_IXOTH
 * read for the owner, group or other bits that apply to u). */
int reach_mode_allows(const struct stat *st, const struct reach_user *u,
    mode_t want);

/*
 * Why u cannot connect to the unix socket at path, when connect said
 * EACCES: the first directory on the path u cannot search, or the socket
 * u cannot write, with owner, group and mode, and the fix.  Written into
 * why (always terminated).
 */
void reach_unix_denied(const char *path, const struct reach_user *u,
    char *why, size_t whylen);

/*
 * The socket_owner part: when listen is unix: and u is not root, u may
 * give the socket only to itself and to a group it is in (chown(2)), as
 * the gateway does at start.  Unknown names are errors for anyone.
 * IDEM_OK, or IDEM_ECONFIG with "FILE:LINE:COL: message" naming the fix.
 */
enum idem_err reach_socket_owner(const struct cfg *c,
    const struct reach_user *u, char *err, size_t errlen);

/*
 * Everything -t checks as u, in this process (already u): the key file
 * (cfg_check_secrets), the files (cfg_check_files), socket_owner, then a
 * connect to each distinct fastcgi: upstream.  A refused permission is an
 * error; an upstream not answering now (no socket, refused, timed out) is
 * one "FILE:LINE:COL: warning: ..." line on warn, counted in *warned.
 * IDEM_OK or IDEM_ECONFIG with the message in err.
 */
enum idem_err reach_check(const struct cfg *c, const struct reach_user *u,
    FILE *warn, int *warned, char *err, size_t errlen);

/*
 * reach_check as u: in a child that becomes u when u->change, else here.
 * Warnings go to stderr.  OUT: *warned (how many).
 */
enum idem_err reach_check_as(const struct cfg *c, const struct reach_user *u,
    int *warned, char *err, size_t errlen);

#endif
