#!/bin/bash
# Run once, replay byte-for-byte, 422 on reuse, 5xx release / store_5xx, max_response tombstone, TTL.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
DX=$(cgi_install dropx)
S5=$(cgi_install s5)
SM=$(cgi_install small)
SH=$(cgi_install short)
TM=$(cgi_install tmo)
# A handler that sends hop-by-hop lines RFC 3875 6.3.4 forbids it:
# Transfer-Encoding on a body that is not chunked, Connection naming one.
cat >"$T/hop.sh" <<'EOF'
#!/bin/sh
echo $$ >>"$0.runs"
printf 'Status: 201 Created\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close, X-Hop\r\nX-Hop: h\r\nX-Keep: k\r\n\r\nhello\n'
EOF
HOP=$(cgi_install hop "$T/hop.sh")
# A handler that has the web server serve a file in its place (nginx's
# X-Accel-Redirect; X-Sendfile where enabled): its body is not the answer.
cat >"$T/xaccel.sh" <<'EOF'
#!/bin/sh
echo $$ >>"$0.runs"
printf 'Status: 201 Created\r\nContent-Type: text/plain\r\n%s: /files/receipt.pdf\r\n\r\nignored\n' "${QUERY_STRING#h=}"
EOF
XA=$(cgi_install xaccel "$T/xaccel.sh")
# A header value with a control byte (Apache refuses a whole answer for
# one): that line goes, the answer stays.
cat >"$T/ctl.sh" <<'EOF'
#!/bin/sh
echo $$ >>"$0.runs"
printf 'Status: 201 Created\r\nContent-Type: text/plain\r\nX-Bad: a\001b\r\nX-Good: g\r\n\r\nctl\n'
EOF
CTL=$(cgi_install ctl "$T/ctl.sh")
std_setup "[route /hop]
handler = cgi:$HOP

[route /payments]
handler = cgi:$PAY

[route /xaccel]
handler = cgi:$XA

[route /ctl]
handler = cgi:$CTL

[route /dropx]
handler = cgi:$DX
store_headers_drop = X-Payment-Id

[route /s5xx]
handler = cgi:$S5
store_5xx = yes

[route /small]
handler = cgi:$SM
max_response = 1K

[route /short]
handler = cgi:$SH
ttl = 2s

[route /tmo]
handler = cgi:$TM
timeout = 1s" || { done_testing; exit 1; }
U=$(url web /payments)
CT='Content-Type: application/json'

K=$(new_key)
http a1 POST "$U?a=1" -H "Idempotency-Key: $K" -H "$CT" --data-binary '{"amount":10}'
expect_eq "new key: handler status" 201 "$HS"
expect_eq "new key: Idempotency-Result created" created "$(hdr a1 Idempotency-Result)"
expect_eq "new key: no Idempotent-Replayed" "" "$(hdr a1 Idempotent-Replayed)"
expect_match "new key: Set-Cookie delivered" '^session=' "$(hdr a1 Set-Cookie)"
expect_match "new key: body from the handler" 'body_length=13' "$(body a1)"
for i in 2 3; do
	http a$i POST "$U?a=1" -H "Idempotency-Key: $K" -H "$CT" --data-binary '{"amount":10}'
	expect_eq "replay $i: status" 201 "$HS"
	expect_eq "replay $i: Idempotent-Replayed" true "$(hdr a$i Idempotent-Replayed)"
	expect_eq "replay $i: Idempotency-Result reused" reused "$(hdr a$i Idempotency-Result)"
	expect_file_eq "replay $i: body byte-for-byte" "$T/a1.b" "$T/a$i.b"
	expect_eq "replay $i: header block identical (minus Date/Server/Set-Cookie)" \
		"$(hdr_block a1)" "$(hdr_block a$i)"
	expect_eq "replay $i: status line" "$(head -1 "$T/a1.h" | tr -d '\r')" "$(head -1 "$T/a$i.h" | tr -d '\r')"
	expect_eq "replay $i: Set-Cookie not replayed" "" "$(hdr a$i Set-Cookie)"
	expect_eq "replay $i: Location kept" "$(hdr a1 Location)" "$(hdr a$i Location)"
	expect_eq "replay $i: ETag kept" "$(hdr a1 ETag)" "$(hdr a$i ETag)"
	expect_eq "replay $i: Content-Type kept" "$(hdr a1 Content-Type)" "$(hdr a$i Content-Type)"
done
# A route's store_headers_drop adds to the cookies, never lets them be
# replayed (SPEC 2).
KX=$(new_key)
http x1 POST "$(url web /dropx)" -H "Idempotency-Key: $KX" --data-binary 'x'
http x2 POST "$(url web /dropx)" -H "Idempotency-Key: $KX" --data-binary 'x'
expect_match "store_headers_drop route: Set-Cookie to the first client" '^session=' "$(hdr x1 Set-Cookie)"
expect_match "store_headers_drop route: its header to the first client" . "$(hdr x1 X-Payment-Id)"
expect_eq "store_headers_drop route: a replay" reused "$(hdr x2 Idempotency-Result)"
expect_eq "store_headers_drop route: Set-Cookie not replayed" "" "$(hdr x2 Set-Cookie)"
expect_eq "store_headers_drop route: its header not replayed" "" "$(hdr x2 X-Payment-Id)"
# A row stored by an older build, cookie and all: the replay drops it.
db_query "$TNAME" "UPDATE idem_keys SET resp_headers = CONCAT(resp_headers, 'Set-Cookie: old=1\r\n') WHERE resp_headers LIKE '%X-Payment-Id%' OR resp_headers LIKE '%Location%'"
# (the replay cache drops the row's copy once it sees the edit: polled)
sleep 0.3
http x3 POST "$(url web /dropx)" -H "Idempotency-Key: $KX" --data-binary 'x'
expect_eq "a stored cookie: a replay" reused "$(hdr x3 Idempotency-Result)"
expect_eq "a stored cookie: not replayed" "" "$(hdr x3 Set-Cookie)"
http x4 POST "$(url web /dropx)" -H "Idempotency-Key: $KX" --data-binary 'x'
expect_eq "a stored cookie: nor from the replay cache" "" "$(hdr x4 Set-Cookie)"
expect_eq "replays: handler ran once" 1 "$(runs pay)"

# Hop-by-hop lines from the handler: the first client gets what its
# replays get, the body whole, not one the web server tried to de-chunk.
KH=$(new_key)
http h1 POST "$(url web /hop)" -H "Idempotency-Key: $KH" --data-binary x
http h2 POST "$(url web /hop)" -H "Idempotency-Key: $KH" --data-binary x
expect_eq "hop-by-hop: the first client gets the body" hello "$(body h1)"
expect_file_eq "hop-by-hop: the replay's body is the first's" "$T/h1.b" "$T/h2.b"
expect_eq "hop-by-hop: X-Keep kept, X-Hop dropped" "k " "$(hdr h1 X-Keep) $(hdr h1 X-Hop)"
expect_eq "hop-by-hop: header blocks alike" "$(hdr_block h1)" "$(hdr_block h2)"
expect_eq "hop-by-hop: one run" 1 "$(runs hop)"
# Unprotected (GET), the Transfer-Encoding goes too: passed on, it has
# lighttpd decode a body that is not chunked, and send none.  The other
# lines go on (a 426's Upgrade is the client's).
http h3 GET "$(url web /hop)"
expect_eq "Transfer-Encoding, pass-through: the body" hello "$(body h3)"
expect_eq "hop-by-hop, pass-through: X-Keep and X-Hop kept" "k h" "$(hdr h3 X-Keep) $(hdr h3 X-Hop)"
# ... and so on a protected POST without a key (key optional): only the
# handler's idempotency headers go there.
http h4 POST "$(url web /hop)" --data-binary x
expect_eq "hop-by-hop, keyless POST: the body, X-Keep and X-Hop kept" "hello k h" "$(body h4) $(hdr h4 X-Keep) $(hdr h4 X-Hop)"

# Same key, different request: 422, never a run.
mism() { # mism NAME METHOD PATHQUERY BODY [curl args]
	local name=$1 m=$2 pq=$3 b=$4
	shift 4
	http mm "$m" "$(url web "$pq")" -H "Idempotency-Key: $K" --data-binary "$b" "$@"
	is_problem "422 $name" mm 422 key-mismatch
}
mism "different body" POST "/payments?a=1" '{"amount":11}' -H "$CT"
mism "different query" POST "/payments?a=2" '{"amount":10}' -H "$CT"
mism "different method (PATCH)" PATCH "/payments?a=1" '{"amount":10}' -H "$CT"
mism "different path" POST "/payments/other?a=1" '{"amount":10}' -H "$CT"
mism "different Content-Type" POST "/payments?a=1" '{"amount":10}' -H 'Content-Type: text/plain'
expect_eq "422s: handler not run" 1 "$(runs pay)"
http a4 POST "$U?a=1" -H "Idempotency-Key: $K" -H "$CT" --data-binary '{"amount":10}'
expect_eq "original still replays after 422s" reused "$(hdr a4 Idempotency-Result)"
K2=$(new_key)
http pa1 PATCH "$U" -H "Idempotency-Key: $K2" --data-binary 'patch'
http pa2 PATCH "$U" -H "Idempotency-Key: $K2" --data-binary 'patch'
expect_eq "PATCH protected: replayed" reused "$(hdr pa2 Idempotency-Result)"

# Binary replay, NUL and CRLF included.
binary_expected "$T/bin.want"
K=$(new_key)
http b1 POST "$U?binary=1" -H "Idempotency-Key: $K" --data-binary 'b'
http b2 POST "$U?binary=1" -H "Idempotency-Key: $K" --data-binary 'b'
expect_file_eq "binary: first answer exact" "$T/bin.want" "$T/b1.b"
expect_file_eq "binary: replay exact" "$T/bin.want" "$T/b2.b"
expect_eq "binary: replayed" reused "$(hdr b2 Idempotency-Result)"
K=$(new_key)
http l1 POST "$U?bytes=300000" -H "Idempotency-Key: $K" --data-binary 'l'
http l2 POST "$U?bytes=300000" -H "Idempotency-Key: $K" --data-binary 'l'
expect_eq "300 KB answer: replayed" reused "$(hdr l2 Idempotency-Result)"
expect_file_eq "300 KB answer: replay exact" "$T/l1.b" "$T/l2.b"

# Handler 5xx / crash / timeout release the key: a retry runs again.
release() { # release NAME ROUTEQUERY CGI WANTSTATUS
	local n k
	n=$(runs "$3")
	k=$(new_key)
	http r1 POST "$(url web "$2")" -H "Idempotency-Key: $k" --data-binary 'r'
	expect_eq "$1: first answer" "$4" "$HS"
	expect_eq "$1: not marked reused" "" "$(hdr r1 Idempotent-Replayed)"
	http r2 POST "$(url web "$2")" -H "Idempotency-Key: $k" --data-binary 'r'
	expect_eq "$1: retry answer" "$4" "$HS"
	expect_eq "$1: retry not a replay" "" "$(hdr r2 Idempotent-Replayed)"
	expect_eq "$1: retry ran the handler again" $((n + 2)) "$(runs "$3")"
}
release "handler 500" "/payments?status=500" pay 500
release "handler 503" "/payments?status=503" pay 503
release "handler crash (502)" "/payments?crash=1" pay 502
release "handler garbage (502)" "/payments?garbage=1" pay 502
release "handler timeout (504)" "/tmo?sleep=3000" tmo 504

# store_5xx = yes: the 500 is stored and replayed.
K=$(new_key)
http s1 POST "$(url web /s5xx?status=500)" -H "Idempotency-Key: $K" --data-binary 's'
expect_eq "store_5xx: first 500" 500 "$HS"
http s2 POST "$(url web /s5xx?status=500)" -H "Idempotency-Key: $K" --data-binary 's'
expect_eq "store_5xx: replayed 500" 500 "$HS"
expect_eq "store_5xx: Idempotent-Replayed" true "$(hdr s2 Idempotent-Replayed)"
expect_file_eq "store_5xx: same body" "$T/s1.b" "$T/s2.b"
expect_eq "store_5xx: ran once" 1 "$(runs s5)"

# max_response exceeded: delivered once, then a tombstone, never a second run.
K=$(new_key)
http t1 POST "$(url web /small?bytes=5000)" -H "Idempotency-Key: $K" --data-binary 't'
expect_eq "max_response: first gets the handler status" 201 "$HS"
expect_eq "max_response: first gets the full answer" 5000 "$(wc -c <"$T/t1.b" | tr -d ' ')"
http t2 POST "$(url web /small?bytes=5000)" -H "Idempotency-Key: $K" --data-binary 't'
is_problem "max_response: retry" t2 410 response-not-stored
expect_match "max_response: original_status member" '"original_status" *: *201' "$(body t2)"
http t3 POST "$(url web /small?bytes=5000)" -H "Idempotency-Key: $K" --data-binary 't'
expect_eq "max_response: second retry also 410" 410 "$HS"
expect_eq "max_response: handler ran once" 1 "$(runs small)"
K=$(new_key)
http t4 POST "$(url web /small?bytes=500)" -H "Idempotency-Key: $K" --data-binary 't'
http t5 POST "$(url web /small?bytes=500)" -H "Idempotency-Key: $K" --data-binary 't'
expect_eq "max_response: a smaller answer is stored" reused "$(hdr t5 Idempotency-Result)"
# ... with a status that releases the key (503): streamed as it came, it
# is neither created nor kept, so it says neither (was: "created" and an
# Idempotency-Expires a day away, while every retry ran again).
K=$(new_key)
n0=$(runs small)
http t6 POST "$(url web '/small?bytes=5000&status=503')" -H "Idempotency-Key: $K" --data-binary 't'
expect_eq "max_response, released status: the answer, whole" "503 5000" "$HS $(wc -c <"$T/t6.b" | tr -d ' ')"
expect_eq "... no Idempotency-Result, no Idempotency-Expires" "no no" \
    "$(has_hdr t6 Idempotency-Result && echo yes || echo no) $(has_hdr t6 Idempotency-Expires && echo yes || echo no)"
http t7 POST "$(url web '/small?bytes=5000&status=503')" -H "Idempotency-Key: $K" --data-binary 't'
expect_eq "... released: the retry runs again" "503 2" "$HS $(($(runs small) - n0))"

# An answer whose body the web server replaces: delivered once, then a
# tombstone, never a replay of whatever that file holds by then.
for h in X-Accel-Redirect X-Sendfile x-sendfile2; do
	K=$(new_key)
	http x1 POST "$(url web "/xaccel?h=$h")" -H "Idempotency-Key: $K" --data-binary 'x'
	expect_eq "$h: the first client gets the handler's status" 201 "$HS"
	http x2 POST "$(url web "/xaccel?h=$h")" -H "Idempotency-Key: $K" --data-binary 'x'
	is_problem "$h: retry" x2 410 response-not-stored
	expect_eq "$h: no $h on the retry" "" "$(hdr x2 "$h")"
done
expect_eq "X-Accel-Redirect, X-Sendfile, X-Sendfile2: each ran once" 3 "$(runs xaccel)"
# lighttpd drops X-Sendfile lines unless enabled; the others go on.
http x3 POST "$(url web /xaccel?h=X-Accel-Redirect)" -H "Idempotency-Key: $(new_key)" --data-binary 'x'
expect_eq "X-Accel-Redirect reaches the web server" /files/receipt.pdf "$(hdr x3 X-Accel-Redirect)"

# A header value with a control byte: dropped from the first answer and
# from every replay alike.
K=$(new_key)
http cb1 POST "$(url web /ctl)" -H "Idempotency-Key: $K" --data-binary 'c'
http cb2 POST "$(url web /ctl)" -H "Idempotency-Key: $K" --data-binary 'c'
expect_eq "control byte in a value: first answer, without that line" "201 created g " "$HS $(hdr cb1 Idempotency-Result) $(hdr cb1 X-Good) $(hdr cb1 X-Bad)"
expect_eq "... the replay alike" "reused g " "$(hdr cb2 Idempotency-Result) $(hdr cb2 X-Good) $(hdr cb2 X-Bad)"
expect_match "... the log says so" 'POST /ctl: a header line with a control byte in its value dropped' "$(cat "$T/gw.log")"

# TTL passed, cleanup not run: treated as new.
K=$(new_key)
http e1 POST "$(url web /short)" -H "Idempotency-Key: $K" --data-binary 'e'
http e2 POST "$(url web /short)" -H "Idempotency-Key: $K" --data-binary 'e'
expect_eq "ttl: replay before expiry" reused "$(hdr e2 Idempotency-Result)"
sleep_past_expires e2
http e3 POST "$(url web /short)" -H "Idempotency-Key: $K" --data-binary 'e'
expect_eq "ttl: after expiry created again" created "$(hdr e3 Idempotency-Result)"
expect_eq "ttl: after expiry the handler ran again" 2 "$(runs short)"
http e4 POST "$(url web /short)" -H "Idempotency-Key: $K" --data-binary 'e'
expect_file_eq "ttl: the new answer is the one replayed" "$T/e3.b" "$T/e4.b"
done_testing
