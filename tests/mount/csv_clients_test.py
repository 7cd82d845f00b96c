#!/usr/bin/env python3
"""pandas and DuckDB, with their default settings, read every data.csv of
every array and group of the fixture corpora through a mount (issue 41).

  csv_clients_test.py BIN_DIR CORPUS...

For every array and group of each CORPUS/arrays (with its key where there
is one), mounted with BIN_DIR/tiledbfs, every data.csv below the mount
(the root, history/<T>/, fragments/<name>/, group members):
  - pandas.read_csv(path) reads it, with as many rows as the view has cells
  - DuckDB's read_csv(path) (@duckdb/node-api, tests/node) reads it, with
    as many rows as the view has cells (a view with no cells: 0 rows, or
    1 where DuckDB's sniffer takes the header alone for a row)
The view's cells: from its field files (cells_of), and at the root and in
history/ also TileDB's own count (expected/.../view.json).
Exits 77 without /dev/fuse.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mountlib as ml  # noqa: E402
from corpus_mount_test import Corpus, Mounted, view_json, view_of  # noqa: E402

try:
    import numpy as np
    import pandas as pd
except ImportError:
    np = pd = None


def cells_of(view):
    """The cells of the view shown in folder `view`, from its field files:
    a var field's .offsets (n + 1 of them), a nullable field's .validity
    (n bytes), or a dimension's .npy (one value a cell; dense: the box)."""
    names = []
    for sub in ("dimensions", "attributes"):
        d = os.path.join(view, sub)
        if os.path.isdir(d):
            names += [os.path.join(d, n) for n in sorted(os.listdir(d))]
    for p in names:
        if p.endswith(".offsets"):
            return os.path.getsize(p) // 8 - 1
        if p.endswith(".validity"):
            return os.path.getsize(p)
    for p in names:
        if p.endswith(".npy") and os.path.basename(os.path.dirname(p)) == "dimensions":
            return int(np.prod(np.load(p, mmap_mode="r").shape))
    return None


def check_array(c, exe, corpus, name, tmp, duck):
    """Every data.csv of one array's mount through pandas and `duck` (a
    mountlib.DuckDBReader); DuckDB's checks skipped if it is not installed
    (check_corpus fails for that)."""
    mnt = tmp.sub(f"m-{os.path.basename(os.path.dirname(corpus.root))}-{name}")
    m = Mounted(c, exe, os.path.join(corpus.arrays, name), mnt, corpus.key(name))
    if not m.ok:
        ml.unmount(mnt)
        return
    try:
        csvs = {}
        for root, _, files in os.walk(mnt):
            if "data.csv" in files:
                rel = os.path.relpath(root, mnt)
                csvs[os.path.join(root, "data.csv")] = (rel, cells_of(root))
        c.ok(bool(csvs), f"{name}: the mount has data.csv files")
        for path, (rel, n) in csvs.items():
            if not c.ok(n is not None, f"{name}: {rel}: cells from the field files"):
                continue
            view = view_of(rel) if rel != "." else ([], "latest")
            vd = corpus.view_dir(name, *view) if view else None
            if vd is not None:
                c.eq(n, view_json(vd)["cell_count"], f"{name}: {rel}: TileDB's cell count")
            try:
                df = pd.read_csv(path)
                c.eq(len(df), n, f"{name}: pandas.read_csv({rel}/data.csv) rows == cells")
            except Exception as e:  # noqa: BLE001 (any failure is the finding)
                c.ok(False, f"{name}: pandas.read_csv({rel}/data.csv) with defaults",
                     str(e)[:300])
        counts = duck.counts(list(csvs))
        if counts is None:
            return
        for path, (rel, n) in csvs.items():
            if n == 0:
                # A header alone: DuckDB's sniffer, with no data row to
                # compare it with, sometimes takes it for a row.
                c.ok(counts[path] in (0, 1), f"{name}: DuckDB read_csv({rel}/data.csv) of "
                     "no cells: 0 rows, or the header read as one", counts[path])
                continue
            c.eq(counts[path], n, f"{name}: DuckDB read_csv({rel}/data.csv) rows == cells")
        print(f"{name}: {len(csvs)} data.csv read by pandas and DuckDB", flush=True)
    finally:
        m.close()


def check_corpus(c, exe, corpus, tmp, duck):
    """check_array on every array of `corpus`, on a few threads (a mount
    point each; mounts, FUSE reads and DuckDB overlap with pandas)."""
    if not ml.duckdb_installed():
        c.ok(False, "DuckDB's Node.js API is installed (scripts/lib.sh, tiledbfs_install_node)")
    ml.run_parallel(lambda n=n: check_array(c, exe, corpus, n, tmp, duck)
                    for n in corpus.names())


def main():
    ml.require_fuse()
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    exe = os.path.join(os.path.abspath(sys.argv[1]), "tiledbfs")

    def body(c, tmp):
        if pd is None:
            c.ok(False, "numpy and pandas are installed (Debian: python3-numpy python3-pandas)")
            return
        # One Node.js and DuckDB for every mount: starting them took ~0.4 s a mount.
        with ml.DuckDBReader() as duck:
            for root in sys.argv[2:]:
                check_corpus(c, exe, Corpus(os.path.abspath(root)), tmp, duck)

    return ml.run_checks("mount_csv_clients", 840, "tiledbfs-clients-", body)


if __name__ == "__main__":
    sys.exit(main())
