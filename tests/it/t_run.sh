#!/bin/bash
# idemctl run against a real MariaDB and real processes: a job runs once per
# key, replays its stdout and status byte-for-byte, refuses other input
# (65), says "later" while it runs elsewhere (75), never runs with the
# store down (69); failures release the key; --timeout ends the group
# (124); a run killed with -9 leaves nothing running and is taken over.
# Handler runs are counted from the job's own log.
. "$(dirname "$0")/../lib/harness.sh"

db_private || { done_testing; exit 1; }
db_new "$TNAME" || { done_testing; exit 1; }
for h in a b; do
	cat >"$T/$h.conf" <<EOF
[gateway]
listen = unix:$T/unused.sock
mysql_defaults_file = $DBCNF
host_name = host-$h

[idempotency]
lease = 3s
wait = 20s
EOF
done
LOG=$T/job.log
# job.sh TEXT SLEEP EXIT: logs its start and end, prints TEXT and binary bytes
cat >"$T/job.sh" <<'EOF'
#!/bin/sh
echo "start $$" >>"$JOBLOG"
cat >"$JOBLOG.stdin.$$"
[ "$2" = 0 ] || sleep "$2"
printf '%s\000\001\377\n' "$1"
echo "end $$" >>"$JOBLOG"
exit "$3"
EOF
chmod 0755 "$T/job.sh"
export JOBLOG=$LOG
starts() { grep -c '^start' "$LOG" 2>/dev/null || echo 0; }
run() { # run HOST OUT ARGS...: RC[OUT], stdout $T/OUT.o, stderr $T/OUT.e
	local h=$1 o=$2
	shift 2
	"$IDEMCTL" -c "$T/$h.conf" run "$@" >"$T/$o.o" 2>"$T/$o.e" </dev/null
	echo $? >"$T/$o.rc"
}
rc() { cat "$T/$1.rc"; }

# A run whose COMMAND ignores SIGTERM, on a 1 s lease, for the kill -9
# case below: started now, so its run deadline (claim + 5 s) has passed
# by then.
K16='echo $$ >"$JOBLOG.16"; echo "start $(date +%s%3N)" >>"$JOBLOG.16s"; if [ -n "${SLOW:-}" ]; then trap "" TERM; while :; do echo "alive $(date +%s%3N)" >>"$JOBLOG.16a"; sleep 0.02; done; fi; echo second'
k17_t0=$(now_ms)
SLOW=1 "$IDEMCTL" -c "$T/a.conf" run --key k17 --lease 1s -- sh -c "$K16" >/dev/null 2>&1 &
k17_runner=$!
H_BGPIDS+=($k17_runner)

# 1. First run executes; the retry replays stdout byte-for-byte and the status.
run a r1 --key k1 -- "$T/job.sh" hello 0 0
expect_eq "first run: status" 0 "$(rc r1)"
printf 'hello\000\001\377\n' >"$T/want1"
expect_file_eq "first run: COMMAND's stdout" "$T/want1" "$T/r1.o"
run b r2 --key k1 -- "$T/job.sh" hello 0 0
expect_eq "replay: status" 0 "$(rc r2)"
expect_file_eq "replay: the same bytes" "$T/want1" "$T/r2.o"
expect_eq "replay: COMMAND ran once" 1 "$(starts)"

# stdin is COMMAND's and part of the request.
echo "payload-1" | "$IDEMCTL" -c "$T/a.conf" run --key k2 -- "$T/job.sh" s 0 0 >/dev/null 2>&1
expect_eq "stdin: reached COMMAND" "payload-1" "$(cat "$LOG".stdin.* | grep -c payload-1 | sed 's/^1$/payload-1/')"
echo "payload-2" | "$IDEMCTL" -c "$T/a.conf" run --key k2 -- "$T/job.sh" s 0 0 >"$T/m.o" 2>"$T/m.e"
expect_eq "other stdin: exit 65" 65 "$?"
expect_eq "other stdin: one line" 1 "$(wc -l <"$T/m.e" | tr -d ' ')"
expect_eq "other stdin: no stdout" 0 "$(wc -c <"$T/m.o" | tr -d ' ')"
run a m2 --key k2 -- "$T/job.sh" other-arg 0 0
expect_eq "other argv: exit 65" 65 "$(rc m2)"
expect_eq "mismatches: COMMAND did not run" 2 "$(starts)"

# 2. Failures: released without --store-failures, kept with it.
run a f1 --key k3 -- "$T/job.sh" bad 0 3
expect_eq "failure: its status" 3 "$(rc f1)"
run a f2 --key k3 -- "$T/job.sh" bad 0 3
expect_eq "failure released: the next delivery runs it" 4 "$(starts)"
run a f3 --key k4 --store-failures -- "$T/job.sh" kept 0 5
run b f4 --key k4 --store-failures -- "$T/job.sh" kept 0 5
expect_eq "--store-failures: status replayed" "5 5" "$(rc f3) $(rc f4)"
printf 'kept\000\001\377\n' >"$T/want4"
expect_file_eq "--store-failures: stdout replayed" "$T/want4" "$T/f4.o"
expect_eq "--store-failures: COMMAND ran once" 5 "$(starts)"
# ... but a COMMAND that could not start did nothing to keep: released
# (a job whose program a deploy had not put in place yet runs once it is).
run a f5 --key k4b --store-failures -- "$T/later.sh"
printf '#!/bin/sh\necho deployed\n' >"$T/later.sh"
chmod 0755 "$T/later.sh"
run a f6 --key k4b --store-failures -- "$T/later.sh"
expect_eq "--store-failures, COMMAND not found: 127, then it runs" "127 0 deployed" "$(rc f5) $(rc f6) $(cat "$T/f6.o")"
# found but not executable: 126, as sh and timeout(1) say (127 is "not
# found"); released all the same
printf '#!/bin/sh\necho late\n' >"$T/noexec.sh"
chmod 0644 "$T/noexec.sh"
run a f7 --key k4c --store-failures -- "$T/noexec.sh"
chmod 0755 "$T/noexec.sh"
run a f8 --key k4c --store-failures -- "$T/noexec.sh"
expect_eq "--store-failures, COMMAND not executable: 126, then it runs" "126 0 late" "$(rc f7) $(rc f8) $(cat "$T/f8.o")"

# 3. 20 concurrent runs of one key over two "hosts": one execution, all
# alike; those whose --wait runs out say 75 and run nothing.  The four
# short waiters start once the job runs (3 s), so their 300 ms runs out
# before it ends however slowly the machine starts them.
: >"$LOG"
job_started() { [ "$(starts)" -ge 1 ]; }
pids=()
for i in $(seq 1 20); do
	h=a
	[ $((i % 2)) = 0 ] && h=b
	w=20s
	if [ "$i" -gt 16 ]; then
		w=300ms
		[ "$i" = 17 ] && wait_until 10 job_started
	fi
	run $h c$i --key k5 --wait $w -- "$T/job.sh" together 3 0 &
	pids+=($!)
done
wait "${pids[@]}"
expect_eq "concurrent: COMMAND ran once" 1 "$(starts)"
same=0 tempfail=0 other=0
printf 'together\000\001\377\n' >"$T/want5"
for i in $(seq 1 20); do
	if [ "$(rc c$i)" = 0 ] && cmp -s "$T/want5" "$T/c$i.o"; then
		same=$((same + 1))
	elif [ "$(rc c$i)" = 75 ] && [ ! -s "$T/c$i.o" ]; then
		tempfail=$((tempfail + 1))
	else
		other=$((other + 1))
	fi
done
expect_eq "concurrent: each got the answer or 75" 0 "$other"
expect_eq "concurrent: the short waits said 75" 4 "$tempfail"
run a c21 --key k5 -- "$T/job.sh" together 3 0
expect_eq "concurrent: a later delivery replays" "0 1" "$(rc c21) $(starts)"

# 4. The job namespace: an HTTP key of the same text is another key.
db_query "$TNAME" "INSERT INTO idem_keys (scope, idem_key, route, method,
    fingerprint, state, owner, owner_token, created_at, lease_until,
    expires_at, completed_at, resp_status, resp_headers, resp_body, resp_size)
  VALUES (UNHEX(SHA2(CONCAT(UNHEX('0000000000000004'), 'none',
    UNHEX('0000000000000000')), 256)), 'k6', '/pay', 'POST', UNHEX(SHA2('x',
    256)), 1, 'gw:1', 1, NOW(6), NOW(6), NOW(6) + INTERVAL 1 DAY, NOW(6), 201,
    '', 'http answer', 11)"
run a n1 --key k6 -- "$T/job.sh" job-answer 0 0
expect_eq "namespace: a job key runs beside an HTTP key" "0 2" "$(rc n1) $(starts)"
"$IDEMCTL" -c "$T/a.conf" show k6 >"$T/n2.o" 2>&1
expect_match "namespace: the HTTP key is untouched" "/pay" "$(cat "$T/n2.o")"
"$IDEMCTL" -c "$T/a.conf" show k6 --scope job >"$T/n3.o" 2>&1
expect_match "namespace: show --scope job finds the job" "job:job.sh" "$(cat "$T/n3.o")"

# --wait 0 does not wait: 75 at once while the key runs elsewhere, as
# wait = 0 in the config; --timeout 0 is no timeout, as timeout(1).
n0=$(($(starts) + 1))
run a w1 --key k26 --timeout 0 -- "$T/job.sh" nowait 2 0 &
w1=$!
started() { [ "$(starts)" -ge "$1" ]; }
wait_until 5 started "$n0"
t0=$(now_ms)
run b w2 --key k26 --wait 0 -- "$T/job.sh" nowait 2 0
took=$(($(now_ms) - t0))
expect_eq "--wait 0: 75 while it runs elsewhere" 75 "$(rc w2)"
expect_lt "--wait 0: at once (${took} ms)" "$took" 1500
wait "$w1"
expect_eq "--timeout 0: no timeout, COMMAND ran whole" "0 $n0" "$(rc w1) $(starts)"

# A signal ends a wait for the key's run elsewhere at once (128+N), as it
# ends an owner's COMMAND: a consumer's service stopped, Ctrl-C.
n0=$(($(starts) + 1))
run a s1 --key k-sig -- "$T/job.sh" sig 3 0 &
s1=$!
wait_until 5 started "$n0"
"$IDEMCTL" -c "$T/b.conf" run --key k-sig --wait 30s -- "$T/job.sh" sig 3 0 >"$T/s2.o" 2>"$T/s2.e" </dev/null &
s2=$!
sleep 0.5
t0=$(now_ms)
kill -TERM "$s2"
wait "$s2"
expect_eq "a waiter told to stop (SIGTERM): 143" 143 "$?"
expect_lt "... at once, not after the run or --wait ($(($(now_ms) - t0)) ms)" $(($(now_ms) - t0)) 1500
expect_match "... and says so" 'stopped by signal 15 while the key ran elsewhere' "$(cat "$T/s2.e")"
wait "$s1"
expect_eq "... COMMAND ran once" "0 $n0" "$(rc s1) $(starts)"

# Job runs count in the fleet counters, under their route "job:NAME".
"$IDEMCTL" -c "$T/a.conf" stats >"$T/stats.o" 2>&1
expect_match "counters: idemctl stats lists the job" "job:job\.sh" "$(cat "$T/stats.o")"
"$IDEMCTL" -c "$T/a.conf" metrics >"$T/metrics.o" 2>&1
expect_match "counters: metrics label it kind=job" 'idemgate_requests_total\{host="host-[ab]",route="job:job\.sh",kind="job"\} [0-9]' "$(cat "$T/metrics.o")"
# cleanup removes job keys like any other, once expired (and its run
# deadline, claim + 5 s, past: both moved back an hour)
db_query "$TNAME" "UPDATE idem_keys SET expires_at = NOW(6) - INTERVAL 1 HOUR, run_deadline = NOW(6) - INTERVAL 1 HOUR WHERE idem_key = 'k1'"
"$IDEMCTL" -c "$T/a.conf" cleanup >/dev/null 2>&1
expect_eq "cleanup: an expired job key is gone" 0 "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys WHERE idem_key = 'k1'")"

# 5. --timeout: the group is ended, the key released, status 124.
run a t1 --key k7 --timeout 500ms -- sh -c 'echo $$ >"$JOBLOG.t"; sleep 30 & sleep 30'
expect_eq "timeout: status 124" 124 "$(rc t1)"
pg=$(cat "$LOG.t" 2>/dev/null)
# living PGID: the live members of process group PGID ("ps -g" selects a
# session, not a group)
living() { ps -e -o pgid=,pid=,stat=,comm= | awk -v g="$1" '$1 == g && $3 !~ /^Z/ { printf "%s %s ", $2, $4 }'; }
group_gone() { [ -z "$(living "$1")" ]; }
wait_until 3 group_gone "$pg"
expect_eq "timeout: nothing of its group runs" "" "$(living "$pg")"
run a t2 --key k7 --timeout 5s -- sh -c 'echo again'
expect_eq "timeout: released, the next run executes" "0 again" "$(rc t2) $(cat "$T/t2.o")"

# 6. kill -9 of a run mid-COMMAND: nothing it started survives; the next
# run takes over after the lease.
# The same argv both times: SLOW (not fingerprinted) makes the first slow.
K8='echo $$ >"$JOBLOG.k"; echo "start $$" >>"$JOBLOG"; if [ -n "${SLOW:-}" ]; then sleep 30 & sleep 30; fi; echo took-over'
SLOW=1 "$IDEMCTL" -c "$T/a.conf" run --key k8 -- sh -c "$K8" >/dev/null 2>&1 &
runner=$!
wait_until 5 test -s "$LOG.k"
pg=$(cat "$LOG.k")
kill -9 "$runner"
wait "$runner" 2>/dev/null
wait_until 5 group_gone "$pg"
expect_eq "kill -9: COMMAND's group did not outlive its run" "" "$(living "$pg")"
before=$(starts)
t0=$(now_ms)
run b k2 --key k8 --wait 10s -- sh -c "$K8"
took=$(($(now_ms) - t0))
expect_eq "kill -9: the next run takes over and runs" "0 took-over $((before + 1))" "$(rc k2) $(cat "$T/k2.o") $(starts)"
expect_lt "kill -9: within a lease and a little (${took} ms)" "$took" 8000

# kill -9 of a run whose COMMAND left part of its work outside its group
# (setsid): no longer run's to sweep, its keeper finds it by the run's
# mark in its environment and ends it with the group, before a takeover
# could run beside it.
# What stays in the group still gets its SIGTERM grace first.
K8s='sh -c "trap \"echo termed >>\\\"\$JOBLOG.kt\\\"; exit 0\" TERM; while :; do sleep 0.05; done" & setsid sh -c "echo \$\$ >\"\$JOBLOG.ks\"; exec sleep 31" </dev/null >/dev/null 2>&1 & sleep 30'
"$IDEMCTL" -c "$T/a.conf" run --key k8s -- sh -c "$K8s" >/dev/null 2>&1 &
runner=$!
wait_until 5 test -s "$LOG.ks"
esc=$(cat "$LOG.ks")
expect_match "kill -9, setsid: the escapee runs" '^[0-9]+$' "$esc"
expect_match "kill -9, setsid: it carries the run's mark" '^IDEMCTL_RUN_[0-9a-f]{16}=1$' \
	"$(tr '\0' '\n' <"/proc/$esc/environ" 2>/dev/null | grep '^IDEMCTL_RUN_')"
kill -9 "$runner"
wait "$runner" 2>/dev/null
esc_gone() { case "$(ps -o stat= -p "$esc" 2>/dev/null)" in ""|Z*) return 0 ;; esac; return 1; }
wait_until 3 esc_gone || true
expect_eq "kill -9, setsid: the escapee did not outlive the run" yes \
	"$(esc_gone && echo yes || echo no)"
expect_eq "kill -9: what stayed in the group had its SIGTERM first" termed "$(cat "$LOG.kt" 2>/dev/null)"
esc_gone || kill -9 "$esc" 2>/dev/null

# timeout -s KILL idemctl run ... (cron wrappers, systemd) kills run's
# whole process group: COMMAND, in a group of its own, must die with it
# all the same, or the redelivery after the lease runs beside it.
K13='echo $$ >"$JOBLOG.g"; echo "start $$" >>"$JOBLOG.13"; if [ -n "${SLOW:-}" ]; then sleep 30 & sleep 30; fi; echo "end $$" >>"$JOBLOG.13"; echo ran'
SLOW=1 timeout -s KILL 1 "$IDEMCTL" -c "$T/a.conf" run --key k13 -- sh -c "$K13" >/dev/null 2>&1
wait_until 3 test -s "$LOG.g"
pg=$(cat "$LOG.g")
# Its keeper ends it: SIGTERM at once, SIGKILL 2 s later at the latest.
wait_until 4 group_gone "$pg"
expect_eq "group kill: COMMAND's group did not outlive run" "" "$(living "$pg")"
run b g2 --key k13 --wait 10s -- sh -c "$K13"
expect_eq "group kill: the redelivery runs it after the lease" "0 ran" "$(rc g2) $(cat "$T/g2.o")"
expect_eq "group kill: the first never ended, the second did" "1 2" "$(grep -c '^end' "$LOG.13") $(grep -c '^start' "$LOG.13")"
[ -n "$(living "$pg")" ] && kill -9 -- "-$pg" 2>/dev/null

# The keeper killed on its own, then run: a new keeper took its place.
K14='echo $$ >"$JOBLOG.kk"; if [ -n "${SLOW:-}" ]; then sleep 30 & sleep 30; fi; echo x'
SLOW=1 "$IDEMCTL" -c "$T/a.conf" run --key k14 -- sh -c "$K14" >/dev/null 2>&1 &
runner=$!
wait_until 5 test -s "$LOG.kk"
pg=$(cat "$LOG.kk")
keeper=$(ps -o pid=,comm= --ppid "$runner" | awk '$2 == "idemctl" { print $1 }' | head -1)
if [ -n "$keeper" ]; then
	kill -9 "$keeper"
	sleep 0.5
	expect_ne "keeper killed: run started another" "" "$(ps -o pid=,comm= --ppid "$runner" | awk '$2 == "idemctl" { print $1 }')"
else
	not_ok "keeper killed: run has a keeper" "$(ps -o pid=,comm= --ppid "$runner")"
fi
kill -9 "$runner"
wait "$runner" 2>/dev/null
wait_until 5 group_gone "$pg"
expect_eq "keeper killed, then run: COMMAND's group is gone" "" "$(living "$pg")"

# run and its keeper killed with -9 at once (killall -9 idemctl): no one
# is left to end COMMAND's group, but COMMAND itself dies with run (its
# parent-death signal), so the redelivery never runs beside it.
K15='echo $$ >"$JOBLOG.kb"; exec sleep 30'
"$IDEMCTL" -c "$T/a.conf" run --key k15kb -- sh -c "$K15" >/dev/null 2>&1 &
runner=$!
wait_until 5 test -s "$LOG.kb"
cmd=$(cat "$LOG.kb")
keeper=$(ps -o pid=,comm= --ppid "$runner" | awk '$2 == "idemctl" { print $1 }' | head -1)
expect_ne "run and keeper: run has a keeper" "" "$keeper"
expect_ne "run and keeper: COMMAND runs" "" "$(living "$cmd")"
kill -9 "$runner" $keeper
wait "$runner" 2>/dev/null
cmd_gone() { [ -z "$(living "$cmd")" ]; }
wait_until 2 cmd_gone
expect_eq "run and keeper killed at once: COMMAND died with run" "" "$(living "$cmd")"
[ -n "$(living "$cmd")" ] && kill -9 "$cmd" 2>/dev/null

# kill -9 of a run whose COMMAND ignores SIGTERM, on a short lease: the
# keeper's SIGKILL must come before the lease lapses, or the takeover's
# COMMAND runs beside the first.  Past the run deadline (claim + 5 s),
# the lease alone guards the key.  Each COMMAND logs its own times.
# (Started at the top, so its run deadline passes meanwhile.)
wait_until 5 test -s "$LOG.16"
pg=$(cat "$LOG.16")
left=$((k17_t0 + 5500 - $(now_ms)))
[ "$left" -gt 0 ] && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
runner=$k17_runner
kill -9 "$runner"
wait "$runner" 2>/dev/null
run b k17 --key k17 --lease 1s --wait 10s -- sh -c "$K16"
wait_until 5 group_gone "$pg"
[ -n "$(living "$pg")" ] && kill -9 -- "-$pg" 2>/dev/null
second=$(sed -n '2s/^start //p' "$LOG.16s")
last=$(tail -1 "$LOG.16a" | sed 's/^alive //')
expect_eq "TERM ignored, short lease: the takeover ran COMMAND" "0 second" "$(rc k17) $(cat "$T/k17.o")"
expect_lt "... only after the first COMMAND was gone (last alive ${last:-?}, next start ${second:-?})" \
	"${last:-0}" "${second:-0}"

# A reader of run's stdout that stalls while output past max_response is
# written through: the lease is still renewed (on Galera the lease alone
# guards the key), and --timeout still ends the run.
# The three at once: k18 read after 4 s, k19 (--timeout 1s) after 4 s,
# k20 (told to stop once COMMAND finished) after 2 s.
sed 's/^lease = 3s/lease = 1s\nmax_response = 64k/' "$T/a.conf" >"$T/c.conf"
t0=$(now_ms)
("$IDEMCTL" -c "$T/c.conf" run --key k18 -- sh -c 'head -c 3000000 /dev/zero'
	echo $? >"$T/k18.rc") | (sleep 4; cat >"$T/k18.o") &
stall18=$!
("$IDEMCTL" -c "$T/c.conf" run --key k19 --timeout 1s -- sh -c 'head -c 3000000 /dev/zero; sleep 5'
	echo "$? $(now_ms)" >"$T/k19.rc") | (sleep 4; cat >/dev/null) &
stall19=$!
# COMMAND finished (100 kB: all of it fits in the pipes and our buffer),
# its output still waiting for a stalled reader, when run is told to
# stop: a finished run, recorded as it ended, never run again.
("$IDEMCTL" -c "$T/c.conf" run --key k20 -- sh -c 'echo "start $$" >>"$JOBLOG.20"; head -c 100000 /dev/zero' &
	echo $! >"$T/k20.pid"
	wait $!
	echo $? >"$T/k20.rc") | (sleep 2; cat >/dev/null) &
stall20=$!
wait_until 5 test -s "$JOBLOG.20"
sleep 0.5
kill -TERM "$(cat "$T/k20.pid")"
sleep 1.5
lease18() { [ "$(db_query "$TNAME" "SELECT lease_until > NOW(6) FROM idem_keys WHERE idem_key = 'k18'")" = 1 ]; }
# (within 1 s: the stalled reader drains at 4 s, and a run that had
# stopped renewing while stdout was blocked would renew then)
wait_until 1 lease18 || true
expect_eq "stalled stdout: the lease is still renewed" 1 \
	"$(db_query "$TNAME" "SELECT lease_until > NOW(6) FROM idem_keys WHERE idem_key = 'k18'")"
wait "$stall18" "$stall19" "$stall20"
expect_eq "stalled stdout: every byte written through, status 0" "3000000 0" \
	"$(wc -c <"$T/k18.o" | tr -d ' ') $(cat "$T/k18.rc")"
read -r rc19 end19 <"$T/k19.rc"
expect_eq "stalled stdout, --timeout 1s: exit 124" 124 "$rc19"
expect_lt "... when it is due, not when the reader reads ($((end19 - t0)) ms)" $((end19 - t0)) 3500
run b k20b --key k20 -- sh -c 'echo "start $$" >>"$JOBLOG.20"; head -c 100000 /dev/zero'
expect_eq "SIGTERM after COMMAND finished, stdout stalled: its status 0 stands" "0 0" "$(cat "$T/k20.rc") $(rc k20b)"
expect_eq "... and the redelivery does not run it again" 1 "$(grep -c '^start' "$JOBLOG.20")"
# Ctrl-Z (SIGTSTP) would stop run's process group, not COMMAND's: no
# renewals while COMMAND runs on (on Galera a takeover beside it).  run
# is not stopped while it owns the key: it says so, renews, and COMMAND
# goes on to its end.
alive22() { grep -c '^alive' "$JOBLOG.22a" 2>/dev/null || echo 0; }
K22='i=0; while [ $i -lt $N ]; do echo "alive $(date +%s%3N)" >>"$JOBLOG.22a"; sleep 0.02; i=$((i + 1)); done; echo done'
N=60 "$IDEMCTL" -c "$T/a.conf" run --key k22 -- sh -c "$K22" >"$T/k22.o" 2>"$T/k22.e" &
runner=$!
wait_until 5 test -s "$JOBLOG.22a"
kill -TSTP "$runner"
sleep 0.3
st22=$(ps -o stat= -p "$runner" | cut -c1)
[ "$st22" = T ] && kill -CONT "$runner"
expect_ne "SIGTSTP while COMMAND runs: run is not stopped" T "$st22"
wait "$runner"
expect_eq "... COMMAND goes on to its end, recorded" "0 done 60" "$? $(cat "$T/k22.o") $(alive22)"
expect_match "... and run says why it did not stop" 'not stopped while COMMAND runs' "$(cat "$T/k22.e")"
out=$("$IDEMCTL" -c "$T/a.conf" run --key k21 --lease 500ms -- true 2>&1)
expect_eq "--lease under 1s: refused, exit 1 (usage)" "1" "$?"
expect_match "... with one line saying so" "must be at least 1s" "$out"
out=$("$IDEMCTL" -c "$T/a.conf" run --key k21 --ttl 50000d -- true 2>&1)
expect_eq "--ttl past the longest: refused, exit 1 (usage)" "1" "$?"
expect_match "... with one line that names the longest" "^idemctl: run: invalid --ttl '50000d' .*at most 36500d" "$out"

# The fence: COMMAND gets IDEMGATE_FENCE, larger for a later claim; one
# from run's own environment is not passed on.
IDEMGATE_FENCE=7 "$IDEMCTL" -c "$T/a.conf" run --key k15 -- sh -c 'echo "$IDEMGATE_FENCE"' >"$T/f1.o" 2>/dev/null
"$IDEMCTL" -c "$T/a.conf" run --key k16 -- sh -c 'echo "$IDEMGATE_FENCE"' >"$T/f2.o" 2>/dev/null
expect_match "fence: COMMAND has one" '^[0-9]+$' "$(cat "$T/f1.o")"
expect_ne "fence: not run's own" 7 "$(cat "$T/f1.o")"
expect_lt "fence: a later claim's is larger" "$(cat "$T/f1.o")" "$(cat "$T/f2.o")"
# ... and IDEMGATE_KEY_ID, the fence's row: one for every spelling of a
# key ("k" and k, one key), another for another key; never run's own.
# (A failure, released: the second spelling runs again.)
IDEMGATE_KEY_ID=spoof "$IDEMCTL" -c "$T/a.conf" run --key '"k15b"' -- sh -c 'echo "$IDEMGATE_KEY_ID"; exit 3' >"$T/ki1.o" 2>/dev/null
"$IDEMCTL" -c "$T/a.conf" run --key k15b -- sh -c 'echo "$IDEMGATE_KEY_ID"; exit 3' >"$T/ki2.o" 2>/dev/null
"$IDEMCTL" -c "$T/a.conf" run --key k15c -- sh -c 'echo "$IDEMGATE_KEY_ID"' >"$T/ki3.o" 2>/dev/null
expect_match "key id: COMMAND has one" '^[0-9a-f]{48}$' "$(cat "$T/ki1.o")"
expect_eq "key id: one key, two spellings: one id" "$(cat "$T/ki1.o")" "$(cat "$T/ki2.o")"
expect_ne "key id: another key, another id" "$(cat "$T/ki1.o")" "$(cat "$T/ki3.o")"

# COMMAND inherits fds 0, 1 and 2 only: not run's MySQL connection.
run a fd1 --key k11 -- sh -c 'exec ls /proc/self/fd'
# ls's own: 0, 1, 2 and the one it reads the directory with
expect_eq "fds: COMMAND has 0, 1 and 2 only" "0 1 2 3" "$(sort -n "$T/fd1.o" | tr '\n' ' ' | sed 's/ $//')"

# SIGTERM to run reaches COMMAND's group; the outcome (a failure) is
# recorded: released, so the next delivery runs it.
K12='echo $$ >"$JOBLOG.term"; if [ -n "${SLOW:-}" ]; then sleep 30 & sleep 30; fi; echo done'
SLOW=1 "$IDEMCTL" -c "$T/a.conf" run --key k12 -- sh -c "$K12" >/dev/null 2>"$T/term.e" &
runner=$!
wait_until 5 test -s "$LOG.term"
pg=$(cat "$LOG.term")
kill -TERM "$runner"
wait "$runner"
expect_eq "SIGTERM: run exits 128+15" 143 "$?"
wait_until 5 group_gone "$pg"
expect_eq "SIGTERM: COMMAND's group is gone" "" "$(living "$pg")"
run a term2 --key k12 -- sh -c "$K12"
expect_eq "SIGTERM: released, the next delivery runs it" "0 done" "$(rc term2) $(cat "$T/term2.o")"

# A COMMAND that catches SIGTERM and exits 0 was still cut short: 143,
# released (a success recorded would be replayed to every redelivery).
K23='trap "exit 0" TERM; echo $$ >"$JOBLOG.trap"; if [ -n "${SLOW:-}" ]; then while :; do sleep 0.1; done; fi; echo done'
SLOW=1 "$IDEMCTL" -c "$T/a.conf" run --key k23 -- sh -c "$K23" >/dev/null 2>"$T/trap.e" &
runner=$!
wait_until 5 test -s "$LOG.trap"
kill -TERM "$runner"
wait "$runner"
expect_eq "SIGTERM, COMMAND exits 0: run exits 128+15" 143 "$?"
run a trap2 --key k23 -- sh -c "$K23"
expect_eq "SIGTERM, COMMAND exits 0: released, the next delivery runs it" \
	"0 done" "$(rc trap2) $(cat "$T/trap2.o")"

# What COMMAND leaves running in its group when it exits ends with it:
# nothing of a run goes on after it (a released key's next run would
# meet it).  COMMAND closes its output before it exits, so its exit is
# seen after the end of its output (the other order was already ended).
run a left1 --key k24 -- sh -c 'sleep 31 >/dev/null 2>&1 & echo $!; exec >&- 2>&-; sleep 0.3'
left=$(cat "$T/left1.o")
expect_eq "left behind: run exits with COMMAND's status" 0 "$(rc left1)"
# gone or a zombie (where nothing reaps orphans, kill -0 still finds it)
gone_pid() { case "$(ps -o stat= -p "$1" 2>/dev/null)" in ""|Z*) return 0 ;; esac; return 1; }
wait_until 2 gone_pid "$left" || true
expect_eq "left behind: its background child is gone" yes \
	"$(gone_pid "$left" && echo yes || echo no)"

# A descendant that left COMMAND's group (setsid, a daemon's double fork)
# escapes the group's kill: it must not go on after the run either (the
# failure releases the key, so the next delivery would meet it).  One
# leaves by setsid, the other is its child in turn.
run a esc1 --key k25 -- sh -c 'setsid sh -c "sleep 33 & echo \$! >\"\$JOBLOG.esc2\"; exec sleep 32" </dev/null >/dev/null 2>&1 & echo $!; sleep 0.3; exit 3'
esc=$(cat "$T/esc1.o")
esc2=$(cat "$LOG.esc2" 2>/dev/null)
expect_eq "escaped: run exits with COMMAND's status" 3 "$(rc esc1)"
expect_match "escaped: two processes started" '^[0-9]+ [0-9]+$' "$esc $esc2"
wait_until 2 gone_pid "$esc" || true
expect_eq "escaped: the setsid child is gone" yes \
	"$(gone_pid "$esc" && echo yes || echo no)"
wait_until 2 gone_pid "$esc2" || true
expect_eq "escaped: its own child is gone" yes \
	"$(gone_pid "$esc2" && echo yes || echo no)"
expect_match "escaped: one line says so" 'ended 2 processes' "$(cat "$T/esc1.e")"
# A child run had before COMMAND is not COMMAND's: a shell that ends in
# "exec idemctl run" hands its own background jobs over (a logger, say).
sh -c 'sleep 34 & echo $! >"$1"; exec "$2" -c "$3" run --key k27 -- true' sh \
	"$T/had.pid" "$IDEMCTL" "$T/a.conf" >"$T/had.o" 2>"$T/had.e"
rc=$?
had=$(cat "$T/had.pid")
expect_eq "a child run had before COMMAND: left alone" "0 yes" \
	"$rc $(gone_pid "$had" && echo no || echo yes)"
kill "$had" 2>/dev/null

# 7. The store stopped: nothing runs, exit 69.
mariadb_stop
n0=$(starts)
run a s1 --key k9 -- "$T/job.sh" down 0 0
expect_eq "store down: exit 69" 69 "$(rc s1)"
expect_eq "store down: COMMAND did not run" "$n0" "$(starts)"
expect_eq "store down: one line" 1 "$(wc -l <"$T/s1.e" | tr -d ' ')"
mariadb_start || not_ok "MariaDB restarts"

# The store stops while COMMAND runs and stays down for longer than a
# lease (3 s) after it finished: run keeps its outcome and writes it when
# the store is back (within the key's ttl, SPEC 2b), so the redelivery
# replays it instead of running COMMAND again.
n0=$(starts)
"$IDEMCTL" -c "$T/a.conf" run --key k9o -- "$T/job.sh" late 1.5 0 >"$T/o1.o" 2>"$T/o1.e" </dev/null &
o1=$!
o1_started() { [ "$(starts)" -gt "$n0" ]; }
wait_until 5 o1_started || true
mariadb_stop
sleep 6
mariadb_start || not_ok "MariaDB restarts"
wait "$o1"
expect_eq "outage after COMMAND: run exits with its status" 0 "$?"
expect_match "... and said it was waiting to record it" 'retrying to record the outcome' "$(cat "$T/o1.e")"
run b o2 --key k9o --wait 20s -- "$T/job.sh" late 1.5 0
expect_eq "outage after COMMAND: the redelivery replays" "0 1" "$(rc o2) $(($(starts) - n0))"
expect_file_eq "outage after COMMAND: the same stdout" "$T/o1.o" "$T/o2.o"

# A failure during an outage releases nothing a lapsed lease does not:
# run exits with COMMAND's status at once, not when the store is back.
n0=$(starts)
"$IDEMCTL" -c "$T/a.conf" run --key k9f -- "$T/job.sh" fail 1.5 7 >"$T/o3.o" 2>"$T/o3.e" </dev/null &
o3=$!
wait_until 5 o1_started || true
mariadb_stop
o3_gone() { ! kill -0 "$o3" 2>/dev/null; }
wait_until 8 o3_gone
expect_eq "a failure during an outage: run exits before the store is back" 0 "$?"
mariadb_start || not_ok "MariaDB restarts"
wait "$o3"
expect_eq "... with COMMAND's status" 7 "$?"
expect_match "... and says the outcome was not recorded" 'outcome not recorded' "$(cat "$T/o3.e")"

# A database without the schema: 6 and one line (only an operator can mend
# it; 69 would have a queue redeliver for ever), nothing runs.
TESTROOT=$T mariadb_newdb "${TNAME}_empty" || not_ok "create an empty database"
sed "s|$DBCNF|$T/${TNAME}_empty.cnf|" "$T/a.conf" >"$T/empty.conf"
n0=$(starts)
"$IDEMCTL" -c "$T/empty.conf" run --key k9s -- "$T/job.sh" x 0 0 >"$T/e1.o" 2>"$T/e1.e" </dev/null
expect_eq "schema missing: exit 6, one line" "6 1" "$? $(wc -l <"$T/e1.e" | tr -d ' ')"
expect_match "... saying so" 'schema missing' "$(cat "$T/e1.e")"
expect_eq "schema missing: COMMAND did not run" "$n0" "$(starts)"

# stdin closed (cron, "<&-") is empty input, as /dev/null: COMMAND runs.
n0=$(starts)
"$IDEMCTL" -c "$T/a.conf" run --key k9c -- "$T/job.sh" closed 0 0 >"$T/c1.o" 2>"$T/c1.e" <&-
expect_eq "stdin closed: runs, exit 0" "0 1" "$? $(($(starts) - n0))"
run a c2 --key k9c -- "$T/job.sh" closed 0 0
expect_eq "stdin closed, then /dev/null: the same input, a replay" "0 1" "$(rc c2) $(($(starts) - n0))"

# Usage errors are one line and exit 1.
"$IDEMCTL" -c "$T/a.conf" run -- /bin/true >"$T/u.o" 2>"$T/u.e"
expect_eq "usage: --key is required" 1 "$?"
expect_eq "usage: one line, as every failure" 1 "$(wc -l <"$T/u.e" | tr -d ' ')"
"$IDEMCTL" -c "$T/a.conf" run --key k10 >"$T/u.o" 2>"$T/u.e"
expect_eq "usage: COMMAND is required" 1 "$?"
run a u3 --key k10 --ttl nonsense -- /bin/true
expect_eq "usage: a bad duration" 1 "$(rc u3)"
# Two keys: which one was meant is not ours to guess.
n0=$(starts)
run a u4 --key k10a --key k10b -- "$T/job.sh" x 0 0
expect_eq "usage: --key twice, refused, COMMAND not run" "1 0" "$(rc u4) $(($(starts) - n0))"
expect_match "usage: --key twice, says so" 'run: --key given twice' "$(cat "$T/u4.e")"
"$IDEMCTL" -c "$T/a.conf" run -c "$T/a.conf" --key k10c -- "$T/job.sh" x 0 0 >"$T/u6.o" 2>"$T/u6.e"
expect_eq "usage: -c before and after the command, refused, COMMAND not run" "1 0" "$? $(($(starts) - n0))"
# An empty scope is a variable left unset ("--scope $TENANT"), not the
# default one: refused.
run a u5 --key k10a --scope '' -- "$T/job.sh" x 0 0
expect_eq "usage: an empty --scope, refused, COMMAND not run" "1 0" "$(rc u5) $(($(starts) - n0))"
# Past what the store can date (100 years): a usage error, not 69 with
# SQL's words, which a queue would redeliver for ever.
for o in --ttl --lease --timeout; do
	run a u4 --key k10 "$o" 3000000d -- /bin/true
	expect_eq "usage: $o 3000000d" "1 1" "$(rc u4) $(wc -l <"$T/u4.e" | tr -d ' ')"
done

# Started with stdout or stderr closed, run's own database connection must
# not take fd 1 or 2: COMMAND would get it as its stderr (and could read
# the store), and COMMAND's output would be sent to the server as SQL.
n0=$(starts)
"$IDEMCTL" -c "$T/a.conf" run --key kfd2 -- sh -c 'echo "start $$" >>"$JOBLOG"; readlink /proc/self/fd/2 >"$JOBLOG.fd2"' </dev/null >"$T/fd2.o" 2>&-
expect_eq "stderr closed: runs, exit 0" "0 1" "$? $(($(starts) - n0))"
expect_eq "stderr closed: COMMAND's stderr is /dev/null, not the store" /dev/null "$(cat "$LOG.fd2")"
# A COM_QUERY packet: 3 bytes of length, sequence 0, command 3, the text.
"$IDEMCTL" -c "$T/a.conf" run --key kfd1 -- sh -c 'printf "\041\000\000\000\003CREATE TABLE job_out_sql (x INT)"' </dev/null >&- 2>"$T/fd1.e"
expect_eq "stdout closed: exit 0" 0 "$?"
expect_eq "stdout closed: COMMAND's output never reached the server" "" \
    "$(db_query "$TNAME" "SHOW TABLES LIKE 'job_out_sql'")"
expect_eq "stdout closed: the outcome is recorded" 1 \
    "$(db_query "$TNAME" "SELECT state FROM idem_keys WHERE idem_key = 'kfd1'")"

# Output that cannot be written (a full disk) is not lost in silence: one
# line (the status stays COMMAND's); the outcome is kept, so a redelivery
# replays it.
n0=$(starts)
"$IDEMCTL" -c "$T/a.conf" run --key kfull -- "$T/job.sh" full 0 0 </dev/null >/dev/full 2>"$T/full1.e"
expect_eq "stdout full: COMMAND's status, one line, COMMAND ran" "0 1 1" "$? $(wc -l <"$T/full1.e" | tr -d ' ') $(($(starts) - n0))"
expect_match "... saying the output is lost" 'cannot write stdout.*replays' "$(cat "$T/full1.e")"
run a full2 --key kfull -- "$T/job.sh" full 0 0
printf 'full\000\001\377\n' >"$T/wantfull"
expect_eq "stdout full: the redelivery replays, exit 0" "0 1" "$(rc full2) $(($(starts) - n0))"
expect_file_eq "stdout full: ... the whole output" "$T/wantfull" "$T/full2.o"
"$IDEMCTL" -c "$T/a.conf" run --key kfull -- "$T/job.sh" full 0 0 </dev/null >/dev/full 2>"$T/full3.e"
expect_eq "stdout full on a replay: the recorded status, one line" "0 1" "$? $(wc -l <"$T/full3.e" | tr -d ' ')"
# stdin that cannot be read is an I/O error (74), not a reused key (65).
"$IDEMCTL" -c "$T/a.conf" run --key kdir -- /bin/true <"$T" >/dev/null 2>"$T/dir.e"
expect_eq "stdin unreadable: exit 74, one line" "74 1" "$? $(wc -l <"$T/dir.e" | tr -d ' ')"

# A COMMAND whose file name is not UTF-8 (or holds control bytes) runs; its
# route names it escaped (was: the store refused the name, exit 69 on
# every delivery).
ln -s "$T/job.sh" "$T/$(printf 'job\377\001.sh')"
n0=$(starts)
run a nu1 --key knu -- "$T/$(printf 'job\377\001.sh')" odd 0 0
expect_eq "name not UTF-8: runs, exit 0" "0 1" "$(rc nu1) $(($(starts) - n0))"
expect_eq "name not UTF-8: the route escapes it" 'job:job\xff\x01.sh' \
    "$(h_sqlroot -r "$TNAME" -e "SELECT route FROM idem_keys WHERE idem_key = 'knu'")"
run a nu2 --key knu -- "$T/$(printf 'job\377\001.sh')" odd 0 0
expect_eq "name not UTF-8: the redelivery replays" "0 1" "$(rc nu2) $(($(starts) - n0))"
long=$(printf 'j%.0s' $(seq 1 198))$(printf '\303\251')x
ln -s "$T/job.sh" "$T/$long"
run a nu3 --key knu3 -- "$T/$long" long 0 0
expect_eq "a long name cut inside a character: runs, exit 0" 0 "$(rc nu3)"
expect_eq "... its route cut at a whole escape" "job:$(printf 'j%.0s' $(seq 1 198))" \
    "$(db_query "$TNAME" "SELECT route FROM idem_keys WHERE idem_key = 'knu3'")"

# The keeper holds only its pipe (and /dev/null on 0 1 2): not run's MySQL
# connection, not the stdout a reader waits to see closed; also where
# close_range(2) is refused (a kernel before 5.9, an older container
# seccomp profile).
keeper_fds() { # keeper_fds TAG [WRAPPER]: the fds of a run's keeper
	local tag=$1 runner keeper
	shift
	"$@" "$IDEMCTL" -c "$T/a.conf" run --key "kfd-$tag" -- sh -c "echo \$\$ >\"\$JOBLOG.fd$tag\"; sleep 2" >"$T/fd$tag.o" 2>"$T/fd$tag.e" </dev/null &
	runner=$!
	H_BGPIDS+=($runner)
	wait_until 5 test -s "$LOG.fd$tag"
	keeper=$(ps -o pid=,comm= --ppid "$runner" | awk '$2 == "idemctl" { print $1 }' | head -1)
	if [ -n "$keeper" ]; then
		ls "/proc/$keeper/fd" | sort -n | tr '\n' ' ' | sed 's/ $//'
	else
		echo "no keeper: $(cat "$T/fd$tag.e")"
	fi
	wait "$runner"
}
expect_eq "keeper: fds 0 1 2 and its pipe only" "0 1 2 3" "$(keeper_fds plain)"
expect_eq "keeper, close_range refused: fds 0 1 2 and its pipe only" "0 1 2 3" \
    "$(keeper_fds ncr "$ITBIN/no_close_range")"

done_testing
