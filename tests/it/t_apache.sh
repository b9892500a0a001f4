#!/bin/bash
# Apache (mod_proxy_fcgi) in front: protected POST + replay, chunked request body read to EOF.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
# Apache's children run as www-data: let that group connect.
cat >>"$T/gw.conf" <<EOF
socket_owner = root:www-data

[route /payments]
handler = cgi:$PAY
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
expect_eq "socket group www-data" www-data "$(stat -c %G "$T/gw.sock")"
apache_start ap "unix:$T/gw.sock" || { done_testing; exit 1; }
U=$(url ap /payments)

http g GET "$U?via=apache"
expect_eq "apache: GET" 201 "$HS"
expect_match "apache: GET body" 'query=via=apache' "$(body g)"

K=$(new_key)
http p1 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":1}'
expect_eq "apache: protected POST 201" 201 "$HS"
expect_eq "apache: created" created "$(hdr p1 Idempotency-Result)"
http p2 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":1}'
expect_eq "apache: replay 201" 201 "$HS"
expect_eq "apache: reused" reused "$(hdr p2 Idempotency-Result)"
expect_eq "apache: Idempotent-Replayed" true "$(hdr p2 Idempotent-Replayed)"
expect_file_eq "apache: replay body" "$T/p1.b" "$T/p2.b"
expect_eq "apache: Location kept" "$(hdr p1 Location)" "$(hdr p2 Location)"
http p3 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":2}'
is_problem "apache: other body" p3 422 key-mismatch

head -c 200000 /dev/urandom >"$T/chunk"
want=$(sha256sum "$T/chunk" | cut -d' ' -f1)
http c1 POST "$U" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
expect_eq "apache: chunked body, unprotected" 201 "$HS"
expect_match "apache: chunked body read to EOF" "body_length=200000" "$(body c1)"
expect_match "apache: chunked body intact" "body_sha256=$want" "$(body c1)"
K=$(new_key)
http c2 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
expect_match "apache: chunked protected body intact" "body_sha256=$want" "$(body c2)"
http c3 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
expect_eq "apache: chunked replay" reused "$(hdr c3 Idempotency-Result)"
expect_file_eq "apache: chunked replay body" "$T/c2.b" "$T/c3.b"
head -c 100 /dev/urandom >>"$T/chunk"
http c4 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
is_problem "apache: chunked, other body" c4 422 key-mismatch
expect_eq "apache: runs (GET, POST, 2 chunked)" 4 "$(runs pay)"
done_testing
