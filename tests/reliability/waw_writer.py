"""writers_at_work_test.py's Writer: one thread per array that writes,
changes metadata, plants uncommitted fragments, consolidates and vacuums,
recording each change in the Model and checking that new commits show.
"""
import csv
import errno
import json
import os
import shutil
import signal
import subprocess
import time

from waw_common import DENSE_N, FRAG_RE, SPARSE_X, SPARSE_Y, STATS, VISIBLE_BOUND, defer, iso
from waw_model import classify, fmt_float, parse_csv
import mountlib as ml  # on the path through waw_common


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
            made = {}
            for name in new:
                g = FRAG_RE.match(name)
                with open(os.path.join(m.dir, "__commits", name + ".vac")) as f:
                    replaced = frozenset(x.rstrip("/").split("/")[-1] for x in f.read().split())
                # The consolidated cells are the latest view's (the first
                # dense write covers the domain: no fill values).
                made[name] = (int(g.group(1)), int(g.group(2)),
                              "dc" if m.kind == "dense" else "sc", m.states[-1], replaced, name)
            # Between the new fragment's commit and its .vac file (written
            # after it, as TileDB does), the array shows it beside the
            # fragments it replaces, none hidden yet: a sparse view inside
            # its range then mixes them (a write after its first timestamp
            # beats it per cell). A reader in that moment saw this set.
            for name, f in made.items():
                m.frags[name] = f[:4] + (frozenset(),) + f[5:]
            m.push_fragments()
            m.frags.update(made)
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
