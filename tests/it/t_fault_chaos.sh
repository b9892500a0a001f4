#!/bin/bash
# The guarantee under a storm: 200 keys, 20 concurrent retries each, over
# two gateways (two lighttpds), while MariaDB is restarted twice, a worker
# is killed with -9 and cleanup runs in a loop.  Counted from the
# handler's own logs: each key completed exactly once, no two runs of a
# key ever overlapped, and every client of a key got the same answer.
. "$(dirname "$0")/../lib/harness.sh"

KEYS=${CHAOS_KEYS:-200}
RETRIES=${CHAOS_RETRIES:-20}
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
lease = 10s
wait = 10s
timeout = 30s
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
kill -9 $(gw_workers gw1 | cut -d' ' -f1)
sleep 3
mariadb_stop; sleep 1.5; mariadb_start || not_ok "MariaDB restarts (2)"
wait $client
rm -f "$T/chaos.running"

summary=$(tail -1 "$T/client.out")
expect_eq "every key reached every client" "done $KEYS unfinished 0" "$summary"
bad=$(head -n -1 "$T/client.out" | awk '$2 != "201" || $3 != 1' | head -5)
echo "# first keys without a final answer:"; grep 'last:[0-9]' "$T/client.out" | head -3
expect_eq "each key: all clients got 201 with one body" "" "$bad"
completed=$(wc -l <"$P.done" | tr -d ' ')
twice=$(cut -d' ' -f1 "$P.done" | sort | uniq -d | head -5)
expect_eq "handler completions (its own log) = keys" "$KEYS" "$completed"
expect_eq "no key completed twice" "" "$twice"
expect_eq "no two runs of a key at once" 0 "$(cat "$P.overlap" 2>/dev/null | wc -l)"
echo "# runs started: $(runs pay), completed: $completed, cleanup failures (outages): $(grep -c . "$T/cleanup.log" 2>/dev/null)"
done_testing
