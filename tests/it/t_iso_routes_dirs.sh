#!/bin/bash
# One path, one route, for directory routes and aliases: a protected
# script is never reached with weaker terms through another route's
# spelling.  A longer-named unprotected route linked deeper into a
# protected directory takes none of its requests; an encoded slash
# (..%2F) that the web server decodes into a protected directory is
# protected; two routes naming one file: the protected one; a link in
# the same directory replays; under the shipped alias wiring (Apache's
# Alias, lighttpd's alias.url: DOCUMENT_ROOT is another directory) a
# route naming the script protects its links and hard links too.
. "$(dirname "$0")/../lib/harness.sh"

# ---- directory routes, through lighttpd and nginx
W="$T/www"
mkdir -p "$W/cgi-bin/sub/v1" "$W/cgi-bin/paydir" "$W/cgi-bin/public" "$W/cgi-bin/pay"
cp "$ITBIN/payments" "$W/cgi-bin/sub/v1/charge.cgi"
cp "$ITBIN/payments" "$W/cgi-bin/paydir/charge.cgi"
cp "$ITBIN/payments" "$W/cgi-bin/public/ok.cgi"
cp "$ITBIN/payments" "$W/cgi-bin/pay/charge.cgi"
cp "$ITBIN/payments" "$W/cgi-bin/two.cgi"
chmod 0755 "$W/cgi-bin/sub/v1/charge.cgi" "$W/cgi-bin/paydir/charge.cgi" \
	"$W/cgi-bin/public/ok.cgi" "$W/cgi-bin/pay/charge.cgi" "$W/cgi-bin/two.cgi"
ln -s charge.cgi "$W/cgi-bin/paydir/charge-link.cgi"
ln -s cgi-bin/sub/v1 "$W/legacy-compat-endpoints"
ln -s two.cgi "$W/cgi-bin/two-open.cgi"
ln "$W/cgi-bin/two.cgi" "$W/cgi-bin/two-hard.cgi"
chmod -R a+rX "$T/www"; chmod 0755 "$T"

db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF
socket_owner = :www-data

[route /cgi-bin/sub]
handler = script
script_root = $W
require_key = yes

[route /cgi-bin/paydir]
handler = script
script_root = $W
require_key = yes

[route /cgi-bin/pay]
handler = script
script_root = $W
require_key = yes

[route /cgi-bin/public]
handler = script
script_root = $W
idempotency = off

[route /legacy-compat-endpoints]
handler = script
script_root = $W
idempotency = off

[route /cgi-bin/two.cgi]
handler = script
script_root = $W
require_key = yes

[route /cgi-bin/two-open.cgi]
handler = script
script_root = $W
idempotency = off

[route /]
handler = script
script_root = $W
idempotency = off
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }

probe() { # probe WEB LABEL PATH WANT: a POST without a key
	http p POST "$(url "$1" "$3")" --path-as-is --data-binary 'amount=1'
	expect_eq "$2: $3 without a key" "$4" "$HS"
}
fp() { # fp WEB LABEL PATH1 PATH2: one key through both spellings
	local K
	K=$(new_key)
	http f1 POST "$(url "$1" "$3")" --path-as-is -H "Idempotency-Key: $K" --data-binary 'amount=1'
	expect_eq "$2: $3 created" created "$(hdr f1 Idempotency-Result)"
	http f2 POST "$(url "$1" "$4")" --path-as-is -H "Idempotency-Key: $K" --data-binary 'amount=1'
	expect_eq "$2: retry via $4 replays (status $HS)" reused "$(hdr f2 Idempotency-Result)"
}
charge_runs() { cat "$W/cgi-bin/pay/charge.cgi.runs" 2>/dev/null | wc -l | tr -d ' '; }
for ws in lighttpd nginx; do
	${ws}_start $ws "unix:$T/gw.sock" && {
		probe $ws $ws /cgi-bin/sub/v1/charge.cgi 400
		probe $ws $ws /cgi-bin/public/..%2Fsub/v1/charge.cgi 400
		probe $ws $ws /cgi-bin/public/ok.cgi 201
		for p in /cgi-bin/pay/charge.cgi /cgi-bin/public/..%2Fpay/charge.cgi /cgi-bin/public/..%2fpay%2fcharge.cgi; do
			probe $ws $ws "$p" 400
		done
		K=$(new_key)
		before=$(charge_runs)
		for i in 1 2; do
			http q$i POST "$(url $ws /cgi-bin/public/..%2Fpay/charge.cgi)" --path-as-is -H "Idempotency-Key: $K" --data-binary 'amount=1'
		done
		expect_eq "$ws: one key twice through ..%2F runs once" 1 $(($(charge_runs) - before))
		probe $ws $ws /cgi-bin/two-hard.cgi 400
		fp $ws $ws /cgi-bin/paydir/charge.cgi /cgi-bin/paydir/charge-link.cgi
	}
	ws_stop $ws
done

# ---- the shipped alias wiring
L="$T/lib/cgi-bin"            # like /usr/lib/cgi-bin
H="$T/htdocs"                 # like /var/www/html
mkdir -p "$L/sub/v1" "$H"
cp "$ITBIN/payments" "$L/pay.cgi"
cp "$ITBIN/payments" "$L/sub/v1/charge.cgi"
chmod 0755 "$L/pay.cgi" "$L/sub/v1/charge.cgi"
ln -s pay.cgi "$L/pay-link.cgi"
ln "$L/pay.cgi" "$L/pay-hard.cgi"
ln -s sub/v1 "$L/legacy-compat-endpoints"
chmod 0755 "$T" "$T/lib" "$L" "$L/sub" "$L/sub/v1" "$H"

gw_stop gw
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF
socket_owner = :www-data

[route /cgi-bin/pay.cgi]
handler = script
script_root = $L
require_key = yes

[route /cgi-bin/sub]
handler = script
script_root = $L
require_key = yes

[route /cgi-bin/legacy-compat-endpoints]
handler = script
script_root = $L
idempotency = off

[route /]
handler = script
script_root = $L
idempotency = off
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }

LIGHTTPD_EXTRA="server.modules += ( \"mod_alias\" )
alias.url += ( \"/cgi-bin/\" => \"$L/\" )" \
lighttpd_start lt "unix:$T/gw.sock" "$H" /cgi-bin/ && {
	probe lt "lighttpd alias" /cgi-bin/pay.cgi 400
	probe lt "lighttpd alias" /cgi-bin/pay-link.cgi 400
	probe lt "lighttpd alias" /cgi-bin/pay-hard.cgi 400
	probe lt "lighttpd alias" /cgi-bin/sub/v1/charge.cgi 400
}
ws_stop lt

# Apache as etc/apache2/idemgate.conf wires it (Alias + Directory SetHandler)
apache_start ap "$T/gw.sock" alias "$L" "$H" && {
	probe ap "apache alias" /cgi-bin/pay.cgi 400
	probe ap "apache alias" /cgi-bin/pay-link.cgi 400
	probe ap "apache alias" /cgi-bin/pay-hard.cgi 400
	probe ap "apache alias" /cgi-bin/sub/v1/charge.cgi 400
}
ws_stop ap
done_testing
