#!/bin/sh
# Installs the Debian packages idemgate builds and tests with, if missing.
set -eu
pkgs="build-essential pkg-config clang libclang-rt-14-dev libfcgi-dev libfcgi-bin
default-libmysqlclient-dev libssl-dev libncurses-dev mariadb-server mariadb-client
lighttpd apache2 libapache2-mod-fcgid nginx-light spawn-fcgi fcgiwrap wrk tmux curl
procps iproute2 python3 clang-format debhelper lintian python3-prometheus-client
galera-4 rsync php-fpm php-cli socat iptables prometheus caddy"
# The README's Installing path (t_newcomer): passwords, the postinst's user.
pkgs="$pkgs openssl adduser"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing (run 'make deps' as root)" >&2
	exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# Never start the distribution's own services: tests start private ones.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
