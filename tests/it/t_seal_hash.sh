#!/bin/bash
# Keyed scope hashes and fingerprints (secret_key_file): not the plain
# SHA-256 an unkeyed gateway stores, rows stored before the key still
# replay and 422 (converted on touch or by rekey), a plain gateway on a
# keyed store runs nothing, a live plain owner is waited for, idemctl run.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
K1=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
API=sk_live_hash_$RANDOM$RANDOM
ROUTES="[route /payments]
handler = cgi:$PAY
scope = header:X-Api-Key
wait = 8s"

# conf FILE SOCK DBCNF [KEYFILE]
conf() {
	gw_conf "$1" "unix:$2" "$3"
	[ -z "${4:-}" ] || echo "secret_key_file = $4" >>"$1"
	printf '\n%s\n' "$ROUTES" >>"$1"
}
# the plain scope digest of header:x-api-key = VALUE, as fp_scope makes it
plain_scope() {
	python3 -c '
import hashlib, struct, sys
h = hashlib.sha256()
for f in (b"header:x-api-key", sys.argv[1].encode()):
    h.update(struct.pack(">Q", len(f)) + f)
print(h.hexdigest().upper())' "$1"
}
col() { db_query "$1" "SELECT $2 FROM idem_keys WHERE idem_key = '$3'"; }
post() { # post OUT URL KEY BODY [curl args]
	local o=$1 u=$2 k=$3 b=$4
	shift 4
	http "$o" POST "$u" -H "Idempotency-Key: $k" -H "X-Api-Key: $API" --data-binary "$b" "$@"
}

printf 'k1 %s\n' "$K1" >"$T/k.keys"
chmod 0600 "$T/k.keys"
db_new "${TNAME}_p" || { done_testing; exit 1; }
PCNF=$DBCNF
db_new "$TNAME" || { done_testing; exit 1; }
SCNF=$DBCNF
conf "$T/plain.conf" "$T/gw.sock" "$PCNF"
conf "$T/keyed.conf" "$T/gw.sock" "$SCNF" "$T/k.keys"

# 0. A store no gateway keyed yet: idemctl with a key file only looks.
# show, forget and stats read it with plain hashes and key nothing, and
# a rekey refused for its lock changes nothing either: a gateway without
# the key file goes on answering.
db_new "${TNAME}_r" || { done_testing; exit 1; }
conf "$T/rkeyed.conf" "$T/gwr.sock" "$DBCNF" "$T/k.keys"
hk_rows() { db_query "${TNAME}_r" "SELECT COUNT(*) FROM idem_hash_key"; }
"$IDEMCTL" -c "$T/rkeyed.conf" show "nokey-$RANDOM" >/dev/null 2>&1
expect_eq "show with a key file: no such key (exit 7)" 7 "$?"
"$IDEMCTL" -c "$T/rkeyed.conf" forget "nokey-$RANDOM" >/dev/null 2>&1
"$IDEMCTL" -c "$T/rkeyed.conf" stats >/dev/null 2>&1
expect_eq "show, forget and stats key no store" 0 "$(hk_rows)"
h_sqlroot "${TNAME}_r" -e "SELECT GET_LOCK('idemgate-rekey:${TNAME}_r', 5); DO SLEEP(3)" >/dev/null 2>&1 &
LOCKER=$!
wait_until 3 sh -c "mariadb --no-defaults --socket='$MDB_SOCK' -uroot -N -B -e \"SELECT IS_USED_LOCK('idemgate-rekey:${TNAME}_r') IS NOT NULL\" | grep -q 1"
"$IDEMCTL" -c "$T/rkeyed.conf" rekey >"$T/rbusy.out" 2>&1
expect_eq "rekey while another holds its lock: exit 4" 4 "$?"
expect_eq "... and it keyed no store" 0 "$(hk_rows)"
wait "$LOCKER"

# 1. The same request through an unkeyed and a keyed gateway.
KA=$(new_key)
gw_start gw "$T/plain.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock"
U=$(url web /payments)
post p1 "$U" "$KA" '{"card":"4000056655665556"}'
expect_eq "unkeyed: created" 201 "$HS"
gw_stop gw
gw_start gw "$T/keyed.conf" || { done_testing; exit 1; }
post s1 "$U" "$KA" '{"card":"4000056655665556"}'
expect_eq "keyed: created" 201 "$HS"
PS=$(plain_scope "$API")
expect_eq "unkeyed scope is the plain SHA-256 (the check below can fail)" "$PS" "$(col "${TNAME}_p" 'HEX(scope)' "$KA")"
expect_ne "keyed scope differs from the unkeyed one" "$(col "${TNAME}_p" 'HEX(scope)' "$KA")" "$(col "$TNAME" 'HEX(scope)' "$KA")"
expect_ne "keyed fingerprint differs from the unkeyed one" "$(col "${TNAME}_p" 'HEX(fingerprint)' "$KA")" "$(col "$TNAME" 'HEX(fingerprint)' "$KA")"
expect_eq "hashed: 0 unkeyed, 1 keyed" "0 1" "$(col "${TNAME}_p" hashed "$KA") $(col "$TNAME" hashed "$KA")"
for db in "${TNAME}_p" "$TNAME"; do
	mariadb-dump --no-defaults --socket="$MDB_SOCK" -uroot --hex-blob "$db" >"$T/$db.sql" 2>/dev/null
done
check "unkeyed dump holds the plain scope digest" grep -q "$PS" "$T/${TNAME}_p.sql"
check "keyed dump: no plain scope digest" sh -c "! grep -q '$PS' '$T/$TNAME.sql'"
expect_eq "hashing key: one row, wrapped under k1, 48 bytes" $'k1\t48' "$(db_query "$TNAME" 'SELECT seal_kid, LENGTH(wrapped) FROM idem_hash_key')"
check "keyed dump: the hashing key is not in clear" sh -c "! grep -qi '$K1' '$T/$TNAME.sql'"
post s2 "$U" "$KA" '{"card":"4000056655665556"}'
expect_eq "keyed: replayed" true "$(hdr s2 Idempotent-Replayed)"
expect_file_eq "keyed: byte-for-byte" "$T/s1.b" "$T/s2.b"
post s3 "$U" "$KA" '{"card":"4111111111111111"}'
is_problem "keyed: another body" s3 422 key-mismatch
expect_eq "runs: one per gateway" 2 "$(runs pay)"
gw_stop gw

# 2. Rows stored before the key, on the store that becomes keyed.
conf "$T/lplain.conf" "$T/gw.sock" "$PCNF"
conf "$T/lkeyed.conf" "$T/gw.sock" "$PCNF" "$T/k.keys"
KB=$(new_key)
KC=$(new_key)
gw_start gw "$T/lplain.conf" || { done_testing; exit 1; }
post b1 "$U" "$KB" 'body-b'
post c1 "$U" "$KC" 'body-c'
expect_eq "before the key: created twice" 4 "$(runs pay)"
gw_stop gw
gw_start gw "$T/lkeyed.conf" || { done_testing; exit 1; }
post b2 "$U" "$KB" 'body-b'
expect_eq "old row after the key: replayed" true "$(hdr b2 Idempotent-Replayed)"
expect_file_eq "old row after the key: byte-for-byte" "$T/b1.b" "$T/b2.b"
expect_eq "old row: converted on touch" 1 "$(col "${TNAME}_p" hashed "$KB")"
post b3 "$U" "$KB" 'body-other'
is_problem "old row, another body" b3 422 key-mismatch
expect_eq "old row 2: not touched yet" 0 "$(col "${TNAME}_p" hashed "$KC")"
mariadb-dump --no-defaults --socket="$MDB_SOCK" -uroot --hex-blob "${TNAME}_p" >"$T/p-before.sql" 2>/dev/null
"$IDEMCTL" -c "$T/lkeyed.conf" rekey -v >"$T/rk.out" 2>"$T/rk.err"
expect_eq "rekey: exit 0" "0" "$?"
expect_match "rekey -v: rows keyed counted" "[1-9][0-9]* rows keyed" "$(cat "$T/rk.out")"
expect_eq "rekey: no row hashed plain left" 0 "$(db_query "${TNAME}_p" 'SELECT COUNT(*) FROM idem_keys WHERE hashed = 0')"
expect_match "rekey run recorded rows_hashed" "^[1-9]" "$(db_query "${TNAME}_p" 'SELECT rows_hashed FROM idem_rekey_runs ORDER BY id DESC LIMIT 1')"
# The answers stored in clear before the key are sealed now (SPEC 11: a
# dump must not give them away), the one converted on touch too.
expect_eq "rekey: no answer left in clear" 0 "$(db_query "${TNAME}_p" 'SELECT COUNT(*) FROM idem_keys WHERE state = 1 AND seal_kid IS NULL')"
expect_eq "rekey: both old rows sealed under k1" "k1 k1" "$(col "${TNAME}_p" seal_kid "$KB") $(col "${TNAME}_p" seal_kid "$KC")"
mariadb-dump --no-defaults --socket="$MDB_SOCK" -uroot --hex-blob "${TNAME}_p" >"$T/p-after.sql" 2>/dev/null
hexof() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n' | tr a-f A-F; }
# (every answer of the CGI's says body_sha256=...)
check "rekey: the dump holds no answer in clear" sh -c "! grep -q '$(hexof body_sha256=)' '$T/p-after.sql'"
check "... which the dump before rekey did (the check can fail)" grep -q "$(hexof body_sha256=)" "$T/p-before.sql"
post b4 "$U" "$KB" 'body-b'
expect_eq "sealed old row: replayed" true "$(hdr b4 Idempotent-Replayed)"
expect_file_eq "sealed old row: byte-for-byte" "$T/b1.b" "$T/b4.b"
post c2 "$U" "$KC" 'body-c'
expect_eq "rekeyed old row: replayed" true "$(hdr c2 Idempotent-Replayed)"
expect_file_eq "rekeyed old row: byte-for-byte" "$T/c1.b" "$T/c2.b"
post c3 "$U" "$KC" 'body-c2'
is_problem "rekeyed old row, another body" c3 422 key-mismatch
out=$("$IDEMCTL" -c "$T/lkeyed.conf" show "$KC" --scope "header:X-Api-Key:$API" 2>&1)
expect_match "show --scope finds a keyed row" "state +completed" "$out"
expect_eq "nothing ran again" 4 "$(runs pay)"
gw_stop gw

# 3. A gateway without the key on the keyed store: 500, nothing runs.
gw_start gw "$T/lplain.conf" || { done_testing; exit 1; }
post n1 "$U" "$KB" 'body-b'
is_problem "unkeyed gateway, keyed store: known key" n1 500 store-key-missing
post n2 "$U" "$(new_key)" 'body-new'
is_problem "unkeyed gateway, keyed store: new key" n2 500 store-key-missing
expect_nomatch "new key: not told it already ran" 'already ran' "$(body n2)"
expect_match "new key: told the store is sealed" 'sealed under a key this gateway does not have' "$(body n2)"
expect_eq "unkeyed gateway: nothing ran" 4 "$(runs pay)"
expect_match "unkeyed gateway: its log says why" "keyed \(idem_hash_key\) but this config sets no secret_key_file" "$(cat "$T/gw.log")"
# 18 more (20 refused): one line a minute per worker (two workers), not
# one a request; every request still gets its 500
n500=0
for i in $(seq 18); do
	post "r$i" "$U" "$(new_key)" "body-r$i"
	[ "$HS" = 500 ] && n500=$((n500 + 1))
done
expect_eq "18 more refused: every one 500" 18 "$n500"
lines=$(grep -c "POST /payments: the store's scope hashes and fingerprints are keyed" "$T/gw.log")
expect_lt "20 refused: at most 2 lines ($lines)" "$lines" 3
out=$("$IDEMCTL" -c "$T/lplain.conf" check 2>&1)
expect_eq "check without the key file on a keyed store: exit 2" 2 "$?"
expect_match "check names it" "\[fail\] the store's scope hashes and fingerprints are keyed \(hashing key wrapped under key k1\)" "$out"
out=$("$IDEMCTL" -c "$T/lkeyed.conf" check 2>&1)
expect_match "check with the key file: keyed, current" "\[ ok \] scope hashes and fingerprints keyed \(hashing key wrapped under key k1, current\)" "$out"
out=$("$IDEMCTL" -c "$T/lplain.conf" show "$KB" 2>&1)
expect_match "show without the key file still finds the row" "state +completed" "$out"
gw_stop gw

# 3b. The hashing key's row lost (a restore or copy without idem_hash_key)
# while keyed rows remain: no gateway, keyed or not, may hash anew (a new
# key, or plain hashes, would find none of them and run every key again).
HKROW=$(db_query "${TNAME}_p" "SELECT CONCAT_WS(',', id, QUOTE(seal_kid), CONCAT('0x', HEX(seal_nonce)), CONCAT('0x', HEX(wrapped)), QUOTE(created_at), QUOTE(created_by)) FROM idem_hash_key")
db_query "${TNAME}_p" "DELETE FROM idem_hash_key" >/dev/null
for g in lkeyed lplain; do
	gw_start gw "$T/$g.conf" || { done_testing; exit 1; }
	post "lost$g" "$U" "$KB" 'body-b'
	is_problem "hashing key lost, $g gateway: a known key refused" "lost$g" 500 store-key-missing
	post "lostn$g" "$U" "$(new_key)" 'body-lost'
	is_problem "hashing key lost, $g gateway: a new key refused" "lostn$g" 500 store-key-missing
	expect_match "hashing key lost, $g gateway: its log says why" 'idem_hash_key is empty but rows of idem_keys are keyed' "$(cat "$T/gw.log")"
	gw_stop gw
done
expect_eq "hashing key lost: nothing ran again" 4 "$(runs pay)"
expect_eq "hashing key lost: no new key made" 0 "$(db_query "${TNAME}_p" 'SELECT COUNT(*) FROM idem_hash_key')"
out=$("$IDEMCTL" -c "$T/lkeyed.conf" check 2>&1)
expect_eq "hashing key lost: check exits 2" 2 "$?"
expect_match "hashing key lost: check names it" '\[fail\] idem_hash_key is empty but rows of idem_keys are keyed' "$out"
db_query "${TNAME}_p" "INSERT INTO idem_hash_key (id, seal_kid, seal_nonce, wrapped, created_at, created_by) VALUES ($HKROW)" >/dev/null
gw_start gw "$T/lkeyed.conf" || { done_testing; exit 1; }
post b5 "$U" "$KB" 'body-b'
expect_eq "hashing key put back: replayed" true "$(hdr b5 Idempotent-Replayed)"
expect_file_eq "hashing key put back: byte-for-byte" "$T/b1.b" "$T/b5.b"
gw_stop gw
expect_eq "hashing key put back: nothing ran again" 4 "$(runs pay)"

# 4. A plain owner still running when the key is set: waited for, once.
db_new "${TNAME}_w" || { done_testing; exit 1; }
conf "$T/wplain.conf" "$T/gw.sock" "$DBCNF"
conf "$T/wkeyed.conf" "$T/gw2.sock" "$DBCNF" "$T/k.keys"
lighttpd_start web2 "unix:$T/gw2.sock"
U2=$(url web2 /payments)
KD=$(new_key)
gw_start gw "$T/wplain.conf" || { done_testing; exit 1; }
http_bg d1 POST "$U?sleep=2500" -H "Idempotency-Key: $KD" -H "X-Api-Key: $API" --data-binary 'body-d'
in_progress() { [ "$(col "${TNAME}_w" state "$KD")" = 0 ]; }
wait_until 5 in_progress
expect_eq "plain owner: in progress" 0 "$(col "${TNAME}_w" state "$KD")"
gw_start gw2 "$T/wkeyed.conf" || { done_testing; exit 1; }
post d2 "$U2?sleep=2500" "$KD" 'body-d'
bg_wait
expect_eq "plain owner: created" 201 "$(st d1)"
expect_eq "keyed, same key meanwhile: the owner's answer" "201 true" "$HS $(hdr d2 Idempotent-Replayed)"
expect_file_eq "keyed, same key meanwhile: byte-for-byte" "$T/d1.b" "$T/d2.b"
expect_eq "live plain owner: ran once" 5 "$(runs pay)"
gw_stop gw2
gw_stop gw

# 5. idemctl run on a keyed store: keyed, and run once.
conf "$T/run.conf" "$T/gw.sock" "$SCNF" "$T/k.keys"
printf '#!/bin/sh\necho ran >>"%s"\ncat\n' "$T/job.runs" >"$T/job.sh"
chmod 0755 "$T/job.sh"
for i in 1 2; do
	echo payload | "$IDEMCTL" -c "$T/run.conf" run --key jobkey -- "$T/job.sh" >"$T/run$i.o" 2>"$T/run$i.e"
	expect_eq "run $i: exit 0, the job's output" "0 payload" "$? $(cat "$T/run$i.o")"
done
expect_eq "run: the job ran once" 1 "$(wc -l <"$T/job.runs" | tr -d ' ')"
expect_eq "run: its row is keyed" 1 "$(col "$TNAME" hashed jobkey)"
# Without the key file on that keyed store: refused, one line, nothing
# runs (plain hashes would miss the keyed row and run the job again).
conf "$T/runplain.conf" "$T/gw.sock" "$SCNF"
echo payload | "$IDEMCTL" -c "$T/runplain.conf" run --key jobkey -- "$T/job.sh" >"$T/run3.o" 2>"$T/run3.e"
expect_eq "run without the key file: exit 69, one line" "69 1" "$? $(wc -l <"$T/run3.e" | tr -d ' ')"
expect_match "... saying why" 'no secret_key_file' "$(cat "$T/run3.e")"
expect_eq "run without the key file: the job did not run again" 1 "$(wc -l <"$T/job.runs" | tr -d ' ')"

# 6. A gateway without the key still running when the store became keyed
# writes a plain row of a key that has a keyed row: the keyed gateway's
# next claim sets it aside (hashed = 2), kept, never looked up again.
db_new "${TNAME}_x" || { done_testing; exit 1; }
conf "$T/xplain.conf" "$T/gw.sock" "$DBCNF"
conf "$T/xkeyed.conf" "$T/gw2.sock" "$DBCNF" "$T/k.keys"
# one worker that resolves "plain" on its first request and does not
# look at the store again for a minute
sed -i -e 's/^workers = .*/workers = 1/' \
	-e 's/^mysql_defaults_file = .*/&\ncounters_flush = 60s/' "$T/xplain.conf"
KX=$(new_key)
KE=$(new_key)
gw_start gw "$T/xplain.conf" || { done_testing; exit 1; }
post x1 "$U" "$KX" 'body-x'
expect_eq "before the key: created" 201 "$HS"
gw_start gw2 "$T/xkeyed.conf" || { done_testing; exit 1; }
post e1 "$U2" "$KE" 'body-e'
expect_eq "keyed gateway: created" 201 "$HS"
post e2 "$U" "$KE" 'body-e'
expect_eq "gateway without the key, not yet noticed: ran again" 201 "$HS"
expect_eq "the key has a keyed and a plain row" "0 1" "$(db_query "${TNAME}_x" "SELECT GROUP_CONCAT(hashed ORDER BY hashed SEPARATOR ' ') FROM idem_keys WHERE idem_key = '$KE'")"
gw_stop gw
n=$(runs pay)
post e3 "$U2" "$KE" 'body-e'
expect_eq "keyed claim: the keyed row answers" "201 true" "$HS $(hdr e3 Idempotent-Replayed)"
expect_file_eq "keyed claim: the keyed run's answer" "$T/e1.b" "$T/e3.b"
expect_eq "the plain row: set aside, kept" "1 2" "$(db_query "${TNAME}_x" "SELECT GROUP_CONCAT(hashed ORDER BY hashed SEPARATOR ' ') FROM idem_keys WHERE idem_key = '$KE'")"
expect_match "set aside: logged" "set aside \(hashed = 2\)" "$(cat "$T/gw2.log")"
post e4 "$U2" "$KE" 'body-e'
expect_eq "again: replayed" true "$(hdr e4 Idempotent-Replayed)"
expect_eq "set aside: nothing ran" "$n" "$(runs pay)"
"$IDEMCTL" -c "$T/xkeyed.conf" rekey >"$T/xrk.out" 2>&1
expect_eq "rekey: keys the one row hashed before the key only" "ok 1" "$(db_query "${TNAME}_x" "SELECT outcome, rows_hashed FROM idem_rekey_runs ORDER BY id DESC LIMIT 1" | tr '\t' ' ')"
expect_eq "rekey: no row hashed plain left" 0 "$(db_query "${TNAME}_x" 'SELECT COUNT(*) FROM idem_keys WHERE hashed = 0')"
gw_stop gw2
done_testing
