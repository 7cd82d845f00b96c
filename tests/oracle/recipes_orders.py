"""Oracle corpus recipes (make_oracle_corpus.py), the first thirteen: cell
and tile orders (Hilbert, row- and col-major), filters on dimensions, and
what consolidation, vacuum and deletes leave of them.
"""
import tiledb_capi as tdb
from recipe_kit import T0, distinct_points, recipe, t, words, zstd


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
