#!/bin/bash
# Idempotency-Key syntax, require_key, which requests are protected, client-sent replay headers.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
OPT=$(cgi_install opt)
OFF=$(cgi_install off)
PUT=$(cgi_install put)
REQ=$(cgi_install req)
std_setup "[route /payments]
handler = cgi:$PAY
require_key = yes

[route /opt]
handler = cgi:$OPT

[route /off]
handler = cgi:$OFF
idempotency = off

[route /put]
handler = cgi:$PUT
methods = PUT

[route /req]
handler = cgi:$REQ
require_key = yes
key_header = X-Request-Id" || { done_testing; exit 1; }
U=$(url web /payments)

http a POST "$U" --data-binary 'x'
is_problem "no key, require_key" a 400 missing-key
expect_match "no key: the detail names the header" 'requires an Idempotency-Key header' "$(body a)"
expect_eq "no key: handler not run" 0 "$(runs pay)"
# A route reading another header names that one.
http a POST "$(url web /req)" -H 'Idempotency-Key: k-other' --data-binary 'x'
is_problem "key_header X-Request-Id, no such header" a 400 missing-key
expect_match "key_header: the detail names X-Request-Id" 'requires an X-Request-Id header' "$(body a)"
expect_eq "key_header: handler not run" 0 "$(runs req)"

# bad KEYS: each must be 400 invalid-key without running the handler
badkey() { # badkey NAME HEADER-ARG [slug-re]
	http bk POST "$U" -H "$2" --data-binary 'x'
	expect_eq "$1: 400" 400 "$HS"
	expect_match "$1: problem+json" '^application/problem\+json' "$(hdr bk Content-Type)"
	expect_match "$1: slug" "urn:idemgate:problem:(${3:-invalid-key})\"" "$(body bk)"
	expect_eq "$1: handler not run" 0 "$(runs pay)"
}
K256=$(head -c 256 /dev/zero | tr '\0' k)
K255=$(head -c 255 /dev/zero | tr '\0' k)
badkey "empty key" "Idempotency-Key;" "invalid-key|missing-key"
badkey "empty sf-string" 'Idempotency-Key: ""'
badkey "256-byte key" "Idempotency-Key: $K256"
badkey "256-byte sf-string" "Idempotency-Key: \"$K256\""
badkey "control char (tab) in key" "Idempotency-Key: ab$(printf '\t')cd"
badkey "unterminated sf-string" 'Idempotency-Key: "abc'
badkey "bad escape in sf-string" 'Idempotency-Key: "a\qb"'
badkey "space inside a bare token" 'Idempotency-Key: ab cd'

K255=$(head -c 250 /dev/zero | tr '\0' k)-$(printf %04d $((RANDOM % 10000)))
http k1 POST "$U" -H "Idempotency-Key: $K255" --data-binary 'x'
expect_eq "255-byte key: 201" 201 "$HS"
expect_eq "255-byte key: created" created "$(hdr k1 Idempotency-Result)"
http k2 POST "$U" -H "Idempotency-Key: $K255" --data-binary 'x'
expect_eq "255-byte key: replayed" reused "$(hdr k2 Idempotency-Result)"
n=$(runs pay)

# "k" and k are the same key
K=$(new_key)
http q1 POST "$U" -H "Idempotency-Key: \"$K\"" --data-binary 'y'
expect_eq "sf-string key: created" created "$(hdr q1 Idempotency-Result)"
http q2 POST "$U" -H "Idempotency-Key: $K" --data-binary 'y'
expect_eq "bare token = same sf-string key: reused" reused "$(hdr q2 Idempotency-Result)"
expect_file_eq "bare token = same sf-string key: same body" "$T/q1.b" "$T/q2.b"
expect_eq "quoted and bare: ran once" $((n + 1)) "$(runs pay)"
http q3 POST "$U" -H 'Idempotency-Key: "esc\"aped\\key"' --data-binary 'y'
expect_eq "sf-string with escapes: created" created "$(hdr q3 Idempotency-Result)"

# Client-sent replay headers: no effect, not passed to the handler.
K=$(new_key)
http c1 POST "$U?env=1" -H "Idempotency-Key: $K" -H 'Idempotent-Replayed: true' \
	-H 'Idempotency-Result: reused' --data-binary 'z'
expect_eq "client Idempotent-Replayed: still created" created "$(hdr c1 Idempotency-Result)"
expect_eq "client Idempotent-Replayed: not echoed" "" "$(hdr c1 Idempotent-Replayed)"
expect_nomatch "client replay headers not passed to the handler" 'HTTP_IDEMPOTENT_REPLAYED|HTTP_IDEMPOTENCY_RESULT' "$(body c1)"
K=$(new_key)
http h1 POST "$U" -H "Idempotency-Key: $K" --data-binary 'h'
expect_eq "handler's own Idempotent-Replayed dropped on created" "" "$(hdr h1 Idempotent-Replayed)"
http h2 POST "$U" -H "Idempotency-Key: $K" --data-binary 'h'
expect_eq "replay carries exactly one Idempotent-Replayed: true" "true" \
	"$(tr -d '\r' <"$T/h2.h" | grep -i '^Idempotent-Replayed:' | sed 's/^[^:]*: *//' | tr '\n' ' ' | sed 's/ $//')"

# Unprotected: GET with a key, key-optional POST without one, idempotency = off, unlisted method.
n=$(runs pay)
K=$(new_key)
http g1 GET "$U?g=1" -H "Idempotency-Key: $K"
http g2 GET "$U?g=1" -H "Idempotency-Key: $K"
expect_eq "GET with key: handler status" 201 "$HS"
expect_eq "GET with key: no Idempotency-Result" "" "$(hdr g2 Idempotency-Result)"
expect_eq "GET with key: ran twice" $((n + 2)) "$(runs pay)"
http g3 HEAD "$U" -H "Idempotency-Key: $K" --head
expect_eq "HEAD with key untouched: no Idempotency-Result" "" "$(hdr g3 Idempotency-Result)"
http pu1 PUT "$U" -H "Idempotency-Key: $K" --data-binary 'p'
http pu2 PUT "$U" -H "Idempotency-Key: $K" --data-binary 'p'
expect_eq "PUT (not in methods) with key: no Idempotency-Result" "" "$(hdr pu2 Idempotency-Result)"

http o1 POST "$(url web /opt)" --data-binary 'o'
http o2 POST "$(url web /opt)" --data-binary 'o'
expect_eq "key optional, no key: passes" 201 "$HS"
expect_eq "key optional, no key: no Idempotency-Result" "" "$(hdr o2 Idempotency-Result)"
expect_eq "key optional, no key: ran twice" 2 "$(runs opt)"
# The handler (the payments CGI says Idempotent-Replayed itself) cannot
# make an answer of a protected route claim a replay: dropped on a
# protected request run without a key too, kept where the route leaves
# idempotency to the handler.
expect_eq "key optional, no key: the handler's own Idempotent-Replayed dropped" "" "$(hdr o2 Idempotent-Replayed)"

K=$(new_key)
http f1 POST "$(url web /off)" -H "Idempotency-Key: $K" --data-binary 'f'
http f2 POST "$(url web /off)" -H "Idempotency-Key: $K" --data-binary 'f'
expect_eq "idempotency = off: 201" 201 "$HS"
expect_eq "idempotency = off: no Idempotency-Result" "" "$(hdr f2 Idempotency-Result)"
expect_eq "idempotency = off: ran twice" 2 "$(runs off)"
expect_eq "idempotency = off: the handler's own Idempotent-Replayed kept" "handler-says-so" "$(hdr f2 Idempotent-Replayed)"

http m1 PUT "$(url web /put)" -H "Idempotency-Key: $K" --data-binary 'm'
http m2 PUT "$(url web /put)" -H "Idempotency-Key: $K" --data-binary 'm'
expect_eq "methods = PUT: PUT protected" reused "$(hdr m2 Idempotency-Result)"
expect_eq "methods = PUT: ran once" 1 "$(runs put)"
http m3 POST "$(url web /put)" -H "Idempotency-Key: $K" --data-binary 'm'
expect_eq "methods = PUT: POST not protected" "" "$(hdr m3 Idempotency-Result)"
done_testing
