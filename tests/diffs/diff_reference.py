#!/usr/bin/env python3
"""Diffs against a simple reference: for every array of a corpus (arrays/ +
expected/, as tests/conformance/conformance.py reads it, group members
through their group too) and every pair of its instants (both orders, equal
pairs, instants between writes and before the first), diff/<T1>..<T2>/ must
hold what this script derives from history/<T1>/data.csv and
history/<T2>/data.csv (docs/namespace.md "Diffs"):
  - cells are known by their coordinates (the first columns, one per
    dimension); arrays that allow duplicates compare whole rows (the
    coordinates and the attributes of both instants) as multisets;
  - added.csv: the rows at T2 whose coordinates T1 lacks, with T2's header;
    removed.csv: the reverse, with T1's; changed.csv: the dimensions, then
    `<a>:before`, `<a>:after` for the attributes of both instants (same
    type at both) whose text differs, in T2's schema order;
  - summary.json: the instants, the counts, schema_changed (the schemas'
    JSON differ), and the lines of log.txt with instants in (min, max].
Rows compare in order (as multisets for arrays with duplicates).

With --golden FILE, the four files of each pair must also be byte-identical
to what FILE recorded (SHA-256 prefixes, keyed by array and instants in ms): a
new diff engine must not change a byte. --write-golden FILE records them.
Pairs FILE lacks (other corpora, other samples) are only counted.

  diff_reference.py (--viewer VIEW | --mount TILEDBFS) [--max-pairs N]
                    [--golden FILE | --write-golden FILE] CORPUS [NAMES...]

Prints a FAIL line per pair that fails, then 'N passed, M failed'.
"""
import argparse
import csv
import hashlib
import io
import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "conformance"))
import conformance as conf  # noqa: E402


def rows_of(blob):
    return [tuple(r) for r in csv.reader(io.StringIO(blob.decode("utf-8", "surrogateescape"), newline=""))]


def iso_ms(name):
    """history/ names (YYYY-MM-DDTHH:MM:SS.mmmZ) as ms since the epoch."""
    import datetime
    t = datetime.datetime.strptime(name, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp() * 1000 + 0.5)


def attr_sig(schema):
    return {a["name"]: (a["type"], a.get("cell_val_num"), bool(a.get("nullable"))) for a in schema.get("attrs", [])}


class Side:
    def __init__(self, src, vp, t):
        base = f"{vp}history/{t}/"
        self.schema_text = src.read(base + "schema.json")
        self.schema = json.loads(self.schema_text)
        self.dims = len(self.schema.get("dims", []))
        rows = rows_of(src.read(base + "data.csv"))
        self.header, self.rows = rows[0], rows[1:]
        self.sig = attr_sig(self.schema)


def expected(s1, s2, dups):
    n = s2.dims
    common = [a for a in s2.header[n:] if a in s1.sig and s1.sig[a] == s2.sig.get(a)]
    i1 = [s1.header.index(a) for a in common]
    i2 = [s2.header.index(a) for a in common]
    key = lambda r: r[:n]  # noqa: E731
    if dups:
        proj1 = [key(r) + tuple(r[i] for i in i1) for r in s1.rows]
        proj2 = [key(r) + tuple(r[i] for i in i2) for r in s2.rows]
        extra2 = Counter(proj2) - Counter(proj1)
        extra1 = Counter(proj1) - Counter(proj2)
        added, removed = [], []
        for r, p in zip(s2.rows, proj2):
            if extra2[p] > 0:
                extra2[p] -= 1
                added.append(r)
        for r, p in zip(s1.rows, proj1):
            if extra1[p] > 0:
                extra1[p] -= 1
                removed.append(r)
        return added, removed, [], common
    at1 = {key(r): r for r in s1.rows}
    at2 = {key(r): r for r in s2.rows}
    added = [r for r in s2.rows if key(r) not in at1]
    removed = [r for r in s1.rows if key(r) not in at2]
    changed = []
    for r in s2.rows:
        b = at1.get(key(r))
        if b is None:
            continue
        if any(b[x] != r[y] for x, y in zip(i1, i2)):
            out = list(key(r))
            for x, y in zip(i1, i2):
                out += [b[x], r[y]]
            changed.append(tuple(out))
    return added, removed, changed, common


DIFF_FILES = ("summary.json", "added.csv", "removed.csv", "changed.csv")


def check_pair(src, vp, log_lines, t1, t2, name1, name2, sides, dups, hashes):
    """Problems found; `hashes` gets each file's SHA-256 (64 bits of it)."""
    problems = []
    s1, s2 = sides[t1], sides[t2]
    added, removed, changed, common = expected(s1, s2, dups)
    base = f"{vp}diff/{name1}..{name2}/"
    try:
        blobs = {f: src.read(base + f) for f in DIFF_FILES}
    except Exception as e:  # noqa: BLE001 - report
        return [f"{base}: {e}"]
    hashes.update({f: hashlib.sha256(b).hexdigest()[:16] for f, b in blobs.items()})
    try:
        summary = json.loads(blobs["summary.json"])
    except ValueError as e:
        return [f"{base}summary.json: {e}"]
    got_added, got_removed, got_changed = (rows_of(blobs[f]) for f in DIFF_FILES[1:])
    n = s2.dims
    want_changed_header = tuple(s2.header[:n]) + tuple(x for a in common for x in (f"{a}:before", f"{a}:after"))
    for what, got, hdr, rows in (("added.csv", got_added, tuple(s2.header), added),
                                 ("removed.csv", got_removed, tuple(s1.header), removed),
                                 ("changed.csv", got_changed, want_changed_header, changed)):
        if not got or got[0] != hdr:
            problems.append(f"{base}{what}: header {got[0] if got else None}, expected {hdr}")
            continue
        body = got[1:]
        same = sorted(body) == sorted(rows) if dups else body == rows
        if not same:
            problems.append(f"{base}{what}: {len(body)} rows, expected {len(rows)}"
                            f"{'' if len(body) != len(rows) else ' (other rows or order)'}")
    lo, hi = min(t1, t2), max(t1, t2)
    want_events = [l for l in log_lines if lo < iso_ms(l.split(" ")[0]) <= hi]
    want = {"from_ms": t1, "to_ms": t2, "added": len(added), "removed": len(removed),
            "changed": len(changed), "schema_changed": json.loads(s1.schema_text) != json.loads(s2.schema_text),
            "events": want_events}
    for k, v in want.items():
        if summary.get(k) != v:
            problems.append(f"{base}summary.json: {k} = {summary.get(k)!r}, expected {v!r}"[:300])
    return problems


def instants_of(src, vp):
    names = [n for n in src.listdir(f"{vp}history") if n]
    ms = sorted(iso_ms(n) for n in names)
    extra = {0}
    for a, b in zip(ms, ms[1:]):
        if b - a > 1:
            extra.add(a + (b - a) // 2)
    if ms:
        extra.add(ms[-1] + 1000)
    return sorted(set(ms) | extra)


def check_array(src, what, vp, a, tally, golden, recorded):
    """Every sampled pair of instants of one array, and diff names that
    name no pair; the number of pairs byte-compared with `golden`."""
    matched = 0
    try:
        ts = instants_of(src, vp)
        sides = {t: Side(src, vp, t) for t in ts}
        log_text = src.read(vp + "log.txt").decode("utf-8", "surrogateescape")
        log_lines = [line for line in log_text.split("\n") if line]
    except Exception as e:  # noqa: BLE001
        tally.record(what, [f"cannot read its views: {e}"])
        return 0
    latest = sides[ts[-1]].schema
    dups = latest.get("array_type") != "dense" and bool(latest.get("allows_dups"))
    pairs = [(x, y) for x in ts for y in ts]
    rng = random.Random(f"{a.seed}/{what}")
    if len(pairs) > a.max_pairs:
        pairs = rng.sample(pairs, a.max_pairs)
    for t1, t2 in pairs:
        # Names as history/ takes them: raw ms, or ISO for some.
        n1 = str(t1) if rng.random() < 0.5 else conf_iso(t1)
        n2 = str(t2) if rng.random() < 0.5 else conf_iso(t2)
        try:
            hashes = {}
            found = check_pair(src, vp, log_lines, t1, t2, n1, n2, sides, dups, hashes)
            key = f"{what} diff/{t1}..{t2}"
            if hashes:
                recorded[key] = " ".join(hashes[f] for f in DIFF_FILES)
            if key in golden and hashes:
                matched += 1
                want = dict(zip(DIFF_FILES, golden[key].split(" ")))
                found += [f"{f}: not byte-identical to {a.golden}"
                          for f in DIFF_FILES if want.get(f) != hashes[f]]
            tally.record(f"{what} diff/{n1}..{n2}", found)
        except Exception as e:  # noqa: BLE001
            tally.record(f"{what} diff/{n1}..{n2}", [f"harness error: {type(e).__name__}: {e}"])
    for bad in ("1..", "x..y", "5", "1...2"):
        try:
            src.read(f"{vp}diff/{bad}/summary.json")
            tally.record(f"{what} diff/{bad}", ["resolved, but it names no two instants"])
        except Exception:  # noqa: BLE001 - the failure wanted
            tally.record(f"{what} diff/{bad}", [])
    return matched


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    conf.add_source_args(ap)
    ap.add_argument("--max-pairs", type=int, default=40,
                    help="pairs per array at most (sampled, seeded)")
    ap.add_argument("--seed", type=int, default=1)
    gg = ap.add_mutually_exclusive_group()
    gg.add_argument("--golden", help="JSON of each pair's file hashes to match")
    gg.add_argument("--write-golden", help="record each pair's file hashes in this JSON")
    ap.add_argument("corpus")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    src = conf.source_of(a)
    tally = conf.Tally(False)
    golden = json.loads(Path(a.golden).read_text()) if a.golden else {}
    recorded, matched = {}, 0
    for unit, item in conf.each_array(src, a.corpus, a.names, tally):
        matched += check_array(src, conf.label(item, unit), item.prefix, a, tally, golden,
                               recorded)
    if a.write_golden:
        Path(a.write_golden).write_text(json.dumps(recorded, indent=0, sort_keys=True) + "\n")
        print(f"recorded {len(recorded)} pairs in {a.write_golden}")
    if a.golden:
        print(f"{matched} of {len(recorded)} pairs byte-compared with {a.golden}")
        if matched == 0:
            tally.record("golden", [f"no pair of {a.golden} was checked"])
    return tally.finish()


def conf_iso(ms):
    import datetime
    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


if __name__ == "__main__":
    sys.exit(main())
