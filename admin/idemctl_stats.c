/* idemctl stats and metrics: the fleet counters as a table, TSV, JSON or Prometheus text. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idemctl_stats.h"

const char ctl_stats_usage[] =
"usage: idemctl [-c FILE] stats [--since DUR] [--route R]\n"
"                               [--format table|tsv|json]\n"
"\n"
"Fleet-wide counters from every gateway (idem_counters), per route and in\n"
"total: protected requests, created, reused, reuse % (reused / protected\n"
"requests), 422 (key reused for a different request), 409 (still in\n"
"progress after the wait), waits with p50/p95/p99 wait time (the upper\n"
"bound of the histogram bucket holding the percentile: 10ms 50ms 100ms\n"
"250ms 500ms 1s 2.5s 5s 10s, '>10s' past the last), released (handler\n"
"5xx/crash/timeout), tombstoned (answer too large), store errors, and\n"
"requests with a missing or invalid key.\n"
"\n"
"  -s, --since DUR      minutes from DUR ago (default 1h; 30m, 6h, 7d; 0 = every\n"
"                       minute still retained)\n"
"  -r, --route R        only this route prefix\n"
"  -f, --format F       table (aligned, default), tsv (header line, '-' for\n"
"                       no value) or json (percentiles in ms; null when there\n"
"                       were no waits, \"+Inf\" past the last bucket)\n"
"  -c, --config FILE    config file (default " CTL_DEFAULT_CONFIG ")\n"
"\n"
"Exit: 0 ok, 1 usage, 2 config, 3 database, 6 schema missing or old.\n";

const char ctl_metrics_usage[] =
"usage: idemctl [-c FILE] metrics\n"
"\n"
"Prints the fleet counters and the keys table's state in the Prometheus\n"
"text exposition format (0.0.4), for node_exporter's textfile collector:\n"
"  idemctl metrics > DIR/idemgate.prom.tmp && mv DIR/idemgate.prom.tmp \\\n"
"      DIR/idemgate.prom\n"
"Counters are summed over the counter rows still retained ([cleanup]\n"
"counters_retention), so a cleanup that prunes old minutes lowers them;\n"
"Prometheus treats that as a counter reset.  Labels: route (and state, le);\n"
"never a key.\n"
"\n"
"Exit: 0 ok, 1 usage, 2 config, 3 database, 6 schema missing or old.\n";

void
ctlstats_sum(struct admin_stat *dst, const struct admin_stat *src)
{
	int	 i;

	for (i = 0; i < STAT__COUNT; i++)
		dst->n[i] += src->n[i];
	for (i = 0; i < STAT_WAIT_BUCKETS; i++)
		dst->wait_bucket[i] += src->wait_bucket[i];
	dst->wait_sum_ms += src->wait_sum_ms;
}

/* Length of the well-formed UTF-8 sequence at p (1..4), 0 if none. */
static size_t
utf8_len(const unsigned char *p)
{
	size_t	 n, i;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong, surrogate or past U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void
json_put_string(FILE *f, const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n;

	fputc('"', f);
	while (*p != '\0') {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else if ((n = utf8_len(p)) > 1) {
			/* UTF-8 (a route name, say) stays as it is */
			fwrite(p, 1, n, f);
			p += n;
			continue;
		} else if (n == 0)
			fputs("\\ufffd", f);	/* not UTF-8: replaced */
		else
			fputc(*p, f);
		p++;
	}
	fputc('"', f);
}

void
prom_put_label(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* The columns after the route, in order. */
enum col {
	C_REQ, C_CREATED, C_REUSED, C_PCT, C_422, C_409, C_WAITS, C_P50,
	C_P95, C_P99, C_RELEASED, C_TOMB, C_STOREERR, C_MISSING, C_INVALID,
	C_QUOTA, C__COUNT
};

static const char *const col_table[C__COUNT] = {
	"REQUESTS", "CREATED", "REUSED", "REUSE%", "422", "409", "WAITS",
	"P50", "P95", "P99", "RELEASED", "TOMBSTONED", "STORE_ERR",
	"MISSING_KEY", "INVALID_KEY", "QUOTA_429",
};

static const char *const col_key[C__COUNT] = {
	"requests", "created", "reused", "reuse_pct", "mismatched_422",
	"conflicted_409", "waited", "wait_p50_ms", "wait_p95_ms",
	"wait_p99_ms", "released", "tombstoned", "store_errors",
	"missing_key", "invalid_key", "quota_rejected",
};

static const int col_stat[C__COUNT] = {
	STAT_REQUESTS, STAT_CREATED, STAT_REUSED, -1, STAT_MISMATCHED,
	STAT_CONFLICTED, STAT_WAITED, -1, -1, -1, STAT_RELEASED,
	STAT_TOMBSTONED, STAT_STORE_ERRORS, STAT_MISSING_KEY,
	STAT_INVALID_KEY, STAT_QUOTA_REJECTED,
};

static const double col_pct[C__COUNT] = {
	[C_P50] = 0.50, [C_P95] = 0.95, [C_P99] = 0.99,
};

/*
 * Formats cell col of row r for fmt into out.  Returns 1 if the value is a
 * JSON literal (number or null) rather than a string.
 */
static int
cell(const struct admin_stat *r, int col, enum stats_format fmt, char *out,
    size_t len)
{
	int64_t	 ms;

	if (col_stat[col] >= 0) {
		snprintf(out, len, "%llu",
		    (unsigned long long)r->n[col_stat[col]]);
		return 1;
	}
	if (col == C_PCT) {
		if (r->n[STAT_REQUESTS] == 0) {
			snprintf(out, len, "%s", fmt == STATS_JSON ? "null" :
			    "-");
			return 1;
		}
		snprintf(out, len, "%.1f", 100.0 * (double)r->n[STAT_REUSED] /
		    (double)r->n[STAT_REQUESTS]);
		return 1;
	}
	ms = admin_wait_percentile(r->wait_bucket, col_pct[col]);
	if (ms == -2) {
		snprintf(out, len, "%s", fmt == STATS_JSON ? "null" : "-");
		return 1;
	}
	if (ms == -1) {
		snprintf(out, len, "%s", fmt == STATS_TABLE ? ">10s" : "+Inf");
		return 0;
	}
	if (fmt != STATS_TABLE)
		snprintf(out, len, "%lld", (long long)ms);
	else if (ms >= 1000 && ms % 1000 == 0)
		snprintf(out, len, "%llds", (long long)(ms / 1000));
	else if (ms >= 1000)
		snprintf(out, len, "%.1fs", (double)ms / 1000.0);
	else
		snprintf(out, len, "%lldms", (long long)ms);
	return 1;
}

/* Escapes a route into out (see ctl_put_escaped) for the table and TSV. */
static void
route_text(const char *route, char *out, size_t len)
{
	FILE	*f = fmemopen(out, len, "w");

	if (f == NULL) {
		snprintf(out, len, "?");
		return;
	}
	ctl_put_escaped(f, route, strlen(route));
	fclose(f);
	out[len - 1] = '\0';
}

static void
json_row(FILE *f, const struct admin_stat *r, int with_route)
{
	char	 v[32];
	int	 i;

	fputc('{', f);
	if (with_route) {
		fputs("\"route\": ", f);
		json_put_string(f, r->route);
		fputs(", ", f);
	}
	for (i = 0; i < C__COUNT; i++) {
		int	 lit = cell(r, i, STATS_JSON, v, sizeof(v));

		fprintf(f, "\"%s\": ", col_key[i]);
		if (lit)
			fputs(v, f);
		else
			json_put_string(f, v);
		if (i + 1 < C__COUNT)
			fputs(", ", f);
	}
	fprintf(f, ", \"wait_sum_ms\": %llu}", (unsigned long long)r->wait_sum_ms);
}

void
stats_print(FILE *f, enum stats_format fmt, const struct admin_stat *rows,
    size_t n, int64_t since_s)
{
	struct admin_stat total;
	size_t		 i, nr = n + 1;
	int		 c, w[C__COUNT + 1];
	char		 v[32], rt[1100];

	memset(&total, 0, sizeof(total));
	for (i = 0; i < n; i++)
		ctlstats_sum(&total, &rows[i]);

	if (fmt == STATS_JSON) {
		fprintf(f, "{\n  \"since_seconds\": %lld,\n  \"routes\": [",
		    (long long)since_s);
		for (i = 0; i < n; i++) {
			fputs(i ? ",\n    " : "\n    ", f);
			json_row(f, &rows[i], 1);
		}
		fputs(n ? "\n  ],\n  \"total\": " : "],\n  \"total\": ", f);
		json_row(f, &total, 0);
		fputs("\n}\n", f);
		return;
	}
	if (fmt == STATS_TSV) {
		fputs("route", f);
		for (c = 0; c < C__COUNT; c++)
			fprintf(f, "\t%s", col_key[c]);
		fputc('\n', f);
		for (i = 0; i < nr; i++) {
			const struct admin_stat *r = i < n ? &rows[i] : &total;

			if (i < n)
				route_text(r->route, rt, sizeof(rt));
			else
				snprintf(rt, sizeof(rt), "(total)");
			fputs(rt, f);
			for (c = 0; c < C__COUNT; c++) {
				cell(r, c, STATS_TSV, v, sizeof(v));
				fprintf(f, "\t%s", v);
			}
			fputc('\n', f);
		}
		return;
	}

	/* Aligned table: measure every cell first. */
	w[0] = (int)strlen("ROUTE");
	for (c = 0; c < C__COUNT; c++)
		w[c + 1] = (int)strlen(col_table[c]);
	for (i = 0; i < nr; i++) {
		const struct admin_stat *r = i < n ? &rows[i] : &total;

		if (i < n)
			route_text(r->route, rt, sizeof(rt));
		else
			snprintf(rt, sizeof(rt), "TOTAL");
		if ((int)strlen(rt) > w[0])
			w[0] = (int)strlen(rt);
		for (c = 0; c < C__COUNT; c++) {
			cell(r, c, STATS_TABLE, v, sizeof(v));
			if ((int)strlen(v) > w[c + 1])
				w[c + 1] = (int)strlen(v);
		}
	}
	fprintf(f, "%-*s", w[0], "ROUTE");
	for (c = 0; c < C__COUNT; c++)
		fprintf(f, "  %*s", w[c + 1], col_table[c]);
	fputc('\n', f);
	for (i = 0; i < nr; i++) {
		const struct admin_stat *r = i < n ? &rows[i] : &total;

		if (i < n)
			route_text(r->route, rt, sizeof(rt));
		else
			snprintf(rt, sizeof(rt), "TOTAL");
		fprintf(f, "%-*s", w[0], rt);
		for (c = 0; c < C__COUNT; c++) {
			cell(r, c, STATS_TABLE, v, sizeof(v));
			fprintf(f, "  %*s", w[c + 1], v);
		}
		fputc('\n', f);
	}
}

static const struct {
	int		 stat;
	const char	*name;
	const char	*help;
} prom_counters[] = {
	{ STAT_REQUESTS, "idemgate_requests_total",
	  "Protected requests (idempotency applied)." },
	{ STAT_CREATED, "idemgate_created_total",
	  "Requests that ran the handler for a new key." },
	{ STAT_REUSED, "idemgate_reused_total",
	  "Retries answered with the stored response." },
	{ STAT_MISMATCHED, "idemgate_mismatched_total",
	  "Keys reused for a different request (422)." },
	{ STAT_CONFLICTED, "idemgate_conflicted_total",
	  "Keys still in progress after the wait (409)." },
	{ STAT_WAITED, "idemgate_waited_total",
	  "Requests that waited for a key in progress." },
	{ STAT_RELEASED, "idemgate_released_total",
	  "Keys released after a handler 5xx, crash or timeout." },
	{ STAT_TOMBSTONED, "idemgate_tombstoned_total",
	  "Answers too large to store (key kept as a tombstone)." },
	{ STAT_STORE_ERRORS, "idemgate_store_errors_total",
	  "Requests that met a database error." },
	{ STAT_MISSING_KEY, "idemgate_missing_key_total",
	  "Protected requests without a key where one is required (400)." },
	{ STAT_INVALID_KEY, "idemgate_invalid_key_total",
	  "Requests with a malformed key (400)." },
	{ STAT_PASSTHROUGH, "idemgate_passthrough_total",
	  "Requests passed through without idempotency." },
	{ STAT_QUOTA_REJECTED, "idemgate_quota_rejected_total",
	  "New keys refused with 429 by new_keys_per_minute." },
};

static void
prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{route="...",kind="http|job" (the caller closes the braces);
 * idemctl run's keys live under routes "job:NAME". */
static void
prom_route(FILE *f, const char *name, const char *suffix, const char *route)
{
	fprintf(f, "%s%s{route=\"", name, suffix);
	prom_put_label(f, route);
	fprintf(f, "\",kind=\"%s\"", strncmp(route, "job:", 4) == 0 ? "job" :
	    "http");
}

void
metrics_print(FILE *f, const struct admin_stat *rows, size_t n,
    const struct admin_gauges *g)
{
	static const char *const states[3] = {
		"in_progress", "completed", "tombstone",
	};
	const char	*h = "idemgate_wait_seconds";
	size_t		 i, k;
	int		 b;

	for (k = 0; k < sizeof(prom_counters) / sizeof(prom_counters[0]); k++) {
		prom_head(f, prom_counters[k].name, "counter",
		    prom_counters[k].help);
		for (i = 0; i < n; i++) {
			prom_route(f, prom_counters[k].name, "", rows[i].route);
			fprintf(f, "} %llu\n", (unsigned long long)
			    rows[i].n[prom_counters[k].stat]);
		}
	}

	prom_head(f, h, "histogram",
	    "Time requests waited for a key in progress elsewhere.");
	for (i = 0; i < n; i++) {
		uint64_t	 cum = 0;

		for (b = 0; b < STAT_WAIT_BUCKETS; b++) {
			cum += rows[i].wait_bucket[b];
			prom_route(f, h, "_bucket", rows[i].route);
			if (b < STAT_WAIT_BUCKETS - 1)
				fprintf(f, ",le=\"%g\"} %llu\n",
				    (double)stat_wait_le_ms[b] / 1000.0,
				    (unsigned long long)cum);
			else
				fprintf(f, ",le=\"+Inf\"} %llu\n",
				    (unsigned long long)cum);
		}
		prom_route(f, h, "_sum", rows[i].route);
		fprintf(f, "} %.3f\n", (double)rows[i].wait_sum_ms / 1000.0);
		prom_route(f, h, "_count", rows[i].route);
		fprintf(f, "} %llu\n", (unsigned long long)cum);
	}

	prom_head(f, "idemgate_keys_in_progress", "gauge",
	    "Keys whose handler is running now.");
	fprintf(f, "idemgate_keys_in_progress %llu\n",
	    (unsigned long long)g->rows[0]);
	prom_head(f, "idemgate_keys_rows", "gauge",
	    "Rows in the keys table by state.");
	for (b = 0; b < 3; b++)
		fprintf(f, "idemgate_keys_rows{state=\"%s\"} %llu\n", states[b],
		    (unsigned long long)g->rows[b]);
	prom_head(f, "idemgate_keys_expired", "gauge",
	    "Rows past their expiry, waiting for cleanup.");
	fprintf(f, "idemgate_keys_expired %llu\n",
	    (unsigned long long)g->expired);
	prom_head(f, "idemgate_waiters", "gauge",
	    "Requests waiting now for a key in progress.");
	fprintf(f, "idemgate_waiters %llu\n", (unsigned long long)g->waiters);
	prom_head(f, "idemgate_oldest_in_progress_seconds", "gauge",
	    "Age of the oldest key in progress (0 if none).");
	fprintf(f, "idemgate_oldest_in_progress_seconds %.3f\n",
	    g->oldest_in_progress_s);
	prom_head(f, "idemgate_last_cleanup_timestamp_seconds", "gauge",
	    "End of the last cleanup run (0 if none).");
	fprintf(f, "idemgate_last_cleanup_timestamp_seconds %.3f\n",
	    g->has_cleanup ? g->last_cleanup_end : 0.0);
	prom_head(f, "idemgate_last_cleanup_success", "gauge",
	    "1 if the last cleanup run finished ok.");
	fprintf(f, "idemgate_last_cleanup_success %d\n",
	    g->has_cleanup && g->last_cleanup_ok);
	prom_head(f, "idemgate_last_successful_cleanup_timestamp_seconds",
	    "gauge", "End of the last cleanup run that finished ok (0 if none).");
	fprintf(f, "idemgate_last_successful_cleanup_timestamp_seconds %.3f\n",
	    g->has_cleanup_ok ? g->last_cleanup_ok_end : 0.0);
	prom_head(f, "idemgate_last_cleanup_success_timestamp_seconds",
	    "gauge", "The same: end of the last cleanup run that finished ok "
	    "(0 if none).");
	fprintf(f, "idemgate_last_cleanup_success_timestamp_seconds %.3f\n",
	    g->has_cleanup_ok ? g->last_cleanup_ok_end : 0.0);
	metrics_store_up(f, 1);
}

void
metrics_store_up(FILE *f, int up)
{
	prom_head(f, "idemgate_store_up", "gauge",
	    "1 if idemctl could read the store for this file, 0 if not.");
	fprintf(f, "idemgate_store_up %d\n", up);
}

static int
stats_opts(struct ctl *c, const char *cmd, const char *usage, int argc,
    char **argv, int64_t *since_s, const char **route, enum stats_format *fmt)
{
	static const struct option longopts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "route", required_argument, NULL, 'r' },
		{ "format", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int	 ch, rc, is_stats = fmt != NULL;
	int64_t	 ms;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, is_stats ? ":s:r:f:vc:h" :
	    ":vc:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if (!is_stats)
				return ctl_usage_err(cmd, "unknown option "
				    "'--since'");
			if (cfg_parse_duration(optarg, &ms) != 0 || ms < 0)
				return ctl_usage_err(cmd, "--since wants a "
				    "duration like 30m, 1h or 7d, not '%s'",
				    optarg);
			*since_s = (ms + 999) / 1000;
			break;
		case 'r':
			if (!is_stats)
				return ctl_usage_err(cmd, "unknown option "
				    "'--route'");
			*route = optarg;
			break;
		case 'f':
			if (!is_stats)
				return ctl_usage_err(cmd, "unknown option "
				    "'--format'");
			if (strcmp(optarg, "table") == 0)
				*fmt = STATS_TABLE;
			else if (strcmp(optarg, "tsv") == 0)
				*fmt = STATS_TSV;
			else if (strcmp(optarg, "json") == 0)
				*fmt = STATS_JSON;
			else
				return ctl_usage_err(cmd, "--format wants "
				    "table, tsv or json, not '%s'", optarg);
			break;
		default:
			if ((rc = ctl_opt_common(c, cmd, ch, usage, argv)) !=
			    CTL_OK)
				return rc;
			break;
		}
	}
	if (optind < argc)
		return ctl_usage_err(cmd, "unexpected argument '%s'",
		    argv[optind]);
	return CTL_OK;
}

int
ctl_stats(struct ctl *c, int argc, char **argv)
{
	struct admin_stat *rows = NULL;
	size_t		 n = 0;
	int64_t		 since = 3600;
	const char	*route = NULL;
	enum stats_format fmt = STATS_TABLE;
	int		 rc;

	if ((rc = stats_opts(c, "stats", ctl_stats_usage, argc, argv, &since,
	    &route, &fmt)) != 0)
		return rc < 0 ? CTL_OK : rc;
	if ((rc = ctl_connect(c)) != CTL_OK)
		return rc;
	if ((rc = ctl_need_schema(c)) != CTL_OK)
		return rc;
	if (store_admin_stats(c->st, since, route, &rows, &n) != IDEM_OK) {
		ctl_err("stats failed: %s", store_last_error(c->st));
		return CTL_ESTORE;
	}
	stats_print(stdout, fmt, rows, n, since);
	if (fmt == STATS_TABLE)
		printf("(each gateway worker adds its counts every %lld ms: the "
		    "last moments may not show yet)\n",
		    (long long)c->cfg->counters_flush_ms);
	free(rows);
	return CTL_OK;
}

int
ctl_metrics(struct ctl *c, int argc, char **argv)
{
	struct admin_stat *rows = NULL;
	struct admin_gauges g;
	size_t		 n = 0;
	int		 rc;

	if ((rc = stats_opts(c, "metrics", ctl_metrics_usage, argc, argv, NULL,
	    NULL, NULL)) != 0)
		return rc < 0 ? CTL_OK : rc;
	/*
	 * The store down (or unreadable) is a reading too: a file with
	 * idemgate_store_up 0, so the textfile collector replaces the last
	 * good one instead of serving it as if fresh.  The reason goes to
	 * stderr as one line; the exit stays 0 for "metrics > f && mv".
	 */
	if ((rc = ctl_load(c)) != CTL_OK)
		return rc;
	if (ctl_connect(c) != CTL_OK || ctl_need_schema(c) != CTL_OK) {
		metrics_store_up(stdout, 0);
		return CTL_OK;
	}
	if (store_admin_stats(c->st, 0, NULL, &rows, &n) != IDEM_OK ||
	    store_admin_gauges(c->st, &g) != IDEM_OK) {
		ctl_err("metrics: %s", store_last_error(c->st));
		metrics_store_up(stdout, 0);
		free(rows);
		return CTL_OK;
	}
	metrics_print(stdout, rows, n, &g);
	free(rows);
	return CTL_OK;
}
