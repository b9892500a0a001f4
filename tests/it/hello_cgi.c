/* The smallest useful CGI: for benchmarks against fcgiwrap. */
#include <string.h>
#include <unistd.h>

int
main(void)
{
	static const char	 r[] = "Content-Type: text/plain\r\n\r\nhello\n";

	return write(1, r, sizeof(r) - 1) == (ssize_t)(sizeof(r) - 1) ? 0 : 1;
}
