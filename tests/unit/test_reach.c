/* Unit tests for what idemgate -t checks as the gateway's user: permission bits, socket_owner, and who is checked. */
#include <sys/stat.h>
#include <sys/types.h>

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/cfg_texts.h"
#include "../lib/check.h"
#include "reach.h"

/* A user that is no one on this machine, in its own group only. */
static void
nobody_like(struct reach_user *u, uid_t uid)
{
	memset(u, 0, sizeof(*u));
	snprintf(u->name, sizeof(u->name), "u%lu", (unsigned long)uid);
	u->uid = uid;
	u->gid = (gid_t)uid;
	u->groups[0] = u->gid;
	u->ngroups = 1;
}

static struct stat
node(uid_t uid, gid_t gid, mode_t mode)
{
	struct stat	 st;

	memset(&st, 0, sizeof(st));
	st.st_uid = uid;
	st.st_gid = gid;
	st.st_mode = mode;
	return st;
}

/* Owner bits for the owner, group bits for a member, other bits for the
 * rest; never a mix (an owner without the bit is refused even when
 * others have it, as the kernel does); root passes. */
static void
test_mode(void)
{
	struct reach_user	 u;
	struct stat		 st;

	nobody_like(&u, 4000);
	st = node(33, 33, S_IFSOCK | 0660);	/* Debian's www pool */
	CHECK(!reach_mode_allows(&st, &u, S_IWOTH));
	u.groups[u.ngroups++] = 33;
	CHECK(reach_mode_allows(&st, &u, S_IWOTH));
	st = node(33, 33, S_IFSOCK | 0600);
	CHECK(!reach_mode_allows(&st, &u, S_IWOTH));
	st = node(4000, 33, S_IFSOCK | 0066);
	CHECK(!reach_mode_allows(&st, &u, S_IWOTH));
	st = node(4000, 33, S_IFSOCK | 0200);
	CHECK(reach_mode_allows(&st, &u, S_IWOTH));
	st = node(0, 0, S_IFDIR | 0701);
	CHECK(reach_mode_allows(&st, &u, S_IXOTH));
	st = node(0, 0, S_IFDIR | 0750);
	CHECK(!reach_mode_allows(&st, &u, S_IXOTH));
	nobody_like(&u, 0);
	st = node(33, 33, S_IFDIR | 0700);
	CHECK(reach_mode_allows(&st, &u, S_IXOTH));
}

/* cfg with listen and socket_owner, or NULL. */
static struct cfg *
owner_cfg(const char *listen, const char *owner)
{
	char	 text[256];

	snprintf(text, sizeof(text), "[gateway]\nlisten = %s\n"
	    "socket_owner = %s\n[route /]\nhandler = cgi:/x\n", listen, owner);
	return parse(text);
}

/* As the gateway's chown(2) at start: a non-root user gives its socket
 * to itself and to its groups only; unknown names fail for anyone. */
static void
test_socket_owner(void)
{
	static const struct {
		const char	*owner;
		uid_t		 uid;
		int		 in_root_group;
		const char	*want;	/* message start, NULL: accepted */
	} tab[] = {
		{ "root", 4000, 0, "t.conf:3:16: socket_owner root: user "
		    "u4000 may not give its socket to another user " },
		{ ":root", 4000, 0, "t.conf:3:16: socket_owner :root: user "
		    "u4000 may not give its socket to a group it is not in " },
		{ ":root", 4000, 1, NULL },
		{ "root:root", 0, 0, NULL },
		{ "no-such-user-x", 0, 0, "t.conf:3:16: socket_owner "
		    "no-such-user-x: no user no-such-user-x" },
		{ ":no-such-group-x", 4000, 0, "t.conf:3:16: socket_owner "
		    ":no-such-group-x: no group no-such-group-x" },
	};
	struct reach_user	 u;
	struct cfg		*c;
	char			 msg[1024];
	size_t			 i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if ((c = owner_cfg("unix:/run/x.sock", tab[i].owner)) == NULL) {
			CHECK(c != NULL);
			continue;
		}
		nobody_like(&u, tab[i].uid);
		if (tab[i].in_root_group)
			u.groups[u.ngroups++] = 0;
		msg[0] = '\0';
		if (tab[i].want == NULL) {
			CHECK(reach_socket_owner(c, &u, msg, sizeof(msg)) ==
			    IDEM_OK);
		} else {
			CHECK(reach_socket_owner(c, &u, msg, sizeof(msg)) ==
			    IDEM_ECONFIG);
			CHECK(strncmp(msg, tab[i].want,
			    strlen(tab[i].want)) == 0);
		}
		cfg_free(c);
	}
	/* The fix is named: root, systemd's socket, the group. */
	c = owner_cfg("unix:/run/x.sock", ":root");
	nobody_like(&u, 4000);
	CHECK(c != NULL && reach_socket_owner(c, &u, msg, sizeof(msg)) ==
	    IDEM_ECONFIG);
	CHECK(strstr(msg, "run idemgate as root") != NULL);
	CHECK(strstr(msg, "SocketGroup=") != NULL);
	CHECK(strstr(msg, "adduser u4000 root") != NULL);
	cfg_free(c);
	/* A socket idemgate does not create has no owner to set. */
	c = owner_cfg("fd:0", "root:root");
	CHECK(c != NULL && reach_socket_owner(c, &u, msg, sizeof(msg)) ==
	    IDEM_OK);
	cfg_free(c);
}

/* Who -t checks as, for the caller this test runs as. */
static void
test_pick(void)
{
	struct reach_user	 u;
	struct passwd		*pw = getpwuid(geteuid());
	char			 msg[256];

	CHECK(reach_user_pick("no-such-user-x", 0, &u, msg, sizeof(msg)) ==
	    IDEM_EINVAL);
	CHECK(strcmp(msg, "-u no-such-user-x: no such user") == 0);
	if (pw == NULL)
		return;
	CHECK(reach_user_pick(pw->pw_name, 1, &u, msg, sizeof(msg)) ==
	    IDEM_OK);
	CHECK(u.change == 0 && u.implied == 0 && u.uid == geteuid());
	CHECK(u.ngroups >= 1 && u.groups[0] == getegid());
	/* Any other config: the caller, whoever exists. */
	CHECK(reach_user_pick(NULL, 0, &u, msg, sizeof(msg)) == IDEM_OK);
	CHECK(u.change == 0 && u.implied == 0 && u.uid == geteuid());
	/* The service's config, for root: the service's user if there is
	 * one. */
	CHECK(reach_user_pick(NULL, 1, &u, msg, sizeof(msg)) == IDEM_OK);
	if (geteuid() == 0 && (pw = getpwnam(REACH_DEFAULT_USER)) != NULL)
		CHECK(u.change == 1 && u.implied == 1 && u.uid == pw->pw_uid &&
		    strcmp(u.name, REACH_DEFAULT_USER) == 0);
	else
		CHECK(u.change == 0 && u.uid == geteuid());
}

int
main(void)
{
	test_mode();
	test_socket_owner();
	test_pick();
	return CHECK_DONE();
}
