# Key-rotation fixture of the rekey tests (t_seal_rekey*.sh).  Source after
# harness.sh.
#   rekey_setup PAY [LINES]   database $TNAME; key file $T/k.keys holding k1
#                             ($K1); $T/gw.conf on unix:$T/gw.sock sealing
#                             with it ([gateway] LINES first), route
#                             /payments to the CGI PAY
#   reload                    SIGHUP gateway "gw", wait for its new generation
#   ctl ARGS...               idemctl -c $T/gw.conf ARGS
#   kid KEY                   the row's seal_kid ("-": stored in clear)

K1=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
# shellcheck disable=SC2034 # used by the tests that source this
K2=2222222222222222222222222222222222222222222222222222222222222222

rekey_setup() {
	db_new "$TNAME" || return 1
	printf 'k1 %s\n' "$K1" >"$T/k.keys"
	chmod 0600 "$T/k.keys"
	gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
	printf '%ssecret_key_file = %s\n\n[route /payments]\nhandler = cgi:%s\n' \
	    "${2:-}" "$T/k.keys" "$1" >>"$T/gw.conf"
}

# reload: SIGHUP, then wait for the new generation's log line.
reload() {
	local n
	n=$(grep -c 'config reloaded' "$T/gw.log")
	kill -HUP "${GW_PID[gw]}"
	wait_until 5 sh -c "[ \$(grep -c 'config reloaded' '$T/gw.log') -gt $n ]" ||
	    not_ok "reload logged" "$(tail -3 "$T/gw.log")"
	sleep 0.5	# the old generation drains
}
ctl() { "$IDEMCTL" -c "$T/gw.conf" "$@"; }
kid() { db_query "$TNAME" "SELECT IFNULL(seal_kid, '-') FROM idem_keys WHERE idem_key = '$1'"; }
