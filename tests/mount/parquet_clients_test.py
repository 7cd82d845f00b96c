#!/usr/bin/env python3
"""DuckDB and hyparquet, two independent Parquet readers, read every
data.parquet of every array and group of the fixture corpora through a
mount, and every value is checked against the view's own field files
(docs/namespace.md, Parquet).

  parquet_clients_test.py BIN_DIR CORPUS...

For every array and group of each CORPUS/arrays (with its key where there
is one), mounted with BIN_DIR/tiledbfs, every view below the mount (a folder
with data.csv: the root, history/<T>/, fragments/<name>/, group members)
and one slice of each array (slice/<first dim>=<lo>..<hi>, part of the
root's values of its first dimension):
  - data.parquet is there, and DuckDB's read_parquet (@duckdb/node-api) and
    hyparquet (pure JavaScript) read it (tests/node/read_parquet.mjs, one
    Node.js process for the whole test)
  - each reader: as many rows as the view has cells (at the root and in
    history/ also TileDB's count); data.csv's header as the column names
  - each reader, field by field: the values equal the field's cells
    (dimensions/<d>.bin|.offsets, attributes/<a>.bin|.offsets|.validity,
    decoded by the field's type in the folder's schema.json or, where there
    is none (fragments/), the file's "tiledb.schema"); strings without
    their trailing NULs, an attribute's NaT as null; an attribute with an
    enumeration: its labels (attributes/<a>.txt, or the schema's numbers),
    or its indices where one has no label; one check per field and reader,
    naming the first row that differs
  - DuckDB's type of each column (e.g. UTINYINT for UINT8, TIMESTAMP WITH
    TIME ZONE for DATETIME_MS, VARCHAR / BLOB for strings, SMALLINT[] for
    INT16 x3)
  - the footer, through hyparquet: each column's physical and logical (and
    converted) type, REQUIRED or OPTIONAL (nullable, or NaT), the 3-level LIST,
    "tiledb.datatype" on the INT64 of other DATETIME/TIME units, an
    enumeration's dictionary; the key-value metadata "tiledb.view" (JSON)
    and "tiledb.schema" (= schema.json), the same through DuckDB; row
    groups adding up to the cells; the first dimension's min/max statistics
    (a sparse view's where the layout pass ran: none of fixed-size numbers)
Values are compared losslessly: integers in full, floats by their bits,
strings and blobs by their bytes, times as integers of the reader's unit.
Exits 77 without /dev/fuse.
"""
import csv
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "slices"))
import mountlib as ml  # noqa: E402
import slice_conformance as sc  # noqa: E402  (also puts tests/conformance on the path)
import conformance as conf  # noqa: E402
from corpus_mount_test import Corpus, Mounted, view_json, view_of  # noqa: E402
from csv_clients_test import cells_of, np  # noqa: E402

# TileDB integer types: (bits, signed, struct format, DuckDB's type).
INTS = {"INT8": (8, True, "b", "TINYINT"), "UINT8": (8, False, "B", "UTINYINT"),
        "INT16": (16, True, "h", "SMALLINT"), "UINT16": (16, False, "H", "USMALLINT"),
        "INT32": (32, True, "i", "INTEGER"), "UINT32": (32, False, "I", "UINTEGER"),
        "INT64": (64, True, "q", "BIGINT"), "UINT64": (64, False, "Q", "UBIGINT")}
FLOATS = {"FLOAT32": (4, "I", "FLOAT", "FLOAT"), "FLOAT64": (8, "Q", "DOUBLE", "DOUBLE")}
# DATETIME/TIME units with a Parquet logical type: (TIMESTAMP or TIME, unit,
# DuckDB's type). Every other DATETIME_* / TIME_* unit is a plain INT64.
TIME_TYPES = {"DATETIME_MS": ("TIMESTAMP", "MILLIS", "TIMESTAMP WITH TIME ZONE"),
              "DATETIME_US": ("TIMESTAMP", "MICROS", "TIMESTAMP WITH TIME ZONE"),
              "DATETIME_NS": ("TIMESTAMP", "NANOS", "TIMESTAMP_NS"),
              "TIME_US": ("TIME", "MICROS", "TIME"), "TIME_NS": ("TIME", "NANOS", "TIME_NS")}
NS_PER_UNIT = {"MILLIS": 10**6, "MICROS": 10**3, "NANOS": 1}
# Nanoseconds per unit of a value of each DuckDB time type.
DUCK_NS = {"TIMESTAMP WITH TIME ZONE": 1000, "TIMESTAMP": 1000, "TIMESTAMP_MS": 10**6,
           "TIMESTAMP_S": 10**9, "TIMESTAMP_NS": 1, "TIME": 1000, "TIME_NS": 1,
           "TIME WITH TIME ZONE": 1000}
TEXT_TYPES = ("CHAR", "STRING_ASCII", "STRING_UTF8")
ELEMENT_SIZE = {"STRING_UTF16": 2, "STRING_UCS2": 2, "STRING_UTF32": 4, "STRING_UCS4": 4}
DICTIONARY = ("PLAIN_DICTIONARY", "RLE_DICTIONARY")
READERS = (("duckdb", "DuckDB"), ("hyparquet", "hyparquet"))


def is_time(t):
    return t.startswith(("DATETIME_", "TIME_"))


def is_bytes(t):
    """A type whose whole cell is one BYTE_ARRAY value (strings, blobs)."""
    return (t in TEXT_TYPES or t.startswith(("STRING_", "GEOM_")) or t in ("BLOB", "ANY")
            or not (t in INTS or t in FLOATS or t == "BOOL" or is_time(t)))


NAT = struct.pack("<q", -2**63)


def strip_nuls(b, unit):
    n = len(b) - len(b) % unit
    while n >= unit and not any(b[n - unit:n]):
        n -= unit
    return b[:n]


def element_size(t):
    if t in INTS:
        return INTS[t][0] // 8
    if t in FLOATS:
        return FLOATS[t][0]
    if is_time(t):
        return 8
    return ELEMENT_SIZE.get(t, 1)


def utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def hyparquet_installed():
    return os.path.isdir(os.path.join(ml.NODE_DIR, "node_modules", "hyparquet"))


class Field:
    """One dimension or attribute of a view's schema.json, and how
    data.parquet shows it."""

    def __init__(self, kind, j):
        self.kind, self.name, self.type = kind, j["name"], j["type"]
        self.cvn = j.get("cell_val_num", 1)
        self.var = bool(j.get("var")) or self.cvn == conf.VAR_NUM
        self.nullable = bool(j.get("nullable"))
        self.enum = j.get("enumeration") if kind == "attributes" else None
        self.bytes = self.enum is None and is_bytes(self.type)
        # Numbers of var-sized or k > 1 cells: a LIST of the element.
        self.list = not self.enum and not self.bytes and (self.var or self.cvn != 1)
        self.width = 0 if self.var else element_size(self.type) * self.cvn
        # An attribute's NaT (INT64's minimum) in a TIMESTAMP or TIME column
        # is a null: DuckDB fails the whole read on it, pandas reads NaT.
        self.nat = kind == "attributes" and self.type in TIME_TYPES and not self.list
        self.optional = self.nullable or self.nat

    def path(self, view, ext):
        return os.path.join(view, self.kind, conf.esc(self.name) + ext)

    def cells(self, view, n):
        """Per cell: None (null), or its bytes; ValueError if the files do
        not hold n cells."""
        def read(ext):
            with open(self.path(view, ext), "rb") as f:
                return f.read()
        offs = read(".offsets") if self.var else None
        valid = read(".validity") if self.nullable else None
        cells = conf.split_cells(read(".bin"), offs, valid, n, self.width)
        if valid is not None:
            cells = [c if v else None for v, c in cells]
        if self.nat:
            cells = [None if c == NAT else c for c in cells]
        if self.type.startswith(("CHAR", "STRING_")):
            # Strings lose their trailing NUL characters, as data.csv writes them.
            unit = element_size(self.type)
            cells = [None if c is None else strip_nuls(c, unit) for c in cells]
        return cells

    def elements(self, b):
        """A numeric cell's values: ints (also times), float bits, bools."""
        size = element_size(self.type)
        if len(b) % size:
            raise ValueError(f"a cell of {len(b)} bytes is no whole number of {self.type}")
        k = len(b) // size
        if self.type in INTS:
            return list(struct.unpack(f"<{k}{INTS[self.type][2]}", b))
        if self.type in FLOATS:
            digits = FLOATS[self.type][0] * 2
            return [f"{v:0{digits}x}" for v in struct.unpack(f"<{k}{FLOATS[self.type][1]}", b)]
        if self.type == "BOOL":
            return [x != 0 for x in b]
        return list(struct.unpack(f"<{k}q", b))  # DATETIME_* / TIME_*: int64

    def resolve_enum(self, enums, cells):
        """An enumeration's column: its labels, dictionary-encoded, where
        every index has one and the labels are strings or one number each;
        else the indices (data.csv shows one with no label as the integer)."""
        if not self.enum:
            return
        e = next((x for x in enums if x["name"] == self.enum), None)
        keys = [None if c is None else self.elements(c)[0] for c in cells]
        labelled = e is not None and all(
            k is None or 0 <= k < len(e["values"]) for k in keys)
        typed = e is not None and (is_bytes(e["type"]) or (
            e.get("cell_val_num", 1) == 1 and e["type"] != "BOOL"))
        if not (labelled and typed and self.type in INTS and self.cvn == 1):
            self.enum = None
            return
        self.label_type = e["type"]
        self.label_values = e["values"]
        self.keys = keys

    def label_expected(self, cells):
        """A numeric enumeration's values: its labels, typed."""
        t = self.label_type
        out = []
        for k in self.keys:
            if k is None:
                out.append(None)
            elif t in FLOATS:
                v = float(self.label_values[k])  # schema.json: a number, or "nan"/"inf"
                fmt = "<f" if t == "FLOAT32" else "<d"
                bits = int.from_bytes(struct.pack(fmt, v), "little")
                out.append(f"{bits:0{FLOATS[t][0] * 2}x}")
            else:
                out.append(str(int(self.label_values[k])))
        return out

    def all_utf8(self, cells):
        return all(c is None or utf8(c) for c in cells)

    def duck_type(self, cells):
        """DuckDB's type of the column, as the contract maps it."""
        if self.enum and not is_bytes(self.label_type):
            t = self.label_type
            return (INTS.get(t) or FLOATS.get(t) or TIME_TYPES.get(t))[3 if t in INTS else 2]
        if self.enum:
            return "VARCHAR"
        if self.bytes:
            return "VARCHAR" if self.type in TEXT_TYPES and self.all_utf8(cells) else "BLOB"
        if self.type in INTS:
            t = INTS[self.type][3]
        elif self.type in FLOATS:
            t = FLOATS[self.type][3]
        elif self.type == "BOOL":
            t = "BOOLEAN"
        elif self.type in TIME_TYPES:
            t = TIME_TYPES[self.type][2]
        else:
            t = "BIGINT"  # other DATETIME/TIME units: the raw integer
        return t + "[]" if self.list else t

    def expected(self, cells, labels, ns_of):
        """The column's values in read_parquet.mjs's form. Times: `ns_of`
        is the nanoseconds per unit of the reader's values (None: the raw
        integer); a value that is no whole number of them stays a note
        that no reader's value equals."""
        if self.enum and not is_bytes(self.label_type):
            return self.label_expected(cells)
        if self.enum:
            return [None if c is None else lab.encode("utf-8").hex()
                    for c, lab in zip(cells, labels)]
        if self.bytes:
            return [None if c is None else c.hex() for c in cells]
        tns = NS_PER_UNIT.get(TIME_TYPES.get(self.type, ("", ""))[1])

        def value(v):
            if isinstance(v, bool) or isinstance(v, str):
                return v
            if is_time(self.type) and tns and ns_of and ns_of != tns:
                q, r = divmod(v * tns, ns_of)
                return f"{v} ({self.type}) is no whole number of {ns_of} ns" if r else str(q)
            return str(v)

        out = []
        for c in cells:
            if c is None:
                out.append(None)
                continue
            vals = [value(v) for v in self.elements(c)]
            out.append(vals if self.list else vals[0])
        return out


def labels_of(field, view, n):
    """The enumeration labels of each cell, from attributes/<a>.txt (CSV
    field rules, a record a cell; a null is an empty line, read as '')."""
    with open(field.path(view, ".txt"), encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) != n:
        raise ValueError(f"{len(rows)} lines for {n} cells")
    return [r[0] if r else "" for r in rows]


def first_diff(got, want):
    """Where two value lists first differ, as text."""
    i = conf.first_difference(want, got)
    if i >= len(want) or i >= len(got):
        return f"{len(got)} rows, want {len(want)}"
    return f"row {i}: got {ml.short(got[i], 120)}, want {ml.short(want[i], 120)}"


def header_of(view):
    with open(os.path.join(view, "data.csv"), encoding="utf-8", newline="") as f:
        return next(csv.reader(f), [])


def as_number(text, field):
    """A statistic or value of the first dimension, to compare by order."""
    if field.bytes:
        return bytes.fromhex(text)
    if field.type in FLOATS:
        bits = int(text, 16).to_bytes(FLOATS[field.type][0], "big")
        return struct.unpack(">f" if len(bits) == 4 else ">d", bits)[0]
    return int(text)


def check_footer(c, what, f, hc, rgs, j, cells):
    """hyparquet's view of column j's schema and chunks against the
    contract."""
    levels = hc["levels"]
    want_rep = "OPTIONAL" if f.optional else "REQUIRED"
    c.eq(hc["repetition"], want_rep, f"{what}: footer: repetition")
    leaf = hc["leaf"]
    lg = leaf["logical"] or {}
    if f.list:
        c.eq([(x["name"], x["repetition"]) for x in levels],
             [(f.name, want_rep), ("list", "REPEATED"), ("element", "REQUIRED")],
             f"{what}: footer: a 3-level LIST")
        # Without converted_type LIST, DuckDB 1.5 reads a STRUCT and
        # hyparquet objects (LogicalType LIST alone is not taken).
        c.ok((hc["logical"] or {}).get("type") == "LIST" and hc["converted"] == "LIST",
             f"{what}: footer: LIST logical and converted type", str(levels[0]))
    elif not c.eq(len(levels), 1, f"{what}: footer: a flat column"):
        return
    if f.enum and not is_bytes(f.label_type):
        t = f.label_type
        physical = ("INT64" if INTS[t][0] == 64 else "INT32") if t in INTS else (
            FLOATS[t][2] if t in FLOATS else "INT64")
        c.eq(leaf["type"], physical, f"{what}: footer: the labels' type")
    elif f.enum or f.bytes:
        text = f.enum or (f.type in TEXT_TYPES and f.all_utf8(cells))
        ok = leaf["type"] == "BYTE_ARRAY" and (
            (lg.get("type") == "STRING" and leaf["converted"] == "UTF8") if text else not lg)
        # DuckDB 1.5 takes a STRING only from converted_type UTF8.
        c.ok(ok, f"{what}: footer: BYTE_ARRAY" + (" STRING (UTF8)" if text else ", no STRING"),
             str(leaf))
    if f.enum:
        bad = [k for k, rg in enumerate(rgs) if rg["rows"] and not (
            rg["columns"][j]["dictionary"]
            or set(rg["columns"][j]["encodings"] or []) & set(DICTIONARY))]
        c.ok(not bad, f"{what}: footer: dictionary-encoded in every row group",
             f"row groups {bad}")
    if f.enum or f.bytes:
        return
    if f.type in INTS:
        bits, signed = INTS[f.type][:2]
        conv = ("INT_" if signed else "UINT_") + str(bits)
        # DuckDB 1.5 takes an integer's width and sign only from the
        # converted type (LogicalType INTEGER alone reads as signed INT32/64).
        c.ok(leaf["type"] == ("INT64" if bits == 64 else "INT32")
             and lg == {"type": "INTEGER", "bitWidth": bits, "isSigned": signed}
             and leaf["converted"] == conv, f"{what}: footer: INT({bits}, {signed}), {conv}",
             str(leaf))
    elif f.type in FLOATS:
        c.ok(leaf["type"] == FLOATS[f.type][2] and not lg, f"{what}: footer: "
             f"{FLOATS[f.type][2]}", str(leaf))
    elif f.type == "BOOL":
        c.ok(leaf["type"] == "BOOLEAN" and not lg, f"{what}: footer: BOOLEAN", str(leaf))
    elif f.type in TIME_TYPES:
        kind, unit = TIME_TYPES[f.type][:2]
        ok = leaf["type"] == "INT64" and lg.get("type") == kind and lg.get("unit") == unit
        # isAdjustedToUTC: DuckDB 1.5 reads TIMESTAMP(true, NANOS) as TIMESTAMP
        # WITH TIME ZONE in micros and TIME(true) as TIMETZ; its type checks
        # below say which it needs, so only MILLIS and MICROS are pinned here.
        if kind == "TIMESTAMP" and unit != "NANOS":
            ok = ok and lg.get("isAdjustedToUTC") is True
        c.ok(ok, f"{what}: footer: INT64 {kind}({unit})", str(leaf))
    else:
        c.ok(leaf["type"] == "INT64" and not lg, f"{what}: footer: plain INT64", str(leaf))
        bad = [k for k, rg in enumerate(rgs)
               if rg["columns"][j]["kv"].get("tiledb.datatype") != f.type]
        c.ok(not bad, f"{what}: footer: tiledb.datatype = {f.type} on every column chunk",
             f"row groups {bad}")


def check_stats(c, what, f, rgs, want):
    """The first dimension's chunks: min/max statistics that bound the
    values of their row group (equal them, for integers)."""
    start = 0
    for k, rg in enumerate(rgs):
        vals = [as_number(v, f) for v in want[start:start + rg["rows"]] if v is not None]
        start += rg["rows"]
        if f.type in FLOATS:
            vals = [v for v in vals if v == v]  # NaN is no bound
        if not vals:
            continue
        st = rg["columns"][0]["stats"] or {}
        if not c.ok(st.get("min") is not None and st.get("max") is not None,
                    f"{what}: row group {k}: min/max statistics", str(st)):
            continue
        lo, hi = as_number(st["min"], f), as_number(st["max"], f)
        if f.type in INTS or is_time(f.type):
            c.eq((lo, hi), (min(vals), max(vals)), f"{what}: row group {k}: min/max")
        else:
            c.ok(lo <= min(vals) and max(vals) <= hi, f"{what}: row group {k}: min/max "
                 "bound the values", f"[{lo!r}, {hi!r}] vs [{min(vals)!r}, {max(vals)!r}]")


def check_kv(c, label, view, r, is_slice):
    """The file's key-value metadata, through both readers."""
    kvs = {k: r[k]["kv"] for k, _ in READERS if "kv" in r[k]}
    if len(kvs) == 2:
        c.eq(kvs["duckdb"], kvs["hyparquet"], f"{label}: DuckDB's and hyparquet's key-value "
             "metadata")
    kv = kvs.get("hyparquet", kvs.get("duckdb", {}))
    try:
        v = json.loads(kv.get("tiledb.view", ""))
    except ValueError:
        v = None
    keys = ["array", "instant"] + (["slice"] if is_slice else [])
    c.ok(isinstance(v, dict) and all(k in v for k in keys),
         f"{label}: tiledb.view is JSON with {', '.join(keys)}", ml.short(kv.get("tiledb.view")))
    sj = os.path.join(view, "schema.json")
    if os.path.exists(sj):
        with open(sj, encoding="utf-8") as fh:
            c.eq(kv.get("tiledb.schema"), fh.read(), f"{label}: tiledb.schema == schema.json")
    return kv


def check_view(c, corpus, name, mnt, view, r, is_slice):
    """Everything about one view's data.parquet (r: read_parquet.mjs's answer)."""
    rel = os.path.relpath(view, mnt)
    label = f"{name}: {rel}"
    if "error" in r:
        c.ok(False, f"{label}: read_parquet.mjs answers", r["error"])
        return
    ok = {k: c.ok("error" not in r[k], f"{label}: {who} reads data.parquet",
                  r[k].get("error", "")) for k, who in READERS}
    if not any(ok.values()):
        return
    kv = check_kv(c, label, view, r, is_slice)
    sj = os.path.join(view, "schema.json")
    try:
        if os.path.exists(sj):
            with open(sj, encoding="utf-8") as fh:
                schema = json.load(fh)
        else:
            schema = json.loads(kv["tiledb.schema"])
    except (KeyError, ValueError) as e:
        c.ok(False, f"{label}: the view's schema (schema.json or tiledb.schema)", str(e))
        return
    fields = ([Field("dimensions", d) for d in schema.get("dims", [])]
              + [Field("attributes", a) for a in schema.get("attrs", [])])
    header = header_of(view)
    c.eq(header, [f.name for f in fields], f"{label}: data.csv's header == the schema's fields")
    n = cells_of(view)
    if not c.ok(n is not None, f"{label}: cells from the field files"):
        return
    if not is_slice:
        v = view_of(rel) if rel != "." else ([], "latest")
        vd = corpus.view_dir(name, *v) if v else None
        if vd is not None:
            c.eq(n, view_json(vd)["cell_count"], f"{label}: TileDB's cell count")
    for k, who in READERS:
        if ok[k]:
            c.eq([x["name"] for x in r[k]["columns"]], header, f"{label}: {who}: column names "
                 "== data.csv's header")
            c.eq(r[k]["rows"], n, f"{label}: {who}: rows == cells")
    h = r["hyparquet"] if ok["hyparquet"] else None
    if h is not None:
        c.eq((h["num_rows"], sum(rg["rows"] for rg in h["row_groups"])), (n, n),
             f"{label}: the footer's rows and its row groups' == cells")
    for j, f in enumerate(fields):
        what = f"{label}: {f.name}"
        try:
            cells = f.cells(view, n)
            f.resolve_enum(schema.get("enumerations", []), cells)
            labels = labels_of(f, view, n) if f.enum else None
        except (OSError, ValueError) as e:
            c.ok(False, f"{what}: the field files", str(e))
            continue
        for k, who in READERS:
            if not ok[k]:
                continue
            cols = [x["name"] for x in r[k]["columns"]]
            if not c.ok(f.name in cols, f"{what}: {who}: a column"):
                continue
            cj = cols.index(f.name)
            got = r[k]["values"][cj]
            if k == "duckdb":
                dt = r[k]["columns"][cj]["type"]
                c.eq(dt, f.duck_type(cells), f"{what}: DuckDB's type")
                if got is None:
                    c.ok(False, f"{what}: DuckDB reads the column", r[k]["errors"].get(f.name))
                    continue
                ns_of = DUCK_NS.get(dt.removesuffix("[]"))
            else:
                hc = r[k]["columns"][cj]
                check_footer(c, what, f, hc, r[k]["row_groups"], cj, cells)
                unit = (hc["leaf"]["logical"] or {}).get("unit")
                ns_of = NS_PER_UNIT.get(unit)
            try:
                want = f.expected(cells, labels, ns_of)
            except ValueError as e:
                c.ok(False, f"{what}: the field's cells", str(e))
                break
            c.ok(got == want, f"{what}: {who}: values", first_diff(got, want))
            # Statistics on a first dimension of fixed-size numbers (a
            # string's would need its length before its value is read).
            # A sparse view whose sizes need no pass over its cells has none:
            # read from its cells, they would build every window of its order.
            passed = schema.get("array_type") == "dense" or any(
                x.var or x.optional or x.enum or x.bytes or x.list for x in fields)
            if k == "hyparquet" and j == 0 and not f.list and not f.bytes and passed:
                check_stats(c, f"{what}: hyparquet", f, r[k]["row_groups"],
                            f.expected(cells, labels, None))


def slice_of(c, name, view):
    """slice/<first dim>=<lo>..<hi>/ of an array's root: from its least
    value to the middle one of its first dimension (NaN and infinities
    left out); None where it has no cells."""
    with open(os.path.join(view, "schema.json"), encoding="utf-8") as fh:
        schema = json.load(fh)
    dims = [sc.Dim(d) for d in schema["dims"]]
    f = Field("dimensions", schema["dims"][0])
    n = cells_of(view)
    if not n:
        return None
    try:
        cells = f.cells(view, n)
    except (OSError, ValueError) as e:
        c.ok(False, f"{name}: a slice: the first dimension's files", str(e))
        return None
    vals = sorted({sc.decode(f.type, x) for x in cells} - {float("inf"), float("-inf")},
                  key=sc.key_of)
    vals = [v for v in vals if v == v]
    if not vals:
        return None
    return os.path.join(view, "slice", sc.name_of(dims, [(vals[0], vals[len(vals) // 2])]
                                                  + [None] * (len(dims) - 1)))


def check_array(c, exe, corpus, name, tmp, reader):
    """Every data.parquet of one array's (or group's) mount, and a slice of
    each array in it."""
    mnt = tmp.sub(f"m-{os.path.basename(corpus.root)}-{name}")
    m = Mounted(c, exe, os.path.join(corpus.arrays, name), mnt, corpus.key(name))
    if not m.ok:
        ml.unmount(mnt)
        return
    try:
        views = {}  # folder -> is a slice
        for root, dirs, files in os.walk(mnt):
            if "data.csv" not in files:
                continue
            views[root] = False
            if "history" in dirs and "schema.json" in files:  # an array's root
                s = slice_of(c, name, root)
                if s is not None:
                    rel = os.path.relpath(s, mnt)
                    if c.ok(os.path.isdir(s), f"{name}: {rel} resolves"):
                        views[s] = True
        c.ok(bool(views), f"{name}: the mount has views (folders with data.csv)")
        paths = {}
        for v in views:
            p = os.path.join(v, "data.parquet")
            if c.ok(os.path.isfile(p), f"{name}: {os.path.relpath(v, mnt)}: data.parquet"):
                paths[p] = v
        answers = reader.answers(list(paths))
        for p, v in paths.items():
            check_view(c, corpus, name, mnt, v, answers[p], views[v])
        print(f"{name}: {len(paths)} data.parquet read by DuckDB and hyparquet", flush=True)
    finally:
        m.close()


def main():
    ml.require_fuse()
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    exe = os.path.join(os.path.abspath(sys.argv[1]), "tiledbfs")
    if not os.path.exists(exe):
        print(f"FAIL: {exe} is not built")
        return 1

    def body(c, tmp):
        if np is None:
            c.ok(False, "numpy is installed (Debian: python3-numpy)")
            return
        if not (ml.duckdb_installed() and hyparquet_installed()):
            c.ok(False, "Node.js, DuckDB's Node.js API and hyparquet are installed "
                 "(scripts/lib.sh, tiledbfs_install_node)")
            return
        # One Node.js (DuckDB and hyparquet) for every mount; arrays on a few
        # threads, taking turns at it.
        with ml.DuckDBReader("read_parquet.mjs") as reader:
            for root in sys.argv[2:]:
                corpus = Corpus(os.path.abspath(root))
                ml.run_parallel(lambda n=n: check_array(c, exe, corpus, n, tmp, reader)
                                for n in corpus.names())

    return ml.run_checks("mount_parquet_clients", 840, "tiledbfs-parquet-", body)


if __name__ == "__main__":
    sys.exit(main())
