/* The scoreboard in shared memory. */
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <string.h>
#include <time.h>

#include "board.h"
#include "clock.h"

static struct board_slot	*slots;		/* BOARD_SLOTS, shared */
static struct board_slot	*me;
/* BOARD_KEYS, shared after the slots; this process's without a board. */
static atomic_ullong		 own_done[BOARD_KEYS];
static atomic_ullong		*done = own_done;
static int			 nudge = -1;	/* shared eventfd */

int
board_init(void)
{
	void	*p;

	if (slots != NULL)
		return 0;
	/* Pages nobody writes (threads past cfg's) are never backed. */
	p = mmap(NULL, BOARD_SLOTS * sizeof(struct board_slot) +
	    BOARD_KEYS * sizeof(atomic_ullong), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	slots = p;
	done = (atomic_ullong *)(slots + BOARD_SLOTS);
	/* Without it workers do not hand bursts to each other. */
	nudge = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return 0;
}

int
board_nudge_fd(void)
{
	return nudge;
}

int
board_idle_elsewhere(void)
{
	const struct board_slot	*s;
	int			 i, gen, busy, idle;

	if (slots == NULL || me == NULL)
		return 0;
	gen = atomic_load(&me->gen);
	for (i = 0; i < BOARD_SLOTS; i++) {
		s = &slots[i];
		if (s == me || atomic_load(&s->pid) == 0 ||
		    atomic_load(&s->gen) != gen ||
		    !atomic_load(&s->accepting))
			continue;
		(void)board_busy(s, &busy);
		idle = atomic_load(&s->threads) - busy -
		    atomic_load(&s->queued);
		if (idle > 0)
			return 1;
	}
	return 0;
}

void
board_set(int i, int pid, int gen)
{
	struct board_slot	*s;
	int			 t, n;

	if (slots == NULL || i < 0 || i >= BOARD_SLOTS)
		return;
	s = &slots[i];
	atomic_store(&s->pid, 0);
	n = atomic_load(&s->threads);
	for (t = 0; t < n && t < BOARD_THREADS; t++) {
		atomic_store(&s->busy_since[t], 0);
		atomic_store(&s->owns[t], 0);
	}
	atomic_store(&s->threads, 0);
	atomic_store(&s->queued, 0);
	atomic_store(&s->parked, 0);
	atomic_store(&s->accepting, 0);
	atomic_store(&s->store_up, -1);
	atomic_store(&s->store_errno, 0);
	atomic_store(&s->served, 0);
	atomic_store(&s->cache_hits, 0);
	atomic_store(&s->cache_misses, 0);
	atomic_store(&s->cache_bytes, 0);
	atomic_store(&s->gen, gen);
	atomic_store(&s->started_s, (long long)time(NULL));
	atomic_store(&s->pid, pid);
}

void
board_attach(int i)
{
	me = slots != NULL && i >= 0 && i < BOARD_SLOTS ? &slots[i] : NULL;
}

struct board_slot *
board_me(void)
{
	return me;
}

void
board_queued(size_t n)
{
	if (me != NULL)
		atomic_store(&me->queued, (int)n);
}

void
board_parked(size_t n)
{
	if (me != NULL)
		atomic_store(&me->parked, (int)n);
}

void
board_accepting(int on)
{
	if (me != NULL)
		atomic_store(&me->accepting, on);
}

void
board_own(int t, uint64_t h)
{
	if (me != NULL && t >= 0 && t < BOARD_THREADS)
		atomic_store(&me->owns[t], h);
}

int
board_owned(uint64_t h)
{
	int	 i, t, n;

	for (i = 0; slots != NULL && i < BOARD_SLOTS; i++) {
		if (atomic_load(&slots[i].pid) == 0)
			continue;
		n = atomic_load(&slots[i].threads);
		for (t = 0; t < n && t < BOARD_THREADS; t++)
			if (atomic_load(&slots[i].owns[t]) == h)
				return 1;
	}
	return 0;
}

uint64_t
board_done_count(uint64_t h)
{
	return atomic_load(&done[h & (BOARD_KEYS - 1)]);
}

void
board_done(uint64_t h)
{
	atomic_fetch_add(&done[h & (BOARD_KEYS - 1)], 1);
}

const struct board_slot *
board_slot(int i)
{
	return slots != NULL && i >= 0 && i < BOARD_SLOTS ? &slots[i] : NULL;
}

int64_t
board_busy(const struct board_slot *s, int *busy)
{
	int64_t	 now = clock_now_ms(), oldest = 0, t0;
	int	 t, n = atomic_load(&s->threads);

	*busy = 0;
	for (t = 0; t < n && t < BOARD_THREADS; t++) {
		if ((t0 = atomic_load(&s->busy_since[t])) == 0)
			continue;
		(*busy)++;
		if (now - t0 > oldest)
			oldest = now - t0;
	}
	return oldest;
}
