#!/bin/bash
# Faults in the store (a real MariaDB stopped and started by PID) never
# cost an answer nor run a key twice or two at once: an answer finished
# during an outage is written when the store is back; an owner that cannot
# renew stops its handler before its lease ends; a restart (which drops
# every named lock) does not let a retry take over a live owner's key.
. "$(dirname "$0")/../lib/harness.sh"

db_private || { done_testing; exit 1; }
db_new "$TNAME" || { done_testing; exit 1; }
P=$(cgi_install pay)
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF

[route /pay]
handler = cgi:$P
lease = 3s
wait = 15s
timeout = 30s
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }
overlaps() { if [ -f "$P.overlap" ]; then wc -l <"$P.overlap" | tr -d ' '; else echo 0; fi; }
# running N: the CGI has logged a run past N (it logs as it starts, once
# its key is claimed): the fault that follows lands mid-run however slowly
# the machine started the request.
running() { [ "$(runs pay)" -gt "$1" ]; }

# 3. Recorded before forgotten: MariaDB stops while a 1.5 s handler runs
# and stays down past the lease; the client still gets its answer, and
# a retry after the restart replays it.
K=$(new_key)
before=$(runs pay)
http_bg a1 POST "$(url web '/pay?sleep=1500&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=1'
wait_until 5 running "$before"
sleep 0.3
mariadb_stop
sleep 1.2
http d1 POST "$(url web '/pay?sleep=1500&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=1'
is_problem "outage: a retry meanwhile" d1 503 store-unavailable
sleep 2.5
mariadb_start || not_ok "MariaDB restarts"
bg_wait
expect_eq "outage: the first client got its answer" 201 "$(st a1)"
expect_eq "outage: as created" created "$(hdr a1 Idempotency-Result)"
http a2 POST "$(url web '/pay?sleep=1500&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=1'
expect_eq "outage: retry after the restart replays" reused "$(hdr a2 Idempotency-Result)"
expect_file_eq "outage: the same answer" "$T/a1.b" "$T/a2.b"
sleep 3.5
http a3 POST "$(url web '/pay?sleep=1500&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=1'
expect_eq "outage: retry after another lease still replays" reused "$(hdr a3 Idempotency-Result)"
expect_eq "outage: one run" 1 "$(runs pay)"
expect_match "outage: the gateway said it kept the answer" 'answer is kept' "$(cat "$T/gw.log")"

# 4. Never two at once: a 9 s handler, a 4.5 s outage, a 3 s lease.  The
# owner cannot renew, stops its handler before the lease ends and answers
# 503; after the restart one retry runs it again, never beside the first
# (the retries' run takes 1 s: X-Sleep, which is not fingerprinted).
K=$(new_key)
before=$(runs pay)
http_bg b1 POST "$(url web '/pay?sleep=9000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=2'
wait_until 5 running "$before"
sleep 0.3
mariadb_stop
t_down=$(now_ms)
sleep 4.5
mariadb_start || not_ok "MariaDB restarts"
for i in 1 2 3 4; do
	http_bg b2_$i POST "$(url web '/pay?sleep=9000&exclusive=1')" -H "Idempotency-Key: $K" \
		-H 'X-Sleep: 1000' --data-binary 'amount=2'
done
bg_wait
HS=$(st b1)
is_problem "lease lost: the owner's client" b1 503 store-unavailable
expect_lt "lease lost: answered before the outage ended" "$(cat "$T/b1.end")" "$((t_down + 4500))"
created=0 reused=0
for i in 1 2 3 4; do
	case "$(hdr b2_$i Idempotency-Result)" in
	created) created=$((created + 1)) ;;
	reused) reused=$((reused + 1)) ;;
	esac
done
expect_eq "lease lost: one retry ran it" 1 "$created"
expect_eq "lease lost: the others replayed it" 3 "$reused"
expect_eq "lease lost: two runs in all (one stopped)" 2 $(($(runs pay) - before))
expect_eq "lease lost: never two at once" 0 "$(overlaps)"
expect_match "lease lost: logged" 'stopping the handler before it ends' "$(cat "$T/gw.log")"
# Renewals are retried every 250 ms until the stop point (about 2 s
# here); a failed one is said once a second at most.
expect_lt "lease lost: failed renewals said once a second at most" \
	"$(grep -c 'lease renewal failed: .* ms left' "$T/gw.log")" 5

# A restart shorter than the lease: the owner keeps its key, its handler
# finishes, retries after the restart wait and replay its answer.
K=$(new_key)
before=$(runs pay)
http_bg c1 POST "$(url web '/pay?sleep=4000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=3'
wait_until 5 running "$before"
sleep 0.2
mariadb_stop
mariadb_start || not_ok "MariaDB restarts"
http_bg c2 POST "$(url web '/pay?sleep=4000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=3'
bg_wait
expect_eq "restart: owner answers" created "$(hdr c1 Idempotency-Result)"
expect_eq "restart: retry replays" reused "$(hdr c2 Idempotency-Result)"
expect_file_eq "restart: the same answer" "$T/c1.b" "$T/c2.b"
expect_eq "restart: one run" 1 $(($(runs pay) - before))
expect_eq "restart: never two at once" 0 "$(overlaps)"

# 6. A reload during an outage: the old worker keeps the answer it could
# not write past its drain (it used to give up after 10 s, and the key
# ran again), and writes it when the store is back.
K=$(new_key)
before=$(runs pay)
http_bg h1 POST "$(url web '/pay?sleep=2000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=6'
wait_until 5 running "$before"
sleep 0.2
mariadb_stop
bg_wait
expect_eq "reload in an outage: the owner answered" created "$(hdr h1 Idempotency-Result)"
kill -HUP "${GW_PID[gw]}"
sleep 11
mariadb_start || not_ok "MariaDB restarts"
sleep 1.5
http h2 POST "$(url web '/pay?sleep=2000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=6'
expect_eq "reload in an outage: a retry replays" reused "$(hdr h2 Idempotency-Result)"
expect_file_eq "reload in an outage: the same answer" "$T/h1.b" "$T/h2.b"
expect_eq "reload in an outage: one run" 1 $(($(runs pay) - before))

# 7. MariaDB frozen (not restarted) past the lease and the run deadline,
# the answer finished meanwhile.  The owner's call times out and its
# client library closes the connection; once the server runs again it
# would end that session and drop the key's lock, and a retry through
# another gateway, its lease lapsed and its run deadline passed, would
# take the key over and run it again before the owner's answer lands
# (the owner's gateway is held stopped here to make that certain).  The
# owner keeps the socket open instead: the session, and the lock, live
# until its answer is written.
pair_setup "[route /pay]
handler = cgi:$P
lease = 2s
timeout = 2s
wait = 0" "workers = 1" || { done_testing; exit 1; }
# A server told to end idle sessions after 3 s must not end the kept one.
h_sqlroot -e "SET GLOBAL wait_timeout = 3"
K=$(new_key)
before=$(runs pay)
http_bg f1 POST "$(url weba '/pay?sleep=1200&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=7'
wait_until 5 running "$before"
kill -STOP "$MDB_PID"
t_freeze=$(now_ms)
bg_wait
expect_eq "frozen store: the owner's client got its answer" created "$(hdr f1 Idempotency-Result)"
kept_line() { grep -q 'answer is kept' "$T/gwa.log"; }
wait_until 5 kept_line || not_ok "frozen store: the owner kept the answer" "$(tail -3 "$T/gwa.log")"
kill -STOP $(gw_workers gwa)
# Past the lease (2 s) and the run deadline (timeout + kill grace).
sleep 8
kill -CONT "$MDB_PID"
sleep 5
http f2 POST "$(url webb '/pay?sleep=1200&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=7'
expect_eq "frozen store: a retry elsewhere does not run it again" 409 "$HS"
kill -CONT $(gw_workers gwa)
replays() {
	http f3 POST "$(url webb '/pay?sleep=1200&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=7'
	[ "$(hdr f3 Idempotency-Result)" = reused ]
}
wait_until 10 replays
expect_eq "frozen store: once written, the owner's answer replays" reused "$(hdr f3 Idempotency-Result)"
expect_file_eq "frozen store: the same answer" "$T/f1.b" "$T/f3.b"
expect_eq "frozen store: one run" 1 $(($(runs pay) - before))
echo "# frozen for $(($(now_ms) - t_freeze)) ms in all"

# 8. mysql_group "good bad": the owner's connection is killed mid-run and
# the lease renewal reconnects, the walk starting past the lost group at
# "bad", a server that accepts and never answers.  A renewal has a second
# at most: out of time at "bad", the next one must start at "good", not
# at "bad" again, or the owner, never renewing, stops its handler.
BAD=$(free_port)
python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
s.settimeout(1)
kept, t = [], time.time()
while time.time() - t < 120:
    try:
        kept.append(s.accept()[0])
    except socket.timeout:
        pass' "$BAD" &
H_BGPIDS+=($!)
wait_until 5 port_open "$BAD"
{ sed 's/^\[idemgate\]/[good]/' "$DBCNF"; sed -e 's/^\[idemgate\]/[bad]/' -e "s|^socket=.*|host=127.0.0.1\nport=$BAD|" "$DBCNF"; } >"$T/groups.cnf"
chmod 600 "$T/groups.cnf"
gw_conf "$T/gwc.conf" "unix:$T/gwc.sock" "$T/groups.cnf" "workers = 1"
printf 'mysql_group = good bad\n\n[route /pay]\nhandler = cgi:%s\nlease = 3s\ntimeout = 10s\n' "$P" >>"$T/gwc.conf"
gw_start gwc "$T/gwc.conf" || { done_testing; exit 1; }
lighttpd_start webc "unix:$T/gwc.sock" || { done_testing; exit 1; }
K=$(new_key)
before=$(runs pay)
http_bg g1 POST "$(url webc '/pay?sleep=6000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'amount=8'
sleep 1
h_kill_sessions idem
bg_wait
expect_eq "group failover mid-run: the handler ran to its end" "201 created" "$(st g1) $(hdr g1 Idempotency-Result)"
expect_eq "group failover mid-run: one run" 1 $(($(runs pay) - before))
done_testing
