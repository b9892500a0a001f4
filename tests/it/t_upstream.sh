#!/bin/bash
# fastcgi: handler: an upstream libfcgi app over unix and tcp, and one that is down.
. "$(dirname "$0")/../lib/harness.sh"

APP="$ITBIN/fcgi_app"
if [ ! -x "$APP" ]; then
	not_ok "fcgi_app built" "$APP missing"
	done_testing
	exit 1
fi
"$APP" -s "unix:$T/app.sock" >"$T/app.log" 2>&1 &
H_BGPIDS+=($!)
wait_until 5 test -S "$T/app.sock" || not_ok "fcgi_app listens"
AP=$(free_port)
spawn-fcgi -a 127.0.0.1 -p "$AP" -n -- "$APP" >"$T/apptcp.log" 2>&1 &
H_BGPIDS+=($!)
wait_until 5 port_open "$AP" || not_ok "fcgi_app on tcp listens"

db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF

[route /app]
handler = fastcgi:unix:$T/app.sock

[route /apptcp]
handler = fastcgi:tcp:127.0.0.1:$AP

[route /rough]
handler = fastcgi:unix:$T/rough.sock
run_limit = 30s

[route /down]
handler = fastcgi:unix:$T/nothing-here.sock
EOF
python3 "$IDEM_ROOT/tests/it/fcgi_rough.py" "$T/rough.sock" "$T/rough.runs" >"$T/rough.log" 2>&1 &
H_BGPIDS+=($!)
wait_until 5 test -S "$T/rough.sock" || not_ok "fcgi_rough listens"
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }

http a GET "$(url web /app)"
expect_eq "upstream unix: 200" 200 "$HS"
expect_eq "upstream unix: hello" hello "$(body a)"
http b GET "$(url web /apptcp)"
expect_eq "upstream tcp: 200" 200 "$HS"
expect_eq "upstream tcp: hello" hello "$(body b)"
http c POST "$(url web /app?echo=1)" --data-binary 'ping-body-123'
expect_eq "upstream echo: 200" 200 "$HS"
expect_eq "upstream echo: body reached the app" 'ping-body-123' "$(body c)"
expect_eq "upstream echo: method" POST "$(hdr c X-Method)"
expect_eq "upstream echo: query" echo=1 "$(hdr c X-Query)"
head -c 300000 /dev/urandom | base64 -w0 >"$T/big"
http c2 POST "$(url web /app?echo=1)" --data-binary @"$T/big"
expect_eq "upstream: 400 KB body echoed" 200 "$HS"
expect_file_eq "upstream: big body byte-exact" "$T/big" "$T/c2.b"

# The params go to the app as the web server sent them (PHP reads them as
# $_SERVER and getenv()): any name (Apache's SetEnv proxy-nokeepalive), an
# empty CONTENT_LENGTH, nothing added (no PATH, no GATEWAY_INTERFACE;
# FCGI_ROLE is libfcgi's own); only HTTP_PROXY (httpoxy) and a spoofed
# IDEMGATE_FENCE are not.
env -i REQUEST_METHOD=GET QUERY_STRING=params=1 REQUEST_URI=/app?params=1 \
    SCRIPT_NAME=/app proxy-nokeepalive=1 CONTENT_LENGTH= \
    HTTP_PROXY=http://evil.invalid IDEMGATE_FENCE=7 \
    cgi-fcgi -bind -connect "$T/gw.sock" 2>&1 | tr -d '\r' >"$T/params.out"
P=$(sed '1,/^$/d' "$T/params.out" | sort | tr '\n' ' ')
expect_eq "upstream params: as sent, HTTP_PROXY and the fence dropped" \
    "CONTENT_LENGTH= FCGI_ROLE=RESPONDER QUERY_STRING=params=1 REQUEST_METHOD=GET REQUEST_URI=/app?params=1 SCRIPT_NAME=/app proxy-nokeepalive=1 " "$P"

# A pass-through answer streams as the app flushes it (PHP's flush()):
# its first part reaches the client while the app still runs.
LIGHTTPD_EXTRA='server.stream-response-body = 2' lighttpd_start webs "unix:$T/gw.sock" ||
	{ done_testing; exit 1; }
curl -sS --max-time 10 -o "$T/sp.b" -w '%{http_code} %{time_starttransfer}' \
    "$(url webs '/app?pause=1500')" >"$T/sp.w" 2>"$T/sp.err"
read -r sp_code sp_first <"$T/sp.w"
expect_eq "upstream pass-through: the whole answer" "200 first second" \
    "$sp_code $(tr '\n' ' ' <"$T/sp.b" | sed 's/ $//')"
expect_eq "upstream pass-through: first part while the app runs (${sp_first}s)" 1 \
    "$(awk -v f="$sp_first" 'BEGIN { print (f > 0 && f < 1.0) }')"
# A client that goes away from a pass-through answer closes the app's
# connection, as the web server alone would: the app finds it gone at its
# next write (PHP: connection_aborted()) rather than writing on for 8 s.
curl -sS --max-time 1 -o /dev/null "$(url webs '/app?drip=80')" 2>/dev/null
if wait_until 5 grep -q 'drip stopped' "$T/app.log"; then ok "client gone: the app's connection closed"; else
	not_ok "client gone: the app's connection closed" "$(grep drip "$T/app.log")"; fi
wait_until 3 grep -q 'GET /app: the client went away' "$T/gw.log"
expect_eq "client gone: said in the log" 1 \
    "$(grep -c 'GET /app: the client went away; handler stopped' "$T/gw.log")"

K=$(new_key)
http d1 POST "$(url web /app?echo=1)" -H "Idempotency-Key: $K" --data-binary 'once'
http d2 POST "$(url web /app?echo=1)" -H "Idempotency-Key: $K" --data-binary 'once'
expect_eq "upstream protected: created" created "$(hdr d1 Idempotency-Result)"
expect_eq "upstream protected: reused" reused "$(hdr d2 Idempotency-Result)"
expect_file_eq "upstream protected: replay body" "$T/d1.b" "$T/d2.b"
http d3 POST "$(url web /app?echo=1)" -H "Idempotency-Key: $K" --data-binary 'twice'
is_problem "upstream protected: other body" d3 422 key-mismatch

# A faulty app, counted by its own log: one that answered did run, so an
# answer that cannot be taken leaves the key a tombstone (410, never run
# again); one that said nothing, or refused before answering, is released.
rough_runs() { grep -c "^run $1\$" "$T/rough.runs" 2>/dev/null || true; }
rough() { # rough MODE STATUS1 STATUS2 RUNS WHAT
	local K
	K=$(new_key)
	http "r1$1" POST "$(url web "/rough?$1")" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "$5: the client gets $2" "$2" "$HS"
	http "r2$1" POST "$(url web "/rough?$1")" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "$5: a retry gets $3" "$3" "$HS"
	expect_eq "$5: the app ran $4" "$4" "$(rough_runs "$1")"
}
rough nohdrend 502 410 1 "no end of header block, then END_REQUEST"
rough refuse_after 502 410 1 "an answer, then END_REQUEST refusing it"
rough refuse 502 502 2 "END_REQUEST refusing, nothing said"
rough silent 502 502 2 "END_REQUEST, nothing said"
rough ok 200 200 1 "a plain answer"

http e GET "$(url web /down)"
is_problem "upstream down" e 502 bad-gateway
expect_nomatch "upstream down: no socket path leaked" 'nothing-here|/tmp' "$(body e)"
done_testing
