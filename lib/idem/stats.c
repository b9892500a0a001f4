/* In-process fleet counters: a small locked table flushed to the store. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "stats.h"

/* (minute, route) rows kept at most; past it, new routes fold into
 * "(other)" and, if even that does not fit, the oldest row is dropped. */
#define STATS_MAX_ROWS		1024
#define STATS_ROUTE_MAX		255
#define STATS_OTHER		"(other)"

struct sentry {
	int64_t		 minute;
	char		*route;		/* owned */
	uint64_t	 n[STAT__COUNT];
	uint64_t	 wait_bucket[STAT_WAIT_BUCKETS];
	uint64_t	 wait_sum_ms;
};

struct stats {
	pthread_mutex_t	 mu;
	struct sentry	*e;		/* STATS_MAX_ROWS slots */
	size_t		 n;
	uint64_t	 dropped;	/* rows lost to the bound */
};

enum idem_err
stats_new(struct stats **out)
{
	struct stats	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return IDEM_ENOMEM;
	if ((s->e = calloc(STATS_MAX_ROWS, sizeof(*s->e))) == NULL) {
		free(s);
		return IDEM_ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	*out = s;
	return IDEM_OK;
}

static void
entries_free(struct sentry *e, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		free(e[i].route);
}

void
stats_free(struct stats *s)
{
	if (s == NULL)
		return;
	entries_free(s->e, s->n);
	free(s->e);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static int64_t
minute_now(void)
{
	time_t	 t = time(NULL);

	return (int64_t)t - (int64_t)t % 60;
}

static struct sentry *
find(struct stats *s, int64_t minute, const char *route)
{
	size_t	 i;

	/* Newest rows are at the end and are the likely match. */
	for (i = s->n; i > 0; i--)
		if (s->e[i - 1].minute == minute &&
		    strcmp(s->e[i - 1].route, route) == 0)
			return &s->e[i - 1];
	return NULL;
}

/* Drops the row with the oldest minute to make room. */
static void
evict_oldest(struct stats *s)
{
	size_t	 i, old = 0;

	for (i = 1; i < s->n; i++)
		if (s->e[i].minute < s->e[old].minute)
			old = i;
	free(s->e[old].route);
	s->e[old] = s->e[s->n - 1];
	s->n--;
	if (s->dropped++ == 0)
		log_warn("counters: too many rows pending; "
		    "dropping the oldest");
}

/* The row for (minute, route), created if needed; NULL only on ENOMEM.
 * Called with the mutex held. */
static struct sentry *
slot(struct stats *s, int64_t minute, const char *route)
{
	struct sentry	*e;
	size_t		 len;

	if (route == NULL || *route == '\0')
		route = "/";
	if ((e = find(s, minute, route)) != NULL)
		return e;
	if (s->n >= STATS_MAX_ROWS - 1 && strcmp(route, STATS_OTHER) != 0) {
		/* Keep the last slot for "(other)". */
		route = STATS_OTHER;
		if ((e = find(s, minute, route)) != NULL)
			return e;
	}
	if (s->n >= STATS_MAX_ROWS)
		evict_oldest(s);
	e = &s->e[s->n];
	memset(e, 0, sizeof(*e));
	len = strlen(route);
	if (len > STATS_ROUTE_MAX)
		len = STATS_ROUTE_MAX;
	if ((e->route = strndup(route, len)) == NULL)
		return NULL;
	e->minute = minute;
	s->n++;
	return e;
}

void
stats_add(struct stats *s, const char *route, enum stat_id id, uint64_t n)
{
	struct sentry	*e;

	if (s == NULL || (unsigned)id >= STAT__COUNT)
		return;
	pthread_mutex_lock(&s->mu);
	if ((e = slot(s, minute_now(), route)) != NULL)
		e->n[id] += n;
	pthread_mutex_unlock(&s->mu);
}

void
stats_wait(struct stats *s, const char *route, int64_t wait_ms)
{
	struct sentry	*e;
	size_t		 b;

	if (s == NULL)
		return;
	if (wait_ms < 0)
		wait_ms = 0;
	b = stat_wait_bucket(wait_ms);
	pthread_mutex_lock(&s->mu);
	if ((e = slot(s, minute_now(), route)) != NULL) {
		e->n[STAT_WAITED]++;
		e->wait_bucket[b]++;
		e->wait_sum_ms += (uint64_t)wait_ms;
	}
	pthread_mutex_unlock(&s->mu);
}

/* Adds back rows a failed flush took out.  Called with the mutex held. */
static void
merge_back(struct stats *s, const struct sentry *e, size_t n)
{
	struct sentry	*d;
	size_t		 i, j;

	for (i = 0; i < n; i++) {
		if ((d = slot(s, e[i].minute, e[i].route)) == NULL)
			continue;
		for (j = 0; j < STAT__COUNT; j++)
			d->n[j] += e[i].n[j];
		for (j = 0; j < STAT_WAIT_BUCKETS; j++)
			d->wait_bucket[j] += e[i].wait_bucket[j];
		d->wait_sum_ms += e[i].wait_sum_ms;
	}
}

enum idem_err
stats_flush(struct stats *s, struct store *st, const char *host)
{
	struct sentry	*taken, *fresh;
	struct stat_row	*rows = NULL;
	size_t		 n, i;
	enum idem_err	 er;

	if ((fresh = calloc(STATS_MAX_ROWS, sizeof(*fresh))) == NULL)
		return IDEM_ENOMEM;
	/* Swap the table out so requests never wait for the database. */
	pthread_mutex_lock(&s->mu);
	taken = s->e;
	n = s->n;
	s->e = fresh;
	s->n = 0;
	pthread_mutex_unlock(&s->mu);

	er = IDEM_OK;
	if (n == 0)
		goto out;
	if ((rows = calloc(n, sizeof(*rows))) == NULL) {
		er = IDEM_ENOMEM;
		goto fail;
	}
	for (i = 0; i < n; i++) {
		rows[i].minute = taken[i].minute;
		rows[i].route = taken[i].route;
		memcpy(rows[i].n, taken[i].n, sizeof(rows[i].n));
		memcpy(rows[i].wait_bucket, taken[i].wait_bucket,
		    sizeof(rows[i].wait_bucket));
		rows[i].wait_sum_ms = taken[i].wait_sum_ms;
	}
	if ((er = store_counters_add(st, host, rows, n)) == IDEM_OK)
		goto out;
fail:
	/* Keep the counts for the next flush (bounded by slot()). */
	pthread_mutex_lock(&s->mu);
	merge_back(s, taken, n);
	pthread_mutex_unlock(&s->mu);
out:
	free(rows);
	entries_free(taken, n);
	free(taken);
	return er;
}

size_t
stats_pending(struct stats *s, const char *route, struct stat_row *out)
{
	size_t	 i, j, n;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->n; i++) {
		if (route == NULL || strcmp(s->e[i].route, route) != 0)
			continue;
		for (j = 0; j < STAT__COUNT; j++)
			out->n[j] += s->e[i].n[j];
		for (j = 0; j < STAT_WAIT_BUCKETS; j++)
			out->wait_bucket[j] += s->e[i].wait_bucket[j];
		out->wait_sum_ms += s->e[i].wait_sum_ms;
	}
	n = s->n;
	pthread_mutex_unlock(&s->mu);
	return n;
}
