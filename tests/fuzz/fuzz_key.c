/* libFuzzer harness for Idempotency-Key parsing, with round-trip and hashing checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		 key[FP_KEY_MAX + 1], again[FP_KEY_MAX + 1];
	char		 quoted[2 * FP_KEY_MAX + 3], lock[FP_LOCKNAME_LEN];
	unsigned char	 scope[FP_LEN], fp[FP_LEN];
	size_t		 n, m, i, q = 0;

	if (key_parse((const char *)data, size, key, &n) != IDEM_OK)
		return 0;
	if (n == 0 || n > FP_KEY_MAX || key[n] != '\0' || strlen(key) != n)
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)key[i] < 0x20 || (unsigned char)key[i] > 0x7e)
			abort();
	/* Writing the key as a Structured-Field string gives it back. */
	quoted[q++] = '"';
	for (i = 0; i < n; i++) {
		if (key[i] == '"' || key[i] == '\\')
			quoted[q++] = '\\';
		quoted[q++] = key[i];
	}
	quoted[q++] = '"';
	if (key_parse(quoted, q, again, &m) != IDEM_OK || m != n ||
	    memcmp(key, again, n) != 0)
		abort();
	fp_scope("none", "", scope);
	fp_lockname(scope, key, n, lock);
	if (strlen(lock) != FP_LOCKNAME_LEN - 1)
		abort();
	fp_request(&(struct fp_req){ .method = "POST", .path = "/",
	    .body = data, .bodylen = size }, fp);
	return 0;
}
