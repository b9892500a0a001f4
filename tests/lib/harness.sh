# Shared helpers for idemgate integration tests (tests/it/t_*.sh).
#
# Source it from a bash script.  It creates a scratch dir $T, installs a
# cleanup trap that stops everything started here (gateways, web servers,
# upstream apps, a private MariaDB), and offers:
#   ok NAME / not_ok NAME WHY / expect_eq NAME WANT GOT / expect_match NAME RE GOT
#   expect_ne, expect_lt, expect_file_eq, done_testing (call last)
#   free_port                       a free 127.0.0.1 TCP port
#   db_new NAME                     database NAME on the shared (or a private)
#                                   MariaDB, migrated; sets DBCNF (option file)
#   db_private                      this script's own MariaDB (may be stopped)
#   gw_start NAME CONFIG [env...]   idemgate -c CONFIG in the background;
#                                   GW_PID[NAME], log $T/NAME.log
#   gw_stop NAME, gw_workers NAME   worker pids (children of the supervisor)
#   lighttpd_start NAME SOCK|tcp:H:P [DOCROOT]   sets PORT[NAME]
#   apache_start NAME SOCK, nginx_start NAME SOCK
#   cgi_install NAME                copy of the payments CGI in $T/cgi/NAME;
#   runs NAME                       how many times that copy really ran
#   http OUT METHOD URL [curl args] status in $HS, headers $T/OUT.h, body $T/OUT.b
#   hdr OUT NAME                    value of a response header (no CR)
#   is_problem NAME OUT STATUS SLUG asserts an RFC 9457 answer from idemgate
# Environment: IDEM_BUILD (build dir, default build), IDEM_TEST_MDB_SOCK and
# TESTROOT (the runner's shared MariaDB, optional).

set -u

IDEM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IDEM_BUILD=${IDEM_BUILD:-build}
case $IDEM_BUILD in /*) ;; *) IDEM_BUILD="$IDEM_ROOT/$IDEM_BUILD" ;; esac
IDEMGATE="$IDEM_BUILD/idemgate"
IDEMCTL="$IDEM_BUILD/idemctl"
ITBIN="$IDEM_BUILD/tests/it"
TNAME=$(basename "$0" .sh)

# Short path: unix socket paths are limited to 108 bytes.
T=$(mktemp -d /tmp/idemit.XXXXXX)
chmod 0711 "$T"
mkdir -p "$T/cgi"
chmod 0755 "$T/cgi"

H_PASS=0
H_FAIL=0
declare -A GW_PID=() PORT=() WS_PID=() WS_KIND=()
H_BGPIDS=()
H_PRIVATE_DB=0

# ---------------------------------------------------------------- results

ok() { H_PASS=$((H_PASS + 1)); echo "PASS: $TNAME: $1"; }

not_ok() {
	H_FAIL=$((H_FAIL + 1))
	echo "FAIL: $TNAME: $1${2:+ -- $2}"
}

check() { # check NAME cmd... : PASS if the command succeeds
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name" "command failed: $*"; fi
}

expect_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "want '$2', got '$(printf %.300s "$3")'"; fi
}

expect_ne() {
	if [ "$2" != "$3" ]; then ok "$1"; else not_ok "$1" "did not want '$2'"; fi
}

expect_match() { # expect_match NAME ERE TEXT
	if printf '%s' "$3" | grep -Eq -- "$2"; then ok "$1"; else
		not_ok "$1" "no match for /$2/ in '$(printf %.300s "$3")'"
	fi
}

expect_nomatch() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then
		not_ok "$1" "unexpected /$2/ in '$(printf %.300s "$3")'"
	else ok "$1"; fi
}

expect_lt() { # expect_lt NAME A B (integers): A < B
	if [ "$2" -lt "$3" ] 2>/dev/null; then ok "$1"; else not_ok "$1" "want $2 < $3"; fi
}

expect_file_eq() { # expect_file_eq NAME FILE1 FILE2 (byte-for-byte)
	if cmp -s "$2" "$3"; then ok "$1"; else
		not_ok "$1" "$(cmp "$2" "$3" 2>&1 | head -1)"
	fi
}

done_testing() {
	echo "# $TNAME: $H_PASS passed, $H_FAIL failed"
	[ "$H_FAIL" -eq 0 ] && [ "$H_PASS" -gt 0 ]
}

# ---------------------------------------------------------------- utilities

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_until SECONDS cmd... : polls every 0.05 s; status of the last try
wait_until() {
	local limit=$1 end
	shift
	end=$(($(now_ms) + limit * 1000))
	while ! "$@"; do
		[ "$(now_ms)" -lt "$end" ] || return 1
		sleep 0.05
	done
	return 0
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
	local i p span=20000 base=10000 lane=${IDEM_TEST_LANE:-}
	# tests/run.sh runs parts side by side: each lane its own range
	if [ -n "$lane" ]; then
		span=$((20000 / ${IDEM_TEST_JOBS:-2}))
		base=$((10000 + lane * span))
	fi
	for i in $(seq 1 50); do
		# below the ephemeral range, where client sockets take ports
		p=$((base + RANDOM % span))
		# never one this test was given already (a port given but not
		# yet bound, as Galera's IST port, is not open)
		grep -qx "$p" "$T/.ports" 2>/dev/null && continue
		if ! port_open "$p"; then
			echo "$p" >>"$T/.ports"
			echo "$p"
			return 0
		fi
	done
	return 1
}

alive() { kill -0 "$1" 2>/dev/null; }

# stop_pid PID [SIG]: signal, wait up to 5 s, then SIGKILL (and children).
stop_pid() {
	local pid=$1 sig=${2:-TERM} kids i
	[ -n "$pid" ] || return 0
	alive "$pid" || { wait "$pid" 2>/dev/null; return 0; }
	kids=$(ps -o pid= --ppid "$pid" 2>/dev/null)
	kill -"$sig" "$pid" 2>/dev/null
	for i in $(seq 1 100); do
		alive "$pid" || break
		sleep 0.05
	done
	if alive "$pid"; then
		kill -9 "$pid" 2>/dev/null
		for i in $kids; do kill -9 "$i" 2>/dev/null; done
	fi
	wait "$pid" 2>/dev/null
	return 0
}

# ---------------------------------------------------------------- MariaDB

DBCNF=
# shellcheck source=mariadb.sh
. "$IDEM_ROOT/tests/lib/mariadb.sh"

db_server() {
	[ -n "${MDB_SOCK:-}" ] && return 0
	if [ -n "${IDEM_TEST_MDB_SOCK:-}" ] && [ -S "$IDEM_TEST_MDB_SOCK" ]; then
		MDB_SOCK=$IDEM_TEST_MDB_SOCK
		return 0
	fi
	db_private
}

# A MariaDB of this script's own (for tests that stop it).
db_private() {
	local saved=${TESTROOT:-}
	TESTROOT=$T
	MDB_SOCK=
	if ! mariadb_init >"$T/mariadb-init.log" 2>&1; then
		# one more try from scratch (a busy machine can fail the install)
		mariadb_stop >/dev/null 2>&1
		rm -rf "$T/mariadb"
		MDB_SOCK=
		mariadb_init >>"$T/mariadb-init.log" 2>&1 || {
			TESTROOT=$saved
			not_ok "private MariaDB starts" "$(grep -m2 -Ei 'error|fail' "$T/mariadb-init.log")"
			return 1
		}
	fi
	H_PRIVATE_DB=1
	TESTROOT=$saved
	return 0
}

h_sqlroot() { mariadb --no-defaults --socket="$MDB_SOCK" -uroot -N -B "$@"; }
# h_kill_sessions USER: the server ends every session of USER (as its own
# timeouts or a restart would), the named locks they hold with them
h_kill_sessions() {
	local id
	for id in $(h_sqlroot -e "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '$1'"); do
		h_sqlroot -e "KILL $id" 2>/dev/null
	done
}

# db_new NAME: fresh database, migrated; DBCNF = its option file.
db_new() {
	local name=$1 saved=${TESTROOT:-} f v
	db_server || return 1
	TESTROOT=$T
	mariadb_newdb "$name" || { TESTROOT=$saved; not_ok "create database $name"; return 1; }
	TESTROOT=$saved
	DBCNF="$T/$name.cnf"
	if [ -x "$IDEMCTL" ]; then
		cat >"$T/migrate-$name.conf" <<EOF
[gateway]
listen = unix:$T/migrate-unused.sock
mysql_defaults_file = $DBCNF
EOF
		if "$IDEMCTL" -c "$T/migrate-$name.conf" migrate >"$T/migrate-$name.log" 2>&1; then
			return 0
		fi
		echo "# idemctl migrate failed, applying sql/ directly: $(head -3 "$T/migrate-$name.log")"
	fi
	for f in "$IDEM_ROOT"/sql/[0-9]*.sql; do
		h_sqlroot "$name" <"$f" || { not_ok "apply $f"; return 1; }
		v=$(basename "$f" .sql)
		h_sqlroot "$name" -e "INSERT IGNORE INTO idem_schema VALUES (${v%%-*}+0, '${v#*-}', NOW(6))" 2>/dev/null
	done
	return 0
}

db_query() { # db_query DB SQL
	h_sqlroot "$1" -e "$2"
}

# ---------------------------------------------------------------- idemgate

# gw_listen CONFIG: the listen value of a config file
gw_listen() { sed -n 's/^[[:space:]]*listen[[:space:]]*=[[:space:]]*\([^[:space:];]*\).*/\1/p' "$1" | head -1; }

gw_ready() { # gw_ready LISTEN
	case $1 in
	unix:*) [ -S "${1#unix:}" ] ;;
	tcp:*) port_open "${1##*:}" ;;
	*) return 0 ;;
	esac
}

# gw_start NAME CONFIG [VAR=value...]: extra env for the gateway process.
gw_start() {
	local name=$1 conf=$2 listen
	shift 2
	if [ ! -x "$IDEMGATE" ]; then
		not_ok "$name: idemgate starts" "$IDEMGATE not built"
		return 1
	fi
	listen=$(gw_listen "$conf")
	case $listen in unix:*) rm -f "${listen#unix:}" ;; esac
	env "$@" "$IDEMGATE" -c "$conf" >"$T/$name.out" 2>"$T/$name.log" </dev/null &
	GW_PID[$name]=$!
	if ! wait_until 10 gw_ready "$listen"; then
		not_ok "$name: idemgate listens on $listen" "$(tail -5 "$T/$name.log")"
		return 1
	fi
	if ! alive "${GW_PID[$name]}"; then
		not_ok "$name: idemgate stays up" "$(tail -5 "$T/$name.log")"
		return 1
	fi
	# Give the workers a moment to be forked and accepting.
	wait_until 5 gw_has_workers "$name" || true
	return 0
}

gw_has_workers() { [ -n "$(gw_workers "$1")" ]; }

gw_workers() { ps -o pid= --ppid "${GW_PID[$1]}" 2>/dev/null | tr -d ' ' | sort -n | tr '\n' ' ' | sed 's/ $//'; }

gw_stop() {
	[ -n "${GW_PID[$1]:-}" ] || return 0
	stop_pid "${GW_PID[$1]}"
	unset "GW_PID[$1]"
}

# gw_conf FILE LISTEN DBCNF [SETTING...]: a [gateway] section; append
# routes yourself.  Each SETTING is one "key = value" line for the
# section; one for workers or threads takes the place of the default
# (2 workers, 8 threads).
gw_conf() {
	local f=$1 listen=$2 db=$3 s workers="workers = 2" threads="threads = 8"
	local extra=""
	shift 3
	for s in "$@"; do
		case $s in
		workers[\ =]*) workers=$s ;;
		threads[\ =]*) threads=$s ;;
		*) extra+="$s"$'\n' ;;
		esac
	done
	printf '[gateway]\nlisten = %s\n%s\n%s\n%smysql_defaults_file = %s\n' \
		"$listen" "$workers" "$threads" "$extra" "$db" >"$f"
}

# ---------------------------------------------------------------- handlers

cgi_install() { # cgi_install NAME [PROGRAM]: prints the path
	local src=${2:-$ITBIN/payments}
	cp "$src" "$T/cgi/$1" && chmod 0755 "$T/cgi/$1"
	rm -f "$T/cgi/$1.runs" "$T/cgi/$1.child"
	echo "$T/cgi/$1"
}

runs() {
	if [ -f "$T/cgi/$1.runs" ]; then wc -l <"$T/cgi/$1.runs" | tr -d ' '; else echo 0; fi
}

# fpm_start NAME [DIRECTIVES]: Debian's PHP-FPM with a pool of its own,
# run as www-data, on unix:$T/NAME.sock, serving $T/www; DIRECTIVES are
# added to the pool (request_terminate_timeout = ..., say).  The handler
# tests/it/php/pay.php is installed as $T/www/pay.php; fpm_runs and
# fpm_overlaps count from its own log.
fpm_start() {
	local name=$1 extra=${2:-} d="$T/$1" bin
	bin=$(command -v php-fpm8.2 php-fpm 2>/dev/null | head -1)
	[ -n "$bin" ] || bin=$(ls /usr/sbin/php-fpm* 2>/dev/null | head -1)
	if [ -z "$bin" ] || [ ! -x "$bin" ]; then
		not_ok "$name: php-fpm installed" "no php-fpm binary"
		return 1
	fi
	mkdir -p "$d" "$T/www/runs"
	chmod 0755 "$T/www"
	chown www-data "$T/www/runs" "$d" 2>/dev/null
	cp "$IDEM_ROOT/tests/it/php/pay.php" "$T/www/pay.php"
	chmod 0644 "$T/www/pay.php"
	cat >"$d/php-fpm.conf" <<EOF
[global]
pid = $d/fpm.pid
error_log = $d/fpm.log
daemonize = no
[$name]
user = www-data
group = www-data
listen = $T/$name.sock
listen.owner = root
listen.group = root
listen.mode = 0660
pm = static
pm.max_children = 6
catch_workers_output = yes
$extra
EOF
	"$bin" -R -F -y "$d/php-fpm.conf" >"$d/stdout.log" 2>&1 &
	H_BGPIDS+=($!)
	if ! wait_until 10 test -S "$T/$name.sock"; then
		not_ok "$name: php-fpm listens" "$(tail -3 "$d/fpm.log" "$d/stdout.log" 2>/dev/null | tr '\n' ' ')"
		return 1
	fi
}

fpm_runs() { if [ -f "$T/www/runs/pay.runs" ]; then grep -c '^start ' "$T/www/runs/pay.runs"; else echo 0; fi; }
fpm_overlaps() { if [ -f "$T/www/runs/pay.overlap" ]; then wc -l <"$T/www/runs/pay.overlap" | tr -d ' '; else echo 0; fi; }

# ---------------------------------------------------------------- web servers

# fcgi target: "unix:/path" (or a bare path) or "tcp:host:port"
h_sockpath() { case $1 in unix:*) echo "${1#unix:}" ;; *) echo "$1" ;; esac; }

ws_up() { alive "${WS_PID[$1]}" && port_open "${PORT[$1]}"; }
ws_down() { ! alive "${WS_PID[$1]}"; }

# ws_wait NAME: 0 when up; 1 when it died (retry with another port); else FAIL
ws_wait() {
	local end=$(($(now_ms) + 10000))
	while [ "$(now_ms)" -lt "$end" ]; do
		if ws_down "$1"; then
			wait "${WS_PID[$1]}" 2>/dev/null
			return 1
		fi
		ws_up "$1" && return 0
		sleep 0.05
	done
	return 2
}

# ws_launch NAME WRITE-CONFIG-FN CMD...: up to 3 tries on fresh ports
ws_launch() {
	local name=$1 conffn=$2 try rc
	shift 2
	for try in 1 2 3; do
		PORT[$name]=$(free_port)
		"$conffn"
		"$@" >"$T/$name/stdout.log" 2>&1 &
		WS_PID[$name]=$!
		ws_wait "$name"
		rc=$?
		[ "$rc" = 0 ] && return 0
		[ "$rc" = 2 ] && break
	done
	not_ok "$name: web server listens" "$(tail -3 "$T/$name/error.log" "$T/$name/stdout.log" 2>/dev/null | tr '\n' ' ')"
	return 1
}

# lighttpd_start NAME TARGET [DOCROOT [MOUNT]]: MOUNT "/" (default) or an
# extension like ".cgi" (then SCRIPT_FILENAME is the file, as for fcgiwrap)
lighttpd_start() {
	local name=$1 target=$2 root=${3:-$T/www} mount=${4:-/} d="$T/$1" be
	mkdir -p "$d" "$root"
	case $target in
	tcp:*) be="\"host\" => \"$(echo "${target#tcp:}" | cut -d: -f1)\", \"port\" => ${target##*:}" ;;
	*) be="\"socket\" => \"$(h_sockpath "$target")\"" ;;
	esac
	h_lighttpd_conf() {
		cat >"$d/lighttpd.conf" <<EOF
server.modules = ( "mod_fastcgi" )
server.document-root = "$root"
server.bind = "127.0.0.1"
server.port = ${PORT[$name]}
server.pid-file = "$d/lighttpd.pid"
server.errorlog = "$d/error.log"
server.upload-dirs = ( "$d" )
server.max-request-size = 65536
server.max-read-idle = 30
server.max-write-idle = 30
fastcgi.server = ( "$mount" => (( $be, "check-local" => "disable", "max-procs" => 1 )) )
${LIGHTTPD_EXTRA:-}
EOF
	}
	WS_KIND[$name]=lighttpd
	ws_launch "$name" h_lighttpd_conf lighttpd -D -f "$d/lighttpd.conf"
}

# apache_start NAME SOCK [files|php|alias DIR DOCROOT [URL]]: mod_proxy_fcgi to
# idemgate's unix socket, for every path (ProxyPass), or with "files" for
# the *.cgi files under the document root $T/www (SetHandler;
# SCRIPT_FILENAME is the file), or with "php" for its PHP files, exactly
# as Debian's php8.2-fpm.conf mounts PHP-FPM (FilesMatch + SetHandler),
# or with "alias" for URL (/cgi-bin/) aliased to DIR beside DOCROOT, as
# etc/apache2/idemgate.conf wires CGI programs.  Apache
# refuses to serve as root, so its children run as www-data; the gateway's
# socket must be group www-data (socket_owner) and $T traversable.
apache_start() {
	local name=$1 sock d="$T/$1" m=/usr/lib/apache2/modules mount
	sock=$(h_sockpath "$2")
	if [ "${3:-}" = files ]; then
		mount="DocumentRoot \"$T/www\"
<Directory \"$T/www\">
    Require all granted
</Directory>
<FilesMatch \"\\.cgi\$\">
    SetHandler \"proxy:unix:$sock|fcgi://localhost/\"
</FilesMatch>"
	elif [ "${3:-}" = alias ]; then
		mount="LoadModule alias_module $m/mod_alias.so
DocumentRoot \"$5\"
Alias ${6:-/cgi-bin/} $4/
<Directory \"$4\">
    Options +FollowSymLinks
    Require all granted
    SetHandler \"proxy:unix:$sock|fcgi://localhost\"
</Directory>"
	elif [ "${3:-}" = php ]; then
		mount="DocumentRoot \"$T/www\"
<Directory \"$T/www\">
    Require all granted
</Directory>
<FilesMatch \".+\\.ph(?:ar|p|tml)\$\">
    SetHandler \"proxy:unix:$sock|fcgi://localhost\"
</FilesMatch>"
	else
		mount="ProxyPass \"/\" \"unix:$sock|fcgi://localhost/\""
	fi
	mkdir -p "$d/run"
	chown www-data "$d/run" 2>/dev/null
	h_apache_conf() {
		cat >"$d/apache.conf" <<EOF
ServerRoot "$d"
ServerName localhost
Listen 127.0.0.1:${PORT[$name]}
PidFile $d/apache.pid
ErrorLog $d/error.log
LogLevel warn
DefaultRuntimeDir $d/run
Mutex file:$d/run default
User www-data
Group www-data
LoadModule mpm_event_module $m/mod_mpm_event.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule proxy_module $m/mod_proxy.so
LoadModule proxy_fcgi_module $m/mod_proxy_fcgi.so
StartServers 1
ServerLimit 2
ThreadsPerChild 25
MaxRequestWorkers 50
MinSpareThreads 5
MaxSpareThreads 50
Timeout 30
$mount
<Proxy "fcgi://localhost/">
    ProxySet timeout=30
</Proxy>
EOF
	}
	WS_KIND[$name]=apache
	ws_launch "$name" h_apache_conf apache2 -f "$d/apache.conf" -DFOREGROUND
}

# nginx_start NAME SOCK [extra location directives]: every path (or
# NGINX_LOCATION's) to idemgate, SCRIPT_FILENAME $document_root$fastcgi_script_name
# (or NGINX_SCRIPT_FILENAME, as $request_filename for an alias)
nginx_start() {
	local name=$1 sock d="$T/$1" extra=${3:-} loc=${NGINX_LOCATION:-/}
	local sf=${NGINX_SCRIPT_FILENAME:-'$document_root$fastcgi_script_name'}
	sock=$(h_sockpath "$2")
	mkdir -p "$d/tmp" "$d/logs"
	chown -R www-data "$d/tmp" 2>/dev/null
	h_nginx_conf() {
		cat >"$d/nginx.conf" <<EOF
user www-data;
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 128; }
http {
  access_log off;
  client_body_temp_path $d/tmp/body;
  proxy_temp_path $d/tmp/proxy;
  fastcgi_temp_path $d/tmp/fcgi;
  uwsgi_temp_path $d/tmp/uwsgi;
  scgi_temp_path $d/tmp/scgi;
  client_max_body_size 64m;
  server {
    listen 127.0.0.1:${PORT[$name]};
    root $T/www;
    location $loc {
      fastcgi_param QUERY_STRING \$query_string;
      fastcgi_param REQUEST_METHOD \$request_method;
      fastcgi_param CONTENT_TYPE \$content_type;
      fastcgi_param CONTENT_LENGTH \$content_length;
      fastcgi_param SCRIPT_NAME \$fastcgi_script_name;
      fastcgi_param SCRIPT_FILENAME $sf;
      fastcgi_param REQUEST_URI \$request_uri;
      fastcgi_param DOCUMENT_URI \$document_uri;
      fastcgi_param DOCUMENT_ROOT \$document_root;
      fastcgi_param SERVER_PROTOCOL \$server_protocol;
      fastcgi_param GATEWAY_INTERFACE CGI/1.1;
      fastcgi_param SERVER_SOFTWARE nginx;
      fastcgi_param REMOTE_ADDR \$remote_addr;
      fastcgi_param REMOTE_PORT \$remote_port;
      fastcgi_param SERVER_ADDR \$server_addr;
      fastcgi_param SERVER_PORT \$server_port;
      fastcgi_param SERVER_NAME \$server_name;
      fastcgi_read_timeout 30s;
      $extra
      fastcgi_pass unix:$sock;
    }
  }
}
EOF
	}
	WS_KIND[$name]=nginx
	ws_launch "$name" h_nginx_conf nginx -p "$d" -c "$d/nginx.conf"
}

ws_stop() {
	[ -n "${WS_PID[$1]:-}" ] || return 0
	stop_pid "${WS_PID[$1]}"
	unset "WS_PID[$1]"
}

url() { echo "http://127.0.0.1:${PORT[$1]}$2"; } # url WEBSERVER PATH

# ---------------------------------------------------------------- HTTP

# http OUT METHOD URL [curl args...]: HS = status ("000" on failure)
http() {
	local out=$1 m=$2 u=$3
	shift 3
	HS=$(curl -sS --max-time "${HTTP_TIMEOUT:-30}" -X "$m" -D "$T/$out.h" -o "$T/$out.b" \
		-w '%{http_code}' "$@" "$u" 2>"$T/$out.err") || true
	[ -n "$HS" ] || HS=000
	: >>"$T/$out.b"
	: >>"$T/$out.h"
}

# hdr OUT NAME: the last value of header NAME (case-insensitive), no CR
hdr() {
	tr -d '\r' <"$T/$1.h" | awk -v n="$(echo "$2" | tr 'A-Z' 'a-z')" '
		{ i = index($0, ":"); if (i == 0) next
		  k = tolower(substr($0, 1, i - 1)); v = substr($0, i + 1)
		  sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v)
		  if (k == n) { val = v; seen = 1 } }
		END { if (seen) print val }'
}

# sleep_past_expires OUT: until the Idempotency-Expires date of answer OUT
# has passed (a key ends on that whole second), plus 0.2 s
sleep_past_expires() {
	local d
	d=$(date -u -d "$(hdr "$1" Idempotency-Expires)" +%s 2>/dev/null) || d=0
	sleep "$(awk -v d="$d" -v n="$(date +%s.%N)" \
	    'BEGIN { s = d + 0.2 - n; print (s > 0 ? (s < 30 ? s : 30) : 0) }')"
}

has_hdr() { tr -d '\r' <"$T/$1.h" | grep -qi "^$2:"; }

body() { cat "$T/$1.b"; }

# hdr_block OUT: the header block without the status line, Date, Server,
# the gateway's idempotency headers and Set-Cookie, sorted (for comparison)
hdr_block() {
	tr -d '\r' <"$T/$1.h" | sed 1d | grep -v '^$' |
		grep -Eiv '^(date|server|idempotency-result|idempotent-replayed|idempotency-expires|set-cookie|connection|keep-alive):' |
		sort
}

# is_problem NAME OUT STATUS SLUG: idemgate's own RFC 9457 answer
is_problem() {
	local name=$1 out=$2 st=$3 slug=$4 b
	b=$(body "$out")
	expect_eq "$name: status" "$st" "$HS"
	expect_match "$name: problem+json" '^application/problem\+json' "$(hdr "$out" Content-Type)"
	expect_match "$name: type $slug" "\"type\" *: *\"urn:idemgate:problem:$slug\"" "$b"
	expect_match "$name: status member" "\"status\" *: *$st([^0-9]|$)" "$b"
	expect_match "$name: title and detail" '"title".*"detail"|"detail".*"title"' "$b"
}

new_key() { echo "k-$TNAME-$RANDOM$RANDOM-$(now_ms)"; }

# http_bg OUT METHOD URL [curl args...]: in the background; status in
# $T/OUT.st, end time (ms) in $T/OUT.end; bg_wait waits for all of them
H_BGREQ=()
http_bg() {
	(
		http "$@"
		echo "$HS" >"$T/$1.st"
		now_ms >"$T/$1.end"
	) &
	H_BGREQ+=($!)
}
bg_wait() {
	local p
	for p in "${H_BGREQ[@]}"; do wait "$p" 2>/dev/null; done
	H_BGREQ=()
}
st() { cat "$T/$1.st" 2>/dev/null || echo 000; }

# binary_expected FILE: what the payments CGI prints for binary=1
binary_expected() {
	local i
	for i in $(seq 0 255); do printf "\\$(printf %03o "$i")"; done >"$1"
	printf '\r\n\0\r\n\r\n' >>"$1"
}

# std_setup ROUTES [SETTING...]: database named after the script,
# $T/gw.conf on unix:$T/gw.sock (SETTINGs as for gw_conf) with ROUTES
# appended, gateway "gw", lighttpd "web"
std_setup() {
	db_new "$TNAME" || return 1
	gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF" "${@:2}"
	printf '\n%s\n' "$1" >>"$T/gw.conf"
	gw_start gw "$T/gw.conf" || return 1
	lighttpd_start web "unix:$T/gw.sock"
}

# pair_setup ROUTES [gateway lines...]: two gateways on one database
# ($DBCNF: db_new first), gwa and gwb ($T/gwa.conf, $T/gwa.log), each
# with ROUTES and behind a lighttpd of its own, weba and webb
pair_setup() {
	local g
	for g in a b; do
		gw_conf "$T/gw$g.conf" "unix:$T/gw$g.sock" "$DBCNF" "${@:2}"
		printf '\n%s\n' "$1" >>"$T/gw$g.conf"
		gw_start "gw$g" "$T/gw$g.conf" || return 1
		lighttpd_start "web$g" "unix:$T/gw$g.sock" || return 1
	done
}

# ---------------------------------------------------------------- cleanup

h_scan_logs() {
	local f
	for f in "$T"/*.log; do
		[ -f "$f" ] || continue
		if grep -Eq 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer' "$f"; then
			not_ok "sanitizer report in $(basename "$f")" \
				"$(grep -Em1 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer' "$f")"
			sed -n '1,60p' "$f"
		fi
	done
}

h_cleanup() {
	local k p
	trap - EXIT INT TERM
	for k in "${!WS_PID[@]}"; do stop_pid "${WS_PID[$k]}"; done
	for k in "${!GW_PID[@]}"; do stop_pid "${GW_PID[$k]}"; done
	for p in "${H_BGPIDS[@]}"; do stop_pid "$p"; done
	h_scan_logs
	if [ "$H_PRIVATE_DB" = 1 ]; then mariadb_cleanup >/dev/null 2>&1; fi
	if [ "$H_FAIL" -gt 0 ] || [ -n "${IDEM_KEEP:-}" ]; then
		# keep the gateway logs in the test output for post-mortems
		for p in "$T"/*.log; do
			[ -f "$p" ] || continue
			echo "---- $(basename "$p") (last 30 lines)"
			tail -30 "$p"
		done
	fi
	[ -n "${IDEM_KEEP:-}" ] || rm -rf "$T"
}
trap h_cleanup EXIT
trap 'exit 130' INT TERM

# front_checks LABEL URL: what every web server in front must get right: a
# GET passes, a protected POST runs once and replays, a chunked request body
# (no CONTENT_LENGTH) is read to its end, protected or not.  Expects the
# handler installed as "pay" (cgi_install pay) on URL, not yet run.
front_checks() {
	local L=$1 U=$2 K want
	http g GET "$U?via=$L"
	expect_eq "$L: GET" 201 "$HS"
	expect_match "$L: GET body" "query=via=$L" "$(body g)"

	K=$(new_key)
	http p1 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":1}'
	expect_eq "$L: protected POST 201" 201 "$HS"
	expect_eq "$L: created" created "$(hdr p1 Idempotency-Result)"
	http p2 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":1}'
	expect_eq "$L: replay 201" 201 "$HS"
	expect_eq "$L: reused" reused "$(hdr p2 Idempotency-Result)"
	expect_eq "$L: Idempotent-Replayed" true "$(hdr p2 Idempotent-Replayed)"
	expect_file_eq "$L: replay body" "$T/p1.b" "$T/p2.b"
	expect_eq "$L: Location kept" "$(hdr p1 Location)" "$(hdr p2 Location)"
	http p3 POST "$U" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"a":2}'
	is_problem "$L: other body" p3 422 key-mismatch

	head -c 200000 /dev/urandom >"$T/chunk"
	want=$(sha256sum "$T/chunk" | cut -d' ' -f1)
	http c1 POST "$U" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
	expect_eq "$L: chunked body, unprotected" 201 "$HS"
	expect_match "$L: chunked body read to EOF" "body_length=200000" "$(body c1)"
	expect_match "$L: chunked body intact" "body_sha256=$want" "$(body c1)"
	K=$(new_key)
	http c2 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
	expect_match "$L: chunked protected body intact" "body_sha256=$want" "$(body c2)"
	http c3 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
	expect_eq "$L: chunked replay" reused "$(hdr c3 Idempotency-Result)"
	expect_file_eq "$L: chunked replay body" "$T/c2.b" "$T/c3.b"
	head -c 100 /dev/urandom >>"$T/chunk"
	http c4 POST "$U" -H "Idempotency-Key: $K" -H 'Transfer-Encoding: chunked' --data-binary @"$T/chunk"
	is_problem "$L: chunked, other body" c4 422 key-mismatch
	expect_eq "$L: runs (GET, POST, 2 chunked)" 4 "$(runs pay)"
	# Bodies over max_body (1M): 413 every time.  The web server sends
	# the whole body before it reads the answer; one cut off mid-send
	# makes its own 502 / 503 of it.
	head -c 2000000 /dev/zero >"$T/b2m"
	head -c 8000000 /dev/zero >"$T/b8m"
	local codes="" f
	for f in b2m b2m b2m b2m b2m b8m b8m; do
		http ov POST "$U" --data-binary @"$T/$f"
		codes+="$HS "
	done
	expect_eq "$L: bodies over max_body: 413 each time" \
	    "413 413 413 413 413 413 413 " "$codes"
	is_problem "$L: body over max_body" ov 413 body-too-large
	expect_eq "$L: none ran" 4 "$(runs pay)"
}
