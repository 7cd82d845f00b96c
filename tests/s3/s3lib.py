"""A real S3 server for the tests: s3rver 3.7.1 (tests/node, installed by
scripts/lib.sh tiledbfs_install_node) on loopback, in a temporary folder.

  with S3Server(tmp) as s3:          # started, answering, bucket made
      s3.upload_tree(local, "corpus/arrays")
      env = s3.env()                 # credentials only in the environment
      wrap_tools(bin_dir, out, {local: s3.uri("corpus/arrays")})

Every wait is bounded; the server is killed on exit. A missing s3rver is a
failure (exit 1 with how to install it), never a skip.
"""
import concurrent.futures
import http.client
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from urllib.parse import quote

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
S3RVER = os.path.join(ROOT, "tests", "node", "node_modules", ".bin", "s3rver")
BUCKET = "tiledbfs-test"
# s3rver's built-in account (it checks the key id, not the signature).
ACCESS_KEY, SECRET_KEY = "S3RVER", "S3RVER"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self, tmp, bucket=BUCKET):
        self.dir = os.path.join(tmp, "s3rver-data")
        self.bucket = bucket
        self.proc = None
        self.port = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        if not os.access(S3RVER, os.X_OK):
            print(f"FAIL: {S3RVER} is missing: install it with scripts/lib.sh "
                  "(tiledbfs_install_node: npm ci in tests/node)", flush=True)
            sys.exit(1)
        os.makedirs(self.dir, exist_ok=True)
        for _ in range(5):  # the free port may be taken in between: try another
            self.port = free_port()
            # s3rver 3.7.1 makes ListObjectsV2 continuation tokens with DES,
            # which OpenSSL 3 has only in its legacy provider: without it a
            # listing of more than 1000 keys is HTTP 500 on Node >= 17.
            env = dict(os.environ, NODE_OPTIONS="--openssl-legacy-provider")
            self.proc = subprocess.Popen(
                [S3RVER, "-d", self.dir, "-a", "127.0.0.1", "-p", str(self.port), "--silent"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, env=env)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    if self.request("GET", "/")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.05)
            if self.proc.poll() is None:
                break
        else:
            raise RuntimeError("s3rver did not start: " + self.proc.stderr.read().decode()[-500:])
        status, body = self.request("PUT", f"/{self.bucket}")
        if status != 200:
            raise RuntimeError(f"cannot create bucket {self.bucket}: HTTP {status} {body[:200]}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(timeout=10)

    def request(self, method, path, body=None, conn=None):
        own = conn is None
        conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            if own:
                conn.close()

    def uri(self, key_prefix=""):
        return f"s3://{self.bucket}/{key_prefix}".rstrip("/")

    def upload_tree(self, local, key_prefix, workers=4):
        """PUTs every file below `local` as key_prefix/<relative path>, on
        `workers` connections at once. (S3 has no empty folders: they are not
        uploaded.) Returns the count."""
        paths = []
        for root, _, files in os.walk(local):
            paths += [os.path.join(root, f) for f in sorted(files)]
        local_ = threading.local()

        def put(path):
            if not hasattr(local_, "conn"):
                local_.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                opened.append(local_.conn)
            key = key_prefix + "/" + os.path.relpath(path, local)
            with open(path, "rb") as fh:
                data = fh.read()
            status, body = self.request("PUT", f"/{self.bucket}/{quote(key)}", data, local_.conn)
            if status != 200:
                raise RuntimeError(f"PUT {key}: HTTP {status} {body[:200]}")

        opened = []
        try:
            with concurrent.futures.ThreadPoolExecutor(max(1, workers)) as pool:
                list(pool.map(put, paths))
        finally:
            for conn in opened:
                conn.close()
        return len(paths)

    def env(self, endpoint=None, **extra):
        """The environment for a client of this server: the process's own,
        without any AWS setting it had, plus credentials and the endpoint."""
        e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        e.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
                 AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint or self.endpoint,
                 AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
        e.update(extra)
        return e


def wrap_tools(bin_dir, out_dir, mapping):
    """Writes out_dir/tiledbfs and out_dir/tiledbfs-view: the real tools, with
    every argument that is a folder under a local folder of `mapping`
    replaced by its s3:// URI, so that tests written for local corpora run on S3 unchanged."""
    os.makedirs(out_dir, exist_ok=True)
    # Folders only: a key file (-o key_file=..., --key-file) stays local.
    cases = "\n".join(f'    "{local}") a="{uri}" ;;\n'
                      f'    "{local}"/*) [ -d "$a" ] && a="{uri}/${{a#"{local}"/}}" ;;'
                      for local, uri in mapping.items())
    for tool in ("tiledbfs", "tiledbfs-view"):
        path = os.path.join(out_dir, tool)
        with open(path, "w") as f:
            f.write(f"""#!/bin/sh
# {tool} with local corpus paths mapped to s3:// URIs (tests/s3/s3lib.py).
for a; do
  case "$a" in
{cases}
  esac
  set -- "$@" "$a"
  shift
done
exec "{os.path.join(bin_dir, tool)}" "$@"
""")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return out_dir
