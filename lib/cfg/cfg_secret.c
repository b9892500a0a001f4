/* The secret_key_file: the keys that seal stored answers. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cfg.h"
#include "path.h"

#define SECRET_FILE_MAX	(64 * 1024)	/* far past any real key ring */
#define SECRET_MAX	1024		/* keys in one file */

/* Where the file is read and what it gave so far. */
struct keyfile {
	const char		*name;
	char			*err;
	size_t			 errlen;
	struct cfg_secret	*keys;
	size_t			 n;
};

/* Formats "FILE:LINE:COL: message" and returns IDEM_ECONFIG. */
static enum idem_err
kf_err(struct keyfile *kf, int line, int col, const char *msg)
{
	snprintf(kf->err, kf->errlen, "%s:%d:%d: %s", kf->name, line, col,
	    msg);
	return IDEM_ECONFIG;
}

static int
id_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
}

/* Reads "ID HEX" from p (len bytes, no newline) into k. */
static enum idem_err
kf_line(struct keyfile *kf, const char *p, size_t len, int line,
    struct cfg_secret *k)
{
	size_t	 i = 0, idlen, h, at;
	int	 hi, lo;

	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	for (idlen = 0; i + idlen < len && id_char(p[i + idlen]); idlen++)
		;
	if (idlen == 0 || idlen > CFG_SECRET_ID_MAX || i + idlen == len ||
	    (p[i + idlen] != ' ' && p[i + idlen] != '\t'))
		return kf_err(kf, line, (int)i + 1, "bad key id (1..32 of "
		    "A-Z a-z 0-9 . _ -, then a blank and 64 hex digits)");
	memcpy(k->id, p + i, idlen);
	k->id[idlen] = '\0';
	i += idlen;
	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	at = i;
	for (h = 0; h < CFG_SECRET_LEN; h++, i += 2)
		if (i + 1 >= len || (hi = path_hexval(p[i])) < 0 ||
		    (lo = path_hexval(p[i + 1])) < 0)
			break;
		else
			k->key[h] = (unsigned char)(hi << 4 | lo);
	while (h == CFG_SECRET_LEN && i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (h != CFG_SECRET_LEN || i != len)
		return kf_err(kf, line, (int)at + 1, "key must be 64 hex "
		    "digits (32 bytes)");
	return IDEM_OK;
}

/* Adds the line at p (len bytes) unless it is blank or a comment. */
static enum idem_err
kf_add(struct keyfile *kf, const char *p, size_t len, int line)
{
	struct cfg_secret	*k;
	char			 msg[128];
	size_t			 i;
	enum idem_err		 er;

	for (i = 0; i < len && (p[i] == ' ' || p[i] == '\t'); i++)
		;
	if (i == len || p[i] == '#')
		return IDEM_OK;
	if (kf->n == SECRET_MAX)
		return kf_err(kf, line, 1, "too many keys (at most 1024)");
	k = &kf->keys[kf->n];
	if ((er = kf_line(kf, p, len, line, k)) != IDEM_OK)
		return er;
	/* A "new" key copied from an old line: no rotation. */
	for (i = 0; i < kf->n; i++) {
		if (strcmp(kf->keys[i].id, k->id) == 0)
			return kf_err(kf, line, 1, "duplicate key id");
		if (memcmp(kf->keys[i].key, k->key, CFG_SECRET_LEN) == 0) {
			snprintf(msg, sizeof(msg), "the same key as id '%s': "
			    "a new id needs a new key", kf->keys[i].id);
			return kf_err(kf, line, 1, msg);
		}
	}
	kf->n++;
	return IDEM_OK;
}

/* Parses text (len bytes) into kf->keys. */
static enum idem_err
kf_parse(struct keyfile *kf, const char *text, size_t len)
{
	const char	*p = text, *end = text + len, *nl;
	int		 line = 1;
	enum idem_err	 er;

	for (; p < end; p = nl + 1, line++) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if ((er = kf_add(kf, p, (size_t)(nl - p) -
		    (nl > p && nl[-1] == '\r'), line)) != IDEM_OK)
			return er;
	}
	if (kf->n == 0)
		return kf_err(kf, line > 1 ? line - 1 : 1, 1, "no key");
	return IDEM_OK;
}

/* 1 if uid may own the key file and its directory: root, the user reading
 * it, or the service's user (keys it owns 0600 are read by root's idemctl
 * too). */
static int
kf_trusted(uid_t uid)
{
	struct passwd	 pw, *res = NULL;
	char		 buf[1024];

	if (uid == 0 || uid == geteuid())
		return 1;
	return getpwnam_r(CFG_SERVICE_USER, &pw, buf, sizeof(buf),
	    &res) == 0 && res != NULL && res->pw_uid == uid;
}

/* Whoever may replace the keys may read every sealed answer: the file
 * and the directory it really is in (links followed) belong to root, the
 * reading user or the service's, and that directory is not open to
 * others' writes unless sticky (as /tmp). */
static const char *
kf_owner(const char *path, const struct stat *sb)
{
	struct stat	 ds;
	char		*real, *slash;
	const char	*why = NULL;

	if (!kf_trusted(sb->st_uid))
		return "owned by another user (chown it to root or to the "
		    "gateway's user)";
	if ((real = realpath(path, NULL)) == NULL)
		return "cannot find the directory it is in";
	slash = strrchr(real, '/');
	if (slash == real)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	if (slash == NULL || stat(real, &ds) != 0)
		why = "cannot check the directory it is in";
	else if (!kf_trusted(ds.st_uid))
		why = "in a directory owned by another user";
	else if ((ds.st_mode & (S_IWGRP | S_IWOTH)) &&
	    !(ds.st_mode & S_ISVTX))
		why = "in a directory others may write (chmod go-w)";
	free(real);
	return why;
}

/* Opens the file for c and checks its mode and owner; -1 with err set. */
static int
kf_open(const struct cfg *c, char *err, size_t errlen)
{
	struct stat	 sb;
	const char	*why = NULL;
	int		 fd;

	if ((fd = open(c->secret_key_file, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &sb) != 0)
		why = strerror(errno);
	else if (!S_ISREG(sb.st_mode))
		why = "not a regular file";
	else if (sb.st_mode & (S_IWGRP | S_IWOTH))
		why = "group- or world-writable (chmod 0600 or 0640)";
	else if (sb.st_mode & S_IROTH)
		why = "world-readable (chmod 0600 or 0640)";
	else if (sb.st_size > SECRET_FILE_MAX)
		why = "larger than 64K";
	else
		why = kf_owner(c->secret_key_file, &sb);
	if (why == NULL)
		return fd;
	snprintf(err, errlen, "%s:%d:%d: secret_key_file %s: %s", c->path,
	    c->secret_line, c->secret_col, c->secret_key_file, why);
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Reads fd whole into buf (cap bytes); -1 on error or past cap. */
static ssize_t
kf_read(int fd, char *buf, size_t cap)
{
	size_t	 len = 0;
	ssize_t	 n;

	while ((n = read(fd, buf + len, cap - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (len += (size_t)n) == cap)
			return -1;
	}
	return (ssize_t)len;
}

static void
kf_wipe(struct cfg_secret *keys)
{
	if (keys == NULL)
		return;
	OPENSSL_cleanse(keys, SECRET_MAX * sizeof(*keys));
	free(keys);
}

/* Reads and checks c's key file into *keys (SECRET_MAX slots, *n used):
 * the caller owns them and wipes them. */
static enum idem_err
kf_load(const struct cfg *c, struct cfg_secret **keys, size_t *n, char *err,
    size_t errlen)
{
	struct keyfile	 kf = { c->secret_key_file, err, errlen, NULL, 0 };
	char		*text = NULL;
	ssize_t		 len;
	enum idem_err	 er = IDEM_ENOMEM;
	int		 fd;

	if ((fd = kf_open(c, err, errlen)) < 0)
		return IDEM_ECONFIG;
	if ((text = malloc(SECRET_FILE_MAX + 1)) == NULL ||
	    (kf.keys = calloc(SECRET_MAX, sizeof(*kf.keys))) == NULL) {
		snprintf(err, errlen, "%s: out of memory", c->secret_key_file);
		goto out;
	}
	if ((len = kf_read(fd, text, SECRET_FILE_MAX + 1)) < 0) {
		er = kf_err(&kf, 0, 0, "cannot read (or larger than 64K)");
		goto out;
	}
	if ((er = kf_parse(&kf, text, (size_t)len)) != IDEM_OK)
		goto out;
	*keys = kf.keys;
	*n = kf.n;
	kf.keys = NULL;
out:
	if (text != NULL) {
		OPENSSL_cleanse(text, SECRET_FILE_MAX + 1);
		free(text);
	}
	kf_wipe(kf.keys);
	close(fd);
	return er;
}

enum idem_err
cfg_load_secrets(struct cfg *c, char *err, size_t errlen)
{
	struct cfg_secret	*keys = NULL;
	size_t			 n = 0;
	enum idem_err		 er;

	if (c->secret_key_file == NULL)
		return IDEM_OK;
	if ((er = kf_load(c, &keys, &n, err, errlen)) != IDEM_OK)
		return er;
	kf_wipe(c->secrets);
	c->secrets = keys;
	c->nsecrets = n;
	return IDEM_OK;
}

enum idem_err
cfg_check_secrets(const struct cfg *c, char *err, size_t errlen)
{
	struct cfg_secret	*keys = NULL;
	size_t			 n = 0;
	enum idem_err		 er;

	if (c->secret_key_file == NULL)
		return IDEM_OK;
	er = kf_load(c, &keys, &n, err, errlen);
	kf_wipe(keys);
	return er;
}

const struct cfg_secret *
cfg_secret(const struct cfg *c, const char *id)
{
	size_t	 i;

	if (c == NULL || c->nsecrets == 0)
		return NULL;
	if (id == NULL)
		return &c->secrets[c->nsecrets - 1];
	for (i = 0; i < c->nsecrets; i++)
		if (strcmp(c->secrets[i].id, id) == 0)
			return &c->secrets[i];
	return NULL;
}
