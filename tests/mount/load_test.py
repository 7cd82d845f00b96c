#!/usr/bin/env python3
"""tiledbfs under load: 64 concurrent readers over mixed files.

  load_test.py BIN_DIR CORPUS

Mounts a set of corpus arrays (a group, dense and sparse arrays with several
fragments, every filter, the encrypted one with its key) and, when
BIN_DIR/tiledb-mkarray is built, a generated array whose files do not fit
the cache, each with -o cache_size=64M. Every file is read once,
single-threaded, for the expected bytes. Then LOAD_READERS (64) threads
read for LOAD_SECONDS (60) seconds: whole files in random chunk sizes,
random pread ranges, mmap reads, directory listings with stat; files of the
root, history/<T>/ and fragments/<name>/ (.npy, .bin, .offsets, data.csv,
.txt, .json, metadata), dropping the page cache of a file now and then
(POSIX_FADV_DONTNEED) so that the reads reach the daemon.
Checks: every read returns the expected bytes, no call fails, no reader is
stuck (a reader without progress for 30 s is a deadlock: the mounts are
aborted and the test fails), every daemon stays alive and logs no error,
and its peak RSS (VmHWM) stays within the cache budget + 64 MiB (under
AddressSanitizer the RSS is reported, not checked). Prints reads, bytes and
RSS. Exits 77 without /dev/fuse.
"""
import hashlib
import mmap
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mountlib as ml  # noqa: E402

MIB = 1 << 20
CACHE = 64 * MIB
BUDGET = CACHE + 64 * MIB
STALL_S = 30
BLOCK = 64 * 1024        # hash granularity of files too big to keep
KEEP_MAX = 4 * MIB       # files up to this size are kept whole for comparison
CORPUS_ARRAYS = ["group", "dense_2d_fragments", "filters", "sparse_2d", "types", "encrypted",
                 "schema_evolution", "consolidated", "deletes", "metadata", "enumerations"]


class Expected:
    """What a file holds: its bytes (small) or one hash per BLOCK (big)."""

    def __init__(self, data):
        self.size = len(data)
        if self.size <= KEEP_MAX:
            self.data = data
            self.blocks = None
        else:
            self.data = None
            self.blocks = [hashlib.sha1(data[i:i + BLOCK]).digest()
                           for i in range(0, self.size, BLOCK)]

    def aligned(self):
        return self.data is None

    def check(self, offset, got):
        """True if `got`, read at offset, is what the file holds there
        (offset and length BLOCK-aligned for big files, except at EOF)."""
        want_len = max(0, min(len(got), self.size - offset))
        if self.data is not None:
            return got == self.data[offset:offset + len(got)]
        if len(got) != want_len or offset % BLOCK:
            return False
        for i in range(0, len(got), BLOCK):
            if hashlib.sha1(got[i:i + BLOCK]).digest() != self.blocks[(offset + i) // BLOCK]:
                return False
        return True


class Mount(ml.Daemon):
    """tiledbfs -f -o cache_size=64M on one array, its log in log_dir."""

    def __init__(self, c, exe, name, src, mnt, log_dir, key=None):
        opts = ["-o", f"cache_size={CACHE // MIB}M"] + (["-o", f"key_file={key}"] if key else [])
        super().__init__([exe, "-f", *opts, src, mnt], mnt,
                         log=os.path.join(log_dir, name + ".err"), checks=c)
        self.name, self.src = name, src
        self.live = c.ok(self.live, f"mount {name} -o cache_size=64M", self.log()[-300:])
        self.peak_rss = 0

    def status(self, field):
        """VmHWM / VmRSS of the daemon in bytes, 0 if gone."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def stop(self):
        return super().stop(timeout=30) == 0


def make_big_array(c, bin_dir, dst):
    """A dense array whose text files do not fit the cache's share for
    rendered files (cache_size / 4): 512 x 1024 cells of FLOAT64
    (BYTESHUFFLE + ZSTD), INT32 (LZ4) and UINT8 in two fragments (data.csv
    about 21 MB). None if tiledb-mkarray is not built or LOAD_BIG=0."""
    if os.environ.get("LOAD_BIG", "1") == "0":
        c.note("LOAD_BIG=0: the load runs on the corpus only")
        return None
    mk = os.path.join(bin_dir, "tiledb-mkarray")
    if not os.path.exists(mk):
        c.note("tiledb-mkarray not built: the load runs on the corpus only")
        return None
    schema = os.path.join(os.path.dirname(dst), "big.schema.json")
    with open(schema, "w") as f:
        f.write("""{
  "array_type": "dense", "tile_order": "row-major", "cell_order": "row-major",
  "dims": [
    {"name": "r", "type": "INT32", "domain": [0, 511], "tile_extent": 128},
    {"name": "c", "type": "INT32", "domain": [0, 1023], "tile_extent": 128}
  ],
  "attrs": [
    {"name": "f", "type": "FLOAT64",
     "filter_pipeline": {"max_chunk_size": 65536, "filters": [{"name": "BYTESHUFFLE"},
                                                              {"name": "ZSTD", "level": 1}]}},
    {"name": "i", "type": "INT32",
     "filter_pipeline": {"filters": [{"name": "LZ4"}]}},
    {"name": "u", "type": "UINT8"}
  ]
}
""")
    steps = [[mk, "create", dst, "--schema", schema, "--timestamp", "1700000000000"],
             [mk, "write", dst, "--timestamp", "1700000001000", "--synthetic", "7"],
             [mk, "write", dst, "--timestamp", "1700000002000", "--synthetic", "8",
              "--subarray", "128:383,128:895"]]
    for cmd in steps:
        p = ml.run(cmd)
        if not c.eq(p.returncode, 0, f"tiledb-mkarray {cmd[1]} ({p.stderr.decode()[:200]})"):
            return None
    return dst


def check_values_like_view(c, bin_dir, mount, expected):
    """The generated array's fixed-size values through the mount (pieces of
    its tiles, one writev per read, or a copy of pieces under a page: a 1 MiB
    read of it crosses thousands of runs) equal tiledbfs-view's, which
    copies every value into one buffer."""
    view = os.path.join(bin_dir, "tiledbfs-view")
    for f in ("f.bin", "i.bin", "u.bin", "f.npy"):
        p = os.path.join(mount.mnt, "attributes", f)
        r = ml.run([view, mount.src, "attributes/" + f])
        c.eq(r.returncode, 0, f"tiledbfs-view attributes/{f}")
        e = expected.get(p)
        c.ok(e is not None and e.size == len(r.stdout) and e.check(0, r.stdout),
             f"big: attributes/{f} through the mount equals tiledbfs-view's")


def collect(mount, expected, dirs, partial=False):
    """Reads every file of the mount once, single-threaded. `partial`: only
    the root, fragments/ and the first history view (not its fragments/)."""
    errors = []
    history = sorted(os.listdir(os.path.join(mount.mnt, "history"))) if partial else []
    for root, ds, fs in os.walk(mount.mnt, onerror=lambda e: errors.append(str(e))):
        dirs[root] = sorted(ds + fs)
        rel = os.path.relpath(root, mount.mnt).split(os.sep)
        if partial and rel[0] == "history":
            if len(rel) == 1:
                ds[:] = history[:1]
            elif len(rel) == 2:
                ds[:] = [d for d in ds if d != "fragments"]
        for f in fs:
            p = os.path.join(root, f)
            try:
                with open(p, "rb") as fh:
                    data = fh.read()
            except OSError as e:
                errors.append(f"{p}: {e}")
                continue
            expected[p] = Expected(data)
    return errors


class Stats:
    def __init__(self, n):
        self.lock = threading.Lock()
        self.progress = [time.monotonic()] * n
        self.doing = [""] * n
        self.reads = [0] * n
        self.bytes = [0] * n
        self.ops = {}
        self.errors = []
        self.wrong = []

    def op(self, kind):
        with self.lock:
            self.ops[kind] = self.ops.get(kind, 0) + 1

    def error(self, what):
        with self.lock:
            self.errors.append(what)

    def bad(self, what):
        with self.lock:
            self.wrong.append(what)


def reader(i, files, immut, dirs, expected, stats, stop):
    rng = random.Random(1000 + i)
    paths = files
    dir_list = sorted(dirs)

    def tick(nbytes):
        stats.progress[i] = time.monotonic()
        stats.reads[i] += 1
        stats.bytes[i] += nbytes

    while not stop.is_set():
        r = rng.random()
        path = rng.choice(paths)
        exp = expected[path]
        try:
            if r < 0.08:
                d = rng.choice(dir_list)
                stats.doing[i] = f"listdir {d}"
                got = sorted(os.listdir(d))
                if got != dirs[d]:
                    stats.bad(f"listdir {d}: {got[:5]} != {dirs[d][:5]}")
                for n in got[:20]:
                    os.stat(os.path.join(d, n))
                tick(0)
                stats.op("listdir+stat")
                continue
            if r < 0.60:
                # Whole file, in random chunk sizes.
                stats.doing[i] = f"read {path}"
                with open(path, "rb", buffering=0) as f:
                    st = os.fstat(f.fileno())
                    if st.st_size != exp.size:
                        stats.bad(f"{path}: st_size {st.st_size} != {exp.size}")
                    off = 0
                    while True:
                        if exp.aligned():
                            n = BLOCK * rng.choice((1, 2, 4, 16))
                        else:
                            n = rng.choice((1, 7, 512, 4096, 65536, 1 << 20))
                        chunk = f.read(n)
                        if not chunk:
                            break
                        if not exp.check(off, chunk):
                            stats.bad(f"{path}: wrong bytes at {off} (+{len(chunk)})")
                            break
                        off += len(chunk)
                        tick(len(chunk))
                    if off != exp.size:
                        stats.bad(f"{path}: read {off} bytes, want {exp.size}")
                    if path in immut and rng.random() < 0.5:
                        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                stats.op("whole read")
            elif r < 0.90:
                # Random ranges of one open file.
                stats.doing[i] = f"pread {path}"
                fd = os.open(path, os.O_RDONLY)
                try:
                    for _ in range(rng.randint(1, 8)):
                        if exp.size == 0:
                            got = os.pread(fd, 100, 0)
                            if got:
                                stats.bad(f"{path}: {len(got)} bytes from an empty file")
                            break
                        if exp.aligned():
                            off = rng.randrange(0, exp.size, BLOCK)
                            n = BLOCK * rng.randint(1, 8)
                        else:
                            off = rng.randrange(0, exp.size)
                            n = rng.randint(1, 70000)
                        got = os.pread(fd, n, off)
                        if len(got) != min(n, exp.size - off) or not exp.check(off, got):
                            stats.bad(f"{path}: wrong pread at {off} (+{n}): {len(got)} bytes")
                        tick(len(got))
                    if path in immut and rng.random() < 0.3:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
                stats.op("pread ranges")
            else:
                # mmap: page-cache reads through the kernel.
                stats.doing[i] = f"mmap {path}"
                if exp.size == 0:
                    stats.op("mmap")
                    continue
                with open(path, "rb") as f:
                    with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                        if exp.aligned():
                            off = rng.randrange(0, exp.size, BLOCK)
                            got = m[off:off + BLOCK * 4]
                        else:
                            off = 0
                            got = m[:]
                        if not exp.check(off, got):
                            stats.bad(f"{path}: wrong mmap bytes at {off}")
                        tick(len(got))
                stats.op("mmap")
        except OSError as e:
            stats.error(f"{stats.doing[i]}: {e}")
            tick(0)
        stats.progress[i] = time.monotonic()
        stats.doing[i] = ""


def asan_build(exe):
    """True if exe was built with AddressSanitizer."""
    try:
        p = ml.run(["ldd", exe])
        if b"libasan" in p.stdout:
            return True
        with open(exe, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def main():
    ml.require_fuse()
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    bin_dir, corpus = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    exe = os.path.join(bin_dir, "tiledbfs")
    if not os.path.exists(exe):
        print(f"FAIL: {exe} is not built")
        return 1
    seconds = float(os.environ.get("LOAD_SECONDS", "60"))
    n_readers = int(os.environ.get("LOAD_READERS", "64"))
    c = ml.Checks("mount_load")
    ml.install_signal_cleanup()
    # Setup and the single-threaded pass take a few minutes at most.
    ml.start_watchdog(int(seconds) + 600)
    tmp = ml.TempDir("tiledbfs-load-")
    logs = tmp.sub("logs")
    asan = asan_build(exe)
    mounts = []
    t0 = time.monotonic()
    try:
        sources = []
        for name in CORPUS_ARRAYS:
            src = os.path.join(corpus, "arrays", name)
            if os.path.isdir(src):
                key = os.path.join(corpus, "arrays", name + ".key")
                sources.append((name, src, key if os.path.exists(key) else None))
        big = make_big_array(c, bin_dir, os.path.join(tmp.path, "big"))
        if big:
            sources.append(("big", big, None))
        for name, src, key in sources:
            m = Mount(c, exe, name, src, tmp.sub("m-" + name), logs, key)
            mounts.append(m)
        mounts = [m for m in mounts if m.live]
        if not mounts:
            return c.finish()

        expected, dirs = {}, {}
        for m in mounts:
            errors = collect(m, expected, dirs, partial=m.name == "big")
            c.ok(not errors, f"{m.name}: every file reads single-threaded", "; ".join(errors[:3]))
            if m.name == "big":
                check_values_like_view(c, bin_dir, m, expected)
        files = sorted(expected)
        immut = {p for p in files if "/history/" in p or "/fragments/" in p}
        total = sum(e.size for e in expected.values())
        print(f"{len(mounts)} mounts, {len(files)} files ({total / MIB:.1f} MiB), "
              f"{len(dirs)} folders; single-threaded pass {time.monotonic() - t0:.1f} s; "
              f"{n_readers} readers for {seconds:.0f} s", flush=True)

        for m in mounts:
            m.hwm_before = m.status("VmHWM")
        stats = Stats(n_readers)
        stop = threading.Event()
        threads = [threading.Thread(target=reader, daemon=True,
                                    args=(i, files, immut, dirs, expected, stats, stop))
                   for i in range(n_readers)]
        start = time.monotonic()
        for t in threads:
            t.start()
        stalled, dead = [], []
        rss_peak = {m.name: 0 for m in mounts}
        while time.monotonic() - start < seconds:
            time.sleep(1)
            now = time.monotonic()
            for i, p in enumerate(stats.progress):
                if now - p > STALL_S:
                    stalled.append(f"reader {i} stuck {now - p:.0f} s in {stats.doing[i]!r}")
            for m in mounts:
                if not m.alive():
                    dead.append(m.name)
                rss_peak[m.name] = max(rss_peak[m.name], m.status("VmRSS"))
            if stalled or dead:
                break
        stop.set()
        if stalled or dead:
            for m in mounts:
                if stalled:
                    # Keep the daemon's stacks for the report, then unblock.
                    p = ml.run(["gdb", "-p", str(m.proc.pid), "-batch", "-ex",
                                "thread apply all bt 8"], timeout=60) \
                        if ml.run(["which", "gdb"]).returncode == 0 else None
                    if p is not None:
                        print(f"--- {m.name} threads ---\n{p.stdout.decode(errors='replace')[-4000:]}")
                ml.force_unmount(m.mnt, ml.fuse_connection(m.mnt))
        deadline = time.monotonic() + 60
        for t in threads:
            t.join(max(0.1, deadline - time.monotonic()))
        elapsed = time.monotonic() - start
        c.ok(not stalled, f"no reader stalls for {STALL_S} s (deadlock)", "; ".join(stalled[:5]))
        c.ok(not dead, "every daemon stays alive", ", ".join(dead))
        c.ok(not any(t.is_alive() for t in threads), "every reader finishes")
        reads, nbytes = sum(stats.reads), sum(stats.bytes)
        c.ok(not stats.errors, f"no call fails ({len(stats.errors)} failed)",
             "; ".join(stats.errors[:5]))
        c.ok(not stats.wrong, f"no wrong byte ({len(stats.wrong)} wrong)",
             "; ".join(stats.wrong[:5]))
        idle = [i for i in range(n_readers) if stats.reads[i] == 0]
        c.ok(not idle, "every reader read something", str(idle[:10]))
        print(f"{reads} reads, {nbytes / MIB:.1f} MiB in {elapsed:.1f} s "
              f"({nbytes / MIB / max(elapsed, 1e-9):.1f} MiB/s); ops: "
              + ", ".join(f"{k} {v}" for k, v in sorted(stats.ops.items())), flush=True)

        for m in mounts:
            hwm = m.status("VmHWM")
            rss = m.status("VmRSS")
            print(f"  {m.name}: VmHWM {hwm / MIB:.1f} MiB (after the single-threaded pass "
                  f"{m.hwm_before / MIB:.1f} MiB), VmRSS {rss / MIB:.1f} MiB "
                  f"(peak sampled {rss_peak[m.name] / MIB:.1f} MiB)", flush=True)
            if asan:
                c.note("AddressSanitizer build: RSS reported, not checked against the budget")
            else:
                c.ok(0 < hwm <= BUDGET, f"{m.name}: peak RSS {hwm / MIB:.1f} MiB within "
                     f"cache_size + 64 MiB = {BUDGET / MIB:.0f} MiB")
            log = m.log()
            c.ok("tiledbfs:" not in log and "ERROR" not in log,
                 f"{m.name}: the daemon logged no error", log.strip()[-300:])
        for m in mounts:
            c.ok(m.stop(), f"{m.name}: unmounts and the daemon exits 0")
        mounts = []
        print(f"total {time.monotonic() - t0:.1f} s", flush=True)
    finally:
        for m in mounts:
            ml.force_unmount(m.mnt, ml.fuse_connection(m.mnt))
        ml.cleanup_all()
        tmp.remove()
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
