#!/usr/bin/env python3
"""The fixture corpus on a real S3 server (s3rver on loopback).

  s3_corpus_test.py viewer|mount|tools BIN_DIR CORPUS

Uploads CORPUS/arrays to a bucket, then, with credentials only in the
environment and every array opened as s3://tiledb-test/<corpus>/arrays/<name>:
  viewer  tests/conformance/conformance.py --full through tiledbfs-view
  mount   the same through real mounts of tiledbfs (77 without /dev/fuse)
  tools   tests/mount/corpus_mount_test.py's checks of every array through a
          mount (ls -l, stat vs wc -c, cat/head/tail, du, cp -r and diff,
          .json, numpy, pandas), jq on every .json, and the exit codes of
          S3 failures: missing bucket 2, unreachable endpoint 2 within 30 s,
          an access key the server does not know 5, no credentials 5.
The tools mount (and run) through wrappers that map the corpus's local
paths to their s3:// URIs (s3lib.wrap_tools).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mount"))
import s3lib  # noqa: E402

CONFORMANCE = os.path.join(os.path.dirname(HERE), "conformance", "conformance.py")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("viewer", "mount", "tools"):
        print(__doc__)
        return 2
    mode, bin_dir, corpus = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    if mode != "viewer" and not os.path.exists("/dev/fuse"):
        print("SKIP: /dev/fuse is missing; mount tests need FUSE")
        return 77
    tmp = tempfile.mkdtemp(prefix="tiledbfs-s3-")
    try:
        with s3lib.S3Server(tmp) as s3:
            prefix = os.path.basename(corpus) + "/arrays"
            n = s3.upload_tree(os.path.join(corpus, "arrays"), prefix)
            print(f"uploaded {n} files of {corpus}/arrays to {s3.uri(prefix)}", flush=True)
            wrapped = s3lib.wrap_tools(bin_dir, os.path.join(tmp, "bin"),
                                       {os.path.join(corpus, "arrays"): s3.uri(prefix)})
            env = s3.env()
            if mode == "viewer":
                cmd = [sys.executable, CONFORMANCE, "--full", "--viewer",
                       os.path.join(wrapped, "tiledbfs-view"), corpus]
            elif mode == "mount":
                cmd = [sys.executable, CONFORMANCE, "--full", "--mount",
                       os.path.join(wrapped, "tiledbfs"), corpus]
            else:
                cmd = [sys.executable, os.path.join(HERE, "s3_tools_check.py"), bin_dir, wrapped,
                       corpus, s3.endpoint, s3.uri(prefix)]
            return subprocess.run(cmd, env=env, timeout=1400).returncode
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
