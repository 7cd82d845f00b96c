#!/usr/bin/env python3
"""Slices against TileDB's own read: for every view of every array of a
corpus (arrays/ + expected/, as tests/conformance/conformance.py reads it),
random boxes are drawn and `[history/<T>/]slice/<ranges>/` is compared with
the cells TileDB's read of that view holds in the box (docs/namespace.md
"Slices"):
  sparse  the cells whose coordinates lie in the ranges, in the view's order
          (arrays with duplicates: the same cells as a multiset);
  dense   every cell of the box, row-major: TileDB's value inside the view's
          bounding box, the schema's fill value (nullable: null) outside it.
Boxes per view: a point, one value of the first dimension, the whole domain
(a dense one the bounding box widened inside the domain), a box between
two cells, and for sparse arrays a box holding no cells. Every field's
.bin/.offsets/.validity is compared byte for byte, data.csv's row count
checked, and a dense .npy's shape. Names that must not resolve (unknown
dimension, lo > hi, outside the domain, no '=') must fail.

  slice_conformance.py (--viewer VIEW | --mount TILEDBFS) [--seed N] [--boxes K]
                       [--max-views V] CORPUS [NAMES...]

Prints a FAIL line per box that fails, then 'N passed, M failed'.
"""
import argparse
import csv
import io
import math
import os
import random
import re
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "conformance"))
import conformance as conf  # noqa: E402

INT_FMT = {"INT8": "b", "UINT8": "B", "INT16": "h", "UINT16": "H", "INT32": "i",
           "UINT32": "I", "INT64": "q", "UINT64": "Q"}
FLOAT_FMT = {"FLOAT32": "f", "FLOAT64": "d"}


def fmt_of(t):
    if t in INT_FMT:
        return INT_FMT[t]
    if t in FLOAT_FMT:
        return FLOAT_FMT[t]
    if t.startswith("DATETIME_") or t.startswith("TIME_"):
        return "q"
    return None


def is_string(t):
    return t in ("CHAR", "STRING_ASCII", "STRING_UTF8")


def escape_value(b):
    """Bytes as a slice name writes them: printable ASCII as is, but for the
    characters that separate, every byte else as %HH."""
    out = []
    for c in b:
        ch = chr(c)
        if 0x21 <= c < 0x7F and ch not in "%/,=.":
            out.append(ch)
        else:
            out.append(f"%{c:02X}")
    return "".join(out)


def iso_text(t, v):
    """A DATETIME value as ISO 8601 (days, seconds and their fractions), or
    None where Python's dates do not reach or the unit has no such form here."""
    import datetime
    per_day = {"DATETIME_DAY": 1, "DATETIME_SEC": 86400, "DATETIME_MS": 86400 * 10**3,
               "DATETIME_US": 86400 * 10**6, "DATETIME_NS": 86400 * 10**9}
    if t not in per_day:
        return None
    days, rem = divmod(v, per_day[t])
    try:
        date = datetime.date(1970, 1, 1) + datetime.timedelta(days=days)
    except OverflowError:
        return None
    if t == "DATETIME_DAY":
        return date.isoformat()
    sub = per_day[t] // 86400
    secs, frac = divmod(rem, sub)
    out = f"{date.isoformat()}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    if sub > 1:
        out += "." + str(frac).zfill(len(str(sub)) - 1)
    return out


def value_text(t, v):
    """A coordinate (decoded) as data.csv writes it: datetimes as ISO for
    even values, as the raw count for odd ones (both forms resolve)."""
    if t.startswith("DATETIME_") and v % 2 == 0 and iso_text(t, v):
        return iso_text(t, v)
    if isinstance(v, bytes):
        return escape_value(v)
    if isinstance(v, float):
        if t == "FLOAT32":
            # The float32's exact value as a double reads back to that float32.
            return repr(v)
        return repr(v)
    return str(v)


def decode(t, raw):
    f = fmt_of(t)
    if f is None:
        return bytes(raw)
    return struct.unpack("<" + f, raw)[0]


class Dim:
    def __init__(self, d):
        self.name = d["name"]
        self.type = d["type"]
        self.var = bool(d.get("var")) or d.get("cell_val_num") == conf.VAR_NUM
        dom = d.get("domain")
        self.domain = None if self.var or dom is None else (dom[0], dom[1])
        self.fmt = fmt_of(self.type)
        self.width = struct.calcsize("<" + self.fmt) if self.fmt else 0


def key_of(v):
    """Order of values as TileDB compares them (-0.0 equals 0.0)."""
    return v + 0.0 if isinstance(v, float) else v


def in_range(v, rng):
    lo, hi = rng
    if isinstance(v, float) and math.isnan(v):
        return False
    return key_of(lo) <= key_of(v) <= key_of(hi)


def name_of(dims, box):
    parts = []
    for d, rng in zip(dims, box):
        if rng is None:
            continue
        lo, hi = rng
        n = conf.esc(d.name).replace(",", "%2C").replace("=", "%3D").replace(".", "%2E")
        if lo == hi and not (isinstance(lo, float) and lo == 0.0):
            parts.append(f"{n}={value_text(d.type, lo)}")
        else:
            parts.append(f"{n}={value_text(d.type, lo)}..{value_text(d.type, hi)}")
    return ",".join(parts)


class ViewData:
    """TileDB's read of one view, cell by cell."""

    def __init__(self, vdir, view, array_schema):
        self.view = view
        self.schema = view.get("schema", array_schema)
        self.dense = self.schema.get("array_type") == "dense"
        self.dups = not self.dense and bool(self.schema.get("allows_dups"))
        self.dims = [Dim(d) for d in self.schema.get("dims", [])]
        self.fields, strict = conf.view_fields(view, array_schema)
        self.raw = conf.read_expected(vdir, self.fields, strict)
        self.n = view.get("cell_count")
        if self.n is None:
            raise conf.CorpusError(f"corpus: {vdir}: no cell_count")
        self.attrs = {a["name"]: a for a in self.schema.get("attrs", [])}
        self.cells = {}  # field -> per-cell values (split_cells' forms)
        for f, (data, offs, valid) in self.raw.items():
            width = len(data) // self.n if self.n and offs is None else 0
            self.cells[f] = conf.split_cells(data, offs, valid, self.n, width)
        self.coords = []  # per dimension, decoded values
        for d in self.dims:
            f = next(f for f in self.fields if f.kind == "dimensions" and f.name == d.name)
            self.coords.append([decode(d.type, c) for c in self.cells[f]])
        # Dense: the bounding box the view shows.
        self.box = None
        if self.dense and self.n:
            self.box = [(min(c), max(c)) for c in self.coords]

    def fill_of(self, f):
        """Dense: the bytes (and validity) of a cell no fragment wrote."""
        a = self.attrs.get(f.name, {})
        value = bytes.fromhex(a.get("fill_value_hex", ""))
        if f.nullable:
            return (int(a.get("fill_validity", 0)), value)
        return value


def draw_boxes(vd, rng, k):
    """(what, box) pairs; a box is per dimension None or (lo, hi)."""
    dims = vd.dims
    boxes = []
    n = vd.n
    if vd.dense:
        # Whole domain is too big for most; the bounding box widened by up
        # to two cells inside the domain.
        if vd.box:
            wide = []
            for d, (lo, hi) in zip(dims, vd.box):
                wide.append((max(d.domain[0], lo - rng.randint(0, 2)), min(d.domain[1], hi + rng.randint(0, 2))))
            boxes.append(("bounding box widened", wide))
            # A box partly outside the bounding box.
            part = []
            for d, (lo, hi) in zip(dims, vd.box):
                a = rng.randint(lo, hi)
                part.append((a, min(d.domain[1], hi + rng.randint(0, 3))))
            boxes.append(("partly outside the written box", part))
        else:
            boxes.append(("nothing written", [(d.domain[0], min(d.domain[1], d.domain[0] + 2)) for d in dims]))
    if n:
        i = rng.randrange(n)
        boxes.append(("a point", [(c[i], c[i]) for c in vd.coords]))
        boxes.append(("one value of the first dimension", [(vd.coords[0][i], vd.coords[0][i])] + [None] * (len(dims) - 1)))
        for _ in range(max(1, k - 3)):
            a, b = rng.randrange(n), rng.randrange(n)
            box = []
            for d, c in zip(dims, vd.coords):
                if rng.random() < 0.25 and not vd.dense:
                    box.append(None)
                    continue
                lo, hi = sorted((c[a], c[b]), key=key_of)
                box.append((lo, hi))
            boxes.append(("between two cells", box))
    # A name needs a range: a box of none names the first dimension's cells.
    for what, box in boxes:
        if all(r is None for r in box):
            box[0] = (min(vd.coords[0], key=key_of), max(vd.coords[0], key=key_of))
    if not vd.dense:
        whole = [d.domain if d.domain else None for d in dims]
        if all(r is None for r in whole) and n:
            whole[0] = (min(vd.coords[0], key=key_of), max(vd.coords[0], key=key_of))
        if all(r is None for r in whole):
            whole = None  # string dimensions and no cell: nothing to name
        if whole:
            boxes.append(("the whole domain", whole))
        # A box with no cells: a value of dimension 0 no cell holds.
        d0 = dims[0]
        have = set(key_of(v) for v in vd.coords[0]) if n else set()
        if d0.domain and d0.fmt in ("b", "B", "h", "H", "i", "I", "q", "Q"):
            for _ in range(50):
                v = rng.randint(int(d0.domain[0]), int(d0.domain[1]))
                if v not in have:
                    boxes.append(("no cells", [(v, v)] + [None] * (len(dims) - 1)))
                    break
        elif is_string(d0.type):
            v = b"~~no such key~~"
            if v not in have:
                boxes.append(("no cells", [(v, v)] + [None] * (len(dims) - 1)))
    return boxes


def expected_slice(vd, box):
    """{field: (data, offsets, validity)} and the root cells it takes
    (None for a dense cell outside the view's box)."""
    picks = []
    if vd.dense:
        lo_hi = []
        for d, rng, bb in zip(vd.dims, box, vd.box or [None] * len(vd.dims)):
            lo_hi.append(rng if rng is not None else bb)
        shape = [hi - lo + 1 for lo, hi in lo_hi]
        bshape = [hi - lo + 1 for lo, hi in vd.box] if vd.box else None
        total = 1
        for s in shape:
            total *= s
        coords_list = []
        for idx in range(total):
            c, r = [], idx
            for s in reversed(shape):
                c.append(r % s)
                r //= s
            c = [lo + off for (lo, _), off in zip(lo_hi, reversed(c))]
            coords_list.append(c)
            if vd.box and all(bl <= v <= bh for v, (bl, bh) in zip(c, vd.box)):
                flat = 0
                for v, (bl, _), s in zip(c, vd.box, bshape):
                    flat = flat * s + (v - bl)
                picks.append(flat)
            else:
                picks.append(None)
    else:
        for i in range(vd.n):
            if all(rng is None or in_range(vd.coords[d][i], rng) for d, rng in enumerate(box)):
                picks.append(i)
        coords_list = None
    out = {}
    for f in vd.fields:
        cells = []
        for j, p in enumerate(picks):
            if p is not None:
                cells.append(vd.cells[f][p])
            elif f.kind == "dimensions":
                d = next(d for d in vd.dims if d.name == f.name)
                cells.append(struct.pack("<" + d.fmt, coords_list[j][vd.dims.index(d)]))
            else:
                cells.append(vd.fill_of(f))
        valid = None
        if f.nullable:
            valid = bytes(v for v, _ in cells)
            cells = [c for _, c in cells]
        data = b"".join(cells)
        offs = None
        if f.var:
            o, acc = [0], 0
            for c in cells:
                acc += len(c)
                o.append(acc)
            offs = struct.pack(f"<{len(o)}Q", *o)
        out[f] = (data, offs, valid)
    return out, picks


def csv_rows(text):
    return list(csv.reader(io.StringIO(text.decode("utf-8", "surrogateescape"), newline="")))


def check_box(src, vp, vd, box, root_rows):
    problems = []
    name = name_of(vd.dims, box)
    sp = f"{vp}slice/{name}/"
    want, picks = expected_slice(vd, box)
    got = {}
    for f in want:
        parts = []
        for path in conf.field_paths(sp, f):
            try:
                parts.append(src.read(path) if path else None)
            except Exception as e:  # noqa: BLE001 - report and go on
                problems.append(f"{path}: {e}")
                parts.append(b"")
        got[f] = tuple(parts)
    if problems:
        return problems
    if want != got:
        if vd.dups and picks:
            problems += conf.compare_multiset(want, got, sp, len(picks))
        elif vd.dups and not picks:
            problems += conf.compare_exact(want, got, sp)
        else:
            problems += conf.compare_exact(want, got, sp)
    # data.csv: one row per cell; the rows of root cells as the root shows them.
    try:
        rows = csv_rows(src.read(sp + "data.csv"))
    except Exception as e:  # noqa: BLE001
        return problems + [f"{sp}data.csv: {e}"]
    if len(rows) - 1 != len(picks):
        problems.append(f"{sp}data.csv: {len(rows) - 1} rows, expected {len(picks)}")
    elif root_rows is not None:
        mine = [tuple(r) for r in rows[1:]]
        theirs = [tuple(root_rows[p + 1]) if p is not None else None for p in picks]
        if vd.dups:
            if sorted(mine) != sorted(theirs):
                problems.append(f"{sp}data.csv: rows differ from the root's as a multiset")
        else:
            bad = [i for i, (m, t) in enumerate(zip(mine, theirs)) if t is not None and m != t]
            if bad:
                problems.append(f"{sp}data.csv: row {bad[0] + 1} is {mine[bad[0]]}, the root's {theirs[bad[0]]}")
    if vd.dense:
        fixed = [f for f in vd.fields if f.kind == "attributes" and not f.var]
        if fixed:
            f = fixed[0]
            try:
                head = src.read(f"{sp}attributes/{conf.esc(f.name)}.npy")[:512]
                m = re.search(rb"'shape': \(([0-9, ]*)\)", head)
                shape = tuple(int(x) for x in m.group(1).split(b",") if x.strip()) if m else None
                lo_hi = [r if r is not None else bb for r, bb in zip(box, vd.box or [None] * len(box))]
                want_shape = tuple(hi - lo + 1 for lo, hi in lo_hi)
                if shape is None or shape[:len(want_shape)] != want_shape:
                    problems.append(f"{sp}attributes/{f.name}.npy: shape {shape}, expected {want_shape}")
            except Exception as e:  # noqa: BLE001
                problems.append(f"{sp}attributes/{f.name}.npy: {e}")
    return problems


def bad_names(vd):
    """Names that must not resolve, and why."""
    d0 = vd.dims[0]
    out = [("no such dimension", "no_such_dimension=1"), ("no '='", conf.esc(d0.name))]
    n0 = conf.esc(d0.name).replace(",", "%2C").replace("=", "%3D").replace(".", "%2E")
    if d0.domain and d0.fmt in ("b", "B", "h", "H", "i", "I", "q", "Q"):
        lo, hi = d0.domain
        out.append(("lo above hi", f"{n0}={hi}..{lo}") if hi > lo else ("lo above hi", f"{n0}={hi}..{lo - 1}"))
        bounds = {"b": 127, "B": 255, "h": 32767, "H": 65535, "i": 2**31 - 1, "I": 2**32 - 1,
                  "q": 2**63 - 1, "Q": 2**64 - 1}
        if hi < bounds[d0.fmt]:
            out.append(("outside the domain", f"{n0}={lo}..{hi + 1}"))
    return out


def check_array(src, unit, item, a, tally):
    """The boxes and bad names of each sampled view of one array."""
    array_schema = conf.load_json(item.exp / "schema.json")
    vdirs = list(conf.views_of(item.exp))
    if a.max_views and len(vdirs) > a.max_views:
        pick = random.Random(f"{a.seed}/{conf.label(item, unit)}")
        older = [v for v in vdirs if v.name != "latest"]
        keep = set(pick.sample(older, a.max_views - 1)) | {v for v in vdirs if v.name == "latest"}
        vdirs = [v for v in vdirs if v in keep]
    for vdir in vdirs:
        what = f"{conf.label(item, unit)} view {vdir.name}"
        vp = item.prefix + ("" if vdir.name == "latest" else f"history/{vdir.name}/")
        try:
            view = conf.load_json(vdir / "view.json")
            vd = ViewData(vdir, view, array_schema)
        except (conf.CorpusError, ValueError, StopIteration) as e:
            tally.record(what, [f"corpus: {e}"])
            continue
        if not vd.dims:
            continue
        rng = random.Random(f"{a.seed}/{what}")
        try:
            root_rows = csv_rows(src.read(vp + "data.csv"))
        except Exception as e:  # noqa: BLE001
            tally.record(what, [f"{vp}data.csv: {e}"])
            continue
        for kind, box in draw_boxes(vd, rng, a.boxes):
            try:
                tally.record(f"{what} {kind} slice/{name_of(vd.dims, box)}",
                             check_box(src, vp, vd, box, root_rows))
            except Exception as e:  # noqa: BLE001
                tally.record(f"{what} {kind}", [f"harness error: {type(e).__name__}: {e}"])
        for why, bad in bad_names(vd):
            try:
                src.read(f"{vp}slice/{bad}/data.csv")
                tally.record(f"{what} slice/{bad}", [f"resolved, but {why}"])
            except Exception:  # noqa: BLE001 - the failure wanted
                tally.record(f"{what} slice/{bad}", [])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    conf.add_source_args(ap)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("TILEDBFS_SLICE_SEED", "1")))
    ap.add_argument("--boxes", type=int, default=4)
    ap.add_argument("--max-views", type=int, default=0,
                    help="views per array at most, the latest always among them "
                         "(sampled, seeded; 0: all)")
    ap.add_argument("corpus")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    src = conf.source_of(a)
    tally = conf.Tally(False)
    print(f"seed {a.seed}", flush=True)
    for unit, item in conf.each_array(src, a.corpus, a.names, tally):
        check_array(src, unit, item, a, tally)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
