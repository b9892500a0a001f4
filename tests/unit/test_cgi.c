/* Unit tests for CGI environment building, script lookup and cgi_exec. */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/check.h"
#include "../lib/sink.h"
#include "buf.h"
#include "cgi.h"
#include "cgi_env.h"
#include "clock.h"
#include "linger.h"

static char	 tmpdir[1024];

static const char *
env_get(char **env, const char *name)
{
	size_t	 i, l = strlen(name);

	for (i = 0; env[i] != NULL; i++)
		if (strncmp(env[i], name, l) == 0 && env[i][l] == '=')
			return env[i] + l + 1;
	return NULL;
}

static size_t
env_count(char **env, const char *name)
{
	size_t	 i, n = 0, l = strlen(name);

	for (i = 0; env[i] != NULL; i++)
		if (strncmp(env[i], name, l) == 0 && env[i][l] == '=')
			n++;
	return n;
}

static void
test_env(void)
{
	char *const params[] = {
		"REQUEST_METHOD=POST", "QUERY_STRING=a=b&c=d",
		"HTTP_PROXY=http://evil.test:8080", "http_proxy=x",
		"HTTP_HOST=example.test", "LD_PRELOAD=/tmp/evil.so",
		"BASH_FUNC_x%%=() { :; }", "BASH_FUNC_y=() { :; }",
		"BASH_ENV=/tmp/evil", "BAD-NAME=1", "NOEQUALS",
		"=novalue", "GATEWAY_INTERFACE=CGI/0.9",
		"SCRIPT_FILENAME=/wrong", "CONTENT_LENGTH=",
		"HTTP_X=1", "HTTP_X=2", NULL };
	char *const withlen[] = { "CONTENT_LENGTH=17", "PATH=/opt/bin", NULL };
	char **env = NULL;
	size_t i;
	int leak = 0;

	setenv("IDEM_TEST_LEAK_SENTINEL", "leaked", 1);
	setenv("HTTP_PROXY", "http://from-environ.test", 1);
	CHECK(cgi_env_build(params, "/srv/cgi/x.cgi", 1234, 1, NULL, &env) ==
	    IDEM_OK);
	CHECK(env != NULL);
	if (env == NULL)
		return;
	CHECK(env_get(env, "HTTP_PROXY") == NULL);
	CHECK(env_get(env, "LD_PRELOAD") == NULL);
	CHECK(env_get(env, "BASH_FUNC_y") == NULL);
	CHECK(env_get(env, "BASH_ENV") == NULL);
	CHECK(env_get(env, "IDEM_TEST_LEAK_SENTINEL") == NULL);
	for (i = 0; env[i] != NULL; i++) {
		if (strchr(env[i], '-') != NULL || strchr(env[i], '%') != NULL ||
		    strcmp(env[i], "NOEQUALS") == 0 || env[i][0] == '=' ||
		    strstr(env[i], "leaked") != NULL ||
		    strstr(env[i], "from-environ") != NULL)
			leak = 1;
	}
	CHECK(!leak);
	CHECK(env_get(env, "REQUEST_METHOD") &&
	    strcmp(env_get(env, "REQUEST_METHOD"), "POST") == 0);
	CHECK(env_get(env, "QUERY_STRING") &&
	    strcmp(env_get(env, "QUERY_STRING"), "a=b&c=d") == 0 &&
	    env_count(env, "QUERY_STRING") == 1);
	CHECK(env_get(env, "GATEWAY_INTERFACE") &&
	    strcmp(env_get(env, "GATEWAY_INTERFACE"), "CGI/1.1") == 0);
	CHECK(env_count(env, "GATEWAY_INTERFACE") == 1);
	CHECK(env_get(env, "SCRIPT_FILENAME") &&
	    strcmp(env_get(env, "SCRIPT_FILENAME"), "/srv/cgi/x.cgi") == 0);
	CHECK(env_count(env, "SCRIPT_FILENAME") == 1);
	/* Chunked body: the length comes from what was read. */
	CHECK(env_get(env, "CONTENT_LENGTH") &&
	    strcmp(env_get(env, "CONTENT_LENGTH"), "1234") == 0);
	CHECK(env_count(env, "CONTENT_LENGTH") == 1);
	CHECK(env_get(env, "PATH") && strcmp(env_get(env, "PATH"),
	    "/usr/local/bin:/usr/bin:/bin") == 0);
	CHECK(env_count(env, "HTTP_X") == 1 &&
	    strcmp(env_get(env, "HTTP_X"), "2") == 0);
	cgi_env_free(env);

	/* A given CONTENT_LENGTH and PATH are kept; no script, no body. */
	env = NULL;
	CHECK(cgi_env_build(withlen, NULL, 99, 1, NULL, &env) == IDEM_OK);
	CHECK(env && strcmp(env_get(env, "CONTENT_LENGTH"), "17") == 0);
	CHECK(env && strcmp(env_get(env, "PATH"), "/opt/bin") == 0);
	CHECK(env && env_get(env, "SCRIPT_FILENAME") == NULL);
	CHECK(env && env_count(env, "QUERY_STRING") == 1);
	cgi_env_free(env);
	env = NULL;
	CHECK(cgi_env_build(NULL, NULL, 0, 0, NULL, &env) == IDEM_OK);
	CHECK(env && env_get(env, "CONTENT_LENGTH") == NULL);
	CHECK(env && env_get(env, "GATEWAY_INTERFACE") != NULL);
	/* RFC 3875 4.1.7: QUERY_STRING is always set, empty without one. */
	CHECK(env && env_get(env, "QUERY_STRING") != NULL &&
	    strcmp(env_get(env, "QUERY_STRING"), "") == 0);
	cgi_env_free(env);
	/* The fence is ours: a param of that name never reaches the run. */
	{
		char *const spoof[] = { "IDEMGATE_FENCE=999999999999",
			"IDEMGATE_RUN=0000000000000001", "IDEMGATE_KEY_ID=ff",
			"REQUEST_METHOD=POST", NULL };

		env = NULL;
		CHECK(cgi_env_build(spoof, NULL, 0, 0, NULL, &env) == IDEM_OK);
		CHECK(env && env_get(env, "IDEMGATE_FENCE") == NULL);
		CHECK(env && env_get(env, "IDEMGATE_RUN") == NULL);
		CHECK(env && env_get(env, "IDEMGATE_KEY_ID") == NULL);
		cgi_env_free(env);
		env = NULL;
		CHECK(cgi_env_build(spoof, NULL, 0, 0, &(struct cgi_idem){
		    .fence = 42000003ull, .key_id = "00ab" }, &env) ==
		    IDEM_OK);
		CHECK(env && env_count(env, "IDEMGATE_FENCE") == 1 &&
		    strcmp(env_get(env, "IDEMGATE_FENCE"), "42000003") == 0);
		CHECK(env && env_count(env, "IDEMGATE_KEY_ID") == 1 &&
		    strcmp(env_get(env, "IDEMGATE_KEY_ID"), "00ab") == 0);
		cgi_env_free(env);
	}
	/* Every printed entry at its longest, in the block's own room. */
	{
		char *const chunked[] = { "CONTENT_LENGTH=", NULL };
		char script[4097];
		char key_id[CGI_KEY_ID_MAX + 1];

		memset(script, 'a', sizeof(script) - 1);
		script[0] = '/';
		script[sizeof(script) - 1] = '\0';
		env = NULL;
		memset(key_id, 'f', sizeof(key_id) - 1);
		key_id[sizeof(key_id) - 1] = '\0';
		CHECK(cgi_env_build(chunked, script, SIZE_MAX, 1,
		    &(struct cgi_idem){ UINT64_MAX, UINT64_MAX, key_id },
		    &env) == IDEM_OK);
		CHECK(env && env_get(env, "IDEMGATE_KEY_ID") &&
		    strcmp(env_get(env, "IDEMGATE_KEY_ID"), key_id) == 0);
		CHECK(env && env_get(env, "IDEMGATE_RUN") &&
		    strcmp(env_get(env, "IDEMGATE_RUN"),
		    "ffffffffffffffff") == 0);
		CHECK(env && env_get(env, "SCRIPT_FILENAME") &&
		    strcmp(env_get(env, "SCRIPT_FILENAME"), script) == 0);
		CHECK(env && env_get(env, "IDEMGATE_FENCE") &&
		    strcmp(env_get(env, "IDEMGATE_FENCE"),
		    "18446744073709551615") == 0);
		CHECK(env && env_count(env, "CONTENT_LENGTH") == 1 &&
		    strtoull(env_get(env, "CONTENT_LENGTH"), NULL, 10) ==
		    (unsigned long long)SIZE_MAX);
		cgi_env_free(env);
	}
	/* Sent twice, the last CONTENT_LENGTH counts, as for the gateway
	 * (an empty one last: the body's length, or none at all). */
	{
		char *const twice[] = { "CONTENT_LENGTH=5", "CONTENT_LENGTH=",
			NULL };

		env = NULL;
		CHECK(cgi_env_build(twice, NULL, 7, 1, NULL, &env) == IDEM_OK);
		CHECK(env && env_count(env, "CONTENT_LENGTH") == 1 &&
		    strcmp(env_get(env, "CONTENT_LENGTH"), "7") == 0);
		cgi_env_free(env);
		env = NULL;
		CHECK(cgi_env_build(twice, NULL, 0, 0, NULL, &env) == IDEM_OK);
		CHECK(env && env_count(env, "CONTENT_LENGTH") == 0);
		cgi_env_free(env);
		env = NULL;
		CHECK(cgi_params_build(twice, 7, 1, NULL, &env) == IDEM_OK);
		CHECK(env && env_count(env, "CONTENT_LENGTH") == 1 &&
		    strcmp(env_get(env, "CONTENT_LENGTH"), "7") == 0);
		cgi_env_free(env);
	}
	/* An upstream's params: as sent, '-' in names too, but never a name
	 * PHP would read as another ('.', ' ', '[' become '_' there). */
	{
		char *const up[] = { "proxy-nokeepalive=1",
			"HTTP_IDEMPOTENCY.KEY=attacker", "HTTP_A B=1",
			"HTTP_C[D=1", "http_proxy=x", "HTTP_X=1", NULL };

		env = NULL;
		CHECK(cgi_params_build(up, 0, 0, NULL, &env) == IDEM_OK);
		CHECK(env && env_get(env, "proxy-nokeepalive") != NULL);
		CHECK(env && env_get(env, "HTTP_X") != NULL);
		CHECK(env && env_get(env, "HTTP_IDEMPOTENCY.KEY") == NULL);
		CHECK(env && env_get(env, "HTTP_A B") == NULL);
		CHECK(env && env_get(env, "HTTP_C[D") == NULL);
		CHECK(env && env_get(env, "http_proxy") == NULL);
		CHECK(env && env_get(env, "PATH") == NULL &&
		    env_get(env, "GATEWAY_INTERFACE") == NULL);
		cgi_env_free(env);
	}
	cgi_env_free(NULL);
	unsetenv("HTTP_PROXY");
	unsetenv("IDEM_TEST_LEAK_SENTINEL");
}

/* Writes a script file with the given mode. */
static void
write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char	 path[PATH_MAX];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f == NULL) {
		perror(path);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static enum idem_err
resolve(const char *root, const char *rel, char *out)
{
	char	 path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return cgi_script_resolve(root, path, out, PATH_MAX);
}

static void
test_resolve(void)
{
	char	 root[PATH_MAX], other[PATH_MAX], out[PATH_MAX];
	char	 want[PATH_MAX + 16], path[PATH_MAX * 2];
	int	 r;

	snprintf(root, sizeof(root), "%s/root", tmpdir);
	snprintf(other, sizeof(other), "%s/rootother", tmpdir);
	mkdir(root, 0755);
	mkdir(other, 0755);
	snprintf(path, sizeof(path), "%s/sub", root);
	mkdir(path, 0755);
	write_file(root, "ok.cgi", "#!/bin/sh\n", 0755);
	write_file(root, "noexec.cgi", "#!/bin/sh\n", 0644);
	write_file(root, "sub/deep.cgi", "#!/bin/sh\n", 0750);
	write_file(other, "out.cgi", "#!/bin/sh\n", 0755);
	snprintf(path, sizeof(path), "%s/escape.cgi", root);
	r = symlink("../rootother/out.cgi", path);
	snprintf(path, sizeof(path), "%s/inside.cgi", root);
	r |= symlink("sub/deep.cgi", path);
	snprintf(path, sizeof(path), "%s/dangling.cgi", root);
	r |= symlink("nowhere.cgi", path);
	snprintf(path, sizeof(path), "%s/linkdir", root);
	r |= symlink("../rootother", path);
	CHECK(r == 0);

	CHECK(resolve(root, "ok.cgi", out) == IDEM_OK);
	snprintf(want, sizeof(want), "%s/ok.cgi", root);
	CHECK(strcmp(out, want) == 0);
	CHECK(resolve(root, "sub/deep.cgi", out) == IDEM_OK);
	CHECK(resolve(root, "inside.cgi", out) == IDEM_OK);
	snprintf(want, sizeof(want), "%s/sub/deep.cgi", root);
	CHECK(strcmp(out, want) == 0);
	CHECK(resolve(root, "missing.cgi", out) == IDEM_ENOTFOUND);
	CHECK(resolve(root, "ok.cgi/x", out) == IDEM_ENOTFOUND);
	CHECK(resolve(root, "dangling.cgi", out) == IDEM_ENOTFOUND);
	CHECK(resolve(root, "noexec.cgi", out) == IDEM_EFORBIDDEN);
	CHECK(resolve(root, "sub", out) == IDEM_EFORBIDDEN);
	CHECK(resolve(root, "", out) == IDEM_EFORBIDDEN);
	CHECK(resolve(root, "escape.cgi", out) == IDEM_EFORBIDDEN);
	CHECK(resolve(root, "linkdir/out.cgi", out) == IDEM_EFORBIDDEN);
	CHECK(resolve(root, "../root/ok.cgi", out) == IDEM_EFORBIDDEN);
	CHECK(resolve(root, "sub/../ok.cgi", out) == IDEM_EFORBIDDEN);
	CHECK(resolve(root, "../rootother/out.cgi", out) == IDEM_EFORBIDDEN);
	/* A sibling sharing the root's name as a prefix is outside. */
	snprintf(path, sizeof(path), "%s/out.cgi", other);
	CHECK(cgi_script_resolve(root, path, out, sizeof(out)) ==
	    IDEM_EFORBIDDEN);
	/* Outside the root, even a missing file is 403, not 404. */
	CHECK(cgi_script_resolve(root, "/nonexistent/x.cgi", out,
	    sizeof(out)) == IDEM_EFORBIDDEN);
	CHECK(cgi_script_resolve(root, "ok.cgi", out, sizeof(out)) ==
	    IDEM_EFORBIDDEN);
	CHECK(cgi_script_resolve(root, NULL, out, sizeof(out)) ==
	    IDEM_ENOTFOUND);
	/* A root given with a trailing slash works the same. */
	snprintf(want, sizeof(want), "%s/", root);
	snprintf(path, sizeof(path), "%s/ok.cgi", root);
	CHECK(cgi_script_resolve(want, path, out, sizeof(out)) == IDEM_OK);
	CHECK(cgi_script_resolve(root, path, out, 5) == IDEM_ETOOBIG);

	/* The log says which rule refused a script, and what it resolved to. */
	{
		char	 why[PATH_MAX + 200], w2[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/escape.cgi", root);
		CHECK(cgi_script_resolve_why(root, path, out, sizeof(out), why,
		    sizeof(why)) == IDEM_EFORBIDDEN);
		snprintf(w2, sizeof(w2), "resolves to %.*s/out.cgi, outside",
		    PATH_MAX - 64, other);
		CHECK(strncmp(why, w2, strlen(w2)) == 0);
		snprintf(path, sizeof(path), "%s/noexec.cgi", root);
		CHECK(cgi_script_resolve_why(root, path, out, sizeof(out), why,
		    sizeof(why)) == IDEM_EFORBIDDEN);
		CHECK(strstr(why, "noexec.cgi: not executable") != NULL);
		snprintf(path, sizeof(path), "%s/sub", root);
		CHECK(cgi_script_resolve_why(root, path, out, sizeof(out), why,
		    sizeof(why)) == IDEM_EFORBIDDEN);
		CHECK(strstr(why, "not a regular file") != NULL);
		CHECK(cgi_script_resolve_why(root, "/nonexistent/x.cgi", out,
		    sizeof(out), why, sizeof(why)) == IDEM_EFORBIDDEN);
		CHECK(strncmp(why, "outside script_root ", 20) == 0);
	}
}

/* ---- cgi_exec ---- */

static struct linger	*run_linger;	/* cgi_run.linger for run() */

static enum idem_err
run(const char *name, const void *body, size_t bodylen, int64_t tmo,
    struct sink *s, struct cgi_status *st)
{
	char		 prog[PATH_MAX];
	char *const	 params[] = { "REQUEST_METHOD=POST", NULL };
	char		**env = NULL;
	struct cgi_run	 r;
	enum idem_err	 er;

	snprintf(prog, sizeof(prog), "%s/cgi/%s", tmpdir, name);
	if (cgi_env_build(params, NULL, bodylen, bodylen > 0, NULL, &env) != IDEM_OK)
		return IDEM_ENOMEM;
	memset(&r, 0, sizeof(r));
	r.program = prog;
	r.env = env;
	r.linger = run_linger;
	r.ex.body = body;
	r.ex.bodylen = bodylen;
	r.ex.timeout_ms = tmo;
	r.ex.tag = name;
	r.ex.out = sink_out;
	r.ex.complete = sink_complete_cb;
	r.ex.tick = sink_tick;
	r.ex.tick_ms = 50;
	r.ex.arg = s;
	memset(st, 0xff, sizeof(*st));
	er = cgi_exec(&r, st);
	cgi_env_free(env);
	return er;
}

/* 1 if pid no longer exists (or is a zombie waiting for init). */
static int
pid_gone(pid_t pid)
{
	char	 path[64], buf[256], *p;
	FILE	*f;
	size_t	 n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p != NULL && (p[2] == 'Z' || p[2] == 'X');
}

static void
make_scripts(void)
{
	char	 dir[PATH_MAX + 8];
	char	 text[PATH_MAX * 2 + 256];

	snprintf(dir, sizeof(dir), "%s/cgi", tmpdir);
	mkdir(dir, 0755);
	write_file(dir, "hello.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: text/plain\\r\\n\\r\\nhello'\n", 0755);
	write_file(dir, "echo.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: application/octet-stream\\n\\n'\n"
	    "exec cat\n", 0755);
	write_file(dir, "big.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: application/octet-stream\\n\\n'\n"
	    "exec head -c 8388608 /dev/zero\n", 0755);
	snprintf(text, sizeof(text), "#!/bin/sh\n"
	    "sleep 30 &\n"
	    "echo $! > %s/grandchild.pid\n"
	    "exec sleep 30\n", tmpdir);
	write_file(dir, "sleep.cgi", text, 0755);
	write_file(dir, "fail.cgi", "#!/bin/sh\n"
	    "printf 'Status: 500\\n\\n'\nexit 3\n", 0755);
	write_file(dir, "stderr.cgi", "#!/bin/sh\n"
	    "echo 'first complaint' >&2\n"
	    "printf 'no newline at end' >&2\n"
	    "printf 'Content-Type: text/plain\\n\\nok'\n", 0755);
	write_file(dir, "env.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: text/plain\\n\\n'\n"
	    "echo \"GI=$GATEWAY_INTERFACE\"\n"
	    "echo \"PWD=$(pwd)\"\n"
	    /* Read with builtins: while dash vforks a command it blocks
	     * every signal in itself, and grep would see that. */
	    "while read -r k v; do case $k in SigBlk:|SigIgn:) "
	    "printf '%s\\t%s\\n' \"$k\" \"$v\";; esac; "
	    "done < /proc/$$/status\n", 0755);
	write_file(dir, "slow.cgi", "#!/bin/sh\n"
	    "sleep 0.3\nprintf 'Content-Type: text/plain\\n\\n'\n", 0755);
	/* Ignores SIGTERM: only the SIGKILL after the grace stops it. */
	write_file(dir, "deaf.cgi", "#!/bin/sh\n"
	    "trap '' TERM\nsleep 5 & wait; sleep 5\n", 0755);
	write_file(dir, "linger.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: text/plain\\n\\nbye'\n"
	    "exec >&-\nexec sleep 30\n", 0755);
	write_file(dir, "late.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: text/plain\\n\\nbye'\n"
	    "exec >&-\nsleep 0.2\nexit 4\n", 0755);
	write_file(dir, "soon.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: text/plain\\n\\nbye'\n"
	    "exec >&-\nexit 4\n", 0755);
	/* A complete answer by its length, then it keeps stdout open. */
	write_file(dir, "clen.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: text/plain\\nContent-Length: 3\\n\\n"
	    "byeEXTRA'\nexec sleep 30\n", 0755);
	write_file(dir, "sigsegv.cgi", "#!/bin/sh\n"
	    "printf 'Content-Type: text/plain\\n\\n'\nkill -SEGV $$\n", 0755);
}

static void
test_exec_basic(void)
{
	struct sink		 s;
	struct cgi_status	 st;
	static char		 body4m[4 * 1024 * 1024];
	enum idem_err		 er;

	/* Ignores stdin while a 4 MiB body is offered. */
	memset(body4m, 'b', sizeof(body4m));
	sink_init(&s);
	er = run("hello.cgi", body4m, sizeof(body4m), 10000, &s, &st);
	CHECK(er == IDEM_OK);
	CHECK(st.exited == 1 && st.exit_code == 0 && st.signo == 0 &&
	    st.timed_out == 0);
	CHECK(s.b.len == 33 && memcmp(s.b.p,
	    "Content-Type: text/plain\r\n\r\nhello", 33) == 0);
	buf_free(&s.b);

	/* Writes 8 MiB. */
	sink_init(&s);
	er = run("big.cgi", NULL, 0, 20000, &s, &st);
	CHECK(er == IDEM_OK && st.exited && st.exit_code == 0);
	CHECK(s.b.len == 8388608 + 40);
	buf_free(&s.b);

	/* Non-zero exit is still a run. */
	sink_init(&s);
	er = run("fail.cgi", NULL, 0, 5000, &s, &st);
	CHECK(er == IDEM_OK && st.exited == 1 && st.exit_code == 3);
	buf_free(&s.b);

	/* Killed by a signal. */
	sink_init(&s);
	er = run("sigsegv.cgi", NULL, 0, 5000, &s, &st);
	CHECK(er == IDEM_OK && st.exited == 0 && st.signo == SIGSEGV);
	buf_free(&s.b);

	/* Missing program: cannot start. */
	sink_init(&s);
	er = run("does-not-exist.cgi", NULL, 0, 5000, &s, &st);
	CHECK(er == IDEM_EHANDLER);
	buf_free(&s.b);

	/* Ticks while it runs. */
	sink_init(&s);
	er = run("slow.cgi", NULL, 0, 5000, &s, &st);
	CHECK(er == IDEM_OK && s.ticks >= 2);
	buf_free(&s.b);

	/* A tick asks for a stop (lease lost): SIGTERM to the group. */
	{
		struct timespec	 t0, t1;
		long		 ms;

		sink_init(&s);
		s.stop_at_tick = 2;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		er = run("slow.cgi", NULL, 0, 5000, &s, &st);
		CHECK(er == IDEM_ELEASE && st.signo == SIGTERM);
		buf_free(&s.b);

		/* One that ignores SIGTERM gets SIGKILL after the grace. */
		sink_init(&s);
		s.stop_at_tick = 1;
		er = run("deaf.cgi", NULL, 0, 5000, &s, &st);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1000 +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000;
		CHECK(er == IDEM_ELEASE && st.signo == SIGKILL);
		CHECK(ms < 2000);
		buf_free(&s.b);
	}
}

static void
test_exec_echo(void)
{
	struct sink		 s;
	struct cgi_status	 st;
	size_t			 n = 3 * 1024 * 1024 + 17, i;
	unsigned char		*body = malloc(n);
	const size_t		 hl = strlen("Content-Type: "
	    "application/octet-stream\n\n");

	/* Byte-exact, NULs and all, larger than any pipe buffer. */
	for (i = 0; i < n; i++)
		body[i] = (unsigned char)((i * 7919) >> 3);
	for (i = 0; i < n; i += 1000)
		body[i] = 0;
	sink_init(&s);
	CHECK(run("echo.cgi", body, n, 20000, &s, &st) == IDEM_OK);
	CHECK(s.b.len == hl + n && memcmp(s.b.p + hl, body, n) == 0);
	buf_free(&s.b);
	free(body);
}

static void
test_exec_timeout(void)
{
	struct sink		 s;
	struct cgi_status	 st;
	char			 path[PATH_MAX + 32];
	FILE			*f;
	int			 gpid = 0, i, gone = 0;
	int64_t			 t0;
	struct timespec		 ts;
	enum idem_err		 er;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	sink_init(&s);
	er = run("sleep.cgi", NULL, 0, 400, &s, &st);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	CHECK(er == IDEM_ETIMEOUT);
	CHECK(st.timed_out == 1 && st.signo == SIGKILL);
	CHECK(ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - t0 < 3000);
	buf_free(&s.b);
	snprintf(path, sizeof(path), "%s/grandchild.pid", tmpdir);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%d", &gpid) != 1)
			gpid = 0;
		fclose(f);
	}
	CHECK(gpid > 0);
	for (i = 0; gpid > 0 && i < 100 && !gone; i++) {
		gone = pid_gone(gpid);
		if (!gone)
			sleep_ms(20);
	}
	CHECK(gone);
}

/*
 * Complete means complete: stdout EOF (with a moment to exit, so the exit
 * status is known), the program's exit, or the Content-Length reached.
 * What still runs then lingers until the timeout, not the answer.
 */
static void
test_exec_after_eof(void)
{
	struct sink		 s;
	struct cgi_status	 st;
	struct linger		*lg = NULL;
	int64_t			 t0;

	sink_init(&s);
	CHECK(run("soon.cgi", NULL, 0, 5000, &s, &st) == IDEM_OK);
	CHECK(st.exited == 1 && st.exit_code == 4 && st.lingering == 0);
	CHECK(s.b.len == 29);
	buf_free(&s.b);
	/* Closed stdout, still running: complete, not a timeout. */
	sink_init(&s);
	t0 = clock_now_ms();
	CHECK(run("linger.cgi", NULL, 0, 600, &s, &st) == IDEM_OK);
	CHECK(st.lingering == 1 && st.timed_out == 0 && s.b.len == 29);
	CHECK(clock_now_ms() - t0 < 500);
	buf_free(&s.b);
	/* With a linger: handed over, killed at the timeout. */
	CHECK(linger_new(&lg) == IDEM_OK);
	run_linger = lg;
	sink_init(&s);
	s.clen_complete = 1;
	t0 = clock_now_ms();
	CHECK(run("clen.cgi", NULL, 0, 800, &s, &st) == IDEM_OK);
	CHECK(clock_now_ms() - t0 < 500);
	CHECK(st.lingering == 1);
	CHECK(linger_count(lg) == 1);
	clock_sleep_ms(1100);
	CHECK(linger_count(lg) == 0);
	run_linger = NULL;
	buf_free(&s.b);
	sink_init(&s);
	CHECK(run("late.cgi", NULL, 0, 5000, &s, &st) == IDEM_OK);
	CHECK(st.lingering == 1 && s.b.len == 29);
	buf_free(&s.b);
	linger_free(lg);
}

static void
test_exec_abort(void)
{
	struct sink		 s;
	struct cgi_status	 st;

	/* The consumer refuses more output: group killed, its error back. */
	sink_init(&s);
	s.fail_after = 100000;
	CHECK(run("big.cgi", NULL, 0, 20000, &s, &st) == IDEM_ETOOBIG);
	CHECK(st.timed_out == 0);
	buf_free(&s.b);
}

static void
test_exec_stderr(void)
{
	struct sink		 s;
	struct cgi_status	 st;
	char			 path[PATH_MAX + 16], log[4096];
	int			 fd, saved;
	ssize_t			 n;

	snprintf(path, sizeof(path), "%s/stderr.log", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	saved = dup(2);
	dup2(fd, 2);
	sink_init(&s);
	CHECK(run("stderr.cgi", NULL, 0, 5000, &s, &st) == IDEM_OK);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, log, sizeof(log) - 1, 0);
	close(fd);
	log[n > 0 ? n : 0] = '\0';
	CHECK(strstr(log, "stderr.cgi: first complaint") != NULL);
	CHECK(strstr(log, "stderr.cgi: no newline at end") != NULL);
	CHECK(s.b.len > 0 && strstr(s.b.p, "\n\nok") != NULL);
	buf_free(&s.b);
}

static void
test_exec_env(void)
{
	struct sink		 s;
	struct cgi_status	 st;
	char			 want[PATH_MAX + 16], real[PATH_MAX];
	const char		*ign;
	sigset_t		 set, old;

	/* The gateway's blocked signals must not reach the program. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	sink_init(&s);
	CHECK(run("env.cgi", NULL, 0, 5000, &s, &st) == IDEM_OK);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	CHECK(s.b.len > 0 && strstr(s.b.p, "GI=CGI/1.1\n") != NULL);
	snprintf(want, sizeof(want), "%s/cgi", tmpdir);
	if (realpath(want, real) != NULL)
		snprintf(want, sizeof(want), "PWD=%s\n", real);
	CHECK(s.b.len > 0 && strstr(s.b.p, want) != NULL);
	/*
	 * SIGPIPE is ignored in this process, default in the program.  Only
	 * the classic signals count: glibc's posix_spawn leaves its own two
	 * internal real-time signals (32, 33) ignored and nothing can set them.
	 */
	ign = s.b.len > 0 ? strstr(s.b.p, "SigIgn:\t") : NULL;
	CHECK(ign != NULL &&
	    (strtoull(ign + 8, NULL, 16) & 0x7fffffffULL) == 0);
	CHECK(s.b.len > 0 && strstr(s.b.p, "SigBlk:\t0000000000000000") !=
	    NULL);
	buf_free(&s.b);
}

struct par {
	int	 ok;
};

/* Many echo runs from two threads: a leaked stdin pipe would hang one. */
static void *
par_main(void *arg)
{
	struct par		*p = arg;
	struct sink		 s;
	struct cgi_status	 st;
	char			 body[5000];
	int			 i;

	memset(body, 'p', sizeof(body));
	p->ok = 1;
	for (i = 0; i < 15; i++) {
		sink_init(&s);
		if (run("echo.cgi", body, sizeof(body), 5000, &s, &st) !=
		    IDEM_OK || s.total != sizeof(body) + 40)
			p->ok = 0;
		buf_free(&s.b);
	}
	return NULL;
}

static void
test_exec_threads(void)
{
	pthread_t	 t[3];
	struct par	 p[3];
	int		 i, ok = 1;

	for (i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, par_main, &p[i]);
	for (i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		ok &= p[i].ok;
	}
	CHECK(ok);
}

static int	 clock_overdues;

static void
clock_overdue(void *arg)
{
	(void)arg;
	clock_overdues++;
}

/* An upstream's clock: the client's timeout (overdue), then the run
 * limit, in either order. */
static void
test_clock_run_limit(void)
{
	struct cgi_exchange	 ex;
	struct cgi_clock	 c;

	memset(&ex, 0, sizeof(ex));
	ex.overdue = clock_overdue;
	/* timeout 1 s, run limit 3 s: 504 at 1 s, the end at 3 s. */
	ex.timeout_ms = 1000;
	ex.run_limit_ms = 3000;
	clock_overdues = 0;
	cgi_clock_start(&c, &ex, 0);
	CHECK(cgi_clock_check(&c, &ex, 999) == IDEM_OK);
	CHECK(cgi_clock_check(&c, &ex, 1000) == IDEM_OK && clock_overdues == 1);
	CHECK(cgi_clock_wait(&c, 1000) == 2000);
	CHECK(cgi_clock_check(&c, &ex, 2999) == IDEM_OK);
	CHECK(cgi_clock_check(&c, &ex, 3000) == IDEM_EBROKEN);
	/* timeout 5 s, run limit 2 s: the run ends at 2 s, no 504 first
	 * (an answer between 2 and 5 s would be past the limit). */
	ex.timeout_ms = 5000;
	ex.run_limit_ms = 2000;
	clock_overdues = 0;
	cgi_clock_start(&c, &ex, 0);
	CHECK(cgi_clock_wait(&c, 0) == 2000);
	CHECK(cgi_clock_check(&c, &ex, 1999) == IDEM_OK);
	CHECK(cgi_clock_check(&c, &ex, 2000) == IDEM_EBROKEN);
	CHECK(clock_overdues == 0);
	/* No timeout at all: the run limit still ends it. */
	ex.timeout_ms = 0;
	cgi_clock_start(&c, &ex, 0);
	CHECK(cgi_clock_check(&c, &ex, 2000) == IDEM_EBROKEN);
	/* A CGI (no overdue): the timeout, and nothing else. */
	ex.overdue = NULL;
	ex.timeout_ms = 1000;
	cgi_clock_start(&c, &ex, 0);
	CHECK(cgi_clock_check(&c, &ex, 1000) == IDEM_ETIMEOUT);
}

int
main(void)
{
	const char	*base = getenv("TESTROOT");
	char		 cmd[PATH_MAX + 16];
	int		 fds_before, fds_after;

	/* As the gateway does: a closed pipe is an error code, not death. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(tmpdir, sizeof(tmpdir), "%s/idem-cgi-XXXXXX",
	    base != NULL && base[0] != '\0' ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	test_env();
	test_clock_run_limit();
	test_resolve();
	make_scripts();
	fds_before = count_fds();
	test_exec_basic();
	test_exec_echo();
	test_exec_timeout();
	test_exec_after_eof();
	test_exec_abort();
	test_exec_stderr();
	test_exec_env();
	test_exec_threads();
	fds_after = count_fds();
	CHECK(fds_before > 0 && fds_before == fds_after);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return CHECK_DONE();
}
