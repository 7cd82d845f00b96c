"""writers_at_work_test.py's settings and the results all its threads share.

The knobs read from the environment (WAW_*), the arrays' schemas, instant
names, and the single shared objects: STATS (counts and failures), DEFERRED
(content to classify at the end) and HISTORY_READS (history views to check
at the end), each with its lock. The other waw_* modules import these
objects by name; none of them is ever rebound, only added to.
"""
import collections
import os
import re
import sys
import threading
import time
from datetime import datetime, timezone

# mountlib, for every waw_* module that imports it after this one.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))


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


HISTORY_READS = []  # (model, instant, rel, bytes, first version, last version, label)
HISTORY_LOCK = threading.Lock()


def iso(ms):
    return datetime.fromtimestamp(ms // 1000, tz=timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"
