#!/bin/bash
# idemctl check and the store's transport: over TCP without TLS it warns
# and names ssl-ca / ssl-verify-server-cert; with them the warning goes.
# One MariaDB with TLS on 127.0.0.1, certificates made here with openssl.
. "$(dirname "$0")/../lib/harness.sh"

# A CA and a server certificate for 127.0.0.1, signed by it.
P="$T/pki"
mkdir -p "$P"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=idemgate test CA" \
    -keyout "$P/ca.key" -out "$P/ca.pem" >"$P/openssl.log" 2>&1 &&
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$P/server.key" -out "$P/server.csr" >>"$P/openssl.log" 2>&1 &&
printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\n' >"$P/ext.cnf" &&
openssl x509 -req -in "$P/server.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" \
    -CAcreateserial -days 2 -extfile "$P/ext.cnf" -out "$P/server.pem" \
    >>"$P/openssl.log" 2>&1 || { not_ok "certificates made" "$(tail -3 "$P/openssl.log")"; done_testing; exit 1; }
chmod 0644 "$P"/*.pem "$P/server.key"

MDB_PORT=$(free_port)
MDB_OPTS="--ssl-ca=$P/ca.pem --ssl-cert=$P/server.pem --ssl-key=$P/server.key"
export MDB_PORT MDB_OPTS
db_private || { done_testing; exit 1; }
db_new "$TNAME" || { done_testing; exit 1; }
expect_eq "server has TLS" YES "$(h_sqlroot -e "SELECT @@have_ssl")"
h_sqlroot -e "CREATE USER 'idemtcp'@'127.0.0.1' IDENTIFIED BY 'idem-test-secret';
	GRANT ALL ON \`$TNAME\`.* TO 'idemtcp'@'127.0.0.1'" || not_ok "TCP user"

# cnf NAME LINES...: an option file reaching the server over TCP.
cnf() {
	local f="$T/$1.cnf"
	shift
	printf '[idemgate]\nhost=127.0.0.1\nport=%s\nuser=idemtcp\npassword=idem-test-secret\ndatabase=%s\n' \
	    "$MDB_PORT" "$TNAME" >"$f"
	[ $# -eq 0 ] || printf '%s\n' "$@" >>"$f"
	chmod 0600 "$f"
	gw_conf "$T/$(basename "$f" .cnf).conf" "unix:$T/unused.sock" "$f"
}
cnf plain
cnf tls "ssl-ca=$P/ca.pem" "ssl-verify-server-cert=1"
# libmariadb reads a bare ssl-verify-server-cert as off: check says so
cnf bare "ssl-ca=$P/ca.pem" "ssl-verify-server-cert"
cnf noverify "ssl-ca=$P/ca.pem"
gw_conf "$T/sock.conf" "unix:$T/unused.sock" "$DBCNF"

"$IDEMCTL" -c "$T/plain.conf" check >"$T/plain.out" 2>&1
expect_match "TCP without TLS: warned" "^\[warn\] store reached over TCP without TLS" "$(cat "$T/plain.out")"
expect_match "TCP without TLS: names ssl-ca and ssl-verify-server-cert, the group and the file" "set ssl-ca = FILE and ssl-verify-server-cert = 1 in group \[idemgate\] of $T/plain.cnf" "$(cat "$T/plain.out")"

"$IDEMCTL" -c "$T/tls.conf" check >"$T/tls.out" 2>&1
expect_match "TLS, verified: ok line" "^\[ ok \] store reached over TLS \([A-Za-z0-9_-]+\), server certificate verified" "$(cat "$T/tls.out")"
expect_nomatch "TLS, verified: no transport warning" "without TLS|without verifying" "$(cat "$T/tls.out")"
expect_match "TLS, verified: the database was reached" '^\[ ok \] database reachable' "$(cat "$T/tls.out")"

for v in noverify bare; do
	"$IDEMCTL" -c "$T/$v.conf" check >"$T/$v.out" 2>&1
	expect_match "TLS, server not verified ($v): warned" "^\[warn\] store reached over TLS \(.*\) without verifying the server's name: set ssl-ca = FILE and ssl-verify-server-cert = 1" "$(cat "$T/$v.out")"
done

"$IDEMCTL" -c "$T/sock.conf" check >"$T/sock.out" 2>&1
expect_nomatch "unix socket: no transport line" "store reached over" "$(cat "$T/sock.out")"
done_testing
