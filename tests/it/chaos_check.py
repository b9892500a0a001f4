#!/usr/bin/env python3
"""Judges a chaos run from the handler's own logs: runs per key, in time.

usage: chaos_check.py RUNS DONE CLIENTS KILLED_PID KILL_MS DEADLINE_MS

RUNS     the payments CGI's "<self>.runs": one line per run started,
         "pid=P ppid=W ... key=K run=P-START_NS"
DONE     its "<self>.done": one line per run completed (written before its
         answer goes out), "K P-START_NS ppid=X end=END_NS"
CLIENTS  chaos_client.py's output: "K STATUSES NBODIES last:... run:RUNS"
KILLED_PID, KILL_MS   the worker killed with -9, and when (wall clock, ms,
         read after the kill returned)
DEADLINE_MS  a run's deadline after its start: the route's run deadline
         (timeout + kill grace), or its lease if longer

The rule, for every key: no run starts while a completed run of the same
key is going on (start to logged completion), nor after it; exactly one
run completes, and the clients' answer is that run's.  One exception,
the completion idemgate never saw: the first completed run A was a child
of the killed worker (it may log its completion after the kill: a CGI
runs on, and the worker that would have recorded its answer is gone),
and the clients' answer is not A's (A's never reached the store).  Then the key
stays in progress until A's run deadline, and one more run B may start
and complete, past A's start + DEADLINE_MS - SLACK_MS; the clients'
answer is B's, and no other run starts after A.
SLACK_MS is the claim-to-spawn time: idemgate counts the deadline from
its claim, which comes just before the handler starts.

Prints "exception: ..." for each allowed second run and "violation: ..."
for each broken rule, then "checked N keys: V violations, E exceptions";
exits 1 if V > 0, 2 on bad input.
"""
import re
import sys

SLACK_MS = 1000


def ms(ns):
    return ns // 1000000


def parse_runs(path):
    runs = {}
    with open(path) as f:
        for line in f:
            m = re.search(r"^pid=(\d+) ppid=(\d+) .* key=(\S+) "
                          r"run=(\d+-(\d+))$", line.rstrip("\n"))
            if m is None:
                raise ValueError("%s: bad line: %s" % (path, line.strip()))
            runs[m.group(4)] = {"pid": int(m.group(1)),
                                "ppid": int(m.group(2)),
                                "key": m.group(3), "tok": m.group(4),
                                "start": int(m.group(5)), "end": None}
    return runs


def parse_done(path, runs):
    """Sets each completed run's end; returns the problems found."""
    bad = []
    with open(path) as f:
        for line in f:
            m = re.search(r"^(\S+) (\S+) ppid=(\d+) end=(\d+)$",
                          line.rstrip("\n"))
            if m is None:
                raise ValueError("%s: bad line: %s" % (path, line.strip()))
            r = runs.get(m.group(2))
            if r is None or r["key"] != m.group(1):
                bad.append("violation: key %s: run %s completed but never "
                           "started" % (m.group(1), m.group(2)))
                continue
            if r["end"] is not None:
                bad.append("violation: key %s: run %s completed twice"
                           % (r["key"], r["tok"]))
            r["end"] = int(m.group(4))
            r["end_ppid"] = int(m.group(3))
    return bad


def parse_clients(path):
    answers = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 5 and w[4].startswith("run:"):
                answers[w[0]] = w[4][4:]
    return answers


class Judge:
    def __init__(self, killed, kill_ms, deadline_ms, t0):
        self.killed, self.kill_ms = killed, kill_ms
        self.deadline_ms, self.t0 = deadline_ms, t0

    def at(self, t_ms):
        return "+%.3fs" % ((t_ms - self.t0) / 1000.0)

    def span(self, r):
        end = self.at(ms(r["end"])) if r["end"] is not None else "?"
        return "run pid %d (ppid %d) %s..%s" % (r["pid"], r["ppid"],
                                                self.at(ms(r["start"])), end)

    def overlaps(self, key, rs):
        out = []
        for a in rs:
            if a["end"] is None:
                continue
            for b in rs:
                if b is not a and a["start"] <= b["start"] <= a["end"]:
                    out.append("violation: key %s: %s started during %s"
                               % (key, self.span(b), self.span(a)))
        return out

    def second_run(self, key, rs, done, answer):
        """Returns ("exception"|"violation", text) for a key run twice."""
        a, b = done
        why = []
        if a["ppid"] != self.killed:
            why.append("first run not a child of the killed worker %d"
                       % self.killed)
        if ms(b["start"]) <= ms(a["end"]):
            why.append("second run started before the first ended")
        if answer != b["tok"]:
            why.append("clients got %s, not the second run's answer"
                       % answer)
        line = ms(a["start"]) + self.deadline_ms - SLACK_MS
        if ms(b["start"]) < line:
            why.append("second run started %d ms before the first run's "
                       "deadline" % (line + SLACK_MS - ms(b["start"])))
        for r in rs:
            if r is not a and r is not b and a["start"] < r["start"]:
                why.append("one more: %s" % self.span(r))
        text = ("key %s: %s; %s; killed worker %d at %s"
                % (key, self.span(a), self.span(b), self.killed,
                   self.at(self.kill_ms)))
        if why:
            return "violation", "%s: %s" % (text, "; ".join(why))
        return "exception", ("%s; second run %d ms after the first run's "
                             "deadline" % (text, ms(b["start"]) - line
                                           - SLACK_MS))

    def key(self, key, rs, answer):
        out = self.overlaps(key, rs)
        done = sorted((r for r in rs if r["end"] is not None),
                      key=lambda r: r["start"])
        if len(done) == 1:
            a = done[0]
            if answer != a["tok"]:
                out.append("violation: key %s: clients got %s, the run "
                           "that completed was %s" % (key, answer, a["tok"]))
            out += ["violation: key %s: %s started after %s" %
                    (key, self.span(r), self.span(a))
                    for r in rs if r["start"] > a["end"]]
        elif len(done) == 2:
            kind, text = self.second_run(key, rs, done, answer)
            out.append("%s: %s" % (kind, text))
        else:
            out.append("violation: key %s: %d runs completed: %s"
                       % (key, len(done),
                          ", ".join(self.span(r) for r in done)))
        return out


def main(argv):
    if len(argv) != 7:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    try:
        runs = parse_runs(argv[1])
        out = parse_done(argv[2], runs)
        answers = parse_clients(argv[3])
        killed, kill_ms, deadline_ms = (int(v) for v in argv[4:7])
    except (OSError, ValueError) as e:
        sys.stderr.write("chaos_check: %s\n" % e)
        return 2
    bykey = {}
    for r in runs.values():
        bykey.setdefault(r["key"], []).append(r)
    for k in answers:
        bykey.setdefault(k, [])
    t0 = min([ms(r["start"]) for r in runs.values()] or [kill_ms])
    judge = Judge(killed, kill_ms, deadline_ms, t0)
    for k in sorted(bykey):
        out += judge.key(k, bykey[k], answers.get(k, "-"))
    nbad = sum(1 for l in out if l.startswith("violation"))
    for line in out:
        print(line)
    print("checked %d keys: %d violations, %d exceptions"
          % (len(bykey), nbad, len(out) - nbad))
    return 1 if nbad > 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
