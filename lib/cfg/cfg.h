/* The INI configuration shared by idemgate, idemctl and idemtop. */
#ifndef IDEM_CFG_H
#define IDEM_CFG_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "err.h"

/* The largest max_response: a stored answer is read back whole for a
 * replay, and the store reads no more (lib/store/store.c). */
#define CFG_MAX_RESPONSE_MAX	((int64_t)64 * 1024 * 1024)

/* The most rows one cleanup DELETE takes ([cleanup] batch, --batch). */
#define CFG_CLEANUP_BATCH_MAX	100000

/* The system user the packaged units (debian/, etc/systemd) run the
 * gateway as. */
#define CFG_SERVICE_USER	"idemgate"

enum handler_kind {
	HANDLER_NONE = 0,	/* no handler: 502 (cfg_check refuses) */
	HANDLER_CGI,		/* cgi:/path/to/program */
	HANDLER_SCRIPT,		/* script: SCRIPT_FILENAME under script_root */
	HANDLER_FASTCGI,	/* fastcgi:unix:/path, fastcgi:tcp:host:port */
};

enum scope_kind {
	SCOPE_NONE = 0,
	SCOPE_REMOTE_USER,
	SCOPE_HEADER,		/* header:NAME, value hashed */
};

enum store_err_mode {
	STORE_ERR_REJECT = 0,	/* 503 + Retry-After, handler not run */
	STORE_ERR_PASS,		/* run the handler unprotected */
};

#define CFG_MAX_METHODS	16
#define CFG_MAX_FP_HEADERS	16
#define CFG_MAX_STORE_DROP	16

enum key_format {
	KEYFMT_ANY = 0,		/* printable, 1..255 bytes (key_parse) */
	KEYFMT_UUID,		/* 8-4-4-4-12 hex digits */
	KEYFMT_REGEX,		/* a POSIX ERE, anchored by the operator */
};

enum fp_mode {
	FPMODE_EXACT = 0,	/* the raw body */
	FPMODE_CANONICAL,	/* JSON, forms and multipart by meaning */
};

/*
 * One [route PREFIX] section with the [idempotency] defaults folded in.
 * All strings are owned by the struct cfg they came from.
 */
struct route {
	char			*prefix;	/* "/payments"; "/": all */
	int			 line;		/* line of the section header */
	int			 handler_line, handler_col; /* its handler */

	enum handler_kind	 handler;
	char			*program;	/* HANDLER_CGI: absolute path */
	char			*script_root;	/* HANDLER_SCRIPT: realpath'd */
	/* HANDLER_FASTCGI: "unix:/p" or "tcp:h:p". */
	char			*upstream;
	int64_t			 timeout_ms;	/* handler's; default 30s */
	/* HANDLER_FASTCGI: the upstream's own hard limit; 0 unset. */
	int64_t			 run_limit_ms;

	int			 idempotency;	/* 1 on (default), 0 off */
	char			*key_header;	/* default "Idempotency-Key" */
	char			*methods[CFG_MAX_METHODS]; /* upper case */
	size_t			 nmethods;	/* default POST PATCH */
	int			 require_key;	/* default 0 */
	enum scope_kind		 scope;		/* default SCOPE_NONE */
	/* SCOPE_HEADER: the header's name, lower case. */
	char			*scope_header;
	int64_t			 ttl_ms;	/* default 24h */
	int64_t			 wait_ms;	/* default 10s */
	int64_t			 lease_ms;	/* default 60s */
	int			 store_5xx;	/* default 0 */
	size_t			 max_body;	/* default 1M */
	size_t			 max_response;	/* default 8M; at most
						 * CFG_MAX_RESPONSE_MAX */
	int			 max_response_cut; /* set above it: cut
						 * (cfg_warnings says so) */
	enum store_err_mode	 on_store_error; /* default reject */

	/* Request policy (SPEC section 9). */
	unsigned char		 release[600 / 8];	/* bit per status whose
					 * answer frees the key; default 5xx */
	enum key_format		 key_format;	/* default any */
	char			*key_regex;	/* KEYFMT_REGEX: its source */
	void			*key_re;	/* KEYFMT_REGEX: a regex_t */
	int			 keys_per_route;	/* default 0 */
	char			*fp_headers[CFG_MAX_FP_HEADERS]; /* lowercase */
	size_t			 nfp_headers;
	enum fp_mode		 fingerprint;	/* default exact */
	uint32_t		 new_keys_per_minute;	/* per scope; 0 none */
	/* Response headers delivered to the first client but never stored
	 * (store_headers_drop), as written; default Set-Cookie
	 * Set-Cookie2. */
	char			*store_drop[CFG_MAX_STORE_DROP];
	size_t			 nstore_drop;
};

/* One line of the secret_key_file: "ID HEX" (64 hex digits). */
#define CFG_SECRET_LEN		32
#define CFG_SECRET_ID_MAX	32	/* [A-Za-z0-9._-], 1..32 bytes */
struct cfg_secret {
	char		 id[CFG_SECRET_ID_MAX + 1];
	unsigned char	 key[CFG_SECRET_LEN];
};

struct cfg {
	char		*path;			/* file it was read from */

	/* [gateway] */
	char		*listen;		/* unix:/p, tcp:h:p or fd:0 */
	/* "user:group", "user", ":group" or NULL. */
	char		*socket_owner;
	int		 socket_owner_line, socket_owner_col;
	/* Default 0660; any bit of 0007 refused. */
	unsigned	 socket_mode;
	int		 threads;		/* per worker, default 32 */
	int		 workers;		/* processes, default 2 */
	int		 log_syslog;		/* log = syslog */
	char		*mysql_defaults_file;	/* MySQL option file or NULL */
	int		 mysql_defaults_line, mysql_defaults_col;
	char		*mysql_group;		/* default "idemgate" */
	/* The counters' host label; default gethostname(). */
	char		*host_name;
	/* Total bytes of a request's FastCGI params, default 64K. */
	size_t		 max_params;
	int64_t		 counters_flush_ms;	/* default 5s */
	int64_t		 client_timeout_ms;	/* params + body; 30s */
	/* Bytes a worker buffers for requests still arriving; 64M. */
	size_t		 max_pending_body;
	/* Bytes per worker, 0 off; default 8M. */
	size_t		 replay_cache;
	/* Problem types are <base><slug>; NULL: none. */
	char		*problem_base_url;
	/* The status page's path, or NULL (off). */
	char		*status_path;
	int		 status_path_line, status_path_col;
	/* Keys that seal stored answers, or NULL: stored in clear. */
	char		*secret_key_file;
	int		 secret_line, secret_col;
	/* Its keys in file order, the last one current; loaded by
	 * cfg_load_secrets() only, wiped by cfg_free(). */
	struct cfg_secret *secrets;
	size_t		 nsecrets;

	/* [cleanup] (idemctl cleanup) */
	int		 cleanup_batch;		/* default 1000 */
	/* Pause between batches, default 0. */
	int64_t		 cleanup_sleep_ms;
	int64_t		 cleanup_max_ms;	/* 0 = unlimited (default) */
	/* In-progress rows this long past their lease, default 1h. */
	int64_t		 stale_after_ms;
	int64_t		 counters_retention_ms;	/* default 7d */
	/* Cleanup run records, default 30d. */
	int64_t		 runs_retention_ms;
	/* Pause while a replica lags more; 0 off. */
	int64_t		 cleanup_max_lag_ms;
	/* Option-file groups of replicas, or NULL. */
	char		*replicas;
	int		 replicas_line, replicas_col;

	/* [console] (idemtop) */
	int64_t		 refresh_ms;		/* default 2s */
	/* Warn when no run succeeded for this long, default 2h. */
	int64_t		 cleanup_warn_ms;

	/* The built-in defaults with [idempotency] over them (prefix NULL):
	 * what `idemctl run` starts from. */
	struct route	 defaults;

	/* Routes sorted longest prefix first; [idempotency] folded into
	 * each. */
	struct route	*routes;
	size_t		 nroutes;
};

/*
 * Reads and validates path.  On failure returns IDEM_ECONFIG (or
 * IDEM_ENOMEM / IDEM_ESYS) and writes "FILE:LINE:COL: message" into err.
 * Unknown sections and keys are errors.  *out is set only on success and
 * is freed with cfg_free().
 */
enum idem_err cfg_load(const char *path, struct cfg **out, char *err,
    size_t errlen);

/* As cfg_load() on text already in memory (len bytes, NULs refused); name is
 * used in messages.  Does not touch the filesystem except realpath of
 * script_root (a missing root is an error only in cfg_load()). */
enum idem_err cfg_parse(const char *text, size_t len, const char *name,
    struct cfg **out, char *err, size_t errlen);

/* NULL is a no-op. */
void cfg_free(struct cfg *c);

/*
 * IDEM_OK if c is usable by idemgate: at least one route, and no route
 * hidden by the status page (cfg_status_shadows).  Otherwise IDEM_ECONFIG
 * with "FILE: message" or "FILE:LINE:COL: message" in err.  idemctl and
 * idemtop need no routes.
 */
enum idem_err cfg_check_gateway(const struct cfg *c, char *err, size_t errlen);

/*
 * Reads c->secret_key_file (a no-op when unset) into c->secrets.  The
 * file must be a regular file neither group- or world-writable nor
 * world-readable (0600 or 0640), owned with the directory it really is
 * in by root, the effective user or the service's user, in a directory
 * group and others may not write unless sticky; each line "ID HEX" (64 hex digits),
 * blank lines and "#" comments allowed, ids unique, at least one key;
 * the last line is the current key.  On failure c is unchanged and err
 * holds "FILE:LINE:COL: message" (the key file's position for a bad line,
 * the config's for the rest); key material is never quoted.
 */
enum idem_err cfg_load_secrets(struct cfg *c, char *err, size_t errlen);

/* cfg_load_secrets' checks, as the effective user, keeping nothing. */
enum idem_err cfg_check_secrets(const struct cfg *c, char *err,
    size_t errlen);

/* The loaded key named id, or the current one for id NULL; NULL when
 * there is none. */
const struct cfg_secret *cfg_secret(const struct cfg *c, const char *id);

/* Word i (0-based) of a blank-separated list (mysql_group, replicas) into
 * out, cut to cap - 1 bytes.  0 when the list has no word i. */
int cfg_word(const char *list, unsigned i, char *out, size_t cap);

/* Replaces mysql_group (idemctl/idemtop --mysql-group).  IDEM_ENOMEM. */
enum idem_err cfg_set_mysql_group(struct cfg *c, const char *group);

/*
 * What `idemgate -t` checks beyond the syntax, like nginx -t: every cgi:
 * program exists and is executable, the mysql_defaults_file exists and is
 * readable.  IDEM_OK, or IDEM_ECONFIG with "FILE:LINE:COL: message" in
 * err.
 */
enum idem_err cfg_check_files(const struct cfg *c, char *err, size_t errlen);

/*
 * One option-file group's part of that: mysql_defaults_file, when set,
 * is a regular file we can read, and has group (NULL: not looked for),
 * or a group every client reads ([client]), since the client library
 * otherwise falls back to its default socket without a word.  Every
 * connection checks it.  IDEM_OK, or IDEM_ECONFIG with
 * "FILE:LINE:COL: message" in err.
 */
enum idem_err cfg_check_option_group(const struct cfg *c, const char *group,
    char *err, size_t errlen);

/* IDEM_OK unless the option file is set and group (with the client
 * groups) names no database: IDEM_ECONFIG and a line as above. */
enum idem_err cfg_check_option_db(const struct cfg *c, const char *group,
    char *err, size_t errlen);

/* The mysql_defaults_file part of that, for each group of mysql_group
 * (with its database): idemgate checks it at start too, idemctl before
 * it connects. */
enum idem_err cfg_check_option_file(const struct cfg *c, char *err,
    size_t errlen);

/* Each group of [cleanup] replicas is in the option file under its own
 * name (idemgate -t, idemctl check; only cleanup uses them). */
enum idem_err cfg_check_replicas(const struct cfg *c, char *err,
    size_t errlen);

/*
 * 1 if the status page at status_path answers requests that route r
 * would otherwise serve at its own prefix: status_path is r's prefix, or
 * r's prefix and a "/" when r's prefix has none (r matches both).  A
 * status_path below a prefix ("/idemgate-status" under "/") takes that
 * one path from the route, as php-fpm's pm.status_path does: not this.
 */
int cfg_status_shadows(const char *status_path, const struct route *r);

/*
 * 1 when the MySQL option file names group ("[group]" on a line of its
 * own, or of a file it pulls in with !include or !includedir, as the
 * client library reads them), else 0 (also when a file cannot be read).
 */
int cfg_option_file_has_group(const char *file, const char *group);

/*
 * The value key has for group in the MySQL option file, as MariaDB
 * Connector/C reads it (group or [client], [client-server],
 * [client-mariadb], the last in the file winning; quotes and escapes
 * taken, no comments) into val; 1, 0 when it has none, -1 when its
 * value is longer than vallen - 1 bytes (val then holds part of it).
 */
int cfg_option_file_value(const char *file, const char *group,
    const char *key, char *val, size_t vallen);

/* Longest-prefix route for path (REQUEST_URI without its query), matched on
 * segment boundaries ("/pay" does not match "/payments"); NULL if none. */
const struct route *cfg_route(const struct cfg *c, const char *path);

/* The longest a request of route (a [route] prefix, or "job:NAME" for
 * idemctl run) waits for another, as configured; 0 if unknown. */
int64_t cfg_route_wait_ms(const struct cfg *c, const char *route);

/* 1 if the route protects method (idempotency on and method listed). */
int cfg_protects(const struct route *r, const char *method);

/* 1 if an answer with this status frees the key (release_statuses, less
 * 5xx under store_5xx = yes): delivered, never replayed. */
int cfg_releases(const struct route *r, int status);

/* What a run is given past its limit to be gone: its start may come up
 * to a store call (2 s) after the claim's statement, then SIGTERM,
 * SIGKILL, the reaping. */
#define CFG_KILL_GRACE_MS	3000

/* The shortest lease: an owner that cannot renew stops its handler a
 * margin (cfg_lease_margin_ms, 300 ms here) before the lease ends, and
 * the stop itself takes up to 200 ms. */
#define CFG_LEASE_MIN_MS	1000

/*
 * How long after its claim a run of route r can still be executing (its
 * run deadline): timeout + CFG_KILL_GRACE_MS for a CGI program (idemgate
 * kills it); for an upstream run_limit, a third more (PHP-FPM enforces
 * request_terminate_timeout on a heartbeat of a third of it) and
 * CFG_KILL_GRACE_MS; -1 for an upstream without run_limit (no bound
 * known: its keys are never taken over).
 */
int64_t cfg_run_ms(const struct route *r);

/* How long before its lease ends an owner that could not renew stops a
 * handler it can stop: a fifth of the lease, within 300 ms .. 5 s, at
 * most half.  Every store call's deadline is shorter (lib/store/store.h). */
int64_t cfg_lease_margin_ms(int64_t lease_ms);

/*
 * Writes one "FILE:LINE:COL: warning: ..." line to f for each setting
 * that is valid but weakens the guarantee (a protected fastcgi: route
 * without run_limit, a MySQL option file others may read).  Returns the
 * count.
 */
int cfg_warnings(const struct cfg *c, FILE *f);

/* 1 if c's mysql_defaults_file (which holds the store's password) may be
 * read by every user or written by others: why says so, for a warning
 * (idemgate -t, idemctl check).  0 if not, or it cannot be looked at. */
int cfg_optfile_exposed(const struct cfg *c, char *why, size_t len);

/* 1 if key (len bytes, already through key_parse) has the route's
 * key_format. */
int cfg_key_format_ok(const struct route *r, const char *key, size_t len);

/* The longest duration anything takes: 100 years (a key's expiry, now +
 * ttl, must stay within the store's DATETIME, year 9999). */
#define CFG_DURATION_MAX_MS	(36500LL * 86400 * 1000)

/* "250ms", "10s", "5m", "72h", "7d", bare number = seconds; IDEM_EINVAL
 * (*ms untouched) for anything else or past CFG_DURATION_MAX_MS. */
enum idem_err cfg_parse_duration(const char *s, int64_t *ms);

/* "512", "64K", "1M", "2G" (powers of 1024); IDEM_EINVAL (*bytes
 * untouched) for anything else or past SIZE_MAX. */
enum idem_err cfg_parse_size(const char *s, size_t *bytes);

#endif
