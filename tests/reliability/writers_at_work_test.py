#!/usr/bin/env python3
"""Writers at work: live mounts read by 8 threads while a writer changes the arrays.

  writers_at_work_test.py BIN_DIR

Two fresh arrays in a temp dir (dense: int64 r, c in [0, 31], tile 8x8; sparse:
int64 x, int32 y; both with a FLOAT64 'v' and a var STRING_ASCII 's'), each
made with BIN_DIR/tiledb-mkarray and mounted live (BIN_DIR/tiledbfs -f, no
-o timestamp, stderr kept). For WAW_SECONDS (default 60) one writer thread per
array loops over: CSV writes of known values (one fragment each; the first
dense write covers the whole domain), metadata put/delete, planting
uncommitted fragment folders (a committed fragment's folder copied under a
newer name without its commit file, or a writer of PLANTED cells killed
after a few ms into a scratch copy of the array and its fragment folder moved
in), consolidate-metadata (fragment metadata), consolidate, vacuum, and a
consolidate + vacuum under open files. Meanwhile WAW_READERS
(default 8) threads loop over files of the roots (data.csv, attributes/*,
metadata.json, log.txt, schema.json, the fragments/ listing,
fragments/<name>/fragment.json) and of history/<T>/ views (instants from the
history/ listing). Every file is read in random pieces with pauses (sometimes
over a second, so commits land in between), then read again whole through the
same descriptor.

Checks (each failure printed as "FAIL [kind]: ..." for the first few of its
kind; counts per kind at the end):
  1. Same handle, same bytes: both passes through one open descriptor return
     identical bytes. EIO is accepted only when a vacuum overlapped the
     handle's life (counted); ENOENT for a fragment or a history instant only
     when a consolidation or vacuum overlapped it, or when a history view's
     fragments/ listing (kept by the kernel) names a fragment the view no
     longer has (counted "history_listing_stale").
  2. Right snapshot: the root data.csv parses to exactly the expected state
     after k writes (newest write wins per cell) for some k between the
     writes finished before the open and those started before the close;
     attributes/v.bin and s.bin likewise (exact bytes); the root
     metadata.json equals the expected metadata between the same bounds.
     The expected bytes of data.csv and metadata.json are tiledbfs-view's
     (no FUSE), taken right after each change and checked against the
     model. Content matching no state is classified against every state's
     bytes: stale (an older state), cut (a strict prefix of one state: a new
     snapshot cut at an old size), mixed (pages of different states), other.
  3. New commits visible on the next open: after each write returns the
     writer re-opens the root data.csv until it shows the new state. The
     daemon re-checks the array on every open, so the bytes are new at once;
     the kernel keeps a live file's size for up to live_timeout_s = 1 s
     (fusefs/fuse/fuse_adapter.h). Assumed bound: WAW_VISIBLE_BOUND (default
     3 s = 1 s attribute timeout + 2 s margin on a loaded machine); later is
     a FAIL. An open inside the bound that showed the previous state is
     counted; one that showed cut or mixed bytes FAILs (wrong bytes).
  4. Uncommitted fragments never show: no planted name in any fragments/
     listing or log.txt, no PLANTED cell in any data.csv or s.txt, and no
     cells of a copied fragment (the state checks of 2 would fail).
  5. History views: history/<T>/data.csv, v.bin and s.bin must be the view
     at T over some fragment set the array had (TileDB 2.30's rules, checked
     with its refdump: a dense consolidated fragment [t1, t2] shows from t2
     on, a sparse one consolidated without timestamps from t1 on, so views
     inside its range change when it is written; a shown consolidated
     fragment hides those its .vac names; vacuum deletes them, so dense
     views inside the range become empty). An older fragment set is
     accepted (the kernel keeps history pages, counted "history_stale_kept");
     cut or mixed bytes FAIL. history/<T>/metadata.json must be the metadata
     at T. A view file read with several contents FAILs unless the
     fragments shown at T changed (with WAW_STRICT_HISTORY=1 always).
  6. A vacuum under open files: now and then root data.csv, v.bin, s.bin and
     a history view inside the range are opened (one byte read), the array
     consolidated and vacuumed, then read whole: the old bytes or EIO.
  7. Final state: with the writers stopped, the root data.csv equals the
     expected final state, metadata.json the expected metadata, fragments/
     exactly the committed fragments no .vac names, every history view the
     view at T; no name a reader ever listed lacked a commit file.
  8. The daemons never die, no read takes longer than WAW_STALL (default
     20 s), they unmount cleanly and exit 0; a global watchdog aborts the
     mounts if the test outlives its budget.

Knobs (environment): WAW_SECONDS, WAW_READERS, WAW_SEED (default: from the
clock, printed), WAW_VISIBLE_BOUND, WAW_STALL, WAW_STRICT_HISTORY.
Exits 77 without /dev/fuse or fusermount3.
"""
import collections
import csv
import errno
import io
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
import mountlib as ml  # noqa: E402


def env_num(name, default, cast=float):
    try:
        return cast(os.environ.get(name, default))
    except ValueError:
        return default


SECONDS = env_num("WAW_SECONDS", 60)
READERS = env_num("WAW_READERS", 8, int)
SEED = env_num("WAW_SEED", int(time.time()) % 1000000, int)
LIVE_TIMEOUT = 1.0  # fusefs/fuse/fuse_adapter.h AdapterOptions::live_timeout_s
VISIBLE_BOUND = env_num("WAW_VISIBLE_BOUND", LIVE_TIMEOUT + 2.0)
STALL = env_num("WAW_STALL", 20.0)
STRICT_HISTORY = os.environ.get("WAW_STRICT_HISTORY", "0") == "1"
MOUNT_TIMEOUT = 30
PAGE = 4096
T0 = 1700000000000  # ms; every operation gets the next second

DENSE_N = 32
SPARSE_X, SPARSE_Y = 60, 20  # coordinates used: x in [0, 60), y in [-10, 10)

PIPE_V = {"filters": [{"name": "BYTESHUFFLE"}, {"name": "ZSTD", "level": 1}]}
PIPE_S = {"filters": [{"name": "LZ4"}]}
SCHEMAS = {
    "dense": {
        "array_type": "dense", "tile_order": "row-major", "cell_order": "row-major",
        "capacity": 10000, "allows_dups": False,
        "dims": [{"name": "r", "type": "INT64", "domain": [0, DENSE_N - 1], "tile_extent": 8},
                 {"name": "c", "type": "INT64", "domain": [0, DENSE_N - 1], "tile_extent": 8}],
        "attrs": [{"name": "v", "type": "FLOAT64", "filter_pipeline": PIPE_V},
                  {"name": "s", "type": "STRING_ASCII", "var": True, "filter_pipeline": PIPE_S}],
    },
    "sparse": {
        "array_type": "sparse", "tile_order": "row-major", "cell_order": "row-major",
        "capacity": 64, "allows_dups": False,
        "dims": [{"name": "x", "type": "INT64", "domain": [0, 9999], "tile_extent": 100},
                 {"name": "y", "type": "INT32", "domain": [-100, 100], "tile_extent": 20}],
        "attrs": [{"name": "v", "type": "FLOAT64", "filter_pipeline": PIPE_V},
                  {"name": "s", "type": "STRING_ASCII", "var": True, "filter_pipeline": PIPE_S}],
    },
}
FRAG_RE = re.compile(r"^__(\d+)_(\d+)_([0-9a-f]{32})_(\d+)$")


def iso_to_ms(name):
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,3}))?Z?$", name)
    if not m:
        return None
    dt = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return int(dt.timestamp()) * 1000 + int((m.group(2) or "0").ljust(3, "0"))


# ------------------------------------------------------------------ results


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = collections.Counter()
        self.failures = collections.Counter()  # kind -> count
        self.notes = collections.Counter()

    def inc(self, key, n=1):
        with self.lock:
            self.c[key] += n

    def fail(self, kind, text, show=4):
        with self.lock:
            self.failures[kind] += 1
            shown = self.failures[kind] <= show
        if shown:
            print(f"FAIL [{kind}]: {text}", flush=True)

    def note(self, kind, text, show=3):
        with self.lock:
            self.notes[kind] += 1
            n = self.notes[kind]
        if n <= show:
            print(f"NOTE [{kind}]: {text}", flush=True)


STATS = Stats()

# Content that matched no expected state, classified once every rendering
# is known (a reader may see a state before its writer rendered it).
DEFERRED = []
DEFERRED_LOCK = threading.Lock()


def defer(kind, m, what, data, ks, label, extra=""):
    with DEFERRED_LOCK:
        if len(DEFERRED) < 2000:
            DEFERRED.append((kind, m, what, data, ks, label, extra))


# ------------------------------------------------------------------ model


def fmt_float(v):
    return repr(float(v))


class Model:
    """What one array holds: every committed write, the state after each,
    the metadata after each change, and the maintenance done so far. The
    writer thread updates it; readers take bounds under the lock."""

    def __init__(self, kind, root):
        self.kind = kind
        self.dir = os.path.join(root, kind)
        self.scratch = os.path.join(root, kind + ".scratch")
        self.stage = os.path.join(root, kind + ".stage")
        self.mnt = os.path.join(root, kind + ".mnt")
        self.lock = threading.Lock()
        self.ts = T0
        self.write_ts = []  # timestamp of write k+1
        self.done_at = [0.0]  # done_at[k]: time.monotonic() when write k returned
        self.states = [{}]  # states[k]: coords -> (v, s) after k writes
        self.commits_done = 0
        self.commits_started = 0
        self.metas = [{}]  # metas[j]: key -> (type, values) after j changes
        self.meta_ts = []
        self.meta_done = 0
        self.meta_started = 0
        self.cons_started = 0
        self.cons_done = 0
        # The fragment set, as TileDB 2.30 reads it at an instant (checked
        # with the oracle's refdump on small arrays): name -> (t1, t2, kind,
        # cells, replaced names, name) with kind "w" (a write), "dc" (dense
        # consolidation: shown from t2 on, like a write) or "sc" (sparse
        # consolidation without timestamps: shown from t1 on, so views
        # inside its range change when it is written). A shown consolidated
        # fragment hides the fragments its .vac names; a vacuum deletes
        # them. Newest (t1, t2) wins per cell. fversions[v] is the set after
        # the v-th change; fv_busy while a change is under way.
        self.frags = {}
        self.fversions = [()]
        self.fv_busy = False
        self.view_cache = {}
        self.vac_started = 0
        self.vac_done = 0
        self.planted = set()
        self.committed = set()  # every name that ever had a commit file
        self.seen_fragments = set()
        self.seen_ks = set()  # write counts whose state a reader saw
        self.render_cache = {}  # (k, what) -> bytes
        # renderings[k]: data.csv of state k as BIN_DIR/tiledbfs-view (no
        # FUSE) renders it right after write k: the reference for bytes.
        self.renderings = {0: None}
        self.meta_renderings = {}  # j -> metadata.json bytes, likewise
        self.dims = [d["name"] for d in SCHEMAS[kind]["dims"]]

    def next_ts(self):
        with self.lock:
            self.ts += 1000
            return self.ts

    def bounds(self):
        with self.lock:
            fv = len(self.fversions) - 1
            return dict(time=time.monotonic(), k=self.commits_done, kmax=self.commits_started,
                        j=self.meta_done,
                        jmax=self.meta_started, vac=self.vac_done, vacmax=self.vac_started,
                        cons=self.cons_done, consmax=self.cons_started, fv=fv,
                        fvmax=fv + (1 if self.fv_busy else 0))

    def push_fragments(self):
        """Called with the lock held, after a change of the fragment set."""
        self.fversions.append(tuple(sorted(self.frags.values(), key=lambda f: (f[0], f[1]))))
        self.fv_busy = False

    def view_at(self, v, t):
        """The cells a view at instant t shows over fragment set version v
        (newest fragment wins, ordered by timestamp range)."""
        key = (v, t)
        with self.lock:
            if key in self.view_cache:
                return self.view_cache[key]
            frags = self.fversions[v]
        visible = [f for f in frags if (f[0] if f[2] == "sc" else f[1]) <= t]
        hidden = set()
        for f in visible:
            hidden.update(f[4])
        out = {}
        for t1, t2, kind, cells, _, name in visible:
            if name not in hidden:
                out.update(cells)
        with self.lock:
            self.view_cache[key] = out
        return out

    def k_at(self, t):
        """Number of writes with timestamp <= t (writes are in time order)."""
        with self.lock:
            return sum(1 for x in self.write_ts if x <= t)

    def state(self, k):
        with self.lock:
            return self.states[k]

    def expected_bytes(self, k, what):
        key = (k, what)
        with self.lock:
            if key in self.render_cache:
                return self.render_cache[key]
            st = self.states[k]
        cells = [st[c] for c in sorted(st)]
        if what == "v.bin":
            out = struct.pack(f"<{len(cells)}d", *[v for v, _ in cells])
        elif what == "s.bin":
            out = b"".join(s.encode() for _, s in cells)
        else:
            raise ValueError(what)
        with self.lock:
            self.render_cache[key] = out
            if len(self.render_cache) > 400:
                self.render_cache.pop(next(iter(self.render_cache)))
        return out

    def meta_json(self, j):
        with self.lock:
            md = self.metas[j]
        return {k: {"type": t, "num": (len(v.encode()) if t.startswith("STRING") else len(v)),
                    "value": v} for k, (t, v) in md.items()}

    def candidates(self, what, ks):
        """k -> expected bytes of `what` for the states ks that are known."""
        out = {}
        for k in ks:
            if k >= (len(self.metas) if what == "metadata.json" else len(self.states)):
                continue
            if what == "data.csv":
                with self.lock:
                    r = self.renderings.get(k)
                if r is not None:
                    out[k] = r
            elif what == "metadata.json":
                with self.lock:
                    r = self.meta_renderings.get(k)
                if r is not None:
                    out[k] = r
            else:
                out[k] = self.expected_bytes(k, what)
        return out


def classify(data, cands, window=()):
    """How `data` relates to the expected bytes of states (k -> bytes):
    ('exact', k); ('cut', text) for a strict prefix of one state's bytes
    (a new snapshot cut at an old size); ('mixed', text) for pages of
    different states; ('other', text). States in `window` are preferred."""
    window = set(window)
    for k in sorted(cands, key=lambda k: (k in window, k), reverse=True):
        if cands[k] == data:
            return "exact", k
    pages = []
    for off in range(0, max(len(data), 1), PAGE):
        page = data[off:off + PAGE]
        pages.append([k for k in sorted(cands) if cands[k][off:off + len(page)] == page])
    if pages and all(pages):
        common = set(pages[0]).intersection(*pages[1:])
        if common:
            k = max(common & window) if common & window else max(common)
            return "cut", f"the first {len(data)} of the {len(cands[k])} bytes of state {k}"
        return "mixed", (f"{len(data)} bytes, {len(pages)} pages; states whose bytes each page "
                         f"equals: {[p if len(p) < 4 else p[:2] + ['...'] for p in pages][:12]}"
                         f"; sizes of those states: "
                         f"{sorted({len(cands[k]) for p in pages for k in p})[:6]}")
    bad = [i for i, p in enumerate(pages) if not p]
    detail = []
    for i in bad[:3]:
        page = data[i * PAGE:(i + 1) * PAGE]
        best = max(cands, key=lambda k: common_prefix(cands[k][i * PAGE:], page), default=None)
        n = common_prefix(cands[best][i * PAGE:], page) if best is not None else 0
        detail.append(f"page {i}: {page.count(0)} NUL bytes, equals state {best} for "
                      f"{n} bytes then {page[n:n + 24]!r}")
    return "other", (f"{len(data)} bytes; {len(bad)} of {len(pages)} pages match no state; "
                     + "; ".join(detail))


def common_prefix(a, b):
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def parse_csv(data, model):
    """data.csv bytes -> (dict coords -> (v, s), problem or None)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"not UTF-8: {e}"
    if text and not text.endswith("\n"):
        return None, "does not end with a newline"
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return {}, None
    want = model.dims + ["v", "s"]
    if rows[0] != want:
        return None, f"header {rows[0]!r}, want {want!r}"
    out = {}
    for i, r in enumerate(rows[1:], 2):
        if len(r) != 4:
            return None, f"line {i}: {len(r)} fields"
        try:
            key = (int(r[0]), int(r[1]))
            out[key] = (float(r[2]), r[3])
        except ValueError as e:
            return None, f"line {i}: {e}"
    return out, None


# ------------------------------------------------------------------ daemon


def start_daemon(bin_dir, array, mnt, log):
    """tiledbfs -f on `array` at `mnt` (made a real path), stderr to `log`,
    not yet waited for."""
    mnt = os.path.realpath(mnt)
    return ml.Daemon([os.path.join(bin_dir, "tiledbfs"), "-f", array, mnt], mnt, log, wait=None)


# ------------------------------------------------------------------ writer


class Writer:
    def __init__(self, model, bin_dir, rng, stop):
        self.m = model
        self.mk = os.path.join(bin_dir, "tiledb-mkarray")
        self.view = os.path.join(bin_dir, "tiledbfs-view")
        self.rng = rng
        self.stop = stop
        self.nwrite = 0
        self.pending_vacuum = False
        self.broken = False

    def run(self, *args, timeout=60):
        p = subprocess.run([self.mk, *args], capture_output=True, timeout=timeout)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    def must(self, what, *args):
        rc, out, err = self.run(*args)
        if rc != 0:
            STATS.fail("writer", f"{self.m.kind}: tiledb-mkarray {what} exited {rc}: "
                       f"{err.strip()[:300]}")
            self.broken = True
        return rc == 0, out

    def refresh_committed(self):
        try:
            names = os.listdir(os.path.join(self.m.dir, "__commits"))
        except OSError:
            return
        with self.m.lock:
            for n in names:
                if n.endswith(".wrt"):
                    self.m.committed.add(n[:-4])

    # ---- cells

    def string(self, k, j):
        r = self.rng.random()
        if r < 0.05:
            return ""
        if r < 0.12:
            return f'w{k} "q,{j}'  # quotes and a comma: CSV quoting
        if r < 0.2:
            return f"word {k} {j} " + "x" * self.rng.randrange(0, 30)
        return f"w{k}c{j}"

    def cells(self, k):
        rng = self.rng
        out = []
        if self.m.kind == "dense":
            if k == 1:
                r0, r1, c0, c1 = 0, DENSE_N - 1, 0, DENSE_N - 1
            else:
                r0 = rng.randrange(DENSE_N)
                r1 = min(DENSE_N - 1, r0 + rng.randrange(12))
                c0 = rng.randrange(DENSE_N)
                c1 = min(DENSE_N - 1, c0 + rng.randrange(12))
            coords = [(r, c) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]
        else:
            n = rng.randrange(1, 41) if k > 1 else 200
            coords = set()
            while len(coords) < n:
                coords.add((rng.randrange(SPARSE_X), rng.randrange(-SPARSE_Y // 2, SPARSE_Y // 2)))
            coords = list(coords)
            rng.shuffle(coords)  # any order: the writer sorts sparse cells
        for j, c in enumerate(coords):
            v = (k * 4096 + j) * 0.25 * (-1 if (k + j) % 7 == 0 else 1)
            out.append((c, v, self.string(k, j)))
        return out

    def csv_file(self, cells, path):
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(self.m.dims + ["v", "s"])
            for (a, b), v, s in cells:
                w.writerow([a, b, fmt_float(v), s])

    # ---- operations

    def op_write(self):
        m = self.m
        k = m.commits_done + 1
        cells = self.cells(k)
        path = os.path.join(m.stage, f"w{k}.csv")
        self.csv_file(cells, path)
        t = m.next_ts()
        with m.lock:
            m.commits_started += 1
            m.fv_busy = True
        ok, out = self.must("write", "write", m.dir, "--timestamp", str(t), "--csv", path)
        if not ok:
            return
        new = dict(m.states[-1])
        mine = {}
        for c, v, s in cells:
            new[c] = (v, s)
            mine[c] = (v, s)
        with m.lock:
            m.write_ts.append(t)
            m.states.append(new)
            m.commits_done += 1
            m.done_at.append(time.monotonic())
            m.committed.add(out.strip())
            m.frags[out.strip()] = (t, t, "w", mine, frozenset(), out.strip())
            m.push_fragments()
        STATS.inc("commits")
        self.render(k)
        self.check_visible(k)

    def render(self, k):
        """The reference bytes of state k: tiledbfs-view's data.csv (the
        same model and renderer, no FUSE), checked against the model."""
        m = self.m
        p = subprocess.run([self.view, m.dir, "data.csv"], capture_output=True, timeout=60)
        got, problem = parse_csv(p.stdout, m) if p.returncode == 0 else (None, p.stderr[:200])
        if got != m.state(k):
            STATS.fail("viewer", f"{m.kind}: tiledbfs-view data.csv after write {k} is not the "
                       f"expected state ({problem or 'other cells'})")
            return
        with m.lock:
            m.renderings[k] = p.stdout
        STATS.inc("viewer_checked")

    def check_visible(self, k):
        """The next opens of the root data.csv must show state k, at once
        or within VISIBLE_BOUND."""
        m = self.m
        want = m.state(k)
        start = time.monotonic()
        first_bad = None
        tries = 0
        while True:
            tries += 1
            try:
                with open(os.path.join(m.mnt, "data.csv"), "rb") as f:
                    data = f.read()
                STATS.inc("opens")
                got, _ = parse_csv(data, m)
            except OSError as e:
                got, data = None, f"errno {e.errno}".encode()
            if got == want:
                break
            if first_bad is None:
                first_bad = data
            if time.monotonic() - start > VISIBLE_BOUND:
                STATS.fail("not-visible", f"{m.kind}: write {k} not visible {VISIBLE_BOUND:g} s "
                           f"after it returned ({tries} opens)")
                defer("not-visible", m, "data.csv", first_bad, range(k - 1, k + 1),
                      f"{m.kind} /data.csv first open after write {k}")
                return
            time.sleep(0.05)
        lat = time.monotonic() - start
        STATS.inc("visible_checks")
        if tries == 1:
            STATS.inc("visible_at_once")
        else:
            STATS.inc("visible_late")
            defer("late", m, "data.csv", first_bad, range(k - 1, k + 1),
                  f"{m.kind} /data.csv first open after write {k}",
                  f"visible after {tries} opens, {lat:.2f} s")
        with STATS.lock:
            STATS.c["visible_max_ms"] = max(STATS.c["visible_max_ms"], int(lat * 1000))

    def op_meta(self):
        m, rng = self.m, self.rng
        key = rng.choice(["owner", "count", "ratio", "tags", "a/b%c"])
        t = m.next_ts()
        with m.lock:
            cur = dict(m.metas[-1])
            m.meta_started += 1
        if rng.random() < 0.25:
            args = ["delete", key]
            cur.pop(key, None)
        else:
            kind = rng.choice(["INT64", "FLOAT64", "STRING_UTF8"])
            if kind == "INT64":
                vals = [rng.randrange(-10 ** 12, 10 ** 12) for _ in range(rng.randrange(1, 4))]
                args = ["put", key, kind] + [str(v) for v in vals]
            elif kind == "FLOAT64":
                vals = [rng.randrange(-4000, 4000) / 8 for _ in range(rng.randrange(1, 4))]
                args = ["put", key, kind] + [fmt_float(v) for v in vals]
            else:
                vals = f"text {t} " + rng.choice(["", "é", "a,b", 'q"'])
                args = ["put", key, kind, vals]
            cur[key] = (kind, vals)
        ok, _ = self.must("meta", "meta", m.dir, "--timestamp", str(t), *args)
        if not ok:
            return
        with m.lock:
            m.metas.append(cur)
            m.meta_ts.append(t)
            m.meta_done += 1
            j = m.meta_done
        STATS.inc("meta_changes")
        p = subprocess.run([self.view, m.dir, "metadata.json"], capture_output=True, timeout=60)
        try:
            ok = p.returncode == 0 and json.loads(p.stdout) == m.meta_json(j)
        except ValueError:
            ok = False
        if not ok:
            STATS.fail("viewer", f"{m.kind}: tiledbfs-view metadata.json after change {j} is not "
                       f"the expected metadata: {ml.short(p.stdout)}")
        else:
            with m.lock:
                m.meta_renderings[j] = p.stdout

    def op_consolidate(self):
        m = self.m
        if m.commits_done < 2:
            return
        with m.lock:
            m.cons_started += 1
            m.fv_busy = True
        before = set(os.listdir(os.path.join(m.dir, "__commits")))
        args = ["consolidate", m.dir] + (["--without-timestamps"] if m.kind == "sparse" else [])
        ok, _ = self.must("consolidate", *args)
        after = set(os.listdir(os.path.join(m.dir, "__commits")))
        new = [n[:-4] for n in after - before if n.endswith(".vac")]
        with m.lock:
            for name in new:
                g = FRAG_RE.match(name)
                with open(os.path.join(m.dir, "__commits", name + ".vac")) as f:
                    replaced = frozenset(x.rstrip("/").split("/")[-1] for x in f.read().split())
                # The consolidated cells are the latest view's (the first
                # dense write covers the domain: no fill values).
                m.frags[name] = (int(g.group(1)), int(g.group(2)),
                                 "dc" if m.kind == "dense" else "sc", m.states[-1], replaced, name)
            m.cons_done += 1
            m.push_fragments()
        if ok:
            STATS.inc("consolidations")
            self.pending_vacuum = True

    def op_vacuum(self):
        m = self.m
        commits = os.path.join(m.dir, "__commits")
        gone = set()
        for n in os.listdir(commits):
            if n.endswith(".vac"):
                with open(os.path.join(commits, n)) as f:
                    gone.update(line.rstrip("/").split("/")[-1] for line in f.read().split())
        with m.lock:
            m.vac_started += 1
            m.fv_busy = True
        ok, _ = self.must("vacuum", "vacuum", m.dir)
        with m.lock:
            for name in gone:
                m.frags.pop(name, None)
            m.vac_done += 1
            m.push_fragments()
        if ok:
            STATS.inc("vacuums")
            self.pending_vacuum = False

    def op_vacuum_under_open(self):
        """Files opened (one byte read) before a consolidation and a vacuum
        that deletes the fragments their snapshots use, read after it: the
        old bytes or EIO, nothing else."""
        m, rng = self.m, self.rng
        if m.commits_done < 2:
            return
        k = m.commits_done
        with m.lock:
            ts = list(m.write_ts)
            fv = len(m.fversions) - 1
        t = rng.choice(ts[:-1])
        files = [("data.csv", "data.csv"), ("attributes/v.bin", "v.bin"),
                 ("attributes/s.bin", "s.bin"), (f"history/{iso(t)}/data.csv", "history")]
        fds = []
        for rel, what in files:
            try:
                fd = os.open(os.path.join(m.mnt, rel), os.O_RDONLY)
                os.pread(fd, 1, 0)
                STATS.inc("opens")
                fds.append((rel, what, fd))
            except OSError as e:
                STATS.fail("errno", f"{m.kind} /{rel} before a vacuum: {os.strerror(e.errno)}")
        try:
            self.op_consolidate()
            if self.pending_vacuum:
                self.op_vacuum()
            for rel, what, fd in fds:
                data = b""
                try:
                    while True:
                        c = os.pread(fd, 1 << 16, len(data))
                        if not c:
                            break
                        data += c
                except OSError as e:
                    if e.errno == errno.EIO:
                        STATS.inc("vacuum_under_open_eio")
                        continue
                    STATS.fail("vacuum-under-open", f"{m.kind} /{rel} opened before a vacuum: "
                               f"{os.strerror(e.errno)}")
                    continue
                if what == "history":
                    # The view at open, or an older one the kernel kept.
                    got = parse_csv(data, m)[0]
                    ok = any(got == m.view_at(v, t) for v in range(fv + 1))
                    want = None
                elif what == "data.csv":
                    want = m.candidates("data.csv", [k]).get(k)
                    ok = want is None or data == want
                else:
                    want = m.expected_bytes(k, what)
                    ok = data == want
                if ok:
                    STATS.inc("vacuum_under_open_old_bytes")
                else:
                    cat, info = (classify(data, m.candidates(what, range(len(m.states))), [k])
                                 if want is not None else ("other", "cells of no view at T"))
                    STATS.fail(f"vacuum-under-open-{cat}", f"{m.kind} /{rel} opened on state "
                               f"{k} before a consolidation and vacuum: {info}")
        finally:
            for _, _, fd in fds:
                os.close(fd)

    def op_consolidate_metadata(self):
        ok, _ = self.must("consolidate-metadata", "consolidate-metadata", self.m.dir)
        if ok:
            STATS.inc("fragment_meta_consolidations")

    def committed_folders(self):
        m = self.m
        names = []
        for n in os.listdir(os.path.join(m.dir, "__commits")):
            if n.endswith(".wrt") and os.path.isdir(os.path.join(m.dir, "__fragments", n[:-4])):
                names.append(n[:-4])
        return sorted(names)

    def op_plant(self):
        """An uncommitted fragment folder appears in __fragments/ (renamed in
        whole, or partly written), never with a commit file."""
        m, rng = self.m, self.rng
        t = m.next_ts()
        uuid = "%032x" % rng.getrandbits(128)
        name = f"__{t}_{t}_{uuid}_22"
        if rng.random() < 0.5:
            names = self.committed_folders()
            if not names:
                return
            src = rng.choice(names)
            tmp = os.path.join(m.stage, name)
            try:
                shutil.copytree(os.path.join(m.dir, "__fragments", src), tmp)
            except OSError:
                return  # vacuumed meanwhile
            how = f"copy of {src}"
        else:
            # A writer of PLANTED cells into the scratch array, killed after a
            # few ms (or done: its commit file stays behind in the scratch).
            shutil.rmtree(os.path.join(m.scratch, "__fragments"), ignore_errors=True)
            shutil.rmtree(os.path.join(m.scratch, "__commits"), ignore_errors=True)
            cells = [(c, -1e6 - j, f"PLANTED{j}") for j, (c, _, _) in enumerate(self.cells(2))]
            if m.kind == "dense":
                cells = [((r, c), -1e6 - r, f"PLANTED{r}") for r in range(DENSE_N)
                         for c in range(DENSE_N)]
            path = os.path.join(m.stage, "plant.csv")
            self.csv_file(cells, path)
            p = subprocess.Popen([self.mk, "write", m.scratch, "--timestamp", str(t),
                                  "--csv", path],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.random() * 0.02)
            try:
                p.send_signal(signal.SIGKILL)
            except OSError:
                pass
            p.wait()
            frags = os.path.join(m.scratch, "__fragments")
            got = os.listdir(frags) if os.path.isdir(frags) else []
            if not got:
                STATS.inc("plant_killed_before_folder")
                return
            tmp = os.path.join(frags, got[0])
            name = got[0]
            how = f"writer killed ({len(os.listdir(tmp))} files; exit {p.returncode})"
        with m.lock:
            m.planted.add(name)
        os.rename(tmp, os.path.join(m.dir, "__fragments", name))
        STATS.inc("planted")
        STATS.note("planted", f"{m.kind}: planted {name}: {how}", show=2)

    def loop(self, deadline):
        rng = self.rng
        while not self.stop.is_set() and time.monotonic() < deadline and not self.broken:
            try:
                if self.m.commits_done == 0:
                    self.op_write()
                    continue
                r = rng.random()
                if r < 0.5:
                    self.op_write()
                elif r < 0.65:
                    self.op_meta()
                elif r < 0.73:
                    self.op_plant()
                elif r < 0.76:
                    self.op_consolidate_metadata()
                elif r < 0.81:
                    self.op_consolidate()
                elif r < 0.84:
                    self.op_vacuum_under_open()
                elif r < 0.94:
                    if self.pending_vacuum:
                        self.op_vacuum()
                else:
                    pass  # a pause
                self.refresh_committed()
            except Exception as e:  # noqa: BLE001 - reported, the run goes on
                STATS.fail("writer", f"{self.m.kind}: writer: {type(e).__name__}: {e}")
                self.broken = True
            time.sleep(rng.uniform(0.05, 0.3))


# ------------------------------------------------------------------ readers


HISTORY_READS = []  # (model, instant, rel, bytes, first version, last version, label)
HISTORY_LOCK = threading.Lock()


class Reader:
    def __init__(self, idx, models, rng, stop):
        self.idx = idx
        self.models = models
        self.rng = rng
        self.stop = stop
        self.busy_since = None
        self.what = ""

    def pick(self):
        rng = self.rng
        m = rng.choice(self.models)
        view = ""
        if rng.random() < 0.3:
            self.begin(f"{m.kind} listing history/")
            try:
                names = os.listdir(os.path.join(m.mnt, "history"))
                STATS.inc("listings")
            except OSError as e:
                STATS.fail("errno", f"{m.kind}: listing history/: {os.strerror(e.errno)}")
                return None
            if names:
                view = "history/" + rng.choice(names) + "/"
        r = rng.random()
        if r < 0.35:
            rel = "data.csv"
        elif r < 0.6:
            rel = "attributes/" + rng.choice(["v.bin", "v.npy", "v.txt", "s.bin", "s.offsets",
                                              "s.txt"])
        elif r < 0.7:
            rel = "metadata.json"
        elif r < 0.76:
            rel = "log.txt"
        elif r < 0.8:
            rel = "schema.json"
        elif r < 0.9:
            rel = "fragments/"
        else:
            rel = "fragments/*/fragment.json"
        return m, view, rel

    def loop(self):
        while not self.stop.is_set():
            p = self.pick()
            if p is None:
                time.sleep(0.1)
                continue
            m, view, rel = p
            try:
                if rel == "fragments/":
                    self.list_fragments(m, view)
                elif rel == "fragments/*/fragment.json":
                    self.fragment_json(m, view)
                else:
                    self.read_file(m, view, rel)
            except Exception as e:  # noqa: BLE001
                STATS.fail("reader", f"reader {self.idx}: {m.kind} /{view}{rel}: "
                           f"{type(e).__name__}: {e}")
            self.busy_since = None
            time.sleep(self.rng.uniform(0, 0.02))

    def begin(self, what):
        self.what = what
        self.busy_since = time.monotonic()

    def list_fragments(self, m, view):
        b0 = m.bounds()
        self.begin(f"{m.kind} listing /{view}fragments")
        try:
            names = os.listdir(os.path.join(m.mnt, view + "fragments"))
        except OSError as e:
            b1 = m.bounds()
            if view and e.errno == errno.ENOENT and b1["vacmax"] > b0["vac"]:
                STATS.inc("enoent_after_vacuum")
                return
            STATS.fail("errno", f"{m.kind}: listing /{view}fragments: {os.strerror(e.errno)}")
            return
        STATS.inc("listings")
        with m.lock:
            bad = [n for n in names if n in m.planted]
            m.seen_fragments.update(names)
        for n in bad:
            STATS.fail("uncommitted-shown", f"{m.kind}: uncommitted fragment {n} listed in "
                       f"/{view}fragments")
        return names

    def fragment_json(self, m, view):
        names = self.list_fragments(m, view)
        if not names:
            return
        name = self.rng.choice(names)
        self.read_file(m, view, f"fragments/{name}/fragment.json", frag=name)

    def read_file(self, m, view, rel, frag=None):
        rng = self.rng
        path = os.path.join(m.mnt, view + rel)
        label = f"{m.kind} /{view}{rel}"
        b0 = m.bounds()
        self.begin(f"open {label}")
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            b1 = m.bounds()
            maint = b1["vacmax"] > b0["vac"] or b1["consmax"] > b0["cons"]
            if e.errno == errno.ENOENT and (view or frag) and maint:
                # A history instant or fragment listed before a vacuum (or a
                # consolidation that hid it) is gone.
                STATS.inc("enoent_after_maintenance")
                return
            if e.errno == errno.ENOENT and frag and view:
                t = iso_to_ms(view.split("/")[1])
                if frag not in shown_names(m, len(m.fversions) - 1, t):
                    # Listed by a history view's fragments/ that the kernel
                    # keeps (immutable: cached listings), but since hidden by
                    # a consolidation or vacuumed: the lookup fails.
                    STATS.inc("history_listing_stale")
                    STATS.note("history-listing-stale", f"{label}: listed, but no longer in the "
                               f"view (consolidated or vacuumed; the kernel keeps history "
                               f"listings): ENOENT")
                    return
            if e.errno == errno.EIO and b1["vacmax"] > b0["vac"]:
                STATS.inc("eio_after_vacuum")
                return
            STATS.fail("errno", f"open {label}: {os.strerror(e.errno)} (vacuums during: "
                       f"{b1['vacmax'] - b0['vac']}, consolidations: {b1['consmax'] - b0['cons']})")
            return
        STATS.inc("opens")
        pieces = []
        err = None
        try:
            size0 = os.fstat(fd).st_size
            # Pass 1: pieces of random sizes, pauses between them.
            long_pause = rng.random() < 0.3
            off = 0
            npieces = 0
            while True:
                n = rng.choice([1, 100, 1000, PAGE, 3 * PAGE + 17, 20000])
                self.begin(f"read {label} @{off}")
                chunk = os.pread(fd, n, off)
                STATS.inc("reads")
                if not chunk:
                    break
                pieces.append(chunk)
                off += len(chunk)
                npieces += 1
                if npieces == 1 and long_pause:
                    self.busy_since = None
                    time.sleep(rng.uniform(0.5, 1.8))
                elif rng.random() < 0.3:
                    self.busy_since = None
                    time.sleep(rng.uniform(0, 0.15))
            first = b"".join(pieces)
            # Pass 2: the whole file again through the same descriptor.
            parts = []
            off = 0
            while True:
                self.begin(f"re-read {label} @{off}")
                chunk = os.pread(fd, 1 << 20, off)
                STATS.inc("reads")
                if not chunk:
                    break
                parts.append(chunk)
                off += len(chunk)
            second = b"".join(parts)
        except OSError as e:
            err = e
        finally:
            os.close(fd)
        b1 = m.bounds()
        if err is not None:
            if err.errno == errno.EIO and b1["vacmax"] > b0["vac"]:
                STATS.inc("eio_after_vacuum")
                return
            STATS.fail("errno", f"read {label}: {os.strerror(err.errno)} (vacuums during: "
                       f"{b1['vacmax'] - b0['vac']})")
            return
        STATS.inc("bytes", len(first))
        what = rel.split("/")[-1] if rel in ("data.csv", "attributes/v.bin",
                                             "attributes/s.bin") else None
        if first != second:
            STATS.inc("handle_changed")
            if what and not view:
                defer("handle-changed", m, what, (first, second), range(b0["k"], b1["kmax"] + 1),
                      label, f"commits during: {b1['kmax'] - b0['k']}")
            else:
                diff = next((i for i in range(min(len(first), len(second)))
                             if first[i] != second[i]), min(len(first), len(second)))
                STATS.fail("handle-changed", f"{label}: one open file returned {len(first)} "
                           f"then {len(second)} bytes, first difference at {diff} (commits "
                           f"during: {b1['kmax'] - b0['k']}, metadata changes: "
                           f"{b1['jmax'] - b0['j']}, vacuums: {b1['vacmax'] - b0['vac']})")
            return
        if not view and size0 != len(first):
            STATS.inc("live_fstat_size_differs")
        if view and size0 != len(first):
            if b1["consmax"] > 0 or b1["vacmax"] > 0:
                # A consolidation or vacuum rewrote history views: while an
                # open of the older snapshot is held, fstat of a newer one
                # shows the older size (README, "An open file keeps its
                # snapshot"); its bytes are checked below all the same.
                STATS.inc("history_fstat_size_differs")
            else:
                STATS.fail("size", f"{label}: fstat size {size0}, read {len(first)} bytes")
        self.check_content(m, view, rel, first, b0, b1, frag)

    def check_content(self, m, view, rel, data, b0, b1, frag):
        label = f"{m.kind} /{view}{rel}"
        if rel.endswith("data.csv") or rel.endswith("s.txt") or rel == "log.txt":
            if b"PLANTED" in data:
                STATS.fail("uncommitted-shown", f"{label}: shows cells of an uncommitted fragment")
        if rel == "log.txt":
            with m.lock:
                bad = [n for n in m.planted if n.encode() in data]
            for n in bad:
                STATS.fail("uncommitted-shown", f"{label}: names uncommitted fragment {n}")
        if frag is not None:
            try:
                j = json.loads(data)
                if j.get("name") != frag:
                    STATS.fail("content", f"{label}: name {j.get('name')!r}")
            except ValueError as e:
                STATS.fail("content", f"{label}: not JSON: {e}")
            return
        if rel == "schema.json":
            try:
                json.loads(data)
            except ValueError as e:
                STATS.fail("content", f"{label}: not JSON: {e}")
        if not view:
            self.check_root(m, rel, data, b0, b1)
        else:
            self.check_history(m, view, rel, data, b0, b1)

    def check_root(self, m, rel, data, b0, b1):
        label = f"{m.kind} /{rel}"
        ks = range(b0["k"], b1["kmax"] + 1)
        if rel == "data.csv":
            got, _ = parse_csv(data, m)
            for k in ks:
                if got is not None and k < len(m.states) and m.state(k) == got:
                    STATS.inc("root_csv_checked")
                    with m.lock:
                        m.seen_ks.add(k)
                    return
            defer("content", m, "data.csv", data, ks, label, b0["time"])
        elif rel in ("attributes/v.bin", "attributes/s.bin"):
            what = rel.split("/")[1]
            if any(v == data for v in m.candidates(what, ks).values()):
                STATS.inc("root_bin_checked")
                return
            defer("content", m, what, data, ks, label, b0["time"])
        elif rel == "metadata.json":
            try:
                got = json.loads(data)
            except ValueError:
                got = None
            for j in range(b0["j"], b1["jmax"] + 1):
                if got is not None and j < len(m.metas) and m.meta_json(j) == got:
                    STATS.inc("root_meta_checked")
                    return
            defer("content", m, "metadata.json", data, range(b0["j"], b1["jmax"] + 1), label)

    def check_history(self, m, view, rel, data, b0, b1):
        label = f"{m.kind} /{view}{rel}"
        t = iso_to_ms(view.split("/")[1])
        if t is None:
            STATS.fail("history", f"{label}: history name does not parse")
            return
        if rel == "metadata.json":
            try:
                got = json.loads(data)
            except ValueError:
                got = None
            with m.lock:
                jt = sum(1 for x in m.meta_ts if x <= t)
            if m.meta_json(jt) != got:
                STATS.fail("history", f"{label}: not the metadata at T (after change {jt}): "
                           f"{ml.short(data)}")
                return
            STATS.inc("history_meta_exact")
        with HISTORY_LOCK:
            if len(HISTORY_READS) < 4000:
                HISTORY_READS.append((m, t, rel, data, b0["fv"], b1["fvmax"], label))


def visible_set(m, v, t):
    with m.lock:
        frags = m.fversions[v]
    return frozenset(f[5] for f in frags if (f[0] if f[2] == "sc" else f[1]) <= t)


def shown_names(m, v, t):
    """Names of the fragments a view at t shows over fragment set v."""
    with m.lock:
        frags = m.fversions[v]
    visible = [f for f in frags if (f[0] if f[2] == "sc" else f[1]) <= t]
    hidden = set()
    for f in visible:
        hidden.update(f[4])
    return {f[5] for f in visible if f[5] not in hidden}


def iso(ms):
    return datetime.fromtimestamp(ms // 1000, tz=timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def expected_history(m, v, t, rel):
    cells = m.view_at(v, t)
    if rel == "data.csv":
        return cells
    vals = [cells[c] for c in sorted(cells)]
    if rel == "attributes/v.bin":
        return struct.pack(f"<{len(vals)}d", *[x for x, _ in vals])
    if rel == "attributes/s.bin":
        return b"".join(x.encode() for _, x in vals)
    return None


def report_history():
    """Every history read: data.csv, v.bin and s.bin must be the view at T
    over some fragment set the array had up to the read's close (an older
    one: the kernel may keep a history file's pages, they never expire);
    all files: several contents per view only if the fragment set changed
    in a way that changes the view (consolidation, vacuum)."""
    by_key = collections.defaultdict(list)
    for m, t, rel, data, lo, hi, label in HISTORY_READS:
        by_key[(id(m), t, rel)].append((m, data, lo, hi, label))
    for (_, t, rel), reads in sorted(by_key.items(), key=lambda x: (x[0][1], x[0][2])):
        m = reads[0][0]
        contents = {}
        for _, data, lo, hi, label in reads:
            if rel in ("data.csv", "attributes/v.bin", "attributes/s.bin"):
                got = parse_csv(data, m)[0] if rel == "data.csv" else data
                ok_v = [v for v in range(0, hi + 1) if expected_history(m, v, t, rel) == got]
                if not ok_v:
                    what = "data.csv" if rel == "data.csv" else rel.split("/")[1]
                    cat, info = classify(data, m.candidates(what, range(len(m.states))))
                    views = []
                    for v in range(max(0, lo - 2), hi + 1):
                        cells = m.view_at(v, t)
                        ks = [k for k in range(len(m.states)) if m.state(k) == cells]
                        views.append(f"v{v}:{ks[0] if ks else '?'}")
                    STATS.fail(f"history-wrong-{cat}", f"{label}: not the view at T over any "
                               f"fragment set up to version {hi}; against the latest-view "
                               f"states: {cat}: {info}; the model's views (version:state): "
                               f"{views}; writes up to T: {m.k_at(t)}")
                    continue
                if max(ok_v) < lo and expected_history(m, lo, t, rel) != got:
                    STATS.inc("history_stale_kept")  # an older view the kernel kept
                STATS.inc("history_model_checked")
            contents.setdefault(data, []).append(lo)
        if len(contents) > 1:
            STATS.inc("history_views_changed")
            STATS.note("history-changed", f"{m.kind} history/{t}/{rel}: {len(contents)} "
                       f"different contents over {len(reads)} reads (fragment set versions at "
                       f"their opens: {[sorted(set(v))[:4] for v in contents.values()]})")
            if STRICT_HISTORY:
                STATS.fail("history-changed", f"{m.kind} history/{t}/{rel} changed "
                           f"(WAW_STRICT_HISTORY)")
            # Explained only by a change of the fragments visible at T (a
            # consolidation or vacuum), never by a write after T.
            hi = max(r[3] for r in reads)
            sets = {visible_set(m, v, t) for v in range(0, hi + 1)}
            if len(sets) < 2:
                STATS.fail("history-changed", f"{m.kind} history/{t}/{rel}: {len(contents)} "
                           f"different contents, but the fragments visible at T never changed")
        else:
            STATS.inc("history_views_stable")


# ------------------------------------------------------------------ main


def setup_array(m, mk):
    os.makedirs(m.stage)
    os.makedirs(m.mnt)
    schema = os.path.join(m.stage, "schema.json")
    with open(schema, "w") as f:
        json.dump(SCHEMAS[m.kind], f)
    p = ml.run([mk, "create", m.dir, "--schema", schema, "--timestamp", str(T0)])
    if p.returncode != 0:
        print(f"FAIL: tiledb-mkarray create {m.kind}: {p.stderr.decode()[:300]}")
        return False
    # The scratch array shares the schema file, so its fragments fit.
    os.makedirs(m.scratch)
    shutil.copytree(os.path.join(m.dir, "__schema"), os.path.join(m.scratch, "__schema"))
    return True


def final_checks(models, daemons):
    time.sleep(LIVE_TIMEOUT + 0.5)
    for m in models:
        data = open(os.path.join(m.mnt, "data.csv"), "rb").read()
        got, problem = parse_csv(data, m)
        k = m.commits_done
        if got != m.state(k):
            STATS.fail("final", f"{m.kind}: final data.csv is not the state after all {k} "
                       f"writes ({problem or 'other cells'})")
            defer("final", m, "data.csv", data, range(k, k + 1), f"{m.kind} final /data.csv")
        else:
            STATS.inc("final_checks")
        got = json.loads(open(os.path.join(m.mnt, "metadata.json"), "rb").read())
        if got != m.meta_json(m.meta_done):
            STATS.fail("final", f"{m.kind}: final metadata.json {ml.short(got)}, want "
                       f"{ml.short(m.meta_json(m.meta_done))}")
        else:
            STATS.inc("final_checks")
        # fragments/: committed fragments not hidden by a .vac file.
        commits = os.listdir(os.path.join(m.dir, "__commits"))
        hidden = set()
        for n in commits:
            if n.endswith(".vac"):
                for line in open(os.path.join(m.dir, "__commits", n)).read().split():
                    hidden.add(line.rstrip("/").split("/")[-1])
        want = sorted(n[:-4] for n in commits if n.endswith(".wrt") and n[:-4] not in hidden)
        listed = sorted(os.listdir(os.path.join(m.mnt, "fragments")))
        if listed != want:
            STATS.fail("final", f"{m.kind}: final fragments/ {listed}, want {want}")
        else:
            STATS.inc("final_checks")
        with m.lock:
            m.seen_fragments.update(listed)
            unknown = sorted(m.seen_fragments - m.committed)
        for n in unknown:
            STATS.fail("uncommitted-shown", f"{m.kind}: fragments/ listed {n}, which never had "
                       f"a commit file")
        # Every history view once more: the view at T over the last fragment
        # set (or an earlier one the kernel kept).
        for name in sorted(os.listdir(os.path.join(m.mnt, "history"))):
            try:
                data = open(os.path.join(m.mnt, "history", name, "data.csv"), "rb").read()
            except OSError as e:
                STATS.fail("errno", f"{m.kind}: final read of history/{name}/data.csv: "
                           f"{os.strerror(e.errno)}")
                continue
            t = iso_to_ms(name)
            got, problem = parse_csv(data, m)
            last = len(m.fversions) - 1
            if got != m.view_at(last, t) and any(m.view_at(v, t) == got for v in range(last)):
                STATS.inc("history_stale_kept")
                STATS.inc("final_history_checked")
            elif got != m.view_at(last, t):
                anyk = [k for k in range(len(m.states)) if m.state(k) == got]
                with m.lock:
                    covered = [f[5] for f in m.frags.values() if f[2] != "w"]
                try:
                    frags = sorted(os.listdir(os.path.join(m.mnt, "history", name, "fragments")))
                except OSError:
                    frags = "?"
                STATS.fail("history", f"{m.kind}: final history/{name}/data.csv is not the "
                           f"view at T ({problem or 'equals states ' + str(anyk)}); "
                           f"consolidated fragments: {covered}; its fragments/: {frags}")
            else:
                STATS.inc("final_history_checked")
    for d in daemons:
        if not d.alive():
            STATS.fail("daemon", f"daemon of {d.mnt} died (exit {d.proc.returncode})")


def report_deferred():
    """Classifies every content problem against the expected bytes of the
    states in its window (and all others, to tell stale from wrong)."""
    late = collections.Counter()
    for kind, m, what, data, ks, label, extra in DEFERRED:
        allk = range(0, len(m.metas) if what == "metadata.json" else len(m.states))
        cands = m.candidates(what, allk)
        window = set(ks)

        def describe(d):
            cat, info = classify(d, cands, window)
            if cat == "exact":
                if info in window:
                    return "exact", f"state {info}"
                if info < min(window):
                    return "stale", (f"state {info}, older than the window "
                                     f"{min(window)}..{max(window)}")
                return "future", f"state {info}, newer than the window"
            return cat, info

        if kind == "handle-changed":
            c1, i1 = describe(data[0])
            c2, i2 = describe(data[1])
            STATS.fail("handle-changed", f"{label}: one open file returned two different "
                       f"contents ({extra}): first pass {c1}: {i1}; second pass {c2}: {i2}")
            continue
        cat, info = describe(data)
        if kind == "late":
            late[cat] += 1
            STATS.note(f"first-open-after-commit:{cat}", f"{label}: {extra}; the first open "
                       f"showed {cat}: {info}")
            if cat in ("cut", "mixed", "other"):
                STATS.fail(f"wrong-bytes-{cat}", f"{label}: the first open after the commit "
                           f"returned {info} ({extra})")
            continue
        if cat == "exact":
            STATS.inc("deferred_ok")  # a state whose rendering came later
            continue
        if cat == "stale" and kind == "content" and what != "metadata.json":
            # The open came less than VISIBLE_BOUND after the write that
            # superseded the state shown: tolerated like a late first open.
            shown = classify(data, cands, window)[1]
            if extra - m.done_at[shown + 1] <= VISIBLE_BOUND:
                STATS.inc("stale_within_bound")
                STATS.note("stale-within-bound", f"{label}: {info}, opened "
                           f"{extra - m.done_at[shown + 1]:.2f} s after the write that "
                           f"superseded it")
                continue
        STATS.fail(f"wrong-bytes-{cat}" if kind != "not-visible" else "not-visible",
                   f"{label}: {info} (window: states {min(ks)}..{max(ks)})")
    if late:
        print("  first opens after a commit that were not yet right: " +
              ", ".join(f"{k}={v}" for k, v in sorted(late.items())))


def main():
    ml.require_fuse()
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    bin_dir = os.path.abspath(sys.argv[1])
    mk = os.path.join(bin_dir, "tiledb-mkarray")
    for exe in (mk, os.path.join(bin_dir, "tiledbfs"), os.path.join(bin_dir, "tiledbfs-view")):
        if not os.path.exists(exe):
            print(f"FAIL: {exe} is not built")
            return 1
    print(f"writers_at_work: {SECONDS:g} s, {READERS} readers, seed {SEED} (WAW_SEED to replay "
          f"the choices; thread timing differs), visible bound {VISIBLE_BOUND:g} s", flush=True)
    ml.install_signal_cleanup()
    ml.start_watchdog(SECONDS + 150)
    tmp = ml.TempDir("tiledbfs-waw-")
    root = os.path.realpath(tmp.path)
    models = [Model("dense", root), Model("sparse", root)]
    daemons = []
    stop = threading.Event()
    started = time.monotonic()
    try:
        for m in models:
            if not setup_array(m, mk):
                return 1
        for m in models:
            d = start_daemon(bin_dir, m.dir, m.mnt, os.path.join(root, m.kind + ".log"))
            if d.wait(MOUNT_TIMEOUT) != "mounted":
                print(f"FAIL: mounting {m.kind} failed: {' '.join(d.log_lines()[-5:])}")
                d.stop()
                return 1
            daemons.append(d)
        rng = random.Random(SEED)
        writers = [Writer(m, bin_dir, random.Random(rng.getrandbits(32)), stop) for m in models]
        readers = [Reader(i, models, random.Random(rng.getrandbits(32)), stop)
                   for i in range(READERS)]
        deadline = time.monotonic() + SECONDS
        threads = [threading.Thread(target=w.loop, args=(deadline,), daemon=True) for w in writers]
        threads += [threading.Thread(target=r.loop, daemon=True) for r in readers]
        for t in threads:
            t.start()
        # Monitor: daemons alive, no reader stuck.
        hung = False
        while any(t.is_alive() for t in threads[:len(writers)]):
            time.sleep(0.25)
            for d in daemons:
                if not d.alive():
                    STATS.fail("daemon", f"daemon of {d.mnt} died (exit {d.proc.returncode}); log: "
                               f"{' | '.join(d.log_lines()[-5:])}")
                    hung = True
            for r in readers:
                since = r.busy_since
                if since is not None and time.monotonic() - since > STALL:
                    STATS.fail("hang", f"reader {r.idx} stuck {STALL:g} s in: {r.what}")
                    hung = True
            if hung:
                break
        stop.set()
        if hung:
            ml.cleanup_all()
        for t in threads:
            t.join(timeout=STALL + 10)
            if t.is_alive():
                STATS.fail("hang", "a thread did not finish (hung read)")
                hung = True
        run_s = time.monotonic() - started
        if not hung:
            try:
                final_checks(models, daemons)
            except (OSError, ValueError) as e:
                STATS.fail("final", f"final checks: {type(e).__name__}: {e}")
        report_deferred()
        report_history()
        for d in daemons:
            lines = d.log_lines()
            errs = [ln for ln in lines if "cannot" in ln]
            STATS.inc("daemon_log_errors", len(errs))
            for ln in errs[:3]:
                print(f"  {os.path.basename(d.mnt)} log: {ln}")
            rc = d.stop()
            if rc != 0:
                STATS.fail("daemon", f"daemon of {d.mnt} exited {rc} after unmount")
        c = STATS.c
        for m in models:
            with m.lock:
                print(f"  {m.kind}: {m.commits_done} writes, {m.meta_done} metadata changes, "
                      f"{m.cons_done} consolidations, {m.vac_done} vacuums, "
                      f"{len(m.planted)} planted, distinct states seen by readers "
                      f"{len(m.seen_ks)}")
        keys = ["opens", "reads", "bytes", "listings", "commits", "viewer_checked",
                "visible_checks", "visible_at_once", "visible_late", "visible_max_ms",
                "root_csv_checked", "root_bin_checked", "root_meta_checked", "deferred_ok",
                "stale_within_bound",
                "handle_changed", "live_fstat_size_differs", "history_fstat_size_differs", "history_model_checked",
                "history_meta_exact", "history_views_stable", "history_views_changed",
                "history_stale_kept", "history_listing_stale", "eio_after_vacuum",
                "enoent_after_maintenance", "vacuum_under_open_old_bytes", "vacuum_under_open_eio",
                "enoent_after_vacuum", "planted", "plant_killed_before_folder", "meta_changes",
                "consolidations", "vacuums", "fragment_meta_consolidations", "final_checks",
                "final_history_checked", "daemon_log_errors"]
        print("  counts: " + ", ".join(f"{k}={c[k]}" for k in keys))
        total = sum(STATS.failures.values())
        print(f"  run time {run_s:.1f} s; failures {total}" +
              (": " + ", ".join(f"{k}={v}" for k, v in sorted(STATS.failures.items()))
               if total else ""))
    finally:
        stop.set()
        ml.cleanup_all()
        tmp.remove()
    if STATS.failures:
        print(f"writers_at_work: FAILED ({sum(STATS.failures.values())} failures)")
        return 1
    if not STATS.c["commits"] or not STATS.c["root_csv_checked"]:
        print("writers_at_work: FAILED (nothing was checked)")
        return 1
    print("writers_at_work: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
