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
import os
import random
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from fault_corpus import ArrayInfo, describe, make_mutations, read_file
from fault_layers import (MOUNT_TIMEOUT, UNMOUNT_TIMEOUT, WALK_TIMEOUT, mount_one, start_daemon,
                          view_one)
from fault_tree import walk
import mountlib as ml  # on the path through fault_layers


def env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


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


# ------------------------------------------------------------------- main


def pristine(bin_dir, info, work, checks):
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    log = os.path.join(work, "pristine.txt")
    daemon = start_daemon(bin_dir, info.path, mnt, log, info.key_file)
    state = daemon.wait(MOUNT_TIMEOUT)
    if state != "mounted":
        if state == "hang":
            state = f"hang ({daemon.threads_state()})"
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
                shutil.copytree(info.path, os.path.join(work, name), symlinks=True)
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
