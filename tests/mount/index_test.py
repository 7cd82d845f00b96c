#!/usr/bin/env python3
"""The persistent index (issue 51), through real mounts of the corpus and
tiledbfs-index.

  index_test.py BIN_DIR CORPUS

1. tiledbfs-index builds the index of arrays and a group into a fresh
   folder (made 0700, entries 0600): each view laid out once; a second run
   lays out none and finds every one in the index. Off a terminal it draws
   no progress bar and prints one summary line per source (views, tiles
   decoded, MB stored, MB/s, seconds).
2. A mount over that index and a mount with -o index=off show the same
   listings (names and sizes, as ls -l) and the same bytes in every file of
   the root, attributes/ and dimensions/.
3. Every entry damaged (one byte flipped): the mount still shows the same
   sizes and bytes, and its log has one line per entry naming it.
4. An encrypted array: tiledbfs-index refuses it without -o index=on; a
   mount with its key leaves the index untouched by default, and adds to it
   with -o index=on, with the same bytes.
Exits 77 without /dev/fuse.
"""
import hashlib
import os
import re
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mountlib as ml  # noqa: E402

ARRAYS = ["sparse_2d", "dense_1d", "types", "enumerations", "sparse_strdim", "deletes"]


def files_of(root):
    """(relative path, size, sha256) of every file of the view's top,
    attributes/ and dimensions/, in order."""
    out = []
    for sub in ("", "attributes", "dimensions"):
        d = os.path.join(root, sub)
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            if not os.path.isfile(p):
                continue
            size = os.stat(p).st_size
            with open(p, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            out.append((os.path.join(sub, name), size, digest))
    return out


def entries(index_dir):
    return sorted(n for n in os.listdir(index_dir) if n.endswith(".tfi"))


def view_of(c, exe, array, mnt, log, options):
    d = ml.Daemon([exe, "-f", "-o", options, array, mnt], mnt, log, checks=c)
    if not c.ok(d.live, f"mount {os.path.basename(array)} -o {options}", d.log()):
        d.stop()
        return None, d
    got = files_of(mnt)
    d.stop()
    return got, d


def body(c, bin_dir, corpus, tmp):
    exe = os.path.join(bin_dir, "tiledbfs")
    tool = os.path.join(bin_dir, "tiledbfs-index")
    arrays = os.path.join(corpus, "arrays")
    index_dir = os.path.join(tmp.path, "index", "nested")
    mnt = tmp.sub("mnt")
    sources = [os.path.join(arrays, a) for a in ARRAYS] + [os.path.join(arrays, "group")]

    # 1. Built ahead, then found.
    p = ml.run([tool, "-o", f"index_dir={index_dir}", *sources], timeout=300)
    out = p.stdout.decode()
    c.eq(p.returncode, 0, "tiledbfs-index exits 0")
    counts = [re.search(r": (\d+) views laid out, (\d+) found", ln) for ln in out.splitlines()]
    c.ok(all(counts) and len(counts) == len(sources), "a line per source", out)
    # Not on a terminal: no progress bar, one summary line per source.
    c.ok(b"\r" not in p.stderr and b"\033[" not in p.stderr, "no progress bar off a terminal",
         p.stderr.decode()[-300:])
    summary = re.compile(r"^tiledbfs-index: \S+: \d+ views laid out, \d+ found in the index, "
                         r"(\d+) tiles decoded \(\d+\.\d MB stored, \d+\.\d MB/s\), "
                         r"\d+\.\d\d s \(.+\)$")
    tiles = [summary.match(ln) for ln in out.splitlines()]
    c.ok(all(tiles) and len(tiles) == len(sources), "each line a whole summary", out)
    c.ok(all(int(m.group(1)) > 0 for m in tiles[:-1] if m), "first run: tiles decoded", out)
    counts = [(int(m.group(1)), int(m.group(2))) for m in counts if m]
    # The group's members are views of arrays indexed before it: found.
    c.ok(all(laid > 0 and found == 0 for laid, found in counts[:-1]),
         "first run: each array laid out, nothing found", out)
    c.eq(stat.S_IMODE(os.stat(index_dir).st_mode), 0o700, "index folder 0700")
    built = entries(index_dir)
    c.eq(len(built), sum(laid for laid, _ in counts), "an entry per view laid out")
    for n in built:
        c.eq(stat.S_IMODE(os.stat(os.path.join(index_dir, n)).st_mode), 0o600, f"{n} 0600")
    p = ml.run([tool, "-o", f"index_dir={index_dir}", *sources], timeout=300)
    out = p.stdout.decode()
    c.eq(p.returncode, 0, "second run exits 0")
    c.eq(out.count(" 0 views laid out"), len(sources), "second run lays out nothing")
    c.eq(entries(index_dir), built, "second run writes no entry")

    # 2. The same listings and bytes with the index as without.
    want = {}
    for a in ARRAYS:
        path = os.path.join(arrays, a)
        off, _ = view_of(c, exe, path, mnt, os.path.join(tmp.path, f"{a}-off.log"), "index=off")
        on, d = view_of(c, exe, path, mnt, os.path.join(tmp.path, f"{a}-on.log"),
                        f"index_dir={index_dir}")
        want[a] = off
        c.ok(off is not None and off == on, f"{a}: the same files with the index", str(on)[:300])
        c.eq(d.log().strip(), "", f"{a}: no log line from a mount over a whole index")

    # 3. Every entry damaged: rebuilt, one line each, the same bytes.
    for n in built:
        path = os.path.join(index_dir, n)
        with open(path, "r+b") as f:
            size = os.path.getsize(path)
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0x10]))
    damaged = set(built)
    lines = []
    for a in ARRAYS:
        on, d = view_of(c, exe, os.path.join(arrays, a), mnt,
                        os.path.join(tmp.path, f"{a}-damaged.log"), f"index_dir={index_dir}")
        c.ok(on == want[a], f"{a}: the same files over damaged entries")
        lines += [ln for ln in d.log_lines() if ln.strip()]
    # Each view's entry is read, and a sparse array's base (the view its appends extend)
    # when its view's entry is not found: one line for each, naming it.
    named = [[n for n in damaged if n in ln] for ln in lines]
    c.ok(all(len(n) == 1 for n in named), "each line names one damaged entry's file",
         "\n".join(lines))
    c.eq(len({n[0] for n in named if n}), len(lines), "one log line per damaged entry read")
    c.ok(len(lines) >= len(ARRAYS), "every view's entry read", "\n".join(lines))

    # 4. Encrypted: not indexed unless asked.
    enc = os.path.join(arrays, "encrypted")
    key = os.path.join(arrays, "encrypted.key")
    fresh = os.path.join(tmp.path, "index-enc")
    p = ml.run([tool, "-o", f"index_dir={fresh},key_file={key}", enc], timeout=120)
    c.eq(p.returncode, 1, "tiledbfs-index refuses an encrypted array without index=on")
    c.ok(b"index=on" in p.stderr, "and says how", p.stderr.decode()[-300:])
    plain, _ = view_of(c, exe, enc, mnt, os.path.join(tmp.path, "enc-off.log"),
                       f"key_file={key},index=off")
    auto, _ = view_of(c, exe, enc, mnt, os.path.join(tmp.path, "enc-auto.log"),
                      f"key_file={key},index_dir={fresh}")
    c.ok(auto == plain, "encrypted: the same files by default")
    c.eq(entries(fresh) if os.path.isdir(fresh) else [], [], "encrypted: no entry by default")
    on, _ = view_of(c, exe, enc, mnt, os.path.join(tmp.path, "enc-on.log"),
                    f"key_file={key},index_dir={fresh},index=on")
    c.ok(on == plain, "encrypted: the same files with index=on")
    c.ok(len(entries(fresh)) > 0, "encrypted: entries with index=on")


def main():
    ml.require_fuse()
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    bin_dir, corpus = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    return ml.run_checks("mount_index", 300, "tiledbfs-index-test-",
                         lambda c, tmp: body(c, bin_dir, corpus, tmp))


if __name__ == "__main__":
    sys.exit(main())
