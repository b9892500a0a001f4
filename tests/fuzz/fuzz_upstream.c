/* libFuzzer harness for the FastCGI client's reading of an app's records (fcgi/upstream_rd.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "upstream_rd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t	 fz_out;

static enum idem_err
fz_sink(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	fz_out += n;
	return IDEM_OK;
}

/*
 * An upstream app (PHP-FPM, or something hostile on its socket) answers
 * with these bytes, cut in chunks of the first byte's size.  Whatever it
 * sends, the parser must not pass on more than it received.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct upstream_req	 r;
	struct upstream_rd	 rd;
	size_t			 off = 1, chunk;

	if (size < 1)
		return 0;
	log_set_level(LOG_LVL_ERR);
	memset(&r, 0, sizeof(r));
	memset(&rd, 0, sizeof(rd));
	r.addr = "unix:/fuzz";
	r.ex.out = fz_sink;
	r.ex.tag = "fuzz";
	fz_out = 0;
	chunk = (size_t)data[0] % 64 + 1;
	while (off < size && !rd.done) {
		size_t	 n = size - off < chunk ? size - off : chunk;

		if (upstream_rd_feed(&r, &rd, (const char *)data + off, n) !=
		    IDEM_OK)
			break;
		off += n;
	}
	if (fz_out > size)
		abort();
	return 0;
}
