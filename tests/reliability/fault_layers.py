"""fault_injection_test.py's two layers: one mutation mounted with the
daemon and every file read (mount_one), or read in-process through
tiledbfs-view (view_one); each judged against the pristine tree and counted.
"""
import collections
import os
import subprocess
import sys
import threading
import time

from fault_corpus import apply_mutation, describe, file_kind, fragment_of, restore
from fault_tree import compare, digest, isolation_paths, logged, walk

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402


MOUNT_TIMEOUT = 20  # s for the daemon to mount or refuse
WALK_TIMEOUT = 60  # s for reading every file of one mount
UNMOUNT_TIMEOUT = 20  # s for the daemon to exit after fusermount3 -u
VIEW_TIMEOUT = 20  # s for one tiledbfs-view call
VIEW_PICKS = 4  # files read by tiledbfs-view per mutation, besides the root listing


def start_daemon(bin_dir, array, mnt, log, key_file):
    """One foreground daemon on `array` at `mnt`, stderr to `log`, not yet
    waited for (ml.Daemon.wait). `mnt` must be a real path (no symlinks) so
    that /proc/self/mounts shows it as is."""
    cmd = [os.path.join(bin_dir, "tiledbfs"), "-f", array, mnt]
    if key_file:
        cmd += ["-o", f"key_file={key_file}"]
    return ml.Daemon(cmd, mnt, log, wait=None)


# ------------------------------------------------------------ mount layer


def mount_one(bin_dir, info, m, work, stats, deadline):
    """Mutates the worker's private copy, mounts it, reads everything."""
    copy = os.path.join(work, info.name)  # named as the original: data.parquet names it
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
            threads = daemon.threads_state()
            daemon.kill()
            daemon.stop(UNMOUNT_TIMEOUT)
            fail("hang", f"mount neither live nor refused after {MOUNT_TIMEOUT} s: {threads}")
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
    copy = os.path.join(work, info.name)  # named as the original: data.parquet names it
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
