"""Dataset.to_dask / sparse group to_dask against dask.array.from_array over h5py and
against anndata: every chunks= form dask takes, every dtype, empty and scalar datasets,
a file changed under the array, empty sparse matrices, the process scheduler."""

from __future__ import annotations

import os
import warnings

import h5py
import numpy as np
import pytest

import h5turbo

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
sp = pytest.importorskip("scipy.sparse")

CHUNKS = {"grid": (64, 50), "cube": (7, 11, 13)}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask_hunt") / "types.h5"
    rng = np.random.default_rng(5)
    compound = np.zeros(20, [("a", "<i4"), ("b", ">f8"), ("s", "S4")])
    compound["a"], compound["b"], compound["s"] = np.arange(20), np.linspace(0, 1, 20), b"hi"
    with h5py.File(path, "w") as f:
        f.create_dataset("grid", data=rng.random((1000, 300)).astype("f4"), chunks=CHUNKS["grid"])
        f.create_dataset("cube", data=rng.random((20, 30, 40)), chunks=CHUNKS["cube"],
                         compression="gzip")
        f.create_dataset("flat", data=np.arange(5000, dtype="i8").reshape(100, 50))
        f.create_dataset("scalar", data=3.5)
        f.create_dataset("empty_flat", shape=(0, 5), dtype="f8")
        f.create_dataset("empty_chunked", shape=(0, 5), dtype="f8", chunks=(4, 5),
                         maxshape=(None, 5))
        f.create_dataset("vstr", data=np.array(["a", "ßé", "xyz"] * 10, dtype=object),
                         dtype=h5py.string_dtype(), chunks=(7,))
        f.create_dataset("vlen", data=np.array([np.arange(i, dtype="i4") for i in range(6)],
                                               dtype=object),
                         dtype=h5py.vlen_dtype("i4"), chunks=(2,))
        f.create_dataset("fstr", data=np.array([b"ab", b"cde"] * 5, dtype="S3"), chunks=(3,))
        f.create_dataset("compound", data=compound, chunks=(6,))
        f.create_dataset("enum", data=np.array([0, 1, 2, 1] * 5, dtype="u1"),
                         dtype=h5py.enum_dtype({"R": 0, "G": 1, "B": 2}, basetype="u1"),
                         chunks=(3,))
        f.create_dataset("big_endian", data=np.arange(100, dtype=">i4").reshape(10, 10),
                         chunks=(3, 4))
    return path


def _h5py(path, name):
    with h5py.File(path, "r") as f:
        return f[name][()]


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    if want.dtype.hasobject:
        assert all(np.array_equal(a, b) for a, b in zip(got.ravel(), want.ravel()))
    else:
        assert np.array_equal(got, want)


def _aligned_to(blocks, chunks):
    """Every block but the last of each axis a whole number of HDF5 chunks."""
    return all(b % c == 0 for axis, c in zip(blocks, chunks) for b in axis[:-1])


# chunks= as dask takes them, for the 2-D chunked "grid"; each must give h5py's values
# and whole-chunk blocks, the explicit block tuples exactly as given.
REQUESTS = [None, "auto", "64KiB", 100, 100.0, -1, (100, -1), (100, None), (100, "auto"),
            ("auto", -1), {0: 100}, {1: 70, 0: -1}, {}, [100, 60],
            ((500, 500), (300,)), ((1000,), (100, 200))]


@pytest.mark.parametrize("request_", REQUESTS, ids=repr)
def test_every_chunks_form_dask_takes(sample, request_):
    want = _h5py(sample, "grid")
    reference = da.from_array(want, chunks="auto" if request_ is None else request_)
    with h5turbo.File(sample) as f:
        arr = f["grid"].to_dask(request_)
        _same(arr.compute(scheduler="sync"), want)
    assert arr.shape == reference.shape and arr.dtype == reference.dtype
    explicit = isinstance(request_, tuple) and isinstance(request_[0], tuple)
    if explicit:
        assert arr.chunks == reference.chunks
    else:
        assert _aligned_to(arr.chunks, CHUNKS["grid"])
        # never smaller blocks than asked for
        assert all(max(a) >= min(max(r), c) for a, r, c in
                   zip(arr.chunks, reference.chunks, CHUNKS["grid"]))


def test_dict_names_axes_not_positions(sample):
    """{1: 70}: axis 1 in blocks of 70 (rounded to 100), axis 0 whole, as dask reads it."""
    with h5turbo.File(sample) as f:
        arr = f["cube"].to_dask({1: 12})
    reference = da.from_array(_h5py(sample, "cube"), chunks={1: 12})
    assert arr.chunks[0] == reference.chunks[0] and arr.chunks[2] == reference.chunks[2]
    assert _aligned_to(arr.chunks, CHUNKS["cube"]) and arr.chunks[1] == (22, 8)


@pytest.mark.parametrize("request_", [None, "auto", "1MiB", 1, -1])
def test_empty_chunked_dataset(sample, request_):
    want = _h5py(sample, "empty_chunked")
    with h5turbo.File(sample) as f:
        _same(f["empty_chunked"].to_dask(request_).compute(), want)


@pytest.mark.parametrize("name", ["vstr", "vlen"])
@pytest.mark.parametrize("request_", ["auto", "64KiB"])
def test_auto_blocks_of_variable_length_data(sample, name, request_):
    """dask cannot size objects; chunked ones are sized as pointers, as contiguous ones are."""
    with h5turbo.File(sample) as f:
        arr = f[name].to_dask(request_)
        _same(arr.compute(), _h5py(sample, name))
        assert _aligned_to(arr.chunks, f[name].chunks)


NAMES = ["grid", "cube", "flat", "scalar", "empty_flat", "vstr", "vlen", "fstr", "compound",
         "enum", "big_endian"]


@pytest.mark.parametrize("name", NAMES)
def test_values_and_dtypes_as_h5py(sample, name):
    want = _h5py(sample, name)
    with h5turbo.File(sample) as f:
        arr = f[name].to_dask()
        _same(arr.compute(scheduler="threads"), want)
        assert arr.dtype == want.dtype
        if want.ndim:
            sel = (slice(None, None, -3),) + (slice(1, None, 2),) * (want.ndim - 1)
            _same(arr[sel].compute(), want[sel])


@pytest.mark.parametrize("value, works", [(" 2", True), ("0", True), ("abc", False), ("-1", False)])
def test_threads_per_task_from_the_environment(sample, monkeypatch, value, works):
    # 'abc' and '-1' were taken as all cores, ' 2' too
    want = _h5py(sample, "grid")
    monkeypatch.setenv("H5TURBO_DASK_THREADS", value)
    with h5turbo.File(sample) as f:
        arr = f["grid"].to_dask()
        if works:
            _same(arr.compute(scheduler="sync"), want)
        else:
            with pytest.raises(ValueError, match="H5TURBO_DASK_THREADS"):
                arr.compute(scheduler="sync")


def test_reductions_and_slices(sample):
    want = _h5py(sample, "grid")
    with h5turbo.File(sample) as f:
        arr = f["grid"].to_dask()
        for sel in (np.s_[5], np.s_[-1, -1], np.s_[[3, 1, 900], ::7], np.s_[999:0:-3, ::-5]):
            _same(arr[sel].compute(), want[sel])
        for reduce in ("sum", "max", "argmin"):
            for axis in (None, 0, 1):
                got = getattr(arr, reduce)(axis=axis).compute()
                np.testing.assert_allclose(got, getattr(want, reduce)(axis=axis), rtol=1e-5)


def _grid_file(path, value, shape=(100, 10), dtype="f8"):
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.full(shape, value, dtype), chunks=(10, 10))


@pytest.mark.parametrize("shape, dtype", [((50, 10), "f8"), ((100, 10), "i2")])
def test_file_replaced_with_other_shape_or_dtype_is_an_error(tmp_path, shape, dtype):
    """A block of another shape or dtype than the array's would be wrong data."""
    path = tmp_path / "x.h5"
    _grid_file(path, 1)
    with h5turbo.File(path) as f:
        arr = f["x"].to_dask()
    _same(arr.compute(), _h5py(path, "x"))
    _grid_file(tmp_path / "new.h5", 3, shape, dtype)
    os.replace(tmp_path / "new.h5", path)
    with pytest.raises(h5turbo.Error, match="changed after to_dask"):
        arr.compute(scheduler="sync")


def test_dataset_replaced_by_group_is_an_error(tmp_path):
    path = tmp_path / "x.h5"
    _grid_file(path, 1)
    with h5turbo.File(path) as f:
        arr = f["x"].to_dask()
    with h5py.File(path, "w") as f:
        f.create_group("x")
    with pytest.raises(h5turbo.Error, match="/x is no longer a dataset"):
        arr.compute(scheduler="sync")


def _h5ad(path, matrix):
    anndata = pytest.importorskip("anndata")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        anndata.AnnData(X=matrix).write_h5ad(path)
        return anndata.read_h5ad(path).X


SPARSE = {"csr": lambda: sp.random(300, 40, density=0.1, format="csr", dtype="f4", random_state=1),
          "csc": lambda: sp.random(50, 120, density=0.2, format="csc", dtype="f8", random_state=2),
          "csr_no_rows": lambda: sp.csr_matrix((0, 7), dtype="f4"),
          "csc_no_columns": lambda: sp.csc_matrix((4, 0), dtype="i8"),
          "csr_no_values": lambda: sp.csr_matrix((5, 7), dtype="i4")}


@pytest.mark.parametrize("kind", SPARSE)
@pytest.mark.parametrize("chunks", [None, 1, 7])
def test_sparse_groups_as_anndata_reads_them(tmp_path, kind, chunks):
    path = tmp_path / f"{kind}.h5ad"
    want = _h5ad(path, SPARSE[kind]())
    with h5turbo.File(path) as f:
        arr = f["X"].to_dask(chunks)
    got = arr.compute(scheduler="threads")
    assert type(got) is type(want) and got.dtype == want.dtype and arr.shape == want.shape
    assert np.array_equal(got.toarray(), want.toarray())


def test_sparse_group_replaced_is_an_error(tmp_path):
    path = tmp_path / "x.h5ad"
    _h5ad(path, SPARSE["csr"]())
    with h5turbo.File(path) as f:
        arr = f["X"].to_dask()
    _h5ad(path, sp.random(300, 41, density=0.1, format="csr", dtype="f4", random_state=1))
    with pytest.raises(h5turbo.Error, match="changed after to_dask"):
        arr.compute(scheduler="sync")


def test_process_scheduler(sample):
    """Tasks pickle as (path, name, block) and read in other processes."""
    names = ["grid", "vstr", "compound", "big_endian"]
    with h5turbo.File(sample) as f:
        arrays = [f[name].to_dask("1MiB") for name in names]
    with dask.config.set(scheduler="processes", num_workers=2):
        results = dask.compute(*arrays)
    for name, got in zip(names, results):
        _same(got, _h5py(sample, name))
