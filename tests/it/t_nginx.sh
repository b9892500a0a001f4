#!/bin/bash
# nginx in front (fastcgi_request_buffering off): protected POST + replay, chunked request body read to EOF.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
# nginx's workers run as www-data: let that group connect.
cat >>"$T/gw.conf" <<EOF
socket_owner = root:www-data

[route /payments]
handler = cgi:$PAY
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
expect_eq "socket group www-data" www-data "$(stat -c %G "$T/gw.sock")"
nginx_start ng "unix:$T/gw.sock" "fastcgi_request_buffering off;" || { done_testing; exit 1; }
U=$(url ng /payments)

http g GET "$U?via=nginx"
expect_eq "nginx: GET" 201 "$HS"
expect_match "nginx: GET body" 'query=via=nginx' "$(body g)"

K=$(new_key)
http p1 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":1}'
expect_eq "nginx: protected POST 201" 201 "$HS"
expect_eq "nginx: created" created "$(hdr p1 Idempotency-Result)"
http p2 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":1}'
expect_eq "nginx: replay 201" 201 "$HS"
expect_eq "nginx: reused" reused "$(hdr p2 Idempotency-Result)"
expect_eq "nginx: Idempotent-Replayed" true "$(hdr p2 Idempotent-Replayed)"
expect_file_eq "nginx: replay body" "$T/p1.b" "$T/p2.b"
expect_eq "nginx: Location kept" "$(hdr p1 Location)" "$(hdr p2 Location)"
http p3 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":2}'
is_problem "nginx: other body" p3 422 key-mismatch

head -c 200000 /dev/urandom >"$T/chunk"
want=$(sha256sum "$T/chunk" | cut -d' ' -f1)
http c1 POST "$U" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
expect_eq "nginx: chunked body, unprotected" 201 "$HS"
expect_match "nginx: chunked body read to EOF" "body_length=200000" "$(body c1)"
expect_match "nginx: chunked body intact" "body_sha256=$want" "$(body c1)"
K=$(new_key)
http c2 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
expect_match "nginx: chunked protected body intact" "body_sha256=$want" "$(body c2)"
http c3 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
expect_eq "nginx: chunked replay" reused "$(hdr c3 Idempotency-Result)"
expect_file_eq "nginx: chunked replay body" "$T/c2.b" "$T/c3.b"
head -c 100 /dev/urandom >>"$T/chunk"
http c4 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
is_problem "nginx: chunked, other body" c4 422 key-mismatch
expect_eq "nginx: runs (GET, POST, 2 chunked)" 4 "$(runs pay)"
done_testing
