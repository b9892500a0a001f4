#!/bin/bash
# Caddy (Debian's caddy 2.6) in front, with the package's snippets
# (/etc/caddy/idemgate.caddy, staged by make install-files) imported: a
# payment created and replayed through "import idemgate", CGI file names
# under /usr/lib/cgi-bin, PHP-FPM through "import idemgate-php" run once
# and replayed.  Caddy listens on 127.0.0.1 only, with no admin endpoint,
# no automatic HTTPS, and its storage and home in $T.
. "$(dirname "$0")/../lib/harness.sh"
. "$IDEM_ROOT/tests/lib/wire.sh"

if ! command -v caddy >/dev/null 2>&1; then
	not_ok "caddy installed (make deps installs it)"
	done_testing
	exit 1
fi
wire_stage
wire_sock "$S/etc/caddy/idemgate.caddy" etc/caddy/idemgate.caddy

wire_backends /payments || { done_testing; exit 1; }

C=$T/web
mkdir -p "$C/home"
web_conf() {
	cat >"$C/Caddyfile" <<CONF
{
	admin off
	auto_https off
	skip_install_trust
	storage file_system $C/data
}
import $S/etc/caddy/idemgate.caddy
http://127.0.0.1:${PORT[web]} {
	bind 127.0.0.1
	root * $T/www
	handle /payments* {
		import idemgate
	}
	handle /cgi-bin/* {
		root * /usr/lib
		import idemgate
	}
	import idemgate-php
}
CONF
}
HOME=$C/home XDG_DATA_HOME=$C/data XDG_CONFIG_HOME=$C/config \
    ws_launch web web_conf caddy run --config "$C/Caddyfile" --adapter caddyfile ||
	{ done_testing; exit 1; }

wire_pay "caddy" "$(url web /payments)"
wire_script "caddy" "$(url web /cgi-bin/none-$$.cgi)" "none-$$.cgi"
wire_php "caddy, idemgate-php" "$(url web /pay.php)"

# The only socket of Caddy's is the site's: no admin endpoint (:2019).
expect_eq "caddy: listens on 127.0.0.1 only, no admin endpoint" "127.0.0.1:${PORT[web]}" \
    "$(ss -Htlnp | grep "pid=${WS_PID[web]}," | awk '{print $4}' | tr '\n' ' ' | sed 's/ $//')"
check "caddy: its own files in \$T (XDG_CONFIG_HOME)" test -f "$C/config/caddy/autosave.json"
done_testing
