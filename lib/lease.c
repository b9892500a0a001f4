/* Keeping the lease of an owned key while its handler or job runs. */
#include "clock.h"
#include "lease.h"
#include "log.h"

void
lease_init(struct lease *l, struct store *st, const struct claim *c,
    int64_t lease_ms, int64_t claimed_ms, const char *tag)
{
	l->st = st;
	l->c = c;
	l->lease_ms = lease_ms;
	l->ok_until = claimed_ms + lease_ms;
	l->margin = lease_stop_margin(lease_ms);
	l->tag = tag;
}

int64_t
lease_tick_ms(int64_t lease_ms)
{
	int64_t	 t = lease_ms / 3;

	return t < 100 ? 100 : t;
}

int64_t
lease_stop_margin(int64_t lease_ms)
{
	int64_t	 m = lease_ms / 5;

	if (m < 300)
		m = 300;
	if (m > 5000)
		m = 5000;
	if (m > lease_ms / 2)
		m = lease_ms / 2;
	return m;
}

int
lease_retry_after(int64_t lease_left_ms)
{
	int64_t	 s = (lease_left_ms + 999) / 1000;

	if (s < 1)
		s = 1;
	if (s > 86400)
		s = 86400;
	return (int)s;
}

int64_t
lease_tick(void *arg)
{
	struct lease	*l = arg;
	int64_t		 t0, left;
	enum idem_err	 er;

	t0 = clock_now_ms();
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
	if (left <= 0) {
		log_err("%s: lease not renewed in time (%s); stopping the "
		    "handler before it ends", l->tag,
		    store_last_error(l->st));
		return -1;
	}
	log_warn("%s: lease renewal failed: %s; %lld ms left", l->tag,
	    store_last_error(l->st), (long long)left);
	return left < LEASE_RETRY_MS ? left : LEASE_RETRY_MS;
}
