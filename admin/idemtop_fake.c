/* A canned idemtop data source for rendering tests and demos. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idemtop_data.h"

struct src_fake {
	struct top_src	 base;		/* first: the interface */
	struct top_snap	 canned;
	char		 fail[256];
	unsigned	 fetches;
};

enum idem_err
top_snap_copy(struct top_snap *dst, const struct top_snap *src)
{
	struct top_snap	 s = *src;

	s.keys = NULL;
	s.routes = NULL;
	s.runs = NULL;
	if (src->nkeys > 0 &&
	    (s.keys = calloc(src->nkeys, sizeof(*s.keys))) == NULL)
		goto nomem;
	if (src->nroutes > 0 &&
	    (s.routes = calloc(src->nroutes, sizeof(*s.routes))) == NULL)
		goto nomem;
	if (src->nruns > 0 &&
	    (s.runs = calloc(src->nruns, sizeof(*s.runs))) == NULL)
		goto nomem;
	if (src->nkeys > 0)
		memcpy(s.keys, src->keys, src->nkeys * sizeof(*s.keys));
	if (src->nroutes > 0)
		memcpy(s.routes, src->routes, src->nroutes * sizeof(*s.routes));
	if (src->nruns > 0)
		memcpy(s.runs, src->runs, src->nruns * sizeof(*s.runs));
	top_snap_free(dst);
	*dst = s;
	return IDEM_OK;
nomem:
	free(s.keys);
	free(s.routes);
	free(s.runs);
	return IDEM_ENOMEM;
}

static enum idem_err
fake_fetch(struct top_src *src, struct top_snap *out, char *err,
    size_t errlen)
{
	struct src_fake	*f = (struct src_fake *)src;

	f->fetches++;
	if (f->fail[0] != '\0') {
		snprintf(err, errlen, "%s", f->fail);
		return IDEM_ESTORE;
	}
	return top_snap_copy(out, &f->canned);
}

static enum idem_err
fake_forget(struct top_src *src, uint64_t id, int *deleted, char *err,
    size_t errlen)
{
	struct src_fake	*f = (struct src_fake *)src;
	size_t		 i;

	*deleted = 0;
	for (i = 0; i < f->canned.nkeys; i++) {
		if (f->canned.keys[i].id != id)
			continue;
		if (f->canned.keys[i].lease_left_ms < 0)
			f->canned.past_lease--;
		memmove(&f->canned.keys[i], &f->canned.keys[i + 1],
		    (f->canned.nkeys - i - 1) * sizeof(f->canned.keys[0]));
		f->canned.nkeys--;
		f->canned.inprog--;
		*deleted = 1;
		break;
	}
	return IDEM_OK;
}

static void
fake_free(struct top_src *src)
{
	struct src_fake	*f = (struct src_fake *)src;

	top_snap_free(&f->canned);
	free(f);
}

enum idem_err
top_src_fake_new(const struct top_snap *canned, struct top_src **out)
{
	struct src_fake	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return IDEM_ENOMEM;
	top_snap_init(&f->canned);
	if (top_snap_copy(&f->canned, canned) != IDEM_OK) {
		free(f);
		return IDEM_ENOMEM;
	}
	f->base.fetch = fake_fetch;
	f->base.forget = fake_forget;
	f->base.free = fake_free;
	*out = &f->base;
	return IDEM_OK;
}

void
top_src_fake_set_fail(struct top_src *src, const char *fail)
{
	struct src_fake	*f = (struct src_fake *)src;

	snprintf(f->fail, sizeof(f->fail), "%s", fail != NULL ? fail : "");
}

unsigned
top_src_fake_fetches(const struct top_src *src)
{
	return ((const struct src_fake *)src)->fetches;
}

/* A key in progress, as fake_key() makes a struct top_key of it. */
struct fake_key_spec {
	uint64_t	 id;
	const char	*key;
	size_t		 keylen;
	const char	*route;
	const char	*owner;
	int64_t		 age_ms;
	int64_t		 lease_ms;
	uint64_t	 waiters;
};

static const struct fake_key_spec fake_keys[] = {
	{ 11, "stale-key-0001-zz", 17, "/payments", "gw1.example:4242",
	  95000, -35000, 3 },
	{ 12, "ctl\x01key\x1b[31mXY", 14, "/orders\x07", "gw2.example:77",
	  40000, 20000, 1 },
	{ 13, "abcdefghijklmnop", 16, "/payments/refunds",
	  "gw1.example:4243", 2500, 57500, 0 },
	{ 14, "k1", 2, "/", "gw3:9", 800, 59200, 0 },
};

/* A route's counts: requests, reused, and waits in buckets 0, 4 and 9. */
struct fake_route_spec {
	const char	*route;
	uint64_t	 req, reused;
	uint64_t	 b0, b4, b9;
};

static const struct fake_route_spec fake_routes[] = {
	{ "/payments", 5000, 1500, 40, 10, 2 },
	{ "/orders\x07", 1200, 100, 5, 0, 0 },
	{ "/payments/refunds", 300, 150, 0, 0, 0 },
};

/* A cleanup run that started ago_s seconds before now. */
struct fake_run_spec {
	uint64_t	 id;
	const char	*host;
	int64_t		 ago_s;
	int64_t		 dur;
	const char	*outcome;
	uint64_t	 rows;
	const char	*reason;
};

static const struct fake_run_spec fake_runs[] = {
	{ 3, "cron1", 60, 1500, "running", 200, "" },
	{ 2, "cron1", 3600, 4200, "failed", 0, "Lost connection to server" },
	{ 1, "cron2", 3 * 3600, 9000, "ok", 123456, "" },
};

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

static void
fake_key(struct top_key *k, const struct fake_key_spec *f)
{
	size_t	 i;

	k->id = f->id;
	memcpy(k->key, f->key, f->keylen);
	k->keylen = f->keylen;
	for (i = 0; i < FP_LEN; i++)
		k->scope[i] = (unsigned char)(f->id * 17 + i);
	snprintf(k->route, sizeof(k->route), "%s", f->route);
	snprintf(k->owner, sizeof(k->owner), "%s", f->owner);
	k->age_ms = f->age_ms;
	k->lease_left_ms = f->lease_ms;
	k->waiters = f->waiters;
}

static void
fake_route(struct top_route *r, const struct fake_route_spec *f)
{
	uint64_t	 req = f->req;

	snprintf(r->route, sizeof(r->route), "%s", f->route);
	r->c.n[TOPC_REQUESTS] = req;
	r->c.n[TOPC_REUSED] = f->reused;
	r->c.n[TOPC_CREATED] = req - f->reused;
	r->c.n[TOPC_MISMATCHED] = req / 50;
	r->c.n[TOPC_CONFLICTED] = req / 100;
	r->c.n[TOPC_WAITED] = f->b0 + f->b4 + f->b9;
	r->c.n[TOPC_RELEASED] = req / 40;
	r->wait_bucket[0] = f->b0;
	r->wait_bucket[4] = f->b4;
	r->wait_bucket[9] = f->b9;
	r->wait_sum_ms = f->b0 * 5 + f->b4 * 400 + f->b9 * 20000;
}

static void
fake_run(struct top_run *r, const struct fake_run_spec *f, int64_t now)
{
	r->id = f->id;
	snprintf(r->host, sizeof(r->host), "%s", f->host);
	r->started = now - f->ago_s;
	r->duration_ms = f->dur;
	r->running = strcmp(f->outcome, "running") == 0;
	r->rows_deleted = f->rows;
	r->stale_released = f->rows / 100;
	r->batches = f->rows / 1000 + 1;
	snprintf(r->outcome, sizeof(r->outcome), "%s", f->outcome);
	snprintf(r->reason, sizeof(r->reason), "%s", f->reason);
}

enum idem_err
top_fake_fill(struct top_snap *s, int64_t now_ms)
{
	struct top_snap	 t;
	int64_t		 now = now_ms / 1000;
	size_t		 i;

	top_snap_init(&t);
	t.now_ms = now_ms;
	t.keys = calloc(NELEM(fake_keys), sizeof(*t.keys));
	t.routes = calloc(NELEM(fake_routes), sizeof(*t.routes));
	t.runs = calloc(NELEM(fake_runs), sizeof(*t.runs));
	if (t.keys == NULL || t.routes == NULL || t.runs == NULL) {
		top_snap_free(&t);
		return IDEM_ENOMEM;
	}
	for (i = 0; i < TOP_MINUTES; i++) {
		t.per_min[i].n[TOPC_REQUESTS] = 100 + 10 * (i % 7);
		t.per_min[i].n[TOPC_REUSED] = 25 + (i % 7);
		t.per_min[i].n[TOPC_CREATED] = 70;
		t.per_min[i].n[TOPC_MISMATCHED] = 2;
		t.per_min[i].n[TOPC_CONFLICTED] = 1;
		t.per_min[i].n[TOPC_WAITED] = 3;
		t.per_min[i].n[TOPC_RELEASED] = 1;
		t.per_min[i].n[TOPC_STORE_ERRORS] = i == 3 ? 4 : 0;
	}
	for (i = 0; i < NELEM(fake_keys); i++)
		fake_key(&t.keys[i], &fake_keys[i]);
	t.nkeys = NELEM(fake_keys);
	for (i = 0; i < t.nkeys; i++)
		t.past_lease += t.keys[i].lease_left_ms < 0;
	t.inprog = 4;
	t.waiting = 4;
	t.oldest_ms = 95000;
	for (i = 0; i < NELEM(fake_routes); i++)
		fake_route(&t.routes[i], &fake_routes[i]);
	t.nroutes = NELEM(fake_routes);
	for (i = 0; i < NELEM(fake_runs); i++)
		fake_run(&t.runs[i], &fake_runs[i], now);
	t.nruns = NELEM(fake_runs);
	t.last_ok = now - 3 * 3600 + 9;
	top_snap_free(s);
	*s = t;
	return IDEM_OK;
}
