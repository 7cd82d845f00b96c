#!/usr/bin/env python3
"""Times cold reads of files through a tiledbfs mount, in one process.

    cold_read.py TILEDBFS ARRAY MOUNTPOINT RUNS PATH... [-- MOUNT OPTIONS]
    cold_read.py --one-mount [--after N] TILEDBFS ARRAY MOUNTPOINT PATH... [-- MOUNT OPTIONS]

Each run mounts ARRAY and stats its root (not timed: the mount's start, whose
handshake with the kernel the first request would otherwise wait for), then
times open + read to the end + close of every PATH in turn, and unmounts. A
`cat` timed by hyperfine also counts a process spawn (about a millisecond or
more), which dwarfs a one-tile read: this times what the mount does for the
read alone. Prints, per PATH, the median and the minimum of the runs in
seconds, then the bytes read.

--one-mount: one mount (its root stat'ed, not timed), then every PATH read
once, in turn. PATHs that share no tile are each as cold as on a fresh mount
(nothing of theirs is in the tile cache or the kernel's), without the start
of a daemon in the figure. Prints one line: the median and the minimum over
the PATHs, then the bytes of the first. --after N: the first N PATHs are
read first, not timed (the daemon past its start: threads started, its heap
grown), and the figures are of the rest.
"""
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time


def wait_mounted(mnt, daemon):
    for _ in range(300):
        if os.path.ismount(mnt):
            return
        if daemon.poll() is not None:
            sys.exit(f"cold_read: the daemon exited ({daemon.returncode}) before mounting")
        time.sleep(0.02)
    sys.exit("cold_read: not mounted after 6 s")


# One buffer for every read, as `cat` keeps one: a new 1 MiB object per
# read (os.read) timed the client's allocator too, whose fresh pages the
# kernel faults in as it copies a reply into them
# (benchmarks/results/2026-11-29-session-38-slices-measured.md).
BUFFER = bytearray(1 << 20)


def timed_read(path):
    """Seconds for open + read to the end + close, and the bytes read."""
    t = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    n = 0
    try:
        while True:
            got = os.readv(fd, [BUFFER])
            if not got:
                break
            n += got
    finally:
        os.close(fd)  # else the unmount fails: the file is busy
    return time.perf_counter() - t, n


def mounted(binary, opts, array, mnt):
    # Not our stdout: a daemon left running would hold the pipe of a caller
    # that reads our output (bench.sh) open. Its log is kept for a failure.
    log = tempfile.TemporaryFile()
    daemon = subprocess.Popen([binary, "-f", *opts, array, mnt], stdout=subprocess.DEVNULL,
                              stderr=log)
    daemon.log = log
    wait_mounted(mnt, daemon)
    os.stat(mnt)
    return daemon


def unmount(mnt, daemon, failed=False):
    if subprocess.run(["fusermount3", "-u", mnt], check=False).returncode != 0:
        subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
    if failed:
        daemon.log.seek(0)
        sys.stderr.write("cold_read: the daemon said:\n" + daemon.log.read().decode(errors="replace"))
    daemon.log.close()


@contextlib.contextmanager
def serving(binary, opts, array, mnt):
    """A mount for the block's reads, unmounted however the block ends."""
    daemon = mounted(binary, opts, array, mnt)
    try:
        yield daemon
    except BaseException:
        unmount(mnt, daemon, failed=True)
        raise
    unmount(mnt, daemon)


def main():
    args = sys.argv[1:]
    opts = []
    if "--" in args:
        opts = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    if args[0] == "--one-mount":
        after = 0
        if args[1] == "--after":
            after = int(args[2])
            args = args[2:]
        binary, array, mnt, paths = args[1], args[2], args[3], args[4:]
        with serving(binary, opts, array, mnt):
            reads = [timed_read(os.path.join(mnt, p)) for p in paths][after:]
        times = [t for t, _ in reads]
        print(statistics.median(times), min(times), reads[0][1])
        return
    binary, array, mnt, runs, paths = args[0], args[1], args[2], int(args[3]), args[4:]
    times = [[] for _ in paths]
    sizes = [0] * len(paths)
    for _ in range(runs):
        with serving(binary, opts, array, mnt):
            for i, p in enumerate(paths):
                t, sizes[i] = timed_read(os.path.join(mnt, p))
                times[i].append(t)
    for i, _ in enumerate(paths):
        print(statistics.median(times[i]), min(times[i]), sizes[i])


if __name__ == "__main__":
    main()
