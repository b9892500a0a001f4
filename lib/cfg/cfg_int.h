/*
 * Internals of the configuration parser (not for callers): limits, the
 * key table, the parser state, and the functions its files share.  The
 * files are layered, each calling only those below it: cfg_util.c
 * (errors, blanks, words, copied strings), cfg_policy.c (the request
 * policy keys), cfg_keys.c (every key's value), cfg.c (file, sections,
 * routes).
 */
#ifndef IDEM_CFG_INT_H
#define IDEM_CFG_INT_H

#include <stdint.h>

#include "cfg.h"

#define CFG_MAX_FILE	(1024 * 1024)	/* whole file */
#define CFG_MAX_LINE	4096		/* one line, without its newline */
#define CFG_MAX_PREFIX	255		/* route column in the store */
#define CFG_MAX_HOST	64		/* host label in counters and owners */
#define CFG_MAX_METHOD	16		/* method column in the store */
/* Bytes of a bad value quoted in messages. */
#define CFG_MAX_SHOWN	64
/* Ten years: callers add durations to clocks without overflow checks. */
#define CFG_MAX_DURATION_MS	(3650LL * 86400 * 1000)

enum sect {
	SECT_NONE = 0,
	SECT_GATEWAY = 1 << 0,
	SECT_IDEM = 1 << 1,
	SECT_ROUTE = 1 << 2,
	SECT_CLEANUP = 1 << 3,
	SECT_CONSOLE = 1 << 4,
};

enum key_id {
	/* [idempotency] and [route] */
	K_IDEMPOTENCY, K_KEY_HEADER, K_METHODS, K_REQUIRE_KEY, K_SCOPE, K_TTL,
	K_WAIT, K_LEASE, K_STORE_5XX, K_MAX_BODY, K_MAX_RESPONSE,
	K_ON_STORE_ERROR, K_TIMEOUT, K_RELEASE_STATUSES, K_KEY_FORMAT,
	K_KEYS_PER_ROUTE, K_FP_HEADERS, K_FINGERPRINT, K_NEW_KEYS_PER_MINUTE,
	K_RUN_LIMIT, K_STORE_HEADERS_DROP,
	/* [route] only */
	K_HANDLER, K_SCRIPT_ROOT,
	/* [gateway] */
	K_LISTEN, K_SOCKET_OWNER, K_SOCKET_MODE, K_THREADS, K_WORKERS, K_LOG,
	K_MYSQL_DEFAULTS_FILE, K_MYSQL_GROUP, K_HOST_NAME, K_MAX_PARAMS,
	K_COUNTERS_FLUSH, K_REPLAY_CACHE, K_CLIENT_TIMEOUT, K_MAX_PENDING_BODY,
	K_PROBLEM_BASE_URL, K_STATUS_PATH, K_SECRET_KEY_FILE,
	/* [cleanup] */
	K_BATCH, K_SLEEP, K_MAX_SECONDS, K_STALE_AFTER, K_COUNTERS_RETENTION,
	K_RUNS_RETENTION, K_MAX_LAG, K_REPLICAS,
	/* [console] */
	K_REFRESH, K_CLEANUP_WARN_AFTER,
	K__MAX
};

#define RI	(SECT_IDEM | SECT_ROUTE)

struct parser;
struct cfg_key;

/* One "key = value" being applied: the key's row, the value and where
 * the value starts. */
struct cfg_val {
	const struct cfg_key	*key;
	const char		*v;
	int			 line, col;
};

/*
 * Each key: its name, the sections it may appear in, and how its value is
 * read.  set() checks kv->v and stores it at dst: off bytes into the
 * struct route of a [route] or [idempotency] section, or into the struct
 * cfg for the other sections (off 0, the whole struct, for keys that set
 * more than one field).  It formats its own errors.
 */
struct cfg_key {
	const char	*name;
	unsigned	 sects;
	enum idem_err	(*set)(struct parser *p, const struct cfg_val *kv,
			    void *dst);
	size_t		 off;
	/* Numbers and sizes: the bounds; durations: lo 1 refuses 0. */
	int64_t		 lo, hi;
	int		 zero_off;	/* sizes: 0 (off) allowed below lo */
	const char	*range;		/* sizes: "must be ..." */
	const char	*words;		/* enums: the values, in order */
	int		 (*ok)(const char *v);	/* strings: 1 if v will do */
	/* Enums and strings: "bad WHAT 'value'TAIL". */
	const char	*what, *tail;
	int		 empty_ok;	/* an empty unquoted value is one */
};
extern const struct cfg_key cfg_keys[K__MAX];

/* Where a route's keys were set, for folding and late checks. */
struct route_state {
	uint64_t	 seen;		/* bit per enum key_id */
	int		 sr_line, sr_col; /* script_root */
};

struct parser {
	const char		*name;
	char			*err;
	size_t			 errlen;
	int			 check_fs;	/* script_root must exist */
	struct cfg		*c;
	/* The built-ins with [idempotency] over them. */
	struct route		 defs;
	struct route_state	*rs;		/* parallel to c->routes */
	size_t			 cap;
	enum sect		 sect;
	unsigned		 sects_seen;	/* non-route sections */
	uint64_t		 seen;		/* keys of a plain section */
	struct route		*route;		/* current [route], or NULL */
	struct route_state	*rstate;
	char			 sectname[CFG_MAX_PREFIX + 16];
	int			 line;
};

/* 1 if the key k is not among the bits of seen. */
#define CFG_UNSET(seen, k)	(((seen) & ((uint64_t)1 << (k))) == 0)

/* --- lib/cfg/cfg_util.c --------------------------------------------------- */

/* Formats "NAME:LINE:COL: message" into p->err (no position when line
 * is 0); returns er. */
enum idem_err cfg_perr(struct parser *p, enum idem_err er, int line, int col,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Refuses kv: "bad WHAT 'value'TAIL" at its position; IDEM_ECONFIG. */
enum idem_err cfg_bad(struct parser *p, const struct cfg_val *kv,
    const char *what, const char *tail);

/* 1 for a space or a tab. */
int cfg_is_ws(char ch);

/*
 * strerror(e) for a file this process could not open, and for EACCES
 * the fix: the user and group it runs as, and the one rule (0640, owner
 * root, this process's group) that the package follows.  OUT: out.
 */
void cfg_open_error(int e, const char *path, char *out, size_t len);

/* Replaces *dst with a copy of v; *dst unchanged on failure. */
enum idem_err cfg_set_str(struct parser *p, char **dst, const char *v);

/* --- lib/cfg/cfg_policy.c ------------------------------------------------- */

/* The request policy keys with logic of their own; dst is the struct
 * route. */
enum idem_err cfg_set_release(struct parser *p, const struct cfg_val *kv,
    void *dst);
enum idem_err cfg_set_key_format(struct parser *p, const struct cfg_val *kv,
    void *dst);
enum idem_err cfg_set_fp_headers(struct parser *p, const struct cfg_val *kv,
    void *dst);
enum idem_err cfg_set_new_keys(struct parser *p, const struct cfg_val *kv,
    void *dst);
enum idem_err cfg_set_store_drop(struct parser *p, const struct cfg_val *kv,
    void *dst);

/* The built-in request policy: release_statuses = 5xx,
 * store_headers_drop = Set-Cookie Set-Cookie2, the rest off. */
enum idem_err cfg_policy_defaults(struct parser *p, struct route *r);

/* Copies the request policy of d that r did not set (seen: bits of the
 * keys r set). */
enum idem_err cfg_policy_fold(struct parser *p, struct route *r,
    const struct route *d, uint64_t seen);

/* Frees what the request policy of r owns. */
void cfg_policy_clear(struct route *r);

/* --- lib/cfg/cfg_keys.c --------------------------------------------------- */

/* Sets key id from v (at line:col) in base: the struct route of a [route]
 * or [idempotency] section, or the struct cfg for the other sections. */
enum idem_err cfg_set_key(struct parser *p, void *base, enum key_id id,
    const char *v, int line, int col);

/* Built-in defaults of every [idempotency] key into r. */
enum idem_err cfg_route_defaults(struct parser *p, struct route *r);

/* Copies from d the keys of r that are plain values (booleans, numbers,
 * durations, sizes, enums, strings) and that r did not set (seen: bits of
 * the keys r set). */
enum idem_err cfg_fold_plain(struct parser *p, struct route *r,
    const struct route *d, uint64_t seen);

/* Frees a route's methods. */
void cfg_methods_free(struct route *r);

#endif
