#!/usr/bin/env python3
"""tiledbfs on the fixture corpus, through real mounts and real tools.

  corpus_mount_test.py BIN_DIR CORPUS [NAME...]

For every array and group of CORPUS/arrays (with its key where there is
one), mounted with BIN_DIR/tiledbfs:
  - the command exits 0 and the mount is live when it returns; /proc/mounts
    says fuse.tiledbfs, ro; as root, the mount's read_ahead_kb is 1024
  - ls -l works (modes 0444/0555); find -type f and find -name '*.npy' see
    the same files as a directory walk
  - stat -c %s equals wc -c, and the bytes read, for every file; cat, head
    and tail agree with a plain read
  - du --apparent-size = the sum of st_size; du = the sum of st_blocks
  - every .json parses
  - every .npy loads with numpy, also with mmap_mode='r' (the same array);
    its payload is its sibling .bin byte for byte; at the root and in
    history/<ISO>/ it equals TileDB's read (expected/.../views/<T>/<f>.data;
    as a multiset where the schema allows duplicates)
  - every data.csv reads with pandas: header = the view's dimension and
    attribute names, rows = TileDB's cell count
  - cp -r of the first history view is identical to it (diff -r); diff -r of
    the first and last history views exits 0 or 1 (never 2), and 1 where
    TileDB's reads of the two instants differ
  - fusermount3 -u unmounts and the daemon exits
Once: every mutating call (touch, mkdir, rm, rmdir, mv, chmod, truncate, ln,
ln -s, setfattr, and the same through Python) fails with EROFS; -o
timestamp=T (ms and ISO) pins the view; mount.tiledbfs as mount(8) calls it
(-n -o rw,defaults,noauto,_netdev,...); the exit codes: missing array or
not an array 2, missing key / wrong key / malformed key file 3, missing
mount point 4, bad option / timestamp / cache size 1, and nothing is left
mounted after a failure.
The arrays and the checks made once run at once, on a few threads, each
on a mount point of its own.
Exits 77 without /dev/fuse. numpy/pandas checks are noted as not run when
those modules are missing (Debian: python3-numpy python3-pandas).
"""
import datetime
import errno
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mountlib as ml  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None
try:
    import pandas as pd
except ImportError:
    pd = None


def unescape(name):
    """A file name back to the field / member name (docs/namespace.md, Names)."""
    if name == "%00":
        return ""
    return name.replace("%2F", "/").replace("%25", "%")


def iso_to_ms(name):
    try:
        dt = datetime.datetime.strptime(name, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return None
    dt = dt.replace(tzinfo=datetime.timezone.utc)
    return int(round(dt.timestamp() * 1000))


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Corpus:
    def __init__(self, root):
        self.root = root
        self.arrays = os.path.join(root, "arrays")
        self.expected = os.path.join(root, "expected")

    def names(self):
        return sorted(d for d in os.listdir(self.arrays)
                      if os.path.isdir(os.path.join(self.arrays, d)))

    def key(self, name):
        k = os.path.join(self.arrays, name + ".key")
        return k if os.path.exists(k) else None

    def view_dir(self, name, members, t):
        """expected/<name>/<members...>/views/<t>, if TileDB dumped it."""
        d = os.path.join(self.expected, name, *members, "views", str(t))
        return d if os.path.isdir(d) else None


def view_of(rel_dir):
    """For a folder holding attributes/ or dimensions/ (relative to the
    mount), (members, T): T is 'latest' or ms; None for a fragment's own
    cells (nothing of TileDB's to compare with)."""
    parts = [p for p in rel_dir.split("/") if p]
    if "fragments" in parts:
        return None
    if len(parts) >= 2 and parts[-2] == "history":
        ms = iso_to_ms(parts[-1])
        return (parts[:-2], ms) if ms is not None else None
    return (parts, "latest")


def view_json(view_dir):
    with open(os.path.join(view_dir, "view.json")) as f:
        return json.load(f)


class Mounted:
    def __init__(self, c, exe, src, mnt, key=None, extra=()):
        self.c, self.mnt = c, mnt
        cmd = [exe] + (["-o", f"key_file={key}"] if key else []) + list(extra) + [src, mnt]
        p = ml.mount(cmd, mnt)
        self.ok = c.eq(p.returncode, 0, f"mount {os.path.basename(src)} {' '.join(extra)}: "
                       f"exit code ({p.stderr.decode(errors='replace').strip()[:300]})")
        if self.ok:
            self.ok = c.ok(os.path.ismount(mnt), f"{src}: live when the command returned")

    def close(self):
        pids = ml.daemon_pids(self.mnt, whole_arg=True)  # not a sibling mount's daemon
        self.c.ok(ml.unmount(self.mnt), f"fusermount3 -u {self.mnt}")
        # Exited, reaped or not: how soon pid 1 reaps the orphan is not ours.
        self.c.ok(ml.wait_exited(pids, 20), "daemon exits after unmount")


def walk(mnt, errors):
    """All files and folders below mnt; listing failures go to `errors`."""
    files, dirs = [], []
    for root, ds, fs in os.walk(mnt, onerror=lambda e: errors.append(f"{e.filename}: {e}")):
        for d in ds:
            dirs.append(os.path.relpath(os.path.join(root, d), mnt))
        for f in fs:
            files.append(os.path.relpath(os.path.join(root, f), mnt))
    return sorted(files), sorted(dirs)


def batched(xs, n=200):
    for i in range(0, len(xs), n):
        yield xs[i:i + n]


def check_array(c, corpus, exe, name, tmp):
    mnt = tmp.sub("m-" + name)
    m = Mounted(c, exe, os.path.join(corpus.arrays, name), mnt, corpus.key(name))
    if not m.ok:
        ml.unmount(mnt)
        return
    try:
        entry = ml.mount_entry(mnt)
        c.ok(entry is not None and entry[1] == "fuse.tiledbfs" and "ro" in entry[2],
             f"{name}: /proc/mounts says fuse.tiledbfs, ro", str(entry))
        if os.geteuid() == 0:
            # Sequential reads in 1 MiB requests: the mount's readahead window
            # raised from the kernel's 128 KiB (fusefs/fuse/readahead.h).
            dev = os.stat(mnt).st_dev
            ra = f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb"
            got = open(ra).read().strip() if os.path.exists(ra) else None
            c.ok(got == "1024", f"{name}: read_ahead_kb of the mount is 1024", f"{ra}: {got}")
        p = ml.run(["ls", "-l", mnt])
        c.ok(p.returncode == 0 and all(
            l.startswith(("dr-xr-xr-x", "-r--r--r--"))
            for l in p.stdout.decode().splitlines()[1:]), f"{name}: ls -l modes",
            p.stdout.decode()[:300])

        errors = []
        files, dirs = walk(mnt, errors)
        c.ok(bool(files), f"{name}: the mount has files")
        c.ok(not errors, f"{name}: every listed folder lists", "; ".join(errors[:3]))
        bad = [d for d in dirs if ml.errno_of(os.stat, os.path.join(mnt, d))]
        c.ok(not bad, f"{name}: every listed folder stats", ", ".join(bad[:3]))
        p = ml.run(["find", mnt, "-type", "f"])
        c.eq(len(p.stdout.decode().splitlines()), len(files), f"{name}: find -type f count")
        p = ml.run(["find", mnt, "-name", "*.npy"])
        c.eq(len(p.stdout.decode().splitlines()), sum(f.endswith(".npy") for f in files),
             f"{name}: find -name '*.npy' count")

        # Sizes: stat -c %s == wc -c == bytes read.
        sizes, wcs = {}, {}
        for chunk in batched(files):
            p = ml.run(["stat", "-c", "%s", "--", *chunk], cwd=mnt)
            for f, s in zip(chunk, p.stdout.split()):
                sizes[f] = int(s)
            p = ml.run(["wc", "-c", "--", *chunk], cwd=mnt)
            lines = p.stdout.decode("utf-8", "surrogateescape").splitlines()
            for f, l in zip(chunk, lines if len(chunk) == 1 else lines[:-1]):
                wcs[f] = int(l.split()[0])
        bad = [f for f in files if sizes.get(f) != wcs.get(f)]
        c.ok(not bad, f"{name}: stat -c %s == wc -c on every file ({len(files)})",
             ", ".join(bad[:5]))
        content = {}
        bad = []
        for f in files:
            data = read(os.path.join(mnt, f))
            content[f] = data
            if len(data) != sizes.get(f):
                bad.append(f"{f} ({len(data)} != {sizes.get(f)})")
        c.ok(not bad, f"{name}: every file reads exactly st_size bytes", ", ".join(bad[:5]))

        for f in [f for f in files if f.endswith("data.csv")][:3]:
            c.eq(ml.run(["cat", f], cwd=mnt).stdout, content[f], f"{name}: cat {f}")
            c.eq(ml.run(["head", "-n", "3", f], cwd=mnt).stdout,
                 b"".join(content[f].splitlines(keepends=True)[:3]), f"{name}: head -n 3 {f}")
            c.eq(ml.run(["tail", "-c", "100", f], cwd=mnt).stdout, content[f][-100:],
                 f"{name}: tail -c 100 {f}")

        # du: apparent sizes and blocks.
        st = {}
        for x in files + dirs:
            try:
                st[x] = os.stat(os.path.join(mnt, x))
            except OSError:
                pass
        root_st = os.stat(mnt)
        want = sum(s.st_size for s in st.values()) + root_st.st_size
        p = ml.run(["du", "-s", "-B1", "--apparent-size", mnt])
        c.eq(int(p.stdout.split()[0]), want, f"{name}: du --apparent-size")
        want = sum(s.st_blocks for s in st.values()) + root_st.st_blocks
        p = ml.run(["du", "-s", "-B512", mnt])
        c.eq(int(p.stdout.split()[0]), want, f"{name}: du (st_blocks)")

        bad = []
        for f in files:
            if f.endswith(".json"):
                try:
                    json.loads(content[f])
                except ValueError as e:
                    bad.append(f"{f}: {e}")
        c.ok(not bad, f"{name}: every .json parses", "; ".join(bad[:3]))

        check_npy(c, corpus, name, mnt, files, content)
        check_csv(c, corpus, name, mnt, files)
        check_copy_and_diff(c, corpus, name, mnt, dirs, tmp)
    finally:
        m.close()


def check_npy(c, corpus, name, mnt, files, content):
    npys = [f for f in files if f.endswith(".npy")]
    if np is None:
        c.note("numpy is not installed: .npy checks not run")
        return
    compared = 0
    for f in npys:
        path = os.path.join(mnt, f)
        try:
            a = np.load(path, allow_pickle=False)
            mm = np.load(path, mmap_mode="r", allow_pickle=False)
        except Exception as e:  # noqa: BLE001 (any failure to load is the finding)
            c.ok(False, f"{name}: np.load {f}", str(e))
            continue
        c.ok(mm.dtype == a.dtype and mm.shape == a.shape and mm.tobytes() == a.tobytes(),
             f"{name}: np.load(mmap_mode='r') {f} equals np.load")
        bin_f = f[:-4] + ".bin"
        if bin_f in content:
            c.eq(a.tobytes(), content[bin_f], f"{name}: {f} payload == {os.path.basename(bin_f)}")
        folder, kind = os.path.split(os.path.dirname(f))
        view = view_of(folder)
        if view is None:
            continue
        members, t = view
        vd = corpus.view_dir(name, members, t)
        if vd is None:
            continue
        field = unescape(os.path.basename(f)[:-4])
        fields = {x["name"]: x for x in view_json(vd)["fields"]}
        if field not in fields:
            c.ok(False, f"{name}: {f}: field {field!r} not in TileDB's view {t}")
            continue
        want = read(os.path.join(vd, fields[field]["files"][0]))
        if len(want) != a.nbytes:
            c.ok(False, f"{name}: {f} has {a.nbytes} bytes, TileDB's read {len(want)}")
            continue
        exp = np.frombuffer(want, dtype=a.dtype).reshape(a.shape)
        if view_json(vd).get("schema", {}).get("allows_dups"):
            same = np.sort(a, axis=0).tobytes() == np.sort(exp, axis=0).tobytes()
        else:
            same = a.tobytes() == exp.tobytes()
        c.ok(same, f"{name}: {f} equals TileDB's read ({t})")
        compared += 1
    if npys:
        c.ok(compared > 0, f"{name}: some .npy compared with TileDB's read")


def check_csv(c, corpus, name, mnt, files):
    if pd is None:
        c.note("pandas is not installed: data.csv checks not run")
        return
    for f in files:
        if os.path.basename(f) != "data.csv":
            continue
        try:
            df = pd.read_csv(os.path.join(mnt, f), keep_default_na=False, dtype=str)
        except pd.errors.EmptyDataError:
            df = None
        except Exception as e:  # noqa: BLE001
            c.ok(False, f"{name}: pandas.read_csv {f}", str(e))
            continue
        view = view_of(os.path.dirname(f))
        vd = corpus.view_dir(name, *view) if view else None
        if vd is None:
            c.ok(df is not None, f"{name}: pandas.read_csv {f}")
            continue
        vj = view_json(vd)
        names = [x["name"] for x in vj["fields"]]
        if df is None:
            c.ok(False, f"{name}: {f} has no header row")
            continue
        c.eq(list(df.columns), names, f"{name}: {f} header")
        c.eq(len(df), vj["cell_count"], f"{name}: {f} rows == TileDB's cell count")


def check_copy_and_diff(c, corpus, name, mnt, dirs, tmp):
    views = sorted(d for d in dirs if d.startswith("history/") and d.count("/") == 1)
    if not views:
        return
    first, last = views[0], views[-1]
    dst = os.path.join(tmp.path, "copy-" + name)
    p = ml.run(["cp", "-r", os.path.join(mnt, first), dst])
    c.eq(p.returncode, 0, f"{name}: cp -r {first}")
    p = ml.run(["diff", "-r", os.path.join(mnt, first), dst])
    c.eq(p.returncode, 0, f"{name}: diff -r of the copy of {first}")
    shutil.rmtree(dst, ignore_errors=True)
    if first == last:
        return
    p = ml.run(["diff", "-r", os.path.join(mnt, first), os.path.join(mnt, last)])
    c.ok(p.returncode in (0, 1), f"{name}: diff -r {first} {last} runs",
         p.stderr.decode(errors="replace")[:300])
    a = corpus.view_dir(name, [], iso_to_ms(first.split("/")[1]))
    b = corpus.view_dir(name, [], iso_to_ms(last.split("/")[1]))
    if a and b:
        fa = {x["name"]: x["files"] for x in view_json(a)["fields"]}
        fb = {x["name"]: x["files"] for x in view_json(b)["fields"]}
        differ = fa.keys() != fb.keys() or any(
            read(os.path.join(a, fn)) != read(os.path.join(b, fn))
            for k in fa for fn in fa[k] if k in fb and fn in fb[k])
        if differ:
            c.eq(p.returncode, 1, f"{name}: diff -r of two views TileDB reads differently")


def check_erofs(c, exe, corpus, tmp):
    name = "dense_2d_fragments"
    mnt = tmp.sub("erofs")
    m = Mounted(c, exe, os.path.join(corpus.arrays, name), mnt)
    if not m.ok:
        ml.unmount(mnt)
        return
    try:
        j = lambda p: os.path.join(mnt, p)  # noqa: E731
        tools = [["touch", j("new")], ["touch", j("schema.json")], ["mkdir", j("d")],
                 ["rm", "-f", j("schema.json")], ["rmdir", j("attributes")],
                 ["mv", j("schema.json"), j("x.json")], ["chmod", "600", j("schema.json")],
                 ["truncate", "-s", "0", j("data.csv")], ["ln", j("data.csv"), j("l")],
                 ["ln", "-s", "data.csv", j("s")], ["cp", "/etc/hostname", j("attributes/")]]
        if shutil.which("setfattr"):
            tools.append(["setfattr", "-n", "user.x", "-v", "1", j("schema.json")])
        else:
            c.note("setfattr not installed (Debian: attr): checked through os.setxattr only")
        for cmd in tools:
            p = ml.run(cmd)
            c.ok(p.returncode != 0 and b"Read-only file system" in p.stderr,
                 f"{cmd[0]} {' '.join(cmd[1:-1])} fails with EROFS",
                 p.stderr.decode(errors="replace").strip())
        calls = {
            "open for writing": lambda: open(j("data.csv"), "r+b"),
            "open for append": lambda: open(j("data.csv"), "ab"),
            "create": lambda: open(j("new.txt"), "wb"),
            "mkdir": lambda: os.mkdir(j("d")),
            "unlink": lambda: os.unlink(j("data.csv")),
            "rename": lambda: os.rename(j("data.csv"), j("d.csv")),
            "chmod": lambda: os.chmod(j("data.csv"), 0o600),
            "chown": lambda: os.chown(j("data.csv"), 1, 1),
            "utime": lambda: os.utime(j("data.csv"), (0, 0)),
            "truncate": lambda: os.truncate(j("data.csv"), 1),
            "setxattr": lambda: os.setxattr(j("data.csv"), "user.x", b"1"),
            "removexattr": lambda: os.removexattr(j("data.csv"), "user.x"),
        }
        for what, fn in calls.items():
            c.eq(ml.errno_of(fn), errno.EROFS, f"{what} -> EROFS")
    finally:
        m.close()


def check_timestamp(c, exe, corpus, tmp):
    name = "dense_2d_fragments"
    t2 = 1700000002000
    vd = corpus.view_dir(name, [], t2)
    if vd is None:
        c.note(f"no expected view {t2} of {name}: -o timestamp not checked")
        return
    want = read(os.path.join(vd, "a.data"))
    for form in (str(t2), "2023-11-14T22:13:22.000Z", "2023-11-14T22:13:22"):
        mnt = tmp.sub("ts")
        m = Mounted(c, exe, os.path.join(corpus.arrays, name), mnt, extra=["-o", f"timestamp={form}"])
        if m.ok:
            try:
                c.eq(read(os.path.join(mnt, "attributes/a.bin")), want,
                     f"-o timestamp={form}: the root is the view at t2")
            finally:
                m.close()
        else:
            ml.unmount(mnt)


def check_mount_helper(c, bin_dir, corpus, tmp):
    helper = os.path.join(bin_dir, "mount.tiledbfs")
    if not os.path.exists(helper):
        c.note("mount.tiledbfs not built: helper not checked")
        return
    name = "dense_2d_fragments"
    src = os.path.join(corpus.arrays, name)
    mnt = tmp.sub("helper")
    p = ml.run([helper, src, mnt, "-f", "-o", "rw,defaults"])
    c.ok(p.returncode == 0 and not os.path.ismount(mnt) and b"tiledbfs" in p.stderr,
         "mount.tiledbfs -f prints the command and mounts nothing", p.stderr.decode())
    p = ml.mount([helper, src, mnt, "-n", "-v", "-o",
                "rw,defaults,noauto,user,_netdev,nofail,x-systemd.automount,"
                "timestamp=1700000002000", "-t", "tiledbfs"], mnt)
    if not c.eq(p.returncode, 0, f"mount.tiledbfs exit code ({p.stderr.decode().strip()})"):
        ml.unmount(mnt)
        return
    c.ok(os.path.ismount(mnt), "mount.tiledbfs: mounted when it returns")
    entry = ml.mount_entry(mnt)
    c.ok(entry is not None and "ro" in entry[2], "mount.tiledbfs: read-only mount", str(entry))
    vd = corpus.view_dir(name, [], 1700000002000)
    if vd:
        c.eq(read(os.path.join(mnt, "attributes/a.bin")), read(os.path.join(vd, "a.data")),
             "mount.tiledbfs passes timestamp=")
    c.ok(ml.unmount(mnt), "unmount the helper's mount")


def check_exit_codes(c, exe, corpus, tmp):
    mnt = tmp.sub("codes")
    arr = os.path.join(corpus.arrays, "dense_1d")
    enc = os.path.join(corpus.arrays, "encrypted")
    wrong = os.path.join(tmp.path, "wrong.key")
    with open(wrong, "w") as f:
        f.write("00" * 32 + "\n")
    short = os.path.join(tmp.path, "short.key")
    with open(short, "w") as f:
        f.write("abc\n")
    empty_dir = tmp.sub("not-an-array")
    cases = [
        ([os.path.join(tmp.path, "no-such-array"), mnt], 2, "missing array"),
        ([empty_dir, mnt], 2, "a folder that is not an array"),
        ([enc, mnt], 3, "encrypted array without a key"),
        (["-o", f"key_file={wrong}", enc, mnt], 3, "wrong key"),
        (["-o", f"key_file={short}", enc, mnt], 3, "malformed key file"),
        (["-o", f"key_file={tmp.path}/none.key", enc, mnt], 3, "missing key file"),
        ([arr, os.path.join(tmp.path, "no-such-dir")], 4, "missing mount point"),
        ([arr, wrong], 4, "mount point is a file"),
        (["-o", "timestamp=yesterday", arr, mnt], 1, "bad timestamp"),
        (["-o", "cache_size=lots", arr, mnt], 1, "bad cache_size"),
        (["-o", "no_such_fuse_option", arr, mnt], 1, "unknown FUSE option"),
        (["--bogus", arr, mnt], 1, "unknown flag"),
        ([arr], 1, "missing mount point argument"),
        (["-o", "rw", arr, mnt], 1, "rw"),
    ]
    for args, code, what in cases:
        p = ml.mount([exe, *args], mnt)
        err = p.stderr.decode(errors="replace").strip()
        c.eq(p.returncode, code, f"exit code for {what} ({err[:200]})")
        c.ok(err.startswith(("tiledbfs:", "fuse:")), f"{what}: a clear message", err[:200])
        c.ok("00000000000000000000" not in err, f"{what}: the key is never printed")
        if not c.ok(not os.path.ismount(mnt), f"{what}: nothing mounted"):
            ml.unmount(mnt)
    for flag in ("--help", "--version"):
        p = ml.run([exe, flag])
        c.ok(p.returncode == 0 and b"tiledbfs" in p.stdout, f"tiledbfs {flag}")


def main():
    ml.require_fuse()
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    bin_dir, corpus = os.path.abspath(sys.argv[1]), Corpus(os.path.abspath(sys.argv[2]))
    exe = os.path.join(bin_dir, "tiledbfs")
    if not os.path.exists(exe):
        print(f"FAIL: {exe} is not built")
        return 1
    c = ml.Checks("mount_corpus")
    ml.install_signal_cleanup()
    ml.start_watchdog(780)
    tmp = ml.TempDir("tiledbfs-corpus-")
    try:
        names = sys.argv[3:] or corpus.names()
        # Independent (a mount point each), so on threads: most is waiting.
        ml.run_parallel([lambda n=n: check_array(c, corpus, exe, n, tmp) for n in names] + [
            lambda: check_erofs(c, exe, corpus, tmp),
            lambda: check_timestamp(c, exe, corpus, tmp),
            lambda: check_mount_helper(c, bin_dir, corpus, tmp),
            lambda: check_exit_codes(c, exe, corpus, tmp)])
    finally:
        ml.cleanup_all()
        tmp.remove()
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
