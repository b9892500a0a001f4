/* libFuzzer harness for the CGI response header parser and the replay filter. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

/* The default store_headers_drop. */
static char *const cookies[] = { "Set-Cookie", "Set-Cookie2" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every stored line is "Name: value\r\n" with a token name and a clean value. */
static void
check_hdrs(const struct buf *b)
{
	size_t	 i = 0, s;

	while (i < b->len) {
		s = i;
		while (i < b->len && b->p[i] != ':')
			if (strchr("\r\n", b->p[i++]) != NULL || b->p[i - 1] == 0)
				abort();
		if (i == s || i + 1 >= b->len || b->p[i + 1] != ' ')
			abort();
		while (i < b->len && b->p[i] != '\r')
			if (b->p[i++] == '\n' || b->p[i - 1] == 0)
				abort();
		if (i + 1 >= b->len || b->p[i + 1] != '\n')
			abort();
		i += 2;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char		*p = (const char *)data;
	struct answer	 h, h2;
	struct buf		 raw, out;
	size_t			 used = 0, used2 = 0, vl;
	enum idem_err		 er;

	answer_init(&h, RESP_HEAD_MAX, 0);
	answer_init(&h2, RESP_HEAD_MAX, 0);
	er = resp_parse_cgi(p, size, &h, &used, NULL);
	if (er == IDEM_OK) {
		if (used == 0 || used > size || used > RESP_HEAD_MAX ||
		    h.status < 100 || h.status > 599)
			abort();
		check_hdrs(&h.hdrs);
		/* The block alone parses the same; one byte less does not. */
		if (resp_parse_cgi(p, used, &h2, &used2, NULL) != IDEM_OK ||
		    used2 != used || h2.status != h.status ||
		    h2.hdrs.len != h.hdrs.len)
			abort();
		if (resp_parse_cgi(p, used - 1, &h2, &used2, NULL) == IDEM_OK)
			abort();
		buf_init(&out, RESP_HEAD_MAX);
		if (resp_hdrs_for_replay(&h.hdrs, cookies, 2, &out) != IDEM_OK ||
		    out.len > h.hdrs.len)
			abort();
		check_hdrs(&out);
		if (resp_hdr_get(&out, "Set-Cookie", &vl) != NULL)
			abort();
		(void)resp_hdr_get(&h.hdrs, "Content-Type", &vl);
		buf_free(&out);
	} else if (er != IDEM_EAGAIN && er != IDEM_EHANDLER &&
	    er != IDEM_ETOOBIG)
		abort();
	else if (er == IDEM_EAGAIN && size > RESP_HEAD_MAX)
		abort();

	/* The header-list helpers on arbitrary bytes. */
	buf_init(&raw, size + 1);
	buf_add(&raw, p, size);
	buf_init(&out, 2 * size + 64);
	(void)resp_hdrs_for_replay(&raw, cookies, 2, &out);
	(void)resp_hdr_get(&raw, "Location", &vl);
	buf_free(&raw);
	buf_free(&out);
	answer_free(&h);
	answer_free(&h2);
	return 0;
}
