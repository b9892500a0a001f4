/* idemctl show and forget: one key, looked up by (scope, key). */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "idemctl_forget.h"
#include "idemctl_key.h"
#include "store_admin.h"
#include "store_hkey.h"

#define SCOPE_HELP							\
"  -s, --scope S      the key's scope, as the route configures it:\n"	\
"                       none                    (default)\n"		\
"                       remote_user:NAME        scope = remote_user\n"	\
"                       header:HEADER-NAME:VALUE  scope = header:NAME\n" \
"                       job, job:S              idemctl run's keys (--scope S)\n" \
"                     (the header name is case-blind; the value is hashed\n" \
"                     exactly as the gateway hashes it)\n"

const char ctl_show_usage[] =
"usage: idemctl [-c FILE] show KEY [--scope S] [--body]\n"
"\n"
"Shows one key: state (in-progress, completed, tombstone, expired), route,\n"
"method, fingerprint, times (UTC), owner, waiters, response status and size.\n"
"KEY is given as in the Idempotency-Key header (a token or a quoted string).\n"
"Control characters in keys and routes are printed escaped.  A sealed\n"
"answer is opened with secret_key_file when it holds the answer's key id;\n"
"otherwise show says \"encrypted, key ID\" and --body exits 2.\n"
"\n"
SCOPE_HELP
"  -b, --body         write only the stored response body, raw, to stdout\n"
"  -c, --config FILE  config file (default " CTL_DEFAULT_CONFIG ")\n"
"\n"
"Exit: 0 ok, 1 usage, 2 config (or --body of an answer the key file\n"
"      cannot open), 3 database, 6 schema missing or old, 7 no such key\n"
"      (or --body of a key with no stored answer), 8 --body of a key in\n"
"      progress.\n";

const char ctl_forget_usage[] =
"usage: idemctl [-c FILE] forget KEY [--scope S] [--force]\n"
"       idemctl [-c FILE] forget --route PREFIX [--status N|Nxx] [--since D]\n"
"                         [--dry-run] [--yes] [--force]\n"
"\n"
"Deletes a completed or tombstoned key (or one whose owner is gone and\n"
"whose run deadline passed) so the next request with it runs the handler\n"
"again.  Refuses a key still in progress unless --force, even past its\n"
"ttl (its handler may still be running: a retry could then run it twice).\n"
"Returns once no gateway can replay a forgotten answer from memory.\n"
"\n"
"With --route, every key of one route by the same rule (say, the 404s\n"
"an upstream gave during a misconfiguration): prints the count, then asks\n"
"on a terminal unless --yes; with standard input not a terminal and no\n"
"--yes it forgets nothing and exits 1.  Deletes in batches of 500.\n"
"\n"
SCOPE_HELP
"  -f, --force        delete even an in-progress key\n"
"  -r, --route PREFIX the keys of this route: its [route PREFIX] exactly, as\n"
"                     show prints it (job:NAME for idemctl run's keys)\n"
"      --status N     only keys whose stored answer has this status (404)\n"
"                     or class (4xx)\n"
"      --since D      only keys created within D (10m, 2h, 1d); default:\n"
"                     any age\n"
"  -n, --dry-run      print the count, forget nothing\n"
"  -y, --yes          do not ask\n"
"  -c, --config FILE  config file (default " CTL_DEFAULT_CONFIG ")\n"
"\n"
"Exit: 0 forgotten (or nothing to forget), 1 usage or not confirmed,\n"
"      2 config, 3 database, 6 schema missing or old, 7 no such key,\n"
"      8 key in progress (no --force).\n";

struct key_args {
	const char	*scope_arg;
	unsigned char	 scope[FP_LEN];
	char		 key[FP_KEY_MAX + 1];
	size_t		 keylen;
	int		 flag;		/* --body or --force */
	struct forget_route_args r;	/* forget --route */
};

/* forget --route's operands: none (KEY names one key, --route many), a
 * route of 1 to 255 bytes, no --scope. */
static int
route_opts(const char *cmd, const struct key_args *a, const char *operand)
{
	size_t	 len = strlen(a->r.route);

	if (operand != NULL)
		return ctl_usage_err(cmd, "give KEY or --route, not both");
	if (a->scope_arg != NULL)
		return ctl_usage_err(cmd, "--scope goes with KEY, not --route");
	if (len == 0 || len > 255)
		return ctl_usage_err(cmd, "--route wants a route prefix of 1 "
		    "to 255 bytes (/pay.php, or job:NAME)");
	return CTL_OK;
}

/* show's and forget's options: each refuses the other's flag. */
static int
key_opts(struct ctl *c, const char *cmd, const char *usage, int argc,
    char **argv, struct key_args *a)
{
	int			 is_show = strcmp(cmd, "show") == 0;
	const struct ctl_opt	 opts[] = {
		{ .name = "scope", .letter = 's', .kind = CTL_OPT_STRING,
		  .dst = &a->scope_arg },
		{ .name = "body", .letter = 'b', .kind = CTL_OPT_FLAG,
		  .dst = &a->flag, .elsewhere = !is_show },
		{ .name = "force", .letter = 'f', .kind = CTL_OPT_FLAG,
		  .dst = &a->flag, .elsewhere = is_show },
		{ .name = "route", .letter = 'r', .kind = CTL_OPT_STRING,
		  .dst = &a->r.route, .elsewhere = is_show },
		{ .name = "status", .kind = CTL_OPT_PARSE, .dst = &a->r,
		  .parse = forget_opt_status, .elsewhere = is_show,
		  .wants = "a status (404) or a class (4xx)" },
		{ .name = "since", .kind = CTL_OPT_PARSE, .dst = &a->r,
		  .parse = forget_opt_since, .elsewhere = is_show,
		  .wants = "a duration (90s, 10m, 2h, 1d)" },
		{ .name = "dry-run", .letter = 'n', .kind = CTL_OPT_FLAG,
		  .dst = &a->r.dry_run, .elsewhere = is_show },
		{ .name = "yes", .letter = 'y', .kind = CTL_OPT_FLAG,
		  .dst = &a->r.yes, .elsewhere = is_show },
		{ NULL },
	};
	const struct ctl_cmdline cl = { .cmd = cmd, .usage = usage,
	    .opts = opts, .operands = 1 };
	int			 rc, argi;

	memset(a, 0, sizeof(*a));
	if ((rc = ctl_opts_parse(c, &cl, argc, argv, &argi)) != CTL_OK)
		return rc;
	if (a->r.route != NULL)
		return route_opts(cmd, a, argi < argc ? argv[argi] : NULL);
	if (a->r.status != NULL || a->r.since != NULL || a->r.dry_run ||
	    a->r.yes)
		return ctl_usage_err(cmd, "--status, --since, --dry-run and "
		    "--yes go with --route");
	if (argi >= argc)
		return ctl_usage_err(cmd, "missing KEY");
	if (ctl_parse_key(argv[argi], a->key, &a->keylen) != 0)
		return ctl_usage_err(cmd, "invalid key (1 to %d visible ASCII "
		    "bytes, or a quoted string)", FP_KEY_MAX);
	if (ctl_parse_scope(a->scope_arg, a->scope) != 0)
		return ctl_usage_err(cmd, "invalid --scope (none, "
		    "remote_user:NAME or header:HEADER-NAME:VALUE)");
	return CTL_OK;
}

/* Prints the scope argument without a header value (often an API key). */
static void
put_scope(FILE *f, const char *s)
{
	const char	*colon;

	if (s == NULL || strcmp(s, "none") == 0) {
		fputs("none", f);
		return;
	}
	if (strncmp(s, "header:", 7) == 0 &&
	    (colon = strchr(s + 7, ':')) != NULL) {
		ctl_put_escaped(f, s, (size_t)(colon - s));
		fputs(" (value hashed)", f);
		return;
	}
	ctl_put_escaped(f, s, strlen(s));
}

/* Prints key k as show does, one field a line. */
static void
show_key(const struct key_args *a, const struct admin_key *k)
{
	char		 t[40], hex[2 * FP_LEN + 1];

	printf("key          ");
	ctl_put_escaped(stdout, a->key, a->keylen);
	printf("\nscope        ");
	put_scope(stdout, a->scope_arg);
	printf("\nstate        %s", admin_key_state_name(k->state));
	/* A takeover waits for the run's deadline too (SPEC 2c). */
	if (k->state == AKEY_IN_PROGRESS && !k->lease_live && k->run_live)
		printf(" (lease passed, run deadline not: its run may still "
		    "be going; retries wait or get 409 until then)");
	else if (k->state == AKEY_IN_PROGRESS && !k->lease_live)
		printf(" (lease passed: owner gone, next request takes over)");
	if (k->state == AKEY_EXPIRED)
		printf(" (was %s)", k->raw_state == 0 ? "in-progress" :
		    k->raw_state == 1 ? "completed" : "tombstone");
	printf("\nroute        ");
	ctl_put_escaped(stdout, k->route, strlen(k->route));
	printf("\nmethod       ");
	ctl_put_escaped(stdout, k->method, strlen(k->method));
	fp_hex(k->fp, FP_LEN, hex);
	printf("\nfingerprint  %s\n", hex);
	ctl_fmt_time(k->created_at, t, sizeof(t));
	printf("created      %s\n", t);
	ctl_fmt_time(k->expires_at, t, sizeof(t));
	printf("expires      %s\n", t);
	ctl_fmt_time(k->lease_until, t, sizeof(t));
	printf("lease until  %s\n", t);
	ctl_fmt_time(k->completed_at, t, sizeof(t));
	printf("completed    %s\n", t);
	printf("owner        ");
	ctl_put_escaped(stdout, k->owner, strlen(k->owner));
	printf("\nwaiters      %llu\n", (unsigned long long)k->waiters);
	if (k->has_resp && k->seal_kid[0] != '\0' && !k->opened)
		printf("response     encrypted, key %s, %llu bytes%s\n",
		    k->seal_kid, (unsigned long long)k->resp_size,
		    k->open_er == IDEM_ESEAL ? " (does not open: "
		    "authentication tag failed)" : "");
	else if (k->state == AKEY_TOMBSTONE)
		printf("response     not kept (status %d, delivered once; "
		    "retries get 410)\n", k->resp_status);
	else if (k->has_resp)
		printf("response     status %d, %llu bytes\n", k->resp_status,
		    (unsigned long long)k->resp_size);
	else
		printf("response     -\n");
}

/*
 * The scopes show looks a.key up under (ctl_scopes).  Without the store's
 * hashing key (no key file, or not the one that wraps it) a keyed scope
 * cannot be computed: the rows stored with the key say it instead, when
 * there is one, so the row still shows ("encrypted, key k1").
 */
static int
show_scopes(struct ctl *c, const struct key_args *a,
    unsigned char out[2][FP_LEN], size_t *n)
{
	enum idem_err	 er;

	if (store_hkey_resolve(c->st, &c->hk) != IDEM_OK) {
		ctl_err("show: %s", store_last_error(c->st));
		return CTL_ESTORE;
	}
	if (hkey_state(&c->hk) != HKEY_REFUSED) {
		ctl_scopes(c, a->scope, out, n);
		return CTL_OK;
	}
	if ((er = store_admin_key_scopes(c->st, a->key, a->keylen, out, 1, n))
	    != IDEM_OK) {
		ctl_err("show failed: %s", store_last_error(c->st));
		return CTL_ESTORE;
	}
	if (*n > 1) {
		ctl_err("show: the key is stored under %zu scopes, which only "
		    "the hashing key tells apart", *n);
		return CTL_ECONFIG;
	}
	return CTL_OK;
}

int
ctl_show(struct ctl *c, int argc, char **argv)
{
	struct key_args	 a;
	struct admin_key k;
	struct buf	 body;
	unsigned char	 scopes[2][FP_LEN];
	size_t		 ns, i;
	enum idem_err	 er;
	int		 rc;

	if ((rc = key_opts(c, "show", ctl_show_usage, argc, argv, &a)) != 0)
		return rc < 0 ? CTL_OK : rc;
	if ((rc = ctl_connect(c)) != CTL_OK ||
	    (rc = ctl_need_schema(c)) != CTL_OK)
		return rc;
	if ((rc = show_scopes(c, &a, scopes, &ns)) != CTL_OK)
		return rc;
	buf_init(&body, (size_t)1 << 30);
	er = IDEM_ENOTFOUND;
	for (i = 0; i < ns && er == IDEM_ENOTFOUND; i++)
		er = store_admin_key_get(c->st, scopes[i], a.key, a.keylen,
		    &k, a.flag ? &body : NULL);
	if (er == IDEM_ENOTFOUND) {
		ctl_err("no such key");
		rc = CTL_ENOKEY;
		goto out;
	}
	if (er != IDEM_OK) {
		ctl_err("show failed: %s", store_last_error(c->st));
		rc = CTL_ESTORE;
		goto out;
	}
	if (a.flag) {
		if (k.has_resp && k.seal_kid[0] != '\0' && !k.opened) {
			ctl_err("the stored answer is encrypted, key %s, %s",
			    k.seal_kid, k.open_er == IDEM_ESEAL ?
			    "and does not open (authentication tag failed)" :
			    "which secret_key_file does not hold");
			rc = CTL_ECONFIG;
		} else if (!k.has_resp || k.raw_state != 1) {
			/* Not an empty body: a script writing it to a file
			 * must not take it for one. */
			ctl_err("key has no stored response body (%s)",
			    admin_key_state_name(k.state));
			rc = k.raw_state == 0 ? CTL_EINPROGRESS : CTL_ENOKEY;
		} else if (body.len > 0 &&
		    fwrite(body.p, 1, body.len, stdout) != body.len) {
			ctl_err("writing the body failed");
			clearerr(stdout);	/* said: once */
			rc = CTL_ESTORE;
		}
		goto out;
	}
	show_key(&a, &k);
	rc = CTL_OK;
out:
	buf_free(&body);
	return rc;
}

int
ctl_forget(struct ctl *c, int argc, char **argv)
{
	struct key_args	 a;
	unsigned char	 scopes[2][FP_LEN];
	size_t		 ns, i;
	enum idem_err	 er;
	int		 rc;

	if ((rc = key_opts(c, "forget", ctl_forget_usage, argc, argv, &a))
	    != 0)
		return rc < 0 ? CTL_OK : rc;
	if (a.r.route != NULL)
		return ctl_forget_route(c, &a.r, a.flag);
	if ((rc = ctl_connect(c)) != CTL_OK ||
	    (rc = ctl_need_schema(c)) != CTL_OK ||
	    (rc = ctl_hkey(c, "forget")) != CTL_OK ||
	    (!a.flag && (rc = ctl_owner_facts(c, "forget")) != CTL_OK))
		return rc;
	ctl_scopes(c, a.scope, scopes, &ns);
	er = IDEM_ENOTFOUND;
	for (i = 0; i < ns && er == IDEM_ENOTFOUND; i++)
		er = store_admin_key_forget(c->st, scopes[i], a.key, a.keylen,
		    a.flag);
	switch (er) {
	case IDEM_OK:
		printf("forgot key ");
		ctl_put_escaped(stdout, a.key, a.keylen);
		putchar('\n');
		return CTL_OK;
	case IDEM_ENOTFOUND:
		ctl_err("no such key");
		return CTL_ENOKEY;
	case IDEM_EBUSY:
		ctl_err("%s; use --force to delete it anyway (its handler may "
		    "still be running)", store_last_error(c->st));
		return CTL_EINPROGRESS;
	default:
		ctl_err("forget failed: %s", store_last_error(c->st));
		return CTL_ESTORE;
	}
}
