"""make_oracle_corpus.py's kit for recipes: instants, filter pipelines,
seeded cells, and the registries the recipe modules fill (RECIPES, in the
order they are defined and imported; KEYS, the keys of encrypted arrays).
"""
T0 = 1700000000000


def t(n):
    return T0 + n * 1000


def fl(*names, chunk=None):
    f = []
    for n in names:
        if isinstance(n, tuple):
            f.append(n)
        else:
            f.append((n, None))
    s = {"filters": f}
    if chunk:
        s["chunk"] = chunk
    return s


def zstd(level=3, chunk=None):
    return fl(("ZSTD", {"level": level}), chunk=chunk)


def words(rng, n, alphabet="abcdefgh", maxlen=7):
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, maxlen + 1)))
            for _ in range(n)]


def distinct_points(rng, n, ranges):
    pts = set()
    while len(pts) < n:
        pts.add(tuple(rng.randint(lo, hi) for lo, hi in ranges))
    return sorted(pts, key=lambda p: rng.random())


RECIPES = {}


def recipe(fn):
    RECIPES[fn.__name__] = fn
    return fn


KEYS = {}
