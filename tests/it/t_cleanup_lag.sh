#!/bin/bash
# idemctl cleanup --max-lag: a real primary and replica (binlog, a replica
# thread over TCP on 127.0.0.1).  Cleanup pauses while the replica is
# behind (MASTER_DELAY) or stopped, resumes when it caught up, stops quietly
# at --max-seconds, and says so in one line when it cannot ask a replica.
. "$(dirname "$0")/../lib/harness.sh"
. "$IDEM_ROOT/tests/lib/nodes.sh"

node_start p --server-id=1 --log-bin=primary --binlog-format=ROW || { not_ok "primary starts"; done_testing; }
node_sql p "CREATE USER repl@'127.0.0.1' IDENTIFIED BY 'repl-secret';
	GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1'"
node_start r --server-id=2 --read-only=ON || { not_ok "replica starts"; done_testing; }
node_sql r "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${NODE_PORT[p]},
	MASTER_USER='repl', MASTER_PASSWORD='repl-secret', MASTER_USE_GTID=no; START SLAVE"
lag() { mariadb --no-defaults --socket="${NODE_SOCK[r]}" -uroot -e "SHOW SLAVE STATUS\G" | awk '/Seconds_Behind_Master/ { print $2 }'; }
# Caught up: the replica has run all the primary wrote and says 0 s.  Lag
# alone reads 0 before the replica has fetched a thing (then rises).
primary_pos() { mariadb --no-defaults --socket="${NODE_SOCK[p]}" -uroot -N -e "SHOW MASTER STATUS" | awk '{ print $1, $2 }'; }
replica_pos() { mariadb --no-defaults --socket="${NODE_SOCK[r]}" -uroot -e "SHOW SLAVE STATUS\G" |
	awk '/ Relay_Master_Log_File:/ { f = $2 } / Exec_Master_Log_Pos:/ { p = $2 } END { print f, p }'; }
caught_up() { [ "$(replica_pos)" = "$(primary_pos)" ] && [ "$(lag)" = 0 ]; }
wait_until 20 caught_up
expect_eq "replica replicating, 0 s behind" 0 "$(lag)"

C=$T/my.cnf
node_cnf "$C" idemgate p idemgate
node_cnf "$C" replica1 r
cat >"$T/g.conf" <<CONF
[gateway]
listen = unix:$T/unused.sock
mysql_defaults_file = $C
[route /]
handler = cgi:/bin/true
[cleanup]
replicas = replica1
CONF
node_sql p "CREATE DATABASE idemgate"
out=$("$IDEMCTL" -c "$T/g.conf" migrate 2>&1)
expect_eq "migrate on the primary" 0 "$?"
wait_until 20 caught_up
expect_eq "schema replicated" 1 "$(node_sql r "SELECT COUNT(*) > 0 FROM idemgate.idem_schema")"

expired() { # expired N: N expired completed keys on the primary
	node_sql p "INSERT INTO idemgate.idem_keys (scope, idem_key, route, method,
	    fingerprint, state, owner, owner_token, created_at, lease_until,
	    expires_at, completed_at, resp_status, resp_headers, resp_body, resp_size)
	  SELECT UNHEX(SHA2('none', 256)), CONCAT('k', seq, '-', RAND()), '/p', 'POST',
	    UNHEX(SHA2(seq, 256)), 1, 'gw1:42', 7, NOW(6) - INTERVAL 2 DAY,
	    NOW(6) - INTERVAL 2 DAY, NOW(6) - INTERVAL 1 HOUR, NOW(6) - INTERVAL 2 DAY,
	    200, '', 'ok', 2
	  FROM idemgate.seq_1_to_$1"
}
left() { node_sql p "SELECT COUNT(*) FROM idemgate.idem_keys"; }

# 1. In step: a normal run.
expired 50
expect_eq "50 expired keys seeded" 50 "$(left)"
wait_until 20 caught_up
t0=$(now_ms)
out=$("$IDEMCTL" -c "$T/g.conf" cleanup --max-lag 5s 2>&1)
expect_eq "replica in step: exit 0, quiet" "0 " "$? $out"
expect_eq "replica in step: expired keys gone" 0 "$(left)"
expect_lt "replica in step: no pause (< 2 s)" $(($(now_ms) - t0)) 2000

# 2. Stopped replica: counts as behind; --max-seconds ends it, quiet.
node_sql r "STOP SLAVE"
expired 20
t0=$(now_ms)
out=$("$IDEMCTL" -c "$T/g.conf" cleanup --max-lag 5s --max-seconds 2 2>&1)
expect_eq "replica stopped: exit 0 at --max-seconds, quiet" "0 " "$? $out"
took=$(($(now_ms) - t0))
expect_lt "replica stopped: it waited (>= 1.9 s)" 1899 "$took"
expect_eq "replica stopped: nothing deleted meanwhile" 20 "$(left)"
expect_eq "replica stopped: the run is recorded partial" partial \
	"$(node_sql p "SELECT outcome FROM idemgate.idem_cleanup_runs ORDER BY id DESC LIMIT 1")"
out=$("$IDEMCTL" -c "$T/g.conf" cleanup --max-lag 5s --max-seconds 1 -v 2>&1)
expect_match "replica stopped: -v says it paused" 'paused [0-9.]+ s for replica lag' "$out"
# Stopped at its time limit having deleted nothing: cleanup makes no
# headway, which the success gauges (and the alert on them) must show.
out=$("$IDEMCTL" -c "$T/g.conf" metrics 2>&1)
metric() { sed -n "s/^$1 //p" <<<"$out"; }
expect_eq "replica stopped: metrics say the last cleanup did not succeed" 0 \
	"$(metric idemgate_last_cleanup_success)"
ok_at=$(node_sql p "SELECT UNIX_TIMESTAMP(ended_at) FROM idemgate.idem_cleanup_runs WHERE outcome = 'ok' ORDER BY id DESC LIMIT 1")
expect_eq "... its last success is the last run that finished" 1 \
	"$(awk -v a="$ok_at" -v b="$(metric idemgate_last_cleanup_success_timestamp_seconds)" \
		'BEGIN { d = a - b; print (d < 0.002 && d > -0.002) ? 1 : 0 }')"

# 3. A replica really behind (MASTER_DELAY 6 s): cleanup waits until it
#    caught up, then deletes.  (6 s: seen behind late on a loaded machine,
#    the replica still holds the probe back more than the second asked.)
node_sql r "CHANGE MASTER TO MASTER_DELAY=6; START SLAVE"
wait_until 20 caught_up
node_sql p "CREATE TABLE idemgate.lag_probe (i INT); DROP TABLE idemgate.lag_probe"
behind() { l=$(lag); [ -n "$l" ] && [ "$l" != NULL ] && [ "$l" -ge 2 ]; }
wait_until 10 behind
expect_match "replica is behind" '^[2-9]$' "$(lag)"
t0=$(now_ms)
out=$("$IDEMCTL" -c "$T/g.conf" cleanup --max-lag 1s -v 2>&1)
rc=$?
took=$(($(now_ms) - t0))
expect_eq "replica behind: exit 0" 0 "$rc"
expect_match "replica behind: paused, then went on" 'paused [0-9.]+ s for replica lag' "$out"
expect_lt "replica behind: it waited for the replica (>= 1 s)" 999 "$took"
expect_lt "replica behind: and no longer than the delay (< 10 s)" "$took" 10000
expect_eq "replica behind: keys deleted once it caught up" 0 "$(left)"
node_sql r "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY=0; START SLAVE"

# 4. Without --max-lag the replica is not asked.
node_stop r
expired 5
out=$("$IDEMCTL" -c "$T/g.conf" cleanup 2>&1)
expect_eq "no --max-lag: the replicas are not asked" "0 " "$? $out"
expect_eq "no --max-lag: deleted" 0 "$(left)"

# 5. A replica that cannot be asked: one line, non-zero, nothing lost.
expired 5
out=$("$IDEMCTL" -c "$T/g.conf" cleanup --max-lag 5s 2>&1)
rc=$?
expect_eq "replica down: exit 3" 3 "$rc"
expect_eq "replica down: one line" 1 "$(printf '%s\n' "$out" | wc -l)"
expect_match "replica down: names the replica" 'replica \[replica1\]' "$out"
expect_eq "replica down: nothing deleted" 5 "$(left)"

# 6. Usage and config.
out=$("$IDEMCTL" -c "$T/g.conf" cleanup --max-lag soon 2>&1)
expect_eq "--max-lag soon: exit 1" 1 "$?"
# Without [cleanup] replicas no replica can fall behind: the run goes on
# (the one configured is down: asked, it would end the run with 3).
sed '/^replicas/d' "$T/g.conf" >"$T/norep.conf"
out=$("$IDEMCTL" -c "$T/norep.conf" cleanup --max-lag 5s 2>&1)
expect_eq "--max-lag without replicas: exit 0, quiet" "0 " "$? $out"
expect_eq "--max-lag without replicas: deleted" 0 "$(left)"
out=$("$IDEMCTL" -c "$T/norep.conf" cleanup --max-lag 5s -v 2>&1)
expect_match "--max-lag without replicas, -v: says none is watched" 'none watched' "$out"
sed -i '/^\[cleanup\]/a max_lag = 3s' "$T/norep.conf"
out=$("$IDEMCTL" -c "$T/norep.conf" cleanup 2>&1)
expect_eq "[cleanup] max_lag without replicas: exit 0" 0 "$?"
out=$("$IDEMCTL" -c "$T/norep.conf" check 2>&1)
expect_match "check: max_lag without replicas is a warning" 'max_lag set, but no \[cleanup\] replicas' "$out"
# A replica group the option file lacks: idemctl check fails on it (exit
# 2, named at its line), other commands go on (only cleanup asks it).
sed 's/^replicas = replica1$/replicas = replica1 nosuch/' "$T/g.conf" >"$T/badrep.conf"
out=$("$IDEMCTL" -c "$T/badrep.conf" check 2>&1)
expect_eq "check: a missing replica group: exit 2" 2 "$?"
expect_match "... named at its line" 'badrep\.conf:[0-9]+:[0-9]+: replicas: no \[nosuch\] group' "$out"
"$IDEMCTL" -c "$T/badrep.conf" show no-such-key >/dev/null 2>&1
expect_eq "... show is not stopped by it (no such key: 7)" 7 "$?"
out=$("$IDEMCTL" -c "$T/badrep.conf" cleanup --max-lag 5s 2>&1)
expect_eq "... cleanup --max-lag is: exit 2, one line" "2 1" "$? $(echo "$out" | wc -l)"
done_testing
