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
done_testing
