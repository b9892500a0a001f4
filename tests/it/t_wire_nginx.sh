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

mkdir -p "$T/web/tmp"
chown www-data "$T/web/tmp"
web_conf() {
	cat >"$N/nginx.conf" <<CONF
user www-data;
worker_processes 1;
daemon off;
pid $T/web/nginx.pid;
error_log $T/web/error.log warn;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $T/web/tmp/body;
	proxy_temp_path $T/web/tmp/proxy;
	fastcgi_temp_path $T/web/tmp/fcgi;
	uwsgi_temp_path $T/web/tmp/uwsgi;
	scgi_temp_path $T/web/tmp/scgi;
	server {
		listen 127.0.0.1:${PORT[web]};
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
ws_launch web web_conf nginx -p "$T/web" -c "$N/nginx.conf" || { done_testing; exit 1; }

wire_pay "nginx" "$(url web /payments)"
wire_script "nginx" "$(url web /cgi-bin/none-$$.cgi)" "none-$$.cgi"
wire_php "nginx, idemgate-php.conf" "$(url web /pay.php)"
# try_files: a missing file never reaches PHP-FPM, so no 404 is stored.
http m POST "$(url web /missing.php)" -H "Idempotency-Key: $(new_key)" --data-binary x
expect_eq "nginx: a missing .php is nginx's 404, not a stored answer" "404 " \
    "$HS $(hdr m Idempotency-Result)"
done_testing
