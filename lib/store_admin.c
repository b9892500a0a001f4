/* The store's operator queries: key inspection and forget, fleet counters and gauges, privileges. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "clock.h"
#include "rcache.h"
#include "store_admin.h"
#include "store_int.h"
#include "store_sa.h"

/* --- keys ----------------------------------------------------------------- */

const char *
admin_key_state_name(enum admin_key_state s)
{
	switch (s) {
	case AKEY_IN_PROGRESS:
		return "in-progress";
	case AKEY_COMPLETED:
		return "completed";
	case AKEY_TOMBSTONE:
		return "tombstone";
	case AKEY_EXPIRED:
		return "expired";
	}
	return "unknown";
}

enum idem_err
store_admin_key_get(struct store *st, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, struct admin_key *out, struct buf *body)
{
	MYSQL		*m;
	MYSQL_STMT	*s = NULL;
	MYSQL_BIND	 in[2], res[15];
	unsigned long	 slen = FP_LEN, klen = keylen;
	unsigned long	 rlen, mlen, olen, flen, blen = 0;
	my_bool		 rnull, mnull, onull, fnull, cnull, stnull, sznull;
	my_bool		 tnull[3];
	struct admin_key k;
	uint64_t	 state = 0, live = 0, status = 0;
	char		 fpbuf[FP_LEN + 1];
	enum idem_err	 er;
	int		 rc;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	memset(&k, 0, sizeof(k));
	if ((s = sa_prepare(m, "SELECT id, state, route, method, owner, "
	    "fingerprint, waiters, UNIX_TIMESTAMP(created_at), "
	    "UNIX_TIMESTAMP(expires_at), UNIX_TIMESTAMP(lease_until), "
	    "UNIX_TIMESTAMP(completed_at), resp_status, resp_size, "
	    "UNIX_TIMESTAMP(NOW(6)), "
	    "(state = 0 AND lease_until >= NOW(6)) + 2 * (expires_at < NOW(6)) "
	    "FROM idem_keys WHERE scope = ? AND idem_key = ?"))
	    == NULL)
		return IDEM_ESTORE;
	bind_in(&in[0], scope, &slen);
	bind_in(&in[1], key, &klen);
	bind_u64(&res[0], &k.id);
	bind_u64(&res[1], &state);
	bind_out(&res[2], k.route, sizeof(k.route), &rlen, &rnull);
	bind_out(&res[3], k.method, sizeof(k.method), &mlen, &mnull);
	bind_out(&res[4], k.owner, sizeof(k.owner), &olen, &onull);
	bind_out(&res[5], fpbuf, sizeof(fpbuf), &flen, &fnull);
	res[5].buffer_type = MYSQL_TYPE_BLOB;
	bind_u64(&res[6], &k.waiters);
	bind_dbl(&res[7], &k.created_at, &tnull[0]);
	bind_dbl(&res[8], &k.expires_at, &tnull[1]);
	bind_dbl(&res[9], &k.lease_until, &tnull[2]);
	bind_dbl(&res[10], &k.completed_at, &cnull);
	bind_u64(&res[11], &status);
	res[11].is_null = &stnull;
	bind_u64(&res[12], &k.resp_size);
	res[12].is_null = &sznull;
	bind_dbl(&res[13], &k.now, NULL);
	bind_u64(&res[14], &live);
	if ((er = sa_run(s, in, res)) != IDEM_OK)
		goto out;
	if ((rc = sa_fetch(s)) < 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	if (rc == 1) {
		sa_seterr("no such key");
		er = IDEM_ENOTFOUND;
		goto out;
	}
	out_term(k.route, sizeof(k.route), rlen, rnull);
	out_term(k.method, sizeof(k.method), mlen, mnull);
	out_term(k.owner, sizeof(k.owner), olen, onull);
	if (!fnull && flen >= FP_LEN)
		memcpy(k.fp, fpbuf, FP_LEN);
	if (cnull)
		k.completed_at = 0;
	k.raw_state = (int)state;
	k.lease_live = (live & 1) != 0;
	k.has_resp = !stnull;
	k.resp_status = stnull ? 0 : (int)status;
	if (sznull)
		k.resp_size = 0;
	if (live & 2)
		k.state = AKEY_EXPIRED;
	else if (state == 0)
		k.state = AKEY_IN_PROGRESS;
	else if (state == 1)
		k.state = AKEY_COMPLETED;
	else
		k.state = AKEY_TOMBSTONE;
	sa_close(s);
	s = NULL;

	if (body != NULL) {
		MYSQL_BIND	 b[1];
		my_bool		 bnull = 0;
		char		 dummy[1];

		/* Fetch the length first, then the bytes into a buffer sized
		 * for them (bounded by body->max). */
		if ((s = sa_prepare(m, "SELECT resp_body FROM idem_keys WHERE "
		    "id = ?")) == NULL) {
			er = IDEM_ESTORE;
			goto out;
		}
		memset(b, 0, sizeof(b));
		b[0].buffer_type = MYSQL_TYPE_BLOB;
		b[0].buffer = dummy;
		b[0].buffer_length = 0;
		b[0].length = &blen;
		b[0].is_null = &bnull;
		bind_u64(&in[0], &k.id);
		if ((er = sa_run(s, in, b)) != IDEM_OK)
			goto out;
		if ((rc = sa_fetch(s)) != 0) {
			if (rc == 1) {
				sa_seterr("no such key");
				er = IDEM_ENOTFOUND;
			} else
				er = IDEM_ESTORE;
			goto out;
		}
		if (!bnull && blen > 0) {
			char	*tmp;

			if (blen > body->max - body->len) {
				sa_seterr("stored body too large (%lu bytes)",
				    blen);
				er = IDEM_ETOOBIG;
				goto out;
			}
			if ((tmp = malloc(blen)) == NULL) {
				er = IDEM_ENOMEM;
				goto out;
			}
			b[0].buffer = tmp;
			b[0].buffer_length = blen;
			if (mysql_stmt_fetch_column(s, &b[0], 0, 0) != 0) {
				sa_seterr("%s", mysql_stmt_error(s));
				free(tmp);
				er = IDEM_ESTORE;
				goto out;
			}
			er = buf_add(body, tmp, blen);
			free(tmp);
			if (er != IDEM_OK)
				goto out;
		}
	}
	*out = k;
	er = IDEM_OK;
out:
	sa_close(s);
	return er;
}

/*
 * The one forget rule, for idemctl and idemtop alike: a row in progress
 * goes only with force (its owner may still be running it); and the call
 * returns only once no gateway may replay the answer from memory
 * (lib/rcache.h).  sql deletes by the binds in; OUT: *n rows deleted.
 */
static enum idem_err
forget_rows(struct store *st, const char *sql, MYSQL_BIND *in, uint64_t *n)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	enum idem_err	 er;

	*n = 0;
	if ((m = sa_conn(st)) == NULL || (s = sa_prepare(m, sql)) == NULL)
		return IDEM_ESTORE;
	er = sa_run(s, in, NULL);
	if (er == IDEM_OK)
		*n = mysql_stmt_affected_rows(s);
	sa_close(s);
	/* A no-op under autocommit; makes the delete stick if it is off. */
	if (er == IDEM_OK)
		mysql_commit(m);
	if (er == IDEM_OK && *n > 0)
		clock_sleep_ms(RCACHE_FORGET_WAIT_MS);
	return er;
}

/* In progress and not expired: only with force. */
#define FORGET_UNLESS_LIVE \
	" AND (? = 1 OR state <> 0 OR expires_at < NOW(6))"

enum idem_err
store_admin_key_forget(struct store *st, const unsigned char scope[FP_LEN],
    const char *key, size_t keylen, int force)
{
	MYSQL_BIND	 in[3];
	unsigned long	 slen = FP_LEN, klen = keylen;
	int64_t		 f = force ? 1 : 0;
	struct admin_key k;
	enum idem_err	 er;
	uint64_t	 n;

	bind_in(&in[0], scope, &slen);
	bind_in(&in[1], key, &klen);
	bind_i64(&in[2], &f);
	er = forget_rows(st, "DELETE FROM idem_keys WHERE scope = ? AND"
	    " idem_key = ?" FORGET_UNLESS_LIVE, in, &n);
	if (er != IDEM_OK || n > 0)
		return er;
	/* Nothing deleted: tell a missing key from a busy one. */
	if ((er = store_admin_key_get(st, scope, key, keylen, &k, NULL)) !=
	    IDEM_OK)
		return er;
	sa_seterr("key is in progress (owner %s)", k.owner);
	return IDEM_EBUSY;
}

enum idem_err
store_admin_forget_id(struct store *st, uint64_t id, int force,
    int *deleted)
{
	MYSQL_BIND	 in[2];
	int64_t		 f = force ? 1 : 0;
	enum idem_err	 er;
	uint64_t	 n, rid = id;

	bind_u64(&in[0], &rid);
	bind_i64(&in[1], &f);
	er = forget_rows(st, "DELETE FROM idem_keys WHERE id = ?"
	    FORGET_UNLESS_LIVE, in, &n);
	*deleted = n > 0;
	return er;
}

/* --- counters and gauges ------------------------------------------------- */


enum idem_err
store_admin_stats(struct store *st, int64_t since_s, const char *route,
    struct admin_stat **rows, size_t *nrows)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	MYSQL_BIND	 in[3], res[1 + STAT__COUNT + 1 + STAT_WAIT_BUCKETS];
	struct admin_stat cur, *v = NULL, *nv;
	size_t		 n = 0, cap = 0;
	unsigned long	 rlen, qlen = route ? strlen(route) : 0;
	my_bool		 rnull, qnull = route == NULL;
	int64_t		 since = since_s;
	enum idem_err	 er;
	int		 i, k, rc;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	if (STAT__COUNT != 13) {
		sa_seterr("counter list changed; rebuild idemctl");
		return IDEM_EINVAL;
	}
	/* minute >= the start of the minute since_s seconds ago; all time
	 * (since_s 0) adds what cleanup folded into idem_counters_total. */
	if ((s = sa_prepare(m, "SELECT route, " STAT_COLS " FROM ("
	    "SELECT route, " COUNTER_COLS_PLAIN " FROM idem_counters "
	    "WHERE (? = 0 OR minute >= NOW() - INTERVAL ? SECOND - "
	    "INTERVAL SECOND(NOW()) SECOND) AND (? IS NULL OR route = ?) "
	    "UNION ALL SELECT route, " COUNTER_COLS_PLAIN
	    " FROM idem_counters_total WHERE ? = 0 AND (? IS NULL OR "
	    "route = ?)) x GROUP BY route ORDER BY route")) == NULL)
		return IDEM_ESTORE;
	bind_i64(&in[0], &since);
	bind_i64(&in[1], &since);
	bind_in(&in[2], route ? route : "", &qlen);
	in[2].is_null = &qnull;
	/* The same values again; MySQL numbers each placeholder. */
	{
		MYSQL_BIND	 all[7];

		all[0] = in[0];
		all[1] = in[1];
		all[2] = in[2];
		all[3] = in[2];
		all[4] = in[0];
		all[5] = in[2];
		all[6] = in[2];
		bind_out(&res[0], cur.route, sizeof(cur.route), &rlen, &rnull);
		k = 1;
		for (i = 0; i < STAT__COUNT; i++)
			bind_u64(&res[k++], &cur.n[i]);
		bind_u64(&res[k++], &cur.wait_sum_ms);
		for (i = 0; i < STAT_WAIT_BUCKETS; i++)
			bind_u64(&res[k++], &cur.wait_bucket[i]);
		er = sa_run(s, all, res);
	}
	if (er != IDEM_OK)
		goto out;
	for (;;) {
		memset(&cur, 0, sizeof(cur));
		if ((rc = sa_fetch(s)) < 0) {
			er = IDEM_ESTORE;
			goto out;
		}
		if (rc == 1)
			break;
		out_term(cur.route, sizeof(cur.route), rlen, rnull);
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL) {
				er = IDEM_ENOMEM;
				goto out;
			}
			v = nv;
		}
		v[n++] = cur;
	}
	*rows = v;
	*nrows = n;
	v = NULL;
out:
	free(v);
	sa_close(s);
	return er;
}

enum idem_err
store_admin_gauges(struct store *st, struct admin_gauges *out)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[4];
	struct admin_gauges g;
	uint64_t	 state, cnt, wsum;
	double		 d1, d2;
	my_bool		 n1, n2;
	char		 oc[17];
	unsigned long	 oclen;
	my_bool		 ocnull;
	enum idem_err	 er;
	int		 rc;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	memset(&g, 0, sizeof(g));

	/* The (state, lease_until) index answers this without the rows. */
	if ((s = sa_prepare(m, "SELECT state, COUNT(*), COALESCE(SUM(waiters), 0) "
	    "FROM idem_keys GROUP BY state")) == NULL)
		return IDEM_ESTORE;
	bind_u64(&res[0], &state);
	bind_u64(&res[1], &cnt);
	bind_u64(&res[2], &wsum);
	if ((er = sa_run(s, NULL, res)) != IDEM_OK)
		goto out;
	while ((rc = sa_fetch(s)) == 0) {
		if (state < 3)
			g.rows[state] = cnt;
		if (state == 0)
			g.waiters = wsum;
	}
	if (rc < 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	sa_close(s);

	if ((s = sa_prepare(m, "SELECT (SELECT COUNT(*) FROM idem_keys WHERE "
	    "expires_at < NOW(6)), (SELECT UNIX_TIMESTAMP(NOW(6)) - "
	    "UNIX_TIMESTAMP(MIN(created_at)) FROM idem_keys WHERE state = 0)"))
	    == NULL)
		return IDEM_ESTORE;
	bind_u64(&res[0], &g.expired);
	bind_dbl(&res[1], &d1, &n1);
	if ((er = sa_run(s, NULL, res)) != IDEM_OK)
		goto out;
	if (sa_fetch(s) != 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	g.oldest_in_progress_s = n1 ? 0 : d1;
	sa_close(s);

	if ((s = sa_prepare(m, "SELECT UNIX_TIMESTAMP(ended_at), outcome FROM "
	    "idem_cleanup_runs WHERE dry_run = 0 AND ended_at IS NOT NULL "
	    "ORDER BY id DESC LIMIT 1")) == NULL)
		return IDEM_ESTORE;
	bind_dbl(&res[0], &d2, &n2);
	bind_out(&res[1], oc, sizeof(oc), &oclen, &ocnull);
	if ((er = sa_run(s, NULL, res)) != IDEM_OK)
		goto out;
	if ((rc = sa_fetch(s)) < 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	if (rc == 0 && !n2) {
		out_term(oc, sizeof(oc), oclen, ocnull);
		g.has_cleanup = 1;
		g.last_cleanup_end = d2;
		g.last_cleanup_ok = strcmp(oc, "ok") == 0;
	}
	sa_close(s);

	if ((s = sa_prepare(m, "SELECT UNIX_TIMESTAMP(MAX(ended_at)) FROM "
	    "idem_cleanup_runs WHERE dry_run = 0 AND outcome = 'ok'")) == NULL)
		return IDEM_ESTORE;
	bind_dbl(&res[0], &d2, &n2);
	if ((er = sa_run(s, NULL, res)) != IDEM_OK)
		goto out;
	if ((rc = sa_fetch(s)) < 0) {
		er = IDEM_ESTORE;
		goto out;
	}
	if (rc == 0 && !n2) {
		g.has_cleanup_ok = 1;
		g.last_cleanup_ok_end = d2;
	}
	*out = g;
out:
	sa_close(s);
	return er;
}

/* --- privileges and helpers ---------------------------------------------- */

static const struct {
	const char	*table;
	const char	*what;
	const char	*sql;
} probes[] = {
	{ "idem_keys", "SELECT", "SELECT id FROM idem_keys WHERE 1 = 0" },
	{ "idem_keys", "INSERT", "INSERT INTO idem_keys (id) SELECT 0 FROM DUAL WHERE 1 = 0" },
	{ "idem_keys", "UPDATE", "UPDATE idem_keys SET waiters = waiters WHERE 1 = 0" },
	{ "idem_keys", "DELETE", "DELETE FROM idem_keys WHERE 1 = 0" },
	{ "idem_counters", "SELECT", "SELECT minute FROM idem_counters WHERE 1 = 0" },
	{ "idem_counters", "INSERT", "INSERT INTO idem_counters (minute) SELECT NOW() FROM DUAL WHERE 1 = 0" },
	{ "idem_counters", "UPDATE", "UPDATE idem_counters SET requests = requests WHERE 1 = 0" },
	{ "idem_counters", "DELETE", "DELETE FROM idem_counters WHERE 1 = 0" },
	{ "idem_cleanup_runs", "SELECT", "SELECT id FROM idem_cleanup_runs WHERE 1 = 0" },
	{ "idem_cleanup_runs", "INSERT", "INSERT INTO idem_cleanup_runs (id) SELECT 0 FROM DUAL WHERE 1 = 0" },
	{ "idem_cleanup_runs", "UPDATE", "UPDATE idem_cleanup_runs SET reason = reason WHERE 1 = 0" },
	{ "idem_cleanup_runs", "DELETE", "DELETE FROM idem_cleanup_runs WHERE 1 = 0" },
	{ "idem_schema", "SELECT", "SELECT version FROM idem_schema WHERE 1 = 0" },
	{ "idem_epoch", "SELECT", "SELECT n FROM idem_epoch WHERE 1 = 0" },
	{ "idem_quota", "SELECT", "SELECT n FROM idem_quota WHERE 1 = 0" },
	{ "idem_quota", "INSERT", "INSERT INTO idem_quota (n) SELECT 0 FROM DUAL WHERE 1 = 0" },
	{ "idem_quota", "UPDATE", "UPDATE idem_quota SET n = n WHERE 1 = 0" },
	{ "idem_quota", "DELETE", "DELETE FROM idem_quota WHERE 1 = 0" },
	{ "idem_counters_total", "SELECT", "SELECT route FROM idem_counters_total WHERE 1 = 0" },
	{ "idem_counters_total", "INSERT", "INSERT INTO idem_counters_total (route) SELECT '' FROM DUAL WHERE 1 = 0" },
	{ "idem_counters_total", "UPDATE", "UPDATE idem_counters_total SET requests = requests WHERE 1 = 0" },
	{ "idem_locks", "SELECT", "SELECT name FROM idem_locks WHERE 1 = 0" },
	{ "idem_locks", "INSERT", "INSERT INTO idem_locks (name) SELECT '' FROM DUAL WHERE 1 = 0" },
	{ "idem_locks", "UPDATE", "UPDATE idem_locks SET until = until WHERE 1 = 0" },
	{ "idem_locks", "DELETE", "DELETE FROM idem_locks WHERE 1 = 0" },
};

enum idem_err
store_admin_max_packet(struct store *st, uint64_t *bytes)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[1];
	uint64_t	 v = 0;
	enum idem_err	 er;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	if ((s = sa_prepare(m, "SELECT @@max_allowed_packet")) == NULL)
		return IDEM_ESTORE;
	bind_u64(&res[0], &v);
	if ((er = sa_run(s, NULL, res)) == IDEM_OK) {
		if (sa_fetch(s) == 0)
			*bytes = v;
		else
			er = IDEM_ESTORE;
	}
	sa_close(s);
	return er;
}

enum idem_err
store_admin_mode(struct store *st, struct admin_mode *m)
{
	MYSQL		*my;
	MYSQL_STMT	*s;
	MYSQL_BIND	 res[2];
	unsigned long	 len[2];
	my_bool		 nul[2];
	char		 size[16];
	enum idem_err	 er;

	memset(m, 0, sizeof(*m));
	if ((my = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	snprintf(m->group, sizeof(m->group), "%s", st->group);
	if (!(m->galera = st->galera))
		return IDEM_OK;
	if ((s = sa_prepare(my, "SELECT"
	    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
	    "  WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'),"
	    " (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
	    "  WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT')")) == NULL)
		return IDEM_ESTORE;
	bind_out(&res[0], size, sizeof(size), &len[0], &nul[0]);
	bind_out(&res[1], m->state, sizeof(m->state), &len[1], &nul[1]);
	if ((er = sa_run(s, NULL, res)) == IDEM_OK) {
		if (sa_fetch(s) == 0) {
			out_term(size, sizeof(size), len[0], nul[0]);
			out_term(m->state, sizeof(m->state), len[1], nul[1]);
			m->nodes = atoi(size);
		} else
			er = IDEM_ESTORE;
	}
	sa_close(s);
	return er;
}

enum idem_err
store_admin_privileges(struct store *st, struct admin_priv *privs, size_t max,
    size_t *n)
{
	MYSQL		*m;
	MYSQL_STMT	*s;
	size_t		 i, k = 0;

	if ((m = sa_conn(st)) == NULL)
		return IDEM_ESTORE;
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]) && k < max; i++) {
		privs[k].table = probes[i].table;
		privs[k].what = probes[i].what;
		s = sa_prepare(m, probes[i].sql);
		privs[k].ok = s != NULL;
		sa_close(s);
		k++;
	}
	*n = k;
	return IDEM_OK;
}

int64_t
admin_wait_percentile(const uint64_t bucket[STAT_WAIT_BUCKETS], double p)
{
	uint64_t	 total = 0, want, cum = 0;
	int		 i;

	for (i = 0; i < STAT_WAIT_BUCKETS; i++)
		total += bucket[i];
	if (total == 0)
		return -2;
	/* The smallest bucket whose cumulative count reaches p * total. */
	want = (uint64_t)(p * (double)total);
	if ((double)want < p * (double)total)
		want++;
	if (want == 0)
		want = 1;
	for (i = 0; i < STAT_WAIT_BUCKETS - 1; i++) {
		cum += bucket[i];
		if (cum >= want)
			return stat_wait_le_ms[i];
	}
	return -1;
}
