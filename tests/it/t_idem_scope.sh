#!/bin/bash
# Scopes: the same key under two API keys runs twice; API keys are never stored in clear.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
RU=$(cgi_install ru)
std_setup "[route /payments]
handler = cgi:$PAY
scope = header:X-Api-Key

[route /ru]
handler = cgi:$RU
scope = remote_user" || { done_testing; exit 1; }
U=$(url web /payments)
A=sk_live_ALPHAsecret0001
B=sk_live_BRAVOsecret0002

K=$(new_key)
http a1 POST "$U" -H "Idempotency-Key: $K" -H "X-Api-Key: $A" --data-binary 'same'
expect_eq "scope A: created" created "$(hdr a1 Idempotency-Result)"
http b1 POST "$U" -H "Idempotency-Key: $K" -H "X-Api-Key: $B" --data-binary 'same'
expect_eq "scope B, same key: created too" created "$(hdr b1 Idempotency-Result)"
if cmp -s "$T/a1.b" "$T/b1.b"; then not_ok "scope B: its own answer"; else ok "scope B: its own answer"; fi
http a2 POST "$U" -H "Idempotency-Key: $K" -H "X-Api-Key: $A" --data-binary 'same'
expect_eq "scope A again: reused" reused "$(hdr a2 Idempotency-Result)"
expect_file_eq "scope A again: A's answer" "$T/a1.b" "$T/a2.b"
http b2 POST "$U" -H "Idempotency-Key: $K" -H "X-Api-Key: $B" --data-binary 'other body'
is_problem "scope B, other body" b2 422 key-mismatch
expect_eq "two scopes: handler ran twice" 2 "$(runs pay)"

http m POST "$U" -H "Idempotency-Key: $(new_key)" --data-binary 'x'
is_problem "scope header absent" m 400 missing-scope
http r POST "$(url web /ru)" -H "Idempotency-Key: $(new_key)" --data-binary 'x'
is_problem "remote_user scope without a user" r 400 missing-scope
expect_eq "missing scope: handlers not run" "2 0" "$(runs pay) $(runs ru)"

mariadb-dump --no-defaults --socket="$MDB_SOCK" -uroot "$TNAME" >"$T/dump.sql" 2>"$T/dump.err"
expect_eq "mariadb-dump works" 0 "$?"
expect_match "dump holds the keys table" 'idem_keys' "$(head -c 100000 "$T/dump.sql")"
if grep -aq -e "$A" -e "$B" -e ALPHAsecret -e BRAVOsecret "$T/dump.sql"; then
	not_ok "no clear-text API key in the dump"
else ok "no clear-text API key in the dump"; fi
done_testing
