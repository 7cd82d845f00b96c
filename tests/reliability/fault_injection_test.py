#!/usr/bin/env python3
"""Fault injection: corrupted copies of every corpus array, mounted and read.

  fault_injection_test.py BIN_DIR CORPUS [NAME...]

For every array and group of CORPUS/arrays (or the NAMEs given):
  1. The pristine array is mounted once (tiledbfs -f, stderr captured) and
     every file of its tree is read: root, history/<instant>/, fragments/,
     group members. Those bytes (SHA-1) and listings are the reference.
  2. Mount layer: MUTATIONS seeded mutations (a single byte XORed with a
     random nonzero value, or a truncation to a random shorter length) of
     one random file of the array folder (files picked by kind first:
     schema, fragment metadata, data tiles, commit/vacuum/ignore/delete
     files, array/group metadata, group files, legacy files), each on a
     private copy. Each copy is mounted with the daemon in the foreground,
     its stderr captured to a file, and every file of the corrupted tree is
     read, and every file of the pristine tree that the walk did not reach
     (a directory that fails to list) is read by its path.
  3. Viewer layer: VIEWER_MUTATIONS more seeded mutations per array through
     BIN_DIR/tiledbfs-view (in-process, no FUSE): the root listing and a
     few files per mutation (biased towards the mutated fragment), to count
     crashes, hangs and wrong bytes over many more mutations.

Every read must either return the pristine bytes or fail with EIO (also
for a tile that fails AES-GCM authentication and for a length over a
limit), each such error with a log line "tiledbfs: cannot <op> /<path or an ancestor>:
<reason>"; or the mount refuses with exit code 2 (3 only for an encrypted
array) and a "cannot open" message. The daemon must be alive after the
reads, unmount cleanly and exit 0; every step is bounded (a hang is a
failure). A directory whose listing fails while entries of it still read
right fails too (ls and find would hide files that are fine).

Wrong bytes are expected where nothing covers the corrupted byte (a flipped
value in an unfiltered tile is a valid different value): they are counted
as "undetectable (no checksum)" and do not fail. They FAIL where a checksum
or encryption covers the byte:
  - any byte of a data tile file of an attribute or dimension whose filter
    pipeline has CHECKSUM_MD5 / CHECKSUM_SHA256 (its var file if var-sized,
    else its fixed file), also truncations of such a file;
  - in an encrypted array: any byte of a generic tile (schema, enumeration,
    array metadata, delete condition, fragment metadata sections) or of a
    data tile file, except the fragment metadata footer (a plain blob by
    the format) and plain-text commit/vacuum/ignore files.
Isolation ("other files stay readable"): a mutation inside one fragment
folder F leaves every file of fragments/G/ for every other fragment G right
(when the mount opens at all).

Counts per category are printed at the end, per mutation and per file read;
every failure is printed as it happens with the mutation that caused it.
Knobs (environment): TILEDBFS_FAULT_MUTATIONS (mount layer, per array;
default 60), TILEDBFS_FAULT_VIEWER_MUTATIONS (per array; default 120),
TILEDBFS_FAULT_SEED (default 20240601), TILEDBFS_FAULT_WORKERS (default 2),
TILEDBFS_FAULT_BUDGET (seconds for the whole test, default 540: each array
gets an equal share of what is left, mutations past it are skipped and
noted). One mutation again, by hand:
  fault_injection_test.py BIN_DIR CORPUS NAME --replay FILE flip OFFSET XOR
  fault_injection_test.py BIN_DIR CORPUS NAME --replay FILE truncate LENGTH
Exits 77 without /dev/fuse or fusermount3.
"""
import collections
import errno
import hashlib
import json
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402

MOUNT_TIMEOUT = 20  # s for the daemon to mount or refuse
WALK_TIMEOUT = 60  # s for reading every file of one mount
UNMOUNT_TIMEOUT = 20  # s for the daemon to exit after fusermount3 -u
VIEW_TIMEOUT = 20  # s for one tiledbfs-view call
VIEW_PICKS = 4  # files read by tiledbfs-view per mutation, besides the root listing

CHECKSUM_FILTERS = ("CHECKSUM_MD5", "CHECKSUM_SHA256")


def env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def digest(data):
    return hashlib.sha1(data).hexdigest()


# ---------------------------------------------------------------- the tree


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def probe(root, rel, is_dir, stop):
    """One entry of a tree: ('dir', names) | ('file', sha1) | ('err', errno)."""
    full = os.path.join(root, rel) if rel else root
    if stop.is_set():
        return ("err", errno.ECANCELED)
    try:
        if is_dir:
            return ("dir", tuple(sorted(os.listdir(full))))
        return ("file", digest(read_file(full)))
    except OSError as e:
        return ("err", e.errno)


def walk(root, stop, extra=()):
    """Every directory and file under root: {rel: entry}; directories keyed
    with a trailing '/' ('' + '/' for the root). Then the paths of `extra`
    (rel keys) that the walk did not reach are probed directly."""
    out = {}
    stack = [""]
    while stack and not stop.is_set():
        d = stack.pop()
        entry = probe(root, d, True, stop)
        out[d + "/"] = entry
        if entry[0] != "dir":
            continue
        for name in entry[1]:
            rel = f"{d}/{name}" if d else name
            try:
                st = os.lstat(os.path.join(root, rel))
            except OSError as e:
                out[rel] = ("err", e.errno)
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)
            else:
                out[rel] = probe(root, rel, False, stop)
    for key in extra:
        if stop.is_set():
            break
        if key in out:
            continue
        if key.endswith("/"):
            out[key] = probe(root, key[:-1], True, stop)
        else:
            out[key] = probe(root, key, False, stop)
    return out


# ------------------------------------------------------------- the daemon


def start_daemon(bin_dir, array, mnt, log, key_file):
    """One foreground daemon on `array` at `mnt`, stderr to `log`, not yet
    waited for (ml.Daemon.wait). `mnt` must be a real path (no symlinks) so
    that /proc/self/mounts shows it as is."""
    cmd = [os.path.join(bin_dir, "tiledbfs"), "-f", array, mnt]
    if key_file:
        cmd += ["-o", f"key_file={key_file}"]
    return ml.Daemon(cmd, mnt, log, wait=None)


# ------------------------------------------------------------ the corpus


def file_kind(rel):
    """What a file of the array folder holds (for picking and reporting)."""
    base = os.path.basename(rel)
    parts = rel.split("/")
    if "__schema" in parts or base == "__array_schema.tdb" or "__enumerations" in parts:
        return "schema"
    if base == "__fragment_metadata.tdb" or "__fragment_meta" in parts:
        return "fragment_metadata"
    if "__meta" in parts:
        return "metadata"
    if "__group" in parts or base == "__tiledb_group.tdb":
        return "group"
    if "__commits" in parts or base.endswith((".vac", ".ign", ".con", ".del", ".upd", ".wrt")):
        return "commits"
    if base.endswith(".tdb") and len(parts) >= 2:
        return "data"
    return "other"


FRAGMENT_DIR = re.compile(r"^__(\d+_\d+_)?[0-9a-f]{32}(_\d+)*$|^__\d+_\d+_[0-9a-f]{32}(_\d+)?$")


def fragment_of(rel):
    """(folder prefix of the array inside the tree, fragment folder name) if
    rel is a file inside a fragment folder, else None."""
    parts = rel.split("/")
    if len(parts) < 2 or not FRAGMENT_DIR.match(parts[-2]):
        return None
    prefix = parts[:-2]
    if prefix and prefix[-1] == "__fragments":
        prefix = prefix[:-1]
    return "/".join(prefix), parts[-2]


class ArrayInfo:
    def __init__(self, corpus, name):
        self.name = name
        self.path = os.path.join(corpus, "arrays", name)
        key = self.path + ".key"
        self.key_file = key if os.path.exists(key) else None
        self.encrypted = self.key_file is not None
        self.files = []  # (rel, size, kind), size > 0
        for root, _, names in os.walk(self.path):
            for n in sorted(names):
                full = os.path.join(root, n)
                rel = os.path.relpath(full, self.path)
                size = os.path.getsize(full)
                if size > 0:
                    self.files.append((rel, size, file_kind(rel)))
        self.files.sort()
        self.by_kind = collections.defaultdict(list)
        for f in self.files:
            self.by_kind[f[2]].append(f)
        self.kinds = sorted(self.by_kind)
        self.checksummed = set()  # rel files covered by a checksum filter
        self.tree = None  # pristine {key: entry}
        self.tree_files = []
        self.children = {}  # pristine directory key -> entry keys

    def footer_start(self, rel):
        """Offset of the footer of a fragment metadata file (format >= 10:
        the last 8 bytes give its length)."""
        data = read_file(os.path.join(self.path, rel))
        if len(data) < 8:
            return 0
        n = int.from_bytes(data[-8:], "little")
        return max(0, len(data) - 8 - n) if n < len(data) else 0

    def find_checksummed(self, tree_root_schema):
        """Data files whose tiles a checksum filter covers: a<i>.tdb (fixed) or
        a<i>_var.tdb (var) of attribute i, d<i>... of dimension i, where the
        fragment was written with this one schema (arrays with one schema)."""
        schemas = [f for f in self.files if f[2] == "schema" and "__enumerations" not in f[0]]
        if len(schemas) != 1 or not tree_root_schema:
            return
        try:
            schema = json.loads(tree_root_schema)
        except ValueError:
            return
        covered = set()
        coords = schema.get("coords_filters", [])
        for prefix, fields in (("a", schema.get("attrs", [])), ("d", schema.get("dims", []))):
            for i, field in enumerate(fields):
                filters = field.get("filters") or (coords if prefix == "d" else [])
                if any(f in CHECKSUM_FILTERS for f in filters):
                    covered.add(f"{prefix}{i}" + ("_var" if field.get("var") else ""))
        for rel, _, kind in self.files:
            if kind == "data" and os.path.basename(rel)[:-4] in covered:
                self.checksummed.add(rel)

    def covered(self, mutation):
        """True if a checksum or encryption covers the mutated bytes."""
        rel, op, off = mutation["file"], mutation["op"], mutation["offset"]
        if rel in self.checksummed:
            return True
        if not self.encrypted:
            return False
        kind = file_kind(rel)
        if kind in ("schema", "metadata", "data"):
            return True
        if kind == "commits":
            return rel.endswith(".del") or rel.endswith(".upd")
        if kind == "fragment_metadata" and os.path.basename(rel) == "__fragment_metadata.tdb":
            return op == "flip" and off < self.footer_start(rel)
        return False


def make_mutations(info, n, seed, salt):
    rng = random.Random(f"{seed}:{salt}:{info.name}")
    out = []
    for _ in range(n):
        kind = rng.choice(info.kinds)
        rel, size, _ = rng.choice(info.by_kind[kind])
        if rng.random() < 0.75:
            out.append({"file": rel, "op": "flip", "offset": rng.randrange(size),
                        "xor": rng.randrange(1, 256)})
        else:
            out.append({"file": rel, "op": "truncate", "offset": rng.randrange(size), "xor": 0})
    return out


def describe(m):
    if m["op"] == "flip":
        return f"{m['file']} byte {m['offset']} ^= 0x{m['xor']:02x}"
    return f"{m['file']} truncated to {m['offset']}"


def apply_mutation(copy, m):
    path = os.path.join(copy, m["file"])
    if m["op"] == "flip":
        with open(path, "r+b") as f:
            f.seek(m["offset"])
            b = f.read(1)
            f.seek(m["offset"])
            f.write(bytes([b[0] ^ m["xor"]]))
    else:
        os.truncate(path, m["offset"])


def restore(info, copy, m):
    shutil.copyfile(os.path.join(info.path, m["file"]), os.path.join(copy, m["file"]))


# ---------------------------------------------------------------- checks

# The errno the daemon answers with for every error of the data (fusefs
# ErrnoFor): EIO, corrupt, unsupported, failed authentication and lengths
# over a limit alike.
ERRNO_OUTCOME = {errno.EIO: "eio"}

CATEGORIES = ("right", "eio", "refused", "undetectable", "covered_wrong", "crash", "hang",
              "failure")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.mutations = collections.Counter()  # (layer, category)
        self.files = collections.Counter()  # (layer, outcome)
        self.problems = collections.Counter()  # (layer, problem)
        self.by_kind = collections.defaultdict(collections.Counter)
        self.slowest = (0.0, "")
        self.skipped = 0

    def add(self, layer, category, kind, file_counts):
        with self.lock:
            self.mutations[(layer, category)] += 1
            self.by_kind[kind][category] += 1
            for k, v in file_counts.items():
                self.files[(layer, k)] += v

    def fail(self, layer, problem, text):
        with self.lock:
            self.problems[(layer, problem)] += 1
        print(f"FAIL: {text}", flush=True)


def logged(lines, rel):
    """A log line 'tiledbfs: cannot <op> /<rel or an ancestor>: <reason>'."""
    p = rel.rstrip("/")
    paths = ["/" + p]
    while "/" in p:
        p = p.rsplit("/", 1)[0]
        paths.append("/" + p)
    paths.append("/")
    for line in lines:
        if not line.startswith("tiledbfs: cannot "):
            continue
        for d in paths:
            i = line.find(" " + d + ": ")
            if i >= 0 and line[i + len(d) + 3:].strip():
                return True
    return False


def compare(info, tree):
    """Per-path outcomes of a corrupted tree against the pristine one."""
    counts = collections.Counter()
    errs, wrong, missing, extra, other = [], [], [], [], []
    for key, entry in tree.items():
        want = info.tree.get(key)
        if entry[0] == "err":
            if entry[1] in ERRNO_OUTCOME:
                counts[ERRNO_OUTCOME[entry[1]]] += 1
                errs.append(key)
            elif entry[1] == errno.ENOENT and want is not None:
                counts["missing"] += 1
                missing.append(key)
            elif entry[1] == errno.ENOENT:
                pass  # a name listed in a corrupted listing only
            else:
                counts["other_errno"] += 1
                other.append((key, errno.errorcode.get(entry[1], entry[1])))
        elif want is None:
            counts["extra"] += 1
            extra.append(key)
        elif entry != want:
            counts["wrong"] += 1
            wrong.append(key)
        else:
            counts["right"] += 1
    return counts, errs, wrong, missing, extra, other


def isolation_paths(info, m):
    """Pristine files of fragments/G/ for every fragment G other than the
    mutated one (same array of the tree)."""
    fr = fragment_of(m["file"])
    if fr is None:
        return []
    prefix, frag = fr
    base = (prefix + "/" if prefix else "") + "fragments/"
    out = []
    for key in info.tree:
        if key.startswith(base) and not key.endswith("/"):
            g = key[len(base):].split("/", 1)[0]
            if g != frag and "/" in key[len(base):]:
                out.append(key)
    return out


# ------------------------------------------------------------ mount layer


def mount_one(bin_dir, info, m, work, stats, deadline):
    """Mutates the worker's private copy, mounts it, reads everything."""
    copy = os.path.join(work, "array")
    mnt = os.path.join(work, "mnt")
    log = os.path.join(work, "stderr.txt")
    apply_mutation(copy, m)
    what = f"{info.name}: {describe(m)}"
    covered = info.covered(m)
    kind = f"{file_kind(m['file'])} {m['op']}" + (" (covered)" if covered else "")

    def fail(problem, text):
        stats.fail("mount", problem, f"{what}: {text}")

    try:
        daemon = start_daemon(bin_dir, copy, mnt, log, info.key_file)
        state = daemon.wait(MOUNT_TIMEOUT)
        if state == "hang":
            daemon.kill()
            daemon.stop(UNMOUNT_TIMEOUT)
            fail("hang", f"mount neither live nor refused after {MOUNT_TIMEOUT} s")
            stats.add("mount", "hang", kind, {})
            return
        if state != "mounted":
            rc = state[1]
            daemon.stop(UNMOUNT_TIMEOUT)
            lines = daemon.log_lines()
            msg = any(line.startswith("tiledbfs: cannot open ") for line in lines)
            if rc < 0:
                fail("crash", f"the daemon died of signal {-rc} while opening")
                stats.add("mount", "crash", kind, {})
            elif (rc == 2 or (rc == 3 and info.encrypted)) and msg:
                stats.add("mount", "refused", kind, {})
            else:
                fail("refused_bad_exit", f"mount refused with exit {rc}, log {lines[-3:]!r}")
                stats.add("mount", "failure", kind, {})
            return

        stop = threading.Event()
        hung = []

        def on_timeout():
            hung.append(True)
            stop.set()
            daemon.kill()

        timer = threading.Timer(max(1.0, min(WALK_TIMEOUT, deadline - time.monotonic())),
                                on_timeout)
        timer.start()
        t0 = time.monotonic()
        try:
            tree = walk(mnt, stop, extra=list(info.tree))
        finally:
            timer.cancel()
        elapsed = time.monotonic() - t0
        alive = daemon.proc.poll() is None
        rc = daemon.stop(UNMOUNT_TIMEOUT)
        lines = daemon.log_lines()
        with stats.lock:
            if elapsed > stats.slowest[0]:
                stats.slowest = (elapsed, what)
        if hung:
            fail("hang", f"reads did not finish in {WALK_TIMEOUT} s (hang); daemon killed")
            stats.add("mount", "hang", kind, {})
            return
        if not alive or (rc is not None and rc < 0):
            sig = -rc if rc is not None and rc < 0 else "?"
            fail("crash", f"the daemon died during the reads (signal {sig}); "
                 f"log tail {lines[-3:]!r}")
            stats.add("mount", "crash", kind, {})
            return
        failed = False
        if rc is None:
            fail("hang", "the daemon did not exit after the unmount")
            failed = True
        elif rc != 0:
            fail("unmount_exit", f"the daemon exited {rc} after the unmount")
            failed = True
        counts, errs, wrong, missing, extra, other = compare(info, tree)
        unlogged = [k for k in errs if not logged(lines, k)]
        if unlogged:
            fail("unlogged_error", f"errors without a log line naming the file: {unlogged[:3]}")
            failed = True
        if other:
            fail("bad_errno", f"errors other than EIO: {other[:3]}")
            failed = True
        # A directory whose listing fails hides every entry from ls and find:
        # fine only if none of its entries can be read either.
        hidden = []
        for key, entry in tree.items():
            if key.endswith("/") and entry[0] == "err" and key in info.tree:
                kids = [k for k in info.children.get(key, ()) if tree.get(k) == info.tree[k]]
                if kids:
                    hidden.append((key, len(kids)))
        if hidden:
            counts["listing_hides_entries"] += 1
            fail("listing_hides_entries",
                 f"a listing fails though entries of it read right (dir, entries): {hidden[:3]}")
            failed = True
        bad_iso = [(k, tree.get(k)) for k in isolation_paths(info, m)
                   if tree.get(k) != info.tree.get(k)]
        if bad_iso:
            fail("isolation", f"another fragment's files not right: {ml.short(bad_iso[:2])}")
            failed = True
        changed = wrong or missing or extra
        if changed and covered:
            fail("covered_wrong", f"checksum/encryption-covered bytes changed the tree: "
                 f"wrong {wrong[:3]}, missing {missing[:3]}, extra {extra[:3]}")
            category = "covered_wrong"
        elif failed:
            category = "failure"
        elif changed:
            category = "undetectable"
        elif errs:
            category = "eio"
        else:
            category = "right"
        stats.add("mount", category, kind, counts)
    finally:
        if ml.is_mounted(mnt):
            ml.force_unmount(mnt)
        restore(info, copy, m)


# ----------------------------------------------------------- viewer layer


def view(bin_dir, info, copy, rel):
    cmd = [os.path.join(bin_dir, "tiledbfs-view")]
    if info.key_file:
        cmd += ["--key-file", info.key_file]
    cmd += [copy, rel]
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=VIEW_TIMEOUT,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return ("hang", None, b"")
    return ("rc", p.returncode, p.stdout, p.stderr)


def view_one(bin_dir, info, m, work, stats, rng):
    """Mutates the worker's private copy and runs tiledbfs-view on the root
    listing and VIEW_PICKS files (half of them from the mutated fragment)."""
    copy = os.path.join(work, "array")
    apply_mutation(copy, m)
    what = f"{info.name} (viewer): {describe(m)}"
    covered = info.covered(m)
    kind = f"{file_kind(m['file'])} {m['op']}" + (" (covered)" if covered else "")

    def fail(problem, text):
        stats.fail("viewer", problem, f"{what}: {text}")

    try:
        related = []
        fr = fragment_of(m["file"])
        if fr is not None:
            base = (fr[0] + "/" if fr[0] else "") + "fragments/" + fr[1] + "/"
            related = [f for f in info.tree_files if f.startswith(base)]
        picks = [""] + [rng.choice(related) if related and rng.random() < 0.5
                        else rng.choice(info.tree_files) for _ in range(VIEW_PICKS)]
        counts = collections.Counter()
        category = "right"
        for rel in picks:
            r = view(bin_dir, info, copy, rel)
            if r[0] == "hang":
                fail("hang", f"tiledbfs-view {rel!r} did not finish in {VIEW_TIMEOUT} s")
                category = "hang"
                break
            rc, out, err = r[1], r[2], r[3]
            if rc < 0:
                fail("crash", f"tiledbfs-view {rel!r} died of signal {-rc}")
                category = "crash"
                break
            if rc == 1:
                text = err.decode("utf-8", "replace").strip()
                if not text.startswith("tiledbfs-view: ") or text.endswith(":"):
                    fail("unlogged_error", f"tiledbfs-view {rel!r} exit 1 without a reason")
                    category = "failure"
                    break
                if rel == "" and "cannot open" in text:
                    category = "refused"
                    break
                if "not found" in text:
                    counts["missing"] += 1
                    if covered:
                        fail("covered_wrong", f"covered bytes made {rel!r} disappear: {text}")
                        category = "covered_wrong"
                        break
                    category = "undetectable"
                    continue
                counts["error"] += 1
                if category == "right":
                    category = "eio"
                continue
            if rc != 0:
                fail("bad_exit", f"tiledbfs-view {rel!r} exit {rc}")
                category = "failure"
                break
            if rel == "":
                got = ("dir", tuple(sorted(n.rstrip("/") for n in
                                           out.decode("utf-8", "replace").splitlines())))
            else:
                got = ("file", digest(out))
            if got == info.tree[rel or "/"]:
                counts["right"] += 1
                continue
            counts["wrong"] += 1
            if covered:
                fail("covered_wrong", f"checksum/encryption-covered bytes read wrong: {rel!r}")
                category = "covered_wrong"
                break
            category = "undetectable"
        stats.add("viewer", category, kind, counts)
    finally:
        restore(info, copy, m)


# ------------------------------------------------------------------- main


def pristine(bin_dir, info, work, checks):
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    log = os.path.join(work, "pristine.txt")
    daemon = start_daemon(bin_dir, info.path, mnt, log, info.key_file)
    state = daemon.wait(MOUNT_TIMEOUT)
    if state != "mounted":
        daemon.kill()
        daemon.stop(UNMOUNT_TIMEOUT)
        checks.ok(False, f"{info.name}: the pristine array mounts", f"{state} {daemon.log_lines()}")
        return False
    stop = threading.Event()
    timer = threading.Timer(WALK_TIMEOUT * 2, lambda: (stop.set(), daemon.kill()))
    timer.start()
    try:
        tree = walk(mnt, stop)
    finally:
        timer.cancel()
    schema = None
    try:
        schema = read_file(os.path.join(mnt, "schema.json"))
    except OSError:
        pass
    rc = daemon.stop(UNMOUNT_TIMEOUT)
    errs = {k: v for k, v in tree.items() if v[0] == "err"}
    checks.ok(not errs, f"{info.name}: the pristine tree reads without error", ml.short(errs))
    checks.ok(rc == 0, f"{info.name}: the pristine daemon exits 0", f"rc {rc}")
    info.tree = tree
    info.tree_files = sorted(k for k, v in tree.items() if v[0] == "file")
    for key in tree:
        if key == "/":
            continue
        parent = key.rstrip("/").rsplit("/", 1)[0] + "/" if "/" in key.rstrip("/") else "/"
        info.children.setdefault(parent, []).append(key)
    info.find_checksummed(schema)
    return not errs


def interleave(a, b):
    """a and b merged in proportion, so a budget cut trims both alike."""
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and i * len(b) <= j * len(a)):
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out


def print_summary(stats, total):
    print("\nper mutation (layer: category = count):")
    for layer in ("mount", "viewer"):
        n = sum(v for (l, _), v in stats.mutations.items() if l == layer)
        row = ", ".join(f"{c} {stats.mutations[(layer, c)]}" for c in CATEGORIES)
        print(f"  {layer} ({n}): {row}")
    print("per file read (layer: outcome = count):")
    for layer in ("mount", "viewer"):
        outs = sorted({k for (l, k) in stats.files if l == layer})
        print(f"  {layer}: " + ", ".join(f"{k} {stats.files[(layer, k)]}" for k in outs))
    print("per mutated file kind (both layers):")
    for k in sorted(stats.by_kind):
        c = stats.by_kind[k]
        print(f"  {k}: " + ", ".join(f"{x} {c[x]}" for x in CATEGORIES if c[x]))
    if stats.problems:
        print("problems (each a failure; a mutation may have several):")
        for (layer, problem), n in sorted(stats.problems.items()):
            print(f"  {layer}: {problem} {n}")
    print(f"slowest mount read-through: {stats.slowest[0]:.1f} s ({stats.slowest[1]})")
    print(f"run time {total:.0f} s", flush=True)


def main():
    args = sys.argv[1:]
    replay = None
    if "--replay" in args:
        # --replay FILE flip|truncate OFFSET [XOR]: one mutation of one array.
        i = args.index("--replay")
        rest = args[i + 1:]
        replay = {"file": rest[0], "op": rest[1], "offset": int(rest[2]),
                  "xor": int(rest[3], 0) if len(rest) > 3 else 0}
        args = args[:i]
    if len(args) < 2:
        print(__doc__)
        return 2
    bin_dir, corpus = args[0], args[1]
    names = args[2:] or sorted(
        n for n in os.listdir(os.path.join(corpus, "arrays"))
        if os.path.isdir(os.path.join(corpus, "arrays", n)))
    ml.require_fuse()
    for tool in ("tiledbfs", "tiledbfs-view"):
        if not os.access(os.path.join(bin_dir, tool), os.X_OK):
            print(f"FAIL: {bin_dir}/{tool} is missing")
            return 1
    n_mount = env_int("TILEDBFS_FAULT_MUTATIONS", 60)
    n_view = env_int("TILEDBFS_FAULT_VIEWER_MUTATIONS", 120)
    seed = env_int("TILEDBFS_FAULT_SEED", 20240601)
    workers = max(1, env_int("TILEDBFS_FAULT_WORKERS", 2))
    budget = env_int("TILEDBFS_FAULT_BUDGET", 540)
    start = time.monotonic()
    deadline = start + budget
    ml.install_signal_cleanup()
    ml.start_watchdog(budget + 120)
    checks = ml.Checks("fault_injection")
    stats = Stats()
    tmp = ml.TempDir("tiledbfs-fault-")
    tmp.path = os.path.realpath(tmp.path)  # mount points as /proc/self/mounts shows them
    if replay:
        print(f"replay: {describe(replay)} on {names}", flush=True)
    else:
        print(f"fault injection: {len(names)} arrays, {n_mount} mounted and {n_view} viewed "
              f"mutations each, seed {seed}, {workers} workers, budget {budget} s", flush=True)
    try:
        for index, name in enumerate(names):
            t0 = time.monotonic()
            # Each array gets an equal share of what is left of the budget.
            array_deadline = t0 + (deadline - t0) / (len(names) - index)
            info = ArrayInfo(corpus, name)
            if not pristine(bin_dir, info, tmp.sub(f"{name}/pristine"), checks):
                continue
            # One private copy and mount point per worker: a mutation is applied
            # to it, mounted (or viewed), read, unmounted and undone before the
            # worker takes the next one.
            free = []
            for w in range(workers):
                work = tmp.sub(f"{name}/w{w}")
                shutil.copytree(info.path, os.path.join(work, "array"), symlinks=True)
                os.makedirs(os.path.join(work, "mnt"), exist_ok=True)
                free.append(work)
            free_lock = threading.Condition()
            ran = collections.Counter()

            def run(task, name=name, free=free, free_lock=free_lock, ran=ran,
                    array_deadline=array_deadline):
                layer, fn = task
                with free_lock:
                    while not free:
                        free_lock.wait()
                    work = free.pop()
                try:
                    if time.monotonic() > array_deadline:
                        ran[layer + " skipped"] += 1
                        return
                    ran[layer] += 1
                    fn(work)
                except Exception as e:  # a bug in this test, not in tiledbfs
                    stats.fail(layer, "test_error", f"{name}: test error {type(e).__name__}: {e}")
                finally:
                    with free_lock:
                        free.append(work)
                        free_lock.notify()

            mount_deadline = array_deadline + WALK_TIMEOUT
            if replay:
                mount_tasks = [("mount", lambda w, m=replay: mount_one(
                    bin_dir, info, m, w, stats, mount_deadline))]
                view_tasks = [("viewer", lambda w, m=replay: view_one(
                    bin_dir, info, m, w, stats, random.Random(seed)))]
            else:
                mount_tasks = [("mount", lambda w, m=m: mount_one(
                    bin_dir, info, m, w, stats, mount_deadline))
                    for m in make_mutations(info, n_mount, seed, "mount")]
                vrng = random.Random(f"{seed}:pick:{name}")
                view_tasks = [("viewer", lambda w, m=m, r=random.Random(vrng.random()): view_one(
                    bin_dir, info, m, w, stats, r))
                    for m in make_mutations(info, n_view, seed, "view")]
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(run, interleave(mount_tasks, view_tasks)))
            skipped = ran["mount skipped"] + ran["viewer skipped"]
            stats.skipped += skipped
            print(f"  {name}: {len(info.tree_files)} files in the tree, {len(info.files)} in "
                  f"the folder ({len(info.checksummed)} checksummed), {ran['mount']} mounted, "
                  f"{ran['viewer']} viewed" + (f", {skipped} over budget" if skipped else "") +
                  f", {time.monotonic() - t0:.1f} s", flush=True)
    finally:
        ml.cleanup_all()
        tmp.remove()

    print_summary(stats, time.monotonic() - start)
    if stats.skipped:
        checks.note(f"{stats.skipped} mutations not run: over the time budget "
                    f"(TILEDBFS_FAULT_BUDGET={budget})")
    for (layer, problem), n in sorted(stats.problems.items()):
        checks.eq(n, 0, f"{layer} layer: {problem}")
    for layer in ("mount", "viewer"):
        for c in ("covered_wrong", "crash", "hang"):
            checks.eq(stats.mutations[(layer, c)], 0, f"{layer} layer: {c} mutations")
    checks.ok(sum(v for (l, _), v in stats.mutations.items() if l == "mount") > 0,
              "some mutations ran through a mount")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
