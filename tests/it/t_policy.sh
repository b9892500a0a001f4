#!/bin/bash
# Request policy through lighttpd and a real MariaDB: canonical
# fingerprints (JSON, forms, multipart), fingerprint_headers,
# release_statuses, key_format, keys_per_route, Idempotency-Expires and
# problem_base_url.  Runs are counted from the handler's own log.
. "$(dirname "$0")/../lib/harness.sh"

db_new "$TNAME" || { done_testing; exit 1; }
P=$(cgi_install pay)
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF

[route /canon]
handler = cgi:$P
fingerprint = canonical

[route /hdr]
handler = cgi:$P
fingerprint_headers = Api-Version

[route /release]
handler = cgi:$P
release_statuses = 429 5xx

[route /uuid]
handler = cgi:$P
key_format = uuid

[route /re]
handler = cgi:$P
key_format = /^[a-z]{20,}$/

[route /a]
handler = cgi:$P
keys_per_route = yes

[route /b]
handler = cgi:$P
keys_per_route = yes

[route /c]
handler = cgi:$P

[route /q]
handler = cgi:$P
scope = header:X-Tenant
new_keys_per_minute = 5

[route /t2]
handler = cgi:$P
ttl = 2s
EOF
sed -i 's/^threads = 8$/threads = 8\ncounters_flush = 1s/' "$T/gw.conf"
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }
post() { # post OUT PATH KEY [curl args]
	local out=$1 path=$2 key=$3
	shift 3
	http "$out" POST "$(url web "$path")" -H "Idempotency-Key: $key" "$@"
}
JS='Content-Type: application/json'

# Canonical JSON: the same value in another spelling replays.
K=$(new_key)
post j1 /canon "$K" -H "$JS" --data-binary '{"a":1,"b":[1,2]}'
post j2 /canon "$K" -H "$JS" --data-binary '{ "b":[1, 2],
  "a":1.0 }'
expect_eq "canonical JSON: created" "201 created" "$HS $(hdr j1 Idempotency-Result)"
expect_eq "canonical JSON: keys reordered, spaces, 1.0: replayed" reused "$(hdr j2 Idempotency-Result)"
expect_file_eq "canonical JSON: the same body" "$T/j1.b" "$T/j2.b"
post j3 /canon "$K" -H "$JS" --data-binary '{"a":2,"b":[1,2]}'
is_problem "canonical JSON: another value" j3 422 key-mismatch
post j4 /canon "$K" -H "$JS" --data-binary '{"a":1,"b":[2,1]}'
is_problem "canonical JSON: array order matters" j4 422 key-mismatch
expect_eq "canonical JSON: one run" 1 "$(runs pay)"
# Invalid JSON is compared as bytes.
K=$(new_key)
post i1 /canon "$K" -H "$JS" --data-binary '{"a":1,}'
post i2 /canon "$K" -H "$JS" --data-binary '{"a":1,}'
post i3 /canon "$K" -H "$JS" --data-binary '{ "a":1,}'
expect_eq "invalid JSON: the same bytes replay" reused "$(hdr i2 Idempotency-Result)"
is_problem "invalid JSON: other bytes" i3 422 key-mismatch
# Forms by sorted pairs, percent-decoded.
K=$(new_key)
post f1 /canon "$K" --data-binary 'a=1&b=x%20y'
post f2 /canon "$K" --data-binary 'b=x+y&a=1'
expect_eq "canonical form: pairs reordered, encoded otherwise: replayed" reused "$(hdr f2 Idempotency-Result)"
post f3 /canon "$K" --data-binary 'a=1&b=z'
is_problem "canonical form: another value" f3 422 key-mismatch
# Multipart: curl picks a new boundary each time.
printf 'file\000bytes\n' >"$T/up.bin"
K=$(new_key)
post m1 /canon "$K" -F a=1 -F "f=@$T/up.bin"
post m2 /canon "$K" -F a=1 -F "f=@$T/up.bin"
expect_eq "canonical multipart: a new boundary replays" "created reused" "$(hdr m1 Idempotency-Result) $(hdr m2 Idempotency-Result)"
post m3 /canon "$K" -F a=2 -F "f=@$T/up.bin"
is_problem "canonical multipart: a changed part" m3 422 key-mismatch
# Exact (the default): the same JSON respelled is another request.
K=$(new_key)
post e1 /c "$K" -H "$JS" --data-binary '{"a":1,"b":2}'
post e2 /c "$K" -H "$JS" --data-binary '{"b":2,"a":1}'
is_problem "exact: reordered JSON" e2 422 key-mismatch

# fingerprint_headers: the API version is part of the request.
K=$(new_key)
post h1 /hdr "$K" -H 'Api-Version: 2024-01-01' --data-binary x
post h2 /hdr "$K" -H 'Api-Version: 2024-01-01' --data-binary x
post h3 /hdr "$K" -H 'Api-Version: 2025-06-01' --data-binary x
expect_eq "fingerprint_headers: the same version replays" reused "$(hdr h2 Idempotency-Result)"
is_problem "fingerprint_headers: another version" h3 422 key-mismatch
post h4 /hdr "$K" --data-binary x
is_problem "fingerprint_headers: without the header" h4 422 key-mismatch

# release_statuses = 429 5xx: a 429 runs again, a 400 replays.
n0=$(runs pay)
K=$(new_key)
post r1 "/release?status=429" "$K" --data-binary x
post r2 "/release?status=429" "$K" --data-binary x
expect_eq "release 429: delivered twice" "429" "$HS"
expect_eq "release 429: ran again" $((n0 + 2)) "$(runs pay)"
K=$(new_key)
post r3 "/release?status=400" "$K" --data-binary x
post r4 "/release?status=400" "$K" --data-binary x
expect_eq "release: a 400 replays" "400 reused" "$HS $(hdr r4 Idempotency-Result)"
expect_eq "release: a 400 ran once" $((n0 + 3)) "$(runs pay)"
K=$(new_key)
post r5 "/release?status=503" "$K" --data-binary x
post r6 "/release?status=503" "$K" --data-binary x
expect_eq "release: a 503 runs again" $((n0 + 5)) "$(runs pay)"

# key_format
post u1 /uuid not-a-uuid --data-binary x
is_problem "key_format uuid: another key" u1 400 invalid-key
post u2 /uuid 6f1c2a4e-9b7d-4c3a-8e2f-1a2b3c4d5e6f --data-binary x
expect_eq "key_format uuid: a UUID" 201 "$HS"
post x1 /re abcdefghij --data-binary x
is_problem "key_format regex: too short" x1 400 invalid-key
post x2 /re abcdefghijklmnopqrstu --data-binary x
expect_eq "key_format regex: matching" 201 "$HS"
post x3 /re ABCDEFGHIJKLMNOPQRSTU --data-binary x
is_problem "key_format regex: upper case" x3 400 invalid-key

# keys_per_route: one key, two routes, two runs; each replays its own.
n0=$(runs pay)
K=$(new_key)
post a1 /a "$K" --data-binary same
post b1 /b "$K" --data-binary same
expect_eq "keys_per_route: both run" "created created $((n0 + 2))" "$(hdr a1 Idempotency-Result) $(hdr b1 Idempotency-Result) $(runs pay)"
post a2 /a "$K" --data-binary same
post b2 /b "$K" --data-binary same
expect_file_eq "keys_per_route: /a replays its own" "$T/a1.b" "$T/a2.b"
expect_file_eq "keys_per_route: /b replays its own" "$T/b1.b" "$T/b2.b"
expect_eq "keys_per_route: still two runs" $((n0 + 2)) "$(runs pay)"

# Idempotency-Expires: the row's expiry as an HTTP-date, created and reused.
K=$(new_key)
post y1 /c "$K" --data-binary exp
post y2 /c "$K" --data-binary exp
# The row expires on a whole second, the one the date names: the key
# holds until then, and may run again once it is passed.
row=$(db_query "$TNAME" "SELECT UNIX_TIMESTAMP(expires_at) FROM idem_keys WHERE idem_key = '$K'")
expect_match "Idempotency-Expires: the row expires on a whole second ($row)" '^[0-9]+\.0+$' "$row"
for o in y1 y2; do
	v=$(hdr $o Idempotency-Expires)
	expect_match "Idempotency-Expires on $o: an HTTP-date" '^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$' "$v"
done
# A replay names the row's second; the first answer's date, taken before
# the write, that second or (a second turned in between) the one before:
# never a later one.
d1=$(date -u -d "$(hdr y1 Idempotency-Expires)" +%s 2>/dev/null || echo 0)
d2=$(date -u -d "$(hdr y2 Idempotency-Expires)" +%s 2>/dev/null || echo 0)
expect_eq "Idempotency-Expires on a replay: the row's expiry" "${row%%.*}" "$d2"
expect_eq "Idempotency-Expires on the first answer: not after the row's ($d1, ${row%%.*})" 1 \
    "$(( ${row%%.*} - d1 == 0 || ${row%%.*} - d1 == 1 ))"
# ttl = 2s: a retry 0.8 s before the date replays, one 0.2 s after it runs.
KT=$(new_key)
n0=$(runs pay)
post t1 /t2 "$KT" --data-binary ttl
d=$(date -u -d "$(hdr t1 Idempotency-Expires)" +%s 2>/dev/null || echo 0)
sleep "$(awk -v d="$d" -v n="$(date +%s.%N)" 'BEGIN { s = d - 0.8 - n; print (s > 0 ? s : 0) }')"
post t2 /t2 "$KT" --data-binary ttl
expect_eq "Idempotency-Expires: before the date, a replay" reused "$(hdr t2 Idempotency-Result)"
sleep_past_expires t2
post t3 /t2 "$KT" --data-binary ttl
expect_eq "Idempotency-Expires: after the date, a run" created "$(hdr t3 Idempotency-Result)"
expect_eq "Idempotency-Expires: two runs in all" $((n0 + 2)) "$(runs pay)"
post y3 /c "$K" --data-binary other
expect_eq "Idempotency-Expires: not on a 422" "" "$(hdr y3 Idempotency-Expires)"

# problem_base_url: types become links; unset they stay urns (above).
gw_conf "$T/gw2.conf" "unix:$T/gw2.sock" "$DBCNF"
cat >>"$T/gw2.conf" <<EOF
problem_base_url = https://docs.example.com/errors/
counters_flush = 1s

[route /c]
handler = cgi:$P
require_key = yes

[route /q]
handler = cgi:$P
scope = header:X-Tenant
new_keys_per_minute = 5
EOF
gw_start gw2 "$T/gw2.conf" || { done_testing; exit 1; }
lighttpd_start web2 "unix:$T/gw2.sock" || { done_testing; exit 1; }
http p1 POST "$(url web2 /c)" --data-binary x
expect_match "problem_base_url: type is the link" '"type":"https://docs.example.com/errors/missing-key"' "$(body p1)"
# A reload keeps the base (the workers it starts had a pointer into the
# config it freed), and takes a changed one.
kill -HUP "${GW_PID[gw2]}"
sleep 2
http p2 POST "$(url web2 /c)" --data-binary x
expect_match "problem_base_url: the same after SIGHUP" '"type":"https://docs.example.com/errors/missing-key"' "$(body p2)"
sed -i 's|^problem_base_url = .*|problem_base_url = https://errors.example.net/|' "$T/gw2.conf"
kill -HUP "${GW_PID[gw2]}"
sleep 2
http p3 POST "$(url web2 /c)" --data-binary x
expect_match "problem_base_url: a changed one taken by SIGHUP" '"type":"https://errors.example.net/missing-key"' "$(body p3)"

# new_keys_per_minute = 5 per tenant, over both gateways together.
# Not in a minute's last 10 s, so the window does not turn during the
# ten requests below (a second or two, sanitizers included).
wait_until 20 sh -c '[ $(date +%S | sed "s/^0//") -lt 50 ]'
n0=$(runs pay)
ok=0 refused=0
for i in 1 2 3 4 5 6 7; do
	w=web
	[ $((i % 2)) = 0 ] && w=web2
	http q$i POST "$(url $w /q)" -H "Idempotency-Key: quota-$i-$TNAME" -H 'X-Tenant: acme' --data-binary "n=$i"
	[ "$HS" = 201 ] && ok=$((ok + 1))
	[ "$HS" = 429 ] && refused=$((refused + 1))
done
expect_eq "quota: 5 new keys a minute over two gateways, then 429" "5 2" "$ok $refused"
is_problem "quota: the 7th" q7 429 too-many-keys
expect_match "quota: Retry-After until the window frees (1..60 s)" '^([1-9]|[1-5][0-9]|60)$' "$(hdr q7 Retry-After)"
expect_eq "quota: refused keys did not run" $((n0 + 5)) "$(runs pay)"
http q8 POST "$(url web /q)" -H "Idempotency-Key: quota-other-$TNAME" -H 'X-Tenant: other' --data-binary x
expect_eq "quota: another scope is not limited" 201 "$HS"
# a replay of an admitted key does not count and still replays
http q9 POST "$(url web2 /q)" -H "Idempotency-Key: quota-1-$TNAME" -H 'X-Tenant: acme' --data-binary "n=1"
expect_eq "quota: a replay of an admitted key still replays" "201 reused" "$HS $(hdr q9 Idempotency-Result)"
http q10 POST "$(url web /q)" -H "Idempotency-Key: quota-8-$TNAME" -H 'X-Tenant: acme' --data-binary x
expect_eq "quota: a new key is still refused" 429 "$HS"
# the next minute's window starts empty (moved back instead of waited for)
db_query "$TNAME" "UPDATE idem_quota SET minute = minute - 1"
http q11 POST "$(url web2 /q)" -H "Idempotency-Key: quota-9-$TNAME" -H 'X-Tenant: acme' --data-binary x
expect_eq "quota: a new window admits new keys again" 201 "$HS"
qstats() { "$IDEMCTL" -c "$T/gw.conf" stats --route /q --format tsv 2>/dev/null; }
quota_seen() { qstats | awk -F'\t' 'NR == 2 && $NF >= 3 { ok = 1 } END { exit !ok }'; }
wait_until 10 quota_seen
qstats >"$T/qstats"
expect_match "quota: idemctl stats has the column" 'quota_rejected$' "$(head -1 "$T/qstats")"
expect_eq "quota: idemctl stats counts the three 429s" 3 "$(awk -F'\t' 'NR == 2 { print $NF }' "$T/qstats")"
done_testing
