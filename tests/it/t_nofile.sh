#!/bin/bash
# Descriptors: the gateway raises its soft open-files limit to the hard
# one, and gives its CGI programs the limit it started with; a worker out
# of descriptors pauses accepting (one log line), rather than spin on a
# listen socket that stays readable, and serves again once some go.
. "$(dirname "$0")/../lib/harness.sh"

cat >"$T/lim.sh" <<'SH'
#!/bin/sh
echo $$ >>"$0.runs"
printf 'Content-Type: text/plain\r\n\r\n%s\n' "$(ulimit -Sn)"
SH
LIM=$(cgi_install lim "$T/lim.sh")
hard=$(ulimit -Hn)
ulimit -Sn 256
std_setup "[route /lim]
handler = cgi:$LIM" "workers = 1" "threads = 4" "client_timeout = 4s" ||
	{ done_testing; exit 1; }
W=$(gw_workers gw)
expect_eq "the worker's soft limit is raised to the hard one" "$hard" \
	"$(awk '/^Max open files/ { print $4 }' "/proc/$W/limits")"
http l1 GET "$(url web /lim)"
expect_eq "a CGI gets the limit the gateway started with" "200 256" "$HS $(body l1)"

# The worker alone, down to 64 descriptors; 120 idle connections.
prlimit --pid "$W" --nofile=64:64
ticks() { awk '{ print $14 + $15 }' "/proc/$W/stat"; }
python3 - "$T/gw.sock" >"$T/idle.out" 2>&1 <<'PY' &
import socket, sys, time
conns = []
for _ in range(120):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    conns.append(s)
print("connected", flush=True)
time.sleep(3)
for s in conns:
    s.close()
print("closed", flush=True)
PY
H_BGPIDS+=($!)
wait_until 5 grep -q connected "$T/idle.out"
sleep 0.5
t0=$(ticks)
sleep 2
spent=$(($(ticks) - t0))
expect_lt "out of descriptors, the worker does not spin (CPU ticks in 2 s: $spent)" "$spent" 40
expect_match "... and says so, with the fix" \
	'accept: Too many open files; not accepting for 100 ms \(raise the open files limit' "$(cat "$T/gw.log")"
expect_eq "... once" 1 "$(grep -c 'accept: Too many open files' "$T/gw.log")"
wait_until 10 grep -q closed "$T/idle.out"
prlimit --pid "$W" --nofile=1024:1024
http l2 GET "$(url web /lim)"
expect_eq "once they go, it serves again" 200 "$HS"
expect_eq "the worker is the one it was (no restart)" "$W" "$(gw_workers gw)"

# A worker paused out of descriptors is no place to hand a burst to: the
# other, its one thread busy, still accepts, and answers a cached replay
# itself.  gw2: 2 workers x 1 thread; worker B held to the descriptors
# it has, so every accept of its fails and it pauses.
PAY=$(cgi_install pay)
gw_conf "$T/gw2.conf" "unix:$T/gw2.sock" "$DBCNF" "workers = 2" "threads = 1"
printf '\n[route /pay]\nhandler = cgi:%s\n' "$PAY" >>"$T/gw2.conf"
gw_start gw2 "$T/gw2.conf" || { done_testing; exit 1; }
lighttpd_start web2 "unix:$T/gw2.sock"
B=$(gw_workers gw2 | awk '{ print $2 }')
# Its lowest free descriptor: a limit there fails every open and accept.
n=0
while [ -e "/proc/$B/fd/$n" ]; do n=$((n + 1)); done
prlimit --pid "$B" --nofile="$n:$n"
K=$(new_key)
# Four times: the worker that takes them (A) then holds it in its cache.
for i in 1 2 3 4; do http c$i POST "$(url web2 /pay)" -H "Idempotency-Key: $K" --data-binary 'a=1'; done
http_bg slow POST "$(url web2 '/pay?sleep=4000')" -H "Idempotency-Key: $(new_key)" --data-binary 'a=2'
sleep 0.5
t0=$(now_ms)
http c5 POST "$(url web2 /pay)" -H "Idempotency-Key: $K" --data-binary 'a=1'
dt=$(($(now_ms) - t0))
expect_eq "a worker out of descriptors: the other's cached replay" "201 reused" "$HS $(hdr c5 Idempotency-Result)"
expect_lt "... at once, not after its busy thread (${dt} ms)" "$dt" 1500
expect_match "... (the worker was out of descriptors)" "idemgate\\[$B\\].*accept: Too many open files" "$(cat "$T/gw2.log")"
bg_wait
done_testing
