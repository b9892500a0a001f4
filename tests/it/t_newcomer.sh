#!/bin/bash
# The README's "Installing" path, walked word for word on a staged install:
# every block marked "<!-- newcomer:NAME -->" in README.md is taken from
# the README and run, with only the paths (the staged tree, this test's
# temp dir) and the port rewritten.  Programs run as the package runs
# them: the postinst makes the idemgate user (kept: never deleted), the
# gateway runs as idemgate with group www-data on a socket handed over as
# idemgate.socket hands it, the cleanup timer's command as idemgate,
# Debian's PHP-FPM from a copy of its www.conf (as www-data), Apache with
# the staged conf enabled by the real a2enmod / a2enconf pointed at the
# staged /etc/apache2.  It ends with a created and a replayed payment,
# the PHP script's own log counting one run.
. "$(dirname "$0")/../lib/harness.sh"

README=$IDEM_ROOT/README.md
S=$T/stage
FPM=$(command -v php-fpm8.2 php-fpm 2>/dev/null | head -1)
for tool in "$FPM" apache2 a2enconf a2enmod setpriv runuser openssl python3; do
	if [ -z "$tool" ] || ! command -v "$tool" >/dev/null 2>&1; then
		not_ok "${tool:-php-fpm} installed"
		done_testing
		exit 1
	fi
done

# readme_block NAME: the fenced block after "<!-- newcomer:NAME -->".
readme_block() {
	awk -v m="<!-- newcomer:$1 -->" '
		$0 == m { want = 1; next }
		want && /^```/ { if (inblk) exit; inblk = 1; next }
		inblk { print }' "$README"
}
for b in package fpm config db start apache check app try mycnf; do
	check "README has the newcomer:$b block" test -n "$(readme_block $b)"
done
V=$(cd "$IDEM_ROOT" && dpkg-parsechangelog -S Version 2>/dev/null)
expect_match "step 1 installs the .deb dpkg-buildpackage makes" \
	"apt-get install \.\./idemgate_${V}_$(dpkg --print-architecture)\.deb" "$(readme_block package)"
expect_eq "the README's option file is etc/my.cnf.example, whole" \
	"$(cat "$IDEM_ROOT/etc/my.cnf.example")" "$(readme_block mycnf)"

# The paths the test must move into its temp dir; nothing else changes.
rewrite() {
	sed -e "s|/etc/idemgate/|$S/etc/idemgate/|g" \
	    -e "s|/usr/share/doc/idemgate|$S/usr/share/doc/idemgate|g" \
	    -e "s|/etc/php/8.2/fpm/pool.d/www.conf|$T/fpm/www.conf|g" \
	    -e "s|/run/php/php8.2-fpm.sock|$T/php.sock|g" \
	    -e "s|/run/idemgate/idemgate.sock|$T/idemgate.sock|g" \
	    -e "s|/root/idemgate-setup|$T/setup|g" \
	    -e "s|/var/www/html|$T/www|g" \
	    -e "s|http://localhost/|http://127.0.0.1:${PORT[apache]:-0}/|g"
}

# step NAME: runs the README's block NAME under bash -e, output in
# $T/step-NAME.log; the commands that would reach this machine's
# services are shell functions: systemctl records what was asked (the
# test then does it), mariadb is root on the private server, idemctl
# reads the staged config.
step() {
	{
		echo 'set -e'
		echo "cd '$IDEM_ROOT'"
		echo "export PATH='$S/usr/sbin:$S/usr/bin':\$PATH"
		echo "systemctl() { echo \"\$*\" >>'$T/systemctl.req'; }"
		echo "mariadb() { command mariadb --no-defaults --socket='$MDB_SOCK' -u root \"\$@\"; }"
		echo "idemctl() { command '$S/usr/bin/idemctl' -c '$S/etc/idemgate/idemgate.conf' \"\$@\"; }"
		echo "export APACHE_CONFDIR='$S/etc/apache2' APACHE_STATE_DIRECTORY='$T/a2state'"
		readme_block "$1" | rewrite
	} >"$T/step-$1.sh"
	: >"$T/systemctl.req"
	bash "$T/step-$1.sh" >"$T/step-$1.log" 2>&1
}

# --- 1. The package, staged: installed as debian/rules installs it, then
# its postinst (paths into the stage) makes the user and owns the config.
make -s -C "$IDEM_ROOT" install-files B="$IDEM_BUILD" DESTDIR="$S" PREFIX=/usr \
	SYSCONFDIR=/etc UNITDIR=/lib/systemd/system >"$T/install.log" 2>&1
expect_eq "1. make install-files into the stage" 0 "$?"
for f in conf-available/idemgate.conf conf-available/idemgate-php.conf; do
	expect_eq "1. /etc/apache2/$f shipped, 0644" 644 "$(stat -c %a "$S/etc/apache2/$f" 2>&1)"
done
expect_eq "1. my.cnf.example in the docs" 644 "$(stat -c %a "$S/usr/share/doc/idemgate/my.cnf.example" 2>&1)"
sed "s|/etc/idemgate/|$S/etc/idemgate/|g" "$IDEM_ROOT/debian/postinst" >"$T/postinst"
sh "$T/postinst" configure >"$T/postinst.log" 2>&1
expect_eq "1. postinst configure" 0 "$?"
check "1. the system user idemgate exists" sh -c "getent passwd idemgate >/dev/null"
C=$S/etc/idemgate/idemgate.conf
expect_eq "1. the config: 0640 root:idemgate" "640 root:idemgate" "$(stat -c '%a %U:%G' "$C")"

# As the service runs: user idemgate, group idemgate, www-data besides
# (the postinst puts the user in group www-data).
as_idemgate() { setpriv --reuid=idemgate --regid=idemgate --groups=idemgate,www-data -- "$@"; }

# A config the service cannot read: idemgate -t names the fix.
cp "$C" "$T/noread.conf"
chown root:root "$T/noread.conf"
chmod 0640 "$T/noread.conf"
out=$(as_idemgate "$S/usr/sbin/idemgate" -t -c "$T/noread.conf" 2>&1)
expect_ne "unreadable config: idemgate -t fails" 0 "$?"
expect_match "unreadable config: the message names the fix" \
	"noread.conf: Permission denied \(running as user idemgate, group idemgate: chgrp idemgate $T/noread.conf && chmod 0640 $T/noread.conf\)" "$out"
# One its group may read, by a user outside that group (an operator
# trying idemtop): the fix is to join the group, not to take the file.
chgrp www-data "$T/noread.conf"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$S/usr/sbin/idemgate" -t -c "$T/noread.conf" 2>&1)
expect_match "a file of a group the user is not in: join it, do not take it" \
	"noread.conf: Permission denied \(running as user nobody, not in group www-data, which may read it: adduser nobody www-data, or use an option file of your own\)" "$out"

# --- 2. The servers: a private MariaDB; Debian's PHP-FPM and Apache.
db_private || { done_testing; exit 1; }
# $T/www stands for Debian's /var/www/html.
mkdir -p "$T/fpm" "$T/www" "$T/apache/run"
chmod 0755 "$T/www"
chown www-data "$T/apache/run"
# The staged docs name the machine's MariaDB socket: this test's instead.
sed -i "s|/run/mysqld/mysqld.sock|$MDB_SOCK|" "$S/usr/share/doc/idemgate/my.cnf.example"

# --- 3. PHP-FPM's limit, on a copy of Debian's own pool.
cp /etc/php/8.2/fpm/pool.d/www.conf "$T/fpm/www.conf"
sed -i "s|^listen = .*|listen = $T/php.sock|" "$T/fpm/www.conf"
step fpm
expect_eq "3. the README's PHP-FPM step" 0 "$?"
expect_eq "3. request_terminate_timeout set in the pool" "request_terminate_timeout = 60s" \
	"$(grep '^request_terminate_timeout ' "$T/fpm/www.conf")"
# Without it shutdown functions, destructors and work after
# fastcgi_finish_request() run past the limit (PHP-FPM's default).
expect_eq "3. ... and it holds after the script's end" "request_terminate_timeout_track_finished = yes" \
	"$(grep '^request_terminate_timeout_track_finished' "$T/fpm/www.conf")"
expect_eq "3. asks for php8.2-fpm's restart" "restart php8.2-fpm" "$(cat "$T/systemctl.req")"
cat >"$T/fpm/php-fpm.conf" <<EOF
[global]
pid = $T/fpm/fpm.pid
error_log = $T/fpm/fpm.log
daemonize = no
include = $T/fpm/www.conf
EOF
"$FPM" -F -y "$T/fpm/php-fpm.conf" >"$T/fpm/stdout.log" 2>&1 &
H_BGPIDS+=($!)
wait_until 10 test -S "$T/php.sock" || not_ok "3. PHP-FPM listens" "$(tail -3 "$T/fpm/fpm.log")"
expect_eq "3. the pool's socket: www-data, 0660, as Debian's" "660 www-data:www-data" \
	"$(stat -c '%a %U:%G' "$T/php.sock")"

# --- 4. The config, written whole, checked as the service's user.
step config
expect_eq "4. the README's config step" 0 "$?"
expect_eq "4. the config keeps 0640 root:idemgate" "640 root:idemgate" "$(stat -c '%a %U:%G' "$C")"
expect_eq "4. the key file: 0640 root:idemgate" "640 root:idemgate" \
	"$(stat -c '%a %U:%G' "$S/etc/idemgate/keys")"

# --- 5. The database, in the README's order, with its option file.
step db
expect_eq "5. the README's database step" 0 "$?"
expect_match "5. migrate as idem_migrate" 'schema at version [0-9]+, applied' "$(cat "$T/step-db.log")"
expect_eq "5. my.cnf: 0640 root:idemgate" "640 root:idemgate" "$(stat -c '%a %U:%G' "$S/etc/idemgate/my.cnf")"
expect_eq "5. every password set" 0 "$(grep -c '^password = CHANGE-ME' "$S/etc/idemgate/my.cnf")"

# --- 6. The units, as systemd would start them.
step start
expect_eq "6. the README's start step" 0 "$?"
expect_eq "6. idemgate -t as the service's user: syntax ok" "syntax ok" "$(cat "$T/step-start.log")"
expect_eq "6. asks for the socket and the timer" "start idemgate.socket idemctl-cleanup.timer" "$(cat "$T/systemctl.req")"
U=$S/lib/systemd/system
unit() { # unit FILE KEY: the value, paths into the stage
	sed -n "s/^$2=//p" "$U/$1" | sed -e "s|^/usr/|$S/usr/|" -e "s|/etc/idemgate/|$S/etc/idemgate/|g"
}
expect_eq "6. the units run as idemgate" "idemgate idemgate idemgate" \
	"$(unit idemgate.service User) $(unit idemgate.service Group) $(unit idemctl-cleanup.service User)"
out=$(as_idemgate $(unit idemgate.service ExecStartPre) 2>&1)
expect_eq "6. ExecStartPre (idemgate -t) as idemgate" "0 syntax ok" "$? $out"
# idemgate.socket: the socket made as root, owned as the unit says, then
# the service as idemgate with it on fd 3 (LISTEN_FDS).
python3 - "$T/idemgate.sock" "$(unit idemgate.socket SocketUser)" \
	"$(unit idemgate.socket SocketGroup)" "$(unit idemgate.socket SocketMode)" \
	$(unit idemgate.service ExecStart) >"$T/gw.log" 2>&1 </dev/null <<'PY' &
import grp, os, pwd, socket, sys
path, user, group, mode = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chown(path, pwd.getpwnam(user).pw_uid, grp.getgrnam(group).gr_gid)
os.chmod(path, int(mode, 8))
s.listen(64)
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
pw = pwd.getpwnam("idemgate")
os.setgroups([pw.pw_gid, grp.getgrnam("www-data").gr_gid])
os.setgid(pw.pw_gid)
os.setuid(pw.pw_uid)
env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
os.execve(sys.argv[5], sys.argv[5:], env)
PY
GW_PID[gw]=$!
wait_until 10 test -S "$T/idemgate.sock" && wait_until 5 gw_has_workers gw ||
	not_ok "6. idemgate serves the socket" "$(tail -3 "$T/gw.log")"
expect_eq "6. the socket: idemgate:www-data 0660" "660 idemgate:www-data" "$(stat -c '%a %U:%G' "$T/idemgate.sock")"
out=$(as_idemgate $(unit idemctl-cleanup.service ExecStart) 2>&1)
expect_eq "6. the cleanup timer's command, as idemgate: quiet success" "0 " "$? $out"

# --- 7. Apache: Debian's defaults, php8.2-fpm.conf enabled (as PHP-FPM's
# notice says), then the README's step, all in the staged /etc/apache2.
A=$S/etc/apache2
mkdir -p "$A/conf-enabled" "$A/mods-enabled" "$T/a2state"
cp -r /etc/apache2/mods-available "$A/"
cp /etc/apache2/conf-available/php8.2-fpm.conf "$A/conf-available/"
: >"$A/envvars"
sed -i "s|/run/idemgate/idemgate.sock|$T/idemgate.sock|" "$A/conf-available/idemgate-php.conf"
(export APACHE_CONFDIR=$A APACHE_STATE_DIRECTORY=$T/a2state
	a2enmod -q mpm_event authz_core && a2enconf -q php8.2-fpm) >"$T/a2-before.log" 2>&1
step apache
expect_eq "7. the README's Apache step" 0 "$?"
expect_eq "7. asks for apache2's reload" "reload apache2" "$(cat "$T/systemctl.req")"
expect_eq "7. conf-enabled: idemgate-php.conf alone" "idemgate-php.conf -> ../conf-available/idemgate-php.conf" \
	"$(cd "$A/conf-enabled" && for f in *; do echo "$f -> $(readlink "$f")"; done)"
for m in proxy proxy_fcgi setenvif reqtimeout; do
	check "7. module $m enabled" test -e "$A/mods-enabled/$m.load"
done
h_newcomer_apache() {
	cat >"$T/apache/apache.conf" <<EOF
ServerRoot "$T/apache"
ServerName localhost
Listen 127.0.0.1:${PORT[apache]}
PidFile $T/apache/apache.pid
ErrorLog $T/apache/error.log
LogLevel warn
DefaultRuntimeDir $T/apache/run
Mutex file:$T/apache/run default
User www-data
Group www-data
IncludeOptional $A/mods-enabled/*.load
IncludeOptional $A/mods-enabled/*.conf
IncludeOptional $A/conf-enabled/*.conf
DocumentRoot "$T/www"
<Directory "$T/www">
    Require all granted
</Directory>
EOF
}
WS_KIND[apache]=apache
ws_launch apache h_newcomer_apache apache2 -f "$T/apache/apache.conf" -DFOREGROUND ||
	{ done_testing; exit 1; }

# --- 8. idemctl check: every program as its own user, every line ok.
step check
expect_eq "8. idemctl check: exit 0" 0 "$?"
expect_eq "8. every line is [ ok ]" "" "$(grep -v '^\[ ok \]' "$T/step-check.log")"
for r in "cleanup.*group \[idem_cleanup\]" "console.*group \[idem_console\]" "gateway"; do
	expect_match "8. privileges enough for $r" "^\[ ok \] privileges enough for $r" "$(cat "$T/step-check.log")"
done
# A group with the wrong user fails; a missing group says what to add.
M=$S/etc/idemgate/my.cnf
cpw=$(sed -n '/^\[idem_console\]/,/^database/s/^password = //p' "$M")
sed -e '/^\[idem_cleanup\]/,/^database/s/^user = .*/user = idem_console/' \
    -e "/^\[idem_cleanup\]/,/^database/s/^password = .*/password = $cpw/" "$M" >"$T/wrong.cnf"
sed "s|^mysql_defaults_file = .*|mysql_defaults_file = $T/wrong.cnf|" "$C" >"$T/wrong.conf"
# (outputs kept in $T/*.log, where the harness looks for sanitizer reports)
"$S/usr/bin/idemctl" -c "$T/wrong.conf" check >"$T/check-wrong.log" 2>&1
expect_eq "check: [idem_cleanup] with the console's user: exit 9" 9 "$?"
out=$(cat "$T/check-wrong.log")
expect_match "check: that group's gap fails" '^\[fail\] privileges missing for cleanup .*group \[idem_cleanup\]: .*idem_keys:DELETE' "$out"
awk '/^\[/ { skip = ($0 == "[idem_console]") } !skip' "$M" >"$T/nocons.cnf"
sed "s|^mysql_defaults_file = .*|mysql_defaults_file = $T/nocons.cnf|" "$C" >"$T/nocons.conf"
"$S/usr/bin/idemctl" -c "$T/nocons.conf" check >"$T/check-nocons.log" 2>&1
expect_eq "check: no [idem_console] group: exit 0" 0 "$?"
out=$(cat "$T/check-nocons.log")
expect_match "check: the console, as the gateway's user, says what to add" \
	"^\[warn\] privileges missing for console .*no \[idem_console\] group in $T/nocons.cnf: add one" "$out"

sed '/^\[idem_cleanup\]/,/^database/s/^password = .*/password = wrong/' "$M" >"$T/badpw.cnf"
sed "s|^mysql_defaults_file = .*|mysql_defaults_file = $T/badpw.cnf|" "$C" >"$T/badpw.conf"
"$S/usr/bin/idemctl" -c "$T/badpw.conf" check >"$T/check-badpw.log" 2>&1
expect_eq "check: [idem_cleanup] cannot log in: exit 3" 3 "$?"
expect_match "check: says which group" "^\[fail\] cleanup: database unreachable as group \[idem_cleanup\] of $T/badpw.cnf" "$(cat "$T/check-badpw.log")"

# --- 9. A payment and its retry, through Apache, idemgate and PHP-FPM.
step app
expect_eq "9. the README's stand-in installed" "0 644 755 www-data" \
	"$? $(stat -c %a "$T/www/pay.php") $(stat -c '%a %U' "$T/www/runs")"
step try
expect_eq "9. the README's curl commands" 0 "$?"
out=$(tr -d '\r' <"$T/step-try.log")
expect_eq "9. two answers, 201 each" "201 201" "$(printf '%s\n' "$out" | awk '/^HTTP\//{print $2}' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "9. the first created, the second reused" "created reused" \
	"$(printf '%s\n' "$out" | sed -n 's/^Idempotency-Result: //p' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "9. the second replayed" "true" "$(printf '%s\n' "$out" | sed -n 's/^Idempotent-Replayed: //p')"
bodies=$(printf '%s\n' "$out" | awk '/^HTTP\//{h=1; n++; next} h && /^$/{h=0; next} !h{print n": "$0}')
expect_eq "9. the replay is the answer, byte for byte" "$(printf '%s\n' "$bodies" | sed -n 's/^1: //p')" \
	"$(printf '%s\n' "$bodies" | sed -n 's/^2: //p')"
expect_match "9. PHP found its script and read the body" '"body":"amount=5"' "$bodies"
expect_eq "9. the PHP script ran once (its own log)" 1 "$(grep -c '^start ' "$T/www/runs/pay.runs" 2>/dev/null)"

# --- CGI programs instead: the package's idemgate.conf, with Debian's
# serve-cgi-bin.conf and mod_cgid on (its ScriptAlias stays; idemgate.conf's
# SetHandler takes the files), and the package's own [route /] (handler =
# script) plus a protected route.
CB=$T/cgi-bin
mkdir -p "$CB" "$T/apcgi/run"
chmod 0755 "$CB"
chown www-data "$T/apcgi/run"
cp "$ITBIN/payments" "$CB/pay.cgi"
chmod 0755 "$CB/pay.cgi"
gw_conf "$T/cgi.conf" "unix:$T/cgi.sock" "$M"
# the same store, keyed by the README's gateway: every gateway of a store
# hashes keys alike, so this one has the key file too
echo "secret_key_file = $S/etc/idemgate/keys" >>"$T/cgi.conf"
printf '\n[route /cgi-bin/pay.cgi]\nhandler = script\nscript_root = %s\nrequire_key = yes\n' "$CB" >>"$T/cgi.conf"
sed -n '/^\[route \/\]/,/^script_root/p' "$IDEM_ROOT/etc/idemgate.conf" |
	sed "s|/usr/lib/cgi-bin|$CB|" >>"$T/cgi.conf"
gw_start cgi "$T/cgi.conf" || { done_testing; exit 1; }
chgrp www-data "$T/cgi.sock"
chmod 0660 "$T/cgi.sock"
for f in idemgate.conf serve-cgi-bin.conf; do
	src=$S/etc/apache2/conf-available/$f
	[ "$f" = idemgate.conf ] || src=/etc/apache2/conf-available/$f
	sed -e "s|/usr/lib/cgi-bin|$CB|g" -e "s|/run/idemgate/idemgate.sock|$T/cgi.sock|" "$src" >"$T/apcgi/$f"
done
h_cgi_apache() {
	{
		printf 'ServerRoot "%s"\nServerName localhost\nListen 127.0.0.1:%s\n' "$T/apcgi" "${PORT[apcgi]}"
		printf 'PidFile %s/apache.pid\nErrorLog %s/error.log\n' "$T/apcgi" "$T/apcgi"
		printf 'DefaultRuntimeDir %s/run\nMutex file:%s/run default\n' "$T/apcgi" "$T/apcgi"
		printf 'User www-data\nGroup www-data\nScriptSock %s/run/cgisock\n' "$T/apcgi"
		for m in mpm_event authz_core alias cgid proxy proxy_fcgi setenvif reqtimeout; do
			printf 'LoadModule %s_module /usr/lib/apache2/modules/mod_%s.so\n' "$m" "$m"
		done
		printf 'Include %s/serve-cgi-bin.conf\nInclude %s/idemgate.conf\n' "$T/apcgi" "$T/apcgi"
	} >"$T/apcgi/apache.conf"
}
WS_KIND[apcgi]=apache
ws_launch apcgi h_cgi_apache apache2 -f "$T/apcgi/apache.conf" -DFOREGROUND || { done_testing; exit 1; }
http c0 GET "$(url apcgi /cgi-bin/pay.cgi?via=apache)"
expect_eq "cgi: a GET passes" 201 "$HS"
expect_match "cgi: the program answered" 'query=via=apache' "$(body c0)"
http c1 POST "$(url apcgi /cgi-bin/pay.cgi)" --data-binary x
is_problem "cgi: the protected route without a key" c1 400 missing-key
K=$(new_key)
http c2 POST "$(url apcgi /cgi-bin/pay.cgi)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "cgi: created" created "$(hdr c2 Idempotency-Result)"
http c3 POST "$(url apcgi /cgi-bin/pay.cgi)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "cgi: reused" reused "$(hdr c3 Idempotency-Result)"
expect_file_eq "cgi: byte for byte" "$T/c2.b" "$T/c3.b"
expect_eq "cgi: runs, from the program's own log (GET, POST)" 2 "$(wc -l <"$CB/pay.cgi.runs" 2>/dev/null | tr -d ' ')"
done_testing
