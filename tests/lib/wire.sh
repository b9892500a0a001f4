# Helpers for the tests of the shipped web-server wiring (t_wire_*.sh):
# the files are installed with "make install-files" into a staged root and
# the real web server loads that copy.  Source after harness.sh.
#   wire_stage                  install into $S (= $T/stage, PREFIX=/usr)
#   wire_sock FILE SRC          FILE, the staged copy of SRC (etc/...): its
#                               socket moved to $T/gw.sock, nothing else
#   wire_backends PAYPATH       the CGI "pay" on route PAYPATH, PHP-FPM on
#                               /pay.php, "[route /cgi-bin/] handler = script"
#                               under /usr/lib/cgi-bin (the package's default)
#                               behind gateway "gw" on unix:$T/gw.sock
#   wire_pay, wire_php, wire_script LABEL URL...: created + replayed
#                               payment (CGI "pay"), PHP-FPM run, file name

S=$T/stage
WIRE_SOCK=/run/idemgate/idemgate.sock

wire_stage() {
	make -s -C "$IDEM_ROOT" install-files B="$IDEM_BUILD" DESTDIR="$S" \
	    PREFIX=/usr SYSCONFDIR=/etc UNITDIR=/lib/systemd/system \
	    >"$T/install.log" 2>&1
	expect_eq "make install-files: exit 0" 0 "$?"
}

# wire_sock FILE (a staged copy of etc/SRC): tests cannot take the system's
# socket, so only its path is rewritten; the rest stays as shipped.
wire_sock() {
	local f=$1 src=$2
	expect_eq "$(basename "$f") installed 0644" 644 "$(stat -c %a "$f" 2>&1)"
	expect_file_eq "$(basename "$f") installed as shipped" "$IDEM_ROOT/$src" "$f"
	sed -i "s|$WIRE_SOCK|$T/gw.sock|g" "$f"
	expect_eq "$(basename "$f"): only the socket path rewritten" "" \
	    "$(sed "s|$T/gw.sock|$WIRE_SOCK|g" "$f" | diff - "$IDEM_ROOT/$src")"
}

wire_backends() {
	PAY=$(cgi_install pay)
	fpm_start fpm "request_terminate_timeout = 8s" || return 1
	db_new "$TNAME" || return 1
	gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
	# web servers' workers run as www-data: let that group connect.
	# timeout and max_response: a handler that breaks off mid-answer.
	cat >>"$T/gw.conf" <<CONF
socket_owner = root:www-data

[route $1]
handler = cgi:$PAY
timeout = 2s
max_response = 1M

[route /cgi-bin/]
handler = script
script_root = /usr/lib/cgi-bin

[route /pay.php]
handler = fastcgi:unix:$T/fpm.sock
run_limit = 8s
CONF
	gw_start gw "$T/gw.conf"
}

# wire_pay LABEL URL: a protected payment through URL runs the CGI
# "pay" once and replays.
wire_pay() {
	local L=$1 U=$2 K n0
	K=$(new_key)
	n0=$(runs pay)
	http w1 POST "$U" -H "Idempotency-Key: $K" --data-binary 'amount=4200'
	expect_eq "$L: payment 201" 201 "$HS"
	expect_eq "$L: created" created "$(hdr w1 Idempotency-Result)"
	http w2 POST "$U" -H "Idempotency-Key: $K" --data-binary 'amount=4200'
	expect_eq "$L: retry 201" 201 "$HS"
	expect_eq "$L: reused" reused "$(hdr w2 Idempotency-Result)"
	expect_file_eq "$L: the same answer" "$T/w1.b" "$T/w2.b"
	expect_eq "$L: one run" 1 $(($(runs pay) - n0))
}

# wire_php LABEL URL: a protected POST to PHP-FPM (fpm_start) runs the
# script once, counted from its own log, and replays.
wire_php() {
	local L=$1 U=$2 K n0
	K=$(new_key)
	n0=$(fpm_runs)
	http f1 POST "$U" -H "Idempotency-Key: $K" --data-binary 'amount=5'
	expect_eq "$L: PHP's 201" 201 "$HS"
	expect_eq "$L: created" created "$(hdr f1 Idempotency-Result)"
	expect_match "$L: PHP ran its script" '"body":"amount=5"' "$(body f1)"
	http f2 POST "$U" -H "Idempotency-Key: $K" --data-binary 'amount=5'
	expect_eq "$L: reused" reused "$(hdr f2 Idempotency-Result)"
	expect_file_eq "$L: byte-for-byte" "$T/f1.b" "$T/f2.b"
	expect_eq "$L: one PHP run" 1 $(($(fpm_runs) - n0))
}

# wire_script LABEL URL NAME: lighttpd/nginx/Caddy named the file
# /usr/lib/cgi-bin/NAME, where the package's "[route /] handler = script"
# looks (NAME does not exist: idemgate's 404 and its log say which file).
wire_script() {
	local L=$1 U=$2 N=$3
	http s1 GET "$U"
	expect_eq "$L: a missing script is idemgate's 404" 404 "$HS"
	wait_until 3 grep -q "script /usr/lib/cgi-bin/$N.* refused" "$T/gw.log"
	expect_match "$L: SCRIPT_FILENAME under /usr/lib/cgi-bin" \
	    "script /usr/lib/cgi-bin/$N" "$(grep -o "script [^ ]* refused" "$T/gw.log")"
}
