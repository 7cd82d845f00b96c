"""Oracle corpus recipes (make_oracle_corpus.py), the last thirteen: schema
evolution, deletes that shadow and combine conditions, encryption, the
filter matrix, dimension types, many tiles, enumerations, dimension labels
and instants near the epoch.
"""
import tiledb_capi as tdb
from recipe_kit import KEYS, distinct_points, fl, recipe, t, words, zstd


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
