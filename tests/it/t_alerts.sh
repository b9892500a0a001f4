#!/bin/bash
# The shipped Prometheus rules and Grafana dashboard: promtool checks the
# rules and runs their unit tests (tests/prom/), the dashboard's queries
# parse as PromQL, and every idemgate metric either names is one that
# "idemctl metrics" really prints after a real gateway served requests
# through lighttpd and a real MariaDB.
. "$(dirname "$0")/../lib/harness.sh"

RULES=$IDEM_ROOT/etc/prometheus/idemgate.rules.yml
DASH=$IDEM_ROOT/etc/grafana/idemgate-dashboard.json
RTEST=$IDEM_ROOT/tests/prom/idemgate.rules.test.yml

# The rules, their unit tests and the dashboard's PromQL run no idemgate
# code: the sanitizer pass (an *asan* IDEM_BUILD) leaves promtool out and
# checks the live part, where idemgate and idemctl run.
case $IDEM_BUILD in *asan*) STATIC=0 ;; *) STATIC=1 ;; esac

if [ "$STATIC" = 1 ] && ! command -v promtool >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	sh "$IDEM_ROOT/tools/deps.sh" >"$T/deps.log" 2>&1
fi
if [ "$STATIC" = 1 ] && ! command -v promtool >/dev/null 2>&1; then
	echo "SKIP: $TNAME: promtool missing and not installable (Debian's prometheus: make deps as root)"
	ok "promtool missing: rules not checked (SKIP above)"
	done_testing
	exit
fi

# groups_of ALERT: a promtool test file (stdin) with only its test groups
# ("  - interval:" onwards) that hold an alert_rule_test of ALERT
groups_of() {
	awk -v a="alertname: $1" '
		/^  - interval:/ { if (keep) printf "%s", g; g = ""; keep = 0; in_g = 1 }
		!in_g { print; next }
		{ g = g $0 "\n"; if ($0 ~ a "$") keep = 1 }
		END { if (keep) printf "%s", g }'
}

if [ "$STATIC" = 1 ]; then
	out=$(promtool check rules "$RULES" 2>&1)
	expect_eq "promtool check rules: exit 0" "0" "$?"
	expect_match "promtool check rules: rules found" 'SUCCESS: [0-9]+ rules found' "$out"
	out=$(cd "$(dirname "$RTEST")" && promtool test rules "$(basename "$RTEST")" 2>&1)
	expect_eq "promtool test rules: exit 0" "0" "$?"
	expect_match "promtool test rules: SUCCESS" 'SUCCESS' "$out"

	# Every alert of the rules file has a test that fires it.
	alerts() { sed -n 's/^ *- alert: *\([A-Za-z]*\).*/\1/p' "$RULES" | sort -u; }
	tested() { sed -n 's/^ *alertname: *\([A-Za-z]*\).*/\1/p' "$RTEST" | sort -u; }
	expect_eq "every alert has a unit test" "$(alerts | tr '\n' ' ')" \
		"$(tested | tr '\n' ' ')"
	expect_ne "the rules hold alerts" "" "$(alerts)"

	# A rule that fires on everything would pass "check"; the unit tests
	# must fail on it (they hold series that must not fire).  Only the test
	# groups of that alert can see it fire: the others are left out (the
	# day-long ones cost promtool seconds).
	sed 's/idemgate_keys_past_lease > 0/idemgate_keys_past_lease >= 0/' "$RULES" \
		>"$T/broken.rules.yml"
	sed "s|\.\./\.\./etc/prometheus/idemgate.rules.yml|$T/broken.rules.yml|" \
		"$RTEST" | groups_of IdemgateKeysPastLease >"$T/broken.test.yml"
	expect_match "the broken rule's tests hold a group of its alert" \
		'alertname: IdemgateKeysPastLease$' "$(cat "$T/broken.test.yml")"
	promtool test rules "$T/broken.test.yml" >"$T/broken.out" 2>&1
	expect_ne "promtool test rules fails on a rule that always fires" 0 "$?"
fi

# The dashboard: JSON, its queries PromQL once Grafana's variables are
# replaced (promtool parses them as recording rules).
/usr/bin/python3 - "$DASH" "$T/dash.rules.yml" "$T/dash.names" <<'PY' >"$T/dash.out" 2>&1
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = []
def walk(p):
    for t in p.get("targets", []):
        exprs.append(t["expr"])
    for q in p.get("panels", []):
        walk(q)
for p in d["panels"]:
    walk(p)
for v in d.get("templating", {}).get("list", []):
    q = v.get("definition") or ""
    exprs += re.findall(r'label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)', q)
with open(sys.argv[2], "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "5m").replace("$route", ".*")
        f.write("      - record: dashboard:q%d\n        expr: %s\n"
                % (i, json.dumps(e)))
names = set()
for e in exprs:
    names.update(re.findall(r'\bidemgate_[a-zA-Z0-9_]+', e))
open(sys.argv[3], "w").write("".join(n + "\n" for n in sorted(names)))
print(len(exprs), "queries")
PY
expect_match "dashboard JSON parses, queries found" '^[1-9][0-9]* queries$' "$(cat "$T/dash.out")"
if [ "$STATIC" = 1 ]; then
	out=$(promtool check rules "$T/dash.rules.yml" 2>&1)
	expect_eq "dashboard queries are PromQL (promtool)" "0" "$?"
fi
expect_ne "dashboard names idemgate metrics" "" "$(cat "$T/dash.names" 2>/dev/null)"

# ---------------------------------------------------------------- live
PAY=$(cgi_install pay)
# counters published every second, not every 5 (the default)
std_setup "counters_flush = 1s
[route /payments]
handler = cgi:$PAY" || { done_testing; exit 1; }

# A key and four retries: each of the two workers reads the answer from
# MySQL on its first retry, then answers from its replay cache.
K=$(new_key)
res=
for i in 1 2 3 4 5; do
	http "p$i" POST "$(url web /payments)" -H "Idempotency-Key: $K" --data-binary 'amount=10'
	res="$res $(hdr "p$i" Idempotency-Result)"
done
expect_eq "a key: created, then reused" " created reused reused reused reused" "$res"
http m POST "$(url web /payments)" -H "Idempotency-Key: $K" --data-binary 'amount=11'
expect_eq "the key for another request: 422" 422 "$HS"
expect_eq "the handler ran once" 1 "$(runs pay)"
# A key whose owner vanished: in progress, its lease over a minute ago.
db_query "$TNAME" "INSERT INTO idem_keys (scope, idem_key, route, method,
    fingerprint, state, owner, owner_token, created_at, lease_until,
    expires_at) VALUES (UNHEX(SHA2('s', 256)), 'gone', '/payments', 'POST',
    UNHEX(SHA2('f', 256)), 0, 'gone:1', 1, NOW(6) - INTERVAL 2 MINUTE,
    NOW(6) - INTERVAL 1 MINUTE, NOW(6) + INTERVAL 1 DAY)"

cat >"$T/ctl.conf" <<EOF
[gateway]
listen = unix:$T/ctl-unused.sock
mysql_defaults_file = $DBCNF
EOF
"$IDEMCTL" -c "$T/ctl.conf" cleanup >"$T/cleanup.log" 2>&1
expect_eq "idemctl cleanup: exit 0" 0 "$?"
value() { # value NAME: the first sample of NAME in $T/metrics
	awk -v n="$1" '$1 == n || index($1, n "{") == 1 { print $2; exit }' "$T/metrics"
}
flushed() {
	"$IDEMCTL" -c "$T/ctl.conf" metrics >"$T/metrics" 2>"$T/metrics.err" &&
		[ "$(value idemgate_mismatched_total)" = 1 ] &&
		[ "$(value idemgate_reused_total)" = 4 ]
}
# counters_flush = 1s above
check "idemctl metrics: the gateway's counters arrive" wait_until 15 flushed
expect_eq "idemctl metrics: store up" 1 "$(value idemgate_store_up)"
expect_match "idemctl metrics: replay cache hits counted (of 4 replays)" \
	'^[1-4]$' "$(value idemgate_replay_cache_hits_total)"
expect_eq "idemctl metrics: one key past its lease" 1 "$(value idemgate_keys_past_lease)"
expect_eq "idemctl metrics: it is in progress" 1 "$(value idemgate_keys_in_progress)"

# Every metric name the dashboard and the rules use is a sample name here.
awk '!/^#/ && NF { sub(/[{ ].*/, "", $1); print $1 }' "$T/metrics" |
	sort -u >"$T/emitted"
grep -o '\bidemgate_[a-zA-Z0-9_]*' "$RULES" | sort -u >"$T/rules.names"
missing=$(comm -23 "$T/dash.names" "$T/emitted" | tr '\n' ' ')
expect_eq "every dashboard metric is in idemctl metrics" "" "$missing"
missing=$(comm -23 "$T/rules.names" "$T/emitted" | tr '\n' ' ')
expect_eq "every rules metric is in idemctl metrics" "" "$missing"
# ... and the check can fail: a name idemctl does not print is caught.
echo idemgate_no_such_metric_total | sort -u - "$T/dash.names" >"$T/dash.bad"
expect_eq "a made-up dashboard metric is caught" "idemgate_no_such_metric_total" \
	"$(comm -23 "$T/dash.bad" "$T/emitted" | tr '\n' ' ' | sed 's/ $//')"
done_testing
