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

front_checks nginx "$U"
# The handler's reason phrase ("Status: 201 Test") reaches the client,
# first and on replays, as under fcgiwrap (nginx passes it on).
K=$(new_key)
http r1 POST "$U" -H "Idempotency-Key: $K" --data-binary 'reason'
http r2 POST "$U" -H "Idempotency-Key: $K" --data-binary 'reason'
expect_eq "reason phrase: first answer" "HTTP/1.1 201 Test" "$(head -1 "$T/r1.h" | tr -d '\r')"
expect_eq "reason phrase: replay" "HTTP/1.1 201 Test" "$(head -1 "$T/r2.h" | tr -d '\r')"
done_testing
