/* idemtop: the operator console for reuse, in-progress waits, cleanups. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cfg.h"
#include "idemtop_cmd.h"
#include "idemtop_data.h"
#include "idemtop_term.h"
#include "idemtop_ui.h"
#include "log.h"
#include "proc.h"
#include "version.h"

#define DEFAULT_CONFIG		"/etc/idemgate/idemgate.conf"
#define BACKOFF_MIN_MS		1000
#define BACKOFF_MAX_MS		30000
#define BATCH_WIDTH		132

/* Exit codes (SPEC/issue 5). */
enum {
	EXIT_OK = 0,
	EXIT_USAGE = 1,
	EXIT_CONFIG = 2,
	EXIT_DB = 3,
};

/* What parse_opts() returns when idemtop is to run: no exit code. */
#define OPTS_RUN	(-1)

struct opts {
	const char	*config;
	int		 batch;
	long		 count;		/* -n; 0 = not given */
	int64_t		 delay_ms;	/* -d; 0 = config's refresh */
	int		 screen;
	int		 write;
	const char	*mysql_group;	/* -g, over [gateway] mysql_group */
};

/* stderr while idemtop runs: fd 2 itself points at /dev/null so library
 * log lines cannot scribble over the screen or the batch text. */
static FILE	*errout;

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: idemtop [-c FILE] [--write]\n"
	    "       idemtop -b [-n COUNT] [-d SECS] [--screen N] [-c FILE]\n"
	    "  -c FILE      configuration (default " DEFAULT_CONFIG ")\n"
	    "  -g, --mysql-group G  option-file group to log in with (default\n"
	    "               [gateway] mysql_group), e.g. idem_console\n"
	    "  -b, --batch  plain-text snapshots (default when stdout is not "
	    "a terminal)\n"
	    "  -n COUNT     batch: number of snapshots (default 1)\n"
	    "  -d SECS      seconds between snapshots (default [console] "
	    "refresh)\n"
	    "  --screen N   1 overview, 2 in progress, 3 routes, 4 cleanup "
	    "jobs\n"
	    "  --write      allow forgetting keys (f) and starting a cleanup "
	    "(c)\n"
	    "  -h, --help   this text;  -V, --version  the version\n");
}

/* -d, -n, --screen: checks value v into o.  IDEM_OK, or IDEM_EINVAL after
 * one line. */
static enum idem_err
opt_value(int ch, const char *v, struct opts *o)
{
	char	*end;
	double	 d;

	errno = 0;
	switch (ch) {
	case 'd':
		d = strtod(v, &end);
		if (errno == 0 && end != v && *end == '\0' &&
		    d >= 0.1 && d <= 86400) {
			o->delay_ms = (int64_t)(d * 1000);
			return IDEM_OK;
		}
		fprintf(stderr, "idemtop: -d wants seconds between 0.1 and "
		    "86400\n");
		return IDEM_EINVAL;
	case 'n':
		o->count = strtol(v, &end, 10);
		if (errno == 0 && end != v && *end == '\0' &&
		    o->count >= 1 && o->count <= 1000000)
			return IDEM_OK;
		fprintf(stderr, "idemtop: -n wants a count from 1 to "
		    "1000000\n");
		return IDEM_EINVAL;
	default:	/* 'S' */
		if (v[0] >= '1' && v[0] <= '4' && v[1] == '\0') {
			o->screen = v[0] - '0';
			return IDEM_OK;
		}
		fprintf(stderr, "idemtop: --screen wants 1, 2, 3 or 4\n");
		return IDEM_EINVAL;
	}
}

/* A getopt_long() failure (ch is ':' or '?'): one line, EXIT_USAGE. */
static int
opt_err(int ch, char **argv)
{
	if (ch == ':')
		fprintf(stderr, "idemtop: option %s needs a value "
		    "(try idemtop -h)\n", argv[optind - 1]);
	else if (optopt != 0)
		fprintf(stderr, "idemtop: unknown option -%c "
		    "(try idemtop -h)\n", optopt);
	else
		fprintf(stderr, "idemtop: unknown option %s "
		    "(try idemtop -h)\n", argv[optind - 1]);
	return EXIT_USAGE;
}

/* Returns OPTS_RUN, or the exit code at once: EXIT_OK after the help or
 * the version, EXIT_USAGE after one line. */
static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "batch", no_argument, NULL, 'b' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "screen", required_argument, NULL, 'S' },
		{ "write", no_argument, NULL, 'W' },
		{ "mysql-group", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	int	 ch;

	memset(o, 0, sizeof(*o));
	o->config = DEFAULT_CONFIG;
	o->screen = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":bc:d:g:hn:V", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'b':
			o->batch = 1;
			break;
		case 'g':
			/* '' (a variable left unset) would log in as
			 * the gateway: said, not done */
			if (optarg[strspn(optarg, " \t")] == '\0') {
				fprintf(stderr, "idemtop: -g wants a group "
				    "name, not '%s' (try idemtop -h)\n",
				    optarg);
				return EXIT_USAGE;
			}
			o->mysql_group = optarg;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'd':
		case 'n':
		case 'S':
			if (opt_value(ch, optarg, o) != IDEM_OK)
				return EXIT_USAGE;
			break;
		case 'W':
			o->write = 1;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("idemtop %s\n", IDEM_VERSION);
			return EXIT_OK;
		default:
			return opt_err(ch, argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "idemtop: unexpected argument %s (try "
		    "idemtop -h)\n", argv[optind]);
		return EXIT_USAGE;
	}
	return OPTS_RUN;
}

/* Points fd 2 at /dev/null and keeps the real stderr in errout.  IDEM_ESYS
 * if it cannot (fd 2 is left alone). */
static enum idem_err
hush_stderr(void)
{
	int	 saved, null;

	if ((saved = fcntl(2, F_DUPFD_CLOEXEC, 3)) < 0)
		return IDEM_ESYS;
	if ((errout = fdopen(saved, "w")) == NULL) {
		close(saved);
		return IDEM_ESYS;
	}
	setvbuf(errout, NULL, _IOLBF, 0);
	if ((null = open("/dev/null", O_WRONLY)) >= 0) {
		dup2(null, 2);
		close(null);
	}
	return IDEM_OK;
}

/* Gives fd 2 back (so sanitizer reports at exit are seen). */
static void
restore_stderr(void)
{
	if (errout == NULL)
		return;
	fflush(errout);
	dup2(fileno(errout), 2);
	fclose(errout);
	errout = NULL;
}

static size_t
batch_height(const struct top_ui *ui, const struct top_snap *s)
{
	if (ui->screen == SCR_OVERVIEW)
		return 24;
	return 4 + top_ui_rows(ui, s, ui->screen);
}

static int
run_batch(const struct opts *o, const struct cfg *cfg, struct top_src *src,
    int utf8)
{
	struct top_snap	 snap;
	struct top_grid	 g;
	struct top_ui	 ui;
	struct tm	 tm;
	time_t		 t;
	char		 err[512], when[64], line[BATCH_WIDTH * 4 + 1];
	long		 i, n = o->count > 0 ? o->count : 1;
	int		 y, rc = EXIT_OK, last;
	int64_t		 delay;

	delay = o->delay_ms > 0 ? o->delay_ms : cfg->refresh_ms;
	top_snap_init(&snap);
	top_ui_init(&ui, cfg->refresh_ms, cfg->cleanup_warn_ms, 0, utf8);
	ui.batch = 1;
	ui.screen = o->screen;
	for (i = 0; i < n; i++) {
		if (i > 0)
			clock_sleep_ms(delay);
		err[0] = '\0';
		if (src->fetch(src, &snap, err, sizeof(err)) != IDEM_OK) {
			fprintf(errout, "idemtop: cannot read the store: %s\n",
			    err);
			rc = EXIT_DB;
			break;
		}
		if (grid_init(&g, BATCH_WIDTH, (int)batch_height(&ui,
		    &snap)) != IDEM_OK) {
			fprintf(errout, "idemtop: out of memory\n");
			rc = EXIT_DB;
			break;
		}
		top_ui_draw(&ui, &snap, &g);
		t = (time_t)(snap.now_ms / 1000);
		if (localtime_r(&t, &tm) == NULL ||
		    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
			snprintf(when, sizeof(when), "?");
		if (i > 0)
			putchar('\n');
		printf("idemtop %s  %s  screen %d %s\n", IDEM_VERSION, when,
		    ui.screen, top_screen_name(ui.screen));
		for (last = g.h - 1; last >= 0; last--)
			if (grid_line(&g, last, line, sizeof(line), utf8) > 0)
				break;
		for (y = 0; y <= last; y++) {
			grid_line(&g, y, line, sizeof(line), utf8);
			puts(line);
		}
		grid_free(&g);
		if (fflush(stdout) != 0)
			break;
	}
	top_snap_free(&snap);
	return rc;
}

/* Runs idemctl -c FILE cleanup from next to our own executable. */
static void
start_cleanup(struct top_ui *ui, struct top_cmd *cmd, const struct opts *o)
{
	char	 path[4096];
	char	*argv[7];
	int	 n = 0;

	if (cmd->pid > 0) {
		snprintf(ui->status, sizeof(ui->status),
		    "a cleanup started here is still running");
		return;
	}
	if (top_cmd_sibling("idemctl", path, sizeof(path)) != IDEM_OK) {
		snprintf(ui->status, sizeof(ui->status),
		    "idemctl not found next to idemtop");
		return;
	}
	argv[n++] = path;
	argv[n++] = (char *)"-c";
	argv[n++] = (char *)o->config;
	/* As the console logs in (-g idem_cleanup, say): the config's
	 * default group may be a user that may not delete. */
	if (o->mysql_group != NULL) {
		argv[n++] = (char *)"-g";
		argv[n++] = (char *)o->mysql_group;
	}
	argv[n++] = (char *)"cleanup";
	argv[n] = NULL;
	if (top_cmd_start(cmd, argv) != IDEM_OK)
		snprintf(ui->status, sizeof(ui->status),
		    "cannot start idemctl: %s", strerror(errno));
	else
		snprintf(ui->status, sizeof(ui->status),
		    "idemctl cleanup running (pid %ld)", (long)cmd->pid);
}

static void
cleanup_done(struct top_ui *ui, struct top_cmd *cmd, int status)
{
	char	*nl;

	if ((nl = strchr(cmd->out, '\n')) != NULL)
		*nl = '\0';
	if (WIFEXITED(status))
		snprintf(ui->status, sizeof(ui->status),
		    "idemctl cleanup exited %d%s%.200s", WEXITSTATUS(status),
		    cmd->out[0] != '\0' ? ": " : "", cmd->out);
	else
		snprintf(ui->status, sizeof(ui->status),
		    "idemctl cleanup killed by signal %d",
		    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The console's state between keys. */
struct console {
	const struct opts *o;
	struct top_src	*src;
	struct top_term	*term;
	struct top_snap	 snap;
	int		 have;		/* snap holds a fetch */
	struct top_grid	 g;
	struct top_ui	 ui;
	struct top_cmd	 cmd;		/* a cleanup started with 'c' */
	int64_t		 next_fetch;	/* clock_now_ms(); 0: now */
	int64_t		 backoff;	/* after a failed fetch */
};

/* Fetches a snapshot, keeping each screen's selection on its row. */
static void
console_fetch(struct console *con, int64_t now)
{
	char	 err[512];

	err[0] = '\0';
	if (con->have)
		top_ui_remember(&con->ui, &con->snap);
	if (con->src->fetch(con->src, &con->snap, err, sizeof(err)) ==
	    IDEM_OK) {
		if (con->have)
			top_ui_follow(&con->ui, &con->snap);
		con->have = 1;
		con->ui.error[0] = '\0';
		con->backoff = BACKOFF_MIN_MS;
		con->next_fetch = now + con->ui.refresh_ms;
		return;
	}
	/* Stay up, keep the last numbers, retry with backoff (1 s doubling
	 * to 30 s). */
	snprintf(con->ui.error, sizeof(con->ui.error),
	    "MySQL down, retry in %llds%s: %.160s",
	    (long long)(con->backoff / 1000),
	    con->have ? " (numbers are stale)" : "", err);
	con->next_fetch = now + con->backoff;
	con->backoff = con->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
	    con->backoff * 2;
}

/* Draws the screen at the terminal's size; IDEM_ENOMEM if the grid for
 * it cannot be had. */
static enum idem_err
console_paint(struct console *con)
{
	int	 w, h;

	term_size(con->term, &w, &h);
	if (con->g.w != w || con->g.h != h) {
		grid_free(&con->g);
		if (grid_init(&con->g, w, h) != IDEM_OK)
			return IDEM_ENOMEM;
	}
	top_ui_draw(&con->ui, con->have ? &con->snap : NULL, &con->g);
	term_paint(con->term, &con->g);
	return IDEM_OK;
}

/* Forgets the key the operator confirmed. */
static void
console_forget(struct console *con)
{
	char	 err[512];
	int	 deleted;

	err[0] = '\0';
	if (con->src->forget(con->src, con->ui.pending_id, &deleted, err,
	    sizeof(err)) != IDEM_OK)
		snprintf(con->ui.status, sizeof(con->ui.status),
		    "forget failed: %.200s", err);
	else
		snprintf(con->ui.status, sizeof(con->ui.status),
		    deleted ? "forgot key id %llu" :
		    "key id %llu was already gone",
		    (unsigned long long)con->ui.pending_id);
	con->next_fetch = 0;
}

/* Does what a key asked for (all but ACT_QUIT). */
static void
console_act(struct console *con, enum top_action act)
{
	switch (act) {
	case ACT_REFRESH:
		con->next_fetch = 0;
		break;
	case ACT_REDRAW:
		term_redraw(con->term);
		break;
	case ACT_FORGET:
		console_forget(con);
		break;
	case ACT_CLEANUP:
		start_cleanup(&con->ui, &con->cmd, con->o);
		break;
	default:
		break;
	}
}

/* Until 'q': fetch when due, note a finished cleanup, paint, read a key. */
static void
console_loop(struct console *con)
{
	enum top_action	 act;
	int64_t		 now;
	int		 key, dirty = 1, status;

	for (;;) {
		now = clock_now_ms();
		if (!con->ui.paused && now >= con->next_fetch) {
			console_fetch(con, now);
			dirty = 1;
		}
		if (top_cmd_poll(&con->cmd, &status)) {
			cleanup_done(&con->ui, &con->cmd, status);
			con->next_fetch = 0;
			dirty = 1;
		}
		if (dirty && console_paint(con) != IDEM_OK)
			return;
		dirty = 0;
		if ((key = term_key(con->term, 200)) < 0)
			continue;
		dirty = 1;
		if (key == TK_RESIZE)
			continue;
		act = top_ui_key(&con->ui, con->have ? &con->snap : NULL, key);
		if (act == ACT_QUIT)
			return;
		console_act(con, act);
	}
}

static int
run_console(const struct opts *o, const struct cfg *cfg, struct top_src *src,
    int utf8)
{
	struct console	 con;

	memset(&con, 0, sizeof(con));
	con.o = o;
	con.src = src;
	con.cmd.fd = -1;
	con.backoff = BACKOFF_MIN_MS;
	top_snap_init(&con.snap);
	top_ui_init(&con.ui, o->delay_ms > 0 ? o->delay_ms : cfg->refresh_ms,
	    cfg->cleanup_warn_ms, o->write, utf8);
	con.ui.screen = o->screen;
	if (term_open(&con.term) != IDEM_OK) {
		fprintf(errout, "idemtop: cannot start the terminal "
		    "(TERM=%s)\n", getenv("TERM") != NULL ? getenv("TERM") :
		    "");
		return EXIT_USAGE;
	}
	console_loop(&con);
	top_cmd_stop(&con.cmd);
	term_close(con.term);
	grid_free(&con.g);
	top_snap_free(&con.snap);
	return EXIT_OK;
}

int
main(int argc, char **argv)
{
	struct top_src	*src = NULL;
	struct cfg	*cfg = NULL;
	struct opts	 o;
	char		 err[512];
	const char	*cs, *why;
	int		 rc, utf8;

	if ((why = proc_start()) != NULL) {
		fprintf(stderr, "idemtop: %s\n", why);
		return 1;
	}
	/* A batch snapshot lost on a full disk: exit 3. */
	proc_stdout_checked("idemtop", EXIT_DB);
	if ((rc = parse_opts(argc, argv, &o)) != OPTS_RUN)
		return rc;
	setlocale(LC_ALL, "");
	cs = nl_langinfo(CODESET);
	utf8 = cs != NULL && (strcmp(cs, "UTF-8") == 0 ||
	    strcmp(cs, "utf8") == 0);
	if (cfg_load(o.config, &cfg, err, sizeof(err)) != IDEM_OK) {
		fprintf(stderr, "idemtop: %s\n", err);
		return EXIT_CONFIG;
	}
	if (o.mysql_group != NULL &&
	    cfg_set_mysql_group(cfg, o.mysql_group) != IDEM_OK) {
		fprintf(stderr, "idemtop: out of memory\n");
		cfg_free(cfg);
		return EXIT_CONFIG;
	}
	if (!o.batch && !isatty(STDOUT_FILENO))
		o.batch = 1;
	log_open("idemtop", 0);
	log_set_level(LOG_LVL_ERR);
	if (hush_stderr() != IDEM_OK)
		errout = stderr;
	if (top_src_mysql_new(cfg, &src) != IDEM_OK) {
		fprintf(errout, "idemtop: out of memory\n");
		rc = EXIT_DB;
		goto out;
	}
	rc = o.batch ? run_batch(&o, cfg, src, utf8) :
	    run_console(&o, cfg, src, utf8);
out:
	top_src_free(src);
	cfg_free(cfg);
	if (errout != stderr)
		restore_stderr();
	return rc;
}
