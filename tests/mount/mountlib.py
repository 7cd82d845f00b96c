"""Shared pieces of the mount tests: skip without FUSE, mount with bounded
waits, always unmount (even on failure or timeout), and count checks.

Every wait is bounded: commands run with a timeout, and a watchdog aborts
the FUSE connection and lazily unmounts if the whole test outlives its
budget, so a hung daemon cannot hang the test (or leave a mount behind).
"""
import concurrent.futures
import errno
import json
import os
import select
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
    """Counts checks; prints a FAIL line per failure and a closing summary.
    Safe to use from several threads at once."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.notes = []
        self._lock = threading.RLock()

    def ok(self, cond, what, detail=""):
        with self._lock:
            if cond:
                self.passed += 1
            else:
                self.failed += 1
                print(f"FAIL: {what}" + (f": {detail}" if detail else ""), flush=True)
        return cond

    def eq(self, got, want, what):
        return self.ok(got == want, what, f"got {short(got)!s}, want {short(want)!s}")

    def note(self, text):
        with self._lock:
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
    forget(mnt)
    return clean or not os.path.ismount(mnt)


def cleanup_all():
    with _lock:
        mounts = list(_live_mounts)
    for m in mounts:
        force_unmount(m, fuse_connection(m))
        forget(m)


def register(mnt):
    """Adds mnt to what cleanup_all() undoes."""
    with _lock:
        _live_mounts.add(mnt)


def forget(mnt):
    """Takes mnt off what cleanup_all() undoes (it has been unmounted)."""
    with _lock:
        _live_mounts.discard(mnt)


def is_mounted(real_mnt):
    """True if real_mnt (a path without symlinks) is in /proc/self/mounts.
    Never touches the mount itself, so a hung daemon cannot block it (as
    os.path.ismount, which stats the FUSE root, can)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[1].replace("\\040", " ") == real_mnt:
                return True
    return False


def make_bench_array(bin_dir, tmp, kind, name, scale):
    """Array `name` of scripts/make-bench-arrays.sh (BENCH_ARRAYS=kind) at
    `scale`, under tmp's bench/; (folder, None) or (None, why)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, BENCH_ARRAYS=kind, TILEDBFS_BUILD=os.path.dirname(bin_dir))
    p = run([os.path.join(root, "scripts", "make-bench-arrays.sh"), tmp.sub("bench"),
             str(scale)], env=env, timeout=900)
    if p.returncode != 0:
        return None, p.stderr.decode("utf-8", "replace")[-400:]
    return os.path.join(tmp.path, "bench", name), None


def mount(cmd, mnt, **kw):
    """Runs a mount command that returns once the mount is live (tiledbfs
    without -f, mount.tiledbfs) and registers mnt for cleanup; the
    CompletedProcess (run's)."""
    p = run(cmd, **kw)
    register(mnt)
    return p


class Daemon:
    """A FUSE daemon run in the foreground (`cmd`, which names the mount
    point `mnt`) as a child in a session of its own: stdin closed, stderr to
    the file `log`, stdout to the file `out` (default: `log` too), `env` its
    environment. mnt is registered at once, so that cleanup_all() undoes the
    mount however the test ends. Unless wait is None, waits up to `wait`
    seconds for the mount (live says whether it came). With `checks` (a
    Checks), a daemon that must be killed after its unmount is a failure."""

    def __init__(self, cmd, mnt, log, out=None, env=None, wait=60, checks=None):
        self.cmd, self.mnt, self.log_path = list(cmd), mnt, log
        self.real_mnt = os.path.realpath(mnt)  # not mounted yet: cannot hang
        self.out_path = out or log
        self.checks = checks
        self.errf = open(log, "wb")
        self.outf = open(out, "wb") if out else self.errf
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self.outf,
                                     stderr=self.errf, env=env, start_new_session=True)
        register(mnt)
        self.live = False
        if wait is not None:
            self.live = self.wait(wait) == "mounted"

    def wait(self, timeout):
        """"mounted", ("exited", exit code) or "hang" after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if is_mounted(self.real_mnt):
                self.live = True
                return "mounted"
            rc = self.proc.poll()
            if rc is not None:
                return ("exited", rc)
            time.sleep(0.005)
        return "hang"

    def alive(self):
        """Running, and not a zombie (a daemon whose main thread has ended)."""
        if self.proc.poll() is not None:
            return False
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except OSError:
            return False

    def kill(self):
        """SIGKILL this daemon (by its pid): the kernel then fails every
        pending request, which unblocks a hung read."""
        try:
            self.proc.send_signal(signal.SIGKILL)
        except OSError:
            pass

    def _fusermount(self, *flags, timeout=20):
        try:
            return subprocess.run(["fusermount3", "-u", *flags, self.mnt], capture_output=True,
                                  timeout=timeout).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def stop(self, timeout=20):
        """Unmounts (fusermount3 -u, retried while busy), waits for the
        daemon to exit and returns its exit code; None if it had to be
        killed. A mount still there then is detached lazily."""
        deadline = time.monotonic() + timeout
        while is_mounted(self.real_mnt) and time.monotonic() < deadline:
            if self._fusermount(timeout=timeout):
                break
            time.sleep(0.2)
        try:
            rc = self.proc.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait(timeout=timeout)
            rc = None
            if self.checks is not None:
                self.checks.ok(False, f"daemon {self.proc.pid} exits after unmount")
        if is_mounted(self.real_mnt):
            self._fusermount("-z", timeout=timeout)
        forget(self.mnt)
        for f in {self.errf, self.outf}:
            f.close()
        return rc

    def _read(self, path, f):
        if not f.closed:
            f.flush()
        try:
            with open(path, "rb") as r:
                return r.read()
        except OSError:
            return b""

    def stderr(self):
        return self._read(self.log_path, self.errf)

    def stdout(self):
        return self._read(self.out_path, self.outf)

    def log(self):
        """stderr as text."""
        return self.stderr().decode("utf-8", "replace")

    def log_lines(self):
        return self.log().splitlines()

    def threads_state(self):
        """Each thread of the daemon as 'name state wchan' (for a hang's
        message: where it waits), or why there is none."""
        task = f"/proc/{self.proc.pid}/task"
        out = []
        try:
            for tid in sorted(os.listdir(task), key=int):
                try:
                    with open(f"{task}/{tid}/stat") as f:
                        stat = f.read()
                    with open(f"{task}/{tid}/wchan") as f:
                        wchan = f.read().strip() or "-"
                except OSError:
                    continue
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                out.append(f"{name} {stat.rsplit(')', 1)[1].split()[0]} {wchan}")
        except OSError as e:
            return f"no threads: {e.strerror}"
        return "; ".join(out)


def default_workers():
    """Threads for independent per-array work: at least 2, as much of it is
    waiting (on mounts, tools, FUSE round trips, S3), and at most 4."""
    return max(2, min(4, os.cpu_count() or 1))


def run_parallel(tasks, workers=None):
    """Runs every callable of `tasks` (no arguments) on `workers` threads
    (default_workers()) and waits for all of them; re-raises the first
    exception (in task order) once all have ended. subprocess and file I/O
    release the GIL, so mounts, tools and reads overlap."""
    pool = concurrent.futures.ThreadPoolExecutor(workers or default_workers())
    try:
        futures = [pool.submit(t) for t in tasks]
        concurrent.futures.wait(futures)
    finally:
        # Interrupted (a signal's sys.exit): start no more tasks, end the rest.
        pool.shutdown(wait=True, cancel_futures=True)
    for f in futures:
        f.result()


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


def run_checks(name, budget, prefix, body):
    """The frame of a mount test: Checks named `name`, cleanup on signals,
    a watchdog of `budget` seconds and a temp folder; runs body(c, tmp) and,
    however it ends, undoes every mount and removes the folder. Returns the
    exit status (Checks.finish)."""
    c = Checks(name)
    install_signal_cleanup()
    start_watchdog(budget)
    tmp = TempDir(prefix)
    try:
        body(c, tmp)
    finally:
        cleanup_all()
        tmp.remove()
    return c.finish()


def exited(pid):
    """True if process `pid` has ended: gone from /proc, or a zombie (ended,
    not yet reaped; an init that reaps late keeps it in /proc for seconds)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def wait_exited(pids, timeout):
    """Waits up to `timeout` s until every process of `pids` has ended (see
    exited); True if all did. Woken by each exit through a pidfd (Linux >=
    5.3, which signals it at the exit, not at the reaping), else polls."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # no pidfds, or already reaped
            fd = None
        if fd is None:
            if not wait_until(lambda: exited(pid), max(0.0, deadline - time.monotonic()), 0.005):
                return False
            continue
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            poller.poll(max(0, int((deadline - time.monotonic()) * 1000)))
        finally:
            os.close(fd)
        if not exited(pid):
            return False
    return True


def daemon_pids(marker, whole_arg=False):
    """PIDs of processes whose command line contains `marker` (a path); with
    whole_arg, only those with `marker` as one whole argument (so that, with
    mounts at m-a and m-a_b at once, m-a does not also find m-a_b's daemon)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if (marker.encode() in cmdline.split(b"\0")) if whole_arg else (marker.encode() in cmdline):
            pids.append(int(d))
    return pids


EROFS = errno.EROFS

NODE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "node")


def duckdb_row_counts(paths, batch=200):
    """{path: rows} as DuckDB's read_csv with its default settings counts
    them (tests/node/read_csv.mjs through Node.js), or {path: "error: ..."}.
    None if DuckDB's Node.js API is not installed (scripts/lib.sh,
    tiledbfs_install_node, installs it)."""
    script = os.path.join(NODE_DIR, "read_csv.mjs")
    if not duckdb_installed():
        return None
    out = {}
    for i in range(0, len(paths), batch):
        chunk = paths[i:i + batch]
        p = run(["node", script, *chunk], timeout=600)
        for line in p.stdout.decode("utf-8", "replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            out[r["path"]] = r["rows"] if "rows" in r else "error: " + r["error"]
        for path in chunk:
            out.setdefault(path, "error: no answer (exit %d): %s" % (
                p.returncode, p.stderr.decode("utf-8", "replace")[:300]))
    return out


def duckdb_installed():
    """True if Node.js and DuckDB's Node.js API (tests/node) are installed."""
    return shutil.which("node") is not None and os.path.isdir(
        os.path.join(NODE_DIR, "node_modules", "@duckdb", "node-api"))


class DuckDBReader:
    """DuckDB's read_csv with its default settings (tests/node/read_csv.mjs,
    or another script of tests/node answering one JSON line with "path" per
    path) in one Node.js process kept for many counts() or answers() calls,
    paths sent on its stdin: Node.js and DuckDB start once per test, not
    once per call. A process that dies or outlives a call's timeout is
    killed, and the next call starts another. Calls from several threads
    take turns. Use with `with`, or call close()."""

    def __init__(self, script="read_csv.mjs"):
        self.script = script
        self.proc = None
        self._err = None
        self._buf = b""
        self._lock = threading.Lock()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _start(self):
        self._err = tempfile.TemporaryFile()  # a file: a full pipe cannot block node
        self._buf = b""
        self.proc = subprocess.Popen(["node", os.path.join(NODE_DIR, self.script), "-"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, start_new_session=True)

    def _line(self, deadline):
        """The next line node prints, or None at its exit or the deadline."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def _fail(self):
        """Why the process gave no answer; kills it."""
        self.proc.kill()
        rc = self.proc.wait(timeout=CMD_TIMEOUT)
        self._err.seek(0)
        why = "no answer (exit %d): %s" % (rc, self._err.read().decode("utf-8", "replace")[:300])
        self._close()
        return why

    def counts(self, paths, timeout=600):
        """{path: rows} as DuckDB's read_csv counts them, or {path: "error:
        ..."}, as duckdb_row_counts; None if DuckDB's Node.js API is not
        installed. `timeout`: seconds for all of `paths`."""
        if not duckdb_installed():
            return None
        answers = self.answers(paths, timeout)
        return {p: r["rows"] if "rows" in r else "error: " + r["error"]
                for p, r in answers.items()}

    def answers(self, paths, timeout=600):
        """{path: the script's answer}, or {path: {"error": why}} where it
        gave none. `timeout`: seconds for all of `paths`."""
        with self._lock:
            return self._answers(paths, timeout)

    def _answers(self, paths, timeout):
        deadline = time.monotonic() + timeout
        out = {}
        for path in paths:
            if time.monotonic() >= deadline:
                out[path] = {"error": f"no answer within {timeout} s"}
                continue
            if self.proc is None:
                self._start()
            try:
                self.proc.stdin.write(json.dumps(path).encode() + b"\n")
                self.proc.stdin.flush()
            except OSError:
                pass  # node has exited: _line sees the end of its output
            while path not in out:
                line = self._line(deadline)
                if line is None:
                    out[path] = {"error": self._fail()}
                    break
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # not an answer (a warning node printed)
                if r.get("path") == path:
                    out[path] = r
        return out

    def close(self):
        with self._lock:
            self._close()

    def _close(self):
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()  # node's loop ends at the end of its input
        except OSError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=CMD_TIMEOUT)
        self.proc.stdout.close()
        self._err.close()
        self.proc = None
