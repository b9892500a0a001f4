/* For tests/it/t_canon_diff: the request fingerprint idemgate computes for each body, canonical or exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "canon.h"
#include "fp.h"

/*
 * Reads records from stdin: a line with the content type, a line with the
 * body's length, the body.  Prints per record "C " (canonical) or "X "
 * (exact bytes) and the hex fingerprint idemgate would store for a POST
 * to / with that body and fingerprint = canonical.
 */
int
main(void)
{
	char		 ctype[512], lenline[64], hex[2 * FP_LEN + 1];
	unsigned char	 fp[FP_LEN];
	const char	*ct;
	struct buf	 canon;
	size_t		 len, i;
	char		*body;
	int		 whole;

	while (fgets(ctype, sizeof(ctype), stdin) != NULL &&
	    fgets(lenline, sizeof(lenline), stdin) != NULL) {
		ctype[strcspn(ctype, "\n")] = '\0';
		len = strtoul(lenline, NULL, 10);
		if ((body = malloc(len + 1)) == NULL ||
		    fread(body, 1, len, stdin) != len)
			return 1;
		buf_init(&canon, CANON_MAX(len));
		ct = ctype;
		whole = canon_body(ctype, body, len, &canon, &ct);
		fp_request(&(struct fp_req){ .method = "POST", .path = "/",
		    .query = "", .ctype = ct, .body = whole ? canon.p : body,
		    .bodylen = whole ? canon.len : len }, fp);
		for (i = 0; i < FP_LEN; i++)
			snprintf(hex + 2 * i, 3, "%02x", fp[i]);
		printf("%c %s\n", whole ? 'C' : 'X', hex);
		buf_free(&canon);
		free(body);
	}
	return 0;
}
