#!/bin/bash
# script handler (fcgiwrap drop-in): ok, missing 404, outside root / symlink escape / not executable 403.
. "$(dirname "$0")/../lib/harness.sh"

W="$T/www"
mkdir -p "$W/cgi-bin/sub" "$W/cgi-bin/dir.cgi"
cp "$ITBIN/payments" "$W/cgi-bin/ok.cgi"
cp "$ITBIN/payments" "$W/cgi-bin/sub/deep.cgi"
cp "$ITBIN/payments" "$W/outside.cgi"
cp "$ITBIN/payments" "$W/cgi-bin/noexec.cgi"
chmod 0755 "$W/cgi-bin/ok.cgi" "$W/cgi-bin/sub/deep.cgi" "$W/outside.cgi"
chmod 0644 "$W/cgi-bin/noexec.cgi"
ln -s ../outside.cgi "$W/cgi-bin/escape.cgi"
ln -s ok.cgi "$W/cgi-bin/inside-link.cgi"
# a multi-call script (it acts on the name it runs under) and a link to it
cat >"$W/cgi-bin/multi.sh" <<'EOF'
#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
echo "0=$0"
echo "SCRIPT_FILENAME=$SCRIPT_FILENAME"
EOF
chmod 0755 "$W/cgi-bin/multi.sh"
ln -s multi.sh "$W/cgi-bin/applet.cgi"
mkfifo "$W/cgi-bin/fifo.cgi"

db_new "$TNAME" || { done_testing; exit 1; }
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF"
cat >>"$T/gw.conf" <<EOF

[route /]
handler = script
script_root = $W/cgi-bin
EOF
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
# mounted by extension, as fcgiwrap usually is: SCRIPT_FILENAME = the file
lighttpd_start web "unix:$T/gw.sock" "$W" .cgi || { done_testing; exit 1; }

# mounted by prefix, as lighttpd maps a directory: SCRIPT_FILENAME is the
# directory, PATH_INFO the rest; the script found in it gets RFC 3875's
# split (SCRIPT_NAME names it, PATH_INFO is what follows it)
lighttpd_start web2 "unix:$T/gw.sock" "$W" /cgi-bin/ || { done_testing; exit 1; }
http sp GET "$(url web2 /cgi-bin/sub/deep.cgi/more/path?env=1)"
expect_eq "prefix mount: the script in the directory runs" 200 "$HS"
expect_match "prefix mount: SCRIPT_NAME names the script" '^SCRIPT_NAME=/cgi-bin/sub/deep\.cgi$' "$(body sp)"
expect_match "prefix mount: PATH_INFO is what follows it" '^PATH_INFO=/more/path$' "$(body sp)"
expect_eq "prefix mount: one SCRIPT_NAME, one PATH_INFO" "1 1" \
    "$(grep -c '^SCRIPT_NAME=' "$T/sp.b") $(grep -c '^PATH_INFO=' "$T/sp.b")"
http sq GET "$(url web2 /cgi-bin/ok.cgi?env=1)"
expect_match "prefix mount, no extra path: SCRIPT_NAME" '^SCRIPT_NAME=/cgi-bin/ok\.cgi$' "$(body sq)"
expect_nomatch "prefix mount, no extra path: no PATH_INFO" '^PATH_INFO=.' "$(body sq)"

# a document root reached through a symlink (a release directory's
# "current" link): the same files, under another spelling of the root
ln -s "$W" "$T/wwwlink"
lighttpd_start web3 "unix:$T/gw.sock" "$T/wwwlink" .cgi || { done_testing; exit 1; }
http sl GET "$(url web3 /cgi-bin/sub/deep.cgi?env=1)"
expect_eq "root through a symlink: runs" 200 "$HS"
expect_match "root through a symlink: SCRIPT_FILENAME is the file" "^SCRIPT_FILENAME=$W/cgi-bin/sub/deep\\.cgi\$" "$(body sl)"
http sm GET "$(url web3 /cgi-bin/missing.cgi)"
is_problem "root through a symlink: missing file" sm 404 not-found
http sd GET "$(url web3 /cgi-bin/nodir/x.cgi)"
is_problem "root through a symlink: missing directory" sd 404 not-found
LIGHTTPD_EXTRA= lighttpd_start web4 "unix:$T/gw.sock" "$T/wwwlink" /cgi-bin/ || { done_testing; exit 1; }
http sw GET "$(url web4 /cgi-bin/sub/deep.cgi/more/path?env=1)"
expect_eq "root through a symlink, prefix mount: the script along PATH_INFO runs" 200 "$HS"
expect_match "root through a symlink, prefix mount: PATH_INFO after it" '^PATH_INFO=/more/path$' "$(body sw)"
http se GET "$(url web3 /cgi-bin/escape.cgi)"
is_problem "root through a symlink: a symlink out of the root" se 403 forbidden
http so GET "$(url web3 /outside.cgi)"
is_problem "root through a symlink: outside script_root" so 403 forbidden

# no SCRIPT_FILENAME (nginx's fastcgi_params, fcgiwrap's own cgit
# example): DOCUMENT_ROOT + SCRIPT_NAME, the rest of it PATH_INFO
env -i REQUEST_METHOD=GET QUERY_STRING=env=1 DOCUMENT_ROOT="$W" \
    SCRIPT_NAME=/cgi-bin/sub/deep.cgi/repo/log \
    REQUEST_URI=/cgi-bin/sub/deep.cgi/repo/log \
    cgi-fcgi -bind -connect "$T/gw.sock" >"$T/dn.out" 2>&1
expect_match "DOCUMENT_ROOT + SCRIPT_NAME: runs the script" '^Status: 200' "$(head -1 "$T/dn.out")"
expect_match "DOCUMENT_ROOT + SCRIPT_NAME: SCRIPT_NAME names it" '^SCRIPT_NAME=/cgi-bin/sub/deep\.cgi$' "$(tr -d '\r' <"$T/dn.out")"
expect_match "DOCUMENT_ROOT + SCRIPT_NAME: the rest is PATH_INFO" '^PATH_INFO=/repo/log$' "$(tr -d '\r' <"$T/dn.out")"
env -i REQUEST_METHOD=GET DOCUMENT_ROOT="$W" SCRIPT_NAME=/outside.cgi \
    REQUEST_URI=/outside.cgi cgi-fcgi -bind -connect "$T/gw.sock" >"$T/do.out" 2>&1
expect_match "DOCUMENT_ROOT + SCRIPT_NAME: outside script_root, 403" '^Status: 403' "$(head -1 "$T/do.out")"

http a GET "$(url web /cgi-bin/ok.cgi?x=1)"
expect_eq "script: runs a file under script_root" 201 "$HS"
expect_match "script: its answer" 'query=x=1' "$(body a)"
http a2 GET "$(url web /cgi-bin/sub/deep.cgi)"
expect_eq "script: subdirectory" 201 "$HS"
http a3 GET "$(url web /cgi-bin/inside-link.cgi)"
expect_eq "script: symlink staying inside the root" 201 "$HS"
# A link runs as the file it resolves to, the file whose place decides its
# route and whose path its key's fingerprint holds: under the link's name
# a multi-call program would act differently under names that share one
# key, or run under a protected directory's name on a weaker route.
http ml GET "$(url web /cgi-bin/applet.cgi)"
expect_eq "link inside the root: runs" 200 "$HS"
expect_eq "link inside the root: \$0 and SCRIPT_FILENAME name the file it resolves to" \
    "0=$W/cgi-bin/multi.sh SCRIPT_FILENAME=$W/cgi-bin/multi.sh" \
    "$(body ml | tr '\n' ' ' | sed 's/ $//')"
http b GET "$(url web /cgi-bin/missing.cgi)"
is_problem "script: missing file" b 404 not-found
http c GET "$(url web /outside.cgi)"
is_problem "script: outside script_root" c 403 forbidden
http d GET "$(url web /cgi-bin/escape.cgi)"
is_problem "script: symlink escaping the root" d 403 forbidden
http e GET "$(url web /cgi-bin/noexec.cgi)"
is_problem "script: not executable" e 403 forbidden
http f GET "$(url web /cgi-bin/dir.cgi)"
is_problem "script: a directory" f 403 forbidden
http f2 GET "$(url web /cgi-bin/fifo.cgi)"
is_problem "script: not a regular file" f2 403 forbidden
expect_eq "script: none of the refused files ran" 0 "$(cat "$W"/outside.cgi.runs "$W"/cgi-bin/noexec.cgi.runs 2>/dev/null | wc -l)"

K=$(new_key)
http p1 POST "$(url web /cgi-bin/ok.cgi)" -H "Idempotency-Key: $K" --data-binary 'amount=1'
http p2 POST "$(url web /cgi-bin/ok.cgi)" -H "Idempotency-Key: $K" --data-binary 'amount=1'
expect_eq "script: protected POST created" created "$(hdr p1 Idempotency-Result)"
expect_eq "script: protected POST replayed" reused "$(hdr p2 Idempotency-Result)"
expect_file_eq "script: replay body" "$T/p1.b" "$T/p2.b"
# A script that is not there yet gets 404 and nothing is kept for its
# key (nothing ran): once deployed, the retry runs it.
K=$(new_key)
http m1 POST "$(url web /cgi-bin/later.cgi)" -H "Idempotency-Key: $K" --data-binary 'amount=2'
is_problem "script: protected POST to a missing script" m1 404 not-found
cp "$ITBIN/payments" "$W/cgi-bin/later.cgi"
chmod 0755 "$W/cgi-bin/later.cgi"
http m2 POST "$(url web /cgi-bin/later.cgi)" -H "Idempotency-Key: $K" --data-binary 'amount=2'
expect_eq "script: deployed, the retry runs it" "201 created 1" \
	"$HS $(hdr m2 Idempotency-Result) $(wc -l <"$W/cgi-bin/later.cgi.runs" 2>/dev/null | tr -d ' ')"
expect_eq "script: ok.cgi ran 4 times (prefix mount, GET, inside link, one POST)" 4 "$(wc -l <"$W/cgi-bin/ok.cgi.runs" | tr -d ' ')"
done_testing
