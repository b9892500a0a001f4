#!/bin/bash
# Apache mod_fcgid starts idemgate itself (listen = fd:0), as the README shows:
# a protected POST runs once and its retry is replayed.
. "$(dirname "$0")/../lib/harness.sh"

[ -f /usr/lib/apache2/modules/mod_fcgid.so ] || { not_ok "mod_fcgid installed"; done_testing; exit 1; }
PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
# mod_fcgid runs idemgate as Apache's user: give it what it must read/write.
cp "$DBCNF" "$T/fcgid.cnf"
chown www-data "$T/fcgid.cnf" "$T/cgi"
GW="$T/idemgate"
cp "$IDEMGATE" "$GW"
chmod 0755 "$GW"
cat >"$T/gw.conf" <<CONF
[gateway]
listen = fd:0
workers = 1
threads = 4
mysql_defaults_file = $T/fcgid.cnf

[route /payments]
handler = cgi:$PAY
CONF
chmod 0644 "$T/gw.conf"
check "idemgate -t accepts the fd:0 config" "$GW" -t -c "$T/gw.conf"

d="$T/fg"
mkdir -p "$d/run" "$d/ipc"
chown www-data "$d/run" "$d/ipc"
fg_conf() {
	cat >"$d/apache.conf" <<CONF
ServerRoot "$d"
ServerName localhost
Listen 127.0.0.1:${PORT[fg]}
PidFile $d/apache.pid
ErrorLog $d/error.log
LogLevel warn
DefaultRuntimeDir $d/run
Mutex file:$d/run default
User www-data
Group www-data
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule fcgid_module /usr/lib/apache2/modules/mod_fcgid.so
StartServers 1
ServerLimit 1
FcgidIPCDir $d/ipc
FcgidProcessTableFile $d/run/fcgid_shm
FcgidMaxProcesses 2
<Location "/payments">
    SetHandler fcgid-script
    FcgidWrapper "$GW -c $T/gw.conf" virtual
    Options +ExecCGI
    Require all granted
</Location>
CONF
}
WS_KIND[fg]=apache
ws_launch fg fg_conf apache2 -f "$d/apache.conf" -DFOREGROUND || { done_testing; exit 1; }
U=$(url fg /payments)

K=$(new_key)
http p1 POST "$U" -H "Idempotency-Key: $K" --data-binary 'amount=7'
expect_eq "fcgid: protected POST 201" 201 "$HS"
expect_eq "fcgid: created" created "$(hdr p1 Idempotency-Result)"
http p2 POST "$U" -H "Idempotency-Key: $K" --data-binary 'amount=7'
expect_eq "fcgid: replay 201" 201 "$HS"
expect_eq "fcgid: reused" reused "$(hdr p2 Idempotency-Result)"
expect_file_eq "fcgid: replay body" "$T/p1.b" "$T/p2.b"
expect_eq "fcgid: handler ran once" 1 "$(runs pay)"

ws_stop fg
pkill -f "$GW -c $T/gw.conf" 2>/dev/null
done_testing
