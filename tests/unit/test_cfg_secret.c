/* Unit tests for the secret_key_file and store_headers_drop settings. */
#include <sys/stat.h>

#include <pwd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "cfg_texts.h"
#include "check.h"

#define HEX1 "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define HEX2 "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

static char	 dir[] = "/tmp/test_cfg_secret.XXXXXX";
static char	 keys[256];

/* Loads a config naming the key file. Returns cfg_load_secrets' result;
 * msg gets its message. */
static enum idem_err
load_only(struct cfg **out, char *msg, size_t len)
{
	char		 conf[512];
	struct cfg	*c = NULL;
	enum idem_err	 er;

	snprintf(conf, sizeof(conf), RT "[gateway]\nsecret_key_file = %s\n",
	    keys);
	msg[0] = '\0';
	if (cfg_parse(conf, strlen(conf), "t.conf", &c, msg, len) != IDEM_OK)
		return IDEM_EINVAL;
	er = cfg_load_secrets(c, msg, len);
	if (out != NULL && er == IDEM_OK)
		*out = c;
	else
		cfg_free(c);
	return er;
}

/* Writes text to the key file with mode, then loads it as load_only. */
static enum idem_err
load(const char *text, mode_t mode, struct cfg **out, char *msg, size_t len)
{
	FILE	*f;

	if ((f = fopen(keys, "w")) == NULL)
		return IDEM_ESYS;
	fputs(text, f);
	fclose(f);
	chmod(keys, mode);
	return load_only(out, msg, len);
}

/* A missing file is refused at the config's position. */
static void
test_missing(void)
{
	char		 conf[512], msg[512];
	struct cfg	*c = NULL;

	snprintf(conf, sizeof(conf), RT "[gateway]\nsecret_key_file = %s\n",
	    keys);
	CHECK(cfg_parse(conf, strlen(conf), "t.conf", &c, msg, sizeof(msg)) ==
	    IDEM_OK);
	if (c == NULL)
		return;
	CHECK(cfg_load_secrets(c, msg, sizeof(msg)) == IDEM_ECONFIG);
	CHECK(strstr(msg, "t.conf:4:19: secret_key_file") == msg &&
	    strstr(msg, "No such file or directory") != NULL);
	CHECK(c->nsecrets == 0);
	cfg_free(c);
}

/* Loads a good key file owned by fileuid in a directory owned by diruid
 * with dirmode, then puts both back: root's, 0600 in a 0700 directory. */
static enum idem_err
load_after(int fileuid, int diruid, mode_t dirmode, char *msg, size_t len)
{
	enum idem_err	 er;

	if (load("k1 " HEX1 "\n", 0600, NULL, msg, len) != IDEM_OK)
		return IDEM_EINVAL;
	if (chown(keys, (uid_t)fileuid, (gid_t)-1) != 0 ||
	    chown(dir, (uid_t)diruid, (gid_t)-1) != 0 ||
	    chmod(dir, dirmode) != 0)
		return IDEM_ESYS;
	er = load_only(NULL, msg, len);
	if (chown(keys, 0, (gid_t)-1) != 0 || chown(dir, 0, (gid_t)-1) != 0 ||
	    chmod(dir, 0700) != 0)
		return IDEM_ESYS;
	return er;
}

/* keys -> a file in a directory anyone may write: refused, as the file
 * named directly is. */
static void
test_link(void)
{
	char		 conf[1024], msg[512], wdir[300], target[400];
	struct cfg	*c = NULL;
	FILE		*f;

	snprintf(wdir, sizeof(wdir), "%s/w", dir);
	snprintf(target, sizeof(target), "%s/keys", wdir);
	CHECK(mkdir(wdir, 0777) == 0 && chmod(wdir, 0777) == 0);
	if ((f = fopen(target, "w")) != NULL) {
		fputs("k1 " HEX1 "\n", f);
		fclose(f);
	}
	chmod(target, 0600);
	unlink(keys);
	CHECK(symlink(target, keys) == 0);
	snprintf(conf, sizeof(conf), RT "[gateway]\nsecret_key_file = %s\n",
	    keys);
	CHECK(cfg_parse(conf, strlen(conf), "t.conf", &c, msg, sizeof(msg)) ==
	    IDEM_OK);
	if (c != NULL) {
		CHECK(cfg_load_secrets(c, msg, sizeof(msg)) == IDEM_ECONFIG &&
		    strstr(msg, "directory others may write") != NULL);
		cfg_free(c);
	}
	unlink(keys);
	unlink(target);
	rmdir(wdir);
}

static void
test_owners(void)
{
	struct passwd	*pw;
	char		 msg[512];

	if (geteuid() != 0) {
		printf("# skip: owners need root\n");
		return;
	}
	CHECK(load_after(0, 0, 0700, msg, sizeof(msg)) == IDEM_OK);
	CHECK(load_after(65534, 0, 0700, msg, sizeof(msg)) == IDEM_ECONFIG &&
	    strstr(msg, "owned by another user") != NULL);
	CHECK(load_after(0, 65534, 0700, msg, sizeof(msg)) == IDEM_ECONFIG &&
	    strstr(msg, "directory owned by another user") != NULL);
	CHECK(load_after(0, 0, 0777, msg, sizeof(msg)) == IDEM_ECONFIG &&
	    strstr(msg, "directory others may write") != NULL);
	CHECK(load_after(0, 0, 0770, msg, sizeof(msg)) == IDEM_ECONFIG);
	/* Sticky, as /tmp: others cannot replace a file they do not own. */
	CHECK(load_after(0, 0, 01777, msg, sizeof(msg)) == IDEM_OK);
	CHECK(load_after(0, 0, 0755, msg, sizeof(msg)) == IDEM_OK);
	/* The service's user may own them (idemgate:idemgate 0600), read by
	 * root's idemctl too. */
	if ((pw = getpwnam("idemgate")) != NULL) {
		CHECK(load_after((int)pw->pw_uid, 0, 0700, msg,
		    sizeof(msg)) == IDEM_OK);
		CHECK(load_after(0, (int)pw->pw_uid, 0700, msg,
		    sizeof(msg)) == IDEM_OK);
	} else
		printf("# skip: no user idemgate\n");
	/* A link is judged by the directory the file really is in. */
	test_link();
}

static void
test_keys(void)
{
	struct cfg	*c = NULL;
	char		 msg[512], want[512];

	CHECK(load("# ring\n\nk1 " HEX1 "\n  k2\t" HEX2 "  \n", 0600, &c, msg,
	    sizeof(msg)) == IDEM_OK);
	if (c != NULL) {
		CHECK(c->nsecrets == 2);
		CHECK(strcmp(cfg_secret(c, NULL)->id, "k2") == 0);
		CHECK(cfg_secret(c, NULL)->key[0] == 0xff &&
		    cfg_secret(c, NULL)->key[31] == 0x00);
		CHECK(cfg_secret(c, "k1")->key[1] == 0x11);
		CHECK(cfg_secret(c, "k3") == NULL);
		cfg_free(c);
	}
	CHECK(load("k1 " HEX1 "\n", 0640, NULL, msg, sizeof(msg)) == IDEM_OK);

	/* Modes: group- or world-writable, world-readable. */
	snprintf(want, sizeof(want), "t.conf:4:19: secret_key_file %s: "
	    "world-readable (chmod 0600 or 0640)", keys);
	CHECK(load("k1 " HEX1 "\n", 0604, NULL, msg, sizeof(msg)) ==
	    IDEM_ECONFIG && strcmp(msg, want) == 0);
	CHECK(load("k1 " HEX1 "\n", 0620, NULL, msg, sizeof(msg)) ==
	    IDEM_ECONFIG && strstr(msg, "group- or world-writable") != NULL);
	CHECK(load("k1 " HEX1 "\n", 0602, NULL, msg, sizeof(msg)) ==
	    IDEM_ECONFIG && strstr(msg, "writable") != NULL);

	/* Owners: the file and its directory are root's or the reader's;
	 * the directory is not others' to write unless sticky. */
	test_owners();

	/* Lines: position in the key file, never the key. */
	snprintf(want, sizeof(want), "%s:2:1: duplicate key id", keys);
	CHECK(load("k1 " HEX1 "\nk1 " HEX2 "\n", 0600, NULL, msg,
	    sizeof(msg)) == IDEM_ECONFIG && strcmp(msg, want) == 0);
	/* No rotation: an old key again under a new id. */
	snprintf(want, sizeof(want), "%s:3:1: the same key as id 'k1': a new "
	    "id needs a new key", keys);
	CHECK(load("k1 " HEX1 "\nk2 " HEX2 "\nk3 " HEX1 "\n", 0600, NULL, msg,
	    sizeof(msg)) == IDEM_ECONFIG && strcmp(msg, want) == 0);
	snprintf(want, sizeof(want), "%s:1:4: key must be 64 hex digits "
	    "(32 bytes)", keys);
	CHECK(load("k1 " HEX1 "0\n", 0600, NULL, msg, sizeof(msg)) ==
	    IDEM_ECONFIG && strcmp(msg, want) == 0);
	CHECK(load("k1 0011zz\n", 0600, NULL, msg, sizeof(msg)) ==
	    IDEM_ECONFIG && strstr(msg, ":1:4: key must be") != NULL);
	CHECK(strstr(msg, "0011") == NULL);
	CHECK(load("k/1 " HEX1 "\n", 0600, NULL, msg, sizeof(msg)) ==
	    IDEM_ECONFIG && strstr(msg, ":1:1: bad key id") != NULL);
	CHECK(load("# nothing\n", 0600, NULL, msg, sizeof(msg)) ==
	    IDEM_ECONFIG && strstr(msg, "no key") != NULL);
	/* 32 bytes of id: the boundary. */
	CHECK(load("0123456789abcdef0123456789abcdef " HEX1 "\n", 0600, NULL,
	    msg, sizeof(msg)) == IDEM_OK);
	CHECK(load("0123456789abcdef0123456789abcdef0 " HEX1 "\n", 0600,
	    NULL, msg, sizeof(msg)) == IDEM_ECONFIG);
	unlink(keys);
	test_missing();
}

static void
test_clear(void)
{
	struct cfg	*c = NULL;
	char		 msg[256];

	CHECK(cfg_parse(RT, strlen(RT), "t.conf", &c, msg, sizeof(msg)) ==
	    IDEM_OK);
	if (c == NULL)
		return;
	CHECK(c->secret_key_file == NULL);
	CHECK(cfg_load_secrets(c, msg, sizeof(msg)) == IDEM_OK);
	CHECK(cfg_secret(c, NULL) == NULL);
	cfg_free(c);
	CHECK(!accepted("[gateway]\nsecret_key_file = keys\n" RT));
}

static void
test_store_drop(void)
{
	const char	*text = "[idempotency]\nstore_headers_drop = X-Token\n"
	    "[route /a]\nhandler = cgi:/a\n"
	    "[route /b]\nhandler = cgi:/b\nstore_headers_drop =\n";
	struct cfg	*c = NULL;
	const struct route *a, *b;
	char		 msg[256];

	CHECK(cfg_parse(RT, strlen(RT), "t.conf", &c, msg, sizeof(msg)) ==
	    IDEM_OK);
	if (c != NULL) {
		a = &c->routes[0];
		CHECK(a->nstore_drop == 2 &&
		    strcmp(a->store_drop[0], "Set-Cookie") == 0 &&
		    strcmp(a->store_drop[1], "Set-Cookie2") == 0);
		cfg_free(c);
		c = NULL;
	}
	CHECK(cfg_parse(text, strlen(text), "t.conf", &c, msg, sizeof(msg)) ==
	    IDEM_OK);
	if (c != NULL) {
		a = cfg_route(c, "/a");
		b = cfg_route(c, "/b");
		CHECK(a->nstore_drop == 1 &&
		    strcmp(a->store_drop[0], "X-Token") == 0);
		CHECK(b->nstore_drop == 0);
		cfg_free(c);
	}
	CHECK(!accepted(RT "store_headers_drop = Set(Cookie)\n"));
	CHECK(accepted(RT "store_headers_drop = Set-Cookie, X-A X-B\n"));
}

int
main(void)
{
	if (mkdtemp(dir) == NULL) {
		CHECK(!"mkdtemp");
		return CHECK_DONE();
	}
	snprintf(keys, sizeof(keys), "%s/keys", dir);
	test_keys();
	test_clear();
	test_store_drop();
	rmdir(dir);
	return CHECK_DONE();
}
