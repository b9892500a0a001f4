/* idemctl stats and metrics: fleet counters as table, TSV, JSON, Prometheus. */
#include <stdarg.h>
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
"  -s, --since DUR      minutes from DUR ago (default 1h; 30m, 6h, 7d; 0 = "
"every\n"
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
"counters_retention) and what cleanup folded from pruned minutes, so\n"
"they never go down.  Labels: host, route, kind (and state, le); never a\n"
"key.\n"
"\n"
"With the database unreachable or its schema missing or old, it still\n"
"writes idemgate_store_up 0 (and says why on stderr), so the collector\n"
"does not keep serving the last good file.\n"
"\n"
"Exit: 0 ok (store_up 1 or 0), 1 usage, 2 config.\n";

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

/* What stats' command line asks for. */
struct stats_args {
	int64_t			 since_s;
	const char		*route;
	enum stats_format	 fmt;
};

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

/* How JSON writes a cell's text. */
enum cell_kind {
	CELL_STRING,		/* quoted: "+Inf" */
	CELL_LITERAL,		/* as it is: a number or null */
};

/* Formats cell col of row r for fmt into out.  Returns how JSON writes it. */
static enum cell_kind
cell(const struct admin_stat *r, int col, enum stats_format fmt, char *out,
    size_t len)
{
	int64_t	 ms;

	if (col_stat[col] >= 0) {
		snprintf(out, len, "%llu",
		    (unsigned long long)r->n[col_stat[col]]);
		return CELL_LITERAL;
	}
	if (col == C_PCT) {
		if (r->n[STAT_REQUESTS] == 0) {
			snprintf(out, len, "%s", fmt == STATS_JSON ? "null" :
			    "-");
			return CELL_LITERAL;
		}
		snprintf(out, len, "%.1f", 100.0 * (double)r->n[STAT_REUSED] /
		    (double)r->n[STAT_REQUESTS]);
		return CELL_LITERAL;
	}
	ms = stat_wait_percentile(r->wait_bucket, col_pct[col]);
	if (ms == STAT_WAIT_NONE) {
		snprintf(out, len, "%s", fmt == STATS_JSON ? "null" : "-");
		return CELL_LITERAL;
	}
	if (ms == STAT_WAIT_INF) {
		snprintf(out, len, "%s", fmt == STATS_TABLE ? ">10s" : "+Inf");
		return CELL_STRING;
	}
	if (fmt != STATS_TABLE)
		snprintf(out, len, "%lld", (long long)ms);
	else if (ms >= 1000 && ms % 1000 == 0)
		snprintf(out, len, "%llds", (long long)(ms / 1000));
	else if (ms >= 1000)
		snprintf(out, len, "%.1fs", (double)ms / 1000.0);
	else
		snprintf(out, len, "%lldms", (long long)ms);
	return CELL_LITERAL;
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
		enum cell_kind	 kind = cell(r, i, STATS_JSON, v, sizeof(v));

		fprintf(f, "\"%s\": ", col_key[i]);
		if (kind == CELL_LITERAL)
			fputs(v, f);
		else
			json_put_string(f, v);
		if (i + 1 < C__COUNT)
			fputs(", ", f);
	}
	fprintf(f, ", \"wait_sum_ms\": %llu}",
	    (unsigned long long)r->wait_sum_ms);
}

/* What stats prints: a row per route, then their total. */
struct stats_rows {
	const struct admin_stat	*rows;
	size_t			 n;
	struct admin_stat	 total;
};

/* Row i (i == t->n: the total, named total_name); its route text in rt. */
static const struct admin_stat *
stats_row(const struct stats_rows *t, size_t i, const char *total_name,
    char *rt, size_t len)
{
	if (i == t->n) {
		snprintf(rt, len, "%s", total_name);
		return &t->total;
	}
	route_text(t->rows[i].route, rt, len);
	return &t->rows[i];
}

static void
stats_json(FILE *f, const struct stats_rows *t, int64_t since_s)
{
	size_t	 i;

	fprintf(f, "{\n  \"since_seconds\": %lld,\n  \"routes\": [",
	    (long long)since_s);
	for (i = 0; i < t->n; i++) {
		fputs(i ? ",\n    " : "\n    ", f);
		json_row(f, &t->rows[i], 1);
	}
	fputs(t->n ? "\n  ],\n  \"total\": " : "],\n  \"total\": ", f);
	json_row(f, &t->total, 0);
	fputs("\n}\n", f);
}

static void
stats_tsv(FILE *f, const struct stats_rows *t)
{
	const struct admin_stat *r;
	size_t		 i;
	int		 c;
	char		 v[32], rt[1100];

	fputs("route", f);
	for (c = 0; c < C__COUNT; c++)
		fprintf(f, "\t%s", col_key[c]);
	fputc('\n', f);
	for (i = 0; i <= t->n; i++) {
		r = stats_row(t, i, "(total)", rt, sizeof(rt));
		fputs(rt, f);
		for (c = 0; c < C__COUNT; c++) {
			cell(r, c, STATS_TSV, v, sizeof(v));
			fprintf(f, "\t%s", v);
		}
		fputc('\n', f);
	}
}

/* Widens w[0] (the route) and w[1..] (the columns) to fit row i. */
static void
table_fit(const struct stats_rows *t, size_t i, int w[C__COUNT + 1])
{
	const struct admin_stat *r;
	char		 v[32], rt[1100];
	int		 c;

	r = stats_row(t, i, "TOTAL", rt, sizeof(rt));
	if ((int)strlen(rt) > w[0])
		w[0] = (int)strlen(rt);
	for (c = 0; c < C__COUNT; c++) {
		cell(r, c, STATS_TABLE, v, sizeof(v));
		if ((int)strlen(v) > w[c + 1])
			w[c + 1] = (int)strlen(v);
	}
}

/* An aligned table: every cell measured first. */
static void
stats_table(FILE *f, const struct stats_rows *t)
{
	const struct admin_stat *r;
	size_t		 i;
	int		 c, w[C__COUNT + 1];
	char		 v[32], rt[1100];

	w[0] = (int)strlen("ROUTE");
	for (c = 0; c < C__COUNT; c++)
		w[c + 1] = (int)strlen(col_table[c]);
	for (i = 0; i <= t->n; i++)
		table_fit(t, i, w);
	fprintf(f, "%-*s", w[0], "ROUTE");
	for (c = 0; c < C__COUNT; c++)
		fprintf(f, "  %*s", w[c + 1], col_table[c]);
	fputc('\n', f);
	for (i = 0; i <= t->n; i++) {
		r = stats_row(t, i, "TOTAL", rt, sizeof(rt));
		fprintf(f, "%-*s", w[0], rt);
		for (c = 0; c < C__COUNT; c++) {
			cell(r, c, STATS_TABLE, v, sizeof(v));
			fprintf(f, "  %*s", w[c + 1], v);
		}
		fputc('\n', f);
	}
}

void
stats_print(FILE *f, enum stats_format fmt, const struct admin_stat *rows,
    size_t n, int64_t since_s)
{
	struct stats_rows t;
	size_t		 i;

	memset(&t, 0, sizeof(t));
	t.rows = rows;
	t.n = n;
	for (i = 0; i < n; i++)
		ctlstats_sum(&t.total, &rows[i]);
	if (fmt == STATS_JSON)
		stats_json(f, &t, since_s);
	else if (fmt == STATS_TSV)
		stats_tsv(f, &t);
	else
		stats_table(f, &t);
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
	{ STAT_CACHE_HITS, "idemgate_replay_cache_hits_total",
	  "Replays answered from a worker's replay cache (part of reused)." },
};

static void
prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{host="...",route="...",kind="http|job" (the caller closes the
 * braces); idemctl run's keys live under routes "job:NAME". */
static void
prom_route(FILE *f, const char *name, const char *suffix,
    const struct admin_stat *row)
{
	fprintf(f, "%s%s{host=\"", name, suffix);
	prom_put_label(f, row->host);
	fprintf(f, "\",route=\"");
	prom_put_label(f, row->route);
	fprintf(f, "\",kind=\"%s\"", strncmp(row->route, "job:", 4) == 0 ?
	    "job" : "http");
}

/* One gauge without labels: HELP, TYPE and "name value". */
static void
prom_gauge(FILE *f, const char *name, const char *help, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
prom_gauge(FILE *f, const char *name, const char *help, const char *fmt, ...)
{
	va_list	 ap;

	prom_head(f, name, "gauge", help);
	fprintf(f, "%s ", name);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

/* Every counter of prom_counters[], one line per route. */
static void
metrics_counters(FILE *f, const struct admin_stat *rows, size_t n)
{
	size_t	 i, k;

	for (k = 0; k < sizeof(prom_counters) / sizeof(prom_counters[0]); k++) {
		prom_head(f, prom_counters[k].name, "counter",
		    prom_counters[k].help);
		for (i = 0; i < n; i++) {
			prom_route(f, prom_counters[k].name, "", &rows[i]);
			fprintf(f, "} %llu\n", (unsigned long long)
			    rows[i].n[prom_counters[k].stat]);
		}
	}
}

/* The wait histogram, cumulative buckets per route. */
static void
metrics_waits(FILE *f, const struct admin_stat *rows, size_t n)
{
	const char	*h = "idemgate_wait_seconds";
	size_t		 i;
	int		 b;

	prom_head(f, h, "histogram",
	    "Time requests waited for a key in progress elsewhere.");
	for (i = 0; i < n; i++) {
		uint64_t	 cum = 0;

		for (b = 0; b < STAT_WAIT_BUCKETS; b++) {
			cum += rows[i].wait_bucket[b];
			prom_route(f, h, "_bucket", &rows[i]);
			if (b < STAT_WAIT_BUCKETS - 1)
				fprintf(f, ",le=\"%g\"} %llu\n",
				    (double)stat_wait_le_ms[b] / 1000.0,
				    (unsigned long long)cum);
			else
				fprintf(f, ",le=\"+Inf\"} %llu\n",
				    (unsigned long long)cum);
		}
		prom_route(f, h, "_sum", &rows[i]);
		fprintf(f, "} %.3f\n", (double)rows[i].wait_sum_ms / 1000.0);
		prom_route(f, h, "_count", &rows[i]);
		fprintf(f, "} %llu\n", (unsigned long long)cum);
	}
}

/* The keys table's state and the last cleanup runs. */
static void
metrics_gauges(FILE *f, const struct admin_gauges *g)
{
	static const char *const states[3] = {
		"in_progress", "completed", "tombstone",
	};
	double	 ok_end = g->has_cleanup_ok ? g->last_cleanup_ok_end : 0.0;
	int	 s;

	prom_gauge(f, "idemgate_keys_in_progress",
	    "Keys whose handler is running now.", "%llu",
	    (unsigned long long)g->rows[0]);
	prom_head(f, "idemgate_keys_rows", "gauge",
	    "Rows in the keys table by state.");
	for (s = 0; s < 3; s++)
		fprintf(f, "idemgate_keys_rows{state=\"%s\"} %llu\n", states[s],
		    (unsigned long long)g->rows[s]);
	prom_gauge(f, "idemgate_keys_expired",
	    "Rows past their expiry whose run is over, waiting for cleanup.",
	    "%llu",
	    (unsigned long long)g->expired);
	prom_gauge(f, "idemgate_waiters",
	    "Requests waiting now for a key in progress.", "%llu",
	    (unsigned long long)g->waiters);
	prom_gauge(f, "idemgate_keys_past_lease",
	    "Keys in progress whose lease has run out (owner gone or cut "
	    "off).", "%llu", (unsigned long long)g->past_lease);
	prom_gauge(f, "idemgate_oldest_in_progress_seconds",
	    "Age of the oldest key in progress (0 if none).", "%.3f",
	    g->oldest_in_progress_s);
	prom_gauge(f, "idemgate_last_cleanup_timestamp_seconds",
	    "End of the last cleanup run (0 if none).", "%.3f",
	    g->has_cleanup ? g->last_cleanup_end : 0.0);
	prom_gauge(f, "idemgate_last_cleanup_success",
	    "1 if the last cleanup run finished ok, or stopped at its time "
	    "limit having deleted rows.", "%d",
	    g->has_cleanup && g->last_cleanup_ok);
	prom_gauge(f, "idemgate_last_successful_cleanup_timestamp_seconds",
	    "End of the last cleanup run that finished ok, or stopped at its "
	    "time limit having deleted rows (0 if none).", "%.3f", ok_end);
	prom_gauge(f, "idemgate_last_cleanup_success_timestamp_seconds",
	    "The same: end of the last cleanup run that finished ok, or "
	    "stopped at its time limit having deleted rows (0 if none).",
	    "%.3f", ok_end);
}

void
metrics_print(FILE *f, const struct admin_stat *rows, size_t n,
    const struct admin_gauges *g)
{
	metrics_counters(f, rows, n);
	metrics_waits(f, rows, n);
	metrics_gauges(f, g);
	metrics_store_up(f, 1);
}

void
metrics_store_up(FILE *f, int up)
{
	prom_gauge(f, "idemgate_store_up",
	    "1 if idemctl could read the store for this file, 0 if not.", "%d",
	    up);
}

/* --since: a duration, in whole seconds rounded up. */
static int
parse_since(const char *v, void *dst)
{
	int64_t	 ms;

	if (cfg_parse_duration(v, &ms) != 0 || ms < 0)
		return -1;
	*(int64_t *)dst = (ms + 999) / 1000;
	return 0;
}

static int
parse_format(const char *v, void *dst)
{
	static const char *const names[] = {
		[STATS_TABLE] = "table", [STATS_TSV] = "tsv",
		[STATS_JSON] = "json",
	};
	size_t	 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(v, names[i]) == 0) {
			*(enum stats_format *)dst = (enum stats_format)i;
			return 0;
		}
	return -1;
}

/* stats' options; metrics (a == NULL) refuses them. */
static int
stats_opts(struct ctl *c, const char *cmd, const char *usage, int argc,
    char **argv, struct stats_args *a)
{
	const struct ctl_opt	 opts[] = {
		{ .name = "since", .letter = 's', .kind = CTL_OPT_PARSE,
		  .dst = a != NULL ? &a->since_s : NULL, .parse = parse_since,
		  .wants = "a duration like 30m, 1h or 7d",
		  .elsewhere = a == NULL },
		{ .name = "route", .letter = 'r', .kind = CTL_OPT_STRING,
		  .dst = a != NULL ? &a->route : NULL, .elsewhere = a == NULL },
		{ .name = "format", .letter = 'f', .kind = CTL_OPT_PARSE,
		  .dst = a != NULL ? &a->fmt : NULL, .parse = parse_format,
		  .wants = "table, tsv or json", .elsewhere = a == NULL },
		{ NULL },
	};
	const struct ctl_cmdline cl = { .cmd = cmd, .usage = usage,
	    .opts = opts };
	int			 argi;

	return ctl_opts_parse(c, &cl, argc, argv, &argi);
}

int
ctl_stats(struct ctl *c, int argc, char **argv)
{
	struct admin_stat *rows = NULL;
	struct stats_args a = { 3600, NULL, STATS_TABLE };
	size_t		 n = 0;
	int		 rc;

	if ((rc = stats_opts(c, "stats", ctl_stats_usage, argc, argv, &a)) !=
	    CTL_OK)
		return rc == CTL_HELP ? CTL_OK : rc;
	if ((rc = ctl_connect(c)) != CTL_OK)
		return rc;
	if ((rc = ctl_need_schema(c)) != CTL_OK)
		return rc;
	if (store_admin_stats(c->st, a.since_s, a.route, 0, &rows, &n) !=
	    IDEM_OK) {
		ctl_err("stats failed: %s", store_last_error(c->st));
		return CTL_ESTORE;
	}
	stats_print(stdout, a.fmt, rows, n, a.since_s);
	if (a.fmt == STATS_TABLE)
		printf("(each gateway worker adds its counts every %lld ms: "
		    "the last moments may not show yet)\n",
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

	if ((rc = stats_opts(c, "metrics", ctl_metrics_usage, argc, argv,
	    NULL)) != CTL_OK)
		return rc == CTL_HELP ? CTL_OK : rc;
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
	if (store_admin_stats(c->st, 0, NULL, 1, &rows, &n) != IDEM_OK ||
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
