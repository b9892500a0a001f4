#!/bin/bash
# Long fault runs, kept out of `make test`: the storm (t_fault_chaos) at a
# larger size and the fault tests, round after round, each judged from the
# handlers' own logs.  Stops at the first failed round (its logs kept in
# build/test-logs) and ends with one line "N passed, N failed".
#
#   make soak                                  3 rounds
#   SOAK_ROUNDS=10 CHAOS_KEYS=1000 make soak   longer, denser storms
#   SOAK_TESTS="t_partition t_orphans" make soak
set -u

cd "$(dirname "$0")/.." || exit 1
ROUNDS=${SOAK_ROUNDS:-3}
TESTS=${SOAK_TESTS:-t_fault_chaos t_fault_store t_partition t_restart_floor t_orphans t_php_fpm t_store_outage t_run}
export CHAOS_KEYS=${CHAOS_KEYS:-600}
case $ROUNDS in '' | *[!0-9]* | 0*) echo "SOAK_ROUNDS must be a number from 1" >&2; exit 2 ;; esac
passed=0
failed=0
for r in $(seq 1 "$ROUNDS"); do
	echo "== round $r of $ROUNDS ($(date -u +%H:%M:%S)): $TESTS, CHAOS_KEYS=$CHAOS_KEYS"
	# shellcheck disable=SC2086 # TESTS is a list of patterns
	out=$(bash tests/run.sh $TESTS 2>&1)
	echo "$out" | grep -E '^(FAIL|build:)'
	if ! grep -q '^build:t_' <<<"$out"; then
		echo "FAIL: round $r: no test matched $TESTS"
		failed=$((failed + 1))
		break
	fi
	last=$(tail -1 <<<"$out")
	if ! [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		echo "FAIL: round $r: no summary line (last: $last)"
		failed=$((failed + 1))
		break
	fi
	passed=$((passed + BASH_REMATCH[1]))
	failed=$((failed + BASH_REMATCH[2]))
	[ "${BASH_REMATCH[2]}" = 0 ] || break
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
