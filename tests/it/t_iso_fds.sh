#!/bin/bash
# Isolation: a handler inherits fds 0, 1 and 2 only (no listen socket, no
# MySQL or FastCGI connection), for cgi: and script, alone and under load.
. "$(dirname "$0")/../lib/harness.sh"

W="$T/www"
mkdir -p "$W/cgi-bin"
cp "$ITBIN/payments" "$W/cgi-bin/fds.cgi"
chmod 0755 "$W/cgi-bin/fds.cgi"
P=$(cgi_install pay)

db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF

[route /pay]
handler = cgi:$P

[route /]
handler = script
script_root = $W/cgi-bin
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" "$W" || { done_testing; exit 1; }

# Protected first, so the thread's MySQL connection is open.
K=$(new_key)
http a POST "$(url web /pay?fds=1)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "cgi: protected run" 201 "$HS"
expect_eq "cgi: handler holds fds 0 1 2 only" "fds=0 1 2" "$(body a)"
http b GET "$(url web /pay?fds=1)"
expect_eq "cgi: unprotected run holds fds 0 1 2 only" "fds=0 1 2" "$(body b)"
K=$(new_key)
http c POST "$(url web /cgi-bin/fds.cgi?fds=1)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "script: handler holds fds 0 1 2 only" "fds=0 1 2" "$(body c)"

# The gateway's own sockets are close-on-exec, its MySQL connections too
# (the client library leaves them open across exec): no program started
# some other way than the CGI spawn (which closes all past 2) inherits one.
open_sockets() { # open_sockets PID: its socket fds without close-on-exec
	local f n fl
	for f in /proc/"$1"/fd/*; do
		case $(readlink "$f" 2>/dev/null) in socket:*) ;; *) continue ;; esac
		n=${f##*/}
		fl=$(awk '/^flags:/ { print $2 }' "/proc/$1/fdinfo/$n" 2>/dev/null) || continue
		[ -n "$fl" ] && [ $((0$fl & 02000000)) -eq 0 ] && printf '%s ' "$n"
	done
}
nmysql=0 leaky=
for p in ${GW_PID[gw]} $(gw_workers gw); do
	nmysql=$((nmysql + $(ls -l /proc/"$p"/fd 2>/dev/null | grep -c socket)))
	leaky+=$(open_sockets "$p")
done
expect_ne "gateway: it holds sockets" 0 "$nmysql"
expect_eq "gateway: every socket close-on-exec" "" "$leaky"

# Under load: 16 threads spawning at once, keys and MySQL connections busy.
for i in $(seq 1 48); do
	case $((i % 3)) in
	0) http_bg l$i POST "$(url web /pay?fds=1)" -H "Idempotency-Key: $(new_key)-$i" --data-binary "$i" ;;
	1) http_bg l$i GET "$(url web "/pay?fds=1&sleep=$((i % 5 * 20))")" ;;
	2) http_bg l$i POST "$(url web /cgi-bin/fds.cgi?fds=1)" -H "Idempotency-Key: $(new_key)-$i" --data-binary "$i" ;;
	esac
done
bg_wait
bad=0
for i in $(seq 1 48); do
	[ "$(body l$i)" = "fds=0 1 2" ] || { bad=$((bad + 1)); echo "# l$i: $(st l$i) $(body l$i)"; }
done
expect_eq "under load: every handler held fds 0 1 2 only" 0 "$bad"

# Where close_range(2) is refused (a kernel before 5.9, a container's older
# seccomp profile), the child closes what is open one by one: still 0 1 2.
cat >"$T/idemgate-ncr" <<EOF
#!/bin/sh
exec "$ITBIN/no_close_range" "$IDEMGATE" "\$@"
EOF
chmod 0755 "$T/idemgate-ncr"
sed "s|unix:$T/gw.sock|unix:$T/gw2.sock|" "$T/gw.conf" >"$T/gw2.conf"
if IDEMGATE="$T/idemgate-ncr" gw_start gw2 "$T/gw2.conf" &&
    lighttpd_start web2 "unix:$T/gw2.sock" "$W"; then
	K=$(new_key)
	http n1 POST "$(url web2 /pay?fds=1)" -H "Idempotency-Key: $K" --data-binary x
	expect_eq "no close_range: protected cgi run" 201 "$HS"
	expect_eq "no close_range: cgi handler holds fds 0 1 2 only" "fds=0 1 2" "$(body n1)"
	http n2 POST "$(url web2 /cgi-bin/fds.cgi?fds=1)" -H "Idempotency-Key: $(new_key)" --data-binary x
	expect_eq "no close_range: script handler holds fds 0 1 2 only" "fds=0 1 2" "$(body n2)"
fi
# idemtop's cleanup from the console closes what is ours past 2 through
# glibc, which falls back on /proc/self/fd: with neither, it still starts
# (test_idemtop's runner checks, in a mount namespace without /proc; not
# under ASan, whose runtime reads /proc at start).
case $IDEM_BUILD in
*asan*) ;;
*)
	unshare -rm sh -c "mount -t tmpfs none /proc && '$ITBIN/no_close_range' '$IDEM_BUILD/tests/test_idemtop'" >"$T/noproc.out" 2>&1
	expect_eq "idemtop's runner without close_range or /proc: test_idemtop passes" \
	    "0 0" "$? $(grep -c '^FAIL' "$T/noproc.out")"
	;;
esac
done_testing
