"""Shared pieces of the mount tests: skip without FUSE, mount with bounded
waits, always unmount (even on failure or timeout), and count checks.

Every wait is bounded: commands run with a timeout, and a watchdog aborts
the FUSE connection and lazily unmounts if the whole test outlives its
budget, so a hung daemon cannot hang the test (or leave a mount behind).
"""
import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
CMD_TIMEOUT = 120  # seconds for any one command


def require_fuse():
    """Exits 77 (ctest SKIP_RETURN_CODE) where mounting cannot work."""
    if not os.path.exists("/dev/fuse"):
        print("SKIP: /dev/fuse is missing; mount tests need FUSE")
        sys.exit(SKIP)
    if shutil.which("fusermount3") is None:
        print("SKIP: fusermount3 is missing (Debian: apt-get install fuse3)")
        sys.exit(SKIP)


class Checks:
    """Counts checks; prints a FAIL line per failure and a closing summary."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.notes = []

    def ok(self, cond, what, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}" + (f": {detail}" if detail else ""), flush=True)
        return cond

    def eq(self, got, want, what):
        return self.ok(got == want, what, f"got {short(got)!s}, want {short(want)!s}")

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)
            print(f"NOTE: {text}", flush=True)

    def finish(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed", flush=True)
        return 1 if self.failed or not self.passed else 0


def short(v, n=200):
    s = repr(v)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} chars)"


def run(cmd, **kw):
    """subprocess.run with a timeout and captured output (bytes)."""
    kw.setdefault("timeout", CMD_TIMEOUT)
    kw.setdefault("capture_output", True)
    return subprocess.run(cmd, **kw)


def sh(script, **kw):
    return run(["bash", "-c", script], **kw)


def errno_of(fn, *args, **kw):
    """The errno that fn(*args) fails with, or 0 if it succeeds."""
    try:
        fn(*args, **kw)
        return 0
    except OSError as e:
        return e.errno


def fuse_connection(mnt):
    """/sys/fs/fuse/connections/<N> of the mount at mnt, if visible."""
    try:
        dev = os.stat(mnt).st_dev
    except OSError:
        return None
    path = f"/sys/fs/fuse/connections/{os.minor(dev)}"
    return path if os.path.isdir(path) else None


_live_mounts = set()
_lock = threading.Lock()


def force_unmount(mnt, conn=None):
    """Aborts the FUSE connection (unblocks every pending request) and
    detaches the mount. For cleanup after a failure or a timeout."""
    if conn:
        try:
            with open(os.path.join(conn, "abort"), "w") as f:
                f.write("1")
        except OSError:
            pass
    for cmd in (["fusermount3", "-u", "-z", mnt], ["umount", "-l", mnt]):
        if not os.path.ismount(mnt):
            break
        try:
            subprocess.run(cmd, capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            pass


def unmount(mnt, timeout=20):
    """fusermount3 -u, retried while busy, then forced. True if clean."""
    conn = fuse_connection(mnt)
    deadline = time.monotonic() + timeout
    clean = False
    while os.path.ismount(mnt) and time.monotonic() < deadline:
        try:
            p = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=20)
            if p.returncode == 0:
                clean = True
                break
        except subprocess.TimeoutExpired:
            break
        time.sleep(0.2)
    if os.path.ismount(mnt):
        clean = False
        force_unmount(mnt, conn)
    with _lock:
        _live_mounts.discard(mnt)
    return clean or not os.path.ismount(mnt)


def cleanup_all():
    with _lock:
        mounts = list(_live_mounts)
    for m in mounts:
        force_unmount(m, fuse_connection(m))
        with _lock:
            _live_mounts.discard(m)


def register(mnt):
    with _lock:
        _live_mounts.add(mnt)


def start_watchdog(seconds):
    """After `seconds`, aborts every mount this test made and exits 1."""

    def fire():
        print(f"FAIL: test exceeded its {seconds} s budget; aborting mounts", flush=True)
        cleanup_all()
        os._exit(1)

    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return t


def install_signal_cleanup():
    def handler(signum, frame):
        cleanup_all()
        sys.exit(128 + signum)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, handler)


def wait_until(pred, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def mount_entry(mnt):
    """(source, fstype, options) of mnt in /proc/mounts, or None."""
    real = os.path.realpath(mnt)
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[1].replace("\\040", " ") == real:
                return parts[0], parts[2], parts[3].split(",")
    return None


class TempDir:
    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def sub(self, name):
        p = os.path.join(self.path, name)
        os.makedirs(p, exist_ok=True)
        return p

    def remove(self):
        # Never recurse into something still mounted.
        for root, dirs, _ in os.walk(self.path):
            for d in list(dirs):
                if os.path.ismount(os.path.join(root, d)):
                    force_unmount(os.path.join(root, d))
        shutil.rmtree(self.path, ignore_errors=True)


def daemon_pids(marker):
    """PIDs of processes whose command line contains `marker` (a path)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


EROFS = errno.EROFS


def run_checks(name, watchdog_s, tmp_prefix, body):
    """The frame of a mount test's main: signal cleanup, a watchdog, a
    temporary folder; body(checks, tmp) runs the checks; every mount is
    undone and the folder removed whatever happens. Returns the exit code."""
    c = Checks(name)
    install_signal_cleanup()
    start_watchdog(watchdog_s)
    tmp = TempDir(tmp_prefix)
    try:
        body(c, tmp)
    finally:
        cleanup_all()
        tmp.remove()
    return c.finish()
