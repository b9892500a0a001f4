#!/usr/bin/env python3
"""make bench: an unrelated fresh key while waiters park on a slow key.

Usage: parked.py SLOW_URL FAST_URL WAITERS

Times fresh-key POSTs to FAST_URL alone (5, one after another); then one
request with a new key starts SLOW_URL's handler and WAITERS retries of
it arrive and wait; a second later, while they wait, 5 more fresh-key
POSTs to FAST_URL are timed.  Prints the median alone, the median and the
largest while the waiters wait, in ms.  Every request must get a 2xx.
"""
import random
import statistics
import sys
import threading
import time

from waiters import post


def fresh(url, n):
    took = []
    for i in range(n):
        done = [None]
        key = "p-%d-%d" % (random.getrandbits(32), i)
        t0 = time.monotonic()
        post(url, key, done, 0)
        if not 200 <= done[0][1] < 300:
            raise SystemExit("parked.py: a fresh key got %d" % done[0][1])
        took.append((done[0][0] - t0) * 1000.0)
    return took


def main():
    slow, fast, waiters = sys.argv[1], sys.argv[2], int(sys.argv[3])
    alone = fresh(fast, 5)
    key = "pw-%d-%d" % (random.getrandbits(32), time.time_ns())
    done = [None] * (waiters + 1)
    ts = [threading.Thread(target=post, args=(slow, key, done, i))
          for i in range(waiters + 1)]
    ts[0].start()
    time.sleep(0.05)
    for t in ts[1:]:
        t.start()
    time.sleep(1.0)
    loaded = fresh(fast, 5)
    for t in ts:
        t.join()
    if any(d is None or not 200 <= d[1] < 300 for d in done):
        raise SystemExit("parked.py: a waiter failed")
    print("%d %d %d" % (round(statistics.median(alone)),
                        round(statistics.median(loaded)),
                        round(max(loaded))))


if __name__ == "__main__":
    main()
