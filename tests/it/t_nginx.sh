#!/bin/bash
# nginx in front (fastcgi_request_buffering off): protected POST + replay, chunked request body read to EOF.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
# Two Content-Length lines that disagree (nginx takes the last, lighttpd
# the first), and two that agree (nginx refuses a repeated one).
cat >"$T/cgi/cl2" <<'EOF'
#!/bin/sh
cat >/dev/null
echo run >>"$0.runs"
case $QUERY_STRING in
same) printf 'Status: 200\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nContent-Length: 12\r\n\r\nhello world\n' ;;
*) printf 'Status: 200\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nContent-Length: 100\r\n\r\nhello world\n' ;;
esac
EOF
chmod 0755 "$T/cgi/cl2"
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
# nginx's workers run as www-data: let that group connect.
cat >>"$T/gw.conf" <<EOF
socket_owner = root:www-data

[route /payments]
handler = cgi:$PAY

[route /cl2]
handler = cgi:$T/cgi/cl2
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

# Content-Length lines that disagree go (the body is framed by the end of
# the handler's output); lines that agree are said once: the first
# answer and its replay are whole through nginx.
for q in differ same; do
	K=$(new_key)
	http c1 POST "$(url ng "/cl2?$q")" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "Content-Length $q: first answer 200" 200 "$HS"
	expect_eq "Content-Length $q: first answer whole" "" "$(cat "$T/c1.err")"
	expect_eq "Content-Length $q: the body as the handler wrote it" "hello world" "$(body c1)"
	http c2 POST "$(url ng "/cl2?$q")" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "Content-Length $q: replay 200, reused" "200 reused" "$HS $(hdr c2 Idempotency-Result)"
	expect_eq "Content-Length $q: replay whole" "" "$(cat "$T/c2.err")"
done
expect_eq "Content-Length: two keys, two runs" 2 "$(wc -l <"$T/cgi/cl2.runs")"

# nginx passes a query's escapes on as the client wrote them (lighttpd
# decodes "%7E"): a retry that spells an unreserved character another
# way is the same request, not a 422; "+" and "%2B" are not.
K=$(new_key)
n0=$(runs pay)
http q1 POST "$U?d=%7e&n=%41" -H "Idempotency-Key: $K" --data-binary q
http q2 POST "$U?d=~&n=A" -H "Idempotency-Key: $K" --data-binary q
expect_eq "query escapes of unreserved characters: the same request" "201 reused 1" \
    "$HS $(hdr q2 Idempotency-Result) $(($(runs pay) - n0))"
K=$(new_key)
http q3 POST "$U?a=x+y" -H "Idempotency-Key: $K" --data-binary q
s3=$HS
http q4 POST "$U?a=x%2By" -H "Idempotency-Key: $K" --data-binary q
expect_eq "... '+' and '%2B' are not" "201 422" "$s3 $HS"
done_testing
