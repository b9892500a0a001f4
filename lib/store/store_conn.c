/* Store's bottom: client set-up, deadlines, connecting, what errors mean. */
#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "clock.h"
#include "store.h"
#include "store_int.h"

static int64_t store_call_budget(const struct cfg *cfg);
static unsigned store_read_timeout(const struct cfg *cfg);

static pthread_once_t	 global_once = PTHREAD_ONCE_INIT;
static int		 global_ok;

/*
 * Deadlines.  The client library waits for its socket through io_wait
 * (MARIADB_OPT_IO_WAIT) whenever a connect, a read or a write would block;
 * io_wait gives up at the calling thread's deadline, so no call outlasts
 * it, whatever the network does (a partition that drops packets blocks a
 * read for ever, and the library's own timeouts count whole seconds).  A
 * store is used by one thread at a time: the deadline is per thread.
 */
static __thread int64_t	 io_deadline;	/* CLOCK_MONOTONIC ms; 0: none */
static __thread struct store *io_st;	/* in a call, for io_keep */

int64_t
store_io_deadline(int64_t deadline)
{
	int64_t	 was = io_deadline;

	io_deadline = deadline;
	return was;
}

int
store_io_expired(void)
{
	return io_deadline > 0 && clock_now_ms() >= io_deadline;
}

struct store *
store_io_store(struct store *st)
{
	struct store	*was = io_st;

	io_st = st;
	return was;
}

static int	sock_lost(int fd, struct store_lost *l);

/* Notes st's TCP connection, about to be given up, for store_kill_lost;
 * not one given up while ending others (a server too slow for those). */
static void
io_lost(struct store *st, my_socket fd)
{
	struct store_lost	 l;

	if (st->killing || st->my == NULL || mysql_get_socket(st->my) != fd ||
	    sock_lost((int)fd, &l) != 0)
		return;
	l.id = mysql_thread_id(st->my);
	l.at_ms = clock_now_ms();
	if (st->nlost == STORE_LOST_MAX) {
		memmove(&st->lost[0], &st->lost[1],
		    (STORE_LOST_MAX - 1) * sizeof(st->lost[0]));
		st->nlost--;
	}
	st->lost[st->nlost++] = l;
}

/*
 * The wait for fd timed out: the client library is about to close it.  If
 * it is the connection that holds this thread's live claim's named lock,
 * a dup keeps it open (store.h: STORE_GRAVES), so the server, however
 * late it answers again, keeps the session and the lock.  Any other is
 * noted (io_lost), for its session to be ended once the server answers.
 */
static void
io_keep(my_socket fd)
{
	struct store	*st = io_st;
	int		 nfd;

	if (st == NULL)
		return;
	if (!st->held || st->my == NULL ||
	    st->generation != st->lock_gen ||
	    mysql_get_socket(st->my) != fd) {
		io_lost(st, fd);
		return;
	}
	/* The live claim's lock, not kept (out of room, or of fds): its
	 * close goes when it goes, never hastened by a KILL. */
	if (st->ngrave >= STORE_GRAVES ||
	    (nfd = fcntl((int)fd, F_DUPFD_CLOEXEC, 3)) == -1)
		return;
	st->grave_id[st->ngrave] = mysql_thread_id(st->my);
	st->grave[st->ngrave++] = nfd;
	st->grave_tid = mysql_thread_id(st->my);
	st->lock_gen = 0;	/* that connection is done with */
}

static int
io_wait(my_socket fd, my_bool is_read, int timeout)
{
	struct pollfd	 pfd;
	int64_t		 left, start = clock_now_ms();
	int		 rc;

	for (;;) {
		left = timeout < 0 ? INT_MAX : timeout - (clock_now_ms() -
		    start);
		if (io_deadline > 0 && io_deadline - clock_now_ms() < left)
			left = io_deadline - clock_now_ms();
		if (left <= 0) {
			io_keep(fd);
			return 0;
		}
		pfd.fd = (int)fd;
		pfd.events = is_read ? POLLIN : POLLOUT;
		pfd.revents = 0;
		rc = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (rc == -1 && errno == EINTR)
			continue;
		if (rc == 0)
			io_keep(fd);
		return rc;
	}
}

/* Our port and the server's address of fd, a TCP socket; -1 otherwise
 * (a unix socket's close reaches the server at once). */
static int
sock_lost(int fd, struct store_lost *l)
{
	struct sockaddr_storage	 me;
	socklen_t		 ml = sizeof(me);

	memset(l, 0, sizeof(*l));
	l->peerlen = sizeof(l->peer);
	if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
	    getpeername(fd, (struct sockaddr *)&l->peer, &l->peerlen) != 0)
		return -1;
	if (me.ss_family == AF_INET)
		l->port = ntohs(((struct sockaddr_in *)&me)->sin_port);
	else if (me.ss_family == AF_INET6)
		l->port = ntohs(((struct sockaddr_in6 *)&me)->sin6_port);
	else
		return -1;
	return 0;
}

/* How long a lost connection's session is looked for: past it, its
 * close has reached the server or never will before keepalive. */
#define LOST_KEEP_MS	(3600 * 1000)

/*
 * KILLs the session of l, if st is connected to l's server and that
 * server has it: l's id, this user's, from our address with l's port.
 * 0, or -1 when a statement failed (the rest are left alone).
 */
static int
kill_session(struct store *st, const struct store_lost *l)
{
	struct store_lost	 cur;
	MYSQL_BIND		 par[2];
	MYSQL_STMT		*s;
	char			 port[12];
	int64_t			 id = (int64_t)l->id, got = 0;
	enum idem_err		 er;

	if (l->id == 0 || st->my == NULL ||
	    sock_lost((int)mysql_get_socket(st->my), &cur) != 0 ||
	    cur.peerlen != l->peerlen ||
	    memcmp(&cur.peer, &l->peer, l->peerlen) != 0)
		return 0;
	snprintf(port, sizeof(port), "%u", l->port);
	store_bind_i64(&par[0], &id);
	store_bind_str(&par[1], port);
	er = store_scalar(st, STMT_LOST_ID, par, 0, &got);
	if (er == IDEM_ENOTFOUND)
		return 0;
	if (er != IDEM_OK || got != id)
		return -1;
	/* 1094: it ended meanwhile. */
	if (store_exec(st, STMT_KILL, par, 0, &s) != IDEM_OK &&
	    st->errnum != ER_NO_SUCH_THREAD)
		return -1;
	return 0;
}

/* kill_session for each of n, within the call's deadline, uncounted and
 * leaving no error behind; the first failure ends it. */
static void
kill_sessions(struct store *st, const struct store_lost *l, unsigned n)
{
	uint64_t	 trips = st->round_trips;
	int64_t		 now = clock_now_ms();
	unsigned	 i;

	st->killing = 1;
	for (i = 0; i < n && st->my != NULL; i++)
		if (now - l[i].at_ms <= LOST_KEEP_MS &&
		    kill_session(st, &l[i]) != 0)
			break;
	st->killing = 0;
	st->round_trips = trips;
	if (st->my != NULL)
		st->errnum = 0;
}

void
store_kill_lost(struct store *st)
{
	struct store_lost	 l[STORE_LOST_MAX];
	unsigned		 n = st->nlost;

	memcpy(l, st->lost, n * sizeof(l[0]));
	st->nlost = 0;
	kill_sessions(st, l, n);
}

/* Notes the n kept sockets fd (sessions id) into l; how many. */
static unsigned
graves_lost(const int *fd, const uint64_t *id, unsigned n,
    struct store_lost *l)
{
	unsigned	 i, k = 0;

	for (i = 0; i < n; i++)
		if (sock_lost(fd[i], &l[k]) == 0) {
			l[k].id = id[i];
			l[k++].at_ms = clock_now_ms();
		}
	return k;
}

void
store_graves_kill(struct store *st, const struct claim *c)
{
	struct store_lost	 l[2 * STORE_GRAVES];
	unsigned		 n;

	n = graves_lost(st->grave, st->grave_id, st->ngrave, l);
	if (c != NULL)
		n += graves_lost(c->grave, c->grave_id, c->ngrave, l + n);
	kill_sessions(st, l, n);
}

void
store_graves_close(struct store *st)
{
	while (st->ngrave > 0)
		close(st->grave[--st->ngrave]);
	st->held = 0;
}

void
store_graves_take(struct store *st, struct claim *c)
{
	while (st->ngrave > 0 && c->ngrave < STORE_GRAVES) {
		st->ngrave--;
		c->grave_id[c->ngrave] = st->grave_id[st->ngrave];
		c->grave[c->ngrave++] = st->grave[st->ngrave];
	}
	store_graves_close(st);
}

static void
global_init_once(void)
{
	global_ok = mysql_library_init(0, NULL, NULL) == 0;
}

enum idem_err
store_global_init(void)
{
	pthread_once(&global_once, global_init_once);
	return global_ok ? IDEM_OK : IDEM_ESTORE;
}

void
store_global_end(void)
{
	mysql_library_end();
}

enum idem_err
store_thread_init(void)
{
	if (store_global_init() != IDEM_OK)
		return IDEM_ESTORE;
	return mysql_thread_init() == 0 ? IDEM_OK : IDEM_ESTORE;
}

void
store_thread_end(void)
{
	mysql_thread_end();
}

enum idem_err
store_new(const struct cfg *cfg, struct store **out)
{
	struct store	*st;

	if (store_global_init() != IDEM_OK)
		return IDEM_ESTORE;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return IDEM_ENOMEM;
	st->cfg = cfg;
	st->call_ms = store_call_budget(cfg);
	/* A connect is a few round trips: twice a call, 1 to 3 s. */
	st->connect_ms = st->call_ms * 2 < 1000 ? 1000 : st->call_ms * 2 >
	    STORE_CONNECT_MS ? STORE_CONNECT_MS : st->call_ms * 2;
	st->read_timeout_s = STORE_READ_TIMEOUT_S;
	*out = st;
	return IDEM_OK;
}

void
store_deadline(struct store *st, int64_t ms)
{
	st->next_ms = ms < 1 ? 1 : ms;
}

void
store_set_patient(struct store *st)
{
	st->read_timeout_s = store_read_timeout(st->cfg);
	st->call_ms = (int64_t)st->read_timeout_s * 1000;
	st->connect_ms = st->call_ms;
}

void
store_set_resident(struct store *st)
{
	st->resident = 1;
}

void
store_disconnect(struct store *st)
{
	size_t	 i;

	/* Statements die with their connection: never reuse one. */
	for (i = 0; i < STMT__COUNT; i++) {
		if (st->stmt[i] != NULL)
			mysql_stmt_close(st->stmt[i]);
		st->stmt[i] = NULL;
	}
	if (st->my != NULL)
		mysql_close(st->my);
	st->my = NULL;
}

void
store_free(struct store *st)
{
	if (st == NULL)
		return;
	store_disconnect(st);
	store_graves_close(st);
	free(st);
}

struct st_mysql *
store_mysql(struct store *st)
{
	return st->my;
}

/* 1 if errnum means the connection is unusable. */
int
store_conn_lost(unsigned errnum)
{
	if (errnum >= 2000 && errnum < 3000)	/* CR_*: client side */
		return 1;
	switch (errnum) {
	case ER_SERVER_SHUTDOWN:
	case ER_CONNECTION_KILLED:
	case ER_NET_READ_ERROR:
	case ER_NET_READ_INTERRUPTED:
	case ER_NET_ERROR_ON_WRITE:
	case ER_NET_WRITE_INTERRUPTED:
	/* "WSREP has not yet prepared node for application use": a Galera
	 * node out of the primary component; the next one answers. */
	case ER_UNKNOWN_COM_ERROR:
		return 1;
	}
	return 0;
}

int
store_lost_to_other(unsigned errnum)
{
	return errnum == ER_LOCK_DEADLOCK || errnum == ER_LOCK_WAIT_TIMEOUT;
}

/*
 * Every kept statement's deadline: shorter than the stop margin of the
 * shortest lease configured (cfg_lease_margin_ms), so an owner learns of
 * a partition while it can still act; at most STORE_CALL_MAX_MS.
 */
static int64_t
store_call_budget(const struct cfg *cfg)
{
	int64_t	 ms = STORE_CALL_MAX_MS, m;
	size_t	 i;

	for (i = 0; cfg != NULL && i < cfg->nroutes; i++) {
		m = cfg_lease_margin_ms(cfg->routes[i].lease_ms) * 3 / 4;
		if (m < ms)
			ms = m;
	}
	if (cfg != NULL) {
		m = cfg_lease_margin_ms(cfg->defaults.lease_ms) * 3 / 4;
		if (m < ms)
			ms = m;
	}
	return ms < 100 ? 100 : ms;
}

/* A patient connection's read timeout (operator commands): long
 * statements, and GET_LOCK up to the longest wait. */
static unsigned
store_read_timeout(const struct cfg *cfg)
{
	int64_t	 ms = 0;
	size_t	 i;

	for (i = 0; cfg != NULL && i < cfg->nroutes; i++)
		if (cfg->routes[i].wait_ms > ms)
			ms = cfg->routes[i].wait_ms;
	if (ms > 3600 * 1000)
		ms = 3600 * 1000;
	return (unsigned)(ms / 1000) + 30;
}

enum idem_err
store_mysql_init(const struct cfg *cfg, const char *group,
    unsigned read_timeout_s, char *err, size_t errlen, MYSQL **out)
{
	MYSQL		*my;
	unsigned	 cto = STORE_CONNECT_TIMEOUT_S;
	my_bool		 off = 0;
	char		 why[600];

	if (cfg != NULL &&
	    cfg_check_option_group(cfg, group, why, sizeof(why)) != IDEM_OK) {
		snprintf(err, errlen, "%s", why);
		return IDEM_ECONFIG;
	}
	if ((my = mysql_init(NULL)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return IDEM_ENOMEM;
	}
	if (cfg != NULL && cfg->mysql_defaults_file != NULL)
		mysql_options(my, MYSQL_READ_DEFAULT_FILE,
		    cfg->mysql_defaults_file);
	mysql_options(my, MYSQL_READ_DEFAULT_GROUP, group);
	mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &cto);
	mysql_options(my, MYSQL_OPT_READ_TIMEOUT, &read_timeout_s);
	mysql_options(my, MYSQL_OPT_RECONNECT, &off);
	mysql_optionsv(my, MARIADB_OPT_IO_WAIT, io_wait);
	*out = my;
	return IDEM_OK;
}

void
store_cloexec(MYSQL *my)
{
	int	 fd = (int)mysql_get_socket(my), fl;

	if (fd >= 0 && (fl = fcntl(fd, F_GETFD)) != -1)
		(void)fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

/* The error record: one per connection, the last failure whoever had it
 * (lib/store/store_int.h). */

const char *
store_last_error(const struct store *st)
{
	return st->err[0] != '\0' ? st->err : "no error";
}

unsigned
store_errno(const struct store *st)
{
	return st->errnum;
}

/* A server or client error: "1146: Table ... doesn't exist". */
void
store_set_error(struct store *st, unsigned errnum, const char *text)
{
	st->errnum = errnum;
	snprintf(st->err, sizeof(st->err), "%u: %s", errnum,
	    text != NULL ? text : "?");
}

enum idem_err
store_fail(struct store *st, enum idem_err er, const char *fmt, ...)
{
	va_list	 ap;

	st->errnum = 0;
	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	return er;
}

enum idem_err
store_conn_open(struct store *st, const char *group)
{
	MYSQL		*my;
	unsigned	 wto = 30;
	unsigned long	 maxpkt = 128ul * 1024 * 1024;
	char		 err[700];
	enum idem_err	 er;

	if ((er = store_mysql_init(st->cfg, group, st->read_timeout_s, err,
	    sizeof(err), &my)) == IDEM_ENOMEM) {
		store_set_error(st, CR_OUT_OF_MEMORY, "mysql_init failed");
		return IDEM_ENOMEM;
	}
	if (er != IDEM_OK)
		return store_fail(st, IDEM_ESTORE, "%s", err);
	mysql_options(my, MYSQL_OPT_WRITE_TIMEOUT, &wto);
	mysql_options(my, MYSQL_OPT_MAX_ALLOWED_PACKET, &maxpkt);
	mysql_options(my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	/* One clock and one zone for every host: DATETIMEs are UTC.  The
	 * session lives as long as its socket (the server's limit, a year):
	 * a session kept for a key's lock (store.h: STORE_GRAVES) must not
	 * end at a wait_timeout the server was given to reap idle clients;
	 * our sockets close when we are done with them, or with us. */
	mysql_options(my, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00',"
	    " SESSION wait_timeout = 31536000");
	/* affected rows = matched rows, so an idempotent retry still counts */
	if (mysql_real_connect(my, NULL, NULL, NULL, NULL, 0, NULL,
	    CLIENT_FOUND_ROWS) == NULL) {
		store_set_error(st, mysql_errno(my), mysql_error(my));
		mysql_close(my);
		return IDEM_ESTORE;
	}
	if (mysql_autocommit(my, 1) != 0) {
		store_set_error(st, mysql_errno(my), mysql_error(my));
		mysql_close(my);
		return IDEM_ESTORE;
	}
	store_cloexec(my);
	st->my = my;
	st->generation++;
	st->boot_s = 0;
	return IDEM_OK;
}

const char *
store_hint(const struct store *st)
{
	switch (st->errnum) {
	case 1045:	/* ER_ACCESS_DENIED_ERROR */
		return "check the user and password in mysql_defaults_file";
	case 1044:	/* ER_DBACCESS_DENIED_ERROR */
	case 1142:	/* ER_TABLEACCESS_DENIED_ERROR */
	case 1143:	/* ER_COLUMNACCESS_DENIED_ERROR */
		return "privileges missing: apply sql/grants.sql (idemctl "
		    "check says which)";
	case 1049:	/* ER_BAD_DB_ERROR */
		return "unknown database: check database= in "
		    "mysql_defaults_file";
	case 1146:	/* ER_NO_SUCH_TABLE */
		return "schema missing: run idemctl migrate";
	case 2002:	/* CR_CONNECTION_ERROR */
	case 2003:	/* CR_CONN_HOST_ERROR */
	case 2005:	/* CR_UNKNOWN_HOST */
		return "server not reachable: is it running, and are socket= "
		    "or host= in mysql_defaults_file right?";
	default:
		return NULL;
	}
}

unsigned long
store_generation(const struct store *st)
{
	return st->generation;
}

uint64_t
store_round_trips(const struct store *st)
{
	return st->round_trips;
}

int
store_connected(const struct store *st)
{
	return st->my != NULL;
}
