#!/bin/bash
# Complete means complete, broken means broken, noise is bounded:
# - an answer whole by its Content-Length, by closing stdout, or by the
#   program's exit (a child still holding stdout) is delivered and
#   recorded at once; what still runs is killed at the timeout;
# - a handler that times out after part of its answer went out breaks the
#   client's transfer and leaves a tombstone (never a second run); before
#   any of it went out, it is a timeout like any other (504, released);
# - Status: 1xx is invalid output (502); a body short of its
#   Content-Length is broken (502, tombstone); stderr reaches the log
#   bounded;
#   keys never appear whole in the log.
. "$(dirname "$0")/../lib/harness.sh"

P=$(cgi_install pay)
# Answers whose Content-Length cannot frame them: fewer bytes than
# announced, and not a number.
for v in short:10 nan:abc; do
	printf '#!/bin/sh\necho $$ >>"$0.runs"\nprintf '"'"'Status: 201 Created\\r\\nContent-Type: text/plain\\r\\nContent-Length: %s\\r\\n\\r\\nabc'"'"'\n' "${v#*:}" >"$T/cl-${v%%:*}.sh"
	cgi_install "cl-${v%%:*}" "$T/cl-${v%%:*}.sh" >/dev/null
done
# the same short body under a status the route releases (503)
sed 's/Status: 201 Created/Status: 503 Busy/' "$T/cl-short.sh" >"$T/cl-s503.sh"
cgi_install cl-s503 "$T/cl-s503.sh" >/dev/null
# a 304 that gives the length of what it does not send, as it may
printf '#!/bin/sh\necho $$ >>"$0.runs"\nprintf '"'"'Status: 304 Not Modified\\r\\nETag: "v1"\\r\\nContent-Length: 10\\r\\n\\r\\n'"'"'\n' >"$T/cl-304.sh"
cgi_install cl-304 "$T/cl-304.sh" >/dev/null
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF

[route /pay]
handler = cgi:$P
timeout = 2s
max_response = 1M

[route /short]
handler = cgi:$P
ttl = 1s
timeout = 4s

[route /tiny]
handler = cgi:$P
timeout = 2s
max_response = 4K

[route /cl-short]
handler = cgi:$T/cgi/cl-short

[route /cl-nan]
handler = cgi:$T/cgi/cl-nan

[route /cl-s503]
handler = cgi:$T/cgi/cl-s503

[route /cl-304]
handler = cgi:$T/cgi/cl-304
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
# Streamed, as the README advises: lighttpd's default buffers a whole
# answer and, when the backend breaks off, sends what it has as if whole.
LIGHTTPD_EXTRA='server.stream-response-body = 2' lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }
lingered() { if [ -f "$P.linger" ]; then wc -l <"$P.linger" | tr -d ' '; else echo 0; fi; }

# complete Q LABEL: a protected POST that must be answered at once, then
# replayed, with one run.
complete() {
	local q=$1 L=$2 K t0 before
	K=$(new_key)
	before=$(runs pay)
	t0=$(now_ms)
	http c1 POST "$(url web "/pay?$q")" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "$L: answered" 201 "$HS"
	expect_eq "$L: created" created "$(hdr c1 Idempotency-Result)"
	expect_lt "$L: at once, not at the timeout" "$(($(now_ms) - t0))" 1500
	expect_match "$L: the whole body" '^run=' "$(body c1)"
	http c2 POST "$(url web "/pay?$q")" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "$L: replayed" reused "$(hdr c2 Idempotency-Result)"
	expect_file_eq "$L: same body" "$T/c1.b" "$T/c2.b"
	expect_eq "$L: one run" 1 $(($(runs pay) - before))
}
complete 'linger=5000' "by Content-Length, stdout still open"
complete 'linger=5000&close=1' "stdout closed, program running"
complete 'bgchild=5000' "program exited, child holds stdout"
complete 'bgchild=5000&setsid=1' "program exited, setsid child holds stdout"
sleep 2.5
expect_eq "lingering processes were killed at the timeout" 0 "$(lingered)"

# ttl 1 s, timeout 4 s.  A run that ended with its answer keeps its key
# for the ttl alone: past it a retry runs it again.  One whose program
# lingers after answering (stdout closed, still running) keeps it until
# its run deadline (timeout + 3 s): a retry past the ttl replays, never
# runs beside the lingering run, and the first answer names that end.
K=$(new_key)
before=$(runs pay)
t0=$(date +%s)
http s1 POST "$(url web /short)" -H "Idempotency-Key: $K" --data-binary s
exp=$(date -d "$(hdr s1 Idempotency-Expires)" +%s 2>/dev/null || echo 0)
expect_lt "ended run: Idempotency-Expires names the ttl" "$exp" $((t0 + 4))
sleep_past_expires s1
http s2 POST "$(url web /short)" -H "Idempotency-Key: $K" --data-binary s
expect_eq "ended run, past its ttl: runs again" "201 created" "$HS $(hdr s2 Idempotency-Result)"
expect_eq "ended run: two runs, one after the other" 2 $(($(runs pay) - before))
K=$(new_key)
before=$(runs pay)
t0=$(date +%s)
http l1 POST "$(url web '/short?linger=3000&close=1')" -H "Idempotency-Key: $K" --data-binary l
expect_eq "lingering run: answered" "201 created" "$HS $(hdr l1 Idempotency-Result)"
exp=$(date -d "$(hdr l1 Idempotency-Expires)" +%s 2>/dev/null || echo 0)
expect_lt "lingering run: Idempotency-Expires names the run deadline" $((t0 + 6)) "$exp"
sleep 1.5
http l2 POST "$(url web '/short?linger=3000&close=1')" -H "Idempotency-Key: $K" --data-binary l
expect_eq "lingering run, past its ttl: a replay" "201 reused" "$HS $(hdr l2 Idempotency-Result)"
expect_eq "lingering run: one run" 1 $(($(runs pay) - before))
for pid in $(cat "$P.child" 2>/dev/null); do
	if alive "$pid" && ! grep -q zombie "/proc/$pid/status" 2>/dev/null; then
		[ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ] && continue	# setsid: see t_orphans
		not_ok "child $pid outlived the timeout"
	fi
done

# 5. Timeout mid-stream: 8 MB over ~4 s, max_response 1M, timeout 2 s.
K=$(new_key)
before=$(runs pay)
curl -sS --max-time 20 -o "$T/s1.b" -D "$T/s1.h" -H "Idempotency-Key: $K" \
	--data-binary x "$(url web '/pay?stream=8000000&step_ms=30&cl=1')" 2>"$T/s1.err"
rc=$?
expect_ne "mid-stream timeout: curl sees a broken transfer" 0 "$rc"
expect_lt "mid-stream timeout: body cut short" "$(stat -c %s "$T/s1.b")" 8000000
K2=$(new_key)
curl -sS --max-time 20 -o "$T/s2.b" -D "$T/s2.h" -H "Idempotency-Key: $K2" \
	--data-binary x "$(url web '/pay?stream=8000000&step_ms=30')" 2>"$T/s2.err"
expect_ne "mid-stream timeout, no Content-Length: broken transfer" 0 "$?"
http s3 POST "$(url web '/pay?stream=8000000&step_ms=30&cl=1')" -H "Idempotency-Key: $K" --data-binary x
is_problem "mid-stream timeout: retry gets the tombstone" s3 410 response-not-stored
expect_eq "mid-stream timeout: no second run" 2 $(($(runs pay) - before))

# The same before any of it left: 10 KB over a max_response of 4K still
# in the gateway's buffer (answers go out in 32 KiB records) when the
# timeout comes.  Taken back: the client gets the 504 problem, and the
# key is released as for any timeout, not kept as a tombstone.
K=$(new_key)
before=$(runs pay)
http s4 POST "$(url web '/tiny?stream=10000&step_ms=8000')" -H "Idempotency-Key: $K" --data-binary x
is_problem "timeout, nothing of the answer out yet: 504" s4 504 gateway-timeout
http s5 POST "$(url web '/tiny?stream=10000&step_ms=8000')" -H "Idempotency-Key: $K" --data-binary x
is_problem "... its key released: the retry runs (504 again)" s5 504 gateway-timeout
expect_eq "... two runs" 2 $(($(runs pay) - before))

# 10. Status 1xx is invalid output.
for s in 100 101; do
	http i$s POST "$(url web "/pay?status=$s")" -H "Idempotency-Key: $(new_key)" --data-binary x
	is_problem "Status: $s is invalid" i$s 502 bad-gateway
done

# A Content-Length the body does not fill: the run happened (its work
# too, maybe), the answer is broken: a 502 at once, not a stored answer
# whose every replay would hang, and a tombstone, never a second run.
K=$(new_key)
t0=$(now_ms)
http l1 POST "$(url web /cl-short)" -H "Idempotency-Key: $K" --data-binary x
is_problem "Content-Length short: broken output" l1 502 bad-gateway
expect_lt "Content-Length short: answered at once" "$(($(now_ms) - t0))" 1500
http l2 POST "$(url web /cl-short)" -H "Idempotency-Key: $K" --data-binary x
is_problem "Content-Length short: a retry gets the tombstone" l2 410 response-not-stored
expect_eq "Content-Length short: one run (its own log)" 1 "$(runs cl-short)"
expect_match "Content-Length short: the log says why" 'after 3 of the 10 bytes' "$(cat "$T/gw.log")"
# The handler said it failed (503, released by default): released, as
# it would be with its whole body.
K=$(new_key)
http l3 POST "$(url web /cl-s503)" -H "Idempotency-Key: $K" --data-binary x
is_problem "short body under a released status" l3 502 bad-gateway
http l4 POST "$(url web /cl-s503)" -H "Idempotency-Key: $K" --data-binary x
is_problem "short body under a released status: a retry runs again" l4 502 bad-gateway
expect_eq "short body under a released status: two runs" 2 "$(runs cl-s503)"
# A 304 (and 204, and any answer to HEAD) has no body, whatever length
# it gives: kept and replayed, not broken.
K=$(new_key)
http n1 POST "$(url web /cl-304)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "304 with a Content-Length: the handler's answer" "304 created" "$HS $(hdr n1 Idempotency-Result)"
http n2 POST "$(url web /cl-304)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "304 with a Content-Length: replayed" "304 reused \"v1\"" "$HS $(hdr n2 Idempotency-Result) $(hdr n2 ETag)"
expect_eq "304 with a Content-Length: one run" 1 "$(runs cl-304)"
# One that is no number: dropped, the web server frames the body; the
# answer is kept and replayed.
K=$(new_key)
http m1 POST "$(url web /cl-nan)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "Content-Length not a number: created" created "$(hdr m1 Idempotency-Result)"
expect_eq "Content-Length not a number: the body" abc "$(cat "$T/m1.b")"
http m2 POST "$(url web /cl-nan)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "Content-Length not a number: replayed" reused "$(hdr m2 Idempotency-Result)"
expect_file_eq "Content-Length not a number: the same body" "$T/m1.b" "$T/m2.b"
expect_eq "Content-Length not a number: one run" 1 "$(runs cl-nan)"

# stderr: 5 MB in 100-byte lines stays a few log lines.
lines0=$(wc -l <"$T/gw.log")
http e GET "$(url web '/pay?stderr=5000000')"
expect_eq "noisy stderr: answered" 201 "$HS"
lines=$(($(wc -l <"$T/gw.log") - lines0))
expect_lt "noisy stderr: bounded in the log ($lines lines)" "$lines" 40
expect_match "noisy stderr: the drop is counted" 'bytes of stderr dropped' "$(cat "$T/gw.log")"

# Keys never appear whole in the log (mismatch and 409 lines name them).
K="order-1001-secretish"
http k1 POST "$(url web /pay)" -H "Idempotency-Key: $K" --data-binary a
http k2 POST "$(url web /pay)" -H "Idempotency-Key: $K" --data-binary b
expect_eq "key log: mismatch answered" 422 "$HS"
expect_nomatch "key log: the key is not in the log" "$K" "$(cat "$T/gw.log")"
done_testing
