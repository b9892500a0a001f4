#!/bin/bash
# Listeners: unix socket (never world-writable), tcp (FCGI_WEB_SERVER_ADDRS), fd:0 via spawn-fcgi and systemd socket activation.
. "$(dirname "$0")/../lib/harness.sh"

db_new "$TNAME" || { done_testing; exit 1; }
PAY=$(cgi_install pay)
ROUTE="[route /payments]
handler = cgi:$PAY"

# unix socket
gw_conf "$T/u.conf" "unix:$T/u.sock" "$DBCNF"
printf '%s\n' "$ROUTE" >>"$T/u.conf"
if gw_start gu "$T/u.conf"; then
	mode=$(stat -c %a "$T/u.sock")
	expect_eq "unix socket mode 0660 by default" 660 "$mode"
	expect_eq "unix socket not world-writable" 0 $((8#$mode & 2))
	lighttpd_start wu "unix:$T/u.sock"
	http a GET "$(url wu /payments)"
	expect_eq "unix: GET through lighttpd" 201 "$HS"
	gw_stop gu
	ws_stop wu
fi

# tcp, with FCGI_WEB_SERVER_ADDRS allowing 127.0.0.1
P=$(free_port)
gw_conf "$T/t.conf" "tcp:127.0.0.1:$P" "$DBCNF"
printf '%s\n' "$ROUTE" >>"$T/t.conf"
if gw_start gt "$T/t.conf" FCGI_WEB_SERVER_ADDRS=127.0.0.1; then
	lighttpd_start wt "tcp:127.0.0.1:$P"
	http b GET "$(url wt /payments?tcp=1)"
	expect_eq "tcp: GET through lighttpd" 201 "$HS"
	expect_match "tcp: CGI answered" 'query=tcp=1' "$(body b)"
	gw_stop gt
	ws_stop wt
fi

# tcp, FCGI_WEB_SERVER_ADDRS not listing the web server: refused
P=$(free_port)
gw_conf "$T/t2.conf" "tcp:127.0.0.1:$P" "$DBCNF"
printf '%s\n' "$ROUTE" >>"$T/t2.conf"
if gw_start gt2 "$T/t2.conf" FCGI_WEB_SERVER_ADDRS=10.9.9.9; then
	lighttpd_start wt2 "tcp:127.0.0.1:$P"
	n0=$(runs pay)
	http c GET "$(url wt2 /payments?denied=1)"
	expect_match "tcp: foreign web server refused (5xx)" '^5' "$HS"
	expect_eq "tcp: refused request did not run the handler" "$n0" "$(runs pay)"
	gw_stop gt2
	ws_stop wt2
fi

# fd:0 from spawn-fcgi (-n: exec in place, so the pid is idemgate's)
gw_conf "$T/f.conf" "fd:0" "$DBCNF"
printf '%s\n' "$ROUTE" >>"$T/f.conf"
spawn-fcgi -s "$T/sf.sock" -M 0660 -n -- "$IDEMGATE" -c "$T/f.conf" >"$T/spawn.log" 2>&1 &
H_BGPIDS+=($!)
if wait_until 10 test -S "$T/sf.sock"; then
	lighttpd_start wf "unix:$T/sf.sock"
	http d GET "$(url wf /payments?fd0=1)"
	expect_eq "fd:0 via spawn-fcgi: GET through lighttpd" 201 "$HS"
	expect_match "fd:0: CGI answered" 'query=fd0=1' "$(body d)"
	K=$(new_key)
	http e POST "$(url wf /payments)" -H "Idempotency-Key: $K" --data-binary x
	http e2 POST "$(url wf /payments)" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "fd:0: protected POST replayed" reused "$(hdr e2 Idempotency-Result)"
else
	not_ok "spawn-fcgi socket appears"
fi

# activate FD PATH CONF [MODE]: execs idemgate -c CONF with a socket
# (mode MODE, 0660) listening on
# PATH as fd FD, as a service manager hands it over: fd 3 with LISTEN_PID
# (idemgate's pid: exec in place keeps it), LISTEN_FDS = 1 and fd 0 left
# alone; fd 0 as StandardInput=socket.
activate() {
	exec python3 - "$1" "$2" "$IDEMGATE" "$3" "${4:-0660}" <<'PY'
import os, socket, sys
fd, path, gw, conf = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, int(sys.argv[5], 8))
s.listen(64)
os.dup2(s.fileno(), fd)
os.set_inheritable(fd, True)
env = dict(os.environ)
if fd == 3:
    env.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1",
               LISTEN_FDNAMES="idemgate.socket")
os.execve(gw, [gw, "-c", conf], env)
PY
}

# systemd socket activation, as systemd does it: the socket on fd 3,
# LISTEN_PID = the service's pid (exec in place keeps it), LISTEN_FDS = 1,
# and fd 0 /dev/null (so idemgate must not fall back to it).
gw_conf "$T/sd.conf" "fd:0" "$DBCNF"
printf '%s\n' "$ROUTE" >>"$T/sd.conf"
activate 3 "$T/sd.sock" "$T/sd.conf" >"$T/sd.log" 2>&1 </dev/null &
GW_PID[sd]=$!
if wait_until 10 test -S "$T/sd.sock" && wait_until 5 gw_has_workers sd; then
	lighttpd_start wsd "unix:$T/sd.sock"
	K=$(new_key)
	http s1 POST "$(url wsd /payments?sd=1)" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "socket activation: protected POST created" created "$(hdr s1 Idempotency-Result)"
	expect_match "socket activation: CGI answered" 'query=sd=1' "$(body s1)"
	http s2 POST "$(url wsd /payments?sd=1)" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "socket activation: retry replayed" reused "$(hdr s2 Idempotency-Result)"
	http s3 GET "$(url wsd /payments?env=1)"
	expect_match "socket activation: handler environment readable" 'REQUEST_METHOD=GET' "$(body s3)"
	expect_nomatch "socket activation: LISTEN_* not passed to the handler" 'LISTEN_' "$(body s3)"
else
	not_ok "socket activation: idemgate serves the inherited socket" "$(tail -3 "$T/sd.log")"
fi

# The shipped units: idemgate.socket listens on the config's own unix
# path and idemgate.service gets it as fd 0 (StandardInput=socket), with
# the installed config's "listen = unix:PATH" unchanged.  The socket is
# taken over, not refused as "another process is listening on it", and
# left in place at the end (it is the service manager's).
gw_conf "$T/si.conf" "unix:$T/si.sock" "$DBCNF"
printf '%s\n' "$ROUTE" >>"$T/si.conf"
activate 0 "$T/si.sock" "$T/si.conf" >"$T/si.log" 2>&1 </dev/null &
GW_PID[si]=$!
if wait_until 10 test -S "$T/si.sock" && wait_until 5 gw_has_workers si; then
	lighttpd_start wsi "unix:$T/si.sock"
	K=$(new_key)
	http i1 POST "$(url wsi /payments?si=1)" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "StandardInput=socket, listen = unix:PATH: created" created "$(hdr i1 Idempotency-Result)"
	http i2 POST "$(url wsi /payments?si=1)" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "StandardInput=socket: retry replayed" reused "$(hdr i2 Idempotency-Result)"
	expect_match "StandardInput=socket: the log says it was inherited" 'inherited as fd 0' "$(cat "$T/si.log")"
	gw_stop si
	check "StandardInput=socket: the socket is left to its owner" test -S "$T/si.sock"
else
	not_ok "StandardInput=socket: idemgate serves the inherited unix socket" "$(tail -3 "$T/si.log")"
fi
# ... but not one anyone may write to (systemd's default SocketMode=0666):
# refused, as idemgate never makes one itself.
gw_conf "$T/sw.conf" "unix:$T/sw.sock" "$DBCNF"
timeout 10 bash -c "$(declare -f activate); IDEMGATE=$IDEMGATE activate 0 '$T/sw.sock' '$T/sw.conf' 0666" >"$T/sw.log" 2>&1 </dev/null
expect_eq "a world-writable socket handed over: refused at start" 1 "$?"
expect_match "... and the log says how to fix it" 'world-writable \(mode 0666\).*SocketMode=0660' "$(cat "$T/sw.log")"
gw_conf "$T/sw3.conf" "fd:0" "$DBCNF"
timeout 10 bash -c "$(declare -f activate); IDEMGATE=$IDEMGATE activate 3 '$T/sw3.sock' '$T/sw3.conf' 0666" >"$T/sw3.log" 2>&1 </dev/null
expect_eq "listen = fd:0, a world-writable socket handed over: refused" "1 1" "$? $(grep -c 'world-writable (mode 0666)' "$T/sw3.log")"
done_testing
