/* Outcomes of owned keys the store could not take yet, retried until stored. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "recorder.h"

struct rec_item {
	struct rec_item	*next;
	enum rec_op	 op;
	struct claim	 c;		/* id, token, lockname, the answer;
					 * no lock held */
	int64_t		 ttl_ms;
	int64_t		 give_up_ms;	/* CLOCK_MONOTONIC: the key's ttl */
	int		 tries;
};

struct recorder {
	const struct cfg	*cfg;
	pthread_t		 tid;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	struct rec_item		*head, *tail;
	size_t			 n;
	size_t			 inflight;	/* popped, being tried */
	size_t			 lost;		/* given up: ttl or not ours */
	int			 stop;
	int64_t			 drain_end_ms;
};

static void
rec_item_free(struct rec_item *it)
{
	if (it == NULL)
		return;
	claim_reset(&it->c);
	free(it);
}

/* Appends it to the queue; rc->mu held. */
static void
rec_push(struct recorder *rc, struct rec_item *it)
{
	it->next = NULL;
	if (rc->tail != NULL)
		rc->tail->next = it;
	else
		rc->head = it;
	rc->tail = it;
	rc->n++;
}

const char *
rec_op_name(enum rec_op op)
{
	switch (op) {
	case REC_COMPLETE:
		return "answer";
	case REC_TOMBSTONE:
		return "tombstone";
	default:
		return "release";
	}
}

enum idem_err
recorder_write(const struct rec_write *w, enum rec_op *op,
    const struct answer *a)
{
	enum idem_err	 er;

	switch (*op) {
	case REC_COMPLETE:
		if ((er = store_complete(w->st, w->c, a, w->ttl_ms)) !=
		    IDEM_ETOOBIG)
			return er;
		log_err("%s: cannot record answer: %s; keeping the key as a "
		    "tombstone", w->tag, store_last_error(w->st));
		*op = REC_TOMBSTONE;
		/* FALLTHROUGH */
	case REC_TOMBSTONE:
		return store_tombstone(w->st, w->c, a->status, a->expires_s,
		    w->ttl_ms);
	default:
		return store_release(w->st, w->c);
	}
}

/* One write.  IDEM_OK when it landed or can never land (*lost = 1). */
static enum idem_err
rec_try(struct store *st, struct rec_item *it, int *lost)
{
	const struct rec_write	 w = { st, &it->c, it->ttl_ms, "recorder" };
	enum idem_err		 er;

	er = recorder_write(&w, &it->op, &it->c.ans);
	if (er == IDEM_OK) {
		log_info("recorder: %s recorded after %d tries",
		    rec_op_name(it->op), it->tries + 1);
		return IDEM_OK;
	}
	if (er == IDEM_ENOTFOUND) {
		log_err("recorder: key no longer ours; its %s is lost",
		    rec_op_name(it->op));
		*lost = 1;
		return IDEM_OK;
	}
	it->tries++;
	return er;
}

/* Takes the oldest item off the queue; rc->mu held, the queue not empty. */
static struct rec_item *
rec_pop(struct recorder *rc)
{
	struct rec_item	*it = rc->head;

	rc->head = it->next;
	if (rc->head == NULL)
		rc->tail = NULL;
	rc->n--;
	return it;
}

/* One attempt at it, no lock held: 1 when it is done with (landed, or
 * lost for good: *lost = 1) and freed, 0 when it waits for another
 * pass. */
static int
rec_attempt(struct store *st, struct rec_item *it, int *lost)
{
	if (clock_now_ms() >= it->give_up_ms) {
		log_err("recorder: key's ttl passed before the store "
		    "answered; its %s is lost", rec_op_name(it->op));
		*lost = 1;
	} else if (st == NULL || rec_try(st, it, lost) != IDEM_OK)
		return 0;
	rec_item_free(it);
	return 1;
}

/* One pass over what is pending, the lock (held on entry and return)
 * dropped for I/O.  Returns 1 when some item is still pending. */
static int
rec_pass(struct recorder *rc, struct store *st)
{
	struct rec_item	*it;
	size_t		 k;
	int		 failed = 0, done, lost;

	for (k = rc->n; k > 0 && rc->head != NULL; k--) {
		it = rec_pop(rc);
		rc->inflight++;
		pthread_mutex_unlock(&rc->mu);
		lost = 0;
		done = rec_attempt(st, it, &lost);
		pthread_mutex_lock(&rc->mu);
		rc->inflight--;
		rc->lost += (size_t)lost;
		if (!done) {
			failed = 1;
			rec_push(rc, it);
		}
	}
	return failed;
}

/* Sleeps ms on rc->cv (rc->mu held); a new item or a stop wakes it early. */
static void
rec_wait(struct recorder *rc, int64_t ms)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&rc->cv, &rc->mu, &ts);
}

static void *
rec_main(void *arg)
{
	struct recorder	*rc = arg;
	struct store	*st = NULL;
	int64_t		 backoff = RECORDER_RETRY_MS;

	if (store_thread_init() != IDEM_OK)
		log_err("recorder: MySQL thread init failed");
	if (store_new(rc->cfg, &st) != IDEM_OK)
		st = NULL;
	pthread_mutex_lock(&rc->mu);
	for (;;) {
		if (rc->head == NULL) {
			if (rc->stop)
				break;
			pthread_cond_wait(&rc->cv, &rc->mu);
			continue;
		}
		if (rc->stop && clock_now_ms() >= rc->drain_end_ms)
			break;
		if (!rec_pass(rc, st)) {
			backoff = RECORDER_RETRY_MS;
			continue;
		}
		rec_wait(rc, backoff);
		backoff = backoff * 2 > RECORDER_RETRY_MAX_MS ?
		    RECORDER_RETRY_MAX_MS : backoff * 2;
	}
	if (rc->n > 0)
		log_err("recorder: stopping with %zu outcomes unwritten; "
		    "those keys run again after their lease", rc->n);
	pthread_mutex_unlock(&rc->mu);
	store_free(st);
	store_thread_end();
	return NULL;
}

enum idem_err
recorder_new(const struct cfg *cfg, struct recorder **out)
{
	struct recorder	*rc;

	if ((rc = calloc(1, sizeof(*rc))) == NULL)
		return IDEM_ENOMEM;
	rc->cfg = cfg;
	pthread_mutex_init(&rc->mu, NULL);
	pthread_cond_init(&rc->cv, NULL);
	if (pthread_create(&rc->tid, NULL, rec_main, rc) != 0) {
		pthread_cond_destroy(&rc->cv);
		pthread_mutex_destroy(&rc->mu);
		free(rc);
		return IDEM_ESYS;
	}
	*out = rc;
	return IDEM_OK;
}

enum idem_err
recorder_add(struct recorder *rc, enum rec_op op, const struct claim *c,
    const struct answer *a, int64_t ttl_ms)
{
	struct rec_item	*it;

	if ((it = calloc(1, sizeof(*it))) == NULL)
		return IDEM_ENOMEM;
	claim_init(&it->c);
	it->c.state = c->state;
	it->c.id = c->id;
	it->c.token = c->token;
	memcpy(it->c.lockname, c->lockname, sizeof(it->c.lockname));
	/* The row's identity, which a sealed answer binds in: without it
	 * nothing written here under a key file would ever open. */
	it->c.ad = c->ad;
	it->c.run_over = c->run_over;
	it->c.doubt_token = c->doubt_token;
	memcpy(it->c.doubt_scope, c->doubt_scope, sizeof(it->c.doubt_scope));
	memcpy(it->c.doubt_key, c->doubt_key, c->doubt_keylen);
	it->c.doubt_keylen = c->doubt_keylen;
	/* The lock went with the connection that lost the server, or stays
	 * with a session kept for it (the caller hands its sockets over:
	 * claim_reset closes them once the outcome is written). */
	it->c.locked = 0;
	it->op = op;
	it->ttl_ms = ttl_ms;
	it->give_up_ms = clock_now_ms() + ttl_ms;
	if (a != NULL) {
		answer_free(&it->c.ans);
		answer_init(&it->c.ans, a->hdrs.len, a->body.len);
		it->c.ans.status = a->status;
		it->c.ans.expires_s = a->expires_s;
		if (buf_add(&it->c.ans.hdrs, a->hdrs.p, a->hdrs.len) !=
		    IDEM_OK || buf_add(&it->c.ans.body, a->body.p,
		    a->body.len) != IDEM_OK) {
			rec_item_free(it);
			return IDEM_ENOMEM;
		}
	}
	/* Last: on failure above they are still the caller's. */
	memcpy(it->c.grave, c->grave, sizeof(it->c.grave));
	memcpy(it->c.grave_id, c->grave_id, sizeof(it->c.grave_id));
	it->c.ngrave = c->ngrave;
	pthread_mutex_lock(&rc->mu);
	rec_push(rc, it);
	pthread_cond_signal(&rc->cv);
	pthread_mutex_unlock(&rc->mu);
	return IDEM_OK;
}

size_t
recorder_pending(struct recorder *rc, size_t *lost)
{
	size_t	 n;

	pthread_mutex_lock(&rc->mu);
	n = rc->n + rc->inflight;
	if (lost != NULL)
		*lost = rc->lost;
	pthread_mutex_unlock(&rc->mu);
	return n;
}

void
recorder_free(struct recorder *rc, int64_t drain_ms)
{
	struct rec_item	*it;

	if (rc == NULL)
		return;
	pthread_mutex_lock(&rc->mu);
	rc->stop = 1;
	rc->drain_end_ms = clock_now_ms() + drain_ms;
	pthread_cond_signal(&rc->cv);
	pthread_mutex_unlock(&rc->mu);
	pthread_join(rc->tid, NULL);
	while ((it = rc->head) != NULL) {
		rc->head = it->next;
		rec_item_free(it);
	}
	pthread_cond_destroy(&rc->cv);
	pthread_mutex_destroy(&rc->mu);
	free(rc);
}
