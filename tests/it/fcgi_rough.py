#!/usr/bin/env python3
"""A FastCGI app that answers as a faulty app would, for t_upstream.

fcgi_rough.py SOCKET RUNLOG: serves on unix socket SOCKET, one request per
connection; appends "run MODE" to RUNLOG for each request it takes (the
app's own count of its runs).  The query string names the mode:
  nohdrend     STDOUT without the blank line that ends a header block
  refuse_after a whole answer, then END_REQUEST with UNKNOWN_ROLE
  refuse       END_REQUEST with OVERLOADED, nothing else (it did nothing)
  silent       END_REQUEST (complete) and no STDOUT at all
  ok           a plain 200
Stops by itself after 120 s.
"""
import os
import socket
import struct
import sys
import threading

sock_path, runlog = sys.argv[1], sys.argv[2]


def rec(t, rid, content=b""):
    return struct.pack(">BBHHBB", 1, t, rid, len(content), 0, 0) + content


def end(rid, app=0, proto=0):
    return rec(3, rid, struct.pack(">IB3x", app, proto))


def params(data):
    out, i = {}, 0
    while i < len(data):
        lens = []
        for _ in range(2):
            b = data[i]
            if b >> 7:
                lens.append(struct.unpack(">I", data[i:i + 4])[0] & 0x7FFFFFFF)
                i += 4
            else:
                lens.append(b)
                i += 1
        n = data[i:i + lens[0]]
        v = data[i + lens[0]:i + lens[0] + lens[1]]
        i += lens[0] + lens[1]
        out[n.decode()] = v.decode("latin-1")
    return out


def serve(c):
    buf, pdata, rid, stdin_done = b"", b"", 1, False
    c.settimeout(10)
    while not stdin_done:
        d = c.recv(65536)
        if not d:
            return
        buf += d
        while len(buf) >= 8:
            _, t, rid, clen, plen, _ = struct.unpack(">BBHHBB", buf[:8])
            if len(buf) < 8 + clen + plen:
                break
            content = buf[8:8 + clen]
            buf = buf[8 + clen + plen:]
            if t == 4:
                pdata += content
            elif t == 5 and clen == 0:
                stdin_done = True
    mode = params(pdata).get("QUERY_STRING", "ok")
    with open(runlog, "a") as f:
        f.write("run %s\n" % mode)
    if mode == "nohdrend":
        out = rec(6, rid, b"Status: 200\r\nX-Half: yes\r\n") + rec(6, rid) + end(rid)
    elif mode == "refuse_after":
        out = rec(6, rid, b"Status: 200\r\n\r\npaid\n") + rec(6, rid) + end(rid, 0, 3)
    elif mode == "refuse":
        out = end(rid, 0, 2)
    elif mode == "silent":
        out = end(rid)
    else:
        out = rec(6, rid, b"Status: 200\r\n\r\nok\n") + rec(6, rid) + end(rid)
    c.sendall(out)
    c.close()


s = socket.socket(socket.AF_UNIX)
s.bind(sock_path)
os.chmod(sock_path, 0o666)
s.listen(16)
threading.Timer(120, lambda: os._exit(0)).start()
while True:
    conn, _ = s.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
