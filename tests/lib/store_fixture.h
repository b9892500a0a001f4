/* Unit-test fixture for the store against a real MariaDB: its config, stores, request identities, completes. */
#ifndef IDEM_TEST_STORE_FIXTURE_H
#define IDEM_TEST_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answer.h"
#include "cfg.h"
#include "fp.h"
#include "ident.h"
#include "store.h"

/* The store's config: IDEM_TEST_MYCNF's option file (store_fixture_init). */
static struct cfg	 tcfg;

/* The lease mkid's identities claim with.  The config says so too: the
 * store's call budget follows the shortest lease configured, and a zeroed
 * config would give every statement 100 ms, which a 300 KB durable commit
 * on a loaded machine can miss. */
#define FIXTURE_LEASE_MS	5000

static inline struct store *
open_store(void)
{
	struct store	*st = NULL;

	if (store_new(&tcfg, &st) != IDEM_OK)
		return NULL;
	return st;
}

/* An idem_id for key with a fingerprint over body (strings must live). */
static inline void
mkid(struct idem_id *id, const char *key, const char *body)
{
	memset(id, 0, sizeof(*id));
	fp_scope("none", "", id->scope);
	id->key = key;
	id->keylen = strlen(key);
	fp_request(&(struct fp_req){ .method = "POST", .path = "/pay",
	    .query = "", .ctype = "text/plain", .body = body,
	    .bodylen = strlen(body) }, id->fp);
	id->route = "/pay";
	id->method = "POST";
	id->owner = "test:1";
	id->ttl_ms = 60000;
	id->lease_ms = FIXTURE_LEASE_MS;
	idem_id_name_lock(id);
}

/* A waiter that did not claim first: no nap, it waits on the lock. */
static const struct claim no_nap;

/* store_complete with the answer's parts (borrowed). */
static inline enum idem_err
complete(struct store *st, const struct claim *c, int status,
    const void *hdrs, size_t hdrslen, const void *body, size_t bodylen,
    int64_t ttl_ms)
{
	struct answer	 a;

	answer_borrow(&a, status, hdrs, hdrslen, body, bodylen);
	return store_complete(st, c, &a, ttl_ms);
}

/* Sleeps until a key finished now with ttl_ms has expired: the store ends
 * it on the whole second after now + ttl (TTL_END), so a little past
 * that. */
static inline void
sleep_past_ttl(int64_t ttl_ms)
{
	struct timespec	 now, ts;
	int64_t		 end_us, left_us;

	clock_gettime(CLOCK_REALTIME, &now);
	end_us = ((int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000 +
	    ttl_ms * 1000 + 999999) / 1000000 * 1000000 + 30000;
	left_us = end_us - ((int64_t)now.tv_sec * 1000000 + now.tv_nsec /
	    1000);
	ts.tv_sec = (time_t)(left_us / 1000000);
	ts.tv_nsec = (long)(left_us % 1000000) * 1000;
	while (nanosleep(&ts, &ts) == -1)
		;
}

/* Reads IDEM_TEST_MYCNF into tcfg; -1 (a FAIL printed) when unset. */
static inline int
store_fixture_init(void)
{
	const char	*cnf = getenv("IDEM_TEST_MYCNF");

	if (cnf == NULL || *cnf == '\0') {
		printf("FAIL: IDEM_TEST_MYCNF is not set\n");
		return -1;
	}
	tcfg.mysql_defaults_file = (char *)cnf;
	tcfg.mysql_group = "idemgate";
	tcfg.defaults.lease_ms = FIXTURE_LEASE_MS;
	return 0;
}

#endif
