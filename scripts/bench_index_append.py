#!/usr/bin/env python3
"""Benchmark of issue 51's target 2 (scripts/bench.sh target 9): what an
append costs a mount with the persistent index, beside the first pass, in
the same run.

  bench_index_append.py BIN_DIR WORK_DIR [SCALE_MIB]

Writes, under WORK_DIR, sparse8's shape (make-bench-arrays.sh: 20M cells at
SCALE_MIB 1024, 8 fragments of column bands) with room for rows after its
own. Then, each on a fresh mount with its own -o index_dir:
  first   `ls -l` of /, attributes/ and dimensions/ (the layout pass, which
          writes the index);
  append  one fragment of 1% more cells (tiledb-mkarray --synthetic) in the
          rows after the last, then the same `ls -l` on a new mount over
          that index (target: <= 5% of the first);
  whole   the same `ls -l` of the grown array with -o index=off (the pass
          the append would cost without the index).
Then two more mounts over the index each time the `ls -l` and `tail -c 100
data.csv`: the first tail after the append counts only the index windows
from the base's last on (the base's others were taken with its layouts),
and the daemon writes the counts back at unmount; the next tail builds a
sixteenth of one window.
The append's listing must equal the whole one's, size for size, and its
mount must decode no tile of the 8 first fragments (tiledbfs -o stats);
every tail must print the same bytes.
"""
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, **kw):
    return subprocess.run(list(args), check=True, **kw)


def schema(rows, cols):
    return f"""{{
  "array_type": "sparse", "tile_order": "row-major", "cell_order": "row-major",
  "capacity": 100000,
  "dims": [
    {{"name": "r", "type": "INT64", "domain": [0, {2 * rows - 1}], "tile_extent": 1000}},
    {{"name": "c", "type": "INT64", "domain": [0, {cols - 1}], "tile_extent": 1000}}
  ],
  "attrs": [
    {{"name": "v", "type": "FLOAT64",
     "filter_pipeline": {{"max_chunk_size": 65536,
                         "filters": [{{"name": "BYTESHUFFLE"}}, {{"name": "ZSTD", "level": 3}}]}}}},
    {{"name": "s", "type": "STRING_ASCII", "var": true,
     "filter_pipeline": {{"max_chunk_size": 65536, "filters": [{{"name": "ZSTD", "level": 3}}]}}}}
  ],
  "coords_filters": {{"max_chunk_size": 65536,
                     "filters": [{{"name": "BYTESHUFFLE"}}, {{"name": "ZSTD", "level": 3}}]}}
}}"""


def timed_look(bin_dir, array, mnt, options, tails=None):
    """Seconds for `ls -l` of /, attributes/, dimensions/ on a fresh mount;
    its listing; and the -o stats line the daemon prints at unmount. With
    `tails` (a list), then appends (seconds, bytes) of `tail -c 100
    data.csv`."""
    daemon = subprocess.Popen([os.path.join(bin_dir, "tiledbfs"), "-f", "-o", options + ",stats",
                               array, mnt], stderr=subprocess.PIPE, text=True)
    while not os.path.ismount(mnt):
        if daemon.poll() is not None:
            raise RuntimeError(f"tiledbfs exited: {daemon.stderr.read()}")
        time.sleep(0.02)
    t0 = time.monotonic()
    listing = run("ls", "-l", "--time-style=+", mnt, f"{mnt}/attributes", f"{mnt}/dimensions",
                  capture_output=True, text=True).stdout
    took = time.monotonic() - t0
    if tails is not None:
        t1 = time.monotonic()
        last = run("tail", "-c", "100", f"{mnt}/data.csv", capture_output=True).stdout
        tails.append((time.monotonic() - t1, last))
    run("fusermount3", "-u", mnt)
    err = daemon.communicate()[1]
    stats = [x for x in err.splitlines() if "decoded" in x]
    # Sizes and names only: times differ from mount to mount.
    sizes = [" ".join(f[4:5] + f[6:]) for f in (x.split() for x in listing.splitlines())
             if len(f) >= 7]
    return took, sizes, stats[-1] if stats else ""


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: bench_index_append.py BIN_DIR WORK_DIR [SCALE_MIB]")
    bin_dir, work = sys.argv[1], sys.argv[2]
    scale = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    mk = os.path.join(bin_dir, "tiledb-mkarray")
    cells = 20000000 * scale // 1024
    rows = max(1000, 20000 * scale // 1024 // 1000 * 1000)
    cols = 10000
    base = os.path.join(work, "append-bench")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    array, mnt = os.path.join(base, "grow"), os.path.join(base, "mnt")
    os.makedirs(mnt)
    with open(os.path.join(base, "schema.json"), "w") as f:
        f.write(schema(rows, cols))
    t0 = time.monotonic()
    run(mk, "create", array, "--schema", os.path.join(base, "schema.json"), "--timestamp", "1")
    width = cols // 8
    for k in range(8):
        run(mk, "write", array, "--timestamp", str(10 + k), "--synthetic", "1", "--cells",
            str(cells // 8), "--subarray", f"0:{rows - 1},{k * width}:{(k + 1) * width - 1}",
            stdout=subprocess.DEVNULL)
    print(f"    array: {cells // 8 * 8} cells in {rows} x {cols} rows used of {2 * rows}, "
          f"8 fragments, written in {time.monotonic() - t0:.1f} s")
    index = os.path.join(base, "index")
    first, _, _ = timed_look(bin_dir, array, mnt, f"index=on,index_dir={index}")
    added = cells // 100
    band = max(1, -(-added * 10 // cols))  # rows for 10% density
    run(mk, "write", array, "--timestamp", "100", "--synthetic", "2", "--cells", str(added),
        "--subarray", f"{rows}:{rows + band - 1},0:{cols - 1}", stdout=subprocess.DEVNULL)
    tails = []
    after, sizes, stats = timed_look(bin_dir, array, mnt, f"index=on,index_dir={index}")
    whole, want, _ = timed_look(bin_dir, array, mnt, "index=off", tails)
    second, _, _ = timed_look(bin_dir, array, mnt, f"index=on,index_dir={index}", tails)
    third, _, _ = timed_look(bin_dir, array, mnt, f"index=on,index_dir={index}", tails)
    if sizes != want:
        sys.exit("bench_index_append: the listing with the index differs from the one without")
    if len({t[1] for t in tails}) != 1:
        sys.exit("bench_index_append: tail -c 100 data.csv printed other bytes")
    print(f"    first ls -l (writes the index)          {first * 1000:9.0f} ms")
    print(f"    after appending {added} cells (1 %): ls -l {after * 1000:9.0f} ms   "
          f"{after / first:.3f} x the first (target <= 0.05)")
    print(f"    the same without the index (a pass)     {whole * 1000:9.0f} ms   "
          f"the append costs {after / whole:.3f} x it")
    print(f"    tiles the append's mount decoded: {stats.strip()}")
    print(f"    a new mount: ls -l {second * 1000:.0f} ms, then the first tail -c 100 data.csv "
          f"since the append {tails[1][0] * 1000:.0f} ms")
    print(f"    the next mount: ls -l {third * 1000:.0f} ms, tail {tails[2][0] * 1000:.0f} ms")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
