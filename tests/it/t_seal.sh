#!/bin/bash
# Stored answers sealed at rest: nothing in clear in the store or a dump,
# byte-for-byte replays, wrong or missing keys never rerun, moved rows fail.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
K1=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
K1BAD=ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
CARD=4000056655665556	# a test card number: 4242 alone turns up in times and ids
K2=2222222222222222222222222222222222222222222222222222222222222222
ROUTES="[route /payments]
handler = cgi:$PAY

[route /big]
handler = cgi:$PAY
max_response = 1K"

# conf FILE [KEYFILE]: the gateway's config, sealed when KEYFILE is given
conf() {
	gw_conf "$1" "unix:$T/gw.sock" "$DBCNF"
	[ -z "${2:-}" ] || echo "secret_key_file = $2" >>"$1"
	printf '\n%s\n' "$ROUTES" >>"$1"
}
keys() { # keys FILE MODE LINE...
	local f=$1 m=$2
	shift 2
	printf '%s\n' "$@" >"$f"
	chmod "$m" "$f"
}

db_new "$TNAME" || { done_testing; exit 1; }
keys "$T/k.keys" 0600 "# ring" "k1 $K1"
conf "$T/clear.conf"
conf "$T/seal.conf" "$T/k.keys"

# -t: clear is noted, sealed is not; the mode refusals.
out=$("$IDEMGATE" -t -c "$T/clear.conf" 2>&1)
expect_eq "-t clear: ok, syntax ok last" "0 syntax ok" "$? $(printf '%s\n' "$out" | tail -n 1)"
expect_match "-t clear: answers stored in clear" "clear.conf: note: answers stored in clear" "$out"
out=$("$IDEMGATE" -t -c "$T/seal.conf" 2>&1)
expect_eq "-t sealed: only syntax ok" "0 syntax ok" "$? $out"
for m in 0644:world-readable 0660:writable 0602:writable; do
	chmod "${m%%:*}" "$T/k.keys"
	out=$("$IDEMGATE" -t -c "$T/seal.conf" 2>&1)
	expect_eq "-t key file ${m%%:*}: refused" 1 "$?"
	expect_match "-t key file ${m%%:*}: one line naming it" "^$T/seal.conf:[0-9]+:[0-9]+: secret_key_file $T/k.keys: .*${m#*:}" "$out"
	timeout 5 "$IDEMGATE" -c "$T/seal.conf" >/dev/null 2>"$T/refused.err"
	expect_eq "start with key file ${m%%:*}: refused" 1 "$?"
	# idemctl says so as a config error too (a file this user may not
	# read is another matter: a warning, as for an operator's check)
	out=$("$IDEMCTL" -c "$T/seal.conf" check 2>&1)
	expect_eq "check, key file ${m%%:*}: exit 2" 2 "$?"
	expect_match "check, key file ${m%%:*}: a failure" "\[fail\] .*${m#*:}" "$out"
	"$IDEMCTL" -c "$T/seal.conf" run --key seal-mode -- true >/dev/null 2>"$T/run.err"
	expect_eq "run, key file ${m%%:*}: exit 2 (config), one line" "2 1" "$? $(wc -l <"$T/run.err" | tr -d ' ')"
done
chmod 0640 "$T/k.keys"
# A key file this user cannot read (here: none there) is as much a config
# error for run, which must seal: nothing runs, nothing is stored in clear.
sed "s|$T/k.keys|$T/none.keys|" "$T/seal.conf" >"$T/none.conf"
"$IDEMCTL" -c "$T/none.conf" run --key seal-none -- sh -c "echo ran >>'$T/none.runs'" >/dev/null 2>"$T/run.err"
expect_eq "run, key file unreadable: exit 2 (config), one line" "2 1" "$? $(wc -l <"$T/run.err" | tr -d ' ')"
expect_eq "run, key file unreadable: nothing ran" "" "$(cat "$T/none.runs" 2>/dev/null)"
keys "$T/dup.keys" 0600 "k1 $K1" "k1 $K2"
conf "$T/dup.conf" "$T/dup.keys"
out=$("$IDEMGATE" -t -c "$T/dup.conf" 2>&1)
expect_eq "-t duplicate id: refused at its line" "1 $T/dup.keys:2:1: duplicate key id" "$? $out"

# A clear row, written before the key was set.
gw_start gw "$T/clear.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock"
U=$(url web /payments)
KC=$(new_key)
http c1 POST "$U?m=CLEARMARK" -H "Idempotency-Key: $KC" --data-binary 'c'
expect_eq "clear: created" 201 "$HS"
# and a tombstone in clear (an answer over max_response), for the end
BIG=$(url web /big)
KTC=$(new_key)
http tc1 POST "$BIG?bytes=5000&status=202" -H "Idempotency-Key: $KTC" --data-binary 't'
expect_eq "clear tombstone: delivered once" 202 "$HS"
gw_stop gw

# Sealed from now on.
gw_start gw "$T/seal.conf" || { done_testing; exit 1; }
http c2 POST "$U?m=CLEARMARK" -H "Idempotency-Key: $KC" --data-binary 'c'
expect_eq "clear row after the key: replayed" true "$(hdr c2 Idempotent-Replayed)"
expect_file_eq "clear row after the key: body" "$T/c1.b" "$T/c2.b"
KA=$(new_key)
KB=$(new_key)
http a1 POST "$U?m=SEALMARK7" -H "Idempotency-Key: $KA" --data-binary "{\"card\":\"$CARD\"}"
expect_eq "sealed: created" 201 "$HS"
PID=$(hdr a1 X-Payment-Id)
expect_match "sealed: the answer has an id" '^[0-9]+-[0-9]+$' "$PID"
http b1 POST "$U?m=OTHERMARK" -H "Idempotency-Key: $KB" --data-binary '{"card":"5555"}'
expect_eq "runs so far" 4 "$(runs pay)"

row=$(db_query "$TNAME" "SELECT seal_kid, HEX(seal_nonce) <> '', resp_status IS NULL, resp_headers IS NULL, resp_size FROM idem_keys WHERE idem_key = '$KA'")
expect_eq "sealed row: kid, nonce, no clear status or headers, size" "k1	1	1	1	$(stat -c %s "$T/a1.b")" "$row"
db_query "$TNAME" "SELECT * FROM idem_keys" >"$T/rows.txt"
mariadb-dump --no-defaults --socket="$MDB_SOCK" -uroot "$TNAME" >"$T/dump.sql" 2>"$T/dump.err"
expect_match "dump taken" "CREATE TABLE .idem_keys." "$(cat "$T/dump.sql")"
for f in rows.txt dump.sql; do
	check "$f: no payment id in clear" sh -c "! grep -aq -- '$PID' '$T/$f'"
	check "$f: no body marker in clear" sh -c "! grep -aq SEALMARK7 '$T/$f'"
	check "$f: no card digits in clear" sh -c "! grep -aq $CARD '$T/$f'"
	check "$f: the clear row is still clear" grep -aq CLEARMARK "$T/$f"
done

# Another gateway process with the same key file: byte-for-byte.
gw_stop gw
gw_start gw "$T/seal.conf" || { done_testing; exit 1; }
http a2 POST "$U?m=SEALMARK7" -H "Idempotency-Key: $KA" --data-binary "{\"card\":\"$CARD\"}"
expect_eq "replay, new process: Idempotent-Replayed" true "$(hdr a2 Idempotent-Replayed)"
expect_eq "replay, new process: status line" "$(head -1 "$T/a1.h" | tr -d '\r')" "$(head -1 "$T/a2.h" | tr -d '\r')"
expect_file_eq "replay, new process: body byte-for-byte" "$T/a1.b" "$T/a2.b"
expect_eq "replay, new process: headers" "$(hdr_block a1)" "$(hdr_block a2)"
expect_eq "replay, new process: Set-Cookie not stored" "" "$(hdr a2 Set-Cookie)"
http a3 POST "$U?m=SEALMARK7" -H "Idempotency-Key: $KA" --data-binary '{"card":"9999"}'
is_problem "sealed row, another body" a3 422 key-mismatch
expect_eq "replays ran nothing" 4 "$(runs pay)"

# The AAD swap: KA's sealed columns copied into KB's row.
db_query "$TNAME" "UPDATE idem_keys b JOIN idem_keys a ON a.idem_key = '$KA' SET b.resp_body = a.resp_body, b.seal_nonce = a.seal_nonce, b.seal_kid = a.seal_kid WHERE b.idem_key = '$KB'"
sleep 0.3
http b2 POST "$U?m=OTHERMARK" -H "Idempotency-Key: $KB" --data-binary '{"card":"5555"}'
is_problem "moved ciphertext" b2 500 store-key-missing
check "moved ciphertext: not the other answer" sh -c "! grep -q SEALMARK7 '$T/b2.b'"
expect_match "moved ciphertext: log says the tag failed" "authentication tag" "$(cat "$T/gw.log")"
expect_eq "moved ciphertext: nothing ran" 4 "$(runs pay)"

# A header put in clear beside KA's sealed answer (database write
# access): not sent ahead of the sealed ones, the row is altered.
db_query "$TNAME" "UPDATE idem_keys SET resp_headers = 'Location: https://evil.example/\r\n' WHERE idem_key = '$KA'"
sleep 0.3
http a4 POST "$U?m=SEALMARK7" -H "Idempotency-Key: $KA" --data-binary "{\"card\":\"$CARD\"}"
is_problem "clear header on a sealed row" a4 500 store-key-missing
expect_eq "clear header on a sealed row: not sent" "" "$(hdr a4 Location)"
expect_eq "clear header on a sealed row: nothing ran" 4 "$(runs pay)"

gw_stop gw

# Wrong key material under the same id, then a file without k1.
keys "$T/bad.keys" 0600 "k1 $K1BAD"
conf "$T/bad.conf" "$T/bad.keys"
keys "$T/k2.keys" 0600 "k2 $K2"
conf "$T/k2.conf" "$T/k2.keys"
for c in bad k2; do
	gw_start gw "$T/$c.conf" || break
	http w$c POST "$U?m=SEALMARK7" -H "Idempotency-Key: $KA" --data-binary "{\"card\":\"$CARD\"}"
	is_problem "$c key file" w$c 500 store-key-missing
	check "$c key file: no answer leaked" sh -c "! grep -q -- '$PID' '$T/w$c.b'"
	expect_eq "$c key file: nothing ran again" 4 "$(runs pay)"
	gw_stop gw
done
expect_match "a missing key id is named in the log" "hashing key (is wrapped under|does not open under) key id k1" "$(cat "$T/gw.log")"

# idemctl: check says sealed; show names the key.
"$IDEMCTL" -c "$T/seal.conf" check >"$T/check.out" 2>&1
expect_match "check: sealed, current key" '^\[ ok \] answers sealed, current key k1' "$(cat "$T/check.out")"
"$IDEMCTL" -c "$T/clear.conf" check >"$T/check0.out" 2>&1
expect_match "check: clear noted" '^\[warn\] answers stored in clear' "$(cat "$T/check0.out")"
# show opens what the key file can open, as for a clear row.
out=$("$IDEMCTL" -c "$T/seal.conf" show "$KA" 2>&1)
expect_match "show with the key: status and size" "response +status 201, $(stat -c %s "$T/a1.b") bytes" "$out"
"$IDEMCTL" -c "$T/seal.conf" show "$KA" --body >"$T/show.b" 2>"$T/show.err"
expect_eq "show --body with the key: exit 0" "0 " "$? $(cat "$T/show.err")"
expect_file_eq "show --body with the key: the body" "$T/a1.b" "$T/show.b"
out=$("$IDEMCTL" -c "$T/seal.conf" show "$KB" 2>&1)
expect_match "show, moved ciphertext: does not open" "response +encrypted, key k1, [0-9]+ bytes \(does not open" "$out"
out=$("$IDEMCTL" -c "$T/k2.conf" show "$KA" 2>&1)
expect_match "show without k1: encrypted, key k1" "response +encrypted, key k1" "$out"
check "show without k1: no payment id" sh -c "! printf '%s' \"\$1\" | grep -q -- '$PID'" _ "$out"
"$IDEMCTL" -c "$T/k2.conf" show "$KA" --body >"$T/show2.b" 2>"$T/show2.err"
expect_eq "show --body without k1: exit 2, nothing out" "2 0" "$? $(stat -c %s "$T/show2.b")"
expect_match "show --body without k1: says why" "encrypted, key k1, which secret_key_file does not hold" "$(cat "$T/show2.err")"
# The key id taken off a sealed row (database write access): not a row
# in clear, never replayed as "Status: 0" with the ciphertext for a body;
# nor one whose ciphertext was taken off (the key id kept).  One worker,
# one thread: the retry comes on the connection that completed the key
# (its one-read shortcut), where the check must hold too.
sed -e 's/^workers = .*/workers = 1/' -e 's/^threads = .*/threads = 1/' "$T/seal.conf" >"$T/seal1.conf"
gw_start gw "$T/seal1.conf" || { done_testing; exit 1; }
n0=$(runs pay)
for what in kid body; do
	KT=$(new_key)
	http t1$what POST "$U?m=TAMPER" -H "Idempotency-Key: $KT" --data-binary "$what"
	expect_eq "$what taken off: created first" 201 "$HS"
	if [ "$what" = kid ]; then col=seal_kid; else col=resp_body; fi
	db_query "$TNAME" "UPDATE idem_keys SET $col = NULL WHERE idem_key = '$KT'"
	logged=$(grep -c 'its stored answer' "$T/gw.log")
	sleep 0.3
	http t2$what POST "$U?m=TAMPER" -H "Idempotency-Key: $KT" --data-binary "$what"
	is_problem "$what taken off a sealed row" t2$what 500 store-key-missing
	expect_lt "$what taken off: logged" "$logged" "$(grep -c 'its stored answer' "$T/gw.log")"
done
expect_eq "taken off: nothing ran again" $((n0 + 2)) "$(runs pay)"
gw_stop gw
# A tombstone's status is sealed too (the status line, SPEC 11), and its
# 410 still names it; one stored in clear before the key was set keeps
# answering so, and rekey seals it.
gw_start gw "$T/seal.conf" || { done_testing; exit 1; }
KTS=$(new_key)
http ts1 POST "$BIG?bytes=5000&status=207" -H "Idempotency-Key: $KTS" --data-binary 't'
expect_eq "sealed tombstone: delivered once" 207 "$HS"
expect_eq "sealed tombstone: state 2, no status in clear, sealed under k1" "2	1	k1" \
    "$(db_query "$TNAME" "SELECT state, resp_status IS NULL, seal_kid FROM idem_keys WHERE idem_key = '$KTS'")"
n0=$(runs pay)
http ts2 POST "$BIG?bytes=5000&status=207" -H "Idempotency-Key: $KTS" --data-binary 't'
is_problem "sealed tombstone: a retry" ts2 410 response-not-stored
expect_match "sealed tombstone: the 410 names the first status" '"original_status":207' "$(body ts2)"
http tc2 POST "$BIG?bytes=5000&status=202" -H "Idempotency-Key: $KTC" --data-binary 't'
expect_match "clear tombstone under a key: 410 naming its status" '"original_status":202' "$(body tc2)"
"$IDEMCTL" -c "$T/seal.conf" rekey >"$T/rekey.out" 2>&1
expect_eq "rekey: exit 0" 0 "$?"
expect_eq "rekey: the clear tombstone sealed" "2	1	k1" \
    "$(db_query "$TNAME" "SELECT state, resp_status IS NULL, seal_kid FROM idem_keys WHERE idem_key = '$KTC'")"
sleep 0.3
http tc3 POST "$BIG?bytes=5000&status=202" -H "Idempotency-Key: $KTC" --data-binary 't'
expect_match "rekeyed tombstone: 410 naming its status" '"original_status":202' "$(body tc3)"
expect_eq "tombstones: nothing ran again" "$n0" "$(runs pay)"
# Its key id taken off (database write access): an altered sealed row,
# not a tombstone in clear with the ciphertext for its status.
db_query "$TNAME" "UPDATE idem_keys SET seal_kid = NULL WHERE idem_key = '$KTS'"
sleep 0.3
http ts3 POST "$BIG?bytes=5000&status=207" -H "Idempotency-Key: $KTS" --data-binary 't'
is_problem "sealed tombstone, key id taken off" ts3 500 store-key-missing
gw_stop gw
# Its key id gone from the file: store-key-missing, as a completed row.
gw_start gw "$T/k2.conf" || { done_testing; exit 1; }
http tk POST "$BIG?bytes=5000&status=207" -H "Idempotency-Key: $KTS" --data-binary 't'
is_problem "sealed tombstone without its key" tk 500 store-key-missing
expect_eq "sealed tombstone without its key: nothing ran" "$n0" "$(runs pay)"
gw_stop gw
done_testing
