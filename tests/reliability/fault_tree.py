"""fault_injection_test.py's reads of a mounted tree (every listing and
file, as SHA-1s) and their comparison with the pristine tree: outcomes per
path, log lines naming a failed path, and the files of other fragments
that a mutation must leave right.
"""
import collections
import errno
import hashlib
import os
import stat

from fault_corpus import fragment_of, read_file


def digest(data):
    return hashlib.sha1(data).hexdigest()


def probe(root, rel, is_dir, stop):
    """One entry of a tree: ('dir', names) | ('file', sha1) | ('err', errno)."""
    full = os.path.join(root, rel) if rel else root
    if stop.is_set():
        return ("err", errno.ECANCELED)
    try:
        if is_dir:
            return ("dir", tuple(sorted(os.listdir(full))))
        return ("file", digest(read_file(full)))
    except OSError as e:
        return ("err", e.errno)


def walk(root, stop, extra=()):
    """Every directory and file under root: {rel: entry}; directories keyed
    with a trailing '/' ('' + '/' for the root). Then the paths of `extra`
    (rel keys) that the walk did not reach are probed directly."""
    out = {}
    stack = [""]
    while stack and not stop.is_set():
        d = stack.pop()
        entry = probe(root, d, True, stop)
        out[d + "/"] = entry
        if entry[0] != "dir":
            continue
        for name in entry[1]:
            rel = f"{d}/{name}" if d else name
            try:
                st = os.lstat(os.path.join(root, rel))
            except OSError as e:
                out[rel] = ("err", e.errno)
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)
            else:
                out[rel] = probe(root, rel, False, stop)
    for key in extra:
        if stop.is_set():
            break
        if key in out:
            continue
        if key.endswith("/"):
            out[key] = probe(root, key[:-1], True, stop)
        else:
            out[key] = probe(root, key, False, stop)
    return out


# The errno the daemon answers with for every error of the data (fusefs
# ErrnoFor): EIO, corrupt, unsupported, failed authentication and lengths
# over a limit alike.
ERRNO_OUTCOME = {errno.EIO: "eio"}


def logged(lines, rel):
    """A log line 'tiledbfs: cannot <op> /<rel or an ancestor>: <reason>'."""
    p = rel.rstrip("/")
    paths = ["/" + p]
    while "/" in p:
        p = p.rsplit("/", 1)[0]
        paths.append("/" + p)
    paths.append("/")
    for line in lines:
        if not line.startswith("tiledbfs: cannot "):
            continue
        for d in paths:
            i = line.find(" " + d + ": ")
            if i >= 0 and line[i + len(d) + 3:].strip():
                return True
    return False


def compare(info, tree):
    """Per-path outcomes of a corrupted tree against the pristine one."""
    counts = collections.Counter()
    errs, wrong, missing, extra, other = [], [], [], [], []
    for key, entry in tree.items():
        want = info.tree.get(key)
        if entry[0] == "err":
            if entry[1] in ERRNO_OUTCOME:
                counts[ERRNO_OUTCOME[entry[1]]] += 1
                errs.append(key)
            elif entry[1] == errno.ENOENT and want is not None:
                counts["missing"] += 1
                missing.append(key)
            elif entry[1] == errno.ENOENT:
                pass  # a name listed in a corrupted listing only
            else:
                counts["other_errno"] += 1
                other.append((key, errno.errorcode.get(entry[1], entry[1])))
        elif want is None:
            counts["extra"] += 1
            extra.append(key)
        elif entry != want:
            counts["wrong"] += 1
            wrong.append(key)
        else:
            counts["right"] += 1
    return counts, errs, wrong, missing, extra, other


def isolation_paths(info, m):
    """Pristine files of fragments/G/ for every fragment G other than the
    mutated one (same array of the tree)."""
    fr = fragment_of(m["file"])
    if fr is None:
        return []
    prefix, frag = fr
    base = (prefix + "/" if prefix else "") + "fragments/"
    out = []
    for key in info.tree:
        if key.startswith(base) and not key.endswith("/"):
            g = key[len(base):].split("/", 1)[0]
            if g != frag and "/" in key[len(base):]:
                out.append(key)
    return out
