#!/bin/bash
# A sealed row larger than a replay could read back (stored under an older,
# larger max_response) does not stop a rekey: it is passed over, counted
# unreadable, and every other row is re-sealed.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
. "$(dirname "$0")/../lib/rekey.sh"
# a server of its own that takes an 85 MiB value
MDB_OPTS=--max-allowed-packet=256M db_private || { done_testing; exit 1; }
rekey_setup "$PAY" || { done_testing; exit 1; }
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock"
U=$(url web /payments)
KB=$(new_key)
KS=$(new_key)
http b1 POST "$U?m=BIG" -H "Idempotency-Key: $KB" --data-binary b
http s1 POST "$U?m=SMALL" -H "Idempotency-Key: $KS" --data-binary s
expect_eq "two rows under k1" "201 k1 k1" "$HS $(kid "$KB") $(kid "$KS")"
db_query "$TNAME" "UPDATE idem_keys SET resp_body = REPEAT('x', 85 * 1024 * 1024) WHERE idem_key = '$KB'"
expect_eq "the big row: 85 MiB" $((85 * 1024 * 1024)) \
    "$(db_query "$TNAME" "SELECT LENGTH(resp_body) FROM idem_keys WHERE idem_key = '$KB'")"
printf 'k2 %s\n' "$K2" >>"$T/k.keys"
ctl rekey -v >"$T/rk.out" 2>&1
expect_eq "rekey past a row too large to read: exit 0" 0 "$?"
expect_match "... counted unreadable (-v)" '^rekey ok: re-sealed 1 rows under key k2, .*1 unreadable' "$(cat "$T/rk.out")"
expect_match "check: the big row still counted under k1" '\[warn\] key k1: 1 rows' "$(ctl check 2>&1)"
expect_eq "... the other row re-sealed, the big one left under k1" "k1 k2" "$(kid "$KB") $(kid "$KS")"
expect_eq "... recorded: 1 re-sealed, 1 unreadable" "ok	1	1" \
    "$(db_query "$TNAME" "SELECT outcome, rows_rekeyed, rows_unreadable FROM idem_rekey_runs ORDER BY id DESC LIMIT 1")"
gw_stop gw
done_testing
