/* A worker process: request threads on the shared listen socket. */
#include <sys/socket.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "board.h"
#include "clock.h"
#include "linger.h"
#include "listen.h"
#include "log.h"
#include "rcache.h"
#include "reader.h"
#include "recorder.h"
#include "request.h"
#include "stats.h"
#include "store.h"
#include "store_hkey.h"
#include "worker.h"

/* While the store fails, say so (and what to do) this often. */
#define STORE_SAY_MS	60000

/* On stop, how long pending outcomes are still retried at least. */
#define WORKER_DRAIN_RECORD_MS	10000

struct worker;

struct rthread {
	struct worker	*w;
	pthread_t	 tid;
	int		 started;
	atomic_int	 done;
};

struct worker {
	const struct cfg	*cfg;
	int			 listen_fd;
	const char		*web_addrs;	/* FCGI_WEB_SERVER_ADDRS */
	struct stats		*stats;
	struct rcache		*rc;		/* NULL: replay_cache = 0 */
	struct recorder		*rec;		/* outcomes the store missed */
	struct linger		*linger;	/* handlers done but running */
	struct hkey		 hk;		/* how keys are hashed */
	struct reader		*reader;	/* whole requests, read for
						 * us */
	struct gw_ctx		 quick;		/* the reader's, no store */
	char			 owner[300];
	char			 host[256];
	atomic_int		 stop;
	struct rthread		*threads;
	int			 nthreads;

	pthread_mutex_t		 flush_mu;
	pthread_cond_t		 flush_cv;
	int			 flush_stop;

	pthread_t		 flusher, keeper;
	int			 flusher_ok, keeper_ok;	/* started */
};

static void *
rthread_main(void *arg)
{
	struct rthread	*t = arg;
	struct worker	*w = t->w;
	struct gw_ctx	 ctx;
	struct store	*st = NULL;
	struct job	*j;
	struct board_slot *me = board_me();
	enum idem_err	 er;
	int		 reuse, idx = (int)(t - w->threads);

	if (store_thread_init() != IDEM_OK)
		log_err("MySQL thread init failed");
	if ((er = store_new(w->cfg, &st)) != IDEM_OK) {
		log_err("cannot create store: %s", idem_strerror(er));
		st = NULL;
	} else
		store_set_resident(st);
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = w->cfg;
	ctx.st = st;
	ctx.stats = w->stats;
	ctx.rc = w->rc;
	ctx.rec = w->rec;
	ctx.linger = w->linger;
	ctx.hk = &w->hk;
	ctx.owner = w->owner;
	ctx.rd = w->reader;
	ctx.idx = idx;
	/* NULL once the reader stopped and nothing is left to serve. */
	if (idx >= BOARD_THREADS)
		me = NULL;
	while ((j = reader_next(w->reader)) != NULL) {
		reuse = 0;
		if (me != NULL)
			atomic_store(&me->busy_since[idx], clock_now_ms() | 1);
		if (j->unsent > 0)
			reuse = request_flush(&ctx, j);
		else if (st == NULL)
			log_err("no store: cannot serve");
		else
			reuse = request_serve(&ctx, j);
		/* A waiter waits parked; one that cannot park is answered. */
		while (j != NULL && j->park.want) {
			if (reader_park(w->reader, j) == 0)
				j = NULL;
			else {
				j->park.final = 1;
				reuse = request_serve(&ctx, j);
			}
		}
		if (me != NULL)
			atomic_store(&me->busy_since[idx], 0);
		if (j == NULL)
			continue;
		if (me != NULL)
			atomic_fetch_add(&me->served, 1);
		reader_done(w->reader, j, reuse);
	}
	store_free(st);
	store_thread_end();
	atomic_store(&t->done, 1);
	return NULL;
}

/* The store as a worker thread found it, for the status page. */
static void
board_store(struct store *st, int up)
{
	struct board_slot	*me = board_me();

	if (me == NULL)
		return;
	atomic_store(&me->store_up, up);
	atomic_store(&me->store_errno, up ? 0 : store_errno(st));
}

static void
flush_now(struct worker *w, struct store *st)
{
	enum idem_err	 er;

	if (w->stats == NULL || st == NULL)
		return;
	er = stats_flush(w->stats, st, w->host);
	if (er != IDEM_OK)
		log_warn("counters flush failed: %s", store_last_error(st));
	/* Without a replay cache, the flush is the store's regular test. */
	if (w->rc == NULL)
		board_store(st, er == IDEM_OK);
}

/*
 * Keeps how this worker hashes keys in step with the store (store_hkey.h):
 * resolved, refused once the store turns keyed under a plain config, and
 * whether rows hashed before the key remain.  A refusal is logged once.
 */
static void
hkey_tick(struct worker *w, struct store *st)
{
	enum hkey_state	 was = hkey_state(&w->hk);

	if (st == NULL || store_hkey_refresh(st, &w->hk) != IDEM_OK)
		return;
	if (was != HKEY_REFUSED && hkey_state(&w->hk) == HKEY_REFUSED)
		log_err("store: %s (every protected request gets 500 "
		    "store-key-missing meanwhile)", w->hk.why);
}

static void *
flusher_main(void *arg)
{
	struct worker	*w = arg;
	struct store	*st = NULL;
	struct timespec	 ts;
	int64_t		 ms = w->cfg->counters_flush_ms;

	if (ms <= 0)
		ms = 5000;
	if (store_thread_init() != IDEM_OK)
		log_err("MySQL thread init failed");
	if (store_new(w->cfg, &st) != IDEM_OK)
		st = NULL;
	pthread_mutex_lock(&w->flush_mu);
	while (!w->flush_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&w->flush_cv, &w->flush_mu, &ts);
		if (w->flush_stop)
			break;
		pthread_mutex_unlock(&w->flush_mu);
		flush_now(w, st);
		hkey_tick(w, st);
		pthread_mutex_lock(&w->flush_mu);
	}
	pthread_mutex_unlock(&w->flush_mu);
	/* Last flush after the request threads have stopped. */
	flush_now(w, st);
	store_free(st);
	store_thread_end();
	return NULL;
}

/* The replay cache's figures, for the status page. */
static void
board_cache(struct rcache *rc)
{
	struct board_slot	*me = board_me();
	struct rcache_info	 ri;

	if (me == NULL)
		return;
	rcache_info(rc, &ri);
	atomic_store(&me->cache_hits, ri.hits);
	atomic_store(&me->cache_misses, ri.misses);
	atomic_store(&me->cache_bytes, ri.bytes);
}

/*
 * Vouches for the replay cache: reads the store's epoch every
 * RCACHE_POLL_MS (lib/ident/rcache.h says why that makes replays from memory
 * safe).  Stops with the request threads.
 */
static void *
worker_keeper(void *arg)
{
	struct worker	*w = arg;
	struct store	*st = NULL;
	struct timespec	 ts;
	uint64_t	 epoch;
	int64_t		 t0, left, said = 0;
	const char	*hint, *said_hint = NULL;
	int		 failing = 0;

	if (store_thread_init() != IDEM_OK)
		log_err("MySQL thread init failed");
	if (store_new(w->cfg, &st) != IDEM_OK)
		st = NULL;
	while (st != NULL && !atomic_load(&w->stop)) {
		t0 = clock_now_us();
		board_cache(w->rc);
		if (store_epoch(st, &epoch) == IDEM_OK) {
			board_store(st, 1);
			rcache_vouch(w->rc, epoch, t0);
			if (failing)
				log_info("store: answering again");
			failing = 0;
		} else {
			board_store(st, 0);
			rcache_distrust(w->rc);
			/* One line per problem, again every STORE_SAY_MS while
			 * it lasts: the first poll finds a bad set-up first. */
			hint = store_hint(st);
			if (!failing || hint != said_hint ||
			    clock_now_ms() - said >= STORE_SAY_MS) {
				log_err("store: %s%s%s (every request needing "
				    "it gets 503 meanwhile)",
				    store_last_error(st),
				    hint != NULL ? " -- " : "",
				    hint != NULL ? hint : "");
				said = clock_now_ms();
				said_hint = hint;
			}
			failing = 1;
		}
		left = t0 + RCACHE_POLL_MS * 1000 - clock_now_us();
		if (left > 0) {
			ts.tv_sec = 0;
			ts.tv_nsec = (long)left * 1000;
			nanosleep(&ts, NULL);
		}
	}
	store_free(st);
	store_thread_end();
	return NULL;
}

/* Stops reading new requests; the threads finish what was read. */
static void
drain(struct worker *w)
{
	int	 i;

	atomic_store(&w->stop, 1);
	reader_stop(w->reader);
	for (i = 0; i < w->nthreads; i++)
		if (w->threads[i].started)
			pthread_join(w->threads[i].tid, NULL);
}

/*
 * Sets w up for cfg: its names (host, owner) and the drain signals, which
 * only the main thread takes (sigwait).
 */
static void
worker_init(struct worker *w, const struct cfg *cfg, int listen_fd)
{
	sigset_t	 set;

	memset(w, 0, sizeof(*w));
	w->cfg = cfg;
	w->listen_fd = listen_fd;
	w->web_addrs = getenv("FCGI_WEB_SERVER_ADDRS");
	pthread_mutex_init(&w->flush_mu, NULL);
	pthread_cond_init(&w->flush_cv, NULL);
	hkey_init(&w->hk);

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (cfg->host_name != NULL)
		snprintf(w->host, sizeof(w->host), "%s", cfg->host_name);
	else if (gethostname(w->host, sizeof(w->host) - 1) != 0)
		snprintf(w->host, sizeof(w->host), "localhost");
	snprintf(w->owner, sizeof(w->owner), "%s:%ld", w->host,
	    (long)getpid());
}

/* reader_quick_fn: a replay from the cache, on the reader's thread. */
static int
worker_quick(void *arg, struct job *j, struct reply *out)
{
	return request_cached(arg, j, out);
}

/*
 * Starts what the request threads use: the MySQL library, the counters,
 * the replay cache and its keeper, the linger, the recorder and the
 * reader.  0, or -1 (logged).
 */
static int
worker_start_parts(struct worker *w)
{
	const struct cfg	*cfg = w->cfg;

	if (store_global_init() != IDEM_OK) {
		log_err("MySQL client library init failed");
		return -1;
	}
	if (stats_new(&w->stats) != IDEM_OK) {
		log_err("out of memory");
		return -1;
	}
	if (cfg->replay_cache > 0) {
		if (rcache_new(cfg->replay_cache, &w->rc) != IDEM_OK) {
			log_err("out of memory");
			return -1;
		}
		if (pthread_create(&w->keeper, NULL, worker_keeper, w) == 0)
			w->keeper_ok = 1;
		else
			log_err("cannot start replay cache thread: cache off");
	}
	if (linger_new(&w->linger) != IDEM_OK) {
		log_err("cannot start the linger thread");
		return -1;
	}
	if (recorder_new(cfg, &w->rec) != IDEM_OK) {
		log_err("cannot start the recorder thread");
		return -1;
	}
	/* Replays the cache holds are answered by the reader itself: no
	 * request thread, no wake-up, one send. */
	w->quick.cfg = cfg;
	w->quick.stats = w->stats;
	w->quick.rc = w->rc;
	w->quick.hk = &w->hk;
	w->quick.owner = w->owner;
	if (reader_new(cfg, w->listen_fd, w->web_addrs,
	    w->rc != NULL ? worker_quick : NULL, &w->quick, &w->reader) !=
	    IDEM_OK)
		return -1;
	return 0;
}

/*
 * Starts the request threads (as many as start: the scoreboard says how
 * many) and the counters' flusher.  0, or -1 (logged).
 */
static int
worker_start_threads(struct worker *w)
{
	int	 i;

	w->nthreads = w->cfg->threads > 0 ? w->cfg->threads : 1;
	if ((w->threads = calloc((size_t)w->nthreads, sizeof(*w->threads))) ==
	    NULL) {
		log_err("out of memory");
		return -1;
	}
	for (i = 0; i < w->nthreads; i++) {
		w->threads[i].w = w;
		if (pthread_create(&w->threads[i].tid, NULL, rthread_main,
		    &w->threads[i]) != 0) {
			log_err("cannot start request thread %d", i);
			break;
		}
		w->threads[i].started = 1;
	}
	if (board_me() != NULL) {
		atomic_store(&board_me()->threads, i);
		atomic_store(&board_me()->pid, (int)getpid());
	}
	if (pthread_create(&w->flusher, NULL, flusher_main, w) == 0)
		w->flusher_ok = 1;
	else
		log_err("cannot start counters thread");
	return 0;
}

/* Waits for SIGTERM or SIGINT. */
static void
worker_wait_stop(void)
{
	sigset_t	 set;
	int		 sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	for (;;) {
		if (sigwait(&set, &sig) == 0)
			break;
	}
}

/* How long a stopping worker retries outcomes it could not write: the
 * longest ttl of its routes, at least WORKER_DRAIN_RECORD_MS. */
static int64_t
worker_drain_ms(const struct cfg *cfg)
{
	int64_t	 ms = WORKER_DRAIN_RECORD_MS;
	size_t	 i;

	for (i = 0; i < cfg->nroutes; i++)
		if (cfg->routes[i].ttl_ms > ms)
			ms = cfg->routes[i].ttl_ms;
	return ms;
}

/* Stops the keeper and the flusher (a last flush) and frees the rest. */
static void
worker_end(struct worker *w)
{
	atomic_store(&w->stop, 1);
	if (w->keeper_ok)
		pthread_join(w->keeper, NULL);
	if (w->flusher_ok) {
		pthread_mutex_lock(&w->flush_mu);
		w->flush_stop = 1;
		pthread_cond_signal(&w->flush_cv);
		pthread_mutex_unlock(&w->flush_mu);
		pthread_join(w->flusher, NULL);
	}
	free(w->threads);
	reader_free(w->reader);
	/* Outcomes still unwritten keep their keys in progress, and one
	 * given up lets its key run again: they are retried as long as a
	 * key may live (the longest ttl).  A reload leaves this worker be
	 * meanwhile; a stop kills it at the supervisor's deadline. */
	recorder_free(w->rec, worker_drain_ms(w->cfg));
	linger_free(w->linger);
	rcache_free(w->rc);
	stats_free(w->stats);
	pthread_cond_destroy(&w->flush_cv);
	pthread_mutex_destroy(&w->flush_mu);
	hkey_free(&w->hk);
	store_global_end();
}

int
worker_run(const struct cfg *cfg, int listen_fd)
{
	struct worker	 w;
	int		 rc = 1;

	worker_init(&w, cfg, listen_fd);
	if (worker_start_parts(&w) == 0 && worker_start_threads(&w) == 0) {
		worker_wait_stop();
		drain(&w);
		rc = 0;
	}
	worker_end(&w);
	return rc;
}
