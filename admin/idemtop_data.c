/* idemtop's MySQL data source: lib/store_top behind the top_src interface. */
#include <stdio.h>
#include <stdlib.h>

#include "idemtop_data.h"
#include "store.h"

struct src_mysql {
	struct top_src	 base;		/* first: the interface */
	const struct cfg *cfg;
	struct store	*st;
	int		 schema_ok;	/* checked on this st */
};

static enum idem_err
top_db_open(struct src_mysql *m)
{
	enum idem_err	 er;

	if (m->st != NULL)
		return IDEM_OK;
	if ((er = store_new(m->cfg, &m->st)) == IDEM_OK)
		store_set_patient(m->st);
	return er;
}

/* A failed statement may mean the server went away: start over next time. */
static void
top_db_drop(struct src_mysql *m)
{
	store_free(m->st);
	m->st = NULL;
	m->schema_ok = 0;
}

static enum idem_err
top_db_fetch(struct top_src *src, struct top_snap *out, char *err,
    size_t errlen)
{
	struct src_mysql *m = (struct src_mysql *)src;
	enum idem_err	 er;
	size_t		 i;
	int		 v = 0;

	if ((er = top_db_open(m)) != IDEM_OK) {
		snprintf(err, errlen, "store: %s", idem_strerror(er));
		return er;
	}
	/* Figures read from a schema this build does not know would look
	 * right and be wrong: refused as idemctl refuses it. */
	if (!m->schema_ok &&
	    (er = store_schema_version(m->st, &v)) != IDEM_OK) {
		snprintf(err, errlen, "cannot read schema version: %s",
		    store_last_error(m->st));
		top_db_drop(m);
		return er;
	}
	if (!m->schema_ok && store_schema_old(v, err, errlen)) {
		top_db_drop(m);
		return IDEM_ESTORE;
	}
	m->schema_ok = 1;
	er = store_top_fetch(m->st, out, err, errlen);
	if (er != IDEM_OK) {
		top_db_drop(m);
		return er;
	}
	/* Bounds the histogram's last bucket (waits past 10 s). */
	for (i = 0; i < out->nroutes; i++)
		out->routes[i].wait_ms = cfg_route_wait_ms(m->cfg,
		    out->routes[i].route);
	return IDEM_OK;
}

static enum idem_err
top_db_forget(struct top_src *src, uint64_t id, int *deleted, char *err,
    size_t errlen)
{
	struct src_mysql *m = (struct src_mysql *)src;
	enum idem_err	 er;

	if ((er = top_db_open(m)) != IDEM_OK) {
		snprintf(err, errlen, "store: %s", idem_strerror(er));
		return er;
	}
	er = store_top_forget(m->st, id, deleted, err, errlen);
	if (er != IDEM_OK)
		top_db_drop(m);
	return er;
}

static void
top_db_free(struct top_src *src)
{
	struct src_mysql *m = (struct src_mysql *)src;

	store_free(m->st);
	free(m);
}

enum idem_err
top_src_mysql_new(const struct cfg *cfg, struct top_src **out)
{
	struct src_mysql *m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return IDEM_ENOMEM;
	m->base.fetch = top_db_fetch;
	m->base.forget = top_db_forget;
	m->base.free = top_db_free;
	m->cfg = cfg;
	*out = &m->base;
	return IDEM_OK;
}

void
top_src_free(struct top_src *src)
{
	if (src != NULL)
		src->free(src);
}
