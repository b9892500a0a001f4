#!/bin/bash
# idemgate -t checks as the user the gateway runs as: a real PHP-FPM pool
# on Debian's www-data:www-data 0660 socket is refused to a user outside
# www-data (the missing permission and the fix named), reached by one in
# the socket's group; a directory on the path without search permission
# is named; an upstream not started yet is a warning; a tcp: upstream
# that never answers costs about 1 s; socket_owner that the user could
# not chown to fails at -t as it fails at start.
. "$(dirname "$0")/../lib/harness.sh"

# A throwaway system user in a throwaway group; kept for the next run.
U=idemtchk
G=idemtsock
getent group "$G" >/dev/null || groupadd --system "$G"
getent passwd "$U" >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin -G "$G" "$U"
check "user $U exists, in group $G" sh -c "id -nG $U | grep -qw $G"
check "user $U is not in group www-data" sh -c "! id -nG $U | grep -qw www-data"

# conf NAME UPSTREAM [GATEWAY-LINES]: a config with one fastcgi: route.
conf() {
	printf '[gateway]\nlisten = unix:%s/gw.sock\n%s\n[route /pay.php]\nhandler = fastcgi:%s\nrun_limit = 60s\n' \
		"$T" "${3:-}" "$2" >"$T/$1.conf"
	chmod 0644 "$T/$1.conf"
}
# t NAME ARGS...: idemgate -t on $T/NAME.conf; rc in RC, output in OUT.
t() {
	local name=$1
	shift
	OUT=$("$IDEMGATE" -t "$@" -c "$T/$name.conf" 2>&1)
	RC=$?
	OUT=$(printf '%s\n' "$OUT" | nonote)
}
# nonote: drops -t's note on a config without secret_key_file (t_seal
# checks it), which is not what these checks are about.
nonote() { grep -v ': note: answers stored in clear' || true; }

# --- Debian's PHP-FPM socket: www-data:www-data 0660.
fpm_start fpm "listen.owner = www-data
listen.group = www-data" || { done_testing; exit 1; }
expect_eq "the pool's socket is www-data:www-data 0660" "www-data:www-data 660" \
	"$(stat -c '%U:%G %a' "$T/fpm.sock")"
conf fpm "unix:$T/fpm.sock"

t fpm -u root
expect_eq "as root: reached, syntax ok" "0 syntax ok" "$RC $OUT"

t fpm -u "$U"
expect_eq "-u $U: exit 1" 1 "$RC"
expect_match "-u $U: FILE:LINE:COL, route, upstream, user" \
	"^$T/fpm.conf:5:11: route /pay.php: fastcgi: unix:$T/fpm.sock: user $U may not connect: " "$OUT"
expect_match "-u $U: names the missing permission" \
	"no write permission on socket $T/fpm.sock \(www-data:www-data 0660\), and $U is not in group www-data" "$OUT"
expect_match "-u $U: names the fix" "adduser $U www-data, then restart idemgate" "$OUT"
expect_nomatch "-u $U: no syntax ok" 'syntax ok' "$OUT"

# The user itself, as the service's ExecStartPre runs it.
OUT=$(runuser -u "$U" -- "$IDEMGATE" -t -c "$T/fpm.conf" 2>&1)
expect_eq "as $U itself: exit 1" 1 "$?"
expect_match "as $U itself: the same answer" "user $U may not connect: no write permission" "$OUT"

# With www-data among its groups (SupplementaryGroups=, or adduser), it
# reaches the pool: the process's own groups count.
OUT=$(setpriv --reuid="$U" --regid="$U" --groups="$G,www-data" \
	"$IDEMGATE" -t -c "$T/fpm.conf" 2>&1)
RC=$?
expect_eq "as $U in group www-data: syntax ok" "0 syntax ok" "$RC $(printf '%s\n' "$OUT" | nonote)"

# What -t predicts is what a FastCGI client meets on that socket.
fcgi_get() { # fcgi_get RUNNER...: one GET of pay.php through the pool
	"$@" env SCRIPT_FILENAME="$T/www/pay.php" REQUEST_METHOD=GET \
		cgi-fcgi -bind -connect "$T/fpm.sock" >/dev/null 2>&1
}
n=$(fpm_runs)
fcgi_get runuser -u "$U" --
expect_eq "$U outside www-data: PHP-FPM never runs the script" "$n" "$(fpm_runs)"
fcgi_get setpriv --reuid="$U" --regid="$U" --groups="$G,www-data"
expect_eq "$U in www-data: PHP-FPM runs it" $((n + 1)) "$(fpm_runs)"

# --- A socket in a group $U is in: reached after initgroups.
socat "UNIX-LISTEN:$T/grp.sock,fork,user=www-data,group=$G,mode=0660" /dev/null &
H_BGPIDS+=($!)
wait_until 5 test -S "$T/grp.sock" || not_ok "socat listens on grp.sock"
conf grp "unix:$T/grp.sock"
t grp -u "$U"
expect_eq "-u $U, socket group $G: syntax ok" "0 syntax ok" "$RC $OUT"

# --- A directory on the way without search permission.
mkdir -m 0750 "$T/priv"
socat "UNIX-LISTEN:$T/priv/up.sock,fork,mode=0666" /dev/null &
H_BGPIDS+=($!)
wait_until 5 test -S "$T/priv/up.sock" || not_ok "socat listens on priv/up.sock"
conf priv "unix:$T/priv/up.sock"
t priv -u "$U"
expect_eq "directory: exit 1" 1 "$RC"
expect_match "directory: names it, owner, group, mode" \
	"user $U may not connect: no search permission on directory $T/priv \(root:root 0750\)" "$OUT"

# --- Not started yet: a warning, not an error.
conf gone "unix:$T/nothing-here.sock"
t gone -u "$U"
expect_eq "no socket: exit 0" 0 "$RC"
expect_match "no socket: a warning with FILE:LINE:COL" \
	"^$T/gone.conf:5:11: warning: route /pay.php: fastcgi: unix:$T/nothing-here.sock: cannot connect now: No such file or directory" "$OUT"
expect_eq "no socket: then syntax ok" "syntax ok" "$(printf '%s\n' "$OUT" | tail -1)"

P=$(free_port)
conf refused "tcp:127.0.0.1:$P"
t refused
expect_eq "tcp refused: exit 0" 0 "$RC"
expect_match "tcp refused: a warning" "warning: route /pay.php: fastcgi: tcp:127.0.0.1:$P: cannot connect now: Connection refused" "$OUT"

# A tcp: listener that never accepts (backlog full): the connect is cut
# at 1 s.
P=$(free_port)
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(0)
held = []
for i in range(8):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(("127.0.0.1", int(sys.argv[1])))
    except BlockingIOError: pass
    held.append(c)
open(sys.argv[2], "w").close()
time.sleep(60)
' "$P" "$T/full.ready" &
H_BGPIDS+=($!)
wait_until 5 test -f "$T/full.ready" || not_ok "the full listener is up"
conf full "tcp:127.0.0.1:$P"
t0=$(now_ms)
t full
dt=$(($(now_ms) - t0))
expect_eq "tcp never accepting: exit 0" 0 "$RC"
expect_match "tcp never accepting: a timeout warning" "tcp:127.0.0.1:$P: cannot connect now: Connection timed out" "$OUT"
expect_lt "tcp never accepting: -t takes under 3 s" "$dt" 3000

# --- socket_owner the user cannot give: -t refuses as the start would.
mkdir -m 0755 "$T/run"
chown "$U:$U" "$T/run"
printf '[gateway]\nlisten = unix:%s/run/gw.sock\nsocket_owner = %s:www-data\n[route /]\nhandler = fastcgi:unix:%s/grp.sock\nrun_limit = 60s\n' \
	"$T" "$U" "$T" >"$T/owner.conf"
chmod 0644 "$T/owner.conf"
OUT=$(runuser -u "$U" -- "$IDEMGATE" -t -c "$T/owner.conf" 2>&1)
expect_eq "socket_owner $U:www-data as $U: exit 1" 1 "$?"
expect_match "socket_owner: FILE:LINE:COL and why" \
	"^$T/owner.conf:3:16: socket_owner $U:www-data: user $U may not give its socket to a group it is not in" "$OUT"
expect_match "socket_owner: names the fixes" \
	"run idemgate as root, take the socket from systemd .*SocketGroup=.*adduser $U www-data.*drop socket_owner" "$OUT"
OUT=$(timeout 10 runuser -u "$U" -- "$IDEMGATE" -c "$T/owner.conf" 2>&1)
expect_ne "the gateway itself, started so, exits non-zero" 0 "$?"
expect_match "the gateway itself: chown refused" "chown .*Operation not permitted" "$OUT"
sed -i "s/^socket_owner = .*/socket_owner = $U:$G/" "$T/owner.conf"
OUT=$(runuser -u "$U" -- "$IDEMGATE" -t -c "$T/owner.conf" 2>&1)
RC=$?
expect_eq "socket_owner $U:$G as $U: syntax ok" "0 syntax ok" "$RC $(printf '%s\n' "$OUT" | nonote)"
t owner -u root
expect_eq "socket_owner: root may give it to anyone" "0 syntax ok" "$RC $OUT"

# --- The key file, read as the user -t checks as: one only root may read
# fails there, as the gateway started as that user would.
mkdir -m 0755 "$T/keys.d"
printf 'k1 %064d\n' 1 >"$T/keys.d/keys"
chmod 0600 "$T/keys.d/keys"
conf sealed "unix:$T/fpm.sock" "secret_key_file = $T/keys.d/keys"
t sealed -u root
expect_eq "keys root's 0600, as root: syntax ok" "0 syntax ok" "$RC $OUT"
t sealed -u "$U"
expect_eq "keys root's 0600, -u $U: exit 1" 1 "$RC"
expect_match "keys root's 0600, -u $U: FILE:LINE:COL, the file, why" \
	"^$T/sealed.conf:3:19: secret_key_file $T/keys.d/keys: Permission denied" "$OUT"
chown "$U" "$T/keys.d/keys"
OUT=$(setpriv --reuid="$U" --regid="$U" --groups="$G,www-data" \
	"$IDEMGATE" -t -c "$T/sealed.conf" 2>&1)
RC=$?
expect_eq "keys $U's, as $U: syntax ok" "0 syntax ok" "$RC $(printf '%s\n' "$OUT" | nonote)"
t sealed -u root
expect_eq "keys $U's, as root: exit 1" 1 "$RC"
expect_match "keys $U's, as root: owned by another user" \
	"secret_key_file $T/keys.d/keys: owned by another user" "$OUT"
OUT=$(timeout 10 "$IDEMGATE" -c "$T/sealed.conf" 2>&1)
expect_eq "keys $U's: a gateway started as root refuses them, exit 1" 1 "$?"
expect_match "keys $U's: the start says why" "owned by another user" "$OUT"

# --- -u: bad usage is one line and exit 2.
t fpm -u no-such-user-x
expect_eq "-u unknown: exit 2, one line" "2 idemgate: -u no-such-user-x: no such user" "$RC $OUT"
OUT=$(runuser -u "$U" -- "$IDEMGATE" -t -u root -c "$T/fpm.conf" 2>&1)
expect_eq "-u by a non-root user: exit 2" "2 idemgate: -u root: only root can check as another user" "$? $OUT"
"$IDEMGATE" -u "$U" -c "$T/fpm.conf" >/dev/null 2>&1
expect_eq "-u without -t: usage, exit 2" 2 "$?"
done_testing
