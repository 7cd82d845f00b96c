"""writers_at_work_test.py's Reader: threads that read the mounts' files in
random pieces and check each against the Model, and the check at the end
of every history view read (report_history).
"""
import collections
import errno
import json
import os
import time

from waw_common import (HISTORY_LOCK, HISTORY_READS, PAGE, STATS, STRICT_HISTORY, defer,
                        iso_to_ms)
from waw_model import classify, expected_history, parse_csv, shown_names, visible_set
import mountlib as ml  # on the path through waw_common


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
