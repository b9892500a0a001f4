#!/bin/bash
# idemtop end to end in tmux: screens, help, resize, filter, quit, and a MySQL outage it survives.
. "$(dirname "$0")/../lib/harness.sh"

IDEMTOP="$IDEM_BUILD/idemtop"
[ -x "$IDEMTOP" ] || { not_ok "idemtop is built" "$IDEMTOP missing"; done_testing; exit 1; }
command -v tmux >/dev/null || { not_ok "tmux installed"; done_testing; exit 1; }

SOCK="idemtop-t-$$"
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
tm_cleanup() { tm kill-server >/dev/null 2>&1; h_cleanup; }
trap tm_cleanup EXIT

db_new it_idemtop_tmux || { done_testing; exit 1; }
DB=it_idemtop_tmux

cat >"$T/top.conf" <<EOF
[gateway]
listen = unix:$T/unused.sock
mysql_defaults_file = $T/$DB-ro.cnf

[console]
refresh = 500ms
EOF

M2="DATE_FORMAT(NOW() - INTERVAL 2 MINUTE, '%Y-%m-%d %H:%i:00')"
db_query "$DB" "
INSERT INTO idem_counters (minute, host, route, requests, created, reused, waited, wait_b0)
 VALUES ($M2, 'gw1', '/pay', 100, 60, 40, 5, 5), ($M2, 'gw1', '/orders', 20, 20, 0, 0, 0);
INSERT INTO idem_cleanup_runs (host, started_at, ended_at, rows_deleted, batches, outcome)
 VALUES ('cron-a', NOW(6) - INTERVAL 20 MINUTE, NOW(6) - INTERVAL 19 MINUTE, 77, 1, 'ok');
" || { not_ok "seed rows"; done_testing; exit 1; }

# Optional: real traffic through idemgate, if it and the test CGI are built.
TRAFFIC=0
if [ -x "$IDEMGATE" ] && [ -x "$ITBIN/payments" ] && command -v lighttpd >/dev/null; then
	PAY=$(cgi_install pay)
	gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$T/$DB.cnf"
	sed -i 's/^threads = .*/&\ncounters_flush = 1s/' "$T/gw.conf"
	printf '\n[route /payments]\nhandler = cgi:%s\n' "$PAY" >>"$T/gw.conf"
	if gw_start gw "$T/gw.conf" >/dev/null 2>&1 && lighttpd_start web "unix:$T/gw.sock" >/dev/null 2>&1; then
		K=$(new_key)
		for i in 1 2 3; do
			http p$i POST "$(url web /payments)" -H "Idempotency-Key: $K" --data-binary 'amount=10'
		done
		expect_eq "traffic: replay through idemgate" reused "$(hdr p3 Idempotency-Result)"
		TRAFFIC=1
	else
		echo "# idemgate traffic skipped: gateway or lighttpd did not start"
	fi
else
	echo "# idemgate traffic skipped: idemgate or test CGI not built"
fi

# pane_text: the visible screen
pane() { tm capture-pane -p -t top 2>/dev/null; }
# await NAME ERE [SECS]: wait until the screen matches
await() {
	local i n=$((${3:-5} * 10))
	for ((i = 0; i < n; i++)); do
		if pane | grep -Eq -- "$2"; then ok "$1"; return 0; fi
		sleep 0.1
	done
	not_ok "$1" "screen never matched /$2/:
$(pane)"
	return 1
}
keys() { tm send-keys -t top "$@"; }
# start_top NAME ARGS...: idemtop in a 100x30 tmux session "top"; its exit
# status lands in $T/rc-NAME, its stderr in $T/idemtop-NAME.log
start_top() {
	local name=$1
	shift
	rm -f "$T/rc-$name"
	tm new-session -d -s top -x 100 -y 30 \
		"env TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 $IDEMTOP $* 2>$T/idemtop-$name.log; echo \$? >$T/rc-$name"
}
# exit_status NAME: idemtop's exit status once it ended ("" if it did not)
exit_status() {
	local i
	for i in $(seq 1 50); do
		[ -s "$T/rc-$1" ] && { cat "$T/rc-$1"; return 0; }
		sleep 0.1
	done
	echo ""
}

# The in-progress keys go in last, right before the console starts, so
# their ages on screen do not depend on how long the set-up above took.
db_query "$DB" "
INSERT INTO idem_keys (scope, idem_key, route, method, fingerprint, state,
  owner, owner_token, waiters, created_at, lease_until, expires_at) VALUES
 (UNHEX(SHA2('s',256)), 'order-12345-xy', '/pay', 'POST', UNHEX(SHA2('f',256)), 0,
  'gw1.example:4242', 1, 3, NOW(6) - INTERVAL 90 SECOND, NOW(6) - INTERVAL 10 SECOND,
  NOW(6) + INTERVAL 1 DAY),
 (UNHEX(SHA2('s',256)), 'other-key-77', '/orders', 'POST', UNHEX(SHA2('f',256)), 0,
  'gw2.example:77', 2, 0, NOW(6) - INTERVAL 5 SECOND, NOW(6) + INTERVAL 55 SECOND,
  NOW(6) + INTERVAL 1 DAY);
" || { not_ok "seed in-progress keys"; done_testing; exit 1; }
start_top tui -c "$T/top.conf"

await "overview shows fleet reuse" 'Fleet reuse: now .* 5m '
await "overview shows the tabs" '1 Overview +2 In progress +3 Routes +4 Cleanup jobs'
await "overview shows keys in progress" 'In progress now: 2 keys, waiting now: 3 requests'
await "overview shows the last cleanup" 'Last cleanup: .*ok, 77 rows deleted'
if [ "$TRAFFIC" = 1 ]; then
	await "overview counts idemgate's traffic (flushed counters)" '^ reused +([1-9]|0 +[1-9])' 10
fi

keys 2
await "screen 2: in-progress header" 'KEY +SCOPE +ROUTE +OWNER HOST +AGEv +LEASE +WAITERS'
await "screen 2: masked key, oldest first, selected" '^>orde\*{8}xy '
await "screen 2: expired lease shown negative" 'gw1\.example +1m3[0-9]s +-1[0-9]s +3'
keys Enter
await "details box opens" 'id +[0-9]+'
keys Escape
keys 3
await "screen 3: routes" 'ROUTE +REQSv +REUSE% +422 +409 +WAITS +P50 +P95 +RELEASED'
await "screen 3: /pay numbers" '/pay +1[0-9][0-9] +[0-9.]+% '
keys 4
await "screen 4: cleanup runs" 'cron-a .* 77 .* ok'
keys Tab
await "Tab wraps to the overview" 'Fleet reuse'
keys '?'
await "help overlay" 'idemtop help'
await "help lists the filter key" '/ +filter rows'
keys x
keys 2
await "help closed by a key, screen 2" '^>orde'

# filter on host: only gw2's key stays
keys / g w 2 Enter
await "filter keeps gw2's key" '^>othe\*{6}77 '
if pane | grep -q 'orde\*'; then not_ok "filter hides gw1's key"; else ok "filter hides gw1's key"; fi
keys '\'
await "clearing the filter brings gw1 back" 'orde\*{8}xy'

# sort: invert puts the youngest first
keys I
await "I inverts the order (youngest first)" '^>othe'
keys I

# resize: 80x24 still usable
tm resize-window -t top -x 80 -y 24
await "resized to 80 columns: header still there" 'KEY +SCOPE +ROUTE'
width=$(pane | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
if [ "$width" -le 80 ]; then ok "resized: no line wider than 80 ($width)"; else not_ok "resized: lines fit 80" "max $width"; fi
keys 1
await "80x24 overview shows cleanup line" 'Last cleanup'
keys p
await "pause shows on the title" 'PAUSED'
keys p

# read-only by default
keys 2 f
await "f refused without --write" 'read-only: start idemtop with --write'

keys q
expect_eq "q quits with status 0" 0 "$(exit_status tui)"
tm kill-session -t top >/dev/null 2>&1

# --write: forget a key behind y/n.  The config's own group logs in
# read-only; -g names the one that may write (as idem_cleanup would),
# for the console and the cleanup it starts alike.
{ cat "$T/$DB-ro.cnf"; sed 's/^\[idemgate\]$/[idem_rw]/' "$T/$DB.cnf"; } >"$T/both.cnf"
chmod 600 "$T/both.cnf"
sed "s|$DB-ro.cnf|both.cnf|" "$T/top.conf" >"$T/rw.conf"
start_top rw --write -g idem_rw -c "$T/rw.conf"
keys 2
await "--write: title says WRITE" 'WRITE'
await "--write: key listed" '^>orde'
keys f
await "forget asks y/n" 'Forget key orde\*{8}xy \(id [0-9]+\)\? y/n'
keys n
await "n cancels" 'cancelled'
expect_eq "cancel kept the row" 2 "$(db_query "$DB" 'SELECT COUNT(*) FROM idem_keys WHERE state = 0')"
keys f
await "forget asks again" 'y/n'
keys y
await "forgot the key" 'forgot key id'
expect_eq "forget deleted the row" 1 "$(db_query "$DB" 'SELECT COUNT(*) FROM idem_keys WHERE state = 0')"
if [ -x "$IDEMCTL" ]; then
	keys c
	await "cleanup asks y/n" 'Start idemctl cleanup now\? y/n'
	keys y
	await "cleanup ran idemctl as -g says: exit 0" 'idemctl cleanup exited 0' 20
	expect_match "cleanup run recorded" '^[1-9]' "$(db_query "$DB" "SELECT COUNT(*) FROM idem_cleanup_runs WHERE host <> 'cron-a'")"
	keys 4
	await "cleanup screen lists the new run" '^>.* (ok|failed|partial|running)( |$)' 10
fi
keys q
expect_eq "--write: q exits 0" 0 "$(exit_status rw)"

# MySQL unreachable: stays up, says so, reconnects when it is back.
LINK="$T/db.sock"
printf '[idemgate]\nsocket=%s\nuser=idem_ro\npassword=idem-ro-secret\ndatabase=%s\n' "$LINK" "$DB" >"$T/link.cnf"
sed "s|$T/$DB-ro.cnf|$T/link.cnf|" "$T/top.conf" >"$T/link.conf"
start_top down -c "$T/link.conf"
await "db down: status line says so" 'MySQL down, retry in [0-9]+s'
await "db down: still running, waiting for data" 'waiting for data'
ln -s "$MDB_SOCK" "$LINK"
await "db back: reconnects within the backoff" 'Fleet reuse: now' 20
keys q
expect_eq "db outage: q exits 0" 0 "$(exit_status down)"
tm kill-server >/dev/null 2>&1

done_testing
