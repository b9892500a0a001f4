#!/bin/bash
# Supervisor: poison FastCGI record costs at most one worker, killed workers restart, SIGHUP reloads, SIGTERM drains.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
ROUTES="[route /payments]
handler = cgi:$PAY"
printf '\n%s\n' "$ROUTES" >>"$T/gw.conf"
cp "$T/gw.conf" "$T/gw.conf.orig"
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }
SUP=${GW_PID[gw]}

nworkers() { set -- $(gw_workers gw); echo $#; }
two_workers() { [ "$(nworkers)" -eq 2 ]; }
expect_eq "workers = 2 started" 2 "$(nworkers)"

# The poison record (CVE-2025-23016 in Debian's libfcgi): one worker at most.
before=$(gw_workers gw)
"$ITBIN/fcgi_poison" "unix:$T/gw.sock" >"$T/poison.out" 2>&1
expect_eq "poison record sent" 0 "$?"
sleep 0.3
check "poison: supervisor alive" alive "$SUP"
survivors=0
for p in $before; do alive "$p" && survivors=$((survivors + 1)); done
if [ "$survivors" -ge 1 ]; then ok "poison: at most one worker lost"; else
	not_ok "poison: at most one worker lost" "all of $before gone"; fi
if wait_until 5 two_workers; then ok "poison: worker count back to 2"; else
	not_ok "poison: worker count back to 2" "workers: $(gw_workers gw)"; fi
okn=0
for i in 1 2 3 4 5 6; do
	http a$i GET "$(url web /payments?after_poison=$i)"
	[ "$HS" = 201 ] && okn=$((okn + 1))
done
expect_eq "poison: service answers afterwards (6/6)" 6 "$okn"
for i in 1 2 3; do "$ITBIN/fcgi_poison" "unix:$T/gw.sock" >/dev/null 2>&1; done
wait_until 5 two_workers
http a7 GET "$(url web /payments?after_poison=again)"
expect_eq "poison x3: service still answers" 201 "$HS"

# kill -9 a worker: the supervisor restarts it.
set -- $(gw_workers gw)
victim=${1:-}
if [ -n "$victim" ]; then
	kill -9 "$victim"
	restarted() { two_workers && ! gw_workers gw | grep -qw "$victim"; }
	if wait_until 5 restarted; then ok "killed worker restarted"; else
		not_ok "killed worker restarted" "workers: $(gw_workers gw)"; fi
fi
http b GET "$(url web /payments?after_kill=1)"
expect_eq "killed worker: service answers" 201 "$HS"

# SIGHUP: a new route appears; an invalid config is refused and the old kept.
http h0 GET "$(url web /reloaded)"
is_problem "before reload: no route" h0 404 not-found
RL=$(cgi_install reloaded)
printf '\n[route /reloaded]\nhandler = cgi:%s\n' "$RL" >>"$T/gw.conf"
kill -HUP "$SUP"
route_up() { http h1 GET "$(url web /reloaded)"; [ "$HS" = 201 ]; }
if wait_until 5 route_up; then ok "SIGHUP: new route served"; else
	not_ok "SIGHUP: new route served" "status $HS"; fi
# Reloads under load lose no request: the old workers read to the end what
# they accepted (and what waited in the backlog) before they go.
for c in 1 2 3; do
	(for i in $(seq 1 60); do
		curl -s -o /dev/null --max-time 10 -w '%{http_code}\n' \
		    "$(url web "/payments?load=$c-$i")"
	done) >"$T/reload-load$c.txt" &
done
for i in 1 2 3 4 5 6 7 8; do kill -HUP "$SUP"; sleep 0.25; done
wait_until 60 sh -c "[ \$(cat '$T'/reload-load*.txt | wc -l) -ge 180 ]"
expect_eq "SIGHUP x8 under load: every request answered 201 (180)" "180 201" \
    "$(cat "$T"/reload-load*.txt | sort | uniq -c | awk '{print $1, $2}' | tr '\n' ' ' | sed 's/ $//')"
check "SIGHUP x8 under load: supervisor alive" alive "$SUP"
# a new socket_mode cannot apply to the socket already made: said so
sed -i 's/^\(\[gateway\]\)$/\1\nsocket_mode = 0600/' "$T/gw.conf"
kill -HUP "$SUP"
wait_until 5 sh -c "grep -q 'socket_owner or socket_mode changed' '$T/gw.log'"
expect_match "SIGHUP: a changed socket_mode is logged as needing a restart" 'socket_owner or socket_mode changed; it takes effect only on restart' "$(cat "$T/gw.log")"
echo "this is = not [valid" >>"$T/gw.conf"
kill -HUP "$SUP"
sleep 0.5
check "SIGHUP bad config: supervisor alive" alive "$SUP"
http h2 GET "$(url web /reloaded?still=1)"
expect_eq "SIGHUP bad config: old config kept" 201 "$HS"
http h3 GET "$(url web /payments?still=1)"
expect_eq "SIGHUP bad config: old routes served" 201 "$HS"
# A config only a start or -t would refuse is refused by a reload too:
# an option file that is not there (every store call would fail), no
# route at all.
sed -i '$d' "$T/gw.conf"
cp "$T/gw.conf" "$T/gw.good"
refused() { # refused LABEL: a HUP now is refused, the old routes kept
	local n
	n=$(grep -c 'reload refused' "$T/gw.log")
	kill -HUP "$SUP"
	wait_until 5 sh -c "[ \$(grep -c 'reload refused' '$T/gw.log') -gt $n ]"
	expect_eq "SIGHUP, $1: refused" $((n + 1)) "$(grep -c 'reload refused' "$T/gw.log")"
	http h4 GET "$(url web /reloaded?still=1)"
	expect_eq "SIGHUP, $1: old config kept" 201 "$HS"
}
sed -i "s|^mysql_defaults_file = .*|mysql_defaults_file = $T/no-such.cnf|" "$T/gw.conf"
refused "missing option file"
sed -n '1,/^\[route/p' "$T/gw.good" | sed '$d' >"$T/gw.conf"
refused "no route"
expect_match "SIGHUP, no route: the reason logged" 'reload refused, keeping the running config: .*no \[route\] section' "$(cat "$T/gw.log")"
cp "$T/gw.good" "$T/gw.conf"

# SIGTERM: an in-flight slow request completes, then exit 0; a connection
# made during the drain is refused at once (the web server answers it),
# not left in the backlog until the drain ends.
K=$(new_key)
http_bg s POST "$(url web /payments?sleep=3000)" -H "Idempotency-Key: $K" --data-binary 'drain'
sleep 0.5
kill -TERM "$SUP"
sleep 0.3
check "SIGTERM: the socket's path is gone at once" test ! -e "$T/gw.sock"
t0=$(now_ms)
http n GET "$(url web /payments?during=drain)"
expect_lt "SIGTERM: a new request during the drain is answered at once" "$(($(now_ms) - t0))" 1500
expect_ne "SIGTERM: ... by the web server, not by a handler" 201 "$HS"
bg_wait
expect_eq "SIGTERM: in-flight request completed" 201 "$(st s)"
expect_match "SIGTERM: in-flight body complete" 'run=' "$(body s)"
rc=124
exited() { ! alive "$SUP"; }
if wait_until 10 exited; then
	wait "$SUP"
	rc=$?
fi
expect_eq "SIGTERM: supervisor exits 0" 0 "$rc"
unset "GW_PID[gw]"
expect_eq "SIGTERM: no worker left behind" "" "$(ps -o pid= --ppid "$SUP" 2>/dev/null)"

# After the restart the drained request is stored: its retry is a replay.
cp "$T/gw.conf.orig" "$T/gw.conf"
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
# (lighttpd keeps a backend that refused a connection disabled for a
# second: the request during the drain did)
answered() { http s2 POST "$(url web /payments?sleep=3000)" -H "Idempotency-Key: $K" --data-binary 'drain'; [ "$HS" != 503 ]; }
wait_until 5 answered
expect_eq "SIGTERM: the drained request was recorded (replay)" reused "$(hdr s2 Idempotency-Result)"
done_testing
