#!/bin/bash
# Isolation of memory: a gateway run as a plain user (as systemd's
# User= or spawn-fcgi -u run it) holds the database password, the
# sealing keys and other clients' answers; a handler it starts runs as
# the same user, and so does a job's COMMAND under `idemctl run`.  Neither
# may read the memory of the process that started it (/proc/PID/mem,
# environ, maps: what ptrace(2) and a core dump would give), while the
# handler itself stays an ordinary process of that user.
. "$(dirname "$0")/../lib/harness.sh"

U=idemtmem
getent passwd "$U" >/dev/null ||
	useradd --system --no-create-home --shell /usr/sbin/nologin "$U"
check "user $U exists" getent passwd "$U"
as_user() { setpriv --reuid="$U" --regid="$U" --clear-groups "$@"; }

# Everything the user needs, in a directory of its own.
D="$T/u"
mkdir -m 0700 "$D"
cp "$IDEMGATE" "$IDEMCTL" "$D/"
db_new "$TNAME" || { done_testing; exit 1; }
cp "$DBCNF" "$D/db.cnf"
printf "k1 %s\n" "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n")" >"$D/keys"
chmod 0600 "$D/keys" "$D/db.cnf"
# peek.cgi: what the handler may read of the process that started it
# (PARENT, its parent by default) and of itself.
cat >"$D/peek.cgi" <<'EOF'
#!/bin/sh
p=${PARENT:-$PPID}
printf 'Content-Type: text/plain\r\n\r\n'
printf 'comm=%s\n' "$(cat /proc/$p/comm)"
for f in environ maps; do
	if head -c 1 /proc/$p/$f >/dev/null 2>&1; then echo "$f=read"; else echo "$f=denied"; fi
done
if (exec 3</proc/$p/mem) 2>/dev/null; then echo mem=open; else echo mem=denied; fi
if head -c 1 /proc/self/environ >/dev/null 2>&1; then echo self=read; else echo self=denied; fi
EOF
chmod 0755 "$D/peek.cgi"
gw_conf "$D/gw.conf" "unix:$D/gw.sock" "$D/db.cnf" "secret_key_file = $D/keys"
cat >>"$D/gw.conf" <<EOF

[route /peek]
handler = cgi:$D/peek.cgi
EOF
chown -R "$U:$U" "$D"

setpriv --reuid="$U" --regid="$U" --clear-groups "$D/idemgate" -c "$D/gw.conf" >"$T/gw.out" 2>"$T/gw.log" </dev/null &
GW_PID[gw]=$!
wait_until 10 test -S "$D/gw.sock" || not_ok "idemgate as $U listens" "$(tail -3 "$T/gw.log")"
wait_until 5 gw_has_workers gw || true
lighttpd_start web "unix:$D/gw.sock" || { done_testing; exit 1; }
expect_eq "the gateway runs as $U" "$U" "$(ps -o user= -p "${GW_PID[gw]}" | tr -d ' ')"
expect_nomatch "as $U: no warning about root" 'running as root' "$(cat "$T/gw.log")"

K=$(new_key)
http a POST "$(url web /peek)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "a handler of the gateway runs" 200 "$HS"
expect_match "its parent is a worker" "^comm=idemgate$" "$(body a)"
expect_match "it may not read the worker's environment" "^environ=denied$" "$(body a)"
expect_match "nor its memory map" "^maps=denied$" "$(body a)"
expect_match "nor open its memory" "^mem=denied$" "$(body a)"
expect_match "it may read its own" "^self=read$" "$(body a)"
http b POST "$(url web /peek)" -H "Idempotency-Key: $K" --data-binary x
expect_eq "its answer replays" "$(body a)" "$(body b)"

# Nor the supervisor's, the worker's parent.
S=${GW_PID[gw]}
http c GET "$(url web /peek)"
expect_eq "unprotected: the same" "$(body a)" "$(body c)"
printf '#!/bin/sh\nPARENT=%s exec %s\n' "$S" "$D/peek.cgi" >"$D/peek-super.cgi"
chmod 0755 "$D/peek-super.cgi"
chown "$U:$U" "$D/peek-super.cgi"
OUT=$(as_user sh "$D/peek-super.cgi" 2>&1)
expect_match "a process of $U may not read the supervisor's environment" "environ=denied" "$OUT"
expect_match "nor its memory" "mem=denied" "$OUT"

# A job's COMMAND under idemctl run, as the same user.
OUT=$(cd "$D" && as_user ./idemctl -c gw.conf run --key "job-$K" -- ./peek.cgi 2>&1)
expect_eq "idemctl run: COMMAND exits 0" 0 "$?"
expect_match "its parent is idemctl" "comm=idemctl" "$OUT"
expect_match "it may not read idemctl's environment" "environ=denied" "$OUT"
expect_match "nor open its memory" "mem=denied" "$OUT"
expect_match "it may read its own" "self=read" "$OUT"

gw_stop gw
done_testing
