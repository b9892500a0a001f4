#!/bin/bash
# Runs every idemgate test (unit, integration, console, fuzz, ASan+UBSan)
# and ends with one line "N passed, N failed".
#
#   tests/run.sh              everything (what `make test` runs)
#   tests/run.sh --quick      no fuzz, no ASan pass
#   tests/run.sh PATTERN...   only tests whose name contains a PATTERN (quick)
set -u

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
LOGS="$ROOT/build/test-logs"
QUICK=0
PATTERNS=()
for a in "$@"; do
	case $a in
	--quick) QUICK=1 ;;
	-h | --help)
		sed -n '2,8p' "$0"
		exit 0
		;;
	*) PATTERNS+=("$a") ;;
	esac
done
[ ${#PATTERNS[@]} -gt 0 ] && QUICK=1

mkdir -p "$LOGS"
rm -f "$LOGS"/*.log "$LOGS/times"
PASSED=0
FAILED=0

selected() { # selected NAME: matches a pattern (or no patterns given)
	local p
	[ ${#PATTERNS[@]} -eq 0 ] && return 0
	for p in "${PATTERNS[@]}"; do
		case $1 in *"$p"*) return 0 ;; esac
	done
	return 1
}

fail_line() { # fail_line TEXT: a FAIL of the runner's own
	echo "FAIL: $1" | tee -a "$FAILS"
	FAILED=$((FAILED + 1))
}

# tally NAME LOG RC [SCAN [SECS]]: count PASS/FAIL lines of one part
tally() {
	local name=$1 log=$2 rc=$3 scan=${4:-0} secs=${5:-} p f
	p=$(grep -c '^PASS: ' "$log")
	f=$(grep -c '^FAIL: ' "$log")
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	grep '^FAIL: ' "$log" | sed "s|^FAIL: |FAIL: [$name] |" >>"$FAILS"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			fail_line "$name timed out (log: $log)"
		else
			fail_line "$name exited $rc without a FAIL line (log: $log)"
		fi
	fi
	# a typo in a test script must not pass silently
	if grep -q ': command not found$' "$log"; then
		fail_line "$name: $(grep -m1 ': command not found$' "$log" | cut -c1-200)"
	fi
	# a part that checked nothing proves nothing
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$rc" -eq 0 ]; then
		fail_line "$name ran no checks (log: $log)"
	fi
	if [ "$scan" = 1 ] &&
		grep -Eq 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer' "$log"; then
		fail_line "$name: sanitizer report: $(grep -Em1 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer' "$log" | cut -c1-200)"
	fi
	printf '%-40s %4d pass %3d fail%s%s\n' "$name" "$p" "$f" \
		"${secs:+ $(printf '%4d s' "$secs")}" \
		"$([ "$rc" -ne 0 ] && echo " (exit $rc)")"
}

# run_part NAME TIMEOUT SCAN cmd...: run with a time limit, log, tally;
# the part's wall time goes on its line and into $LOGS/times
run_part() {
	local name=$1 limit=$2 scan=$3 log rc t0 secs
	shift 3
	log="$LOGS/$(echo "$name" | tr '/ ' '__').log"
	t0=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$log" 2>&1 </dev/null
	rc=$?
	secs=$(($(date +%s) - t0))
	echo "$secs $name" >>"$LOGS/times"
	tally "$name" "$log" "$rc" "$scan" "$secs"
}

# Integration parts run IDEM_TEST_JOBS at a time (default 2): each has its
# own scratch dir, database, free ports and, when it stops MariaDB, its
# own server, and most of their time is waits. Unit binaries share one
# database and run one at a time.
JOBS=${IDEM_TEST_JOBS:-2}
case $JOBS in [1-9] | 1[0-6]) ;; *) echo "IDEM_TEST_JOBS must be 1 to 16" >&2; exit 2 ;; esac
export IDEM_TEST_JOBS=$JOBS
declare -A POOL_NAME=() POOL_SCAN=() POOL_T0=() POOL_LOG=() POOL_LANE=()

pool_reap() { # pool_reap: wait for one running part, log and tally it
	local pid rc secs name
	wait -n -p pid "${!POOL_NAME[@]}"
	rc=$?
	[ -n "${pid:-}" ] || return 1
	name=${POOL_NAME[$pid]}
	secs=$(($(date +%s) - POOL_T0[$pid]))
	echo "$secs $name" >>"$LOGS/times"
	tally "$name" "${POOL_LOG[$pid]}" "$rc" "${POOL_SCAN[$pid]}" "$secs"
	unset "POOL_NAME[$pid]" "POOL_SCAN[$pid]" "POOL_T0[$pid]" "POOL_LOG[$pid]" \
		"POOL_LANE[$pid]"
}

# pool_part NAME TIMEOUT SCAN cmd...: as run_part, started in the
# background once fewer than $JOBS parts run
pool_part() {
	local name=$1 limit=$2 scan=$3 log lane
	shift 3
	while [ ${#POOL_NAME[@]} -ge "$JOBS" ]; do pool_reap || break; done
	log="$LOGS/$(echo "$name" | tr '/ ' '__').log"
	# a lane no running part has: its own range of free ports
	# (tests/lib/harness.sh free_port), so two parts never race for one
	lane=0
	while [[ " ${POOL_LANE[*]} " == *" $lane "* ]]; do lane=$((lane + 1)); done
	IDEM_TEST_LANE=$lane timeout -k 10 "$limit" "$@" >"$log" 2>&1 </dev/null &
	POOL_LANE[$!]=$lane
	POOL_NAME[$!]=$name
	POOL_SCAN[$!]=$scan
	POOL_T0[$!]=$(date +%s)
	POOL_LOG[$!]=$log
}

pool_drain() { while [ ${#POOL_NAME[@]} -gt 0 ]; do pool_reap || break; done; }

# ------------------------------------------------------------ servers

TESTROOT=$(mktemp -d /tmp/idemtest.XXXXXX)
export TESTROOT
# private to this run (another run in the same tree shares $LOGS)
FAILS="$TESTROOT/FAILS"
: >"$FAILS"
cleanup() {
	trap - EXIT INT TERM
	# the background builds and fuzzers: the subshell first, so it
	# starts nothing more, then what it runs
	if [ -n "${BG_BUILD:-}" ]; then
		kids=$(pgrep -P "$BG_BUILD")
		kill "$BG_BUILD" $kids 2>/dev/null
	fi
	# parts still running (timeout passes the signal on)
	[ ${#POOL_NAME[@]} -gt 0 ] && kill "${!POOL_NAME[@]}" 2>/dev/null && sleep 1
	mariadb_cleanup >/dev/null 2>&1
	rm -rf "$TESTROOT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# shellcheck source=lib/mariadb.sh
. "$ROOT/tests/lib/mariadb.sh"

# ------------------------------------------------------------ parts

unit_and_it() { # unit_and_it BUILD SCAN
	local b=$1 scan=$2 t n started=
	for t in "$b"/tests/test_*; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		n=$(basename "$t")
		selected "$n" || continue
		# each unit binary starts from an empty database
		[ -n "${IDEM_TEST_MYCNF:-}" ] && mariadb_newdb unit >>"$LOGS/mariadb.log" 2>&1
		run_part "$b:$n" 120 "$scan" env IDEM_BUILD="$b" "$t"
	done
	# the longest first, so that the last to start are short
	for t in tests/it/t_galera.sh tests/it/t_fault_chaos.sh tests/it/t_php_fpm.sh \
		tests/it/t_*.sh tests/tui/t_*.sh; do
		[ -f "$t" ] || continue
		n=$(basename "$t" .sh)
		selected "$n" || continue
		case " $started " in *" $t "*) continue ;; esac
		started+=" $t"
		# t_deb builds its own package from the sources: the same
		# test whichever build is being checked
		[ "$scan" = 1 ] && [ "$n" = t_deb ] && continue
		pool_part "$b:$n" 300 "$scan" env IDEM_BUILD="$b" bash "$t"
	done
	pool_drain
}

START=$(date +%s)
echo "== build"
# -k: a broken file must not keep the rest from being built and tested
if make -k -j2 tests >"$LOGS/build.log" 2>&1; then
	PASSED=$((PASSED + 1))
	echo "PASS: build"
else
	fail_line "build: make tests failed (log: $LOGS/build.log): $(grep -m1 -E 'error:|Error [0-9]|undefined reference' "$LOGS/build.log" | cut -c1-200)"
fi

echo "== MariaDB"
mdb_up() {
	mariadb_init >>"$LOGS/mariadb.log" 2>&1 && return 0
	# one more try from scratch
	mariadb_stop >/dev/null 2>&1
	rm -rf "$TESTROOT/mariadb"
	mariadb_init >>"$LOGS/mariadb.log" 2>&1
}
: >"$LOGS/mariadb.log"
if mdb_up && mariadb_newdb unit >>"$LOGS/mariadb.log" 2>&1; then
	export IDEM_TEST_MYCNF="$TESTROOT/unit.cnf"
	export IDEM_TEST_MDB_SOCK="$MDB_SOCK"
else
	fail_line "private MariaDB did not start (log: $LOGS/mariadb.log)"
fi

# The sanitizer and fuzz builds, and the fuzzers (10 s each), need only
# the CPU: they go on at the lowest priority while the first pass's
# tests (mostly waits) run, so the CPU those tests use is theirs.
fuzz_all() { # runs each fuzzer; its status in $TESTROOT/fuzz-NAME.rc
	local f n corpus
	for f in build-fuzz/fuzz/fuzz_*; do
		[ -x "$f" ] || continue
		n=$(basename "$f")
		corpus="$TESTROOT/corpus-$n"
		mkdir -p "$corpus"
		[ -d "tests/fuzz/corpus/$n" ] && cp -r "tests/fuzz/corpus/$n/." "$corpus/"
		nice -n 19 timeout -k 10 60 "$f" -max_total_time=10 -rss_limit_mb=1024 \
			-print_final_stats=1 "$corpus" >"$LOGS/fuzz-$n.log" 2>&1
		echo $? >"$TESTROOT/fuzz-$n.rc"
	done
}
BG_BUILD=
if [ "$QUICK" = 0 ]; then
	(
		nice -n 19 make -k -j2 asan >"$LOGS/asan-build.log" 2>&1
		echo $? >"$TESTROOT/asan.rc"
		nice -n 19 make fuzz >"$LOGS/fuzz-build.log" 2>&1
		rc=$?
		echo $rc >"$TESTROOT/fuzz.rc"
		[ "$rc" = 0 ] && fuzz_all
	) &
	BG_BUILD=$!
fi
bg_build_wait() { # the background work is done
	[ -n "$BG_BUILD" ] && wait "$BG_BUILD" 2>/dev/null
	BG_BUILD=
}
bg_build_rc() { cat "$TESTROOT/$1.rc" 2>/dev/null || echo 1; } # NAME: its status

echo "== unit + integration (build)"
unit_and_it build 0

if [ "$QUICK" = 0 ]; then
	echo "== fuzz"
	if ls tests/fuzz/fuzz_*.c >/dev/null 2>&1; then
		bg_build_wait
		if [ "$(bg_build_rc fuzz)" = 0 ]; then
			for f in build-fuzz/fuzz/fuzz_*; do
				[ -x "$f" ] || continue
				n=$(basename "$f")
				log="$LOGS/fuzz-$n.log"
				rc=$(bg_build_rc "fuzz-$n")
				if [ "$rc" -eq 0 ]; then
					PASSED=$((PASSED + 1))
					echo "PASS: fuzz $n"
				else
					fail_line "fuzz $n exited $rc (log: $log): $(grep -Em1 'ERROR|runtime error|SUMMARY' "$log" | cut -c1-200)"
				fi
			done
		else
			fail_line "make fuzz failed (log: $LOGS/fuzz-build.log)"
		fi
	fi

	echo "== ASan + UBSan"
	bg_build_wait
	if [ "$(bg_build_rc asan)" = 0 ]; then
		PASSED=$((PASSED + 1))
		echo "PASS: asan build"
	else
		fail_line "make asan failed (log: $LOGS/asan-build.log): $(grep -m1 -E 'error:|Error [0-9]|undefined reference' "$LOGS/asan-build.log" | cut -c1-200)"
	fi
	# whatever did build is still tested
	# The cluster test's checks run again, its rerun of the suite does not.
	export IDEM_GALERA_SUITE=0
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	unit_and_it build-asan 1
	unset ASAN_OPTIONS UBSAN_OPTIONS
fi

echo "== done in $(($(date +%s) - START)) s; logs in $LOGS"
cp "$FAILS" "$LOGS/FAILS" 2>/dev/null
if [ -s "$FAILS" ]; then
	echo "== failures"
	cat "$FAILS"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
