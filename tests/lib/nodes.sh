# MariaDB servers of a test's own, several at once (replication, Galera).
# Source after harness.sh.  Each node NAME has a data dir $T/NAME, a socket
# NODE_SOCK[NAME], a TCP port NODE_PORT[NAME] on 127.0.0.1 and its own
# mariadbd options; the harness's exit trap stops them.
#   node_start NAME [mariadbd options...]   install (first time), start, wait
#                                           (kept for restarts; NODE_ONCE adds
#                                           options for this start only)
#   node_stop NAME [SIG]                    TERM (default) or KILL it
#   node_sql NAME SQL                       as root, tab-separated, no names
#   node_cnf FILE GROUP NAME [DB]           appends an option-file group (root)
# NODE_USER: the user the servers run as (default: this one).

declare -A NODE_SOCK=() NODE_PORT=() NODE_PID=() NODE_OPTS=()

node_start() {
	local n=$1 d=$T/$1 i
	shift
	[ $# -gt 0 ] && NODE_OPTS[$n]="$*"
	local user=${NODE_USER:-$(id -un)}
	if [ ! -d "$d/data/mysql" ]; then
		mkdir -p "$d/data" "$d/tmp"
		chown -R "$user" "$d"
		NODE_SOCK[$n]="$(mktemp -u /tmp/idemgate-node.XXXXXX).sock"
		NODE_PORT[$n]=$(free_port)
		mariadb-install-db --no-defaults --user="$user" --datadir="$d/data" \
			--tmpdir="$d/tmp" --auth-root-authentication-method=normal \
			--skip-test-db >"$d/install.log" 2>&1 || { cat "$d/install.log" >&2; return 1; }
	fi
	# shellcheck disable=SC2086 # NODE_OPTS holds several options
	mariadbd --no-defaults --user="$user" --datadir="$d/data" --tmpdir="$d/tmp" \
		--socket="${NODE_SOCK[$n]}" --port="${NODE_PORT[$n]}" --bind-address=127.0.0.1 \
		--pid-file="$d/mariadb.pid" --log-error="$d/error.log" \
		--innodb-buffer-pool-size=64M --innodb-log-file-size=48M \
		--innodb-flush-log-at-trx-commit="${MDB_FLUSH:-2}" --max-connections=300 \
		--skip-name-resolve ${NODE_OPTS[$n]:-} ${NODE_ONCE:-} >/dev/null 2>&1 &
	NODE_PID[$n]=$!
	H_BGPIDS+=("${NODE_PID[$n]}")
	for i in $(seq 1 600); do
		mariadb-admin --no-defaults --socket="${NODE_SOCK[$n]}" -uroot ping >/dev/null 2>&1 && return 0
		alive "${NODE_PID[$n]}" || { tail -20 "$d/error.log" >&2; return 1; }
		sleep 0.1
	done
	echo "node $n did not answer within 60 s" >&2
	return 1
}

node_stop() { stop_pid "${NODE_PID[$1]}" "${2:-TERM}"; }

node_sql() { mariadb --no-defaults --socket="${NODE_SOCK[$1]}" -uroot -N -B -e "$2"; }

node_cnf() { # node_cnf FILE GROUP NAME [DB]
	printf '[%s]\nsocket=%s\nuser=root\n%s' "$2" "${NODE_SOCK[$3]}" \
		"${4:+database=$4
}" >>"$1"
	chmod 600 "$1"
}
