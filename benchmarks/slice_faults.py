#!/usr/bin/env python3
"""Counts the daemon's page faults while it serves one-tile slices of dense1.

    slice_faults.py TILEDBFS DENSE1 MOUNTPOINT [N]   (default N 40)

Mounts DENSE1 (scripts/make-bench-arrays.sh), reads one slice, then N one-tile
slices of tiles 100 on, each once, in turn. Prints the median time of a slice,
then the minor faults (/proc/PID/task/*/stat) of the threads there before the
N slices (the FUSE threads that read) and of those started during them (heap
warming or decode-ahead threads, and any FUSE thread libfuse adds), per slice.
Fault counts are exact; the times move with the host.
"""
import glob
import os
import statistics
import subprocess
import sys
import time

from cold_read import timed_read  # one reused buffer, as cat reads


def faults(pid):
    out = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(task + "/stat") as f:
                out[task.rsplit("/", 1)[1]] = int(f.read().rsplit(")", 1)[1].split()[7])
        except (OSError, IndexError, ValueError):
            pass
    return out


def read_slice(mnt, k):
    r, c = k // 32 * 512, k % 32 * 256
    path = f"{mnt}/slice/r={r}..{r + 511},c={c}..{c + 255}/attributes/a.bin"
    return timed_read(path)[0]


def main():
    binary, array, mnt = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 40
    daemon = subprocess.Popen([binary, "-f", array, mnt], stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if os.path.ismount(mnt):
                break
            time.sleep(0.02)
        else:
            sys.exit("slice_faults: not mounted after 6 s")
        read_slice(mnt, 0)
        before = faults(daemon.pid)
        times = [read_slice(mnt, k) for k in range(100, 100 + n)]
        after = faults(daemon.pid)
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        daemon.wait(timeout=30)
    old = sum(after[t] - before[t] for t in after if t in before)
    new = sum(after[t] for t in after if t not in before)
    print(f"median {statistics.median(times) * 1e3:.2f} ms; faults per slice: "
          f"threads there before {old / n:.0f}, threads started during {new / n:.0f}")


if __name__ == "__main__":
    main()
