/* Where idemtop's numbers come from: MySQL (store_top) or a test fake. */
#ifndef IDEM_IDEMTOP_DATA_H
#define IDEM_IDEMTOP_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "err.h"
#include "store_top.h"

/*
 * A data source.  fetch replaces *out (initialised) with a fresh snapshot
 * or leaves it unchanged and writes a one-line reason to err.  forget
 * deletes the key row id (*deleted 0 if it was gone already).
 */
struct top_src {
	enum idem_err	(*fetch)(struct top_src *src, struct top_snap *out,
			    char *err, size_t errlen);
	enum idem_err	(*forget)(struct top_src *src, uint64_t id,
			    int *deleted, char *err, size_t errlen);
	void		(*free)(struct top_src *src);
};

/*
 * The MySQL source for cfg (borrowed, must outlive the source).  Does not
 * connect yet.  After a failed fetch the connection is dropped, so the
 * next fetch reconnects from scratch; pacing the retries (backoff) is the
 * caller's business.
 */
enum idem_err top_src_mysql_new(const struct cfg *cfg, struct top_src **out);

/*
 * A fake source that serves copies of canned (copied now).  fail != NULL
 * makes fetches fail with that text until top_src_fake_set_fail(src,
 * NULL).  Forget removes the key from the canned data.
 */
enum idem_err top_src_fake_new(const struct top_snap *canned,
    struct top_src **out);
void top_src_fake_set_fail(struct top_src *src, const char *fail);
/* How many fetch calls the fake has answered (for tests). */
unsigned top_src_fake_fetches(const struct top_src *src);

/*
 * Fills s with a fixed, varied data set for tests and demos: several
 * routes, in-progress keys (one past its lease, one with control bytes),
 * cleanup runs (ok, failed, running) and an hour of counters.  now_ms is
 * the snapshot's clock.  s must be initialised; it is replaced.
 */
enum idem_err top_fake_fill(struct top_snap *s, int64_t now_ms);

/* Copies src into *dst (initialised; replaced).  Deep copy of arrays. */
enum idem_err top_snap_copy(struct top_snap *dst, const struct top_snap *src);

/* NULL is a no-op. */
void top_src_free(struct top_src *src);

#endif
