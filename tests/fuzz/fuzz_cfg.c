/* libFuzzer harness for the configuration parser and route lookup. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = {
		"/", "/payments", "/payments/42", "/paymentsX", "/a/b/c", "",
	};
	struct cfg		*c = NULL;
	const struct route	*r;
	char			 err[256], s[64];
	int64_t			 ms;
	size_t			 i, sz;

	/* The value parsers on their own, as NUL-terminated strings. */
	if (size < sizeof(s)) {
		memcpy(s, data, size);
		s[size] = '\0';
		(void)cfg_parse_duration(s, &ms);
		(void)cfg_parse_size(s, &sz);
	}
	if (cfg_parse((const char *)data, size, "fuzz.conf", &c, err,
	    sizeof(err)) != IDEM_OK) {
		if (c != NULL || strlen(err) >= sizeof(err))
			abort();
		return 0;
	}
	(void)cfg_check_gateway(c, err, sizeof(err));
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		r = cfg_route(c, paths[i]);
		if (r != NULL) {
			(void)cfg_protects(r, "POST");
			if (strncmp(paths[i], r->prefix, strlen(r->prefix)) != 0)
				abort();
		}
	}
	for (i = 0; i < c->nroutes; i++) {
		r = &c->routes[i];
		if (r->prefix[0] != '/' || r->handler == HANDLER_NONE ||
		    r->nmethods > CFG_MAX_METHODS || r->key_header == NULL)
			abort();
		/* Every route is found by its own prefix. */
		if (cfg_route(c, r->prefix) != r)
			abort();
	}
	cfg_free(c);
	return 0;
}
