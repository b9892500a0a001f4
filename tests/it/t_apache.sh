#!/bin/bash
# Apache (mod_proxy_fcgi) in front: protected POST + replay, chunked request body read to EOF.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
# Apache's children run as www-data: let that group connect.
cat >>"$T/gw.conf" <<EOF
socket_owner = root:www-data

[route /payments]
handler = cgi:$PAY
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
expect_eq "socket group www-data" www-data "$(stat -c %G "$T/gw.sock")"
apache_start ap "unix:$T/gw.sock" || { done_testing; exit 1; }
U=$(url ap /payments)

front_checks apache "$U"
done_testing
