#!/bin/bash
# The guarantee under a storm: 200 keys, 20 concurrent retries each, over
# two gateways (two lighttpds), while MariaDB is restarted twice, a worker
# is killed with -9 and cleanup runs in a loop.  Counted from the
# handler's own logs (tests/it/chaos_check.py): no two runs of a key ever
# overlapped, each key completed exactly once, and every client of a key
# got that run's answer.  One exception, printed: a run of the killed
# worker (it may finish just after the kill: a CGI runs on) whose answer
# never reached the store is run once more after its run deadline (README,
# "worker killed (kill -9)").
. "$(dirname "$0")/../lib/harness.sh"

KEYS=${CHAOS_KEYS:-200}
RETRIES=${CHAOS_RETRIES:-20}
TIMEOUT_S=30
LEASE_S=10
# A CGI run's deadline: timeout + the 3 s kill grace (README, "Leases and
# run deadlines"); a takeover also waits for the lease.
DEADLINE_MS=$((TIMEOUT_S * 1000 + 3000))
[ "$DEADLINE_MS" -ge $((LEASE_S * 1000)) ] || DEADLINE_MS=$((LEASE_S * 1000))
CK="$IDEM_ROOT/tests/it/chaos_check.py"

# The exception must not hide a real double run: fed made-up logs (worker
# 500 killed at 8000 ms, deadline 33000 ms), the checker allows the one
# real exception and flags each look-alike.
synth_run() { # synth_run CASE KEY PID PPID START_MS [END_MS]
	local tok="$3-${5}000000"
	echo "pid=$3 ppid=$4 pgid=$3 method=POST query=q key=$2 run=$tok" \
		>>"$T/synth/$1.runs"
	[ -z "${6:-}" ] || echo "$2 $tok ppid=$4 end=${6}000000" >>"$T/synth/$1.done"
}
synth_answer() { # synth_answer CASE KEY PID START_MS: the clients got it
	echo "$2 201 1 last: run:$3-${4}000000" >>"$T/synth/$1.clients"
}
synth_check() { # synth_check CASE WANT_RC WANT_RE: judges CASE's logs
	local out rc s="$T/synth/$1"
	touch "$s.runs" "$s.done" "$s.clients"
	out=$(python3 "$CK" "$s.runs" "$s.done" "$s.clients" 500 8000 33000 2>&1)
	rc=$?
	echo "$out" | sed "s/^/# $1: /"
	expect_eq "checker, $1: exit status" "$2" "$rc"
	expect_match "checker, $1: says so" "$3" "$out"
}
mkdir -p "$T/synth"
synth_run ok k1 101 500 7000 7300
synth_run ok k1 102 600 40500 40800
synth_answer ok k1 102 40500
synth_run ok k2 103 600 1000 1300
synth_answer ok k2 103 1000
synth_check ok 0 '^exception: key k1: .*pid 101 .*pid 102 .*worker 500'
synth_run overlap k1 101 600 1000 1300
synth_run overlap k1 102 600 1200 1500
synth_answer overlap k1 101 1000
synth_check overlap 1 'violation: key k1: run pid 102 .* started during'
synth_run early k1 101 500 7000 7300
synth_run early k1 102 600 20000 20300
synth_answer early k1 102 20000
synth_check early 1 'violation: key k1: .*before the first run.s deadline'
synth_run other k1 101 600 7000 7300
synth_run other k1 102 600 40500 40800
synth_answer other k1 102 40500
synth_check other 1 'violation: key k1: .*not a child of the killed worker'
synth_run late k1 101 500 7000 8200
synth_run late k1 102 600 40500 40800
synth_answer late k1 102 40500
synth_check late 0 '^exception: key k1: .*pid 101 .*pid 102 .*worker 500'
synth_run still k1 101 500 7000 41000
synth_run still k1 102 600 40500 40800
synth_answer still k1 102 40500
synth_check still 1 'violation: key k1: .*second run started before the first ended'
synth_run stored k1 101 500 7000 7300
synth_run stored k1 102 600 40500 40800
synth_answer stored k1 101 7000
synth_check stored 1 "violation: key k1: .*not the second run's answer"
synth_run third k1 101 500 7000 7300
synth_run third k1 102 600 40500 40800
synth_run third k1 103 600 41000
synth_answer third k1 102 40500
synth_check third 1 'violation: key k1: .*one more: run pid 103'
synth_run again k1 101 600 1000 1300
synth_run again k1 102 600 5000
synth_answer again k1 101 1000
synth_check again 1 'violation: key k1: run pid 102 .* started after'

db_private || { done_testing; exit 1; }
db_new "$TNAME" || { done_testing; exit 1; }
P=$(cgi_install pay)
for g in 1 2; do
	cat >"$T/gw$g.conf" <<EOF
[gateway]
listen = unix:$T/gw$g.sock
workers = 2
threads = 16
mysql_defaults_file = $DBCNF

[route /pay]
handler = cgi:$P
lease = ${LEASE_S}s
wait = 10s
timeout = ${TIMEOUT_S}s
EOF
	gw_start gw$g "$T/gw$g.conf" || { done_testing; exit 1; }
	lighttpd_start web$g "unix:$T/gw$g.sock" || { done_testing; exit 1; }
done

cleanup_loop() {
	local end=$(($(now_ms) + 60000))
	while [ -f "$T/chaos.running" ] && [ "$(now_ms)" -lt "$end" ]; do
		"$IDEMCTL" -c "$T/gw1.conf" cleanup >>"$T/cleanup.log" 2>&1
		sleep 0.2
	done
}
touch "$T/chaos.running"
cleanup_loop &
H_BGPIDS+=($!)
# Traffic over 14 s (a key every 70 ms, each run 0.3 s), the faults within.
python3 "$IDEM_ROOT/tests/it/chaos_client.py" "$KEYS" "$RETRIES" 120 14 120 \
	"$(url web1 '/pay?sleep=300&exclusive=1&done=1')" \
	"$(url web2 '/pay?sleep=300&exclusive=1&done=1')" >"$T/client.out" 2>"$T/client.err" &
client=$!
sleep 3
mariadb_stop; sleep 1; mariadb_start || not_ok "MariaDB restarts (1)"
sleep 3
victim=$(gw_workers gw1 | cut -d' ' -f1)
kill -9 "$victim"
kill_ms=$(now_ms)
sleep 3
mariadb_stop; sleep 1.5; mariadb_start || not_ok "MariaDB restarts (2)"
wait $client
rm -f "$T/chaos.running"

summary=$(tail -1 "$T/client.out")
expect_eq "every key reached every client" "done $KEYS unfinished 0" "$summary"
bad=$(head -n -1 "$T/client.out" | awk '$2 != "201" || $3 != 1' | head -5)
echo "# first keys without a final answer:"; grep 'last:[0-9]' "$T/client.out" | head -3
expect_eq "each key: all clients got 201 with one body" "" "$bad"
verdict=$(python3 "$CK" "$P.runs" "$P.done" "$T/client.out" "$victim" \
	"$kill_ms" "$DEADLINE_MS" 2>&1)
echo "# worker $victim killed at $kill_ms ms; run deadline $DEADLINE_MS ms"
{ grep '^exception: ' <<<"$verdict"; grep -v '^exception: ' <<<"$verdict" |
	head -20; } | sed 's/^/# /'
expect_match "runs per key (handler's log): no violation" \
	"^checked $KEYS keys: 0 violations" "$(tail -1 <<<"$verdict")"
exceptions=$(grep -c '^exception: ' <<<"$verdict")
completed=$(wc -l <"$P.done" | tr -d ' ')
expect_eq "handler completions (its own log) = keys + exceptions" \
	"$((KEYS + exceptions))" "$completed"
expect_eq "no two runs of a key at once" 0 "$(cat "$P.overlap" 2>/dev/null | wc -l)"
echo "# runs started: $(runs pay), completed: $completed, cleanup failures (outages): $(grep -c . "$T/cleanup.log" 2>/dev/null)"
done_testing
