#!/bin/bash
# idemctl rekey loses a race cleanly: a row rewritten or deleted between
# rekey's read and its guarded UPDATE is counted as changed and left as the
# other writer left it; the other rows are re-sealed; nothing runs again.
#
# The interleaving is forced with the database's own row locks, not hooks:
# a second client session holds a row (SELECT ... FOR UPDATE in an open
# transaction) before rekey starts.  Rekey's read does not lock, so it reads
# the row as it was and then blocks in its UPDATE (checked: InnoDB shows
# rekey's UPDATE waiting for that session's lock on that row).  The session
# then changes the row and commits, and rekey's UPDATE re-evaluates its
# guard on the new version.  Each hold ends well within the store's 5 s
# read timeout.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
. "$(dirname "$0")/../lib/rekey.sh"
# No replay cache: every replay below is read from the store.
rekey_setup "$PAY" $'replay_cache = 0\n' || { done_testing; exit 1; }

q() { db_query "$TNAME" "$1"; }
rowid() { q "SELECT id FROM idem_keys WHERE idem_key = '$1'"; }

# Every column of idem_keys but id: "k.c = s.c" (SET) and "k.c <=> s.c"
# (AND) lists, to copy a snapshot row back and to compare with it.
cols() {
	q "SET SESSION group_concat_max_len = 65536;
	   SELECT GROUP_CONCAT(CONCAT('k.', COLUMN_NAME, ' $1 s.', COLUMN_NAME)
	   ORDER BY ORDINAL_POSITION SEPARATOR '$2') FROM information_schema.COLUMNS
	   WHERE TABLE_SCHEMA = '$TNAME' AND TABLE_NAME = 'idem_keys' AND COLUMN_NAME <> 'id'"
}
SET_ALL=$(cols '=' ', ')
SAME_ALL=$(cols '<=>' ' AND ')
snap() { q "DROP TABLE IF EXISTS $1; CREATE TABLE $1 AS SELECT * FROM idem_keys WHERE id = $2"; }
copy_sql() { echo "UPDATE idem_keys k JOIN $1 s ON s.id = k.id SET $SET_ALL"; }
same_as() { q "SELECT COUNT(*) FROM idem_keys k JOIN $1 s ON s.id = k.id WHERE $SAME_ALL"; }

# hold NAME ID: a second client session locks row ID in an open
# transaction and keeps it; HOLD_CID[NAME] is its connection id.
# hold_end NAME SQL runs SQL in that transaction, commits and ends the
# session (its input's only writer is this shell: children close it).
declare -A HOLD_FD=() HOLD_CID=()
hold_sql() { (trap '' PIPE; printf '%s;\n' "$2" >&"${HOLD_FD[$1]}") 2>/dev/null; }
close_holds() { local f; for f in "${HOLD_FD[@]}"; do exec {f}>&-; done; }
hold() {
	local fd
	mkfifo "$T/$1.in"
	(close_holds; h_sqlroot -n "$TNAME" <"$T/$1.in" >"$T/$1.out" 2>"$T/$1.log") &
	H_BGPIDS+=($!)
	exec {fd}>"$T/$1.in"
	HOLD_FD[$1]=$fd
	hold_sql "$1" "SELECT CONNECTION_ID(); BEGIN;
	    SELECT 'locked', id FROM idem_keys WHERE id = $2 FOR UPDATE"
	wait_until 5 grep -q "^locked	$2\$" "$T/$1.out" || return 1
	HOLD_CID[$1]=$(head -1 "$T/$1.out")
}
hold_end() {
	local fd=${HOLD_FD[$1]}
	hold_sql "$1" "$2; COMMIT; SELECT 'committed'"
	exec {fd}>&-
	wait_until 5 grep -q '^committed$' "$T/$1.out"
}
sessions_gone() {
	[ "$(q "SELECT COUNT(*) FROM information_schema.PROCESSLIST
	    WHERE ID IN (${HOLD_CID[h1]:-0}, ${HOLD_CID[h2]:-0})")" = 0 ]
}
# waits SECONDS NAME ID TEST: rekey's guarded UPDATE waits for NAME's lock
# on row ID, within SECONDS.  Polled every 0.25 s: InnoDB refreshes its
# INFORMATION_SCHEMA lock tables only once they went unread for 0.1 s, so
# faster polling would read the same stale snapshot for ever.
waits() {
	local _
	for _ in $(seq 1 $(($1 * 4))); do
		sleep 0.25
		[ "$(q "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS w
		    JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
		    JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
		    JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.requested_lock_id
		    WHERE b.trx_mysql_thread_id = ${HOLD_CID[$2]} AND l.lock_data = '$3'
		    AND l.lock_table LIKE '%.\`idem_keys\`'
		    AND r.trx_query LIKE 'UPDATE idem_keys SET resp_body%'")" = 1 ] &&
		    { ok "$4"; return 0; }
	done
	sleep 0.25
	not_ok "$4" "$(q "SELECT trx_mysql_thread_id, trx_state, trx_query FROM information_schema.INNODB_TRX")"
}

# replays NAME OUT KEY M BODY: the row replays OUT's answer byte for byte
replays() {
	http "p$2" POST "$U?m=$4" -H "Idempotency-Key: $3" --data-binary "$5"
	expect_eq "$1 replays" "201 true" "$HS $(hdr "p$2" Idempotent-Replayed)"
	expect_file_eq "$1 replays its body byte for byte" "$T/$2.b" "$T/p$2.b"
	expect_eq "$1 replays its headers" "$(hdr_block "$2")" "$(hdr_block "p$2")"
}

gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock"
U=$(url web /payments)

# Four rows under k1, in id order: R (to be rewritten), B, X (to be
# deleted), C.
KR=$(new_key)-r KB=$(new_key)-b KX=$(new_key)-x KC=$(new_key)-c
http or POST "$U?m=R" -H "Idempotency-Key: $KR" --data-binary '{"n":1}'
expect_eq "R created" 201 "$HS"
http ob POST "$U?m=B" -H "Idempotency-Key: $KB" --data-binary '{"n":2}'
expect_eq "B created" 201 "$HS"
http ox POST "$U?m=X" -H "Idempotency-Key: $KX" --data-binary '{"n":3}'
expect_eq "X created" 201 "$HS"
http oc POST "$U?m=C" -H "Idempotency-Key: $KC" --data-binary '{"n":4}'
expect_eq "C created" 201 "$HS"
IDR=$(rowid "$KR") IDX=$(rowid "$KX")
expect_eq "four rows under k1" "k1 k1 k1 k1" "$(kid "$KR") $(kid "$KB") $(kid "$KX") $(kid "$KC")"
snap snap_o "$IDR"

# Rotate to k2.  R's ttl passes and a new request takes the row over in
# place: the gateway's own rewrite of R, under k2, kept as snap_g.
printf 'k2 %s\n' "$K2" >>"$T/k.keys"
reload
q "UPDATE idem_keys SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE id = $IDR"
http g POST "$U?m=R" -H "Idempotency-Key: $KR" --data-binary '{"n":5}'
expect_eq "R's ttl passed: taken over, created" "201 created" "$HS $(hdr g Idempotency-Result)"
expect_eq "takeover: same row, under k2" "$IDR k2" "$(rowid "$KR") $(kid "$KR")"
snap snap_g "$IDR"
expect_ne "takeover: another answer than R's first" "$(cat "$T/or.b")" "$(cat "$T/g.b")"

# Put R back as it was under k1: the version rekey will read.
q "$(copy_sql snap_o)"
expect_eq "R restored under k1" "1 k1" "$(same_as snap_o) $(kid "$KR")"
expect_eq "runs before rekey (4 rows, one takeover)" 5 "$(runs pay)"

hold h1 "$IDR" || not_ok "session 1 holds R" "$(cat "$T/h1.log")"
hold h2 "$IDX" || not_ok "session 2 holds X" "$(cat "$T/h2.log")"
(close_holds; ctl rekey >"$T/race.out" 2>&1; echo $? >"$T/race.rc") &
H_BGPIDS+=($!)

# R: rekey has read k1's version and waits; the gateway's rewrite lands.
waits 10 h1 "$IDR" "rekey's UPDATE of R waits for session 1's lock"
check "session 1 rewrites R as the takeover did, commits" \
    hold_end h1 "$(copy_sql snap_g)"

# X: rekey has read it and waits; it is forgotten meanwhile.
waits 10 h2 "$IDX" "rekey's UPDATE of X waits for session 2's lock"
check "session 2 deletes X as forget does, commits" \
    hold_end h2 "DELETE FROM idem_keys WHERE id = $IDX"

wait_until 15 test -s "$T/race.rc" || not_ok "rekey ends" "$(cat "$T/race.out")"
check "both sessions ended" wait_until 5 sessions_gone
expect_eq "rekey: exit 0, prints nothing" "0 " "$(cat "$T/race.rc" 2>/dev/null) $(cat "$T/race.out")"
expect_eq "rekey run: ok, 2 re-sealed, 2 changed meanwhile" "ok	k2	2	2	0	1" \
    "$(q "SELECT outcome, to_kid, rows_rekeyed, rows_changed, rows_unreadable, batches FROM idem_rekey_runs ORDER BY id DESC LIMIT 1")"
expect_eq "R holds the takeover's row, column for column" 1 "$(same_as snap_g)"
expect_eq "X stays gone" 0 "$(q "SELECT COUNT(*) FROM idem_keys WHERE id = $IDX OR idem_key = '$KX'")"
expect_eq "B and C re-sealed under k2" "k2 k2" "$(kid "$KB") $(kid "$KC")"

# Without k1 every row left replays from the store, byte for byte, and
# nothing runs again.
printf 'k2 %s\n' "$K2" >"$T/k.keys"
reload
replays "R (the takeover's answer)" g "$KR" R '{"n":5}'
http pr1 POST "$U?m=R" -H "Idempotency-Key: $KR" --data-binary '{"n":1}'
is_problem "R with its first body" pr1 422 key-mismatch
replays B ob "$KB" B '{"n":2}'
replays C oc "$KC" C '{"n":4}'
expect_eq "nothing ran again" 5 "$(runs pay)"
gw_stop gw
done_testing
