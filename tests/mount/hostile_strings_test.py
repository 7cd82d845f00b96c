#!/usr/bin/env python3
"""Text that every client reads (docs/namespace.md "Values", issue 41), on arrays
whose strings are not all UTF-8.

  hostile_strings_test.py viewer|mount BIN_DIR MAKER

MAKER (make_hostile_arrays, tests/fusefs/hostile_array_main.cc) writes a
dense array (CHAR, CHAR[4], STRING_ASCII and nullable STRING_UTF8
attributes, an attribute whose name is Latin-1, cells never written inside
the non-empty domain: CHAR's fill byte 0x80) and a sparse one (a
STRING_ASCII dimension), both with metadata of every string type, holding
Latin-1, lone continuation bytes, overlong forms, encoded surrogates, values
past U+10FFFF, truncated sequences, a 4-byte emoji and NUL. Read through
tiledbfs-view (viewer) or a mount (mount), every view of each:
  - every text file (all but .bin .offsets .validity .npy .parquet) decodes as
    strict UTF-8, and every .json parses with json.loads
  - every text field's .txt is, line by line, its cells (.bin, .offsets,
    .validity) as Python writes them: bytes.decode("utf-8",
    "backslashreplace"), trailing NULs dropped, CSV-quoted; data.csv's
    columns are the fields' .txt
  - the exact \\xHH forms: the strings written, the fill byte (\\x80), the
    Latin-1 name, metadata/<key>, metadata.json, schema.json, schema.txt,
    log.txt, fragment.json, tiles.csv
  - pandas.read_csv and DuckDB's read_csv, both with default settings, read
    every data.csv: as many rows as cells, and pandas' text columns hold the
    fields' text
mount mode exits 77 without /dev/fuse.
"""
import csv
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mountlib as ml  # noqa: E402

try:
    import pandas as pd
except ImportError:
    pd = None

BINARY = (b".bin", b".offsets", b".validity", b".npy", b".parquet")
TEXT_FIELDS = {b"ch", b"c4", b"a", b"u", b"s"}


def esc(b):
    return b.decode("utf-8", "backslashreplace")


def field(text):
    if text == "" or any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


class Viewer:
    """The namespace as tiledbfs-view shows it (paths are bytes)."""

    def __init__(self, exe, array, tmp):
        self.exe, self.array, self.tmp = exe, array, tmp
        self.n = 0

    def _run(self, rel):
        p = ml.run([self.exe, self.array] + ([rel] if rel else []))
        if p.returncode != 0:
            raise OSError(f"tiledbfs-view {rel!r}: {p.stderr.decode('utf-8', 'replace')}")
        return p.stdout

    def list(self, rel):
        out = []
        for line in self._run(rel).split(b"\n"):
            if line:
                out.append((line.rstrip(b"/"), line.endswith(b"/")))
        return out

    def read(self, rel):
        return self._run(rel)

    def file_path(self, rel):
        """A path a client can open: the bytes saved to a file."""
        self.n += 1
        path = os.path.join(self.tmp, f"view-{self.n}.csv")
        with open(path, "wb") as f:
            f.write(self.read(rel))
        return path


class Mount:
    def __init__(self, mnt):
        self.mnt = os.fsencode(mnt)

    def list(self, rel):
        d = os.path.join(self.mnt, rel)
        return [(n, os.path.isdir(os.path.join(d, n))) for n in sorted(os.listdir(d))]

    def read(self, rel):
        with open(os.path.join(self.mnt, rel), "rb") as f:
            return f.read()

    def file_path(self, rel):
        return os.fsdecode(os.path.join(self.mnt, rel))


def walk(src, rel=b""):
    files = []
    for name, is_dir in src.list(rel):
        path = os.path.join(rel, name) if rel else name
        if is_dir:
            files += walk(src, path)
        else:
            files.append(path)
    return files


def cell_texts(src, folder, stem):
    """The text of each cell of a field, from its .bin / .offsets /
    .validity, as Python writes it (None for a null)."""
    def part(ext):
        rel = os.path.join(folder, stem + ext)
        try:
            return src.read(rel)
        except OSError:
            return None

    data, offsets, validity = part(b".bin"), part(b".offsets"), part(b".validity")
    if offsets is not None:
        offs = [int.from_bytes(offsets[i:i + 8], "little") for i in range(0, len(offsets), 8)]
        cells = [data[offs[i]:offs[i + 1]] for i in range(len(offs) - 1)]
    else:
        n = cell_count(src, os.path.dirname(folder))
        size = len(data) // n if n else 0
        cells = [data[i * size:(i + 1) * size] for i in range(n)]
    return [None if validity is not None and validity[i] == 0 else esc(c.rstrip(b"\0"))
            for i, c in enumerate(cells)]


def cell_count(src, view):
    """The view's cells: from a var field's .offsets (both arrays have one)."""
    for sub in (b"attributes", b"dimensions"):
        for name, _ in src.list(os.path.join(view, sub)):
            if name.endswith(b".offsets"):
                return len(src.read(os.path.join(view, sub, name))) // 8 - 1
    raise AssertionError(f"{view}: no var field")


def check_tree(c, what, src, hostile, tmp):
    files = walk(src)
    c.ok(len(files) > 20, f"{what}: walked {len(files)} files")
    text = {}
    for f in files:
        if f.endswith(BINARY):
            continue
        data = src.read(f)
        try:
            text[f] = data.decode("utf-8")
        except UnicodeDecodeError as e:
            c.ok(False, f"{what}: {f!r} is valid UTF-8", str(e))
            continue
        c.ok(True, f"{what}: {f!r} is valid UTF-8")
        if f.endswith(b".json"):
            try:
                json.loads(text[f])
                c.ok(True, f"{what}: {f!r} parses")
            except ValueError as e:
                c.ok(False, f"{what}: {f!r} parses", str(e))
    views = sorted({os.path.dirname(f) for f in files if os.path.basename(f) == b"data.csv"})
    c.ok(len(views) >= 3, f"{what}: data.csv in the root, history/ and fragments/", views)
    csv_paths = {}
    for v in views:
        n = cell_count(src, v)
        fields = {}
        for sub in (b"dimensions", b"attributes"):
            for name, _ in src.list(os.path.join(v, sub)):
                stem, ext = os.path.splitext(name)
                if ext == b".txt" and stem in TEXT_FIELDS:
                    want = cell_texts(src, os.path.join(v, sub), stem)
                    c.eq(len(want), n, f"{what}: {v!r} {stem!r}: cells")
                    got = text.get(os.path.join(v, sub, name))
                    c.eq(got, "".join(("" if t is None else field(t)) + "\n" for t in want),
                         f"{what}: {v!r} {name!r} is the cells as Python writes them")
                    fields[os.fsdecode(stem)] = want
        csv_text = text.get(os.path.join(v, b"data.csv"))
        if csv_text is None:
            continue  # not UTF-8: failed above
        rows = list(csv.reader(io.StringIO(csv_text, newline="")))
        c.eq(len(rows), n + 1, f"{what}: {v!r} data.csv: header and a row per cell")
        header = rows[0]
        for name, want in fields.items():
            if name not in header:
                c.ok(False, f"{what}: {v!r} data.csv has column {name}", header)
                continue
            k = header.index(name)
            c.eq([r[k] for r in rows[1:]], [t or "" for t in want],
                 f"{what}: {v!r} data.csv column {name} is {name}.txt")
        csv_paths[src.file_path(os.path.join(v, b"data.csv"))] = (v, n, fields)
    check_clients(c, what, csv_paths)
    return text


def check_clients(c, what, csv_paths):
    if pd is None:
        c.ok(False, "pandas is installed (Debian: python3-pandas; scripts/lib.sh installs it)")
    else:
        for path, (v, n, fields) in csv_paths.items():
            try:
                df = pd.read_csv(path)
            except Exception as e:  # noqa: BLE001 (any failure is the finding)
                c.ok(False, f"{what}: pandas.read_csv({v!r} data.csv) with defaults", str(e)[:300])
                continue
            c.eq(len(df), n, f"{what}: pandas reads {v!r} data.csv: rows == cells")
            for name, want in fields.items():
                if name in df.columns:
                    got = ["" if isinstance(x, float) else x for x in df[name].tolist()]
                    # pandas' C parser ends a field at a NUL (data.csv holds
                    # it and the rest: the column check of check_tree).
                    want = [(t or "").split("\0")[0] for t in want]
                    c.eq(got, want, f"{what}: pandas {v!r} column {name}")
    counts = ml.duckdb_row_counts(list(csv_paths))
    if counts is None:
        c.ok(False, "DuckDB's Node.js API is installed (scripts/lib.sh tiledbfs_install_node)")
        return
    for path, (v, n, _) in csv_paths.items():
        c.eq(counts[path], n, f"{what}: DuckDB read_csv({v!r} data.csv) rows == cells")


def check_forms(c, what, dense, sparse, hostile):
    """The exact \\xHH forms, beside what check_tree compares generally."""
    if any(f not in dense for f in (b"attributes/a.txt", b"attributes/u.txt", b"attributes/ch.txt",
                                    b"attributes/c4.txt", b"data.csv", b"schema.json",
                                    b"schema.txt", b"log.txt", b"metadata.json")):
        c.ok(False, f"{what}: the dense array's text files are UTF-8 (failed above)")
        return
    # Cells 1..6 and 11..14 hold hostile[0..5] and [10..13]; 7..10 the fill.
    a = dense[b"attributes/a.txt"].split("\n")
    for cell, k in list(zip(range(1, 7), range(0, 6))) + list(zip(range(11, 15), range(10, 14))):
        c.eq(a[cell - 1], field(esc(hostile[k].rstrip(b"\0"))), f"{what}: dense a.txt cell {cell}")
    c.eq(a[0], "caf\\xe9", f"{what}: Latin-1")
    c.eq(a[1], "\\x80", f"{what}: a lone continuation byte")
    c.eq(a[3], "\\xc0\\xaf", f"{what}: an overlong form")
    c.eq(a[12], "\\xf4\\x90\\x80\\x80", f"{what}: past U+10FFFF")
    u = dense[b"attributes/u.txt"].split("\n")
    c.eq([u[0], u[1], u[3]] + u[6:10], ["ok", '"comma,\\x80""quote"""'] + [""] * 5,
         f"{what}: u.txt: text to quote, nulls, cells never written (null)")
    ch = dense[b"attributes/ch.txt"].split("\n")
    c.eq(ch[6:10], ["\\x80"] * 4, f"{what}: CHAR's fill byte in cells never written")
    c.eq(dense[b"attributes/c4.txt"].split("\n")[6], "\\x80\\x80\\x80\\x80",
         f"{what}: CHAR[4]'s fill")
    c.eq(dense[b"data.csv"].split("\n")[0], "i,ch,c4,a,u,n\\xe9", f"{what}: data.csv header")
    c.eq(dense[b"data.csv"].split("\n")[7], '7,\\x80,\\x80\\x80\\x80\\x80,"",,-2147483648',
         f"{what}: data.csv row of a cell never written")
    schema = json.loads(dense[b"schema.json"])
    attrs = {x["name"]: x for x in schema["attrs"]}
    c.ok("n\\xe9" in attrs, f"{what}: schema.json names the Latin-1 attribute n\\xe9", list(attrs))
    c.eq(attrs.get("ch", {}).get("fill_value"), "\\x80", f"{what}: schema.json CHAR fill value")
    c.ok('"fill_value": "\\\\x80"' in dense[b"schema.json"], f"{what}: \\x80 in JSON as \\\\x80")
    c.ok("n\\xe9" in dense[b"schema.txt"], f"{what}: schema.txt names n\\xe9")
    c.ok("key_caf\\xe9" in dense[b"log.txt"], f"{what}: log.txt names the key key_caf\\xe9")
    for tree, label in ((dense, "dense"), (sparse, "sparse")):
        md = json.loads(tree[b"metadata.json"])
        c.ok("key_caf\\xe9" in md, f"{what}: {label} metadata.json key key_caf\\xe9")
        for k, h in enumerate(hostile):
            for t in ("STRING_UTF8", "STRING_ASCII", "CHAR"):
                key = f"{t}_{k}"
                c.eq(md.get(key, {}).get("value"), esc(h), f"{what}: {label} metadata.json {key}")
                c.eq(tree.get(b"metadata/" + key.encode()), esc(h),
                     f"{what}: {label} metadata/{key}")
    s = sparse[b"dimensions/s.txt"].split("\n")[:-1]
    c.eq(sorted(s), sorted(field(esc(h)) for h in hostile), f"{what}: sparse s.txt")
    frag = [f for f in sparse if f.startswith(b"fragments/") and f.endswith(b"/fragment.json")]
    if c.ok(frag, f"{what}: sparse fragment.json"):
        ned = json.loads(sparse[frag[0]])["non_empty_domain"]
        c.eq(ned, [["a\u0000b", "\\xff\\xfe"]], f"{what}: sparse fragment.json non_empty_domain")
    tiles = [f for f in sparse if f.endswith(b"/tiles.csv")]
    c.ok(tiles and "x\\xf0\\x9f" in sparse[tiles[0]], f"{what}: sparse tiles.csv MBR escaped")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("viewer", "mount"):
        print(__doc__)
        return 2
    mode, bin_dir, maker = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    if mode == "mount":
        ml.require_fuse()

    def body(c, tmp):
        arrays = tmp.sub("arrays")
        p = ml.run([maker, arrays])
        if not c.eq(p.returncode, 0, f"make_hostile_arrays: {p.stderr.decode('utf-8', 'replace')}"):
            return
        hostile = [bytes.fromhex(line) for line in p.stdout.decode().split()]
        trees = {}
        for name in ("dense", "sparse"):
            src_dir = os.path.join(arrays, name)
            if mode == "viewer":
                src = Viewer(os.path.join(bin_dir, "tiledbfs-view"), src_dir, tmp.path)
                trees[name] = check_tree(c, f"view {name}", src, hostile, tmp.path)
                continue
            mnt = tmp.sub("m-" + name)
            p = ml.mount([os.path.join(bin_dir, "tiledbfs"), src_dir, mnt], mnt)
            if not c.eq(p.returncode, 0, f"mount {name}: {p.stderr.decode('utf-8', 'replace')}"):
                continue
            try:
                trees[name] = check_tree(c, f"mount {name}", Mount(mnt), hostile, tmp.path)
            finally:
                c.ok(ml.unmount(mnt), f"unmount {name}")
        if len(trees) == 2:
            check_forms(c, mode, trees["dense"], trees["sparse"], hostile)

    return ml.run_checks(f"hostile_strings_{mode}", 540, "tiledbfs-hostile-", body)


if __name__ == "__main__":
    sys.exit(main())
