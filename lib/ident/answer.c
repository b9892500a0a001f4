/* One answer: what a handler said, what the store keeps, what a retry gets. */
#include <stdint.h>
#include <string.h>

#include "answer.h"

void
answer_init(struct answer *a, size_t hdrs_max, size_t body_max)
{
	a->status = 0;
	a->expires_s = 0;
	buf_init(&a->hdrs, hdrs_max);
	buf_init(&a->body, body_max);
}

void
answer_free(struct answer *a)
{
	if (a == NULL)
		return;
	a->status = 0;
	a->expires_s = 0;
	buf_free(&a->hdrs);
	buf_free(&a->body);
}

void
answer_borrow(struct answer *a, int status, const void *hdrs,
    size_t hdrslen, const void *body, size_t bodylen)
{
	memset(a, 0, sizeof(*a));
	a->status = status;
	a->hdrs.p = (char *)(uintptr_t)hdrs;
	a->hdrs.len = hdrslen;
	a->hdrs.max = hdrslen;
	a->body.p = (char *)(uintptr_t)body;
	a->body.len = bodylen;
	a->body.max = bodylen;
}
