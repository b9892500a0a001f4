#!/bin/bash
# Waiters parked without a thread: 10x threads waiters on a slow key hold
# no request thread, an unrelated key is served meanwhile, and waiters are
# woken when the owner is done: in the same worker, in another worker, or
# in another gateway (polled); past wait they get 409, and a stopping
# gateway answers them.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
FAST=$(cgi_install fast)
SW=$(cgi_install sw)
TWO=$(cgi_install two)
db_new "$TNAME" || { done_testing; exit 1; }
ROUTES="[route /payments]
handler = cgi:$PAY
wait = 30s

[route /fast]
handler = cgi:$FAST

[route /short]
handler = cgi:$SW
wait = 1s

[route /two]
handler = cgi:$TWO
wait = 30s"
# park_conf NAME WORKERS THREADS [SETTING...]: a gateway on the one database
park_conf() {
	local n=$1 w=$2 t=$3
	shift 3
	gw_conf "$T/$n.conf" "unix:$T/$n.sock" "$DBCNF" "workers = $w" \
		"threads = $t" "status_path = /idemgate-status" "$@"
	printf '\n%s\n' "$ROUTES" >>"$T/$n.conf"
}
# One worker of 4 threads: 40 waiters are 10x its threads.  gw2: two
# workers of 2.
# nginx's workers (run as www-data) reach gw too.
park_conf gw 1 4 "socket_owner = root:www-data"
park_conf gw2 2 2
# gw3: one worker whose parked bodies may hold 1 MiB.
park_conf gw3 1 2 "max_pending_body = 1M"
for g in gw gw2 gw3; do
	gw_start $g "$T/$g.conf" || { done_testing; exit 1; }
done
lighttpd_start web "unix:$T/gw.sock"
lighttpd_start web2 "unix:$T/gw2.sock"
lighttpd_start web3 "unix:$T/gw3.sock"

# status_json WEB FIELD: the total's FIELD on WEB's status page
status_json() {
	curl -sS --max-time 5 "$(url "$1" '/idemgate-status?json')" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["total"][sys.argv[1]])' "$2" 2>/dev/null
}
parked_at_least() { [ "$(status_json "$1" parked)" -ge "$2" ] 2>/dev/null; }
waiters_col() { db_query "$TNAME" "SELECT waiters FROM idem_keys WHERE idem_key = '$1'"; }
started() { [ "$(runs "$1")" -ge "$2" ]; }

# The unrelated request's own time, with nothing else going on.
base=0
for i in 1 2 3; do
	t0=$(now_ms)
	http b$i POST "$(url web /fast)" -H "Idempotency-Key: $(new_key)" --data-binary 'b'
	dt=$(($(now_ms) - t0))
	[ "$dt" -gt "$base" ] && base=$dt
done
expect_eq "baseline: fresh key 201" 201 "$HS"
echo "# unrelated fresh key alone: ${base} ms"

# waiters_py OUT URL N [WAITER-URLS]: bench/waiters.py in the background:
# one owner and N waiters of one new key, timed in one process; OUT gets
# "median max" ms after the owner's answer.
waiters_py() {
	python3 "$IDEM_ROOT/bench/waiters.py" "$2" "$3" 1 ${4:+"$4"} >"$T/$1.out" 2>&1 &
	H_BGREQ+=($!)
}
# check_wake NAME OUT MEDIAN MAX: the waiters' extra latency, in ms
check_wake() {
	local med max
	read -r med max <"$T/$2.out" 2>/dev/null
	echo "# $1: waiters answered ${med:-?} ms (median), ${max:-?} ms (last) after the owner"
	# waiters.py prints its figures only when every request got a 2xx;
	# one may be negative: a waiter in another worker, woken once the
	# answer is recorded, can be answered before the owner's own client.
	expect_match "$1: every waiter got a 2xx" '^-?[0-9]+ -?[0-9]+$' "$(cat "$T/$2.out")"
	expect_lt "$1: median under $3 ms" "${med:-99999}" "$3"
	expect_lt "$1: last under $4 ms" "${max:-99999}" "$4"
}
most_waiters() { db_query "$TNAME" "SELECT COALESCE(MAX(waiters), 0) FROM idem_keys"; }

# --- 40 waiters (10x threads) on one key whose handler takes 3 s.
t_own=$(now_ms)
waiters_py w40 "$(url web /payments?sleep=3000)" 40
# Once they have come (the handler has about 2 s to go).
wait_until 2 parked_at_least web 40 || true
t0=$(now_ms)
http u1 POST "$(url web /fast)" -H "Idempotency-Key: $(new_key)" --data-binary 'u'
dt=$(($(now_ms) - t0))
echo "# unrelated fresh key with 40 waiters: ${dt} ms (alone: ${base} ms)"
expect_eq "unrelated key answered while waiters park" 201 "$HS"
expect_eq "unrelated key ran its handler" created "$(hdr u1 Idempotency-Result)"
expect_lt "unrelated key within 500 ms of its time alone" "$dt" $((base + 500))
expect_lt "unrelated key answered before the owner could finish" "$(now_ms)" $((t_own + 3000))
if parked_at_least web 40; then ok "40 waiters parked"; else
	not_ok "40 waiters parked" "status page: parked $(status_json web parked), busy $(status_json web busy)"; fi
# Read while the owner still runs (its end wakes them, and each takes
# itself off the count): on a loaded machine the looks below take time.
mw=$(most_waiters)
# The fewest of 3 looks: a parked waiter claims again now and then.
busy=99
for i in 1 2 3; do
	b=$(status_json web busy)
	[ -n "$b" ] && [ "$b" -lt "$busy" ] && busy=$b
	sleep 0.1
done
expect_lt "waiters hold no thread: busy threads (owner + the status page)" "$busy" 3
expect_eq "waiters counted in the row's waiters column" 40 "$mw"
bg_wait
check_wake "40 waiters" w40 200 900
expect_eq "the handler ran once (its own log)" 1 "$(runs pay)"
expect_eq "waiters column back to 0" 0 "$(most_waiters)"

# --- Two workers of gw2: a waiter in another worker than the owner's is
# woken through the scoreboard.
waiters_py w12 "$(url web2 /two?sleep=2000)" 12
wait_until 10 parked_at_least web2 12 || true
per=$(curl -sS --max-time 5 "$(url web2 '/idemgate-status?json')" |
	python3 -c 'import json,sys; print(" ".join(str(w["parked"]) for w in json.load(sys.stdin)["workers"]))' 2>/dev/null)
echo "# parked per worker: $per"
bg_wait
check_wake "two workers" w12 200 900
expect_eq "two workers: the handler ran once" 1 "$(runs two)"

# --- A burst of slow requests spreads over the workers: a reader whose
# threads all have a request nudges another worker's reader, rather than
# queue the rest behind its own threads.  4 two-second requests at once
# on gw2's 2 workers x 2 threads: all end near 2 s, none at 4 s.
n0=$(runs fast)
t0=$(now_ms)
for i in 1 2 3 4; do
	http_bg burst$i POST "$(url web2 /fast?sleep=2000)" -H "Idempotency-Key: $(new_key)" --data-binary 'b'
done
bg_wait
last=0
for i in 1 2 3 4; do
	e=$(cat "$T/burst$i.end" 2>/dev/null || now_ms)
	[ $((e - t0)) -gt "$last" ] && last=$((e - t0))
done
expect_eq "a burst of 4 on 2 x 2 threads: each answered" "201 201 201 201" "$(st burst1) $(st burst2) $(st burst3) $(st burst4)"
expect_eq "... each ran once" $((n0 + 4)) "$(runs fast)"
expect_lt "... all within 3.5 s: no worker's threads queued two (ms)" "$last" 3500

# --- Another gateway: the owner on gw, waiters on gw2, which only the
# store can tell (polled).
n0=$(runs pay)
waiters_py w6 "$(url web /payments?sleep=1500)" 6 "$(url web2 /payments?sleep=1500)"
bg_wait
check_wake "another gateway" w6 200 400
expect_eq "another gateway: the handler ran once more" $((n0 + 1)) "$(runs pay)"

# --- Past wait (1 s): 409 with Retry-After, and the thread was free.
K=$(new_key)
http_bg s0 POST "$(url web /short?sleep=3000)" -H "Idempotency-Key: $K" --data-binary 's'
wait_until 5 started sw 1 || true
t0=$(now_ms)
for i in 1 2 3 4 5 6 7 8; do
	http_bg s$i POST "$(url web /short?sleep=3000)" -H "Idempotency-Key: $K" --data-binary 's'
done
wait_until 3 parked_at_least web 8 || true
http f1 POST "$(url web /fast)" -H "Idempotency-Key: $(new_key)" --data-binary 'f'
expect_eq "past wait: an unrelated key meanwhile" 201 "$HS"
# All 8 answers, not just the last sent: the gateway may answer them in
# any order.
ended8() { local i; for i in 1 2 3 4 5 6 7 8; do [ -f "$T/s$i.end" ] || return 1; done; }
wait_until 5 ended8 || true
last=$(cat "$T"/s[1-8].end 2>/dev/null | sort -n | tail -1)
dt=$((${last:-$(now_ms)} - t0))
n409=0
for i in 1 2 3 4 5 6 7 8; do
	[ "$(st s$i)" = 409 ] && grep -q 'key-in-progress' "$T/s$i.b" &&
		[ -n "$(hdr s$i Retry-After)" ] && n409=$((n409 + 1))
done
if [ "$n409" = 8 ]; then ok "past wait: 8 waiters 409 key-in-progress + Retry-After"; else
	not_ok "past wait: 8 waiters 409 key-in-progress + Retry-After" \
		"$n409 of 8; statuses: $(for i in 1 2 3 4 5 6 7 8; do printf '%s ' "$(st s$i)/$(hdr s$i Retry-After)"; done)"
fi
if [ "$dt" -ge 800 ] && [ "$dt" -lt 2500 ]; then ok "past wait: answered at about wait = 1s"; else
	not_ok "past wait: answered at about wait = 1s" "${dt} ms"; fi
expect_eq "past wait: waiters column back to 0" 0 "$(waiters_col "$K")"
bg_wait
expect_eq "past wait: the owner finished" 201 "$(st s0)"
expect_eq "past wait: the handler ran once" 1 "$(runs sw)"

# replays_once WHAT WEB PATH OWNER RETRY BODY RUNS0: the owner got 201, a
# later retry of PATH on WEB replays it byte for byte, the handler ran once.
replays_once() {
	local what=$1 web=$2 path=$3 o=$4 r=$5 body=$6 n0=$7
	expect_eq "$what: the owner 201" 201 "$(st "$o")"
	http "$r" POST "$(url "$web" "$path")" -H "Idempotency-Key: $K" \
		--data-binary "$body"
	expect_eq "$what: a later retry replays" reused "$(hdr "$r" Idempotency-Result)"
	expect_file_eq "$what: the same answer" "$T/$o.b" "$T/$r.b"
	expect_eq "$what: the handler ran once" $((n0 + 1)) "$(runs pay)"
}

# --- Clients that give up while parked: their connections are gone when
# they are woken; nothing runs again, and the gateway goes on.
K=$(new_key)
n0=$(runs pay)
http_bg g0 POST "$(url web /payments?sleep=1500)" -H "Idempotency-Key: $K" --data-binary 'g'
wait_until 5 started pay $((n0 + 1)) || true
for i in 1 2 3 4 5 6; do
	HTTP_TIMEOUT=0.5 http_bg g$i POST "$(url web /payments?sleep=1500)" -H "Idempotency-Key: $K" --data-binary 'g'
done
bg_wait
replays_once "gone clients" web /payments?sleep=1500 g0 g7 g "$n0"
expect_eq "gone clients: waiters column back to 0" 0 "$(waiters_col "$K")"
expect_eq "gone clients: nothing left parked" 0 "$(status_json web parked)"

# --- The same through nginx, which hangs up on its upstream when its
# client goes (lighttpd 1.4 keeps the connection until the answer comes):
# they leave the park and the row's waiters column at once, while the
# owner still runs.
nginx_start ngx "unix:$T/gw.sock"
K=$(new_key)
n0=$(runs pay)
http_bg n0 POST "$(url ngx /payments?sleep=5000)" -H "Idempotency-Key: $K" --data-binary 'n'
wait_until 5 started pay $((n0 + 1)) || true
t0=$(now_ms)
for i in 1 2 3 4 5 6; do
	HTTP_TIMEOUT=2.5 http_bg n$i POST "$(url ngx /payments?sleep=5000)" -H "Idempotency-Key: $K" --data-binary 'n'
done
wait_until 5 parked_at_least web 6 || true
expect_eq "hung up: 6 parked at first" 6 "$(status_json web parked)"
none_parked() { [ "$(status_json web parked)" = 0 ]; }
wait_until 3 none_parked || true
echo "# hung-up waiters left the park $(($(now_ms) - t0)) ms after they came (they gave up at 2500 ms)"
expect_eq "hung up: out of the park while the owner runs" 0 "$(status_json web parked)"
expect_eq "hung up: out of the waiters column while the owner runs" 0 "$(waiters_col "$K")"
expect_eq "hung up: the owner is still running" no \
	"$([ -e "$T/n0.st" ] && echo yes || echo no)"
bg_wait
replays_once "hung up" ngx /payments?sleep=5000 n0 n7 n "$n0"
expect_eq "hung up: the gateway logged it" 6 \
	"$(grep -c 'the web server hung up while it waited' "$T/gw.log")"

# --- Parked requests keep their bodies: past max_pending_body (1 MiB on
# gw3) a large one is answered 409 at once instead of parked.
K=$(new_key)
head -c 400000 /dev/zero | tr '\0' b >"$T/big.body"
n0=$(runs two)
http_bg m0 POST "$(url web3 /two?sleep=4000)" -H "Idempotency-Key: $K" --data-binary @"$T/big.body"
wait_until 5 started two $((n0 + 1)) || true
t0=$(now_ms)
for i in 1 2 3 4 5; do
	http_bg m$i POST "$(url web3 /two?sleep=4000)" -H "Idempotency-Key: $K" --data-binary @"$T/big.body"
	sleep 0.2
done
refused() { early=0; for i in 1 2 3 4 5; do [ "$(st m$i)" = 409 ] && early=$((early + 1)); done; [ "$early" -ge 3 ]; }
wait_until 2 refused || true
expect_eq "parked bytes: 3 of 5 large waiters answered 409 at once" 3 "$early"
expect_eq "parked bytes: 2 parked" 2 "$(status_json web3 parked)"
bg_wait
reused=0
for i in 1 2 3 4 5; do [ "$(hdr m$i Idempotency-Result)" = reused ] && reused=$((reused + 1)); done
expect_eq "parked bytes: the 2 parked replayed" 2 "$reused"
expect_eq "parked bytes: the handler ran once" $((n0 + 1)) "$(runs two)"

# --- A stopping gateway answers its parked waiters (409), and its owner
# finishes.  The owner runs 4 s: five waiters must park before it ends,
# even on a loaded machine.
K=$(new_key)
n0=$(runs pay)
http_bg z0 POST "$(url web /payments?sleep=4000)" -H "Idempotency-Key: $K" --data-binary 'z'
wait_until 5 started pay $((n0 + 1)) || true
for i in 1 2 3 4 5; do
	http_bg z$i POST "$(url web /payments?sleep=4000)" -H "Idempotency-Key: $K" --data-binary 'z'
done
wait_until 5 parked_at_least web 5 || true
kill -TERM "${GW_PID[gw]}"
t0=$(now_ms)
wait_until 5 test -f "$T/z5.end" || true
dt=$(($(cat "$T/z5.end" 2>/dev/null || now_ms) - t0))
bg_wait
n409=0
for i in 1 2 3 4 5; do [ "$(st z$i)" = 409 ] && n409=$((n409 + 1)); done
expect_eq "stopping: parked waiters answered 409" 5 "$n409"
expect_lt "stopping: at once, not after the owner (ms)" "$dt" 1500
expect_eq "stopping: the owner finished its run" 201 "$(st z0)"
expect_eq "stopping: the handler ran once" $((n0 + 1)) "$(runs pay)"
done_testing
