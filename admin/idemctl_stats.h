/* idemctl stats, metrics: fleet counters as table, TSV, JSON or Prometheus. */
#ifndef IDEM_IDEMCTL_STATS_H
#define IDEM_IDEMCTL_STATS_H

#include <stdio.h>

#include "idemctl_common.h"
#include "store_admin.h"

extern const char ctl_stats_usage[];
extern const char ctl_metrics_usage[];

enum stats_format { STATS_TABLE, STATS_TSV, STATS_JSON };

/* "stats [--since DUR] [--route R] [--format table|tsv|json]". */
int ctl_stats(struct ctl *c, int argc, char **argv);

/* "metrics": Prometheus text exposition format 0.0.4 on stdout. */
int ctl_metrics(struct ctl *c, int argc, char **argv);

/* Adds every counter of src to dst (the fleet total row). */
void ctlstats_sum(struct admin_stat *dst, const struct admin_stat *src);

/* Writes rows and their total in format fmt.  since_s only labels JSON. */
void stats_print(FILE *f, enum stats_format fmt, const struct admin_stat *rows,
    size_t n, int64_t since_s);

/* Writes the exposition text for per-route counters and the gauges. */
/* The idemgate_store_up gauge alone (HELP, TYPE, value). */
void metrics_store_up(FILE *f, int up);

void metrics_print(FILE *f, const struct admin_stat *rows, size_t n,
    const struct admin_gauges *g);

/* Writes s as a JSON string (quotes included), escaping what JSON needs
 * and bytes outside printable ASCII as \u00XX. */
void json_put_string(FILE *f, const char *s);

/* Writes s as a Prometheus label value (without quotes): \\, \" and \n. */
void prom_put_label(FILE *f, const char *s);

#endif
