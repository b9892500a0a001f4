#!/bin/bash
# In front of a real PHP-FPM (Debian's, its own pool as www-data): a PHP
# run goes on after idemgate stops reading it, so its key stays in
# progress until the run is over.  Runs and overlaps are counted from the
# PHP script's own log (tests/it/php/pay.php), never from idemgate's.
#   - the client's timeout is not the run's life: 504 handler-timeout,
#     retries wait or get 409, then replay the run's answer;
#   - a dead owner's upstream run is not taken over before run_limit;
#   - a store outage longer than the lease does not stop (or double) it;
#   - the fence reaches PHP and grows with each claim;
#   - Apache wired like Debian's php8.2-fpm.conf (FilesMatch + SetHandler);
#   - idemgate -t warns about a fastcgi: route without run_limit.
. "$(dirname "$0")/../lib/harness.sh"

db_private || { done_testing; exit 1; }
db_new "$TNAME" || { done_testing; exit 1; }
fpm_start fpm "request_terminate_timeout = 8s
request_terminate_timeout_track_finished = yes" || { done_testing; exit 1; }

# routes TIMEOUT [POOL LIMIT TTL]: the PHP route to pool POOL (fpm),
# run_limit LIMIT (8s) as that pool's request_terminate_timeout ("none":
# no run_limit), ttl TTL (the default)
routes() {
	cat <<EOF

[route /pay.php]
handler = fastcgi:unix:$T/${2:-fpm}.sock
timeout = $1
lease = 3s
wait = 1s
EOF
	[ "${3:-8s}" = none ] || echo "run_limit = ${3:-8s}"
	[ -z "${4:-}" ] || echo "ttl = $4"
}
# gateway N TIMEOUT [POOL LIMIT TTL]: gateway gwN with routes TIMEOUT POOL
# LIMIT TTL, behind web server webN serving $T/www (the test ends if either
# does not start)
gateway() {
	local n=$1
	shift
	gw_conf "$T/gw$n.conf" "unix:$T/gw$n.sock" "$DBCNF"
	routes "$@" >>"$T/gw$n.conf"
	gw_start "gw$n" "$T/gw$n.conf" || { done_testing; exit 1; }
	lighttpd_start "web$n" "unix:$T/gw$n.sock" "$T/www" || { done_testing; exit 1; }
}
gateway "" 2s
# A second gateway on the same database, with its own web server.
gateway 2 30s

# Every run's "start" to its "end", as the script logged them.
last_fence() { sed -n 's/^start .* fence=\([0-9-]*\)$/\1/p' "$T/www/runs/pay.runs" | tail -1; }

# --- A plain protected POST through PHP-FPM: once, replayed, fenced.
K=$(new_key)
http p1 POST "$(url web2 /pay.php)" -H "Idempotency-Key: $K" --data-binary 'amount=5'
expect_eq "php: created" created "$(hdr p1 Idempotency-Result)"
expect_eq "php: PHP's status" 201 "$HS"
expect_match "php: PHP read the body" '"body":"amount=5"' "$(body p1)"
http p2 POST "$(url web2 /pay.php)" -H "Idempotency-Key: $K" --data-binary 'amount=5'
expect_eq "php: reused" reused "$(hdr p2 Idempotency-Result)"
expect_file_eq "php: byte-for-byte" "$T/p1.b" "$T/p2.b"
expect_eq "php: one run" 1 "$(fpm_runs)"
f1=$(last_fence)
expect_match "php: IDEMGATE_FENCE reached PHP" '^[0-9]+$' "$f1"
K=$(new_key)
http p3 POST "$(url web2 /pay.php)" -H "Idempotency-Key: $K" -H 'Idemgate-Fence: 99999999999999' --data-binary 'amount=6'
f2=$(last_fence)
expect_lt "php: a later claim has a larger fence" "${f1:-0}" "${f2:-0}"
expect_ne "php: a client's header is no fence" 99999999999999 "$f2"

# --- 1. The client's timeout (2 s) is shorter than the run (5 s).  The
# client gets 504 handler-timeout; retries every 0.4 s never start a
# second run, and once the run is over they replay its answer (the
# retries stop at the second replay in a row, or at 9 s).
K=$(new_key)
n0=$(fpm_runs)
t0=$(now_ms)
http_bg t1 POST "$(url web '/pay.php?sleep=5000')" -H "Idempotency-Key: $K" --data-binary 'amount=7'
sleep 0.5
i=0
replays=0
while [ "$(($(now_ms) - t0))" -lt 9000 ] && [ "$i" -lt 30 ] && [ "$replays" -lt 2 ]; do
	i=$((i + 1))
	http r$i POST "$(url web '/pay.php?sleep=5000')" -H "Idempotency-Key: $K" --data-binary 'amount=7'
	echo "$HS $(hdr r$i Idempotency-Result)" >>"$T/retries"
	if [ "$HS $(hdr r$i Idempotency-Result)" = "201 reused" ]; then
		replays=$((replays + 1))
	else
		replays=0
	fi
	[ "$replays" -lt 2 ] && sleep 0.4
done
bg_wait
HS=$(st t1)
is_problem "timeout: the first client" t1 504 handler-timeout
expect_match "timeout: with Retry-After" '^[0-9]+$' "$(hdr t1 Retry-After)"
expect_lt "timeout: answered at the timeout, not the run's end" "$(($(cat "$T/t1.end") - t0))" 4500
expect_eq "timeout: one run" 1 $(($(fpm_runs) - n0))
expect_eq "timeout: never two at once" 0 "$(fpm_overlaps)"
expect_eq "timeout: no retry ran it" 0 "$(grep -c created "$T/retries")"
expect_eq "timeout: retries got 409 or the replay, nothing else" 0 "$(grep -Evc '^(409 |201 reused)$' "$T/retries")"
expect_match "timeout: retries after the run replay it" '201 reused' "$(tail -1 "$T/retries")"
run_id=$(sed -n 's/^end [0-9.]* \([0-9a-f]*\) .*/\1/p' "$T/www/runs/pay.runs" | tail -1)
expect_match "timeout: the replay is that run's answer" "\"id\":\"$run_id\".*\"body\":\"amount=7\"" "$(body r$i)"

# --- 2. The owner dies (kill -9) while PHP runs on (6 s); lease 3 s,
# run_limit 8 s.  A retry through the other gateway must not take the
# key over while the run may still go on.
K=$(new_key)
n0=$(fpm_runs)
t0=$(now_ms)
http_bg o1 POST "$(url web2 '/pay.php?sleep=6000')" -H "Idempotency-Key: $K" --data-binary 'amount=8'
started() { [ "$(fpm_runs)" -gt "$n0" ]; }
wait_until 5 started || not_ok "dead owner: PHP started"
sleep 1
kill -9 $(gw_workers gw2)
rm -f "$T/dead"
# Each retry waits up to 1 s: the last starts well before the run deadline.
while [ "$(($(now_ms) - t0))" -lt 6500 ]; do
	http d POST "$(url web '/pay.php?sleep=6000')" -H "Idempotency-Key: $K" --data-binary 'amount=8'
	echo "$(($(now_ms) - t0)) $HS $(hdr d Idempotency-Result)" >>"$T/dead"
	sleep 0.5
done
bg_wait
expect_eq "dead owner: no takeover before run_limit" 0 "$(grep -c created "$T/dead")"
expect_eq "dead owner: the run went on alone" 1 $(($(fpm_runs) - n0))
# Past its run deadline (on the server's clock) the key may run again:
# the first run is surely over.
wait_until 5 gw_has_workers gw2 || true
# The run deadline: run_limit 8 s, a third more for PHP-FPM's heartbeat,
# 3 s of kill grace.
while [ "$(($(now_ms) - t0))" -lt 14200 ]; do sleep 0.1; done
http d2 POST "$(url web2 '/pay.php?sleep=6000')" -H "Idempotency-Key: $K" --data-binary 'amount=8'
expect_eq "dead owner: after run_limit the key is taken over" created "$(hdr d2 Idempotency-Result)"
expect_eq "dead owner: two runs in all, one after the other" 2 $(($(fpm_runs) - n0))
expect_eq "dead owner: never two at once" 0 "$(fpm_overlaps)"
expect_eq "dead owner: every run ended" "$(grep -c '^start ' "$T/www/runs/pay.runs")" "$(grep -c '^end ' "$T/www/runs/pay.runs")"

# --- 3. MariaDB is stopped for 5 s, longer than the lease, during a 6 s
# run.  The owner does not stop what it cannot stop; it records the run's
# answer when the store is back; retries then replay it.
K=$(new_key)
n0=$(fpm_runs)
http_bg s1 POST "$(url web2 '/pay.php?sleep=6000')" -H "Idempotency-Key: $K" --data-binary 'amount=9'
wait_until 5 started || not_ok "outage: PHP started"
sleep 0.5
mariadb_stop
sleep 5
mariadb_start || not_ok "MariaDB restarts"
for i in 1 2 3 4; do
	http_bg s2_$i POST "$(url web '/pay.php?sleep=6000')" -H "Idempotency-Key: $K" --data-binary 'amount=9'
done
bg_wait
expect_eq "outage: the owner's client got PHP's answer" 201 "$(st s1)"
expect_eq "outage: as created" created "$(hdr s1 Idempotency-Result)"
# the owner records the answer once the store is back: its row completed
completed() { [ "$(db_query "$TNAME" "SELECT state FROM idem_keys WHERE idem_key = '$K'")" = 1 ]; }
wait_until 5 completed
http s3 POST "$(url web '/pay.php?sleep=6000')" -H "Idempotency-Key: $K" --data-binary 'amount=9'
expect_eq "outage: a retry after the run replays it" reused "$(hdr s3 Idempotency-Result)"
expect_file_eq "outage: the same answer" "$T/s1.b" "$T/s3.b"
expect_eq "outage: no retry meanwhile ran it" 0 "$(for i in 1 2 3 4; do hdr s2_$i Idempotency-Result; done | grep -c created)"
expect_eq "outage: one run" 1 $(($(fpm_runs) - n0))
expect_eq "outage: never two at once" 0 "$(fpm_overlaps)"

# --- An upstream that dies mid-run (PHP-FPM's request_terminate_timeout
# kills it: no END_REQUEST): the key is a tombstone, never run again.  A
# pool of its own kills at 2 s (the first pool's 8 s would be waited for),
# behind a third gateway and web server.
fpm_start fpmk "request_terminate_timeout = 2s
request_terminate_timeout_track_finished = yes" || { done_testing; exit 1; }
gateway 3 30s fpmk 2s
K=$(new_key)
n0=$(fpm_runs)
http k1 POST "$(url web3 '/pay.php?sleep=15000')" -H "Idempotency-Key: $K" --data-binary 'amount=10'
expect_match "killed run: the client gets a 5xx" '^5' "$HS"
http k2 POST "$(url web3 '/pay.php?sleep=15000')" -H "Idempotency-Key: $K" --data-binary 'amount=10'
is_problem "killed run: a retry" k2 410 response-not-stored
expect_nomatch "killed run: the detail does not call the answer too large" 'too large to keep' "$(body k2)"
expect_eq "killed run: one run" 1 $(($(fpm_runs) - n0))

# --- run_limit (2 s) shorter than the pool's own limit (8 s): a run still
# going at run_limit leaves a tombstone (SPEC 2c), even when it ends before
# the run deadline the claim recorded (run_limit, a third more for the
# pool's heartbeat, and the kill grace), and its late answer is not kept.
gateway 4 1s fpm 2s
K=$(new_key)
n0=$(fpm_runs)
http l1 POST "$(url web4 '/pay.php?sleep=3000')" -H "Idempotency-Key: $K" --data-binary 'amount=13'
is_problem "past run_limit: the client's timeout" l1 504 handler-timeout
runs_ended() { [ "$(grep -c '^end ' "$T/www/runs/pay.runs")" -ge "$1" ]; }
wait_until 10 runs_ended "$(($(grep -c '^end ' "$T/www/runs/pay.runs") + 1))"
sleep 0.5
http l2 POST "$(url web4 '/pay.php?sleep=3000')" -H "Idempotency-Key: $K" --data-binary 'amount=13'
is_problem "past run_limit: a retry after the run ended" l2 410 response-not-stored
expect_eq "past run_limit: one run" 1 $(($(fpm_runs) - n0))
gw_stop gw4

# --- An answer idemgate cannot take (Status 1xx) after PHP ran: the
# client gets 502, and the key is kept, not freed for a second run.
K=$(new_key)
n0=$(fpm_runs)
http b1 POST "$(url web2 '/pay.php?status1xx=1')" -H "Idempotency-Key: $K" --data-binary 'amount=12'
is_problem "bad answer: the client" b1 502 bad-gateway
http b2 POST "$(url web2 '/pay.php?status1xx=1')" -H "Idempotency-Key: $K" --data-binary 'amount=12'
is_problem "bad answer: a retry" b2 410 response-not-stored
expect_eq "bad answer: one run" 1 $(($(fpm_runs) - n0))

# --- A finished key lives until no run of it can go on, whatever its
# ttl (2 s here).  PHP answers, ends the request (fastcgi_finish_request)
# and works on 4 s: the retry after the ttl replays, it does not run PHP
# beside the first run; the first answer names the key's real end (the
# run deadline: run_limit 8 s, a third more, 3 s of grace).
gateway 5 1s fpm 8s 2s
K=$(new_key)
n0=$(fpm_runs)
t0=$(date +%s)
http f1 POST "$(url web5 '/pay.php?linger=4000')" -H "Idempotency-Key: $K" --data-binary 'amount=14'
expect_eq "finish_request: created" "201 created" "$HS $(hdr f1 Idempotency-Result)"
exp=$(date -d "$(hdr f1 Idempotency-Expires)" +%s 2>/dev/null || echo 0)
expect_lt "finish_request: Idempotency-Expires names the run deadline, not the ttl" $((t0 + 12)) "$exp"
sleep 3
http f2 POST "$(url web5 '/pay.php?linger=4000')" -H "Idempotency-Key: $K" --data-binary 'amount=14'
expect_eq "finish_request: past the ttl, the run going on: a replay" "201 reused" "$HS $(hdr f2 Idempotency-Result)"
expect_eq "finish_request: one run" 1 $(($(fpm_runs) - n0))
expect_eq "finish_request: the replay names the same end" "$(hdr f1 Idempotency-Expires)" "$(hdr f2 Idempotency-Expires)"
gw_stop gw5

# --- IDEMGATE_KEY_ID names the key as idemgate reads it, for the fence's
# row: one key spelled two ways ("K" and K;v=1, one key to idemgate; PHP
# sees each raw) gets one id, another key another.
K=$(new_key)
http i1 POST "$(url web2 '/pay.php?status=500')" -H "Idempotency-Key: \"$K\"" --data-binary 'amount=17'
http i2 POST "$(url web2 '/pay.php?status=500')" -H "Idempotency-Key: $K;v=1" --data-binary 'amount=17'
http i3 POST "$(url web2 '/pay.php?status=500')" -H "Idempotency-Key: $K-other" --data-binary 'amount=17'
kid() { sed -n 's/.*"key_id":"\([^"]*\)".*/\1/p' "$T/$1.b"; }
expect_match "IDEMGATE_KEY_ID reaches PHP: 48 hex digits" '^[0-9a-f]{48}$' "$(kid i1)"
expect_eq "... the same for two spellings of one key" "$(kid i1)" "$(kid i2)"
expect_ne "... another for another key" "$(kid i1)" "$(kid i3)"

# --- A status that frees the key (500), sent through
# fastcgi_finish_request() with 3 s of work after it (Symfony ends every
# answer so, and runs its kernel.terminate listeners after): the client
# gets the 500 at once, but the key stays in progress until the script is
# over; retries meanwhile wait and get 409, never a second PHP run beside
# the first.  Once it ended, a retry runs PHP again.
lingered() { [ "$(grep -c '^lingered ' "$T/www/runs/pay.runs" 2>/dev/null)" -ge "$1" ]; }
# The run before this one (linger=4000) may still hold the script's lock.
wait_until 10 flock -n "$T/www/runs/pay.lock" true || true
o0=$(fpm_overlaps)
K=$(new_key)
n0=$(fpm_runs)
l0=$(grep -c '^lingered ' "$T/www/runs/pay.runs" 2>/dev/null)
t0=$(now_ms)
http r1 POST "$(url web2 '/pay.php?status=500&linger=3000')" -H "Idempotency-Key: $K" --data-binary 'amount=16'
expect_eq "released after finish_request: the client gets PHP's 500" 500 "$HS"
expect_lt "... at once, not at the script's end (ms)" $(($(now_ms) - t0)) 2000
http r2 POST "$(url web2 '/pay.php?status=500&linger=3000')" -H "Idempotency-Key: $K" --data-binary 'amount=16'
is_problem "... a retry while the script runs on" r2 409 key-in-progress
expect_eq "... no second run meanwhile" 1 $(($(fpm_runs) - n0))
wait_until 10 lingered $((l0 + 1)) || true
http r3 POST "$(url web2 '/pay.php?status=500&linger=3000')" -H "Idempotency-Key: $K" --data-binary 'amount=16'
expect_eq "... once it ended, a retry runs again" "500 2" "$HS $(($(fpm_runs) - n0))"
wait_until 10 lingered $((l0 + 2)) || true
expect_eq "released after finish_request: never two at once" "$o0" "$(fpm_overlaps)"

# The same with an answer over max_response (4k): it streams, and its end
# goes at END_REQUEST too, whole, even when the route's timeout (1 s)
# passes while the script works on.
gw_conf "$T/gw8.conf" "unix:$T/gw8.sock" "$DBCNF"
routes 1s >>"$T/gw8.conf"
echo "max_response = 4k" >>"$T/gw8.conf"
gw_start gw8 "$T/gw8.conf" || { done_testing; exit 1; }
lighttpd_start web8 "unix:$T/gw8.sock" "$T/www" || { done_testing; exit 1; }
wait_until 10 flock -n "$T/www/runs/pay.lock" true || true
t0=$(now_ms)
http s1 POST "$(url web8 '/pay.php?status=503&pad=20000&linger=2500')" -H "Idempotency-Key: $(new_key)" --data-binary 'amount=18'
expect_eq "released, streaming: the client gets PHP's 503, whole" "503 yes" "$HS $([ "$(wc -c <"$T/s1.b")" -gt 20000 ] && echo yes || echo no)"
expect_lt "... at once, not at the script's end (ms)" $(($(now_ms) - t0)) 1500
wait_until 10 flock -n "$T/www/runs/pay.lock" true || true
gw_stop gw8

# Without run_limit a run is unbounded: the tombstone its owner leaves
# when it stops reading (at the ttl, 2 s) never expires, so no retry runs
# PHP beside a run that goes on (6 s).
gateway 6 1s fpm none 2s
K=$(new_key)
n0=$(fpm_runs)
http u1 POST "$(url web6 '/pay.php?sleep=6000')" -H "Idempotency-Key: $K" --data-binary 'amount=15'
is_problem "unbounded: the client's timeout" u1 504 handler-timeout
sleep 4.5
http u2 POST "$(url web6 '/pay.php?sleep=6000')" -H "Idempotency-Key: $K" --data-binary 'amount=15'
is_problem "unbounded: a retry past twice the ttl" u2 410 response-not-stored
expect_eq "unbounded: one run" 1 $(($(fpm_runs) - n0))
gw_stop gw6

# --- Apache in front, wired as Debian's php8.2-fpm.conf wires PHP-FPM:
# FilesMatch + SetHandler "proxy:unix:...|fcgi://localhost".
chgrp www-data "$T/gw2.sock" 2>/dev/null
chmod 0660 "$T/gw2.sock"
if apache_start apache "unix:$T/gw2.sock" php; then
	K=$(new_key)
	n0=$(fpm_runs)
	http a1 POST "$(url apache /pay.php)" -H "Idempotency-Key: $K" --data-binary 'amount=11'
	expect_eq "apache: created" created "$(hdr a1 Idempotency-Result)"
	expect_match "apache: PHP found its script" '"body":"amount=11"' "$(body a1)"
	http a2 POST "$(url apache /pay.php)" -H "Idempotency-Key: $K" --data-binary 'amount=11'
	expect_eq "apache: reused" reused "$(hdr a2 Idempotency-Result)"
	expect_file_eq "apache: byte-for-byte" "$T/a1.b" "$T/a2.b"
	expect_eq "apache: one run" 1 $(($(fpm_runs) - n0))
fi

# --- idemgate -t: a protected fastcgi: route without run_limit.
sed '/^run_limit/d' "$T/gw.conf" >"$T/nolimit.conf"
out=$("$IDEMGATE" -t -c "$T/nolimit.conf" 2>&1)
expect_eq "-t: still valid" 0 $?
expect_eq "-t: one warning" 1 "$(printf '%s\n' "$out" | grep -c 'warning')"
expect_match "-t: names request_terminate_timeout" "nolimit.conf:[0-9]+:[0-9]+: warning: .*run_limit.*request_terminate_timeout" "$out"
out=$("$IDEMGATE" -t -c "$T/gw.conf" 2>&1)
expect_eq "-t: with run_limit, no warning" "syntax ok" "$(printf '%s\n' "$out" | grep -v ': note: ')"
done_testing
