#!/usr/bin/env python3
# Independent rendering of a corpus view (expected/<array>/views/<T>/) as
# docs/namespace.md's data.csv, from TileDB's own read (<field>.data, .offsets,
# .validity, view.json), using numpy for datetimes and float digits.
#   gen_corpus_csv.py VIEW_DIR [FIELD]  -> data.csv (or FIELD's .txt) on stdout
# With --check OUR_FILE instead of printing: compares OUR_FILE with it and
# parses OUR_FILE with Python's csv module, checking every field reads back.
#   gen_corpus_csv.py --batch LIST: the same for each line "VIEW_DIR OUR_FILE
#   [FIELD]" of LIST; prints one line per failure, exits 1 if any.
import csv, io, json, os, sys
import numpy as np

INTS = {"INT8": "<i1", "UINT8": "<u1", "INT16": "<i2", "UINT16": "<u2", "INT32": "<i4",
        "UINT32": "<u4", "INT64": "<i8", "UINT64": "<u8"}
FLOATS = {"FLOAT32": np.float32, "FLOAT64": np.float64}
UNITS = {"YEAR": "Y", "MONTH": "M", "WEEK": "W", "DAY": "D", "HR": "h", "MIN": "m",
         "SEC": "s", "MS": "ms", "US": "us", "NS": "ns", "PS": "ps", "FS": "fs", "AS": "as"}
SIZES = {"INT8": 1, "UINT8": 1, "INT16": 2, "UINT16": 2, "INT32": 4, "UINT32": 4,
         "INT64": 8, "UINT64": 8, "FLOAT32": 4, "FLOAT64": 8, "BOOL": 1}
VAR = 4294967295


def shortest(x, ftype):
    """std::to_chars shortest: fewest digits, then plain vs exponent, shorter wins, tie plain."""
    x = ftype(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "-inf" if x < 0 else "inf"
    sign = "-" if np.signbit(x) else ""
    if x == 0:
        return sign + "0"
    s = np.format_float_scientific(abs(x), unique=True, trim="-", exp_digits=1)
    mant, exp = s.split("e")
    exp = int(exp)
    digits = mant.replace(".", "")
    sci = digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + "e" + \
        ("-" if exp < 0 else "+") + "%02d" % abs(exp)
    if exp >= len(digits) - 1:
        plain = digits + "0" * (exp - len(digits) + 1)
    elif exp >= 0:
        plain = digits[:exp + 1] + "." + digits[exp + 1:]
    else:
        plain = "0." + "0" * (-exp - 1) + digits
    return sign + (plain if len(plain) <= len(sci) else sci)


def values_text(t, b):
    if t in INTS:
        return " ".join(str(int(v)) for v in np.frombuffer(b, dtype=INTS[t]))
    if t in FLOATS:
        return " ".join(shortest(v, FLOATS[t]) for v in np.frombuffer(b, dtype=FLOATS[t]))
    if t == "BOOL":
        return " ".join("true" if c else "false" for c in b)
    if t.startswith("DATETIME_"):
        a = np.frombuffer(b, dtype="<M8[%s]" % UNITS[t[9:]])
        return " ".join(str(s) for s in np.datetime_as_string(a))
    if t.startswith("TIME_"):
        return " ".join(str(int(v)) for v in np.frombuffer(b, dtype="<i8"))
    raise ValueError(t)


def cell_bytes(t, fixed, b):
    """The text of a cell as bytes."""
    if t in ("CHAR", "STRING_ASCII", "STRING_UTF8"):
        # Trailing NULs dropped from every cell (fixed padding, var fill);
        # bytes not part of valid UTF-8 as \xHH (docs/namespace.md "Values").
        return b.rstrip(b"\0").decode("utf-8", "backslashreplace").encode()
    if t in ("BLOB", "GEOM_WKB", "GEOM_WKT", "ANY"):
        return b.hex().encode()
    return values_text(t, b).encode()


def field(text):
    if text is None:
        return b""
    if text == b"" or any(c in text for c in (b",", b'"', b"\r", b"\n")):
        return b'"' + text.replace(b'"', b'""') + b'"'
    return text


def load(view, only=None):
    meta = json.load(open(os.path.join(view, "view.json")))
    n = meta["cell_count"]
    schema = meta["schema"]
    enums = {e["name"]: e for e in schema.get("enumerations", [])}
    attr_enum = {a["name"]: enums[a["enumeration"]] for a in schema["attrs"]
                 if a.get("enumeration")}
    cols = []
    for f in meta["fields"]:
        if only is not None and f["name"] != only:
            continue
        name, t, k = f["name"], f["type"], f["cell_val_num"]
        data = open(os.path.join(view, name + ".data"), "rb").read()
        if f["var"]:
            offs = np.frombuffer(open(os.path.join(view, name + ".offsets"), "rb").read(), "<u8")
            cells = [data[offs[i]:offs[i + 1]] for i in range(n)]
        else:
            size = len(data) // n if n else 0
            cells = [data[i * size:(i + 1) * size] for i in range(n)]
        valid = [1] * n
        if f["nullable"]:
            valid = list(open(os.path.join(view, name + ".validity"), "rb").read())
        texts = []
        e = attr_enum.get(name)
        for i in range(n):
            if not valid[i]:
                texts.append(None)
            elif e is not None:
                idx = [int(v) for v in np.frombuffer(cells[i], dtype=INTS[t])]
                texts.append(b" ".join(label(e, v) if 0 <= v < len(e["values"])
                                       else str(v).encode() for v in idx))
            else:
                texts.append(cell_bytes(t, not f["var"], cells[i]))
        cols.append((name, texts))
    return n, cols


def label(e, v):
    """Label v of enumeration e: its text, or a number written as a value of
    the enumeration's type."""
    value = e["values"][v]
    if isinstance(value, str):
        return value.encode()
    t = e["type"]
    raw = np.array([value], dtype=FLOATS[t] if t in FLOATS else INTS[t]).tobytes()
    return cell_bytes(t, True, raw)


def render(view, only):
    n, cols = load(view, only)
    out = io.BytesIO()
    if only is None:
        out.write(b",".join(field(name.encode()) for name, _ in cols) + b"\n")
    for i in range(n):
        out.write(b",".join(field(texts[i]) for _, texts in cols) + b"\n")
    return n, cols, out.getvalue()


def check(view, only, ours_path):
    """None if OUR_FILE is right, else what is wrong."""
    n, cols, expected = render(view, only)
    ours = open(ours_path, "rb").read()
    if ours != expected:
        for a, b in zip(ours.split(b"\n"), expected.split(b"\n")):
            if a != b:
                return "bytes differ:\n  ours:     %r\n  expected: %r" % (a, b)
        return "bytes differ in length: %d vs %d" % (len(ours), len(expected))
    rows = list(csv.reader(io.StringIO(ours.decode("latin-1"), newline="")))
    if only is None:
        rows = rows[1:]
    if len(rows) != n:
        return "csv module reads %d rows, expected %d" % (len(rows), n)
    for i, row in enumerate(rows):
        want = [(t[i] or b"").decode("latin-1") for _, t in cols]
        if row == [] and want == [""]:
            continue  # a one-field line that is empty (a null in a .txt)
        if row != want:
            return "row %d: csv module reads %r, expected %r" % (i, row, want)
    return None


def main():
    args = sys.argv[1:]
    if args[0] == "--batch":
        bad = 0
        for line in open(args[1]):
            parts = line.rstrip("\n").split("\t")
            err = check(parts[0], parts[2] if len(parts) > 2 else None, parts[1])
            if err:
                bad += 1
                print("%s %s: %s" % (parts[0], parts[2] if len(parts) > 2 else "data.csv", err))
        print("bad", bad)
        sys.exit(1 if bad else 0)
    ours = None
    if "--check" in args:
        i = args.index("--check")
        ours = args[i + 1]
        del args[i:i + 2]
    view = args[0]
    only = args[1] if len(args) > 1 else None
    if ours is None:
        sys.stdout.buffer.write(render(view, only)[2])
        return
    err = check(view, only, ours)
    if err:
        print(err)
        sys.exit(1)
    print("ok")


main()
