/* A legacy "payments" CGI for integration tests: counts its runs, echoes the request. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

extern char **environ;

/* Value of NAME in the query string, or NULL; copied into out (bounded). */
static const char *
query_get(const char *q, const char *name, char *out, size_t outlen)
{
	size_t		 nlen = strlen(name);
	const char	*p = q;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
			size_t	 n = strcspn(p + nlen + 1, "&");

			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, p + nlen + 1, n);
			out[n] = '\0';
			return out;
		}
		p = strchr(p, '&');
		if (p != NULL)
			p++;
	}
	return NULL;
}

static long
query_num(const char *q, const char *name, long dflt)
{
	char	 v[32];

	if (query_get(q, name, v, sizeof(v)) == NULL)
		return dflt;
	return strtol(v, NULL, 10);
}

static void
sleep_ms(long ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
write_all(const void *p, size_t n)
{
	const char	*c = p;

	while (n > 0) {
		ssize_t	 w = write(1, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			_exit(3);
		}
		c += w;
		n -= (size_t)w;
	}
}

/* Appends one line to "<own executable>.<suffix>" (the run counter). */
static void
note(const char *self, const char *suffix, const char *line)
{
	char	 path[PATH_MAX + 16];
	int	 fd;

	snprintf(path, sizeof(path), "%s.%s", self, suffix);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) < 0)
		(void)0;
	close(fd);
}

/* "0 1 2": the descriptors this process holds (what it inherited). */
static void
fd_list(char *out, size_t outlen)
{
	DIR		*d = opendir("/proc/self/fd");
	struct dirent	*e;
	size_t		 n = 0;

	out[0] = '\0';
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL && n + 16 < outlen) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		n += (size_t)snprintf(out + n, outlen - n, "%s%s",
		    n > 0 ? " " : "", e->d_name);
	}
	closedir(d);
}

static const char *
env_or(const char *name, const char *dflt)
{
	const char	*v = getenv(name);

	return v != NULL ? v : dflt;
}

int
main(void)
{
	char		 self[PATH_MAX], line[2048], tok[64], hex[65], hdr[1024];
	const char	*q = env_or("QUERY_STRING", "");
	unsigned char	*body = NULL, md[EVP_MAX_MD_SIZE];
	size_t		 blen = 0, bcap = 0;
	unsigned int	 mdlen = 0;
	struct timespec	 now;
	ssize_t		 n;
	long		 sleepms, status, nbytes;
	int		 i;

	signal(SIGPIPE, SIG_DFL);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 2;
	self[n] = '\0';
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(tok, sizeof(tok), "%d-%lld%09ld", (int)getpid(),
	    (long long)now.tv_sec, now.tv_nsec);
	/* run= is "pid-start": the start time, in ns, for run timelines */
	snprintf(line, sizeof(line),
	    "pid=%d ppid=%d pgid=%d method=%s query=%s key=%s run=%s\n",
	    (int)getpid(), (int)getppid(), (int)getpgid(0),
	    env_or("REQUEST_METHOD", "-"), q, env_or("HTTP_IDEMPOTENCY_KEY", "-"),
	    tok);
	note(self, "runs", line);
	if (query_num(q, "exclusive", 0)) {
		/* exclusive=1: runs of this copy must never overlap; one that
		 * finds the lock taken says so in "<self>.overlap". */
		char	 lk[PATH_MAX + 16];
		int	 fd;

		/* per key when there is one: "<self>.lock.<key>" */
		snprintf(lk, sizeof(lk), "%s.lock.%.64s", self,
		    env_or("HTTP_IDEMPOTENCY_KEY", ""));
		for (char *c = lk + strlen(self); *c != '\0'; c++)
			if (*c == '/')
				*c = '_';
		fd = open(lk, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0)
			note(self, "overlap", line);
		/* fd stays open: the lock lasts as long as this process */
	}

	if (query_num(q, "ignore_stdin", 0) == 0) {
		for (;;) {
			if (blen == bcap) {
				unsigned char	*nb;

				bcap = bcap ? bcap * 2 : 65536;
				nb = realloc(body, bcap);
				if (nb == NULL)
					return 2;
				body = nb;
			}
			n = read(0, body + blen, bcap - blen);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			blen += (size_t)n;
		}
	}
	EVP_Digest(body ? body : (unsigned char *)"", blen, md, &mdlen,
	    EVP_sha256(), NULL);
	for (i = 0; i < (int)mdlen && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	hex[64] = '\0';
	/* Only the digest is needed from here on (and no path may leak it). */
	free(body);
	body = NULL;

	if (query_num(q, "stderr", 0) > 0) {
		/* stderr=N: N bytes of noise, 100 to a line */
		long	 left = query_num(q, "stderr", 0);
		char	 l[101];

		memset(l, 'e', 100);
		l[100] = '\n';
		while (left > 0) {
			long	 k = left > 101 ? 101 : left;

			if (write(2, l, (size_t)k) < 0)
				break;
			left -= k;
		}
	}
	if (query_num(q, "fds", 0)) {
		char	 fds[1024];

		fd_list(fds, sizeof(fds));
		snprintf(line, sizeof(line), "Status: 201 Created\r\n"
		    "Content-Type: text/plain\r\n\r\nfds=%s\n", fds);
		write_all(line, strlen(line));
		return 0;
	}
	if (query_num(q, "linger", 0) > 0 || query_num(q, "bgchild", 0) > 0) {
		/*
		 * A complete answer (with Content-Length), then: linger=MS
		 * keeps running (close=1: with stdout closed); bgchild=MS
		 * leaves a child holding stdout (setsid=1: in its own
		 * session) and exits.  "<self>.linger" gets a line when the
		 * lingering process ends on its own.
		 */
		long	 lg = query_num(q, "linger", 0);
		long	 bg = query_num(q, "bgchild", 0);
		char	 b[128];
		pid_t	 c;

		snprintf(b, sizeof(b), "run=%s\n", tok);
		snprintf(line, sizeof(line), "Status: 201 Created\r\n"
		    "Content-Type: text/plain\r\nContent-Length: %zu\r\n"
		    "\r\n%s", strlen(b), b);
		if (bg > 0) {
			if ((c = fork()) == 0) {
				if (query_num(q, "setsid", 0))
					setsid();
				sleep_ms(bg);
				note(self, "linger", "child done\n");
				_exit(0);
			}
			snprintf(hdr, sizeof(hdr), "%d\n", (int)c);
			note(self, "child", hdr);
			write_all(line, strlen(line));
			return 0;
		}
		write_all(line, strlen(line));
		if (query_num(q, "close", 0))
			close(1);
		sleep_ms(lg);
		note(self, "linger", "done\n");
		return 0;
	}
	if (query_num(q, "headcrash", 0)) {
		/* headcrash=1: a whole header block, then the crash */
		snprintf(hdr, sizeof(hdr), "Status: 200 OK\r\n"
		    "Content-Type: text/plain\r\n\r\npartial");
		write_all(hdr, strlen(hdr));
		abort();
	}
	if (query_num(q, "stream", 0) > 0) {
		/* stream=N bytes in 64 KiB steps every step_ms (default 50),
		 * announced with Content-Length when cl=1 */
		long	 left = query_num(q, "stream", 0);
		long	 step = query_num(q, "step_ms", 50);
		char	 chunk[65536];

		if (query_num(q, "cl", 0))
			snprintf(hdr, sizeof(hdr), "Status: 201 Created\r\n"
			    "Content-Type: application/octet-stream\r\n"
			    "Content-Length: %ld\r\n\r\n", left);
		else
			snprintf(hdr, sizeof(hdr), "Status: 201 Created\r\n"
			    "Content-Type: application/octet-stream\r\n\r\n");
		write_all(hdr, strlen(hdr));
		memset(chunk, 's', sizeof(chunk));
		while (left > 0) {
			size_t	 k = left > (long)sizeof(chunk) ? sizeof(chunk) : (size_t)left;

			write_all(chunk, k);
			left -= (long)k;
			sleep_ms(step);
		}
		return 0;
	}

	/* sleep=MS; an X-Sleep: MS header overrides it (headers are not
	 * fingerprinted: a retry of the same request may run shorter) */
	sleepms = query_num(q, "sleep", 0);
	if (getenv("HTTP_X_SLEEP") != NULL)
		sleepms = strtol(getenv("HTTP_X_SLEEP"), NULL, 10);
	if (query_num(q, "child", 0)) {
		pid_t	 c = fork();

		if (c == 0) {
			sleep_ms(sleepms > 0 ? sleepms : 5000);
			_exit(0);
		}
		snprintf(line, sizeof(line), "%d\n", (int)c);
		note(self, "child", line);
	}
	if (sleepms > 0)
		sleep_ms(sleepms);
	if (query_num(q, "crash", 0))
		abort();

	if (query_num(q, "garbage", 0)) {
		static const char	 g[] = "this is not a header line\n\n\x01\x02 junk\n";

		write_all(g, sizeof(g) - 1);
		return 0;
	}
	if (query_num(q, "env", 0)) {
		char	**e;

		snprintf(hdr, sizeof(hdr), "Content-Type: text/plain\r\n\r\n");
		write_all(hdr, strlen(hdr));
		for (e = environ; *e != NULL; e++) {
			write_all(*e, strlen(*e));
			write_all("\n", 1);
		}
		return 0;
	}
	status = query_num(q, "status", 201);
	nbytes = query_num(q, "bytes", -1);
	if (query_num(q, "binary", 0) || nbytes >= 0)
		snprintf(hdr, sizeof(hdr), "Status: %ld Test\r\n"
		    "Content-Type: application/octet-stream\r\n"
		    "X-Payment-Id: %s\r\n\r\n", status, tok);
	else
		snprintf(hdr, sizeof(hdr), "Status: %ld Test\r\n"
		    "Content-Type: text/plain; charset=utf-8\r\n"
		    "Location: /payments/%s\r\n"
		    "X-Payment-Id: %s\r\n"
		    "ETag: \"%s\"\r\n"
		    "Set-Cookie: session=%s; Path=/\r\n"
		    "Idempotent-Replayed: handler-says-so\r\n"
		    "\r\n", status, tok, tok, tok, tok);
	write_all(hdr, strlen(hdr));
	if (query_num(q, "binary", 0)) {
		unsigned char	 b[256];

		for (i = 0; i < 256; i++)
			b[i] = (unsigned char)i;
		write_all(b, sizeof(b));
		write_all("\r\n\0\r\n\r\n", 7);
		return 0;
	}
	if (nbytes >= 0) {
		char	 chunk[8192];

		memset(chunk, 'x', sizeof(chunk));
		while (nbytes > 0) {
			size_t	 k = nbytes > (long)sizeof(chunk) ? sizeof(chunk) : (size_t)nbytes;

			write_all(chunk, k);
			nbytes -= (long)k;
		}
		return 0;
	}
	if (query_num(q, "done", 0)) {
		/*
		 * done=1: "<self>.done" gets "key run ppid=P end=NS" before
		 * the answer goes out: P is the parent then (the worker, or
		 * the supervisor once the worker died), NS the wall clock.
		 */
		clock_gettime(CLOCK_REALTIME, &now);
		snprintf(hdr, sizeof(hdr), "%s %s ppid=%d end=%lld%09ld\n",
		    env_or("HTTP_IDEMPOTENCY_KEY", "-"), tok, (int)getppid(),
		    (long long)now.tv_sec, now.tv_nsec);
		note(self, "done", hdr);
	}
	snprintf(line, sizeof(line), "method=%s\nquery=%s\ncontent_type=%s\n"
	    "content_length_env=%s\nbody_length=%ld\nbody_sha256=%s\nrun=%s\n",
	    env_or("REQUEST_METHOD", "-"), q, env_or("CONTENT_TYPE", "-"),
	    env_or("CONTENT_LENGTH", "-"),
	    query_num(q, "ignore_stdin", 0) ? -1L : (long)blen, hex, tok);
	write_all(line, strlen(line));
	return 0;
}
