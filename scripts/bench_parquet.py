#!/usr/bin/env python3
"""Benchmark target 10 of scripts/bench.sh: data.parquet (issue 52 "Done
when"), every figure beside its baseline from the same run.

  bench_parquet.py BIN_DIR ARRAYS_DIR RUNS

Each query or cat runs on a fresh mount (-o index=off), after `ls -l` of
the root (the layout pass data.csv's and data.parquet's sizes share), so
that neither side reads what the kernel or the daemon kept of the other.
DuckDB is @duckdb/node-api (tests/node/run_queries.mjs). Runs alternate.
  (1) sparse8: SELECT avg(v) over data.parquet against the same over
      data.csv (target >= 10x); and the tiles the query decoded, by field
      (tiledbfs -o stats, less what `ls -l` decoded);
  (2) sparse8: SELECT count(*) ... WHERE r BETWEEN a AND b (1% of rows)
      over data.parquet against the same over slice/r=a..b/data.parquet
      (target <= 2x; hive_partitioning off, as slice names look like it);
  (3) dense1: cat data.parquet against cat attributes/a.bin, per byte
      (target >= 0.8x).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_DIR = os.path.join(ROOT, "tests", "node")


class Mount:
    def __init__(self, bin_dir, array, mnt):
        self.mnt = mnt
        subprocess.run([os.path.join(bin_dir, "tiledbfs"), "-o", "index=off", array, mnt],
                       check=True)

    def __enter__(self):
        subprocess.run(["ls", "-l", self.mnt], check=True, stdout=subprocess.DEVNULL)
        return self.mnt

    def __exit__(self, *exc):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)


def decodes(bin_dir, array, mnt, sql):
    """The tiles (and parts) decoded by field on a mount that runs `ls -l`,
    then `sql` if given: tiledbfs -o stats's line at unmount."""
    daemon = subprocess.Popen([os.path.join(bin_dir, "tiledbfs"), "-f", "-o", "index=off,stats",
                               array, mnt], stderr=subprocess.PIPE, text=True)
    while not os.path.ismount(mnt):
        if daemon.poll() is not None:
            raise RuntimeError(f"tiledbfs exited: {daemon.stderr.read()}")
        time.sleep(0.05)
    subprocess.run(["ls", "-l", mnt], check=True, stdout=subprocess.DEVNULL)
    if sql:
        query_ms(sql.replace("MNT", mnt))
    subprocess.run(["fusermount3", "-u", mnt], check=True)
    err = daemon.communicate()[1]
    line = [x for x in err.splitlines() if "decoded" in x][-1]
    by_field = line[line.index("(") + 1:line.rindex(")")] if "(" in line else ""
    return {k: int(v) for k, v in (f.rsplit(" ", 1) for f in by_field.split(", ") if f)}


def query_ms(sql):
    out = subprocess.run(["node", "run_queries.mjs", sql], cwd=NODE_DIR, check=True,
                         capture_output=True, text=True).stdout
    r = json.loads(out.splitlines()[-1])
    if "error" in r:
        raise RuntimeError(f"{sql}: {r['error']}")
    return r["ms"], r["rows"]


def cat_s(path):
    t0 = time.monotonic()
    subprocess.run(["cat", path], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def median(xs):
    return statistics.median(xs)


def main():
    bin_dir, arrays, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    mnt = tempfile.mkdtemp(prefix="tiledbfs-bench-pq-")
    print("(10) data.parquet (issue 52)                                   median    ratio")
    s8 = os.path.join(arrays, "sparse8")
    if os.path.isdir(s8):
        pq, csv, full, sl = [], [], [], []
        for _ in range(runs):
            with Mount(bin_dir, s8, mnt) as m:
                pq.append(query_ms(f"SELECT avg(v) FROM '{m}/data.parquet'")[0])
            with Mount(bin_dir, s8, mnt) as m:
                csv.append(query_ms(f"SELECT avg(v) FROM read_csv('{m}/data.csv')")[0])
        # 1% of sparse8's rows: r spans [0, rows), about evenly.
        with Mount(bin_dir, s8, mnt) as m:
            _, rows = query_ms(f"SELECT min(r), max(r) FROM '{m}/data.parquet'")
        lo, hi = (int(x) for x in rows[0])
        a = lo + (hi - lo) // 2
        b = a + (hi - lo) // 100
        where = f"WHERE r BETWEEN {a} AND {b}"
        for _ in range(runs):
            with Mount(bin_dir, s8, mnt) as m:
                full.append(query_ms(f"SELECT count(*) FROM read_parquet('{m}/data.parquet', "
                                     f"hive_partitioning = false) {where}")[0])
            with Mount(bin_dir, s8, mnt) as m:
                sl.append(query_ms(f"SELECT count(*) FROM read_parquet('{m}/slice/r={a}..{b}/"
                                   "data.parquet', hive_partitioning = false)")[0])
        sql = "SELECT avg(v) FROM 'MNT/data.parquet'"
        seen, listed = decodes(bin_dir, s8, mnt, sql), decodes(bin_dir, s8, mnt, None)
        by_query = ", ".join(f"{k} {seen[k] - listed.get(k, 0)}" for k in sorted(seen)
                             if seen[k] > listed.get(k, 0))
        print(f"    sparse8 avg(v): tiles and parts the query decoded, by field: {by_query}")
        print(f"    sparse8 avg(v): data.parquet {median(pq):8.0f} ms; "
              f"data.csv {median(csv):.0f} ms   {median(csv) / median(pq):.2f} x faster "
              "(target >= 10)")
        print(f"    sparse8 count(*) {where}: data.parquet {median(full):.0f} ms; "
              f"slice/r={a}..{b}/data.parquet {median(sl):.0f} ms   "
              f"{median(full) / median(sl):.2f} x (target <= 2)")
    else:
        print(f"    sparse8: SKIPPED, {s8} missing (scripts/make-bench-arrays.sh makes it)")
    d1 = os.path.join(arrays, "dense1")
    if os.path.isdir(d1):
        per_byte = []
        for _ in range(runs):
            got = {}
            for f in ("attributes/a.bin", "data.parquet"):
                with Mount(bin_dir, d1, mnt) as m:
                    path = os.path.join(m, f)
                    got[f] = os.path.getsize(path) / cat_s(path)
            per_byte.append(got["data.parquet"] / got["attributes/a.bin"])
        print(f"    dense1 cat data.parquet per byte against cat attributes/a.bin: "
              f"{median(per_byte):.2f} x (runs {', '.join(f'{x:.2f}' for x in per_byte)}; "
              "target >= 0.8)")
    else:
        print(f"    dense1: SKIPPED, {d1} missing (scripts/make-bench-arrays.sh makes it)")
    os.rmdir(mnt)


if __name__ == "__main__":
    main()
