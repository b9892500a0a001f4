#!/bin/bash
# Replay cache: retries served from memory, and never stale: forget, SQL edits, ttl, scopes, two gateways.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
# gateways a and b share the database; n has no cache (the control)
for g in a b n; do
	cat >"$T/$g.conf" <<EOF
[gateway]
listen = unix:$T/$g.sock
workers = 1
threads = 4
mysql_defaults_file = $DBCNF
$([ $g = n ] && echo 'replay_cache = 0')

[route /payments]
handler = cgi:$PAY

[route /short]
handler = cgi:$PAY
ttl = 2s

[route /scoped]
handler = cgi:$PAY
scope = header:X-Api-Key
EOF
	gw_start gw$g "$T/$g.conf" || { done_testing; exit 1; }
	lighttpd_start web$g "unix:$T/$g.sock" || { done_testing; exit 1; }
done
CT='Content-Type: application/json'
sq() { db_query "$TNAME" "$1"; }
epoch() { sq "SELECT n FROM idem_epoch WHERE id = 1"; }
# rows InnoDB read from idem_keys so far (MariaDB user statistics)
h_sqlroot -e "SET GLOBAL userstat = 1"
keys_read() {
	h_sqlroot -e "SELECT COALESCE(SUM(ROWS_READ), 0) FROM information_schema.TABLE_STATISTICS
		WHERE TABLE_SCHEMA = '$TNAME' AND TABLE_NAME = 'idem_keys'"
}
post() { # post OUT WEB PATH KEY [curl args]
	local out=$1 w=$2 p=$3 k=$4
	shift 4
	http "$out" POST "$(url "$w" "$p")" -H "Idempotency-Key: $k" -H "$CT" --data-binary '{"amount":7}' "$@"
}
# hot KEY WEB: created, then replayed twice (the second replay from memory)
hot() {
	post h1 "$2" /payments "$1"
	post h2 "$2" /payments "$1"
	post h3 "$2" /payments "$1"
	[ "$(hdr h1 Idempotency-Result)/$(hdr h3 Idempotency-Result)" = created/reused ]
}

# ---------------------------------------------------------------- hits
K=$(new_key)
check "created, then replayed" hot "$K" weba
r0=$(keys_read)
same=0 reused=0
for i in $(seq 1 30); do
	post c$i weba /payments "$K"
	cmp -s "$T/h1.b" "$T/c$i.b" && same=$((same + 1))
	[ "$(hdr c$i Idempotency-Result)/$(hdr c$i Idempotent-Replayed)" = reused/true ] && reused=$((reused + 1))
done
r1=$(keys_read)
expect_eq "30 retries: all marked reused" 30 "$reused"
expect_eq "30 retries: all byte-for-byte the first answer" 30 "$same"
expect_eq "30 retries: header block as the first answer" "$(hdr_block h1)" "$(hdr_block c30)"
expect_eq "30 retries: status line as the first answer" "$(head -1 "$T/h1.h" | tr -d '\r')" "$(head -1 "$T/c30.h" | tr -d '\r')"
expect_eq "30 retries: Set-Cookie not replayed" "" "$(hdr c30 Set-Cookie)"
# A few may read the store: a worker whose keeper was starved past the
# cache's 250 ms validity on a loaded machine asks the store instead.
expect_lt "30 retries: served from memory (idem_keys rows read: $((r1 - r0)))" $((r1 - r0)) 10
expect_eq "30 retries: handler ran once" 1 "$(runs pay)"

K=$(new_key)
check "control (replay_cache = 0): created, then replayed" hot "$K" webn
r0=$(keys_read)
for i in $(seq 1 30); do post n$i webn /payments "$K"; done
r1=$(keys_read)
expect_lt "control: every retry reads the store (rows read: $((r1 - r0)))" 29 $((r1 - r0))
expect_eq "control: replayed" reused "$(hdr n30 Idempotency-Result)"

# A different request under a cached key is the store's to judge: 422.
K=$(new_key)
hot "$K" weba
http m POST "$(url weba /payments)" -H "Idempotency-Key: $K" -H "$CT" --data-binary '{"amount":8}'
is_problem "cached key, different body" m 422 key-mismatch
http m POST "$(url weba /payments?x=1)" -H "Idempotency-Key: $K" -H "$CT" --data-binary '{"amount":7}'
is_problem "cached key, different query" m 422 key-mismatch

# Binary answers from memory, NUL and CRLF included.
binary_expected "$T/bin.want"
K=$(new_key)
for i in 1 2 3 4; do post b$i weba "/payments?binary=1" "$K"; done
expect_eq "binary: replayed from memory" reused "$(hdr b4 Idempotency-Result)"
expect_file_eq "binary: replay from memory exact" "$T/bin.want" "$T/b4.b"

# Scopes: a key cached for one API key never answers another.
K=$(new_key)
for i in 1 2 3; do
	http s$i POST "$(url weba /scoped)" -H "Idempotency-Key: $K" -H 'X-Api-Key: alpha' --data-binary 's'
done
expect_eq "scope alpha: replayed" reused "$(hdr s3 Idempotency-Result)"
http sb POST "$(url weba /scoped)" -H "Idempotency-Key: $K" -H 'X-Api-Key: bravo' --data-binary 's'
expect_eq "same key, scope bravo: a new request" created "$(hdr sb Idempotency-Result)"
http sa POST "$(url weba /scoped)" -H "Idempotency-Key: $K" -H 'X-Api-Key: alpha' --data-binary 's'
expect_file_eq "scope alpha still gets its own answer" "$T/s1.b" "$T/sa.b"

# ttl: a cached answer dies with its row, before cleanup runs.
K=$(new_key)
KT=$K
for i in 1 2 3; do post t$i weba /short "$K"; done
expect_eq "ttl 2s: replayed" reused "$(hdr t3 Idempotency-Result)"
sleep_past_expires t3
n=$(runs pay)
post t4 weba /short "$K"
expect_eq "ttl passed: created again" created "$(hdr t4 Idempotency-Result)"
expect_eq "ttl passed: handler ran again" $((n + 1)) "$(runs pay)"

# ---------------------------------------------------------------- coherence
# Everyday traffic leaves the epoch alone (caches stay warm).
e0=$(epoch)
K=$(new_key)
hot "$K" weba
post r1 weba "/payments?status=500" "$(new_key)"
expect_eq "handler 500 released" 500 "$HS"
post x1 weba /short "$K-x"
post x1r weba /short "$K-x"
sleep_past_expires x1r
post x2 weba /short "$K-x"
expect_eq "expired key taken over" created "$(hdr x2 Idempotency-Result)"
"$IDEMCTL" -c "$T/a.conf" cleanup >"$T/cleanup.out" 2>&1
expect_eq "cleanup ran" 0 "$?"
expect_eq "cleanup deleted an expired row" 0 "$(sq "SELECT COUNT(*) FROM idem_keys WHERE idem_key = '$KT'")"
expect_eq "everyday traffic and cleanup: epoch unchanged" "$e0" "$(epoch)"

# idemctl forget: once it returns, no gateway replays the old answer.
K=$(new_key)
hot "$K" weba
cp "$T/h1.b" "$T/old.b"
hot "$K" webb >/dev/null
expect_eq "gateway b replays it too" reused "$(hdr h3 Idempotency-Result)"
t0=$(now_ms)
"$IDEMCTL" -c "$T/a.conf" forget "$K" >"$T/forget.out" 2>&1
expect_eq "forget: exit 0" 0 "$?"
took=$(($(now_ms) - t0))
expect_lt "forget waits out the cache window (${took} ms)" 299 "$took"
expect_eq "forget: epoch bumped" $((e0 + 1)) "$(epoch)"
n=$(runs pay)
post f1 weba /payments "$K"
expect_eq "forgotten key at once: created" created "$(hdr f1 Idempotency-Result)"
expect_eq "forgotten key: handler ran again" $((n + 1)) "$(runs pay)"
post f2 webb /payments "$K"
expect_eq "gateway b: replays" reused "$(hdr f2 Idempotency-Result)"
expect_file_eq "gateway b: the new answer, not its cached one" "$T/f1.b" "$T/f2.b"
if cmp -s "$T/old.b" "$T/f2.b"; then not_ok "old and new answers differ"; else ok "old and new answers differ"; fi

# Edits by hand reach the caches within the window too.
sql_edit() { # sql_edit NAME SQL-SET-OR-DELETE WANT-RESULT
	local k
	k=$(new_key)
	hot "$k" weba
	sq "$(printf "$2" "$k")"
	sleep 0.3
	post e weba /payments "$k"
	expect_eq "$1: answer after the edit" "$3" "$(hdr e Idempotency-Result)"
}
sql_edit "DELETE by hand" "DELETE FROM idem_keys WHERE idem_key = '%s'" created
sql_edit "expires_at moved into the past by hand" \
	"UPDATE idem_keys SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE idem_key = '%s'" created
sql_edit "resp_body edited by hand" "UPDATE idem_keys SET resp_body = 'edited' WHERE idem_key = '%s'" reused
expect_eq "resp_body edited by hand: the edited body" edited "$(body e)"

for g in a b n; do
	expect_nomatch "gateway $g: no warnings" 'warn|error' "$(grep -v "running as root" "$T/gw$g.log")"
done
done_testing
