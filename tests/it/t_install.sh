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
else
	echo "# systemd-analyze not installed: units not verified"
fi

# A second install keeps an edited config.
echo "; edited" >>"$D/etc/idemgate/idemgate.conf"
make -s -C "$IDEM_ROOT" install-files B="$IDEM_BUILD" DESTDIR="$D" PREFIX=/opt/idem >>"$T/install.log" 2>&1
expect_eq "reinstall keeps the operator's config" "; edited" "$(tail -1 "$D/etc/idemgate/idemgate.conf")"
done_testing
