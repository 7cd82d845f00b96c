#!/usr/bin/env python3
"""The persistent index on S3 (issue 51): a remount with a warm index makes
LISTs only, through tests/s3/fault_proxy.py (which counts requests) in front
of a real s3rver on loopback. Mounts use -o s3_recheck=3600, so that a slow
run does not list the live root's folders again.

  s3_index_test.py BIN_DIR CORPUS

1. For arrays of CORPUS/arrays: a mount with -o index=off, a first mount
   with the index (cold) and a remount (warm) show the same listings (ls -l
   of the root, attributes/, dimensions/, metadata/, history/, fragments/:
   names and sizes) and the same bytes in every file of the root,
   attributes/ and dimensions/. The remount's mount and listings make no
   GET and no HEAD (sparse views' cell counts come from the index).
2. Stale: an array's fragment rewritten under its name with other bytes
   (another array's fragment of the same schema, uploaded over it; its
   footer of the same size, so that only the ETag differs): the
   remount GETs its __fragment_metadata.tdb again (the entry kept for the
   old bytes is not used) and shows exactly what a local copy of the
   rewritten array shows.
3. Corrupt: every entry of an array's index damaged (one byte flipped):
   the remount shows the same listings and bytes, logs one line per entry
   naming its file, GETs the metadata again and stores it anew: the next
   remount makes no GET and logs nothing.
Exits 77 without /dev/fuse.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mount"))
import fault_proxy  # noqa: E402
import mountlib as ml  # noqa: E402
import s3lib  # noqa: E402

ARRAYS = ["dense_2d_fragments", "metadata", "enumerations", "sparse_2d", "deletes",
          "consolidated", "schema_evolution"]
# The index holds every view of these whole, sparse ones with overlapping
# fragments, deletes or schemas evolved included (their cell counts): a
# remount's listings GET nothing at all.
LISTED = ("", "attributes", "dimensions", "metadata", "history", "fragments")
READ = ("", "attributes", "dimensions")


def listings(root):
    """[(relative path, size or None for a folder)] of LISTED, in order."""
    out = []
    for sub in LISTED:
        d = os.path.join(root, sub)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            out.append((os.path.join(sub, name), None if os.path.isdir(p) else os.stat(p).st_size))
    return out


def contents(root, listed):
    """{relative path: sha256} of the files of READ."""
    out = {}
    for path, size in listed:
        if size is not None and os.path.dirname(path) in READ:
            with open(os.path.join(root, path), "rb") as f:
                out[path] = hashlib.sha256(f.read()).hexdigest()
    return out


class Seen:
    """What one mount showed and the requests its mount and listings made."""

    def __init__(self, listed, counts, requests, files, log):
        self.listed, self.counts, self.requests = listed, counts, requests
        self.files, self.log = files, log


def mount(c, exe, source, mnt, log, env, proxy, options):
    """Mounts `source` with -o `options`, lists, counts the requests so far,
    reads the files; a Seen, or None if it did not mount."""
    if proxy is not None:
        proxy.reset_counts()
    d = ml.Daemon([exe, "-f", "-o", options, source, mnt], mnt, log, env=env, checks=c)
    if not c.ok(d.live, f"mount {source} -o {options}", d.log()):
        d.stop()
        return None
    try:
        listed = listings(mnt)
        counts = proxy.counts() if proxy is not None else None
        requests = list(proxy.requests) if proxy is not None else None
        files = contents(mnt, listed)
    finally:
        d.stop()
    return Seen(listed, counts, requests, files, [ln for ln in d.log_lines() if ln.strip()])


def gets(requests):
    """The paths of the GETs among `requests` (LISTs left out)."""
    return [r[1].split("?")[0] for r in requests if r[0] == "GET" and "list-type=" not in r[1]]


def metadata_gets(requests):
    """GETs of files the index keeps: all but a fragment's tile files."""
    return [g for g in gets(requests) if g.endswith("/__fragment_metadata.tdb")
            or not re.search(r"/__fragments/[^/]+/[^/]+$", g)]


def make_sparse(c, bin_dir, tmp, name, seed):
    """A small sparse array written by tiledb-mkarray (300 cells, seed
    `seed`), of the same schema file for every `name`; its folder, or None."""
    local = os.path.join(tmp.path, name)
    base = os.path.join(tmp.path, "created")
    schema = {
        "array_type": "sparse", "tile_order": "row-major", "cell_order": "row-major",
        "capacity": 100, "allows_dups": False,
        "dims": [{"name": "x", "type": "INT64", "cell_val_num": 1, "var": False,
                  "domain": [1, 1000], "tile_extent": 100, "filters": []}],
        "attrs": [{"name": "a", "type": "INT32", "cell_val_num": 1, "var": False,
                   "nullable": False, "filters": []}]}
    schema_path = os.path.join(tmp.path, name + "_schema.json")
    with open(schema_path, "w") as f:
        json.dump(schema, f)
    mk = os.path.join(bin_dir, "tiledb-mkarray")
    # One schema file for both arrays: a fragment's footer names its schema.
    if not os.path.isdir(base):
        p = ml.run([mk, "create", base, "--schema", schema_path, "--timestamp", "1700000000000"])
        if not c.eq(p.returncode, 0, f"tiledb-mkarray create ({p.stderr[-200:]!r})"):
            return None
    shutil.copytree(base, local)
    p = ml.run([mk, "write", local, "--timestamp", "1700000001000", "--synthetic", str(seed),
                "--cells", "300"])
    if not c.eq(p.returncode, 0, f"tiledb-mkarray write ({p.stderr[-200:]!r})"):
        return None
    return local


def body(c, bin_dir, corpus, tmp):
    exe = os.path.join(bin_dir, "tiledbfs")
    mnt = tmp.sub("mnt")
    logs = tmp.sub("logs")
    recheck = "s3_recheck=3600"
    with s3lib.S3Server(tmp.path) as s3:
        proxy = fault_proxy.FaultProxy(s3.port)
        try:
            env = s3.env(endpoint=proxy.endpoint)

            def run(name, source, options, tag):
                return mount(c, exe, source, mnt, os.path.join(logs, f"{name}-{tag}.log"), env,
                             proxy, f"{options},{recheck}")

            # 1. The same with the index as without; the remount LISTs only.
            for name in ARRAYS:
                s3.upload_tree(os.path.join(corpus, "arrays", name), name)
                index_dir = os.path.join(tmp.path, "index-" + name)
                off = run(name, s3.uri(name), "index=off", "off")
                cold = run(name, s3.uri(name), f"index_dir={index_dir}", "cold")
                warm = run(name, s3.uri(name), f"index_dir={index_dir}", "warm")
                if off is None or cold is None or warm is None:
                    continue
                for seen, what in ((cold, "first mount"), (warm, "remount")):
                    c.eq(seen.listed, off.listed, f"{name}: {what} with the index: listings")
                    c.ok(seen.files == off.files, f"{name}: {what} with the index: bytes")
                c.ok(len(off.files) > 0, f"{name}: files read")
                c.eq(metadata_gets(warm.requests), [],
                     f"{name}: remount + ls -l: GETs of metadata files ({warm.counts['LIST']} "
                     f"LISTs; the first mount {cold.counts['GET']} GETs)")
                c.eq(warm.counts["HEAD"], 0, f"{name}: remount: HEADs")
                c.eq(gets(warm.requests), [], f"{name}: remount + ls -l: GETs")
                c.ok(cold.counts["GET"] > 0, f"{name}: the first mount GETs")
                c.eq(warm.log, [], f"{name}: no log line from a warm remount")

            # 2. A fragment rewritten under its name with other bytes.
            p = make_sparse(c, bin_dir, tmp, "p", 7)
            # Seed 13's footer has as many bytes as seed 7's, others: only the
            # ETag tells them apart.
            q = make_sparse(c, bin_dir, tmp, "q", 13)
            if p is None or q is None:
                return
            frag_p = os.listdir(os.path.join(p, "__fragments"))[0]
            frag_q = os.path.join(q, "__fragments", os.listdir(os.path.join(q, "__fragments"))[0])
            meta = "__fragment_metadata.tdb"
            with open(os.path.join(p, "__fragments", frag_p, meta), "rb") as f1, \
                    open(os.path.join(frag_q, meta), "rb") as f2:
                b1, b2 = f1.read(), f2.read()
                c.ok(len(b1) == len(b2) and b1 != b2,
                     "stale: the two footers differ, in bytes only (precondition)")
            s3.upload_tree(p, "stale")
            index_dir = os.path.join(tmp.path, "index-stale")
            for tag in ("cold", "warm"):
                run("stale", s3.uri("stale"), f"index_dir={index_dir}", tag)
            # Named as on S3: data.parquet names its array.
            rewritten = os.path.join(tmp.sub("local"), "stale")
            shutil.copytree(p, rewritten)
            shutil.rmtree(os.path.join(rewritten, "__fragments", frag_p))
            shutil.copytree(frag_q, os.path.join(rewritten, "__fragments", frag_p))
            s3.upload_tree(os.path.join(rewritten, "__fragments", frag_p),
                           f"stale/__fragments/{frag_p}")
            want = mount(c, exe, rewritten, mnt, os.path.join(logs, "rewritten-local.log"),
                         None, None, "index=off")
            got = run("stale", s3.uri("stale"), f"index_dir={index_dir}", "rewritten")
            if want is not None and got is not None:
                c.eq(got.listed, want.listed, "stale: listings as the rewritten array's")
                c.ok(got.files == want.files and len(want.files) > 0,
                     "stale: bytes as the rewritten array's")
                c.eq(len(metadata_gets(got.requests)), 1,
                     "stale: the rewritten footer is fetched again, not taken from the index")
                again = run("stale", s3.uri("stale"), f"index_dir={index_dir}", "again")
                if again is not None:
                    c.eq(again.counts["GET"], 0, "stale: then a remount GETs nothing")
                    c.ok(again.files == want.files, "stale: and shows the same bytes")

            # 3. Every entry damaged: rebuilt, one line each.
            name = "dense_2d_fragments"
            index_dir = os.path.join(tmp.path, "index-" + name)
            built = sorted(n for n in os.listdir(index_dir) if n.endswith(".tfi"))
            for n in built:
                path = os.path.join(index_dir, n)
                size = os.path.getsize(path)
                with open(path, "r+b") as f:
                    f.seek(size // 2)
                    b = f.read(1)
                    f.seek(size // 2)
                    f.write(bytes([b[0] ^ 0x10]))
            off = run(name, s3.uri(name), "index=off", "off-again")
            damaged = run(name, s3.uri(name), f"index_dir={index_dir}", "damaged")
            if off is None or damaged is None:
                return
            c.eq(damaged.listed, off.listed, "damaged: listings")
            c.ok(damaged.files == off.files, "damaged: bytes")
            named = [n for n in built if sum(n in ln for ln in damaged.log) == 1]
            c.eq(len(damaged.log), len(built), "damaged: one log line per entry\n" +
                 "\n".join(damaged.log))
            c.eq(len(named), len(built), "damaged: each line names its entry's file")
            c.ok(len(metadata_gets(damaged.requests)) > 0, "damaged: the footers fetched again")
            rebuilt = run(name, s3.uri(name), f"index_dir={index_dir}", "rebuilt")
            if rebuilt is not None:
                c.eq(rebuilt.counts["GET"], 0, "rebuilt: a remount GETs nothing")
                c.eq(rebuilt.log, [], "rebuilt: no log line")
                c.ok(rebuilt.files == off.files, "rebuilt: bytes")
        finally:
            proxy.close()


def main():
    ml.require_fuse()
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    bin_dir, corpus = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    return ml.run_checks("s3_index_mount", 600, "tiledbfs-s3-index-test-",
                         lambda c, tmp: body(c, bin_dir, corpus, tmp))


if __name__ == "__main__":
    sys.exit(main())
