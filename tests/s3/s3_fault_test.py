#!/usr/bin/env python3
"""S3 faults and request counts, through a fault-injecting proxy
(fault_proxy.py) between tiledbfs and a real s3rver.

  s3_fault_test.py viewer|mount BIN_DIR CORPUS

Arrays of CORPUS/arrays are uploaded; the reference bytes of each file come
from tiledbfs-view on the local copy (s3_conformance_* check those against
TileDB). Credentials are only in the environment.
  viewer  - every 3rd request fails (503, reset, truncated body, 500, a 206
            one byte short, in turn; each viewer run on a proxy of its
            own, 8 at once), 5 ms added per request: every file
            read through tiledbfs-view is byte-identical to the reference, or
            the command fails naming the object and the attempts; never a
            wrong byte, never a hang (each run is bounded)
          - every request 503: the read fails naming the object, "HTTP 503
            SlowDown" and the attempts
          - request counts (no faults): opening an array lists each of its
            folders at most once, never HEADs, and GETs each schema and each
            fragment's metadata once; cat of a 200-tile a.bin fetches at
            most 1.05x its tiles' bytes in fewer GETs than tiles, s3_parallel
            of them at once and never more; the same under faults: 0 wrong
            bytes; an array of 1100 fragments: each folder listed once in
            ceil(keys / 1000) pages, no HEAD, each footer one GET, fetched
            s3_parallel at once
  mount   - tiledbfs -f through the proxy: under the same faults every file
            reads the reference bytes; then every request 503 (fresh
            daemons, each reading a shard of 8 files one at a time): each
            read gives the reference bytes (cached) or EIO, at least one
            EIO, and the daemons' logs name the object, the HTTP status and
            the attempts; healthy again: every daemon reads every file right
            (the daemons survived); a fragment uploaded after the mount shows at the
            live root; a 200-tile a.bin read ahead in parallel under the
            same faults: right bytes or EIO; with s3_recheck=3600, ls -l and stat of every entry
            make no request.
"""
import concurrent.futures
import errno
import json
import os
import shutil
import subprocess
import queue
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mount"))
import fault_proxy  # noqa: E402
import mountlib as ml  # noqa: E402
import s3lib  # noqa: E402

ARRAYS = ["dense_1d", "dense_2d_fragments", "sparse_2d", "sparse_strdim", "metadata", "group"]
FAULTS = ["503", "reset", "truncate", "500", "short206"]
# Reads at once: each mostly waits (retry backoff, the proxy's latency),
# and subprocess calls release the GIL.
WORKERS = 8
# Files per daemon while the store is down (down_phase).
SHARD = 8


def pmap(fn, items, workers=WORKERS):
    """[fn(item) for item in items], `workers` of them at once, in order."""
    items = list(items)
    if len(items) <= 1:
        return [fn(x) for x in items]
    with concurrent.futures.ThreadPoolExecutor(min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


def viewer(bin_dir, src, vpath, env, timeout=90):
    cmd = [os.path.join(bin_dir, "tiledbfs-view"), src] + ([vpath] if vpath else [])
    return subprocess.run(cmd, env=env, capture_output=True, timeout=timeout)


def files_of(bin_dir, local):
    """The files to compare: the root's and its attributes/, dimensions/ and
    the first history view's, as the local viewer lists them."""
    out = []

    def ls(vpath):
        p = viewer(bin_dir, local, vpath, None)
        return [n for n in p.stdout.decode().splitlines()] if p.returncode == 0 else []

    root = ls("")
    for n in root:
        if not n.endswith("/"):
            out.append(n)
    # The listings below the root do not depend on each other: listed at once.
    dirs = [d for d in ("attributes", "dimensions", "metadata", "history") if d + "/" in root]
    listed = dict(zip(dirs, pmap(ls, dirs)))
    for d in ("attributes", "dimensions", "metadata"):
        if d in listed:
            out += [f"{d}/{n}" for n in listed[d] if not n.endswith("/")]
    if "history" in listed:
        hist = [n for n in listed["history"] if n.endswith("/")]
        if hist:
            h = "history/" + hist[0].rstrip("/")
            out += [f"{h}/attributes/{n}" for n in ls(h + "/attributes")]
    return out


def references(bin_dir, corpus, names):
    """{(array, file): bytes}, each file read once by the local viewer (the
    arrays listed, then every file read, several processes at once)."""
    locals_ = [os.path.join(corpus, "arrays", name) for name in names]
    keys = [(name, local, f) for name, local, files in
            zip(names, locals_, pmap(lambda l: files_of(bin_dir, l), locals_, 3))
            for f in files]
    refs = {}
    for (name, _, f), p in zip(keys, pmap(lambda k: viewer(bin_dir, k[1], k[2], None), keys)):
        if p.returncode == 0:
            refs[(name, f)] = p.stdout
    return refs


def check_viewer(c, bin_dir, corpus, s3, proxy, prefix, refs):
    env = s3.env(endpoint=proxy.endpoint)
    # Faults on every third request. The reads run WORKERS at once, each on
    # a proxy of its own (taken from a queue): every proxy sees one viewer
    # at a time, so the faults a read meets do not depend on the others.
    proxies = [proxy] + [fault_proxy.FaultProxy(s3.port) for _ in range(WORKERS - 1)]
    free = queue.Queue()
    for px in proxies:
        px.set(latency_ms=5, every=3, faults=FAULTS)
        px.reset_counts()
        free.put(px)

    def read(item):
        (name, f), want = item
        px = free.get()
        try:
            return viewer(bin_dir, f"{s3.uri(prefix)}/{name}", f,
                          s3.env(endpoint=px.endpoint))
        except subprocess.TimeoutExpired:
            return None
        finally:
            free.put(px)

    try:
        results = pmap(read, refs.items())
        injected = sum(px.counts()["faults"] for px in proxies)
        per_proxy = [px.counts() for px in proxies]
    finally:
        for px in proxies[1:]:
            px.close()
    wrong, failed_ok, failed_bad, good = [], 0, [], 0
    for ((name, f), want), p in zip(refs.items(), results):
        if p is None:
            failed_bad.append(f"{name}/{f}: hung")
            continue
        if p.returncode == 0:
            if p.stdout == want:
                good += 1
            else:
                wrong.append(f"{name}/{f}")
        else:
            err = p.stderr.decode(errors="replace")
            if "s3://" in err and "attempt" in err:
                failed_ok += 1
            else:
                failed_bad.append(f"{name}/{f}: {err.strip()[:200]}")
    c.ok(injected > 0, "faults were injected", str(per_proxy))
    c.eq(wrong, [], f"under faults: no file read with a wrong byte ({len(refs)} files)")
    c.eq(failed_bad, [], "under faults: a failed read names the object and the attempts")
    c.ok(good >= len(refs) // 2, f"under faults: most reads succeed after retries "
         f"({good} good, {failed_ok} failed cleanly, {injected} faults)")

    # Every request fails.
    proxy.set(every=1, faults=["503"])
    name = ARRAYS[0]
    t0 = time.monotonic()
    p = viewer(bin_dir, f"{s3.uri(prefix)}/{name}", "data.csv", env)
    err = p.stderr.decode(errors="replace")
    c.ok(p.returncode != 0, "every request 503: the read fails")
    for s in (f"{s3.uri(prefix)}/{name}", "HTTP 503 SlowDown", "after 6 attempts"):
        c.ok(s in err, f"every request 503: the message says {s!r}", err.strip()[:300])
    c.ok(time.monotonic() - t0 < 30, "every request 503: fails within 30 s")
    # Every GET of a tile file fails, the array opened: the ranged GET of a
    # few bytes still reports S3's error code (its error body is not cut to
    # the length of the range asked).
    proxy.set(every=1, faults=["503"], fault_match="/a0.tdb")
    p = viewer(bin_dir, f"{s3.uri(prefix)}/{name}", "attributes/a.bin", env)
    err = p.stderr.decode(errors="replace")
    c.ok(p.returncode != 0, "every tile GET 503: the read fails")
    for s in ("a0.tdb", "HTTP 503 SlowDown", "after 6 attempts"):
        c.ok(s in err, f"every tile GET 503: the message says {s!r}", err.strip()[:300])

    # Request counts, no faults.
    proxy.set()
    for name in ("dense_2d_fragments", "sparse_2d"):
        local = os.path.join(corpus, "arrays", name)
        folders = [""] + [d for d in sorted(os.listdir(local))
                          if d in ("__schema", "__commits", "__fragments", "__fragment_meta",
                                   "__meta", "__labels")
                          and any(files for _, _, files in os.walk(os.path.join(local, d)))]
        proxy.reset_counts()
        p = viewer(bin_dir, f"{s3.uri(prefix)}/{name}", "", env)
        counts = proxy.counts()
        lists = [r[1] for r in proxy.requests if "list-type=" in r[1]]
        c.ok(p.returncode == 0, f"{name}: opens through the proxy")
        # At most once: the core lists a folder only when it needs it.
        c.ok(0 < counts["LIST"] <= len(folders),
             f"{name}: opening lists each folder at most once "
             f"({', '.join(f or '/' for f in folders)})", "; ".join(lists))
        c.eq(len(set(lists)), len(lists), f"{name}: no folder listed twice")
        c.eq(counts["HEAD"], 0, f"{name}: no HEAD")
        frags = [d for d in os.listdir(os.path.join(local, "__fragments"))] \
            if os.path.isdir(os.path.join(local, "__fragments")) else []
        c.ok(not any("__fragments%2F" in l and "%2F__" in l.split("__fragments%2F", 1)[1]
                     for l in lists), f"{name}: no LIST of a fragment folder at open",
             "; ".join(lists))
        # Small files come whole, once: a schema and each fragment's metadata.
        schemas = len(os.listdir(os.path.join(local, "__schema")))
        c.ok(counts["GET"] <= schemas + len(frags),
             f"{name}: one GET per schema and per fragment at open ({counts['GET']} for "
             f"{schemas} schemas, {len(frags)} fragments)",
             "; ".join(f"{r[1]} {r[2]}" for r in proxy.requests))


def read_all(mnt, mine):
    """{file: bytes or errno}, one file after another."""
    return {f: cmt_read(os.path.join(mnt, f)) for f in mine}


def start_daemon(c, exe, uri, mnt, env, log_path):
    """tiledbfs -f through the proxy (ml.Daemon), its log in a file."""
    d = ml.Daemon([exe, "-f", uri, mnt], mnt, log_path, env=env, checks=c)
    c.ok(d.live, f"{uri}: mounted")
    return d


def make_dense(c, bin_dir, tmp, name, cells, extent, fragments):
    """A dense INT64-dimension array of `cells` INT32 cells (a), no filters,
    written by tiledb-mkarray in `fragments` row bands; its folder, or None."""
    local = os.path.join(tmp.path, name)
    mk = os.path.join(bin_dir, "tiledb-mkarray")
    schema = {
        "array_type": "dense", "tile_order": "row-major", "cell_order": "row-major",
        "capacity": 10000, "allows_dups": False,
        "dims": [{"name": "x", "type": "INT64", "cell_val_num": 1, "var": False,
                  "domain": [1, cells], "tile_extent": extent, "filters": []}],
        "attrs": [{"name": "a", "type": "INT32", "cell_val_num": 1, "var": False,
                   "nullable": False, "filters": []}]}
    schema_path = os.path.join(tmp.path, name + "_schema.json")
    with open(schema_path, "w") as f:
        json.dump(schema, f)
    for cmd in ([mk, "create", local, "--schema", schema_path, "--timestamp", "1700000000000"],
                [mk, "write", local, "--timestamp", "1700000001000", "--synthetic", "7",
                 "--fragments", str(fragments)]):
        p = subprocess.run(cmd, capture_output=True, timeout=300)
        if not c.eq(p.returncode, 0, f"{' '.join(cmd[:2])} {name} ({p.stderr[:200]!r})"):
            return None
    return local


class Deferred:
    """Checks (and notes) made off the main thread, made on the real Checks
    (not thread-safe) by replay() in the main thread, in their order."""

    def __init__(self):
        self.calls = []

    def ok(self, cond, what, detail=""):
        self.calls.append(("ok", (cond, what, detail)))
        return cond

    def eq(self, got, want, what):
        return self.ok(got == want, what, f"got {ml.short(got)!s}, want {ml.short(want)!s}")

    def note(self, text):
        self.calls.append(("note", (text,)))

    def replay(self, c):
        for method, args in self.calls:
            getattr(c, method)(*args)


def fixture(bin_dir, s3, tmp, name, cells, extent, fragments):
    """make_dense, uploaded as `name`, and its a.bin read locally, for a
    background thread: (Deferred checks, folder or None, a.bin bytes)."""
    d = Deferred()
    local = make_dense(d, bin_dir, tmp, name, cells, extent, fragments)
    if local is None:
        return d, None, None
    s3.upload_tree(local, name)
    return d, local, viewer(bin_dir, local, "attributes/a.bin", None, timeout=300).stdout


def fixture_of(c, future):
    """(folder, a.bin) of a fixture() future, its checks made; None if failed."""
    d, local, want = future.result()
    d.replay(c)
    return None if local is None else (local, want)


def check_big_read(c, bin_dir, s3, proxy, tmp, big):
    """cat attributes/a.bin of a dense array of 2 fragments x 100 tiles of
    80 KB (written by tiledb-mkarray), with -o s3_parallel=4: the bytes are
    the local ones; the bytes fetched are at most 1.05x the tile files' (no
    tile fetched twice, no read-through beyond that); adjacent tiles are
    coalesced (fewer GETs than tiles); the GETs run in parallel (4 of them
    under way at once: the proxy holds the first until then) and never more
    than s3_parallel at once. Then the same read with every third request
    failing (503, reset, truncated, 500, short 206) and s3_parallel=16:
    the local bytes or a failure naming the object and the attempts, never
    a wrong byte. `big`: the fixture() future of big_dense."""
    fx = fixture_of(c, big)
    if fx is None:
        return
    local, want = fx
    tiles = [os.path.join(r, f) for r, _, fs in os.walk(local) for f in fs if f == "a0.tdb"]
    tile_bytes = sum(os.path.getsize(t) for t in tiles)
    small = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(local) for f in fs
                if f != "a0.tdb")
    env = s3.env(endpoint=proxy.endpoint)
    cmd = [os.path.join(bin_dir, "tiledbfs-view"), "-o", "s3_parallel=4", s3.uri("big_dense"),
           "attributes/a.bin"]
    proxy.set(gather=4, gather_match="/a0.tdb")
    proxy.reset_counts()
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    counts = proxy.counts()
    proxy.set()
    c.ok(p.returncode == 0 and p.stdout == want and len(want) == 8000000,
         "big_dense: a.bin from S3 is the local bytes", p.stderr.decode()[:200])
    c.ok(counts["bytes"] <= 1.05 * tile_bytes + small,
         f"big_dense: cat a.bin fetches at most 1.05x its tiles' bytes ({counts['bytes']} for "
         f"{tile_bytes} + {small} of schema and metadata)")
    gets = sum(1 for r in proxy.requests if r[1].endswith("/a0.tdb"))
    c.ok(0 < gets < 200, f"big_dense: adjacent tiles coalesced: fewer GETs than tiles "
         f"({gets} for 200 tiles)")
    c.ok(counts["gathered"], "big_dense: 4 GETs of tiles under way at once (s3_parallel=4)",
         str(counts))
    c.ok(counts["peak_gets"] <= 4, f"big_dense: at most s3_parallel=4 GETs at once "
         f"({counts['peak_gets']})")
    c.note(f"big_dense: {gets} GETs for 200 tiles, {counts['bytes']} bytes for {tile_bytes} + "
           f"{small}, {proxy.rounds()} round trips")

    # Faults on the parallel path.
    cmd[2] = "s3_parallel=16"
    proxy.set(every=3, faults=FAULTS)
    proxy.reset_counts()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        c.ok(False, "big_dense under faults: the read ends (300 s)")
        return
    finally:
        injected = proxy.counts()["faults"]
        proxy.set()
    err = p.stderr.decode(errors="replace")
    c.ok(injected > 0, f"big_dense under faults: faults were injected ({injected})")
    c.note(f"big_dense under faults: {injected} faults injected, exit {p.returncode}")
    if p.returncode == 0:
        c.eq(p.stdout == want, True, "big_dense under faults: a.bin is the local bytes")
    else:
        c.ok("s3://" in err and "attempt" in err,
             "big_dense under faults: the failure names the object and the attempts",
             err.strip()[:300])


def check_new_commits(c, bin_dir, corpus, s3, proxy, tmp):
    """The live root of a mount sees a fragment written to the bucket after
    the mount (default s3_recheck: 1 s), and history/ keeps the old state."""
    local = os.path.join(tmp.path, "live")
    shutil.copytree(os.path.join(corpus, "arrays", "dense_1d"), local)
    s3.upload_tree(local, "live")
    before = viewer(bin_dir, local, "data.csv", None).stdout
    mnt = tmp.sub("live-mnt")
    proxy.set()
    p = ml.mount([os.path.join(bin_dir, "tiledbfs"), s3.uri("live"), mnt], mnt,
                 env=s3.env(endpoint=proxy.endpoint))
    if not c.eq(p.returncode, 0, "live: mounted"):
        return
    try:
        c.eq(cmt_read(os.path.join(mnt, "data.csv")), before, "live: data.csv before the write")
        mk = subprocess.run([os.path.join(bin_dir, "tiledb-mkarray"), "write", local,
                             "--timestamp", "1800000000000", "--synthetic", "3"],
                            capture_output=True, timeout=120)
        c.eq(mk.returncode, 0, f"live: tiledb-mkarray write ({mk.stderr[:200]!r})")
        after = viewer(bin_dir, local, "data.csv", None).stdout
        c.ok(after != before, "live: the new fragment changes data.csv")
        s3.upload_tree(local, "live")
        c.ok(ml.wait_until(lambda: cmt_read(os.path.join(mnt, "data.csv")) == after, 30, 0.2),
             "live: the mount shows the new fragment (within 30 s)")
    finally:
        ml.unmount(mnt)


def cmt_read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return e.errno


def check_many_fragments(c, bin_dir, s3, proxy, many):
    """An array of 1100 fragments (tiledb-mkarray), no __fragment_meta/: its
    folders of more than 1000 keys are listed in ceil(keys / 1000) pages,
    each once (s3_recheck long enough that nothing is listed again); a.bin
    is the local one; each fragment's footer is fetched by one GET, 8 of
    them at once with -o s3_parallel=8 (the proxy holds the first until
    then), never more GETs at once than that. `many`: its fixture() future."""
    fx = fixture_of(c, many)
    if fx is None:
        return
    local, want = fx
    proxy.set(gather=8, gather_match="/__fragment_metadata.tdb")
    proxy.reset_counts()
    env = s3.env(endpoint=proxy.endpoint)
    p = subprocess.run([os.path.join(bin_dir, "tiledbfs-view"), "-o", "s3_recheck=3600",
                        "-o", "s3_parallel=8", s3.uri("many"), "attributes/a.bin"], env=env,
                       capture_output=True, timeout=600)
    counts = proxy.counts()
    proxy.set()
    c.ok(p.returncode == 0 and p.stdout == want, "many: a.bin from S3 is the local bytes",
         p.stderr.decode()[:200])
    footers = [r[1] for r in proxy.requests if r[1].endswith("/__fragment_metadata.tdb")]
    c.eq((len(footers), len(set(footers))), (1100, 1100),
         "many: one GET of each fragment's footer (GETs, distinct fragments)")
    c.ok(counts["gathered"], "many: 8 footers fetched at once (s3_parallel=8)", str(counts))
    c.ok(counts["peak_gets"] <= 8, f"many: at most s3_parallel=8 GETs at once "
         f"({counts['peak_gets']})")
    pages = {}
    for method, path, _ in proxy.requests:
        if "list-type=" in path:
            prefix = path.split("prefix=")[1].split("&")[0].replace("%2F", "/")
            pages[prefix] = pages.get(prefix, 0) + 1
    bad = []
    for prefix, n in pages.items():
        folder = os.path.join(local, prefix[len("many/"):])
        keys = len(os.listdir(folder))
        if n != max(1, -(-keys // 1000)):
            bad.append(f"{prefix}: {n} LISTs for {keys} keys")
    c.ok(pages.get("many/__commits/") == 2, "many: __commits/ (1100 keys) is listed in 2 pages",
         str(pages))
    c.eq(bad, [], "many: each folder listed once, in ceil(keys / 1000) pages")
    c.eq(proxy.counts()["HEAD"], 0, "many: no HEAD")


def check_big_mount(c, bin_dir, s3, proxy, tmp, big):
    """cat of a 200-tile a.bin through a mount (its reads fetched and decoded
    ahead, in parallel) with every third request failing: the local bytes
    or EIO with a log line naming the object and the attempts; then, healthy,
    the local bytes; the daemon survives. `big`: its fixture() future."""
    fx = fixture_of(c, big)
    if fx is None:
        return
    _, want = fx
    uri = s3.uri("big_mount")
    proxy.set()
    d = start_daemon(c, os.path.join(bin_dir, "tiledbfs"), uri, tmp.sub("big-mnt"),
                     s3.env(endpoint=proxy.endpoint), os.path.join(tmp.path, "big-mnt.log"))
    if not d.live:
        d.stop()
        return
    path = os.path.join(d.mnt, "attributes", "a.bin")
    proxy.reset_counts()
    proxy.set(every=3, faults=FAULTS)
    got = cmt_read(path)
    injected = proxy.counts()["faults"]
    proxy.set()
    c.ok(got == want or got == errno.EIO, "big_mount under faults: a.bin reads right or EIO",
         f"{len(got)} bytes" if isinstance(got, bytes) else str(got))
    c.note(f"big_mount under faults: {'right' if got == want else got} ({injected} faults)")
    c.eq(cmt_read(path) == want, True, "big_mount healthy again: a.bin reads right")
    c.ok(d.alive(), "big_mount: the daemon survives the faults")
    d.stop()
    text = d.log()
    if got == errno.EIO:
        c.ok(uri in text and "attempts" in text,
             "big_mount: the daemon logs the object and the attempts", text[-400:])


def mount_phase(phase, bin_dir, s3, prefix, name, mine, tmp):
    """One phase (faults_phase or down_phase) of one array, on a proxy and
    daemon of its own (so that phases run at once, each proxy's faults its
    own); for a thread: (Deferred checks, count of EIO reads while the store
    was down)."""
    c = Deferred()
    proxy = fault_proxy.FaultProxy(s3.port)
    try:
        uri = f"{s3.uri(prefix)}/{name}"
        return c, phase(c, os.path.join(bin_dir, "tiledbfs"), s3.env(endpoint=proxy.endpoint),
                        proxy, uri, name, mine, tmp)
    finally:
        proxy.close()


def faults_phase(c, exe, env, proxy, uri, name, mine, tmp):
    """1. Faults on every third request: every file right (or EIO)."""
    proxy.set()
    d = start_daemon(c, exe, uri, tmp.sub("a-" + name), env,
                     os.path.join(tmp.path, f"a-{name}.log"))
    if not d.live:
        d.stop()
        return 0
    proxy.set(latency_ms=5, every=3, faults=FAULTS)
    got = read_all(d.mnt, mine)
    bad = [f for f in mine if got[f] != mine[f] and got[f] != errno.EIO]
    c.eq(bad, [], f"{name}: under faults every file reads right or EIO")
    c.ok(sum(got[f] == mine[f] for f in mine) >= len(mine) // 2,
         f"{name}: under faults most files read right")
    c.ok(d.alive(), f"{name}: the daemon survives the faults")
    d.stop()
    return 0


def down_phase(c, exe, env, proxy, uri, name, mine, tmp):
    """2. The store goes down under fresh daemons (nothing of the data
    cached), each reading a shard of the files one at a time: right bytes or
    EIO, with a log line; then it comes back and each reads every file."""
    # A read that needs the store waits out about 2 s of retry backoff, one
    # file after another (readers at once on one daemon would share a failing
    # load, and which error each reports would be scheduling's): shards of
    # SHARD files, on daemons of their own side by side, bound the chain.
    files = list(mine)
    shards = [files[i::-(-len(files) // SHARD)] for i in range(-(-len(files) // SHARD))]
    daemons = []
    proxy.set()
    for k in range(len(shards)):
        d = start_daemon(c, exe, uri, tmp.sub(f"b-{name}-{k}"), env,
                         os.path.join(tmp.path, f"b-{name}-{k}.log"))
        daemons.append(d)
    if not all(d.live for d in daemons):
        for d in daemons:
            d.stop()
        return 0
    proxy.set(every=1, faults=["503"])
    got = {}
    for part in pmap(lambda k: read_all(daemons[k].mnt, shards[k]), range(len(shards))):
        got.update(part)
    bad = [f for f in mine if got[f] != mine[f] and got[f] != errno.EIO]
    eio = sum(got[f] == errno.EIO for f in mine)
    c.eq(bad, [], f"{name}: store down: every read is right or EIO ({eio} EIO, "
         f"{len(daemons)} daemons)")
    c.ok(all(d.alive() for d in daemons), f"{name}: the daemon survives the store going down")
    proxy.set()
    # A failed listing is answered failed until due again (s3_recheck,
    # 1 s): wait for the state, bounded. Every daemon reads every file.
    def back(d):
        state = {}

        def all_right():
            state["got"] = read_all(d.mnt, mine)
            return all(state["got"][f] == mine[f] for f in mine)

        ml.wait_until(all_right, 20, step=0.2)
        return state["got"]

    bad = [f"{f}: {got[f] if isinstance(got[f], int) else 'wrong bytes'}"
           for got in pmap(back, daemons) for f in mine if got[f] != mine[f]]
    c.eq(bad, [], f"{name}: store back: every file reads right (within 20 s)")
    for d in daemons:
        d.stop()
    text = "".join(d.log() for d in daemons)
    if eio:
        c.ok("HTTP 503 SlowDown after" in text and "attempts" in text and uri in text,
             f"{name}: the daemon logs the object, the status and the attempts", text[-400:])
    return eio


def check_mount(c, bin_dir, corpus, s3, proxy, prefix, refs, tmp, fixtures):
    # Each phase waits out retry backoffs (a store-down read, about 1.5 s
    # a request): the phases of all arrays run at once, each on its own
    # proxy and daemon, and the checks on `proxy` (check_rest) meanwhile.
    # The long store-down phases are started first.
    tasks = [(phase, name) for phase in (down_phase, faults_phase) for name in ARRAYS]
    with concurrent.futures.ThreadPoolExecutor(len(tasks)) as pool:
        futures = {(phase, name): pool.submit(
            mount_phase, phase, bin_dir, s3, prefix, name,
            {f: want for (n, f), want in refs.items() if n == name}, tmp)
            for phase, name in tasks}
        rest = Deferred()
        check_rest(rest, bin_dir, corpus, s3, proxy, prefix, tmp, fixtures)
        # Checks made in the order of before: each array's faults, then down.
        results = [futures[(phase, name)].result()
                   for name in ARRAYS for phase in (faults_phase, down_phase)]
    for d, _ in results:
        d.replay(c)
    eio_total = sum(eio for _, eio in results)
    c.ok(eio_total > 0, f"store down: some reads needed the store and failed with EIO "
         f"({eio_total})")
    rest.replay(c)


def check_rest(c, bin_dir, corpus, s3, proxy, prefix, tmp, fixtures):
    """The mount checks on the shared proxy: new commits, the big a.bin, and
    no request for ls -l and stat."""
    env = s3.env(endpoint=proxy.endpoint)
    exe = os.path.join(bin_dir, "tiledbfs")
    check_new_commits(c, bin_dir, corpus, s3, proxy, tmp)
    check_big_mount(c, bin_dir, s3, proxy, tmp, fixtures["big_mount"])

    # ls -l and stat: no request per entry (no recheck within the hour).
    name = "dense_2d_fragments"
    mnt = tmp.sub("count-" + name)
    proxy.set()
    p = ml.mount([exe, "-o", "s3_recheck=3600", f"{s3.uri(prefix)}/{name}", mnt], mnt, env=env)
    if c.eq(p.returncode, 0, f"{name}: mounted with s3_recheck=3600"):
        try:
            ml.run(["ls", "-lR", mnt])  # the first walk may read what it needs
            proxy.reset_counts()
            for _ in range(2):
                ml.run(["ls", "-l", mnt])
                ml.run(["ls", "-l", os.path.join(mnt, "attributes")])
                ml.run(["ls", "-l", os.path.join(mnt, "fragments")])
                for root, dirs, files in os.walk(os.path.join(mnt, "fragments")):
                    for x in dirs + files:
                        os.stat(os.path.join(root, x))
            counts = proxy.counts()
            c.eq(counts["LIST"] + counts["HEAD"] + counts["GET"], 0,
                 f"{name}: ls -l and stat of every entry again: no request ({counts})")
        finally:
            ml.unmount(mnt)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("viewer", "mount"):
        print(__doc__)
        return 2
    mode, bin_dir, corpus = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    if mode == "mount":
        ml.require_fuse()

    def body(c, tmp):
        # The big arrays are built, uploaded (straight to s3rver, never
        # through the proxy) and read locally in the background, while the
        # corpus checks mostly wait out retries.
        with s3lib.S3Server(tmp.path) as s3, \
                concurrent.futures.ThreadPoolExecutor(2) as prep:
            big = {"viewer": [("big_dense", 2000000, 20000, 2), ("many", 2200, 2, 1100)],
                   "mount": [("big_mount", 2000000, 20000, 2)]}[mode]
            fixtures = {b[0]: prep.submit(fixture, bin_dir, s3, tmp, *b) for b in big}
            refs = references(bin_dir, corpus, ARRAYS)
            c.ok(len(refs) > 20, f"reference files read locally ({len(refs)})")
            prefix = "faults"
            for name in ARRAYS:
                s3.upload_tree(os.path.join(corpus, "arrays", name), f"{prefix}/{name}")
            proxy = fault_proxy.FaultProxy(s3.port)
            try:
                if mode == "viewer":
                    check_viewer(c, bin_dir, corpus, s3, proxy, prefix, refs)
                    check_big_read(c, bin_dir, s3, proxy, tmp, fixtures["big_dense"])
                    check_many_fragments(c, bin_dir, s3, proxy, fixtures["many"])
                else:
                    check_mount(c, bin_dir, corpus, s3, proxy, prefix, refs, tmp, fixtures)
            finally:
                proxy.close()

    return ml.run_checks(f"s3_faults_{mode}", 800, "tiledbfs-s3-faults-", body)

if __name__ == "__main__":
    sys.exit(main())
