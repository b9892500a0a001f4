#!/bin/bash
# make bench: idemgate side by side with fcgiwrap (and a bare libfcgi
# responder) behind one lighttpd, driven by wrk on loopback, in one run.
# Prints requests/s and ratios; not a timed test.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
B=${IDEM_BUILD:-build}
DUR=${BENCH_SECONDS:-5}
CONN=${BENCH_CONNECTIONS:-16}
ROWS=${BENCH_ROWS:-1000000}
make -s tests >/dev/null || { echo "bench: build failed" >&2; exit 1; }

TESTROOT=$(mktemp -d /tmp/idemgate-bench.XXXXXX)
export TESTROOT
# a production-sized buffer pool: the table holds a million rows
export MDB_BUFFER_POOL=${MDB_BUFFER_POOL:-1G}
# durable commits, as a payment store runs (MDB_FLUSH=2: relaxed, labelled)
export MDB_FLUSH=${MDB_FLUSH:-1}
if [ "$MDB_FLUSH" = 1 ]; then
	durability="durable commits (innodb_flush_log_at_trx_commit = 1)"
else
	durability="RELAXED durability (innodb_flush_log_at_trx_commit = $MDB_FLUSH)"
fi
. tests/lib/mariadb.sh
pids=()
MAIN_PID=$BASHPID
cleanup() {
	# background subshells inherit the trap: only the bench itself cleans up
	[ "$BASHPID" = "$MAIN_PID" ] || return 0
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${fw_pgid:-}" ] && kill -- -"$fw_pgid" 2>/dev/null
	pkill -f "$TESTROOT/" 2>/dev/null
	# idemgate drains in-flight requests on SIGTERM: give it time to
	local alive
	for _ in $(seq 1 100); do
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	pkill -9 -f "$TESTROOT/" 2>/dev/null
	mariadb_cleanup
	rm -rf "$TESTROOT"
}
trap cleanup EXIT INT TERM

say() { printf '%s\n' "$*" >&2; }
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
CLK=$(getconf CLK_TCK)
# ticks FIELDS PID...: the sum of those fields of /proc/PID/stat (14,15 the
# process's own user+system time, 16,17 its reaped children's), in ticks
ticks() {
	local f=$1 pid files=()
	shift
	for pid in "$@"; do
		[ -r "/proc/$pid/stat" ] && files+=("/proc/$pid/stat")
	done
	[ ${#files[@]} -gt 0 ] || { echo 0; return; }
	# the name in parentheses may hold spaces: count fields after it
	sed 's/^.*) //' "${files[@]}" 2>/dev/null | awk -v f="$f" '
		BEGIN { n = split(f, a, ",") }
		{ for (i = 1; i <= n; i++) t += $(a[i] - 2) }
		END { print t + 0 }'
}
# cpu_now: "mariadbd idemgate fcgiwrap cgi app lighttpd" in ticks; cgi is
# what the gateways' reaped children (the CGI programs) used
cpu_now() {
	local gw fw
	gw=$(pgrep -f "$B/idemgate -c $TESTROOT/idemgate.conf" | tr '\n' ' ')
	fw=$(pgrep -f "$TESTROOT/fcgiwrap.sock|/usr/sbin/fcgiwrap" | tr '\n' ' ')
	# shellcheck disable=SC2086
	echo "$(ticks 14,15 "$(cat "$MDB_DIR/mariadb.pid")")" \
	    "$(ticks 14,15 $gw)" "$(ticks 14,15 $fw)" \
	    "$(ticks 16,17 $gw $fw)" \
	    "$(ticks 14,15 $(pgrep -f "$TESTROOT/fcgi_app" | tr '\n' ' '))" \
	    "$(ticks 14,15 "$(cat "$TESTROOT/lighttpd.pid")")"
}
# wrk_run URL SCRIPT [ARGS]: prints "rps p99ms non2xx"; $SECS overrides
# $DUR.  With CPU=LABEL, appends "LABEL requests rps" and the CPU ticks each
# process used during the run (cpu_now's order, then wrk's) to cpu.tsv.
wrk_run() {
	local url=$1 script=$2; shift 2
	local out before after
	[ -n "${CPU:-}" ] && before=$(cpu_now)
	# "times" last: the CPU of the one child this subshell had, wrk
	out=$({ wrk -t2 -c"$CONN" -d"${SECS:-$DUR}s" --latency -s "$script" \
	    "$url" -- "$@" 2>&1; times; })
	if [ -n "${CPU:-}" ]; then
		after=$(cpu_now)
		local n wrk_cpu
		n=$(echo "$out" | awk '/requests in/ { print $1 }')
		wrk_cpu=$(echo "$out" | tail -n 1 | awk -v clk="$CLK" '{
			for (i = 1; i <= 2; i++) {
				split($i, m, "m"); sub(/s$/, "", m[2])
				t += m[1] * 60 + m[2]
			}
			printf "%d", t * clk + 0.5 }')
		echo "$CPU ${n:-0} $before $after $wrk_cpu" >>"$TESTROOT/cpu.tsv"
	fi
	out=$(echo "$out" | head -n -2)
	echo "$out" >>"$TESTROOT/wrk.log"
	local rps p99 non2xx
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	p99=$(echo "$out" | awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; print v}')
	non2xx=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
	echo "${rps:-0} ${p99:-0} ${non2xx:-0}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# cpu_table: CPU microseconds per request by process, from cpu.tsv
cpu_table() {
	echo
	echo "CPU us per request by process (utime+stime from /proc/PID/stat around each wrk run; cgi = idemgate's CGI children; fcgiwrap's are reaped unseen, in no column)"
	printf '%-14s %9s %9s %9s %9s %9s %9s %9s %9s\n' path req/s mariadbd \
	    idemgate fcgiwrap cgi app lighttpd wrk
	awk -v clk="$CLK" -v d="${DUR}" '{
		n = $2; if (n <= 0) next
		printf "%-14s %9.0f", $1, n / d
		for (i = 0; i < 6; i++)
			printf " %9.0f", ($(9 + i) - $(3 + i)) * 1e6 / clk / n
		printf " %9.0f\n", $15 * 1e6 / clk / n
	}' "$TESTROOT/cpu.tsv"
}

# mariadbd_per LABEL: mariadbd's CPU µs per request in cpu.tsv's LABEL run
mariadbd_per() {
	awk -v l="$1" -v clk="$CLK" '$1 == l && $2 > 0 {
		printf "%.0f", ($9 - $3) * 1e6 / clk / $2 }' "$TESTROOT/cpu.tsv"
}
# floor_line: what mariadbd spends on a fresh key's claim and completion
# sent by stock clients (bench/floor.sh), against what it spent per fresh
# key through the gateway in the fresh-app run: the store's share of a
# fresh key that no gateway change can take away.
floor_line() {
	local floor do1 gw
	read -r floor do1 < <(bench/floor.sh "$MDB_SOCK" \
	    "$(cat "$MDB_DIR/mariadb.pid")" bench 1000 4)
	gw=$(mariadbd_per fresh-app)
	echo "store floor: claim + completion from 4 stock clients: mariadbd ${floor} us a key (DO 1: ${do1} us a statement); through idemgate: ${gw:-n/a} us   ratio $(ratio "${gw:-0}" "$floor")x"
}


say "bench: starting MariaDB, fcgiwrap, a bare libfcgi app, idemgate and lighttpd"
mariadb_init >/dev/null || exit 1
mariadb_newdb bench || exit 1
mariadb_newdb benchsmall || exit 1
mariadb_newdb benchseal || exit 1

W=$TESTROOT/www
mkdir -p "$W/fw" "$TESTROOT/cgi"
cp "$B/tests/it/hello_cgi" "$W/fw/hello.cgi"
cp "$B/tests/it/hello_cgi" "$TESTROOT/cgi/hello.cgi"
cp bench/slow.cgi "$TESTROOT/cgi/slow.cgi"
# run from TESTROOT, so the pkill in cleanup finds spawn-fcgi's children
cp "$B/tests/it/fcgi_app" "$TESTROOT/fcgi_app"

cat >"$TESTROOT/idemgate.conf" <<CONF
[gateway]
listen = unix:$TESTROOT/idemgate.sock
workers = 2
threads = 32
mysql_defaults_file = $TESTROOT/bench.cnf

[idempotency]
wait = 10s

[route /ig/hello]
handler = cgi:$TESTROOT/cgi/hello.cgi

[route /ig/slow]
handler = cgi:$TESTROOT/cgi/slow.cgi

[route /ig/app]
handler = fastcgi:unix:$TESTROOT/app.sock

[route /ig/quota]
handler = cgi:$TESTROOT/cgi/hello.cgi
new_keys_per_minute = 1000000
CONF
"$B/idemctl" -c "$TESTROOT/idemgate.conf" migrate >/dev/null || { say "bench: migrate failed"; exit 1; }
"$B/idemgate" -c "$TESTROOT/idemgate.conf" 2>"$TESTROOT/idemgate.log" &
gw_pid=$!
pids+=($gw_pid)
# the same gateway without its replay cache: every replay reads MySQL
sed -e "s|idemgate.sock|nocache.sock|" -e "s|^threads = 32|&\nreplay_cache = 0|" \
	-e "s|/ig/|/nc/|" "$TESTROOT/idemgate.conf" >"$TESTROOT/nocache.conf"
"$B/idemgate" -c "$TESTROOT/nocache.conf" 2>"$TESTROOT/nocache.log" &
pids+=($!)
# and one on a database of its own that stays small, for the big-table ratio
sed -e "s|idemgate.sock|small.sock|" -e "s|bench.cnf|benchsmall.cnf|" \
	-e "s|/ig/|/sm/|" "$TESTROOT/idemgate.conf" >"$TESTROOT/small.conf"
"$B/idemctl" -c "$TESTROOT/small.conf" migrate >/dev/null || { say "bench: migrate failed"; exit 1; }
"$B/idemgate" -c "$TESTROOT/small.conf" 2>"$TESTROOT/small.log" &
pids+=($!)
# the small one sealing what it stores (secret_key_file), with and without
# its replay cache, against the same in clear: a keyed store hashes keys
# under its own hashing key, so the sealed pair has a small database of
# its own, and the clear pair for it is the small one (and /sc/, the same
# without its replay cache)
printf 'k1 %s\n' "$(openssl rand -hex 32)" >"$TESTROOT/bench.keys"
chmod 0600 "$TESTROOT/bench.keys"
sed -e "s|small.sock|smallnc.sock|" -e "s|^threads = 32|&\nreplay_cache = 0|" \
	-e "s|/sm/|/sc/|" "$TESTROOT/small.conf" >"$TESTROOT/smallnc.conf"
for v in sealed:se sealednc:sn; do
	sed -e "s|small.sock|${v%%:*}.sock|" -e "s|/sm/|/${v#*:}/|" \
	    -e "s|benchsmall.cnf|benchseal.cnf|" \
	    -e "s|^threads = 32|&\nsecret_key_file = $TESTROOT/bench.keys|" \
	    "$TESTROOT/small.conf" >"$TESTROOT/${v%%:*}.conf"
done
sed -i "s|^threads = 32|&\nreplay_cache = 0|" "$TESTROOT/sealednc.conf"
"$B/idemctl" -c "$TESTROOT/sealed.conf" migrate >/dev/null || { say "bench: migrate failed"; exit 1; }
for v in smallnc sealed sealednc; do
	"$B/idemgate" -c "$TESTROOT/$v.conf" 2>"$TESTROOT/$v.log" &
	pids+=($!)
done
# fcgiwrap -c signals its whole process group when a child exits: give it
# a session of its own so that signal cannot reach this script.
setsid spawn-fcgi -n -s "$TESTROOT/fcgiwrap.sock" -M 0660 -- /usr/sbin/fcgiwrap -c 16 >/dev/null 2>&1 &
fw_pgid=$!	# a session and process group of its own: its children too
pids+=($!)
spawn-fcgi -F 2 -s "$TESTROOT/app.sock" -M 0660 -- "$TESTROOT/fcgi_app" >/dev/null 2>&1
PORT=$(free_port)
cat >"$TESTROOT/lighttpd.conf" <<CONF
server.modules = ("mod_fastcgi")
server.bind = "127.0.0.1"
server.port = $PORT
server.document-root = "$W"
server.pid-file = "$TESTROOT/lighttpd.pid"
server.errorlog = "$TESTROOT/lighttpd.log"
server.max-connections = 1024
fastcgi.server = (
	"/fw/" => (( "socket" => "$TESTROOT/fcgiwrap.sock", "check-local" => "disable" )),
	"/ig/" => (( "socket" => "$TESTROOT/idemgate.sock", "check-local" => "disable" )),
	"/app/" => (( "socket" => "$TESTROOT/app.sock", "check-local" => "disable" )),
	"/nc/" => (( "socket" => "$TESTROOT/nocache.sock", "check-local" => "disable" )),
	"/sm/" => (( "socket" => "$TESTROOT/small.sock", "check-local" => "disable" )),
	"/sc/" => (( "socket" => "$TESTROOT/smallnc.sock", "check-local" => "disable" )),
	"/se/" => (( "socket" => "$TESTROOT/sealed.sock", "check-local" => "disable" )),
	"/sn/" => (( "socket" => "$TESTROOT/sealednc.sock", "check-local" => "disable" )),
)
CONF
for _ in $(seq 1 100); do [ -S "$TESTROOT/idemgate.sock" ] && [ -S "$TESTROOT/nocache.sock" ] && [ -S "$TESTROOT/small.sock" ] && [ -S "$TESTROOT/smallnc.sock" ] && [ -S "$TESTROOT/sealed.sock" ] && [ -S "$TESTROOT/sealednc.sock" ] && [ -S "$TESTROOT/fcgiwrap.sock" ] && break; sleep 0.1; done
lighttpd -D -f "$TESTROOT/lighttpd.conf" &
pids+=($!)
U=http://127.0.0.1:$PORT
for _ in $(seq 1 100); do curl -fs -o /dev/null "$U/fw/hello.cgi" && break; sleep 0.1; done
for path in /fw/hello.cgi /ig/hello /ig/app /nc/hello /sm/hello /sc/hello /se/hello /sn/hello /app/; do
	code=$(curl -s -o /dev/null -w '%{http_code}' "$U$path")
	[ "$code" = 200 ] || { say "bench: $path answered $code"; exit 1; }
done

rss_sample() {	# total and largest RSS (KiB) of idemgate processes
	local pids_gw
	pids_gw=$(pgrep -f "$B/idemgate -c $TESTROOT/idemgate.conf" | tr '\n' ' ')
	# shellcheck disable=SC2086
	ps -o rss= -p ${pids_gw:-0} 2>/dev/null | awk '{t+=$1; if ($1>m) m=$1} END {print t+0, m+0}'
}

say "bench: $DUR s per run, wrk -t2 -c$CONN, loopback, 2 cores shared by everything"
# Sealed at rest against in clear: the same gateway with secret_key_file,
# in alternating runs (fresh keys; replays with and without the cache, the
# latter opening the row each time).  BENCH_KEY=0 skips it; BENCH_ONLY=seal
# runs it alone.
avg3() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a + b / 3 }'; }
clear_fresh=0 seal_fresh=0 clear_rep=0 seal_rep=0 clear_nc=0 seal_nc=0
seal_bad=0
seal_runs() {
	[ "${BENCH_KEY:-1}" != 0 ] || return 0
	for p in sm sc se sn; do
		curl -s -o /dev/null -X POST -H "Idempotency-Key: bench-replay-$p" \
		    -H 'Content-Type: application/x-www-form-urlencoded' \
		    -d amount=4200 "$U/$p/hello"
	done
	for i in 1 2 3; do
		read -r r _ < <(wrk_run "$U/sm/hello" bench/fresh.lua "clr$$-$i")
		clear_fresh=$(avg3 "$clear_fresh" "$r")
		read -r r _ b < <(wrk_run "$U/se/hello" bench/fresh.lua "sea$$-$i")
		seal_fresh=$(avg3 "$seal_fresh" "$r") seal_bad=$((seal_bad + b))
		read -r r _ < <(wrk_run "$U/sm/hello" bench/replay.lua bench-replay-sm)
		clear_rep=$(avg3 "$clear_rep" "$r")
		read -r r _ b < <(wrk_run "$U/se/hello" bench/replay.lua bench-replay-se)
		seal_rep=$(avg3 "$seal_rep" "$r") seal_bad=$((seal_bad + b))
		read -r r _ < <(wrk_run "$U/sc/hello" bench/replay.lua bench-replay-sc)
		clear_nc=$(avg3 "$clear_nc" "$r")
		read -r r _ b < <(wrk_run "$U/sn/hello" bench/replay.lua bench-replay-sn)
		seal_nc=$(avg3 "$seal_nc" "$r") seal_bad=$((seal_bad + b))
	done
}
seal_lines() {
	cat <<SEAL
sealed at rest (secret_key_file: AES-256-GCM answers, keyed hashes) vs in clear, small databases, 3 alternating runs each (goal >= 0.95; non-2xx: ${seal_bad}):
  fresh keys           clear ${clear_fresh} req/s   sealed ${seal_fresh} req/s   ratio $(ratio "$seal_fresh" "$clear_fresh")x
  replays, cache       clear ${clear_rep} req/s   sealed ${seal_rep} req/s   ratio $(ratio "$seal_rep" "$clear_rep")x
  replays, no cache    clear ${clear_nc} req/s   sealed ${seal_nc} req/s   ratio $(ratio "$seal_nc" "$clear_nc")x   (each replay opens the row)
SEAL
}
# BENCH_ONLY=seal: the sealed-at-rest section alone.
if [ "${BENCH_ONLY:-}" = seal ]; then
	seal_runs
	seal_lines
	exit 0
fi
# Parked waiters: 10x the main gateway's threads (2 workers x 32) wait on
# one key whose handler takes 3 s while fresh keys go to the hello CGI:
# their latency then against alone (bench/parked.py).
park_run() {
	read -r park_alone park_med park_max < <(python3 bench/parked.py \
	    "$U/ig/slow?s=3" "$U/ig/hello" 640)
}
park_line() {
	echo "parked waiters (640 = 10x threads, one 3 s key): an unrelated fresh key ${park_med} ms (max ${park_max}) vs ${park_alone} ms alone   (goal <= alone + 50 ms)"
}
# BENCH_ONLY=park: that alone.
if [ "${BENCH_ONLY:-}" = park ]; then
	park_run
	park_line
	exit 0
fi
# BENCH_ONLY=replay: the bare responder and cached replays alone, with
# their CPU table (comparing two builds' replay path in a quick loop).
if [ "${BENCH_ONLY:-}" = replay ]; then
	curl -s -o /dev/null -X POST -H 'Idempotency-Key: bench-replay-key' \
	    -H 'Content-Type: application/x-www-form-urlencoded' \
	    -d amount=4200 "$U/ig/hello"
	read -r app_get _ < <(CPU="hello" wrk_run "$U/app/" /dev/null)
	read -r ig_replay _ ig_replay_bad < <(CPU="replay" \
	    wrk_run "$U/ig/hello" bench/replay.lua)
	echo "replays, one key       libfcgi hello ${app_get} req/s   idemgate ${ig_replay} req/s   ratio $(ratio "$ig_replay" "$app_get")x   (goal >= 1.15; non-2xx: ${ig_replay_bad})"
	cpu_table
	exit 0
fi
# BENCH_ONLY=app: fresh keys to the bare libfcgi app direct and through
# idemgate, with their CPU table (comparing two builds' fresh path).
if [ "${BENCH_ONLY:-}" = app ]; then
	read -r app_post _ _ < <(CPU="app-direct" \
	    wrk_run "$U/app/" bench/fresh.lua "direct$$")
	read -r ig_app _ ig_app_bad < <(CPU="fresh-app" \
	    wrk_run "$U/ig/app" bench/fresh.lua "app$$")
	echo "fresh keys, FastCGI app  app direct ${app_post} req/s   idemgate -> app ${ig_app} req/s   ratio $(ratio "$ig_app" "$app_post")x   (goal >= 0.30; non-2xx: ${ig_app_bad})"
	floor_line
	cpu_table
	exit 0
fi
# BENCH_ONLY=cgi: fresh keys in front of the C CGI against fcgiwrap's
# POSTs, three alternating pairs (the noise shows), with their CPU table.
if [ "${BENCH_ONLY:-}" = cgi ]; then
	for r in 1 2 3; do
		read -r fw_post _ _ < <(CPU="fcgiwrap-cgi" \
		    wrk_run "$U/fw/hello.cgi" bench/post.lua)
		read -r ig_fresh _ ig_fresh_bad < <(CPU="fresh-cgi" \
		    wrk_run "$U/ig/hello" bench/fresh.lua "cgi$r$$")
		echo "fresh keys, POST ($r)   fcgiwrap ${fw_post} req/s   idemgate ${ig_fresh} req/s   ratio $(ratio "$ig_fresh" "$fw_post")x   (goal >= 1.0, never < 0.9; non-2xx: ${ig_fresh_bad})"
	done
	cpu_table
	exit 0
fi
read -r fw_get fw_get99 _ < <(wrk_run "$U/fw/hello.cgi" /dev/null)
read -r ig_get ig_get99 _ < <(wrk_run "$U/ig/hello" /dev/null)
read -r fw_post fw_post99 _ < <(CPU="fcgiwrap-cgi" wrk_run "$U/fw/hello.cgi" bench/post.lua)
( sleep $((DUR / 2)); rss_sample >"$TESTROOT/rss" ) &
rss_pid=$!
read -r ig_fresh ig_fresh99 ig_fresh_bad < <(CPU="fresh-cgi" wrk_run "$U/ig/hello" bench/fresh.lua "empty$$")
wait "$rss_pid"
read -r rss_total rss_max <"$TESTROOT/rss"
read -r app_get app_get99 _ < <(CPU="hello" wrk_run "$U/app/" /dev/null)
# a fast FastCGI app: POSTs with fresh keys to it direct, then through idemgate
read -r app_post _ _ < <(CPU="app-direct" wrk_run "$U/app/" bench/fresh.lua "direct$$")
read -r ig_app ig_app99 ig_app_bad < <(CPU="fresh-app" wrk_run "$U/ig/app" bench/fresh.lua "app$$")
floor=$(floor_line)
# the same fresh keys on a route with a (never reached) new_keys_per_minute
read -r ig_quota _ ig_quota_bad < <(wrk_run "$U/ig/quota" bench/fresh.lua "quota$$")
curl -s -o /dev/null -X POST -H 'Idempotency-Key: bench-replay-key' -H 'Content-Type: application/x-www-form-urlencoded' -d amount=4200 "$U/ig/hello"
read -r ig_replay ig_replay99 ig_replay_bad < <(CPU="replay" wrk_run "$U/ig/hello" bench/replay.lua)
curl -s -o /dev/null -X POST -H 'Idempotency-Key: bench-replay-nc' -H 'Content-Type: application/x-www-form-urlencoded' -d amount=4200 "$U/nc/hello"
read -r nc_replay nc_replay99 nc_replay_bad < <(wrk_run "$U/nc/hello" bench/replay.lua bench-replay-nc)

seal_runs

# Waiters: an owner runs a 300 ms handler; 8 retries arrive 50 ms later and
# wait.  Extra latency = when each waiter got its answer - when the owner
# did, timed in one process (bench/waiters.py), over 3 rounds.
read -r wait_med wait_max < <(python3 bench/waiters.py "$U/ig/slow" 8 3)
park_run

# Jobs: idemctl run -- /bin/true with fresh keys against plain /bin/true
# (the process start cost), and replays of one key; JOBS runs each, one
# after another, timed in this shell.
JOBS=${BENCH_JOBS:-300}
jobs_per_s() { awk -v n="$JOBS" -v ns="$1" 'BEGIN { printf "%.0f", n * 1e9 / ns }'; }
t0=$(date +%s%N)
for i in $(seq 1 "$JOBS"); do /bin/true </dev/null; done
true_ns=$(($(date +%s%N) - t0))
t0=$(date +%s%N)
for i in $(seq 1 "$JOBS"); do
	"$B/idemctl" -c "$TESTROOT/idemgate.conf" run --key "job$$-$i" -- /bin/true </dev/null
done
run_ns=$(($(date +%s%N) - t0))
"$B/idemctl" -c "$TESTROOT/idemgate.conf" run --key "jobreplay$$" -- /bin/true </dev/null
t0=$(date +%s%N)
for i in $(seq 1 "$JOBS"); do
	"$B/idemctl" -c "$TESTROOT/idemgate.conf" run --key "jobreplay$$" -- /bin/true </dev/null
done
replay_ns=$(($(date +%s%N) - t0))
# the floor of any process that connects: the stock client's SELECT 1
t0=$(date +%s%N)
for i in $(seq 1 "$JOBS"); do mariadb_sql "SELECT 1" >/dev/null; done
client_ns=$(($(date +%s%N) - t0))

# seed EXPIRES-SQL: ROWS completed keys named seed-N
seed() {
	mariadb_sql "DELETE FROM bench.idem_keys WHERE idem_key LIKE 'seed-%';
INSERT INTO bench.idem_keys (scope, idem_key, route, method, fingerprint, state, owner, owner_token,
  created_at, lease_until, expires_at, completed_at, resp_status, resp_headers, resp_body, resp_size)
SELECT UNHEX(SHA2('none',256)), CONCAT('seed-', seq), '/ig/hello', 'POST', UNHEX(SHA2(seq,256)), 1, 'seed:1', seq,
  NOW(6), NOW(6), $1, NOW(6), 200, 'Content-Type: text/plain\r\n', 'hello\n', 6
FROM seq_1_to_$ROWS;" || say "bench: seeding failed"
	# let InnoDB's background purge and flushing of the seed settle first
	sleep 10
}
# cleanup_run: runs idemctl cleanup, writes "exit ms deleted" to cleanup.t
cleanup_run() {
	local s left
	s=$(date +%s%N)
	"$B/idemctl" -c "$TESTROOT/idemgate.conf" cleanup --batch 1000 >"$TESTROOT/cleanup.out" 2>&1
	local rc=$? ms=$(( ($(date +%s%N) - s) / 1000000 ))
	left=$(mariadb_sql "SELECT COUNT(*) FROM bench.idem_keys WHERE idem_key LIKE 'seed-%'")
	echo "$rc $ms $((ROWS - left))" >"$TESTROOT/cleanup.t"
}

# Cleanup speed on its own: ROWS expired rows, no traffic.
say "bench: cleanup of $ROWS expired rows"
seed "NOW(6) - INTERVAL 1 HOUR"
cleanup_run
read -r cl_rc cl_ms deleted <"$TESTROOT/cleanup.t"

# Live traffic during a cleanup: compare its p99 with the run below.
say "bench: fresh traffic during a cleanup of $ROWS rows"
seed "NOW(6) - INTERVAL 1 HOUR"
cleanup_run &
cl_pid=$!
read -r ig_during ig_during99 _ < <(SECS=$((DUR * 3)) wrk_run "$U/ig/hello" bench/fresh.lua "during$$")
wait "$cl_pid"
read -r cl2_rc cl2_ms deleted2 <"$TESTROOT/cleanup.t"

# A big table: ROWS completed keys that expire tomorrow, then fresh again.
# Last: deleting live rows (here, before the cleanup runs) would bump the
# replay-cache epoch once per row and leave InnoDB a long purge.
say "bench: seeding $ROWS rows"
seed "NOW(6) + INTERVAL 1 DAY"
# Three times as long as the other runs: this p99 is the baseline for the
# run during cleanup above, which covers most of the cleanup's duration.
read -r _ ig_fresh_big99 _ < <(SECS=$((DUR * 3)) wrk_run "$U/ig/hello" bench/fresh.lua "big$$")
# Throughput: the big table against a small one on the other database, in
# alternating runs, so the machine's drift over the bench hits both alike.
ig_fresh_big=0 ig_fresh_small=0
for i in 1 2 3; do
	read -r r _ < <(wrk_run "$U/sm/hello" bench/fresh.lua "small$$-$i")
	ig_fresh_small=$(awk -v a="$ig_fresh_small" -v b="$r" 'BEGIN { printf "%.2f", a + b / 3 }')
	read -r r _ < <(wrk_run "$U/ig/hello" bench/fresh.lua "bigalt$$-$i")
	ig_fresh_big=$(awk -v a="$ig_fresh_big" -v b="$r" 'BEGIN { printf "%.2f", a + b / 3 }')
done
small_rows=$(mariadb_sql "SELECT COUNT(*) FROM benchsmall.idem_keys")

cat <<OUT

idemgate bench  (wrk -t2 -c$CONN -d${DUR}s through one lighttpd on 127.0.0.1; same C CGI)
MariaDB: ${durability}
-------------------------------------------------------------------------------------------
no key, GET            fcgiwrap ${fw_get} req/s   idemgate ${ig_get} req/s   ratio $(ratio "$ig_get" "$fw_get")x   (goal >= 1.0)
fresh keys, POST       fcgiwrap ${fw_post} req/s   idemgate ${ig_fresh} req/s   ratio $(ratio "$ig_fresh" "$fw_post")x   (goal >= 1.0, never < 0.9; non-2xx: ${ig_fresh_bad})
fresh keys, quota on   idemgate ${ig_quota} req/s vs without ${ig_fresh} req/s   ratio $(ratio "$ig_quota" "$ig_fresh")x   (new_keys_per_minute counted; goal >= 0.9; non-2xx: ${ig_quota_bad})
fresh keys, FastCGI app  app direct ${app_post} req/s   idemgate -> app ${ig_app} req/s   ratio $(ratio "$ig_app" "$app_post")x   (goal >= 0.30; non-2xx: ${ig_app_bad})
$floor
replays, one key       libfcgi hello ${app_get} req/s   idemgate ${ig_replay} req/s   ratio $(ratio "$ig_replay" "$app_get")x   (goal >= 1.15; non-2xx: ${ig_replay_bad})
  without replay_cache  libfcgi hello ${app_get} req/s   idemgate ${nc_replay} req/s   ratio $(ratio "$nc_replay" "$app_get")x   (every replay reads MySQL; non-2xx: ${nc_replay_bad})
fresh, ${ROWS} rows    ${ig_fresh_big} req/s vs ${small_rows} rows ${ig_fresh_small} req/s   ratio $(ratio "$ig_fresh_big" "$ig_fresh_small")x   (3 alternating runs each; goal >= 0.9)
waiters (8 on a 300 ms owner, 3 rounds): extra latency after the owner finished: median ${wait_med} ms, max ${wait_max} ms   (goal <= 50 ms)
$(park_line)
jobs, fresh keys       /bin/true $(jobs_per_s "$true_ns") /s   idemctl run -- /bin/true $(jobs_per_s "$run_ns") /s   ratio $(ratio "$true_ns" "$run_ns")x   (${JOBS} in a row)
jobs, replays          idemctl run of one key $(awk -v n="$JOBS" -v ns="$replay_ns" 'BEGIN { printf "%.2f", ns / n / 1e6 }') ms each, end to end; mariadb -e 'SELECT 1' $(awk -v n="$JOBS" -v ns="$client_ns" 'BEGIN { printf "%.2f", ns / n / 1e6 }') ms   ratio $(ratio "$client_ns" "$replay_ns")x   (goal < 5 ms)
RSS under fresh load, 2 workers x 32 threads: largest process $((rss_max / 1024)) MiB, all idemgate processes $((rss_total / 1024)) MiB   (goal <= 64 MiB)
cleanup of ${deleted} expired rows, no traffic: ${cl_ms} ms (exit ${cl_rc}) = $(awk -v r="$deleted" -v m="$cl_ms" 'BEGIN { if (m > 0) printf "%d", r * 1000 / m; else print "n/a" }') rows/s   (goal >= 50000)
cleanup of ${deleted2} expired rows under fresh traffic: ${cl2_ms} ms (exit ${cl2_rc}) = $(awk -v r="$deleted2" -v m="$cl2_ms" 'BEGIN { if (m > 0) printf "%d", r * 1000 / m; else print "n/a" }') rows/s
fresh p99 during cleanup ${ig_during99} ms vs without ${ig_fresh_big99} ms ($((DUR * 3)) s runs)   ratio $(ratio "$ig_during99" "$ig_fresh_big99")x   (goal <= 2.0)
$(seal_lines)
p99 latencies (ms): fcgiwrap GET ${fw_get99}, idemgate GET ${ig_get99}, fcgiwrap POST ${fw_post99}, idemgate fresh ${ig_fresh99}, idemgate -> app ${ig_app99}, replay ${ig_replay99}, replay without cache ${nc_replay99}
OUT
cpu_table

# The cluster section: its own servers, the single server's figures above
# to compare with (fresh keys and replays, req/s).  BENCH_CLUSTER=0 skips
# it (comparing two builds on one server).
[ "${BENCH_CLUSTER:-1}" = 0 ] ||
	bash bench/cluster.sh "$ig_fresh" "$ig_replay" 2>"$TESTROOT/cluster.log" ||
	echo "cluster: failed (log: $TESTROOT/cluster.log)"
