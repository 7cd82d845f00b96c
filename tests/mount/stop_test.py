#!/usr/bin/env python3
"""SIGTERM and unmount stop the daemon within a second, even in the middle of
a long request (issue 50).

  stop_test.py BIN_DIR CORPUS

  s3     CORPUS/arrays/sparse_2d on s3rver, mounted (tiledbfs -f) through
         tests/s3/fault_proxy.py, which holds every GET of a d0.tdb: a
         `cat data.csv` waits on the held GET (a server that does not
         answer); kill -TERM: the daemon exits within 2 s with status 0,
         the cat fails, nothing is left mounted.
  sigterm  the sparse array of scripts/make-bench-arrays.sh at scale
         TILEDBFS_STOP_SCALE (default 512: 10 million cells, 125 MB, written
         in about 3 s; tests/CMakeLists.txt asks 256 under the sanitizers):
         `cat diff/10..17/summary.json` is seconds of decoding, sorting and
         rendering in one FUSE request (1.8 s, 1.75 s of CPU, at 512). Once
         the cat waits in that request and the daemon has spent 0.3 s of CPU
         on it, kill -TERM: the daemon exits within 2 s with status 0, the
         cat fails, nothing is left mounted.
  unmount  the same request, then `fusermount3 -u -z` (the mount detached
         while the cat holds it): the daemon exits within 2 s.
Every wait is for a state (a GET held, the cat inside a FUSE request, CPU
spent), not a sleep; if the request ends before the daemon has spent the CPU,
the test fails saying the fixture is too small for it. No daemon logs a
request cut short.
"""
import concurrent.futures
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
import fault_proxy  # noqa: E402
import mountlib as ml  # noqa: E402
import s3lib  # noqa: E402

STOP_WITHIN = 2.0  # seconds from the signal (or the unmount) to the daemon's exit
CPU_FIRST = 0.3  # seconds of CPU the daemon spends on the request before the signal
# make-bench-arrays.sh SCALE_MIB: 20,000 cells per MiB.
SCALE = int(os.environ.get("TILEDBFS_STOP_SCALE", "512"))
DIFF = "diff/10..17/summary.json"  # every fragment of sparse8: the longest diff
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU time of process `pid` (all its threads), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def in_fuse_request(pid):
    """True while process `pid` (a cat of a file of the mount) waits for a
    FUSE daemon's answer. Where the kernel does not name the function it
    sleeps in (wchan "0"), a cat asleep at all."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            wchan = f.read().strip()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if wchan in ("", "0"):
        return state == "S"
    return wchan == "request_wait_answer" or wchan.startswith("fuse")


class Reader:
    """`cat path` in the background, its output and errors in files."""

    def __init__(self, path, tmp, name):
        self.out_path = os.path.join(tmp.path, name + ".out")
        self.err_path = os.path.join(tmp.path, name + ".err")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(["cat", path], stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err)
        self.start = time.monotonic()

    def wait_blocked(self, timeout=60):
        """True once cat waits inside a FUSE request; False if it ended first."""
        return ml.wait_until(lambda: self.proc.poll() is not None or in_fuse_request(self.proc.pid),
                             timeout, 0.002) and self.proc.poll() is None

    def finish(self, timeout=30):
        """(exit code, stdout bytes, stderr text); None for the code if cat
        does not end within `timeout` (it is then killed)."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        with open(self.out_path, "rb") as f:
            out = f.read()
        with open(self.err_path, "rb") as f:
            err = f.read().decode("utf-8", "replace").strip()
        return rc, out, err


def stop_and_time(d, how):
    """Stops daemon `d` (`how`: "sigterm" or "unmount"); the seconds until it
    exited, or None if it had not within STOP_WITHIN."""
    start = time.monotonic()
    if how == "sigterm":
        os.kill(d.proc.pid, signal.SIGTERM)
    else:
        subprocess.run(["fusermount3", "-u", "-z", d.mnt], capture_output=True, timeout=20)
    done = ml.wait_exited([d.proc.pid], STOP_WITHIN)
    took = time.monotonic() - start
    return took if done else None


def check_stopped(c, label, d, how, reader, took):
    """What must hold once the daemon was stopped mid-request."""
    c.ok(took is not None, f"{label}: the daemon exits within {STOP_WITHIN} s of the {how}",
         "" if took is not None else d.threads_state())
    if took is not None:
        c.note(f"{label}: the daemon exited {took:.3f} s after the {how}")
    rc, out, err = reader.finish()
    c.ok(rc is not None and rc != 0, f"{label}: cat fails (the request was cut short)",
         f"exit {rc}, {len(out)} bytes, {err!r}")
    c.note(f"{label}: cat: exit {rc}, {len(out)} bytes, {err!r}")
    c.ok(not ml.is_mounted(d.real_mnt), f"{label}: nothing is left mounted ({d.mnt})")
    c.eq(d.stop(timeout=10), 0, f"{label}: the daemon's exit status")
    log = d.log()
    c.ok("cancelled" not in log, f"{label}: the daemon logs no request cut short", log[-400:])


def check_s3(c, bin_dir, corpus, tmp):
    with s3lib.S3Server(tmp.path) as s3:
        s3.upload_tree(os.path.join(corpus, "arrays", "sparse_2d"), "stop/sparse_2d")
        proxy = fault_proxy.FaultProxy(s3.port)
        try:
            d = ml.Daemon([os.path.join(bin_dir, "tiledbfs"), "-f", s3.uri("stop/sparse_2d"),
                           tmp.sub("s3-mnt")], tmp.sub("s3-mnt"),
                          os.path.join(tmp.path, "s3.log"), env=s3.env(endpoint=proxy.endpoint),
                          checks=c)
            if not c.ok(d.live, "s3: mounted through the proxy", d.log()[-400:]):
                d.stop()
                return
            proxy.set(hold_match="/d0.tdb")
            reader = Reader(os.path.join(d.mnt, "data.csv"), tmp, "s3-cat")
            held = ml.wait_until(lambda: proxy.held() > 0 or reader.proc.poll() is not None, 60,
                                 0.002) and proxy.held() > 0
            if not c.ok(held, "s3: the daemon's GET of d0.tdb is held", str(proxy.counts())):
                proxy.set()
                reader.finish()
                d.stop()
                return
            took = stop_and_time(d, "sigterm")
            check_stopped(c, "s3", d, "sigterm", reader, took)
        finally:
            proxy.close()


def check_local(c, bin_dir, tmp, array, how):
    """The long diff of `array`, stopped by `how` once under way."""
    label = f"local {how}"
    mnt = tmp.sub(f"{how}-mnt")
    d = ml.Daemon([os.path.join(bin_dir, "tiledbfs"), "-f", array, mnt], mnt,
                  os.path.join(tmp.path, f"{how}.log"), checks=c)
    if not c.ok(d.live, f"{label}: mounted", d.log()[-400:]):
        d.stop()
        return
    reader = Reader(os.path.join(mnt, DIFF), tmp, f"{how}-cat")
    blocked = reader.wait_blocked()
    cpu0 = cpu_seconds(d.proc.pid) or 0
    # The daemon is mid-computation once it has spent CPU_FIRST on the request.
    busy = blocked and ml.wait_until(
        lambda: reader.proc.poll() is not None or
        (cpu_seconds(d.proc.pid) or 0) >= cpu0 + CPU_FIRST, 120, 0.002)
    running = reader.proc.poll() is None
    if not c.ok(blocked and busy and running,
                f"{label}: cat of {DIFF} still under way after the daemon spent {CPU_FIRST} s "
                "of CPU on it",
                f"it ended after {time.monotonic() - reader.start:.2f} s: the fixture is too "
                f"small for this test; raise TILEDBFS_STOP_SCALE (now {SCALE})"):
        reader.finish()
        d.stop()
        return
    c.note(f"{label}: {how} {time.monotonic() - reader.start:.2f} s into the request, after "
           f"{(cpu_seconds(d.proc.pid) or 0) - cpu0:.2f} s of the daemon's CPU")
    took = stop_and_time(d, how)
    if reader.proc.poll() is not None and reader.proc.returncode == 0:
        c.ok(False, f"{label}: cat of {DIFF} ended before the {how}",
             f"the fixture is too small for this test; raise TILEDBFS_STOP_SCALE (now {SCALE})")
    check_stopped(c, label, d, how, reader, took)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    bin_dir, corpus = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    ml.require_fuse()

    def body(c, tmp):
        # The array is written while s3rver starts and the S3 case runs.
        with concurrent.futures.ThreadPoolExecutor(1) as prep:
            sparse = prep.submit(ml.make_bench_array, bin_dir, tmp, "sparse", "sparse8", SCALE)
            check_s3(c, bin_dir, corpus, tmp)
            array, why = sparse.result()
        if not c.ok(array is not None, f"make-bench-arrays.sh sparse {SCALE}", why or ""):
            return
        check_local(c, bin_dir, tmp, array, "sigterm")
        check_local(c, bin_dir, tmp, array, "unmount")

    return ml.run_checks("mount_stop", 300, "tiledbfs-stop-", body)


if __name__ == "__main__":
    sys.exit(main())
