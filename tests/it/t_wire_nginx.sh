#!/bin/bash
# The package's nginx snippets, as installed (make install-files into a
# staged /etc/nginx, beside Debian's own fastcgi.conf and
# snippets/fastcgi-php.conf): a real nginx, its config in that folder so
# "include snippets/idemgate.conf" resolves as it does in /etc/nginx,
# serves through them: a payment created and replayed, CGI file names
# under /usr/lib/cgi-bin (root /usr/lib), PHP-FPM run once and replayed.
. "$(dirname "$0")/../lib/harness.sh"
. "$IDEM_ROOT/tests/lib/wire.sh"

wire_stage
N=$S/etc/nginx
wire_sock "$N/snippets/idemgate.conf" etc/nginx/idemgate.conf
wire_sock "$N/snippets/idemgate-php.conf" etc/nginx/idemgate-php.conf
cp /etc/nginx/fastcgi.conf "$N/"
cp -n /etc/nginx/snippets/fastcgi-php.conf "$N/snippets/"

wire_backends /payments || { done_testing; exit 1; }

# web_conf: the config of nginx instance $W ($N/$W.conf, its files in $T/$W)
W=web
web_conf() {
	mkdir -p "$T/$W/tmp"
	chown www-data "$T/$W/tmp"
	cat >"$N/$W.conf" <<CONF
user www-data;
worker_processes 1;
daemon off;
pid $T/$W/nginx.pid;
error_log $T/$W/error.log warn;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $T/$W/tmp/body;
	proxy_temp_path $T/$W/tmp/proxy;
	fastcgi_temp_path $T/$W/tmp/fcgi;
	uwsgi_temp_path $T/$W/tmp/uwsgi;
	scgi_temp_path $T/$W/tmp/scgi;
	server {
		listen 127.0.0.1:${PORT[$W]};
		root $T/www;
		location /payments {
			include snippets/idemgate.conf;
		}
		location /cgi-bin/ {
			root /usr/lib;
			include snippets/idemgate.conf;
		}
		location ~ \.php$ {
			include snippets/idemgate-php.conf;
		}
	}
}
CONF
}
ws_launch web web_conf nginx -p "$T/web" -c "$N/web.conf" || { done_testing; exit 1; }

wire_pay "nginx" "$(url web /payments)"
wire_script "nginx" "$(url web /cgi-bin/none-$$.cgi)" "none-$$.cgi"
wire_php "nginx, idemgate-php.conf" "$(url web /pay.php)"
# try_files: a missing file never reaches PHP-FPM, so no 404 is stored.
http m POST "$(url web /missing.php)" -H "Idempotency-Key: $(new_key)" --data-binary x
expect_eq "nginx: a missing .php is nginx's 404, not a stored answer" "404 " \
    "$HS $(hdr m Idempotency-Result)"

# A handler that times out mid-answer (8 MB over ~4 s, timeout 2 s): the
# client's transfer breaks, with and without a Content-Length.
broken() { # broken OUT PORTNAME QUERY: curl's exit status
	curl -sS --max-time 20 -o "$T/$1.b" -H "Idempotency-Key: $(new_key)" \
	    --data-binary x "$(url "$2" "/payments?stream=8000000&step_ms=30$3")" 2>"$T/$1.err"
	echo $?
}
expect_ne "broken off, Content-Length: the client sees it broken" 0 "$(broken b1 web '&cl=1')"
expect_lt "broken off, Content-Length: body cut short" "$(stat -c %s "$T/b1.b")" 8000000
expect_ne "broken off, chunked: the client sees it broken" 0 "$(broken b2 web '')"
# The control: the snippet without its keep_conn line hands the truncated
# answer over as a clean one, which is why it has that line.
sed -i '/^fastcgi_keep_conn/d' "$N/snippets/idemgate.conf"
W=plain
ws_launch plain web_conf nginx -p "$T/plain" -c "$N/plain.conf" || { done_testing; exit 1; }
expect_eq "control, without it: a truncated answer looks whole" 0 "$(broken b3 plain '')"
expect_lt "control: and it was truncated" "$(stat -c %s "$T/b3.b")" 8000000
done_testing
