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
import importlib
import os
import random
import shutil
import subprocess
import sys

import tiledb_capi as tdb
from recipe_kit import KEYS, RECIPES

# The recipes register themselves in RECIPES on import, in this order (the
# order of the README's sections and of a run without NAMEs).
for module in ("recipes_orders", "recipes_features"):
    importlib.import_module(module)


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
