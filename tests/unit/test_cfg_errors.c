/* Unit tests for the configuration parser's refusals: each message whole, with its line:col, and the byte and size limits. */
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cfg_texts.h"
#include "check.h"

/* Texts refused, with the whole message each gets. */
static const struct {
	const char	*text, *want;
} refusals[] = {
	{ "[idempotency]\nmethods = \"POST ; PUT\"\n",
	    "t.conf:2:17: bad method ';'" },
	{ "[gateway]\nfoo = 1\n",
	    "t.conf:2:1: unknown key 'foo' in [gateway]" },
	{ "[gateway]\n  ttl = 1h\n",
	    "t.conf:2:3: unknown key 'ttl' in [gateway]" },
	{ "[idempotency]\nhandler = script\n",
	    "t.conf:2:1: unknown key 'handler' in [idempotency]" },
	{ "[idempotency]\nscript_root = /\n",
	    "t.conf:2:1: unknown key 'script_root' in [idempotency]" },
	{ RT "listen = fd:0\n",
	    "t.conf:3:1: unknown key 'listen' in [route /x]" },
	{ "[cleanup]\nrefresh = 1s\n",
	    "t.conf:2:1: unknown key 'refresh' in [cleanup]" },
	{ "[gateway]\nstatus_path = status\n",
	    "t.conf:2:15: bad status_path 'status' (an absolute path of "
	    "visible ASCII, no '?' or '%')" },
	{ "[gateway]\nstatus_path = /s?json\n",
	    "t.conf:2:15: bad status_path '/s?json' (an absolute path of "
	    "visible ASCII, no '?' or '%')" },
	{ "[cleanup]\nreplicas = a]b\n",
	    "t.conf:2:12: bad replicas 'a]b' (option-file group names, "
	    "space-separated)" },
	{ "[cleanup]\nmax_lag = soon\n",
	    "t.conf:2:11: bad duration 'soon' for max_lag" },
	{ "[console]\nbatch = 1\n",
	    "t.conf:2:1: unknown key 'batch' in [console]" },
	{ "[idempotency]\nttl = 5x\n",
	    "t.conf:2:7: bad duration '5x' for ttl" },
	{ "[idempotency]\nttl =\t-1h\n",
	    "t.conf:2:7: bad duration '-1h' for ttl" },
	{ "[idempotency]\nttl = 0\n",
	    "t.conf:2:7: ttl must be greater than 0" },
	{ "[idempotency]\nlease = 0s\n",
	    "t.conf:2:9: lease must be at least 1s" },
	{ "[idempotency]\nlease = 999ms\n",
	    "t.conf:2:9: lease must be at least 1s" },
	{ RT "timeout = 0\n",
	    "t.conf:3:11: timeout must be greater than 0" },
	{ "[idempotency]\nwait = 1y\n",
	    "t.conf:2:8: bad duration '1y' for wait" },
	{ "[gateway]\ncounters_flush = 0\n",
	    "t.conf:2:18: counters_flush must be greater than 0" },
	{ "[idempotency]\nttl = 315360000001ms\n",
	    "t.conf:2:7: ttl must be at most 3650d" },
	{ "[cleanup]\nmax_seconds = 3651d\n",
	    "t.conf:2:15: max_seconds must be at most 3650d" },
	{ "[cleanup]\nsleep = x\n",
	    "t.conf:2:9: bad duration 'x' for sleep" },
	{ "[console]\nrefresh = 0ms\n",
	    "t.conf:2:11: refresh must be greater than 0" },
	{ "[bogus]\n", "t.conf:1:2: unknown section [bogus]" },
	{ "\n[route]\n",
	    "t.conf:2:1: [route] needs a path prefix: [route /path]" },
	{ "[routes /x]\n", "t.conf:1:2: unknown section [routes /x]" },
	{ "[gateway\n",
	    "t.conf:1:1: missing ']' in section header" },
	{ "[gateway] x\n",
	    "t.conf:1:11: unexpected text after section header" },
	{ "[gateway]\n[gateway]\n",
	    "t.conf:2:1: duplicate section [gateway]" },
	{ "listen = fd:0\n",
	    "t.conf:1:1: key 'listen' outside of any section" },
	{ "[gateway]\nlisten\n",
	    "t.conf:2:1: expected 'key = value'" },
	{ "[gateway]\n = x\n", "t.conf:2:2: missing key before '='" },
	{ "[gateway]\nmy key = x\n",
	    "t.conf:2:3: bad key name (expected 'key = value')" },
	{ "[gateway]\nmysql_group = \"abc\n",
	    "t.conf:2:15: unterminated quoted value" },
	{ "[gateway]\nmysql_group = \"a\\bc\"\n",
	    "t.conf:2:17: bad escape in quoted value (only \\\" and \\\\)" },
	{ "[gateway]\nmysql_group = \"a\" b\n",
	    "t.conf:2:19: unexpected text after quoted value" },
	{ "[gateway]\nmysql_group = \n",
	    "t.conf:2:15: missing value for mysql_group" },
	{ "[gateway]\nmysql_group =   ; comment\n",
	    "t.conf:2:17: missing value for mysql_group" },
	{ "[gateway]\nmysql_group = \"\"\n",
	    "t.conf:2:15: missing value for mysql_group" },
	{ "[gateway]\nthreads = 2\nthreads = 3\n",
	    "t.conf:3:1: duplicate key 'threads' in [gateway]" },
	{ RT "ttl = 1h\nttl = 2h\n",
	    "t.conf:4:1: duplicate key 'ttl' in [route /x]" },

	/* Routes. */
	{ "[route x]\n",
	    "t.conf:1:8: route prefix 'x' must start with '/'" },
	{ "[route /a b]\n",
	    "t.conf:1:10: bad character in route prefix" },
	{ "[route /a?q]\n",
	    "t.conf:1:10: bad character in route prefix" },
	{ RT "\n[route /x]\n",
	    "t.conf:4:8: duplicate [route /x] (first on line 1)" },
	/* Requests are matched normalised: another spelling matches none,
	 * and a second spelling of one prefix is a duplicate. */
	{ "[route //pay]\n",
	    "t.conf:1:8: route prefix '//pay' never matches: requests are "
	    "matched as normalised paths; write [route /pay]" },
	{ "[route /x/../sub]\n",
	    "t.conf:1:8: route prefix '/x/../sub' never matches: requests "
	    "are matched as normalised paths; write [route /sub]" },
	{ RT "\n[route /%78]\n",
	    "t.conf:4:8: route prefix '/%78' never matches: requests are "
	    "matched as normalised paths; write [route /x]" },
	{ "[route /a/./b]\n",
	    "t.conf:1:8: route prefix '/a/./b' never matches: requests are "
	    "matched as normalised paths; write [route /a/b]" },
	{ "[route /a%2fb]\n",
	    "t.conf:1:8: route prefix '/a%2fb' never matches: requests are "
	    "matched as normalised paths; write [route /a%2Fb]" },
	{ "[route /x]\nttl = 1h\n",
	    "t.conf:1:1: [route /x] has no handler" },
	{ "[gateway]\n[route /x]\nhandler = script\n",
	    "t.conf:2:1: [route /x]: handler = script needs script_root" },
	{ RT "script_root = /tmp\n",
	    "t.conf:3:15: script_root applies only to handler = script" },
	{ "[route /x]\nhandler = script\nscript_root = tmp\n",
	    "t.conf:3:15: script_root must be an absolute path" },
	{ "[route /x]\nhandler = cgi:bin/true\n",
	    "t.conf:2:11: bad handler 'cgi:bin/true' (cgi:/path, script, "
	    "fastcgi:unix:/path or fastcgi:tcp:host:port)" },
	{ "[route /x]\nhandler = fastcgi:tcp:host\n",
	    "t.conf:2:11: bad handler 'fastcgi:tcp:host' (cgi:/path, script, "
	    "fastcgi:unix:/path or fastcgi:tcp:host:port)" },
	{ "[route /x]\nhandler = fcgi\n",
	    "t.conf:2:11: bad handler 'fcgi' (cgi:/path, script, "
	    "fastcgi:unix:/path or fastcgi:tcp:host:port)" },

	/* [gateway] values. */
#define BADLISTEN(v) { "[gateway]\nlisten = " v "\n", \
	"t.conf:2:10: bad listen address '" v "' (unix:/path, tcp:host:port or fd:N)" }
	BADLISTEN("/run/x.sock"),
	BADLISTEN("unix:rel.sock"),
	BADLISTEN("tcp:127.0.0.1"),
	BADLISTEN("tcp::9000"),
	BADLISTEN("tcp:127.0.0.1:0"),
	BADLISTEN("tcp:127.0.0.1:65536"),
	BADLISTEN("tcp:127.0.0.1:90x"),
	BADLISTEN("tcp:::1:9000"),
	BADLISTEN("fd:"),
	BADLISTEN("fd:-1"),
	BADLISTEN("fd:65536"),
	BADLISTEN("udp:1.2.3.4:5"),
	{ "[gateway]\nsocket_owner = a:b:c\n",
	    "t.conf:2:16: bad socket_owner 'a:b:c' (user:group, user or :group)" },
	{ "[gateway]\nsocket_owner = :\n",
	    "t.conf:2:16: bad socket_owner ':' (user:group, user or :group)" },
	{ "[gateway]\nsocket_owner = \"a b\"\n",
	    "t.conf:2:17: bad socket_owner 'a b' (user:group, user or :group)" },
	{ "[gateway]\nsocket_mode = 0666\n",
	    "t.conf:2:15: socket_mode 0666: socket must not be world-accessible" },
	{ "[gateway]\nsocket_mode = 0661\n",
	    "t.conf:2:15: socket_mode 0661: socket must not be world-accessible" },
	{ "[gateway]\nsocket_mode = 0664\n",
	    "t.conf:2:15: socket_mode 0664: socket must not be world-accessible" },
	{ "[gateway]\nsocket_mode = 0680\n",
	    "t.conf:2:15: bad octal mode '0680' for socket_mode" },
	{ "[gateway]\nsocket_mode = 01660\n",
	    "t.conf:2:15: bad octal mode '01660' for socket_mode" },
	{ "[gateway]\nsocket_mode = 000000660\n",
	    "t.conf:2:15: bad octal mode '000000660' for socket_mode" },
	{ "[gateway]\nthreads = 0\n",
	    "t.conf:2:11: bad number '0' for threads (1..1024)" },
	{ "[gateway]\nthreads = 1025\n",
	    "t.conf:2:11: bad number '1025' for threads (1..1024)" },
	{ "[gateway]\nthreads = 99999999999999999999999\n",
	    "t.conf:2:11: bad number '99999999999999999999999' for threads "
	    "(1..1024)" },
	{ "[gateway]\nworkers = 65\n",
	    "t.conf:2:11: bad number '65' for workers (1..64)" },
	{ "[gateway]\nworkers = -1\n",
	    "t.conf:2:11: bad number '-1' for workers (1..64)" },
	{ "[cleanup]\nbatch = 100001\n",
	    "t.conf:2:9: bad number '100001' for batch (1..100000)" },
	{ "[gateway]\nlog = file\n",
	    "t.conf:2:7: bad value 'file' for log (stderr or syslog)" },
	{ "[gateway]\nhost_name = \"a b\"\n",
	    "t.conf:2:14: bad host_name 'a b' (up to 64 visible ASCII bytes)" },
	{ "[gateway]\nmax_params = 1023\n",
	    "t.conf:2:14: max_params must be between 1K and 16M" },
	{ "[gateway]\nmax_params = 16385K\n",
	    "t.conf:2:14: max_params must be between 1K and 16M" },
	{ "[gateway]\nmax_params = lots\n",
	    "t.conf:2:14: bad size 'lots' for max_params" },
	{ "[gateway]\nmax_pending_body = 1023K\n",
	    "t.conf:2:20: max_pending_body must be between 1M and 64G" },
	{ "[gateway]\nreplay_cache = 65535\n",
	    "t.conf:2:16: replay_cache must be 0 (off) or between 64K and 1G" },
	{ "[gateway]\nreplay_cache = 1025M\n",
	    "t.conf:2:16: replay_cache must be 0 (off) or between 64K and 1G" },
	{ "[gateway]\nreplay_cache = on\n",
	    "t.conf:2:16: bad size 'on' for replay_cache" },
	{ RT "replay_cache = 1M\n",
	    "t.conf:3:1: unknown key 'replay_cache' in [route /x]" },

	/* [idempotency] / route values. */
	{ "[idempotency]\nrequire_key = maybe\n",
	    "t.conf:2:15: bad boolean 'maybe' for require_key" },
	{ RT "idempotency = 2\n",
	    "t.conf:3:15: bad boolean '2' for idempotency" },
	{ "[idempotency]\nstore_5xx = \n",
	    "t.conf:2:13: missing value for store_5xx" },
	{ "[idempotency]\nkey_header = Idem Key\n",
	    "t.conf:2:14: bad header name 'Idem Key' for key_header" },
	{ "[idempotency]\nkey_header = Idem:Key\n",
	    "t.conf:2:14: bad header name 'Idem:Key' for key_header" },
	{ "[idempotency]\nmethods = POST P(T\n",
	    "t.conf:2:17: bad method 'P(T'" },
	{ "[idempotency]\nmethods = POST ABCDEFGHIJKLMNOPQ\n",
	    "t.conf:2:16: method longer than 16 bytes" },
	{ "[idempotency]\nmethods = "
	    "A B C D E F G H I J K L M N O P Q\n",
	    "t.conf:2:43: more than 16 methods" },
	{ "[idempotency]\nmethods = \" \"\n",
	    "t.conf:2:12: no methods listed" },
	{ "[idempotency]\nscope = user\n",
	    "t.conf:2:9: bad scope 'user' (none, remote_user or header:NAME)" },
	{ "[idempotency]\nscope = header:\n",
	    "t.conf:2:9: bad scope 'header:' (none, remote_user or header:NAME)" },
	{ "[idempotency]\nscope = header:a b\n",
	    "t.conf:2:9: bad scope 'header:a b' (none, remote_user or "
	    "header:NAME)" },
	{ "[idempotency]\nmax_body = 1025M\n",
	    "t.conf:2:12: max_body must be at most 1G" },
	{ "[idempotency]\nmax_response = 8MB\n",
	    "t.conf:2:16: bad size '8MB' for max_response" },
	{ "[idempotency]\nmax_response = 1025M\n",
	    "t.conf:2:16: max_response must be at most 1G" },
	{ "[idempotency]\non_store_error = ignore\n",
	    "t.conf:2:18: bad value 'ignore' for on_store_error (reject or pass)" },
};
#undef BADLISTEN

static void
test_errors(void)
{
	char	*big, *line;
	size_t	 n, i;

	for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		CHECK(refused(refusals[i].text, refusals[i].want));

	/* Bytes: control characters, NUL, line and file limits. */
	CHECK(refused("[gateway]\nmysql_group = a\x01" "b\n",
	    "t.conf:2:16: control character 0x01"));
	CHECK(refused("[gateway]\x7f\n", "t.conf:1:10: control character 0x7f"));
	CHECK(refused("[gateway]\r\r\n", "t.conf:1:10: control character 0x0d"));
	{
		static const char nul[] = "[gateway]\nmysql_group = a\0b\n";
		struct cfg *c = NULL;

		CHECK(cfg_parse(nul, sizeof(nul) - 1, "t.conf", &c, err,
		    sizeof(err)) == IDEM_ECONFIG && c == NULL);
		CHECK(strcmp(err, "t.conf:2:16: NUL byte") == 0);
	}
	line = malloc(4200);
	if (line != NULL) {
		/* A comment line of exactly 4096 bytes, then 4097. */
		n = 4096;
		memset(line, 'x', n);
		line[0] = '#';
		line[n] = '\0';
		CHECK(accepted(line));
		CHECK(accepted("[idempotency]\nmax_response = 64M\n"));
		memcpy(line + n, "\r\n", 3);
		CHECK(accepted(line));
		line[n] = 'x';
		line[n + 1] = '\0';
		CHECK(refused(line, "t.conf:1:4097: line longer than 4096 bytes"));
		free(line);
	}
	big = malloc(1024 * 1024 + 2);
	if (big != NULL) {
		/* 1 MiB of blank lines is fine; one byte more is not. */
		memset(big, '\n', 1024 * 1024 + 1);
		big[1024 * 1024] = '\0';
		CHECK(accepted(big));
		big[1024 * 1024] = '\n';
		big[1024 * 1024 + 1] = '\0';
		CHECK(refused(big, "t.conf: file larger than 1 MiB"));
		free(big);
	}
	/* A tiny error buffer is never overrun and a NULL one is allowed. */
	{
		struct cfg	*c = NULL;
		char		 small[8];

		memset(small, 'z', sizeof(small));
		CHECK(cfg_parse("x", 1, "t.conf", &c, small, 5) == IDEM_ECONFIG);
		CHECK(strlen(small) == 4 && small[5] == 'z');
		CHECK(cfg_parse("x", 1, "t.conf", &c, NULL, 0) == IDEM_ECONFIG);
	}
}

int
main(void)
{
	test_errors();
	return CHECK_DONE();
}
