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
import json
import os
import random
import shutil
import sys
import threading
import time

from waw_common import (DEFERRED, LIVE_TIMEOUT, MOUNT_TIMEOUT, READERS, SCHEMAS, SECONDS, SEED,
                        STALL, STATS, T0, VISIBLE_BOUND, defer, iso_to_ms)
from waw_model import Model, classify, parse_csv
from waw_reader import Reader, report_history
from waw_writer import Writer
import mountlib as ml  # on the path through waw_common


def start_daemon(bin_dir, array, mnt, log):
    """tiledbfs -f on `array` at `mnt` (made a real path), stderr to `log`,
    not yet waited for."""
    mnt = os.path.realpath(mnt)
    return ml.Daemon([os.path.join(bin_dir, "tiledbfs"), "-f", array, mnt], mnt, log, wait=None)


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
