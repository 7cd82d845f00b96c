#!/usr/bin/env python3
"""Benchmark target 8 of scripts/bench.sh: arrays on S3 (issue 38 "Done when",
issue 39 benchmark 4), every figure beside its baseline from the same run.

  bench_s3.py BIN_DIR ARRAYS_DIR RUNS

A real s3rver on loopback (tests/s3/s3lib.py) behind our proxy
(tests/s3/fault_proxy.py) adding a fixed 10 ms to every request; the arrays
of scripts/make-bench-arrays.sh under ARRAYS_DIR are uploaded first.
Credentials are only in the environment. Mounts use -o s3_recheck=3600 where
requests are counted, so that a slow run does not list the live root's
folders again (they would be, once per s3_recheck, by design).
  (1) request counts, exact: mount + ls -l MNT MNT/history of frags10k_meta
      and frags10k (LISTs per folder against ceil(keys / 1000), GETs, HEADs);
      cat attributes/a.bin of dense1 (GETs, limit 2 x ceil(stored / 8 MiB);
      bytes against its tiles' stored bytes, limit 1.05x), and s3rver's CPU
      for it (/proc) against its CPU for curl fetching the same a0.tdb in
      16 MiB ranges, 16 at once (limit 1.5x);
  (2) cat a.bin of dense1 from S3, fresh mount per run, against the largest
      of: a cold local mount's cat, curl fetching the same byte ranges at
      the same concurrency (s3_parallel) through the same proxy, and the CPU
      time of those two divided by the cores (limit 1.3x);
  (3) head -c 4096 a.bin after the mount: round trips (groups of requests
      under way together) until head returns (limit 3);
  (4) daemon peak RSS (VmHWM) while 8 readers cat 8 different files of
      dense16 from S3 at once, against cache_size + 64 MiB + the in-flight
      buffers: a ReadTiles call's stored bytes in flight, 16 MiB per reader and
      32 MiB per decode-ahead worker (one per core);
  (5) issue 39 benchmark 4: bytes of a0.tdb fetched by a cat of a one-tile
      slice of dense1 against that tile's stored bytes (limit: equal).
"""
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "s3"))
import fault_proxy  # noqa: E402
import s3lib  # noqa: E402

LATENCY_MS = 10
PARALLEL = 16  # the default -o s3_parallel
CACHE = "256M"
CACHE_MIB = 256
# Stored bytes a ReadTiles call holds in flight, a reader's and a decode-ahead
# worker's (core/read/tile_source.cc: kBatchedTotalBytes, kAheadHeldBytes).
INFLIGHT_MIB = 16
AHEAD_INFLIGHT_MIB = 32


def tile_sizes(path):
    """Stored bytes of each tile of a fixed attribute file (u64 chunk count,
    then chunks: u32 original, u32 filtered, u32 metadata size, bytes)."""
    d = open(path, "rb").read()
    p, out = 0, []
    while p < len(d):
        start = p
        (k,) = struct.unpack_from("<Q", d, p)
        p += 8
        for _ in range(k):
            _, f, m = struct.unpack_from("<III", d, p)
            p += 12 + m + f
        out.append(p - start)
    return out


def a0_of(array):
    frags = os.path.join(array, "__fragments")
    return [os.path.join(frags, f, "a0.tdb") for f in sorted(os.listdir(frags))]


class Mount:
    """tiledbfs -f SOURCE MNT as our child (its pid known, reaped with its
    rusage)."""

    def __init__(self, bin_dir, source, mnt, env, *opts):
        self.mnt = mnt
        self.p = subprocess.Popen([os.path.join(bin_dir, "tiledbfs"), "-f", *opts, source, mnt],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while not os.path.ismount(mnt):
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"bench_s3: cannot mount {source}: "
                                 f"{self.p.stderr.read().decode()[-500:]}")
            time.sleep(0.02)

    def hwm_kib(self):
        for line in open(f"/proc/{self.p.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def close(self):
        """Unmounts; returns the daemon's CPU seconds (user + system)."""
        for _ in range(100):
            if subprocess.run(["fusermount3", "-u", self.mnt], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.1)
        _, _, ru = os.wait4(self.p.pid, 0)
        return ru.ru_utime + ru.ru_stime


def server_cpu(s3):
    """User + system CPU seconds s3rver (its node process) has used."""
    with open(f"/proc/{s3.proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(cmd, env=None):
    """Wall and CPU seconds (user + system of the command) of a shell command."""
    r0 = os.times()
    t0 = time.monotonic()
    p = subprocess.run(cmd, shell=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    r1 = os.times()
    if p.returncode != 0:
        raise SystemExit(f"bench_s3: {cmd} failed: {p.stderr.decode()[-300:]}")
    return wall, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)


def folder_keys(local, prefix):
    """Keys S3 lists under a folder with delimiter '/': files and subfolders."""
    folder = os.path.join(local, prefix)
    return len(os.listdir(folder)) if os.path.isdir(folder) else 0


def pages_by_folder(requests, name):
    pages = {}
    for _, path, _ in requests:
        if "list-type=" in path:
            prefix = path.split("prefix=")[1].split("&")[0].replace("%2F", "/")
            folder = prefix[len(name) + 1:].rstrip("/")
            pages[folder] = pages.get(folder, 0) + 1
    return pages


def rounds_until(proxy, t_end):
    with proxy.lock:
        spans = sorted(s for s in proxy.spans if s[0] <= t_end)
    n, end = 0, None
    for a, b in spans:
        if end is None or a > end:
            n, end = n + 1, b
        else:
            end = max(end, b)
    return n


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    bin_dir, arrays, runs = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), int(sys.argv[3])
    cores = os.cpu_count() or 1
    tmp = tempfile.mkdtemp(prefix="tiledbfs-bench-s3.")
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    names = [n for n in ("dense1", "dense16", "frags10k_meta", "frags10k")
             if os.path.isdir(os.path.join(arrays, n))]
    print(f"(8) arrays on S3: s3rver {s3lib.S3RVER.split('/node_modules/')[0]} behind "
          f"tests/s3/fault_proxy.py, +{LATENCY_MS} ms per request; s3_parallel={PARALLEL}, "
          f"{cores} cores")
    try:
        with s3lib.S3Server(tmp) as s3:
            t0 = time.monotonic()
            for n in names:
                s3.upload_tree(os.path.join(arrays, n), n, workers=8)
            print(f"    uploaded {', '.join(names)} in {time.monotonic() - t0:.0f} s")
            proxy = fault_proxy.FaultProxy(s3.port)
            try:
                run_all(bin_dir, arrays, runs, cores, s3, proxy, mnt, names, tmp)
            finally:
                proxy.close()
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-uz", mnt])
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def run_all(bin_dir, arrays, runs, cores, s3, proxy, mnt, names, tmp):
    env = s3.env(endpoint=proxy.endpoint)
    proxy.set(latency_ms=LATENCY_MS)

    # ---- (1) request counts
    print("  (1) request counts (exact; -o s3_recheck=3600)")
    for name in ("frags10k_meta", "frags10k"):
        if name not in names:
            print(f"    {name}: SKIPPED, missing")
            continue
        local = os.path.join(arrays, name)
        proxy.reset_counts()
        t0 = time.monotonic()
        m = Mount(bin_dir, s3.uri(name), mnt, env, "-o", "s3_recheck=3600")
        timed(f"ls -l {mnt} {mnt}/history")
        wall = time.monotonic() - t0
        m.close()
        c = proxy.counts()
        pages = pages_by_folder(proxy.requests, name)
        bad = [f"{f or '/'}: {n} for {folder_keys(local, f)} keys" for f, n in sorted(pages.items())
               if n != max(1, math.ceil(folder_keys(local, f) / 1000))]
        kinds = {}
        for _, path, _ in proxy.requests:
            if "list-type=" not in path:
                base = path.split("?")[0].rsplit("/", 1)[1]
                kind = base if base.endswith(".tdb") else os.path.splitext(base)[1] or "other"
                kinds[kind] = kinds.get(kind, 0) + 1
        print(f"    {name}: mount + ls -l MNT MNT/history: {c['LIST']} LISTs, {c['GET']} GETs "
              f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}), {c['HEAD']} HEADs, "
              f"{c['bytes']} bytes, {wall:.1f} s")
        print("      LISTs per folder: " + ", ".join(
            f"{f or '/'} {n} (ceil({folder_keys(local, f)}/1000) = "
            f"{max(1, math.ceil(folder_keys(local, f) / 1000))})" for f, n in sorted(pages.items()))
              + f"; {'all equal' if not bad else 'DIFFER: ' + '; '.join(bad)}")
    if "dense1" not in names:
        print("    dense1: SKIPPED, missing")
        return
    d1 = os.path.join(arrays, "dense1")
    tiles = [t for f in a0_of(d1) for t in tile_sizes(f)]
    tile_bytes = sum(tiles)
    m = Mount(bin_dir, s3.uri("dense1"), mnt, env, "-o", "s3_recheck=3600")
    proxy.reset_counts()
    cpu0 = server_cpu(s3)
    wall, _ = timed(f"cat {mnt}/attributes/a.bin")
    m.close()
    mount_cpu = server_cpu(s3) - cpu0
    c = proxy.counts()
    gets = [r for r in proxy.requests if r[1].endswith("/a0.tdb")]
    a0_bytes = sum(int(r[2].split("-")[1]) - int(r[2].split("=")[1].split("-")[0]) + 1
                   for r in gets)
    limit = 2 * math.ceil(tile_bytes / (8 << 20))
    print(f"    dense1 cat attributes/a.bin ({len(tiles)} tiles, {tile_bytes} stored bytes): "
          f"{c['GET']} GETs ({len(gets)} of a0.tdb; limit 2 x ceil(stored / 8 MiB) = {limit}), "
          f"{c['LIST']} LISTs, {c['HEAD']} HEADs; "
          f"{c['bytes']} bytes fetched = {c['bytes'] / tile_bytes:.3f} x the tiles' "
          f"(a0.tdb ranges {a0_bytes / tile_bytes:.3f} x; limit 1.05)")
    # The server's CPU for that cat against curl fetching the same a0.tdb
    # whole in 16 MiB ranges, 16 at once, through the same proxy.
    sizes = {os.path.relpath(f, d1): os.path.getsize(f) for f in a0_of(d1)}
    cfg = os.path.join(tmp, "curl16.cfg")
    with open(cfg, "w") as f:
        f.write("next\n".join(
            f'url = "{proxy.endpoint}/{s3.bucket}/dense1/{rel}"\n'
            f'header = "Range: bytes={at}-{min(at + (16 << 20), size) - 1}"\n'
            f'output = "/dev/null"\n'
            for rel, size in sorted(sizes.items()) for at in range(0, size, 16 << 20)))
    cpu0 = server_cpu(s3)
    timed(f"curl -sS --fail --parallel --parallel-max {PARALLEL} -K {cfg}")
    curl_cpu = server_cpu(s3) - cpu0
    print(f"    s3rver CPU for that cat {mount_cpu * 1e3:.0f} ms, for curl's "
          f"{sum(math.ceil(v / (16 << 20)) for v in sizes.values())} GETs of 16 MiB of the same "
          f"a0.tdb {curl_cpu * 1e3:.0f} ms: {mount_cpu / max(curl_cpu, 1e-3):.2f} x (limit 1.5)")

    # ---- (2) cat a.bin from S3 against its baselines
    s3_times, local_times, local_cpu = [], [], []
    ranges = None
    for _ in range(runs):
        m = Mount(bin_dir, s3.uri("dense1"), mnt, env)
        proxy.reset_counts()
        wall, _ = timed(f"cat {mnt}/attributes/a.bin")
        s3_times.append(wall)
        m.close()
        ranges = [(r[1], r[2]) for r in proxy.requests if r[2]]
    for _ in range(runs):
        m = Mount(bin_dir, d1, mnt, None)
        wall, cpu = timed(f"cat {mnt}/attributes/a.bin")
        local_times.append(wall)
        local_cpu.append(cpu + m.close())
    cfg = os.path.join(tmp, "curl.cfg")
    with open(cfg, "w") as f:
        # "next": a header option would otherwise go with every URL after it.
        f.write("next\n".join(f'url = "{proxy.endpoint}{path}"\nheader = "Range: {rng}"\n'
                              f'output = "/dev/null"\n' for path, rng in ranges))
    want_bytes = sum(int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1
                     for _, r in ranges)
    curl_times, curl_cpu = [], []
    for _ in range(runs):
        proxy.reset_counts()
        wall, cpu = timed(f"curl -sS --fail --parallel --parallel-max {PARALLEL} -K {cfg}")
        curl_times.append(wall)
        curl_cpu.append(cpu)
        if proxy.counts()["bytes"] != want_bytes:
            raise SystemExit(f"bench_s3: curl fetched {proxy.counts()['bytes']} bytes, "
                             f"not the {want_bytes} of the ranges")
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    s3_t, loc_t, curl_t = mean(s3_times), mean(local_times), mean(curl_times)
    cpu_t = (mean(local_cpu) + mean(curl_cpu)) / cores
    base = max(loc_t, curl_t, cpu_t)
    mib = os.path.getsize(d1) and sum(os.path.getsize(f) for f in a0_of(d1)) / 2**20
    print(f"  (2) cat attributes/a.bin of dense1, fresh mount per run (means of {runs})   time ms")
    print(f"    from S3                                          {s3_t * 1e3:8.0f}   "
          f"{s3_t / base:.2f} x the largest baseline (limit 1.3)")
    print(f"    (a) local, cold mount                            {loc_t * 1e3:8.0f}")
    print(f"    (b) curl, the same {len(ranges)} ranges ({mib:.0f} MiB), {PARALLEL} at once "
          f"{curl_t * 1e3:8.0f}")
    print(f"    (c) CPU of (a) {mean(local_cpu) * 1e3:.0f} ms + (b) {mean(curl_cpu) * 1e3:.0f} ms "
          f"over {cores} cores {cpu_t * 1e3:8.0f}")
    print(f"    (S3 runs ms: {', '.join(f'{t * 1e3:.0f}' for t in s3_times)})")

    # ---- (3) head -c 4096 after the mount
    m = Mount(bin_dir, s3.uri("dense1"), mnt, env)
    proxy.reset_counts()
    t0 = time.monotonic()
    wall, _ = timed(f"head -c 4096 {mnt}/attributes/a.bin")
    t_end = time.monotonic()
    rounds = rounds_until(proxy, t_end)
    with proxy.lock:
        before = sum(1 for s in proxy.spans if s[0] <= t_end)
    m.close()
    print(f"  (3) head -c 4096 attributes/a.bin after the mount: {rounds} round trips "
          f"({before} requests) in {wall * 1e3:.0f} ms (limit 3 round trips)")

    # ---- (4) peak RSS, 8 readers at once
    if "dense16" in names:
        m = Mount(bin_dir, s3.uri("dense16"), mnt, env, "-o", f"cache_size={CACHE}")
        hist = sorted(os.listdir(os.path.join(mnt, "history")))[-8:-1]
        files = [f"{mnt}/attributes/a.bin"] + [f"{mnt}/history/{h}/attributes/a.bin" for h in hist]
        idle = m.hwm_kib()
        t0 = time.monotonic()
        readers = [subprocess.Popen(["cat", f], stdout=subprocess.DEVNULL) for f in files]
        fails = sum(r.wait() != 0 for r in readers)
        took = time.monotonic() - t0
        hwm = m.hwm_kib()
        m.close()
        inflight = INFLIGHT_MIB * len(files) + AHEAD_INFLIGHT_MIB * cores
        limit = CACHE_MIB + 64 + inflight
        print(f"  (4) daemon peak RSS, 8 readers cat 8 files of dense16 from S3 at once: "
              f"VmHWM {hwm // 1024} MiB (idle {idle // 1024} MiB), {took:.1f} s"
              f"{f', {fails} READERS FAILED' if fails else ''}")
        print(f"    {hwm / 1024 / limit:.2f} x (cache_size {CACHE} + 64 MiB + in-flight "
              f"{INFLIGHT_MIB} MiB x {len(files)} readers + {AHEAD_INFLIGHT_MIB} MiB x "
              f"{cores} ahead workers = {limit} MiB; "
              f"limit 1)")
    else:
        print("  (4) dense16: SKIPPED, missing")

    # ---- (5) a one-tile slice fetches that tile only (issue 39 benchmark 4)
    s1 = "slice/r=0..511,c=0..255/attributes/a.bin"
    m = Mount(bin_dir, s3.uri("dense1"), mnt, env)
    proxy.reset_counts()
    timed(f"cat '{mnt}/{s1}'")
    m.close()
    gets = [r for r in proxy.requests if r[1].endswith("/a0.tdb")]
    got = sum(int(r[2].split("-")[1]) - int(r[2].split("=")[1].split("-")[0]) + 1 for r in gets)
    print(f"  (5) cat {s1} (tile 0 of dense1, {tiles[0]} stored bytes): {len(gets)} GET(s) of "
          f"a0.tdb, {got} bytes = {got / tiles[0]:.2f} x the tile's (limit 1: only the "
          f"overlapped tiles)")


if __name__ == "__main__":
    sys.exit(main())
