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
done_testing
