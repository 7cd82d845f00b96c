#!/usr/bin/env python3
"""The oracle corpus: arrays written by TileDB itself, of kinds the public
corpus lacks (Hilbert order, schema evolution that re-adds a field, deletes
kept through consolidation, filters on dimensions, ...), each with TileDB's
own read of it. A workshop tool, run by hand (never by ctest; the project
does not depend on the oracle):

    tests/oracle/make_oracle_corpus.py ORACLE_DIR OUT [NAME ...]

ORACLE_DIR is ../shared/oracle (its lib/libtiledb.so.2.30 is loaded through
ctypes, its bin/refdump dumps every view). Writes OUT/arrays/<name> and
OUT/expected/<name>, the layout of tests/data/corpus; the same seed per name
gives the same cells (the fragment names' UUIDs differ from run to run).
`tests/conformance/run_conformance.sh viewer BIN OUT` then compares."""
import os
import random
import shutil
import subprocess
import sys

import tiledb_capi as tdb

T0 = 1700000000000


def t(n):
    return T0 + n * 1000


def fl(*names, chunk=None):
    f = []
    for n in names:
        if isinstance(n, tuple):
            f.append(n)
        else:
            f.append((n, None))
    s = {"filters": f}
    if chunk:
        s["chunk"] = chunk
    return s


def zstd(level=3, chunk=None):
    return fl(("ZSTD", {"level": level}), chunk=chunk)


def words(rng, n, alphabet="abcdefgh", maxlen=7):
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, maxlen + 1)))
            for _ in range(n)]


def distinct_points(rng, n, ranges):
    pts = set()
    while len(pts) < n:
        pts.add(tuple(rng.randint(lo, hi) for lo, hi in ranges))
    return sorted(pts, key=lambda p: rng.random())


RECIPES = {}


def recipe(fn):
    RECIPES[fn.__name__] = fn
    return fn


@recipe
def hilbert_sparse_2d(ctx, uri, rng):
    """Sparse Hilbert cell order, INT32 dims, overwrites across 4 fragments,
    nullable var attribute, capacity 5."""
    s = {"type": "sparse", "cell_order": "hilbert", "capacity": 5,
         "dims": [{"name": "x", "type": "INT32", "domain": [-50, 200], "extent": 25},
                  {"name": "y", "type": "INT32", "domain": [0, 99], "extent": 10}],
         "attrs": [{"name": "a", "type": "INT64", "filters": zstd()},
                   {"name": "s", "type": "STRING_UTF8", "var": True, "nullable": True}]}
    tdb.create(ctx, uri, s)
    hot = distinct_points(rng, 30, [(-50, 0), (0, 20)])
    for k in range(1, 5):
        pts = rng.sample(hot, 8) + distinct_points(rng, 14, [(-50, 200), (0, 99)])
        pts = list(dict.fromkeys(pts))
        n = len(pts)
        tdb.write(ctx, uri, s, t(k), {
            "x": [p[0] for p in pts], "y": [p[1] for p in pts],
            "a": [k * 1000 + i for i in range(n)],
            "s": (words(rng, n), [rng.random() > 0.2 for _ in range(n)])})
    return s


@recipe
def hilbert_float_dups(ctx, uri, rng):
    """Sparse Hilbert with FLOAT64 and INT16 dimensions, duplicates allowed."""
    s = {"type": "sparse", "cell_order": "hilbert", "capacity": 4, "dups": True,
         "dims": [{"name": "f", "type": "FLOAT64", "domain": [-10.0, 10.0], "extent": 2.5},
                  {"name": "k", "type": "INT16", "domain": [-300, 300], "extent": 50}],
         "attrs": [{"name": "v", "type": "FLOAT32"}]}
    tdb.create(ctx, uri, s)
    for k in range(1, 4):
        n = 17
        fs = [round(rng.uniform(-10, 10), 3) for _ in range(n)]
        ks = [rng.randint(-300, 300) for _ in range(n)]
        fs[0], ks[0] = 1.5, 7  # the same point in every fragment
        tdb.write(ctx, uri, s, t(k), {"f": fs, "k": ks,
                                      "v": [k + i / 8 for i in range(n)]})
    return s


@recipe
def hilbert_strdim_delete(ctx, uri, rng):
    """Sparse Hilbert with a var string dimension and an INT64 one; a delete,
    then a write after it."""
    s = {"type": "sparse", "cell_order": "hilbert", "capacity": 3,
         "dims": [{"name": "name", "type": "STRING_ASCII"},
                  {"name": "n", "type": "INT64", "domain": [0, 10**12], "extent": 10**9}],
         "attrs": [{"name": "a", "type": "INT32"}]}
    tdb.create(ctx, uri, s)
    for k in range(1, 3):
        names = words(rng, 12, "abcxyz", 5)
        ns = [rng.randint(0, 10**12) for _ in range(12)]
        pts = list(dict.fromkeys(zip(names, ns)))
        tdb.write(ctx, uri, s, t(k), {"name": [p[0] for p in pts], "n": [p[1] for p in pts],
                                      "a": [k * 100 + i for i in range(len(pts))]})
    tdb.delete(ctx, uri, t(3), "a", "<", "INT32", 106)
    tdb.write(ctx, uri, s, t(4), {"name": ["", "zz", "a"], "n": [5, 6, 7], "a": [1, 2, 3]})
    return s


@recipe
def dense_coltile_rowcell(ctx, uri, rng):
    """Dense 3D INT16, col-major tiles and row-major cells, domains not
    multiples of the extents, partial writes."""
    s = {"type": "dense", "tile_order": "col-major", "cell_order": "row-major",
         "dims": [{"name": "a", "type": "INT16", "domain": [-7, 5], "extent": 4},
                  {"name": "b", "type": "INT16", "domain": [3, 12], "extent": 3},
                  {"name": "c", "type": "INT16", "domain": [100, 104], "extent": 2}],
         "attrs": [{"name": "v", "type": "INT32", "fill": [-1]},
                   {"name": "w", "type": "STRING_ASCII", "var": True,
                    "filters": {"filters": [("RLE", None)]}}]}
    tdb.create(ctx, uri, s)
    for k, box in enumerate([[(-7, 1), (3, 9), (100, 103)], [(-2, 5), (5, 12), (101, 104)],
                             [(0, 0), (4, 4), (100, 104)]], start=1):
        n = 1
        for lo, hi in box:
            n *= hi - lo + 1
        tdb.write(ctx, uri, s, t(k), {"v": [k * 10000 + i for i in range(n)],
                                      "w": words(rng, n, "ab", 3)}, subarray=box)
    return s


@recipe
def dense_rowtile_colcell_nullable(ctx, uri, rng):
    """Dense 2D, row-major tiles and col-major cells, nullable fixed and var
    attributes with fill values, written col-major, then consolidated."""
    s = {"type": "dense", "tile_order": "row-major", "cell_order": "col-major",
         "dims": [{"name": "r", "type": "INT64", "domain": [0, 9], "extent": 4},
                  {"name": "c", "type": "INT64", "domain": [-4, 4], "extent": 3}],
         "attrs": [{"name": "p", "type": "FLOAT64", "nullable": True, "fill": [2.5]},
                   {"name": "q", "type": "STRING_UTF8", "var": True, "nullable": True,
                    "filters": zstd(5, 64)},
                   {"name": "e", "type": "INT16", "cvn": 2}]}
    tdb.create(ctx, uri, s)
    boxes = [[(0, 6), (-4, 2)], [(3, 9), (0, 4)], [(5, 5), (-4, 4)]]
    for k, box in enumerate(boxes, start=1):
        n = (box[0][1] - box[0][0] + 1) * (box[1][1] - box[1][0] + 1)
        tdb.write(ctx, uri, s, t(k), {
            "p": ([k + i / 4 for i in range(n)], [i % 3 != 0 for i in range(n)]),
            "q": (words(rng, n, "ĳé,\"x", 4), [i % 5 != 1 for i in range(n)]),
            "e": [v for i in range(n) for v in (k, -i)]},
            subarray=box, layout="col-major" if k != 2 else "row-major")
    tdb.consolidate(ctx, uri, {"sm.consolidation.timestamp_start": t(2),
                               "sm.consolidation.timestamp_end": t(3)})
    return s


@recipe
def sparse_filters_dims(ctx, uri, rng):
    """Sparse with filters on the dimensions and reinterpreting filters on
    the attributes; offsets DOUBLE_DELTA + BIT_WIDTH_REDUCTION + LZ4."""
    s = {"type": "sparse", "capacity": 64,
         "dims": [{"name": "i", "type": "INT64", "domain": [0, 100000], "extent": 1000,
                   "filters": {"chunk": 128, "filters": [("DOUBLE_DELTA", None),
                                                         ("BIT_WIDTH_REDUCTION", None)]}},
                  {"name": "j", "type": "UINT8", "domain": [0, 250], "extent": 64,
                   "filters": {"filters": [("XOR", None), ("GZIP", {"level": 2})]}}],
         "attrs": [
             {"name": "d", "type": "FLOAT64",
              "filters": {"filters": [("DELTA", {"reinterpret": "INT64"}), ("ZSTD", None)]}},
             {"name": "dd", "type": "FLOAT32",
              "filters": {"chunk": 100, "filters": [("DOUBLE_DELTA", {"reinterpret": "INT32"})]}},
             {"name": "sf", "type": "FLOAT32",
              "filters": {"filters": [("SCALE_FLOAT", {"sf_bytewidth": 1, "sf_factor": 0.5,
                                                       "sf_offset": -3.0})]}},
             {"name": "x16", "type": "INT16", "filters": {"filters": [("XOR", None),
                                                                      ("BITSHUFFLE", None)]}},
             {"name": "bw", "type": "UINT64",
              "filters": {"chunk": 200, "filters": [("BIT_WIDTH_REDUCTION", {"bw_window": 8}),
                                                    ("BZIP2", {"level": 1})]}},
             {"name": "dict", "type": "STRING_UTF8", "var": True,
              "filters": {"filters": [("DICTIONARY", None), ("ZSTD", None)]}},
             {"name": "rle", "type": "STRING_ASCII", "var": True,
              "filters": {"filters": [("RLE", None), ("CHECKSUM_MD5", None)]}},
             {"name": "b", "type": "BOOL", "filters": {"filters": [("RLE", None)]}},
             {"name": "c3", "type": "CHAR", "cvn": 3,
              "filters": {"filters": [("LZ4", None)]}}],
         "offsets_filters": {"filters": [("DOUBLE_DELTA", None), ("BIT_WIDTH_REDUCTION", None),
                                         ("LZ4", None)]},
         "coords_filters": {"filters": [("ZSTD", None)]}}
    tdb.create(ctx, uri, s)
    for k in range(1, 3):
        n = 700
        pts = distinct_points(rng, n, [(0, 100000), (0, 250)])
        tdb.write(ctx, uri, s, t(k), {
            "i": [p[0] for p in pts], "j": [p[1] for p in pts],
            "d": [rng.choice([0.1, 1e300, -2.5, 3.0, float(i)]) for i in range(n)],
            "dd": [i * 0.25 - 7 for i in range(n)],
            "sf": [rng.randint(0, 100) * 0.5 - 3.0 for _ in range(n)],
            "x16": [rng.randint(-32768, 32767) for _ in range(n)],
            "bw": [rng.randint(0, 2**rng.randint(1, 63)) for _ in range(n)],
            "dict": [rng.choice(["alpha", "βeta", "", "gamma,delta"]) for _ in range(n)],
            "rle": [rng.choice(["aa", "aa", "b", ""]) for _ in range(n)],
            "b": [rng.randint(0, 1) for _ in range(n)],
            "c3": [rng.choice([b"abc", b"x\0\0", b"\0\0\0"]) for _ in range(n)]})
    return s


@recipe
def partial_consolidation_vacuum(ctx, uri, rng):
    """Sparse, six fragments; fragments t2..t4 consolidated and vacuumed,
    fragment metadata consolidated, then a delete and a last write."""
    s = {"type": "sparse", "capacity": 6,
         "dims": [{"name": "r", "type": "INT16", "domain": [-20, 20], "extent": 5},
                  {"name": "c", "type": "INT16", "domain": [-20, 20], "extent": 5}],
         "attrs": [{"name": "a", "type": "INT32", "filters": zstd()},
                   {"name": "s", "type": "STRING_ASCII", "var": True}]}
    tdb.create(ctx, uri, s)
    for k in range(1, 7):
        pts = distinct_points(rng, 15, [(-20, 20), (-20, 20)]) + [(0, 0), (1, 1)]
        pts = list(dict.fromkeys(pts))
        tdb.write(ctx, uri, s, t(k), {"r": [p[0] for p in pts], "c": [p[1] for p in pts],
                                      "a": [k * 100 + i for i in range(len(pts))],
                                      "s": words(rng, len(pts))})
    tdb.consolidate(ctx, uri, {"sm.consolidation.timestamp_start": t(2),
                               "sm.consolidation.timestamp_end": t(4)})
    tdb.vacuum(ctx, uri, {"sm.vacuum.mode": "fragments"})
    tdb.consolidate(ctx, uri, {"sm.consolidation.mode": "fragment_meta"})
    tdb.delete(ctx, uri, t(7), "a", ">=", "INT32", 605)
    tdb.write(ctx, uri, s, t(8), {"r": [0, 5], "c": [0, 5], "a": [1, 2], "s": ["new", ""]})
    return s


@recipe
def dense_consolidated_with_timestamps(ctx, uri, rng):
    """Dense 1D DATETIME_DAY dimension, four overlapping writes consolidated
    with timestamps and vacuumed; metadata at several instants."""
    s = {"type": "dense",
         "dims": [{"name": "day", "type": "DATETIME_DAY", "domain": [19000, 19039],
                   "extent": 8}],
         "attrs": [{"name": "v", "type": "UINT16", "filters": zstd()},
                   {"name": "label", "type": "STRING_UTF8", "var": True}]}
    tdb.create(ctx, uri, s)
    for k, (lo, hi) in enumerate([(19000, 19020), (19010, 19015), (19018, 19039),
                                  (19005, 19005)], start=1):
        n = hi - lo + 1
        tdb.write(ctx, uri, s, t(k), {"v": [k * 1000 + i for i in range(n)],
                                      "label": words(rng, n, "pq", 4)}, subarray=[(lo, hi)])
    tdb.put_metadata(ctx, uri, t(5), "unit", "STRING_UTF8", ["m/s"])
    tdb.put_metadata(ctx, uri, t(6), "scale", "FLOAT32", [0.5, 2.0])
    tdb.consolidate(ctx, uri, {"sm.consolidation.with_timestamps": "true"})
    tdb.vacuum(ctx, uri, {"sm.vacuum.mode": "fragments"})
    return s


@recipe
def sparse_colmajor_dups_datetime(ctx, uri, rng):
    """Sparse col-major tiles and cells, DATETIME_MS and INT8 dimensions,
    duplicates allowed, a delete on a float attribute."""
    s = {"type": "sparse", "tile_order": "col-major", "cell_order": "col-major",
         "capacity": 3, "dups": True,
         "dims": [{"name": "when", "type": "DATETIME_MS", "domain": [0, 10**13],
                   "extent": 10**11},
                  {"name": "k", "type": "INT8", "domain": [-120, 120], "extent": 16}],
         "attrs": [{"name": "f", "type": "FLOAT64"},
                   {"name": "u", "type": "UINT32", "nullable": True}]}
    tdb.create(ctx, uri, s)
    for k in range(1, 4):
        n = 11
        ws = [rng.choice([T0, T0 + 1, 10**13, 0]) for _ in range(n)]
        ks = [rng.randint(-120, 120) for _ in range(n)]
        tdb.write(ctx, uri, s, t(k), {"when": ws, "k": ks,
                                      "f": [rng.uniform(-1, 1) for _ in range(n)],
                                      "u": ([rng.randint(0, 2**32 - 1) for _ in range(n)],
                                            [rng.random() > 0.3 for _ in range(n)])})
    tdb.delete(ctx, uri, t(4), "f", "<", "FLOAT64", -0.25)
    return s


@recipe
def hilbert_consolidated_ts_deletes(ctx, uri, rng):
    """Sparse Hilbert, 4 writes and a delete, consolidated with timestamps
    (the delete inside the range), not vacuumed; then one more write."""
    s = {"type": "sparse", "cell_order": "hilbert", "capacity": 4,
         "dims": [{"name": "x", "type": "UINT64", "domain": [0, 1000], "extent": 100},
                  {"name": "y", "type": "INT32", "domain": [-1000, 1000], "extent": 100}],
         "attrs": [{"name": "a", "type": "INT32"},
                   {"name": "s", "type": "STRING_ASCII", "var": True, "nullable": True}]}
    tdb.create(ctx, uri, s)
    hot = distinct_points(rng, 12, [(0, 30), (-10, 10)])
    for k in range(1, 5):
        pts = list(dict.fromkeys(
            rng.sample(hot, 6) + distinct_points(rng, 6, [(0, 1000), (-1000, 1000)])))
        n = len(pts)
        tdb.write(ctx, uri, s, t(k), {"x": [p[0] for p in pts], "y": [p[1] for p in pts],
                                      "a": [k * 100 + i for i in range(n)],
                                      "s": (words(rng, n), [i % 4 != 0 for i in range(n)])})
        if k == 2:
            tdb.delete(ctx, uri, t(2) + 500, "a", "<", "INT32", 105)
    tdb.consolidate(ctx, uri, {"sm.consolidation.with_timestamps": "true"})
    tdb.write(ctx, uri, s, t(6), {"x": [hot[0][0]], "y": [hot[0][1]], "a": [-1],
                                  "s": (["last"], [True])})
    return s


@recipe
def sparse_deletes_consolidated_purged(ctx, uri, rng):
    """Sparse row-major, three writes and two deletes (one on a string),
    then the fragments up to the deletes consolidated and vacuumed: TileDB
    keeps every cell version, with its timestamp and the timestamp of the
    delete that removes it (t.tdb, dt.tdb, dci.tdb); a later write."""
    s = {"type": "sparse", "capacity": 5,
         "dims": [{"name": "k", "type": "INT64", "domain": [-(2**62), 2**62], "extent": 2**40}],
         "attrs": [{"name": "a", "type": "INT32"},
                   {"name": "s", "type": "STRING_UTF8", "var": True}]}
    tdb.create(ctx, uri, s)
    keys = [rng.randint(-(2**62), 2**62) for _ in range(40)]
    for k in range(1, 4):
        ks = rng.sample(keys, 15)
        tdb.write(ctx, uri, s, t(k), {"k": ks, "a": [k * 100 + i for i in range(15)],
                                      "s": [rng.choice(["keep", "drop", "x"]) for _ in ks]})
    tdb.delete(ctx, uri, t(4), "s", "==", "STRING_UTF8", "drop")
    tdb.delete(ctx, uri, t(5), "a", ">", "INT32", 310)
    tdb.write(ctx, uri, s, t(6), {"k": keys[:3], "a": [400, 401, 402], "s": ["drop"] * 3})
    tdb.consolidate(ctx, uri, {"sm.consolidation.timestamp_end": t(5)})
    tdb.vacuum(ctx, uri, {"sm.vacuum.mode": "fragments"})
    return s


@recipe
def commits_and_meta_consolidated(ctx, uri, rng):
    """Dense 2D, five writes; commits consolidated and vacuumed, fragment
    metadata consolidated twice; metadata written, deleted, consolidated."""
    s = {"type": "dense",
         "dims": [{"name": "r", "type": "UINT32", "domain": [1, 30], "extent": 7},
                  {"name": "c", "type": "UINT32", "domain": [1, 4], "extent": 4}],
         "attrs": [{"name": "v", "type": "FLOAT64",
                    "filters": {"filters": [("BYTESHUFFLE", None), ("LZ4", None)]}}]}
    tdb.create(ctx, uri, s)
    for k in range(1, 6):
        lo = rng.randint(1, 25)
        hi = rng.randint(lo, 30)
        n = (hi - lo + 1) * 4
        tdb.write(ctx, uri, s, t(k), {"v": [k + i / 100 for i in range(n)]},
                  subarray=[(lo, hi), (1, 4)])
        if k == 2:
            tdb.consolidate(ctx, uri, {"sm.consolidation.mode": "fragment_meta"})
    tdb.consolidate(ctx, uri, {"sm.consolidation.mode": "commits"})
    tdb.vacuum(ctx, uri, {"sm.vacuum.mode": "commits"})
    tdb.consolidate(ctx, uri, {"sm.consolidation.mode": "fragment_meta"})
    tdb.put_metadata(ctx, uri, t(7), "a", "INT64", [1, 2, 3])
    tdb.put_metadata(ctx, uri, t(8), "b", "STRING_ASCII", ["bee"])
    tdb.put_metadata(ctx, uri, t(9), "a", "FLOAT64", [0.5])
    tdb.consolidate(ctx, uri, {"sm.consolidation.mode": "array_meta"})
    return s


@recipe
def dense_global_order_writes(ctx, uri, rng):
    """Dense 2D INT64, tile 3x5, a global-order write of whole tiles and a
    row-major write of a ragged box; DATETIME_NS and TIME_US attributes."""
    s = {"type": "dense",
         "dims": [{"name": "i", "type": "INT64", "domain": [0, 8], "extent": 3},
                  {"name": "j", "type": "INT64", "domain": [0, 9], "extent": 5}],
         "attrs": [{"name": "ns", "type": "DATETIME_NS"},
                   {"name": "us", "type": "TIME_US",
                    "filters": {"filters": [("DELTA", None), ("ZSTD", None)]}},
                   {"name": "f2", "type": "FLOAT32", "cvn": 2,
                    "filters": {"filters": [("XOR", None), ("BITSHUFFLE", None)]}}]}
    tdb.create(ctx, uri, s)
    # Tiles [0,5]x[0,9] in global order: tile by tile, cells row-major in a tile.
    n = 6 * 10
    tdb.write(ctx, uri, s, t(1), {"ns": [T0 * 10**6 + i for i in range(n)],
                                  "us": [i * 1000 - 5 for i in range(n)],
                                  "f2": [v for i in range(n) for v in (i / 3, -i)]},
              subarray=[(0, 5), (0, 9)], layout="global")
    box = [(2, 8), (3, 6)]
    n = 7 * 4
    tdb.write(ctx, uri, s, t(2), {"ns": [-(2**63) + 1 + i for i in range(n)],
                                  "us": [rng.randint(-10**12, 10**12) for _ in range(n)],
                                  "f2": [v for i in range(n) for v in (float("inf"), 1e-40)]},
              subarray=box)
    return s


@recipe
def schema_evolution_readd(ctx, uri, rng):
    """Sparse; an attribute dropped then added again with another type and a
    nullable var attribute with a fill value; writes between."""
    s = {"type": "sparse", "capacity": 3,
         "dims": [{"name": "k", "type": "UINT16", "domain": [0, 500], "extent": 50}],
         "attrs": [{"name": "a", "type": "INT32"}, {"name": "b", "type": "FLOAT32"}]}
    tdb.create(ctx, uri, s)
    tdb.write(ctx, uri, s, t(1), {"k": [1, 5, 9, 200], "a": [1, 2, 3, 4],
                                  "b": [0.5, 1.5, 2.5, 3.5]})
    tdb.evolve(ctx, uri, t(2), drop=["b"])
    s2 = {"type": "sparse", "dims": s["dims"], "attrs": [{"name": "a", "type": "INT32"}]}
    tdb.write(ctx, uri, s2, t(3), {"k": [5, 6], "a": [50, 60]})
    tdb.evolve(ctx, uri, t(4), add=[{"name": "b", "type": "STRING_UTF8", "var": True,
                                     "nullable": True, "fill": ["dflt"]}])
    s3 = {"type": "sparse", "dims": s["dims"],
          "attrs": [{"name": "a", "type": "INT32"},
                    {"name": "b", "type": "STRING_UTF8", "var": True, "nullable": True}]}
    tdb.write(ctx, uri, s3, t(5), {"k": [9, 300], "a": [90, 300],
                                   "b": (["nine", ""], [True, False])})
    return s3


@recipe
def delete_shadows_older(ctx, uri, rng):
    """Sparse: a cell overwritten by a version the delete matches (the older
    version does not match), in separate fragments and, in a copy, after a
    consolidation that keeps the versions."""
    s = {"type": "sparse", "capacity": 2,
         "dims": [{"name": "k", "type": "INT32", "domain": [0, 99], "extent": 10}],
         "attrs": [{"name": "a", "type": "INT32"}]}
    tdb.create(ctx, uri, s)
    tdb.write(ctx, uri, s, t(1), {"k": [1, 2, 3, 4], "a": [1, 2, 3, 4]})
    tdb.write(ctx, uri, s, t(2), {"k": [1, 2, 5], "a": [50, 6, 70]})
    tdb.delete(ctx, uri, t(3), "a", ">", "INT32", 10)
    tdb.write(ctx, uri, s, t(4), {"k": [3], "a": [90]})
    return s


@recipe
def dense_evolution_readd(ctx, uri, rng):
    """Dense; attribute `b` (var string) dropped, then added again as a
    fixed INT64 with a fill value, another `c` added nullable; writes
    between."""
    s = {"type": "dense",
         "dims": [{"name": "i", "type": "INT32", "domain": [1, 12], "extent": 5}],
         "attrs": [{"name": "a", "type": "INT32"},
                   {"name": "b", "type": "STRING_ASCII", "var": True}]}
    tdb.create(ctx, uri, s)
    tdb.write(ctx, uri, s, t(1), {"a": list(range(10)), "b": words(rng, 10)},
              subarray=[(1, 10)])
    tdb.evolve(ctx, uri, t(2), drop=["b"])
    tdb.evolve(ctx, uri, t(3), add=[{"name": "b", "type": "INT64", "fill": [-7]},
                                    {"name": "c", "type": "FLOAT32", "nullable": True}])
    s2 = {"type": "dense", "dims": s["dims"],
          "attrs": [{"name": "a", "type": "INT32"}, {"name": "b", "type": "INT64"},
                    {"name": "c", "type": "FLOAT32", "nullable": True}]}
    tdb.write(ctx, uri, s2, t(4), {"a": [100, 101, 102], "b": [1, 2, 3],
                                   "c": ([0.5, 1.5, 2.5], [True, False, True])},
              subarray=[(8, 10)])
    return s2


@recipe
def hilbert_strdims_dups(ctx, uri, rng):
    """Sparse Hilbert, two var string dimensions, duplicates allowed,
    filters on the dimensions; a delete on a dimension."""
    s = {"type": "sparse", "cell_order": "hilbert", "capacity": 3, "dups": True,
         "dims": [{"name": "p", "type": "STRING_ASCII",
                   "filters": {"filters": [("RLE", None)]}},
                  {"name": "q", "type": "STRING_ASCII",
                   "filters": {"filters": [("ZSTD", {"level": 1})]}}],
         "attrs": [{"name": "v", "type": "UINT8"}]}
    tdb.create(ctx, uri, s)
    for k in range(1, 4):
        n = 9
        tdb.write(ctx, uri, s, t(k), {"p": words(rng, n, "ab\u00e9", 3),
                                      "q": words(rng, n, "xyz", 2),
                                      "v": [k * 10 + i for i in range(n)]})
    tdb.delete(ctx, uri, t(4), "v", "==", "UINT8", 12)
    return s


KEYS = {}


@recipe
def encrypted_consolidated(ctx, uri, rng):
    """Sparse AES-256-GCM encrypted, FLOAT32 dimension, three writes
    consolidated (not vacuumed), then metadata."""
    key = bytes(range(32, 64))
    KEYS["encrypted_consolidated"] = key
    ectx = tdb.Ctx({"sm.encryption_type": "AES_256_GCM",
                    "sm.encryption_key": key.decode()})
    s = {"type": "sparse", "capacity": 4,
         "dims": [{"name": "x", "type": "FLOAT32", "domain": [-1.0, 1.0], "extent": 0.5}],
         "attrs": [{"name": "a", "type": "INT64", "filters": zstd()},
                   {"name": "s", "type": "STRING_UTF8", "var": True}]}
    tdb.create(ectx, uri, s)
    xs = [round(rng.uniform(-1, 1), 2) for _ in range(30)]
    for k in range(1, 4):
        pts = list(dict.fromkeys(rng.sample(xs, 10)))
        tdb.write(ectx, uri, s, t(k), {"x": pts, "a": [k * 10 + i for i in range(len(pts))],
                                       "s": words(rng, len(pts))})
    tdb.consolidate(ectx, uri, {"sm.encryption_type": "AES_256_GCM",
                                "sm.encryption_key": key.decode()})
    tdb.put_metadata(ectx, uri, t(5), "k", "INT32", [1, 2])
    return s


@recipe
def filter_matrix(ctx, uri, rng):
    """Dense 1D, 2000 cells in tiles of 300, chunks of 256 bytes, an
    attribute per pipeline not in the public corpus; two writes."""
    A = []
    def add(name, t, filters, **kw):
        a = {"name": name, "type": t, "filters": filters}
        a.update(kw)
        A.append(a)
    add("dd_i8", "INT8", fl("DOUBLE_DELTA", chunk=256))
    add("dd_u64", "UINT64", fl("DOUBLE_DELTA", "ZSTD", chunk=256))
    add("dd_f64", "FLOAT64", fl(("DOUBLE_DELTA", {"reinterpret": "UINT64"}), chunk=256))
    add("delta_u8", "UINT8", fl(("DELTA", {"reinterpret": "INT8"}), chunk=256))
    add("delta_i64", "INT64", fl("DELTA", "BIT_WIDTH_REDUCTION", chunk=256))
    add("bwr_i16", "INT16", fl(("BIT_WIDTH_REDUCTION", {"bw_window": 16}), chunk=256))
    add("bwr_i64", "INT64", fl("BIT_WIDTH_REDUCTION", "GZIP", chunk=256))
    add("pd_i32", "INT32", fl(("POSITIVE_DELTA", {"pd_window": 4}), chunk=256))
    add("sf8", "FLOAT64", fl(("SCALE_FLOAT", {"sf_bytewidth": 8, "sf_factor": 0.001,
                                              "sf_offset": 0.0}), chunk=256))
    add("sf4", "FLOAT32", fl(("SCALE_FLOAT", {"sf_bytewidth": 4, "sf_factor": 0.25,
                                              "sf_offset": 1.0}), "LZ4", chunk=256))
    add("sf2", "FLOAT64", fl(("SCALE_FLOAT", {"sf_bytewidth": 2, "sf_factor": 1.0,
                                              "sf_offset": -100.0}), chunk=256))
    add("xor_f64", "FLOAT64", fl("XOR", "ZSTD", chunk=256))
    add("xor_i8", "INT8", fl("XOR", chunk=256))
    add("bs_u16", "UINT16", fl("BITSHUFFLE", "BYTESHUFFLE", "BZIP2", chunk=256))
    add("rle_f32", "FLOAT32", fl("RLE", chunk=256))
    add("md5_sha", "INT32", fl("CHECKSUM_MD5", "CHECKSUM_SHA256", "GZIP", chunk=256))
    add("dict_ascii", "STRING_ASCII", fl("DICTIONARY", chunk=256), var=True)
    add("dict_null", "STRING_UTF8", fl("DICTIONARY", "LZ4", chunk=256), var=True,
        nullable=True)
    add("rle_utf8", "STRING_UTF8", fl("RLE", "ZSTD", chunk=256), var=True)
    add("gz_blob", "BLOB", fl(("GZIP", {"level": 1}), chunk=256), var=True)
    add("bz_vi16", "INT16", fl("BZIP2", "CHECKSUM_SHA256", chunk=256), var=True)
    add("n_f64x2", "FLOAT64", fl("BYTESHUFFLE", "ZSTD", chunk=256), cvn=2, nullable=True)
    s = {"type": "dense",
         "dims": [{"name": "i", "type": "INT64", "domain": [1, 2000], "extent": 300}],
         "attrs": A,
         "offsets_filters": fl("POSITIVE_DELTA", ("BIT_WIDTH_REDUCTION", {"bw_window": 32}),
                               "ZSTD", chunk=512),
         "validity_filters": fl("BIT_WIDTH_REDUCTION", "GZIP")}
    tdb.create(ctx, uri, s)
    def data(n, k):
        walk = 0
        out = {"dd_i8": [], "dd_u64": [], "dd_f64": [], "delta_u8": [], "delta_i64": [],
               "bwr_i16": [], "bwr_i64": [], "pd_i32": [], "sf8": [], "sf4": [], "sf2": [],
               "xor_f64": [], "xor_i8": [], "bs_u16": [], "rle_f32": [], "md5_sha": [],
               "dict_ascii": [], "dict_null": ([], []), "rle_utf8": [], "gz_blob": [],
               "bz_vi16": [], "n_f64x2": ([], [])}
        for i in range(n):
            walk += rng.randint(-3, 5)
            out["dd_i8"].append((i * 3) % 256 - 128)
            out["dd_u64"].append(10**15 + i * i * k)
            out["dd_f64"].append(i * 0.5 + k)
            out["delta_u8"].append((i * 7 + k) % 256)
            out["delta_i64"].append(walk * 1000 - 2**40)
            out["bwr_i16"].append(rng.randint(-40, 40) if i % 50 else -32768)
            out["bwr_i64"].append(rng.randint(0, 1000) * (-1) ** i)
            out["pd_i32"].append(i * 10 + k if i % 97 else 0)
            out["sf8"].append(round(rng.uniform(-50, 50), 3))
            out["sf4"].append(1.0 + 0.25 * rng.randint(0, 400))
            out["sf2"].append(float(rng.randint(-100, 300)))
            out["xor_f64"].append(rng.choice([1.0, 1.0000001, -0.0, 3.5e-310]))
            out["xor_i8"].append(rng.randint(-128, 127))
            out["bs_u16"].append(rng.randint(0, 65535) & 0x0F0F)
            out["rle_f32"].append(float(i // 40))
            out["md5_sha"].append(rng.randint(-2**31, 2**31 - 1))
            out["dict_ascii"].append(rng.choice(["north", "south", "", "east,west"]))
            out["dict_null"][0].append(rng.choice(["ä", "ö", "long text " * 3, ""]))
            out["dict_null"][1].append(i % 7 != 3)
            out["rle_utf8"].append("ü" * (i // 100 % 3))
            out["gz_blob"].append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 6))))
            out["bz_vi16"].append(b"".join(rng.randint(-5, 5).to_bytes(2, "little", signed=True)
                                           for _ in range(rng.randrange(0, 4))))
            out["n_f64x2"][0].extend([i / 3, -i / 7])
            out["n_f64x2"][1].append(i % 5 != 0)
        return out
    tdb.write(ctx, uri, s, t(1), data(2000, 1), subarray=[(1, 2000)])
    tdb.write(ctx, uri, s, t(2), data(451, 2), subarray=[(777, 1227)])
    return s


@recipe
def sparse_dim_types(ctx, uri, rng):
    """Sparse 4D: UINT8, INT16, UINT64 (near its top) and DATETIME_US
    dimensions, col-major tiles, row-major cells; overwrites."""
    s = {"type": "sparse", "tile_order": "col-major", "cell_order": "row-major",
         "capacity": 7,
         "dims": [{"name": "u8", "type": "UINT8", "domain": [0, 200], "extent": 50},
                  {"name": "i16", "type": "INT16", "domain": [-1000, 1000], "extent": 250},
                  {"name": "u64", "type": "UINT64", "domain": [2**64 - 10**6, 2**64 - 2],
                   "extent": 10**5},
                  {"name": "us", "type": "DATETIME_US", "domain": [-10**15, 10**15],
                   "extent": 10**14}],
         "attrs": [{"name": "a", "type": "INT32"}]}
    tdb.create(ctx, uri, s)
    hot = distinct_points(rng, 10, [(0, 3), (-2, 2), (2**64 - 10, 2**64 - 2), (-2, 2)])
    for k in range(1, 4):
        pts = list(dict.fromkeys(rng.sample(hot, 4) + distinct_points(
            rng, 20, [(0, 200), (-1000, 1000), (2**64 - 10**6, 2**64 - 2), (-10**15, 10**15)])))
        tdb.write(ctx, uri, s, t(k), {"u8": [p[0] for p in pts], "i16": [p[1] for p in pts],
                                      "u64": [p[2] for p in pts], "us": [p[3] for p in pts],
                                      "a": [k * 100 + i for i in range(len(pts))]})
    return s


@recipe
def dense_colmajor_consolidated_vacuumed(ctx, uri, rng):
    """Dense 2D col-major tiles and cells, UINT8 dims, var and nullable
    attributes, four writes: two consolidated and vacuumed, then one more."""
    s = {"type": "dense", "tile_order": "col-major", "cell_order": "col-major",
         "dims": [{"name": "r", "type": "UINT8", "domain": [10, 29], "extent": 6},
                  {"name": "c", "type": "UINT8", "domain": [0, 9], "extent": 4}],
         "attrs": [{"name": "v", "type": "UINT32", "fill": [7]},
                   {"name": "s", "type": "STRING_ASCII", "var": True, "nullable": True,
                    "fill": ["-"]}]}
    tdb.create(ctx, uri, s)
    boxes = [[(10, 20), (0, 5)], [(15, 29), (3, 9)], [(12, 13), (0, 9)], [(25, 27), (1, 2)]]
    for k, box in enumerate(boxes, start=1):
        n = (box[0][1] - box[0][0] + 1) * (box[1][1] - box[1][0] + 1)
        tdb.write(ctx, uri, s, t(k), {"v": [k * 1000 + i for i in range(n)],
                                      "s": (words(rng, n, "mn", 3),
                                            [i % 3 != 2 for i in range(n)])},
                  subarray=box, layout="col-major" if k % 2 else "row-major")
        if k == 3:
            tdb.consolidate(ctx, uri, {"sm.consolidation.timestamp_start": t(2),
                                       "sm.consolidation.timestamp_end": t(3)})
            tdb.vacuum(ctx, uri, {"sm.vacuum.mode": "fragments"})
    return s


@recipe
def delete_conditions(ctx, uri, rng):
    """Sparse 2D, four writes and five deletes whose conditions combine
    AND, OR and NOT, test set membership (IN, NOT IN) on a string and on an
    integer, a nullable attribute, a dimension and a float; one write
    between them. (A null test, `n == NULL`, TileDB 2.30 writes but then
    cannot read: "Value node condition value size mismatch: 1 != 0".)"""
    s = {"type": "sparse", "capacity": 8,
         "dims": [{"name": "r", "type": "INT32", "domain": [0, 99], "extent": 10},
                  {"name": "c", "type": "UINT16", "domain": [0, 99], "extent": 10}],
         "attrs": [{"name": "a", "type": "INT64"},
                   {"name": "f", "type": "FLOAT32"},
                   {"name": "s", "type": "STRING_ASCII", "var": True},
                   {"name": "n", "type": "UINT8", "nullable": True}]}
    tdb.create(ctx, uri, s)
    def write(k, n):
        pts = distinct_points(rng, n, [(0, 99), (0, 99)])
        tdb.write(ctx, uri, s, t(k), {
            "r": [p[0] for p in pts], "c": [p[1] for p in pts],
            "a": [rng.randint(-50, 150) for _ in pts],
            "f": [rng.choice([-1.5, 0.0, 2.25, 7.0]) for _ in pts],
            "s": [rng.choice(["red", "green", "blue", "", "red,blue"]) for _ in pts],
            "n": ([rng.randint(0, 9) for _ in pts], [rng.random() > 0.25 for _ in pts])})
    for k in range(1, 4):
        write(k, 60)
    C = tdb
    tdb.delete_where(ctx, uri, t(4), C.combine(
        ctx, C.cond(ctx, "a", "<", "INT64", 0), C.cond(ctx, "s", "==", "STRING_ASCII", "red"),
        "and"))
    tdb.delete_where(ctx, uri, t(5), C.combine(
        ctx, C.member(ctx, "s", "STRING_ASCII", ["green", ""]),
        C.cond(ctx, "a", ">", "INT64", 140), "or"))
    write(6, 40)
    tdb.delete_where(ctx, uri, t(7), C.negate(ctx, C.combine(
        ctx, C.cond(ctx, "r", ">=", "INT32", 10), C.cond(ctx, "f", "!=", "FLOAT32", 2.25),
        "or")))
    tdb.delete_where(ctx, uri, t(8), C.combine(
        ctx, C.cond(ctx, "n", "==", "UINT8", 5), C.cond(ctx, "c", "<", "UINT16", 50), "and"))
    tdb.delete_where(ctx, uri, t(9), C.combine(
        ctx, C.member(ctx, "n", "UINT8", [1, 2, 3], negate=True),
        C.cond(ctx, "a", "<=", "INT64", 20), "and"))
    return s


@recipe
def hilbert_many_tiles(ctx, uri, rng):
    """Sparse Hilbert, 3 fragments of 2000 cells in tiles of 300 (the last
    one short), INT64 dimensions over a wide domain, a var string attribute;
    the fragment metadata consolidated and its old files vacuumed; array
    metadata consolidated and vacuumed."""
    s = {"type": "sparse", "cell_order": "hilbert", "capacity": 300,
         "dims": [{"name": "x", "type": "INT64", "domain": [-10**9, 10**9], "extent": 10**7},
                  {"name": "y", "type": "INT64", "domain": [0, 4999], "extent": 100}],
         "attrs": [{"name": "v", "type": "FLOAT64", "filters": fl("BYTESHUFFLE", "ZSTD")},
                   {"name": "w", "type": "STRING_UTF8", "var": True, "filters": zstd(1)}]}
    tdb.create(ctx, uri, s)
    hot = distinct_points(rng, 500, [(-10**9, 10**9), (0, 4999)])
    for k in range(1, 4):
        pts = list(dict.fromkeys(rng.sample(hot, 400) + distinct_points(
            rng, 1600, [(-10**9, 10**9), (0, 4999)])))
        tdb.write(ctx, uri, s, t(k), {"x": [p[0] for p in pts], "y": [p[1] for p in pts],
                                      "v": [rng.uniform(-1, 1) for _ in pts],
                                      "w": words(rng, len(pts), "ab", 3)})
        tdb.put_metadata(ctx, uri, t(k) + 1, f"m{k}", "INT32", [k])
    tdb.consolidate(ctx, uri, {"sm.consolidation.mode": "fragment_meta"})
    tdb.vacuum(ctx, uri, {"sm.vacuum.mode": "fragment_meta"})
    tdb.consolidate(ctx, uri, {"sm.consolidation.mode": "array_meta"})
    tdb.vacuum(ctx, uri, {"sm.vacuum.mode": "array_meta"})
    return s


@recipe
def numeric_enumerations(ctx, uri, rng):
    """Sparse; attributes with enumerations of FLOAT64 values (ordered), of
    INT16 values, and of UTF-8 labels on a nullable UINT8; an index with no
    label in one cell."""
    s = {"type": "sparse", "capacity": 4,
         "dims": [{"name": "k", "type": "INT32", "domain": [0, 99], "extent": 10}],
         "enumerations": [
             {"name": "scale", "type": "FLOAT64", "values": [0.5, 1.0, 2.5, -0.0], "ordered": True},
             {"name": "codes", "type": "INT16", "values": [-7, 300, 12]},
             {"name": "names", "type": "STRING_UTF8", "var": True,
              "values": ["zéro", "one,two", "", "\"q\""]}],
         "attrs": [{"name": "s", "type": "UINT8", "enum": "scale"},
                   {"name": "c", "type": "INT32", "enum": "codes"},
                   {"name": "n", "type": "UINT8", "enum": "names", "nullable": True},
                   {"name": "v", "type": "FLOAT32"}]}
    tdb.create(ctx, uri, s)
    ks = rng.sample(range(100), 20)
    tdb.write(ctx, uri, s, t(1), {"k": ks, "s": [i % 4 for i in range(20)],
                                  "c": [i % 3 for i in range(20)],
                                  "n": ([i % 4 for i in range(20)],
                                        [i % 5 != 0 for i in range(20)]),
                                  "v": [i / 8 for i in range(20)]})
    tdb.write(ctx, uri, s, t(2), {"k": ks[:2], "s": [3, 9], "c": [2, 1],
                                  "n": ([1, 2], [True, True]), "v": [0.25, 1e30]})
    return s


@recipe
def dimension_labels(ctx, uri, rng):
    """Dense 1D with two dimension labels (increasing FLOAT64, decreasing
    INT64): TileDB keeps them as arrays of their own under __labels/; the
    array itself reads as any dense array."""
    s = {"type": "dense",
         "dims": [{"name": "x", "type": "UINT64", "domain": [0, 19], "extent": 5}],
         "attrs": [{"name": "a", "type": "INT32"}],
         "labels": [(0, "xf", "increasing", "FLOAT64"), (0, "xi", "decreasing", "INT64")]}
    tdb.create(ctx, uri, s)
    tdb.write(ctx, uri, s, t(1), {"a": [i * i for i in range(20)]}, subarray=[(0, 19)])
    return s


@recipe
def small_timestamps(ctx, uri, rng):
    """Sparse 2D, created at 1 ms since the epoch and written at 2, 5 and 2024
    ms (a view whose raw name, history/2024/, reads like a year), metadata at 7
    ms, an overwrite of cells of the first write: views named by a few digits."""
    s = {"type": "sparse", "capacity": 3, "created": 1,
         "dims": [{"name": "r", "type": "INT32", "domain": [0, 9], "extent": 5},
                  {"name": "c", "type": "INT32", "domain": [0, 9], "extent": 5}],
         "attrs": [{"name": "a", "type": "INT64"},
                   {"name": "s", "type": "STRING_ASCII", "var": True}]}
    tdb.create(ctx, uri, s)
    first = distinct_points(rng, 12, [(0, 9), (0, 9)])
    for ts, pts in ((2, first), (5, distinct_points(rng, 6, [(0, 9), (0, 9)])),
                    (2024, first[:4])):
        tdb.write(ctx, uri, s, ts, {"r": [p[0] for p in pts], "c": [p[1] for p in pts],
                                    "a": [ts * 100 + i for i in range(len(pts))],
                                    "s": words(rng, len(pts))})
    tdb.put_metadata(ctx, uri, 7, "written_at", "INT64", [2, 5, 2024])
    return s


README = """# Oracle corpus

Arrays written by TileDB 2.30.1 itself, of kinds the public corpus (`../corpus`) lacks, each
with TileDB's own read of every view, in the same layout (`arrays/<name>/`,
`expected/<name>/`, see `../corpus/README.md`; the key of an encrypted array in
`arrays/<name>.key`). The conformance tests run on it as on the public corpus.

Made with the workshop oracle (`../shared/oracle`, never needed by the build or the tests):

    tests/oracle/make_oracle_corpus.py ../shared/oracle tests/data/oracle_corpus

`make_oracle_corpus.py` writes each array through TileDB's C API (ctypes,
`tests/oracle/tiledb_capi.py`), with schemas created at 1700000000000 and writes at
1700000000000 + N*1000 (tN below) unless its text names other instants, then dumps it with
the oracle's `refdump`, and writes
this file from the recipes' descriptions. The cells come from a seeded generator (the same
on every run; the fragments' UUIDs differ).

Left out on purpose: overlapping fragments written at the same instant. TileDB's row-major
read of them keeps, for each coordinate, whichever version its unstable sort puts first,
which varies from cell to cell (tried: `x = 4` took the third fragment's value, `x = 12`
the first's). Likewise -0.0 and 0.0 at one coordinate of a float dimension in two
fragments: TileDB keeps both cells (it drops a duplicate only when the coordinate bytes
are the same, and so does tiledbfs since session 31), but in whichever order its unstable
sort leaves them, which changed between two views of one array (tried: a recipe with four
such pairs).
"""


def write_readme(path):
    text = README
    for name, fn in RECIPES.items():
        text += f"\n## {name}\n\n{' '.join(fn.__doc__.split())}\n"
    with open(path, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: make_oracle_corpus.py ORACLE_DIR OUT [NAME ...]")
    oracle, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    names = sys.argv[3:] or list(RECIPES)
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        sys.exit(f"unknown recipe(s): {' '.join(unknown)}; known: {' '.join(RECIPES)}")
    tdb.load_oracle(oracle)
    refdump = os.path.join(oracle, "bin", "refdump")
    ctx = tdb.Ctx()
    failed = 0
    for name in names:
        uri = os.path.join(out, "arrays", name)
        exp = os.path.join(out, "expected", name)
        shutil.rmtree(uri, ignore_errors=True)
        shutil.rmtree(exp, ignore_errors=True)
        os.makedirs(os.path.dirname(uri), exist_ok=True)
        os.makedirs(os.path.dirname(exp), exist_ok=True)
        try:
            RECIPES[name](ctx, uri, random.Random(name))
        except RuntimeError as e:
            print(f"FAIL {name}: TileDB refused: {e}")
            failed += 1
            continue
        cmd = [refdump, uri, exp]
        key = KEYS.get(name)
        if key is not None:
            cmd += ["--key", key.hex()]
            with open(uri + ".key", "w") as f:
                f.write(key.hex() + "\n")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: refdump exit {r.returncode}: {r.stderr.strip()[:500]}")
            failed += 1
        else:
            print(f"{name}: written and dumped")
    if not failed and names == list(RECIPES):
        write_readme(os.path.join(out, "README.md"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
