/* Inside idemtop's UI: table columns and the filtered, sorted row view. */
#ifndef IDEM_IDEMTOP_VIEW_H
#define IDEM_IDEMTOP_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "idemtop_ui.h"

/* One table column; flex columns share the width left over. */
struct col {
	const char	*name;
	int		 width;		/* minimum */
	int		 flex;		/* share of spare width, 0 fixed */
	int		 right;		/* right-aligned */
	int		 desc;		/* natural sort order is descending */
};

/* Columns of a table screen (NULL, *n = 0 for the overview). */
const struct col *top_screen_cols(int screen, int *n);

/*
 * Indices into the snapshot array of screen, filtered and sorted, in
 * display order.  Returns how many; *out is malloc'd (NULL when 0) and
 * the caller frees it.
 */
size_t top_view_rows(const struct top_ui *ui, const struct top_snap *s,
    int screen, size_t **out);

/* Clamps the selection of screen to n rows. */
void top_clamp_sel(struct top_ui *ui, int screen, size_t n);

/* A route's wait percentile p (stat_wait_percentile: no waits sort first,
 * the +Inf bucket last). */
int64_t top_route_q(const struct top_route *r, double p);

#endif
