#!/bin/bash
# Two idemgate processes on one database: 20 concurrent same-key requests run the handler once.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
pair_setup "[route /payments]
handler = cgi:$PAY
wait = 15s" || { done_testing; exit 1; }

K=$(new_key)
for i in $(seq 1 20); do
	w=weba
	[ $((i % 2)) = 0 ] && w=webb
	http_bg c$i POST "$(url $w /payments?sleep=800)" -H "Idempotency-Key: $K" \
		-H 'Content-Type: application/json' --data-binary '{"amount":20}'
done
bg_wait
good=0 same=0 hsame=0 created=0
for i in $(seq 1 20); do
	[ "$(st c$i)" = 201 ] && good=$((good + 1))
	cmp -s "$T/c1.b" "$T/c$i.b" && same=$((same + 1))
	[ "$(hdr_block c1)" = "$(hdr_block c$i)" ] && hsame=$((hsame + 1))
	[ "$(hdr c$i Idempotency-Result)" = created ] && created=$((created + 1))
done
expect_eq "20 concurrent over 2 gateways: all 201" 20 "$good"
expect_eq "20 concurrent: all bodies identical" 20 "$same"
expect_eq "20 concurrent: all header blocks identical" 20 "$hsame"
expect_eq "20 concurrent: exactly one created" 1 "$created"
expect_eq "20 concurrent: handler ran once" 1 "$(runs pay)"

# Distinct keys at once: each runs once.
for i in $(seq 1 10); do
	w=weba
	[ $((i % 2)) = 0 ] && w=webb
	http_bg d$i POST "$(url $w /payments)" -H "Idempotency-Key: $K-d$i" --data-binary "d$i"
done
bg_wait
good=0
for i in $(seq 1 10); do [ "$(hdr d$i Idempotency-Result)" = created ] && good=$((good + 1)); done
expect_eq "10 distinct keys: all created" 10 "$good"
expect_eq "10 distinct keys: 10 more runs" 11 "$(runs pay)"
http e POST "$(url webb /payments)" -H "Idempotency-Key: $K-d1" --data-binary "d1"
expect_eq "a key created through gateway a replays through gateway b" reused "$(hdr e Idempotency-Result)"
done_testing
