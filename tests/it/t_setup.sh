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
for r in gateway cleanup console; do
	g=idem_$r
	[ $r = gateway ] && g=idemgate
	"$IDEMCTL" -c "$C" -g $g check --role $r >"$T/check-$r.log" 2>&1
	expect_eq "4. check --role $r as its own user" 0 "$?"
done
# least privilege: the console cannot delete
"$IDEMCTL" -c "$C" -g idem_console forget nothing --force >"$T/ro.log" 2>&1
expect_ne "the console user cannot forget" 0 "$?"

gw_start gw "$C" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }
K=$(new_key)
http a POST "$(url web /pay)" -H "Idempotency-Key: $K" --data-binary x
http b POST "$(url web /pay)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "the gateway as idem_gateway: created, then reused" "created reused" "$(hdr a Idempotency-Result) $(hdr b Idempotency-Result)"
"$IDEMCTL" -c "$C" -g idem_cleanup cleanup >"$T/cleanup.log" 2>&1
expect_eq "cleanup as idem_cleanup" 0 "$?"
"$IDEMCTL" -c "$C" -g idem_console metrics >"$T/metrics.out" 2>&1
expect_match "metrics as idem_console" '^idemgate_store_up 1$' "$(grep store_up "$T/metrics.out" | grep -v '^#')"
"$IDEM_BUILD/idemtop" -c "$C" -g idem_console -b >"$T/top.out" 2>&1
expect_eq "idemtop as idem_console" 0 "$?"
done_testing
