/*
 * The scoreboard: what each worker process is doing, in memory the
 * supervisor maps shared before it forks them, so that any worker can
 * answer the status page (status_path) for all of them.  Every field is
 * an atomic written by its own worker and read by any; nothing is locked.
 */
#ifndef IDEM_BOARD_H
#define IDEM_BOARD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* One per entry of the supervisor's process table (fcgi/super.c: two
 * generations of at most 256 workers). */
#define BOARD_SLOTS	512
/* Request threads tracked per worker: cfg's threads maximum. */
#define BOARD_THREADS	1024
/* Counters of keys done (board_done), shared by hash: a power of 2. */
#define BOARD_KEYS	4096

struct board_slot {
	atomic_int		pid;		/* 0: free */
	atomic_int		gen;		/* config generation */
	atomic_llong		started_s;	/* unix seconds */
	atomic_int		threads;	/* request threads running */
	atomic_int		queued;		/* whole requests waiting for
						 * one */
	atomic_int		store_up;	/* -1 unknown, 0 down, 1 up */
	atomic_uint		store_errno;	/* of the last failure,
						 * 0 none */
	atomic_ullong		served;		/* requests answered */
	atomic_ullong		cache_hits;	/* replays from the replay
						 * cache */
	atomic_ullong		cache_misses;
	atomic_ullong		cache_bytes;
	atomic_int		parked;		/* waiters parked without a
						 * thread (fcgi/park.h) */
	atomic_int		accepting;	/* its reader polls the listen
						 * socket (not paused, not
						 * draining) */
	/* CLOCK_MONOTONIC ms a thread's request started, 0 idle. */
	atomic_llong		busy_since[BOARD_THREADS];
	/* The lock hash (fcgi/park.h) of the key a thread owns, 0 none. */
	atomic_ullong		owns[BOARD_THREADS];
};

/* Supervisor, before the first fork: maps the board.  0 or -1 (errno). */
int board_init(void);

/* Supervisor: slot i now holds worker pid of generation gen (cleared
 * first), or is free again (pid 0).  No-op without a board. */
void board_set(int i, int pid, int gen);

/* Worker, first thing: slot i is this process's.  board_me() is it, or
 * NULL when there is no board. */
void board_attach(int i);
struct board_slot *board_me(void);

/* Worker: whole requests waiting for a request thread now. */
void board_queued(size_t n);

/* Worker: parked waiters now. */
void board_parked(size_t n);

/* Worker: its reader polls the listen socket (1) or not (0). */
void board_accepting(int on);

/* Worker: request thread t owns the key of lock hash h now (0: none). */
void board_own(int t, uint64_t h);

/* 1 if a thread of a live worker owns a key of lock hash h. */
int board_owned(uint64_t h);

/*
 * How many keys of h's bucket were done (recorded) in all workers: a
 * waiter reads it before its claim; board_done moves it when an owner is
 * done.  Without a board, this process's counters.
 */
uint64_t board_done_count(uint64_t h);
void board_done(uint64_t h);

/*
 * An eventfd the supervisor makes with the board, in every worker's
 * epoll set with EPOLLEXCLUSIVE beside the listen socket: a reader with
 * no idle thread left writes it to wake another worker's reader, which
 * then accepts what waits (fcgi/reader.c).  -1 without a board.
 */
int board_nudge_fd(void);

/* 1 if a live worker of this one's generation, other than this one,
 * accepts and has a request thread that is neither busy nor spoken for
 * by a queued request. */
int board_idle_elsewhere(void);

/* Slot i for reading (NULL past the end or without a board). */
const struct board_slot *board_slot(int i);

/* The age in ms of the oldest busy thread of s, 0 if none; *busy gets
 * how many are busy. */
int64_t board_busy(const struct board_slot *s, int *busy);

#endif
