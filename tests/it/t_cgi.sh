#!/bin/bash
# cgi: handlers through lighttpd: pass-through, clean env, 502/504, 413, big bodies, binary.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
SLOW=$(cgi_install slow)
BIG=$(cgi_install big)
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF

[route /payments]
handler = cgi:$PAY
max_body = 1K

[route /slow]
handler = cgi:$SLOW
timeout = 1s

[route /big]
handler = cgi:$BIG
max_body = 8M
EOF
gw_start gw "$T/gw.conf" IDEMTEST_LEAK=gateway-secret-env HTTP_PROXY=http://gw-env.invalid ||
	{ done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }

# Unprotected GET: straight through, the handler's own headers kept.
http g GET "$(url web /payments?a=1)"
expect_eq "GET: handler status" 201 "$HS"
expect_match "GET: handler body" '^method=GET' "$(body g)"
expect_match "GET: Location passed" '^/payments/' "$(hdr g Location)"
expect_match "GET: Set-Cookie passed" '^session=' "$(hdr g Set-Cookie)"
expect_eq "GET: no Idempotency-Result" "" "$(hdr g Idempotency-Result)"
expect_eq "GET: handler ran" 1 "$(runs pay)"

# POST without a key on a key-optional route: unprotected, runs every time.
http p1 POST "$(url web /payments)" --data-binary 'x=1'
http p2 POST "$(url web /payments)" --data-binary 'x=1'
expect_eq "POST no key: 201" 201 "$HS"
expect_eq "POST no key: no Idempotency-Result" "" "$(hdr p2 Idempotency-Result)"
expect_eq "POST no key: ran twice" 3 "$(runs pay)"

# CGI environment: clean, RFC 3875, no httpoxy.
http e GET "$(url web /payments/sub?env=1)" -H 'Proxy: http://evil.invalid' -H 'X-Custom: yes'
E=$(body e)
expect_eq "env: 200" 200 "$HS"
expect_nomatch "env: HTTP_PROXY absent" '^HTTP_PROXY=' "$E"
expect_nomatch "env: gateway env not leaked" 'IDEMTEST_LEAK|gateway-secret-env|gw-env.invalid' "$E"
expect_match "env: GATEWAY_INTERFACE" '^GATEWAY_INTERFACE=CGI/1.1' "$E"
expect_match "env: REQUEST_METHOD" '^REQUEST_METHOD=GET' "$E"
expect_match "env: QUERY_STRING" '^QUERY_STRING=env=1' "$E"
expect_match "env: other headers passed" '^HTTP_X_CUSTOM=yes' "$E"
expect_nomatch "env: no LD_ variables" '^LD_' "$E"

# Bad handler output: 502 problem+json.
http b GET "$(url web /payments?garbage=1)"
is_problem "garbage output" b 502 bad-gateway
expect_nomatch "garbage: no internal text" "$T|/tmp/" "$(body b)"
http c GET "$(url web /payments?crash=1)"
is_problem "crash" c 502 bad-gateway
# each failure is one log line, by what saw it
expect_eq "garbage: one log line saying why" 1 \
	"$(grep -c "GET /payments: the handler's header block is not valid" "$T/gw.log")"
expect_match "garbage: the line says what was wrong" \
	"header block is not valid: a header name with a byte that is not a token's" "$(cat "$T/gw.log")"
expect_eq "crash: one log line" 1 "$(grep -c 'GET /payments: handler killed by signal' "$T/gw.log")"
expect_eq "bad output: no second, vaguer line" 0 "$(grep -c 'handler failed' "$T/gw.log")"

# Timeout: 504 and the whole process group killed.
t0=$(now_ms)
http t GET "$(url web /slow?sleep=6000\&child=1)"
dt=$(($(now_ms) - t0))
is_problem "timeout" t 504 gateway-timeout
expect_lt "timeout: answered within 4 s" "$dt" 4000
hpid=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$T/cgi/slow.runs" | tail -1)
cpid=$(tail -1 "$T/cgi/slow.child" 2>/dev/null)
gone() { ! alive "$1" || [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ]; }
if [ -n "$hpid" ] && wait_until 2 gone "$hpid"; then ok "timeout: handler killed"; else
	not_ok "timeout: handler killed" "pid $hpid still alive"; fi
if [ -n "$cpid" ] && wait_until 2 gone "$cpid"; then ok "timeout: handler's child (same group) killed"; else
	not_ok "timeout: handler's child (same group) killed" "pid '$cpid' still alive"; fi
expect_eq "timeout: logged once" 1 "$(grep -c 'GET /slow: .* timed out after 1000 ms' "$T/gw.log")"
# A kept answer given its header block, then the timeout or a crash:
# none of it left the gateway, so the client gets the gateway's answer
# (504, 502), not a broken transfer the web server turns into its own.
http th POST "$(url web '/slow?stream=100&step_ms=5000')" -H "Idempotency-Key: $(new_key)" --data-binary x
is_problem "kept: head, then timeout, nothing sent yet" th 504 gateway-timeout
http ch POST "$(url web /payments?headcrash=1)" -H "Idempotency-Key: $(new_key)" --data-binary x
is_problem "kept: head, then crash, nothing sent yet" ch 502 bad-gateway
# A pass-through answer streams as the handler writes it, as under
# fcgiwrap (and Apache's and lighttpd's CGI): its head and first bytes
# reach the client while the handler still runs (before: at its end).
# Through lighttpd as the shipped snippet sets it up (it streams answers
# only with server.stream-response-body = 2).
LIGHTTPD_EXTRA='server.stream-response-body = 2' lighttpd_start webs "unix:$T/gw.sock" ||
	{ done_testing; exit 1; }
curl -sS --max-time 10 -o "$T/st.b" -w '%{http_code} %{time_starttransfer}' \
    "$(url webs '/payments?stream=100&step_ms=1500')" >"$T/st.w" 2>"$T/st.err"
read -r st_code st_first <"$T/st.w"
expect_eq "pass-through: the whole answer" "201 100" "$st_code $(wc -c <"$T/st.b" | tr -d ' ')"
expect_eq "pass-through: first bytes while the handler runs (${st_first}s)" 1 \
    "$(awk -v f="$st_first" 'BEGIN { print (f > 0 && f < 1.0) }')"
# ... so a timeout after them breaks the transfer off: never an answer
# that looks whole.
curl -sS --max-time 10 -o "$T/sb.b" -w '%{http_code}' \
    "$(url webs '/slow?stream=100&step_ms=5000')" >"$T/sb.w" 2>"$T/sb.err"
expect_eq "pass-through, head then timeout: the head went out, then a broken transfer" \
    "201 1" "$(cat "$T/sb.w") $([ -s "$T/sb.err" ] && echo 1)"
# A client that goes away from a pass-through answer stops its run at the
# next write that finds no reader, as under the web server alone (before:
# the handler ran on to its end or its timeout, 30 s here).
curl -sS --max-time 1 -o /dev/null "$(url webs '/payments?stream=100000000&step_ms=100')" 2>/dev/null
spid=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$T/cgi/pay.runs" | tail -1)
if [ -n "$spid" ] && wait_until 5 gone "$spid"; then ok "client gone: the pass-through handler stopped"; else
	not_ok "client gone: the pass-through handler stopped" "pid '$spid' still alive"; fi
wait_until 3 grep -q 'GET /payments: the client went away' "$T/gw.log"
expect_eq "client gone: said once in the log" 1 \
    "$(grep -c 'GET /payments: the client went away; handler stopped' "$T/gw.log")"

# max_body: at the limit fine, one byte over refused before the handler runs.
head -c 1024 /dev/zero | tr '\0' a >"$T/b1024"
head -c 1025 /dev/zero | tr '\0' a >"$T/b1025"
n0=$(runs pay)
http m1 POST "$(url web /payments)" --data-binary @"$T/b1024"
expect_eq "max_body: exactly max_body accepted" 201 "$HS"
expect_match "max_body: handler got all of it" 'body_length=1024' "$(body m1)"
http m2 POST "$(url web /payments)" --data-binary @"$T/b1025"
is_problem "max_body+1 (no key)" m2 413 body-too-large
http m3 POST "$(url web /payments)" -H "Idempotency-Key: $(new_key)" --data-binary @"$T/b1025"
is_problem "max_body+1 (with key)" m3 413 body-too-large
expect_eq "max_body: only the accepted request ran" $((n0 + 1)) "$(runs pay)"

# Big bodies: streamed in full, or ignored by the handler without a deadlock.
head -c 4000000 /dev/urandom >"$T/big4m"
want=$(sha256sum "$T/big4m" | cut -d' ' -f1)
http k1 POST "$(url web /big)" --data-binary @"$T/big4m"
expect_eq "4 MB body: 201" 201 "$HS"
expect_match "4 MB body: handler read it all" "body_sha256=$want" "$(body k1)"
t0=$(now_ms)
http k2 POST "$(url web /big?ignore_stdin=1)" --data-binary @"$T/big4m"
dt=$(($(now_ms) - t0))
expect_eq "4 MB body to a CGI ignoring stdin: answered" 201 "$HS"
expect_lt "4 MB body to a CGI ignoring stdin: within 10 s" "$dt" 10000

# Big and binary output.
http o GET "$(url web /big?bytes=3000000)"
expect_eq "3 MB output: 201" 201 "$HS"
expect_eq "3 MB output: all bytes" 3000000 "$(wc -c <"$T/o.b" | tr -d ' ')"
binary_expected "$T/bin.want"
http y GET "$(url web /payments?binary=1)"
expect_file_eq "binary output byte-exact (NUL, CRLF)" "$T/bin.want" "$T/y.b"

# Still serving after all that.
http z GET "$(url web /payments?after=1)"
expect_eq "still serving" 201 "$HS"
done_testing
