#!/usr/bin/env python3
"""Differential test of fingerprint = canonical against the parsers
handlers really use.

Generates pairs of request bodies (reorders, duplicate names, number
spellings, escapes, big and small numbers, epilogues, ...), has PHP
(php-cli: json_decode with JSON_BIGINT_AS_STRING, parse_str; PHP-FPM for
multipart $_POST and $_FILES) and Python (json with parse_float=Decimal
and parse_int=int, urllib.parse.parse_qsl) read each body, and asks
idemgate's own code (canon_dump) for each body's fingerprint.

The rule under test: whenever any parser reads two bodies differently,
their fingerprints differ.  Where every parser reads them alike, the
rate at which the fingerprints agree is reported (the point of
canonical: retries that re-encode a body still replay).

usage: canon_diff.py CANON_DUMP PHP_READERS WORKDIR SECONDS [FPM_SOCK]
Prints one line per violation and a summary; exits 1 on any violation.
"""
import base64
import json
import os
import random
import subprocess
import sys
import time
import urllib.parse
from decimal import Decimal

dump, readers, work, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
fpm = sys.argv[5] if len(sys.argv) > 5 else None
rnd = random.Random(int(os.environ.get("CANON_DIFF_SEED", "20261124")))
deadline = time.monotonic() + seconds

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


# ---------------------------------------------------------------- generators

def jnum():
    """A number and another spelling of it, or of a nearby value."""
    kind = rnd.randrange(9)
    if kind == 0:
        n = rnd.randrange(-1000, 1000)
        return str(n), rnd.choice([f"{n}.0", f"{n}e0", f"{n}0e-1", f"{n}.000", str(n)])
    if kind == 1:
        n = 9007199254740992 + rnd.randrange(-3, 4)
        return str(n), str(n + rnd.choice([0, 1, -1]))
    if kind == 2:
        n = rnd.randrange(10**18, 10**19)
        return str(n), rnd.choice([str(n), str(n + 1), f"{str(n)[0]}.{str(n)[1:]}e18"])
    if kind == 3:
        return "0.1", rnd.choice(["0.1", "0.10", "1e-1", "0.1000000000000000055511151231257827", "0.1000000000000000000001"])
    if kind == 4:
        e = rnd.randrange(300, 400)
        return f"1e{e}", rnd.choice([f"1e{e}", f"10e{e - 1}", f"2e{e}", f"1e{e + 1}"])
    if kind == 5:
        return "0", rnd.choice(["0", "-0", "0.0", "0e10", "-0.0"])
    if kind == 6:
        m = rnd.randrange(1, 10**6)
        return f"{m}e-3", rnd.choice([f"{m / 1000}", f"{m}e-3", f"{m}0e-4", f"{m + 1}e-3"])
    if kind == 7:
        return "1.5", rnd.choice(["15e-1", "1.50", "1.5000000000000001", "150E-2"])
    return "123456789012345678901234567890", rnd.choice(["1.2345678901234567890123456789e29", "123456789012345678901234567891"])


def jstr():
    s = rnd.choice(["a", "b", "\u00e9", "\U0001f600", "x y", "1", "", "A"])
    plain = json.dumps(s, ensure_ascii=False)
    escaped = json.dumps(s, ensure_ascii=True)
    return plain, rnd.choice([plain, escaped, json.dumps(s + "z")])


def jdoc(depth=0):
    """Two spellings of a JSON document: (a, b)."""
    kind = rnd.randrange(4 if depth < 3 else 2)
    if kind == 0:
        return jnum()
    if kind == 1:
        return jstr()
    if kind == 2:
        items = [jdoc(depth + 1) for _ in range(rnd.randrange(0, 4))]
        a = [x for x, _ in items]
        b = [y for _, y in items]
        if rnd.random() < 0.2 and len(b) > 1:
            b.reverse()
        return "[" + ",".join(a) + "]", "[" + ", ".join(b) + "]"
    names = rnd.sample(["a", "b", "c", "to", "amount", "1", "0"], rnd.randrange(0, 4))
    items = [(n, jdoc(depth + 1)) for n in names]
    a = [f'"{n}":{x}' for n, (x, _) in items]
    b = []
    for n, (_, y) in items:
        spell = rnd.choice([f'"{n}"', '"' + "".join(f"\\u{ord(ch):04x}" for ch in n) + '"'])
        b.append(f"{spell} : {y}")
    if rnd.random() < 0.7:
        rnd.shuffle(b)
    if names and rnd.random() < 0.15:
        n = rnd.choice(names)       # a name twice
        b.append(f'"{n}":{jnum()[1]}')
    return "{" + ",".join(a) + "}", "{ " + ",\n".join(b) + " }"


def form_pair():
    names = ["amount", "currency", "a", "a[]", "a[0]", "a[x]", "a.b", "a_b", "a b", " a", "card_number"]
    pairs = [(rnd.choice(names), rnd.choice(["1", "1000", "x y", "eur", "", "é"])) for _ in range(rnd.randrange(1, 6))]
    other = list(pairs)
    r = rnd.random()
    if r < 0.4:
        rnd.shuffle(other)
    elif r < 0.6 and len(other) > 1:
        i = rnd.randrange(len(other) - 1)
        other[i], other[i + 1] = other[i + 1], other[i]
    elif r < 0.7:
        other = [(n, v + "0") if i == 0 else (n, v) for i, (n, v) in enumerate(other)]

    def enc(ps, plus):
        q = urllib.parse.quote_plus if plus else urllib.parse.quote
        return "&".join(f"{q(n, safe='[]')}={q(v, safe='')}" for n, v in ps)
    return enc(pairs, True), enc(other, rnd.random() < 0.5)


def multipart_pair():
    parts = [(rnd.choice(["a", "b", "amount", "a[]"]), rnd.choice(["1", "2", "xyz", ""])) for _ in range(rnd.randrange(1, 4))]
    other = list(parts)
    r = rnd.random()
    if r < 0.3 and len(other) > 1:
        other.reverse()

    def enc(ps, bnd, tail):
        out = ""
        for n, v in ps:
            out += f'--{bnd}\r\nContent-Disposition: form-data; name="{n}"\r\n\r\n{v}\r\n'
        return out + f"--{bnd}--" + tail
    tail_b = ""
    r = rnd.random()
    if r < 0.25:
        tail_b = f'\r\n--B2\r\nContent-Disposition: form-data; name="{parts[0][0]}"\r\n\r\nEPILOGUE\r\n--B2--\r\n'
    elif r < 0.4:
        tail_b = "\r\n  \r\n"
    return "B1", enc(parts, "B1", "\r\n"), "B2", enc(other, "B2", tail_b)


# ---------------------------------------------------------------- readers

def norm_py(v):
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, (int, Decimal)):
        d = Decimal(v)
        if not d.is_finite():
            return "n:" + str(d)
        return "n:" + ("-" if d.is_signed() else "") + str(abs(d).normalize())
    if isinstance(v, str):
        return "s:" + v
    if isinstance(v, list):
        return ("L", tuple(norm_py(x) for x in v))
    return ("O", tuple(sorted((k, norm_py(x)) for k, x in v.items())))


def py_reading(t, body):
    try:
        s = body.decode("utf-8")
    except UnicodeDecodeError:
        return "ERR"
    if t == JSON:
        try:
            return norm_py(json.loads(s, parse_float=Decimal, parse_int=int))
        except ValueError:
            return "ERR"
        except RecursionError:
            return "ERR"
    multi = {}
    for n, v in urllib.parse.parse_qsl(s, keep_blank_values=True):
        multi.setdefault(n, []).append(v)
    return tuple(sorted((k, tuple(v)) for k, v in multi.items()))


def php_readings(cases):
    path = os.path.join(work, "cases.jsonl")
    with open(path, "w") as f:
        for t, b in cases:
            f.write(json.dumps({"t": t, "b": base64.b64encode(b).decode()}) + "\n")
    out = subprocess.run(["php", "-d", "serialize_precision=-1", readers, path],
                         capture_output=True, check=True).stdout.decode().split("\n")
    return [base64.b64decode(x).decode("utf-8", "replace") for x in out[:len(cases)]]


def fpm_reading(t, body):
    env = dict(REQUEST_METHOD="POST", CONTENT_TYPE=t, CONTENT_LENGTH=str(len(body)),
               SCRIPT_FILENAME=readers, SCRIPT_NAME="/readers.php", REQUEST_URI="/readers.php",
               SERVER_PROTOCOL="HTTP/1.1", GATEWAY_INTERFACE="CGI/1.1", PATH="/usr/bin:/bin")
    r = subprocess.run(["cgi-fcgi", "-bind", "-connect", fpm], input=body, env=env,
                       capture_output=True, timeout=20)
    out = r.stdout.decode("utf-8", "replace")
    return out.split("\r\n\r\n", 1)[-1].strip()


def fingerprints(cases):
    data = b"".join(t.encode() + b"\n" + str(len(b)).encode() + b"\n" + b for t, b in cases)
    out = subprocess.run([dump], input=data, capture_output=True, check=True).stdout.decode().split("\n")
    return out[:len(cases)]


# ---------------------------------------------------------------- the run

stats = {}  # kind -> [pairs, read differently by some parser, alike, alike with one fingerprint]
violations = 0


def account(kind, alike, same_fp, a, b):
    """Counts one pair; a pair read differently with one fingerprint is a violation."""
    global violations
    st = stats.setdefault(kind, [0, 0, 0, 0])
    st[0] += 1
    if alike:
        st[2] += 1
        st[3] += same_fp
        return
    st[1] += 1
    if same_fp:
        violations += 1
        print(f"VIOLATION {kind}: read differently, one fingerprint:\n  A={a!r}\n  B={b!r}")


def run():
    batch = 400
    while time.monotonic() < deadline:
        pairs = []
        for _ in range(batch):
            if rnd.random() < 0.55:
                a, b = jdoc()
                pairs.append(("json", JSON, a.encode(), JSON, b.encode()))
            else:
                a, b = form_pair()
                pairs.append(("form", FORM, a.encode(), FORM, b.encode()))
        cases = []
        for _, ta, a, tb, b in pairs:
            cases += [(ta, a), (tb, b)]
        php = php_readings(cases)
        fps = fingerprints(cases)
        for i, (kind, ta, a, tb, b) in enumerate(pairs):
            alike = php[2 * i] == php[2 * i + 1] and py_reading(ta, a) == py_reading(tb, b)
            account(kind, alike, fps[2 * i].split()[-1] == fps[2 * i + 1].split()[-1], a, b)
    if fpm:
        n = 0
        end = time.monotonic() + max(3.0, seconds / 4)
        while time.monotonic() < end and n < 150:
            n += 1
            ba, a, bb, b = multipart_pair()
            ta = f"multipart/form-data; boundary={ba}"
            tb = f"multipart/form-data; boundary={bb}"
            ra, rb = fpm_reading(ta, a.encode()), fpm_reading(tb, b.encode())
            fa, fb = fingerprints([(ta, a.encode()), (tb, b.encode())])
            account("multipart", ra == rb, fa.split()[-1] == fb.split()[-1], a, b)
    for kind, (n, differ, alike, agree) in sorted(stats.items()):
        rate = f"{100.0 * agree / alike:.1f}%" if alike else "-"
        print(f"{kind}: {n} pairs, {differ} read differently by some parser (all fingerprints differ: "
              f"{'yes' if violations == 0 else 'NO'}), {alike} read alike, canonical agrees on {agree} ({rate})")
    print(f"violations: {violations}")
    return 1 if violations else 0


sys.exit(run())
