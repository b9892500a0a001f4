#!/bin/bash
# status_path: the gateway's own status page through lighttpd, as php-fpm's
# pm.status_path: every worker's busy and idle threads, requests in flight
# and the oldest one's age, the store's state, replay-cache hits; text or
# ?json; never protected, never passed to a handler; off by default.
. "$(dirname "$0")/../lib/harness.sh"

# This script stops its database: a MariaDB of its own.
db_private || { done_testing; exit 1; }
PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
sed -i 's|^\[gateway\]$|[gateway]\nstatus_path = /idemgate-status|' "$T/gw.conf"
printf '\n[route /]\nhandler = cgi:%s\n' "$PAY" >>"$T/gw.conf"
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock"
S=$(url web /idemgate-status)

json() { # json OUT EXPR: a Python expression over the parsed body j
	/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$T/$1.b" 2>&1
}

http s GET "$S"
expect_eq "status: 200" 200 "$HS"
expect_match "status: plain text" '^text/plain' "$(hdr s Content-Type)"
expect_match "status: two workers" '^workers: +2$' "$(body s)"
expect_match "status: 16 threads" '^threads: +16$' "$(body s)"
expect_match "status: the store is up" '^store: +up$' "$(body s)"
expect_match "status: the totals first, as the README shows" '^supervisor pid: +[0-9]+$' "$(head -1 "$T/s.b")"
expect_match "status: then a line per worker" '^worker [0-9]+: generation ' "$(tail -1 "$T/s.b")"
expect_eq "status: not protected (no Idempotency-Result)" "" "$(hdr s Idempotency-Result)"
expect_eq "status: the handler did not run" 0 "$(runs pay)"

http j GET "$S?json"
expect_eq "?json: 200" 200 "$HS"
expect_match "?json: application/json" '^application/json' "$(hdr j Content-Type)"
expect_eq "?json: parses, two workers" 2 "$(json j 'len(j["workers"])')"
expect_eq "?json: worker pids are the gateway's workers" "$(gw_workers gw)" \
	"$(json j '" ".join(str(w["pid"]) for w in sorted(j["workers"], key=lambda w: w["pid"]))')"
expect_eq "?json: threads, busy + idle" "16 16" "$(json j 'j["total"]["threads"], j["total"]["busy"] + j["total"]["idle"]' | tr -d '(),')"
expect_eq "?json: store up" up "$(json j 'j["store"]["state"]')"

# A request in flight: busy, and the oldest one's age.
http_bg slow GET "$(url web /slow?sleep=2500)"
sleep 1
http j2 GET "$S?json"
expect_eq "in flight: 2 busy (the slow one and this)" 2 "$(json j2 'j["total"]["busy"]')"
expect_eq "in flight: counted" 2 "$(json j2 'j["total"]["in_flight"]')"
expect_eq "in flight: the oldest is the slow one (>= 900 ms)" True "$(json j2 'j["total"]["oldest_in_flight_ms"] >= 900')"
bg_wait slow
expect_eq "the slow request was answered" 201 "$(st slow)"
http j3 GET "$S?json"
expect_eq "after it: only this one busy" 1 "$(json j3 'j["total"]["busy"]')"
expect_eq "after it: served counts requests" True "$(json j3 'j["total"]["served"] >= 4')"

# Never protected: a key changes nothing, other methods get 405.
K=$(new_key)
http p POST "$S" -H "Idempotency-Key: $K" --data-binary 'x'
is_problem "POST to the status page" p 405 method-not-allowed
expect_eq "405 says what is allowed" "GET, HEAD" "$(hdr p Allow)"
http g GET "$S" -H "Idempotency-Key: $K"
expect_eq "GET with a key: 200" 200 "$HS"
expect_eq "GET with a key: no Idempotency-Result" "" "$(hdr g Idempotency-Result)"
expect_eq "no key was stored for the status page" 0 "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys" | tail -1)"
expect_eq "the handler never ran for it" 1 "$(runs pay)"
http q GET "$(url web /idemgate-status/x)"
expect_eq "a path below it is an ordinary request" 201 "$HS"

# Replay-cache hits, as the keeper publishes them.
K=$(new_key)
for i in 1 2 3; do http r$i POST "$(url web /pay)" -H "Idempotency-Key: $K" --data-binary 'r'; done
expect_eq "retries replayed" reused "$(hdr r3 Idempotency-Result)"
hits() { http h GET "$S?json" && [ "$(json h 'j["total"]["replay_cache_hits"] >= 1')" = True ]; }
check "replay cache hits shown" wait_until 5 hits

# The store's state, live.
mariadb_stop
http d GET "$S?json"
expect_eq "MySQL stopped: the page still answers" 200 "$HS"
expect_eq "MySQL stopped: store down" down "$(json d 'j["store"]["state"]')"
http dt GET "$S"
expect_match "MySQL stopped: text says down" '^store: +down' "$(body dt)"
expect_nomatch "no internal text on the page" 'mysql|socket|/tmp|Access denied' "$(body dt; body d)"
mariadb_start >/dev/null 2>&1 || not_ok "MariaDB restarts"
up() { http u GET "$S?json" && [ "$(json u 'j["store"]["state"]')" = up ]; }
check "MySQL back: store up again" wait_until 10 up

# Off by default: the path is an ordinary request then.
gw_stop gw
sed -i '/^status_path/d' "$T/gw.conf"
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
n=$(runs pay)
http o GET "$S"
expect_eq "status_path unset: the route's handler answers" 201 "$HS"
expect_eq "status_path unset: it ran" $((n + 1)) "$(runs pay)"
done_testing
