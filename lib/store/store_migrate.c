/* Schema versions: applies the embedded sql/NNN-*.sql migrations in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mysql.h>
#include <mysqld_error.h>

#include "log.h"
#include "migrations.h"
#include "store.h"
#include "store_int.h"

#define MIGRATE_LOCK	"idemgate-migrate"
#define MIGRATE_WAIT_S	10

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS idem_schema ("
    " version INT UNSIGNED NOT NULL PRIMARY KEY,"
    " name VARCHAR(64) NOT NULL,"
    " applied_at DATETIME(6) NOT NULL) ENGINE=InnoDB";

int
store_schema_expected(void)
{
	int	 v = 0;
	size_t	 i;

	for (i = 0; i < nmigrations; i++)
		if (migrations[i].version > v)
			v = migrations[i].version;
	return v;
}

int
store_schema_old(int version, char *why, size_t len)
{
	int	 want = store_schema_expected();

	if (version >= want)
		return 0;
	if (version == 0)
		snprintf(why, len, "schema missing (run 'idemctl migrate')");
	else
		snprintf(why, len, "schema at version %d, this build needs %d "
		    "(run 'idemctl migrate')", version, want);
	return 1;
}

enum idem_err
store_schema_version(struct store *st, int *version)
{
	long long	 v = 0;
	enum idem_err	 er;

	if ((er = store_connect(st)) != IDEM_OK)
		return er;
	er = store_query_int(st,
	    "SELECT COALESCE(MAX(version), 0) FROM idem_schema", &v);
	if (er == IDEM_ESTORE && store_errno(st) == ER_NO_SUCH_TABLE)
		v = 0, er = IDEM_OK;
	if (er != IDEM_OK)
		return er;
	*version = (int)v;
	return IDEM_OK;
}

/* 1 if version is in idem_schema. */
static enum idem_err
applied(struct store *st, int version, int *yes)
{
	char		 sql[96];
	long long	 n = 0;
	enum idem_err	 er;

	snprintf(sql, sizeof(sql),
	    "SELECT COUNT(*) FROM idem_schema WHERE version = %d", version);
	if ((er = store_query_int(st, sql, &n)) != IDEM_OK)
		return er;
	*yes = n > 0;
	return IDEM_OK;
}

/* Runs the statement [start, start + len) unless it is only blanks. */
static enum idem_err
run_stmt(struct store *st, const struct migration *m, const char *start,
    size_t len)
{
	enum idem_err	 er;

	if (strspn(start, " \t\r\n") >= len)
		return IDEM_OK;
	if ((er = store_query(st, start, len)) != IDEM_OK)
		log_err("migration %s failed: %s", m->name,
		    store_last_error(st));
	return er;
}

/*
 * Applies one migration, then records it.  A statement ends with ";" at the
 * end of a line, or with the terminator a "DELIMITER xx" line set between
 * statements, as in the mysql client: trigger bodies hold ";", and the
 * file still runs through the client.
 */
static enum idem_err
apply(struct store *st, const struct migration *m)
{
	const char	*p = m->sql, *start = m->sql, *eol, *q, *next;
	char		 delim[16] = ";", sql[256];
	size_t		 dlen = 1, len;
	enum idem_err	 er;

	for (; *p != '\0'; p = next) {
		if ((eol = strchr(p, '\n')) == NULL)
			eol = p + strlen(p);
		next = *eol != '\0' ? eol + 1 : eol;
		for (q = eol; q > p && strchr(" \t\r", q[-1]) != NULL; q--)
			;
		if (strspn(start, " \t\r\n") >= (size_t)(p - start) &&
		    q - p > 10 && strncasecmp(p, "DELIMITER ", 10) == 0) {
			len = (size_t)(q - p) - 10;
			if (len >= sizeof(delim) ||
			    memchr(p + 10, ' ', len) != NULL ||
			    memchr(p + 10, '\t', len) != NULL) {
				store_fail(st, IDEM_ESTORE,
				    "bad DELIMITER line");
				log_err("migration %s failed: "
				    "bad DELIMITER line", m->name);
				return IDEM_ESTORE;
			}
			memcpy(delim, p + 10, len);
			delim[len] = '\0';
			dlen = len;
			start = next;
			continue;
		}
		if ((size_t)(q - p) >= dlen &&
		    memcmp(q - dlen, delim, dlen) == 0) {
			if ((er = run_stmt(st, m, start,
			    (size_t)(q - dlen - start))) != IDEM_OK)
				return er;
			start = next;
		}
	}
	/* A last statement without its terminator. */
	if ((er = run_stmt(st, m, start, strlen(start))) != IDEM_OK)
		return er;
	/* name is ours (from sql/ file names), not outside input. */
	snprintf(sql, sizeof(sql),
	    "INSERT INTO idem_schema (version, name, applied_at)"
	    " VALUES (%d, '%s', NOW(6))", m->version, m->name);
	return store_query(st, sql, strlen(sql));
}

enum idem_err
store_migrate(struct store *st, int *applied_out)
{
	long long	 got = 0;
	enum idem_err	 er, er2;
	size_t		 i;
	int		 n = 0, yes;
	char		 sql[96];

	if ((er = store_connect(st)) != IDEM_OK)
		return er;
	/* Up to date: done, even for a user without CREATE (the gateway). */
	if (store_schema_version(st, &n) == IDEM_OK &&
	    n >= store_schema_expected()) {
		*applied_out = 0;
		return IDEM_OK;
	}
	n = 0;
	snprintf(sql, sizeof(sql), "SELECT GET_LOCK('%s', %d)", MIGRATE_LOCK,
	    MIGRATE_WAIT_S);
	if ((er = store_query_int(st, sql, &got)) != IDEM_OK)
		return er;
	if (got != 1) {
		return store_fail(st, IDEM_EBUSY,
		    "another migration holds the lock");
	}
	er = store_query(st, schema_sql, strlen(schema_sql));
	for (i = 0; er == IDEM_OK && i < nmigrations; i++) {
		if ((er = applied(st, migrations[i].version, &yes)) != IDEM_OK)
			break;
		if (yes)
			continue;
		if ((er = apply(st, &migrations[i])) != IDEM_OK)
			break;
		log_info("applied migration %s", migrations[i].name);
		n++;
	}
	if (store_connected(st)) {
		snprintf(sql, sizeof(sql), "DO RELEASE_LOCK('%s')",
		    MIGRATE_LOCK);
		er2 = store_query(st, sql, strlen(sql));
		if (er == IDEM_OK)
			er = er2;
	}
	if (er == IDEM_OK)
		*applied_out = n;
	return er;
}
