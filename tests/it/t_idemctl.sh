#!/bin/bash
# idemctl against a private MariaDB: migrate, cleanup (batches, lock, runs, dry run, time limit), show, forget, stats, metrics, exit codes.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
B=${IDEM_BUILD:-build}
case $B in /*) ;; *) B="$ROOT/$B" ;; esac
CTL="$B/idemctl"

OWN_ROOT=0
if [ -z "${TESTROOT:-}" ]; then
	TESTROOT=$(mktemp -d /tmp/idemctl-test.XXXXXX)
	OWN_ROOT=1
fi
. "$ROOT/tests/lib/mariadb.sh"
OWN_MDB=0
BG=
finish() {
	[ -n "$BG" ] && kill "$BG" 2>/dev/null
	[ "$OWN_MDB" = 1 ] && mariadb_cleanup >/dev/null 2>&1
	[ "$OWN_ROOT" = 1 ] && rm -rf "$TESTROOT"
	rm -rf "$T"
}
T=$(mktemp -d "$TESTROOT/idemctl.XXXXXX")
trap finish EXIT
if [ -n "${IDEM_TEST_MDB_SOCK:-}" ]; then
	MDB_SOCK=$IDEM_TEST_MDB_SOCK
else
	mariadb_init >/dev/null || { echo "FAIL: idemctl: private MariaDB did not start"; exit 1; }
	OWN_MDB=1
fi

FAILS=0
pass() { echo "PASS: idemctl: $1"; }
fail() { echo "FAIL: idemctl: $1"; FAILS=$((FAILS + 1)); }
check() { # check NAME COMMAND...: passes if the command succeeds
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}
eq() { # eq NAME WANT GOT
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1 (want '$2', got '$3')"; fi
}
has() { # has NAME FILE REGEX
	if grep -Eq -- "$3" "$2"; then pass "$1"; else fail "$1 (no /$3/ in: $(head -c 300 "$2" | tr '\n' '|'))"; fi
}

DB=idemctl_t
mariadb_newdb $DB || { echo "FAIL: idemctl: cannot create database"; exit 1; }
sq() { mariadb --no-defaults --socket="$MDB_SOCK" -uroot -N -B "$DB" -e "SET time_zone = '+00:00'; $1"; }

mkconf() { # mkconf FILE OPTIONFILE [extra [cleanup] lines]
	cat >"$1" <<CONF
[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $2
host_name = testhost

[cleanup]
$3

[route /payments]
handler = cgi:/bin/true
CONF
}
CONF=$T/idemgate.conf
mkconf "$CONF" "$TESTROOT/$DB.cnf" ""

run() { # run ARGS...: RC, $T/out, $T/err
	"$CTL" "$@" >"$T/out" 2>"$T/err"
	RC=$?
}
lines() { wc -l <"$1" | tr -d ' '; }

# scope hash as the gateway computes it: sha256(len8(kind) kind len8(value) value)
scope_hex() {
	python3 -c 'import hashlib,struct,sys
k=sys.argv[1].encode(); v=sys.argv[2].encode()
print(hashlib.sha256(struct.pack(">Q",len(k))+k+struct.pack(">Q",len(v))+v).hexdigest())' "$1" "$2"
}
NONE=$(scope_hex none "")

# seed PREFIX N STATE EXPIRES_SQL LEASE_SQL: N rows named PREFIX-1..N
seed() {
	sq "INSERT INTO idem_keys (scope, idem_key, route, method, fingerprint,
	    state, owner, owner_token, created_at, lease_until, expires_at,
	    completed_at, resp_status, resp_headers, resp_body, resp_size)
	  SELECT UNHEX('$NONE'), CONCAT('$1-', seq), '/payments', 'POST',
	    UNHEX(SHA2(seq, 256)), $3, 'gw1:42', 7, NOW(6) - INTERVAL 2 DAY,
	    $5, $4, IF($3 = 0, NULL, NOW(6) - INTERVAL 2 DAY),
	    IF($3 = 0, NULL, 200), IF($3 = 0, NULL, ''), IF($3 = 1, 'ok', NULL),
	    IF($3 = 0, NULL, 2)
	  FROM seq_1_to_$2"
}
count() { sq "SELECT COUNT(*) FROM idem_keys WHERE idem_key LIKE '$1-%'"; }

# ---------------------------------------------------------------- usage
run --help
check "--help exits 0 and lists exit codes" [ "$RC" = 0 ]
has "--help names cleanup" "$T/out" 'cleanup'
run cleanup --help
check "cleanup --help exits 0" [ "$RC" = 0 ]
has "cleanup --help shows --max-seconds" "$T/out" '--max-seconds'
run --version
check "--version" [ "$RC" = 0 ]
run frobnicate
eq "unknown command: exit 1" 1 "$RC"
has "unknown command: clear line" "$T/err" "unknown command 'frobnicate'"
run -c "$CONF" cleanup --bogus
eq "unknown flag: exit 1" 1 "$RC"
has "unknown flag named" "$T/err" "unknown option '--bogus'"
# a long option without a short letter, its value missing: named as typed
run -c "$CONF" run --key
eq "run --key without a value: exit 1" 1 "$RC"
has "run --key: the option named" "$T/err" "option '--key' needs a value"
run -c "$CONF" cleanup --max-lag
has "cleanup --max-lag: the option named" "$T/err" "option '--max-lag' needs a value"
run -c "$CONF" cleanup --batch 0
eq "bad --batch: exit 1" 1 "$RC"
eq "bad --batch: one line (cron mails it)" 1 "$(wc -l <"$T/err" | tr -d ' ')"
# an empty group (a variable left unset) is not the gateway's
for g in '' '  '; do
	run -c "$CONF" -g "$g" cleanup
	eq "-g '$g': exit 1, one line" "1 1" "$RC $(wc -l <"$T/err" | tr -d ' ')"
done
# the command line takes what [cleanup] takes: a batch up to 100000, a
# pause or a limit as a duration (a bare number keeps its old unit)
for bad in "--batch 100001" "--sleep 2h" "--sleep 1x" "--sleep -1" "--max-seconds 8d" "--max-seconds 604801"; do
	run -c "$CONF" cleanup $bad
	eq "cleanup $bad: exit 1, one line" "1 1" "$RC $(wc -l <"$T/err" | tr -d ' ')"
done
run -c "$CONF" show
eq "show without KEY: exit 1" 1 "$RC"
has "missing KEY said" "$T/err" 'missing KEY'
run -c "$CONF" show 'a b'
eq "invalid key: exit 1" 1 "$RC"
run -c "$CONF" show k --scope bogus
eq "invalid scope: exit 1" 1 "$RC"
run

eq "no command: exit 1" 1 "$RC"

# ---------------------------------------------------------------- config / database / schema errors
run -c "$T/nonexistent.conf" cleanup
eq "missing config: exit 2" 2 "$RC"
eq "missing config: one line" 1 "$(lines "$T/err")"
printf '[gateway]\nbogus_key = 1\n' >"$T/bad.conf"
run -c "$T/bad.conf" check
eq "invalid config: exit 2" 2 "$RC"
printf '[idemgate]\nsocket=%s\nuser=idem\npassword=wrong\ndatabase=%s\n' "$T/no.sock" "$DB" >"$T/down.cnf"
mkconf "$T/down.conf" "$T/down.cnf" ""
run -c "$T/down.conf" cleanup
eq "database unreachable: exit 3" 3 "$RC"
eq "database unreachable: one line" 1 "$(lines "$T/err")"
has "database unreachable: says so" "$T/err" 'unreachable'
run -c "$CONF" cleanup
eq "no schema: cleanup exits 6" 6 "$RC"
has "no schema: says migrate" "$T/err" 'migrate'
run -c "$CONF" check
eq "no schema: check exits 6" 6 "$RC"
has "no schema: check has a fail line" "$T/out" '^\[fail\] schema'
for cmd in "show k1" "forget k1" "forget --route /x --yes"; do
	# shellcheck disable=SC2086
	run -c "$CONF" $cmd
	eq "no schema: $cmd exits 6" 6 "$RC"
	has "no schema: $cmd says migrate" "$T/err" 'migrate'
	eq "no schema: $cmd, one line" 1 "$(lines "$T/err")"
done

# ---------------------------------------------------------------- migrate, check
NMIG=$(find "$ROOT/sql" -name '[0-9]*.sql' | wc -l)
run -c "$CONF" migrate
eq "migrate: exit 0" 0 "$RC"
has "migrate: says it applied" "$T/out" "applied $NMIG migration"
run -c "$CONF" migrate
eq "migrate twice: exit 0" 0 "$RC"
has "migrate twice: already current" "$T/out" 'already current'
eq "migrate twice: one schema row per migration" "$NMIG" "$(sq 'SELECT COUNT(*) FROM idem_schema')"
run -c "$CONF" check
eq "check: exit 0" 0 "$RC"
has "check: database ok" "$T/out" '^\[ ok \] database reachable'
has "check: privileges ok for the gateway" "$T/out" '^\[ ok \] privileges enough for gateway'
has "check: privileges ok for cleanup" "$T/out" '^\[ ok \] privileges enough for cleanup'
check "check: no fail lines" sh -c "! grep -q '^\[fail\]' '$T/out'"
check "check: the option file is kept from others: no word of it" sh -c "! grep -q 'mysql_defaults_file' '$T/out'"
# A copy every user may read: check warns, naming it; nothing fails.
cp "$TESTROOT/$DB.cnf" "$T/open.cnf" && chmod 0644 "$T/open.cnf"
mkconf "$T/open.conf" "$T/open.cnf" ""
run -c "$T/open.conf" check
eq "check, option file readable by others: exit 0" 0 "$RC"
has "... warns about it" "$T/out" "^\[warn\] mysql_defaults_file $T/open.cnf is readable by others \(mode 0644\)"
mkconf "$T/ro.conf" "$TESTROOT/$DB-ro.cnf" ""
# The config's group is the gateway's user: read-only, idemgate would
# answer 503 to every protected request.
run -c "$T/ro.conf" check
eq "check with a read-only gateway user: exit 9" 9 "$RC"
has "check with read-only user: the gateway fails, naming INSERT" "$T/out" '^\[fail\] privileges missing for gateway .*idem_keys:INSERT'
has "check with read-only user: console ok" "$T/out" '^\[ ok \] privileges enough for console'
has "check with read-only user: cleanup warned" "$T/out" '^\[warn\] privileges missing for cleanup .*idem_keys:DELETE'
run -c "$T/ro.conf" check --role console
eq "check --role console with read-only user: exit 0" 0 "$RC"
run -c "$T/ro.conf" check --role cleanup
eq "check --role cleanup with read-only user: exit 9" 9 "$RC"
has "check --role cleanup: fail line names DELETE" "$T/out" '^\[fail\] privileges missing for cleanup .*idem_keys:DELETE'
run -c "$CONF" check --role janitor
eq "check --role janitor: exit 1" 1 "$RC"
PKT=$(sq "SELECT @@max_allowed_packet")
run -c "$CONF" check
has "check: max_response fits max_allowed_packet" "$T/out" '^\[ ok \] max_allowed_packet'
mkconf "$T/bigresp.conf" "$TESTROOT/$DB.cnf" ""
printf 'max_response = %s\n' "$PKT" >>"$T/bigresp.conf"
run -c "$T/bigresp.conf" check
eq "check, max_response = max_allowed_packet: still exit 0 (a warning)" 0 "$RC"
has "check, max_response = max_allowed_packet: warns, names the route" "$T/out" '^\[warn\] max_response of route /payments'

# ---------------------------------------------------------------- cleanup batching
seed exp 2500 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
seed live 10 1 "NOW(6) + INTERVAL 1 DAY" "NOW(6) - INTERVAL 2 DAY"
seed busy 5 0 "NOW(6) + INTERVAL 1 DAY" "NOW(6) + INTERVAL 1 MINUTE"
seed busyexp 3 0 "NOW(6) - INTERVAL 1 MINUTE" "NOW(6) + INTERVAL 1 MINUTE"
seed tomb 4 2 "NOW(6) - INTERVAL 1 MINUTE" "NOW(6) - INTERVAL 2 DAY"
sq "INSERT INTO idem_counters (minute, host, route, requests) VALUES
    (NOW() - INTERVAL 8 DAY, 'gw1', '/payments', 1),
    (NOW() - INTERVAL 9 DAY, 'gw1', '/payments', 1),
    (NOW() - INTERVAL 10 DAY, 'gw1', '/payments', 1),
    (NOW() - INTERVAL 1 HOUR, 'gw1', '/old-but-kept', 1);
    INSERT INTO idem_cleanup_runs (host, started_at, ended_at, outcome)
    VALUES ('old', NOW(6) - INTERVAL 40 DAY, NOW(6) - INTERVAL 40 DAY, 'ok')"
run -c "$CONF" cleanup --batch 1000
eq "cleanup: exit 0" 0 "$RC"
eq "cleanup: quiet stdout" "" "$(cat "$T/out")"
eq "cleanup: quiet stderr" "" "$(cat "$T/err")"
eq "cleanup: expired rows gone" 0 "$(count exp)"
eq "cleanup: expired tombstones gone" 0 "$(count tomb)"
eq "cleanup: live rows kept" 10 "$(count live)"
eq "cleanup: in-progress rows with live lease kept" 5 "$(count busy)"
eq "cleanup: expired in-progress rows with live lease kept" 3 "$(count busyexp)"
R=$(sq "SELECT rows_deleted, stale_released, counters_pruned, batches, dry_run, outcome, host, ended_at IS NOT NULL FROM idem_cleanup_runs WHERE host <> 'old' ORDER BY id DESC LIMIT 1" | tr '\t' ' ')
eq "cleanup: run recorded (2504 rows, 3 batches of 1000)" "2504 0 3 3 0 ok testhost 1" "$R"
eq "cleanup: old counters pruned, recent kept" "1" "$(sq 'SELECT COUNT(*) FROM idem_counters')"
eq "cleanup: pruned counters folded into the totals" "gw1 /payments 3" "$(sq 'SELECT host, route, requests FROM idem_counters_total' | tr '\t' ' ')"
eq "cleanup: old run records pruned" 0 "$(sq "SELECT COUNT(*) FROM idem_cleanup_runs WHERE host = 'old'")"

# stale in-progress rows (lease passed more than stale_after = 1h ago)
seed stale 7 0 "NOW(6) + INTERVAL 1 DAY" "NOW(6) - INTERVAL 2 HOUR"
seed young 2 0 "NOW(6) + INTERVAL 1 DAY" "NOW(6) - INTERVAL 10 MINUTE"
# ... but not before the server has been up for the longest lease: a
# restart (or an outage) lapses live owners' leases too, and a live one
# renews within a lease once the server is back; its row, and the answer
# it still holds, must not go before that.  A route whose lease is longer
# than the server's uptime stands in for a server just restarted.
seed gonedone 3 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
seed goneexp 4 0 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 HOUR"
up=$(sq "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'")
mkconf "$T/young.conf" "$TESTROOT/$DB.cnf" ""
printf 'lease = %ss\n' "$((up + 3600))" >>"$T/young.conf"
run -c "$T/young.conf" cleanup --dry-run
has "server up less than a lease: a dry run counts no stale row" "$T/out" 'would delete 3 expired keys and 0 stale'
run -c "$T/young.conf" cleanup
eq "server up less than a lease: exit 0" 0 "$RC"
eq "server up less than a lease: stale rows kept" 7 "$(count stale)"
eq "server up less than a lease: expired rows in progress kept" 4 "$(count goneexp)"
eq "server up less than a lease: finished expired rows go" 0 "$(count gonedone)"
# (the server has been up a lease of 1 s: see below)
mkconf "$T/short.conf" "$TESTROOT/$DB.cnf" ""
printf '[idempotency]\nlease = 1s\n' >>"$T/short.conf"
run -c "$T/short.conf" -v cleanup --batch 5
eq "stale cleanup: exit 0" 0 "$RC"
has "--verbose: summary line" "$T/out" 'released 7 stale'
eq "stale rows released" 0 "$(count stale)"
eq "expired rows in progress released" 0 "$(count goneexp)"
eq "recently abandoned rows kept until stale_after" 2 "$(count young)"
eq "stale run recorded (and the 4 expired in progress)" "4 7 3" "$(sq "SELECT rows_deleted, stale_released, batches FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1" | tr '\t' ' ')"

# ---------------------------------------------------------------- dry run
seed dry 120 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
run -c "$CONF" cleanup --dry-run
eq "dry run: exit 0" 0 "$RC"
has "dry run: prints the count" "$T/out" 'would delete 120 expired keys'
eq "dry run: nothing deleted" 120 "$(count dry)"
eq "dry run: recorded as dry-run" "dry-run 1 120" "$(sq "SELECT outcome, dry_run, rows_deleted FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1" | tr '\t' ' ')"

# ---------------------------------------------------------------- named lock overlap
# lock_hold NAME: another session holds the named lock NAME for 4 s (BG)
lock_hold() {
	mariadb --no-defaults --socket="$MDB_SOCK" -uroot -N -B "$DB" \
		-e "SELECT GET_LOCK('$1', 0); SELECT SLEEP(4);" >/dev/null 2>&1 &
	BG=$!
	for i in $(seq 1 50); do
		[ "$(sq "SELECT IS_USED_LOCK('$1') IS NOT NULL")" = 1 ] && break
		sleep 0.1
	done
}
# The same name in another database is another store's: no wait.
lock_hold "idemgate-cleanup:${DB}_other"
run -c "$CONF" cleanup --dry-run
eq "another database's cleanup lock: no wait" 0 "$RC"
wait "$BG" 2>/dev/null
lock_hold "idemgate-cleanup:$DB"
run -c "$CONF" cleanup
eq "lock held: exit 4" 4 "$RC"
eq "lock held: exactly one line" "idemctl: cleanup already running on another connection" "$(cat "$T/err")"
eq "lock held: stdout empty" "" "$(cat "$T/out")"
eq "lock held: nothing deleted" 120 "$(count dry)"
wait "$BG" 2>/dev/null
BG=
for i in $(seq 1 50); do
	[ "$(sq "SELECT IS_USED_LOCK('idemgate-cleanup:$DB') IS NULL")" = 1 ] && break
	sleep 0.1
done
run -c "$CONF" cleanup
eq "lock free again: exit 0" 0 "$RC"
eq "lock free again: rows gone" 0 "$(count dry)"

# ---------------------------------------------------------------- lost to another transaction
# Cleanup's writes that lose a lock wait (or deadlock, or a Galera
# certification) applied nothing and are repeated: here its connection
# waits 1 s for a lock, and another transaction holds the run rows 1.6 s.
{ cat "$TESTROOT/$DB.cnf"; echo "init-command=SET SESSION innodb_lock_wait_timeout = 1"; } >"$T/wait1.cnf"
chmod 600 "$T/wait1.cnf"
mkconf "$T/wait1.conf" "$T/wait1.cnf" ""
seed lost 5 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
mariadb --no-defaults --socket="$MDB_SOCK" -uroot -N -B "$DB" -e "START TRANSACTION;
	SELECT COUNT(*) FROM idem_cleanup_runs FOR UPDATE; DO SLEEP(1.6); COMMIT" >/dev/null 2>&1 &
BG=$!
sleep 0.3
run -c "$T/wait1.conf" cleanup
wait "$BG" 2>/dev/null
BG=
eq "a run that lost a lock wait is repeated: exit 0" 0 "$RC"
eq "... quiet" "" "$(cat "$T/err")"
eq "... and it did its work" 0 "$(count lost)"
eq "... recorded ok" ok "$(sq "SELECT outcome FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1")"

# ---------------------------------------------------------------- rows that stay
# Rows past their expiry that may not go yet (unbounded runs whose owner
# died: run deadline 31 Dec 9999) are read without locks: a batch never
# waits on one of them, here held by another session 5 s while cleanup
# waits 1 s for a lock (and repeats 3 times), nor keeps a live key's
# renewal waiting.
seed stays 200 0 "NOW(6) - INTERVAL 2 DAY" "NOW(6) - INTERVAL 2 DAY"
sq "UPDATE idem_keys SET run_deadline = '9999-12-31 23:59:59' WHERE idem_key LIKE 'stays-%'"
seed walk 50 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
HELD=$(sq "SELECT id FROM idem_keys WHERE idem_key = 'stays-100'")
mariadb --no-defaults --socket="$MDB_SOCK" -uroot -N -B "$DB" -e "START TRANSACTION;
	SELECT id FROM idem_keys WHERE id = $HELD FOR UPDATE; DO SLEEP(5); COMMIT" >/dev/null 2>&1 &
BG=$!
sleep 0.3
start=$(date +%s%N)
run -c "$T/wait1.conf" cleanup --batch 20
took=$((($(date +%s%N) - start) / 1000000))
eq "rows that stay, one locked elsewhere: cleanup exit 0" 0 "$RC"
check "... without waiting for its lock (1 s, three times): ${took} ms" [ "$took" -lt 2000 ]
eq "... quiet" "" "$(cat "$T/err")"
eq "... the expired rows gone" 0 "$(count walk)"
eq "... the rows that stay kept" 200 "$(count stays)"
eq "... in batches of 20" "50 3" "$(sq "SELECT rows_deleted, batches FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1" | tr '\t' ' ')"
wait "$BG" 2>/dev/null
BG=
sq "DELETE FROM idem_keys WHERE idem_key LIKE 'stays-%'"

# ---------------------------------------------------------------- time limit
seed part 3000 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
start=$(date +%s%N)
run -c "$CONF" cleanup --batch 10 --sleep 100 --max-seconds 1
took=$((($(date +%s%N) - start) / 1000000))
eq "time limit: exit 0 (a normal outcome for cron)" 0 "$RC"
eq "time limit: quiet" "0 0" "$(lines "$T/err") $(lines "$T/out")"
check "time limit: stopped within 3 s (took $took ms)" [ "$took" -lt 3000 ]
left=$(count part)
check "time limit: some but not all rows deleted ($left left)" [ "$left" -gt 0 -a "$left" -lt 3000 ]
eq "time limit: recorded partial" "partial" "$(sq "SELECT outcome FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1")"
seed part2 3000 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
# the same in durations: 100ms between batches, 1s in all
start=$(date +%s%N)
run -c "$CONF" cleanup --batch 10 --sleep 100ms --max-seconds 1s
took=$((($(date +%s%N) - start) / 1000000))
read -r del nb <<<"$(sq "SELECT rows_deleted, batches FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1")"
check "durations: stopped within 3 s (took $took ms), some rows deleted ($del)" \
    [ "$RC" = 0 -a "$took" -lt 3000 -a "$del" -gt 0 -a "$del" -lt 5000 ]
check "durations: 100ms apart ($nb batches in 1 s, at most 11)" [ "$nb" -ge 1 -a "$nb" -le 11 ]
run -c "$CONF" cleanup --batch 10 --sleep 100 --max-seconds 1 -v
eq "time limit, -v: exit 0" 0 "$RC"
has "time limit, -v: says partial" "$T/out" 'partial'
run -c "$CONF" cleanup
eq "after partial: next run finishes" "0 0 0" "$RC $(count part) $(count part2)"
mkconf "$T/b7.conf" "$TESTROOT/$DB.cnf" "batch = 7"
seed cb 20 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
run -c "$T/b7.conf" cleanup
eq "[cleanup] batch = 7: 3 batches for 20 rows" "20 3" "$(sq "SELECT rows_deleted, batches FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1" | tr '\t' ' ')"
# Counters past their retention fold a batch of minutes at a time, each
# batch one transaction: a time limit stops between batches (not after a
# fold of them all), and the totals lose no count.
sq "INSERT INTO idem_counters (minute, host, route, requests)
    SELECT NOW() - INTERVAL 8 DAY - INTERVAL seq MINUTE, 'gwf', '/fold', 1 FROM seq_1_to_3000"
run -c "$CONF" cleanup --batch 10 --sleep 100 --max-seconds 1
eq "counters, time limit: exit 0" 0 "$RC"
left=$(sq "SELECT COUNT(*) FROM idem_counters WHERE host = 'gwf'")
check "counters, time limit: some but not all folded ($left left)" [ "$left" -gt 0 -a "$left" -lt 3000 ]
eq "counters, time limit: no count lost" 3000 "$(sq "SELECT $left + COALESCE(SUM(requests), 0) FROM idem_counters_total WHERE host = 'gwf'")"
eq "counters, time limit: partial, in the counters step" "partial 1" "$(sq "SELECT outcome, reason LIKE '%counter%' FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1" | tr '\t' ' ')"
run -c "$CONF" cleanup
eq "counters: the next run folds the rest" "0 0 3000" "$RC $(sq "SELECT COUNT(*) FROM idem_counters WHERE host = 'gwf'") $(sq "SELECT SUM(requests) FROM idem_counters_total WHERE host = 'gwf'")"
sq "UPDATE idem_cleanup_runs SET outcome = 'running', ended_at = NULL WHERE id = (SELECT MAX(id) FROM (SELECT id FROM idem_cleanup_runs) x)"
run -c "$CONF" cleanup
eq "a run left 'running' by a dead process is marked failed" "failed" "$(sq "SELECT outcome FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1,1")"
# A run killed -9 mid-way keeps the count of what it deleted, up to a
# second before (not 0).
seed kill9 3000 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
"$CTL" -c "$CONF" cleanup --batch 10 --sleep 100 >/dev/null 2>&1 &
kp=$!
recorded() { [ "$(sq "SELECT COUNT(*) FROM idem_cleanup_runs WHERE outcome = 'running' AND rows_deleted > 0")" -ge 1 ]; }
for i in $(seq 1 100); do recorded && break; sleep 0.1; done
sleep 0.3
kill -9 "$kp"
wait "$kp" 2>/dev/null
gone=$((3000 - $(count kill9)))
kid=$(sq "SELECT MAX(id) FROM idem_cleanup_runs")
rec=$(sq "SELECT rows_deleted FROM idem_cleanup_runs WHERE id = $kid")
check "killed run: it deleted rows ($gone)" [ "$gone" -gt 0 ]
check "killed run: recorded what it deleted up to a second before ($rec of $gone)" \
    [ "$rec" -gt 0 -a "$rec" -le "$gone" ]
run -c "$CONF" cleanup
eq "killed run: marked failed, its count kept" "failed $rec" \
    "$(sq "SELECT outcome, rows_deleted FROM idem_cleanup_runs WHERE id = $kid" | tr '\t' ' ')"

# A finished row past its expiry whose run deadline has not passed (an
# older build wrote expiries from the ttl alone; PHP may work on after
# its answer): cleanup leaves it, or a retry would run beside that run.
seed rundl 2 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 1 HOUR"
sq "UPDATE idem_keys SET run_deadline = IF(idem_key = 'rundl-1', NOW(6) + INTERVAL 1 HOUR, NOW(6) - INTERVAL 1 MINUTE) WHERE idem_key LIKE 'rundl-%'"
run -c "$CONF" cleanup
eq "cleanup: exit 0" 0 "$RC"
eq "cleanup: a finished row whose run may go on stays, the other goes" rundl-1 \
    "$(sq "SELECT idem_key FROM idem_keys WHERE idem_key LIKE 'rundl-%'")"
# An unbounded run's key ends in 9999: show says so (UNIX_TIMESTAMP stops
# at 2038).
sq "UPDATE idem_keys SET expires_at = '9999-12-31 23:59:59', run_deadline = '9999-12-31 23:59:59' WHERE idem_key = 'rundl-1'"
run -c "$CONF" show rundl-1
has "show: an expiry past 2038" "$T/out" '^expires +9999-12-31T23:59:59\.000Z$'
sq "DELETE FROM idem_keys WHERE idem_key LIKE 'rundl-%'"

# ---------------------------------------------------------------- show
sq "INSERT INTO idem_keys (scope, idem_key, route, method, fingerprint, state, owner, owner_token,
      waiters, created_at, lease_until, expires_at, completed_at, resp_status, resp_headers, resp_body, resp_size)
    VALUES (UNHEX('$NONE'), 'order-1', CONCAT('/pay', CHAR(10), 'ments'), 'POST', UNHEX(SHA2('x', 256)), 1,
      'gw1:42', 7, 0, '2024-05-01 12:00:00.250', '2024-05-01 12:01:00', NOW(6) + INTERVAL 1 DAY,
      '2024-05-01 12:00:01', 201, 'Content-Type: text/plain\r\n', UNHEX('00FF410A42'), 5),
    (UNHEX('$NONE'), 'order-2', '/payments', 'POST', UNHEX(SHA2('y', 256)), 0,
      'gw2:99', 8, 3, NOW(6), NOW(6) + INTERVAL 1 MINUTE, NOW(6) + INTERVAL 1 DAY,
      NULL, NULL, NULL, NULL, NULL),
    (UNHEX('$(scope_hex header:x-api-key s3cret)'), 'order-1', '/payments', 'POST', UNHEX(SHA2('z', 256)), 2,
      'gw1:42', 9, 0, NOW(6), NOW(6), NOW(6) + INTERVAL 1 DAY, NOW(6), 200, NULL, NULL, 9000000)"
run -c "$CONF" show order-1
eq "show: exit 0" 0 "$RC"
has "show: state" "$T/out" '^state +completed$'
has "show: route with newline escaped" "$T/out" '^route +/pay\\nments$'
has "show: fingerprint hex" "$T/out" "^fingerprint +$(printf x | sha256sum | cut -c1-64)\$"
has "show: created UTC ISO 8601" "$T/out" '^created +2024-05-01T12:00:00\.250Z$'
has "show: lease until" "$T/out" '^lease until +2024-05-01T12:01:00\.000Z$'
has "show: owner" "$T/out" '^owner +gw1:42$'
has "show: response status and size" "$T/out" '^response +status 201, 5 bytes$'
check "show: body not printed without --body" sh -c "! grep -q B '$T/out'"
run -c "$CONF" show '"order-1"' --body
printf '\000\377A\nB' >"$T/want"
check "show --body: raw bytes" cmp -s "$T/want" "$T/out"
# a body that cannot be written (a full disk): one line, exit 3
sq "INSERT INTO idem_keys (scope, idem_key, route, method, fingerprint, state, owner, owner_token,
      waiters, created_at, lease_until, expires_at, completed_at, resp_status, resp_headers, resp_body, resp_size)
    VALUES (UNHEX('$NONE'), 'order-big', '/payments', 'POST', UNHEX(SHA2('b', 256)), 1,
      'gw1:42', 10, 0, NOW(6), NOW(6), NOW(6) + INTERVAL 1 DAY, NOW(6), 200, '', REPEAT('b', 100000), 100000)"
"$CTL" -c "$CONF" show order-big --body >/dev/full 2>"$T/err"
eq "show --body to a full disk: exit 3, one line" "3 1" "$? $(lines "$T/err")"
run -c "$CONF" show order-2
has "show: in-progress" "$T/out" '^state +in-progress$'
has "show: waiters" "$T/out" '^waiters +3$'
# --body of a key with no answer to write is not an empty body: one line
# on stderr, nothing on stdout, and an exit that says which.
run -c "$CONF" show order-2 --body
eq "show --body, in progress: exit 8, nothing written" "8 0" "$RC $(wc -c <"$T/out" | tr -d ' ')"
eq "... one line" 1 "$(lines "$T/err")"
run -c "$CONF" show order-1 --scope header:X-Api-Key:s3cret --body
eq "show --body, a tombstone: exit 7, nothing written" "7 0" "$RC $(wc -c <"$T/out" | tr -d ' ')"
has "... says it has no stored body" "$T/err" 'no stored response body \(tombstone\)'
run -c "$CONF" show order-1 --scope header:X-Api-Key:s3cret
has "show --scope header: finds the scoped key" "$T/out" '^state +tombstone$'
has "show, a tombstone: its answer was not kept" "$T/out" '^response +not kept \(status 200, delivered once; retries get 410\)$'
# An owner gone past its lease whose run deadline is ahead (a PHP script
# may still run): no takeover yet, and show says so.
sq "INSERT INTO idem_keys (scope, idem_key, route, method, fingerprint, state, owner, owner_token,
      waiters, created_at, lease_until, run_deadline, expires_at)
    VALUES (UNHEX('$NONE'), 'order-5', '/payments', 'POST', UNHEX(SHA2('w', 256)), 0,
      'gw3:7', 10, 0, NOW(6), NOW(6) - INTERVAL 1 SECOND, NOW(6) + INTERVAL 1 HOUR, NOW(6) + INTERVAL 1 DAY),
    (UNHEX('$NONE'), 'order-6', '/payments', 'POST', UNHEX(SHA2('v', 256)), 0,
      'gw3:7', 11, 0, NOW(6), NOW(6) - INTERVAL 2 SECOND, NOW(6) - INTERVAL 1 SECOND, NOW(6) + INTERVAL 1 DAY)"
run -c "$CONF" show order-5
has "show: lease passed, run deadline ahead: no takeover yet" "$T/out" '^state +in-progress \(lease passed, run deadline not: its run may still be going; retries wait or get 409 until then\)$'
run -c "$CONF" show order-6
has "show: lease and run deadline passed: the next request takes over" "$T/out" '^state +in-progress \(lease passed: owner gone, next request takes over\)$'
check "show --scope header: value not printed" sh -c "! grep -q s3cret '$T/out'"
run -c "$CONF" show order-1 --scope remote_user:alice
eq "show: other scope: exit 7" 7 "$RC"
eq "show: no such key line" "idemctl: no such key" "$(cat "$T/err")"
run -c "$CONF" show nope
eq "show missing key: exit 7" 7 "$RC"

# ---------------------------------------------------------------- forget
run -c "$CONF" forget order-2
eq "forget in-progress: exit 8" 8 "$RC"
eq "forget in-progress: one line" 1 "$(lines "$T/err")"
eq "forget in-progress: row kept" 1 "$(count order-2 | sed 's/.*//;s/^$/x/' >/dev/null; sq "SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'order-2'")"
run -c "$CONF" forget order-2 --force
eq "forget --force: exit 0" 0 "$RC"
eq "forget --force: row gone" 0 "$(sq "SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'order-2'")"
# An abandoned row (lease lapsed, run over, no owner holds its lock) goes
# unforced, once the server has been up the longest lease (young.conf's
# outlasts the server's uptime: a server just restarted).
sq "INSERT INTO idem_keys (scope, idem_key, route, method, fingerprint, state, owner, owner_token,
      created_at, lease_until, expires_at, run_deadline)
    VALUES (UNHEX('$NONE'), 'order-3', '/payments', 'POST', UNHEX(SHA2('w', 256)), 0,
      'gw2:99', 8, NOW(6) - INTERVAL 1 HOUR, NOW(6) - INTERVAL 1 HOUR, NOW(6) + INTERVAL 1 DAY,
      NOW(6) - INTERVAL 1 HOUR)"
run -c "$T/young.conf" forget order-3
eq "forget abandoned, server up less than a lease: exit 8" 8 "$RC"
run -c "$T/short.conf" forget order-3
eq "forget abandoned: exit 0" 0 "$RC"
eq "forget abandoned: row gone" 0 "$(sq "SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'order-3'")"
run -c "$CONF" forget order-1
eq "forget completed: exit 0" 0 "$RC"
eq "forget: only the unscoped row gone" 1 "$(sq "SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'order-1'")"
run -c "$CONF" forget order-1
eq "forget again: exit 7" 7 "$RC"
run -c "$CONF" forget order-1 --body
eq "forget --body: exit 1" 1 "$RC"

# ---------------------------------------------------------------- stats
sq "DELETE FROM idem_counters;
    INSERT INTO idem_counters (minute, host, route, requests, created, reused, mismatched, conflicted,
      waited, released, tombstoned, store_errors, missing_key, invalid_key, passthrough, wait_sum_ms,
      wait_b0, wait_b1, wait_b2, wait_b3, wait_b4, wait_b5, wait_b6, wait_b7, wait_b8, wait_b9) VALUES
    (NOW() - INTERVAL 5 MINUTE, 'gw1', '/payments', 100, 60, 40, 2, 1, 10, 3, 1, 0, 4, 5, 50, 1234,
      5, 3, 1, 0, 0, 0, 0, 0, 0, 1),
    (NOW() - INTERVAL 5 MINUTE, 'gw2', '/payments', 100, 80, 20, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    (NOW() - INTERVAL 2 MINUTE, 'gw1', '/orders\"x', 10, 10, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 700,
      0, 0, 0, 0, 1, 1, 0, 0, 0, 0),
    (NOW() - INTERVAL 3 HOUR, 'gw1', '/payments', 1000, 1000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0)"
run -c "$CONF" stats
eq "stats: exit 0" 0 "$RC"
has "stats: header" "$T/out" '^ROUTE +REQUESTS +CREATED +REUSED +REUSE% +422 +409 +WAITS +P50 +P95 +P99'
has "stats: /payments row (last hour only)" "$T/out" '^/payments +200 +140 +60 +30\.0 +2 +1 +10 +10ms +>10s +>10s +3 +1 +1 +4 +5 +0$'
has "stats: total row" "$T/out" '^TOTAL +210 +150 +60 '
w=$(grep -v '^(' "$T/out" | awk '{print length($0)}' | sort -u | wc -l)
eq "stats: aligned (all lines equally wide)" 1 "$w"
has "stats: says recent counts may lag (counters_flush)" "$T/out" '^\(each gateway worker adds its counts every 5000 ms'

run -c "$CONF" stats --since 6h --route /payments --format tsv
has "stats tsv: header" "$T/out" "^route	requests	created	reused	reuse_pct	"
has "stats tsv: --since 6h and --route" "$T/out" "^/payments	1200	1140	60	5\.0	"
eq "stats tsv: 3 lines" 3 "$(lines "$T/out")"
run -c "$CONF" stats --format json
check "stats json: valid JSON" python3 -m json.tool "$T/out" /dev/null
got=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
t=d["total"]; r={x["route"]:x for x in d["routes"]}
print(t["requests"], t["reused"], r["/payments"]["reuse_pct"], r["/payments"]["wait_p99_ms"], r["/orders\"x"]["wait_p50_ms"], sorted(r))' "$T/out")
eq "stats json: values" "210 60 30.0 +Inf 500 ['/orders\"x', '/payments']" "$got"
run -c "$CONF" stats --format xml
eq "stats --format xml: exit 1" 1 "$RC"
run -c "$CONF" stats --since soon
eq "stats --since soon: exit 1" 1 "$RC"

# ---------------------------------------------------------------- metrics
# A cleanup stopped at --max-seconds having deleted rows is a normal
# outcome for cron: the success gauges count it; a failed run after it
# does not (t_cleanup_lag: one that deleted nothing does not either).
metric() { sed -n "s/^$1 //p" "$T/out"; }
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d < 0.002 && d > -0.002) }'; }
seed partm 300 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
run -c "$CONF" cleanup --max-seconds 1 --batch 10 --sleep 300
eq "cleanup stopped at its time limit: exit 0, quiet" "0 " "$RC $(cat "$T/out" "$T/err")"
pend=$(sq "SELECT outcome, rows_deleted > 0, UNIX_TIMESTAMP(ended_at) FROM idem_cleanup_runs ORDER BY id DESC LIMIT 1" | tr '\t' ' ')
run -c "$CONF" metrics
eq "metrics after a partial cleanup that deleted rows: success 1" "partial 1 1" \
    "${pend% *} $(metric idemgate_last_cleanup_success)"
check "... its end is the last success" near "${pend##* }" "$(metric idemgate_last_cleanup_success_timestamp_seconds)"
check "... under both names" near "${pend##* }" "$(metric idemgate_last_successful_cleanup_timestamp_seconds)"
sq "INSERT INTO idem_cleanup_runs (host, started_at, ended_at, outcome, reason) VALUES ('testhost', NOW(6), NOW(6), 'failed', 'test')"
run -c "$CONF" metrics
eq "metrics after a failed cleanup: success 0" 0 "$(metric idemgate_last_cleanup_success)"
check "... the last success kept" near "${pend##* }" "$(metric idemgate_last_cleanup_success_timestamp_seconds)"
sq "DELETE FROM idem_keys WHERE idem_key LIKE 'partm-%'"
run -c "$CONF" metrics
eq "metrics: exit 0" 0 "$RC"
cat >"$T/prom.py" <<'PY'
# A small parser for the Prometheus text format 0.0.4; prints one PASS/FAIL line per check.
import re, sys
lines = open(sys.argv[1]).read().split("\n")
ok = True
def bad(msg):
    global ok
    ok = False
    print("FAIL: idemctl: metrics: " + msg)
types, helps, samples = {}, set(), []
sample_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')
for ln in lines:
    if ln == "":
        continue
    if ln.startswith("# HELP "):
        helps.add(ln.split(" ")[2]); continue
    if ln.startswith("# TYPE "):
        p = ln.split(" ")
        if p[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
            bad("bad type " + ln)
        if p[2] in types:
            bad("TYPE twice " + p[2])
        types[p[2]] = p[3]; continue
    if ln.startswith("#"):
        continue
    m = sample_re.match(ln)
    if not m:
        bad("unparsable line %r" % ln); continue
    name, lab, val = m.group(1), m.group(3) or "", m.group(4)
    labels = {}
    pos = 0
    while pos < len(lab):
        lm = label_re.match(lab, pos)
        if not lm:
            bad("bad labels %r" % ln); break
        labels[lm.group(1)] = re.sub(r'\\(.)', lambda x: {'n': '\n'}.get(x.group(1), x.group(1)), lm.group(2))
        pos = lm.end()
    try:
        v = float(val)
    except ValueError:
        bad("bad value %r" % ln); continue
    samples.append((name, labels, v))
def family(n):
    for suf in ("_bucket", "_sum", "_count"):
        if n.endswith(suf) and types.get(n[:-len(suf)]) == "histogram":
            return n[:-len(suf)]
    return n
for n, l, v in samples:
    f = family(n)
    if f not in types:
        bad("no TYPE for " + n)
    if f not in helps:
        bad("no HELP for " + n)
    if types.get(f) == "counter" and not n.endswith("_total"):
        bad("counter without _total " + n)
    if "key" in l or "idem_key" in l:
        bad("per-key label " + n)
print(("PASS" if ok else "FAIL") + ": idemctl: metrics: every line parses, every metric has HELP and TYPE")
# histograms: cumulative, monotone, +Inf == _count
hok = True
# one histogram per gateway host and route
routes = sorted({(l.get("host", ""), l["route"]) for n, l, v in samples if n == "idemgate_wait_seconds_bucket"})
if any("host" not in l for n, l, v in samples if n.startswith("idemgate_requests_total")):
    routes = []
    print("FAIL: idemctl: metrics: counters without a host label")
for r in routes:
    same = lambda l: (l.get("host", ""), l["route"]) == r
    bk = [(l["le"], v) for n, l, v in samples if n == "idemgate_wait_seconds_bucket" and same(l)]
    les = [float(x[0]) for x in bk]
    vals = [x[1] for x in bk]
    cnt = [v for n, l, v in samples if n == "idemgate_wait_seconds_count" and same(l)]
    if les != sorted(les) or les[-1] != float("inf") or vals != sorted(vals) or not cnt or cnt[0] != vals[-1]:
        hok = False
        print("FAIL: idemctl: metrics: histogram for %r: %r count %r" % (r, bk, cnt))
print(("PASS" if hok and routes else "FAIL") + ": idemctl: metrics: wait histogram buckets cumulative, monotone, +Inf == _count")
def val(n, **lab):  # summed over the labels not given (the hosts)
    m = [s[2] for s in samples if s[0] == n and all(s[1].get(k) == v for k, v in lab.items())]
    return sum(m) if m else None
want = {
    ("idemgate_requests_total", "/payments"): 1203,  # + 3 folded by cleanup
    ("idemgate_reused_total", "/payments"): 60,
    ("idemgate_mismatched_total", "/payments"): 2,
    ("idemgate_conflicted_total", "/payments"): 1,
    ("idemgate_requests_total", '/orders"x'): 10,
}
vok = all(val(n, route=r) == v for (n, r), v in want.items())
vok = vok and val("idemgate_wait_seconds_bucket", route="/payments", le="0.01") == 5
vok = vok and val("idemgate_wait_seconds_bucket", route="/payments", le="+Inf") == 10
vok = vok and abs(val("idemgate_wait_seconds_sum", route="/payments") - 1.234) < 1e-9
vok = vok and val("idemgate_keys_rows", state="tombstone") is not None
vok = vok and val("idemgate_last_cleanup_success") in (0, 1)
vok = vok and val("idemgate_last_cleanup_timestamp_seconds") > 1.6e9
print(("PASS" if vok else "FAIL") + ": idemctl: metrics: values (escaped route label, totals, histogram, gauges)")
PY
python3 "$T/prom.py" "$T/out"
# The same text through Prometheus' own parser (python3-prometheus-client):
# one "TYPE name" line per family, then "sample value" lines.  Debian's
# python3 (the module is a Debian package), whatever python3 is first in PATH.
promparse() {
	/usr/bin/python3 - "$1" <<'PY' 2>&1
import sys
from prometheus_client.parser import text_string_to_metric_families
try:
    for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
        print(fam.type, fam.name)
        for s in fam.samples:
            print(s.name + "{" + ",".join("%s=%s" % kv for kv in sorted(s.labels.items())) + "}", s.value)
except Exception as e:
    print("ERROR", type(e).__name__, e)
PY
}
parsed() { ! grep -q "^ERROR" "$1"; }
cp "$T/out" "$T/up.prom"
promparse "$T/up.prom" >"$T/pp"
check "prometheus_client parses the textfile" parsed "$T/pp"
has "prometheus_client: requests_total is a counter" "$T/pp" '^counter idemgate_requests$'
has "prometheus_client: store_up is a gauge, 1" "$T/pp" '^idemgate_store_up\{\} 1\.0$'
has "prometheus_client: wait histogram" "$T/pp" '^histogram idemgate_wait_seconds$'
has "prometheus_client: route label read back" "$T/pp" '^idemgate_requests_total\{.*route=/payments'
expect_store_up() { grep -qx "idemgate_store_up $1" "$T/out"; }
check "metrics: idemgate_store_up 1" expect_store_up 1
run -c "$T/down.conf" metrics
eq "metrics, database down: exit 0 (the file is still written)" 0 "$RC"
check "metrics, database down: idemgate_store_up 0" expect_store_up 0
has "metrics, database down: HELP and TYPE" "$T/out" '^# TYPE idemgate_store_up gauge$'
eq "metrics, database down: one line on stderr" 1 "$(lines "$T/err")"
promparse "$T/out" >"$T/pp"
check "prometheus_client parses the database-down file" parsed "$T/pp"
has "prometheus_client: store_up 0 while the database is down" "$T/pp" '^idemgate_store_up\{\} 0\.0$'
check "metrics: textfile-collector style redirect works" sh -c "'$CTL' -c '$CONF' metrics > '$T/m.prom.tmp' && mv '$T/m.prom.tmp' '$T/m.prom' && [ -s '$T/m.prom' ]"

# idemgate_keys_expired counts what cleanup may delete: not the rows past
# their expiry whose run may still go on (an unbounded run's row).
expired_now() { "$CTL" -c "$CONF" metrics | awk '$1 == "idemgate_keys_expired" { print $2 }'; }
e0=$(expired_now)
seed mstay 5 0 "NOW(6) - INTERVAL 2 DAY" "NOW(6) - INTERVAL 2 DAY"
sq "UPDATE idem_keys SET run_deadline = '9999-12-31 23:59:59' WHERE idem_key LIKE 'mstay-%'"
eq "metrics: expired rows that may not go yet are not counted" "$e0" "$(expired_now)"
seed mgo 3 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
eq "metrics: expired rows cleanup may delete are" "$((e0 + 3))" "$(expired_now)"
sq "DELETE FROM idem_keys WHERE idem_key LIKE 'mstay-%' OR idem_key LIKE 'mgo-%'"

# One config, one user per job: --mysql-group picks the option-file group.
{ printf '[idemgate]\nsocket=%s\nuser=idem\npassword=wrong\ndatabase=%s\n' "$MDB_SOCK" "$DB"
  sed 's/^\[idemgate\]$/[idem_console]/' "$TESTROOT/$DB.cnf"; } >"$T/groups.cnf"
chmod 600 "$T/groups.cnf"
mkconf "$T/groups.conf" "$T/groups.cnf" ""
run -c "$T/groups.conf" show no-such-key
eq "mysql group: [gateway]'s group (a wrong password) fails: exit 3" 3 "$RC"
run -c "$T/groups.conf" --mysql-group idem_console show no-such-key
eq "mysql group: --mysql-group idem_console logs in (no such key: 7)" 7 "$RC"
IDEMTOP=$(dirname "$CTL")/idemtop
"$IDEMTOP" -c "$T/groups.conf" -g idem_console -b >"$T/top.out" 2>&1
eq "mysql group: idemtop -g idem_console reads the store" 0 "$?"

# Counters never go down: cleanup folds the rows it prunes into totals.
sq "INSERT INTO idem_counters (minute, host, route, requests, reused, wait_sum_ms, wait_b0) VALUES
    (NOW() - INTERVAL 9 DAY, 'gw1', '/payments', 500, 7, 11, 3),
    (NOW() - INTERVAL 8 DAY, 'gw2', '/payments', 25, 0, 0, 0)"
# metric NAME ROUTE: summed over the gateway hosts
metric() { "$CTL" -c "$CONF" metrics | awk -v n="$1" -v r="$2" '$1 ~ "^" n "\\{host=\"[^\"]*\",route=\"" r "\"" { s += $2 } END { printf "%d", s }'; }
before=$(metric idemgate_requests_total /payments)
before_b=$(metric idemgate_wait_seconds_count /payments)
run -c "$CONF" cleanup
eq "fold: cleanup exit 0" 0 "$RC"
eq "fold: old counter rows pruned" 0 "$(sq "SELECT COUNT(*) FROM idem_counters WHERE minute < NOW() - INTERVAL 7 DAY")"
eq "fold: requests_total did not go down ($before)" "$before" "$(metric idemgate_requests_total /payments)"
eq "fold: the wait histogram neither" "$before_b" "$(metric idemgate_wait_seconds_count /payments)"
"$CTL" -c "$CONF" metrics >"$T/after.prom"
eq "fold: prometheus_client reads the same requests_total" "$before" \
	"$(promparse "$T/after.prom" | awk '/^idemgate_requests_total\{.*route=\/payments[,}]/ { s += $2 } END { printf "%d", s }')"
eq "fold: totals kept per host" "gw1 503 gw2 25" "$(sq "SELECT host, requests FROM idem_counters_total WHERE route = '/payments' ORDER BY host" | tr '\t\n' '  ' | sed 's/ $//')"
per_host=$(sq "SELECT host, SUM(requests) FROM (SELECT host, requests FROM idem_counters WHERE route = '/payments' UNION ALL SELECT host, requests FROM idem_counters_total WHERE route = '/payments') x GROUP BY host ORDER BY host" | tr '\t\n' '  ' | sed 's/ $//')
eq "metrics: one series per host, the folded totals in it ($per_host)" "$per_host" \
	"$(sed -n 's/^idemgate_requests_total{host="\([^"]*\)",route="\/payments",kind="http"} \([0-9]*\)$/\1 \2/p' "$T/after.prom" | tr '\n' ' ' | sed 's/ $//')"
run -c "$CONF" stats --since 1h --format tsv
has "fold: stats over a window leave totals out" "$T/out" '^/payments	200	'

# ---------------------------------------------------------------- speed (measured, not asserted)
N=${IDEMCTL_SPEED_ROWS:-200000}
sq "DELETE FROM idem_keys"
seed speed "$N" 1 "NOW(6) - INTERVAL 1 HOUR" "NOW(6) - INTERVAL 2 DAY"
start=$(date +%s%N)
run -c "$CONF" cleanup
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -gt 0 ] || ms=1
echo "cleanup speed: $N expired rows in $ms ms = $((N * 1000 / ms)) rows/s (batch 1000)"
eq "speed run: all rows gone" "0 0" "$RC $(count speed)"

mariadb --no-defaults --socket="$MDB_SOCK" -uroot -e "DROP DATABASE $DB" >/dev/null 2>&1
exit $((FAILS > 0))
