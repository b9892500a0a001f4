#!/bin/bash
# Replays from the replay cache are the reader's own: answered while every request thread is busy, large ones whole, on kept connections too.
. "$(dirname "$0")/../lib/harness.sh"

PAY=$(cgi_install pay)
db_new "$TNAME" || { done_testing; exit 1; }
# one worker with one request thread: a slow run takes every thread
gw_conf "$T/gw.conf" "unix:$T/gw.sock" "$DBCNF" "workers = 1" "threads = 1"
printf '\n[route /payments]\nhandler = cgi:%s\n' "$PAY" >>"$T/gw.conf"
gw_start gw "$T/gw.conf" || { done_testing; exit 1; }
lighttpd_start web "unix:$T/gw.sock" || { done_testing; exit 1; }
CT='Content-Type: application/json'
post() { # post OUT PATH KEY [curl args]
	local out=$1 p=$2 k=$3
	shift 3
	http "$out" POST "$(url web "$p")" -H "Idempotency-Key: $k" -H "$CT" --data-binary '{"amount":7}' "$@"
}
# hot OUT PATH KEY: created, then replayed twice (the second from memory)
hot() {
	post "$1-1" "$2" "$3"
	post "$1-2" "$2" "$3"
	post "$1-3" "$2" "$3"
	[ "$(hdr "$1-1" Idempotency-Result)/$(hdr "$1-3" Idempotency-Result)" = created/reused ]
}

# ------------------------------------------------- every thread busy
ran_more() { [ "$(runs pay)" -gt "$n" ]; }
# busy_replay TAG LABEL: a new key K created and replayed, then replayed
# again from the cache while a slow run holds the only request thread
# (answers in $T/TAG*, checks named LABEL...; n: runs before the slow one)
busy_replay() {
	local tag=$1 l=$2 t0 took
	K=$(new_key)
	check "${l}created, then replayed" hot "${tag}h" /payments "$K"
	n=$(runs pay)
	http_bg "${tag}slow" POST "$(url web '/payments?sleep=4000')" -H "Idempotency-Key: $(new_key)" -H "$CT" --data-binary '{"amount":1}'
	check "${l}the slow run started" wait_until 5 ran_more
	t0=$(now_ms)
	post "${tag}busy" /payments "$K"
	took=$(($(now_ms) - t0))
	expect_eq "${l}thread busy: replayed" reused "$(hdr "${tag}busy" Idempotency-Result)"
	expect_lt "${l}thread busy: a cached replay does not wait for it (${took} ms)" "$took" 1500
	expect_file_eq "${l}thread busy: the first answer byte-for-byte" "$T/${tag}h-1.b" "$T/${tag}busy.b"
	bg_wait
	expect_eq "${l}the slow run was answered" 201 "$(st "${tag}slow")"
}
busy_replay "" ""
expect_eq "thread busy: header block as the first answer" "$(hdr_block h-1)" "$(hdr_block busy)"

# ------------------------------------------------- a large request body
# The reader fingerprints only bodies up to 64 KiB itself: a cached
# replay of a larger one waits for a request thread (here, for the slow
# run), and is still the same answer.
head -c 70000 /dev/zero | tr '\0' a | sed 's/^/{"pad":"/; s/$/"}/' >"$T/large.json"
K=$(new_key)
post_large() { http "$1" POST "$(url web /payments)" -H "Idempotency-Key: $K" -H "$CT" --data-binary @"$T/large.json"; }
for i in 1 2 3; do post_large "lb$i"; done
expect_eq "70 KB body: created, then replayed" created/reused \
	"$(hdr lb1 Idempotency-Result)/$(hdr lb3 Idempotency-Result)"
n=$(runs pay)
http_bg lbslow POST "$(url web '/payments?sleep=2000')" -H "Idempotency-Key: $(new_key)" -H "$CT" --data-binary '{"amount":1}'
check "70 KB body: the slow run started" wait_until 5 ran_more
t0=$(now_ms)
post_large lbbusy
took=$(($(now_ms) - t0))
expect_eq "70 KB body: replayed" reused "$(hdr lbbusy Idempotency-Result)"
expect_file_eq "70 KB body: byte-for-byte" "$T/lb1.b" "$T/lbbusy.b"
expect_lt "70 KB body: a request thread answered it, after the slow run (${took} ms)" 800 "$took"
bg_wait

# ------------------------------------------------- larger than a socket buffer
# 900 KB: more than the web server's socket takes at once, so a request
# thread sends the rest of what the reader began.
K=$(new_key)
check "900 KB: created, then replayed" hot big '/payments?bytes=900000' "$K"
for i in 1 2 3; do post big$i '/payments?bytes=900000' "$K"; done
expect_eq "900 KB: replayed" reused "$(hdr big3 Idempotency-Result)"
expect_eq "900 KB: the whole body" 900000 "$(wc -c <"$T/big3.b" | tr -d ' ')"
expect_file_eq "900 KB: byte-for-byte" "$T/big-1.b" "$T/big3.b"

# ------------------------------------------------- FCGI_KEEP_CONN
# Three requests on one connection, each a cached replay: the reader
# answers and keeps reading the connection.
python3 - "$T/gw.sock" "$K" 3 >"$T/keep.out" 2>&1 <<'PY'
import socket, struct, sys
path, key, n = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
def rec(t, rid, c): return struct.pack(">BBHHBB", 1, t, rid, len(c), 0, 0) + c
def pair(k, v):
    return bytes([len(k)]) + (bytes([len(v)]) if len(v) < 128 else
        struct.pack(">I", len(v) | 0x80000000)) + k + v
body = b'{"amount":7}'
params = (pair(b"REQUEST_METHOD", b"POST") +
    pair(b"REQUEST_URI", b"/payments?bytes=900000") +
    pair(b"QUERY_STRING", b"bytes=900000") +
    pair(b"CONTENT_TYPE", b"application/json") +
    pair(b"CONTENT_LENGTH", str(len(body)).encode()) +
    pair(b"HTTP_IDEMPOTENCY_KEY", key))
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.settimeout(10)
buf = b""
for i in range(n):
    rid = i + 1
    s.sendall(rec(1, rid, struct.pack(">HB5x", 1, 1)) + rec(4, rid, params) +
        rec(4, rid, b"") + rec(5, rid, body) + rec(5, rid, b""))
    out, ended = b"", False
    while not ended:
        while len(buf) < 8:
            d = s.recv(65536)
            if not d: sys.exit("closed after %d answers" % i)
            buf += d
        v, t, r, cl, pl, _ = struct.unpack(">BBHHBB", buf[:8])
        while len(buf) < 8 + cl + pl:
            d = s.recv(65536)
            if not d: sys.exit("closed mid-record")
            buf += d
        c, buf = buf[8:8 + cl], buf[8 + cl + pl:]
        if r != rid: sys.exit("answer for request %d, asked %d" % (r, rid))
        if t == 6: out += c
        if t == 3: ended = True
    head, _, b = out.partition(b"\r\n\r\n")
    print("answer", rid, len(b), b"Idempotency-Result: reused" in head)
PY
expect_eq "keep_conn: three cached replays on one connection" \
	"$(printf 'answer %d 900000 True\n' 1 2 3)" "$(cat "$T/keep.out")"

expect_eq "handler ran once per key" $((n + 2)) "$(runs pay)"
expect_nomatch "no warnings" 'warn|error' "$(grep -v "running as root" "$T/gw.log")"

# ------------------------------------------------- keyed hashes
# With a secret_key_file the cache holds keyed identities: the reader keys
# a request's as the request threads do, so it still answers while the
# only thread is busy.
gw_stop gw
db_new "${TNAME}_k" || { done_testing; exit 1; }
printf 'k1 %s\n' "$(openssl rand -hex 32)" >"$T/k.keys"
chmod 0600 "$T/k.keys"
sed -e "s|^mysql_defaults_file = .*|mysql_defaults_file = $DBCNF|" \
	-e "s|^threads = 1|&\nsecret_key_file = $T/k.keys|" "$T/gw.conf" >"$T/keyed.conf"
gw_start gw "$T/keyed.conf" || { done_testing; exit 1; }
busy_replay k "keyed: "
expect_eq "keyed: the row is keyed" 1 "$(db_query "${TNAME}_k" "SELECT hashed FROM idem_keys WHERE idem_key = '$K'")"
done_testing
