#!/usr/bin/env python3
"""A TCP relay to MariaDB whose answers can be held back, for tests/it.

usage: slow_relay.py LISTEN_PORT SERVER_PORT FLAG_FILE

Everything a client sends reaches the server at once.  While FLAG_FILE
exists, what the server answers is held that many milliseconds (the
file's content) before it goes on: the statement runs, its answer comes
after the client's deadline.  Bounded: it serves until killed, each
connection until either side closes.
"""
import os
import socket
import sys
import threading
import time

LISTEN, SERVER, FLAG = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def held_ms():
    try:
        with open(FLAG) as f:
            return int(f.read().strip() or "0")
    except (OSError, ValueError):
        return 0


def pump(src, dst, hold):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if hold:
                ms = held_ms()
                if ms > 0:
                    time.sleep(ms / 1000.0)
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", LISTEN))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        s = socket.create_connection(("127.0.0.1", SERVER))
        threading.Thread(target=pump, args=(c, s, False), daemon=True).start()
        threading.Thread(target=pump, args=(s, c, True), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
