#!/bin/bash
# debian/: dpkg-buildpackage builds a .deb from a copy of the tracked tree;
# lintian has nothing to say beyond the explained overrides; the package,
# unpacked into a temp root, holds what an operator expects, its shipped
# config passes "idemgate -t", and its maintainer scripts create the
# system user and enable (not start) the units.
. "$(dirname "$0")/../lib/harness.sh"

for tool in dpkg-buildpackage dh lintian; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		not_ok "$tool installed (make deps installs dpkg-dev, debhelper, lintian)"
		done_testing
	fi
done

S=$T/src/idemgate-0.2.0
mkdir -p "$S"
(cd "$IDEM_ROOT" && { git ls-files 2>/dev/null || find . -path ./build\* -prune -o -type f -print; } |
	tar -cf - -T -) | tar -xf - -C "$S"
check "debian/ is part of the tree" test -x "$S/debian/rules"
(cd "$S" && dpkg-buildpackage -us -uc -b) >"$T/build.log" 2>&1
expect_eq "dpkg-buildpackage -us -uc -b: exit 0" 0 "$?"
V=$(cd "$S" && dpkg-parsechangelog -S Version)
expect_eq "package version is the programs' version" \
	"idemgate $V" "$("$IDEM_BUILD/idemgate" --version)"
DEB=$T/src/idemgate_${V}_$(dpkg --print-architecture).deb
check "the .deb exists" test -f "$DEB"

out=$(lintian --pedantic -I "$T/src"/idemgate_*.changes 2>&1 | grep -v '^running with root')
expect_eq "lintian --pedantic: no tag outside debian/idemgate.lintian-overrides" "" "$out"

R=$T/root
dpkg -x "$DEB" "$R"
for f in /usr/sbin/idemgate /usr/bin/idemctl /usr/bin/idemtop; do
	check "$f in the package" test -x "$R$f"
	expect_eq "$f --version" "$(basename "$f") $V" "$("$R$f" --version 2>&1)"
done
for m in man8/idemgate.8.gz man8/idemctl.8.gz man1/idemtop.1.gz; do
	check "man page $m" test -f "$R/usr/share/man/$m"
done
for u in idemgate.service idemgate.socket idemctl-cleanup.service idemctl-cleanup.timer; do
	check "unit $u" test -f "$R/lib/systemd/system/$u"
done
expect_match "the service runs /usr/sbin/idemgate" '^ExecStart=/usr/sbin/idemgate -c /etc/idemgate/idemgate.conf$' \
	"$(grep '^ExecStart=' "$R/lib/systemd/system/idemgate.service")"
expect_eq "the service keeps /run/idemgate when it stops (the socket unit's file is there)" \
	"RuntimeDirectoryPreserve=yes" "$(grep '^RuntimeDirectoryPreserve=' "$R/lib/systemd/system/idemgate.service")"
check "grants.sql in the docs" test -f "$R/usr/share/doc/idemgate/grants.sql"
check "copyright in the docs" test -f "$R/usr/share/doc/idemgate/copyright"
check "Prometheus rules in /usr/share/idemgate" \
	test -f "$R/usr/share/idemgate/prometheus/idemgate.rules.yml"
check "Grafana dashboard in /usr/share/idemgate" \
	test -f "$R/usr/share/idemgate/grafana/idemgate-dashboard.json"
if command -v promtool >/dev/null 2>&1; then
	out=$(promtool check rules "$R/usr/share/idemgate/prometheus/idemgate.rules.yml" 2>&1)
	expect_eq "the packaged rules pass promtool check rules" 0 "$?"
fi
C=$R/etc/idemgate/idemgate.conf
check "config in /etc/idemgate" test -f "$C"
expect_match "the shipped config takes systemd's socket" '^listen = fd:0$' "$(grep '^listen' "$C")"
expect_match "config is a conffile" '^/etc/idemgate/idemgate.conf$' "$(dpkg-deb -f "$DEB" Conffiles 2>/dev/null; dpkg-deb --ctrl-tarfile "$DEB" | tar -xOf - ./conffiles)"
# The web-server wiring: shipped as it is in etc/, each a conffile.
conffiles=$(dpkg-deb --ctrl-tarfile "$DEB" | tar -xOf - ./conffiles)
for w in lighttpd/conf-available/20-idemgate.conf:lighttpd/20-idemgate.conf \
    lighttpd/conf-available/20-idemgate-php.conf:lighttpd/20-idemgate-php.conf \
    nginx/snippets/idemgate.conf:nginx/idemgate.conf \
    nginx/snippets/idemgate-php.conf:nginx/idemgate-php.conf \
    caddy/idemgate.caddy:caddy/idemgate.caddy; do
	f=/etc/${w%%:*}
	expect_file_eq "$f in the package" "$IDEM_ROOT/etc/${w#*:}" "$R$f"
	expect_match "$f is a conffile" "^$f\$" "$conffiles"
done
for f in idemgate.conf idemgate-php.conf; do
	A=/etc/apache2/conf-available/$f
	expect_file_eq "Apache's $f in the package, as shipped" "$IDEM_ROOT/etc/apache2/$f" "$R$A"
	expect_eq "$A is 0644 root:root" "644 root/root" "$(dpkg-deb -c "$DEB" | awk -v f=".$A" '$6 == f { print $1, $2 }' | sed 's/-rw-r--r--/644/')"
	expect_match "$A is a conffile" "^$A\$" "$conffiles"
done
check "the option file's example in the docs, uncompressed" \
	test -f "$R/usr/share/doc/idemgate/my.cnf.example"
for f in grants-migrate.sql grants.sql; do
	check "$f in the docs, uncompressed (the README copies it)" \
		test -f "$R/usr/share/doc/idemgate/$f"
done
expect_match "the cleanup timer runs as the cleanup user" \
	'^ExecStart=/usr/bin/idemctl .*-g idem_cleanup cleanup' \
	"$(grep '^ExecStart=' "$R/lib/systemd/system/idemctl-cleanup.service")"
out=$("$R/usr/sbin/idemgate" -t -c "$C" 2>&1)
rc=$?
expect_eq "idemgate -t on the shipped config" "0 syntax ok" "$rc $(printf '%s\n' "$out" | tail -n 1)"

# Maintainer scripts: read, not run (they would change this machine).
mkdir -p "$T/ctl"
dpkg-deb -e "$DEB" "$T/ctl"
check "postinst is valid sh" sh -n "$T/ctl/postinst"
expect_match "postinst creates the system user" 'adduser --system --group' "$(cat "$T/ctl/postinst")"
expect_match "postinst puts idemgate in group www-data (PHP-FPM's socket)" 'adduser --quiet idemgate www-data' "$(cat "$T/ctl/postinst")"
expect_match "postinst gives the config to group idemgate, 0640" 'chmod 0640 /etc/idemgate/idemgate.conf' "$(cat "$T/ctl/postinst")"
for u in idemgate.socket idemctl-cleanup.timer; do
	expect_match "postinst enables $u" "deb-systemd-helper .*enable.*$u|$u.*deb-systemd-helper" "$(grep -A3 "$u" "$T/ctl/postinst")"
done
expect_nomatch "postinst starts nothing before the database is set up" 'deb-systemd-invoke (.* )?start' "$(cat "$T/ctl/postinst")"
# An upgrade stops nothing, and a running gateway takes the new build.
expect_nomatch "an upgrade stops no unit (preinst)" 'deb-systemd-invoke .*stop' "$(cat "$T/ctl/preinst" 2>/dev/null)"
check "prerm is valid sh" sh -n "$T/ctl/prerm"
expect_match "prerm stops the units on removal only" '"\$1" = remove .*' "$(grep -B1 'deb-systemd-invoke stop' "$T/ctl/prerm" 2>/dev/null | head -1)"
for u in idemctl-cleanup.timer idemctl-cleanup.service idemgate.socket idemgate.service; do
	expect_match "prerm stops $u on removal" "$u" "$(sed -n '/deb-systemd-invoke stop/,/|| true/p' "$T/ctl/prerm" 2>/dev/null)"
done
expect_match "postinst try-restarts the units on upgrade (what runs takes the new build)" 'deb-systemd-invoke try-restart .*idemgate.service' "$(grep -A2 '"\$2"' "$T/ctl/postinst")"
out=$(dpkg-deb -f "$DEB" Depends)
expect_match "depends on the MariaDB client library" 'libmariadb3' "$out"
expect_match "depends on adduser" 'adduser' "$out"
# Every dependency is installable here.
out=$(dpkg --dry-run -i "$DEB" 2>&1)
expect_eq "dpkg --dry-run -i: dependencies satisfied" "0" "$?"
done_testing
