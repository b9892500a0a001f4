#!/bin/bash
# A gateway started on a bad set-up says what is wrong and what to do, one
# line per problem and per worker, not one per request nor per poll.
. "$(dirname "$0")/../lib/harness.sh"

db_new "$TNAME" || { done_testing; exit 1; }
P=$(cgi_install pay)
# a wrong password
sed 's/^password=.*/password=not-the-password/' "$DBCNF" >"$T/bad.cnf"
chmod 600 "$T/bad.cnf"
gw_conf "$T/bad.conf" "unix:$T/bad.sock" "$T/bad.cnf"
printf '\n[route /pay]\nhandler = cgi:%s\n' "$P" >>"$T/bad.conf"
gw_start bad "$T/bad.conf" || { done_testing; exit 1; }
said() { grep -c "store: .*$1" "$T/$2.log"; }
wait_until 5 sh -c "grep -q 'Access denied' '$T/bad.log'"
expect_match "wrong password: says access denied and what to check" 'store: .*Access denied.* -- check the user and password in mysql_defaults_file' "$(cat "$T/bad.log")"
sleep 2
# 2 workers, about 40 polls each in 2 s: still one line each
expect_eq "wrong password: one line per worker, not per poll" 2 "$(said 'Access denied' bad)"

# no schema: a database that was never migrated
h_sqlroot -e "CREATE DATABASE IF NOT EXISTS ${TNAME}_empty; GRANT ALL ON ${TNAME}_empty.* TO 'idem'@'localhost'"
sed "s/^database=.*/database=${TNAME}_empty/" "$DBCNF" >"$T/empty.cnf"
chmod 600 "$T/empty.cnf"
gw_conf "$T/empty.conf" "unix:$T/empty.sock" "$T/empty.cnf"
printf '\n[route /pay]\nhandler = cgi:%s\n' "$P" >>"$T/empty.conf"
gw_start empty "$T/empty.conf" || { done_testing; exit 1; }
wait_until 5 sh -c "grep -q 'run idemctl migrate' '$T/empty.log'"
expect_match "no schema: says run idemctl migrate" 'store: .* -- schema missing: run idemctl migrate' "$(cat "$T/empty.log")"
# Started as root, a gateway whose routes run programs says once that they
# run as root too (it changes no users); with only fastcgi: routes it has
# nothing to say.  As another user, nothing: t_iso_mem.
if [ "$(id -u)" = 0 ]; then
	gw_conf "$T/root.conf" "unix:$T/root.sock" "$DBCNF"
	printf '\n[route /pay]\nhandler = cgi:%s\n' "$P" >>"$T/root.conf"
	gw_start root "$T/root.conf" || { done_testing; exit 1; }
	wait_until 5 gw_has_workers root || true
	expect_eq "as root: one warning, naming a route that runs programs" 1 \
	    "$(grep -c 'running as root: route /pay runs its handlers as root' "$T/root.log")"
	gw_conf "$T/rootf.conf" "unix:$T/rootf.sock" "$DBCNF"
	printf '\n[route /app]\nhandler = fastcgi:unix:%s/none.sock\nrun_limit = 10s\n' "$T" >>"$T/rootf.conf"
	gw_start rootf "$T/rootf.conf" || { done_testing; exit 1; }
	wait_until 5 gw_has_workers rootf || true
	expect_match "as root, fastcgi: routes only: started" 'listening on' "$(cat "$T/rootf.log")"
	expect_nomatch "as root, fastcgi: routes only: no such warning" 'running as root' "$(cat "$T/rootf.log")"
fi
done_testing
