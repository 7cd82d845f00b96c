#!/usr/bin/env python3
"""Run by s3_corpus_test.py tools (the environment holds the credentials):

  s3_tools_check.py BIN_DIR WRAPPED_BIN CORPUS ENDPOINT URI_PREFIX

tests/mount/corpus_mount_test.py's per-array checks on every array of
CORPUS through WRAPPED_BIN/tiledbfs (its paths mapped to URI_PREFIX/<name>),
jq on every .json of each mount, and the exit codes of S3 failures, all
at once on a few threads (a mount point each).
"""
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mount"))
import corpus_mount_test as cmt  # noqa: E402
import mountlib as ml  # noqa: E402

SECRET = "S3RVER"


def check_jq(c, exe, corpus, name, tmp):
    mnt = tmp.sub("jq-" + name)
    m = cmt.Mounted(c, exe, os.path.join(corpus.arrays, name), mnt, corpus.key(name))
    if not m.ok:
        ml.unmount(mnt)
        return
    try:
        jsons = []
        for root, _, files in os.walk(mnt):
            jsons += [os.path.join(root, f) for f in files if f.endswith(".json")]
        c.ok(jsons, f"{name}: has .json files")
        bad = []
        for f in jsons:
            p = ml.run(["jq", "-e", ".", f])
            if p.returncode != 0:
                bad.append(f"{os.path.relpath(f, mnt)}: {p.stderr.decode()[:100]}")
        c.ok(not bad, f"{name}: jq reads every .json ({len(jsons)})", "; ".join(bad[:3]))
    finally:
        m.close()


def check_mount_helper(c, bin_dir, corpus, uri_prefix, tmp):
    """mount.tiledbfs as mount(8) calls it for an fstab line with s3://."""
    mnt = tmp.sub("helper")
    p = ml.mount([os.path.join(bin_dir, "mount.tiledbfs"), uri_prefix + "/dense_1d", mnt, "-n",
                "-o", "ro,noauto,_netdev,s3_recheck=2"], mnt)
    if c.eq(p.returncode, 0, f"mount.tiledbfs s3:// ({p.stderr.decode(errors='replace')[:200]})"):
        want = ml.run([os.path.join(bin_dir, "tiledbfs-view"),
                       os.path.join(corpus.arrays, "dense_1d"), "data.csv"]).stdout
        c.eq(cmt.read(os.path.join(mnt, "data.csv")), want, "mount.tiledbfs s3://: data.csv")
        c.ok(ml.unmount(mnt), "mount.tiledbfs s3://: unmounts")


def check_exit_codes(c, bin_dir, uri_prefix, tmp):
    exe = os.path.join(bin_dir, "tiledbfs")
    mnt = tmp.sub("exit-codes")
    array = uri_prefix + "/dense_1d"
    base = dict(os.environ)

    def mount(uri, want, what, env=None, within=None, says=()):
        t0 = time.monotonic()
        p = ml.run([exe, uri, mnt], env=env or base, timeout=60)
        took = time.monotonic() - t0
        err = p.stderr.decode(errors="replace")
        c.eq(p.returncode, want, f"exit code: {what} ({err.strip()[:200]})")
        if within is not None:
            c.ok(took < within, f"{what}: fails within {within} s", f"took {took:.1f} s")
        for s in says:
            c.ok(s in err, f"{what}: the message says {s!r}", err.strip()[:300])
        c.ok(SECRET not in err.replace("AWS_SECRET", ""), f"{what}: no secret in the message")
        c.ok(not os.path.ismount(mnt), f"{what}: nothing left mounted")
        if os.path.ismount(mnt):
            ml.unmount(mnt)

    bucket = uri_prefix.split("/")[2]
    mount(array.replace(f"s3://{bucket}/", "s3://no-such-bucket/"), 2, "missing bucket",
          says=("no such bucket", "no-such-bucket"))
    mount(uri_prefix + "/no_such_array", 2, "nothing under the prefix", says=("no_such_array",))
    # A port nothing listens on, and one that accepts and never answers.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    mount(array, 2, "endpoint refuses connections",
          env=dict(base, AWS_ENDPOINT_URL=f"http://127.0.0.1:{closed}"), within=30,
          says=(f"127.0.0.1:{closed}", "attempts"))
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        port = silent.getsockname()[1]
        mount(array, 2, "endpoint never answers",
              env=dict(base, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}"), within=30,
              says=("attempts",))
    mount(array, 5, "unknown access key", env=dict(base, AWS_ACCESS_KEY_ID="NOSUCHKEY"),
          says=("access denied", bucket, "dense_1d"))
    no_creds = {k: v for k, v in base.items()
                if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    mount(array, 5, "no credentials", env=no_creds, says=("no S3 credentials",))
    p = ml.run([exe, "-o", "s3_addressing=dns", array, mnt])
    c.eq(p.returncode, 1, "exit code: bad s3_addressing value")


def main():
    ml.require_fuse()
    bin_dir, wrapped, corpus_root, endpoint, uri_prefix = sys.argv[1:6]
    corpus = cmt.Corpus(corpus_root)
    exe = os.path.join(wrapped, "tiledbfs")

    def body(c, tmp):
        # Independent (a mount point each), so on threads: most is waiting on
        # S3. The exit codes (~20 s of it: an endpoint that never answers)
        # come first, with a thread added for them.
        tasks = [lambda: check_exit_codes(c, bin_dir, uri_prefix, tmp)]
        tasks += [lambda n=n: cmt.check_array(c, corpus, exe, n, tmp) for n in corpus.names()]
        tasks += [lambda n=n: check_jq(c, exe, corpus, n, tmp)
                  for n in ("dense_1d", "sparse_2d", "group", "metadata") if n in corpus.names()]
        tasks.append(lambda: check_mount_helper(c, bin_dir, corpus, uri_prefix, tmp))
        ml.run_parallel(tasks, ml.default_workers() + 1)

    return ml.run_checks("s3_mount_corpus", 1200, "tiledbfs-s3-tools-", body)

if __name__ == "__main__":
    sys.exit(main())
