/* Unit tests for the FastCGI client against tests/it/fcgi_app and scripted fake apps. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/check.h"
#include "../lib/sink.h"
#include "buf.h"
#include "fastcgi.h"
#include "resp.h"
#include "upstream.h"

extern char **environ;

static char	 tmpdir[1024];
static char	 appaddr[1200];

static enum idem_err
call(const char *addr, char *const *params, const void *body, size_t blen,
    int64_t tmo, struct sink *s, int *app_status)
{
	struct upstream_req	 r;

	memset(&r, 0, sizeof(r));
	r.addr = addr;
	r.params = params;
	r.ex.body = body;
	r.ex.bodylen = blen;
	r.ex.timeout_ms = tmo;
	r.ex.tag = "test-upstream";
	r.ex.out = sink_out;
	r.ex.tick = sink_tick;
	r.ex.tick_ms = 50;
	r.ex.arg = s;
	return upstream_exec(&r, app_status);
}

/* ---- against the real libfcgi app ---- */

static void
test_hello(void)
{
	char *const		 params[] = { "REQUEST_METHOD=GET",
		"QUERY_STRING=", "SCRIPT_NAME=/x", NULL };
	struct sink		 s;
	struct answer	 h;
	size_t			 used;
	int			 st = -1;

	sink_init(&s);
	CHECK(call(appaddr, params, NULL, 0, 5000, &s, &st) == IDEM_OK);
	CHECK(st == 0);
	CHECK(s.b.len == 34 && memcmp(s.b.p,
	    "Content-Type: text/plain\r\n\r\nhello\n", 34) == 0);
	answer_init(&h, RESP_HEAD_MAX, 0);
	CHECK(s.b.len > 0 &&
	    resp_parse_cgi(s.b.p, s.b.len, &h, &used, NULL) == IDEM_OK);
	CHECK(h.status == 200 && used == 28);
	answer_free(&h);
	buf_free(&s.b);
}

static void
test_echo(const char *addr, size_t n, int with_cl)
{
	char		 cl[64];
	char *const	 p_cl[] = { "REQUEST_METHOD=POST",
		"QUERY_STRING=echo=1&x=y", cl, "HTTP_PROXY=http://evil.test",
		NULL };
	char *const	 p_nocl[] = { "REQUEST_METHOD=PUT",
		"QUERY_STRING=echo=1", "CONTENT_LENGTH=", NULL };
	unsigned char	*body = malloc(n ? n : 1);
	struct sink	 s;
	struct answer h;
	const char	*v;
	size_t		 i, used = 0, vl;
	int		 st = -1;

	snprintf(cl, sizeof(cl), "CONTENT_LENGTH=%zu", n);
	for (i = 0; i < n; i++)
		body[i] = (unsigned char)((i * 131) ^ (i >> 9));
	for (i = 0; i < n; i += 777)
		body[i] = 0;
	sink_init(&s);
	CHECK(call(addr, with_cl ? p_cl : p_nocl, body, n, 20000, &s, &st) ==
	    IDEM_OK);
	answer_init(&h, RESP_HEAD_MAX, 0);
	CHECK(s.b.len > 0 &&
	    resp_parse_cgi(s.b.p, s.b.len, &h, &used, NULL) == IDEM_OK);
	CHECK(s.b.len == used + n && (n == 0 ||
	    memcmp(s.b.p + used, body, n) == 0));
	v = resp_hdr_get(&h.hdrs, "X-Method", &vl);
	CHECK(v != NULL && vl == strlen(with_cl ? "POST" : "PUT") &&
	    memcmp(v, with_cl ? "POST" : "PUT", vl) == 0);
	v = resp_hdr_get(&h.hdrs, "X-Query", &vl);
	CHECK(v != NULL && strncmp(v, "echo=1", 6) == 0);
	answer_free(&h);
	buf_free(&s.b);
	free(body);
}

static void
test_big_param(void)
{
	size_t		 n = 100000;
	char		*big = malloc(n + 16);
	char *const	 params[] = { "REQUEST_METHOD=GET", big,
		"QUERY_STRING=", NULL };
	struct sink	 s;
	int		 st = -1;

	/* A value past one record and past the 1-byte length form. */
	memcpy(big, "HTTP_X_BIG=", 11);
	memset(big + 11, 'v', n);
	big[11 + n] = '\0';
	sink_init(&s);
	CHECK(call(appaddr, params, NULL, 0, 5000, &s, &st) == IDEM_OK);
	CHECK(s.b.len == 34);
	buf_free(&s.b);
	free(big);
}

static void
test_stderr_and_abort(void)
{
	char *const	 params[] = { "REQUEST_METHOD=POST",
		"QUERY_STRING=echo=1&stderr=1", NULL };
	char		 path[1100], log[4096];
	static char	 body[300000];
	struct sink	 s;
	int		 fd, saved, st = -1;
	ssize_t		 k;

	snprintf(path, sizeof(path), "%s/stderr.log", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	saved = dup(2);
	dup2(fd, 2);
	sink_init(&s);
	CHECK(call(appaddr, params, "abc", 3, 5000, &s, &st) == IDEM_OK);
	dup2(saved, 2);
	close(saved);
	k = pread(fd, log, sizeof(log) - 1, 0);
	close(fd);
	log[k > 0 ? k : 0] = '\0';
	CHECK(strstr(log, "test-upstream: fcgi_app: a line for the log") !=
	    NULL);
	buf_free(&s.b);

	/* The consumer refuses the answer: the app ran all the same, so the
	 * run is broken off, never "nothing happened". */
	memset(body, 'z', sizeof(body));
	sink_init(&s);
	s.fail_after = 1000;
	CHECK(call(appaddr, params, body, sizeof(body), 5000, &s, &st) ==
	    IDEM_EBROKEN);
	buf_free(&s.b);
}

static void
test_unreachable(void)
{
	char *const	 params[] = { "REQUEST_METHOD=GET", NULL };
	char		 addr[1200];
	struct sink	 s;
	int		 st = -1;

	sink_init(&s);
	snprintf(addr, sizeof(addr), "unix:%s/nobody.sock", tmpdir);
	CHECK(call(addr, params, NULL, 0, 2000, &s, &st) == IDEM_EHANDLER);
	CHECK(call("tcp:127.0.0.1:1", params, NULL, 0, 2000, &s, &st) ==
	    IDEM_EHANDLER);
	CHECK(call("tcp:127.0.0.1:", params, NULL, 0, 2000, &s, &st) ==
	    IDEM_EHANDLER);
	CHECK(call("bogus:x", params, NULL, 0, 2000, &s, &st) ==
	    IDEM_EHANDLER);
	CHECK(call("unix:", params, NULL, 0, 2000, &s, &st) ==
	    IDEM_EHANDLER);
	CHECK(st == -1);
	CHECK(s.b.len == 0);
	buf_free(&s.b);
}

/* ---- against scripted fake apps ---- */

struct fake {
	int		 lfd;
	const void	*reply;
	size_t		 replylen;
	int		 delay_ms;	/* before replying */
	int		 silent;	/* never reply */
	struct buf	 req;		/* what the client sent */
};

/* Reads until the client has been quiet for idle_ms (or EOF). */
static void
fake_read(int fd, struct buf *b, int idle_ms)
{
	char		 tmp[65536];
	struct pollfd	 pfd = { fd, POLLIN, 0 };
	ssize_t		 k;
	int		 rounds;

	for (rounds = 0; rounds < 2000; rounds++) {
		if (poll(&pfd, 1, idle_ms) <= 0)
			return;
		k = read(fd, tmp, sizeof(tmp));
		if (k <= 0)
			return;
		buf_add(b, tmp, (size_t)k);
	}
}

static void *
fake_main(void *arg)
{
	struct fake	*f = arg;
	int		 fd;

	fd = accept(f->lfd, NULL, NULL);
	if (fd == -1)
		return NULL;
	fake_read(fd, &f->req, 150);
	if (!f->silent) {
		if (f->delay_ms > 0)
			sleep_ms(f->delay_ms);
		if (f->replylen > 0 &&
		    write(fd, f->reply, f->replylen) != (ssize_t)f->replylen)
			fprintf(stderr, "fake: short write\n");
		shutdown(fd, SHUT_WR);
	}
	/* Wait for the client to hang up (bounded). */
	fake_read(fd, &f->req, 1500);
	close(fd);
	return NULL;
}

/* Listens on a fresh loopback TCP port; addr gets "tcp:127.0.0.1:N". */
static int
fake_listen(char *addr, size_t addrlen)
{
	struct sockaddr_in	 sin;
	socklen_t		 sl = sizeof(sin);
	int			 fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == -1) {
		perror("fake_listen");
		exit(2);
	}
	snprintf(addr, addrlen, "tcp:127.0.0.1:%d", ntohs(sin.sin_port));
	return fd;
}

/* Appends one record to b. */
static void
rec(struct buf *b, int ver, int type, int id, const void *p, size_t n,
    int pad)
{
	unsigned char	 h[8] = { (unsigned char)ver, (unsigned char)type,
		(unsigned char)(id >> 8), (unsigned char)id,
		(unsigned char)(n >> 8), (unsigned char)n, (unsigned char)pad,
		0 };
	static const unsigned char zero[256];

	buf_add(b, h, 8);
	buf_add(b, p, n);
	buf_add(b, zero, (size_t)pad);
}

static void
end_rec(struct buf *b, int app_status, int proto)
{
	unsigned char	 e[8] = { (unsigned char)(app_status >> 24),
		(unsigned char)(app_status >> 16),
		(unsigned char)(app_status >> 8), (unsigned char)app_status,
		(unsigned char)proto, 0, 0, 0 };

	rec(b, 1, 3, 1, e, 8, 0);
}

/* Runs one exchange against a fake that answers with reply. */
static enum idem_err
fake_run(struct buf *reply, int delay_ms, int silent, int64_t tmo,
    char *const *params, const void *body, size_t blen, struct sink *s,
    int *st, struct buf *seen)
{
	struct fake	 f;
	pthread_t	 t;
	char		 addr[64];
	enum idem_err	 er;

	memset(&f, 0, sizeof(f));
	f.lfd = fake_listen(addr, sizeof(addr));
	f.reply = reply != NULL ? reply->p : NULL;
	f.replylen = reply != NULL ? reply->len : 0;
	f.delay_ms = delay_ms;
	f.silent = silent;
	buf_init(&f.req, 16 * 1024 * 1024);
	pthread_create(&t, NULL, fake_main, &f);
	er = call(addr, params, body, blen, tmo, s, st);
	pthread_join(t, NULL);
	close(f.lfd);
	if (seen != NULL)
		*seen = f.req;
	else
		buf_free(&f.req);
	return er;
}

/* Decodes what the client sent and checks it record by record. */
static void
check_request(const struct buf *req, const char *want_param, size_t bodylen)
{
	const unsigned char	*p = (const unsigned char *)req->p;
	size_t			 off = 0, n, pad, po, nl, vl;
	struct buf		 params, in;
	int			 begin_ok = 0, params_end = 0, stdin_end = 0;
	int			 order_ok = 1, sizes_ok = 1, found = 0;

	buf_init(&params, 16 * 1024 * 1024);
	buf_init(&in, 16 * 1024 * 1024);
	while (req->len - off >= 8) {
		n = ((size_t)p[off + 4] << 8) | p[off + 5];
		pad = p[off + 6];
		if (p[off] != 1 || p[off + 2] != 0 || p[off + 3] != 1 ||
		    off + 8 + n + pad > req->len) {
			order_ok = 0;
			break;
		}
		if ((n + pad) % 8 != 0)
			sizes_ok = 0;
		switch (p[off + 1]) {
		case 1:
			/* RESPONDER, no FCGI_KEEP_CONN */
			begin_ok = off == 0 && n == 8 && p[off + 8] == 0 &&
			    p[off + 9] == 1 && p[off + 10] == 0;
			break;
		case 4:
			if (params_end)
				order_ok = 0;
			if (n == 0)
				params_end = 1;
			buf_add(&params, p + off + 8, n);
			break;
		case 5:
			if (!params_end || stdin_end)
				order_ok = 0;
			if (n == 0)
				stdin_end = 1;
			buf_add(&in, p + off + 8, n);
			break;
		default:
			order_ok = 0;
		}
		off += 8 + n + pad;
	}
	CHECK(begin_ok && order_ok && sizes_ok);
	CHECK(params_end && stdin_end && off == req->len);
	CHECK(in.len == bodylen);
	/* Walk the name-value pairs. */
	for (po = 0; po < params.len;) {
		const unsigned char *q = (const unsigned char *)params.p;

		if (fcgi_pair_decode(q, params.len, &po, &nl, &vl) != IDEM_OK)
			break;
		if (strlen(want_param) == nl + 1 + vl &&
		    memcmp(want_param, q + po, nl) == 0 &&
		    want_param[nl] == '=' &&
		    memcmp(want_param + nl + 1, q + po + nl, vl) == 0)
			found = 1;
		if (nl == 10 && memcmp(q + po, "HTTP_PROXY", 10) == 0)
			found = -100;
		po += nl + vl;
	}
	CHECK(po == params.len);
	CHECK(found == 1);
	buf_free(&params);
	buf_free(&in);
}

static void
test_fake_encoding(void)
{
	size_t		 blen = 200000, vlen = 70000;
	char		*body = malloc(blen), *big = malloc(vlen + 16);
	char *const	 params[] = { "REQUEST_METHOD=POST", big,
		"HTTP_PROXY=http://evil.test", "NOEQUALS", NULL };
	struct buf	 reply, seen;
	struct sink	 s;
	int		 st = -1;

	memset(body, 'q', blen);
	memcpy(big, "HTTP_X_LONG=", 12);
	memset(big + 12, 'L', vlen);
	big[12 + vlen] = '\0';
	buf_init(&reply, 1 << 20);
	rec(&reply, 1, 6, 1, "Content-Type: a/b\r\n\r\nok", 23, 1);
	rec(&reply, 1, 6, 1, NULL, 0, 0);
	end_rec(&reply, 7, 0);
	sink_init(&s);
	CHECK(fake_run(&reply, 0, 0, 5000, params, body, blen, &s, &st,
	    &seen) == IDEM_OK);
	CHECK(st == 7);
	CHECK(s.b.len == 23 && memcmp(s.b.p, "Content-Type: a/b\r\n\r\nok",
	    23) == 0);
	check_request(&seen, big, blen);
	buf_free(&seen);

	/* No CONTENT_LENGTH from the web server: the body's length is sent. */
	buf_reset(&s.b);
	{
		char *const p2[] = { "REQUEST_METHOD=POST", "CONTENT_LENGTH=",
			NULL };

		CHECK(fake_run(&reply, 0, 0, 5000, p2, body, 12345, &s, &st,
		    &seen) == IDEM_OK);
		check_request(&seen, "CONTENT_LENGTH=12345", 12345);
		buf_free(&seen);
	}
	buf_free(&s.b);
	buf_free(&reply);
	free(body);
	free(big);
}

static void
test_fake_protocol(void)
{
	char *const	 params[] = { "REQUEST_METHOD=GET", NULL };
	struct buf	 r;
	struct sink	 s;
	int		 st = -1;
	unsigned char	 junk[100];

	memset(junk, 'j', sizeof(junk));
	buf_init(&r, 1 << 20);
	sink_init(&s);

	/* Unknown and management records are skipped; stderr logged. */
	rec(&r, 1, 200, 1, junk, 100, 4);
	rec(&r, 1, 10, 0, junk, 16, 0);
	rec(&r, 1, 11, 0, junk, 8, 0);
	rec(&r, 1, 7, 1, "warn\n", 5, 3);
	rec(&r, 1, 6, 1, "Status: 201\r\n\r\n", 15, 0);
	end_rec(&r, 0, 0);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_OK);
	CHECK(s.b.len == 15);

	/* A flood of STDERR is bounded as a CGI's is: a prefix of lines,
	 * then one line with the count of what was dropped. */
	{
		char	 path[1100], line[32], *log;
		int	 fd, saved, i, n = 0;
		ssize_t	 k;
		const char *p;

		buf_reset(&r);
		buf_reset(&s.b);
		for (i = 0; i < 1000; i++) {
			snprintf(line, sizeof(line), "flood %04d\n", i);
			rec(&r, 1, 7, 1, line, strlen(line), 0);
		}
		rec(&r, 1, 6, 1, "Status: 201\r\n\r\n", 15, 0);
		end_rec(&r, 0, 0);
		snprintf(path, sizeof(path), "%s/flood.log", tmpdir);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		saved = dup(2);
		dup2(fd, 2);
		CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st,
		    NULL) == IDEM_OK);
		dup2(saved, 2);
		close(saved);
		log = calloc(1, 1 << 20);
		k = log != NULL ? pread(fd, log, (1 << 20) - 1, 0) : -1;
		close(fd);
		for (p = log; k > 0 && (p = strstr(p, "flood ")) != NULL; p++)
			n++;
		printf("# stderr flood: %d of 1000 lines logged\n", n);
		CHECK(n > 0 && n <= 20);
		CHECK(k > 0 && strstr(log, "more bytes of stderr dropped") !=
		    NULL);
		CHECK(s.b.len == 15);
		free(log);
	}

	/* Once connected, the app may have run: a broken exchange is
	 * IDEM_EBROKEN (its key is kept as a tombstone), never "nothing
	 * happened".  Bad version. */
	buf_reset(&r);
	buf_reset(&s.b);
	rec(&r, 2, 6, 1, "x", 1, 0);
	end_rec(&r, 0, 0);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EBROKEN);

	/* Another request id. */
	buf_reset(&r);
	rec(&r, 1, 6, 2, "x", 1, 0);
	end_rec(&r, 0, 0);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EBROKEN);

	/* A record type only web servers send. */
	buf_reset(&r);
	rec(&r, 1, 5, 1, "x", 1, 0);
	end_rec(&r, 0, 0);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EBROKEN);

	/* Closed before END_REQUEST, also mid-record. */
	buf_reset(&r);
	rec(&r, 1, 6, 1, "Content-Type: a/b\r\n\r\n", 21, 0);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EBROKEN);
	buf_reset(&r);
	buf_add(&r, "\1\6\0\1\1\0\0\0abc", 11);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EBROKEN);
	CHECK(fake_run(NULL, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EBROKEN);

	/* Short END_REQUEST; overloaded app. */
	buf_reset(&r);
	rec(&r, 1, 3, 1, "\0\0\0\0", 4, 4);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EBROKEN);
	buf_reset(&r);
	end_rec(&r, 0, 2);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EHANDLER);

	/* Refused after it answered: it ran, so broken, not "refused"
	 * (which would free its key for a second run). */
	buf_reset(&r);
	rec(&r, 1, 6, 1, "Status: 200\r\n\r\npaid", 19, 0);
	end_rec(&r, 0, 3);
	CHECK(fake_run(&r, 0, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_EBROKEN);

	/* A silent app: the deadline passes (504). */
	buf_reset(&s.b);
	s.ticks = 0;
	CHECK(fake_run(NULL, 0, 1, 400, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_ETIMEOUT);
	CHECK(s.ticks >= 3);

	/* A slow but timely app: ticks while waiting, then OK. */
	buf_reset(&r);
	rec(&r, 1, 6, 1, "Status: 204\r\n\r\n", 15, 0);
	end_rec(&r, 3, 0);
	s.ticks = 0;
	CHECK(fake_run(&r, 300, 0, 5000, params, NULL, 0, &s, &st, NULL) ==
	    IDEM_OK);
	CHECK(st == 3 && s.ticks >= 3);

	buf_free(&r);
	buf_free(&s.b);
}

/* ---- the app process ---- */

static pid_t
start_app(const char *argv0)
{
	char		 bin[PATH_MAX], dir[PATH_MAX];
	char		*args[4];
	const char	*env = getenv("IDEM_FCGI_APP");
	struct sockaddr_un sun;
	pid_t		 pid;
	int		 i, fd, ok = 0;

	snprintf(dir, sizeof(dir), "%s", argv0);
	if (env != NULL && env[0] != '\0')
		snprintf(bin, sizeof(bin), "%s", env);
	else
		snprintf(bin, sizeof(bin), "%s/it/fcgi_app", dirname(dir));
	if (access(bin, X_OK) != 0) {
		printf("FAIL: %s not built (make build/tests/it/fcgi_app)\n",
		    bin);
		return -1;
	}
	snprintf(appaddr, sizeof(appaddr), "unix:%s/app.sock", tmpdir);
	args[0] = bin;
	args[1] = "-s";
	args[2] = appaddr;
	args[3] = NULL;
	if (posix_spawn(&pid, bin, NULL, NULL, args, environ) != 0)
		return -1;
	/* Until it accepts connections, at most 5 s. */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(appaddr + 5) >= sizeof(sun.sun_path)) {
		printf("FAIL: socket path too long: %s\n", appaddr + 5);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	memcpy(sun.sun_path, appaddr + 5, strlen(appaddr + 5));
	for (i = 0; i < 250 && !ok; i++) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd != -1 && connect(fd, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0)
			ok = 1;
		if (fd != -1)
			close(fd);
		if (!ok)
			sleep_ms(20);
	}
	if (!ok) {
		printf("FAIL: fcgi_app did not start\n");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

int
main(int argc, char *argv[])
{
	const char	*base = getenv("TESTROOT");
	char		 cmd[1100];
	pid_t		 app;
	int		 before, after;

	signal(SIGPIPE, SIG_IGN);
	snprintf(tmpdir, sizeof(tmpdir), "%s/idem-up-XXXXXX",
	    base != NULL && base[0] != '\0' ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	before = count_fds();
	test_unreachable();
	test_fake_encoding();
	test_fake_protocol();
	app = start_app(argc > 0 ? argv[0] : "build/tests/test_upstream");
	if (app > 0) {
		test_hello();
		test_echo(appaddr, 1024 * 1024, 1);
		test_echo(appaddr, 70000, 0);
		test_echo(appaddr, 0, 1);
		test_big_param();
		test_stderr_and_abort();
		kill(app, SIGTERM);
		waitpid(app, NULL, 0);
	} else
		check_failed++;
	after = count_fds();
	CHECK(before > 0 && before == after);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return CHECK_DONE();
}
