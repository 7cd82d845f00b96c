#!/usr/bin/env python3
"""A group on S3 whose members are an absolute s3:// URI and a relative one.

  s3_group_test.py BIN_DIR CORPUS

The group is written here (no TileDB at test time): the marker
__tiledb_group.tdb and one version-2 group details file (format_spec/group.md,
core/metadata/group.h) in a generic tile with an empty filter pipeline
(format_spec/generic_tile.md, core/tile/generic_tile.h). Its members:
  abs  array, relative 0, s3://<bucket>/corpus/dense_1d (elsewhere in the bucket)
  rel  array, relative 1, "rel_sparse" (a copy of sparse_2d inside the group)
Through tiledbfs-view on s3://<bucket>/grp: the group lists both members,
group.json gives their URIs and relative flags, and each member's data.csv
and attributes are the bytes tiledbfs-view shows for the local array.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mount"))
import mountlib as ml  # noqa: E402
import s3lib  # noqa: E402


def member(name, uri, relative):
    u, n = uri.encode(), name.encode()
    return (struct.pack("<IBBQ", 2, 2, 1 if relative else 0, len(u)) + u +
            struct.pack("<BQ", 1, len(n)) + n + struct.pack("<B", 0))


def group_details(members):
    payload = struct.pack("<IQ", 2, len(members)) + b"".join(members)
    chunks = struct.pack("<QIII", 1, len(payload), len(payload), 0) + payload
    pipeline = struct.pack("<II", 65536, 0)  # max chunk size, no filters
    header = struct.pack("<IQQBQBI", 22, len(chunks), len(payload), 4, 1, 0, len(pipeline))
    return header + pipeline + chunks


def view(bin_dir, src, vpath, env=None):
    p = subprocess.run([os.path.join(bin_dir, "tiledbfs-view"), src] + ([vpath] if vpath else []),
                       env=env, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def main():
    bin_dir, corpus = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    c = ml.Checks("s3_group")
    with tempfile.TemporaryDirectory(prefix="tiledbfs-s3-group-") as tmp:
        with s3lib.S3Server(tmp) as s3:
            arrays = os.path.join(corpus, "arrays")
            s3.upload_tree(os.path.join(arrays, "dense_1d"), "corpus/dense_1d")
            s3.upload_tree(os.path.join(arrays, "sparse_2d"), "grp/rel_sparse")
            abs_uri = s3.uri("corpus/dense_1d")
            details = group_details([member("abs", abs_uri, False),
                                     member("rel", "rel_sparse", True)])
            name = "__1700000009000_1700000009000_0123456789abcdef0123456789abcdef_2"
            for key, data in ((f"grp/__group/{name}", details), ("grp/__tiledb_group.tdb", b"")):
                status, body = s3.request("PUT", f"/{s3.bucket}/{key}", data)
                c.eq(status, 200, f"PUT {key}")
            env = s3.env()
            grp = s3.uri("grp")
            rc, out, err = view(bin_dir, grp, "", env)
            c.eq(rc, 0, f"tiledbfs-view {grp} ({err.strip()[:200]})")
            names = out.decode().split()
            c.ok("abs/" in names and "rel/" in names, "the group lists both members", str(names))
            rc, out, err = view(bin_dir, grp, "group.json", env)
            doc = json.loads(out) if rc == 0 else {}
            got = sorted((m.get("name"), m.get("uri"), m.get("relative"))
                         for m in doc.get("members", []))
            c.eq(got, [("abs", abs_uri, False), ("rel", "rel_sparse", True)],
                 "group.json: the members' URIs and relative flags")
            for m, local in (("abs", "dense_1d"), ("rel", "sparse_2d")):
                for f in ("data.csv", "schema.json"):
                    want = view(bin_dir, os.path.join(arrays, local), f)
                    got = view(bin_dir, grp, f"{m}/{f}", env)
                    c.ok(want[0] == 0 and got[0] == 0 and got[1] == want[1],
                         f"{m}/{f}: the bytes of the local {local}", got[2][:200])
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
