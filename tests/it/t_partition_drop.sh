#!/bin/bash
# A partition that drops packets (iptables DROP on MariaDB's 127.0.0.1
# port, both ways), not a frozen relay: a socket closed meanwhile tells
# the server only when one of its retransmissions gets through after the
# heal, seconds later, and until then the server keeps the session and
# the key's named lock.  Gateway 1 reaches MariaDB over that port and owns
# a key whose CGI runs when the port is cut for longer than the lease:
# it stops the CGI, and once the port is back writes the key's release
# and KILLs the session it lost, so a retry through gateway 2 (on the
# unix socket) runs the key within a second or two of the heal, not when
# the lost session's close arrives.  Runs are counted from the handler's
# own log.
. "$(dirname "$0")/../lib/harness.sh"

MDB_PORT=$(free_port)
export MDB_PORT
db_private || { done_testing; exit 1; }
db_new "$TNAME" || { done_testing; exit 1; }
h_sqlroot -e "CREATE USER 'idem1'@'127.0.0.1' IDENTIFIED BY 'idem-test-secret';
	GRANT ALL ON \`$TNAME\`.* TO 'idem1'@'127.0.0.1'" || not_ok "TCP user"
# The rules, taken out again however the test ends.
drop_rules() { # drop_rules -I|-D
	iptables "$1" INPUT -i lo -p tcp --dport "$MDB_PORT" -j DROP &&
		iptables "$1" INPUT -i lo -p tcp --sport "$MDB_PORT" -j DROP
}
trap 'drop_rules -D 2>/dev/null; drop_rules -D 2>/dev/null; h_cleanup' EXIT
if ! drop_rules -I || ! drop_rules -D; then
	not_ok "iptables can drop packets on lo (make deps installs iptables)"
	done_testing
	exit 1
fi

P=$(cgi_install pay)
printf '[idemgate]\nhost=127.0.0.1\nport=%s\nuser=idem1\npassword=idem-test-secret\ndatabase=%s\n' \
	"$MDB_PORT" "$TNAME" >"$T/tcp.cnf"
chmod 600 "$T/tcp.cnf"
ROUTE="[route /pay]
handler = cgi:$P
lease = 3s
timeout = 30s
wait = 1s"
for n in 1 2; do
	cnf=$DBCNF
	[ "$n" = 1 ] && cnf=$T/tcp.cnf
	gw_conf "$T/gw$n.conf" "unix:$T/gw$n.sock" "$cnf" "workers = 1" "threads = 4"
	printf '\n%s\n' "$ROUTE" >>"$T/gw$n.conf"
	gw_start "gw$n" "$T/gw$n.conf" || { done_testing; exit 1; }
	lighttpd_start "web$n" "unix:$T/gw$n.sock" || { done_testing; exit 1; }
done

K=$(new_key)
n0=$(runs pay)
http_bg a1 POST "$(url web1 '/pay?sleep=8000')" -H "Idempotency-Key: $K" --data-binary a
wait_until 5 sh -c "[ \$(wc -l <'$P.runs' 2>/dev/null || echo 0) -gt $n0 ]"
sleep 0.3
drop_rules -I
sleep 14
drop_rules -D
t_heal=$(now_ms)
bg_wait
expect_eq "cut off past its lease, the owner answers 503" 503 "$(st a1)"
expect_eq "... having run the handler once" $((n0 + 1)) "$(runs pay)"
# After the heal: the release is written at once and the lost session
# goes with it; a retry through the other gateway runs the key.
ran() {
	http a2 POST "$(url web2 /pay)" -H "Idempotency-Key: $K" --data-binary a
	[ "$(hdr a2 Idempotency-Result)" = created ]
}
wait_until 8 ran
took=$(($(now_ms) - t_heal))
expect_eq "after the heal, a retry elsewhere runs the key" created "$(hdr a2 Idempotency-Result)"
expect_lt "... within 4 s of the heal, not when the lost session's close gets through (${took} ms)" "$took" 4000
expect_eq "... two runs in all, never two at once" $((n0 + 2)) "$(runs pay)"
# Sessions the server keeps for connections gateway 1 no longer has open
# (their port has no established socket here): left, they hold their
# locks and a connection slot each until TCP keepalive, hours later.
lost_sessions() {
	local live
	live=$(ss -Htn state established "( dport = :$MDB_PORT )" | awk '{ n = split($3, a, ":"); print a[n] }' | sort -u)
	h_sqlroot -e "SELECT SUBSTRING_INDEX(HOST, ':', -1) FROM information_schema.PROCESSLIST WHERE USER = 'idem1'" |
		sort -u | comm -23 - <(echo "$live") | tr '\n' ' ' | sed 's/ $//'
}
expect_eq "no session is left of a connection gateway 1 gave up" "" "$(lost_sessions)"
done_testing
