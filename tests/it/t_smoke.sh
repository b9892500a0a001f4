#!/bin/bash
# Smoke: lighttpd -> idemgate -> payments CGI; a GET, a protected POST and its replay.
. "$(dirname "$0")/../lib/harness.sh"

db_new it_smoke || { done_testing; exit 1; }
PAY=$(cgi_install pay)
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF

[route /payments]
handler = cgi:$PAY
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }

http g GET "$(url web /payments?x=1)"
expect_eq "GET passes through" 201 "$HS"
expect_match "GET body from the CGI" '^method=GET' "$(body g)"
expect_eq "GET carries no Idempotency-Result" "" "$(hdr g Idempotency-Result)"

K=$(new_key)
http p1 POST "$(url web /payments)" -H "Idempotency-Key: $K" --data-binary 'amount=10'
expect_eq "new key: 201" 201 "$HS"
expect_eq "new key: created" created "$(hdr p1 Idempotency-Result)"
http p2 POST "$(url web /payments)" -H "Idempotency-Key: $K" --data-binary 'amount=10'
expect_eq "replay: 201" 201 "$HS"
expect_eq "replay: reused" reused "$(hdr p2 Idempotency-Result)"
expect_eq "replay: Idempotent-Replayed" true "$(hdr p2 Idempotent-Replayed)"
expect_file_eq "replay: same body" "$T/p1.b" "$T/p2.b"
expect_eq "handler ran twice (GET + one POST)" 2 "$(runs pay)"
done_testing
