"""Differential hunt of type conversions as an h5py user sees them: ``ds.astype(t)[sel]``,
``np.asarray(ds, dtype)``, ``read_direct`` into a destination of another dtype and
compound members converted by name, between every pair of integers (1, 2, 4, 8 bytes,
signed and unsigned, both byte orders), floats (f2, f4, f8 in both byte orders, the x87
long double) and bool, on values at the edges (limits, NaN, infinities, -0.0,
subnormals, out-of-range and fractional values), for contiguous, chunked and compressed
layouts; then compounds (subsets, reordered, nested, padded, array, enum and vlen
members), enums, h5py's bool, opaque, bitfields, array types, fixed and variable-length
strings with ``asstr``, sequences, references, custom float layouts and odd-precision
integers made with h5py's low-level API.

The reference is what h5py gives, that is libhdf5's conversions: its hardware path when
both types are native (C casts with libhdf5's range checks) and its software path when
either side is in the other byte order or not a C type (saturation, NaN to 0, its own
rounding). Where libhdf5's answers are odd (see the ``_quirk`` classes) the matrix test
leaves them to one strict-xfail test per class, so that every other pair must agree."""

from __future__ import annotations

import platform
import warnings

import h5py
import numpy as np
import pytest

import h5turbo
from support.h5compare import outcome as _outcome

# ---------------------------------------------------------------------- numbers

INTS = [f"{o}{k}{n}" for k in "iu" for n in (1, 2, 4, 8) for o in "<>"]
FLOATS = [f"{o}f{n}" for n in (2, 4, 8) for o in "<>"]
# h5py maps the x87 long double to '<f16' (numpy's longdouble) on x86
LONG_DOUBLE = platform.machine() in ("x86_64", "AMD64", "i686") and np.finfo(np.longdouble).nmant == 63
if LONG_DOUBLE:
    FLOATS.append("<f16")
NUMERIC = INTS + FLOATS + ["?"]


def _edge_values(dt: np.dtype) -> np.ndarray:
    dt = np.dtype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 2, 3, 127, 128, 255, 256, -1, -2, -128,
                -129, 32767, 32768, 65504, 65519, 65520, 65535, 65536, 2049, 2**24 + 1, 2**31 - 1, 2**31,
                -2**31, -2**31 - 1, 2**32, 2**53 + 1, 2**63 - 1, -2**63]
        vals = sorted({v for v in vals if info.min <= v <= info.max})
        return np.array(vals, dtype=dt)
    if dt.kind == "f":
        fi = np.finfo(dt)
        vals = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, fi.max, -fi.max, fi.tiny, -fi.tiny,
                fi.smallest_subnormal, -fi.smallest_subnormal, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.3, -0.3,
                0.7, -0.7, 1e-8, -1e-8, 127.9, 128.0, -128.5, -129.0, 255.5, 256.0, -255.0, 65504.0, 65519.0,
                65520.0, -65520.0, 1e5, 2049.0, 2051.0, 16777217.0, 2.0**31, -2.0**31, 2.0**31 - 0.5,
                2.0**32, 2.0**63, -2.0**63, 2.0**64, 1e20, -1e20, 1e-40, -1e-40, 3.4028235e38, -3.5e38, 1e39,
                1e300, 1.0000001, 1.0 / 3]
        with np.errstate(all="ignore"):
            arr = np.array(vals, dtype=np.float64).astype(dt) if dt.itemsize < 16 else np.array(vals, dtype=dt)
        if dt.itemsize == 16:
            arr = np.concatenate([arr, np.array([np.longdouble(2) ** 63, np.longdouble(2) ** 64,
                                                 np.longdouble(2) ** 63 - 1, -np.longdouble(2) ** 63 - 1],
                                                dtype=dt)])
        return arr
    return np.array([True, False, True, True, False, False, True], dtype=dt)


def _name(dt: str) -> str:
    return dt.replace("<", "le").replace(">", "be").replace("?", "bool")


def _quirk(src: np.dtype, to: np.dtype, v) -> str | None:
    """The class of libhdf5's answer for one source value when h5turbo is known to
    answer otherwise (each class has a strict-xfail test below); None: must agree."""
    with np.errstate(all="ignore"):
        if src.kind in "iu" and to.kind in "iu":
            # same size, other byte order, signed <-> unsigned: libhdf5's byte-order
            # conversion takes the pair and swaps the bytes (no saturation)
            if (src.itemsize == to.itemsize > 1 and src.kind != to.kind and src.isnative != to.isnative
                    and not np.iinfo(to).min <= int(v) <= np.iinfo(to).max):
                return "int_sign_byteswap"
            return None
        return None


def _key(arr: np.ndarray, i: int):
    """What must agree for element i: truthiness for bool (h5py leaves the bytes of the
    int8 its bool enum converts to), the 10 value bytes of an x87 long double, else
    the bytes."""
    x = arr[i:i + 1]
    if arr.dtype.kind == "b":
        return bool(x.view(np.uint8)[0])
    raw = x.tobytes()
    return raw[:10] if arr.dtype.kind == "f" and arr.dtype.itemsize == 16 else raw


@pytest.fixture(scope="module")
def numbers(tmp_path_factory):
    path = tmp_path_factory.mktemp("dtconv") / "numbers.h5"
    edges = {dt: _edge_values(dt) for dt in NUMERIC}
    n = max(len(v) for v in edges.values())
    with h5py.File(path, "w") as f:
        for dt, vals in edges.items():
            f.create_dataset(f"c/{_name(dt)}", data=vals)
            f.create_dataset(f"k/{_name(dt)}", data=vals, chunks=(5,))
            f.create_dataset(f"z/{_name(dt)}", data=vals, chunks=(7,), compression="gzip", shuffle=True)
        record = np.zeros(n, dtype=[(_name(dt), dt) for dt in NUMERIC])
        for dt, vals in edges.items():
            record[_name(dt)] = np.resize(vals, n)
        f.create_dataset("record", data=record, chunks=(9,), compression="gzip")
    return path, edges, n


def _reads(src, to, n_record):
    """(api, h5py-or-h5turbo -> array, source positions of the result's elements)."""
    name = _name(src)

    def direct(f, length):
        half = np.arange(length)[1::2]
        out = np.zeros(len(half) + 4, dtype=to)
        f[f"k/{name}"].read_direct(out, np.s_[1::2], np.s_[2:2 + len(half)])
        return out

    return [
        ("astype c", lambda f, n: f[f"c/{name}"].astype(to)[()], lambda n: np.arange(n)),
        ("astype k", lambda f, n: f[f"k/{name}"].astype(to)[()], lambda n: np.arange(n)),
        ("astype z [::3]", lambda f, n: f[f"z/{name}"].astype(to)[::3], lambda n: np.arange(n)[::3]),
        ("asarray z", lambda f, n: np.asarray(f[f"z/{name}"], dtype=to), lambda n: np.arange(n)),
        ("read_direct k", direct,
         lambda n: np.concatenate([[-1, -1], np.arange(n)[1::2], [-1, -1]])),
        ("record member", lambda f, n: f["record"].astype([(name, to)])[()][name],
         lambda n: np.arange(n_record) % n),
    ]


@pytest.fixture(scope="module")
def number_mismatches(numbers):
    """Every element where h5turbo's conversion differs from h5py's, with its class."""
    path, edges, n_record = numbers
    found = []
    with h5py.File(path, "r") as h, h5turbo.File(path, "r") as t:
        for src in NUMERIC:
            vals = edges[src]
            sdt = np.dtype(src)
            for to in NUMERIC:
                tdt = np.dtype(to)
                for api, read, positions in _reads(src, to, n_record):
                    want, werr = _outcome(lambda: read(h, len(vals)))
                    got, gerr = _outcome(lambda: read(t, len(vals)))
                    where = (src, to, api)
                    if werr is not None or gerr is not None:
                        if type(werr) is not type(gerr):
                            found.append((*where, None, repr(werr), repr(gerr), "error"))
                        continue
                    if got.dtype != want.dtype or got.shape != want.shape:
                        found.append((*where, None, f"{want.dtype}{want.shape}", f"{got.dtype}{got.shape}", "shape"))
                        continue
                    for i, p in enumerate(positions(len(vals))):
                        if _key(want, i) == _key(got, i):
                            continue
                        v = vals[p] if p >= 0 else None
                        kind = None if v is None else _quirk(sdt, tdt, v)
                        found.append((*where, v, want[i], got[i], kind))
    return found


def _report(rows):
    return "\n".join(f"{s} -> {t} ({api}): value {v!r}: h5py {w!r}, h5turbo {g!r} [{k}]"
                     for s, t, api, v, w, g, k in rows[:40])


def test_numeric_conversions_like_h5py(number_mismatches):
    """Every pair of numeric types, every way of converting, every layout: h5py's
    numbers, save the classes of libhdf5's answers tested (xfail) below."""
    unexplained = [row for row in number_mismatches if row[-1] is None or row[-1] in ("error", "shape")]
    assert not unexplained, _report(unexplained)


def test_numeric_matrix_reaches_every_pair(numbers):
    """The matrix above compares something for each pair (a guard against a fixture
    that silently reads nothing)."""
    path, edges, _ = numbers
    with h5py.File(path, "r") as h, h5turbo.File(path, "r") as t:
        for src in NUMERIC:
            for layout in "ckz":
                name = f"{layout}/{_name(src)}"
                assert t[name].dtype == h[name].dtype
                for sel in (np.s_[()], np.s_[2:-1:2], np.s_[[0, 3, 4]], np.s_[-1]):
                    assert _same(h[name][sel], t[name][sel]) is None, (name, sel)
            assert len(edges[src]) >= 7


@pytest.mark.parametrize("to", ["u1", "<i2", ">f4", "<f2", "?"])
def test_fields_view_array_with_a_dtype_casts_as_numpy_as_h5py(numbers, to):
    """h5py's FieldsWrapper.__array__(dtype) reads the field and casts with numpy (not
    libhdf5): the same numpy cast must give the same bytes."""
    path, _, _ = numbers
    problems = []
    h, t = _both(path)
    with h, t:
        for src in ["<i4", ">u8", ">f8", "<f2", "?"]:
            _compare(f"asarray(record.fields({src}), {to})",
                     lambda: np.asarray(h["record"].fields(_name(src)), dtype=to),
                     lambda: np.asarray(t["record"].fields(_name(src)), dtype=to), problems)
    assert not problems, "\n".join(problems)


_QUIRKS = {
    "int_sign_byteswap": "DELIBERATE (docs/h5py-compat.md, astype): a signed <-> unsigned conversion of the "
                         "same size and the other byte order saturates; libhdf5 (h5py) swaps the bytes only "
                         "('<i2' -1 read as '>u2' is 65535), and it saturates the same pair for integers of "
                         "other precisions, which a numpy dtype cannot tell apart",
}


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=r))
                                  for k, r in _QUIRKS.items()])
def test_numeric_conversion_class_like_h5py(number_mismatches, kind):
    rows = [row for row in number_mismatches if row[-1] == kind]
    assert not rows, _report(rows)


# ---------------------------------------------------------------------- comparisons of whole reads


def _same_item(x, y) -> bool:
    """One object of an object array (or of a record holding objects)."""
    if isinstance(x, np.ndarray):
        return isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape and (
            _same(x, y) is None)
    if isinstance(x, tuple):
        return isinstance(y, tuple) and len(x) == len(y) and all(_same_item(a, b) for a, b in zip(x, y))
    if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
        return True
    return type(x) is type(y) and x == y


def _same(want, got) -> str | None:
    """None when h5py's result and ours agree in type, dtype, shape and content."""
    if type(want) is not type(got):
        return f"type {type(want)} vs {type(got)}"
    wa, ga = np.asarray(want), np.asarray(got)
    if wa.dtype != ga.dtype or wa.shape != ga.shape:
        return f"dtype/shape {wa.dtype}{wa.shape} vs {ga.dtype}{ga.shape}"
    if wa.dtype.hasobject:
        for x, y in zip(wa.ravel().tolist(), ga.ravel().tolist()):
            if not _same_item(x, y):
                return f"{x!r} vs {y!r}"
        return None
    if wa.tobytes() != ga.tobytes():
        return f"{wa.ravel()[:6]!r} vs {ga.ravel()[:6]!r}"
    return None


def _compare(label, fw, fg, problems):
    want, werr = _outcome(fw)
    got, gerr = _outcome(fg)
    if werr is not None or gerr is not None:
        if werr is None or gerr is None or not isinstance(gerr, type(werr)):
            problems.append(f"{label}: h5py {werr!r}, h5turbo {gerr!r}")
        return
    diff = _same(want, got)
    if diff:
        problems.append(f"{label}: {diff}")


def _both(path):
    return h5py.File(path, "r"), h5turbo.File(path, "r")


# ---------------------------------------------------------------------- compounds

VSTR = h5py.string_dtype()
ENUM = h5py.enum_dtype({"R": -1, "G": 0, "B": 7}, basetype=">i2")
INNER = np.dtype([("p", ">u2"), ("q", "<f4")])
PADDED = np.dtype({"names": ["a", "b", "c", "s", "e", "arr", "inner", "v", "fs"],
                   "formats": ["<i4", ">f8", "u1", VSTR, ENUM, ("<i2", (2, 3)), INNER, h5py.vlen_dtype("<i4"),
                               "S3"],
                   "offsets": [0, 8, 20, 24, 40, 44, 60, 72, 96], "itemsize": 104})
ALIGNED = np.dtype([("x", "u1"), ("y", "<f8"), ("z", "<i2"), ("w", ">i4")], align=True)


def _records(n, rng):
    d = np.zeros(n, PADDED)
    d["a"] = rng.integers(-2**31, 2**31, n)
    d["a"][:4] = [2**31 - 1, -2**31, 300, -129]
    d["b"] = rng.standard_normal(n) * 1e5
    d["b"][:5] = [np.nan, np.inf, -1e300, 2.5, -0.0]
    d["c"] = rng.integers(0, 256, n)
    d["s"] = [f"s{i}\u00e9" for i in range(n)]
    d["e"] = rng.choice([-1, 0, 7], n)
    d["arr"] = rng.integers(-32768, 32768, (n, 2, 3))
    d["inner"]["p"] = rng.integers(0, 65536, n)
    d["inner"]["q"] = rng.standard_normal(n)
    d["v"] = [np.arange(i % 4, dtype="<i4") - 2 for i in range(n)]
    d["fs"] = [[b"ab", b"", b"xyz", b"q\x00"][i % 4] for i in range(n)]
    return d


@pytest.fixture(scope="module")
def compounds(tmp_path_factory):
    path = tmp_path_factory.mktemp("dtconv") / "compounds.h5"
    rng = np.random.default_rng(5)
    with h5py.File(path, "w") as f:
        f["c"] = _records(10, rng)
        f.create_dataset("k", data=_records(23, rng), chunks=(4,), compression="gzip")
        f["scalar"] = _records(8, rng)[1]
        al = np.zeros(9, ALIGNED)
        al["x"], al["y"], al["z"], al["w"] = np.arange(9), np.arange(9) / 3, -np.arange(9), np.arange(9) * 1000
        f.create_dataset("aligned", data=al, chunks=(4,), compression="lzf")
        # members out of offset order, padding between them, made with the low-level API
        tid = h5py.h5t.create(h5py.h5t.COMPOUND, 32)
        tid.insert(b"late", 16, h5py.h5t.IEEE_F64BE)
        tid.insert(b"early", 2, h5py.h5t.STD_I16BE)
        tid.insert(b"mid", 8, h5py.h5t.STD_U32LE)
        ds = h5py.h5d.create(f.id, b"ll", tid, h5py.h5s.create_simple((6,)))
        mem = np.zeros(6, np.dtype({"names": ["late", "early", "mid"], "formats": [">f8", ">i2", "<u4"],
                                    "offsets": [16, 2, 8], "itemsize": 32}))
        mem["late"] = [1.5, -2, np.inf, 1e300, -0.0, 3]
        mem["early"] = [-1, 2, -32768, 32767, 0, 5]
        mem["mid"] = [0, 2**32 - 1, 2**31, 7, 8, 9]
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, mem, mtype=tid)
        arrc = np.zeros(5, np.dtype([("rec", np.dtype([("m", "<i8"), ("n", ">f2")]), (2,)), ("t", "<u2")]))
        arrc["rec"]["m"] = np.arange(10).reshape(5, 2) * -10**17
        arrc["rec"]["n"] = np.arange(10).reshape(5, 2) / 3
        arrc["t"] = 7
        f.create_dataset("arrc", data=arrc, chunks=(2,))
    return path


COMPOUND_TARGETS = {
    "c": [[("a", "<i2")], [("b", "<f8"), ("a", ">i8")], [("a", "u1"), ("c", "i1")],
          [("inner", [("q", "<f8"), ("p", "<i1")])], [("e", "<i4")], [("e", ">u4")], [("arr", "<f4", (2, 3))],
          [("arr", "i1", (2, 3))], [("b", "<i4"), ("b2", "<f8")], [("fs", "S5")], [("fs", "S2")], [("s", VSTR)],
          [("b", "u8")], [("nope", "<i4")], [("s", "S8")], [("e", ENUM)], [("inner", INNER)],
          [("inner", [("p", "<u2")])], [("a", "<i4"), ("a2", "<i4")], [("a", "<f2")],
          np.dtype({"names": ["a", "c"], "formats": ["<i8", "<u2"], "offsets": [8, 0], "itemsize": 24})],
    "aligned": [[("w", "<i2"), ("x", "<f8")], ALIGNED, [("y", ">f4"), ("z", "u1")],
                np.dtype([("w", "<i8"), ("y", "<f4")], align=True)],
    "ll": [[("early", "<i4"), ("late", "<f4"), ("mid", "<i4")], [("mid", ">i2")], [("late", "<i8")],
           [("early", ">i2")], [("early", "<f2")]],
    "arrc": [[("rec", [("n", "<f8"), ("m", "<i4")], (2,)), ("t", "<i1")], [("rec", [("m", "<f8")], (2,))]],
}
COMPOUND_TARGETS["k"] = COMPOUND_TARGETS["scalar"] = COMPOUND_TARGETS["c"]


@pytest.mark.parametrize("name", ["c", "k", "scalar", "aligned", "ll", "arrc"])
def test_compound_conversions_like_h5py(compounds, name):
    """Compound to compound (members matched by name, missing ones zero, nested,
    array, enum, string members, padded and reordered layouts), fields views, field
    names and read_direct into compounds of other types, as h5py converts them."""
    problems = []
    h, t = _both(compounds)
    with h, t:
        _compare(f"{name}[()]", lambda: h[name][()], lambda: t[name][()], problems)
        assert t[name].dtype == h[name].dtype
        sels = [(), np.s_[...]] if not h[name].shape else [(), np.s_[1:4], np.s_[::3], np.s_[[0, 2]], np.s_[2]]
        for to in map(np.dtype, COMPOUND_TARGETS[name]):
            for sel in sels:
                _compare(f"{name}.astype({to})[{sel}]", lambda: h[name].astype(to)[sel],
                         lambda: t[name].astype(to)[sel], problems)
            _compare(f"asarray({name}, {to})", lambda: np.asarray(h[name], dtype=to),
                     lambda: np.asarray(t[name], dtype=to), problems)

            def rd(ds, source_sel=None, dest_sel=None, shape=None):
                out = np.zeros(h[name].shape if shape is None else shape, dtype=to)
                ds.read_direct(out, source_sel, dest_sel)
                return out

            _compare(f"{name}.read_direct({to})", lambda: rd(h[name]), lambda: rd(t[name]), problems)
            if h[name].shape:
                _compare(f"{name}.read_direct({to}, 1:3 -> 4:6)", lambda: rd(h[name], np.s_[1:3], np.s_[4:6], (8,)),
                         lambda: rd(t[name], np.s_[1:3], np.s_[4:6], (8,)), problems)
        names = list(h[name].dtype.names)
        for fields in [names[:1], names[::-1], names[1::2], names[-1]]:
            for sel in sels:
                _compare(f"{name}.fields({fields})[{sel}]", lambda: h[name].fields(fields)[sel],
                         lambda: t[name].fields(fields)[sel], problems)
            _compare(f"asarray({name}.fields({fields}))", lambda: np.asarray(h[name].fields(fields)),
                     lambda: np.asarray(t[name].fields(fields)), problems)
        for field in names:
            for sel in sels:
                index = (sel + (field,)) if isinstance(sel, tuple) else (sel, field)
                _compare(f"{name}[{index}]", lambda: h[name][index], lambda: t[name][index], problems)
    assert not problems, "\n".join(problems[:30])


def test_vlen_member_astype_converts_the_stored_numbers(tmp_path):
    path = tmp_path / "vmember.h5"
    seqs = [np.array([-2, 5], ">i4"), np.array([], ">i4"), np.array([70000], ">i4")]
    dt = np.dtype([("id", "<i2"), ("v", h5py.vlen_dtype(np.dtype(">i4")))])
    data = np.zeros(3, dt)
    data["id"] = [1, 2, 3]
    for i, s in enumerate(seqs):
        data["v"][i] = s
    with h5py.File(path, "w") as f:
        f["rec"] = data
        f.create_dataset("top", data=data["v"], dtype=h5py.vlen_dtype(np.dtype(">i4")))
    with h5turbo.File(path, "r") as f:
        top = f["top"].astype(h5py.vlen_dtype("f8"))[()]
        member = f["rec"].astype([("v", h5py.vlen_dtype("f8"))])[()]["v"]
        for s, a, b in zip(seqs, top, member):
            assert a.tolist() == s.astype("f8").tolist()  # the top-level rule
            assert b.tolist() == s.astype("f8").tolist()


# ---------------------------------------------------------------------- other classes


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    path = tmp_path_factory.mktemp("dtconv") / "kinds.h5"
    with h5py.File(path, "w") as f:
        for b in ["i1", "u1", "<i2", ">i2", "<u4", ">u4", "<i8", ">i8", ">u2"]:
            info = np.iinfo(b)
            low = info.min if info.min else 5
            e = h5py.enum_dtype({"A": 0, "B": 1, "C": int(info.max), "D": int(low)}, basetype=b)
            v = np.array([0, 1, info.max, low, 1, 0, 0], dtype=np.dtype(b))
            f.create_dataset(f"enum_{_name(b)}", data=v, dtype=e)
            f.create_dataset(f"enumk_{_name(b)}", data=v, dtype=e, chunks=(3,), compression="gzip")
        f["bool"] = np.array([True, False, True])
        for b in ["i1", "u1", ">i2", "<u4", ">i8"]:  # {FALSE, TRUE} enums: h5py's bool (i1) and others
            tid = h5py.h5t.enum_create(h5py.h5t.py_create(np.dtype(b)))
            tid.enum_insert(b"FALSE", 0)
            tid.enum_insert(b"TRUE", 1)
            ds = h5py.h5d.create(f.id, f"boolenum_{_name(b)}".encode(), tid, h5py.h5s.create_simple((5,)))
            ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([0, 1, 1, 0, 1], dtype=b),
                     mtype=h5py.h5t.py_create(np.dtype(b)))
            # and one value that is no member (7), in its own dataset
            ds = h5py.h5d.create(f.id, f"nonmember_{_name(b)}".encode(), tid, h5py.h5s.create_simple((5,)))
            ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([0, 1, 7, 0, 1], dtype=b),
                     mtype=h5py.h5t.py_create(np.dtype(b)))
        f.create_dataset("opaque", data=np.array([b"\x01\x02\x03", b"abc"], dtype="V3"))
        f.create_dataset("opaque_dt", data=np.array([1, 2], "M8[D]").astype(h5py.opaque_dtype("M8[D]")))
        ot = h5py.h5t.create(h5py.h5t.OPAQUE, 4)
        ot.set_tag(b"mytag")
        ds = h5py.h5d.create(f.id, b"opaque_tag", ot, h5py.h5s.create_simple((3,)))
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([b"abcd", b"\x00\x01\x02\x03", b"zzzz"], "V4"), mtype=ot)
        for bits, tid in [(8, h5py.h5t.STD_B8LE), (16, h5py.h5t.STD_B16BE), (32, h5py.h5t.STD_B32LE),
                          (64, h5py.h5t.STD_B64BE)]:
            ds = h5py.h5d.create(f.id, f"bitfield{bits}".encode(), tid, h5py.h5s.create_simple((3,)))
            arr = np.array([1, 2**bits - 1, 2**(bits - 1)], dtype=f"u{bits // 8}")
            ds.write(h5py.h5s.ALL, h5py.h5s.ALL, arr, mtype=getattr(h5py.h5t, f"NATIVE_B{bits}"))
        d = f.create_dataset("arr", shape=(4,), dtype=np.dtype((">i2", (3, 2))))
        d[...] = np.arange(24, dtype=">i2").reshape(4, 3, 2) - 5
        d = f.create_dataset("arr_chunked", shape=(5,), dtype=np.dtype(("<f4", (2, 2))), chunks=(2,),
                             compression="gzip")
        d[...] = np.arange(20, dtype="<f4").reshape(5, 2, 2) / 4
        cdt = np.dtype([("a", "<i2"), ("b", ">f8")])
        d = f.create_dataset("arr_of_compound", shape=(3,), dtype=np.dtype((cdt, (2,))))
        d[...] = np.array([[(1, 1.5), (2, -2.5)]] * 3, cdt)
        inner = h5py.h5t.array_create(h5py.h5t.STD_U16BE, (2,))
        outer = h5py.h5t.array_create(inner, (3,))
        ds = h5py.h5d.create(f.id, b"arr_nested", outer, h5py.h5s.create_simple((2,)))
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(12, dtype=">u2").reshape(2, 3, 2) * 1000, mtype=outer)
        for pad, pn in [(h5py.h5t.STR_NULLTERM, "nullterm"), (h5py.h5t.STR_NULLPAD, "nullpad"),
                        (h5py.h5t.STR_SPACEPAD, "spacepad")]:
            for cset, cn in [(h5py.h5t.CSET_ASCII, "ascii"), (h5py.h5t.CSET_UTF8, "utf8")]:
                st = h5py.h5t.C_S1.copy()
                st.set_size(6)
                st.set_strpad(pad)
                st.set_cset(cset)
                ds = h5py.h5d.create(f.id, f"s_{pn}_{cn}".encode(), st, h5py.h5s.create_simple((6,)))
                raw = np.array([b"ab", b"abc  ", b"h\xc3\xa9", b"abcdef", b"", b"\xff\xfe"], "S6")
                ds.write(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=st)
        f.create_dataset("vstr", data=np.array(["a", "\u00e9t\u00e9", ""], dtype=object), dtype=VSTR)
        f.create_dataset("vbytes", data=np.array([b"a", b"\xff\xfe", b""], dtype=object),
                         dtype=h5py.string_dtype("ascii"))
        f.create_dataset("vbadutf", data=np.array([b"a", b"\xff\xfe", b"\xc3\xa9"], dtype=object), dtype=VSTR)
        f.create_dataset("vstr_chunked", data=np.array([f"r{i}\u00e9" for i in range(9)], dtype=object),
                         dtype=VSTR, chunks=(4,), compression="gzip")
        for b in ["<i2", ">i4", ">f8", "<f2", "u1", ">u8"]:
            seqs = [np.arange(3), np.array([]), np.array([-1, 200, 7.5])]
            f.create_dataset(f"vlen_{_name(b)}", data=np.array([s.astype(b) for s in seqs], dtype=object),
                             dtype=h5py.vlen_dtype(np.dtype(b)))
        f["refs"] = np.array([f["bool"].ref, h5py.Reference()], dtype=h5py.ref_dtype)
        f["rrefs"] = np.array([f["arr"].regionref[1:2]], dtype=h5py.regionref_dtype)
        for o in "<>":
            f[f"half_{_name(o)}"] = np.array([1.5, -2.0, 65504, 6e-8, -0.0, np.inf, np.nan], f"{o}f2")
    return path


def _plain_reads(h, t, name, problems):
    _compare(f"{name}[()]", lambda: h[name][()], lambda: t[name][()], problems)
    if h[name].shape:
        for sel in (np.s_[1:], np.s_[1], np.s_[[0, len(h[name]) - 1]]):
            _compare(f"{name}[{sel}]", lambda: h[name][sel], lambda: t[name][sel], problems)
    hd, td = h[name].dtype, t[name].dtype
    if hd != td:
        problems.append(f"{name}.dtype: {hd} vs {td}")


def _checks(h, t, name, problems):
    hd, td = h[name].dtype, t[name].dtype
    for check in ("check_string_dtype", "check_vlen_dtype", "check_enum_dtype", "check_opaque_dtype"):
        base = lambda d: d.base if d.subdtype else d  # noqa: E731
        w, g = getattr(h5py, check)(base(hd)), getattr(h5turbo, check)(base(td))
        if w != g:
            problems.append(f"{check}({name}): {w!r} vs {g!r}")


@pytest.mark.parametrize("group", ["enum", "boolenum", "opaque", "bitfield", "arr", "s_", "half"])
def test_special_classes_read_like_h5py(kinds, group):
    """Enums (int8..int64 bases, big-endian bases), h5py's bool and {FALSE, TRUE} enums
    over other bases, opaque (tags, numpy datetimes), bitfields (read as unsigned
    integers), array types (nested, of compounds), fixed strings of each padding and
    character set, float16 in both byte orders: the dtype, h5py's check_* answers,
    the values."""
    problems = []
    h, t = _both(kinds)
    with h, t:
        for name in [n for n in h if n.startswith(group) and n not in ("opaque_tag", "arr_nested")]:
            _plain_reads(h, t, name, problems)
            _checks(h, t, name, problems)
    assert not problems, "\n".join(problems[:30])


ENUM_TARGETS = ["<i8", ">i8", "<f8", ">f4", "<f2", "?"]


def test_enum_conversions_like_h5py(kinds):
    """Enums read as numbers of wider types (the enum to integer/float conversions
    libhdf5 has), with astype, np.asarray and read_direct."""
    problems = []
    h, t = _both(kinds)
    with h, t:
        for name in [n for n in h if n.startswith(("enum", "boolenum")) or n == "bool"]:
            for to in ENUM_TARGETS:
                if to == "?" and name.startswith("enum"):
                    # enum -> h5py's bool enum converts by member name: values whose name is
                    # not FALSE/TRUE are left unwritten by libhdf5 (h5py shows uninitialised
                    # bytes), so there is no reference to compare with
                    continue

                def fix(a):  # h5py's bool keeps the bytes of the int8 it converted to
                    return a.view("u1") != 0 if isinstance(a, np.ndarray) and a.dtype == bool else a

                _compare(f"{name}.astype({to})", lambda: fix(h[name].astype(to)[()]),
                         lambda: fix(t[name].astype(to)[()]), problems)
                _compare(f"asarray({name}, {to})", lambda: fix(np.asarray(h[name], dtype=to)),
                         lambda: fix(np.asarray(t[name], dtype=to)), problems)

                def rd(ds):
                    out = np.zeros(h[name].shape, to)
                    ds.read_direct(out)
                    return fix(out)

                _compare(f"{name}.read_direct({to})", lambda: rd(h[name]), lambda: rd(t[name]), problems)
    assert not problems, "\n".join(problems[:30])


def test_bool_enums_with_a_value_no_member_names_read_like_h5py(kinds):
    problems = []
    h, t = _both(kinds)
    with h, t:
        for name in [n for n in h if n.startswith("nonmember_")]:
            _plain_reads(h, t, name, problems)
            _compare(f"{name}.astype(?)", lambda: h[name].astype("?")[()].view("u1"),
                     lambda: t[name].astype("?")[()].view("u1"), problems)
    assert not problems, "\n".join(problems)


@pytest.mark.xfail(strict=True, reason="BUG: a {FALSE, TRUE} enum (h5py's bool) holding a value that names no "
                                       "member (7) read with astype/np.asarray/read_direct as a number gives 1 "
                                       "(converted through bool); libhdf5 (h5py) converts the enum's number: 7")
@pytest.mark.parametrize("to", ["<i8", "u1", "<f8"])
def test_bool_enum_value_no_member_names_to_numbers_like_h5py(kinds, to):
    problems = []
    h, t = _both(kinds)
    with h, t:
        for name in [n for n in h if n.startswith("nonmember_")]:
            _compare(f"{name}.astype({to})", lambda: h[name].astype(to)[()], lambda: t[name].astype(to)[()],
                     problems)
            _compare(f"asarray({name}, {to})", lambda: np.asarray(h[name], dtype=to),
                     lambda: np.asarray(t[name], dtype=to), problems)
    assert not problems, "\n".join(problems)


def test_tagged_opaque_reads_its_bytes(kinds):
    """h5py's high-level read of an opaque type with a tag fails (its memory type has
    no tag); h5turbo reads the stored bytes, which h5py gives through the low-level
    read with the file type, under the dtype h5py reports."""
    h, t = _both(kinds)
    with h, t:
        ds = h["opaque_tag"]
        raw = np.zeros(ds.shape, ds.dtype)
        ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=ds.id.get_type())
        assert t["opaque_tag"].dtype == ds.dtype
        assert _same(raw, t["opaque_tag"][()]) is None
        assert _same(raw[1:], t["opaque_tag"][1:]) is None


def test_nested_array_type_values_like_h5py(kinds):
    h, t = _both(kinds)
    with h, t:
        for sel in (np.s_[()], np.s_[1], np.s_[:1]):
            want, got = h["arr_nested"][sel], t["arr_nested"][sel]
            assert (want.shape, want.dtype, want.tobytes()) == (got.shape, got.dtype, got.tobytes())


def test_nested_array_type_dtype_like_h5py(kinds):
    h, t = _both(kinds)
    with h, t:
        assert t["arr_nested"].dtype == h["arr_nested"].dtype


@pytest.mark.parametrize("name", ["opaque", "opaque_dt", "bitfield8", "bitfield16", "bitfield32", "bitfield64"])
def test_opaque_and_bitfields_to_their_own_type(kinds, name):
    problems = []
    h, t = _both(kinds)
    with h, t:
        to = h[name].dtype
        _compare(f"{name}.astype({to})", lambda: h[name].astype(to)[()], lambda: t[name].astype(to)[()], problems)

        def rd(ds):
            out = np.zeros(h[name].shape, to)
            ds.read_direct(out)
            return out

        _compare(f"{name}.read_direct", lambda: rd(h[name]), lambda: rd(t[name]), problems)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", ["bitfield16", "bitfield32", "bitfield64"])
@pytest.mark.parametrize("to", ["u1", "<i4", "<f8"])
@pytest.mark.xfail(strict=True, reason="BUG (refusal): libhdf5 has no bitfield -> integer/float conversion, "
                                       "h5py raises OSError; h5turbo converts the numbers")
def test_bitfield_to_numbers_is_refused_as_h5py(kinds, name, to):
    h, t = _both(kinds)
    with h, t:
        with pytest.raises(OSError):
            h[name].astype(to)[()]
        with pytest.raises(OSError):
            t[name].astype(to)[()]


ARRAY_NAMES = ["arr", "arr_chunked", "arr_nested"]


@pytest.mark.parametrize("name, same_base", [("arr", True), ("arr", False), ("arr_chunked", True),
                                             ("arr_chunked", False), ("arr_nested", True)])
def test_astype_of_array_types_to_array_dtypes(kinds, name, same_base):
    h, t = _both(kinds)
    with h, t:
        stored = h[name].dtype
        to = stored if same_base else np.dtype(("<f8", stored.shape))
        for sel in (np.s_[()], np.s_[1:]):
            want, got = h[name].astype(to)[sel], t[name].astype(to)[sel]
            assert _same(want, got) is None, _same(want, got)


@pytest.mark.parametrize("name", ARRAY_NAMES)
def test_array_types_into_scalar_dtypes_convert_their_elements(kinds, name):
    """np.asarray(array-type dataset, scalar dtype) and read_direct into an array of
    another element type: h5py raises (OSError, TypeError); h5turbo converts each
    element, as docs/h5py-compat.md says (astype, h5py's own conversion API, refuses
    as h5py does: test_astype_of_array_types_to_array_dtypes)."""
    h, t = _both(kinds)
    with h, t:
        with pytest.raises(OSError):
            np.asarray(h[name], dtype="<f8")
        want = h[name][()].astype("<f8")
        assert _same(want, np.asarray(t[name], dtype="<f8")) is None
        out = np.zeros(want.shape, "<f8")
        with pytest.raises((TypeError, OSError)):
            h[name].read_direct(out)
        t[name].read_direct(out)
        assert _same(want, out) is None


def test_array_of_compounds_by_field_like_h5py(kinds):
    problems = []
    h, t = _both(kinds)
    with h, t:
        for index in (np.s_["a"], np.s_[1:, "b"], np.s_[1]):
            _compare(f"arr_of_compound[{index}]", lambda: h["arr_of_compound"][index],
                     lambda: t["arr_of_compound"][index], problems)
    assert not problems, "\n".join(problems)


STRINGS = [f"s_{p}_{c}" for p in ("nullterm", "nullpad", "spacepad") for c in ("ascii", "utf8")]
ASSTR = [(None, "strict"), ("ascii", "strict"), ("ascii", "replace"), ("ascii", "ignore"), ("utf-8", "ignore"),
         ("utf-8", "surrogateescape"), ("latin-1", "strict"), ("utf-16", "strict"), ("utf-8", "backslashreplace")]


@pytest.mark.parametrize("name", STRINGS + ["vstr", "vbytes", "vbadutf", "vstr_chunked"])
def test_strings_and_asstr_like_h5py(kinds, name):
    """Fixed strings of every padding and character set and variable-length ones: plain
    reads, asstr with encodings and error handlers (errors alike: UnicodeDecodeError
    where h5py raises it), and astype to fixed strings of other lengths where the
    character set allows it."""
    problems = []
    h, t = _both(kinds)
    with h, t:
        _plain_reads(h, t, name, problems)
        _checks(h, t, name, problems)
        for encoding, errors in ASSTR:
            for sel in (np.s_[()], np.s_[1], np.s_[1:]):
                _compare(f"{name}.asstr({encoding}, {errors})[{sel}]", lambda: h[name].asstr(encoding, errors)[sel],
                         lambda: t[name].asstr(encoding, errors)[sel], problems)
            _compare(f"asarray({name}.asstr({encoding}, {errors}))",
                     lambda: np.asarray(h[name].asstr(encoding, errors)),
                     lambda: np.asarray(t[name].asstr(encoding, errors)), problems)
        targets = ["S6", "O"] if "utf8" in name else ["S3", "S6", "S9", "O"]
        if "spacepad" in name:
            targets = [x for x in targets if x in ("S6", "O")]  # see the xfail below for other lengths
        for to in targets:
            if name.startswith("v") and to != "O":
                continue
            _compare(f"{name}.astype({to})", lambda: h[name].astype(to)[()], lambda: t[name].astype(to)[()],
                     problems)
    assert not problems, "\n".join(problems[:30])


@pytest.mark.parametrize("to", ["S4", "S9"])
def test_space_padded_string_with_nul_to_another_length(tmp_path, to):
    path = tmp_path / "spacepad.h5"
    with h5py.File(path, "w") as f:
        st = h5py.h5t.C_S1.copy()
        st.set_size(6)
        st.set_strpad(h5py.h5t.STR_SPACEPAD)
        ds = h5py.h5d.create(f.id, b"s", st, h5py.h5s.create_simple((2,)))
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([b"x\x00y", b"ab  "], "S6"), mtype=st)
    h, t = _both(path)
    with h, t:
        assert _same(h["s"].astype(to)[()], t["s"].astype(to)[()]) is None


@pytest.mark.parametrize("source, to", [("s_nullpad_utf8", "S4"), ("s_nullterm_utf8", "S8"),
                                        ("s_nullpad_ascii", h5py.string_dtype("utf-8", 4))])
def test_fixed_string_between_character_sets_refused_as_h5py(kinds, source, to):
    h, t = _both(kinds)
    with h, t:
        with pytest.raises(OSError):
            h[source].astype(to)[()]
        with pytest.raises(OSError):
            t[source].astype(to)[()]


@pytest.mark.parametrize("name", ["vlen_lei2", "vlen_bei4", "vlen_bef8", "vlen_lef2", "vlen_u1", "vlen_beu8"])
def test_sequences_read_like_h5py(kinds, name):
    """Sequences of numbers (big-endian bases included) read as h5py reads them;
    astype to another sequence type is h5turbo's documented departure (it converts the
    stored numbers, see test_h5py_hunt.py), so only its element values are checked."""
    problems = []
    h, t = _both(kinds)
    with h, t:
        _plain_reads(h, t, name, problems)
        _checks(h, t, name, problems)
        stored = np.dtype(h5py.check_vlen_dtype(h[name].dtype))
        written = [np.arange(3), np.array([]), np.array([-1, 200, 7.5])]
        got = t[name].astype(h5py.vlen_dtype("f8"))[()]
        for w, g in zip(written, got):
            expect = w.astype(stored).astype("f8")
            if g.dtype != np.float64 or g.tolist() != expect.tolist():
                problems.append(f"{name}.astype(vlen f8): {g!r} vs {expect!r}")
    assert not problems, "\n".join(problems)


def test_reference_dtypes_like_h5py(kinds):
    h, t = _both(kinds)
    with h, t:
        for name, kind in (("refs", h5turbo.Reference), ("rrefs", h5turbo.RegionReference)):
            assert t[name].dtype == h[name].dtype
            assert h5turbo.check_ref_dtype(t[name].dtype) is kind
            assert h5py.check_ref_dtype(h[name].dtype) is not None
            got, want = t[name][()], h[name][()]
            assert [type(x).__name__ for x in got] == [type(x).__name__ for x in want]
            assert [bool(x) for x in got] == [bool(x) for x in want]
            assert t[name].astype("O")[()].dtype == h[name].astype("O")[()].dtype


# ---------------------------------------------------------------------- custom layouts


def _custom_float(size, spos, epos, esize, mpos, msize, bias, order=h5py.h5t.ORDER_LE, base=None):
    tid = (base or h5py.h5t.IEEE_F32LE).copy()
    if size > tid.get_size():
        tid.set_size(size)
        tid.set_fields(spos, epos, esize, mpos, msize)
    else:
        tid.set_fields(spos, epos, esize, mpos, msize)
        tid.set_precision(size * 8)
        tid.set_size(size)
    tid.set_ebias(bias)
    tid.set_order(order)
    return tid


CUSTOM_FLOATS = {
    "f24": lambda: _custom_float(3, 23, 16, 7, 0, 16, 63),
    "bf16": lambda: _custom_float(2, 15, 7, 8, 0, 7, 127),
    "bf16be": lambda: _custom_float(2, 15, 7, 8, 0, 7, 127, order=h5py.h5t.ORDER_BE),
    "f16bias": lambda: _custom_float(2, 15, 10, 5, 0, 10, 10),
    "e4m3": lambda: _custom_float(1, 7, 3, 4, 0, 3, 7),
    "f48": lambda: _custom_float(6, 47, 36, 11, 0, 36, 1023, base=h5py.h5t.IEEE_F64LE),
}
CUSTOM_VALUES = np.array([0.0, -0.0, 1.0, -1.5, 3.140625, 1e-3, -0.75, 1e-30, 6e-39, 1e-45, 65504.0, 1e5, 3e38,
                          0.1, 2**-14, 2**-24, 123456.789, 255.75, -300.0], "<f8")
CUSTOM_SPECIALS = np.array([np.inf, -np.inf, np.nan, 1e300, -1e300, -1e-3], "<f8")


def _odd_int(base, size, precision, offset, order):
    tid = base.copy()
    if size < tid.get_size():
        tid.set_precision(precision)
        tid.set_offset(offset)
        tid.set_size(size)
    else:
        tid.set_precision(precision)
        tid.set_offset(offset)
    tid.set_order(order)
    return tid


ODD_INTS = {
    "i12o4": lambda: _odd_int(h5py.h5t.STD_I16LE, 2, 12, 4, h5py.h5t.ORDER_LE),
    "u12o4be": lambda: _odd_int(h5py.h5t.STD_U16BE, 2, 12, 4, h5py.h5t.ORDER_BE),
    "i7": lambda: _odd_int(h5py.h5t.STD_I8LE, 1, 7, 0, h5py.h5t.ORDER_LE),
    "i33o3": lambda: _odd_int(h5py.h5t.STD_I64LE, 8, 33, 3, h5py.h5t.ORDER_LE),
    "u20o40be": lambda: _odd_int(h5py.h5t.STD_U64BE, 8, 20, 40, h5py.h5t.ORDER_BE),
}
ODD_VALUES = np.array([0, 1, -1, 2047, -2048, 4095, 100, -100, 2**40, -2**40, 63, -64, 2**32, 2**19], "<i8")


@pytest.fixture(scope="module")
def custom(tmp_path_factory):
    path = tmp_path_factory.mktemp("dtconv") / "custom.h5"
    with h5py.File(path, "w") as f:
        for group, makers, values, mtype in (("float", CUSTOM_FLOATS, CUSTOM_VALUES, h5py.h5t.NATIVE_DOUBLE),
                                             ("special", CUSTOM_FLOATS, CUSTOM_SPECIALS, h5py.h5t.NATIVE_DOUBLE),
                                             ("int", ODD_INTS, ODD_VALUES, h5py.h5t.NATIVE_INT64)):
            for name, make in makers.items():
                for layout in ("c", "k"):
                    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                    if layout == "k":
                        dcpl.set_chunk((4,))
                        dcpl.set_deflate(4)
                    ds = h5py.h5d.create(f.id, f"{group}_{layout}_{name}".encode(), make(),
                                         h5py.h5s.create_simple((len(values),)), dcpl=dcpl)
                    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, values, mtype=mtype)
    return path


CUSTOM_TARGETS = ["<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "<i1", ">u2", "<i4", ">i8", "<u8"]
if LONG_DOUBLE:
    CUSTOM_TARGETS.append("<f16")


def _value_key(a):
    a = np.asarray(a)
    if a.dtype.kind == "f" and a.dtype.itemsize == 16:
        return [x.tobytes()[:10] for x in a.reshape(-1, 1)]
    return a.tobytes()


@pytest.mark.parametrize("group", ["float", "int"])
def test_custom_layouts_like_h5py(custom, group):
    """Float layouts numpy lacks (24-bit, bfloat16 in both orders, float16 of another
    bias, an 8-bit e4m3, a 48-bit double) and integers of fewer bits than their size,
    at an offset: the dtype h5py picks, the values, and their conversion to every
    numeric type through astype and read_direct."""
    problems = []
    h, t = _both(custom)
    with h, t:
        for name in [n for n in h if n.startswith(group + "_")]:
            _plain_reads(h, t, name, problems)
            for to in CUSTOM_TARGETS:
                if name.endswith("e4m3") and to[1] in "iu":
                    continue  # its values beyond 240 are infinities: see the xfail on specials
                want, werr = _outcome(lambda: h[name].astype(to)[()])
                got, gerr = _outcome(lambda: t[name].astype(to)[()])
                if werr or gerr:
                    if type(werr) is not type(gerr):
                        problems.append(f"{name}.astype({to}): {werr!r} vs {gerr!r}")
                    continue
                if got.dtype != want.dtype or _value_key(got) != _value_key(want):
                    problems.append(f"{name}.astype({to}): {want!r} vs {got!r}")
                out_h, out_t = np.zeros(want.shape, to), np.zeros(want.shape, to)
                h[name].read_direct(out_h)
                t[name].read_direct(out_t)
                if _value_key(out_h) != _value_key(out_t):
                    problems.append(f"{name}.read_direct({to}): {out_h!r} vs {out_t!r}")
    assert not problems, "\n".join(problems[:30])


def test_custom_float_specials_read_like_h5py(custom):
    """Infinities and overflow of the custom layouts: the same values (NaN's bits are
    the xfail below)."""
    problems = []
    h, t = _both(custom)
    with h, t:
        for name in [n for n in h if n.startswith("special_")]:
            want, got = h[name][()], t[name][()]
            if want.dtype != got.dtype:
                problems.append(f"{name}: {want.dtype} vs {got.dtype}")
                continue
            same = (np.isnan(want) & np.isnan(got)) | (want.view(f"u{want.itemsize}") == got.view(f"u{got.itemsize}"))
            if not same.all() or (np.signbit(want) != np.signbit(got)).any():
                problems.append(f"{name}: {want!r} vs {got!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.xfail(strict=True, reason="BUG (minor): NaN of a float layout numpy lacks reads with all mantissa "
                                       "bits set in h5py (libhdf5's software conversion: f4 0x7fffffff); "
                                       "h5turbo gives a quiet NaN (0x7fc00000)")
def test_custom_float_nan_bits_like_h5py(custom):
    h, t = _both(custom)
    with h, t:
        for name in [n for n in h if n.startswith("special_")]:
            assert h[name][()].tobytes() == t[name][()].tobytes(), name


@pytest.mark.xfail(strict=True, reason="BUG: a float layout numpy lacks converted to integers follows the rules "
                                       "of the numpy float it is read as (NaN -> f4 -> i4 gives -2**31, inf from "
                                       "an 8-bit float read as f2 gives -2**31, u8 0, -1e-3 gives 0); libhdf5 "
                                       "converts from the file type in software (NaN -> 0, inf -> the maximum, "
                                       "(-0.5, 0) -> the minimum), as h5py shows")
@pytest.mark.parametrize("to", ["<i4", "<u8", "<i8"])
def test_custom_float_specials_to_integers_like_h5py(custom, to):
    problems = []
    h, t = _both(custom)
    with h, t:
        for name in [n for n in h if n.startswith("special_")]:
            want, got = h[name].astype(to)[()], t[name].astype(to)[()]
            if want.tobytes() != got.tobytes():
                problems.append(f"{name}: {want!r} vs {got!r}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------- scalars and empty reads


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("dtconv") / "small.h5"
    with h5py.File(path, "w") as f:
        f["s_i2"] = np.int16(-5)
        f["s_beu4"] = np.array(7, ">u4")
        f["s_f8"] = np.float64(-2.5)
        f["s_bef4"] = np.array(1e10, ">f4")
        f["s_bool"] = np.bool_(True)
        f["empty_f4"] = np.zeros((0,), "<f4")
        f["empty_2d"] = np.zeros((3, 0), ">i2")
        f["f8"] = np.array([1.5, np.nan, -np.inf], ">f8")
        f["i4"] = np.array([1, -2, 2**31 - 1], "<i4")
    return path


def _scalar_reads(h, t, name, targets, problems):
    for to in targets:
        for sel in (np.s_[()], np.s_[...]):
            _compare(f"{name}.astype({to})[{sel}]", lambda: h[name].astype(to)[sel],
                     lambda: t[name].astype(to)[sel], problems)
        _compare(f"asarray({name}, {to})", lambda: np.asarray(h[name], dtype=to),
                 lambda: np.asarray(t[name], dtype=to), problems)


def test_astype_of_scalar_datasets_like_h5py(small):
    """A scalar dataset read through astype: [()] a numpy scalar, [...] a 0-d array."""
    problems = []
    h, t = _both(small)
    with h, t:
        for name in ("s_f8", "s_bef4", "s_bool"):
            _scalar_reads(h, t, name, ["<i4", ">i8", "<f4", ">f2", "u1"], problems)
        for name in ("s_i2", "s_beu4"):  # to floats (integer targets: the xfail below)
            _scalar_reads(h, t, name, ["<f8", ">f4"], problems)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", ["s_i2", "s_beu4"])
@pytest.mark.parametrize("to", ["<i4", "<i2", ">u8"])
def test_astype_of_a_scalar_integer_dataset_to_integers_with_ellipsis(small, name, to):
    h, t = _both(small)
    with h, t:
        want, got = h[name].astype(to)[...], t[name].astype(to)[...]
        assert _same(want, got) is None, _same(want, got)


@pytest.mark.parametrize("name, sel", [("empty_f4", np.s_[()]), ("empty_2d", np.s_[...]), ("f8", np.s_[:0]),
                                       ("i4", np.s_[2:1])])
@pytest.mark.parametrize("to", ["<c8", "S4", "V8"])
def test_empty_reads_with_no_conversion_path_like_h5py(small, name, sel, to):
    h, t = _both(small)
    with h, t:
        want = h[name].astype(to)[sel]
        assert _same(want, t[name].astype(to)[sel]) is None
        out_h, out_t = np.zeros(want.shape, to), np.zeros(want.shape, to)
        h[name].read_direct(out_h, sel)
        t[name].read_direct(out_t, sel)


@pytest.fixture(scope="module")
def unnormalised(tmp_path_factory):
    """IEEE-shaped floats whose mantissa stores its leading bit (H5T_NORM_NONE, as the
    x87 long double does): same sizes and fields as numpy's f2/f4/f8."""
    path = tmp_path_factory.mktemp("dtconv") / "norm.h5"
    values = np.array([1.0, -1.5, 0.1, 1e-3, 3.0, 0.0, -0.0, np.inf, -np.inf], "<f8")
    with h5py.File(path, "w") as f:
        for name, base in (("f4", h5py.h5t.IEEE_F32LE), ("f8be", h5py.h5t.IEEE_F64BE),
                           ("f2", getattr(h5py.h5t, "IEEE_F16LE", None))):
            if base is None:
                continue
            tid = base.copy()
            tid.set_norm(h5py.h5t.NORM_NONE)
            ds = h5py.h5d.create(f.id, name.encode(), tid, h5py.h5s.create_simple((len(values),)))
            ds.write(h5py.h5s.ALL, h5py.h5s.ALL, values, mtype=h5py.h5t.NATIVE_DOUBLE)
    return path


def test_unnormalised_float_layouts_have_h5pys_dtype(unnormalised):
    h, t = _both(unnormalised)
    with h, t:
        for name in h:
            assert t[name].dtype == h[name].dtype


def test_unnormalised_float_layouts_read_like_h5py(unnormalised):
    problems = []
    h, t = _both(unnormalised)
    with h, t:
        for name in h:
            _compare(f"{name}[()]", lambda: h[name][()], lambda: t[name][()], problems)
            _compare(f"{name}.astype(<f8)", lambda: h[name].astype("<f8")[()], lambda: t[name].astype("<f8")[()],
                     problems)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("source, to", [("<f8", "<f4"), (">f4", "<f2")])
def test_float_narrowing_beyond_range_is_silent_as_h5py(tmp_path, source, to):
    path = tmp_path / "silent.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.array([1e300 if source == "<f8" else 1e5, 1.0], source)
    h, t = _both(path)
    with h, t:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            want = h["x"].astype(to)[()]
            got = t["x"].astype(to)[()]
        assert _same(want, got) is None


@pytest.mark.skipif(not hasattr(np.dtypes, "StringDType"), reason="numpy 2's StringDType")
def test_string_datasets_read_as_numpys_string_dtype_as_h5py(tmp_path):
    path = tmp_path / "strings.h5"
    with h5py.File(path, "w") as f:
        f["fixed"] = np.array([b"ab\xc3\xa9", b"x\x00y", b""], dtype="S5")
        f["vlen"] = np.array(["abc", "h\u00e9llo", ""], dtype=h5py.string_dtype())
        f["ascii"] = np.array([b"ab", b"c"], dtype=h5py.string_dtype("ascii"))
        f["fixed_utf8"] = np.array(["ab", "c"], dtype=h5py.string_dtype("utf-8", 4))
        f["scalar"] = "scalar"
        f["empty"] = np.array([], dtype=h5py.string_dtype())
        f["numbers"] = np.arange(3)
    with h5py.File(path) as ref, h5turbo.File(path) as ours:
        for name in ("fixed", "vlen", "ascii", "fixed_utf8", "scalar", "empty"):
            selections = [(), np.s_[:1], np.s_[1:]] if ref[name].shape else [()]
            for sel in selections:
                want, want_exc = _outcome(lambda: ref[name].astype("T")[sel])
                got, got_exc = _outcome(lambda: ours[name].astype(np.dtypes.StringDType())[sel])
                assert type(got_exc) is type(want_exc), (name, sel, got_exc, want_exc)
                if want_exc is None:
                    assert type(got) is type(want) and getattr(got, "dtype", None) == getattr(want, "dtype", None)
                    assert np.array_equal(got, want), (name, sel, got, want)
            got, want = np.asarray(ours[name], dtype="T"), np.asarray(ref[name], dtype="T")
            assert got.dtype == want.dtype and np.array_equal(got, want), name
        with pytest.raises(TypeError, match="string datatype"):  # as h5py, when asked
            ours["numbers"].astype("T")
        with pytest.raises(TypeError, match="string datatype"):
            ref["numbers"].astype("T")


def test_complex_numbers_converted_to_another_size_keep_libhdf5s_nan_bits(tmp_path):
    # each part converted as libhdf5 converts a float: a NaN with every mantissa bit
    # set, where numpy's cast gives its quiet NaN (0x7fc00000)
    path = tmp_path / "complex_nan.h5"
    values = np.array([np.nan + 0j, complex(1.5, np.nan), complex(-np.inf, 2), 1e300 + 1e-300j])
    with h5py.File(path, "w") as f:
        f["be16"] = values.astype(">c16")
        with np.errstate(over="ignore"):  # 1e300 as float32: inf
            f["le8"] = values.astype("<c8")
    with h5py.File(path) as ref, h5turbo.File(path) as ours:
        for name, target in (("be16", "<c8"), ("be16", ">c8"), ("le8", "<c16"), ("le8", ">c16"), ("be16", "<c16")):
            want = ref[name].astype(target)[...]
            got = ours[name].astype(target)[...]
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (name, target, got, want)
