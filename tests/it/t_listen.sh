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

# The socket path swapped for a link to another file between bind() and
# the chmod (someone who may write the socket's directory): the gateway
# refuses to go on and the file's mode stays as it was.  The swap is made
# by a bind() wrapper (LD_PRELOAD) right after the real bind.
cat >"$T/swap.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
int
bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	int (*real)(int, const struct sockaddr *, socklen_t) =
	    (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
	const char *victim = getenv("SWAP_VICTIM");
	int rc = real(fd, sa, len);

	if (rc == 0 && victim != NULL && sa->sa_family == AF_UNIX &&
	    ((const struct sockaddr_un *)sa)->sun_path[0] != '\0') {
		unlink(((const struct sockaddr_un *)sa)->sun_path);
		if (symlink(victim, ((const struct sockaddr_un *)sa)->sun_path) != 0)
			abort();
	}
	return rc;
}
EOF
if cc -shared -fPIC -o "$T/swap.so" "$T/swap.c" -ldl 2>"$T/swap.err"; then
	echo secret >"$T/victim" && chmod 0600 "$T/victim"
	gw_conf "$T/sw.conf" "unix:$T/sw.sock" "$DBCNF"
	printf '%s\n' "$ROUTE" >>"$T/sw.conf"
	timeout 10 env LD_PRELOAD="$T/swap.so" SWAP_VICTIM="$T/victim" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
		"$IDEMGATE" -c "$T/sw.conf" >"$T/sw.out" 2>"$T/sw.log" </dev/null
	rc=$?
	expect_eq "socket swapped for a link: the file's mode untouched" 600 "$(stat -c %a "$T/victim")"
	expect_match "... the gateway does not start (exit 1-123)" '^([1-9]|[1-9][0-9]|1[01][0-9]|12[0-3])$' "$rc"
	expect_match "... and says why" 'no longer the socket just made' "$(cat "$T/sw.log")"
else
	not_ok "the bind() wrapper builds" "$(head -3 "$T/swap.err")"
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
	# a flood of refused connections is not a flood of log lines
	python3 - "$P" <<'PYF'
import socket, sys
for _ in range(300):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.close()
PYF
	sleep 0.3
	n=$(grep -c 'not in FCGI_WEB_SERVER_ADDRS refused' "$T/gt2.log")
	check "tcp: 300 refused connections, at most 3 log lines ($n)" [ "$n" -ge 1 -a "$n" -le 3 ]
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

# handed NAME FD LISTEN: a gateway on "listen = LISTEN" given its socket
# $T/NAME.sock as fd FD (activate), behind web server wNAME; 0 once both
# serve.
handed() {
	gw_conf "$T/$1.conf" "$3" "$DBCNF"
	printf '%s\n' "$ROUTE" >>"$T/$1.conf"
	activate "$2" "$T/$1.sock" "$T/$1.conf" >"$T/$1.log" 2>&1 </dev/null &
	GW_PID[$1]=$!
	wait_until 10 test -S "$T/$1.sock" && wait_until 5 gw_has_workers "$1" &&
		lighttpd_start "w$1" "unix:$T/$1.sock"
}
# replayed NAME TAG: a protected POST through wNAME is created, its retry
# replayed (answers in $T/NAME1.*, $T/NAME2.*)
replayed() {
	local k
	k=$(new_key)
	http "${1}1" POST "$(url "w$1" "/payments?$1=1")" -H "Idempotency-Key: $k" --data-binary x
	expect_eq "$2: protected POST created" created "$(hdr "${1}1" Idempotency-Result)"
	http "${1}2" POST "$(url "w$1" "/payments?$1=1")" -H "Idempotency-Key: $k" --data-binary x
	expect_eq "$2: retry replayed" reused "$(hdr "${1}2" Idempotency-Result)"
}

# systemd socket activation, as systemd does it: the socket on fd 3,
# LISTEN_PID = the service's pid (exec in place keeps it), LISTEN_FDS = 1,
# and fd 0 /dev/null (so idemgate must not fall back to it).
if handed sd 3 fd:0; then
	replayed sd "socket activation"
	expect_match "socket activation: CGI answered" 'query=sd=1' "$(body sd1)"
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
if handed si 0 "unix:$T/si.sock"; then
	replayed si "StandardInput=socket, listen = unix:PATH"
	expect_match "StandardInput=socket: the log says it was inherited" 'inherited as fd 0' "$(cat "$T/si.log")"
	gw_stop si
	check "StandardInput=socket: the socket is left to its owner" test -S "$T/si.sock"
else
	not_ok "StandardInput=socket: idemgate serves the inherited unix socket" "$(tail -3 "$T/si.log")"
fi
# A socket the service manager keeps (systemd holds its copy across the
# service's restarts): a stop leaves it as it was, so a connection made
# meanwhile waits in its backlog and the next start, on the same socket,
# serves it.  For listen = fd:0 (the package's config) and unix:PATH.
for how in fd:0 "unix:$T/keep.sock"; do
	gw_conf "$T/keep.conf" "$how" "$DBCNF"
	printf '%s\n' "$ROUTE" >>"$T/keep.conf"
	out=$(timeout 60 python3 - "$IDEMGATE" "$T/keep.conf" "$T/keep.sock" <<'PY' 2>&1
import os, signal, socket, struct, subprocess, sys, time
gw, conf, path = sys.argv[1:4]
if os.path.exists(path): os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); os.chmod(path, 0o660); s.listen(16)
def start():
    p = subprocess.Popen([gw, "-c", conf], stdin=s.fileno(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True).stdout:
            return p
        time.sleep(0.1)
    return p
def rec(t, c): return struct.pack(">BBHHBB", 1, t, 1, len(c), 0, 0) + c
def pair(n, v): return bytes([len(n), len(v)]) + n + v
def ask(c):
    p = pair(b"REQUEST_METHOD", b"GET") + pair(b"REQUEST_URI", b"/payments") + pair(b"SCRIPT_NAME", b"/payments")
    c.sendall(rec(1, struct.pack(">HB5x", 1, 0)) + rec(4, p) + rec(4, b"") + rec(5, b""))
    got = b""
    while True:
        b = c.recv(65536)
        if not b: break
        got += b
    return b"201" in got[:200] or b"query=" in got
def connect():
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.settimeout(20)
    c.connect(path); return c
g = start()
print("first start serves:", ask(connect()))
g.send_signal(signal.SIGTERM); g.wait(timeout=30)
try:
    c = connect(); print("connect after the stop: queued")
except OSError as e:
    c = None; print("connect after the stop:", e)
g = start()
print("the next start serves the queued one:", c is not None and ask(c))
g.send_signal(signal.SIGTERM); g.wait(timeout=30)
PY
)
	expect_match "$how, socket kept by its owner: served" 'first start serves: True' "$out"
	expect_match "$how: a connection after a stop waits, not refused" 'connect after the stop: queued' "$out"
	expect_match "$how: the next start serves it" 'the next start serves the queued one: True' "$out"
done
# ... but not one anyone may write to (systemd's default SocketMode=0666):
# refused, as idemgate never makes one itself.
gw_conf "$T/sw.conf" "unix:$T/sw.sock" "$DBCNF"
printf '\n[route /]\nhandler = cgi:%s\n' "$(cgi_install sw)" >>"$T/sw.conf"
timeout 10 bash -c "$(declare -f activate); IDEMGATE=$IDEMGATE activate 0 '$T/sw.sock' '$T/sw.conf' 0666" >"$T/sw.log" 2>&1 </dev/null
expect_eq "a world-writable socket handed over: refused at start" 1 "$?"
expect_match "... and the log says how to fix it" 'world-writable \(mode 0666\).*SocketMode=0660' "$(cat "$T/sw.log")"
gw_conf "$T/sw3.conf" "fd:0" "$DBCNF"
printf '\n[route /]\nhandler = cgi:%s\n' "$T/cgi/sw" >>"$T/sw3.conf"
timeout 10 bash -c "$(declare -f activate); IDEMGATE=$IDEMGATE activate 3 '$T/sw3.sock' '$T/sw3.conf' 0666" >"$T/sw3.log" 2>&1 </dev/null
expect_eq "listen = fd:0, a world-writable socket handed over: refused" "1 1" "$? $(grep -c 'world-writable (mode 0666)' "$T/sw3.log")"
done_testing
