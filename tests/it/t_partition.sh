#!/bin/bash
# Partitions, on loopback: each of two gateways reaches MariaDB over TCP
# through a relay of its own (socat).  The test freezes the owner's relay
# (SIGSTOP: packets go unanswered, nothing is refused or reset) for longer
# than the lease while the other gateway keeps its path, then heals it.
# The server ends the cut-off gateway's sessions meanwhile (as its own
# timeouts or TCP keepalive would), so the named locks they held are gone.
#   A. a CGI owner cut off mid-run stops its handler before its lease ends
#      (its own clock, no blocking call); the other gateway never runs the
#      key beside it;
#   B. a CGI that finishes while its owner is cut off: the answer is kept,
#      written after the heal, and replayed; never run again;
#   C. the same for a PHP-FPM upstream, which nothing stops.
# Runs and overlaps are counted from the handlers' own logs.
. "$(dirname "$0")/../lib/harness.sh"

if ! command -v socat >/dev/null; then
	not_ok "socat installed"
	done_testing
	exit 1
fi
MDB_PORT=$(free_port)
export MDB_PORT
db_private || { done_testing; exit 1; }
db_new "$TNAME" || { done_testing; exit 1; }
# One MySQL user per gateway, so the server can tell their sessions apart.
h_sqlroot -e "CREATE USER 'idem1'@'127.0.0.1' IDENTIFIED BY 'idem-test-secret';
	GRANT ALL ON \`$TNAME\`.* TO 'idem1'@'127.0.0.1';
	CREATE USER 'idem2'@'127.0.0.1' IDENTIFIED BY 'idem-test-secret';
	GRANT ALL ON \`$TNAME\`.* TO 'idem2'@'127.0.0.1'" || not_ok "TCP users"
P=$(cgi_install pay)
fpm_start fpm "request_terminate_timeout = 12s
request_terminate_timeout_track_finished = yes" || { done_testing; exit 1; }

# relay_start N: a relay to MariaDB in a process group of its own (it
# forks a child per connection): RPORT[N], RPG[N].
declare -A RPORT=() RPG=()
relay_start() {
	RPORT[$1]=$(free_port)
	setsid socat "TCP-LISTEN:${RPORT[$1]},bind=127.0.0.1,reuseaddr,fork" \
		"TCP:127.0.0.1:$MDB_PORT" >"$T/relay-$1.log" 2>&1 &
	RPG[$1]=$!
	wait_until 5 port_open "${RPORT[$1]}" || not_ok "relay $1 listens"
}
freeze() { # freeze N: relay N stops; the server drops gateway N's sessions
	kill -STOP -- "-${RPG[$1]}"
	h_kill_sessions "idem$1"
}
heal() { kill -CONT -- "-${RPG[$1]}"; }
relays_stop() {
	local n
	for n in "${!RPG[@]}"; do
		kill -CONT -- "-${RPG[$n]}" 2>/dev/null
		kill -- "-${RPG[$n]}" 2>/dev/null
	done
}

# tcp_group NAME PORT USER: an option-file group reaching MariaDB at PORT
tcp_group() {
	printf '[%s]\nhost=127.0.0.1\nport=%s\nuser=%s\npassword=idem-test-secret\ndatabase=%s\n\n' \
		"$1" "$2" "$3" "$TNAME"
}
# gw_pay N OPTFILE [gw_conf extras]: gateway gwN with the /pay and
# /pay.php routes, and lighttpd webN in front
gw_pay() {
	local n=$1 cnf=$2
	shift 2
	chmod 600 "$cnf"
	gw_conf "$T/gw$n.conf" "unix:$T/gw$n.sock" "$cnf" "$@"
	cat >>"$T/gw$n.conf" <<EOF

[route /pay]
handler = cgi:$P
lease = 3s
timeout = 10s
wait = 1s

[route /pay.php]
handler = fastcgi:unix:$T/fpm.sock
lease = 3s
timeout = 30s
wait = 1s
run_limit = 12s
EOF
	gw_start "gw$n" "$T/gw$n.conf" || return 1
	lighttpd_start "web$n" "unix:$T/gw$n.sock" "$T/www"
}
gw_setup() { # gw_setup N: gateway gwN and lighttpd webN via relay N
	relay_start "$1"
	tcp_group idemgate "${RPORT[$1]}" "idem$1" >"$T/tcp$1.cnf"
	gw_pay "$1" "$T/tcp$1.cnf"
}
gw_setup 1 || { relays_stop; done_testing; exit 1; }
gw_setup 2 || { relays_stop; done_testing; exit 1; }
overlaps() { if [ -f "$P.overlap" ]; then wc -l <"$P.overlap" | tr -d ' '; else echo 0; fi; }

# retry_through2 FILE URL KEY BODY UNTIL_MS: retries via the other gateway
# every 0.5 s until UNTIL_MS (now_ms); one line per answer in FILE.
retry_through2() {
	local i=0
	while [ "$(now_ms)" -lt "$5" ] && [ "$i" -lt 40 ]; do
		i=$((i + 1))
		http rr POST "$(url web2 "$2")" -H "Idempotency-Key: $3" --data-binary "$4"
		echo "$HS $(hdr rr Idempotency-Result)" >>"$1"
		sleep 0.5
	done
}

# cut_off L URL BODY BEFORE: a run through gateway 1 under a new key K,
# its relay frozen BEFORE s after the start and for 6 s while gateway 2
# retries (answers in $T/L), then healed; the owner's answer in $T/L1.*.
cut_off() {
	local l=$1 path=$2 data=$3 t_cut
	K=$(new_key)
	http_bg "${l}1" POST "$(url web1 "$path")" -H "Idempotency-Key: $K" --data-binary "$data"
	sleep "$4"
	t_cut=$(now_ms)
	freeze 1
	retry_through2 "$T/$l" "$path" "$K" "$data" $((t_cut + 6000))
	heal 1
	bg_wait
}

# kept L URL BODY: after the heal, a retry through gateway 2 replays the
# answer the cut-off owner gave its client.
kept() {
	local l=$1
	replayed() {
		http "${l}2" POST "$(url web2 "$2")" -H "Idempotency-Key: $K" --data-binary "$3"
		[ "$(hdr "${l}2" Idempotency-Result)" = reused ]
	}
	wait_until 5 replayed "$@"
	expect_eq "$l: after the heal, the kept answer replays" reused "$(hdr "${l}2" Idempotency-Result)"
	expect_file_eq "$l: the same answer" "$T/${l}1.b" "$T/${l}2.b"
	expect_eq "$l: no retry ran it during the partition" 0 "$(grep -c created "$T/$l")"
}

# --- A. A CGI owner cut off mid-run (8 s handler, lease 3 s).
K=$(new_key)
n0=$(runs pay)
http_bg a1 POST "$(url web1 '/pay?sleep=8000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'a=1'
wait_until 5 sh -c "[ \$(grep -c . '$P.runs' 2>/dev/null || echo 0) -gt $n0 ]" || not_ok "A: the handler started"
sleep 0.5
t_cut=$(now_ms)
freeze 1
retry_through2 "$T/A" '/pay?sleep=8000&exclusive=1' "$K" 'a=1' $((t_cut + 6000))
heal 1
bg_wait
HS=$(st a1)
is_problem "A: the cut-off owner's client" a1 503 store-unavailable
expect_lt "A: the owner stopped its handler before the lease ended" "$(($(cat "$T/a1.end") - t_cut))" 3000
expect_match "A: logged" 'stopping the handler before it ends' "$(cat "$T/gw1.log")"
expect_eq "A: no retry ran it during the partition" 0 "$(grep -c created "$T/A")"
# After the heal the owner's release lands: one retry runs the key again.
sleep 1.5
http a2 POST "$(url web2 '/pay?sleep=1000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'a=1'
expect_match "A: after the heal, the key is someone's" '^(201|409|422)$' "$HS"
expect_eq "A: never two at once" 0 "$(overlaps)"

# --- B. A CGI that finishes while its owner is cut off.
n0=$(runs pay)
cut_off B '/pay?sleep=1500&exclusive=1' 'b=1' 0.5
expect_eq "B: the owner's client got the answer" 201 "$(st B1)"
expect_eq "B: created" created "$(hdr B1 Idempotency-Result)"
expect_eq "B: retries meanwhile got 409" 0 "$(grep -vc '^409 $' "$T/B")"
kept B '/pay?sleep=1500&exclusive=1' 'b=1'
expect_eq "B: one run" 1 $(($(runs pay) - n0))
expect_match "B: the owner kept the answer" 'answer is kept' "$(cat "$T/gw1.log")"
expect_eq "B: never two at once" 0 "$(overlaps)"

# --- C. A PHP-FPM run (5 s) whose owner is cut off for 6 s.
n0=$(fpm_runs)
cut_off C '/pay.php?sleep=5000' 'c=1' 1
expect_eq "C: the owner's client got PHP's answer" 201 "$(st C1)"
expect_eq "C: created" created "$(hdr C1 Idempotency-Result)"
kept C '/pay.php?sleep=5000' 'c=1'
expect_eq "C: one run" 1 $(($(fpm_runs) - n0))
expect_eq "C: never two at once" 0 "$(fpm_overlaps)"

# --- D. A gateway with two ways to the store (mysql_group = r3 d3, as a
# Galera node list is): the first freezes mid-run.  The renewal cut off
# at its deadline moves on to the next way at once, as a lost connection
# does, so the owner keeps its lease and its handler (4 s, lease 3 s)
# runs to its end: created, one run.  (Going back to the frozen way cost
# a second deadline: the owner stopped a healthy handler, 503, and a
# retry ran it again.)
relay_start 3
{ tcp_group r3 "${RPORT[3]}" idem1; tcp_group d3 "$MDB_PORT" idem1; } >"$T/tcp3.cnf"
if gw_pay 3 "$T/tcp3.cnf" "mysql_group = r3 d3"; then
	n0=$(runs pay)
	K=$(new_key)
	http_bg d1 POST "$(url web3 '/pay?sleep=4000&exclusive=1')" -H "Idempotency-Key: $K" --data-binary 'd=1'
	wait_until 5 sh -c "[ \$(grep -c . '$P.runs' 2>/dev/null || echo 0) -gt $n0 ]" || not_ok "D: the handler started"
	sleep 0.3
	kill -STOP -- "-${RPG[3]}"
	bg_wait
	heal 3
	expect_eq "D: first way frozen: the run ends, 201" 201 "$(st d1)"
	expect_eq "D: created" created "$(hdr d1 Idempotency-Result)"
	expect_eq "D: one run" 1 $(($(runs pay) - n0))
	expect_eq "D: never two at once" 0 "$(overlaps)"
fi

# --- E. A claim cut off after its INSERT ran: the server's answer is held
# (1.5 s) past the call's deadline, the client gets 503 and nothing runs,
# but the row is there under the claim's token.  Once the store answers
# again it is released (by key and token), so the key is free at once,
# not a lease and a run deadline later (409 meanwhile).
SR=$(free_port)
python3 "$IDEM_ROOT/tests/it/slow_relay.py" "$SR" "$MDB_PORT" "$T/hold" >"$T/slow-relay.log" 2>&1 &
H_BGPIDS+=($!)
wait_until 5 port_open "$SR" || not_ok "E: slow relay listens"
tcp_group idemgate "$SR" idem1 >"$T/tcp4.cnf"
if gw_pay 4 "$T/tcp4.cnf" "workers = 1" "threads = 1"; then
	# One thread, its connection up (so the claim's INSERT is what the
	# held answer cuts off).
	http e0 POST "$(url web4 /pay)" -H "Idempotency-Key: $(new_key)" --data-binary 'e=0'
	expect_eq "E: a first key, the connection up" 201 "$HS"
	n0=$(runs pay)
	K=$(new_key)
	echo 1500 >"$T/hold"
	http e1 POST "$(url web4 /pay)" -H "Idempotency-Key: $K" --data-binary 'e=1'
	is_problem "E: claim cut off" e1 503 store-unavailable
	expect_eq "E: the row was written" 1 "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys WHERE idem_key = '$K'")"
	rm -f "$T/hold"
	row_gone() { [ "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys WHERE idem_key = '$K'")" = 0 ]; }
	wait_until 8 row_gone
	expect_eq "E: the store back, the row it left is released" 0 \
	    "$(db_query "$TNAME" "SELECT COUNT(*) FROM idem_keys WHERE idem_key = '$K'")"
	http e2 POST "$(url web4 /pay)" -H "Idempotency-Key: $K" --data-binary 'e=1'
	expect_eq "E: a retry then runs it" "201 created" "$HS $(hdr e2 Idempotency-Result)"
	expect_eq "E: one run in all" 1 $(($(runs pay) - n0))
	expect_match "E: logged" 'released when the store answers' "$(cat "$T/gw4.log")"
fi
relays_stop
done_testing
