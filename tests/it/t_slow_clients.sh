#!/bin/bash
# Bounded clients: workers x threads trickling FastCGI connections (raw,
# and HTTP clients trickling bodies through Apache) do not stop another
# client from being served before client_timeout, and are cut off then.
# No crafted FastCGI record costs a worker.
. "$(dirname "$0")/../lib/harness.sh"

P=$(cgi_install pay)
std_setup "[route /pay]
handler = cgi:$P" \
	"socket_owner = :www-data" "client_timeout = 4s" || { done_testing; exit 1; }

# 16 raw connections, each a byte every 500 ms of a request that never
# ends; the helper prints how long each stayed open.
python3 - "$T/gw.sock" 16 >"$T/trickle.out" 2>&1 <<'PY' &
import os, socket, sys, threading, time
path, n = sys.argv[1], int(sys.argv[2])
begin = bytes([1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0])
params = bytes([1, 4, 0, 1, 0, 64, 0, 0]) + b"\x0bHTTP_X_SLOW" + b"\x34" + b"x" * 52
def one(i):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    t0 = time.time()
    try:
        for b in begin + params:
            s.send(bytes([b]))
            time.sleep(0.5)
            if time.time() - t0 > 15:
                break
    except OSError:
        pass
    os.write(1, b"closed after %.1f\n" % (time.time() - t0))
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in ts: t.start()
for t in ts: t.join()
PY
H_BGPIDS+=($!)
sleep 1
t0=$(now_ms)
http a GET "$(url web /pay?while=trickling)"
expect_eq "16 trickling connections: another request is served" 201 "$HS"
expect_lt "... within 1.5 s (held, it would wait for client_timeout: 2.5 s or more from here)" "$(($(now_ms) - t0))" 1500
K=$(new_key)
t0=$(now_ms)
http b POST "$(url web /pay)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "16 trickling connections: a protected request is served" created "$(hdr b Idempotency-Result)"
expect_lt "... within 1.5 s (held, it would wait for client_timeout: 2.5 s or more from here)" "$(($(now_ms) - t0))" 1500
wait_until 12 sh -c "[ \$(grep -c closed '$T/trickle.out') -ge 16 ]"
expect_eq "trickling connections are cut off" 16 "$(grep -c closed "$T/trickle.out")"
expect_eq "... at client_timeout (4 s), not before 3.5 s or after 6 s" 16 \
	"$(awk '/closed after/ { if ($3 >= 3.5 && $3 <= 6) n++ } END { print n + 0 }' "$T/trickle.out")"
expect_match "the cut is logged" 'not received within client_timeout' "$(cat "$T/gw.log")"

# Connections that never send a byte are closed at client_timeout too
# (only a connection kept after a keep_conn request may idle longer).
python3 - "$T/gw.sock" 8 >"$T/idle.out" 2>&1 <<'PY'
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
ss = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(10); ss.append(s)
t0 = time.time()
for s in ss:
    try:
        s.recv(1)
    except OSError:
        pass
    print("idle closed after %.1f" % (time.time() - t0))
PY
expect_eq "silent connections are closed at client_timeout" 8 \
	"$(awk '/idle closed after/ { if ($4 >= 3.5 && $4 <= 6) n++ } END { print n + 0 }' "$T/idle.out")"

# Through Apache: 16 HTTP clients trickling their bodies.
apache_start ap "unix:$T/gw.sock" && {
	for i in $(seq 1 16); do
		( for c in 1 2 3 4 5 6 7 8; do printf x; sleep 1; done ) |
			curl -sS --max-time 20 -o /dev/null -X POST -H 'Transfer-Encoding: chunked' \
				--data-binary @- "$(url ap /pay?slow=$i)" 2>/dev/null &
		H_BGPIDS+=($!)
	done
	sleep 1.5
	t0=$(now_ms)
	http c GET "$(url ap /pay?while=slow-bodies)"
	expect_eq "Apache, 16 slow bodies: another request is served" 201 "$HS"
	expect_lt "... within 1.5 s (held, it would wait for client_timeout: 2.5 s or more from here)" "$(($(now_ms) - t0))" 1500
}

# Params over max_params (64K): 431; far over: the connection goes.
raw_params() { # raw_params BYTES: a whole request with a header that long
	python3 - "$T/gw.sock" "$1" <<'PY'
import socket, struct, sys
path, size = sys.argv[1], int(sys.argv[2])
def rec(t, c): return struct.pack(">BBHHBB", 1, t, 1, len(c), 0, 0) + c
def pair(n, v): return bytes([len(n)]) + struct.pack(">I", len(v) | 0x80000000) + n + v
p = pair(b"REQUEST_URI", b"/pay") + pair(b"HTTP_X_BIG", b"x" * size)
out = rec(1, struct.pack(">HB5x", 1, 0))
for i in range(0, len(p), 65535): out += rec(4, p[i:i + 65535])
out += rec(4, b"") + rec(5, b"")
s = socket.socket(socket.AF_UNIX); s.connect(path)
got = b""
try:
    s.sendall(out)
    while True:
        b = s.recv(65536)
        if not b: break
        got += b
except OSError:
    pass
print("status=" + (got[8:32].split(b"\r\n")[0].decode(errors="replace") if got else "closed"))
PY
}
expect_match "params over max_params: 431" 'Status: 431' "$(raw_params 70000)"
expect_match "params far over max_params: connection closed" 'status=closed' "$(raw_params 200000)"

# Crafted params records: each costs its connection, never a worker.
before=$(gw_workers gw)
for lens in "0x7ffffffe 0x7ffffffe" "0x3fffffff 0x3fffffff" "0x7ffffff0 0x20" "0x20 0x7ffffff0" "0 0x7fffffff"; do
	"$ITBIN/fcgi_poison" "unix:$T/gw.sock" $lens >/dev/null 2>&1
done
sleep 0.3
expect_eq "crafted records: no worker died" "$before" "$(gw_workers gw)"
for i in 1 2 3 4 5 6; do
	http p$i GET "$(url web /pay?after=$i)"
	[ "$HS" = 201 ] || break
done
expect_eq "crafted records: service answers" 201 "$HS"
expect_match "crafted records: logged" 'invalid FastCGI' "$(cat "$T/gw.log")"

# A whole protected request, then another request's BEGIN in the same
# write (multiplexing, which FCGI_MPXS_CONNS = 0 refused): the whole one
# is answered and runs once; the connection then closes. Over TCP, with
# more records than one read takes and a web server slow to read a 3 MB
# answer, the close must not reset the connection under that answer.
mpx() { # mpx ADDR KEY BYTES TRAILING-BYTES READ-DELAY [BODY-BYTES]
	python3 - "$@" <<'PY'
import socket, struct, sys, time
addr, key, nbytes, extra, delay = sys.argv[1], sys.argv[2].encode(), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
body = int(sys.argv[6]) if len(sys.argv) > 6 else 1
def rec(t, rid, c): return struct.pack(">BBHHBB", 1, t, rid, len(c), 0, 0) + c
def pair(n, v): return bytes([len(n), len(v)]) + n + v
p = (pair(b"REQUEST_METHOD", b"POST") + pair(b"REQUEST_URI", b"/pay") +
     pair(b"SCRIPT_NAME", b"/pay") + pair(b"CONTENT_LENGTH", str(body).encode()) +
     pair(b"QUERY_STRING", b"bytes=" + nbytes.encode()) +
     pair(b"HTTP_IDEMPOTENCY_KEY", key))
out = rec(1, 1, struct.pack(">HB5x", 1, 1)) + rec(4, 1, p) + rec(4, 1, b"")
left = body
while left > 0:
    out += rec(5, 1, b"x" * min(left, 60000)); left -= 60000
out += rec(5, 1, b"") + rec(1, 2, struct.pack(">HB5x", 1, 1))
while extra > 0:
    out += rec(4, 2, b"y" * min(extra, 60000)); extra -= 60000
if addr.startswith("tcp:"):
    h, port = addr[4:].rsplit(":", 1)
    s = socket.create_connection((h, int(port)))
else:
    s = socket.socket(socket.AF_UNIX); s.connect(addr)
s.settimeout(10)
s.sendall(out)
time.sleep(delay)
got, end = b"", "open"
try:
    while True:
        b = s.recv(65536)
        if not b:
            end = "closed"; break
        got += b
except OSError as e:
    end = "error %s" % e
print("answered" if b"Idempotency-Result: created" in got else "not answered: %r" % got[:200])
print("413" if b"Status: 413" in got else "no 413")
print("stdout bytes %d" % (len(got)))
print(end)
PY
}
# A body longer than its CONTENT_LENGTH (a web server that lies, a
# crafted record): 400 problem+json, no run, and a log line that says
# which way it was wrong.
n0=$(runs pay)
# cl_send CONTENT_LENGTH BODY: one POST /pay straight to the socket.
cl_send() {
	python3 - "$T/gw.sock" "$1" "$2" <<'PY' 2>&1
import socket, struct, sys
def rec(t, c): return struct.pack(">BBHHBB", 1, t, 1, len(c), 0, 0) + c
def pair(n, v): return bytes([len(n), len(v)]) + n + v
p = (pair(b"REQUEST_METHOD", b"POST") + pair(b"REQUEST_URI", b"/pay") +
     pair(b"SCRIPT_NAME", b"/pay") + pair(b"CONTENT_LENGTH", sys.argv[2].encode()))
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
s.sendall(rec(1, struct.pack(">HB5x", 1, 0)) + rec(4, p) + rec(4, b"") +
          rec(5, sys.argv[3].encode()) + rec(5, b""))
got = b""
while True:
    b = s.recv(65536)
    if not b: break
    got += b
print("400" if b"Status: 400" in got else "no 400")
print("problem" if b"body-length-mismatch" in got and b"application/problem+json" in got else "no problem")
PY
}
cl_send 5 0123456789 >"$T/long.out"
expect_eq "body longer than CONTENT_LENGTH: 400 problem+json" "400 problem" "$(tr '\n' ' ' <"$T/long.out" | sed 's/ $//')"
expect_eq "body longer than CONTENT_LENGTH: no run" "$n0" "$(runs pay)"
expect_match "body longer than CONTENT_LENGTH: the log says so" 'body of 10 bytes where CONTENT_LENGTH says 5: longer than announced' "$(cat "$T/gw.log")"
# A CONTENT_LENGTH that is not digits alone: how much a handler reads is
# its own guess (PHP reads "3abc" as 3), so nothing runs either.
for v in 3abc -1 0x7 1e1 '7 ' 99999999999999999999999; do
	expect_eq "CONTENT_LENGTH '$v': 400 problem+json" "400 problem" "$(cl_send "$v" 'a=1&b=2' | tr '\n' ' ' | sed 's/ $//')"
done
expect_eq "CONTENT_LENGTH not a length: no run" "$n0" "$(runs pay)"
expect_match "CONTENT_LENGTH not a length: the log says so" 'CONTENT_LENGTH is not a length' "$(cat "$T/gw.log")"
# A role other than RESPONDER without KEEP_CONN, and an ABORT_REQUEST of
# a request still being sent: END_REQUEST (UNKNOWN_ROLE, REQUEST_COMPLETE),
# then the connection closes, as the protocol says; nothing runs.
n0=$(runs pay)
ended() { # ended role|abort: the END_REQUEST's protocol status, and the close
	python3 - "$T/gw.sock" "$1" <<'PY' 2>&1
import socket, struct, sys
def rec(t, c): return struct.pack(">BBHHBB", 1, t, 1, len(c), 0, 0) + c
def pair(n, v): return bytes([len(n), len(v)]) + n + v
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(3)
if sys.argv[2] == "role":
    s.sendall(rec(1, struct.pack(">HB5x", 2, 0)))
else:
    s.sendall(rec(1, struct.pack(">HB5x", 1, 0)) +
              rec(4, pair(b"REQUEST_METHOD", b"POST") + pair(b"SCRIPT_NAME", b"/pay")) +
              rec(2, b""))
got, end = b"", "open"
try:
    while True:
        b = s.recv(65536)
        if not b:
            end = "closed"; break
        got += b
except OSError:
    pass
print("status %d %s" % (got[12], end) if len(got) == 16 and got[1] == 3 else "got %r %s" % (got, end))
PY
}
expect_eq "another role without KEEP_CONN: UNKNOWN_ROLE, then closed" "status 3 closed" "$(ended role)"
expect_eq "ABORT_REQUEST while the request is read: END_REQUEST, then closed" "status 0 closed" "$(ended abort)"
expect_eq "... and nothing ran" "$n0" "$(runs pay)"
n0=$(runs pay)
mpx "$T/gw.sock" "$(new_key)" 10 0 0 >"$T/mpx.out" 2>&1
expect_match "another BEGIN after a whole request: it is answered" '^answered' "$(cat "$T/mpx.out")"
expect_match "another BEGIN after a whole request: the connection closes" '^closed' "$(cat "$T/mpx.out")"
expect_eq "another BEGIN after a whole request: one run" $((n0 + 1)) "$(runs pay)"
TP=$(free_port)
sed "s|^listen = .*|listen = tcp:127.0.0.1:$TP|" "$T/gw.conf" >"$T/gwt.conf"
if gw_start gwt "$T/gwt.conf"; then
	mpx "tcp:127.0.0.1:$TP" "$(new_key)" 3000000 300000 1.5 >"$T/mpxt.out" 2>&1
	expect_match "over TCP, records left unread: answered" '^answered' "$(cat "$T/mpxt.out")"
	expect_match "over TCP, records left unread: closed, not reset" '^closed' "$(cat "$T/mpxt.out")"
	# 3 MB of body in STDOUT records (8 bytes of head and up to 7 of
	# padding per record) and the head
	got=$(sed -n 's/^stdout bytes //p' "$T/mpxt.out")
	expect_lt "over TCP, records left unread: the whole answer came ($got bytes)" 3000000 "${got:-0}"
	# A body over max_body (1M) in one write: 413, and the rest of the
	# body, unread, does not reset the connection under it.
	mpx "tcp:127.0.0.1:$TP" "$(new_key)" 10 0 1 3000000 >"$T/big.out" 2>&1
	expect_match "over TCP, a body over max_body: 413" '^413' "$(cat "$T/big.out")"
	expect_match "over TCP, a body over max_body: closed, not reset" '^closed' "$(cat "$T/big.out")"
fi

# A web server that stops reading a pass-through answer for longer than
# client_timeout (its client slow, still there) loses the answer, but the
# run is not stopped as if the client had gone: only a closed connection
# stops it.  The client reads 200 KB, stalls 6 s (client_timeout 4 s),
# then reads on; the handler writes 10 MB over about 8 s.
python3 - "$T/gw.sock" >"$T/stall.out" 2>&1 <<'PY' &
import socket, struct, sys, time
def rec(t, c): return struct.pack(">BBHHBB", 1, t, 1, len(c), 0, 0) + c
def pair(n, v): return bytes([len(n), len(v)]) + n + v
uri = b"/pay?stream=10000000&step_ms=50"
p = (pair(b"REQUEST_METHOD", b"GET") + pair(b"REQUEST_URI", uri) +
     pair(b"SCRIPT_NAME", b"/pay") + pair(b"QUERY_STRING", uri.split(b"?")[1]))
s = socket.socket(socket.AF_UNIX)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sys.argv[1])
s.sendall(rec(1, struct.pack(">HB5x", 1, 0)) + rec(4, p) + rec(4, b"") + rec(5, b""))
got, t0, paused = 0, time.time(), False
s.settimeout(0.5)
while time.time() - t0 < 30:
    if not paused and got >= 200000:
        paused = True
        time.sleep(6)
    try:
        b = s.recv(65536)
    except socket.timeout:
        continue
    except OSError:
        break
    if not b:
        break
    got += len(b)
print("read %d" % got)
PY
stall=$!
H_BGPIDS+=($stall)
wait_until 5 grep -q 'stream=10000000' "$T/cgi/pay.runs"
spid=$(sed -n 's/^pid=\([0-9]*\) .*stream=10000000.*/\1/p' "$T/cgi/pay.runs" | tail -1)
sleep 5.5
if [ -n "$spid" ] && alive "$spid"; then ok "stalled web server: the pass-through handler still runs"; else
	not_ok "stalled web server: the pass-through handler still runs" "pid '$spid' stopped"; fi
wait "$stall"
expect_eq "stalled web server: not logged as a client gone" 0 \
    "$(grep -c 'the client went away' "$T/gw.log")"
done_testing
