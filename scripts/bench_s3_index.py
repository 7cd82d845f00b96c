#!/usr/bin/env python3
"""Issue 51 bench target 4, run by target 8 of scripts/bench.sh: a remount of
sparse8 on S3 with a warm persistent index, beside the first mount that
wrote the index, in the same run.

  bench_s3_index.py BIN_DIR ARRAYS_DIR

A real s3rver on loopback (tests/s3/s3lib.py) behind our proxy
(tests/s3/fault_proxy.py) adding 10 ms to every request, as bench_s3.py;
ARRAYS_DIR/sparse8 is uploaded first. Both mounts run with
-o index=on,index_dir=<fresh folder>,s3_recheck=3600 (so that a slow run
does not list the live root's folders again). Each is timed from the
mount's start to the end of LS below, the requests counted exactly by
kind; the remount's must be LISTs only, 0 GETs, in <= 0.5 s. LS is ls -l
of the root, attributes/, dimensions/, metadata/, history/ and
fragments/, and of each fragment's fragment.json, fragment.txt and
tiles.csv: every listing of the root's files answered without cell data.
The two mounts' outputs of LS (sizes, names; times cut) must be equal.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "s3"))
import bench_s3  # noqa: E402
import fault_proxy  # noqa: E402
import s3lib  # noqa: E402

NAME = "sparse8"


def ls_command(mnt):
    subs = " ".join(f"{mnt}/{d}" for d in ("attributes", "dimensions", "metadata", "history",
                                           "fragments"))
    per_frag = " ".join(f"{mnt}/fragments/*/{f}" for f in ("fragment.json", "fragment.txt",
                                                           "tiles.csv"))
    return f"ls -l --time-style=+ {mnt} {subs} && ls -l --time-style=+ {per_frag}"


def one_mount(bin_dir, s3, proxy, mnt, env, index_dir):
    """(mount s, ls s, counts, ls output) of a mount and LS through the proxy."""
    proxy.reset_counts()
    t0 = time.monotonic()
    m = bench_s3.Mount(bin_dir, s3.uri(NAME), mnt, env, "-o",
                       f"index=on,index_dir={index_dir},s3_recheck=3600")
    t1 = time.monotonic()
    p = subprocess.run(ls_command(mnt), shell=True, capture_output=True, text=True)
    t2 = time.monotonic()
    m.close()
    if p.returncode != 0:
        raise SystemExit(f"bench_s3_index: ls failed: {p.stderr[-300:]}")
    return t1 - t0, t2 - t1, proxy.counts(), p.stdout.replace(mnt, "MNT")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    bin_dir, arrays = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    local = os.path.join(arrays, NAME)
    print(f"(8b) issue 51 target 4: remount of {NAME} on S3 with the index; s3rver behind "
          f"tests/s3/fault_proxy.py, +{bench_s3.LATENCY_MS} ms per request")
    if not os.path.isdir(local):
        print(f"    SKIPPED: {local} missing")
        return 0
    tmp = tempfile.mkdtemp(prefix="tiledbfs-bench-s3-index.")
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    index_dir = os.path.join(tmp, "index")
    try:
        with s3lib.S3Server(tmp) as s3:
            t0 = time.monotonic()
            n = s3.upload_tree(local, NAME, workers=8)
            print(f"    uploaded {NAME} ({n} files) in {time.monotonic() - t0:.0f} s")
            proxy = fault_proxy.FaultProxy(s3.port)
            try:
                env = s3.env(endpoint=proxy.endpoint)
                proxy.set(latency_ms=bench_s3.LATENCY_MS)
                print(f"    LS: {ls_command('MNT')}")
                runs = [one_mount(bin_dir, s3, proxy, mnt, env, index_dir) for _ in range(2)]
            finally:
                proxy.close()
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-uz", mnt])
        shutil.rmtree(tmp, ignore_errors=True)
    for label, (mount_s, ls_s, c, _) in zip(("first mount (writes the index)",
                                             "remount with the index         "), runs):
        print(f"    {label}: {c['LIST']} LISTs, {c['GET']} GETs, {c['HEAD']} HEADs, "
              f"{c['bytes']} bytes; mount {mount_s:.2f} s + LS {ls_s:.2f} s = "
              f"{mount_s + ls_s:.2f} s")
    _, _, c, out = runs[1]
    total = runs[1][0] + runs[1][1]
    same = out == runs[0][3]
    print(f"    remount: {'LISTs only' if c['GET'] + c['HEAD'] + c['other'] == 0 else 'NOT LISTs only'}"
          f" ({c['LIST']} LISTs, {c['GET']} GETs; target 0 GETs), {total:.2f} s (target <= 0.5 s); "
          f"LS output {'identical to' if same else 'DIFFERS FROM'} the first mount's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
