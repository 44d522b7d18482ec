"""Dataset reductions against numpy applied to h5py's read of the same data: every
case computes its reference in the test (``np.<op>(h5py_ds[selection], ...)``).

What must agree exactly: the result's type (numpy scalar or array), dtype, shape
and values, and the type of the exception for bad input. What is compared with a
tolerance: float sums and moments, which the engine accumulates in
float64 (numpy's float32 pairwise sums differ in the last bits; see reductions.py).
The sign of a zero min/max is not compared (numpy's depends on its SIMD loops).
"""

from __future__ import annotations

import warnings

import h5py
import hdf5plugin
import numpy as np
import pytest

import h5turbo
from support.h5compare import outcome as _outcome

OPS = ("sum", "mean", "var", "std", "min", "max", "count_nonzero")
FLOAT_OPS = ("sum", "mean", "var", "std")


def _ints(dt: str, shape, rng) -> np.ndarray:
    dtype = np.dtype(dt)
    info = np.iinfo(dtype)
    # The full range: integer sums wrap as numpy's do.
    return rng.integers(info.min, info.max, size=shape, endpoint=True,
                        dtype=dtype.newbyteorder("=")).astype(dtype)


def _floats(dt: str, shape, rng) -> np.ndarray:
    a = (rng.standard_normal(shape) * 100).astype(dt)
    flat = a.reshape(-1)
    flat[[1, 3, 4]] = [np.nan, -0.0, np.inf]
    return a


def _write(path) -> None:
    rng = np.random.default_rng(11)
    with h5py.File(path, "w") as f:
        for dt in ("i1", ">i2", "u8", "?"):
            a = rng.random((7, 5, 3)) < 0.4 if dt == "?" else _ints(dt, (7, 5, 3), rng)
            f.create_dataset(f"chunked_{dt}", data=a, chunks=(3, 2, 2))
        for dt in ("f4", ">f8"):
            a = _floats(dt, (7, 5, 3), rng)
            f.create_dataset(f"chunked_{dt}", data=a, chunks=(4, 4, 1), compression="gzip",
                             shuffle=True, fletcher32=True)
        f.create_dataset("lz4_i4", data=_ints("i4", (9, 4), rng), chunks=(2, 3), **hdf5plugin.LZ4())
        f.create_dataset("contiguous_f8", data=_floats("f8", (6, 5), rng))
        f.create_dataset("empty", shape=(0, 4), dtype="i4", chunks=(2, 2), maxshape=(None, 4))
        f.create_dataset("scalar", data=np.float64(-2.5))
        colours = h5py.enum_dtype({"red": 0, "green": 1, "blue": 200}, basetype="u1")
        f.create_dataset("enum", data=np.array([[0, 1, 200], [1, 1, 0]], "u1"), dtype=colours)
        _compact(f, "compact", _ints(">i8", (4, 6), rng))
        partial = f.create_dataset("partial", shape=(10, 7), dtype="u8", chunks=(3, 3),
                                   fillvalue=2**63 + 5)
        partial[0:3, 0:3] = 7
        _virtual(f, rng)


def _compact(f, name: str, data: np.ndarray) -> None:
    """A compact-layout dataset through h5py's low-level API."""
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    plist.set_layout(h5py.h5d.COMPACT)
    space = h5py.h5s.create_simple(data.shape)
    dset = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(data.dtype), space, plist)
    dset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))


def _virtual(f, rng) -> None:
    """A virtual dataset of two sources (the slab path of the reductions)."""
    layout = h5py.VirtualLayout(shape=(14, 5, 3), dtype="i4")
    for part, rows in enumerate((slice(0, 7), slice(7, 14))):
        f.create_dataset(f"source{part}", data=_ints("i4", (7, 5, 3), rng))
        layout[rows] = h5py.VirtualSource(f[f"source{part}"])
    f.create_virtual_dataset("virtual", layout, fillvalue=0)
    floats = h5py.VirtualLayout(shape=(9, 4), dtype="f8")
    f.create_dataset("float_source", data=_floats("f8", (6, 4), rng))
    floats[0:6] = h5py.VirtualSource(f["float_source"])
    f.create_virtual_dataset("virtual_f8", floats, fillvalue=np.nan)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    path = tmp_path_factory.mktemp("reduce_hunt") / "data.h5"
    _write(path)
    with h5py.File(path, "r") as reference, h5turbo.File(path) as ours:
        yield reference, ours


def _assert_same(got, want, tol: float = 0.0) -> None:
    assert type(got) is type(want)
    assert np.shape(got) == np.shape(want)
    assert getattr(got, "dtype", None) == getattr(want, "dtype", None)
    g, w = np.asarray(got), np.asarray(want)
    if not tol or w.dtype.kind not in "fc":
        np.testing.assert_array_equal(g, w)
        return
    finite = np.abs(w[np.isfinite(w)])
    # numpy's float32 sums cancel to small values less exactly than ours
    atol = tol * float(finite.max()) if finite.size else 0.0
    np.testing.assert_allclose(g, w, rtol=tol, atol=atol, equal_nan=True)


def _tolerance(op: str, data_dtype: np.dtype, dtype) -> float:
    floats = [np.dtype(dtype)] if dtype is not None else []
    if data_dtype.kind == "f":
        floats.append(data_dtype)
    if op not in FLOAT_OPS or (op == "sum" and not floats):
        return 0.0
    if op != "sum" and not floats:
        return 1e-12  # integer data, float64 moments: only the order of additions
    return 1e-5 if min(d.itemsize for d in floats) <= 4 else 1e-12


def _read(reference, name, selection):
    """h5py's read of the selection; numpy's indexing of h5py's whole read for what
    h5py refuses (negative steps)."""
    if selection is None:
        return reference[name][()]
    try:
        return reference[name][selection]
    except (ValueError, TypeError):
        return reference[name][()][selection]


def _compare(reference, ours, name, op, selection=None, threads=None, **kwargs):
    """ours[name].<op>(selection=..., threads=..., **kwargs) against numpy on h5py's read."""
    data = _read(reference, name, selection)
    want, want_exc = _outcome(lambda: getattr(np, op)(data, **kwargs))
    extra = {"threads": threads} if selection is None else {"selection": selection, "threads": threads}
    got, got_exc = _outcome(lambda: getattr(ours[name], op)(**kwargs, **extra))
    if want_exc is not None or got_exc is not None:
        assert isinstance(got_exc, type(want_exc)), (got_exc, want_exc)
        return
    _assert_same(got, want, _tolerance(op, np.asarray(data).dtype, kwargs.get("dtype")))


# ------------------------------------------------------------------ broad agreement

@pytest.mark.parametrize("name", ["chunked_i1", "chunked_>i2", "chunked_u8", "chunked_?",
                                  "chunked_f4", "chunked_>f8", "lz4_i4", "contiguous_f8",
                                  "empty", "partial", "virtual", "virtual_f8", "scalar",
                                  "enum", "compact"])
@pytest.mark.parametrize("op", OPS)
def test_axes_and_keepdims_agree_with_numpy(files, name, op):
    reference, ours = files
    rank = reference[name].ndim
    axes = [None, 0, -1, (0, -1), (0, 0), rank, ()] + ([(2, 0)] if rank == 3 else [])
    for axis in axes:
        for keepdims in (False, True):
            _compare(reference, ours, name, op, axis=axis, keepdims=keepdims)


SELECTIONS = [np.s_[::2], np.s_[::-1], np.s_[5:1:-2, :, 1:], np.s_[..., 1], np.s_[2],
              np.s_[[0, 2, 5]], np.s_[:, [0, 3]], np.s_[3:3], np.s_[[]], np.s_[100:],
              np.s_[1:6, ::-2, ::2]]


@pytest.mark.parametrize("name", ["chunked_>i2", "chunked_f4", "virtual"])
@pytest.mark.parametrize("op", OPS)
def test_selections_agree_with_numpy(files, name, op):
    reference, ours = files
    mask = np.arange(reference[name].shape[0]) % 3 != 1
    for selection in SELECTIONS + [mask]:
        for axis, threads in ((None, 1), (0, 2), (-1, 8)):
            _compare(reference, ours, name, op, selection=selection, threads=threads, axis=axis)


# ------------------------------------------------------------------ fixed bugs

@pytest.mark.parametrize("selection", [np.s_[None, :, 0], np.s_[0, None], np.s_[:, None, ::-1, 1],
                                       np.s_[None, 2, :, None, 0], np.s_[..., 0, None]])
@pytest.mark.parametrize("op", OPS)
def test_selections_adding_and_dropping_axes_reduce_their_own_array(files, selection, op):
    # (None, :, 0) adds an axis and drops one: the same rank as the block read, but
    # not its shape; reduced as the block, the sums came out of the wrong axes
    reference, ours = files
    data = reference["chunked_f4"][()][selection]
    for axis in (None, 0, 1, -1):
        want, want_exc = _outcome(lambda: getattr(np, op)(data, axis=axis))
        got, got_exc = _outcome(lambda: getattr(ours["chunked_f4"], op)(axis=axis, selection=selection))
        if want_exc is not None or got_exc is not None:
            assert isinstance(got_exc, type(want_exc)), (selection, axis, got_exc, want_exc)
            continue
        _assert_same(got, want, _tolerance(op, data.dtype, None))


@pytest.mark.parametrize("selection", [np.s_[[0, 2, 5]], np.s_[[1, 8, 13]],
                                       np.s_[np.arange(14) % 3 == 0], np.s_[[]],
                                       np.s_[3:3], np.s_[100:]])
@pytest.mark.parametrize("op", OPS)
def test_virtual_datasets_reduce_index_lists_and_empty_selections(files, selection, op):
    # Slabs of a virtual dataset took an index list along the first axis for a
    # (start, count, step) triple (wrong values), and an empty first axis left no
    # partial at all (TypeError/AttributeError instead of numpy's result).
    reference, ours = files
    for axis in (None, 0, -1, (0, -1)):
        _compare(reference, ours, "virtual", op, selection=selection, axis=axis)


DTYPES = ["i1", "i4", "u4", "u8", "i8", "?", "f2", "f4", "f8", "c16", "m8", "S3"]


@pytest.mark.parametrize("name", ["chunked_i1", "chunked_u8", "chunked_f4", "chunked_>f8",
                                  "virtual", "virtual_f8"])
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_dtype_argument_has_numpys_semantics(files, name, op):
    # Integer dtypes of mean/var/std, integer dtypes of float data, bool, float16 and
    # complex accumulators were computed in 64 bits and cast at the end: numpy wraps
    # its narrow accumulators, casts NaN to integers its own way, ORs bools.
    reference, ours = files
    for dtype in DTYPES:
        if _squares_overflow_float32(name, op, dtype):
            continue
        for axis in (None, 0):
            _compare(reference, ours, name, op, axis=axis, dtype=dtype)


def _squares_overflow_float32(name: str, op: str, dtype) -> bool:
    """numpy's float32 var of uint64-size values is inf (its squares overflow); ours,
    accumulated in float64, is the finite variance: an intended difference."""
    return op in ("var", "std") and np.dtype(dtype) == np.float32 and name == "chunked_u8"


@pytest.mark.parametrize("name", ["chunked_>i2", "virtual"])
@pytest.mark.parametrize("op", OPS)
def test_axis_of_the_wrong_type_is_a_type_error(files, name, op):
    # A list or a bool was taken as an axis; numpy raises TypeError.
    reference, ours = files
    for axis in ([0], True, (0, False), 1.0, "0"):
        _compare(reference, ours, name, op, axis=axis)


@pytest.mark.parametrize("op", ["var", "std"])
def test_ddof_of_a_numpy_integer_type_is_numpys_divisor(files, op):
    # count - np.int8(1) overflowed int8 once the count passed 127 (210 elements).
    reference, ours = files
    for ddof in (np.int8(1), np.uint8(3), 0.5, 209, 210, 500):
        for axis in (None, 0):
            _compare(reference, ours, "virtual", op, axis=axis, ddof=ddof)


@pytest.mark.parametrize("op", ["min", "max"])
def test_min_max_over_an_empty_axis_raise_even_for_an_empty_result(files, op):
    # An empty reduced axis gave an empty array when the result was empty too
    # (numpy raises ValueError whenever a reduced axis has no element).
    reference, ours = files
    for selection in (np.s_[:, 2:2], np.s_[:, ::-3], np.s_[:, [1, 2]]):
        for axis in (0, (0, 1), 1, -1):
            for keepdims in (False, True):
                _compare(reference, ours, "empty", op, selection=selection, axis=axis,
                         keepdims=keepdims)


def _warnings_of(call) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return sorted({(w.category, str(w.message).rstrip(".")) for w in caught
                   if "empty slice" in str(w.message) or "Degrees of freedom" in str(w.message)})


@pytest.mark.parametrize("name", ["empty", "chunked_f4"])
def test_empty_means_and_variances_warn_as_numpy(files, name):
    # Nothing was said where numpy warns (a mean of nothing, ddof >= count).
    reference, ours = files
    data = reference[name][()]
    cases = [("mean", {"axis": 0}), ("var", {"axis": 0, "ddof": 7}),
             ("std", {"axis": None, "ddof": data.size})]
    for op, kwargs in cases:
        want = _warnings_of(lambda: getattr(np, op)(data, **kwargs))
        assert _warnings_of(lambda: getattr(ours[name], op)(**kwargs)) == want


OUT_DTYPES = ["f8", "f4", "i8", "i2", "u1", "?", "c16"]


# ds.sum(out=...) and np.sum(ds, out=...) (numpy's protocol calls the method)
OUT_CALLS = {
    "method": lambda ds, op, axis, out: getattr(ds, op)(axis=axis, out=out),
    "numpy": lambda ds, op, axis, out: getattr(np, op)(ds, axis=axis, out=out),
}


@pytest.mark.parametrize("call", sorted(OUT_CALLS))
@pytest.mark.parametrize("name", ["chunked_>i2", "chunked_u8", "chunked_f4", "virtual"])
@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "min", "max"])
def test_out_has_numpys_semantics(files, name, op, call):
    # out=: numpy's loop for the data's and out's dtypes together (uint64 data into
    # an int64 out sums in float64), exact shapes, unsafe casts. The methods cast the
    # finished result "same_kind" before: a (1,) + shape out was broadcast into, an
    # int16 sum into uint8 refused.
    reference, ours = files
    reduce_into = OUT_CALLS[call]
    data = reference[name][()]
    for axis in (None, 0):
        shape = np.sum(data, axis=axis).shape
        for out_dtype in OUT_DTYPES:
            for out_shape in {shape, (1,) + shape, (7,)}:
                want_out, got_out = np.full(out_shape, 99, out_dtype), np.full(out_shape, 99, out_dtype)
                want, want_exc = _outcome(lambda: getattr(np, op)(data, axis=axis, out=want_out))
                got, got_exc = _outcome(lambda: reduce_into(ours[name], op, axis, got_out))
                if want_exc is not None or got_exc is not None:
                    assert isinstance(got_exc, type(want_exc)), (out_dtype, out_shape, got_exc, want_exc)
                    continue
                assert want is want_out and got is got_out
                tol = 1e-5 if op in FLOAT_OPS and np.dtype(out_dtype).kind in "fc" else 0.0
                if _squares_overflow_float32(name, op, out_dtype):
                    continue
                _assert_same(got, want, tol)


# ------------------------------------------------------------------ numpy's functions

@pytest.mark.parametrize("name", ["chunked_>i2", "chunked_f4", "virtual", "empty"])
def test_numpy_functions_agree(files, name):
    reference, ours = files
    data, ds = reference[name][()], ours[name]
    functions = (np.sum, np.mean, np.var, np.std, np.min, np.max, np.amin, np.amax,
                 np.count_nonzero)
    for function in functions:
        for kwargs in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}):
            want, want_exc = _outcome(lambda: function(data, **kwargs))
            got, got_exc = _outcome(lambda: function(ds, **kwargs))
            if want_exc is not None or got_exc is not None:
                assert isinstance(got_exc, type(want_exc)), (function, got_exc, want_exc)
                continue
            op = function.__name__.replace("amin", "min").replace("amax", "max")
            _assert_same(got, want, _tolerance(op, data.dtype, None))


@pytest.mark.parametrize("call", [lambda d: d.max(), lambda d: d.sum(axis=0), lambda d: d.mean(axis=(0, 1)),
                                  lambda d: d.count_nonzero(axis=1)])
def test_engine_errors_of_a_reduction_name_the_file_and_dataset(tmp_path, call):
    """A chunk the engine cannot decode (SZ: no decoder here) fails a reduction as it
    fails a read, with the file and the dataset named (the engine names only the chunk)."""
    path = tmp_path / "sz.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.zeros((40, 6, 2), np.int8), chunks=(7, 6, 2), **hdf5plugin.SZ(absolute=0.1))
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.UnsupportedError, match="^" + str(f["d"].file.filename) + ": /d: chunk at"):
            f["d"][()]
        with pytest.raises(h5turbo.UnsupportedError, match="^" + str(f["d"].file.filename) + ": /d: chunk at"):
            call(f["d"])
