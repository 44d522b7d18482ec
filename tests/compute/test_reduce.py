"""Dataset reductions against numpy on h5py-written files: every integer width and
sign, floats of both byte orders, bool; chunked (edge chunks, gzip, unallocated
chunks with a fill value), contiguous and compact; 1-D to 4-D; selections."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import h5turbo  # noqa: E402
from support.common import run_python

INT_TYPES = ["i1", "i2", "<i4", ">i4", "i8", "u1", "u2", "u4", ">u8", "<u8"]
FLOAT_TYPES = ["<f4", ">f4", "<f8", ">f8"]
AXES = [None, 0, -1, (0, -1)]


def _data(dt: str, shape, rng) -> np.ndarray:
    dtype = np.dtype(dt)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 1000 + 5).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.3
    info = np.iinfo(dtype)
    # Full range: integer sums must wrap exactly as numpy's.
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype.newbyteorder("="))


@pytest.fixture(scope="module")
def reduce_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("reduce") / "reduce.h5"
    rng = np.random.default_rng(5)
    arrays = {}
    with h5py.File(path, "w") as f:
        for dt in INT_TYPES + FLOAT_TYPES + ["?"]:
            a = _data(dt, (23, 17, 3), rng).astype(np.dtype(dt))
            name = f"chunked_{dt}"
            f.create_dataset(name, data=a, chunks=(5, 4, 2), compression="gzip")
            arrays[name] = a
        shapes = {"d1": (101,), "d2": (30, 41), "d3": (7, 9, 11), "d4": (4, 5, 6, 7)}
        for key, shape in shapes.items():
            a = _data("<f8", shape, rng)
            f.create_dataset(f"chunked_{key}", data=a, chunks=tuple(max(1, n // 3) for n in shape))
            f.create_dataset(f"contiguous_{key}", data=a)
            arrays[f"chunked_{key}"] = arrays[f"contiguous_{key}"] = a
        compact = np.arange(24, dtype="i2").reshape(4, 6) - 7
        _compact(f, compact)
        arrays["compact"] = compact
        # Unallocated chunks read as the fill value.
        sparse = f.create_dataset("sparse", shape=(40, 30), dtype="i4", chunks=(10, 10), fillvalue=-3)
        sparse[0:10, 0:10] = 5
        sparse[25:35, 12:14] = np.arange(20).reshape(10, 2)
        full = np.full((40, 30), -3, dtype="i4")
        full[0:10, 0:10] = 5
        full[25:35, 12:14] = np.arange(20).reshape(10, 2)
        arrays["sparse"] = full
        nan = _data("<f8", (12, 9), rng)
        nan[3, 4] = np.nan
        f.create_dataset("nan", data=nan, chunks=(5, 5))
        arrays["nan"] = nan
        # Large offset, small spread: naive sums of squares lose every digit here.
        offset = 1e9 + rng.random((2000, 3))
        f.create_dataset("offset", data=offset, chunks=(128, 3), compression="gzip")
        arrays["offset"] = offset
    with h5turbo.File(path) as f:
        yield f, arrays


def _compact(f, data):
    """A compact-layout dataset through h5py's low-level API."""
    space = h5py.h5s.create_simple(data.shape)
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    plist.set_layout(h5py.h5d.COMPACT)
    dset = h5py.h5d.create(f.id, b"compact", h5py.h5t.py_create(data.dtype), space, plist)
    dset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))


def _check(got, want, exact):
    assert np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype.newbyteorder("=") == np.asarray(want).dtype.newbyteorder("=")
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-4 if np.asarray(want).dtype.itemsize == 4 else 1e-9
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("dt", INT_TYPES + ["?"])
def test_integer_and_bool_reductions_exact(reduce_file, dt):
    f, arrays = reduce_file
    ds, a = f[f"chunked_{dt}"], arrays[f"chunked_{dt}"]
    for axis in AXES:
        for op in ("sum", "min", "max", "count_nonzero"):
            _check(getattr(ds, op)(axis=axis), getattr(np, op)(a, axis=axis), exact=True)
        _check(ds.mean(axis=axis), a.mean(axis=axis), exact=False)
        _check(ds.var(axis=axis, ddof=1), a.var(axis=axis, ddof=1), exact=False)
    assert ds.sum(axis=1, dtype="i2").dtype == np.int16
    _check(ds.sum(axis=1, dtype="i2"), a.sum(axis=1, dtype="i2"), exact=True)


@pytest.mark.parametrize("dt", FLOAT_TYPES)
def test_float_reductions(reduce_file, dt):
    f, arrays = reduce_file
    ds, a = f[f"chunked_{dt}"], arrays[f"chunked_{dt}"]
    for axis in AXES:
        for op in ("sum", "mean", "var", "std"):
            _check(getattr(ds, op)(axis=axis), getattr(np, op)(a.astype("f8"), axis=axis).astype(a.dtype), False)
        for op in ("min", "max", "count_nonzero"):
            _check(getattr(ds, op)(axis=axis), getattr(np, op)(a, axis=axis), exact=True)
    _check(ds.std(axis=(0, 2), ddof=2), a.astype("f8").std(axis=(0, 2), ddof=2).astype(a.dtype), False)
    _check(ds.sum(axis=0, dtype="f8"), a.sum(axis=0, dtype="f8"), exact=False)


@pytest.mark.parametrize("key", ["d1", "d2", "d3", "d4"])
@pytest.mark.parametrize("layout", ["chunked", "contiguous"])
def test_ranks_and_layouts(reduce_file, key, layout):
    f, arrays = reduce_file
    ds, a = f[f"{layout}_{key}"], arrays[f"{layout}_{key}"]
    axes = [None] + list(range(a.ndim)) + [tuple(range(0, a.ndim, 2)), tuple(range(-1, -a.ndim - 1, -1))]
    for axis in axes:
        for op in ("sum", "mean", "var", "min", "max"):
            _check(getattr(ds, op)(axis=axis), getattr(np, op)(a, axis=axis), exact=op in ("min", "max"))
    _check(ds.sum(axis=0, keepdims=True), a.sum(axis=0, keepdims=True), exact=False)
    _check(ds.max(keepdims=True), a.max(keepdims=True), exact=True)


def test_compact_and_fill_values(reduce_file):
    f, arrays = reduce_file
    for name in ("compact", "sparse"):
        ds, a = f[name], arrays[name]
        for axis in (None, 0, 1):
            for op in ("sum", "min", "max", "count_nonzero"):
                _check(getattr(ds, op)(axis=axis), getattr(np, op)(a, axis=axis), exact=True)
            _check(ds.var(axis=axis), a.var(axis=axis), exact=False)


def test_nan_propagates(reduce_file):
    f, arrays = reduce_file
    ds, a = f["nan"], arrays["nan"]
    for axis in (None, 0, 1):
        for op in ("sum", "mean", "var", "min", "max", "count_nonzero"):
            want = getattr(np, op)(a, axis=axis)
            _check(getattr(ds, op)(axis=axis), want, exact=op in ("min", "max", "count_nonzero"))


def test_variance_is_stable(reduce_file):
    f, arrays = reduce_file
    ds, a = f["offset"], arrays["offset"]
    # numpy's var is two-pass; one-pass sums of squares would be off by orders of magnitude.
    np.testing.assert_allclose(ds.var(axis=0), a.var(axis=0), rtol=1e-6)
    np.testing.assert_allclose(ds.mean(axis=0), a.mean(axis=0), rtol=1e-12)


def test_selections(reduce_file):
    f, arrays = reduce_file
    ds, a = f["chunked_d2"], arrays["chunked_d2"]
    for sel in (np.s_[5:20], np.s_[3:29:4, 1:40:3], np.s_[::-1, 10:], np.s_[[1, 2, 7, 19]],
                np.s_[:, [0, 5, 6, 40]], np.s_[7], np.s_[[3, 3, 1]], np.s_[..., 2:9]):
        block = a[sel]
        for axis in (None, 0, -1):
            if axis is not None and block.ndim < 2 and axis != 0 and axis != -1:
                continue
            _check(ds.sum(axis=axis, selection=sel), block.sum(axis=axis), exact=False)
            _check(ds.max(axis=axis, selection=sel), block.max(axis=axis), exact=True)
            _check(ds.var(axis=axis, selection=sel, ddof=1), block.var(axis=axis, ddof=1), exact=False)


def test_threads_and_errors(reduce_file):
    f, arrays = reduce_file
    ds, a = f["chunked_<i4"], arrays["chunked_<i4"]
    for threads in (1, 2, 5):
        _check(ds.sum(axis=(0, 2), threads=threads), a.sum(axis=(0, 2)), exact=True)
    with pytest.raises(ValueError):
        ds.min(axis=0, selection=np.s_[3:3])
    _check(ds.sum(axis=0, selection=np.s_[3:3]), a[3:3].sum(axis=0), exact=True)
    with pytest.raises(np.exceptions.AxisError):
        ds.sum(axis=3)
    with pytest.raises(ValueError):
        ds.sum(axis=(0, 0))
    with pytest.raises(ValueError):
        ds.sum(threads=0)
    assert type(ds.count_nonzero()) is type(np.count_nonzero(a))


def test_float_results_are_the_same_bits_on_every_thread_count(tmp_path):
    """Float sums and variances do not depend on how chunks were shared among threads
    (partials meet in the file's chunk order): the same bits on every run."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((600, 90)) * 10.0 ** rng.integers(-6, 9, size=(600, 90))
    path = tmp_path / "floats.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=a, chunks=(7, 11), compression="gzip")
    with h5turbo.File(path) as f:
        ds = f["x"]
        for op in ("sum", "mean", "var"):
            for axis in (None, 0, 1):
                serial = np.asarray(getattr(ds, op)(axis=axis, threads=1))
                for threads in (2, 3, 8, 8, 8):
                    got = np.asarray(getattr(ds, op)(axis=axis, threads=threads))
                    assert got.tobytes() == serial.tobytes(), (op, axis, threads)
                _check(serial, getattr(a, op)(axis=axis), exact=False)


def test_numpy_functions_dispatch(reduce_file):
    f, arrays = reduce_file
    ds, a = f["chunked_d2"], arrays["chunked_d2"]
    _check(np.sum(ds, axis=0), a.sum(axis=0), exact=False)
    _check(np.max(ds), a.max(), exact=True)
    _check(np.std(ds, axis=1, ddof=1), a.std(axis=1, ddof=1), exact=False)
    out = np.empty(a.shape[1])
    assert np.mean(ds, axis=0, out=out) is out
    _check(out, a.mean(axis=0), exact=False)


def test_a_reduction_over_a_huge_unwritten_extent_is_an_error_not_an_abort(tmp_path):
    # 2^40 elements in chunks of 1024, nothing written: the reduction's output is one
    # number, but planning it cut the axis into 2^30 pieces until the allocator aborted
    # the interpreter; now an error naming the problem (in a child: an abort is fatal)
    path = tmp_path / "huge.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=(10,), maxshape=(None,), chunks=(1024,), dtype="i4", fillvalue=7)
        d.resize((2**40,))
    out = run_python(f"""
import resource, h5turbo
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
with h5turbo.File({str(path)!r}) as f:
    assert f["d"][-2:].tolist() == [7, 7]
    try:
        f["d"].sum()
    except ValueError as exc:  # a selection too large to plan, as one too large to hold
        print(type(exc).__name__, exc)
""", timeout=120)
    assert "ValueError" in out and "too many to plan" in out and "huge.h5: /d:" in out, out


def test_a_reduction_over_huge_unwritten_axes_is_an_error_and_bounded(tmp_path):
    # 2^31 x 2^31 in chunks of 4096 x 4096: each axis within the per-axis limit, 2^38
    # chunks in all; the plan's reservation, granted lazily by mimalloc, grew to GBs
    # before: now refused at once (the child's peak memory stays small)
    path = tmp_path / "huge2d.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=(1, 1), maxshape=(None, None), chunks=(4096, 4096), dtype="i1")
        d.resize((2**31, 2**31))
    out = run_python(f"""
import h5turbo
with h5turbo.File({str(path)!r}) as f:
    try:
        f["d"].sum()
    except ValueError as exc:
        print(type(exc).__name__, exc)
print("peak", [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1])
""", timeout=120)
    assert "ValueError" in out and "too many to plan" in out, out
    assert int(out.split("peak")[1].split()[0]) < 1 << 20, out  # kB: well under 1 GiB


def test_unwritten_chunks_count_their_fill_value_without_materialising_it(tmp_path):
    # 2^40 int64 elements in unwritten chunks of 2^28 (2 GiB each), fill value 7: a
    # reduction used to build a whole chunk of fill values (an allocation sized by the
    # file's chunk size) and fold all 2^40 of them one by one; unwritten chunks now
    # add count x fill, so it takes milliseconds (in a child: an abort is fatal).
    path = tmp_path / "huge_chunks.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=(1,), maxshape=(None,), chunks=(2**28,), dtype="i8", fillvalue=7)
        d.resize((2**40,))
        f.create_dataset("x", shape=(2**20, 4), maxshape=(None, 4), chunks=(2**12, 4), dtype="f8", fillvalue=0.5)
        f["x"][3, :] = [1.0, 2.0, -4.0, 8.0]
    out = run_python(f"""
import resource, h5turbo
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
with h5turbo.File({str(path)!r}) as f:
    d = f["d"]
    print(int(d.sum()), int(d.min()), int(d.max()), int(d.count_nonzero()), float(d.mean()), float(d.var()))
    x = f["x"]
    print(x.sum(axis=0).tolist(), x.min(axis=0).tolist(), x.max().tolist(), x.count_nonzero(axis=1)[:5].tolist())
""", timeout=60)
    lines = out.split("\n")
    assert lines[0].split() == [str(7 * 2**40), "7", "7", str(2**40), "7.0", "0.0"], out
    n = 2**20 - 1
    assert lines[1] == f"{[n * 0.5 + 1.0, n * 0.5 + 2.0, n * 0.5 - 4.0, n * 0.5 + 8.0]} [0.5, 0.5, -4.0, 0.5] 8.0 [4, 4, 4, 4, 4]", out


def test_integers_narrower_than_their_size_reduce_as_they_read(tmp_path):
    # An n-bit-filtered int32 with 20 significant bits, a 16-bit int of precision 10 and
    # a big-endian uint32 of 12 bits at bit offset 4: reads give the full-width integer;
    # reductions refused them ("reductions need integer, float or boolean elements").
    path = tmp_path / "nbit.h5"
    rng = np.random.default_rng(3)
    arrays = {
        "nbit_i20": rng.integers(-(2**19), 2**19, size=(37, 6), dtype="<i4"),
        "i16_prec10": rng.integers(-512, 512, size=(25, 3), dtype="<i2"),
        "u32_prec12_offset4": rng.integers(0, 2**12, size=(19, 5), dtype="u4").astype(">u4"),
    }
    with h5py.File(path, "w") as f:
        t = h5py.h5t.STD_I32LE.copy()
        t.set_precision(20)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8, 4))
        dcpl.set_filter(h5py.h5z.FILTER_NBIT)
        ds = h5py.h5d.create(f.id, b"nbit_i20", t, h5py.h5s.create_simple((37, 6)), dcpl=dcpl)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, arrays["nbit_i20"])
        t = h5py.h5t.STD_I16LE.copy()
        t.set_precision(10)
        ds = h5py.h5d.create(f.id, b"i16_prec10", t, h5py.h5s.create_simple((25, 3)))
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, arrays["i16_prec10"])
        t = h5py.h5t.STD_U32BE.copy()
        t.set_precision(12)
        t.set_offset(4)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 5))
        ds = h5py.h5d.create(f.id, b"u32_prec12_offset4", t, h5py.h5s.create_simple((19, 5)), dcpl=dcpl)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, arrays["u32_prec12_offset4"])
        for name, a in arrays.items():
            np.testing.assert_array_equal(f[name][()], a)
    with h5turbo.File(path) as f:
        for name, a in arrays.items():
            ds = f[name]
            np.testing.assert_array_equal(ds[()], a)
            for axis in (None, 0, 1):
                for op in ("sum", "min", "max", "count_nonzero"):
                    _check(getattr(ds, op)(axis=axis), getattr(np, op)(a, axis=axis), exact=True)
                _check(ds.mean(axis=axis), a.mean(axis=axis), exact=False)
                _check(ds.var(axis=axis), a.var(axis=axis), exact=False)
