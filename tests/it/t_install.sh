#!/bin/bash
# make install: PREFIX and DESTDIR honoured; programs, man pages, the
# example config, grants, systemd units, Prometheus rules and the Grafana
# dashboard where an operator expects them.
. "$(dirname "$0")/../lib/harness.sh"

D=$T/stage
make -s -C "$IDEM_ROOT" install-files B="$IDEM_BUILD" DESTDIR="$D" PREFIX=/opt/idem >"$T/install.log" 2>&1
expect_eq "make install-files: exit 0" 0 "$?"
for f in /opt/idem/sbin/idemgate /opt/idem/bin/idemctl /opt/idem/bin/idemtop; do
	check "$f installed and executable" test -x "$D$f"
	v=$("$D$f" --version 2>&1)
	expect_match "$f --version" '^[a-z]+ [0-9]+\.[0-9]+\.[0-9]+$' "$v"
done
for m in man8/idemgate.8 man8/idemctl.8 man1/idemtop.1; do
	check "man page $m" test -f "$D/opt/idem/share/man/$m"
	expect_match "man page $m renders" 'NAME' "$(man -l "$D/opt/idem/share/man/$m" 2>/dev/null | head -5)"
done
check "example config in /etc/idemgate" test -f "$D/etc/idemgate/idemgate.conf"
expect_eq "the config is not world-readable (it names the option file)" 640 "$(stat -c %a "$D/etc/idemgate/idemgate.conf")"
check "example config in the docs" test -f "$D/opt/idem/share/doc/idemgate/idemgate.conf.example"
check "grants.sql in the docs" test -f "$D/opt/idem/share/doc/idemgate/grants.sql"
check "grants-migrate.sql in the docs" test -f "$D/opt/idem/share/doc/idemgate/grants-migrate.sql"
check "my.cnf.example in the docs" test -f "$D/opt/idem/share/doc/idemgate/my.cnf.example"
for f in idemgate.conf idemgate-php.conf; do
	expect_file_eq "Apache's $f in /etc/apache2/conf-available, as shipped" \
		"$IDEM_ROOT/etc/apache2/$f" "$D/etc/apache2/conf-available/$f"
	expect_eq "Apache's $f is 0644" 644 "$(stat -c %a "$D/etc/apache2/conf-available/$f")"
	if command -v apache2 >/dev/null 2>&1; then
		# The modules its a2enmod line names, so every block is read.
		{
			printf 'ServerRoot "%s"\nServerName localhost\nErrorLog %s/apache-t.log\n' "$T" "$T"
			for m in mpm_event authz_core alias proxy proxy_fcgi setenvif reqtimeout; do
				printf 'LoadModule %s_module /usr/lib/apache2/modules/mod_%s.so\n' "$m" "$m"
			done
			printf 'Include %s\n' "$D/etc/apache2/conf-available/$f"
		} >"$T/$f.apache"
		out=$(apache2 -t -f "$T/$f.apache" 2>&1)
		expect_eq "apache2 -t with $f and its modules" "0 Syntax OK" "$? $out"
	fi
done
S=$D/opt/idem/share/idemgate
check "Prometheus rules in share/idemgate" test -f "$S/prometheus/idemgate.rules.yml"
check "Grafana dashboard in share/idemgate" test -f "$S/grafana/idemgate-dashboard.json"
expect_file_eq "the rules installed as shipped" \
	"$IDEM_ROOT/etc/prometheus/idemgate.rules.yml" "$S/prometheus/idemgate.rules.yml"
expect_eq "the rules and dashboard are 0644" "644 644" \
	"$(stat -c %a "$S/prometheus/idemgate.rules.yml" "$S/grafana/idemgate-dashboard.json" | tr '\n' ' ' | sed 's/ $//')"
U=$D/opt/idem/lib/systemd/system
for u in idemgate.service idemgate.socket idemctl-cleanup.service idemctl-cleanup.timer; do
	check "unit $u" test -f "$U/$u"
done
expect_match "idemgate.service runs the installed idemgate" '^ExecStart=/opt/idem/sbin/idemgate -c /etc/idemgate/idemgate.conf$' "$(grep '^ExecStart=' "$U/idemgate.service")"
expect_match "idemgate.service checks the config first" '^ExecStartPre=/opt/idem/sbin/idemgate -t' "$(grep '^ExecStartPre=' "$U/idemgate.service")"
expect_match "cleanup service runs the installed idemctl" '^ExecStart=/opt/idem/bin/idemctl .* cleanup' "$(grep '^ExecStart=' "$U/idemctl-cleanup.service")"
expect_nomatch "no placeholder left in the units" '@[A-Z]+@' "$(cat "$U"/*)"
expect_match "the socket is not world-accessible" '^SocketMode=0660$' "$(grep '^SocketMode=' "$U/idemgate.socket")"
# systemd's own check, where systemd-analyze exists: installed for real
# under $T, so the units' ExecStart paths exist.
if command -v systemd-analyze >/dev/null 2>&1; then
	R=$T/real
	make -s -C "$IDEM_ROOT" install-files B="$IDEM_BUILD" PREFIX="$R/usr" \
	    SYSCONFDIR="$R/etc" UNITDIR="$R/units" >>"$T/install.log" 2>&1
	out=$(systemd-analyze verify --man=no "$R"/units/*.service "$R"/units/*.socket "$R"/units/*.timer 2>&1)
	expect_eq "systemd-analyze verify: the units are clean" "0 " "$? $out"
	expect_match "SYSCONFDIR moves the config the units name" "^ExecStart=$R/usr/sbin/idemgate -c $R/etc/idemgate/idemgate.conf\$" "$(grep '^ExecStart=' "$R/units/idemgate.service")"
	expect_match "... the cleanup unit's too" " -c $R/etc/idemgate/idemgate.conf " "$(grep '^ExecStart=' "$R/units/idemctl-cleanup.service")"
	check "... where the config is" test -f "$R/etc/idemgate/idemgate.conf"
else
	echo "# systemd-analyze not installed: units not verified"
fi

# Without DESTDIR the config goes to group idemgate, as the package's
# postinst does, so the units (User=idemgate) can read it; without that
# group, make install says what to do.
N=$T/nodestdir
make -s -C "$IDEM_ROOT" install-files B="$IDEM_BUILD" PREFIX="$N/usr" \
    SYSCONFDIR="$N/etc" UNITDIR="$N/units" >"$T/nd.log" 2>&1
expect_eq "make install-files without DESTDIR: exit 0" 0 "$?"
if getent group idemgate >/dev/null; then
	expect_eq "the config: 0640, group idemgate" "640 idemgate" "$(stat -c '%a %G' "$N/etc/idemgate/idemgate.conf")"
else
	expect_eq "the config: 0640" 640 "$(stat -c %a "$N/etc/idemgate/idemgate.conf")"
	expect_match "no group idemgate: make install says what to do" \
		"adduser --system --group .* idemgate.*chgrp idemgate $N/etc/idemgate/idemgate.conf" "$(cat "$T/nd.log")"
fi

# A second install keeps an edited config.
echo "; edited" >>"$D/etc/idemgate/idemgate.conf"
make -s -C "$IDEM_ROOT" install-files B="$IDEM_BUILD" DESTDIR="$D" PREFIX=/opt/idem >>"$T/install.log" 2>&1
expect_eq "reinstall keeps the operator's config" "; edited" "$(tail -1 "$D/etc/idemgate/idemgate.conf")"
done_testing
