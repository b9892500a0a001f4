#!/bin/bash
# idemctl forget --route: count, dry run, confirmation, exactly the matching keys, batches, the replay cache.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
CONF=$T/gw.conf
gw_conf "$CONF" "unix:$T/gw.sock" "$DBCNF"
cat >>"$CONF" <<EOF

[route /pay.php]
handler = cgi:$PAY

[route /other]
handler = cgi:$PAY
EOF
gw_start gw "$CONF" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }

sq() { db_query "$TNAME" "SET time_zone = '+00:00'; $1"; }
rows() { sq "SELECT COUNT(*) FROM idem_keys WHERE $1"; }
# post OUT PATH KEY: a protected POST; the CGI answers ?status=N
post() { http "$1" POST "$(url web "$2")" -H "Idempotency-Key: $3" --data-binary 'amount=7'; }
# idemctl's stderr is kept in $T/ctl.log too, where the harness looks for
# sanitizer reports.
ctl() { # ctl ARGS... (stdin as given): RC, $T/out, $T/err
	"$IDEMCTL" -c "$CONF" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	cat "$T/err" >>"$T/ctl.log"
}
lines() { wc -l <"$1" | tr -d ' '; }

# The misconfiguration window: /pay.php answered 404 for a while.
A1=$(new_key)-a1 A2=$(new_key)-a2 A3=$(new_key)-a3
for k in "$A1" "$A2" "$A3"; do post s "/pay.php?status=404" "$k"; done
expect_eq "stored: a 404 on /pay.php" 404 "$HS"
B1=$(new_key)-b1
post s /pay.php "$B1"
expect_eq "stored: a 201 on /pay.php" 201 "$HS"
# a 404 from before the window
C1=$(new_key)-c1
post s "/pay.php?status=404" "$C1"
sq "UPDATE idem_keys SET created_at = created_at - INTERVAL 3 HOUR WHERE idem_key = '$C1'"
# the same status on another route
D1=$(new_key)-d1
post s "/other?status=404" "$D1"
expect_eq "handler ran once per key" 6 "$(runs pay)"
PAY404="route = '/pay.php' AND resp_status = 404"
expect_eq "four 404s stored on /pay.php" 4 "$(rows "$PAY404")"

# ---------------------------------------------------------------- usage
ctl forget "$A1" --route /pay.php
expect_eq "KEY with --route: exit 1" 1 "$RC"
expect_match "KEY with --route: says why" 'KEY or --route, not both' "$(cat "$T/err")"
for bad in 4x 40 4040 6xx 1xx abc; do
	ctl forget --route /pay.php --status "$bad" --dry-run
	expect_eq "--status $bad: exit 1" 1 "$RC"
	expect_eq "--status $bad: one error line, the --help hint on it" \
		"idemctl: forget: --status wants a status (404) or a class (4xx), not '$bad' (see 'idemctl forget --help')" "$(cat "$T/err")"
done
ctl forget --route /pay.php --since 2weeks --dry-run
expect_eq "--since 2weeks: exit 1" 1 "$RC"
ctl forget --route /pay.php --scope none --dry-run
expect_eq "--scope with --route: exit 1" 1 "$RC"
ctl forget "$A1" --yes
expect_eq "--yes without --route: exit 1" 1 "$RC"
expect_eq "usage errors forgot nothing" 4 "$(rows "$PAY404")"

# ---------------------------------------------------------------- count
ctl forget --route /pay.php --status 404 --since 2h --dry-run
expect_eq "dry run: exit 0" 0 "$RC"
expect_eq "dry run: the count, one line" \
	"forget: 3 keys of route /pay.php with status 404 since 2h" "$(cat "$T/out")"
expect_eq "dry run: forgets nothing" 4 "$(rows "$PAY404")"
ctl forget --route /pay.php --status 4xx --dry-run
expect_eq "class 4xx, any age: 4 keys" "forget: 4 keys of route /pay.php with status 4xx" "$(cat "$T/out")"
ctl forget --route /pay.php --status 2xx --dry-run
expect_eq "class 2xx: 1 key" "forget: 1 key of route /pay.php with status 2xx" "$(cat "$T/out")"
ctl forget --route /pay.php --dry-run
expect_eq "no --status: every key of the route" "forget: 5 keys of route /pay.php" "$(cat "$T/out")"
# The stored route is the [route] prefix, matched exactly.
ctl forget --route /pay --status 404 --dry-run
expect_eq "/pay is not /pay.php (no path-prefix match)" "forget: 0 keys of route /pay with status 404" "$(cat "$T/out")"
ctl forget --route /PAY.php --status 404 --dry-run
expect_eq "routes match case-sensitively" "forget: 0 keys of route /PAY.php with status 404" "$(cat "$T/out")"
ctl forget --route /pay.php/x --status 404 --yes
expect_eq "a path under a route: 0 keys, exit 0" "0/forget: 0 keys of route /pay.php/x with status 404" "$RC/$(cat "$T/out")"
expect_match "a path under a route: names the route its keys are under" \
	'no \[route /pay.php/x\]; its requests are stored under route /pay.php$' "$(cat "$T/err")"

# ---------------------------------------------------------------- asking
ctl forget --route /pay.php --status 404 --since 2h </dev/null
expect_eq "stdin not a tty, no --yes: refused, exit 1" 1 "$RC"
expect_eq "refused: the count still printed" \
	"forget: 3 keys of route /pay.php with status 404 since 2h" "$(cat "$T/out")"
expect_eq "refused: one line" 1 "$(lines "$T/err")"
expect_match "refused: names --yes" '--yes' "$(cat "$T/err")"
expect_eq "refused: nothing forgotten" 4 "$(rows "$PAY404")"
# On a terminal (script(1) gives it one): asks, and only y forgets.
tty_forget() { # tty_forget ANSWER ARGS...: RC, the terminal's text in $T/tty
	local ans=$1
	shift
	printf '%s\n' "$ans" | script -qec "$(printf '%q ' "$IDEMCTL" -c "$CONF" forget "$@")" /dev/null >"$T/tty" 2>&1
	RC=$?
	cat "$T/tty" >>"$T/ctl.log"
}
if command -v script >/dev/null; then
	tty_forget n --route /pay.php --status 404 --since 2h
	expect_eq "tty, answer n: exit 1" 1 "$RC"
	expect_match "tty: asks" 'forget 3 keys\? \[y/N\]' "$(tr -d '\r' <"$T/tty")"
	expect_eq "tty, answer n: nothing forgotten" 4 "$(rows "$PAY404")"
	tty_forget y --route /other --status 404
	expect_eq "tty, answer y: exit 0" 0 "$RC"
	expect_match "tty, answer y: forgot" 'forgot 1 key of route /other with status 404' "$(tr -d '\r' <"$T/tty")"
	expect_eq "tty, answer y: /other's 404 gone" 0 "$(rows "route = '/other'")"
	post s "/other?status=404" "$D1"
	expect_eq "tty, answer y: the key runs again" created "$(hdr s Idempotency-Result)"
	expect_eq "tty, answer y: handler ran again" 7 "$(runs pay)"
else
	not_ok "script(1) installed (util-linux)"
fi

# ---------------------------------------------------------------- forget
# A1 hot in the gateway's replay cache: created, replayed, replayed.
post h1 "/pay.php?status=404" "$A1"
post h2 "/pay.php?status=404" "$A1"
expect_eq "A1 replayed before the forget" reused "$(hdr h2 Idempotency-Result)"
n=$(runs pay)
t0=$(now_ms)
ctl forget --route /pay.php --status 404 --since 2h --yes </dev/null
took=$(($(now_ms) - t0))
expect_eq "--yes: exit 0" 0 "$RC"
expect_eq "--yes: says what it forgot" \
	"forget: 3 keys of route /pay.php with status 404 since 2h|forgot 3 keys of route /pay.php with status 404 since 2h" \
	"$(tr '\n' '|' <"$T/out" | sed 's/|$//')"
expect_eq "--yes: nothing on stderr" "" "$(cat "$T/err")"
# At once, on the gateway that had it in memory: runs again.
post f1 "/pay.php?status=404" "$A1"
expect_eq "cached key after forget: created" created "$(hdr f1 Idempotency-Result)"
expect_eq "cached key after forget: handler ran again" $((n + 1)) "$(runs pay)"
expect_lt "forget waited out the replay-cache window (${took} ms)" 299 "$took"
post f2 "/pay.php?status=404" "$A2"
expect_eq "forgotten key on retry: created" created "$(hdr f2 Idempotency-Result)"
expect_eq "forgotten key on retry: handler ran again" $((n + 2)) "$(runs pay)"
for k in B1 C1; do
	post r "$([ $k = C1 ] && echo '/pay.php?status=404' || echo /pay.php)" "${!k}"
	expect_eq "$k (not matched) still replays" reused "$(hdr r Idempotency-Result)"
done
post r "/other?status=404" "$D1"
expect_eq "the other route's key still replays" reused "$(hdr r Idempotency-Result)"
expect_eq "kept keys ran nothing" $((n + 2)) "$(runs pay)"

# ---------------------------------------------------------------- rule
# An in-progress key is kept, as forget KEY keeps it, unless --force.
S1=$(new_key)-slow
http_bg slow POST "$(url web "/pay.php?sleep=5000")" -H "Idempotency-Key: $S1" --data-binary 'amount=7'
slow_claimed() { [ "$(rows "idem_key = '$S1' AND state = 0")" = 1 ]; }
check "a slow request holds its key in progress" wait_until 5 slow_claimed
ctl forget --route /pay.php --dry-run
expect_match "in progress: kept and said" '; 1 in progress kept \(--force forgets them too\)$' "$(cat "$T/out")"
ctl forget --route /pay.php --force --dry-run
expect_nomatch "in progress with --force: counted" 'kept' "$(cat "$T/out")"
ctl forget --route /pay.php --yes
expect_eq "route-wide forget: exit 0" 0 "$RC"
expect_eq "route-wide forget: only the in-progress key left" "1/$S1" \
	"$(rows "route = '/pay.php'")/$(sq "SELECT idem_key FROM idem_keys WHERE route = '/pay.php'")"
# Its ttl passed while it runs (a lease renewal does not move it): its
# run is not over, so it stays, by key and by route.
sq "UPDATE idem_keys SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE idem_key = '$S1'"
ctl forget "$S1"
expect_eq "in progress past its ttl: forget KEY refuses (8)" 8 "$RC"
ctl forget --route /pay.php --dry-run
expect_match "in progress past its ttl: kept by route too" '; 1 in progress kept' "$(cat "$T/out")"
expect_eq "in progress past its ttl: still there" 1 "$(rows "idem_key = '$S1' AND state = 0")"
bg_wait
expect_eq "in-progress key finished and recorded" 1 "$(rows "idem_key = '$S1' AND state = 1")"

# ---------------------------------------------------------------- batches
# 1500 rows on /bulk, 1000 of them 404 (two whole batches of 500) among
# 500 201s; and 404s on /bulk2 that stay.
ins() { # ins ROUTE COUNT STATUS-EXPR
	sq "INSERT INTO idem_keys (scope, idem_key, route, method, fingerprint, state, owner,
		owner_token, created_at, lease_until, expires_at, completed_at, resp_status,
		resp_headers, resp_body, resp_size)
		SELECT UNHEX(SHA2('none', 256)), CONCAT('$1-', seq), '$1', 'POST', UNHEX(SHA2(seq, 256)),
		1, 'test', 1, NOW(6), NOW(6), NOW(6) + INTERVAL 1 DAY, NOW(6), $3, '', 'x', 1
		FROM seq_1_to_$2"
}
ins /bulk 1500 "IF(seq % 3 = 0, 201, 404)"
ins /bulk2 10 404
expect_eq "bulk rows stored" 1500 "$(rows "route = '/bulk'")"
ctl forget --route /bulk --status 404 --yes
expect_eq "bulk: exit 0" 0 "$RC"
expect_match "bulk: forgot all 1000" 'forgot 1000 keys of route /bulk with status 404$' "$(cat "$T/out")"
expect_eq "bulk: the 404s gone" 0 "$(rows "route = '/bulk' AND resp_status = 404")"
expect_eq "bulk: the 201s kept" 500 "$(rows "route = '/bulk'")"
expect_eq "bulk: another route kept" 10 "$(rows "route = '/bulk2'")"

expect_nomatch "gateway: no warnings" 'warn|error' "$(grep -v "running as root" "$T/gw.log")"
done_testing
