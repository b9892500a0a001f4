#!/usr/bin/env python3
"""Drives many same-key retries at several gateways, as impatient clients do.

usage: chaos_client.py KEYS RETRIES CONCURRENCY SPREAD_S DEADLINE_S URL...

Each of KEYS keys gets RETRIES clients; each client POSTs the same body
with the key (alternating URLs), and on 409, 5xx or a broken connection
tries again after 0.2 s until it gets a final answer or DEADLINE_S passes.
Key k's clients start k * SPREAD_S / KEYS seconds in, so the traffic
spans SPREAD_S seconds.
Prints one line per key: "KEY FINAL_STATUSES DISTINCT_BODIES last:STATUSES
run:RUNS" (RUNS: the handler runs, "run=" in the body, whose answers the
clients got), then a summary line "done N unfinished M".
"""
import hashlib
import http.client
import re
import queue
import sys
import threading
import time
import urllib.parse


def attempt(url, key, body):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request("POST", u.path + ("?" + u.query if u.query else ""), body,
                  {"Idempotency-Key": key, "Content-Type": "text/plain"})
        r = c.getresponse()
        data = r.read()
        return r.status, data
    except Exception:
        return 0, b""
    finally:
        c.close()


def main():
    keys, retries, conc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    spread, deadline = float(sys.argv[4]), float(sys.argv[5])
    urls = sys.argv[6:]
    start = time.time()
    end = start + deadline
    jobs = queue.Queue()
    run_id = str(int(time.time() * 1000))
    for k in range(keys):
        for i in range(retries):
            jobs.put((f"chaos-{run_id}-{k}", i, start + k * spread / keys))
    results = {}
    lasts = {}
    lock = threading.Lock()

    def worker():
        while True:
            try:
                key, i, not_before = jobs.get_nowait()
            except queue.Empty:
                return
            if time.time() < not_before:
                time.sleep(not_before - time.time())
            body = ("amount=" + key).encode()
            n = i
            final = None
            last = None
            while time.time() < end:
                st, data = attempt(urls[n % len(urls)], key, body)
                n += 1
                last = st
                if st in (200, 201, 410, 422):
                    run = re.search(rb"^run=(\S+)$", data, re.M)
                    final = (st, hashlib.sha256(data).hexdigest()[:12],
                             run.group(1).decode() if run else "-")
                    break
                time.sleep(0.2)
            with lock:
                results.setdefault(key, []).append(final)
                if final is None:
                    lasts.setdefault(key, set()).add(str(last))

    threads = [threading.Thread(target=worker) for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    unfinished = 0
    for key in sorted(results):
        finals = results[key]
        unfinished += sum(1 for f in finals if f is None)
        statuses = sorted({str(f[0]) for f in finals if f})
        bodies = {f[1] for f in finals if f and f[0] in (200, 201)}
        runs = {f[2] for f in finals if f and f[0] in (200, 201)}
        print(key, ",".join(statuses) or "-", len(bodies),
              "last:" + ",".join(sorted(lasts.get(key, ()))),
              "run:" + (",".join(sorted(runs)) or "-"))
    print("done", len(results), "unfinished", unfinished)


if __name__ == "__main__":
    main()
