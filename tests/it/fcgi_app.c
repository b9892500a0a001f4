/* A small libfcgi responder: the upstream app in tests, the bare baseline in benchmarks. */
/*
 * Usage: fcgi_app                      serve on the socket inherited as fd 0
 *        fcgi_app -s unix:/path        listen on a unix socket
 *        fcgi_app -s tcp:127.0.0.1:N   listen on a loopback TCP port
 *
 * Answers "hello\n" as text/plain.  When QUERY_STRING contains "echo=1" it
 * answers with the request body byte for byte, the method in X-Method and
 * the query in X-Query; "stderr=1" also writes a line to FCGI_STDERR;
 * "pause=MS" answers "first\n", flushed, then "second\n" MS later (an app
 * streaming its answer, as PHP's flush() does); "params=1" lists the
 * params it was given, one a line; "drip=N" writes a line every 100 ms,
 * N times, and says on stderr whether it got to the end or found its
 * connection gone ("fcgi_app: drip stopped at I" / "drip done").
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcgiapp.h>

static void
usage(void)
{
	fprintf(stderr, "usage: fcgi_app [-s unix:/path | -s tcp:HOST:PORT]\n");
	exit(2);
}

/* Streams the body back; returns bytes copied. */
static long
echo_body(FCGX_Request *req)
{
	char	 buf[16384];
	int	 n;
	long	 total = 0;

	while ((n = FCGX_GetStr(buf, sizeof(buf), req->in)) > 0) {
		if (FCGX_PutStr(buf, n, req->out) != n)
			break;
		total += n;
	}
	return total;
}

static void
serve(FCGX_Request *req)
{
	const char	*q = FCGX_GetParam("QUERY_STRING", req->envp);
	const char	*m = FCGX_GetParam("REQUEST_METHOD", req->envp);
	const char	*p;

	if (q == NULL)
		q = "";
	if (m == NULL)
		m = "";
	if (strstr(q, "stderr=1") != NULL)
		FCGX_FPrintF(req->err, "fcgi_app: a line for the log\n");
	if (strstr(q, "echo=1") != NULL) {
		/* Header values come from the request: keep them one line. */
		if (strpbrk(m, "\r\n") != NULL || strpbrk(q, "\r\n") != NULL) {
			FCGX_FPrintF(req->out, "Status: 400 Bad Request\r\n"
			    "Content-Type: text/plain\r\n\r\nbad\n");
			return;
		}
		FCGX_FPrintF(req->out, "Content-Type: application/octet-stream"
		    "\r\nX-Method: %s\r\nX-Query: %s\r\n\r\n", m, q);
		echo_body(req);
		return;
	}
	if (strstr(q, "params=1") != NULL) {
		char	**e;

		FCGX_FPrintF(req->out, "Content-Type: text/plain\r\n\r\n");
		for (e = req->envp; *e != NULL; e++)
			FCGX_FPrintF(req->out, "%s\n", *e);
		return;
	}
	if ((p = strstr(q, "drip=")) != NULL) {
		long	 i, n = atol(p + 5);

		FCGX_FPrintF(req->out, "Content-Type: text/plain\r\n\r\n");
		for (i = 0; i < n; i++) {
			if (FCGX_FPrintF(req->out, "drip %ld\n", i) < 0 ||
			    FCGX_FFlush(req->out) < 0) {
				fprintf(stderr, "fcgi_app: drip stopped at "
				    "%ld\n", i);
				return;
			}
			usleep(100 * 1000);
		}
		fprintf(stderr, "fcgi_app: drip done\n");
		return;
	}
	if ((p = strstr(q, "pause=")) != NULL) {
		FCGX_FPrintF(req->out, "Content-Type: text/plain\r\n\r\n"
		    "first\n");
		FCGX_FFlush(req->out);
		usleep((useconds_t)atol(p + 6) * 1000);
		FCGX_FPrintF(req->out, "second\n");
		return;
	}
	FCGX_FPrintF(req->out, "Content-Type: text/plain\r\n\r\nhello\n");
}

int
main(int argc, char *argv[])
{
	FCGX_Request	 req;
	const char	*addr = NULL;
	int		 c, sock = 0;

	while ((c = getopt(argc, argv, "s:")) != -1) {
		if (c == 's')
			addr = optarg;
		else
			usage();
	}
	signal(SIGPIPE, SIG_IGN);
	if (FCGX_Init() != 0) {
		fprintf(stderr, "fcgi_app: FCGX_Init failed\n");
		return 1;
	}
	if (addr != NULL) {
		if (strncmp(addr, "unix:", 5) == 0) {
			unlink(addr + 5);
			sock = FCGX_OpenSocket(addr + 5, 128);
		} else if (strncmp(addr, "tcp:", 4) == 0)
			sock = FCGX_OpenSocket(addr + 4, 128);
		else
			usage();
		if (sock < 0) {
			fprintf(stderr, "fcgi_app: cannot listen on %s\n", addr);
			return 1;
		}
		if (strncmp(addr, "unix:", 5) == 0)
			chmod(addr + 5, 0600);
	}
	if (FCGX_InitRequest(&req, sock, 0) != 0)
		return 1;
	while (FCGX_Accept_r(&req) >= 0) {
		serve(&req);
		FCGX_Finish_r(&req);
	}
	return 0;
}
