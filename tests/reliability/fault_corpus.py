"""fault_injection_test.py's view of a corpus array folder: its files by
kind, which bytes a checksum or encryption covers (ArrayInfo), and the
seeded mutations made, applied to a private copy and undone.
"""
import collections
import json
import os
import random
import re
import shutil


CHECKSUM_FILTERS = ("CHECKSUM_MD5", "CHECKSUM_SHA256")


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def file_kind(rel):
    """What a file of the array folder holds (for picking and reporting)."""
    base = os.path.basename(rel)
    parts = rel.split("/")
    if "__schema" in parts or base == "__array_schema.tdb" or "__enumerations" in parts:
        return "schema"
    if base == "__fragment_metadata.tdb" or "__fragment_meta" in parts:
        return "fragment_metadata"
    if "__meta" in parts:
        return "metadata"
    if "__group" in parts or base == "__tiledb_group.tdb":
        return "group"
    if "__commits" in parts or base.endswith((".vac", ".ign", ".con", ".del", ".upd", ".wrt")):
        return "commits"
    if base.endswith(".tdb") and len(parts) >= 2:
        return "data"
    return "other"


FRAGMENT_DIR = re.compile(r"^__(\d+_\d+_)?[0-9a-f]{32}(_\d+)*$|^__\d+_\d+_[0-9a-f]{32}(_\d+)?$")


def fragment_of(rel):
    """(folder prefix of the array inside the tree, fragment folder name) if
    rel is a file inside a fragment folder, else None."""
    parts = rel.split("/")
    if len(parts) < 2 or not FRAGMENT_DIR.match(parts[-2]):
        return None
    prefix = parts[:-2]
    if prefix and prefix[-1] == "__fragments":
        prefix = prefix[:-1]
    return "/".join(prefix), parts[-2]


class ArrayInfo:
    def __init__(self, corpus, name):
        self.name = name
        self.path = os.path.join(corpus, "arrays", name)
        key = self.path + ".key"
        self.key_file = key if os.path.exists(key) else None
        self.encrypted = self.key_file is not None
        self.files = []  # (rel, size, kind), size > 0
        for root, _, names in os.walk(self.path):
            for n in sorted(names):
                full = os.path.join(root, n)
                rel = os.path.relpath(full, self.path)
                size = os.path.getsize(full)
                if size > 0:
                    self.files.append((rel, size, file_kind(rel)))
        self.files.sort()
        self.by_kind = collections.defaultdict(list)
        for f in self.files:
            self.by_kind[f[2]].append(f)
        self.kinds = sorted(self.by_kind)
        self.checksummed = set()  # rel files covered by a checksum filter
        self.tree = None  # pristine {key: entry}
        self.tree_files = []
        self.children = {}  # pristine directory key -> entry keys

    def footer_start(self, rel):
        """Offset of the footer of a fragment metadata file (format >= 10:
        the last 8 bytes give its length)."""
        data = read_file(os.path.join(self.path, rel))
        if len(data) < 8:
            return 0
        n = int.from_bytes(data[-8:], "little")
        return max(0, len(data) - 8 - n) if n < len(data) else 0

    def find_checksummed(self, tree_root_schema):
        """Data files whose tiles a checksum filter covers: a<i>.tdb (fixed) or
        a<i>_var.tdb (var) of attribute i, d<i>... of dimension i, where the
        fragment was written with this one schema (arrays with one schema)."""
        schemas = [f for f in self.files if f[2] == "schema" and "__enumerations" not in f[0]]
        if len(schemas) != 1 or not tree_root_schema:
            return
        try:
            schema = json.loads(tree_root_schema)
        except ValueError:
            return
        covered = set()
        coords = schema.get("coords_filters", [])
        for prefix, fields in (("a", schema.get("attrs", [])), ("d", schema.get("dims", []))):
            for i, field in enumerate(fields):
                filters = field.get("filters") or (coords if prefix == "d" else [])
                if any(f in CHECKSUM_FILTERS for f in filters):
                    covered.add(f"{prefix}{i}" + ("_var" if field.get("var") else ""))
        for rel, _, kind in self.files:
            if kind == "data" and os.path.basename(rel)[:-4] in covered:
                self.checksummed.add(rel)

    def covered(self, mutation):
        """True if a checksum or encryption covers the mutated bytes."""
        rel, op, off = mutation["file"], mutation["op"], mutation["offset"]
        if rel in self.checksummed:
            return True
        if not self.encrypted:
            return False
        kind = file_kind(rel)
        if kind in ("schema", "metadata", "data"):
            return True
        if kind == "commits":
            return rel.endswith(".del") or rel.endswith(".upd")
        if kind == "fragment_metadata" and os.path.basename(rel) == "__fragment_metadata.tdb":
            return op == "flip" and off < self.footer_start(rel)
        return False


def make_mutations(info, n, seed, salt):
    rng = random.Random(f"{seed}:{salt}:{info.name}")
    out = []
    for _ in range(n):
        kind = rng.choice(info.kinds)
        rel, size, _ = rng.choice(info.by_kind[kind])
        if rng.random() < 0.75:
            out.append({"file": rel, "op": "flip", "offset": rng.randrange(size),
                        "xor": rng.randrange(1, 256)})
        else:
            out.append({"file": rel, "op": "truncate", "offset": rng.randrange(size), "xor": 0})
    return out


def describe(m):
    if m["op"] == "flip":
        return f"{m['file']} byte {m['offset']} ^= 0x{m['xor']:02x}"
    return f"{m['file']} truncated to {m['offset']}"


def apply_mutation(copy, m):
    path = os.path.join(copy, m["file"])
    if m["op"] == "flip":
        with open(path, "r+b") as f:
            f.seek(m["offset"])
            b = f.read(1)
            f.seek(m["offset"])
            f.write(bytes([b[0] ^ m["xor"]]))
    else:
        os.truncate(path, m["offset"])


def restore(info, copy, m):
    shutil.copyfile(os.path.join(info.path, m["file"]), os.path.join(copy, m["file"]))
