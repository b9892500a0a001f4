#!/bin/bash
# fingerprint = canonical against the parsers handlers really use: over
# generated pairs of bodies, whenever PHP (json_decode, parse_str, and
# $_POST/$_FILES through a real PHP-FPM for multipart) or Python (json
# with Decimal, parse_qsl) reads two bodies differently, idemgate's
# fingerprints for them differ.  Bounded in time (CANON_DIFF_SECONDS,
# default 15); prints how often canonical agrees where all read alike.
. "$(dirname "$0")/../lib/harness.sh"

for c in php python3 cgi-fcgi; do
	command -v "$c" >/dev/null || { not_ok "$c installed"; done_testing; exit 1; }
done
fpm_start fpm || { done_testing; exit 1; }
cp "$IDEM_ROOT/tests/it/php/readers.php" "$T/www/readers.php"
chmod 0644 "$T/www/readers.php"
mkdir -p "$T/diff"
# Under the sanitizers the point is memory, not more pairs: 5 s there.
secs=${CANON_DIFF_SECONDS:-15}
case $IDEM_BUILD in *asan*) secs=${CANON_DIFF_SECONDS:-5} ;; esac
out=$(python3 "$IDEM_ROOT/tests/it/canon_diff.py" "$ITBIN/canon_dump" \
	"$T/www/readers.php" "$T/diff" "$secs" "$T/fpm.sock" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v '^  ' | sed 's/^/# /'
expect_eq "differential: the driver ran to its end" 0 "$rc"
expect_match "differential: JSON pairs were read" '^json: [1-9][0-9]* pairs' "$out"
expect_match "differential: form pairs were read" '^form: [1-9][0-9]* pairs' "$out"
expect_match "differential: multipart pairs went through PHP-FPM" '^multipart: [1-9][0-9]* pairs' "$out"
expect_match "differential: some pairs were read differently" 'pairs, [1-9][0-9]* read differently' "$out"
expect_eq "differential: no two bodies read differently share a fingerprint" "violations: 0" "$(printf '%s\n' "$out" | grep '^violations:')"
printf '%s\n' "$out" | grep -A2 '^VIOLATION' | head -12
done_testing
