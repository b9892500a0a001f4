#!/bin/bash
# One path, one route under an alias whose URL differs from its directory
# (/api/ served from .../srv/scripts/: Apache's Alias, lighttpd's
# alias.url, nginx's alias): a route naming the script protects it under
# its link, hard-link and ..%2F spellings, its own URL stays its own
# (not "/"'s, protected or not), and one key runs it once.  And two routes
# naming one file: the stronger terms (a key required) win.
. "$(dirname "$0")/../lib/harness.sh"

L="$T/srv/scripts"
H="$T/htdocs"
mkdir -p "$L" "$H"
cp "$ITBIN/payments" "$L/pay.cgi"
chmod 0755 "$L/pay.cgi"
ln -s pay.cgi "$L/pay-link.cgi"
ln "$L/pay.cgi" "$L/pay-hard.cgi"
chmod 0755 "$T" "$T/srv" "$L" "$H"

db_new "$TNAME" || { done_testing; exit 1; }
mkgw() { # mkgw NAME IDEM-OF-SLASH
	gw_conf "$T/$1.conf" "unix:$T/$1.sock" "$DBCNF"
	cat >>"$T/$1.conf" <<EOF
socket_owner = :www-data

[route /api/pay.cgi]
handler = script
script_root = $L
require_key = yes

[route /]
handler = script
script_root = $L
idempotency = $2
EOF
	gw_start "$1" "$T/$1.conf"
}
mkgw gwoff off || { done_testing; exit 1; }
mkgw gwon on || { done_testing; exit 1; }

probe() { # probe WEB LABEL PATH WANT
	http p POST "$(url "$1" "$3")" --path-as-is --data-binary 'amount=1'
	expect_eq "$2: $3 without a key" "$4" "$HS"
}
runs_now() { cat "$L/pay.cgi.runs" 2>/dev/null | wc -l; }
twice() { # twice WEB LABEL PATH1 PATH2 : one key, two spellings
	local K b; K=$(new_key); b=$(runs_now)
	http q1 POST "$(url "$1" "$3")" --path-as-is -H "Idempotency-Key: $K" --data-binary 'amount=1'; s1=$HS
	http q2 POST "$(url "$1" "$4")" --path-as-is -H "Idempotency-Key: $K" --data-binary 'amount=1'; s2=$HS
	expect_eq "$2: one key via $3 ($s1) then $4 ($s2) runs once" 1 $(( $(runs_now) - b ))
}

for gw in gwoff gwon; do
sock="$T/$gw.sock"

# ---- nginx: location /api/ { alias DIR/; SCRIPT_FILENAME $request_filename }
NGINX_LOCATION=/api/ NGINX_SCRIPT_FILENAME='$request_filename' \
	nginx_start ng$gw "unix:$sock" "alias $L/;" && {
	probe ng$gw "nginx alias ($gw)" /api/pay.cgi 400
	probe ng$gw "nginx alias ($gw)" /api/pay-link.cgi 400
	probe ng$gw "nginx alias ($gw)" /api/pay-hard.cgi 400
	probe ng$gw "nginx alias ($gw)" /api/x/..%2Fpay.cgi 400
	twice ng$gw "nginx alias ($gw)" /api/pay.cgi /api/x/..%2Fpay.cgi
}
ws_stop ng$gw

# ---- lighttpd: alias.url ( "/api/" => DIR/ ), fastcgi.server "/api/"
LIGHTTPD_EXTRA="server.modules += ( \"mod_alias\" )
alias.url += ( \"/api/\" => \"$L/\" )" \
lighttpd_start lt$gw "unix:$sock" "$H" /api/ && {
	probe lt$gw "lighttpd alias ($gw)" /api/pay.cgi 400
	probe lt$gw "lighttpd alias ($gw)" /api/pay-link.cgi 400
	probe lt$gw "lighttpd alias ($gw)" /api/pay-hard.cgi 400
	twice lt$gw "lighttpd alias ($gw)" /api/pay.cgi /api/pay-link.cgi
}
ws_stop lt$gw

# ---- Apache: Alias /api/ DIR/ + Directory SetHandler (etc/apache2 wiring)
apache_start ap$gw "$sock" alias "$L" "$H" /api/ && {
	probe ap$gw "apache alias ($gw)" /api/pay.cgi 400
	probe ap$gw "apache alias ($gw)" /api/pay-link.cgi 400
	probe ap$gw "apache alias ($gw)" /api/pay-hard.cgi 400
	twice ap$gw "apache alias ($gw)" /api/pay.cgi /api/pay-link.cgi
}
ws_stop ap$gw
done

# ---- two routes naming one file
W="$T/www"; mkdir -p "$W/cgi-bin"
cp "$ITBIN/payments" "$W/cgi-bin/pay.cgi"; chmod 0755 "$W/cgi-bin/pay.cgi"
ln -s pay.cgi "$W/cgi-bin/pay-link.cgi"; ln -s pay.cgi "$W/cgi-bin/pay-link-longer-name.cgi"
ln "$W/cgi-bin/pay.cgi" "$W/cgi-bin/pay-hard.cgi"
chmod -R a+rX "$W"; chmod 0755 "$T"
gw_conf "$T/two.conf" "unix:$T/two.sock" "$DBCNF"
cat >>"$T/two.conf" <<EOF
socket_owner = :www-data

[route /cgi-bin/pay.cgi]
handler = script
script_root = $W
require_key = yes

[route /cgi-bin/pay-link-longer-name.cgi]
handler = script
script_root = $W

[route /]
handler = script
script_root = $W
idempotency = off
EOF
gw_start two "$T/two.conf" || { done_testing; exit 1; }
nginx_start ng "unix:$T/two.sock" && {
	for p in /cgi-bin/pay.cgi /cgi-bin/pay-link.cgi /cgi-bin/pay-hard.cgi; do
		http p POST "$(url ng "$p")" --data-binary 'amount=1'
		expect_eq "nginx: $p without a key" 400 "$HS"
	done
}
ws_stop ng
done_testing
