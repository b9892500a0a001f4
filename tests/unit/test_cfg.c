/* Unit tests for the configuration parser: values, folding, policy, routing, loading (refusals: test_cfg_errors.c). */
#include <sys/stat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "cfg_texts.h"
#include "check.h"

/* cfg_parse_duration (DUR) or cfg_parse_size (SIZE) of s into *v; the
 * out-parameter starts at 42 so that a failure can show it untouched. */
enum amount { DUR, SIZE };

static int
parse_amount(enum amount kind, const char *s, uint64_t *v)
{
	int64_t	 ms = 42;
	size_t	 sz = 42;
	int	 rc;

	if (kind == DUR) {
		rc = cfg_parse_duration(s, &ms);
		*v = (uint64_t)ms;
	} else {
		rc = cfg_parse_size(s, &sz);
		*v = sz;
	}
	return rc;
}

#define BAD	0, 42	/* refused, out-parameter untouched */

/* Durations, then sizes (powers of 1024); at the end of each, overflow:
 * the largest value of each unit, and one past it. */
static void
test_amounts(void)
{
	static const struct {
		enum amount	 kind;
		const char	*s;
		int		 ok;
		uint64_t	 want;
	} tab[] = {
		{ DUR, "250ms", 1, 250 },
		{ DUR, "10s", 1, 10000 },
		{ DUR, "5m", 1, 300000 },
		{ DUR, "72h", 1, 72ULL * 3600000 },
		{ DUR, "7d", 1, 7ULL * 86400000 },
		{ DUR, "10", 1, 10000 },
		{ DUR, "0", 1, 0 },
		{ DUR, "007s", 1, 7000 },
		{ DUR, "", BAD }, { DUR, NULL, BAD }, { DUR, "-1", BAD },
		{ DUR, "+1", BAD }, { DUR, "1x", BAD }, { DUR, "s", BAD },
		{ DUR, " 1s", BAD }, { DUR, "1 s", BAD }, { DUR, "1s ", BAD },
		{ DUR, "1.5s", BAD }, { DUR, "1S", BAD }, { DUR, "1sm", BAD },
		{ DUR, "1h30m", BAD },
		/* 100 years at most: now + ttl must fit the store's
		 * DATETIME (year 9999) */
		{ DUR, "36500d", 1, 36500ULL * 86400000 },
		{ DUR, "36501d", BAD },
		{ DUR, "3153600000000ms", 1, 3153600000000ULL },
		{ DUR, "3153600000001ms", BAD },
		{ DUR, "3000000d", BAD },
		{ DUR, "9223372036854775807ms", BAD },
		{ DUR, "9223372036854775808ms", BAD },
		{ DUR, "9223372036854776s", BAD },
		{ DUR, "9223372036854776", BAD },
		{ DUR, "106751991167d", BAD },
		{ DUR, "876000h", 1, 876000ULL * 3600000 },
		{ DUR, "876001h", BAD },
		{ DUR, "18446744073709551616ms", BAD },
		{ DUR, "99999999999999999999999999d", BAD },
		{ SIZE, "512", 1, 512 },
		{ SIZE, "64K", 1, 65536 },
		{ SIZE, "1M", 1, 1048576 },
		{ SIZE, "2G", 1, 2147483648ULL },
		{ SIZE, "0", 1, 0 },
		{ SIZE, "1k", 1, 1024 },
		{ SIZE, "", BAD }, { SIZE, NULL, BAD }, { SIZE, "-1", BAD },
		{ SIZE, "1T", BAD }, { SIZE, "1KB", BAD }, { SIZE, "K", BAD },
		{ SIZE, "1 K", BAD }, { SIZE, "1.5M", BAD },
		{ SIZE, "18446744073709551615", 1, SIZE_MAX },
		{ SIZE, "18446744073709551616", BAD },
		{ SIZE, "18014398509481983K", 1, 18446744073709550592ULL },
		{ SIZE, "18014398509481984K", BAD },
		{ SIZE, "17179869183G", 1, 18446744072635809792ULL },
		{ SIZE, "17179869184G", BAD },
	};
	size_t		 i;
	uint64_t	 v;
	int		 rc;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		rc = parse_amount(tab[i].kind, tab[i].s, &v);
		CHECK((rc == 0) == tab[i].ok && v == tab[i].want);
		if ((rc == 0) != tab[i].ok || v != tab[i].want)
			printf("# %s '%s'\n", tab[i].kind == DUR ? "duration" :
			    "size", tab[i].s != NULL ? tab[i].s : "(null)");
	}
}

#undef BAD

static void
test_defaults(void)
{
	struct cfg		*c = parse(RT);
	const struct route	*r;

	CHECK(c != NULL);
	if (c == NULL)
		return;
	CHECK(strcmp(c->path, "t.conf") == 0);
	CHECK(strcmp(c->listen, "unix:/run/idemgate/idemgate.sock") == 0);
	CHECK(c->socket_owner == NULL);
	CHECK(c->socket_mode == 0660);
	CHECK(c->threads == 32);
	CHECK(c->workers == 2);
	CHECK(c->log_syslog == 0);
	CHECK(c->mysql_defaults_file == NULL);
	CHECK(strcmp(c->mysql_group, "idemgate") == 0);
	CHECK(c->host_name != NULL && c->host_name[0] != '\0');
	CHECK(c->max_params == 64 * 1024);
	CHECK(c->max_pending_body == 64 * 1024 * 1024);
	CHECK(c->counters_flush_ms == 5000);
	CHECK(c->replay_cache == 8 * 1024 * 1024);
	CHECK(c->cleanup_batch == 1000);
	CHECK(c->cleanup_sleep_ms == 0);
	CHECK(c->cleanup_max_ms == 0);
	CHECK(c->stale_after_ms == 3600000);
	CHECK(c->counters_retention_ms == 7LL * 86400000);
	CHECK(c->runs_retention_ms == 30LL * 86400000);
	CHECK(c->refresh_ms == 2000);
	CHECK(c->cleanup_warn_ms == 2 * 3600000);
	CHECK(c->nroutes == 1);
	r = &c->routes[0];
	CHECK(strcmp(r->prefix, "/x") == 0 && r->line == 1);
	CHECK(r->handler == HANDLER_CGI &&
	    strcmp(r->program, "/bin/true") == 0);
	CHECK(r->script_root == NULL && r->upstream == NULL);
	CHECK(r->timeout_ms == 30000);
	CHECK(r->idempotency == 1);
	CHECK(strcmp(r->key_header, "Idempotency-Key") == 0);
	CHECK(r->nmethods == 2 && strcmp(r->methods[0], "POST") == 0 &&
	    strcmp(r->methods[1], "PATCH") == 0);
	CHECK(r->require_key == 0);
	CHECK(r->scope == SCOPE_NONE && r->scope_header == NULL);
	CHECK(r->ttl_ms == 86400000);
	CHECK(r->wait_ms == 10000);
	CHECK(r->lease_ms == 60000);
	CHECK(r->store_5xx == 0);
	CHECK(r->max_body == 1048576);
	CHECK(r->max_response == 8 * 1048576);
	CHECK(r->on_store_error == STORE_ERR_REJECT);
	CHECK(cfg_check_gateway(c, err, sizeof(err)) == 0);
	cfg_free(c);

	/* No routes: fine for idemctl and idemtop, not for idemgate. */
	c = parse("[gateway]\nmysql_group = g\n");
	CHECK(c != NULL && c->nroutes == 0);
	if (c != NULL) {
		CHECK(cfg_check_gateway(c, err, sizeof(err)) == IDEM_ECONFIG);
		CHECK(strcmp(err, "t.conf: no [route] section: idemgate has "
		    "nothing to serve") == 0);
		cfg_free(c);
	}
	c = parse("");
	CHECK(c != NULL);
	cfg_free(c);
	cfg_free(NULL);
}

static void
test_values(void)
{
	struct cfg		*c;
	const struct route	*r;

	c = parse(
	    "; leading comment\n"
	    "# another\n"
	    "  [ gateway ]   ; spaced header\n"
	    "listen = tcp:127.0.0.1:9000\n"
	    "socket_owner = root:www-data\n"
	    "socket_mode = 0640\n"
	    "threads = 1024\n"
	    "workers = 64\n"
	    "log = syslog\n"
	    "mysql_defaults_file = \"/etc/idem gate/my.cnf\"  ; quoted\n"
	    "mysql_group = \"a \\\"b\\\" \\\\ c\"\n"
	    "host_name = web-1.example\n"
	    "max_params = 16M\n"
	    "max_pending_body = 1G\n"
	    "counters_flush = 250ms\n"
	    "status_path = /idemgate-status\n"
	    "[cleanup]\n"
	    "max_lag = 10s\n"
	    "replicas = replica1  replica-2\n"
	    "batch = 100000\n"
	    "sleep = 10ms\n"
	    "max_seconds = 0\n"
	    "stale_after = 2h\n"
	    "counters_retention = 14d\n"
	    "runs_retention = 90d\n"
	    "[console]\n"
	    "refresh = 500ms\n"
	    "cleanup_warn_after = 6h\n"
	    "[route /pay]\r\n"
	    "handler = fastcgi:unix:/run/php/fpm.sock\r\n"
	    "\tkey_header=X-Request-Key\n"
	    "methods = post put  PATCH post\n"
	    "require_key = YES\n"
	    "scope = header:X-Api-Key\n"
	    "ttl = 72h ; three days\n"
	    "wait = 0\n"
	    "lease = 5m # five minutes\n"
	    "store_5xx = true\n"
	    "max_body = 1G\n"
	    "max_response = 0\n"
	    "on_store_error = pass\n"
	    "timeout = 2m\n"
	    "idempotency = 1\n"
	    "[route /tcp]\n"
	    "handler = fastcgi:tcp:[::1]:9001\n"
	    "scope = remote_user\n"
	    "[route /s]\n"
	    "handler = script\n"
	    "script_root = /nonexistent/for/cfg_parse\n"
	    "idempotency = off\n"
	    "methods = DELETE\n");
	CHECK(c != NULL);
	if (c == NULL) {
		printf("# %s\n", err);
		return;
	}
	CHECK(strcmp(c->listen, "tcp:127.0.0.1:9000") == 0);
	CHECK(strcmp(c->socket_owner, "root:www-data") == 0);
	CHECK(c->socket_mode == 0640);
	CHECK(c->threads == 1024 && c->workers == 64);
	CHECK(c->log_syslog == 1);
	CHECK(strcmp(c->mysql_defaults_file, "/etc/idem gate/my.cnf") == 0);
	CHECK(strcmp(c->mysql_group, "a \"b\" \\ c") == 0);
	CHECK(strcmp(c->host_name, "web-1.example") == 0);
	CHECK(c->max_params == 16 * 1048576);
	CHECK(c->max_pending_body == 1024 * 1048576);
	CHECK(c->counters_flush_ms == 250);
	CHECK(c->cleanup_batch == 100000 && c->cleanup_sleep_ms == 10);
	CHECK(c->cleanup_max_ms == 0 && c->stale_after_ms == 7200000);
	CHECK(c->counters_retention_ms == 14LL * 86400000);
	CHECK(c->runs_retention_ms == 90LL * 86400000);
	CHECK(c->refresh_ms == 500 && c->cleanup_warn_ms == 6 * 3600000);
	CHECK(strcmp(c->status_path, "/idemgate-status") == 0);
	CHECK(c->cleanup_max_lag_ms == 10000);
	CHECK(strcmp(c->replicas, "replica1  replica-2") == 0);
	CHECK(c->nroutes == 3);
	/* A route's wait, by its name in the counters. */
	CHECK(cfg_route_wait_ms(c, "/pay") == 0);
	CHECK(cfg_route_wait_ms(c, "/tcp") == c->defaults.wait_ms &&
	    c->defaults.wait_ms == 10000);
	CHECK(cfg_route_wait_ms(c, "/pay/1") == 0);
	CHECK(cfg_route_wait_ms(c, "job:x.sh") == 10000);
	r = cfg_route(c, "/pay/1");
	CHECK(r != NULL && strcmp(r->prefix, "/pay") == 0);
	if (r != NULL) {
		CHECK(r->handler == HANDLER_FASTCGI);
		CHECK(strcmp(r->upstream, "unix:/run/php/fpm.sock") == 0);
		CHECK(strcmp(r->key_header, "X-Request-Key") == 0);
		CHECK(r->nmethods == 3 && strcmp(r->methods[0], "POST") == 0 &&
		    strcmp(r->methods[1], "PUT") == 0 &&
		    strcmp(r->methods[2], "PATCH") == 0);
		CHECK(r->require_key == 1);
		CHECK(r->scope == SCOPE_HEADER &&
		    strcmp(r->scope_header, "x-api-key") == 0);
		CHECK(r->ttl_ms == 72LL * 3600000 && r->wait_ms == 0);
		CHECK(r->lease_ms == 300000 && r->store_5xx == 1);
		CHECK(r->max_body == 1UL << 30 && r->max_response == 0);
		CHECK(r->on_store_error == STORE_ERR_PASS);
		CHECK(r->timeout_ms == 120000 && r->idempotency == 1);
	}
	r = cfg_route(c, "/tcp");
	CHECK(r != NULL && strcmp(r->upstream, "tcp:[::1]:9001") == 0 &&
	    r->scope == SCOPE_REMOTE_USER);
	r = cfg_route(c, "/s/a.cgi");
	CHECK(r != NULL && r->handler == HANDLER_SCRIPT && r->idempotency == 0);
	if (r != NULL) {
		/* cfg_parse keeps a root that does not exist as written. */
		CHECK(strcmp(r->script_root,
		    "/nonexistent/for/cfg_parse") == 0);
		CHECK(!cfg_protects(r, "DELETE"));
	}
	cfg_free(c);
}

/* Texts accepted beside those of test_values. */
static const char *const acceptable[] = {
	"[gateway]\nlisten = fd:0\n",
	"[gateway]\nlisten = fd:65535\n",
	"[gateway]\nlisten = unix:/tmp/a.sock\n",
	"[gateway]\nlisten = tcp:localhost:65535\n",
	"[gateway]\nsocket_owner = www-data\n",
	"[gateway]\nsocket_owner = :www-data\n",
	"[gateway]\nsocket_mode = 0600\n",
	"[gateway]\nsocket_mode = 770\n",
	"[gateway]\nsocket_mode = 0\n",
	"[gateway]\nthreads = 1\nworkers = 1\n",
	"[gateway]\nmax_params = 1K\n",
	"[gateway]\nreplay_cache = 0\n",
	"[gateway]\nreplay_cache = 64K\n",
	"[gateway]\nreplay_cache = 1G\n",
	"[cleanup]\nbatch = 1\n",
	"[idempotency]\nkey_header = a#b\n",
	"[gateway]\nmysql_group = \"a;b\" ; c\n",
	"[gateway]\nmysql_group = a;b\n",
	"[gateway]\nmysql_group = a\n\n\n",
	"[gateway]\nmysql_group = a",	/* no final newline */
	"[idempotency]\nmax_body = 1024M\n",
	"[route /a]\nhandler = cgi:/a\n[route /a/]\nhandler = cgi:/b\n",
	"[idempotency]\nttl = 3650d\n",
	"[idempotency]\nttl = 315360000000ms\n",
};

static void
test_accepted(void)
{
	struct cfg	*c;
	size_t		 i;

	for (i = 0; i < sizeof(acceptable) / sizeof(acceptable[0]); i++)
		CHECK(accepted(acceptable[i]));
	c = parse("[idempotency]\nmethods = "
	    "A B C D E F G H I J K L M N O P\n" RT);
	CHECK(c != NULL && c->routes[0].nmethods == CFG_MAX_METHODS);
	cfg_free(c);
	c = parse("[gateway]\nmysql_group = a;b\n");
	CHECK(c != NULL && strcmp(c->mysql_group, "a;b") == 0);
	cfg_free(c);
	/* A UTF-8 byte-order mark before the first section is skipped;
	 * elsewhere it is text. */
	c = parse("\xEF\xBB\xBF[gateway]\nmysql_group = bom\n");
	CHECK(c != NULL && strcmp(c->mysql_group, "bom") == 0);
	cfg_free(c);
	CHECK(!accepted("[gateway]\n\xEF\xBB\xBFmysql_group = bom\n"));
}

/* Parses text, which has routes /a and /b, and finds them; NULL (with a
 * failed CHECK) if the text is refused or a route is missing. */
static struct cfg *
parse_ab(const char *text, const struct route **a, const struct route **b)
{
	struct cfg	*c = parse(text);

	CHECK(c != NULL);
	if (c == NULL)
		return NULL;
	*a = cfg_route(c, "/a");
	*b = cfg_route(c, "/b");
	CHECK(*a != NULL && *b != NULL);
	if (*a == NULL || *b == NULL) {
		cfg_free(c);
		return NULL;
	}
	return c;
}

/* max_response over what a replay can read back (64M): taken as 64M,
 * and -t's warnings say so; up to it, as given. */
static void
test_max_response_cut(void)
{
	const struct route	*a, *b;
	struct cfg		*c;
	char			*out = NULL;
	size_t			 len = 0;
	FILE			*f;

	c = parse_ab("[route /a]\nhandler = cgi:/bin/true\nmax_response = 100M\n"
	    "[route /b]\nhandler = cgi:/bin/true\nmax_response = 64M\n", &a, &b);
	if (c == NULL)
		return;
	CHECK(a->max_response == (size_t)CFG_MAX_RESPONSE_MAX &&
	    a->max_response_cut);
	CHECK(b->max_response == (size_t)CFG_MAX_RESPONSE_MAX &&
	    !b->max_response_cut);
	if ((f = open_memstream(&out, &len)) != NULL) {
		(void)cfg_warnings(c, f);
		fclose(f);
		CHECK(out != NULL && strstr(out, "route /a: max_response above "
		    "64M taken as 64M") != NULL && strstr(out, "route /b:") ==
		    NULL);
		free(out);
	}
	cfg_free(c);
}

/* [idempotency] applies to routes that come before it as well as after. */
static void
test_fold(void)
{
	struct cfg		*c;
	const struct route	*a, *b;

	c = parse_ab("[route /a]\nhandler = cgi:/a\nttl = 1h\n"
	    "scope = header:K\n"
	    "[idempotency]\nttl = 2h\nmethods = PUT\nscope = header:Other\n"
	    "timeout = 3s\nrequire_key = on\n"
	    "[route /b]\nhandler = cgi:/b\nmethods = POST\nrequire_key = 0\n",
	    &a, &b);
	if (c == NULL)
		return;
	CHECK(a->ttl_ms == 3600000 && b->ttl_ms == 7200000);
	CHECK(a->nmethods == 1 && strcmp(a->methods[0], "PUT") == 0);
	CHECK(b->nmethods == 1 && strcmp(b->methods[0], "POST") == 0);
	CHECK(strcmp(a->scope_header, "k") == 0);
	CHECK(b->scope == SCOPE_HEADER &&
	    strcmp(b->scope_header, "other") == 0);
	CHECK(a->timeout_ms == 3000 && b->timeout_ms == 3000);
	CHECK(a->require_key == 1 && b->require_key == 0);
	/* Folded strings are copies, not shared. */
	CHECK(a->methods[0] != b->methods[0]);
	cfg_free(c);
}

/* The request policy: values and folding from [idempotency]. */
static void
test_policy_fold(void)
{
	struct cfg		*c;
	const struct route	*a, *b;

	c = parse_ab("[idempotency]\nrelease_statuses = 429, 408 5xx\n"
	    "key_format = /^[a-z]{3}$/\nfingerprint = canonical\n"
	    "fingerprint_headers = Api-Version X-Tenant\n"
	    "new_keys_per_minute = 5\nkeys_per_route = yes\n"
	    "[route /a]\nhandler = cgi:/a\n"
	    "[route /b]\nhandler = cgi:/b\nrelease_statuses =\n"
	    "key_format = uuid\nfingerprint = exact\nstore_5xx = yes\n"
	    "fingerprint_headers = Other\n"
	    "[gateway]\nproblem_base_url = https://d.example/e/\n", &a, &b);
	if (c == NULL)
		return;
	CHECK(cfg_releases(a, 429) && cfg_releases(a, 408) &&
	    cfg_releases(a, 500) && cfg_releases(a, 599));
	CHECK(!cfg_releases(a, 400) && !cfg_releases(a, 200) &&
	    !cfg_releases(a, 600) && !cfg_releases(a, -1));
	CHECK(!cfg_releases(b, 429) && !cfg_releases(b, 503));
	CHECK(a->fingerprint == FPMODE_CANONICAL &&
	    b->fingerprint == FPMODE_EXACT);
	CHECK(a->nfp_headers == 2 &&
	    strcmp(a->fp_headers[0], "api-version") == 0 &&
	    strcmp(a->fp_headers[1], "x-tenant") == 0);
	CHECK(b->nfp_headers == 1 && strcmp(b->fp_headers[0], "other") == 0);
	CHECK(a->new_keys_per_minute == 5 && a->keys_per_route == 1);
	CHECK(cfg_key_format_ok(a, "abc", 3) &&
	    !cfg_key_format_ok(a, "abcd", 4) &&
	    !cfg_key_format_ok(a, "ABC", 3));
	CHECK(cfg_key_format_ok(b,
	    "6F1C2A4E-9b7d-4c3a-8e2f-1a2b3c4d5e6f", 36));
	CHECK(!cfg_key_format_ok(b,
	    "6f1c2a4e-9b7d-4c3a-8e2f-1a2b3c4d5e6", 35));
	CHECK(!cfg_key_format_ok(b,
	    "6f1c2a4e+9b7d-4c3a-8e2f-1a2b3c4d5e6f", 36));
	CHECK(c->problem_base_url != NULL &&
	    strcmp(c->problem_base_url, "https://d.example/e/") == 0);
	cfg_free(c);
}


/* Lists of header names: empty items, the limits, the messages. */
static void
test_header_lists(void)
{
	struct cfg		*c;
	const struct route	*r;
	char			 big[256], name[130];

	c = parse(RT "fingerprint_headers = ,A-b,, C_d ,\n"
	    "store_headers_drop = X-A,,\t,\n");
	CHECK(c != NULL);
	if (c != NULL) {
		r = cfg_route(c, "/x");
		CHECK(r != NULL && r->nfp_headers == 2 &&
		    strcmp(r->fp_headers[0], "a-b") == 0 &&
		    strcmp(r->fp_headers[1], "c_d") == 0);
		CHECK(r != NULL && r->nstore_drop == 1 &&
		    strcmp(r->store_drop[0], "X-A") == 0);
		cfg_free(c);
	}
	CHECK(refused(RT "fingerprint_headers = A B.c\n",
	    "t.conf:3:23: bad header name in fingerprint_headers 'B.c'"));
	CHECK(refused(RT "store_headers_drop = A, B(c)\n",
	    "t.conf:3:22: bad header name in store_headers_drop 'B(c)'"));
	/* 16 names are taken, 17 are not. */
	snprintf(big, sizeof(big), "%s%s", RT, "fingerprint_headers = "
	    "a b c d e f g h i j k l m n o p\n");
	CHECK(accepted(big));
	snprintf(big, sizeof(big), "%s%s", RT, "store_headers_drop = "
	    "a b c d e f g h i j k l m n o p q\n");
	CHECK(refused(big, "t.conf:3:22: store_headers_drop: at most 16 "
	    "names of 128 bytes"));
	/* A name of 128 bytes is taken, one of 129 is not. */
	memset(name, 'h', 129);
	name[129] = '\0';
	snprintf(big, sizeof(big), "%sfingerprint_headers = %.128s\n", RT,
	    name);
	CHECK(accepted(big));
	snprintf(big, sizeof(big), "%sfingerprint_headers = %s\n", RT, name);
	CHECK(refused(big, "t.conf:3:23: fingerprint_headers: at most 16 "
	    "names of 128 bytes"));
}

/* The request policy: built-in defaults, errors. */
static void
test_policy(void)
{
	struct cfg		*c;
	const struct route	*a, *b;

	/* defaults: 5xx releases, store_5xx keeps them */
	c = parse(RT "store_5xx = yes\n[route /y]\nhandler = cgi:/y\n");
	CHECK(c != NULL);
	if (c != NULL) {
		a = cfg_route(c, "/y");
		b = cfg_route(c, "/x");
		CHECK(a != NULL && cfg_releases(a, 502) &&
		    !cfg_releases(a, 429));
		CHECK(a != NULL && a->key_format == KEYFMT_ANY &&
		    cfg_key_format_ok(a, "anything", 8));
		CHECK(b != NULL && !cfg_releases(b, 502));
		cfg_free(c);
	}
	CHECK(refused(RT "release_statuses = 4xx 99\n",
	    "t.conf:3:20: bad release_statuses '99' (codes 200..599 or "
	    "classes like 5xx)"));
	CHECK(refused(RT "release_statuses = 6xx\n",
	    "t.conf:3:20: bad release_statuses '6xx' (codes 200..599 or "
	    "classes like 5xx)"));
	CHECK(refused(RT "key_format = ulid\n",
	    "t.conf:3:14: bad key_format 'ulid' (any, uuid or /regex/)"));
	CHECK(!accepted(RT "key_format = /([a-z]/\n"));
	CHECK(strstr(err, "bad key_format regex") != NULL);
	CHECK(refused(RT "fingerprint = loose\n",
	    "t.conf:3:15: bad fingerprint 'loose' (exact or canonical)"));
	CHECK(!accepted(RT "new_keys_per_minute = -1\n"));
	CHECK(!accepted(RT "new_keys_per_minute = 99999999\n"));
	CHECK(!accepted(RT "fingerprint_headers = Api Version(2)\n"));
	CHECK(!accepted("[gateway]\nproblem_base_url = https://x/\"q\n"));
	CHECK(!accepted("[route /x]\nhandler = cgi:/bin/true\n"
	    "problem_base_url = https://x/\n"));
}

static void
test_route(void)
{
	struct cfg	*c;
	static const struct {
		const char	*path;
		const char	*want;	/* prefix or NULL */
	} tab[] = {
		{ "/payments", "/payments" },
		{ "/payments/", "/payments" },
		{ "/payments/42", "/payments" },
		{ "/paymentsX", "/" },
		{ "/payments/refunds", "/payments/refunds" },
		{ "/payments/refunds/7", "/payments/refunds" },
		{ "/payments/refundsX", "/payments" },
		{ "/pay", "/" },
		{ "/api/", "/api/" },
		{ "/api/v1", "/api/" },
		{ "/api", "/" },
		{ "/", "/" },
		{ "/anything/else", "/" },
		{ "", NULL },
		{ "payments", NULL },
		{ "*", NULL },
	};
	size_t			 i;
	const struct route	*r;

	c = parse("[route /]\nhandler = cgi:/root\n"
	    "[route /payments]\nhandler = cgi:/p\n"
	    "[route /api/]\nhandler = cgi:/a\n"
	    "[route /payments/refunds]\nhandler = cgi:/r\n");
	CHECK(c != NULL);
	if (c == NULL)
		return;
	/* Longest first. */
	CHECK(strcmp(c->routes[0].prefix, "/payments/refunds") == 0);
	CHECK(strcmp(c->routes[c->nroutes - 1].prefix, "/") == 0);
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		r = cfg_route(c, tab[i].path);
		if (tab[i].want == NULL)
			CHECK(r == NULL);
		else
			CHECK(r != NULL && strcmp(r->prefix, tab[i].want) == 0);
		if (r == NULL ? tab[i].want != NULL :
		    tab[i].want == NULL || strcmp(r->prefix, tab[i].want) != 0)
			printf("# path '%s'\n", tab[i].path);
	}
	CHECK(cfg_route(c, NULL) == NULL);
	CHECK(cfg_route(NULL, "/") == NULL);
	r = cfg_route(c, "/payments");
	CHECK(cfg_protects(r, "POST"));
	CHECK(cfg_protects(r, "PATCH"));
	CHECK(!cfg_protects(r, "post"));
	CHECK(!cfg_protects(r, "GET"));
	CHECK(!cfg_protects(r, "HEAD"));
	CHECK(!cfg_protects(r, "PUT"));
	CHECK(!cfg_protects(r, "POSTX"));
	CHECK(!cfg_protects(r, ""));
	CHECK(!cfg_protects(r, NULL));
	CHECK(!cfg_protects(NULL, "POST"));
	cfg_free(c);

	/* Without "/" nothing outside the prefixes matches. */
	c = parse("[route /only]\nhandler = cgi:/o\n");
	CHECK(c != NULL && cfg_route(c, "/other") == NULL &&
	    cfg_route(c, "/only/x") != NULL);
	cfg_free(c);
}

/* The status page may not take a route's own path: status_path equal to
 * a prefix, or a prefix and "/" that the route also serves.  Below a
 * prefix it takes one path, as php-fpm's pm.status_path does. */
static void
test_status_shadow(void)
{
	static const struct {
		const char	*status;
		const char	*hides;	/* the route refused for, or NULL */
	} tab[] = {
		{ "/payments", "/payments" },
		{ "/payments/", "/payments" },
		{ "/payments/refunds/", "/payments/refunds" },
		{ "/api/", "/api/" },
		{ "/", "/" },
		{ "/api", NULL },		/* /api/ never serves /api */
		{ "/payments//", NULL },
		{ "/paymentsX", NULL },
		{ "/payments/status", NULL },
		{ "/idemgate-status", NULL },
	};
	char		 text[512], want[256];
	struct cfg	*c;
	size_t		 i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		snprintf(text, sizeof(text), "[gateway]\nstatus_path = %s\n"
		    "[route /]\nhandler = cgi:/root\n"
		    "[route /payments]\nhandler = cgi:/p\n"
		    "[route /api/]\nhandler = cgi:/a\n"
		    "[route /payments/refunds]\nhandler = cgi:/r\n",
		    tab[i].status);
		if ((c = parse(text)) == NULL) {
			CHECK(c != NULL);
			continue;
		}
		err[0] = '\0';
		if (tab[i].hides == NULL) {
			CHECK(cfg_check_gateway(c, err, sizeof(err)) ==
			    IDEM_OK);
		} else {
			snprintf(want, sizeof(want), "t.conf:2:15: status_path "
			    "%s hides [route %s] ", tab[i].status,
			    tab[i].hides);
			CHECK(cfg_check_gateway(c, err, sizeof(err)) ==
			    IDEM_ECONFIG);
			CHECK(strncmp(err, want, strlen(want)) == 0);
		}
		cfg_free(c);
	}
	c = parse("[gateway]\nstatus_path = /s\n[route /s]\nhandler = "
	    "cgi:/s\n");
	CHECK(c != NULL && cfg_check_gateway(c, err, sizeof(err)) ==
	    IDEM_ECONFIG);
	CHECK(strcmp(err, "t.conf:2:15: status_path /s hides [route /s] "
	    "(line 3): its requests would get the status page; choose a "
	    "path no route names, such as /idemgate-status") == 0);
	cfg_free(c);
}

static void
test_load(void)
{
	char		 dir[] = "/tmp/test_cfg.XXXXXX", path[256], sub[256];
	struct cfg	*c = NULL;
	FILE		*f;
	enum idem_err	 er;

	if (mkdtemp(dir) == NULL) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/a.conf", dir);
	snprintf(sub, sizeof(sub), "%s/cgi", dir);
	CHECK(mkdir(sub, 0755) == 0);

	er = cfg_load("/nonexistent/idemgate.conf", &c, err, sizeof(err));
	CHECK(er == IDEM_ESYS && c == NULL);
	CHECK(strcmp(err, "/nonexistent/idemgate.conf: No such file or "
	    "directory") == 0);
	er = cfg_load(dir, &c, err, sizeof(err));
	CHECK(er == IDEM_ECONFIG && c == NULL);

	/* script_root is resolved and must be a directory. */
	f = fopen(path, "w");
	if (f != NULL) {
		fprintf(f, "[route /]\nhandler = script\n"
		    "script_root = %s/./cgi/\n", dir);
		fclose(f);
	}
	er = cfg_load(path, &c, err, sizeof(err));
	CHECK(er == IDEM_OK && c != NULL);
	if (c != NULL) {
		CHECK(strcmp(c->path, path) == 0);
		CHECK(strcmp(c->routes[0].script_root, sub) == 0);
		cfg_free(c);
		c = NULL;
	}
	f = fopen(path, "w");
	if (f != NULL) {
		fprintf(f, "[route /]\nhandler = script\nscript_root = %s/no\n",
		    dir);
		fclose(f);
	}
	er = cfg_load(path, &c, err, sizeof(err));
	CHECK(er == IDEM_ECONFIG && c == NULL);
	CHECK(strstr(err, ":3:15: script_root '") != NULL &&
	    strstr(err, "No such file or directory") != NULL);
	f = fopen(path, "w");
	if (f != NULL) {
		fprintf(f, "[route /]\nhandler = script\nscript_root = %s\n",
		    path);
		fclose(f);
	}
	er = cfg_load(path, &c, err, sizeof(err));
	CHECK(er == IDEM_ECONFIG && c == NULL);
	CHECK(strstr(err, "is not a directory") != NULL);
	/* The same text through cfg_parse does not look at the disk. */
	{
		char text[512];

		snprintf(text, sizeof(text), "[route /]\nhandler = script\n"
		    "script_root = %s/no\n", dir);
		c = parse(text);
		CHECK(c != NULL);
		cfg_free(c);
		c = NULL;
	}
	/* Errors name the file as given. */
	f = fopen(path, "w");
	if (f != NULL) {
		fputs("[gateway]\nthreads = many\n", f);
		fclose(f);
	}
	er = cfg_load(path, &c, err, sizeof(err));
	CHECK(er == IDEM_ECONFIG && strncmp(err, path, strlen(path)) == 0 &&
	    strcmp(err + strlen(path),
	    ":2:11: bad number 'many' for threads (1..1024)") == 0);

	/* The shipped example loads and is routable by idemgate. */
	er = cfg_load("etc/idemgate.conf", &c, err, sizeof(err));
	if (er == IDEM_OK) {
		CHECK(cfg_check_gateway(c, err, sizeof(err)) == 0);
		cfg_free(c);
		c = NULL;
	} else if (access("etc/idemgate.conf", R_OK) == 0) {
		/* script_root of the example may be missing on this host. */
		CHECK(strstr(err, "script_root") != NULL);
		printf("# etc/idemgate.conf: %s\n", err);
	}

	unlink(path);
	rmdir(sub);
	rmdir(dir);
}

/* Writes text to dir/name; the path into out. */
static void
put_file(const char *dir, const char *name, const char *text, char *out,
    size_t len)
{
	FILE	*f;

	snprintf(out, len, "%s/%s", dir, name);
	if ((f = fopen(out, "w")) == NULL) {
		CHECK(!"fopen");
		return;
	}
	fputs(text, f);
	fclose(f);
}

/* Option-file groups as the client library finds them, includes too. */
static void
test_option_groups(void)
{
	char	 dir[] = "/tmp/test_cfg.XXXXXX", d2[300], main_cnf[300];
	char	 inc[300], incdir[300], other[300], text[1024];
	char	 v[64], vals[300];

	if (mkdtemp(dir) == NULL) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(d2, sizeof(d2), "%s/conf.d", dir);
	CHECK(mkdir(d2, 0755) == 0);
	put_file(dir, "inc.cnf", "[idem_cleanup]\nuser = c\n", inc,
	    sizeof(inc));
	put_file(d2, "console.cnf", "  [idem_console]  \r\n", incdir,
	    sizeof(incdir));
	put_file(d2, "skipped.txt", "[idem_skipped]\n", other,
	    sizeof(other));
	snprintf(text, sizeof(text), "# [commented]\n[idemgate]\n"
	    "socket = /s\n[idem_migrate]\n!include %s\n!includedir %s\n"
	    "!include %s/main.cnf\n", inc, d2, dir);
	put_file(dir, "main.cnf", text, main_cnf, sizeof(main_cnf));

	CHECK(cfg_option_file_has_group(main_cnf, "idemgate") == 1);
	CHECK(cfg_option_file_has_group(main_cnf, "idem_migrate") == 1);
	CHECK(cfg_option_file_has_group(main_cnf, "idem_cleanup") == 1);
	CHECK(cfg_option_file_has_group(main_cnf, "idem_console") == 1);
	/* Only *.cnf files of an !includedir; comments; prefixes; loops. */
	CHECK(cfg_option_file_has_group(main_cnf, "idem_skipped") == 0);
	CHECK(cfg_option_file_has_group(main_cnf, "commented") == 0);
	CHECK(cfg_option_file_has_group(main_cnf, "idem") == 0);
	CHECK(cfg_option_file_has_group(main_cnf, "idemgate2") == 0);
	CHECK(cfg_option_file_has_group(main_cnf, "nowhere") == 0);
	CHECK(cfg_option_file_has_group("/nonexistent.cnf", "idemgate") == 0);
	CHECK(cfg_option_file_has_group(NULL, "idemgate") == 0);

	/* Values as the client library reads them: from an included file,
	 * from [client] when the group has none, the last one winning,
	 * quotes and escapes taken, '#' no comment. */
	CHECK(cfg_option_file_value(main_cnf, "idem_cleanup", "user", v,
	    sizeof(v)) == 1 && strcmp(v, "c") == 0);
	CHECK(cfg_option_file_value(main_cnf, "idemgate", "user", v,
	    sizeof(v)) == 0);
	CHECK(cfg_option_file_value(main_cnf, "idemgate", "socket", v,
	    sizeof(v)) == 1 && strcmp(v, "/s") == 0);
	put_file(dir, "vals.cnf", "[client]\nuser = cl\npassword = top\n"
	    "[idemgate]\nuser=gw\t \npassword = \"a'b\\\\c\\sd\\x\" # x\n"
	    "database = 'db'\n[other]\nuser = no\n[client]\nuser = last\n",
	    vals, sizeof(vals));
	CHECK(cfg_option_file_value(vals, "idemgate", "user", v,
	    sizeof(v)) == 1 && strcmp(v, "last") == 0);
	CHECK(cfg_option_file_value(vals, "idemgate", "password", v,
	    sizeof(v)) == 1 && strcmp(v, "a'b\\c d\\x\" # x") == 0);
	CHECK(cfg_option_file_value(vals, "idemgate", "database", v,
	    sizeof(v)) == 1 && strcmp(v, "db") == 0);
	CHECK(cfg_option_file_value(vals, "idem_console", "password", v,
	    sizeof(v)) == 1 && strcmp(v, "top") == 0);
	CHECK(cfg_option_file_value(vals, "idemgate", "host", v,
	    sizeof(v)) == 0);
	CHECK(cfg_option_file_value(vals, "idem_console", "password", v,
	    3) == -1);
	unlink(vals);

	unlink(inc);
	unlink(incdir);
	unlink(other);
	unlink(main_cnf);
	rmdir(d2);
	rmdir(dir);
}

int
main(void)
{
	test_amounts();
	test_defaults();
	test_values();
	test_accepted();
	test_fold();
	test_max_response_cut();
	test_policy_fold();
	test_policy();
	test_header_lists();
	test_route();
	test_status_shadow();
	test_load();
	test_option_groups();
	return CHECK_DONE();
}
