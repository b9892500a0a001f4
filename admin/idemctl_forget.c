/* idemctl forget --route: every key of one route, by status and age. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "idemctl_forget.h"
#include "log.h"
#include "store_admin.h"

int
ctl_parse_status(const char *s, int *lo, int *hi)
{
	int	 code;

	if (s == NULL || strlen(s) != 3 || s[0] < '2' || s[0] > '5')
		return -1;
	code = (s[0] - '0') * 100;
	if ((s[1] == 'x' || s[1] == 'X') && (s[2] == 'x' || s[2] == 'X')) {
		*lo = code;
		*hi = code + 99;
		return 0;
	}
	if (!isdigit((unsigned char)s[1]) || !isdigit((unsigned char)s[2]))
		return -1;
	*lo = *hi = code + (s[1] - '0') * 10 + (s[2] - '0');
	return 0;
}

int
forget_opt_status(const char *s, void *dst)
{
	struct forget_route_args *a = dst;

	if (ctl_parse_status(s, &a->status_lo, &a->status_hi) != 0)
		return -1;
	a->status = s;
	return 0;
}

int
forget_opt_since(const char *s, void *dst)
{
	struct forget_route_args *a = dst;
	int64_t			 ms;

	if (cfg_parse_duration(s, &ms) != IDEM_OK || ms <= 0)
		return -1;
	a->since_ms = ms;
	a->since = s;
	return 0;
}

/* "N keys of route R[ with status S][ since D]", R escaped. */
static void
describe(FILE *f, const struct forget_route_args *a, uint64_t n)
{
	fprintf(f, "%llu key%s of route ", (unsigned long long)n,
	    n == 1 ? "" : "s");
	ctl_put_escaped(f, a->route, strlen(a->route));
	if (a->status != NULL)
		fprintf(f, " with status %s", a->status);
	if (a->since != NULL)
		fprintf(f, " since %s", a->since);
}

/* describe() into out, for the log line. */
static void
describe_text(const struct forget_route_args *a, uint64_t n, char *out,
    size_t len)
{
	FILE	*f = fmemopen(out, len, "w");

	out[0] = '\0';
	if (f == NULL)
		return;
	describe(f, a, n);
	fclose(f);
	out[len - 1] = '\0';
}

/*
 * Nothing matched: if the config stores requests to this path under
 * another route, says which (keys are stored by their route's prefix,
 * never by the request's path).
 */
static void
route_hint(const struct ctl *c, const char *route)
{
	const struct route	*r;
	size_t			 i;

	for (i = 0; i < c->cfg->nroutes; i++)
		if (strcmp(c->cfg->routes[i].prefix, route) == 0)
			return;
	if ((r = cfg_route(c->cfg, route)) == NULL)
		return;
	fprintf(stderr, "idemctl: forget: %s has no [route ", c->cfgpath);
	ctl_put_escaped(stderr, route, strlen(route));
	fprintf(stderr, "]; its requests are stored under route ");
	ctl_put_escaped(stderr, r->prefix, strlen(r->prefix));
	fputc('\n', stderr);
}

/* Asks on the terminal; 1 if the answer is y or yes. */
static int
confirm(uint64_t n)
{
	char	 line[64];
	size_t	 len;

	fflush(stdout);
	fprintf(stderr, "forget %llu key%s? [y/N] ", (unsigned long long)n,
	    n == 1 ? "" : "s");
	fflush(stderr);
	if (fgets(line, sizeof(line), stdin) == NULL)
		return 0;
	len = strcspn(line, "\r\n");
	line[len] = '\0';
	return strcasecmp(line, "y") == 0 || strcasecmp(line, "yes") == 0;
}

/* Whether the operator agreed (--yes, or y on the terminal); otherwise
 * prints why not.  Returns CTL_OK to go on, or the exit code. */
static int
agreed(const struct forget_route_args *a, uint64_t n)
{
	if (a->yes)
		return CTL_OK;
	if (!isatty(STDIN_FILENO)) {
		ctl_err("forget: standard input is not a terminal: give --yes "
		    "to forget %llu key%s; nothing forgotten",
		    (unsigned long long)n, n == 1 ? "" : "s");
		return CTL_EUSAGE;
	}
	if (!confirm(n)) {
		ctl_err("forget: not confirmed; nothing forgotten");
		return CTL_EUSAGE;
	}
	return CTL_OK;
}

/* Forgets what plan p counted, says so and logs it (syslog). */
static int
forget_planned(struct ctl *c, const struct forget_route_args *a,
    const struct forget_filter *f, const struct forget_plan *p)
{
	char		 what[512];
	uint64_t	 n = 0;
	enum idem_err	 er;

	er = store_admin_route_forget(c->st, f, p, &n);
	describe_text(a, n, what, sizeof(what));
	if (er != IDEM_OK) {
		log_err("forget --route failed after forgetting %s (uid %u): "
		    "%s", what, (unsigned)getuid(), store_last_error(c->st));
		ctl_err("forget failed after forgetting %llu key%s: %s",
		    (unsigned long long)n, n == 1 ? "" : "s",
		    store_last_error(c->st));
		return CTL_ESTORE;
	}
	log_info("forget --route: forgot %s (uid %u)", what,
	    (unsigned)getuid());
	printf("forgot ");
	describe(stdout, a, n);
	putchar('\n');
	return CTL_OK;
}

int
ctl_forget_route(struct ctl *c, const struct forget_route_args *a,
    int force)
{
	struct forget_filter	 f = { .route = a->route,
	    .status_lo = a->status != NULL ? a->status_lo : 0,
	    .status_hi = a->status != NULL ? a->status_hi : 0,
	    .since_ms = a->since_ms, .force = force };
	struct forget_plan	 p;
	int			 rc;

	if ((rc = ctl_connect(c)) != CTL_OK ||
	    (rc = ctl_need_schema(c)) != CTL_OK ||
	    (!force && (rc = ctl_owner_facts(c, "forget")) != CTL_OK))
		return rc;
	if (store_admin_route_count(c->st, &f, &p) != IDEM_OK) {
		ctl_err("forget failed: %s", store_last_error(c->st));
		return CTL_ESTORE;
	}
	printf("forget: ");
	describe(stdout, a, p.n);
	if (p.kept > 0)
		printf("; %llu in progress kept (--force forgets them too)",
		    (unsigned long long)p.kept);
	putchar('\n');
	if (p.n + p.kept == 0)
		route_hint(c, a->route);
	if (p.n == 0 || a->dry_run)
		return CTL_OK;
	if ((rc = agreed(a, p.n)) != CTL_OK)
		return rc;
	/* One syslog line for what changed, whatever the verbosity. */
	log_open("idemctl", 1);
	log_set_level(LOG_LVL_INFO);
	return forget_planned(c, a, &f, &p);
}
