/* Replica lag: SHOW REPLICA STATUS on each configured replica. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "lag.h"
#include "store.h"

struct replica {
	char	 group[128];
	MYSQL	*my;		/* NULL until connected, or after an error */
	int	 old_syntax;	/* the server wants SHOW SLAVE STATUS */
};

struct lag {
	const struct cfg	*cfg;
	struct replica		*r;
	size_t			 n;
	char			 err[512];
};

enum idem_err
lag_open(const struct cfg *c, struct lag **out)
{
	struct lag	*l;
	const char	*list = c->replicas != NULL ? c->replicas : "";
	char		 w[sizeof(l->r->group)];
	unsigned	 n, i;

	*out = NULL;
	for (n = 0; cfg_word(list, n, w, sizeof(w)); n++)
		;
	if (n == 0)
		return IDEM_EINVAL;
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->r = calloc(n, sizeof(*l->r))) == NULL) {
		free(l);
		return IDEM_ENOMEM;
	}
	l->cfg = c;
	l->n = n;
	for (i = 0; i < n; i++)
		cfg_word(list, i, l->r[i].group, sizeof(l->r[i].group));
	*out = l;
	return IDEM_OK;
}

void
lag_free(struct lag *l)
{
	size_t	 i;

	if (l == NULL)
		return;
	for (i = 0; i < l->n; i++)
		if (l->r[i].my != NULL)
			mysql_close(l->r[i].my);
	free(l->r);
	free(l);
}

const char *
lag_error(const struct lag *l)
{
	return l->err;
}

static int
replica_connect(struct lag *l, struct replica *r)
{
	char	 err[700];

	if (r->my != NULL)
		return 0;
	if (store_mysql_init(l->cfg, r->group, 10, err, sizeof(err), &r->my) !=
	    IDEM_OK) {
		snprintf(l->err, sizeof(l->err), "replica [%.64s]: %.400s",
		    r->group, err);
		return -1;
	}
	if (mysql_real_connect(r->my, NULL, NULL, NULL, NULL, 0, NULL, 0) ==
	    NULL) {
		snprintf(l->err, sizeof(l->err), "replica [%s]: %u %s",
		    r->group, mysql_errno(r->my), mysql_error(r->my));
		mysql_close(r->my);
		r->my = NULL;
		return -1;
	}
	store_cloexec(r->my);
	return 0;
}

/*
 * The largest Seconds_Behind_Master (Seconds_Behind_Source on MySQL) over
 * the rows of one replica (one per source with multi-source replication);
 * -1 for NULL.  -1 return: error, l->err set.
 */
static int
replica_lag(struct lag *l, struct replica *r, long long *secs)
{
	MYSQL_RES	*res;
	MYSQL_ROW	 row;
	MYSQL_FIELD	*f;
	unsigned	 i, nf, col = (unsigned)-1;
	long long	 worst = 0;
	int		 rows = 0;

	if (replica_connect(l, r) != 0)
		return -1;
	for (;;) {
		const char	*q = r->old_syntax ? "SHOW SLAVE STATUS" :
		    "SHOW REPLICA STATUS";

		if (mysql_query(r->my, q) == 0)
			break;
		/* 1064: a server older than the REPLICA spelling */
		if (mysql_errno(r->my) == 1064 && !r->old_syntax) {
			r->old_syntax = 1;
			continue;
		}
		snprintf(l->err, sizeof(l->err), "replica [%s]: %s: %u %s",
		    r->group, q, mysql_errno(r->my), mysql_error(r->my));
		mysql_close(r->my);
		r->my = NULL;
		return -1;
	}
	if ((res = mysql_store_result(r->my)) == NULL) {
		snprintf(l->err, sizeof(l->err), "replica [%s]: %s", r->group,
		    mysql_errno(r->my) != 0 ? mysql_error(r->my) :
		    "no result");
		return -1;
	}
	nf = mysql_num_fields(res);
	f = mysql_fetch_fields(res);
	for (i = 0; i < nf; i++)
		if (strcmp(f[i].name, "Seconds_Behind_Master") == 0 ||
		    strcmp(f[i].name, "Seconds_Behind_Source") == 0)
			col = i;
	while (col != (unsigned)-1 && (row = mysql_fetch_row(res)) != NULL) {
		rows++;
		if (row[col] == NULL)
			worst = -1;
		else if (worst >= 0) {
			long long	 v = strtoll(row[col], NULL, 10);

			if (v > worst)
				worst = v;
		}
	}
	mysql_free_result(res);
	if (rows == 0) {
		snprintf(l->err, sizeof(l->err), "replica [%s]: not a replica "
		    "(SHOW REPLICA STATUS is empty)", r->group);
		return -1;
	}
	*secs = worst;
	return 0;
}

enum idem_err
lag_worst(struct lag *l, long long *secs, const char **who)
{
	size_t		 i;
	long long	 worst = 0, v;

	*who = l->r[0].group;
	for (i = 0; i < l->n; i++) {
		if (replica_lag(l, &l->r[i], &v) != 0)
			return IDEM_ESTORE;
		/* Not replicating is the worst there is. */
		if (worst >= 0 && (v < 0 || v > worst)) {
			worst = v;
			*who = l->r[i].group;
		}
	}
	*secs = worst;
	return IDEM_OK;
}
