#!/bin/bash
# The store's floor for a fresh key: the claim and the completion that
# idemgate sends (lib/store/store_sql.c), as plain SQL text from CLIENTS
# stock mariadb clients at once, KEYS keys each, on database DB of the
# server at SOCKET.  Prints "MARIADBD_US_PER_KEY DO1_US" : mariadbd's CPU
# per key (both statements and their commits), and per trivial statement
# (DO 1) for scale.  Sourced by bench/bench.sh's app line; run alone:
#   bench/floor.sh SOCKET PID DB [KEYS] [CLIENTS]
set -u
sock=$1 pid=$2 db=$3 keys=${4:-1000} clients=${5:-4}
dir=$(mktemp -d /tmp/idemgate-floor.XXXXXX)
trap 'rm -rf "$dir"' EXIT
ticks() { sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }'; }
# sql_pairs TAG: KEYS claims and completions, one key after another
sql_pairs() {
	awk -v n="$keys" -v tag="$1" 'BEGIN {
		cols = "(scope, idem_key, route, method, fingerprint, hashed," \
		    " state, owner, owner_token, waiters, created_at," \
		    " lease_until, run_deadline, expires_at)"
		for (i = 0; i < n; i++) {
			k = tag "-" i
			printf "INSERT INTO idem_keys %s SELECT UNHEX(SHA2(\x27none\x27, 256)),", cols
			printf " \x27%s\x27, \x27/floor\x27, \x27POST\x27, UNHEX(SHA2(\x27%s\x27, 256)),", k, k
			printf " 0, 0, \x27floor:1\x27, %d, 0, NOW(6),", i + 1
			printf " DATE_ADD(NOW(6), INTERVAL 30000000 MICROSECOND),"
			printf " DATE_ADD(NOW(6), INTERVAL 63000000 MICROSECOND),"
			printf " DATE_ADD(NOW(6), INTERVAL 30000000 MICROSECOND)"
			printf " FROM DUAL WHERE GET_LOCK(\x27f%s\x27, 0) = 1;\n", k
			printf "UPDATE idem_keys SET waiters = waiters + 0 *"
			printf " COALESCE(RELEASE_LOCK(\x27f%s\x27), 0), state = 1,", k
			printf " resp_status = 200, resp_headers = \x27Content-Type: text/plain\\r\\n\x27,"
			printf " resp_body = \x27hello\\n\x27, resp_size = 6, seal_kid = NULL,"
			printf " seal_nonce = NULL, completed_at = NOW(6),"
			printf " expires_at = DATE_ADD(NOW(6), INTERVAL 86400000000 MICROSECOND)"
			printf " WHERE id = LAST_INSERT_ID() AND owner_token = %d;\n", i + 1
		}
	}'
}
sql_do() { awk -v n="$keys" 'BEGIN { for (i = 0; i < 2 * n; i++) print "DO 1;" }'; }
# run_all KIND: CLIENTS clients at once, each its own file; CPU ticks used
run_all() {
	local kind=$1 c t0 t1
	for c in $(seq 1 "$clients"); do "sql_$kind" "floor$$-$c" >"$dir/$kind.$c"; done
	t0=$(ticks)
	for c in $(seq 1 "$clients"); do
		mariadb --no-defaults --socket="$sock" -uroot "$db" <"$dir/$kind.$c" >/dev/null &
	done
	wait
	t1=$(ticks)
	echo $((t1 - t0))
}
pairs=$(run_all pairs)
dos=$(run_all do)
mariadb --no-defaults --socket="$sock" -uroot "$db" \
    -e "DELETE FROM idem_keys WHERE route = '/floor'" >/dev/null
clk=$(getconf CLK_TCK)
awk -v p="$pairs" -v d="$dos" -v n=$((keys * clients)) -v clk="$clk" \
    'BEGIN { printf "%.0f %.0f\n", p * 1e6 / clk / n, d * 1e6 / clk / (2 * n) }'
