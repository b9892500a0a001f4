#!/bin/bash
# idemgate -t: a good config passes, bad ones fail with FILE:LINE in the message.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
printf '[idemgate]\nsocket=/nonexistent\ndatabase=idemgate\n' >"$T/my.cnf"
chmod 0640 "$T/my.cnf"
cat >"$T/good.conf" <<EOF
[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/my.cnf

[idempotency]
ttl = 72h
wait = 250ms
max_body = 1M

[route /payments]
handler = cgi:$PAY
require_key = yes
timeout = 30s

[route /]
handler = script
script_root = $T/cgi
EOF
out=$("$IDEMGATE" -t -c "$T/good.conf" 2>&1)
expect_eq "good config: exit 0" 0 "$?"
expect_eq "good config: syntax ok, last" "syntax ok" "$(printf '%s\n' "$out" | tail -n 1)"
expect_match "good config: says answers are stored in clear" "good.conf: note: answers stored in clear" "$out"
"$IDEMGATE" -t -c "$T/good.conf" >/dev/full 2>/dev/null
expect_eq "good config, 'syntax ok' lost on a full disk: exit 1" 1 "$?"
expect_nomatch "good config: no warning" 'warning' "$out"
# An option file every user may read (it holds the store's password):
# still good, with a warning naming it and its line.
chmod 0644 "$T/my.cnf"
out=$("$IDEMGATE" -t -c "$T/good.conf" 2>&1)
expect_eq "option file readable by others: exit 0" 0 "$?"
expect_match "... a warning at mysql_defaults_file's line" \
	"good.conf:[0-9]+:[0-9]+: warning: mysql_defaults_file $T/my.cnf is readable by others \(mode 0644\)" "$out"
chmod 0660 "$T/my.cnf"
out=$("$IDEMGATE" -t -c "$T/good.conf" 2>&1)
expect_match "option file writable by its group: a warning" "is writable by others \(mode 0660\)" "$out"
chmod 0640 "$T/my.cnf"
# A command line it cannot take: one line that names it, exit 2.
for args in "--bogus" "-x" "-t extra" "-c" "-u nobody -c $T/good.conf"; do
	# shellcheck disable=SC2086
	out=$("$IDEMGATE" $args 2>&1 </dev/null)
	rc=$?
	expect_eq "idemgate $args: exit 2, one line" "2 1" "$rc $(printf '%s\n' "$out" | wc -l)"
done
expect_match "idemgate --bogus: names it" '^idemgate: unknown option --bogus ' "$("$IDEMGATE" --bogus 2>&1)"
# A ttl shorter than a run may last: valid, with a warning that says so.
sed 's/^ttl = 72h$/ttl = 10s/' "$T/good.conf" >"$T/shortttl.conf"
out=$("$IDEMGATE" -t -c "$T/shortttl.conf" 2>&1)
expect_eq "ttl under timeout: still valid" 0 "$?"
expect_match "ttl under timeout: warned, with the route" 'shortttl.conf:[0-9]+:[0-9]+: warning: route /payments: ttl is shorter than a run may last \(timeout\)' "$out"

# bad_conf NAME LINE TEXT: a config whose error is on line LINE
bad_conf() {
	local name=$1 line=$2 out rc
	printf '%s\n' "$3" >"$T/$name.conf"
	out=$("$IDEMGATE" -t -c "$T/$name.conf" 2>&1)
	rc=$?
	expect_ne "$name: non-zero exit" 0 "$rc"
	expect_match "$name: names $name.conf:$line" "$name\\.conf:$line([^0-9]|$)" "$out"
}

bad_conf unknown_key 4 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/my.cnf
bogus_key = 1"
bad_conf bad_duration 6 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/my.cnf

[route /payments]
ttl = 3 fortnights
handler = cgi:$PAY"
bad_conf bad_size 5 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/my.cnf
[idempotency]
max_body = lots"
bad_conf world_writable 3 "[gateway]
listen = unix:$T/gw.sock
socket_mode = 0666
mysql_defaults_file = $T/my.cnf"
bad_conf unknown_section 4 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/my.cnf
[frobnicate]"
bad_conf bad_handler 5 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/my.cnf
[route /x]
handler = teleport:/nowhere"

# -t also checks the files the config names, like nginx -t
bad_conf missing_program 6 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/my.cnf

[route /x]
handler = cgi:$T/cgi/no-such-program"
printf '#!/bin/sh\n' >"$T/cgi/not-exec"
chmod 0644 "$T/cgi/not-exec"
bad_conf unexecutable_program 5 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/my.cnf
[route /x]
handler = cgi:$T/cgi/not-exec"
expect_match "unexecutable_program: says why" 'not executable' "$("$IDEMGATE" -t -c "$T/unexecutable_program.conf" 2>&1)"
bad_conf missing_option_file 3 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/no-such.cnf
[route /x]
handler = cgi:$PAY"
# and the gateway itself refuses to start on it rather than use a default socket
out=$(timeout 10 "$IDEMGATE" -c "$T/missing_option_file.conf" 2>&1 </dev/null)
expect_ne "missing option file: idemgate does not start" 0 "$?"
expect_match "missing option file: names it" 'missing_option_file\.conf:3:.*no-such\.cnf' "$out"
# A directory, or a file that names no group the client reads, would
# leave the client library on its default socket too.
mkdir -p "$T/dir.cnf"
# bad_option_file NAME FILE WHAT PATTERN: a config whose
# mysql_defaults_file is FILE is refused at its line, saying PATTERN
bad_option_file() {
	bad_conf "$1" 3 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $2
[route /x]
handler = cgi:$PAY"
	expect_match "$3" "$4" "$("$IDEMGATE" -t -c "$T/$1.conf" 2>&1)"
}
bad_option_file option_file_dir "$T/dir.cnf" "option file a directory: says so" 'not a regular file'
printf '[other]\nsocket=/nonexistent\ndatabase=idemgate\n' >"$T/other.cnf"
bad_option_file option_file_no_group "$T/other.cnf" \
    "option file without [idemgate] or [client]: says so" 'no \[idemgate\] group'
# Group headers as the client library reads them: a comment after the
# ']' and blanks before it are allowed; blanks after the '[' make
# another group.
printf '[idemgate ] # the store\nsocket=/nonexistent\ndatabase=idemgate\n' >"$T/spaced.cnf"
sed "s|$T/my.cnf|$T/spaced.cnf|" "$T/good.conf" >"$T/spaced.conf"
out=$("$IDEMGATE" -t -c "$T/spaced.conf" 2>&1)
expect_eq "option file: '[idemgate ] # comment' is the group" "0 syntax ok" "$? $(echo "$out" | tail -1)"
printf '[ idemgate]\nsocket=/nonexistent\ndatabase=idemgate\n' >"$T/lead.cnf"
sed "s|$T/my.cnf|$T/lead.cnf|" "$T/good.conf" >"$T/lead.conf"
out=$("$IDEMGATE" -t -c "$T/lead.conf" 2>&1)
expect_match "option file: '[ idemgate]' is another group: refused" 'no \[idemgate\] group' "$out"
# An included file (the password kept apart) that is missing or cannot
# be read: the client library would log in without it.
printf '[idemgate]\nsocket=/nonexistent\ndatabase=idemgate\n!include %s\n' "$T/secret-missing.cnf" >"$T/incl.cnf"
bad_option_file option_file_include "$T/incl.cnf" \
    "option file including a missing file: names it" "includes $T/secret-missing\\.cnf: No such file"
printf '[idemgate]\npassword=x\n' >"$T/secret-here.cnf"
printf '[idemgate]\nsocket=/nonexistent\ndatabase=idemgate\n!include %s\n!includedir %s\n' "$T/secret-here.cnf" "$T/cnf.d" >"$T/incl2.cnf"
mkdir -p "$T/cnf.d"
sed "s|$T/my.cnf|$T/incl2.cnf|" "$T/good.conf" >"$T/incl2.conf"
out=$("$IDEMGATE" -t -c "$T/incl2.conf" 2>&1)
expect_eq "option file including readable files: syntax ok" "0 syntax ok" "$? $(echo "$out" | tail -1)"
# A group (or [client]) naming no database: every statement would fail
# with "No database selected" (1046) at run time.
printf '[idemgate]\nsocket=/nonexistent\n' >"$T/nodb.cnf"
bad_option_file option_file_nodb "$T/nodb.cnf" \
    "option file naming no database: says so" "option_file_nodb\\.conf:3:[0-9]+: mysql_defaults_file $T/nodb\\.cnf: no database = in \\[idemgate\\]"
out=$("$IDEMCTL" -c "$T/option_file_nodb.conf" show k 2>&1)
expect_eq "idemctl with that option file: exit 2 (configuration), one line" "2 1" "$? $(echo "$out" | wc -l)"
# idemctl run: not 69 (a queue would redeliver for ever), and nothing runs
out=$("$IDEMCTL" -c "$T/option_file_nodb.conf" run --key k -- touch "$T/nodb.ran" 2>&1 </dev/null)
expect_eq "idemctl run with that option file: exit 2, one line, COMMAND not run" "2 1 no" \
    "$? $(echo "$out" | wc -l) $([ -e "$T/nodb.ran" ] && echo ran || echo no)"
# [cleanup] replicas naming a group the option file lacks: cleanup would
# fail on every run (or, with [client], watch the primary).
printf '[idemgate]\nsocket=/nonexistent\ndatabase=idemgate\n[client]\nport=1\n[replica1]\nport=2\n' >"$T/rep.cnf"
bad_conf replica_group 6 "[gateway]
listen = unix:$T/gw.sock
mysql_defaults_file = $T/rep.cnf
[cleanup]
max_lag = 10s
replicas = replica1 nosuch
[route /x]
handler = cgi:$PAY"
expect_match "[cleanup] replicas naming a group the option file lacks: names it" \
    "replica_group\\.conf:6:12: replicas: no \\[nosuch\\] group in mysql_defaults_file" \
    "$("$IDEMGATE" -t -c "$T/replica_group.conf" 2>&1)"
printf '[client]\nsocket=/nonexistent\ndatabase=idemgate\n' >"$T/client.cnf"
sed "s|$T/my.cnf|$T/client.cnf|" "$T/good.conf" >"$T/client.conf"
out=$("$IDEMGATE" -t -c "$T/client.conf" 2>&1)
expect_eq "option file with a [client] group only: syntax ok" "0 syntax ok" "$? $(echo "$out" | tail -1)"
# idemctl and idemtop never fall back to the default socket either: a
# server there (MYSQL_UNIX_PORT) must not be reached.
out=$(MYSQL_UNIX_PORT=${IDEM_TEST_MDB_SOCK:-/nonexistent} "$IDEMCTL" -c "$T/missing_option_file.conf" check 2>&1)
expect_ne "idemctl check, missing option file: non-zero exit" 0 "$?"
expect_match "idemctl check: names the file, tries no default socket" 'no-such\.cnf.*default socket is not tried' "$out"
out=$(MYSQL_UNIX_PORT=${IDEM_TEST_MDB_SOCK:-/nonexistent} "$IDEMCTL" -c "$T/missing_option_file.conf" metrics 2>&1)
expect_match "idemctl metrics, missing option file: the store is down to it" 'idemgate_store_up 0' "$out"
expect_match "... and it says why" 'no-such\.cnf.*default socket is not tried' "$out"
out=$(MYSQL_UNIX_PORT=${IDEM_TEST_MDB_SOCK:-/nonexistent} "$IDEM_BUILD/idemtop" -b -n 1 -c "$T/missing_option_file.conf" 2>&1)
expect_ne "idemtop -b, missing option file: non-zero exit" 0 "$?"
expect_match "idemtop -b: names the file" 'no-such\.cnf' "$out"
for p in "$IDEMGATE" "$IDEMCTL" "$IDEM_BUILD/idemtop"; do
	"$p" --help >/dev/null 2>&1
	expect_eq "$(basename "$p") --help exits 0" 0 "$?"
	v=$("$p" --version 2>&1)
	expect_match "$(basename "$p") --version" '^[a-z]+ [0-9]+\.[0-9]+\.[0-9]+$' "$v"
	echo "${v#* }" >>"$T/versions"
	# what cannot be written is not a success (a full disk)
	"$p" --version >/dev/full 2>"$T/full.e"
	rc=$?
	expect_eq "$(basename "$p") --version to a full disk: non-zero, one line" "1 1" \
	    "$([ $rc -ne 0 ] && echo 1 || echo 0) $(wc -l <"$T/full.e" | tr -d ' ')"
	expect_match "... saying so" ': writing output failed: No space left on device$' "$(cat "$T/full.e")"
done
expect_eq "one version for the three programs" 1 "$(sort -u "$T/versions" | wc -l | tr -d ' ')"

# The status page answers its path before any route: a status_path that
# is a route's own path would hide that route.
sed 's|^listen = .*|&\nstatus_path = /payments|' "$T/good.conf" >"$T/shadow.conf"
out=$("$IDEMGATE" -t -c "$T/shadow.conf" 2>&1)
expect_eq "status_path = a route prefix: exit 1" 1 "$?"
expect_match "status_path = a route prefix: names both" \
	"^$T/shadow.conf:3:15: status_path /payments hides \[route /payments\] \(line 11\)" "$out"
# ... and a start refuses what -t refuses (spawn-fcgi, mod_fcgid and a
# start by hand run no -t first): one line, exit 1, nothing listening.
out=$(timeout 10 "$IDEMGATE" -c "$T/shadow.conf" 2>&1 </dev/null)
expect_eq "start, status_path = a route prefix: exit 1" 1 "$?"
expect_match "start: the same line as -t" "^$T/shadow.conf:3:15: status_path /payments hides" "$out"
check "start: nothing listens" test ! -e "$T/gw.sock"
sed -n '1,/^max_body/p' "$T/good.conf" >"$T/noroute.conf"
out=$(timeout 10 "$IDEMGATE" -c "$T/noroute.conf" 2>&1 </dev/null)
expect_eq "start, no [route]: exit 1" 1 "$?"
expect_match "start, no [route]: says so" "noroute.conf: no \[route\] section" "$out"
sed 's|^listen = .*|&\nstatus_path = /idemgate-status|' "$T/good.conf" >"$T/status.conf"
out=$("$IDEMGATE" -t -c "$T/status.conf" 2>/dev/null)
expect_eq "status_path below [route /]: syntax ok" "0 syntax ok" "$? $out"

out=$("$IDEMGATE" -t -c "$T/does-not-exist.conf" 2>&1)
expect_ne "missing config file: non-zero exit" 0 "$?"
out=$("$IDEMGATE" -V 2>&1)
expect_eq "-V exits 0" 0 "$?"
expect_match "-V prints a version" '[0-9]+\.[0-9]+' "$out"
out=$("$IDEMGATE" -c "$T/good.conf" -Z 2>&1 </dev/null)
expect_ne "unknown flag: non-zero exit" 0 "$?"
done_testing
