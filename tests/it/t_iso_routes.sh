#!/bin/bash
# One path, one route: every spelling a web server resolves to a protected
# script or route (//x, %70, ./, a symlink or a hard link to the script)
# is protected (a link from under a longer unprotected route too),
# through lighttpd, nginx and Apache, for script and cgi:
# routes.
. "$(dirname "$0")/../lib/harness.sh"

W="$T/www"
mkdir -p "$W/cgi-bin"
cp "$ITBIN/payments" "$W/cgi-bin/pay.cgi"
cp "$ITBIN/payments" "$W/cgi-bin/other.cgi"
chmod 0755 "$W/cgi-bin/pay.cgi" "$W/cgi-bin/other.cgi"
ln -s pay.cgi "$W/cgi-bin/pay-link.cgi"
ln "$W/cgi-bin/pay.cgi" "$W/cgi-bin/pay-hard.cgi"
# a link from under a longer, unprotected route: the file decides
mkdir -p "$W/cgi-bin/legacy/old"
ln -s ../../pay.cgi "$W/cgi-bin/legacy/old/pay.cgi"
# a shorter unprotected route whose directory is a link deeper into a
# protected one: it never takes the protected route's requests
mkdir -p "$W/cgi-bin/sub/v1"
cp "$ITBIN/payments" "$W/cgi-bin/sub/v1/charge.cgi"
ln -s cgi-bin/sub/v1 "$W/old"
chmod 0755 "$T" "$W" "$W/cgi-bin" "$W/cgi-bin/legacy" "$W/cgi-bin/legacy/old" \
	"$W/cgi-bin/sub" "$W/cgi-bin/sub/v1" "$W/cgi-bin/sub/v1/charge.cgi"
P=$(cgi_install pay)

db_new "$TNAME" || { done_testing; exit 1; }
# The README's fcgiwrap migration recipe, plus a cgi: route.
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF
socket_owner = :www-data

[route /cgi-bin/pay.cgi]
handler = script
script_root = $W/cgi-bin
require_key = yes

[route /api/pay]
handler = cgi:$P
require_key = yes

# the same program with weaker terms (no key required) above it
[route /api]
handler = cgi:$P

[route /cgi-bin/legacy/old]
handler = script
script_root = $W/cgi-bin
idempotency = off

[route /cgi-bin/sub]
handler = script
script_root = $W/cgi-bin
require_key = yes

[route /old]
handler = script
script_root = $W
idempotency = off

[route /]
handler = script
script_root = $W/cgi-bin
idempotency = off
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }

# (a hard link runs under its own name, so logs under it)
script_runs() { cat "$W"/cgi-bin/pay.cgi.runs "$W"/cgi-bin/pay-hard.cgi.runs 2>/dev/null | wc -l | tr -d ' '; }

# spellings WEB LABEL RUNS-FN PATH...: each spelling without a key is 400;
# one key over all spellings runs the handler once and replays.
spellings() {
	local web=$1 L=$2 runsfn=$3 K p i=0 before
	shift 3
	for p in "$@"; do
		http n POST "$(url "$web" "$p")" --path-as-is --data-binary 'amount=1'
		expect_eq "$L: $p without a key is refused" 400 "$HS"
	done
	before=$($runsfn)
	K=$(new_key)
	for p in "$@"; do
		i=$((i + 1))
		http s$i POST "$(url "$web" "$p")" --path-as-is -H "Idempotency-Key: $K" --data-binary 'amount=1'
		if [ $i = 1 ]; then
			expect_eq "$L: $p created" created "$(hdr s$i Idempotency-Result)"
		else
			expect_eq "$L: $p replays" reused "$(hdr s$i Idempotency-Result)"
		fi
	done
	expect_eq "$L: one run over $# spellings" 1 $(($($runsfn) - before))
}

S=(/cgi-bin/pay.cgi //cgi-bin/pay.cgi /cgi-bin//pay.cgi /cgi-bin/%70ay.cgi /cgi-bin/./pay.cgi /x/../cgi-bin/pay.cgi /cgi-bin/pay-link.cgi /cgi-bin/pay-hard.cgi /cgi-bin/legacy/old/pay.cgi)
C=(/api/pay //api/pay /api//pay /api/%70ay /api/./pay /x/../api/pay /%61pi/pay)
# lighttpd and nginx decode an encoded slash in the path they map (Apache
# refuses it): the "..%2F" they resolve to /api/pay takes that route's
# terms, not those of the route its spelling matches (/api, the same
# program without a key required)
CS=("${C[@]}" /api/x/..%2Fpay /api/x/..%2fpay)

lighttpd_start web "unix:$T/gw.sock" "$W" && {
	spellings web "lighttpd script" script_runs "${S[@]}"
	spellings web "lighttpd cgi" "runs pay" "${CS[@]}"
	http o POST "$(url web /cgi-bin/other.cgi)" --data-binary x
	expect_eq "lighttpd: other scripts stay unprotected" 201 "$HS"
	http sv POST "$(url web /cgi-bin/sub/v1/charge.cgi)" --data-binary x
	expect_eq "lighttpd: a shorter unprotected route linked deeper does not take a protected one's request" 400 "$HS"
	http ov POST "$(url web /old/charge.cgi)" --data-binary x
	expect_eq "lighttpd: ... while its own spelling is its own (unprotected)" 201 "$HS"
}
ws_stop web

nginx_start ngx "unix:$T/gw.sock" && {
	# nginx refuses "/x/../" above nothing only when it climbs past root
	spellings ngx "nginx script" script_runs "${S[@]}"
	spellings ngx "nginx cgi" "runs pay" "${CS[@]}"
}
ws_stop ngx

apache_start ap "unix:$T/gw.sock" files && {
	spellings ap "apache script" script_runs /cgi-bin/pay.cgi //cgi-bin/pay.cgi /cgi-bin/%70ay.cgi /cgi-bin/./pay.cgi /cgi-bin/pay-link.cgi /cgi-bin/pay-hard.cgi
}
ws_stop ap
apache_start ap2 "unix:$T/gw.sock" && {
	spellings ap2 "apache cgi" "runs pay" "${C[@]}"
}
done_testing
