#!/bin/bash
# No orphans: when a worker dies (kill -9), the handlers it started and
# their children, setsid ones included, die with it; the client is not
# left waiting, and a takeover after the lease never runs beside an
# orphan.  Stopping the gateway leaves nothing behind either.
. "$(dirname "$0")/../lib/harness.sh"

P=$(cgi_install pay)
# a run that leaves a setsid worker behind, then outlives its timeout
S=$T/cgi/tsid
cat >"$S" <<'EOF'
#!/bin/sh
setsid sh -c 'echo $$ >>"$0.sid"; echo start >>"$0.work"; sleep 6; echo end >>"$0.work"' "$0" </dev/null >/dev/null 2>&1 &
sleep 30
EOF
chmod 0755 "$S"
# the same, answering a released status (503) at once instead
S5=$T/cgi/tsid503
cat >"$S5" <<'EOF'
#!/bin/sh
setsid sh -c 'echo $$ >>"$0.sid"; sleep 6; echo end >>"$0.work"' "$0" </dev/null >/dev/null 2>&1 &
# answers once the worker has written its pid (at most 2 s), so the test
# knows which process to look for
i=0
while [ ! -s "$0.sid" ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i + 1)); done
printf 'Status: 503\r\nContent-Type: text/plain\r\n\r\nbusy\n'
EOF
chmod 0755 "$S5"
# a setsid worker that clears its environment (no IDEMGATE_RUN mark left),
# then a run that outlives its timeout
SE=$T/cgi/tsidenv
cat >"$SE" <<'EOF'
#!/bin/sh
setsid env -i sh -c 'echo $$ >>"$0.sid"; sleep 6; echo end >>"$0.work"' "$0" </dev/null >/dev/null 2>&1 &
sleep 30
EOF
chmod 0755 "$SE"
# a program that clears its environment, answers a whole 503 (a released
# status) and runs on with its stdout open
SL=$T/cgi/tlinger
cat >"$SL" <<'EOF'
#!/bin/sh
exec env -i F="$0" sh -c 'echo $$ >>"$F.sid"; printf "Status: 503\r\nContent-Length: 5\r\n\r\nbusy\n"; sleep 6; echo end >>"$F.work"'
EOF
chmod 0755 "$SL"
# a program that leaves a child in its process group, pipes let go, and
# exits with a whole 200: the child is part of the run until its timeout
SB=$T/cgi/tbg
cat >"$SB" <<'EOF'
#!/bin/sh
sh -c 'echo $$ >>"$0.sid"; sleep 4; echo end >>"$0.work"' "$0" </dev/null >/dev/null 2>&1 &
printf 'Status: 200\r\nContent-Type: text/plain\r\n\r\nok\n'
EOF
chmod 0755 "$SB"
# a program that answers, then leaves a setsid worker holding its stdout
# (the answer is whole when the program exits): the worker goes at the
# route's timeout, with the group, not at the longest timeout of all
SH=$T/cgi/tsdhold
cat >"$SH" <<'EOF'
#!/bin/sh
printf 'Status: 200\r\nContent-Type: text/plain\r\n\r\nok\n'
setsid sh -c 'echo $$ >>"$0.sid"; sleep 6; echo end >>"$0.work"' "$0" </dev/null 2>/dev/null &
i=0
while [ ! -s "$0.sid" ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i + 1)); done
EOF
chmod 0755 "$SH"
std_setup "[route /pay]
handler = cgi:$P
lease = 2s
timeout = 10s
wait = 15s

[route /tsid]
handler = cgi:$S
timeout = 1s

[route /tsid503]
handler = cgi:$S5
timeout = 10s

[route /tsidenv]
handler = cgi:$SE
timeout = 1s

[route /tlinger]
handler = cgi:$SL
timeout = 10s

[route /tbg]
handler = cgi:$SB
timeout = 1s
ttl = 1s

[route /tsdhold]
handler = cgi:$SH
timeout = 1s
ttl = 1s" \
	"workers = 1" "threads = 4" || { done_testing; exit 1; }

# pids_of FILE: the pid= fields of a runs file, or the lines of a child file
handler_pids() { sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$P.runs" 2>/dev/null; }
child_pids() { cat "$P.child" 2>/dev/null; }
# dying PID: a SIGKILL is pending for it (sent; a process in the middle of
# a disk wait dies when that ends, and runs no more of its own code), or
# it is exiting already (PF_EXITING in /proc/PID/stat's flags)
dying() {
	local m f
	for m in $(sed -n 's/^\(SigPnd\|ShdPnd\):[[:space:]]*//p' "/proc/$1/status" 2>/dev/null); do
		(((16#$m >> 8) & 1)) && return 0
	done
	f=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f7)
	[ -n "$f" ] && (((f & 4) != 0)) && return 0
	return 1
}
living() { # living PID...: how many are alive (zombies and the dying do not count)
	local n=0 p
	for p in "$@"; do
		[ -d "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null &&
			! dying "$p" && n=$((n + 1))
	done
	echo $n
}
left() { # left PID...: one comment line per process still alive
	local p
	for p in "$@"; do
		[ "$(living "$p")" = 1 ] && echo "# left: $p $(tr "\0" " " <"/proc/$p/cmdline" 2>/dev/null) $(grep -E '^(State|SigPnd|ShdPnd|PPid)' "/proc/$p/status" 2>/dev/null | tr '\n\t' '  ') flags $(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f7)"
	done
	return 0
}
gone() { [ "$(living "$@")" = 0 ]; }	# gone PID...: none alive

K=$(new_key)
http_bg a POST "$(url web '/pay?sleep=8000&child=1&exclusive=1')" -H "Idempotency-Key: $K" --data-binary x
http_bg b GET "$(url web '/pay?bgchild=20000&setsid=1&linger=1')"
wait_until 5 sh -c "[ \$(cat '$P.child' 2>/dev/null | wc -l) -ge 2 ]" || not_ok "handlers started their children"
sleep 0.3
hp=$(handler_pids)
cp=$(child_pids)
expect_eq "handlers and children are running (b exited)" 3 "$(living $hp $cp)"
w=$(gw_workers gw)
t0=$(now_ms)
kill -9 $w
wait_until 5 gone $hp $cp
expect_eq "worker killed: no handler or child outlives it" 0 "$(living $hp $cp)"
left $hp $cp
expect_lt "worker killed: within 3 s" "$(($(now_ms) - t0))" 3000
bg_wait
expect_lt "worker killed: the client is not kept waiting" "$(($(cat "$T/a.end") - t0))" 5000
expect_match "worker killed: the supervisor said so" 'left behind by a handler' "$(cat "$T/gw.log")"

# After the lease and the run deadline (timeout + kill grace: 13 s from
# the claim), a retry takes the key over: it waits for that, then runs
# alone (an orphan would still hold the handler's lock for the rest of
# its 8 s).
wait_until 10 gw_has_workers gw
sleep 2.5
t1=$(now_ms)
http c POST "$(url web '/pay?sleep=8000&child=1&exclusive=1')" -H "Idempotency-Key: $K" --data-binary x
expect_eq "after the lease: the retry runs" created "$(hdr c Idempotency-Result)"
# Taken over at the lease it would have run 8 s; it waited for the run
# deadline first.
expect_lt "the retry waited for the run deadline" 10000 "$(($(now_ms) - t1))"
expect_eq "never two at once" 0 "$(cat "$P.overlap" 2>/dev/null | wc -l)"

# released OUT PATH SIDFILE STATUS LABEL: a run of key K answered STATUS
# and released; the setsid worker it left (its pid last in SIDFILE) is
# gone before the release.
released() {
	local sp seen t_ans
	http "$1" POST "$(url web "$2")" -H "Idempotency-Key: $K" --data-binary x
	t_ans=$(now_ms)
	expect_eq "$5: $4" "$4" "$HS"
	sp=$(tail -1 "$3" 2>/dev/null)
	expect_match "$5: the setsid worker had started" '^[0-9]+$' "$sp"
	wait_until 1 gone "$sp"
	# one look, said as it was seen when it fails
	seen=$(left "$sp")
	expect_eq "$5: killed before the key is released" "" "$seen"
	if [ -n "$seen" ]; then
		echo "# ... seen $(($(now_ms) - t_ans)) ms after the answer; wchan $(cat "/proc/$sp/wchan" 2>/dev/null)"
		wait_until 5 gone "$sp"
		echo "# ... gone $(($(now_ms) - t_ans)) ms after the answer"
	fi
	return 0
}

# A run that timed out is released for a retry; what it left running
# outside its process group (setsid) goes first, so the retry never runs
# beside it.
K=$(new_key)
released s1 /tsid "$S.sid" 504 "setsid left by a timed-out run"
http s2 POST "$(url web /tsid)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "setsid: the retry ran (504 again)" "504 2" "$HS $(grep -c start "$S.work")"
sleep 0.5
expect_eq "setsid: no first run's work finished beside the retry" 0 "$(grep -c end "$S.work")"

# A complete answer with a released status (503): its setsid worker
# goes before the release too, though the run's own timeout is far off.
K=$(new_key)
released s5 /tsid503 "$S5.sid" 503 "setsid left by a 503 answer"

# The same when the setsid worker cleared its environment (no mark left
# to find it by): found as a descendant of the run, before the group's
# kill at the timeout.
K=$(new_key)
released se1 /tsidenv "$SE.sid" 504 "setsid without the mark, left by a timed-out run"
# A program that cleared its environment and runs on after a whole 503:
# its group is killed before the release, not at its timeout.
K=$(new_key)
released sl1 /tlinger "$SL.sid" 503 "a program running on after a whole 503"
sleep 0.3
http sl2 POST "$(url web /tlinger)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "running on after a 503: the retry ran" "503 2" "$HS $(wc -l <"$SL.sid")"
# A child left in the group after a whole 200 (pipes let go): the run
# goes on until the route's timeout, which ends it, and the key does not
# end before (ttl 1 s < timeout 1 s + the kill grace).
K=$(new_key)
http b1 POST "$(url web /tbg)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "a child left in the group: the answer" "200 created" "$HS $(hdr b1 Idempotency-Result)"
bp=$(tail -1 "$SB.sid" 2>/dev/null)
# past the ttl's whole second (2 s at most), within the run deadline
sleep 2.3
http b2 POST "$(url web /tbg)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "... a retry past the ttl while it may run: replayed" "200 reused" "$HS $(hdr b2 Idempotency-Result)"
expect_eq "... the child killed at the route's timeout" 0 "$(living "$bp")"
sleep 2
expect_eq "... its work never finished" 0 "$(cat "$SB.work" 2>/dev/null | grep -c end)"
expect_eq "... the program ran once" 1 "$(wc -l <"$SB.sid")"

# A setsid worker holding the stdout of a whole answer: killed at the
# route's timeout (1 s) with the lingering group, found by the run's mark
# (was: by the supervisor after the longest timeout, 10 s here, while a
# retry past the key's run deadline ran beside it).
K=$(new_key)
t0=$(now_ms)
http h1 POST "$(url web /tsdhold)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "setsid worker holding stdout: the answer" "200 created" "$HS $(hdr h1 Idempotency-Result)"
hp=$(tail -1 "$SH.sid" 2>/dev/null)
expect_match "... the worker had started" '^[0-9]+$' "$hp"
wait_until 4 gone "$hp"
expect_eq "... killed at the route's timeout" 0 "$(living "$hp")"
left "$hp"
expect_lt "... within the timeout and a tick or two" "$(($(now_ms) - t0))" 2500
sleep 5.5
expect_eq "... its work never finished" 0 "$(cat "$SH.work" 2>/dev/null | grep -c end)"

# Stopping the gateway kills what handlers left behind.
: >"$P.child"
http d GET "$(url web '/pay?bgchild=20000&setsid=1')"
expect_eq "a setsid child is running" 1 "$(living $(child_pids))"
gw_stop gw
expect_eq "stopped: the setsid child is gone" 0 "$(living $(child_pids))"

# The supervisor and its worker killed with -9 at once: no one is left to
# sweep, but the handler itself dies with the worker (its parent-death
# signal), so a takeover after the run deadline cannot run beside it.
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
: >"$P.runs"
http_bg e POST "$(url web '/pay?sleep=8000&exclusive=1')" -H "Idempotency-Key: $(new_key)" --data-binary x
wait_until 5 sh -c "[ -n \"\$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' '$P.runs')\" ]" || not_ok "e: the handler started"
hp=$(handler_pids)
expect_eq "e: the handler runs" 1 "$(living $hp)"
kill -9 "${GW_PID[gw]}" $(gw_workers gw)
t0=$(now_ms)
hp_gone() { [ "$(living $hp)" = 0 ]; }
wait_until 3 hp_gone
expect_eq "supervisor and worker killed at once: the handler dies with them" 0 "$(living $hp)"
expect_lt "e: at once" "$(($(now_ms) - t0))" 1500
bg_wait
done_testing
