/* The status page: the scoreboard as text or JSON. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"
#include "board.h"
#include "status.h"
#include "store.h"

/* One worker's line of the page. */
struct wstat {
	int			 pid, gen, threads, busy, queued, parked;
	int			 store_up;
	unsigned		 store_errno;
	long long		 started_s;
	int64_t			 oldest_ms;
	unsigned long long	 served, hits, misses, bytes;
};

static int
want_json(const char *query)
{
	const char	*p = query;
	size_t		 n;

	while (p != NULL && *p != '\0') {
		n = strcspn(p, "&");
		if ((n == 4 && strncmp(p, "json", 4) == 0) ||
		    strncmp(p, "json=", 5) == 0)
			return 1;
		p += n;
		if (*p == '&')
			p++;
	}
	return 0;
}

static int
read_slot(const struct board_slot *s, struct wstat *w)
{
	if ((w->pid = atomic_load(&s->pid)) <= 0)
		return 0;
	w->gen = atomic_load(&s->gen);
	w->threads = atomic_load(&s->threads);
	w->queued = atomic_load(&s->queued);
	w->parked = atomic_load(&s->parked);
	w->store_up = atomic_load(&s->store_up);
	w->store_errno = atomic_load(&s->store_errno);
	w->started_s = atomic_load(&s->started_s);
	w->served = atomic_load(&s->served);
	w->hits = atomic_load(&s->cache_hits);
	w->misses = atomic_load(&s->cache_misses);
	w->bytes = atomic_load(&s->cache_bytes);
	w->oldest_ms = board_busy(s, &w->busy);
	return 1;
}

static const char *
store_word(int up)
{
	return up > 0 ? "up" : up == 0 ? "down" : "unknown";
}

/* Adds one worker's counts to the totals; the oldest request is the
 * oldest of any worker's. */
static void
wstat_add(struct wstat *tot, const struct wstat *w)
{
	tot->threads += w->threads;
	tot->busy += w->busy;
	tot->queued += w->queued;
	tot->parked += w->parked;
	tot->served += w->served;
	tot->hits += w->hits;
	tot->misses += w->misses;
	if (w->oldest_ms > tot->oldest_ms)
		tot->oldest_ms = w->oldest_ms;
}

/* One worker's line, or its JSON object preceded by sep. */
static void
render_worker(struct buf *b, int json, const struct wstat *w, long long now,
    const char *sep)
{
	if (json)
		buf_printf(b, "%s{\"pid\":%d,\"generation\":%d,"
		    "\"uptime_s\":%lld,\"threads\":%d,\"busy\":%d,"
		    "\"idle\":%d,\"in_flight\":%d,\"queued\":%d,"
		    "\"parked\":%d,"
		    "\"oldest_in_flight_ms\":%lld,\"served\":%llu,"
		    "\"store\":\"%s\",\"store_errno\":%u,"
		    "\"replay_cache_hits\":%llu,"
		    "\"replay_cache_misses\":%llu,"
		    "\"replay_cache_bytes\":%llu}", sep,
		    w->pid, w->gen, now - w->started_s, w->threads, w->busy,
		    w->threads - w->busy, w->busy + w->queued + w->parked,
		    w->queued, w->parked,
		    (long long)w->oldest_ms, w->served,
		    store_word(w->store_up), w->store_errno, w->hits,
		    w->misses, w->bytes);
	else
		buf_printf(b, "worker %d: generation %d, up %lld s, "
		    "threads %d busy %d idle %d, queued %d, parked %d, "
		    "oldest %lld ms, served %llu, store %s, replay cache "
		    "hits %llu misses %llu\n", w->pid, w->gen,
		    now - w->started_s, w->threads, w->busy,
		    w->threads - w->busy, w->queued, w->parked,
		    (long long)w->oldest_ms, w->served,
		    store_word(w->store_up), w->hits, w->misses);
}

/* The totals over n workers and the store's state; in JSON this closes
 * the document. */
static void
render_totals(struct buf *b, int json, const struct wstat *tot, int n,
    int store_now, unsigned store_err)
{
	if (json) {
		buf_printf(b, "],\"total\":{\"workers\":%d,\"threads\":%d,"
		    "\"busy\":%d,\"idle\":%d,\"in_flight\":%d,\"queued\":%d,"
		    "\"parked\":%d,"
		    "\"oldest_in_flight_ms\":%lld,\"served\":%llu,"
		    "\"replay_cache_hits\":%llu,\"replay_cache_misses\":%llu},"
		    "\"store\":{\"state\":\"%s\",\"errno\":%u}}\n", n,
		    tot->threads, tot->busy, tot->threads - tot->busy,
		    tot->busy + tot->queued + tot->parked, tot->queued,
		    tot->parked,
		    (long long)tot->oldest_ms, tot->served, tot->hits,
		    tot->misses, store_word(store_now), store_err);
		return;
	}
	buf_printf(b, "supervisor pid:       %ld\n"
	    "workers:              %d\n"
	    "threads:              %d\n"
	    "busy threads:         %d\n"
	    "idle threads:         %d\n"
	    "requests in flight:   %d\n"
	    "queued requests:      %d\n"
	    "parked waiters:       %d\n"
	    "oldest in flight ms:  %lld\n"
	    "requests served:      %llu\n"
	    "replay cache hits:    %llu\n"
	    "replay cache misses:  %llu\n"
	    "store:                %s%s\n",
	    (long)getppid(), n, tot->threads, tot->busy,
	    tot->threads - tot->busy, tot->busy + tot->queued + tot->parked,
	    tot->queued, tot->parked,
	    (long long)tot->oldest_ms, tot->served, tot->hits, tot->misses,
	    store_word(store_now), store_now == 0 ? " (see the log)" : "");
}

static void
render(struct buf *b, int json, int store_now, unsigned store_err)
{
	const struct board_slot	*s;
	struct wstat		 w, tot;
	struct buf		 lines;
	int			 i, n = 0;
	long long		 now = (long long)time(NULL);

	memset(&tot, 0, sizeof(tot));
	/* Plain text gives the totals first, as php-fpm's page: the
	 * workers' lines are kept until they are out. */
	buf_init(&lines, b->max);
	if (json)
		buf_printf(b, "{\"supervisor_pid\":%ld,\"time\":%lld,"
		    "\"workers\":[", (long)getppid(), now);
	for (i = 0; (s = board_slot(i)) != NULL; i++) {
		if (!read_slot(s, &w))
			continue;
		wstat_add(&tot, &w);
		render_worker(json ? b : &lines, json, &w, now,
		    n > 0 ? "," : "");
		n++;
	}
	render_totals(b, json, &tot, n, store_now, store_err);
	if (lines.len > 0)
		buf_add(b, lines.p, lines.len);
	buf_free(&lines);
}

void
status_serve(struct reply *out, const char *method, const char *query,
    struct store *st)
{
	struct answer	 a;
	uint64_t	 epoch;
	int		 json = want_json(query), up = -1;
	unsigned	 err = 0;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		reply_problem(out, PROB_METHOD_NOT_ALLOWED, 0, 0,
		    "Allow: GET, HEAD\r\n");
		return;
	}
	if (st != NULL) {
		up = store_epoch(st, &epoch) == IDEM_OK;
		err = up ? 0 : store_errno(st);
	}
	answer_init(&a, 4096, 1024 * 1024);
	a.status = 200;
	buf_printf(&a.hdrs, "Content-Type: %s\r\nCache-Control: no-store\r\n",
	    json ? "application/json" : "text/plain; charset=utf-8");
	if (board_slot(0) == NULL)
		buf_addstr(&a.body, json ? "{\"error\":\"no scoreboard\"}\n" :
		    "no scoreboard (see the log)\n");
	else
		render(&a.body, json, up, err);
	reply_answer(out, &a, NULL);
	answer_free(&a);
}
