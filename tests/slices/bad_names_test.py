#!/usr/bin/env python3
"""A slice or diff name that resolves to nothing is ENOENT through a mount,
with a log line saying why (docs/namespace.md "Slices"); the viewer prints the
reason and exits 1.

  bad_names_test.py BIN_DIR CORPUS
"""
import errno
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib  # noqa: E402

# (path under the mount of dense_2d_fragments, what the log line must say)
CASES = [
    ("slice/r=1..3,q=1/data.csv", "no dimension 'q'"),
    ("slice/r=5..2/data.csv", "5 is above 2"),
    ("slice/r=0..3/data.csv", "leaves the domain"),
    ("slice/r/data.csv", "has no '='"),
    ("slice/r=abc/data.csv", "is not a value of dimension 'r'"),
    ("diff/yesterday..today/summary.json", "not two instants"),
]


def main():
    mountlib.require_fuse()
    bin_dir, corpus = sys.argv[1], sys.argv[2]
    c = mountlib.Checks("bad_names")
    array = os.path.join(corpus, "arrays", "dense_2d_fragments")
    for path, why in CASES:
        p = mountlib.run([os.path.join(bin_dir, "tiledbfs-view"), array, path])
        err = p.stderr.decode(errors="replace")
        c.ok(p.returncode == 1 and why in err, f"viewer {path}", f"exit {p.returncode}: {err.strip()}")
    tmp = tempfile.mkdtemp(prefix="tiledbfs-bad-names-")
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    mountlib.install_signal_cleanup()
    mountlib.start_watchdog(120)
    d = mountlib.Daemon([os.path.join(bin_dir, "tiledbfs"), "-f", array, mnt], mnt,
                        os.path.join(tmp, "daemon.log"), wait=30, checks=c)
    try:
        if not c.ok(d.live, "mounted"):
            return c.finish()
        for path, why in CASES:
            c.eq(mountlib.errno_of(os.stat, os.path.join(mnt, path)), errno.ENOENT, f"stat {path}")
        # The good names next to them resolve.
        c.ok(os.path.getsize(os.path.join(mnt, "slice/r=1..3/data.csv")) > 0, "a good slice")
        for path, why in CASES:
            name = "/".join(path.split("/")[:2])
            seen = mountlib.wait_until(lambda: why.encode() in d.stderr(), 10)
            c.ok(seen, f"log line for {name}", f"no '{why}' in the daemon's log")
    finally:
        d.stop(timeout=30)
    print(d.log()[-600:])
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
