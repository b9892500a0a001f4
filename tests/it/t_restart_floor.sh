#!/bin/bash
# A MariaDB that takes long to start (crash recovery) before it listens:
# its Uptime counts from the process start, so "up a whole lease" can be
# true the moment the first client gets in.  An owner holding a finished
# answer it could not write (its recorder) reconnects then; a retry on
# another gateway must not take the key over first.  The server is killed
# under a run, restarted and frozen (SIGSTOP) during its start-up, before
# it listens, for longer than the lease.
. "$(dirname "$0")/../lib/harness.sh"

db_private || { done_testing; exit 1; }
db_new "$TNAME" || { done_testing; exit 1; }
P=$(cgi_install pay)
pair_setup "[route /pay]
handler = cgi:$P
lease = 2s
timeout = 1s
wait = 0" "workers = 1" || { done_testing; exit 1; }

# mariadb_start, the server frozen 150 ms into its start-up for 3 s
start_slow() {
	mariadbd --no-defaults --user="$(id -un)" --datadir="$MDB_DIR/data" \
		--socket="$MDB_SOCK" --skip-networking \
		--pid-file="$MDB_DIR/mariadb.pid" --tmpdir="$MDB_DIR/tmp" \
		--log-error="$MDB_DIR/error.log" --innodb-buffer-pool-size=256M \
		--innodb-log-file-size=256M --innodb-flush-log-at-trx-commit=2 \
		--max-connections=500 --skip-name-resolve >/dev/null 2>&1 &
	MDB_PID=$!
	sleep 0.15
	kill -STOP "$MDB_PID"
	sleep 3
	kill -CONT "$MDB_PID"
	wait_until 30 mariadb-admin --no-defaults --socket="$MDB_SOCK" -uroot ping >/dev/null 2>&1
}

round() { # round LABEL
	local K before lpid
	K=$(new_key)
	before=$(runs pay)
	http_bg "${1}1" POST "$(url weba "/pay?sleep=400")" -H "Idempotency-Key: $K" --data-binary a
	sleep 0.15
	kill -9 "$MDB_PID"
	wait "$MDB_PID" 2>/dev/null
	bg_wait
	expect_eq "$1: the owner's client got its answer" created "$(hdr "${1}1" Idempotency-Result)"
	# past the run deadline (claim + 1 s + the kill grace)
	sleep 5
	(
		for _ in $(seq 1 400); do
			http "${1}r" POST "$(url webb "/pay?sleep=400")" -H "Idempotency-Key: $K" --data-binary a
			case $(hdr "${1}r" Idempotency-Result) in created|reused) break ;; esac
			sleep 0.01
		done
	) &
	lpid=$!
	start_slow
	wait "$lpid"
	expect_eq "$1: the retry replays the owner's answer" reused "$(hdr "${1}r" Idempotency-Result)"
	expect_eq "$1: one run across the restart" 1 $(($(runs pay) - before))
}
round s1
round s2
expect_nomatch "no answer lost" 'its answer is lost' "$(cat "$T/gwa.log")"

# Cleanup leaves a row in progress whose owner still holds its key's
# named lock, lease lapsed or not: an owner cut off longer than its lease
# (a frozen server keeps its session) still has an answer to write.  The
# owner here runs a 6 s CGI on a 60 s lease; its row is made to look
# lapsed, its run over, by hand.
printf '
[route /slow]
handler = cgi:%s
lease = 60s
timeout = 10s
' "$P" >>"$T/gwa.conf"
gw_stop gwa
gw_start gwa "$T/gwa.conf" || { done_testing; exit 1; }
K=$(new_key)
before=$(runs pay)
http_bg c1 POST "$(url weba "/slow?sleep=6000")" -H "Idempotency-Key: $K" --data-binary c
row_is() { [ "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys WHERE idem_key = '$K' AND state = 0")" = 1 ]; }
wait_until 5 row_is
expect_eq "the owner's lock, as cleanup names it, is held" 1 \
	"$(db_query "$TNAME" "SELECT IS_USED_LOCK(CONCAT('idem:', LEFT(SHA2(CONCAT(scope, idem_key), 256), 48))) IS NOT NULL FROM idem_keys WHERE idem_key = '$K'")"
db_query "$TNAME" "UPDATE idem_keys SET lease_until = NOW(6) - INTERVAL 1 HOUR, run_deadline = NOW(6) - INTERVAL 1 HOUR, expires_at = NOW(6) - INTERVAL 1 HOUR WHERE idem_key = '$K'" >/dev/null
gw_conf "$T/ctl.conf" "unix:$T/unused.sock" "$DBCNF"
printf '
[idempotency]
lease = 1s

[cleanup]
stale_after = 1s
' >>"$T/ctl.conf"
"$IDEMCTL" -c "$T/ctl.conf" cleanup >"$T/cl.out" 2>&1
expect_eq "cleanup while the owner holds the lock: exit 0" 0 "$?"
expect_eq "... its row stays" 1 "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys WHERE idem_key = '$K'")"
# The forget rule reads the same facts: unforced, the key stays.
"$IDEMCTL" -c "$T/ctl.conf" forget "$K" >"$T/fg.out" 2>&1
expect_eq "forget KEY while the owner holds the lock: exit 8" 8 "$?"
expect_match "... says it is in progress" 'in progress' "$(cat "$T/fg.out")"
"$IDEMCTL" -c "$T/ctl.conf" forget --route /slow --yes >"$T/fg.out" 2>&1
expect_eq "forget --route while the owner holds the lock: exit 0" 0 "$?"
expect_match "... keeps it" '1 in progress kept' "$(cat "$T/fg.out")"
expect_eq "... its row stays" 1 "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys WHERE idem_key = '$K'")"
bg_wait
expect_eq "... the owner's answer is recorded" 1 "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys WHERE idem_key = '$K' AND state = 1")"
http c2 POST "$(url weba "/slow?sleep=6000")" -H "Idempotency-Key: $K" --data-binary c
expect_eq "... and replays: one run" "reused 1" "$(hdr c2 Idempotency-Result) $(($(runs pay) - before))"
done_testing
