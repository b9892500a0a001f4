#!/bin/bash
# make run: a private MariaDB, idemgate and lighttpd on 127.0.0.1:8080 in
# front of a demo legacy "payments" CGI.  Ctrl-C stops everything.
# lighttpd loads the package's own etc/lighttpd/20-idemgate.conf.
# PORT and IDEM_RUN_DIR (default run/ in the tree) may be set.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
RUN=${IDEM_RUN_DIR:-$top/run}
PORT=${PORT:-8080}
mkdir -p "$RUN/cgi-bin" "$RUN/www/cgi-bin" "$RUN/log"
: > "$RUN/ledger.txt"
cp tools/demo/payments.cgi "$RUN/cgi-bin/payments.cgi"
printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\nhello from a legacy CGI\\n"\n' > "$RUN/www/cgi-bin/hello.cgi"
chmod 755 "$RUN/cgi-bin/"*.cgi "$RUN/www/cgi-bin/"*.cgi

pids=()
stop() {
	trap - INT TERM EXIT
	echo
	echo "stopping..."
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	rm -f "$MDB_SOCK"
	echo "stopped; data stays in $RUN (rm -rf run/ to start afresh)"
}
trap stop EXIT
trap 'exit 0' INT TERM		# Ctrl-C: stop (the EXIT trap), a normal end
# fail WHAT: a service did not come up; what started is stopped, exit 1
fail() {
	echo "make run: $*; see $RUN/log/" >&2
	exit 1
}

# MariaDB: private data dir, own unix socket, no TCP.
MDB_SOCK=/tmp/idemgate-run-$PORT.sock
if [ ! -d "$RUN/mariadb/mysql" ]; then
	mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$RUN/mariadb" \
		--auth-root-authentication-method=normal --skip-test-db >"$RUN/log/mariadb-install.log" 2>&1
fi
mariadbd --no-defaults --user="$(id -un)" --datadir="$RUN/mariadb" --socket="$MDB_SOCK" \
	--skip-networking --pid-file="$RUN/mariadb.pid" --log-error="$RUN/log/mariadb.log" \
	--innodb-buffer-pool-size=128M >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
	mariadb-admin --no-defaults --socket="$MDB_SOCK" -uroot ping >/dev/null 2>&1 && break
	sleep 0.1
done
mariadb --no-defaults --socket="$MDB_SOCK" -uroot <<SQL
CREATE DATABASE IF NOT EXISTS idemgate;
CREATE USER IF NOT EXISTS 'idemgate'@'localhost' IDENTIFIED BY 'demo-only-password';
GRANT ALL ON idemgate.* TO 'idemgate'@'localhost';
SQL
cat > "$RUN/my.cnf" <<CNF
[idemgate]
socket=$MDB_SOCK
user=idemgate
password=demo-only-password
database=idemgate
CNF
chmod 600 "$RUN/my.cnf"

cat > "$RUN/idemgate.conf" <<CONF
; idemgate demo configuration written by 'make run'
[gateway]
listen = unix:$RUN/idemgate.sock
socket_mode = 0660
threads = 8
workers = 2
mysql_defaults_file = $RUN/my.cnf

[idempotency]
ttl = 24h
wait = 10s
lease = 60s

[route /payments]
handler = cgi:$RUN/cgi-bin/payments.cgi
require_key = yes
timeout = 30s

[route /]
handler = script
script_root = $RUN/www/cgi-bin
CONF
build/idemctl -c "$RUN/idemgate.conf" migrate >/dev/null

build/idemgate -c "$RUN/idemgate.conf" 2>>"$RUN/log/idemgate.log" &
pids+=($!)
for _ in $(seq 1 100); do [ -S "$RUN/idemgate.sock" ] && break; sleep 0.1; done
{ [ -S "$RUN/idemgate.sock" ] && kill -0 "${pids[-1]}" 2>/dev/null; } ||
	fail "idemgate did not start"

# The package's lighttpd module as lighty-enable-mod would enable it, its
# socket moved to the demo's; it mounts /cgi-bin/ and streams answers.
sed "s|/run/idemgate/idemgate.sock|$RUN/idemgate.sock|" \
	etc/lighttpd/20-idemgate.conf > "$RUN/20-idemgate.conf"
cat > "$RUN/lighttpd.conf" <<CONF
# Debian's lighttpd.conf loads mod_alias; 10-fastcgi.conf mod_fastcgi.
server.modules = ("mod_alias", "mod_fastcgi", "mod_accesslog")
server.bind = "127.0.0.1"
server.port = $PORT
server.document-root = "$RUN/www"
server.pid-file = "$RUN/lighttpd.pid"
server.errorlog = "$RUN/log/lighttpd-error.log"
accesslog.filename = "$RUN/log/lighttpd-access.log"
include "$RUN/20-idemgate.conf"
# The demo's scripts live in run/www/cgi-bin, not /usr/lib/cgi-bin.
alias.url := ( "/cgi-bin/" => "$RUN/www/cgi-bin/" )
# Another prefix for idemgate, as the module's comment shows.
fastcgi.server += ( "/payments" => (( "socket" => "$RUN/idemgate.sock", "check-local" => "disable" )) )
CONF
lighttpd -D -f "$RUN/lighttpd.conf" &
pids+=($!)
# Up when it answers and is still running (a port another server holds
# answers too, while this lighttpd exits at once: it could not bind).
up=0
for _ in $(seq 1 50); do
	kill -0 "${pids[-1]}" 2>/dev/null || break
	if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/cgi-bin/hello.cgi"; then
		sleep 0.2
		kill -0 "${pids[-1]}" 2>/dev/null && up=1
		break
	fi
	sleep 0.1
done
[ "$up" = 1 ] || fail "lighttpd did not start on 127.0.0.1:$PORT (port taken? PORT=8081 make run)"

cat <<MSG

idemgate is up: lighttpd on http://127.0.0.1:$PORT -> idemgate -> legacy CGI.
Ledger (one line per real charge): $RUN/ledger.txt
Logs: $RUN/log/

Try:
  # a charge, then its retry: same answer, one ledger line
  curl -si -X POST -H 'Idempotency-Key: order-1001' -d 'amount=4200' http://127.0.0.1:$PORT/payments
  curl -si -X POST -H 'Idempotency-Key: order-1001' -d 'amount=4200' http://127.0.0.1:$PORT/payments
  # same key, different body: 422
  curl -si -X POST -H 'Idempotency-Key: order-1001' -d 'amount=9900' http://127.0.0.1:$PORT/payments
  # no key on a route that requires one: 400
  curl -si -X POST -d 'amount=4200' http://127.0.0.1:$PORT/payments
  # two concurrent retries: one runs, the other waits and gets the replay
  for i in 1 2; do curl -s -X POST -H 'Idempotency-Key: order-2002' -d 'amount=1' http://127.0.0.1:$PORT/payments & done; wait
  # an unprotected script, fcgiwrap-style
  curl -s http://127.0.0.1:$PORT/cgi-bin/hello.cgi
  # what the fleet did
  build/idemctl -c $RUN/idemgate.conf stats
  build/idemtop -c $RUN/idemgate.conf
  cat $RUN/ledger.txt

Ctrl-C stops everything.
MSG
wait -n "${pids[@]}" || true
fail "a service exited"
