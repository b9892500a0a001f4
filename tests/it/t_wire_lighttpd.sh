#!/bin/bash
# The package's lighttpd wiring, as installed (make install-files into a
# staged /etc): the real lighty-enable-mod enables it (and mod_fastcgi
# first, refusing while mod_cgi or a ".php" module is on), and a real
# lighttpd that includes the staged conf-enabled/ serves through it:
# a payment created and replayed, CGI file names under /usr/lib/cgi-bin,
# PHP-FPM run once and replayed, and an answer broken off mid-stream
# reaches the client broken (server.stream-response-body = 2).
. "$(dirname "$0")/../lib/harness.sh"
. "$IDEM_ROOT/tests/lib/wire.sh"

wire_stage
L=$S/etc/lighttpd
wire_sock "$L/conf-available/20-idemgate.conf" etc/lighttpd/20-idemgate.conf
wire_sock "$L/conf-available/20-idemgate-php.conf" etc/lighttpd/20-idemgate-php.conf
# Debian's own module files beside them, as lighttpd's package installs them.
cp -n /etc/lighttpd/conf-available/*.conf "$L/conf-available/"
mkdir -p "$L/conf-enabled"

# lighty_mod enable|disable MOD...: Debian's script works on /etc/lighttpd
# only; it runs with the staged folder mounted there in a mount namespace
# of its own, so this machine's /etc is never touched.
lighty_mod() {
	local cmd=lighty-$1-mod
	shift
	unshare -m sh -c 'mount --bind "$1" /etc/lighttpd && shift && exec "$@"' \
	    sh "$L" "$cmd" "$@" 2>&1
}
enabled() { (cd "$L/conf-enabled" && ls) | tr '\n' ' '; }

out=$(lighty_mod enable cgi)
out=$(lighty_mod enable idemgate)
expect_match "enable refused while mod_cgi has /cgi-bin/" 'idemgate conflicts with cgi' "$out"
lighty_mod disable cgi >/dev/null
out=$(lighty_mod enable idemgate)
expect_eq "lighty-enable-mod idemgate: exit 0" 0 "$?"
expect_match "fastcgi enabled as its dependency" 'Met dependency: fastcgi' "$out"
expect_eq "conf-enabled: fastcgi, then idemgate" "10-fastcgi.conf 20-idemgate.conf " "$(enabled)"
expect_eq "a link to conf-available" ../conf-available/20-idemgate.conf "$(readlink "$L/conf-enabled/20-idemgate.conf")"
lighty_mod enable fastcgi-php-fpm >/dev/null
out=$(lighty_mod enable idemgate-php)
expect_match "idemgate-php refused while fastcgi-php-fpm maps .php" 'conflicts with fastcgi-php-fpm' "$out"
lighty_mod disable fastcgi-php-fpm >/dev/null
out=$(lighty_mod enable idemgate-php)
expect_eq "lighty-enable-mod idemgate-php: exit 0" 0 "$?"
expect_eq "conf-enabled: both" "10-fastcgi.conf 20-idemgate-php.conf 20-idemgate.conf " "$(enabled)"

wire_backends /cgi-bin/pay || { done_testing; exit 1; }

# lighttpd_conf NAME ENABLED: Debian's lighttpd.conf, its modules and its
# include of conf-enabled/, on 127.0.0.1, serving $T/www.
lighttpd_conf() {
	mkdir -p "$T/$1"
	cat >"$T/$1/lighttpd.conf" <<CONF
server.modules = ( "mod_indexfile", "mod_access", "mod_alias", "mod_redirect" )
server.document-root = "$T/www"
server.bind = "127.0.0.1"
server.port = ${PORT[$1]}
server.pid-file = "$T/$1/lighttpd.pid"
server.errorlog = "$T/$1/error.log"
server.upload-dirs = ( "$T/$1" )
index-file.names = ( "index.php", "index.html" )
static-file.exclude-extensions = ( ".php", ".pl", ".fcgi" )
include "$2/*.conf"
server.modules += ( "mod_staticfile" )
CONF
}
web_conf() { lighttpd_conf web "$L/conf-enabled"; }
ws_launch web web_conf lighttpd -D -f "$T/web/lighttpd.conf" || { done_testing; exit 1; }
expect_match "the shipped setting is in effect" 'server.stream-response-body *= *2' \
    "$(lighttpd -p -f "$T/web/lighttpd.conf" 2>&1)"

wire_pay "lighttpd" "$(url web /cgi-bin/pay)"
wire_script "lighttpd" "$(url web /cgi-bin/none-$$.cgi)" "none-$$.cgi"
wire_php "lighttpd, idemgate-php" "$(url web /pay.php)"

# A handler that times out mid-answer (8 MB over ~4 s, timeout 2 s): the
# client's transfer breaks, with and without a Content-Length.
broken() { # broken OUT QUERY: curl's exit status
	curl -sS --max-time 20 -o "$T/$1.b" -H "Idempotency-Key: $(new_key)" \
	    --data-binary x "$(url "$2" "/cgi-bin/pay?stream=8000000&step_ms=30$3")" 2>"$T/$1.err"
	echo $?
}
expect_ne "broken off, Content-Length: the client sees it broken" 0 "$(broken b1 web '&cl=1')"
expect_lt "broken off, Content-Length: body cut short" "$(stat -c %s "$T/b1.b")" 8000000
expect_ne "broken off, chunked: the client sees it broken" 0 "$(broken b2 web '')"

# The control: the same files without that one line hand the truncated
# answer over as a clean one, which is why the file sets it.
mkdir -p "$T/nostream"
for f in "$L"/conf-enabled/*.conf; do
	sed '/^server.stream-response-body/d' "$f" >"$T/nostream/$(basename "$f")"
done
plain_conf() { lighttpd_conf plain "$T/nostream"; }
ws_launch plain plain_conf lighttpd -D -f "$T/plain/lighttpd.conf" || { done_testing; exit 1; }
expect_eq "control, without it: a truncated answer looks whole" 0 "$(broken b3 plain '')"
expect_lt "control: and it was truncated" "$(stat -c %s "$T/b3.b")" 8000000
done_testing
