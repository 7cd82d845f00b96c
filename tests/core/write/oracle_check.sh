#!/usr/bin/env bash
# The independent check of tiledb-mkarray: writes arrays with it, has TileDB
# itself (the workshop oracle's refdump) read them, and compares every cell
# TileDB reads with the CSV rows written. Run by hand, never by ctest (the
# project does not depend on the oracle):
#
#   tests/core/write/oracle_check.sh BUILD_DIR [REFDUMP] [WORKDIR]
#
# BUILD_DIR holds bin/tiledb-mkarray (and bin/tiledbfs-view: when present,
# the conformance suite then compares our reader with TileDB's dump of the
# same arrays). REFDUMP defaults to /work/shared/oracle/bin/refdump.
# Exit status 0 when every array matches.
set -euo pipefail
BUILD=${1:?usage: oracle_check.sh BUILD_DIR [REFDUMP] [WORKDIR]}
REFDUMP=${2:-/work/shared/oracle/bin/refdump}
WORK=${3:-$(mktemp -d /tmp/mkarray_oracle.XXXXXX)}
MK="$BUILD/bin/tiledb-mkarray"
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
# The oracle's libraries through a folder of real symlinks (scripts/lib.sh).
source "$HERE/../../../scripts/lib.sh"
tiledbfs_oracle_libs "$(dirname "$(dirname "$REFDUMP")")" "$WORK/oracle-lib"
export LD_LIBRARY_PATH="$WORK/oracle-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec python3 - "$MK" "$REFDUMP" "$WORK" "$BUILD" "$HERE" <<'EOF'
import json, math, os, random, shutil, struct, subprocess, sys

mk, refdump, work, build, here = sys.argv[1:6]
arrays_dir = os.path.join(work, "arrays")
expected_dir = os.path.join(work, "expected")
shutil.rmtree(arrays_dir, ignore_errors=True)
shutil.rmtree(expected_dir, ignore_errors=True)
os.makedirs(arrays_dir)
os.makedirs(expected_dir)

FMT = {"INT8": "b", "UINT8": "B", "INT16": "h", "UINT16": "H", "INT32": "i", "UINT32": "I",
       "INT64": "q", "UINT64": "Q", "FLOAT32": "f", "FLOAT64": "d"}

def pipeline(*names):
    fs = []
    for n in names:
        f = {"name": n}
        if n in ("ZSTD", "LZ4", "GZIP", "BZIP2", "RLE"):
            f["level"] = -1
        if n == "POSITIVE_DELTA":
            f["max_window"] = 1024
        fs.append(f)
    return {"max_chunk_size": 65536, "filters": fs}

def dim(name, t, dom, ext, *filters):
    d = {"name": name, "type": t, "domain": dom, "tile_extent": ext}
    if filters:
        d["filter_pipeline"] = pipeline(*filters)
    return d

def attr(name, t, *filters, var=False, nullable=False, cvn=1):
    return {"name": name, "type": t, "var": var, "nullable": nullable, "cell_val_num": cvn,
            "filter_pipeline": pipeline(*filters)}

def schema(kind, dims, attrs, order=("row-major", "row-major"), capacity=10000, dups=False):
    return {"array_type": kind, "tile_order": order[0], "cell_order": order[1],
            "capacity": capacity, "allows_dups": dups, "dims": dims, "attrs": attrs,
            "coords_filters": pipeline("ZSTD"), "offsets_filters": pipeline("ZSTD"),
            "validity_filters": pipeline("RLE")}

rng = random.Random(42)

def word():
    return "".join(rng.choice("abcdefghij") for _ in range(rng.randrange(0, 9)))

def dense_rows(ranges, make):
    rows = []
    def rec(d, coords):
        if d == len(ranges):
            rows.append(list(coords) + make(coords))
            return
        for v in range(ranges[d][0], ranges[d][1] + 1):
            rec(d + 1, coords + [v])
    rec(0, [])
    return rows

cases = {}
# Dense 1D, several tiles, then a partial overwrite not aligned to tiles.
cases["w_dense_1d"] = (
    schema("dense", [dim("i", "INT64", [0, 99], 8)],
           [attr("v", "FLOAT64", "BYTESHUFFLE", "ZSTD"), attr("s", "STRING_ASCII", "ZSTD", var=True)]),
    [dense_rows([(0, 39)], lambda c: [c[0] * 1.5, word()]),
     dense_rows([(10, 14)], lambda c: [-c[0], word()])])
# Dense 2D, col-major tiles and cells, nullable, two fragments.
cases["w_dense_2d_col"] = (
    schema("dense", [dim("r", "INT32", [1, 10], 3), dim("c", "INT32", [1, 7], 4)],
           [attr("a", "INT32", "ZSTD"), attr("n", "UINT8", "LZ4", nullable=True)],
           order=("col-major", "col-major")),
    [dense_rows([(1, 10), (1, 7)], lambda c: [c[0] * 10 + c[1], (c[0] + c[1]) % 7 if (c[0] + c[1]) % 4 else ""]),
     dense_rows([(2, 8), (3, 7)], lambda c: [-(c[0] * 10 + c[1]), "" if c[1] == 5 else 200])])
# Dense 2D row-major with BITSHUFFLE, checksums, GZIP, BZIP2, POSITIVE_DELTA
# (on whole tiles only: fill values inside a partly written tile would
# decrease), fixed cells of 3.
cases["w_dense_2d_filters"] = (
    schema("dense", [dim("y", "UINT64", [0, 299], 50), dim("x", "UINT64", [0, 199], 50)],
           [attr("f", "FLOAT32", "BITSHUFFLE", "LZ4"),
            attr("g", "INT16", "CHECKSUM_MD5", "GZIP", "CHECKSUM_SHA256"),
            attr("t", "INT32", "BZIP2", cvn=3),
            attr("p", "UINT64", "POSITIVE_DELTA", "ZSTD")]),
    [dense_rows([(0, 299), (0, 199)], lambda c: [c[0] * 0.25 - c[1], (c[0] * 7 + c[1]) % 3000 - 1500,
                                                 " ".join(str(c[0] * k + c[1]) for k in range(3)),
                                                 c[0] * 200 + c[1]]),
     dense_rows([(50, 149), (100, 149)], lambda c: [1.0, 2, "0 0 0", c[0] * 1000 + c[1]])])
# Sparse 2D, var string and nullable attributes, row-major, ZSTD and BYTESHUFFLE+ZSTD.
def sparse_cells(n, gen):
    seen, rows = set(), []
    while len(rows) < n:
        row = gen()
        key = tuple(row[:2])
        if key in seen:
            continue
        seen.add(key)
        rows.append(row)
    return rows
cases["w_sparse_2d"] = (
    schema("sparse", [dim("x", "INT32", [0, 999], 100), dim("y", "INT64", [-500, 500], 50)],
           [attr("v", "INT64", "BYTESHUFFLE", "ZSTD"),
            attr("s", "STRING_ASCII", "ZSTD", var=True, nullable=True),
            attr("f", "FLOAT64", "ZSTD", nullable=True)], capacity=50),
    [sparse_cells(700, lambda: [rng.randrange(1000), rng.randrange(-500, 501), rng.randrange(-10**12, 10**12),
                                rng.choice([word(), word(), ""]), rng.choice([rng.random(), ""])]),
     sparse_cells(120, lambda: [rng.randrange(400, 600), rng.randrange(-50, 50), rng.randrange(100),
                                word(), 0.5])])
# Sparse col-major with a float dimension and every writable filter.
cases["w_sparse_col_float"] = (
    schema("sparse", [dim("a", "FLOAT64", [-1000.0, 1000.0], 100.0), dim("b", "UINT64", [0, 10**6], 1000)],
           [attr("u", "UINT16", "BITSHUFFLE", "LZ4"), attr("k", "INT32", "CHECKSUM_SHA256", "GZIP", nullable=True),
            attr("t", "STRING_ASCII", "CHECKSUM_MD5", "BZIP2", var=True)],
           order=("col-major", "col-major"), capacity=7),
    [sparse_cells(300, lambda: [round(rng.uniform(-1000, 1000), 3), rng.randrange(10**6), rng.randrange(65536),
                                rng.choice([rng.randrange(-99, 99), ""]), word()])])
# Sparse with a var-sized string dimension and duplicates allowed.
cases["w_sparse_strdim_dups"] = (
    schema("sparse", [{"name": "key", "type": "STRING_ASCII", "filter_pipeline": pipeline("ZSTD")},
                      dim("n", "INT32", [0, 100], 10)],
           [attr("v", "INT32", "ZSTD")], capacity=5, dups=True),
    [[[rng.choice(["apple", "b", "cherry", "d", "eeeeeeee", "f"]), rng.randrange(5), i] for i in range(60)]])

def csv_field(v):
    s = str(v)
    if any(c in s for c in ',"\n') or s == "":
        return '"' + s.replace('"', '""') + '"' if s != "" else ""
    return s

def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAILED: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout

def values(path, t, nvals=None):
    b = open(path, "rb").read()
    f = FMT[t]
    n = len(b) // struct.calcsize(f)
    return list(struct.unpack("<%d%s" % (n, f), b))

def parse(text, t):
    if t in ("FLOAT32", "FLOAT64"):
        v = float(text)
        return struct.unpack("<f", struct.pack("<f", v))[0] if t == "FLOAT32" else v
    return int(text)

failures = 0
total_cells = 0
for name, (sch, writes) in cases.items():
    adir = os.path.join(arrays_dir, name)
    sfile = os.path.join(work, name + ".schema.json")
    json.dump(sch, open(sfile, "w"))
    run([mk, "create", adir, "--schema", sfile, "--timestamp", "1700000000000"])
    header = [d["name"] for d in sch["dims"]] + [a["name"] for a in sch["attrs"]]
    for k, rows in enumerate(writes):
        cfile = os.path.join(work, f"{name}.{k}.csv")
        with open(cfile, "w") as out:
            out.write(",".join(header) + "\n")
            rows_out = list(rows)
            if sch["array_type"] == "sparse":
                rng.shuffle(rows_out)
            for r in rows_out:
                out.write(",".join(csv_field(v) for v in r) + "\n")
        run([mk, "write", adir, "--timestamp", str(1700000001000 + 1000 * k), "--csv", cfile])
    edir = os.path.join(expected_dir, name)
    env = dict(os.environ)
    run([refdump, adir, edir])
    view = os.path.join(edir, "views", "latest")
    vj = json.load(open(os.path.join(view, "view.json")))
    fields = {f["name"]: f for f in vj["fields"]}
    # Expected cells: later writes override (dense) or add (sparse).
    D = len(sch["dims"])
    expect = {}
    multi = []
    for rows in writes:
        for r in rows:
            if sch["array_type"] == "dense":
                expect[tuple(r[:D])] = r[D:]
            else:
                multi.append((tuple(r[:D]), r[D:]))
    # TileDB's read, cell by cell.
    cols = {}
    n = vj["cell_count"]
    for fname, f in fields.items():
        if f["var"]:
            data = open(os.path.join(view, fname + ".data"), "rb").read()
            offs = values(os.path.join(view, fname + ".offsets"), "UINT64")
            offs = offs + [len(data)] if len(offs) == n else offs
            cols[fname] = [data[offs[i]:offs[i + 1]].decode() for i in range(n)]
        else:
            vals = values(os.path.join(view, fname + ".data"), f["type"])
            cvn = f["cell_val_num"]
            cols[fname] = vals if cvn == 1 else [vals[i * cvn:(i + 1) * cvn] for i in range(n)]
        if f["nullable"]:
            valid = open(os.path.join(view, fname + ".validity"), "rb").read()
            cols[fname] = [v if valid[i] else None for i, v in enumerate(cols[fname])]
    got = []
    for i in range(n):
        key = tuple(cols[d["name"]][i] for d in sch["dims"])
        got.append((key, [cols[a["name"]][i] for a in sch["attrs"]]))
    def norm(a, v):
        if v == "" and a["nullable"]:
            return None
        if v is None:
            return None
        if a["var"] or a["type"] == "STRING_ASCII":
            return str(v)
        if a.get("cell_val_num", 1) != 1:
            return [parse(x, a["type"]) for x in str(v).split()]
        return parse(str(v), a["type"])
    bad = []
    if sch["array_type"] == "dense":
        seen = set()
        for key, vals in got:
            if key in expect:
                seen.add(key)
                want = [norm(a, v) for a, v in zip(sch["attrs"], expect[key])]
                if want != vals:
                    bad.append(f"cell {key}: TileDB {vals}, written {want}")
        if len(seen) != len(expect):
            bad.append(f"{len(expect) - len(seen)} written cells missing from TileDB's read")
    else:
        want = sorted((tuple(k), [norm(a, v) for a, v in zip(sch["attrs"], vs)]) for k, vs in multi)
        want = [(tuple(float(x) if isinstance(x, float) else x for x in k), v) for k, v in want]
        have = sorted(got, key=lambda kv: (kv[0], [str(x) for x in kv[1]]))
        want = sorted(want, key=lambda kv: (kv[0], [str(x) for x in kv[1]]))
        if have != want:
            bad.append(f"TileDB reads {len(have)} cells, {len(want)} written; first differences: "
                       + str([(h, w) for h, w in zip(have, want) if h != w][:3]))
    total_cells += n
    if bad:
        failures += 1
        print(f"FAIL {name}: " + "; ".join(bad[:5]))
    else:
        print(f"ok   {name}: {n} cells read by TileDB {vj.get('layout')} equal the {len(writes)} write(s)")

print(f"{len(cases) - failures} arrays match, {failures} differ ({total_cells} cells compared); work dir {work}")

# Synthetic data (--synthetic): TileDB's read is compared cell by cell with
# an independent Python model of the values (core/write/synthetic.h: a
# function of seed, attribute and coordinates only), the sparse cell counts
# per fragment, the bands, and distinctness; then with our reader by the
# conformance suite below.
M64 = (1 << 64) - 1
GOLD, KEY0 = 0x9E3779B97F4A7C15, 0x243F6A8885A308D3
VALID_SALT, LEN_SALT = 0x5BD1E9955BD1E995, 0x27D4EB2F165667C5
SIZE = {"INT8": 1, "UINT8": 1, "INT16": 2, "UINT16": 2, "INT32": 4, "UINT32": 4, "INT64": 8,
        "UINT64": 8, "FLOAT32": 4, "FLOAT64": 8, "CHAR": 1, "STRING_ASCII": 1}
TEXT = ("CHAR", "STRING_ASCII")

def fmix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)

def coord_bits(dim, v):
    t = dim["type"]
    if t == "STRING_ASCII":
        h = 0xCBF29CE484222325
        for c in v.encode():
            h = ((h ^ c) * 0x100000001B3) & M64
        return h
    if t == "FLOAT32":
        return struct.unpack("<I", struct.pack("<f", v))[0]
    if t == "FLOAT64":
        return struct.unpack("<Q", struct.pack("<d", v))[0]
    return v & M64

def cell_key(dims, coords):
    acc = KEY0
    for d, (dim, v) in enumerate(zip(dims, coords)):
        acc = fmix(acc ^ fmix((coord_bits(dim, v) + GOLD * (d + 1)) & M64))
    return acc

def put_value(t, g):
    if t == "FLOAT64":
        return (g >> 11) * 2.0 ** -53 * 2000.0 - 1000.0
    if t == "FLOAT32":
        return struct.unpack("<f", struct.pack("<f", (g >> 11) * 2.0 ** -53 * 2000.0 - 1000.0))[0]
    if t in TEXT:
        return chr(97 + (g & 31) % 26)
    bits = 8 * SIZE[t]
    v = g & ((1 << bits) - 1)
    if t.startswith("INT") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v

def synth_values(sch, seed, coords):
    key = cell_key(sch["dims"], coords)
    out = []
    for a_i, a in enumerate(sch["attrs"]):
        h = fmix(key ^ fmix((seed * GOLD + 0xA5A5A5A5 + a_i) & M64))
        t, cvn = a["type"], a.get("cell_val_num", 1)
        if a.get("nullable") and fmix(h ^ VALID_SALT) % 10 == 0:
            out.append(None)
        elif not a.get("var"):
            vals = [put_value(t, fmix((h + GOLD * (k + 1)) & M64)) for k in range(cvn)]
            out.append("".join(vals) if t in TEXT else vals[0] if cvn == 1 else vals)
        else:
            n = fmix(h ^ LEN_SALT)
            if t in TEXT:
                g = fmix((h + GOLD) & M64)
                out.append("".join(chr(97 + ((g >> (5 * i)) & 31) % 26) for i in range(n % 13)))
            else:
                out.append([put_value(t, fmix((h + GOLD * (i + 1)) & M64)) for i in range(n % 4)])
    return out

def cells_of(seed, k, cells):
    lo, hi = cells
    r = fmix(seed ^ fmix((k + 0x1234567) & M64))
    return lo + r % (hi - lo + 1)

def read_view(view, vj):
    n = vj["cell_count"]
    cols = {}
    for f in vj["fields"]:
        name, t, cvn = f["name"], f["type"], f["cell_val_num"]
        data = open(os.path.join(view, name + ".data"), "rb").read()
        def decode(b):
            if t in TEXT:
                return b.decode()
            return list(struct.unpack("<%d%s" % (len(b) // SIZE[t], FMT[t]), b))
        if f["var"]:
            offs = values(os.path.join(view, name + ".offsets"), "UINT64")
            offs = offs + [len(data)] if len(offs) == n else offs
            col = [decode(data[offs[i]:offs[i + 1]]) for i in range(n)]
        else:
            size = SIZE[t] * cvn
            col = [decode(data[i * size:(i + 1) * size]) for i in range(n)]
            if t not in TEXT and cvn == 1:
                col = [v[0] for v in col]
        if f["nullable"]:
            valid = open(os.path.join(view, name + ".validity"), "rb").read()
            col = [v if valid[i] else None for i, v in enumerate(col)]
        cols[name] = col
    return cols

def sparse(dims, attrs, order=("row-major", "row-major"), capacity=1000):
    s = schema("sparse", dims, attrs, order=order, capacity=capacity)
    s["coords_filters"] = pipeline("BYTESHUFFLE", "ZSTD")
    return s

# Each write: (seed, extra arguments, box of its cells or None for the domain,
# sparse cells per fragment (MIN, MAX), fragments).
def w(seed, sub=None, cells=None, fragments=1):
    args = ["--synthetic", str(seed)]
    if sub:
        args += ["--subarray", ",".join(f"{lo}:{hi}" for lo, hi in sub)]
    if cells:
        args += ["--cells", f"{cells[0]}:{cells[1]}"]
    if fragments > 1:
        args += ["--fragments", str(fragments)]
    return {"seed": seed, "args": args, "sub": sub, "cells": cells, "fragments": fragments}

band8 = [w(1, [(0, 1999), (125 * k, 125 * k + 124)], (5000, 5000)) for k in range(8)]
synth = {
    "w_synth_dense": (schema("dense", [dim("r", "INT64", [-500, 499], 64), dim("c", "INT64", [0, 299], 100)],
                             [attr("a", "FLOAT64", "BYTESHUFFLE", "ZSTD"), attr("b", "INT8", "RLE"),
                              attr("s", "STRING_ASCII", "LZ4", var=True, nullable=True),
                              attr("v", "INT32", "GZIP", var=True), attr("ch", "CHAR", "ZSTD", cvn=4)],
                             order=("col-major", "row-major")),
                      [w(1), w(2, [(-100, 150), (7, 222)])]),
    # Float and string dimensions: random coordinates sorted in memory.
    "w_synth_sparse": (schema("sparse", [{"name": "k", "type": "STRING_ASCII"}, dim("x", "UINT64", [0, 2**64 - 2], 2**40),
                                         dim("f", "FLOAT32", [-1.0, 1.0], 0.25)],
                              [attr("a", "UINT32", "BITSHUFFLE", "ZSTD"), attr("n", "FLOAT64", "ZSTD", nullable=True)],
                              capacity=1000),
                       [w(3, cells=(20000, 20000)), w(4, cells=(5000, 5000))]),
    # A small sparse8 (array b of issue 5): 8 column bands, 40,000 cells.
    "w_synth_sparse8": (sparse([dim("r", "INT64", [0, 1999], 100), dim("c", "INT64", [0, 999], 100)],
                               [attr("v", "FLOAT64", "BYTESHUFFLE", "ZSTD"), attr("s", "STRING_ASCII", "ZSTD", var=True),
                                attr("n", "INT32", "LZ4", nullable=True)], capacity=500),
                        band8),
    # Col-major tiles and cells, mixed integer dimension types, row bands.
    "w_synth_sparse_col": (sparse([dim("a", "INT32", [-500, 499], 64), dim("b", "UINT64", [0, 10**12], 10**10)],
                                  [attr("u", "UINT16", "BITSHUFFLE", "LZ4"),
                                   attr("t", "STRING_ASCII", "ZSTD", var=True, nullable=True),
                                   attr("c3", "CHAR", "ZSTD", cvn=3)],
                                  order=("col-major", "col-major"), capacity=300),
                           [w(9, cells=(2000, 3000), fragments=3)]),
    # Many fragments (array c of issue 5, small): 120 sparse rows of 10 to 100
    # cells. (Every fragment is a view the oracle dumps and conformance checks.)
    "w_frags_sparse": (sparse([dim("r", "INT64", [0, 119], 10), dim("c", "INT64", [0, 99], 100)],
                              [attr("v", "FLOAT64", "ZSTD")], capacity=50),
                       [w(5, cells=(10, 100), fragments=120)]),
    # Many dense fragments: 80 one-row bands, then an overlapping write.
    "w_frags_dense": (schema("dense", [dim("r", "INT64", [0, 79], 16), dim("c", "INT64", [0, 49], 16)],
                             [attr("f", "FLOAT32", "ZSTD"), attr("s", "STRING_ASCII", "ZSTD", var=True, nullable=True)]),
                      [w(6, fragments=80), w(7, [(30, 70), (10, 30)])]),
}
synth_cells = 0
for name, (sch, writes) in synth.items():
    adir = os.path.join(arrays_dir, name)
    sfile = os.path.join(work, name + ".schema.json")
    json.dump(sch, open(sfile, "w"))
    run([mk, "create", adir, "--schema", sfile, "--timestamp", "1700000000000"])
    t = 1700000001000
    for wr in writes:
        run([mk, "write", adir, "--timestamp", str(t)] + wr["args"])
        t += wr["fragments"]
    edir = os.path.join(expected_dir, name)
    run([refdump, adir, edir])
    view = os.path.join(edir, "views", "latest")
    vj = json.load(open(os.path.join(view, "view.json")))
    cols = read_view(view, vj)
    n = vj["cell_count"]
    dims = sch["dims"]
    bad = []
    integer_dims = all(d["type"] not in ("STRING_ASCII", "FLOAT32", "FLOAT64") for d in dims)
    frags = json.load(open(os.path.join(edir, "fragments.json")))["fragments"]
    if sch["array_type"] == "sparse":
        # Cells per fragment and bands, in timestamp order.
        k_all = 0
        expect_total = 0
        for wr in writes:
            box = wr["sub"] or [tuple(d.get("domain", (0, 0))) for d in dims]
            rows = box[0][1] - box[0][0] + 1
            for k in range(wr["fragments"]):
                f = frags[k_all]
                k_all += 1
                want = cells_of(wr["seed"], k, wr["cells"])
                expect_total += want
                if f["cell_num"] != want:
                    bad.append(f"fragment {k_all - 1}: {f['cell_num']} cells, {want} asked")
                if integer_dims:
                    lo = box[0][0] + rows * k // wr["fragments"]
                    hi = box[0][0] + rows * (k + 1) // wr["fragments"] - 1
                    ned = f["non_empty_domain"]
                    if not (lo <= ned[0][0] <= ned[0][1] <= hi and
                            all(b[0] <= r[0] <= r[1] <= b[1] for b, r in zip(box[1:], ned[1:]))):
                        bad.append(f"fragment {k_all - 1}: non-empty domain {ned} outside its band")
        keys = list(zip(*[cols[d["name"]] for d in dims]))
        if len(set(keys)) != n:
            bad.append("duplicate coordinates")
        if integer_dims and n != expect_total:
            bad.append(f"TileDB reads {n} cells, {expect_total} written")
        seeds = [wr["seed"] for wr in reversed(writes)]
    else:
        seeds = None
        want_n = 1
        for d in dims:
            want_n *= d["domain"][1] - d["domain"][0] + 1
        if n != want_n:
            bad.append(f"TileDB reads {n} cells, the domain holds {want_n}")
    for i in range(n):
        coords = [cols[d["name"]][i] for d in dims]
        got = [cols[a["name"]][i] for a in sch["attrs"]]
        if seeds is None:  # dense: the latest write covering the cell
            seed = next(wr["seed"] for wr in reversed(writes)
                        if not wr["sub"] or all(lo <= c <= hi for c, (lo, hi) in zip(coords, wr["sub"])))
            candidates = [seed]
        else:
            candidates = seeds
        if not any(got == synth_values(sch, s, coords) for s in candidates):
            bad.append(f"cell {coords}: TileDB {got}, model {synth_values(sch, candidates[0], coords)}")
            if len(bad) > 5:
                break
    synth_cells += n
    if bad:
        failures += 1
        print(f"FAIL {name}: " + "; ".join(bad[:5]))
    else:
        print(f"ok   {name}: {n} cells in {len(frags)} fragments read by TileDB equal the model")
print(f"synthetic: {synth_cells} cells compared with the model")
viewer = os.path.join(build, "bin", "tiledbfs-view")
conf = os.path.join(here, "..", "..", "conformance", "conformance.py")
if os.path.exists(viewer) and os.path.exists(conf):
    print("conformance:", " ".join(["python3", conf, "--full", "--viewer", viewer, work]))
    r = subprocess.run(["python3", conf, "--full", "--viewer", viewer, work], capture_output=True, text=True)
    print((r.stdout + r.stderr).strip().splitlines()[-1] if (r.stdout + r.stderr).strip() else "(no output)")
    for line in (r.stdout + r.stderr).splitlines():
        if line.startswith("FAIL"):
            print(line)
    failures += r.returncode != 0
sys.exit(1 if failures else 0)
EOF
