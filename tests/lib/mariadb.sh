# Private MariaDB for tests: its own data dir and unix socket, no TCP.
# Source this file; needs $TESTROOT (a scratch dir).  Functions:
#   mariadb_init      install a data dir, start, create db "idemgate",
#                     users idem (all on idemgate.*) and idem_ro (SELECT),
#                     write option files $TESTROOT/my.cnf ([idemgate] group)
#                     and $TESTROOT/my-ro.cnf
#   mariadb_start / mariadb_stop   (re)start or stop the same server
#   mariadb_sql SQL   run SQL as root on database idemgate, tab output
#   mariadb_newdb NAME  create database NAME (dropped first if present),
#                     grant it to idem / idem_ro, write $TESTROOT/NAME.cnf
#                     and $TESTROOT/NAME-ro.cnf ([idemgate] group)
#   mariadb_cleanup   stop and forget
# MDB_FLUSH sets innodb_flush_log_at_trx_commit: 2 (default, tests) or 1
# (durable: every commit flushed, as a payment store runs; make bench).

MDB_DIR=
MDB_SOCK=
MDB_PID=

mariadb_start() {
	# MDB_PORT: also listen on 127.0.0.1:MDB_PORT (partition tests);
	# MDB_OPTS: more server options, split on blanks (--ssl-cert=...)
	local net=--skip-networking
	[ -n "${MDB_PORT:-}" ] && net="--port=$MDB_PORT --bind-address=127.0.0.1"
	# shellcheck disable=SC2086
	mariadbd --no-defaults --user="$(id -un)" --datadir="$MDB_DIR/data" \
		--socket="$MDB_SOCK" $net ${MDB_OPTS:-} \
		--pid-file="$MDB_DIR/mariadb.pid" \
		--tmpdir="$MDB_DIR/tmp" \
		--log-error="$MDB_DIR/error.log" --innodb-buffer-pool-size="${MDB_BUFFER_POOL:-256M}" \
		--innodb-log-file-size=256M --innodb-flush-log-at-trx-commit="${MDB_FLUSH:-2}" \
		--max-connections=500 --skip-name-resolve >/dev/null 2>&1 &
	MDB_PID=$!
	local i
	for i in $(seq 1 300); do
		if mariadb-admin --no-defaults --socket="$MDB_SOCK" -uroot ping >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$MDB_PID" 2>/dev/null; then
			echo "mariadb failed to start:" >&2
			tail -20 "$MDB_DIR/error.log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "mariadb did not answer within 30s" >&2
	return 1
}

mariadb_stop() {
	[ -n "$MDB_PID" ] || return 0
	kill "$MDB_PID" 2>/dev/null
	local i
	for i in $(seq 1 300); do
		kill -0 "$MDB_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$MDB_PID" 2>/dev/null
	wait "$MDB_PID" 2>/dev/null
	MDB_PID=
}

mariadb_sql() {
	mariadb --no-defaults --socket="$MDB_SOCK" -uroot -N -B idemgate -e "$1"
}

mariadb_init() {
	MDB_DIR="$TESTROOT/mariadb"
	# unix socket paths are limited to 108 bytes
	MDB_SOCK="$(mktemp -u /tmp/idemgate-mdb.XXXXXX).sock"
	# own tmpdir: a shared /tmp lets concurrent installs trip over each other
	mkdir -p "$MDB_DIR/data" "$MDB_DIR/tmp"
	mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$MDB_DIR/data" \
		--tmpdir="$MDB_DIR/tmp" \
		--auth-root-authentication-method=normal --skip-test-db \
		>"$MDB_DIR/install.log" 2>&1 || { cat "$MDB_DIR/install.log" >&2; return 1; }
	mariadb_start || return 1
	mariadb --no-defaults --socket="$MDB_SOCK" -uroot <<SQL || return 1
CREATE DATABASE idemgate;
CREATE USER 'idem'@'localhost' IDENTIFIED BY 'idem-test-secret';
GRANT ALL ON idemgate.* TO 'idem'@'localhost';
CREATE USER 'idem_ro'@'localhost' IDENTIFIED BY 'idem-ro-secret';
GRANT SELECT ON idemgate.* TO 'idem_ro'@'localhost';
SQL
	cat >"$TESTROOT/my.cnf" <<CNF
[idemgate]
socket=$MDB_SOCK
user=idem
password=idem-test-secret
database=idemgate
CNF
	cat >"$TESTROOT/my-ro.cnf" <<CNF
[idemgate]
socket=$MDB_SOCK
user=idem_ro
password=idem-ro-secret
database=idemgate
CNF
	chmod 600 "$TESTROOT/my.cnf" "$TESTROOT/my-ro.cnf"
}

mariadb_newdb() {
	local db=$1
	mariadb --no-defaults --socket="$MDB_SOCK" -uroot <<SQL || return 1
DROP DATABASE IF EXISTS \`$db\`;
CREATE DATABASE \`$db\`;
GRANT ALL ON \`$db\`.* TO 'idem'@'localhost';
GRANT SELECT ON \`$db\`.* TO 'idem_ro'@'localhost';
SQL
	printf '[idemgate]\nsocket=%s\nuser=idem\npassword=idem-test-secret\ndatabase=%s\n' \
		"$MDB_SOCK" "$db" >"$TESTROOT/$db.cnf"
	printf '[idemgate]\nsocket=%s\nuser=idem_ro\npassword=idem-ro-secret\ndatabase=%s\n' \
		"$MDB_SOCK" "$db" >"$TESTROOT/$db-ro.cnf"
	chmod 600 "$TESTROOT/$db.cnf" "$TESTROOT/$db-ro.cnf"
}

mariadb_cleanup() {
	mariadb_stop
	rm -f "$MDB_SOCK"
}
