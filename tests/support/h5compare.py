"""Helpers shared by the comparison tests: exact value comparison (dtype, shape and
bytes; NaN-aware because bytes are compared), selection generation, and the
orthogonal-indexing oracle computed from h5py's full read."""

from __future__ import annotations

import warnings

import h5py
import numpy as np


# --------------------------------------------------------------------------- comparison

def _dtype_meta(dt: np.dtype):
    """What h5py's dtype metadata means (string encoding and length, vlen base, enum
    mapping, reference kind), recursively through fields and subarrays.  Compared
    by meaning: an 'S' dtype without metadata is ASCII to h5py, as with it."""
    # references by kind: h5py's Reference/RegionReference, h5turbo's of the same names
    ref_kind = getattr(h5py.check_dtype(ref=dt), "__name__", None)
    meaning = (h5py.check_string_dtype(dt), h5py.check_vlen_dtype(dt),
               h5py.check_enum_dtype(dt), ref_kind)
    fields = [(n, _dtype_meta(dt.fields[n][0])) for n in dt.names] if dt.names else None
    sub = _dtype_meta(dt.subdtype[0]) if dt.subdtype else None
    return meaning, fields, sub


def dtype_difference(exp: np.dtype, got) -> str | None:
    if not isinstance(got, np.dtype):
        return f"dtype is {type(got).__name__}, not numpy dtype"
    if exp != got:
        return f"dtype {got!r} != h5py {exp!r}"
    if _dtype_meta(exp) != _dtype_meta(got):
        return f"dtype metadata {_dtype_meta(got)} != h5py {_dtype_meta(exp)}"
    return None


def _is_empty_marker(value) -> bool:
    return getattr(value, "shape", ()) is None and hasattr(value, "dtype")


def difference(exp, got) -> str | None:
    """None if `got` is what h5py gave (`exp`) exactly, else a description."""
    if isinstance(exp, h5py.Empty):
        if not _is_empty_marker(got):
            return f"expected an Empty marker (shape None), got {type(got).__name__}"
        return dtype_difference(exp.dtype, got.dtype)
    if isinstance(exp, (np.ndarray, np.generic)):
        return _numpy_difference(exp, got)
    if type(got) is not type(exp):
        return f"type {type(got).__name__} != h5py {type(exp).__name__} ({got!r} vs {exp!r})"
    if got != exp:
        return f"value {got!r} != h5py {exp!r}"
    return None


def _numpy_difference(exp, got) -> str | None:
    if type(got) is not type(exp):
        return f"type {type(got).__name__} != h5py {type(exp).__name__}"
    problem = dtype_difference(exp.dtype, got.dtype)
    if problem:
        return problem
    if np.shape(got) != np.shape(exp):
        return f"shape {np.shape(got)} != h5py {np.shape(exp)}"
    return content_difference(np.asarray(exp), np.asarray(got))


def content_difference(exp: np.ndarray, got: np.ndarray) -> str | None:
    """Same-dtype, same-shape arrays: compare leaf fields by bytes, objects by value."""
    if exp.dtype.names:
        for name in exp.dtype.names:
            problem = content_difference(exp[name], got[name])
            if problem:
                return f"field {name!r}: {problem}"
        return None
    if exp.dtype.hasobject:
        return _object_difference(exp, got)
    if exp.tobytes() == got.tobytes():
        return None
    return _first_mismatch(exp, got)


def _object_difference(exp: np.ndarray, got: np.ndarray) -> str | None:
    for i, (a, b) in enumerate(zip(exp.reshape(-1), got.reshape(-1))):
        problem = difference(a, b)
        if problem:
            return f"element {np.unravel_index(i, exp.shape) if exp.shape else ()}: {problem}"
    return None


def _first_mismatch(exp: np.ndarray, got: np.ndarray) -> str:
    if exp.ndim == 0:
        return f"value {got!r} != h5py {exp!r} (bytes differ)"
    a = np.frombuffer(exp.tobytes(), np.uint8)
    b = np.frombuffer(got.tobytes(), np.uint8)
    where = int(np.flatnonzero(a != b)[0])
    flat = where // exp.dtype.itemsize
    index = np.unravel_index(flat, exp.shape)
    count = int((a != b).sum())
    return (f"{count} differing bytes; first at element {tuple(int(i) for i in index)}: "
            f"{got[index]!r} != h5py {exp[index]!r}")


def has_reference(dt: np.dtype) -> bool:
    """Whether values of this dtype hold object or region references anywhere (vlen
    sequences, compound fields, sub-arrays)."""
    if h5py.check_dtype(ref=dt) is not None:
        return True
    base = h5py.check_vlen_dtype(dt)
    if base is not None and base not in (str, bytes):
        return has_reference(np.dtype(base))
    if dt.names:
        return any(has_reference(dt.fields[n][0]) for n in dt.names)
    return bool(dt.subdtype) and has_reference(dt.subdtype[0])


def _is_reference(value) -> bool:
    import h5turbo
    return isinstance(value, (h5py.Reference, h5turbo.Reference))


def _ref_token(ref, file):
    """What a reference means in its file: null, the path of the object, or for a
    region reference the dataset's path and the selected values."""
    if not ref:
        return ("null",)
    target = file[ref]
    if isinstance(ref, (h5py.RegionReference, __import__("h5turbo").RegionReference)):
        values = np.asarray(target[ref])
        return ("region", target.name, values.shape, values.tolist())
    return ("object", target.name)


def resolved(value, file):
    """`value` with every reference replaced by its meaning in `file` (nested lists,
    tuples and dicts), so values read by h5py and by h5turbo compare with ==."""
    if _is_reference(value):
        return _ref_token(value, file)
    if isinstance(value, np.ndarray) and value.dtype.names:
        return value.shape, {n: resolved(value[n], file) for n in value.dtype.names}
    if isinstance(value, np.void) and value.dtype.names:
        return tuple(resolved(value[n], file) for n in value.dtype.names)
    if isinstance(value, np.ndarray) and value.dtype.hasobject:
        return value.shape, [resolved(v, file) for v in value.reshape(-1)]
    if isinstance(value, np.ndarray):
        return value.shape, value.tolist()
    return value


def reference_difference(exp, exp_file, got, got_file) -> str | None:
    """Like difference() for values holding references: same dtype (reference kinds
    by name), same shape, and every reference naming the same thing."""
    for dt_exp, dt_got in [(getattr(exp, "dtype", None), getattr(got, "dtype", None))]:
        if dt_exp is not None:
            problem = dtype_difference(dt_exp, dt_got)
            if problem:
                return problem
    if np.shape(got) != np.shape(exp):
        return f"shape {np.shape(got)} != h5py {np.shape(exp)}"
    a, b = resolved(exp, exp_file), resolved(got, got_file)
    return None if a == b else f"references differ: {b!r} != h5py {a!r}"


def assert_same(exp, got, what: str = "") -> None:
    problem = difference(exp, got)
    assert problem is None, f"{what}: {problem}" if what else problem


# --------------------------------------------------------------------------- selections

def _random_slice(n: int, rng) -> slice:
    start = int(rng.integers(-n, n)) if rng.random() < 0.8 else None
    stop = int(rng.integers(0, n + 5)) if rng.random() < 0.8 else None
    step = int(rng.choice([1, 1, 2, 3, 7])) if rng.random() < 0.7 else None
    return slice(start, stop, step)


def _random_axis(n: int, rng):
    roll = rng.random()
    if roll < 0.25:
        return int(rng.integers(-n, n))
    if roll < 0.35:
        return slice(None)
    return _random_slice(n, rng)


def _random_list(n: int, rng):
    count = int(rng.integers(1, min(n, 12) + 1))
    style = rng.integers(0, 5)
    if style == 0:  # sorted, unique, python list (the only kind h5py reads directly)
        return sorted(int(i) for i in rng.choice(n, size=count, replace=False))
    if style == 1:  # unsorted numpy array
        return rng.permutation(rng.choice(n, size=count, replace=False)).astype(np.int64)
    if style == 2:  # repeats, unsorted
        return [int(i) for i in rng.integers(0, n, size=count + 1)]
    if style == 3:  # sorted numpy uint array
        return np.sort(rng.choice(n, size=count, replace=False)).astype(np.uint32)
    return rng.random(n) < 0.4  # boolean mask along one axis


def random_selection(shape: tuple, rng) -> tuple:
    axes = [_random_axis(n, rng) for n in shape]
    if rng.random() < 0.5:
        axis = int(rng.integers(0, len(shape)))
        axes[axis] = _random_list(shape[axis], rng)
    if rng.random() < 0.3 and all(isinstance(a, slice) and a == slice(None) for a in axes[1:]):
        return (axes[0], Ellipsis)
    if rng.random() < 0.2 and isinstance(axes[0], slice) and axes[0] == slice(None):
        return (Ellipsis, *axes[1:])
    return tuple(axes)


def selections(shape, rng, n_random: int = 12) -> list:
    """Fixed edge-case selections plus `n_random` random ones for a dataset shape."""
    if shape is None:
        return [()]
    if len(shape) == 0:
        return [(), Ellipsis]
    fixed = [Ellipsis, (), (slice(None),), (slice(None, None, 2),)]
    if 0 in shape:
        return fixed + [tuple(slice(0, 0) for _ in shape), (slice(1, 3),)]
    fixed += [tuple(0 for _ in shape), tuple(-1 for _ in shape), (-1,),
              (Ellipsis, shape[-1] // 2), (slice(1, 1),),
              rng.random(shape) < 0.3]
    return fixed + [random_selection(shape, rng) for _ in range(n_random)]


def _as_tuple(sel) -> tuple:
    return sel if isinstance(sel, tuple) else (sel,)


def _expand(sel: tuple, ndim: int) -> list:
    if any(s is Ellipsis for s in sel):
        i = next(i for i, s in enumerate(sel) if s is Ellipsis)
        fill = [slice(None)] * (ndim - len(sel) + 1)
        return [*sel[:i], *fill, *sel[i + 1:]]
    return [*sel, *[slice(None)] * (ndim - len(sel))]


def is_full_mask(sel, shape) -> bool:
    sel = _as_tuple(sel)
    return (len(sel) == 1 and isinstance(sel[0], np.ndarray)
            and sel[0].dtype == bool and sel[0].shape == tuple(shape))


def _axis_index(s, n: int):
    """(indices, kept) for one axis of an orthogonal selection."""
    if isinstance(s, slice):
        return np.arange(n)[s], True
    if isinstance(s, (list, np.ndarray)):
        arr = np.asarray(s)
        return (np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.intp)), True
    i = int(s)
    return np.array([i + n if i < 0 else i]), False


def oracle(full, sel, shape, as_array: bool = False):
    """What an h5py-style (orthogonal) selection gives, computed from the full read;
    as_array keeps a 0-d array (file byte order) where h5py would give a scalar."""
    if is_full_mask(sel, shape):
        return full[_as_tuple(sel)[0]]
    pairs = [_axis_index(s, n) for s, n in zip(_expand(_as_tuple(sel), len(shape)), shape)]
    picked = full[np.ix_(*[p[0] for p in pairs])]
    squeeze = tuple(slice(None) if kept else 0 for _, kept in pairs)
    return picked[squeeze + (Ellipsis,)] if as_array else picked[squeeze]


def h5py_reads_directly(sel) -> bool:
    """h5py only takes index lists that are strictly increasing."""
    for s in _as_tuple(sel):
        if isinstance(s, (list, np.ndarray)) and np.asarray(s).dtype != bool:
            arr = np.asarray(s)
            if arr.ndim != 1 or np.any(np.diff(arr.astype(np.int64)) <= 0):
                return False
    return True


def describe(sel) -> str:
    def one(s):
        if isinstance(s, np.ndarray):
            return f"array({s.tolist()}, {s.dtype})" if s.size <= 20 else f"array(shape={s.shape}, {s.dtype})"
        if isinstance(s, slice):
            return f"{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}" + (
                "" if s.step is None else f":{s.step}")
        return "..." if s is Ellipsis else repr(s)
    if isinstance(sel, tuple) and len(sel) == 0:
        return "[()]"
    return "[" + ", ".join(one(s) for s in _as_tuple(sel)) + "]"


def call(fn):
    """(value, None) or (None, exception) for one h5turbo access."""
    try:
        return fn(), None
    except Exception as exc:  # judged by the caller
        return None, exc


def expect_same(exp, turbo_fn, files=None) -> str | None:
    """h5py read `exp`; h5turbo (`turbo_fn()`) must give the same. `files` (h5py's,
    h5turbo's) for values holding references: they must name the same objects and
    regions."""
    got, exc = call(turbo_fn)
    if exc is not None:
        return f"h5py reads it; h5turbo raised {type(exc).__name__}: {exc}"
    if files is not None:
        return reference_difference(exp, files[0], got, files[1])
    return difference(exp, got)


# --------------------------------------------------------------------------- selections

def selection_summary(space) -> tuple:
    """What both h5py's dataspace and h5turbo's VirtualSelection answer about a
    selection: its type, and for points and hyperslabs its count and bounds, and
    whether (and how) it is one regular hyperslab."""
    kind = space.get_select_type()
    out = [kind]
    if kind in (1, 2):
        out += [space.get_select_npoints(), space.get_select_bounds()]
    if kind == 2:
        out += [space.is_regular_hyperslab(), space.is_regular_hyperslab() and space.get_regular_hyperslab()]
    return tuple(out)


def outcome(call):
    """(value, None) or (None, the exception) of ``call()``, numpy's cast warnings
    silenced: differential tests compare h5py's answer or exception with h5turbo's."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(), None
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return None, exc
