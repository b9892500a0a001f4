#!/bin/bash
# make bench, cluster section: a 3-node Galera cluster on this machine
# (tests/lib/galera.sh, durable commits as the single-server section), a
# gateway per node behind one lighttpd, driven by wrk.  Prints fresh and
# replay req/s against the single server's (arguments: its fresh and
# replay req/s, measured in the same run), waiters' latency and failover.
# Not a timed test.
set -u
cd "$(dirname "$0")/.." || exit 1
FRESH1=${1:-0} REPLAY1=${2:-0}
DUR=${BENCH_SECONDS:-5}
CONN=${BENCH_CONNECTIONS:-16}
. tests/lib/harness.sh
. tests/lib/nodes.sh
. tests/lib/galera.sh
say() { printf '%s\n' "$*" >&2; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
rps() { awk '/Requests\/sec/ { print $2 }'; }

galera_can || { echo "cluster: skipped ($GALERA_SKIP)"; exit 0; }
say "bench: starting a 3-node Galera cluster"
galera_start 3 || { echo "cluster: the cluster did not start"; exit 0; }
C=$T/my.cnf
for i in 1 2 3; do node_cnf "$C" n$i g$i bench; done
node_sql g1 "CREATE DATABASE bench"
cp "$IDEM_BUILD/tests/it/hello_cgi" "$T/cgi/hello.cgi"
cp bench/slow.cgi "$T/cgi/slow.cgi"
for i in 1 2 3; do
	galera_gw_conf "$T/gw$i.conf" "$i" "$C" 32
	cat >>"$T/gw$i.conf" <<CONF
[route /]
handler = cgi:$T/cgi/hello.cgi
[route /slow]
handler = cgi:$T/cgi/slow.cgi
CONF
	[ "$i" = 1 ] && "$IDEMCTL" -c "$T/gw1.conf" migrate >/dev/null
	gw_start gw$i "$T/gw$i.conf" || { echo "cluster: gateway $i did not start"; exit 0; }
	# a lighttpd per gateway: one key's retries must name the same path
	lighttpd_start web$i "unix:$T/gw$i.sock"
done

# wrk_rps MODE RUN: one wrk per node at once (CONN connections in all),
# their req/s summed; fresh keys differ per node
wrk_rps() {
	local i run
	for i in 1 2 3; do
		run=$2
		[ "$1" = fresh ] && run=$2-n$i
		wrk -t1 -c$(((CONN + 2) / 3)) -d"${DUR}s" -s bench/cluster.lua \
		    "$(url web$i /hello)" -- "$1" "$run" >"$T/wrk$i.out" 2>&1 &
	done
	wait_wrk
	cat "$T"/wrk[123].out | rps | awk '{ s += $1 } END { printf "%.2f", s }'
}
wait_wrk() { while pgrep -f "wrk -t1 .* -s bench/cluster.lua" >/dev/null; do sleep 0.2; done; }
fresh=$(wrk_rps fresh "c$$")
curl -s -o /dev/null -X POST -H "Idempotency-Key: bench-creplay$$" -d amount=4200 "$(url web1 /hello)"
replay=$(wrk_rps replay "creplay$$")
bad=$(cat "$T"/wrk[123].out | awk '/Non-2xx/ { s += $NF } END { print s + 0 }')
read -r wmed wmax < <(python3 bench/waiters.py "$(url web1 /slow)" 8 3 "$(url web2 /slow),$(url web3 /slow)")

# Failover: g3 killed with -9; how long until its gateway answers again.
fo() { [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Idempotency-Key: fo$$-$(now_ms)" -d a=1 "$(url web3 /hello)")" = 200 ]; }
node_stop g3 KILL
t0=$(now_ms)
wait_until 30 fo
fo_ms=$(($(now_ms) - t0))

cat <<OUT
Galera, 3 nodes on this machine (one gateway each, 1 worker x 32 threads; evs.suspect_timeout 1.5 s)
nodes: $([ "${MDB_FLUSH:-2}" = 1 ] && echo "durable commits (innodb_flush_log_at_trx_commit = 1 on every node)" || echo "RELAXED durability (innodb_flush_log_at_trx_commit = ${MDB_FLUSH:-2} on every node)")
fresh keys, 3 nodes    ${fresh:-0} req/s vs one server ${FRESH1} req/s   ratio $(ratio "${fresh:-0}" "$FRESH1")x   (goal >= 0.5)
replays, 3 nodes       ${replay:-0} req/s vs one server ${REPLAY1} req/s   ratio $(ratio "${replay:-0}" "$REPLAY1")x   (goal >= 0.9; non-2xx: ${bad})
waiters on other nodes (8 on a 300 ms owner, 3 rounds): extra latency median ${wmed:-?} ms, max ${wmax:-?} ms   (goal <= 100 ms; each polls 2..40 ms apart)
failover: node killed -9, its gateway answered again after ${fo_ms} ms   (goal <= 5000 ms)
OUT
