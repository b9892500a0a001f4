/* Keeping the lease of an owned key while its handler or job runs. */
#include <string.h>

#include "cfg.h"
#include "clock.h"
#include "lease.h"
#include "log.h"

void
lease_init(struct lease *l, const struct once *o, int stoppable)
{
	l->st = o->st;
	l->c = &o->c;
	l->lease_ms = o->id->lease_ms;
	l->ok_until = once_claimed_ms(o) + l->lease_ms;
	l->margin = cfg_lease_margin_ms(l->lease_ms);
	l->stoppable = stoppable;
	l->tag = o->tag;
	memset(&l->warned, 0, sizeof(l->warned));
}

int64_t
lease_tick_ms(int64_t lease_ms)
{
	int64_t	 t = lease_ms / 3;

	return t < 100 ? 100 : t;
}

int
lease_retry_after(int64_t left_ms, int64_t wait_ms)
{
	int64_t	 s;

	/* A retry waits up to wait for the run's end (and is woken by it):
	 * sooner than the lease's end is the better hint, and a retry told
	 * to come back past the key's ttl would be a new key. */
	if (wait_ms < left_ms)
		left_ms = wait_ms;
	s = (left_ms + 999) / 1000;

	if (s < 1)
		s = 1;
	if (s > 86400)
		s = 86400;
	return (int)s;
}

/* The stop point passed without a renewal: a stoppable run ends now. */
static int64_t
lease_lost(struct lease *l)
{
	log_err("%s: lease not renewed in time (%s); stopping the handler "
	    "before it ends", l->tag, store_last_error(l->st));
	return -1;
}

int64_t
lease_tick(void *arg)
{
	struct lease	*l = arg;
	int64_t		 t0 = clock_now_ms(), left, budget;
	uint64_t	 n;
	enum idem_err	 er;

	left = l->ok_until - l->margin - t0;
	if (l->stoppable && left <= 0)
		return lease_lost(l);
	/* A stoppable run's renewal must answer before the stop point, and
	 * none holds the run's I/O up longer than LEASE_RENEW_MAX_MS (a
	 * reconnect shares that deadline). */
	budget = LEASE_RENEW_MAX_MS;
	if (l->stoppable && left < budget)
		budget = left;
	store_deadline(l->st, budget);
	er = store_renew(l->st, l->c, l->lease_ms);
	if (er == IDEM_OK) {
		/* The server's lease starts after t0: ours is shorter. */
		l->ok_until = t0 + l->lease_ms;
		return lease_tick_ms(l->lease_ms);
	}
	if (er == IDEM_ENOTFOUND) {
		log_err("%s: key no longer ours (forgotten or taken over); "
		    "stopping the handler", l->tag);
		return -1;
	}
	left = l->ok_until - l->margin - clock_now_ms();
	if (l->stoppable && left <= 0)
		return lease_lost(l);
	if (!l->stoppable) {
		log_warn("%s: lease renewal failed: %s; the upstream run goes "
		    "on and its key stays in progress", l->tag,
		    store_last_error(l->st));
		return LEASE_UPSTREAM_RETRY_MS;
	}
	/* Retried every LEASE_RETRY_MS, said once a second. */
	if (log_every(&l->warned, t0, 1000, &n))
		log_warn("%s: lease renewal failed: %s; %lld ms left", l->tag,
		    store_last_error(l->st), (long long)left);
	return left < LEASE_RETRY_MS ? left : LEASE_RETRY_MS;
}
