/* libFuzzer harness for the gateway's FastCGI input (fcgi/fconn.c): records, params. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fconn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The first byte picks a chunk size, so records split everywhere; the
 * rest is what a web server (or an attacker on the socket) sends.  The
 * parser must never keep more than its limits, and decoded params must
 * be "NAME=value" strings inside what was sent.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fconn	 c;
	size_t		 off = 1, chunk, used, i;
	char		**env;
	enum idem_err	 er = IDEM_EAGAIN;

	if (size < 1)
		return 0;
	chunk = (size_t)data[0] % 64 + 1;
	fconn_init(&c, 4096, 8192);
	while (off < size) {
		size_t	 n = size - off < chunk ? size - off : chunk;

		er = fconn_feed(&c, data + off, n, &used);
		if (er != IDEM_OK && er != IDEM_EAGAIN)
			break;	/* the connection would be closed */
		if (used > n || (er == IDEM_EAGAIN && used != n))
			abort();
		if (c.params.len > 4096 || c.body.len > 8192)
			abort();
		off += used;
		buf_reset(&c.reply);
		if (er == IDEM_OK) {
			if (fconn_params(&c, &env) == IDEM_OK) {
				for (i = 0; env[i] != NULL; i++)
					if (strchr(env[i], '=') == NULL ||
					    env[i][0] == '=' ||
					    strlen(env[i]) > c.params.len)
						abort();
				free(env);
			}
			fconn_reset(&c);
		}
	}
	fconn_reset(&c);
	buf_free(&c.params);
	buf_free(&c.body);
	buf_free(&c.reply);
	return 0;
}
