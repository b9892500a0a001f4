#!/bin/bash
# Key rotation: a new last line seals new rows, idemctl rekey re-seals the
# old ones (cron-quiet, locked, recorded), then the old line can go and
# every row still replays byte-for-byte without running again.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
. "$(dirname "$0")/../lib/rekey.sh"
rekey_setup "$PAY" || { done_testing; exit 1; }

gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock"
U=$(url web /payments)
KEYS=()
for i in 1 2 3 4; do
	KEYS+=("$(new_key)")
	http o$i POST "$U?m=ROT$i" -H "Idempotency-Key: ${KEYS[$((i - 1))]}" --data-binary "{\"n\":$i}"
	expect_eq "k1 row $i: created" 201 "$HS"
done
expect_eq "k1 rows sealed under k1" "k1 k1 k1 k1" "$(for k in "${KEYS[@]}"; do kid "$k"; done | tr '\n' ' ' | sed 's/ $//')"
expect_match "check: k1 current" '\[ ok \] key k1: 4 rows \(current\)' "$(ctl check 2>&1)"

# Rotate: k2 appended is current after the reload; k1 rows still replay.
printf 'k2 %s\n' "$K2" >>"$T/k.keys"
reload
KN=$(new_key)
http o5 POST "$U?m=ROT5" -H "Idempotency-Key: $KN" --data-binary '{"n":5}'
expect_eq "after rotation: new row created" 201 "$HS"
expect_eq "after rotation: new row under k2" k2 "$(kid "$KN")"
KEYS+=("$KN")
http r1 POST "$U?m=ROT1" -H "Idempotency-Key: ${KEYS[0]}" --data-binary '{"n":1}'
expect_file_eq "after rotation: k1 row replays" "$T/o1.b" "$T/r1.b"
out=$(ctl check 2>&1)
expect_match "check: k1 older, rekey named" "\[warn\] key k1: 4 rows \(older key: run 'idemctl rekey'" "$out"
expect_match "check: k2 current" '\[ ok \] key k2: 1 rows \(current\)' "$out"

# A row under an id no longer in any file (shredded) stays as it is.
KG=$(new_key)
http g1 POST "$U?m=GONE" -H "Idempotency-Key: $KG" --data-binary 'g'
db_query "$TNAME" "UPDATE idem_keys SET seal_kid = 'k0' WHERE idem_key = '$KG'"

# Another rekey holds the lock: this one exits 4, changes nothing.
h_sqlroot "$TNAME" -e "SELECT GET_LOCK('idemgate-rekey:$TNAME', 5); DO SLEEP(3)" >/dev/null 2>&1 &
LOCKER=$!
wait_until 3 sh -c "mariadb --no-defaults --socket='$MDB_SOCK' -uroot -N -B -e \"SELECT IS_USED_LOCK('idemgate-rekey:$TNAME') IS NOT NULL\" | grep -q 1"
ctl rekey >"$T/busy.out" 2>&1
expect_eq "rekey while another holds the lock: exit 4" 4 "$?"
expect_match "rekey while locked: one line" "rekey already running" "$(cat "$T/busy.out")"
expect_eq "rekey while locked: k1 rows untouched" k1 "$(kid "${KEYS[1]}")"
wait "$LOCKER"

ctl rekey --batch 2 >"$T/rekey.out" 2>&1
expect_eq "rekey: exit 0, prints nothing" "0 " "$? $(cat "$T/rekey.out")"
expect_eq "rekey: every row under k2" "k2 k2 k2 k2 k2" "$(for k in "${KEYS[@]}"; do kid "$k"; done | tr '\n' ' ' | sed 's/ $//')"
expect_eq "rekey: the shredded row left alone" k0 "$(kid "$KG")"
expect_eq "rekey: run recorded" "ok	k2	4	0	1	3" "$(db_query "$TNAME" "SELECT outcome, to_kid, rows_rekeyed, rows_changed, rows_unreadable, batches FROM idem_rekey_runs ORDER BY id DESC LIMIT 1")"
out=$(ctl check 2>&1)
expect_match "check: k1 has no rows, its line can go" '\[ ok \] key k1: no rows \(its line can be deleted\)' "$out"
expect_match "check: the shredded id named" '\[warn\] key k0: 1 rows, not in the key file' "$out"
ctl rekey --batch 0 >"$T/bad.out" 2>&1
expect_eq "rekey --batch 0: usage" 1 "$?"

# Delete k1, reload: every row replays byte-for-byte and nothing runs.
printf 'k2 %s\n' "$K2" >"$T/k.keys"
reload
expect_eq "runs before the replays" 6 "$(runs pay)"
for i in 1 2 3 4 5; do
	http p$i POST "$U?m=ROT$i" -H "Idempotency-Key: ${KEYS[$((i - 1))]}" --data-binary "{\"n\":$i}"
	expect_eq "k1 deleted, row $i: replayed" true "$(hdr p$i Idempotent-Replayed)"
	expect_file_eq "k1 deleted, row $i: body byte-for-byte" "$T/o$i.b" "$T/p$i.b"
	expect_eq "k1 deleted, row $i: headers" "$(hdr_block o$i)" "$(hdr_block p$i)"
done
http x1 POST "$U?m=ROT1" -H "Idempotency-Key: ${KEYS[0]}" --data-binary '{"n":99}'
is_problem "k1 deleted, another body" x1 422 key-mismatch
expect_eq "k1 deleted: nothing ran again" 6 "$(runs pay)"
expect_match "show after rekey: opened" "response +status 201" "$(ctl show "${KEYS[0]}" 2>&1)"

ctl rekey -v >"$T/again.out" 2>&1
expect_match "rekey again: nothing left, says so with -v" "^rekey ok: re-sealed 0 rows under key k2, 0 rows keyed \(0 changed meanwhile, 1 unreadable\)$" "$(cat "$T/again.out")"
gw_stop gw
done_testing
