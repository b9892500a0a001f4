#!/bin/bash
# The store against its own MariaDB: least-privilege grants, and an outage
# (IDEM_ESTORE while down, served again after start, same store object).
. "$(dirname "$0")/../lib/harness.sh"

PROBE_BIN="$ITBIN/store_probe"
[ -x "$PROBE_BIN" ] || { not_ok "store_probe built" "$PROBE_BIN missing"; done_testing; exit 1; }
db_private || { done_testing; exit 1; }

# ask LINE: send one command to the probe, answer in $ANS (10 s at most)
ask() {
	ANS=
	echo "$1" >&"${PROBE[1]}"
	read -t 10 -r ANS <&"${PROBE[0]}" || ANS="(no answer)"
}
probe_start() { # probe_start OPTION-FILE
	coproc PROBE { exec "$PROBE_BIN" "$1"; }
	PROBE_PID=$PROBE_PID
}
probe_stop() {
	echo quit >&"${PROBE[1]}" 2>/dev/null
	wait "$PROBE_PID" 2>/dev/null
}

# ---- migrate as the schema owner, twice
probe_start "$T/my.cnf"
ask migrate
expect_match "first migrate applies" '^migrate OK [1-9]' "$ANS"
ask migrate
expect_eq "second migrate applies nothing" "migrate OK 0" "$ANS"
ask version
expect_match "schema version" '^version [1-9]' "$ANS"
probe_stop

# ---- sql/grants.sql users, on the database "idemgate"
if h_sqlroot <"$IDEM_ROOT/sql/grants.sql" 2>"$T/grants.log"; then
	ok "grants.sql applies"
else
	not_ok "grants.sql applies" "$(head -2 "$T/grants.log")"
fi
printf '[idemgate]\nsocket=%s\nuser=idem_gateway\npassword=CHANGE-ME-gateway\ndatabase=idemgate\n' \
	"$MDB_SOCK" >"$T/gw.cnf"
printf '[idemgate]\nsocket=%s\nuser=idem_console\npassword=CHANGE-ME-console\ndatabase=idemgate\n' \
	"$MDB_SOCK" >"$T/ro.cnf"
chmod 600 "$T/gw.cnf" "$T/ro.cnf"

probe_start "$T/ro.cnf"
ask "claim ro-1"
expect_eq "console user cannot claim" "claim ERR database unavailable" "$ANS"
probe_stop

probe_start "$T/gw.cnf"
ask migrate
expect_eq "gateway user: migrate with nothing to do" "migrate OK 0" "$ANS"
ask "claim k1"
expect_eq "gateway user claims" "claim NEW" "$ANS"
ask "complete one"
expect_eq "gateway user completes" "complete OK" "$ANS"
ask "claim k1"
expect_eq "gateway user replays" "claim DONE" "$ANS"

# ---- outage: the same store object throughout
mariadb_stop
t0=$(now_ms)
ask "claim k2"
expect_match "down: claim fails with a store error" '^claim ERR ' "$ANS"
ask "claim k2"
expect_match "down: still a store error" '^claim ERR ' "$ANS"
expect_lt "down: errors come fast" "$(($(now_ms) - t0))" 6000
mariadb_start || not_ok "MariaDB restarts"
ask "claim k2"
expect_eq "up again: claim served" "claim NEW" "$ANS"
ask "complete two"
expect_eq "up again: complete" "complete OK" "$ANS"
ask "claim k1"
expect_eq "up again: old answer replays" "claim DONE" "$ANS"
probe_stop

done_testing
