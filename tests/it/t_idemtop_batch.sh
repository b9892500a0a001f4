#!/bin/bash
# idemtop batch mode against seeded counters, keys and cleanup runs: numbers, screens, exit codes.
. "$(dirname "$0")/../lib/harness.sh"

IDEMTOP="$IDEM_BUILD/idemtop"
[ -x "$IDEMTOP" ] || { not_ok "idemtop is built" "$IDEMTOP missing"; done_testing; exit 1; }

db_new it_idemtop_batch || { done_testing; exit 1; }
DB=it_idemtop_batch
RO="$T/$DB-ro.cnf"

# The read-only user is enough for the console.
cat >"$T/top.conf" <<EOF
[gateway]
listen = unix:$T/unused.sock
mysql_defaults_file = $RO

[console]
refresh = 1s
cleanup_warn_after = 2h
EOF

# Minutes relative to the database clock: 2 and 3 minutes ago stay inside
# the 5 m window even if the minute turns while the test runs.
M2="DATE_FORMAT(NOW() - INTERVAL 2 MINUTE, '%Y-%m-%d %H:%i:00')"
M3="DATE_FORMAT(NOW() - INTERVAL 3 MINUTE, '%Y-%m-%d %H:%i:00')"
db_query "$DB" "
INSERT INTO idem_counters (minute, host, route, requests, created, reused,
  mismatched, conflicted, waited, released, store_errors, wait_sum_ms,
  wait_b0, wait_b5) VALUES
 ($M2, 'gw1', '/pay', 100, 60, 40, 3, 2, 7, 1, 0, 2100, 5, 2),
 ($M2, 'gw2', '/pay', 100, 80, 20, 1, 0, 7, 2, 4, 3000, 3, 4),
 ($M3, 'gw1', '/orders', 50, 40, 10, 0, 1, 0, 0, 0, 0, 0, 0);
INSERT INTO idem_keys (scope, idem_key, route, method, fingerprint, state,
  owner, owner_token, waiters, created_at, lease_until, expires_at) VALUES
 (UNHEX(SHA2('s1',256)), 'order-12345-xy', '/pay', 'POST', UNHEX(SHA2('f',256)),
  0, 'gw1.example:4242', 1, 3, NOW(6) - INTERVAL 90 SECOND,
  NOW(6) - INTERVAL 10 SECOND, NOW(6) + INTERVAL 1 DAY),
 (UNHEX(SHA2('s1',256)), CONCAT('ab', CHAR(1), 'cdefgzz'), CONCAT('/ord', CHAR(27), 'x'),
  'POST', UNHEX(SHA2('f',256)), 0, 'gw2.example:77', 2, 2,
  NOW(6) - INTERVAL 5 SECOND, NOW(6) + INTERVAL 55 SECOND, NOW(6) + INTERVAL 1 DAY),
 (UNHEX(SHA2('s2',256)), 'done-key-0001', '/pay', 'POST', UNHEX(SHA2('f',256)),
  1, 'gw1.example:4242', 3, 0, NOW(6) - INTERVAL 1 HOUR,
  NOW(6) - INTERVAL 1 HOUR, NOW(6) + INTERVAL 1 DAY);
INSERT INTO idem_cleanup_runs (host, started_at, ended_at, rows_deleted,
  stale_released, batches, outcome, reason) VALUES
 ('cron-a', NOW(6) - INTERVAL 3 HOUR, NOW(6) - INTERVAL 3 HOUR + INTERVAL 4 SECOND,
  12345, 6, 13, 'ok', ''),
 ('cron-b', NOW(6) - INTERVAL 10 MINUTE, NOW(6) - INTERVAL 9 MINUTE,
  0, 0, 1, 'failed', 'lock wait timeout'),
 ('cron-c', NOW(6) - INTERVAL 2 HOUR, NULL,
  500, 0, 5, 'failed', 'interrupted (process died or lost its connection)');
" || { not_ok "seed rows"; done_testing; exit 1; }

# ---- overview
out=$(TZ=UTC "$IDEMTOP" -b -n 1 -c "$T/top.conf" 2>"$T/err1.txt"); rc=$?
expect_eq "overview: exit 0" 0 "$rc"
expect_eq "overview: nothing on stderr" "" "$(cat "$T/err1.txt")"
"$IDEMTOP" -b -n 1 -g '' -c "$T/top.conf" >"$T/g.out" 2>"$T/g.err"
expect_eq "-g '' (a variable left unset): exit 1, one line, no snapshot" "1 1 0" \
    "$? $(wc -l <"$T/g.err" | tr -d ' ') $(wc -c <"$T/g.out" | tr -d ' ')"
# A snapshot lost on a full disk is not a success for cron: exit 3, one line.
TZ=UTC "$IDEMTOP" -b -n 2 -d 0.1 -c "$T/top.conf" >/dev/full 2>"$T/errfull.txt"
expect_eq "snapshot to a full disk: exit 3, one line" "3 1" "$? $(wc -l <"$T/errfull.txt" | tr -d ' ')"
expect_match "... saying so" '^idemtop: writing output failed' "$(cat "$T/errfull.txt")"
expect_match "overview: header with the time" '^idemtop [0-9.]+  [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}  screen 1 Overview' "$(head -1 <<<"$out")"
expect_match "overview: 5m reuse 28.0% (70/250)" 'Fleet reuse: now [^ ]+  1m [^ ]+  5m 28\.0%  1h 28\.0%' "$out"
expect_match "overview: requests row (1h 250)" '^ requests +[0-9]+ +[0-9]+ +250 +250$' "$out"
expect_match "overview: reused row (1h 70)" '^ reused +[0-9]+ +[0-9]+ +70 +70$' "$out"
expect_match "overview: 422 row (1h 4)" '^ 422 mismatch .* 4 +4$' "$out"
expect_match "overview: 409 row (1h 3)" '^ 409 conflict .* 3 +3$' "$out"
expect_match "overview: waits row (1h 14)" '^ waits .* 14 +14$' "$out"
expect_match "overview: released row (1h 3)" '^ released .* 3 +3$' "$out"
expect_match "overview: store errors row (1h 4)" '^ store errors .* 4 +4$' "$out"
expect_match "overview: keys in progress and waiting" 'In progress now: 2 keys, waiting now: 5 requests, oldest 1m3[0-9]s' "$out"
expect_match "overview: last cleanup failed" 'Last cleanup: .*failed, 0 rows deleted' "$out"
expect_match "overview: stale cleanup warning" 'WARNING: no successful cleanup for (2h59m|3h00m) \(warn after 2h00m\)' "$out"
expect_match "overview: greppable reuse" 'reuse' "$out"
expect_match "overview: greppable waits" 'waits|waiting' "$out"
expect_match "overview: greppable cleanup" 'cleanup' "$out"
expect_nomatch "overview: no escape codes" $'\x1b' "$out"

# ---- in progress
out=$("$IDEMTOP" -b -n 1 --screen 2 -c "$T/top.conf" 2>&1); rc=$?
expect_eq "in progress: exit 0" 0 "$rc"
expect_match "in progress: masked key, oldest first" '^ orde\*{8}xy ' "$(sed -n 4p <<<"$out")"
expect_match "in progress: control bytes escaped" 'ab\\x01c\*{4}zz +[0-9a-f]{8} +/ord\\x1bx ' "$out"
expect_match "in progress: owner host, age, expired lease, waiters" 'gw1\.example +1m3[0-9]s +-1[0-9]s +3$' "$out"
expect_nomatch "in progress: completed keys not listed" 'done' "$out"
expect_nomatch "in progress: no raw control bytes" $'[\x01\x1b]' "$out"
expect_match "in progress: summary" '2 keys in progress, 5 requests waiting, oldest 1m3[0-9]s, 1 past lease' "$out"

# ---- routes
out=$("$IDEMTOP" -b -n 1 --screen 3 -c "$T/top.conf" 2>&1); rc=$?
expect_eq "routes: exit 0" 0 "$rc"
expect_match "routes: /pay numbers" '^ /pay +200 +30\.0% +4 +2 +14 +<=10ms +<=1s +3$' "$out"
expect_match "routes: /orders numbers" '^ /orders +50 +20\.0% +0 +1 +0 +- +- +0$' "$out"
expect_match "routes: busiest first" '/pay' "$(sed -n 4p <<<"$out")"

# ---- cleanup jobs
out=$(TZ=UTC "$IDEMTOP" -b -n 1 --screen 4 -c "$T/top.conf" 2>&1); rc=$?
expect_eq "cleanup: exit 0" 0 "$rc"
expect_match "cleanup: warning line" 'WARNING: no successful cleanup for (2h59m|3h00m)' "$out"
expect_match "cleanup: failed run with reason, newest first" '^ cron-b .* 1m00s +0 +0 +1 failed +lock wait timeout$' "$(sed -n 4p <<<"$out")"
expect_match "cleanup: ok run" '^ cron-a .* 4s +12345 +6 +13 ok$' "$out"
expect_match "cleanup: a run that died, its end not known: no duration that grows" '^ cron-c .* \? +500 +0 +5 failed +interrupted' "$out"
# A run still marked running: alive while a session holds the cleanup
# lock, gone (killed -9, before the next run marks it) when none does.
db_query "$DB" "INSERT INTO idem_cleanup_runs (host, started_at, ended_at,
  rows_deleted, stale_released, batches, outcome, reason) VALUES
 ('cron-d', NOW(6) - INTERVAL 30 MINUTE, NULL, 70, 0, 1, 'running', '')"
out=$(TZ=UTC "$IDEMTOP" -b -n 1 --screen 4 -c "$T/top.conf" 2>&1)
expect_match "cleanup: a running run no one holds the lock of: gone" \
	'^ cron-d .* \? +70 +0 +1 failed +gone: no run holds the cleanup lock' "$out"
h_sqlroot "$DB" -e "SELECT GET_LOCK('idemgate-cleanup:$DB', 5); DO SLEEP(4)" >/dev/null 2>&1 &
LOCKER=$!
wait_until 3 sh -c "mariadb --no-defaults --socket='$MDB_SOCK' -uroot -N -B -e \"SELECT IS_USED_LOCK('idemgate-cleanup:$DB') IS NOT NULL\" | grep -q 1"
out=$(TZ=UTC "$IDEMTOP" -b -n 1 --screen 4 -c "$T/top.conf" 2>&1)
expect_match "cleanup: ... and running while its lock is held" '^ cron-d .* +70 +0 +1 running *$' "$out"
wait "$LOCKER"
db_query "$DB" "DELETE FROM idem_cleanup_runs WHERE host = 'cron-d'"

# ---- several snapshots
out=$("$IDEMTOP" -b -n 2 -d 0.2 -c "$T/top.conf" 2>&1); rc=$?
expect_eq "two snapshots: exit 0" 0 "$rc"
expect_eq "two snapshots: two headers" 2 "$(grep -c '^idemtop .* screen 1 Overview' <<<"$out")"
expect_eq "two snapshots: separated by a blank line" 1 "$(grep -B1 '^idemtop ' <<<"$out" | grep -c '^$')"

# ---- automatic batch when stdout is not a terminal
out=$("$IDEMTOP" -c "$T/top.conf" </dev/null 2>&1 | cat); rc=${PIPESTATUS[0]}
expect_eq "not a terminal: batch, exit 0" 0 "$rc"
expect_match "not a terminal: one overview snapshot" 'Fleet reuse' "$out"

# ---- flags and errors
"$IDEMTOP" -h >"$T/help.txt" 2>&1; rc=$?
expect_eq "-h exits 0" 0 "$rc"
expect_match "-h shows usage" 'usage: idemtop' "$(cat "$T/help.txt")"
expect_match "--version" '^idemtop [0-9]' "$("$IDEMTOP" --version)"
err=$("$IDEMTOP" --bogus 2>&1 >/dev/null); rc=$?
expect_eq "bad flag: exit 1" 1 "$rc"
expect_eq "bad flag: one line" 1 "$(printf '%s\n' "$err" | wc -l)"
err=$("$IDEMTOP" -b -n zero -c "$T/top.conf" 2>&1 >/dev/null); rc=$?
expect_eq "bad -n: exit 1" 1 "$rc"
err=$("$IDEMTOP" -b -n 1 -c "$T/missing.conf" 2>&1 >/dev/null); rc=$?
expect_eq "missing config: exit 2" 2 "$rc"
expect_eq "missing config: one line" 1 "$(printf '%s\n' "$err" | wc -l)"
printf '[gateway]\nbogus_key = 1\n' >"$T/bad.conf"
err=$("$IDEMTOP" -b -n 1 -c "$T/bad.conf" 2>&1 >/dev/null); rc=$?
expect_eq "bad config: exit 2" 2 "$rc"

# ---- what counts as a successful cleanup: the rule idemctl metrics uses
# A run stopped at --max-seconds that deleted nothing, and a dry run that
# stopped there, do not clear the warning ...
db_query "$DB" "
INSERT INTO idem_cleanup_runs (host, started_at, ended_at, rows_deleted,
  stale_released, batches, outcome, reason, dry_run) VALUES
 ('cron-d', NOW(6) - INTERVAL 20 MINUTE, NOW(6) - INTERVAL 19 MINUTE,
  0, 0, 1, 'partial', 'time limit of 60000 ms reached during expired rows', 0),
 ('cron-e', NOW(6) - INTERVAL 8 MINUTE, NOW(6) - INTERVAL 7 MINUTE,
  900, 0, 1, 'partial', 'time limit of 60000 ms reached during expired rows', 1);
" || not_ok "seed runs that did not succeed"
out=$(TZ=UTC "$IDEMTOP" -b -n 1 -c "$T/top.conf" 2>&1)
expect_match "a partial run that deleted nothing, a dry run: still warned" \
    'WARNING: no successful cleanup for (2h59m|3h00m)' "$out"
# ... one stopped there after deleting rows does (cron's normal outcome on a
# backlog, SPEC 10), as it keeps IdemgateCleanupNotRun quiet.
db_query "$DB" "
INSERT INTO idem_cleanup_runs (host, started_at, ended_at, rows_deleted,
  stale_released, batches, outcome, reason) VALUES
 ('cron-f', NOW(6) - INTERVAL 61 MINUTE, NOW(6) - INTERVAL 60 MINUTE,
  5000, 0, 5, 'partial', 'time limit of 60000 ms reached during expired rows');
" || not_ok "seed a partial run"
out=$(TZ=UTC "$IDEMTOP" -b -n 1 -c "$T/top.conf" 2>&1)
expect_nomatch "a partial run that deleted rows: no warning" 'WARNING' "$out"
expect_eq "idemctl metrics agrees: last success an hour ago" 1 \
    "$("$IDEM_BUILD/idemctl" metrics -c "$T/top.conf" 2>/dev/null |
    awk '/^idemgate_last_cleanup_success_timestamp_seconds / { d = systime() - $2; print (d > 3500 && d < 3700) }')"

# ---- database unreachable
printf '[idemgate]\nsocket=%s\nuser=idem_ro\npassword=x\ndatabase=%s\n' "$T/nothing.sock" "$DB" >"$T/dead.cnf"
cat >"$T/dead.conf" <<EOF
[gateway]
listen = unix:$T/unused.sock
mysql_defaults_file = $T/dead.cnf
EOF
out=$("$IDEMTOP" -b -n 1 -c "$T/dead.conf" 2>"$T/dead.err"); rc=$?
expect_eq "db unreachable: exit 3" 3 "$rc"
expect_eq "db unreachable: nothing on stdout" "" "$out"
expect_eq "db unreachable: one line on stderr" 1 "$(wc -l <"$T/dead.err")"
expect_match "db unreachable: says why" '^idemtop: ' "$(cat "$T/dead.err")"

# A store older than this build: its figures would look right and be
# wrong; idemtop refuses it as idemctl does.
db_new it_idemtop_old || { done_testing; exit 1; }
db_query it_idemtop_old "DELETE FROM idem_schema WHERE version > 5"
sed "s|$RO|$T/it_idemtop_old.cnf|" "$T/top.conf" >"$T/old.conf"
out=$("$IDEMTOP" -b -n 1 -c "$T/old.conf" 2>"$T/old.err"); rc=$?
expect_eq "schema older than the build: exit 3, nothing on stdout" "3 " "$rc $out"
expect_match "... says which, and the fix" \
	"^idemtop: cannot read the store: schema at version 5, this build needs [0-9]+ \(run 'idemctl migrate'\)" "$(cat "$T/old.err")"

done_testing
