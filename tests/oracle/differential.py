#!/usr/bin/env python3
"""A differential test of the reader: random arrays written by TileDB itself
(dense: 1-3 dimensions, any tile and cell orders, random boxes written
row- or col-major, consolidations and vacuums; sparse: 1-3 dimensions of
every kind, Hilbert or not, duplicates or not, random cells, deletes,
consolidations with or without timestamps, vacuums, writes after), each
dumped by the oracle's refdump, then compared with tiledbfs-view (or a
mount) by the conformance script. A workshop tool, run by hand (never by
ctest):

    tests/oracle/differential.py ORACLE_DIR BUILD_BIN OUT FIRST_SEED END_SEED [--mount]

TILEDBFS_DIFF_SCALE=K writes up to K times more cells (default 1: tiny
arrays, many tiles only with small capacities). TILEDBFS_DIFF_KEY=K (32
printable ASCII characters) encrypts every array with K (AES-256-GCM). Seed s makes
OUT/arrays/dense_s and sparse_s (a .recipe file beside each
says what was done); each seed runs in its own process, because TileDB
itself crashes on a few of them (reported, not counted). Exit status 0
when every view matches."""
import os
import random
import shutil
import subprocess
import sys

import tiledb_capi as tdb
from recipe_kit import t

HERE = os.path.dirname(os.path.abspath(__file__))
# TILEDBFS_DIFF_SCALE=K: up to K times more cells per write (more tiles).
SCALE = int(os.environ.get("TILEDBFS_DIFF_SCALE", "1"))
# TILEDBFS_DIFF_KEY=K (32 printable ASCII characters): every array is
# AES-256-GCM encrypted with K (its hex beside the array, <name>.key).
KEY = os.environ.get("TILEDBFS_DIFF_KEY")
if KEY is not None and (len(KEY) != 32 or not KEY.isascii() or not KEY.isprintable()):
    sys.exit("TILEDBFS_DIFF_KEY: 32 printable ASCII characters")
ENC = {"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": KEY} if KEY else {}

INT_TYPES = {"INT8": (-128, 127), "UINT8": (0, 255), "INT16": (-2**15, 2**15 - 1),
             "UINT16": (0, 2**16 - 1), "INT32": (-2**31, 2**31 - 1), "INT64": (-2**40, 2**40),
             "UINT32": (0, 2**32 - 1), "UINT64": (0, 2**40)}
FILTERS = [[], [("ZSTD", None)], [("LZ4", None)], [("GZIP", None)], [("RLE", None)],
           [("BYTESHUFFLE", None), ("ZSTD", None)], [("BITSHUFFLE", None)],
           [("DELTA", None)], [("DOUBLE_DELTA", None)], [("BIT_WIDTH_REDUCTION", None)],
           [("XOR", None)], [("CHECKSUM_MD5", None), ("LZ4", None)]]
ATTR_TYPES = ["INT32", "INT64", "FLOAT64", "FLOAT32", "UINT8", "INT16", "STRING_ASCII",
              "STRING_UTF8"]


def value(rng, typ):
    if typ.startswith("FLOAT"):
        return rng.choice([0.0, -1.5, 2.25, rng.uniform(-1e3, 1e3)])
    if typ.startswith("STRING"):
        return "".join(rng.choice("abc,\"") for _ in range(rng.randrange(0, 5)))
    lo, hi = {"INT32": (-1000, 1000), "INT64": (-10**12, 10**12), "UINT8": (0, 255),
              "INT16": (-300, 300)}[typ]
    return rng.randint(lo, hi)


def make_attrs(rng):
    attrs = []
    for i in range(rng.randint(1, 3)):
        typ = rng.choice(ATTR_TYPES)
        a = {"name": f"a{i}", "type": typ}
        if typ.startswith("STRING"):
            a["var"] = True
            a["filters"] = {"filters": rng.choice([[], [("ZSTD", None)], [("RLE", None)],
                                                   [("DICTIONARY", None)]]),
                            "chunk": rng.choice([64, 65536])}
        else:
            fs = rng.choice(FILTERS)
            if typ.startswith("FLOAT") and fs and fs[0][0] in ("DELTA", "DOUBLE_DELTA",
                                                               "BIT_WIDTH_REDUCTION"):
                fs = []
            a["filters"] = {"filters": fs, "chunk": rng.choice([64, 1024, 65536])}
        if rng.random() < 0.3:
            a["nullable"] = True
        attrs.append(a)
    return attrs


def fields(rng, attrs, n):
    out = {}
    for a in attrs:
        vals = [value(rng, a["type"]) for _ in range(n)]
        if a.get("nullable"):
            vals = (vals, [rng.random() > 0.2 for _ in range(n)])
        out[a["name"]] = vals
    return out


def random_dense(ctx, uri, rng):
    nd = rng.randint(1, 3)
    typ = rng.choice(["INT8", "INT16", "INT32", "INT64", "UINT16", "UINT64"])
    dims = []
    for d in range(nd):
        lo = rng.randint(-20, 20) if not typ.startswith("UINT") else rng.randint(0, 20)
        size = rng.randint(3, (14 if nd > 1 else 60) * (SCALE if nd < 3 else 1))
        if typ == "INT8":
            size = min(size, 100)
        ext = rng.randint(1, size)
        dims.append({"name": f"d{d}", "type": typ, "domain": [lo, lo + size - 1], "extent": ext})
    attrs = make_attrs(rng)
    s = {"type": "dense", "dims": dims, "attrs": attrs,
         "tile_order": rng.choice(["row-major", "col-major"]),
         "cell_order": rng.choice(["row-major", "col-major"])}
    tdb.create(ctx, uri, s)
    nw = rng.randint(1, 6)
    for k in range(1, nw + 1):
        box = []
        for d in dims:
            lo, hi = d["domain"]
            a = rng.randint(lo, hi)
            b = rng.randint(a, hi)
            box.append((a, b))
        n = 1
        for a, b in box:
            n *= b - a + 1
        tdb.write(ctx, uri, s, t(k), fields(rng, attrs, n), subarray=box,
                  layout=rng.choice(["row-major", "col-major"]))
    ops = []
    if nw > 2 and rng.random() < 0.5:
        cfg = {}
        if rng.random() < 0.5:
            cfg = {"sm.consolidation.timestamp_start": t(rng.randint(1, 2)),
                   "sm.consolidation.timestamp_end": t(rng.randint(3, nw))}
        tdb.consolidate(ctx, uri, dict(cfg, **ENC))
        ops.append(f"consolidate {cfg}")
        if rng.random() < 0.5:
            tdb.vacuum(ctx, uri, dict({"sm.vacuum.mode": "fragments"}, **ENC))
            ops.append("vacuum")
    return s, ops


def random_sparse(ctx, uri, rng):
    nd = rng.randint(1, 3)
    dims = []
    for d in range(nd):
        typ = rng.choice(["INT8", "UINT8", "INT16", "INT32", "INT64", "UINT32", "UINT64",
                          "FLOAT64", "FLOAT32", "STRING_ASCII"])
        if typ == "STRING_ASCII":
            dims.append({"name": f"d{d}", "type": typ})
            continue
        if typ.startswith("FLOAT"):
            dims.append({"name": f"d{d}", "type": typ, "domain": [-100.0, 100.0],
                         "extent": rng.choice([1.0, 10.0, 50.0])})
            continue
        lo, hi = INT_TYPES[typ]
        a = rng.randint(lo, min(hi, lo + 1000)) if rng.random() < 0.7 else lo
        b = rng.randint(a + 5, min(hi, a + rng.choice([20, 1000, 10**6]))) if a + 5 < hi else hi
        if typ in ("INT8", "UINT8"):
            a, b = max(lo, a), min(hi - 1, b)
        dims.append({"name": f"d{d}", "type": typ, "domain": [a, b],
                     "extent": rng.randint(1, max(1, (b - a) // 2))})
    attrs = make_attrs(rng)
    dups = rng.random() < 0.3
    s = {"type": "sparse", "dims": dims, "attrs": attrs, "dups": dups,
         "capacity": rng.choice([1, 2, 3, 5, 17, 100]),
         "tile_order": rng.choice(["row-major", "col-major"]),
         "cell_order": rng.choice(["row-major", "col-major", "hilbert"])}
    if s["cell_order"] == "hilbert":
        s.pop("tile_order")
    tdb.create(ctx, uri, s)

    def coord(d):
        if d["type"] == "STRING_ASCII":
            return "".join(rng.choice("ab") for _ in range(rng.randrange(0, 4)))
        if d["type"].startswith("FLOAT"):
            return rng.choice([-100.0, 0.0, -0.5, 3.25, 100.0, round(rng.uniform(-100, 100), 1)])
        a, b = d["domain"]
        return rng.choice([a, b, rng.randint(a, b), rng.randint(a, min(b, a + 10))])
    nw = rng.randint(1, 6)
    ops = []
    deletes = 0
    for k in range(1, nw + 1):
        n = rng.randint(1, 40 * SCALE)
        pts = [tuple(coord(d) for d in dims) for _ in range(n)]
        if not dups:
            pts = list(dict.fromkeys(pts))
        n = len(pts)
        f = {d["name"]: [p[i] for p in pts] for i, d in enumerate(dims)}
        f.update(fields(rng, attrs, n))
        tdb.write(ctx, uri, s, t(k * 2), f)
        if rng.random() < 0.3:
            a = rng.choice(attrs)
            if not a.get("nullable"):
                v = value(rng, a["type"])
                if a["type"].startswith("STRING"):
                    op = rng.choice(["==", "<", ">="])
                else:
                    op = rng.choice(["<", ">", "==", "!="])
                tdb.delete(ctx, uri, t(k * 2 + 1), a["name"], op, a["type"], v)
                ops.append(f"delete {a['name']} {op} {v!r} at t{k*2+1}")
                deletes += 1
    if nw > 1 and rng.random() < 0.6:
        cfg = {}
        if rng.random() < 0.5:
            cfg["sm.consolidation.with_timestamps"] = "true"
        if rng.random() < 0.4:
            cfg["sm.consolidation.timestamp_end"] = t(rng.randint(2, 2 * nw + 1))
        tdb.consolidate(ctx, uri, dict(cfg, **ENC))
        ops.append(f"consolidate {cfg}")
        if rng.random() < 0.5:
            tdb.vacuum(ctx, uri, dict({"sm.vacuum.mode": "fragments"}, **ENC))
            ops.append("vacuum")
        if rng.random() < 0.3:
            n = rng.randint(1, 10)
            pts = [tuple(coord(d) for d in dims) for _ in range(n)]
            if not dups:
                pts = list(dict.fromkeys(pts))
            f = {d["name"]: [p[i] for p in pts] for i, d in enumerate(dims)}
            f.update(fields(rng, attrs, len(pts)))
            tdb.write(ctx, uri, s, t(2 * nw + 5), f)
            ops.append("write after")
    return s, ops


def one_seed(oracle, out, seed):
    tdb.load_oracle(oracle)
    ctx = tdb.Ctx(ENC)
    for kind, fn in (("dense", random_dense), ("sparse", random_sparse)):
        name = f"{kind}_{seed}"
        uri = os.path.join(out, "arrays", name)
        exp = os.path.join(out, "expected", name)
        for p in (uri, exp):
            shutil.rmtree(p, ignore_errors=True)
            os.makedirs(os.path.dirname(p), exist_ok=True)
        try:
            s, ops = fn(ctx, uri, random.Random(name))
        except RuntimeError as e:
            print(f"{name}: TileDB refused it ({str(e)[:150]})")
            shutil.rmtree(uri, ignore_errors=True)
            continue
        with open(uri + ".recipe", "w") as f:
            f.write(repr(s) + "\n" + "\n".join(ops) + "\n")
        cmd = [os.path.join(oracle, "bin", "refdump"), uri, exp]
        if KEY:
            cmd += ["--key", KEY.encode().hex()]
            with open(uri + ".key", "w") as f:
                f.write(KEY.encode().hex() + "\n")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: refdump failed ({r.stderr.strip()[:150]}), left out")
            shutil.rmtree(uri, ignore_errors=True)
            shutil.rmtree(exp, ignore_errors=True)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--one":
        return one_seed(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    if len(sys.argv) < 6:
        sys.exit("usage: differential.py ORACLE_DIR BUILD_BIN OUT FIRST_SEED END_SEED [--mount]")
    oracle, bindir, out = (os.path.abspath(a) for a in sys.argv[1:4])
    first, end = int(sys.argv[4]), int(sys.argv[5])
    crashed = []
    for seed in range(first, end):
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", oracle, out,
                            str(seed)])
        if r.returncode != 0:
            crashed.append(seed)
            for kind in ("dense", "sparse"):
                for p in (os.path.join(out, "arrays", f"{kind}_{seed}"),
                          os.path.join(out, "expected", f"{kind}_{seed}")):
                    shutil.rmtree(p, ignore_errors=True)
    if crashed:
        print(f"TileDB crashed writing seeds {crashed}: left out")
    if "--mount" in sys.argv[6:]:
        how = ["--mount", os.path.join(bindir, "tiledbfs")]
    else:
        how = ["--viewer", os.path.join(bindir, "tiledbfs-view")]
    conformance = os.path.join(HERE, "..", "conformance", "conformance.py")
    sys.exit(subprocess.run([sys.executable, conformance] + how + [out]).returncode)


if __name__ == "__main__":
    main()
