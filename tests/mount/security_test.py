#!/usr/bin/env python3
"""tiledbfs security, through real mounts of the fixture corpus.

  security_test.py BIN_DIR CORPUS

1. Read-only: on dense_2d_fragments and on the encrypted array (with its
   key), every mutating call answers EROFS, on files and folders of the
   root, of history/<T>/ and of fragments/<name>/: open for writing
   (O_WRONLY, O_RDWR, O_TRUNC, O_APPEND), create (O_CREAT, O_EXCL,
   O_TMPFILE), mkdir, mknod, mkfifo, unlink, rmdir, rename, link, symlink,
   truncate, chmod, chown, utimens, setxattr, removexattr; through an
   O_RDONLY descriptor fchmod, fchown, futimens, fsetxattr, fremovexattr
   answer EROFS and write, ftruncate and a shared writable mmap fail. The
   mount and the array folder are unchanged afterwards.
2. Symlinks: in a copy of an array, a fragment data file, a fragment's
   metadata file, a whole fragment folder, an array metadata (__meta) file
   and a schema file are each replaced by a symlink to a copy outside the
   array (valid content; the data file's copy holds a marker value). The
   link is never followed: what depends on it fails with EIO and the daemon
   logs a line naming it (or the mount itself is refused with exit 2); the
   marker never shows. A symlink to a file inside the array is followed.
   No entry of a mount is a symlink.
3. Keys: the encrypted array mounted with -o key_file= (hex and raw key
   files), in the background and with -f -d: the key (raw, hex, upper hex,
   base64, and any 12 bytes of it raw or as hex) is nowhere in the daemon's output,
   ps -ef, /proc/<pid>/cmdline and environ, /proc/mounts, mountinfo,
   findmnt, the names and bytes of every file of the mount, nor in the
   messages of wrong, malformed and missing keys (tiledbfs and
   tiledbfs-view).
4. allow_other is absent from the mount options unless asked for with
   -o allow_other; default_permissions is always there.
Exits 77 without /dev/fuse.
"""
import base64
import errno
import hashlib
import mmap
import os
import shutil
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mountlib as ml  # noqa: E402

EROFS = errno.EROFS
MARKER = 0x5EC2E7  # a value no corpus file holds, planted in an outside copy
MARKER_TEXT = str(MARKER).encode()


def Daemon(c, exe, src, mnt, opts=(), log_dir=None, tag="d"):
    """tiledbfs -f OPTS SRC MNT (ml.Daemon), stdout and stderr in files of
    log_dir named after `tag`."""
    return ml.Daemon([exe, "-f", *opts, src, mnt], mnt, log=os.path.join(log_dir, f"{tag}.err"),
                     out=os.path.join(log_dir, f"{tag}.out"), checks=c)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def read_errno(path):
    """(errno, bytes): errno 0 and the bytes if the whole file reads."""
    try:
        return 0, read(path)
    except OSError as e:
        return e.errno, None


def tree_digest(root):
    """Names, types, modes, sizes, mtimes and content hashes below root,
    without following symlinks."""
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for n in sorted(dirs + files):
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            h = ""
            if stat.S_ISREG(st.st_mode):
                h = hashlib.sha256(read(p)).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                h = os.readlink(p)
            out.append((os.path.relpath(p, root), st.st_mode, st.st_size, st.st_mtime_ns, h))
    return out


def walk_mount(mnt):
    files, dirs = [], []
    for dirpath, ds, fs in os.walk(mnt):
        dirs += [os.path.relpath(os.path.join(dirpath, d), mnt) for d in ds]
        files += [os.path.relpath(os.path.join(dirpath, f), mnt) for f in fs]
    return sorted(files), sorted(dirs)


# ---------------------------------------------------------------- 1. EROFS


def erofs_calls_file(f, other, newname):
    """Mutating calls on an existing file f (other: another existing file of
    the same folder; newname: a free name in it)."""
    return [
        ("open O_WRONLY", lambda: os.open(f, os.O_WRONLY)),
        ("open O_RDWR", lambda: os.open(f, os.O_RDWR)),
        ("open O_WRONLY|O_TRUNC", lambda: os.open(f, os.O_WRONLY | os.O_TRUNC)),
        ("open O_RDONLY|O_TRUNC", lambda: os.open(f, os.O_RDONLY | os.O_TRUNC)),
        ("open O_WRONLY|O_APPEND", lambda: os.open(f, os.O_WRONLY | os.O_APPEND)),
        ("open O_RDWR|O_CREAT (existing)", lambda: os.open(f, os.O_RDWR | os.O_CREAT, 0o644)),
        ("truncate", lambda: os.truncate(f, 0)),
        ("truncate (grow)", lambda: os.truncate(f, 1 << 20)),
        ("chmod", lambda: os.chmod(f, 0o666)),
        ("chown (same owner)", lambda: os.chown(f, os.getuid(), os.getgid())),
        ("chown (other owner)", lambda: os.chown(f, 12345, 12345)),
        ("utimens (0, 0)", lambda: os.utime(f, (0, 0))),
        ("utimens (now)", lambda: os.utime(f, None)),
        ("setxattr user.x", lambda: os.setxattr(f, "user.x", b"1")),
        ("setxattr user.x XATTR_CREATE", lambda: os.setxattr(f, "user.y", b"1", os.XATTR_CREATE)),
        ("removexattr user.x", lambda: os.removexattr(f, "user.x")),
        ("unlink", lambda: os.unlink(f)),
        ("rename to a new name", lambda: os.rename(f, newname)),
        ("rename over another file", lambda: os.rename(f, other)),
        ("link", lambda: os.link(f, newname)),
    ]


def erofs_calls_dir(d, sub, a_file, newname):
    """Mutating calls in and on folder d (sub: a subfolder of d or None;
    a_file: a file of d; newname: a free name in d)."""
    calls = [
        ("create O_CREAT|O_WRONLY", lambda: os.open(newname, os.O_CREAT | os.O_WRONLY, 0o644)),
        ("create O_CREAT|O_RDONLY", lambda: os.open(newname, os.O_CREAT | os.O_RDONLY, 0o644)),
        ("create O_CREAT|O_EXCL", lambda: os.open(newname, os.O_CREAT | os.O_EXCL | os.O_RDWR,
                                                  0o644)),
        ("create O_TMPFILE", lambda: os.open(d, os.O_TMPFILE | os.O_RDWR, 0o644)),
        ("mkdir", lambda: os.mkdir(newname)),
        ("mknod S_IFREG", lambda: os.mknod(newname, stat.S_IFREG | 0o644)),
        ("mkfifo", lambda: os.mkfifo(newname)),
        ("symlink", lambda: os.symlink("/etc/passwd", newname)),
        ("symlink (relative, to a file here)", lambda: os.symlink(os.path.basename(a_file),
                                                                  newname)),
        ("link a file to a new name", lambda: os.link(a_file, newname)),
        ("rename a file in", lambda: os.rename(a_file, newname)),
        ("chmod folder", lambda: os.chmod(d, 0o777)),
        ("chown folder", lambda: os.chown(d, os.getuid(), os.getgid())),
        ("utimens folder", lambda: os.utime(d, (0, 0))),
        ("setxattr folder", lambda: os.setxattr(d, "user.x", b"1")),
        ("removexattr folder", lambda: os.removexattr(d, "user.x")),
    ]
    if sub:
        calls += [
            ("rmdir a subfolder", lambda: os.rmdir(sub)),
            ("unlink a subfolder", lambda: os.unlink(sub)),
            ("rename a subfolder", lambda: os.rename(sub, newname)),
        ]
    return calls


def erofs_calls_fd(f):
    """Calls through an O_RDONLY descriptor of f: (what, fn, errnos that pass)."""
    def with_fd(fn):
        def go():
            fd = os.open(f, os.O_RDONLY)
            try:
                fn(fd)
            finally:
                os.close(fd)
        return go

    def shared_writable_mmap(fd):
        m = mmap.mmap(fd, 1, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        m.close()

    return [
        ("fchmod", with_fd(lambda fd: os.fchmod(fd, 0o666)), {EROFS}),
        ("fchown", with_fd(lambda fd: os.fchown(fd, os.getuid(), os.getgid())), {EROFS}),
        ("futimens", with_fd(lambda fd: os.utime(fd, (0, 0))), {EROFS}),
        ("fsetxattr", with_fd(lambda fd: os.setxattr(fd, "user.x", b"1")), {EROFS}),
        ("fremovexattr", with_fd(lambda fd: os.removexattr(fd, "user.x")), {EROFS}),
        # Not open for writing: the kernel refuses before the file system.
        ("write to an O_RDONLY fd", with_fd(lambda fd: os.write(fd, b"x")), {errno.EBADF}),
        ("ftruncate an O_RDONLY fd", with_fd(lambda fd: os.ftruncate(fd, 0)),
         {errno.EINVAL, errno.EBADF}),
        ("posix_fallocate an O_RDONLY fd", with_fd(lambda fd: os.posix_fallocate(fd, 0, 4096)),
         {errno.EBADF}),
        ("mmap PROT_WRITE MAP_SHARED", with_fd(shared_writable_mmap), {errno.EACCES}),
    ]


def check_erofs_on(c, label, mnt):
    """Every mutating call on the root, history/<T>/ and fragments/<name>/."""
    history = sorted(os.listdir(os.path.join(mnt, "history")))
    fragments = sorted(os.listdir(os.path.join(mnt, "fragments")))
    c.ok(bool(history) and bool(fragments), f"{label}: has history views and fragments")
    scopes = [""]
    if history:
        scopes.append(f"history/{history[0]}")
    if fragments:
        scopes.append(f"fragments/{fragments[0]}")
    before_files, before_dirs = walk_mount(mnt)
    before = {f: read(os.path.join(mnt, f)) for f in before_files}
    count = 0
    for scope in scopes:
        top = os.path.join(mnt, scope)
        # Folders: the scope itself, its attributes/ and (root) history/, fragments/.
        folders = [(top, os.path.join(top, "attributes"))]
        folders.append((os.path.join(top, "attributes"), None))
        if scope == "":
            folders.append((os.path.join(top, "history"), os.path.join(top, "history",
                                                                       history[0])))
            folders.append((os.path.join(top, "fragments"), os.path.join(top, "fragments",
                                                                         fragments[0])))
        for d, sub in folders:
            files = sorted(x for x in os.listdir(d) if os.path.isfile(os.path.join(d, x)))
            a_file = os.path.join(d, files[0]) if files else os.path.join(top, "data.csv")
            for what, fn in erofs_calls_dir(d, sub, a_file, os.path.join(d, "new-name")):
                got = ml.errno_of(fn)
                c.ok(got == EROFS, f"{label} {os.path.relpath(d, mnt)}: {what} -> EROFS",
                     f"got {errno.errorcode.get(got, got)}")
                count += 1
        # Files: a rendered text file, a column file of attributes/.
        attrs = sorted(x for x in os.listdir(os.path.join(top, "attributes"))
                       if os.path.getsize(os.path.join(top, "attributes", x)) > 0)
        targets = [os.path.join(top, "data.csv")]
        if attrs:
            targets.append(os.path.join(top, "attributes", attrs[0]))
        for f in targets:
            d = os.path.dirname(f)
            others = sorted(x for x in os.listdir(d)
                            if os.path.isfile(os.path.join(d, x)) and x != os.path.basename(f))
            other = os.path.join(d, others[0]) if others else f
            for what, fn in erofs_calls_file(f, other, os.path.join(d, "new-name")):
                got = ml.errno_of(fn)
                c.ok(got == EROFS, f"{label} {os.path.relpath(f, mnt)}: {what} -> EROFS",
                     f"got {errno.errorcode.get(got, got)}")
                count += 1
            for what, fn, allowed in erofs_calls_fd(f):
                got = ml.errno_of(fn)
                names = "/".join(errno.errorcode[e] for e in sorted(allowed))
                c.ok(got in allowed, f"{label} {os.path.relpath(f, mnt)}: {what} -> {names}",
                     f"got {errno.errorcode.get(got, got)}")
                count += 1
    after_files, after_dirs = walk_mount(mnt)
    c.eq(after_files, before_files, f"{label}: the mount lists the same files afterwards")
    c.eq(after_dirs, before_dirs, f"{label}: the mount lists the same folders afterwards")
    changed = [f for f in before_files if read(os.path.join(mnt, f)) != before[f]]
    c.ok(not changed, f"{label}: every file reads the same bytes afterwards", str(changed[:5]))
    bad = [f for f in before_files if os.stat(os.path.join(mnt, f)).st_mode & 0o222]
    c.ok(not bad, f"{label}: no file has a write bit", str(bad[:5]))
    return count


def check_read_only(c, exe, corpus, tmp):
    total = 0
    for name, key in (("dense_2d_fragments", None), ("encrypted", corpus_key(corpus, name="encrypted"))):
        src = os.path.join(corpus, "arrays", name)
        before = tree_digest(src)
        mnt = tmp.sub("ro-" + name)
        opts = ["-o", f"key_file={key}"] if key else []
        p = ml.mount([exe, *opts, src, mnt], mnt)
        if not c.eq(p.returncode, 0, f"mount {name} ({p.stderr.decode(errors='replace')[:200]})"):
            ml.unmount(mnt)
            continue
        try:
            entry = ml.mount_entry(mnt)
            c.ok(entry is not None and "ro" in entry[2], f"{name}: /proc/mounts says ro",
                 str(entry))
            total += check_erofs_on(c, name, mnt)
        finally:
            c.ok(ml.unmount(mnt), f"unmount {name}")
        c.ok(tree_digest(src) == before, f"{name}: the array folder is unchanged")
    print(f"read-only: {total} mutating calls tried", flush=True)


# ------------------------------------------------------------- 2. symlinks


def corpus_key(corpus, name):
    k = os.path.join(corpus, "arrays", name + ".key")
    return k if os.path.exists(k) else None


def one_fragment(arr):
    frags = sorted(os.listdir(os.path.join(arr, "__fragments")))
    return os.path.join(arr, "__fragments", frags[0])


def plant(link, target):
    """Replaces `link` by a symlink to `target` (absolute)."""
    if os.path.isdir(link) and not os.path.islink(link):
        shutil.rmtree(link)
    else:
        os.unlink(link)
    os.symlink(target, link)


def check_symlinks(c, exe, corpus, tmp):
    arrays = os.path.join(corpus, "arrays")
    outside = tmp.sub("outside")
    logs = tmp.sub("sym-logs")

    # No entry of a normal mount is a symlink.
    mnt = tmp.sub("sym-plain")
    d = Daemon(c, exe, os.path.join(arrays, "dense_2d_fragments"), mnt, log_dir=logs, tag="plain")
    if c.ok(d.live, "mount dense_2d_fragments"):
        links = []
        for dirpath, ds, fs in os.walk(mnt):
            links += [x for x in ds + fs if os.path.islink(os.path.join(dirpath, x))]
        c.ok(not links, "no entry of a mount is a symlink", str(links[:3]))
    d.stop()

    def copy_array(name, tag):
        dst = os.path.join(tmp.path, f"arr-{tag}")
        shutil.copytree(os.path.join(arrays, name), dst, symlinks=True)
        return dst

    # dense_1d: one fragment, no filters, attribute a INT32 over x in [1,100].
    cases = []

    # (a) the fragment's data file of attribute a, outside copy with a marker.
    arr = copy_array("dense_1d", "data")
    frag = one_fragment(arr)
    data_file = os.path.join(frag, "a0.tdb")
    target = os.path.join(outside, "a0.tdb")
    raw = bytearray(read(data_file))
    marker = MARKER.to_bytes(4, "little") * 3
    raw[-12:] = marker  # the last three cells' values
    with open(target, "wb") as f:
        f.write(raw)
    plant(data_file, target)
    cases.append(("fragment data file", "dense_1d", arr, None, ["attributes/a.bin", "data.csv"],
                  "a0.tdb", marker))

    # (b) the fragment's metadata file, outside copy unchanged.
    arr = copy_array("dense_1d", "fmeta")
    frag = one_fragment(arr)
    fm = os.path.join(frag, "__fragment_metadata.tdb")
    target = os.path.join(outside, "__fragment_metadata.tdb")
    shutil.copyfile(fm, target)
    plant(fm, target)
    cases.append(("fragment metadata file", "dense_1d", arr, None, ["attributes/a.bin",
                                                                    "data.csv"],
                  "__fragment_metadata.tdb", None))

    # (c) the whole fragment folder, outside copy unchanged.
    arr = copy_array("dense_1d", "fdir")
    frag = one_fragment(arr)
    target = os.path.join(outside, "fragment-copy")
    shutil.copytree(frag, target)
    plant(frag, target)
    cases.append(("fragment folder", "dense_1d", arr, None, ["attributes/a.bin", "data.csv"],
                  os.path.basename(frag), None))

    # (d) an array metadata file (__meta/), outside copy unchanged.
    arr = copy_array("metadata", "meta")
    metas = sorted(os.listdir(os.path.join(arr, "__meta")))
    mf = os.path.join(arr, "__meta", metas[0])
    target = os.path.join(outside, "meta-" + metas[0])
    shutil.copyfile(mf, target)
    plant(mf, target)
    cases.append(("array metadata file (__meta)", "metadata", arr, None, ["metadata.json"],
                  metas[0], None))

    # (e) an array metadata file of the encrypted array.
    arr = copy_array("encrypted", "encmeta")
    metas = sorted(os.listdir(os.path.join(arr, "__meta")))
    mf = os.path.join(arr, "__meta", metas[0])
    target = os.path.join(outside, "encmeta-" + metas[0])
    shutil.copyfile(mf, target)
    plant(mf, target)
    cases.append(("encrypted array metadata file (__meta)", "encrypted", arr,
                  corpus_key(corpus, "encrypted"), ["metadata.json"], metas[0], None))

    # (f) the schema file.
    arr = copy_array("dense_1d", "schema")
    schemas = sorted(os.listdir(os.path.join(arr, "__schema")))
    sf = os.path.join(arr, "__schema", schemas[0])
    target = os.path.join(outside, "schema-" + schemas[0])
    shutil.copyfile(sf, target)
    plant(sf, target)
    cases.append(("schema file", "dense_1d", arr, None, ["schema.json", "attributes/a.bin"],
                  schemas[0], None))

    for i, (what, orig, arr, key, files, logname, marker) in enumerate(cases):
        mnt = tmp.sub(f"sym-{i}")
        opts = ["-o", f"key_file={key}"] if key else []
        d = Daemon(c, exe, arr, mnt, opts, log_dir=logs, tag=f"case{i}")
        if not d.live:
            rc = d.stop()
            err = d.stderr().decode(errors="replace")
            print(f"{what} symlinked outside: mount refused, exit {rc}: {err.strip()[:200]}",
                  flush=True)
            c.ok(rc == 2 and logname in err,
                 f"{what} symlinked outside: the mount is refused (exit 2, naming it) or "
                 f"the reads fail", f"exit {rc}: {err.strip()[:300]}")
            continue
        try:
            for f in files:
                e, data = read_errno(os.path.join(mnt, f))
                c.ok(e == errno.EIO, f"{what} symlinked outside: reading {f} fails with EIO",
                     f"got {errno.errorcode.get(e, e)}" + (f", {len(data)} bytes" if data else ""))
                if marker is not None and data is not None:
                    c.ok(marker[:4] not in data and MARKER_TEXT not in data,
                         f"{what}: {f} never shows the outside file's values")
            # Everything else still lists; nothing shows the outside value.
            all_files, _ = walk_mount(mnt)
            if marker is not None:
                leaked = []
                for f in all_files:
                    e, data = read_errno(os.path.join(mnt, f))
                    if data is not None and (marker in data or MARKER_TEXT in data):
                        leaked.append(f)
                c.ok(not leaked, f"{what}: no file shows the outside file's values", str(leaked))
            time.sleep(0.2)
            err = d.stderr().decode(errors="replace")
            c.ok(logname in err and "tiledbfs" in err,
                 f"{what} symlinked outside: the daemon logs a line naming {logname}",
                 err.strip()[-300:] or "(nothing logged)")
        finally:
            d.stop()

    # A symlink to a file inside the array folder is followed.
    arr = copy_array("dense_1d", "inside")
    frag = one_fragment(arr)
    data_file = os.path.join(frag, "a0.tdb")
    want_mnt = tmp.sub("sym-ref")
    ref = Daemon(c, exe, os.path.join(arrays, "dense_1d"), want_mnt, log_dir=logs, tag="ref")
    want = read(os.path.join(want_mnt, "attributes/a.bin")) if ref.live else None
    ref.stop()
    os.rename(data_file, os.path.join(arr, "a0-real.tdb"))
    os.symlink("../../a0-real.tdb", data_file)
    mnt = tmp.sub("sym-inside")
    d = Daemon(c, exe, arr, mnt, log_dir=logs, tag="inside")
    if c.ok(d.live, "mount with a symlink inside the array"):
        e, data = read_errno(os.path.join(mnt, "attributes/a.bin"))
        c.ok(e == 0 and data == want, "a symlink to a file inside the array is followed",
             f"errno {e}")
    d.stop()


# ----------------------------------------------------------------- 3. keys


def key_forms(raw):
    """Byte strings that would betray the key."""
    hx = raw.hex()
    forms = {
        "raw": raw,
        "hex": hx.encode(),
        "HEX": hx.upper().encode(),
        "base64": base64.b64encode(raw),
        "base64 (no padding)": base64.b64encode(raw).rstrip(b"="),
        "base64url": base64.urlsafe_b64encode(raw).rstrip(b"="),
        "HEX[:24]": hx[:24].upper().encode(),
        "base64[:16]": base64.b64encode(raw)[:16],
        "spaced hex": " ".join(hx[i:i + 2] for i in range(0, 64, 2)).encode(),
        "0x-hex": ", ".join("0x" + hx[i:i + 2] for i in range(0, 64, 2)).encode(),
    }
    # Any 12 consecutive bytes of the key, raw or as hex digits.
    for i in range(0, len(raw) - 11):
        forms[f"raw[{i}:{i + 12}]"] = raw[i:i + 12]
        forms[f"hex of bytes [{i}:{i + 12}]"] = hx[2 * i:2 * i + 24].encode()
    return forms


class KeyWatch:
    def __init__(self, c, keys):
        self.c = c
        self.forms = {}
        for label, raw in keys.items():
            for k, v in key_forms(raw).items():
                self.forms[f"{label} {k}"] = v
        self.places = 0

    def clean(self, where, data):
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        found = [k for k, v in self.forms.items() if v in data]
        self.places += 1
        return self.c.ok(not found, f"no key in {where}", ", ".join(found))


def check_keys(c, bin_dir, corpus, tmp):
    exe = os.path.join(bin_dir, "tiledbfs")
    src = os.path.join(corpus, "arrays", "encrypted")
    hex_file = corpus_key(corpus, "encrypted")
    if not c.ok(hex_file is not None, "the corpus has encrypted.key"):
        return
    raw = bytes.fromhex(read(hex_file).decode().strip())
    c.eq(len(raw), 32, "the key is 32 bytes")
    wrong = bytes(b ^ 0x5A for b in raw)
    keys = tmp.sub("keys")
    raw_file = os.path.join(keys, "raw.key")
    with open(raw_file, "wb") as f:
        f.write(raw)
    watch = KeyWatch(c, {"key": raw, "wrong key": wrong})
    # The detector finds the key where it is (the key files themselves).
    for what, data in (("hex key file", read(hex_file)), ("raw key file", raw),
                       ("base64 in a line", b"k=" + base64.b64encode(raw) + b"\n"),
                       ("a 12-byte piece", b"x" + raw[5:17] + b"y")):
        found = [k for k, v in watch.forms.items() if v in data]
        c.ok(bool(found), f"the key detector finds the key in the {what}")
    logs = tmp.sub("key-logs")

    # Background mounts (the command returns once mounted) with each key form.
    for label, kf in (("hex key file", hex_file), ("raw key file", raw_file)):
        mnt = tmp.sub("key-bg")
        p = ml.mount([exe, "-o", f"key_file={kf}", src, mnt], mnt)
        if not c.eq(p.returncode, 0, f"mount encrypted with a {label}"):
            ml.unmount(mnt)
            continue
        try:
            watch.clean(f"the command's output ({label})", p.stdout + p.stderr)
            check_key_places(c, watch, mnt, label)
        finally:
            c.ok(ml.unmount(mnt), f"unmount ({label})")

    # Foreground with libfuse debug traces: every request is printed.
    for label, flags in (("-f", ["-f"]), ("-f -d", ["-d"]), ("-f -s -d", ["-s", "-d"])):
        mnt = tmp.sub("key-fg")
        d = Daemon(c, exe, src, mnt, [*flags, "-o", f"key_file={hex_file}"], log_dir=logs,
                   tag="fg" + label.replace(" ", ""))
        if not c.ok(d.live, f"mount encrypted {label}", d.stderr().decode(errors="replace")[:300]):
            d.stop()
            continue
        try:
            check_key_places(c, watch, mnt, label)
            # Errors logged by the daemon: a missing name and a bad history instant.
            for bad in ("no-such-file", "history/1699999999999/data.csv", "history/not-a-time"):
                ml.errno_of(os.stat, os.path.join(mnt, bad))
        finally:
            d.stop()
        out = d.stdout() + d.stderr()
        if label != "-f":
            c.ok(b"unique" in out or b"opcode" in out or b"LOOKUP" in out,
                 f"{label}: libfuse debug traces were printed", out[:200].decode(errors="replace"))
        watch.clean(f"the daemon's stdout and stderr ({label}, {len(out)} bytes)", out)

    # Key problems: messages never show the key or the key file's content.
    bad_keys = {
        "wrong hex key": wrong.hex() + "\n",
        "wrong raw key": wrong,
        "63 hex digits of the key": raw.hex()[:63] + "\n",
        "65 hex digits": raw.hex() + "0\n",
        "the key and garbage": raw.hex() + " garbage\n",
        "the key twice": raw.hex() + raw.hex() + "\n",
        "the key with a non-hex digit": raw.hex()[:-1] + "g\n",
        "33 raw bytes": raw + b"x",
        "31 raw bytes": raw[:31],
        "the key in upper case with spaces": " ".join(raw.hex().upper()[i:i + 2]
                                                      for i in range(0, 64, 2)) + "\n",
        "empty": "",
    }
    mnt = tmp.sub("key-bad")
    view = os.path.join(bin_dir, "tiledbfs-view")
    for label, content in bad_keys.items():
        kf = os.path.join(keys, "bad.key")
        with open(kf, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
        p = ml.mount([exe, "-o", f"key_file={kf}", src, mnt], mnt)
        if os.path.ismount(mnt):
            ml.unmount(mnt)
        c.eq(p.returncode, 3, f"{label}: exit code 3 ({p.stderr.decode(errors='replace')[:200]})")
        watch.clean(f"tiledbfs's message for {label}", p.stdout + p.stderr)
        if os.path.exists(view):
            p = ml.run([view, "--key-file", kf, src, "data.csv"])
            c.ok(p.returncode != 0, f"tiledbfs-view with {label} fails")
            watch.clean(f"tiledbfs-view's message for {label}", p.stderr)
    for label, kf in (("missing key file", os.path.join(keys, "none.key")),
                      ("key file is a folder", keys)):
        p = ml.mount([exe, "-o", f"key_file={kf}", src, mnt], mnt)
        if os.path.ismount(mnt):
            ml.unmount(mnt)
        c.eq(p.returncode, 3, f"{label}: exit code 3")
        watch.clean(f"tiledbfs's message for {label}", p.stdout + p.stderr)
    # No key at all: the message says a key is needed, shows nothing of one.
    p = ml.mount([exe, src, mnt], mnt)
    if os.path.ismount(mnt):
        ml.unmount(mnt)
    c.eq(p.returncode, 3, "no key: exit code 3")
    watch.clean("tiledbfs's message without a key", p.stdout + p.stderr)
    print(f"keys: {len(watch.forms)} key forms looked for in {watch.places} places", flush=True)


def check_key_places(c, watch, mnt, label):
    pids = ml.daemon_pids(mnt)
    c.ok(len(pids) == 1, f"{label}: one daemon process serves the mount", str(pids))
    # Lines of tiledbfs processes only: other processes of the machine are
    # not ours to judge.
    for cmd in (["ps", "-ef"], ["ps", "auxwwe"]):
        p = ml.run(cmd)
        lines = [l for l in p.stdout.splitlines() if b"tiledbfs" in l]
        c.ok(any(mnt.encode() in l for l in lines), f"{' '.join(cmd)} shows the daemon ({label})")
        watch.clean(f"{' '.join(cmd)} ({label})", b"\n".join(lines))
    for pid in pids:
        for part in ("cmdline", "environ", "comm", "status"):
            try:
                watch.clean(f"/proc/<daemon>/{part} ({label})", read(f"/proc/{pid}/{part}"))
            except OSError as e:
                c.ok(False, f"read /proc/{pid}/{part}", str(e))
        cmdline = read(f"/proc/{pid}/cmdline")
        c.ok(b"key_file=" in cmdline, f"{label}: the command line names the key file only")
    watch.clean(f"/proc/mounts ({label})", read("/proc/mounts"))
    watch.clean(f"/proc/self/mountinfo ({label})", read("/proc/self/mountinfo"))
    if shutil.which("findmnt"):
        p = ml.run(["findmnt", "-o", "ALL", mnt])
        watch.clean(f"findmnt -o ALL ({label})", p.stdout + p.stderr)
        p = ml.run(["findmnt", "-J"])
        watch.clean(f"findmnt -J ({label})", p.stdout)
    else:
        c.note("findmnt not installed: checked /proc/mounts and mountinfo only")
    files, dirs = walk_mount(mnt)
    watch.clean(f"the names of the mount's files and folders ({label})",
                "\n".join(files + dirs))
    blob = bytearray()
    for f in files:
        e, data = read_errno(os.path.join(mnt, f))
        c.ok(e == 0, f"{label}: {f} reads", f"errno {e}")
        if data:
            blob += data + b"\0"
        for x in ("user.tiledbfs", "user.key"):
            try:
                blob += os.getxattr(os.path.join(mnt, f), x)
            except OSError:
                pass
    watch.clean(f"the bytes of every file of the mount ({len(files)} files, {label})", bytes(blob))


# ----------------------------------------------------------- 4. allow_other


def check_allow_other(c, exe, corpus, tmp):
    src = os.path.join(corpus, "arrays", "dense_1d")
    mnt = tmp.sub("ao")
    p = ml.mount([exe, src, mnt], mnt)
    if c.eq(p.returncode, 0, "mount dense_1d"):
        entry = ml.mount_entry(mnt)
        opts = entry[2] if entry else []
        c.ok(entry is not None and "allow_other" not in opts,
             "no allow_other in /proc/mounts unless asked", str(entry))
        c.ok("default_permissions" in opts, "default_permissions in /proc/mounts", str(entry))
        c.ok("ro" in opts, "ro in /proc/mounts", str(entry))
        p = ml.run(["findmnt", "-n", "-o", "OPTIONS", mnt]) if shutil.which("findmnt") else None
        if p is not None:
            c.ok(b"allow_other" not in p.stdout, "findmnt: no allow_other", p.stdout.decode())
    ml.unmount(mnt)
    for extra in (["-o", "ro"], ["-o", "default_permissions"], ["-s"]):
        p = ml.mount([exe, *extra, src, mnt], mnt)
        if c.eq(p.returncode, 0, f"mount dense_1d {' '.join(extra)}"):
            entry = ml.mount_entry(mnt)
            c.ok(entry is not None and "allow_other" not in entry[2],
                 f"{' '.join(extra)}: no allow_other", str(entry))
        ml.unmount(mnt)
    allowed = os.getuid() == 0
    try:
        allowed = allowed or any(l.strip() == "user_allow_other" for l in open("/etc/fuse.conf"))
    except OSError:
        pass
    p = ml.mount([exe, "-o", "allow_other", src, mnt], mnt)
    if p.returncode == 0:
        entry = ml.mount_entry(mnt)
        c.ok(entry is not None and "allow_other" in entry[2],
             "-o allow_other: allow_other in /proc/mounts", str(entry))
    elif allowed:
        c.ok(False, "-o allow_other mounts (root or user_allow_other)",
             p.stderr.decode(errors="replace")[:300])
    else:
        c.note("-o allow_other refused here (not root, no user_allow_other): not checked")
    ml.unmount(mnt)


def main():
    ml.require_fuse()
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    bin_dir, corpus = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    exe = os.path.join(bin_dir, "tiledbfs")
    if not os.path.exists(exe):
        print(f"FAIL: {exe} is not built")
        return 1
    c = ml.Checks("mount_security")
    ml.install_signal_cleanup()
    ml.start_watchdog(int(os.environ.get("SECURITY_BUDGET", "840")))
    tmp = ml.TempDir("tiledbfs-security-")
    t0 = time.monotonic()
    try:
        for part in (check_read_only, check_symlinks, check_keys_entry, check_allow_other):
            n = c.passed + c.failed
            t = time.monotonic()
            part(c, exe if part is not check_keys_entry else bin_dir, corpus, tmp)
            print(f"{part.__name__}: {c.passed + c.failed - n} checks, "
                  f"{time.monotonic() - t:.1f} s", flush=True)
    finally:
        ml.cleanup_all()
        tmp.remove()
    print(f"total {time.monotonic() - t0:.1f} s", flush=True)
    return c.finish()


def check_keys_entry(c, bin_dir, corpus, tmp):
    check_keys(c, bin_dir, corpus, tmp)


if __name__ == "__main__":
    sys.exit(main())
