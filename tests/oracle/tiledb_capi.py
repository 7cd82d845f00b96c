"""A thin ctypes binding of TileDB's C API (the workshop oracle's
libtiledb.so.2.30), enough for make_oracle_corpus.py to write arrays with
TileDB itself: schemas, writes, deletes, schema evolution, metadata,
consolidation and vacuum. Workshop only: nothing in the project loads it."""
import ctypes as C
import os
import shutil
import struct
import subprocess
import sys
import tempfile

LIB = None

DT = {"INT32": 0, "INT64": 1, "FLOAT32": 2, "FLOAT64": 3, "CHAR": 4, "INT8": 5, "UINT8": 6,
      "INT16": 7, "UINT16": 8, "UINT32": 9, "UINT64": 10, "STRING_ASCII": 11,
      "STRING_UTF8": 12, "DATETIME_DAY": 21, "DATETIME_MS": 25, "DATETIME_US": 26,
      "DATETIME_NS": 27,
      "TIME_US": 35, "BLOB": 40, "BOOL": 41}
FMT = {"INT32": "i", "INT64": "q", "FLOAT32": "f", "FLOAT64": "d", "CHAR": "c", "INT8": "b",
       "UINT8": "B", "INT16": "h", "UINT16": "H", "UINT32": "I", "UINT64": "Q",
       "DATETIME_DAY": "q", "DATETIME_MS": "q", "DATETIME_US": "q", "DATETIME_NS": "q",
       "TIME_US": "q",
       "BOOL": "B"}
FILTER = {"NONE": 0, "GZIP": 1, "ZSTD": 2, "LZ4": 3, "RLE": 4, "BZIP2": 5, "DOUBLE_DELTA": 6,
          "BIT_WIDTH_REDUCTION": 7, "BITSHUFFLE": 8, "BYTESHUFFLE": 9, "POSITIVE_DELTA": 10,
          "CHECKSUM_MD5": 12, "CHECKSUM_SHA256": 13, "DICTIONARY": 14, "SCALE_FLOAT": 15,
          "XOR": 16, "DELTA": 19}
OPT = {"level": 0, "bw_window": 1, "pd_window": 2, "sf_bytewidth": 3, "sf_factor": 4,
       "sf_offset": 5, "reinterpret": 9}
LAYOUT = {"row-major": 0, "col-major": 1, "global": 2, "unordered": 3, "hilbert": 4}
OP = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5}
VAR = 0xFFFFFFFF
READ, WRITE, DELETE = 0, 1, 2


def load_oracle(oracle):
    """Loads ORACLE/lib/libtiledb.so.2.30. It finds its libblosc2 through the
    loader's path, which is read once at start, and the oracle's lib/ may
    hold a symlink copied as a text file naming its target (scripts/lib.sh
    tiledbfs_oracle_libs): so the first call makes a folder of real links
    and runs the script again with LD_LIBRARY_PATH set to it (removed at
    exit)."""
    global LIB
    libdir = os.environ.get("TILEDBFS_ORACLE_LIBDIR")
    if libdir is None:
        libdir = tempfile.mkdtemp(prefix="oracle-lib.")
        for n in os.listdir(os.path.join(oracle, "lib")):
            src = os.path.join(oracle, "lib", n)
            if os.path.getsize(src) < 256:
                with open(src) as f:
                    src = os.path.join(oracle, "lib", f.read().strip())
            os.symlink(src, os.path.join(libdir, n))
        env = dict(os.environ, LD_LIBRARY_PATH=libdir, TILEDBFS_ORACLE_LIBDIR=libdir)
        rc = subprocess.run([sys.executable] + sys.argv, env=env).returncode
        shutil.rmtree(libdir, ignore_errors=True)
        sys.exit(rc)
    LIB = C.CDLL(os.path.join(libdir, "libtiledb.so.2.30"))
    return LIB


class Ctx:
    def __init__(self, config=None):
        self.p = C.c_void_p()
        cfg = self.config(config or {})
        self.check(LIB.tiledb_ctx_alloc(cfg, C.byref(self.p)), "ctx_alloc")

    @staticmethod
    def config(params):
        cfg, err = C.c_void_p(), C.c_void_p()
        if LIB.tiledb_config_alloc(C.byref(cfg), C.byref(err)) != 0:
            raise RuntimeError("config_alloc")
        for k, v in params.items():
            if LIB.tiledb_config_set(cfg, k.encode(), str(v).encode(), C.byref(err)) != 0:
                raise RuntimeError(f"config_set {k}")
        return cfg

    def check(self, rc, what):
        if rc == 0:
            return
        msg = "?"
        if getattr(self, "p", None) and self.p.value:
            err, text = C.c_void_p(), C.c_char_p()
            LIB.tiledb_ctx_get_last_error(self.p, C.byref(err))
            if err.value:
                LIB.tiledb_error_message(err, C.byref(text))
                msg = text.value.decode()
        raise RuntimeError(f"{what}: {msg}")

    def call(self, name, *args):
        self.check(getattr(LIB, name)(self.p, *args), name)


def pack(t, values):
    if t in ("STRING_ASCII", "STRING_UTF8", "CHAR", "BLOB") or (
            values and isinstance(values[0], bytes)):
        return b"".join(v if isinstance(v, bytes) else v.encode() for v in values)
    return struct.pack("<%d%s" % (len(values), FMT[t]), *values)


def var_offsets(values):
    """The start of each var-sized value (str or bytes) in pack(values)."""
    offs, at = [], 0
    for v in values:
        offs.append(at)
        at += len(v if isinstance(v, bytes) else v.encode())
    return offs


def filter_list(ctx, spec):
    """spec: {"chunk": N, "filters": [("ZSTD", {"level": 3}), ...]}"""
    fl = C.c_void_p()
    ctx.call("tiledb_filter_list_alloc", C.byref(fl))
    for name, opts in spec.get("filters", []):
        f = C.c_void_p()
        ctx.call("tiledb_filter_alloc", FILTER[name], C.byref(f))
        for k, v in (opts or {}).items():
            if k in ("level",):
                val = C.c_int32(v)
            elif k in ("bw_window", "pd_window"):
                val = C.c_uint32(v)
            elif k in ("sf_bytewidth",):
                val = C.c_uint64(v)
            elif k in ("sf_factor", "sf_offset"):
                val = C.c_double(v)
            elif k == "reinterpret":
                val = C.c_uint8(DT[v])
            else:
                raise ValueError(k)
            ctx.call("tiledb_filter_set_option", f, OPT[k], C.byref(val))
        ctx.call("tiledb_filter_list_add_filter", fl, f)
    if "chunk" in spec:
        ctx.call("tiledb_filter_list_set_max_chunk_size", fl, C.c_uint32(spec["chunk"]))
    return fl


def enumeration(ctx, e):
    """e: {"name", "type", "values", "ordered": bool, "var": bool}"""
    en = C.c_void_p()
    data = pack(e["type"], e["values"])
    db = C.create_string_buffer(data, max(len(data), 1))
    if e.get("var"):
        offs = var_offsets(e["values"])
        ob = (C.c_uint64 * len(offs))(*offs)
        ctx.call("tiledb_enumeration_alloc", e["name"].encode(), DT[e["type"]], C.c_uint32(VAR),
                 C.c_int(e.get("ordered", False)), db, C.c_uint64(len(data)), ob,
                 C.c_uint64(8 * len(offs)), C.byref(en))
    else:
        ctx.call("tiledb_enumeration_alloc", e["name"].encode(), DT[e["type"]],
                 C.c_uint32(e.get("cvn", 1)), C.c_int(e.get("ordered", False)), db,
                 C.c_uint64(len(data)), None, C.c_uint64(0), C.byref(en))
    return en


def attribute(ctx, a):
    at = C.c_void_p()
    ctx.call("tiledb_attribute_alloc", a["name"].encode(), DT[a["type"]], C.byref(at))
    if a.get("var"):
        ctx.call("tiledb_attribute_set_cell_val_num", at, C.c_uint32(VAR))
    elif a.get("cvn", 1) != 1:
        ctx.call("tiledb_attribute_set_cell_val_num", at, C.c_uint32(a["cvn"]))
    if a.get("nullable"):
        ctx.call("tiledb_attribute_set_nullable", at, C.c_uint8(1))
    if "filters" in a:
        ctx.call("tiledb_attribute_set_filter_list", at, filter_list(ctx, a["filters"]))
    if "enum" in a:
        ctx.call("tiledb_attribute_set_enumeration_name", at, a["enum"].encode())
    if "fill" in a:
        b = pack(a["type"], a["fill"])
        if a.get("nullable"):
            ctx.call("tiledb_attribute_set_fill_value_nullable", at,
                     C.create_string_buffer(b, len(b)), C.c_uint64(len(b)), C.c_uint8(1))
        else:
            ctx.call("tiledb_attribute_set_fill_value", at,
                     C.create_string_buffer(b, len(b)), C.c_uint64(len(b)))
    return at


def create(ctx, uri, s):
    """s: {"type": "dense"|"sparse", "dims": [...], "attrs": [...], ...}"""
    dom = C.c_void_p()
    ctx.call("tiledb_domain_alloc", C.byref(dom))
    for d in s["dims"]:
        dim = C.c_void_p()
        t = d["type"]
        if t in ("STRING_ASCII",):
            ctx.call("tiledb_dimension_alloc", d["name"].encode(), DT[t], None, None,
                     C.byref(dim))
        else:
            lohi = C.create_string_buffer(pack(t, d["domain"]))
            ext = C.create_string_buffer(pack(t, [d["extent"]])) if "extent" in d else None
            ctx.call("tiledb_dimension_alloc", d["name"].encode(), DT[t], lohi, ext,
                     C.byref(dim))
        if "filters" in d:
            ctx.call("tiledb_dimension_set_filter_list", dim, filter_list(ctx, d["filters"]))
        ctx.call("tiledb_domain_add_dimension", dom, dim)
    sch = C.c_void_p()
    ctx.call("tiledb_array_schema_alloc_at_timestamp", 0 if s["type"] == "dense" else 1,
             C.c_uint64(s.get("created", 1700000000000)), C.byref(sch))
    ctx.call("tiledb_array_schema_set_domain", sch, dom)
    for e in s.get("enumerations", []):
        ctx.call("tiledb_array_schema_add_enumeration", sch, enumeration(ctx, e))
    for a in s["attrs"]:
        at = attribute(ctx, a)
        ctx.call("tiledb_array_schema_add_attribute", sch, at)
    ctx.call("tiledb_array_schema_set_tile_order", sch, LAYOUT[s.get("tile_order", "row-major")])
    ctx.call("tiledb_array_schema_set_cell_order", sch, LAYOUT[s.get("cell_order", "row-major")])
    if "capacity" in s:
        ctx.call("tiledb_array_schema_set_capacity", sch, C.c_uint64(s["capacity"]))
    if s.get("dups"):
        ctx.call("tiledb_array_schema_set_allows_dups", sch, C.c_int(1))
    for key, fn in (("coords_filters", "tiledb_array_schema_set_coords_filter_list"),
                    ("offsets_filters", "tiledb_array_schema_set_offsets_filter_list"),
                    ("validity_filters", "tiledb_array_schema_set_validity_filter_list")):
        if key in s:
            ctx.call(fn, sch, filter_list(ctx, s[key]))
    for dim_index, name, order, t in s.get("labels", []):
        ctx.call("tiledb_array_schema_add_dimension_label", sch, C.c_uint32(dim_index),
                 name.encode(), {"increasing": 1, "decreasing": 2}[order], DT[t])
    ctx.call("tiledb_array_schema_check", sch)
    ctx.call("tiledb_array_create", uri.encode(), sch)


class Array:
    def __init__(self, ctx, uri, qtype, ts):
        self.ctx = ctx
        self.p = C.c_void_p()
        ctx.call("tiledb_array_alloc", uri.encode(), C.byref(self.p))
        if ts is not None:
            ctx.call("tiledb_array_set_open_timestamp_end", self.p, C.c_uint64(ts))
        ctx.call("tiledb_array_open", self.p, qtype)

    def close(self):
        self.ctx.call("tiledb_array_close", self.p)


def write(ctx, uri, schema, ts, fields, subarray=None, layout=None):
    """fields: name -> values (list; var fields: list of bytes/str; nullable:
    (values, validity))."""
    arr = Array(ctx, uri, WRITE, ts)
    q = C.c_void_p()
    ctx.call("tiledb_query_alloc", arr.p, WRITE, C.byref(q))
    if layout is None:
        layout = "row-major" if schema["type"] == "dense" else "unordered"
    ctx.call("tiledb_query_set_layout", q, LAYOUT[layout])
    keep = []
    if subarray is not None:
        sub = C.c_void_p()
        ctx.call("tiledb_subarray_alloc", arr.p, C.byref(sub))
        for i, (lo, hi) in enumerate(subarray):
            t = schema["dims"][i]["type"]
            a, b = C.create_string_buffer(pack(t, [lo])), C.create_string_buffer(pack(t, [hi]))
            keep += [a, b]
            ctx.call("tiledb_subarray_add_range", sub, C.c_uint32(i), a, b, None)
        ctx.call("tiledb_query_set_subarray_t", q, sub)
    types = {f["name"]: f for f in schema["dims"] + schema["attrs"]}
    for name, vals in fields.items():
        f = types[name]
        validity = None
        if f.get("nullable"):
            vals, validity = vals
        var = f.get("var") or f["type"] == "STRING_ASCII" and f in schema["dims"]
        if var:
            offs = var_offsets(vals)
            data = pack(f["type"], vals)
            ob = (C.c_uint64 * max(len(offs), 1))(*offs)
            osz = C.c_uint64(8 * len(offs))
            keep += [ob, osz]
            ctx.call("tiledb_query_set_offsets_buffer", q, name.encode(), ob, C.byref(osz))
        else:
            data = pack(f["type"], vals)
        db = C.create_string_buffer(data, max(len(data), 1))
        dsz = C.c_uint64(len(data))
        keep += [db, dsz]
        ctx.call("tiledb_query_set_data_buffer", q, name.encode(), db, C.byref(dsz))
        if validity is not None:
            vb = (C.c_uint8 * len(validity))(*validity)
            vsz = C.c_uint64(len(validity))
            keep += [vb, vsz]
            ctx.call("tiledb_query_set_validity_buffer", q, name.encode(), vb, C.byref(vsz))
    ctx.call("tiledb_query_submit", q)
    ctx.call("tiledb_query_finalize", q)
    arr.close()


def cond(ctx, attr, op, t=None, value=None):
    """attr OP value; value None: a null test (op "==" or "!=")."""
    c = C.c_void_p()
    ctx.call("tiledb_query_condition_alloc", C.byref(c))
    if value is None:
        ctx.call("tiledb_query_condition_init", c, attr.encode(), None, C.c_uint64(0), OP[op])
        return c
    b = pack(t, [value])
    vb = C.create_string_buffer(b, max(len(b), 1))
    ctx.call("tiledb_query_condition_init", c, attr.encode(), vb, C.c_uint64(len(b)), OP[op])
    return c


def member(ctx, attr, t, values, negate=False):
    """attr IN values (NOT IN with negate)."""
    c = C.c_void_p()
    data = pack(t, values)
    if t in ("STRING_ASCII", "STRING_UTF8"):
        offs = var_offsets(values)
    else:
        size = struct.calcsize(FMT[t])
        offs = [i * size for i in range(len(values))]
    ob = (C.c_uint64 * len(offs))(*offs)
    db = C.create_string_buffer(data, max(len(data), 1))
    ctx.call("tiledb_query_condition_alloc_set_membership", attr.encode(), db,
             C.c_uint64(len(data)), ob, C.c_uint64(8 * len(offs)), 7 if negate else 6,
             C.byref(c))
    return c


def combine(ctx, left, right, how):
    c = C.c_void_p()
    ctx.call("tiledb_query_condition_combine", left, right, {"and": 0, "or": 1}[how],
             C.byref(c))
    return c


def negate(ctx, inner):
    c = C.c_void_p()
    ctx.call("tiledb_query_condition_negate", inner, C.byref(c))
    return c


def delete_where(ctx, uri, ts, condition):
    arr = Array(ctx, uri, DELETE, ts)
    q = C.c_void_p()
    ctx.call("tiledb_query_alloc", arr.p, DELETE, C.byref(q))
    ctx.call("tiledb_query_set_condition", q, condition)
    ctx.call("tiledb_query_submit", q)
    arr.close()


def delete(ctx, uri, ts, attr, op, t, value):
    delete_where(ctx, uri, ts, cond(ctx, attr, op, t, value))


def put_metadata(ctx, uri, ts, key, t, values):
    arr = Array(ctx, uri, WRITE, ts)
    b = pack(t, values)
    n = len(b) if t in ("STRING_ASCII", "STRING_UTF8", "CHAR", "BLOB") else len(values)
    ctx.call("tiledb_array_put_metadata", arr.p, key.encode(), DT[t], C.c_uint32(n),
             C.create_string_buffer(b, max(len(b), 1)))
    arr.close()


def consolidate(ctx, uri, params):
    ctx.call("tiledb_array_consolidate", uri.encode(), Ctx.config(params))


def vacuum(ctx, uri, params):
    ctx.call("tiledb_array_vacuum", uri.encode(), Ctx.config(params))


def evolve(ctx, uri, ts, add=(), drop=()):
    ev = C.c_void_p()
    ctx.call("tiledb_array_schema_evolution_alloc", C.byref(ev))
    for a in add:
        ctx.call("tiledb_array_schema_evolution_add_attribute", ev, attribute(ctx, a))
    for name in drop:
        ctx.call("tiledb_array_schema_evolution_drop_attribute", ev, name.encode())
    ctx.call("tiledb_array_schema_evolution_set_timestamp_range", ev, C.c_uint64(ts),
             C.c_uint64(ts))
    ctx.call("tiledb_array_evolve", uri.encode(), ev)
