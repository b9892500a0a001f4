/* libFuzzer harness for canonical request bodies: bounded, deterministic, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const types[] = {
	"application/json", "application/x-www-form-urlencoded",
	"multipart/form-data; boundary=B", "multipart/form-data; boundary=\"-x-\"",
	"application/ld+json", "text/plain",
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf	 a, b;
	const char	*ta, *tb, *ct;
	int		 ra, rb;

	if (size == 0)
		return 0;
	ct = types[data[0] % (sizeof(types) / sizeof(types[0]))];
	data++;
	size--;
	buf_init(&a, CANON_MAX(size));
	buf_init(&b, CANON_MAX(size));
	ta = tb = ct;
	ra = canon_body(ct, data, size, &a, &ta);
	rb = canon_body(ct, data, size, &b, &tb);
	/* the same input, the same answer; a failure leaves nothing */
	if (ra != rb || a.len != b.len || (a.len > 0 && memcmp(a.p, b.p,
	    a.len) != 0) || strcmp(ta, tb) != 0)
		abort();
	if (!ra && (a.len != 0 || ta != ct))
		abort();
	if (a.len > CANON_MAX(size))
		abort();
	buf_free(&a);
	buf_free(&b);
	return 0;
}
