# A MariaDB Galera cluster of a test's own, from Debian's packages
# (mariadb-server + galera-4): nodes g1..gN on 127.0.0.1, each with its own
# data dir, socket, SQL port and gcomm/IST/SST ports.  Source after
# harness.sh and nodes.sh.
#   galera_start [N]        bootstrap g1, join the others by SST (rsync),
#                           wait for wsrep_cluster_size = N, all Synced
#   galera_rejoin NAME      start a stopped node again (IST from the others)
#   galera_size NAME        wsrep_cluster_size as NAME sees it
#   galera_synced NAME      0 when NAME is Synced
#   galera_gw_conf FILE I CNF THREADS   a gateway config for node I
# GALERA_SKIP says why a cluster cannot run here (no galera-4).
# A killed node stalls every commit until the others suspect it
# (evs.suspect_timeout, 5 s by default): 1.5 s here, as README's "Running
# on Galera" advises where failover must be quick.

GALERA_LIB=/usr/lib/galera/libgalera_smm.so
declare -A GALERA_GPORT=()

galera_can() {
	[ -r "$GALERA_LIB" ] || { GALERA_SKIP="galera-4 is not installed ($GALERA_LIB)"; return 1; }
	command -v rsync >/dev/null 2>&1 || { GALERA_SKIP="rsync (SST) is not installed"; return 1; }
	return 0
}

galera_var() { node_sql "$1" "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | cut -f2; }
galera_size() { galera_var "$1" wsrep_cluster_size; }
galera_synced() { [ "$(galera_var "$1" wsrep_local_state_comment)" = Synced ]; }

galera_start() {
	local n=${1:-3} i addrs="" name
	galera_can || return 1
	# SST's rsync daemon, started as root, would write as nobody: the
	# nodes run as the mysql user (from mariadb-server) instead.
	if [ "$(id -u)" = 0 ]; then
		NODE_USER=mysql
		id mysql >/dev/null 2>&1 || { GALERA_SKIP="no mysql user to run the nodes as"; return 1; }
	fi
	for i in $(seq 1 "$n"); do
		GALERA_GPORT[g$i]=$(free_port)
		addrs="$addrs${addrs:+,}127.0.0.1:${GALERA_GPORT[g$i]}"
	done
	for i in $(seq 1 "$n"); do
		name=g$i
		local gp=${GALERA_GPORT[$name]} ist sst
		ist=$(free_port)
		sst=$(free_port)
		NODE_OPTS[$name]="--wsrep-on=ON --wsrep-provider=$GALERA_LIB
			--wsrep-cluster-name=idemtest --wsrep-node-name=$name
			--wsrep-cluster-address=gcomm://$addrs
			--wsrep-node-address=127.0.0.1:$gp
			--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:$gp;ist.recv_addr=127.0.0.1:$ist;gcache.size=64M;evs.suspect_timeout=PT1.5S;evs.inactive_timeout=PT3S;evs.keepalive_period=PT0.3S;evs.inactive_check_period=PT0.3S
			--wsrep-sst-method=rsync --wsrep-sst-receive-address=127.0.0.1:$sst
			--binlog-format=ROW --innodb-autoinc-lock-mode=2
			--log-bin-trust-function-creators=${GALERA_TRUST:-1}
			--wsrep-slave-threads=2"
		if [ "$i" = 1 ]; then
			NODE_ONCE=--wsrep-new-cluster node_start "$name" || return 1
		else
			node_start "$name" || return 1
		fi
		wait_until 60 galera_synced "$name" || { echo "node $name did not sync" >&2; return 1; }
	done
	[ "$(galera_size g1)" = "$n" ]
}

# galera_gw_conf FILE I CNF THREADS: the [gateway] section of a gateway
# on node I of three (unix:$T/gwI.sock): group nI first, then the others
galera_gw_conf() {
	local i=$2
	cat >"$1" <<CONF
[gateway]
listen = unix:$T/gw$i.sock
workers = 1
threads = $4
mysql_defaults_file = $3
mysql_group = n$i n$((i % 3 + 1)) n$(((i + 1) % 3 + 1))
CONF
}

galera_rejoin() {
	node_start "$1" || return 1
	wait_until 60 galera_synced "$1"
}
