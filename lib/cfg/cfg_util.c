/* Config parser's bottom for lib/cfg: errors, blanks, words, copied strings. */
#include <sys/stat.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "cfg_int.h"

enum idem_err
cfg_perr(struct parser *p, enum idem_err er, int line, int col,
    const char *fmt, ...)
{
	va_list	 ap;
	int	 n = 0;

	if (p->err == NULL || p->errlen == 0)
		return er;
	if (line > 0)
		n = snprintf(p->err, p->errlen, "%s:%d:%d: ", p->name, line,
		    col);
	else
		n = snprintf(p->err, p->errlen, "%s: ", p->name);
	if (n < 0 || (size_t)n >= p->errlen)
		return er;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return er;
}

enum idem_err
cfg_bad(struct parser *p, const struct cfg_val *kv, const char *what,
    const char *tail)
{
	return cfg_perr(p, IDEM_ECONFIG, kv->line, kv->col, "bad %s '%.*s'%s",
	    what, CFG_MAX_SHOWN, kv->v, tail);
}

/* 1 if this process is in group gid. */
static int
cfg_in_group(gid_t gid)
{
	gid_t	 groups[256];
	int	 n, i;

	if (getegid() == gid)
		return 1;
	if ((n = getgroups(256, groups)) < 0)
		return 0;
	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

void
cfg_open_error(int e, const char *path, char *out, size_t len)
{
	struct passwd	 pw, *pwp = NULL;
	struct group	 gr, *grp = NULL;
	struct stat	 st;
	char		 pwbuf[1024], grbuf[4096], user[64], group[64];

	if (e != EACCES) {
		snprintf(out, len, "%s", strerror(e));
		return;
	}
	snprintf(user, sizeof(user), "%lu", (unsigned long)geteuid());
	snprintf(group, sizeof(group), "%lu", (unsigned long)getegid());
	if (getpwuid_r(geteuid(), &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 &&
	    pwp != NULL)
		snprintf(user, sizeof(user), "%s", pw.pw_name);
	if (getgrgid_r(getegid(), &gr, grbuf, sizeof(grbuf), &grp) == 0 &&
	    grp != NULL)
		snprintf(group, sizeof(group), "%s", gr.gr_name);
	/* A file its group may read (the service's, say): the fix is to be
	 * in that group, not to give the file away to another. */
	if (stat(path, &st) == 0 && (st.st_mode & S_IRGRP) && st.st_gid != 0 &&
	    !cfg_in_group(st.st_gid) && getgrgid_r(st.st_gid, &gr, grbuf,
	    sizeof(grbuf), &grp) == 0 && grp != NULL) {
		snprintf(out, len, "%s (running as user %s, not in group %s, "
		    "which may read it: adduser %s %s, or use an option file "
		    "of your own)", strerror(e), user, gr.gr_name, user,
		    gr.gr_name);
		return;
	}
	snprintf(out, len, "%s (running as user %s, group %s: "
	    "chgrp %s %s && chmod 0640 %s)", strerror(e), user, group, group,
	    path, path);
}

int
cfg_is_ws(char ch)
{
	return ch == ' ' || ch == '\t';
}

int
cfg_word(const char *list, unsigned i, char *out, size_t cap)
{
	size_t	 n;

	for (;;) {
		list += strspn(list, " \t");
		if ((n = strcspn(list, " \t")) == 0)
			return 0;
		if (i-- == 0)
			break;
		list += n;
	}
	if (n >= cap)
		n = cap - 1;
	memcpy(out, list, n);
	out[n] = '\0';
	return 1;
}

enum idem_err
cfg_set_str(struct parser *p, char **dst, const char *v)
{
	char	*s = strdup(v);

	if (s == NULL)
		return cfg_perr(p, IDEM_ENOMEM, 0, 0, "out of memory");
	free(*dst);
	*dst = s;
	return IDEM_OK;
}
