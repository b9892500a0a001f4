#!/bin/bash
# make run's demo (tools/run.sh, in a directory of the test's own, on a
# free port): its lighttpd loads the package's 20-idemgate.conf (socket
# path aside, unchanged) so it streams answers as the shipped file does,
# a payment is created and replayed, the fcgiwrap-style /cgi-bin/ script
# runs, and a Ctrl-C (SIGINT to its process group) stops every service
# it started, a normal end.
. "$(dirname "$0")/../lib/harness.sh"

R=$T/run
P=$(free_port)
# In a process group of its own, as a terminal's foreground job is, and
# with SIGINT not ignored (bash ignores it in what it starts with &).
IDEM_RUN_DIR=$R PORT=$P python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp("bash", ["bash", sys.argv[1]])' "$IDEM_ROOT/tools/run.sh" >"$T/run.out" 2>&1 &
RUNPID=$!
H_BGPIDS+=("$RUNPID")
if ! wait_until 120 grep -q 'idemgate is up' "$T/run.out" || ! wait_until 10 port_open "$P"; then
	not_ok "make run comes up" "$(tail -5 "$T/run.out")"
	done_testing
	exit 1
fi
expect_eq "the shipped module, only its socket moved" "" \
    "$(sed "s|$R/idemgate.sock|/run/idemgate/idemgate.sock|" "$R/20-idemgate.conf" |
	diff - "$IDEM_ROOT/etc/lighttpd/20-idemgate.conf")"
expect_match "lighttpd includes it" "^include \"$R/20-idemgate.conf\"" "$(cat "$R/lighttpd.conf")"
expect_match "lighttpd streams answers" 'server.stream-response-body *= *2' \
    "$(lighttpd -p -f "$R/lighttpd.conf" 2>&1)"

K=$(new_key)
http p1 POST "http://127.0.0.1:$P/payments" -H "Idempotency-Key: $K" -d 'amount=4200'
expect_eq "demo payment: created" "201 created" "$HS $(hdr p1 Idempotency-Result)"
http p2 POST "http://127.0.0.1:$P/payments" -H "Idempotency-Key: $K" -d 'amount=4200'
expect_eq "demo payment: reused" "201 reused" "$HS $(hdr p2 Idempotency-Result)"
expect_file_eq "demo payment: the same answer" "$T/p1.b" "$T/p2.b"
expect_eq "demo payment: one ledger line" 1 "$(grep -c . "$R/ledger.txt")"
http h GET "http://127.0.0.1:$P/cgi-bin/hello.cgi"
expect_eq "the demo's /cgi-bin/ script runs" "200 hello from a legacy CGI" "$HS $(body h)"

# Ctrl-C: the terminal signals the whole foreground group.
kids=$(cat "$R/lighttpd.pid" "$R/mariadb.pid" 2>/dev/null)
kill -INT -- "-$RUNPID"
rc=124
wait_until 20 sh -c "! kill -0 $RUNPID 2>/dev/null" && { wait "$RUNPID"; rc=$?; }
for k in $kids; do
	wait_until 10 sh -c "! kill -0 $k 2>/dev/null" || not_ok "Ctrl-C stops $k"
done
expect_match "Ctrl-C stops everything" 'stopped' "$(cat "$T/run.out")"
check "nothing left listening on $P" sh -c "! (exec 3<>/dev/tcp/127.0.0.1/$P) 2>/dev/null"
expect_nomatch "Ctrl-C is not a service that exited" 'a service exited' "$(cat "$T/run.out")"
expect_eq "Ctrl-C: a normal end, exit 0" 0 "$rc"

# The port taken by another server: make run says lighttpd did not start,
# never "is up" (its curl lines would reach the other server), and fails.
Q=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); time.sleep(120)' "$Q" &
H_BGPIDS+=("$!")
wait_until 10 port_open "$Q"
IDEM_RUN_DIR=$R PORT=$Q timeout 120 bash "$IDEM_ROOT/tools/run.sh" >"$T/taken.out" 2>&1
rc=$?
expect_eq "port taken: make run fails" 1 "$rc"
expect_nomatch "port taken: never says it is up" 'idemgate is up' "$(cat "$T/taken.out")"
expect_match "port taken: says lighttpd did not start" "lighttpd did not start on 127.0.0.1:$Q" "$(cat "$T/taken.out")"
expect_match "port taken: stops what it started" 'stopped' "$(cat "$T/taken.out")"
done_testing
