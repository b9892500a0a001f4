#!/bin/bash
# In-progress keys: waiters get the replay, 409 past wait, lease renewal, takeover after kill -9 of the owner.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
SW=$(cgi_install sw)
LE=$(cgi_install lease)
std_setup "[route /payments]
handler = cgi:$PAY
wait = 10s

[route /short-wait]
handler = cgi:$SW
wait = 1s

[route /no-wait]
handler = cgi:$SW
wait = 0s
lease = 20s

[route /lease]
handler = cgi:$LE
lease = 1s
timeout = 3s
wait = 12s" || { done_testing; exit 1; }

# A waiter gets the owner's answer, soon after the owner finishes.
K=$(new_key)
http_bg w1 POST "$(url web /payments?sleep=1500)" -H "Idempotency-Key: $K" --data-binary 'w'
pay_started() { [ "$(runs pay)" -ge 1 ]; }
wait_until 5 pay_started || true
http_bg w2 POST "$(url web /payments?sleep=1500)" -H "Idempotency-Key: $K" --data-binary 'w'
http_bg w3 POST "$(url web /payments?sleep=1500)" -H "Idempotency-Key: $K" --data-binary 'w'
bg_wait
expect_eq "in progress: owner 201" 201 "$(st w1)"
expect_eq "in progress: waiter 201" 201 "$(st w2)"
expect_eq "in progress: waiter reused" reused "$(hdr w2 Idempotency-Result)"
expect_file_eq "in progress: waiter got the owner's body" "$T/w1.b" "$T/w2.b"
expect_file_eq "in progress: second waiter too" "$T/w1.b" "$T/w3.b"
expect_eq "in progress: handler ran once" 1 "$(runs pay)"
lat=$(($(cat "$T/w2.end") - $(cat "$T/w1.end")))
[ "$lat" -lt 0 ] && lat=$((-lat))
echo "# waiter finished ${lat} ms after the owner"
expect_lt "in progress: waiter done < 1 s after the owner" "$lat" 1000

# Past wait: 409 + Retry-After.
K=$(new_key)
http_bg x1 POST "$(url web /short-wait?sleep=3000)" -H "Idempotency-Key: $K" --data-binary 'x'
sw_started() { [ "$(runs sw)" -ge 1 ]; }
wait_until 5 sw_started || true
t0=$(now_ms)
http x2 POST "$(url web /short-wait?sleep=3000)" -H "Idempotency-Key: $K" --data-binary 'x'
dt=$(($(now_ms) - t0))
is_problem "past wait" x2 409 key-in-progress
ra=$(hdr x2 Retry-After)
expect_match "past wait: Retry-After seconds" '^[0-9]+$' "$ra"
# The route's wait (1 s), not the lease left (60 s): a retry waits that
# long itself and is woken when the run ends.
expect_eq "past wait: Retry-After is the route's wait" 1 "$ra"
if [ "$dt" -ge 800 ] && [ "$dt" -lt 2500 ]; then ok "past wait: waited about wait = 1s"; else
	not_ok "past wait: waited about wait = 1s" "${dt} ms"; fi
bg_wait
expect_eq "past wait: owner finished 201" 201 "$(st x1)"
http x3 POST "$(url web /short-wait?sleep=3000)" -H "Idempotency-Key: $K" --data-binary 'x'
expect_eq "past wait: later retry replays" reused "$(hdr x3 Idempotency-Result)"
expect_eq "past wait: handler ran once" 1 "$(runs sw)"

# wait = 0: 409 at once, and Retry-After the lease left (not 1 s: a
# client would poll every second).
K=$(new_key)
n0=$(runs sw)
http_bg n1 POST "$(url web /no-wait?sleep=2000)" -H "Idempotency-Key: $K" --data-binary 'n'
n1_started() { [ "$(runs sw)" -gt "$n0" ]; }
wait_until 5 n1_started || true
http n2 POST "$(url web /no-wait?sleep=2000)" -H "Idempotency-Key: $K" --data-binary 'n'
is_problem "wait = 0" n2 409 key-in-progress
ra=$(hdr n2 Retry-After)
if [ -n "$ra" ] && [ "$ra" -ge 15 ] 2>/dev/null && [ "$ra" -le 20 ]; then ok "wait = 0: Retry-After the lease left"; else
	not_ok "wait = 0: Retry-After the lease left" "got '$ra'"; fi
bg_wait

# A slow but alive owner renews its lease (1s) and is never taken over.
K=$(new_key)
http_bg r1 POST "$(url web /lease?sleep=2500)" -H "Idempotency-Key: $K" --data-binary 'r'
sleep 1.6
http r2 POST "$(url web /lease?sleep=2500)" -H "Idempotency-Key: $K" --data-binary 'r'
bg_wait
expect_eq "lease renewal: owner 201" 201 "$(st r1)"
expect_eq "lease renewal: retry after the lease replays" reused "$(hdr r2 Idempotency-Result)"
expect_file_eq "lease renewal: same body" "$T/r1.b" "$T/r2.b"
expect_eq "lease renewal: handler ran once" 1 "$(runs lease)"

# The owner worker dies (kill -9): after the lease and the run deadline
# (timeout 3 s + kill grace) exactly one retry takes over.
K=$(new_key)
n0=$(runs lease)
http_bg k1 POST "$(url web /lease?sleep=2500)" -H "Idempotency-Key: $K" --data-binary 'k'
started() { [ "$(runs lease)" -gt "$n0" ]; }
if wait_until 5 started; then
	owner=$(tail -1 "$T/cgi/lease.runs" | sed -n 's/.* ppid=\([0-9]*\) .*/\1/p')
	if gw_workers gw | grep -qw "$owner"; then
		ok "takeover: owner is a worker ($owner)"
		kill -9 "$owner"
	else
		not_ok "takeover: owner is a worker" "ppid $owner not in $(gw_workers gw)"
	fi
	sleep 0.2
	# the run that takes over need not be slow: X-Sleep (not
	# fingerprinted) makes it 0.3 s
	for i in 1 2 3; do
		http_bg kr$i POST "$(url web /lease?sleep=2500)" -H "Idempotency-Key: $K" \
			-H 'X-Sleep: 300' --data-binary 'k'
	done
	bg_wait
	expect_match "takeover: the dead owner's client got an error" '^(5..|000)$' "$(st k1)"
	for i in 1 2 3; do expect_eq "takeover: retry $i 201" 201 "$(st kr$i)"; done
	expect_file_eq "takeover: retries 1 and 2 identical" "$T/kr1.b" "$T/kr2.b"
	expect_file_eq "takeover: retries 1 and 3 identical" "$T/kr1.b" "$T/kr3.b"
	created=$(for i in 1 2 3; do hdr kr$i Idempotency-Result; done | grep -c '^created$')
	expect_eq "takeover: exactly one retry ran the handler" 1 "$created"
	expect_eq "takeover: handler ran exactly twice in all" $((n0 + 2)) "$(runs lease)"
else
	not_ok "takeover: owner started"
	bg_wait
fi
done_testing
