"""writers_at_work_test.py's model of what an array holds, and the checks of
bytes against it: Model (every write, state, metadata change and fragment
set so far), the views at an instant, data.csv parsing and the
classification of content that matches no state (stale, cut, mixed, other).
"""
import csv
import io
import os
import struct
import threading
import time

from waw_common import PAGE, SCHEMAS, T0


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
