#!/usr/bin/env bash
# The independent check of tiledb-mkarray's maintenance commands (meta,
# consolidate-metadata, consolidate, vacuum): builds arrays with
# tiledb-mkarray, runs the commands, and has TileDB itself (the workshop
# oracle's refdump) read every result. Then
#   1. TileDB's read of each array after a command is compared with its read
#      of the same array before the command (latest view: every field byte
#      for byte, as a multiset of cells where duplicates are allowed; the
#      metadata) - the command changed nothing a reader sees at the latest
#      time;
#   2. the conformance suite (tests/conformance/conformance.py --full)
#      compares our reader (bin/tiledbfs-view) with TileDB's dump of every
#      array, at every instant.
# Run by hand, never by ctest (the project does not depend on the oracle):
#
#   tests/core/write/maintenance_oracle_check.sh BUILD_DIR [REFDUMP] [WORKDIR]
#
# BUILD_DIR holds bin/tiledb-mkarray and bin/tiledbfs-view. REFDUMP defaults
# to /work/shared/oracle/bin/refdump. Exit status 0 when everything matches.
set -euo pipefail
BUILD=${1:?usage: maintenance_oracle_check.sh BUILD_DIR [REFDUMP] [WORKDIR]}
REFDUMP=${2:-/work/shared/oracle/bin/refdump}
WORK=${3:-$(mktemp -d /tmp/mkarray_maint_oracle.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
# The oracle's libraries through a folder of real symlinks (scripts/lib.sh).
source "$HERE/../../../scripts/lib.sh"
tiledbfs_oracle_libs "$(dirname "$(dirname "$REFDUMP")")" "$WORK/oracle-lib"
export LD_LIBRARY_PATH="$WORK/oracle-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec python3 - "$BUILD" "$REFDUMP" "$WORK" "$HERE" <<'EOF'
import json, os, random, shutil, stat, subprocess, sys
from collections import Counter

build, refdump, work, here = sys.argv[1:5]
mk = os.path.join(build, "bin", "tiledb-mkarray")
viewer = os.path.join(build, "bin", "tiledbfs-view")
corpus = os.path.normpath(os.path.join(here, "..", "..", "data", "corpus", "arrays"))
conf = os.path.normpath(os.path.join(here, "..", "..", "conformance", "conformance.py"))
arrays_dir = os.path.join(work, "arrays")
expected_dir = os.path.join(work, "expected")
before_dir = os.path.join(work, "before")
for d in (arrays_dir, expected_dir, before_dir):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)

T0 = 1700000000000
def t(n):
    return str(T0 + 1000 * n)

def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAILED: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout.strip()

def pipeline(*names):
    fs = []
    for n in names:
        f = {"name": n}
        if n in ("ZSTD", "LZ4", "GZIP", "BZIP2", "RLE"):
            f["level"] = -1
        fs.append(f)
    return {"max_chunk_size": 65536, "filters": fs}

def dim(name, ty, dom, ext):
    return {"name": name, "type": ty, "domain": dom, "tile_extent": ext}

def attr(name, ty, *filters, var=False, nullable=False, cvn=1):
    return {"name": name, "type": ty, "var": var, "nullable": nullable, "cell_val_num": cvn,
            "filter_pipeline": pipeline(*filters)}

def schema(kind, dims, attrs, order=("row-major", "row-major"), capacity=10000, dups=False):
    return {"array_type": kind, "tile_order": order[0], "cell_order": order[1],
            "capacity": capacity, "allows_dups": dups, "dims": dims, "attrs": attrs,
            "coords_filters": pipeline("ZSTD"), "offsets_filters": pipeline("ZSTD"),
            "validity_filters": pipeline("RLE")}

def create(name, sch):
    adir = os.path.join(arrays_dir, name)
    sfile = os.path.join(work, name + ".schema.json")
    json.dump(sch, open(sfile, "w"))
    run(mk, "create", adir, "--schema", sfile, "--timestamp", str(T0))
    return adir

rng = random.Random(7)
def word():
    return "".join(rng.choice("abcdef") for _ in range(rng.randrange(0, 7)))

def write_csv(adir, ts, header, rows):
    cfile = os.path.join(work, os.path.basename(adir) + "." + ts + ".csv")
    with open(cfile, "w") as out:
        out.write(",".join(header) + "\n")
        for r in rows:
            out.write(",".join("" if v is None else str(v) for v in r) + "\n")
    run(mk, "write", adir, "--timestamp", ts, "--csv", cfile)

def dense_rows(r0, r1, c0, c1, tag):
    return [[r, c, 1000 * tag + 10 * r + c, word() or "x", None if (r + c + tag) % 3 == 0 else (r * c) % 256]
            for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]

def dense_array(name, order=("row-major", "row-major")):
    adir = create(name, schema("dense", [dim("r", "INT32", [1, 12], 4), dim("c", "INT32", [1, 10], 3)],
                               [attr("a", "INT32", "ZSTD"), attr("s", "STRING_ASCII", "LZ4", var=True),
                                attr("n", "UINT8", nullable=True)], order=order))
    h = ["r", "c", "a", "s", "n"]
    write_csv(adir, t(2), h, dense_rows(1, 6, 1, 10, 1))
    write_csv(adir, t(1), h, dense_rows(4, 8, 3, 7, 2))  # older: under the t2 write
    write_csv(adir, t(3), h, dense_rows(8, 9, 6, 10, 3))  # leaves unwritten cells
    return adir

def sparse_array(name, dups=False, order=("row-major", "row-major")):
    adir = create(name, schema("sparse", [dim("x", "INT64", [0, 999], 50), dim("y", "INT32", [-50, 50], 10)],
                               [attr("a", "FLOAT64", "BYTESHUFFLE", "ZSTD"),
                                attr("s", "STRING_UTF8", "ZSTD", var=True, nullable=True)],
                               order=order, capacity=6, dups=dups))
    for k in range(4):
        seen, rows = set(), []
        while len(rows) < 20:
            x, y = rng.randrange(12) * 3, rng.randrange(-6, 6)
            if (x, y) in seen and not dups:
                continue
            seen.add((x, y))
            rows.append([x, y, round(rng.uniform(-9, 9), 3), rng.choice([word(), None, "é" + word()])])
        write_csv(adir, t(k + 1), ["x", "y", "a", "s"], rows)
    return adir

def snapshot(name):
    """TileDB's read of the array as it is now, for the before/after check."""
    out = os.path.join(before_dir, name)
    run(refdump, os.path.join(arrays_dir, name), out)
    return out

# ------------------------------------------------------------------ arrays
steps = []  # (array, commands run, TileDB's dump before them or None, metadata kept)

# meta: puts of several types, an overwrite, a key with / and %, a deletion.
adir = dense_array("m_meta")
for ts, args in [(4, ["put", "owner", "STRING_UTF8", "tiledbfs é"]), (4, ["put", "i32", "INT32", "1", "-2", "3"]),
                 (4, ["put", "f64", "FLOAT64", "0.5", "-1e300"]), (4, ["put", "a/b%c", "UINT16", "7", "65535"]),
                 (5, ["put", "owner", "STRING_ASCII", "someone"]), (5, ["put", "u8", "UINT8", "255"]),
                 (5, ["put", "flags", "BOOL", "1", "0"]), (5, ["put", "i8", "INT8", "-128"]),
                 (6, ["delete", "i32"]), (6, ["put", "ch", "CHAR", "xyz"]), (6, ["put", "f32", "FLOAT32", "1.25"]),
                 (6, ["put", "when", "DATETIME_MS", "1700000000000"]), (6, ["put", "u64", "UINT64", "18446744073709551615"])]:
    run(mk, "meta", adir, "--timestamp", t(ts), *args)
steps.append(("m_meta", "meta put/delete x13", None, False))

# consolidate-metadata on dense and sparse arrays.
for name, make in [("m_fragmeta_dense", lambda n: dense_array(n, ("col-major", "row-major"))),
                   ("m_fragmeta_sparse", sparse_array)]:
    adir = make(name)
    b = snapshot(name)
    run(mk, "consolidate-metadata", adir)
    steps.append((name, "consolidate-metadata", b, True))

# consolidate, then vacuum, on dense, sparse and sparse-with-duplicates arrays.
for name, make, flags in [("m_cons_dense", dense_array, []),
                          ("m_cons_dense_col", lambda n: dense_array(n, ("col-major", "col-major")), []),
                          ("m_cons_sparse", sparse_array, ["--without-timestamps"]),
                          ("m_cons_sparse_col", lambda n: sparse_array(n, order=("col-major", "col-major")),
                           ["--without-timestamps"]),
                          ("m_cons_dups", lambda n: sparse_array(n, dups=True), ["--without-timestamps"])]:
    adir = make(name)
    b = snapshot(name)
    run(mk, "consolidate", adir, *flags)
    steps.append((name, "consolidate", b, True))
    vname = name + "_vac"
    shutil.copytree(adir, os.path.join(arrays_dir, vname))
    b2 = snapshot(vname)
    run(mk, "vacuum", os.path.join(arrays_dir, vname))
    steps.append((vname, "vacuum", b2, True))

# Everything in sequence: writes, consolidate, vacuum, a later write,
# consolidate-metadata, metadata.
adir = dense_array("m_all")
run(mk, "consolidate", adir)
run(mk, "vacuum", adir)
write_csv(adir, t(4), ["r", "c", "a", "s", "n"], dense_rows(10, 12, 1, 2, 4))
b_late = snapshot("m_all")
run(mk, "consolidate-metadata", adir)
run(mk, "meta", adir, "--timestamp", t(5), "put", "k", "INT64", "-1")
steps.append(("m_all", "consolidate, vacuum, write, consolidate-metadata, meta", b_late, False))

# TileDB's own arrays: vacuum its consolidation; consolidate and vacuum an
# array whose commits are consolidated (.con, an .ign is then written).
def copy_corpus(src, name):
    dst = os.path.join(arrays_dir, name)
    shutil.copytree(os.path.join(corpus, src), dst)
    for root, dirs, files in os.walk(dst):
        for p in dirs + files:
            fp = os.path.join(root, p)
            os.chmod(fp, os.stat(fp).st_mode | stat.S_IWUSR | stat.S_IRUSR | (stat.S_IXUSR if p in dirs else 0))
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)
    return dst
adir = copy_corpus("consolidated", "m_tiledb_consolidated_vac")
b = snapshot("m_tiledb_consolidated_vac")
run(mk, "vacuum", adir)
steps.append(("m_tiledb_consolidated_vac", "vacuum", b, True))
adir = copy_corpus("commits_consolidated", "m_tiledb_commits_cons")
b = snapshot("m_tiledb_commits_cons")
run(mk, "consolidate", adir, "--without-timestamps")
run(mk, "vacuum", adir)
run(mk, "consolidate-metadata", adir)
steps.append(("m_tiledb_commits_cons", "consolidate, vacuum, consolidate-metadata", b, True))
adir = copy_corpus("sparse_dups", "m_tiledb_sparse_dups")
b = snapshot("m_tiledb_sparse_dups")
run(mk, "consolidate", adir, "--without-timestamps")
run(mk, "vacuum", adir)
steps.append(("m_tiledb_sparse_dups", "consolidate, vacuum", b, True))

# ------------------------------------------------------------------ checks
failures = 0

def latest_cells(dump):
    """TileDB's latest view as (cell count, {field: bytes}, metadata, dups)."""
    v = os.path.join(dump, "views", "latest")
    vj = json.load(open(os.path.join(v, "view.json")))
    files = {f: open(os.path.join(v, f), "rb").read() for f in sorted(os.listdir(v)) if f != "view.json"}
    return vj, files

def rows(vj, files):
    """Cells as a multiset of tuples (for arrays with duplicates)."""
    import struct
    n = vj["cell_count"]
    cols = []
    for f in vj["fields"]:
        name = f["name"]
        data = files.get(name + ".data", b"")
        if f["var"]:
            offs = list(struct.unpack("<%dQ" % (len(files[name + ".offsets"]) // 8), files[name + ".offsets"]))
            if len(offs) == n:
                offs.append(len(data))
            col = [data[offs[i]:offs[i + 1]] for i in range(n)]
        else:
            size = len(data) // n if n else 0
            col = [data[i * size:(i + 1) * size] for i in range(n)]
        if f["nullable"]:
            val = files[name + ".validity"]
            col = [c if val[i] else None for i, c in enumerate(col)]
        cols.append(col)
    return Counter(zip(*cols))

for name, what, before, meta_kept in steps:
    edir = os.path.join(expected_dir, name)
    run(refdump, os.path.join(arrays_dir, name), edir)
    fj = json.load(open(os.path.join(edir, "fragments.json")))
    note = (f"{fj['fragment_num']} fragment(s), {fj['unconsolidated_metadata_num']} unconsolidated "
            f"footer(s), {len(fj['to_vacuum'])} to vacuum")
    if before is not None:
        vb, fb = latest_cells(before)
        va, fa = latest_cells(edir)
        same_meta = vb.get("metadata") == va.get("metadata") or not meta_kept
        if "dups" in name:
            same = vb["cell_count"] == va["cell_count"] and rows(vb, fb) == rows(va, fa)
        else:
            same = vb["cell_count"] == va["cell_count"] and fb == fa
        if not same or not same_meta:
            failures += 1
            print(f"FAIL {name}: TileDB's latest view changed by {what} "
                  f"({vb['cell_count']} -> {va['cell_count']} cells, metadata same: {same_meta})")
            continue
        print(f"ok   {name}: {what}: TileDB's latest view unchanged ({va['cell_count']} cells, {note})")
    else:
        vj = json.load(open(os.path.join(edir, "views", "latest", "view.json")))
        print(f"ok   {name}: {what}: TileDB reads {len(vj.get('metadata', {}))} metadata keys, {note}")

print("conformance:", " ".join(["python3", conf, "--full", "--viewer", viewer, work]))
r = subprocess.run(["python3", conf, "--full", "--viewer", viewer, work], capture_output=True, text=True)
out = (r.stdout + r.stderr).strip().splitlines()
for line in out:
    if line.startswith("FAIL"):
        print(line)
print(out[-1] if out else "(no output)")
failures += r.returncode != 0
print(f"{len(steps)} arrays, {failures} failure(s); work dir {work}")
sys.exit(1 if failures else 0)
EOF
