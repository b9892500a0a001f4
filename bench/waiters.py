#!/usr/bin/env python3
"""make bench: how long waiters take to get their answer after the owner did.

Usage: waiters.py URL [WAITERS] [ROUNDS] [WAITER-URLS]

WAITER-URLS (comma-separated): where the waiters send their retries, in
turn (a gateway on another cluster node, say); default URL.

Per round: one request with a new Idempotency-Key starts the slow handler;
50 ms later WAITERS retries of the same key arrive and wait.  Each waiter's
extra latency is when it got its answer minus when the owner got its own
(one clock, one process: no process start-up in the figure).  Prints the
median and the largest extra latency in ms over all rounds.
"""
import http.client
import random
import sys
import threading
import time
import urllib.parse


def post(url, key, done, idx):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    target = u.path + ("?" + u.query if u.query else "")
    conn.request("POST", target, body="x=1", headers={
        "Idempotency-Key": key,
        "Content-Type": "application/x-www-form-urlencoded"})
    resp = conn.getresponse()
    resp.read()
    done[idx] = (time.monotonic(), resp.status)
    conn.close()


def one_round(url, waiters, wurls):
    key = "w-%d-%d" % (random.getrandbits(32), time.time_ns())
    done = [None] * (waiters + 1)
    owner = threading.Thread(target=post, args=(url, key, done, 0))
    owner.start()
    time.sleep(0.05)
    ts = [threading.Thread(target=post,
                           args=(wurls[i % len(wurls)], key, done, i + 1))
          for i in range(waiters)]
    for t in ts:
        t.start()
    owner.join()
    for t in ts:
        t.join()
    if any(d is None or not 200 <= d[1] < 300 for d in done):
        raise SystemExit("waiters.py: a request failed: %r" % (done,))
    return [(d[0] - done[0][0]) * 1000.0 for d in done[1:]]


def main():
    url = sys.argv[1]
    waiters = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    wurls = sys.argv[4].split(",") if len(sys.argv) > 4 else [url]
    extra = []
    for _ in range(rounds):
        extra += one_round(url, waiters, wurls)
    extra.sort()
    print("%d %d" % (round(extra[(len(extra) - 1) // 2]), round(extra[-1])))


if __name__ == "__main__":
    main()
