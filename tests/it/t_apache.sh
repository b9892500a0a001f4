#!/bin/bash
# Apache (mod_proxy_fcgi) in front: protected POST + replay, chunked request body read to EOF.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
# A body that ends short of the Content-Length it announced, after enough
# of it went out (the gateway holds back 32 KiB of an answer it streams
# because it is too large to keep, and 10 ms of a pass-through one).
cat >"$T/clshort.sh" <<'EOF'
#!/bin/sh
echo $$ >>"$0.runs"
printf 'Status: 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n'
head -c 40000 /dev/zero | tr '\0' x
sleep 0.2
EOF
CLS=$(cgi_install clshort "$T/clshort.sh")
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
# Apache's children run as www-data: let that group connect.
cat >>"$T/gw.conf" <<EOF
socket_owner = root:www-data

[route /payments]
handler = cgi:$PAY

[route /clshort]
handler = cgi:$CLS
max_response = 1000
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
expect_eq "socket group www-data" www-data "$(stat -c %G "$T/gw.sock")"
apache_start ap "unix:$T/gw.sock" || { done_testing; exit 1; }
U=$(url ap /payments)

front_checks apache "$U"

# Apache frames a FastCGI answer itself (chunked): a body short of its
# Content-Length must reach the client as a broken transfer, never as a
# clean, shorter answer; streamed unprotected, and streamed because it is
# over max_response.
http cs1 GET "$(url ap /clshort)"
expect_match "short body, pass-through: a broken transfer" 'curl: \((18|56|92)\)' "$(cat "$T/cs1.err")"
K=$(new_key)
http cs2 POST "$(url ap /clshort)" -H "Idempotency-Key: $K" --data-binary x
expect_match "short body over max_response: a broken transfer" 'curl: \((18|56|92)\)' "$(cat "$T/cs2.err")"
http cs3 POST "$(url ap /clshort)" -H "Idempotency-Key: $K" --data-binary x
is_problem "short body over max_response: a retry gets the tombstone" cs3 410 response-not-stored
expect_eq "short body: two runs, one a request" 2 "$(runs clshort)"
# Apache passes an absolute-form target (RFC 9112 3.2.2) on in
# REQUEST_URI as the client sent it: the route is its path's, one run.
K=$(new_key)
n0=$(runs pay)
http ab1 POST "$(url ap /)" --request-target "http://localhost/payments" -H "Idempotency-Key: $K" --data-binary ab
http ab2 POST "$(url ap /)" --request-target "http://localhost/payments" -H "Idempotency-Key: $K" --data-binary ab
expect_eq "absolute-form target: the protected route, one run" "created reused 1" \
    "$(hdr ab1 Idempotency-Result) $(hdr ab2 Idempotency-Result) $(($(runs pay) - n0))"
done_testing
