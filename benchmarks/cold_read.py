#!/usr/bin/env python3
"""Times cold reads of files through a fresh tiledbfs mount, in one process.

    cold_read.py TILEDBFS ARRAY MOUNTPOINT RUNS PATH... [-- MOUNT OPTIONS]

Each run mounts ARRAY (not timed), then times open + read to the end + close
of every PATH in turn, and unmounts. A `cat` timed by hyperfine also counts a
process spawn (about a millisecond or more), which dwarfs a one-tile read:
this times what the mount does for the read alone. Prints, per PATH, the
median and the minimum of the runs in seconds, then the bytes read.
"""
import os
import statistics
import subprocess
import sys
import time


def wait_mounted(mnt, daemon):
    for _ in range(300):
        if os.path.ismount(mnt):
            return
        if daemon.poll() is not None:
            sys.exit(f"cold_read: the daemon exited ({daemon.returncode}) before mounting")
        time.sleep(0.02)
    sys.exit("cold_read: not mounted after 6 s")


def main():
    args = sys.argv[1:]
    opts = []
    if "--" in args:
        opts = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    binary, array, mnt, runs, paths = args[0], args[1], args[2], int(args[3]), args[4:]
    times = [[] for _ in paths]
    sizes = [0] * len(paths)
    for _ in range(runs):
        daemon = subprocess.Popen([binary, "-f", *opts, array, mnt], stderr=subprocess.DEVNULL)
        try:
            wait_mounted(mnt, daemon)
            for i, p in enumerate(paths):
                t = time.perf_counter()
                fd = os.open(os.path.join(mnt, p), os.O_RDONLY)
                n = 0
                while True:
                    b = os.read(fd, 1 << 20)
                    if not b:
                        break
                    n += len(b)
                os.close(fd)
                times[i].append(time.perf_counter() - t)
                sizes[i] = n
        finally:
            subprocess.run(["fusermount3", "-u", mnt], check=False)
            daemon.wait(timeout=30)
    for i, _ in enumerate(paths):
        print(statistics.median(times[i]), min(times[i]), sizes[i])


if __name__ == "__main__":
    main()
