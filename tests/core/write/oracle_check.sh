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

# Synthetic data (--synthetic): no CSV to compare with, so TileDB's read is
# compared with ours by the conformance suite below.
synth = {
    "w_synth_dense": (schema("dense", [dim("r", "INT64", [-500, 499], 64),
                                       dim("c", "INT64", [0, 299], 100)],
                             [attr("a", "FLOAT64", "BYTESHUFFLE", "ZSTD"), attr("b", "INT8", "RLE"),
                              attr("s", "STRING_ASCII", "LZ4", var=True, nullable=True),
                              attr("v", "INT32", "GZIP", var=True), attr("ch", "CHAR", "ZSTD", cvn=4)],
                             order=("col-major", "row-major")),
                      [["--synthetic", "1"], ["--synthetic", "2", "--subarray", "-100:150,7:222"]]),
    "w_synth_sparse": (schema("sparse", [{"name": "k", "type": "STRING_ASCII"}, dim("x", "UINT64", [0, 2**64 - 2], 2**40),
                                         dim("f", "FLOAT32", [-1.0, 1.0], 0.25)],
                              [attr("a", "UINT32", "BITSHUFFLE", "ZSTD"), attr("n", "FLOAT64", "ZSTD", nullable=True)],
                              capacity=1000),
                       [["--synthetic", "3", "--cells", "20000"], ["--synthetic", "4", "--cells", "5000"]]),
}
for name, (sch, writes) in synth.items():
    adir = os.path.join(arrays_dir, name)
    sfile = os.path.join(work, name + ".schema.json")
    json.dump(sch, open(sfile, "w"))
    run([mk, "create", adir, "--schema", sfile, "--timestamp", "1700000000000"])
    for k, args in enumerate(writes):
        run([mk, "write", adir, "--timestamp", str(1700000001000 + 1000 * k)] + args)
    run([refdump, adir, os.path.join(expected_dir, name)])
    vj = json.load(open(os.path.join(expected_dir, name, "views", "latest", "view.json")))
    print(f"ok   {name}: TileDB reads {vj['cell_count']} cells")
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
