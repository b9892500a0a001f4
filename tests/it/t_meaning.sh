#!/bin/bash
# Requests by meaning, through lighttpd with a real handler whose own log
# counts its runs: two bodies a handler reads differently are never one
# request under fingerprint = canonical (422, one run); one client whose
# Authorization is spelled three ways is one scope (one run, one quota
# count); a scope header given twice is refused (400 ambiguous-header),
# so one tenant never gets another's answer.
. "$(dirname "$0")/../lib/harness.sh"

P=$(cgi_install pay)
std_setup "[route /pay]
handler = cgi:$P
fingerprint = canonical

[route /auth]
handler = cgi:$P
scope = header:Authorization
new_keys_per_minute = 5

[route /tenant]
handler = cgi:$P
scope = header:X-Tenant

[route /apikey]
handler = cgi:$P
scope = header:X-Api-Key
fingerprint_headers = Api-Version" || { done_testing; exit 1; }
# Two more lighttpds that set the tenant themselves, as a site would
# (setenv.set-request-header replaces the client's X-Tenant).
LIGHTTPD_EXTRA='server.modules += ( "mod_setenv" )
setenv.set-request-header = ( "X-Tenant" => "alice" )' \
	lighttpd_start alice "unix:$T/gw.sock" || { done_testing; exit 1; }
LIGHTTPD_EXTRA='server.modules += ( "mod_setenv" )
setenv.set-request-header = ( "X-Tenant" => "bob" )' \
	lighttpd_start bob "unix:$T/gw.sock" || { done_testing; exit 1; }

# pair NAME CTYPE A B: A then B under one key: B is another request.
pair() {
	local name=$1 ct=$2 a=$3 b=$4 K n0
	K=$(new_key)
	n0=$(runs pay)
	http m1 POST "$(url web /pay)" -H "Idempotency-Key: $K" -H "Content-Type: $ct" --data-binary "$a"
	expect_eq "$name: first created" created "$(hdr m1 Idempotency-Result)"
	http m2 POST "$(url web /pay)" -H "Idempotency-Key: $K" -H "Content-Type: $ct" --data-binary "$b"
	is_problem "$name: the other body" m2 422 key-mismatch
	expect_eq "$name: one run" 1 $(($(runs pay) - n0))
}
FORM=application/x-www-form-urlencoded
pair "form, one name twice" $FORM 'amount=1&amount=1000' 'amount=1000&amount=1'
pair "form, an array in order" $FORM 'a[]=1&a[]=2' 'a[]=2&a[]=1'
pair "json, a 64-bit id" application/json '{"to":9007199254740993}' '{"to":9007199254740992}'
pair "json, more digits than a double" application/json '{"amount":0.1000000000000000055511151231257827}' '{"amount":0.1}'
MP='multipart/form-data; boundary=XyZ'
part='--XyZ\r\nContent-Disposition: form-data; name="amount"\r\n\r\n'
pair "multipart, a part after the close delimiter" "$MP" \
	"$(printf -- "${part}1\r\n--XyZ--\r\n")" \
	"$(printf -- "${part}1\r\n--XyZ--\r\n${part}1000\r\n--XyZ--\r\n")"
# The type's parameters: another charset or profile is another request;
# charset=utf-8 is what JSON is anyway.
ctpair() { # ctpair NAME CTYPE-A CTYPE-B BODY WANT
	local K
	K=$(new_key)
	http c1 POST "$(url web /pay)" -H "Idempotency-Key: $K" -H "Content-Type: $2" --data-binary "$4"
	http c2 POST "$(url web /pay)" -H "Idempotency-Key: $K" -H "Content-Type: $3" --data-binary "$4"
	if [ "$5" = 422 ]; then is_problem "$1" c2 422 key-mismatch
	else expect_eq "$1" reused "$(hdr c2 Idempotency-Result)"; fi
}
ctpair "json: charset=iso-8859-1 is another request" application/json 'application/json; charset=iso-8859-1' '{"amount":10}' 422
ctpair "json: profile=v2 is another request" application/json 'application/json; profile=v2' '{"amount":10}' 422
ctpair "json: charset=utf-8 is the same" application/json 'application/json; charset="UTF-8"' '{"amount":10}' reused
ctpair "form: charset=iso-8859-1 is another request" $FORM "$FORM; charset=iso-8859-1" 'amount=10' 422

# What canonical is for: the same meaning, re-encoded, still replays.
K=$(new_key)
n0=$(runs pay)
http j1 POST "$(url web /pay)" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{"amount":1.50,"to":"acct_1"}'
http j2 POST "$(url web /pay)" -H "Idempotency-Key: $K" -H 'Content-Type: application/json' --data-binary '{ "to": "acct_\u0031", "amount": 15e-1 }'
expect_eq "json, the same meaning re-encoded: reused" reused "$(hdr j2 Idempotency-Result)"
http f1 POST "$(url web /pay)" -H "Idempotency-Key: $(new_key)" --data-binary 'currency=eur&amount=5'
K=$(new_key)
http f2 POST "$(url web /pay)" -H "Idempotency-Key: $K" --data-binary 'amount=5&currency=eur'
http f3 POST "$(url web /pay)" -H "Idempotency-Key: $K" --data-binary 'currency=eur&amount=5'
expect_eq "form, two names reordered: reused" reused "$(hdr f3 Idempotency-Result)"
expect_eq "the same meaning: one run each" 3 $(($(runs pay) - n0))

# --- One client, three spellings of its Authorization: one scope.
# (The quota's window is the calendar minute: start well inside one.)
while [ $(($(date +%s) % 60)) -gt 50 ]; do sleep 0.5; done
K=$(new_key)
n0=$(runs pay)
http a1 POST "$(url web /auth)" -H "Idempotency-Key: $K" -H 'Authorization: Bearer tok-123' --data-binary 'x=1'
http a2 POST "$(url web /auth)" -H "Idempotency-Key: $K" -H 'Authorization: bearer tok-123' --data-binary 'x=1'
http a3 POST "$(url web /auth)" -H "Idempotency-Key: $K" -H 'Authorization: Bearer  tok-123' --data-binary 'x=1'
expect_eq "authorization: created" created "$(hdr a1 Idempotency-Result)"
expect_eq "authorization: scheme in lower case replays" reused "$(hdr a2 Idempotency-Result)"
expect_eq "authorization: two spaces replay" reused "$(hdr a3 Idempotency-Result)"
expect_eq "authorization: one run" 1 $(($(runs pay) - n0))
http a4 POST "$(url web /auth)" -H "Idempotency-Key: $K" -H 'Authorization: Bearer TOK-123' --data-binary 'x=1'
expect_eq "authorization: the credentials are not folded" created "$(hdr a4 Idempotency-Result)"
# idemctl finds the key under any spelling the gateway takes as this
# client, and not under other credentials.
for sp in 'Bearer tok-123' 'BEARER  tok-123' 'bearer tok-123'; do
	"$IDEM_BUILD/idemctl" -c "$T/gw.conf" show "$K" --scope "header:Authorization:$sp" >"$T/show.out" 2>&1
	expect_eq "idemctl show --scope 'header:Authorization:$sp'" 0 "$?"
done
"$IDEM_BUILD/idemctl" -c "$T/gw.conf" show "$K" --scope "header:Authorization:Bearer tok-999" >"$T/show.out" 2>&1
expect_eq "idemctl show under other credentials: no such key" 7 "$?"
# The quota (5 new keys a minute) counts one client once, however spelled:
# a1 and a4 were two clients; four more new keys of this one fit, the
# fifth does not.
spell=('Bearer tok-123' 'bearer tok-123' 'BEARER   tok-123' 'Bearer tok-123' 'bearer  tok-123')
codes=
for i in 0 1 2 3 4; do
	http q POST "$(url web /auth)" -H "Idempotency-Key: $(new_key)" -H "Authorization: ${spell[$i]}" --data-binary 'x=1'
	codes="$codes $HS"
done
expect_eq "authorization: one quota, whatever the spelling" " 201 201 201 201 429" "$codes"

# --- A scope header given twice: the site sets X-Tenant; Bob adds his
# own X_Tenant: alice, which lighttpd passes as HTTP_X_TENANT too.
K=$(new_key)
n0=$(runs pay)
http t1 POST "$(url alice /tenant)" -H "Idempotency-Key: $K" --data-binary 'pay=alice'
expect_eq "tenant: Alice's request runs" created "$(hdr t1 Idempotency-Result)"
http t2 POST "$(url bob /tenant)" -H "Idempotency-Key: $K" -H 'X_Tenant: alice' --data-binary 'pay=alice'
is_problem "tenant: Bob with a second X-Tenant" t2 400 ambiguous-header
expect_nomatch "tenant: Bob never gets Alice's answer" 'pay=alice|body_sha256' "$(body t2)"
expect_eq "tenant: nothing ran for Bob" 1 $(($(runs pay) - n0))
http t3 POST "$(url bob /tenant)" -H "Idempotency-Key: $K" --data-binary 'pay=alice'
expect_eq "tenant: Bob's own scope is another key" created "$(hdr t3 Idempotency-Result)"
# The README's lighttpd lines for such a site: the client's copy is
# refused before it reaches idemgate.
LIGHTTPD_EXTRA='server.modules += ( "mod_setenv", "mod_access" )
setenv.set-request-header = ( "X-Tenant" => "bob" )
$REQUEST_HEADER["X_Tenant"] != "" { url.access-deny = ( "" ) }' \
	lighttpd_start guarded "unix:$T/gw.sock" || { done_testing; exit 1; }
n0=$(runs pay)
http t4 POST "$(url guarded /tenant)" -H "Idempotency-Key: $K" -H 'X_Tenant: alice' --data-binary 'pay=alice'
expect_eq "tenant: lighttpd refuses the client's X_Tenant" 403 "$HS"
http t5 POST "$(url guarded /tenant)" -H "Idempotency-Key: $K" --data-binary 'pay=alice'
expect_eq "tenant: without it, Bob's key replays Bob's answer" reused "$(hdr t5 Idempotency-Result)"
expect_eq "tenant: nothing more ran" 0 $(($(runs pay) - n0))
# The client sends both spellings of a scope header, or of a fingerprint
# header: refused, nothing runs.
n0=$(runs pay)
http k1 POST "$(url web /apikey)" -H "Idempotency-Key: $(new_key)" -H 'X-Api-Key: AAA' -H 'X_Api_Key: BBB' --data-binary 'x=1'
is_problem "api key: two spellings" k1 400 ambiguous-header
http k2 POST "$(url web /apikey)" -H "Idempotency-Key: $(new_key)" -H 'X-Api-Key: AAA' -H 'Api-Version: 1' -H 'Api_Version: 2' --data-binary 'x=1'
is_problem "fingerprint header: two spellings" k2 400 ambiguous-header
http k3 POST "$(url web /apikey)" -H "Idempotency-Key: k-one" -H "Idempotency_Key: k-two" -H 'X-Api-Key: AAA' --data-binary 'x=1'
is_problem "the key header: two spellings" k3 400 ambiguous-header
expect_eq "two spellings: nothing ran" 0 $(($(runs pay) - n0))
done_testing
