#!/bin/bash
# MySQL unreachable: 503 + Retry-After without running the handler; on_store_error = pass; back when MySQL is.
. "$(dirname "$0")/../lib/harness.sh"

# This script stops its database, so it uses a MariaDB of its own.
db_private || { done_testing; exit 1; }
PAY=$(cgi_install pay)
PASS=$(cgi_install pass)
std_setup "[route /payments]
handler = cgi:$PAY

[route /pass]
handler = cgi:$PASS
on_store_error = pass" "workers = 1" "status_path = /idemgate-status" ||
	{ done_testing; exit 1; }
# wstore: the one worker's "store" and "store_errno" on the status page
wstore() {
	http st GET "$(url web '/idemgate-status?json')"
	python3 -c 'import json, sys; w = json.load(sys.stdin)["workers"][0]; print(w["store"], w["store_errno"])' <"$T/st.b"
}
U=$(url web /payments)

K=$(new_key)
http a POST "$U" -H "Idempotency-Key: $K" --data-binary 'a'
expect_eq "MySQL up: created" created "$(hdr a Idempotency-Result)"
# Retried twice: the gateway's replay cache now holds it.
for i in 1 2; do http a$i POST "$U" -H "Idempotency-Key: $K" --data-binary 'a'; done
expect_eq "MySQL up: retries replayed" reused "$(hdr a2 Idempotency-Result)"

mariadb_stop
n=$(runs pay)
http b POST "$U" -H "Idempotency-Key: $(new_key)" --data-binary 'b'
is_problem "MySQL down" b 503 store-unavailable
expect_eq "MySQL down: Retry-After" 5 "$(hdr b Retry-After)"
expect_nomatch "MySQL down: no internal text" 'mysql|MariaDB|socket|/tmp|errno|SQL' "$(body b)"
http b2 POST "$U" -H "Idempotency-Key: $K" --data-binary 'a'
expect_eq "MySQL down: even a known (cached) key gets 503" 503 "$HS"
expect_eq "MySQL down: handler not run" "$n" "$(runs pay)"
expect_match "MySQL down: the status page says so, with the error" '^down [1-9][0-9]*$' "$(wstore)"
http c GET "$U?unprotected=1"
expect_eq "MySQL down: unprotected GET still served" 201 "$HS"
http d POST "$(url web /pass)" -H "Idempotency-Key: $(new_key)" --data-binary 'd'
expect_eq "MySQL down, on_store_error = pass: handler answers" 201 "$HS"
expect_eq "on_store_error = pass: handler ran" 1 "$(runs pass)"
expect_eq "on_store_error = pass: not marked created" "" "$(hdr d Idempotency-Result)"
expect_eq "on_store_error = pass: the handler's own Idempotent-Replayed dropped" "" "$(hdr d Idempotent-Replayed)"

mariadb_start >/dev/null 2>&1 || not_ok "MariaDB restarts"
K2=$(new_key)
served() {
	http e POST "$U" -H "Idempotency-Key: $K2" --data-binary 'e'
	[ "$HS" != 503 ]
}
if wait_until 15 served; then ok "MySQL back: served again"; else not_ok "MySQL back: served again" "still 503"; fi
expect_eq "MySQL back: created" created "$(hdr e Idempotency-Result)"
expect_eq "MySQL back: the status page says up, with no error" "up 0" "$(wstore)"
http f POST "$U" -H "Idempotency-Key: $K" --data-binary 'a'
expect_eq "MySQL back: key from before the outage replays" reused "$(hdr f Idempotency-Result)"
expect_file_eq "MySQL back: same body as before the outage" "$T/a.b" "$T/f.b"

# An answer the server refuses to store (over its max_allowed_packet,
# though under max_response): delivered once, then a tombstone, never a
# second run, even after the lease.  A new gateway: new connections take
# the new limit.
h_sqlroot -e "SET GLOBAL max_allowed_packet = 1048576"
BIG=$(cgi_install big)
gw_conf "$T/big.conf" "unix:$T/big.sock" "$DBCNF"
printf '\n[route /big]\nhandler = cgi:%s\nmax_response = 4M\nwait = 1s\nlease = 2s\n' "$BIG" >>"$T/big.conf"
gw_start gwbig "$T/big.conf" || { done_testing; exit 1; }
lighttpd_start webbig "unix:$T/big.sock" || { done_testing; exit 1; }
K3=$(new_key)
http g1 POST "$(url webbig /big?bytes=2000000)" -H "Idempotency-Key: $K3" --data-binary 'g'
expect_eq "not storable: first answer delivered" 201 "$HS"
expect_eq "not storable: all 2000000 bytes" 2000000 "$(wc -c <"$T/g1.b" | tr -d ' ')"
expect_match "not storable: logged" 'cannot record answer' "$(cat "$T/gwbig.log")"
http g2 POST "$(url webbig /big?bytes=2000000)" -H "Idempotency-Key: $K3" --data-binary 'g'
is_problem "not storable: retry" g2 410 response-not-stored
expect_match "not storable: retry names the first status" '"original_status" *: *201' "$(body g2)"
sleep 2.5
http g3 POST "$(url webbig /big?bytes=2000000)" -H "Idempotency-Key: $K3" --data-binary 'g'
expect_eq "not storable: retry after the lease still 410" 410 "$HS"
expect_eq "not storable: handler ran once" 1 "$(runs big)"
done_testing
