#!/usr/bin/env python3
"""The daemon's memory stays within its documented bound on a sparse array too
big for per-cell state (issue 50).

  memory_cap_test.py BIN_DIR

The SOMA-shaped matrix of scripts/make-bench-arrays.sh (BENCH_ARRAYS=soma) at
scale TILEDBFS_MEMCAP_SCALE (default 512: 10 million cells in 8 row bands of a
4.5M x 60,000 domain, written in about 20 s). Its coordinates and ordinals do
not pack in 64 bits for the whole view: before session 42 it took the generic
path, a sorted index of every cell (24 bytes a cell, 240 MB here); a whole
packed index would still be 80 MB, and its sort as much again.

Mounted with -o cache_size=16M in a process whose address space is capped
(RLIMIT_AS, CAP_AS: an allocation of per-cell state fails there instead of
growing), the test reads, one file at a time: `ls -l` of the root,
attributes/ and dimensions/; `tail -c 100` and a `dd skip=` into the middle of
data.csv; all of data.csv and of every file of attributes/ and dimensions/;
a slice's data.csv, the oldest instant's history/<T>/data.csv, and the diff
of the first and last writes (summary.json, a tail and all of added.csv). Each
read gives st_size bytes (data.csv: one line per cell and the header). After each
read, the daemon's peak RSS (VmHWM) is within cache_size + 64 MiB + one
core's share of the reader's buffers: 16 MiB of text rendered ahead and the
tiles its last read used (at least 16 MiB per field; data.csv reads 3
fields), + the sparse index windows of the view being read (5 windows of
cache_size / 128 cells, 8 bytes each) + those the views read before keep in
the mount's pool (cache_size / 8; core/read/window_pool.h). That is tighter
than the README's bound, which counts the tiles of every core a read or layout
pass runs on. A diff compares each box (here a row band) as slices of both
views: the slices share one view's windows, built as its stream reaches them,
and the stream reads a chunk of each at a time, so the same bound holds (a box's tiles cross few rows in this shape; README "Diffs"). The
reads add up to that bound only through the pool: without it, every view read
kept its windows and the diff's added.csv peaked at 152 MiB here.
"""
import json
import os
import resource
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mountlib as ml  # noqa: E402

SCALE = int(os.environ.get("TILEDBFS_MEMCAP_SCALE", "512"))
CELLS = 20000000 * SCALE // 1024 // 8 * 8  # make-bench-arrays.sh: 8 fragments of as many
MIB = 1 << 20
CACHE = 16 * MIB
CAP_AS = 1024 * MIB  # address space: 395 MiB at its peak on 20M sparse8 cells at 16M
AHEAD = 16 * MIB  # text a streamed file renders ahead of a sequential reader
KEPT = 16 * MIB  # tiles an open file keeps per field (at least)
WINDOWS = 5 * 8 * (CACHE // 2 // 64)  # IndexWindowCells: the tile half's 64th, 5 kept
POOL = CACHE // 8  # windows kept by views not being read (TileCache::window_pool)


def bound(fields):
    """The bound for one reader of a file of `fields` fields (one core's tiles)."""
    return CACHE + 64 * MIB + AHEAD + KEPT * fields + WINDOWS + POOL


def peak(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def read_all(path):
    """(bytes read, newlines) of a whole file, in 1 MiB reads."""
    n = lines = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(MIB)
            if not b:
                return n, lines
            n += len(b)
            lines += b.count(b"\n")


def cap_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (CAP_AS, CAP_AS))


def body_for(bin_dir):
    def body(c, tmp):
        array, why = ml.make_bench_array(bin_dir, tmp, "soma", "soma", SCALE)
        if not c.ok(array is not None, f"make-bench-arrays.sh soma {SCALE}", why or ""):
            return
        mnt = tmp.sub("mnt")
        log = os.path.join(tmp.path, "daemon.log")
        cmd = [os.path.join(bin_dir, "tiledbfs"), "-f", array, mnt, "-o", "cache_size=16M"]
        # Popen in a session of its own, as ml.Daemon does, with the cap.
        errf = open(log, "wb")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
                                start_new_session=True, preexec_fn=cap_address_space)
        ml.register(mnt)
        real = os.path.realpath(mnt)
        if not c.ok(ml.wait_until(lambda: ml.is_mounted(real) or proc.poll() is not None, 60)
                    and ml.is_mounted(real), "mounted under RLIMIT_AS", open(log).read()[-400:]):
            return
        fields_so_far = 0

        def check(what, fields):
            nonlocal fields_so_far
            fields_so_far = max(fields_so_far, fields)
            hwm = peak(proc.pid)
            b = bound(fields_so_far)
            c.ok(hwm is not None and hwm <= b,
                 f"{what}: daemon peak RSS within cache_size + 64 MiB + buffers",
                 f"{(hwm or 0) / MIB:.1f} MiB > {b / MIB:.1f} MiB")
            c.note(f"{what}: peak RSS {(hwm or 0) / MIB:.1f} MiB (bound {b / MIB:.1f} MiB)")

        sizes = {}
        for d in ("", "attributes", "dimensions"):
            p = ml.run(["ls", "-l", os.path.join(mnt, d)])
            c.eq(p.returncode, 0, f"ls -l {d or '/'}")
            for name in os.listdir(os.path.join(mnt, d)):
                path = os.path.join(mnt, d, name)
                if os.path.isfile(path):
                    sizes[os.path.join(d, name)] = os.stat(path).st_size
        check("ls -l of the root, attributes/ and dimensions/", 3)
        csv = os.path.join(mnt, "data.csv")
        size = sizes.get("data.csv", 0)
        p = ml.run(["tail", "-c", "100", csv])
        c.ok(p.returncode == 0 and len(p.stdout) == 100 and p.stdout.endswith(b"\n"),
             "tail -c 100 data.csv", p.stderr.decode()[-200:])
        check("tail -c 100 data.csv", 3)
        p = ml.run(["dd", f"if={csv}", "of=/dev/null", "bs=1M", "count=1",
                    f"skip={size // 2 // MIB}"])
        c.eq(p.returncode, 0, "dd skip= to the middle of data.csv")
        check("dd skip= to the middle of data.csv", 3)
        n, lines = read_all(csv)
        c.eq(n, size, "data.csv: bytes read = st_size")
        c.eq(lines, CELLS + 1, "data.csv: a line per cell and the header")
        check("cat data.csv", 3)
        for rel in sorted(sizes):
            if rel == "data.csv" or not rel.startswith(("attributes/", "dimensions/")):
                continue
            n, _ = read_all(os.path.join(mnt, rel))
            c.eq(n, sizes[rel], f"{rel}: bytes read = st_size")
            check(f"cat {rel}", 3)
        sliced = os.path.join(mnt, "slice", "soma_dim_0=0..2249999", "data.csv")
        n, lines = read_all(sliced)
        c.ok(n == os.stat(sliced).st_size and CELLS // 4 < lines < CELLS * 3 // 4,
             "a slice of half the rows: st_size bytes, a line per cell", f"{n} bytes, {lines} lines")
        check("cat slice/soma_dim_0=0..2249999/data.csv", 3)
        instants = sorted(os.listdir(os.path.join(mnt, "history")))
        old = os.path.join(mnt, "history", instants[1], "data.csv")
        n, lines = read_all(old)
        c.ok(n == os.stat(old).st_size and lines == CELLS // 8 + 1,
             "history of the first write: st_size bytes, its cells", f"{n} bytes, {lines} lines")
        check(f"cat history/{instants[1]}/data.csv", 3)
        # The diff of the first and last writes: the 7 row bands written
        # after the first, as 7 boxes each compared on both sides.
        diff = os.path.join(mnt, "diff", f"{instants[1]}..{instants[-1]}")
        with open(os.path.join(diff, "summary.json")) as f:
            summary = json.load(f)
        added = CELLS - CELLS // 8
        c.eq((summary["added"], summary["removed"], summary["changed"]), (added, 0, 0),
             "diff summary.json: the later bands added, nothing removed or changed")
        check("cat diff/<first>..<last>/summary.json", 3)
        added_csv = os.path.join(diff, "added.csv")
        p = ml.run(["tail", "-c", "100", added_csv])
        c.ok(p.returncode == 0 and len(p.stdout) == 100 and p.stdout.endswith(b"\n"),
             "tail -c 100 added.csv", p.stderr.decode()[-200:])
        check("tail -c 100 diff/<first>..<last>/added.csv", 3)
        n, lines = read_all(added_csv)
        c.ok(n == os.stat(added_csv).st_size and lines == added + 1,
             "added.csv: st_size bytes, a line per added cell and the header",
             f"{n} bytes, {lines} lines")
        check("cat diff/<first>..<last>/added.csv", 3)
        ml.unmount(mnt)
        c.ok(proc.wait(timeout=30) == 0, "the daemon exits 0 at unmount",
             open(log).read()[-400:])
        ml.forget(mnt)

    return body


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    bin_dir = os.path.abspath(sys.argv[1])
    ml.require_fuse()
    return ml.run_checks("mount_memory_cap", 600, "tiledbfs-memcap-", body_for(bin_dir))


if __name__ == "__main__":
    sys.exit(main())
