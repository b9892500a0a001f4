#!/bin/bash
# The README's database set-up, followed word for word on a MariaDB of its
# own: grants-migrate.sql as root, idemctl -g idem_migrate migrate,
# grants.sql as root; then every program runs as its own least-privilege
# user from one option file, and the gateway serves and replays.
. "$(dirname "$0")/../lib/harness.sh"

db_private || { done_testing; exit 1; }
root() { mariadb --no-defaults --socket="$MDB_SOCK" -u root "$@"; }
# "edit the CHANGE-ME passwords first"
for f in grants-migrate grants; do
	sed 's/CHANGE-ME-\([a-z]*\)/pw-\1-t/' "$IDEM_ROOT/sql/$f.sql" >"$T/$f.sql"
done
{
	for g in idemgate:gateway idem_migrate:migrate idem_cleanup:cleanup idem_console:console; do
		printf '[%s]\nsocket = %s\nuser = idem_%s\npassword = pw-%s-t\ndatabase = idemgate\n' \
			"${g%%:*}" "$MDB_SOCK" "${g#*:}" "${g#*:}"
	done
} >"$T/my.cnf"
chmod 600 "$T/my.cnf"
P=$(cgi_install pay)
gw_conf "$T/idemgate.conf" "unix:$T/gw.sock" "$T/my.cnf"
printf '\n[route /pay]\nhandler = cgi:%s\n' "$P" >>"$T/idemgate.conf"
C="$T/idemgate.conf"

root <"$T/grants-migrate.sql" >"$T/step1.log" 2>&1
expect_eq "1. grants-migrate.sql as root" 0 "$?"
"$IDEMCTL" -c "$C" -g idem_migrate migrate >"$T/step2.log" 2>&1
expect_eq "2. idemctl -g idem_migrate migrate" 0 "$?"
root <"$T/grants.sql" >"$T/step3.log" 2>&1
expect_eq "3. grants.sql as root" 0 "$?"
# check_roles CONF TAG: idemctl check --role R as each program's own user
check_roles() {
	local r g
	for r in gateway cleanup console; do
		g=idem_$r
		[ $r = gateway ] && g=idemgate
		"$IDEMCTL" -c "$1" -g $g check --role $r >"$T/check-$2-$r.log" 2>&1
		expect_eq "$2check --role $r as its own user" 0 "$?"
	done
}
check_roles "$C" "4. "
# The gateway's own user may not read the cleanup runs: check reads them
# as the console's (its group is in the option file), not passing cleanup
# over as fine.  A new store: nothing expired, nothing to clean yet.
"$IDEMCTL" -c "$C" -g idemgate check >"$T/check-gw.log" 2>&1
expect_match "check as the gateway's user: a new store, no cleanup needed yet" \
	'^\[ ok \] no cleanup run recorded yet; no key has expired' "$(cat "$T/check-gw.log")"
# A key expired and no cleanup ever ran: said, as any user.
root -e "INSERT INTO idemgate.idem_keys (scope, idem_key, route, method, fingerprint,
  state, owner, owner_token, created_at, lease_until, expires_at)
  VALUES (UNHEX(SHA2('s', 256)), 'expired-1', '/p', 'POST', UNHEX(SHA2('f', 256)), 1,
  'h:1', 1, NOW(6) - INTERVAL 2 DAY, NOW(6) - INTERVAL 2 DAY, NOW(6) - INTERVAL 1 DAY)"
for g in idemgate idem_console; do
	"$IDEMCTL" -c "$C" -g $g check >"$T/check-$g.log" 2>&1
	expect_match "check as $g: an expired key and no cleanup ever: warned" \
		'^\[warn\] no successful cleanup run recorded' "$(cat "$T/check-$g.log")"
	expect_match "check as $g: ... with how many wait" \
		'^\[warn\] 1 expired keys waiting for cleanup' "$(cat "$T/check-$g.log")"
done
root -e "DELETE FROM idemgate.idem_keys WHERE idem_key = 'expired-1'"
# least privilege: the console cannot delete
"$IDEMCTL" -c "$C" -g idem_console forget nothing --force >"$T/ro.log" 2>&1
expect_ne "the console user cannot forget" 0 "$?"

# serves N CONF WHO: gateway gwN on CONF, behind web server webN, runs a
# protected POST once and replays its retry
serves() {
	local k
	gw_start "gw$1" "$2" || { done_testing; exit 1; }
	lighttpd_start "web$1" "unix:$T/gw$1.sock" || { done_testing; exit 1; }
	k=$(new_key)
	http "a$1" POST "$(url "web$1" /pay)" -H "Idempotency-Key: $k" --data-binary x
	http "b$1" POST "$(url "web$1" /pay)" -H "Idempotency-Key: $k" --data-binary x
	expect_eq "$3: created, then reused" "created reused" \
		"$(hdr "a$1" Idempotency-Result) $(hdr "b$1" Idempotency-Result)"
}
serves "" "$C" "the gateway as idem_gateway"
"$IDEMCTL" -c "$C" -g idem_cleanup cleanup >"$T/cleanup.log" 2>&1
expect_eq "cleanup as idem_cleanup" 0 "$?"
"$IDEMCTL" -c "$C" -g idem_console metrics >"$T/metrics.out" 2>&1
expect_match "metrics as idem_console" '^idemgate_store_up 1$' "$(grep store_up "$T/metrics.out" | grep -v '^#')"
"$IDEM_BUILD/idemtop" -c "$C" -g idem_console -b >"$T/top.out" 2>&1
expect_eq "idemtop as idem_console" 0 "$?"
gw_stop gw

# The same set-up from idemctl grants alone: other user and database names
# and passwords (quotes, a backslash escape, a '#') as the client library
# reads them from the option file, nothing
# edited by hand, in the order its help gives.
{
	for g in idemgate:gw2 idem_migrate:mig2 idem_cleanup:cl2 idem_console:co2; do
		printf '[%s]\nsocket = %s\nuser = %s\npassword = "%s" # no comment to the client library\ndatabase = idem_two\n' \
			"${g%%:*}" "$MDB_SOCK" "${g#*:}" "p'w\\\\#${g#*:}"
	done
} >"$T/my2.cnf"
chmod 600 "$T/my2.cnf"
sed -e "s|$T/my.cnf|$T/my2.cnf|" -e "s|$T/gw.sock|$T/gw2.sock|" "$C" >"$T/two.conf"
C2=$T/two.conf
"$IDEMCTL" -c "$C2" grants migrate >"$T/g1.sql" 2>"$T/g1.err"
expect_eq "grants migrate: exit 0" 0 "$?"
expect_eq "grants migrate: the migration user only" "CREATE USER IF NOT EXISTS 'mig2'@'localhost'" "$(grep -o "^CREATE USER IF NOT EXISTS '[^']*'@'[^']*'" "$T/g1.sql")"
root <"$T/g1.sql" >"$T/g1.log" 2>&1
expect_eq "grants migrate | mariadb -u root" 0 "$?"
"$IDEMCTL" -c "$C2" -g idem_migrate migrate >"$T/g2.log" 2>&1
expect_eq "then idemctl -g idem_migrate migrate" 0 "$?"
"$IDEMCTL" -c "$C2" grants >"$T/g3.sql" 2>"$T/g3.err"
root <"$T/g3.sql" >"$T/g3.log" 2>&1
expect_eq "then grants | mariadb -u root (the migration user's again too)" 0 "$?"
expect_nomatch "grants: the option file's passwords, no placeholder" 'CHANGE-ME' "$(cat "$T/g3.sql")"
check_roles "$C2" "grants: "
serves 2 "$C2" "grants: the gateway as gw2 on idem_two"
sed "s|$T/my2.cnf|$T/no-such.cnf|" "$C2" >"$T/three.conf"
"$IDEMCTL" -c "$T/three.conf" grants >"$T/g5.sql" 2>"$T/g5.err"
expect_eq "grants: an option file it cannot read is said, exit 2" "2 1 0" "$? $(wc -l <"$T/g5.err" | tr -d ' ') $(wc -c <"$T/g5.sql" | tr -d ' ')"
# Refused, nothing printed (a pipe into mariadb creates nothing): a
# placeholder password, a user shared by two roles (one account with the
# migration user's privileges too).
sed 's/^password = .*mig2.*/password = CHANGE-ME-migrate/' "$T/my2.cnf" >"$T/my3.cnf"
sed "s|$T/my2.cnf|$T/my3.cnf|" "$C2" >"$T/four.conf"
"$IDEMCTL" -c "$T/four.conf" grants >"$T/g6.sql" 2>"$T/g6.err"
expect_eq "grants: a CHANGE-ME password refused, nothing printed" "2 1 0" "$? $(wc -l <"$T/g6.err" | tr -d ' ') $(wc -c <"$T/g6.sql" | tr -d ' ')"
sed 's/^user = cl2$/user = gw2/' "$T/my2.cnf" >"$T/my3.cnf"
"$IDEMCTL" -c "$T/four.conf" grants >"$T/g7.sql" 2>"$T/g7.err"
expect_eq "grants: one user for two roles refused, nothing printed" "2 0" "$? $(wc -c <"$T/g7.sql" | tr -d ' ')"
expect_match "grants: ... and says which" "gateway and cleanup users are both 'gw2'" "$(cat "$T/g7.err")"
# idem_two's '_' is no wildcard in the migration user's grant
expect_match "grants: the database grant escapes '_'" 'ON `idem\\_two`\.\* TO' "$(cat "$T/g3.sql")"
"$IDEMCTL" -c "$C2" grants nobody >/dev/null 2>"$T/g4.err"
expect_eq "grants: an unknown role is a usage error" "1 1" "$? $(wc -l <"$T/g4.err" | tr -d ' ')"
done_testing
