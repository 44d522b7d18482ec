"""SparseDataset against its references, on files written here with anndata/h5py:
selections against scipy.sparse and anndata's backed reader (``sparse_dataset``),
reductions against numpy on the dense matrix, damaged groups against the typed
FormatError every reader of the package gives.

The dense reference is built with ``np.add.at`` in the data's own type, which is
what scipy's ``toarray()`` does (entries stored twice in a cell add up, small
integers wrap, bools or), for every type, float16 included (scipy has no float16
matrix). Float results are compared with a tolerance: the blocks accumulate in
float64, numpy pairwise in the result type."""

from __future__ import annotations

import contextlib
import warnings

import h5py
import numpy as np
import pytest

from support.common import import_h5turbo

h5turbo = import_h5turbo()
import anndata  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sparse_module = h5turbo.compute.sparse
OPS = ("sum", "mean", "var", "std", "min", "max", "count_nonzero")
AXES = (None, 0, 1, -1, -2)


def _anndata_reader(group):
    """anndata's backed sparse reader, wherever the installed version keeps it."""
    io = getattr(anndata, "io", None)
    reader = getattr(io, "sparse_dataset", None) or anndata.experimental.sparse_dataset
    return reader(group)


def _write(path, fmt, shape, data, indices, indptr, name="X", attrs=None):
    """A csr_matrix/csc_matrix group exactly as given (no canonicalisation by a writer)."""
    with h5py.File(path, "a") as f:
        group = f.create_group(name)
        group.attrs.update(attrs or {"encoding-type": f"{fmt}_matrix", "encoding-version": "0.1.0",
                                     "shape": np.array(shape)})
        group["data"], group["indices"], group["indptr"] = data, indices, indptr
    return path


def _dense(fmt, shape, data, indices, indptr):
    """The dense matrix scipy's toarray() makes of these arrays, in the data's type."""
    dense = np.zeros(shape, dtype=data.dtype.newbyteorder("="))
    ptr = np.asarray(indptr, dtype=np.int64)
    majors = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    minors = np.asarray(indices, dtype=np.int64)
    np.add.at(dense, (majors, minors) if fmt == "csr" else (minors, majors), data)
    return dense


def _arrays(rng, fmt, shape, dtype, duplicates=False, unsorted=False, specials=False):
    """data/indices/indptr of a random matrix with explicit zeros and an empty major;
    optionally a cell stored twice per major, indices reversed, NaN and infinities."""
    m = sp.random(*shape, density=0.4, format=fmt, random_state=rng, dtype=np.float64)
    data = np.round(m.data * 300 - 60)  # negatives and values past int8/uint8 once summed
    data[::5] = 0  # explicit zeros: stored, but zeros for every reduction
    if specials:
        data[1::7], data[2::9], data[3::11] = np.nan, np.inf, -np.inf
    majors = [list(zip(m.indices[a:b], data[a:b])) for a, b in zip(m.indptr[:-1], m.indptr[1:])]
    if len(majors) > 1:
        majors[1] = []  # an empty row (CSR) or column (CSC)
    for cells in majors:
        if duplicates and cells:
            cells.append((cells[0][0], cells[0][1] + 200))
        if unsorted:
            cells.reverse()
    indices = np.array([i for cells in majors for i, _ in cells], dtype=np.int32)
    values = np.array([v for cells in majors for _, v in cells], dtype=np.float64)
    indptr = np.cumsum([0] + [len(cells) for cells in majors])
    dtype = np.dtype(dtype)
    if dtype.kind == "u":  # not wrapped to ~2**64, whose squares numpy's float32 var overflows
        values = np.abs(values)
    if dtype.itemsize == 2 and dtype.kind == "f":  # numpy squares float16 deviations in float16: kept < 256
        values = values / 16
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return values.astype(dtype), indices, indptr


def _same(got, want, where):
    """Type, dtype, shape and values (floats within what the accumulation order allows)."""
    if np.ndim(want) == 0:
        assert type(got) is type(want), where
        if isinstance(want, int):
            assert got == want, where
            return
    else:
        assert isinstance(got, np.ndarray) and got.shape == want.shape, where
    assert got.dtype == want.dtype, where
    if want.dtype.kind in "fc":
        # by the width of the real part: float16 4e-3, float32/complex64 2e-5, else 1e-9
        tol = {16: 4e-3, 32: 2e-5}.get(np.finfo(want.dtype).bits, 1e-9)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


def _numpy(op, dense, **kw):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return getattr(np, op)(dense, **kw)
        except Exception as error:  # noqa: BLE001 - the reference's refusal is the expectation
            return error


def _takes_dtype(op, dtype):
    """sum takes any dtype=, mean float and complex ones, var/std float ones (numpy's
    integer means and variances accumulate in that integer type: refused here)."""
    kinds = {"sum": "biufc", "mean": "fc", "var": "f", "std": "f"}.get(op, "")
    return np.dtype(dtype).kind in kinds


def _compare_reductions(s, dense, threads=None, dtypes=(), axes=AXES):
    for axis in axes:
        for op in OPS:
            kws = [{}] + [{"dtype": d} for d in dtypes if _takes_dtype(op, d)]
            kws += [{"ddof": 1}] if op in ("var", "std") else []
            for kw in kws:
                where = f"{op}(axis={axis}, {kw}) of {dense.dtype} {dense.shape}"
                want = _numpy(op, dense, axis=axis, **kw)
                if isinstance(want, Exception):
                    with pytest.raises(type(want)):
                        getattr(s, op)(axis=axis, threads=threads, **kw)
                    continue
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = getattr(s, op)(axis=axis, threads=threads, **kw)
                _same(got, want, where)


# ---------------------------------------------------------------------- selections

INDICES = [3, -1, -7, np.int64(2), np.int8(-2), np.uint8(3), slice(None), slice(1, 5), slice(5, 1, -1),
           slice(None, None, -2), slice(-100, 100), slice(10, 20), slice(3, 3), slice(None, None, 3),
           [4, 0, 4, -1], np.array([4, 0, 4, -1]), [], np.array([], dtype=int), np.array([1, 2], dtype=np.uint64),
           np.array([True, False, True, False, True, False, True]), [True, False, True, False, True, False, True],
           range(2, 5), [np.int64(1)], ()]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A 7 x 7 matrix written by anndata as CSR and as CSC (both axes have 7 entries,
    so every index above applies to both)."""
    folder = tmp_path_factory.mktemp("sparse-hunt")
    m = sp.random(7, 7, density=0.5, format="csr", random_state=1)
    paths = {}
    for fmt in ("csr", "csc"):
        path = folder / f"{fmt}.h5ad"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            anndata.AnnData(X=m.asformat(fmt)).write_h5ad(path)
        paths[fmt] = path
    return m, paths


@contextlib.contextmanager
def _three_readers(small, fmt):
    """scipy's matrix, anndata's backed reader and h5turbo's SparseDataset of one file
    (and its path)."""
    m, paths = small
    with h5py.File(paths[fmt], "r") as g, h5turbo.File(paths[fmt]) as f:
        yield m.asformat(fmt), _anndata_reader(g["X"]), f["X"], paths[fmt]


def _index_keys(fmt, index):
    """The ways to write a selection of majors with the whole minor axis."""
    if fmt == "csr":
        return [index, (index, slice(None)), (index, Ellipsis), (index, slice(-50, 50))]
    return [(slice(None), index), (Ellipsis, index), (slice(0, None), index)]


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_selections_match_scipy_and_anndata(small, fmt):
    with _three_readers(small, fmt) as (ref, backed, s, _path):
        for index in INDICES:
            for key in _index_keys(fmt, index):
                want = ref[key]
                got = s[key]
                assert type(got) is type(want) and got.shape == want.shape and got.dtype == want.dtype, key
                assert (got != want).nnz == 0, key
                try:  # anndata's reader has bugs of its own (negative steps, slices past the end)
                    other = backed[key]
                except (IndexError, ValueError, AttributeError, TypeError):
                    continue
                assert type(got) is type(other) and (got != other).nnz == 0, key
        for whole in (Ellipsis, (), (Ellipsis, slice(None))):
            assert (s[whole] != ref[whole]).nnz == 0 and s[whole].shape == ref.shape


REFUSED = [7, -8, [7], [0, -8], None, 2.0, np.float64(1), [[1, 2], [3, 4]], np.array([[1, 2]]),
           np.array([True, False]), np.bool_(False), True, {1}, object(), (Ellipsis, Ellipsis)]


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_refused_selections_are_index_errors_naming_the_matrix(small, fmt):
    """Every index scipy.sparse and anndata refuse (booleans: anndata does) is an
    IndexError here too, naming the file and the group; so is a partial minor axis."""
    with _three_readers(small, fmt) as (ref, backed, s, path):
        for index in REFUSED:
            key = index if fmt == "csr" else (slice(None), index)
            # scipy reads Python's True as row 1, and under NumPy 1 np.bool_ as 0 or 1
            # (with a DeprecationWarning): anndata refuses both, as h5turbo does
            if not isinstance(index, (bool, np.bool_)):
                with pytest.raises((IndexError, ValueError, TypeError)):
                    ref[key]
            with pytest.raises((IndexError, ValueError, TypeError, AttributeError)):
                backed[key]
            with pytest.raises(IndexError, match=f"{path.name}: /X: "):
                s[key]
        with pytest.raises(IndexError, match="/X: a .* indexed by"):
            s[1:3, 1:3]
        with pytest.raises(IndexError, match="too many indices"):
            s[1, :, 1]


# ---------------------------------------------------------------------- reductions

DTYPES = ["int8", "uint8", "int16", "uint64", "float16", "float32", "float64", "bool", "complex128", ">f8", ">i4"]


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_match_numpy_on_the_dense_matrix(tmp_path, monkeypatch, fmt, dtype):
    """Duplicates (summed in the data's type first), unsorted indices, explicit zeros,
    NaN/inf, an empty major; several blocks; 1, 2 and 8 threads; int32 and int64 indptr."""
    rng = np.random.default_rng(abs(hash((fmt, dtype))) % 2**32)
    monkeypatch.setattr(sparse_module, "_BLOCK_NNZ", 8)  # blocks of several majors, several blocks
    cases = [{}, {"duplicates": True}, {"duplicates": True, "unsorted": True}]
    if np.dtype(dtype).kind in "fc":
        cases.append({"specials": True})
    for n, flags in enumerate(cases):
        data, indices, indptr = _arrays(rng, fmt, (9, 6), np.dtype(dtype), **flags)
        path = _write(tmp_path / f"{n}.h5", fmt, (9, 6), data, indices,
                      indptr.astype(np.int64 if n % 2 else np.int32))
        with h5turbo.File(path) as f:
            # dtype= and negative axes once per type: the other cases vary the storage
            _compare_reductions(f["X"], _dense(fmt, (9, 6), data, indices, indptr), threads=(1, 2, 8)[n % 3],
                                dtypes=(np.float32, np.int8, bool) if n == 0 else (),
                                axes=AXES if n == 0 else (None, 0, 1))


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_axis_tuples_as_numpy(tmp_path, fmt):
    """numpy's tuples of axes: both (any order, negative) is None, one is that axis, a
    repeated one is numpy's ValueError; an axis past 2 is numpy's AxisError."""
    data, indices, indptr = _arrays(np.random.default_rng(9), fmt, (7, 4), np.dtype(np.int16), duplicates=True)
    path = _write(tmp_path / "t.h5", fmt, (7, 4), data, indices, indptr)
    with h5turbo.File(path) as f:
        _compare_reductions(f["X"], _dense(fmt, (7, 4), data, indices, indptr),
                            axes=((0, 1), (-1, -2), (0,), (-1,), (1, 1), (0, 2), 2))


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0), (4, 3)])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_empty_matrices_and_no_stored_values(tmp_path, fmt, shape):
    """numpy's answers (NaN means, empty results) and numpy's refusals (min/max of
    nothing) on matrices with no rows, no columns, or nothing stored."""
    n_major = shape[0] if fmt == "csr" else shape[1]
    data, indices, indptr = np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(n_major + 1, np.int64)
    path = _write(tmp_path / "empty.h5", fmt, shape, data, indices, indptr)
    with h5turbo.File(path) as f:
        s = f["X"]
        assert s.to_scipy().shape == shape and s.nnz == 0
        _compare_reductions(s, np.zeros(shape, np.float32))


def test_complex_means_variances_and_extremes(tmp_path):
    """numpy: a complex mean is complex, a complex variance real (|x - mean|^2), and
    min/max order by real then imaginary part."""
    rng = np.random.default_rng(7)
    for dtype in (np.complex64, np.complex128):
        m = sp.random(8, 6, density=0.5, format="csr", random_state=rng)
        data = (m.data + 1j * rng.normal(size=m.nnz)).astype(dtype)
        path = _write(tmp_path / f"{np.dtype(dtype)}.h5", "csr", m.shape, data, m.indices, m.indptr)
        with h5turbo.File(path) as f:
            _compare_reductions(f["X"], _dense("csr", m.shape, data, m.indices, m.indptr))


def test_float32_sums_along_an_axis_stay_as_close_as_numpy(tmp_path):
    """200 000 float32 values in one column: added one at a time in float32 they drift
    by ~1e-5 relative; numpy's pairwise sum stays near 1e-7."""
    rng = np.random.default_rng(11)
    n = 200_000
    data = (rng.random(n) * 1000 + 0.1).astype(np.float32)
    path = _write(tmp_path / "long.h5", "csc", (n, 1), data, np.arange(n, dtype=np.int32), np.array([0, n]))
    with h5turbo.File(path) as f:
        s = f["X"]
        for axis in (0, 1, None):
            want = np.sum(data[:, None], axis=axis)
            got = s.sum(axis=axis)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_float16_matrix_reduces_and_to_scipy_refuses_as_scipy(tmp_path):
    """scipy.sparse has no float16 matrix (anndata cannot read one either): to_scipy
    raises scipy's ValueError, naming the group; the reductions follow numpy."""
    m = sp.random(6, 5, density=0.5, format="csr", random_state=3)
    data = (m.data * 10).astype(np.float16)
    path = _write(tmp_path / "half.h5", "csr", m.shape, data, m.indices, m.indptr)
    with h5py.File(path, "r") as g:
        with pytest.raises(ValueError):
            _anndata_reader(g["X"]).to_memory()
    with h5turbo.File(path) as f:
        with pytest.raises(ValueError, match="half.h5: /X: .*float16"):
            f["X"].to_scipy()
        _compare_reductions(f["X"], _dense("csr", m.shape, data, m.indices, m.indptr))


def test_moments_of_a_matrix_wider_than_int64_counts(tmp_path):
    """6 x 2**62 cells (scipy takes the shape): the cell count is past int64, the
    mean and variance are still the formula's on the stored values."""
    m = sp.random(6, 5, density=0.5, format="csr", random_state=4)
    shape = (6, 2 ** 62)
    path = _write(tmp_path / "wide.h5", "csr", shape, m.data, m.indices, m.indptr)
    with h5turbo.File(path) as f:
        s = f["X"]
        cells = float(shape[0]) * shape[1]
        mean = m.data.sum() / cells
        np.testing.assert_allclose(s.mean(), mean, rtol=1e-12)
        np.testing.assert_allclose(s.var(), (m.data ** 2).sum() / cells - mean ** 2, rtol=1e-9)


# ---------------------------------------------------------------------- metadata, encodings


def test_metadata_and_to_scipy_match_anndata(tmp_path):
    m = sp.random(30, 20, density=0.2, format="csc", random_state=5, dtype=np.float32)
    path = tmp_path / "a.h5ad"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        anndata.AnnData(X=m).write_h5ad(path)
        want = anndata.read_h5ad(path).X
    with h5py.File(path, "r") as g, h5turbo.File(path) as f:
        backed, s = _anndata_reader(g["X"]), f["X"]
        assert (s.shape, s.dtype, s.format) == (backed.shape, backed.dtype, backed.format)
        assert s.nnz == g["X"]["data"].shape[0] and s.ndim == 2
        assert sorted(s.keys()) == sorted(g["X"].keys())
        assert {k: np.asarray(v).tolist() for k, v in s.attrs.items()} == \
            {k: np.asarray(v).tolist() for k, v in g["X"].attrs.items()}
        got = s.to_scipy()
        assert type(got) is type(want) and got.dtype == want.dtype and (got != want).nnz == 0
        assert "csc (30, 20), float32" in repr(s)


def test_old_h5sparse_and_10x_groups(tmp_path):
    """anndata < 0.7's h5sparse_format groups (anndata still reads them) and 10x
    matrix groups (a CSC of features x barcodes with a shape dataset)."""
    m = sp.random(12, 9, density=0.3, format="csr", random_state=6, dtype=np.float32)
    path = _write(tmp_path / "old.h5", "csr", m.shape, m.data, m.indices, m.indptr,
                  attrs={"h5sparse_format": "csr", "h5sparse_shape": np.array(m.shape)})
    c = m.tocsc().astype(np.int32)
    with h5py.File(path, "a") as f:
        group = f.create_group("matrix")
        group["data"], group["indices"], group["indptr"] = c.data, c.indices, c.indptr
        group["shape"], group["barcodes"] = np.array(c.shape, dtype=np.int32), np.array([b"b"] * c.shape[1])
    with h5py.File(path, "r") as g, h5turbo.File(path) as f:
        want = _anndata_reader(g["X"]).to_memory()
        got = f["X"].to_scipy()
        assert type(got) is type(want) and got.dtype == want.dtype and (got != want).nnz == 0
        tenx = f["matrix"]
        assert (tenx.format, tenx.shape) == ("csc", c.shape)
        assert type(tenx.to_scipy()) is sp.csc_matrix and (tenx.to_scipy() != c).nnz == 0
        assert (tenx[:, [8, 0, 0]] != c[:, [8, 0, 0]]).nnz == 0
        _compare_reductions(tenx, c.toarray())


def test_members_by_name_and_by_reference_as_h5py(tmp_path):
    """Still a group: names and object references open members, as h5py's group does."""
    m = sp.random(6, 5, density=0.5, format="csr", random_state=2)
    path = _write(tmp_path / "r.h5", "csr", m.shape, m.data, m.indices, m.indptr)
    with h5py.File(path, "a") as g:
        g["ref"] = g["X/indices"].ref
        want = g["X"][g["ref"][()]].name
    with h5turbo.File(path) as f:
        s = f["X"]
        assert s[f["ref"][()]].name == want and s["indptr"].name == "/X/indptr"
        assert "data" in s and sorted(s) == ["data", "indices", "indptr"]


# ---------------------------------------------------------------------- damaged groups


def _damage(name):
    m = sp.random(6, 5, density=0.5, format="csr", random_state=2)
    d, i, p = m.data, m.indices, m.indptr
    shape = np.array(m.shape)
    return {
        "indptr decreasing": (d, i, np.r_[p[:3], p[2] - 1, p[4:]], shape),
        "indptr short": (d, i, p[:-2], shape),
        "indptr past nnz": (d, i, np.r_[p[:-1], 10 ** 6], shape),
        "indptr 2-D": (d, i, p[None], shape),
        "indices out of range": (d, np.r_[i[:-1], 99].astype(np.int32), p, shape),
        "negative index": (d, np.r_[-1, i[1:]].astype(np.int32), p, shape),
        "indices short": (d, i[:-3], p, shape),
        "data long": (np.r_[d, 1.0, 2.0], i, p, shape),
        "data scalar": (np.float64(1), i, p, shape),
        "data strings": (np.array([b"a"] * len(d)), i, p, shape),
        "shape of floats": (d, i, p, np.array([6.0, 5.0])),
        "negative shape": (d, i, p, np.array([-6, 5])),
        "shape past int64": (d, i, p, np.array([6, 2 ** 64 - 1], dtype=np.uint64)),
        "data a group": (None, i, p, shape),
    }[name]


@pytest.mark.parametrize("case", ["indptr decreasing", "indptr short", "indptr past nnz", "indptr 2-D",
                                  "indices out of range", "negative index", "indices short", "data long",
                                  "data scalar", "data strings", "shape of floats", "negative shape",
                                  "shape past int64", "data a group"])
def test_damaged_groups_raise_format_errors_naming_file_and_group(tmp_path, case):
    data, indices, indptr, shape = _damage(case)
    path = tmp_path / "damaged.h5"
    with h5py.File(path, "w") as f:
        group = f.create_group("X")
        group.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": shape})
        group["indices"], group["indptr"] = indices, indptr
        if data is None:
            group.create_group("data")
        else:
            group["data"] = data
    message = "damaged.h5: /X: "
    with h5turbo.File(path) as f:
        try:
            s = h5turbo.SparseDataset(f["X"])
        except h5turbo.FormatError as error:  # broken encoding: told at once, and f["X"] is a plain Group
            assert message in str(error)
            assert type(f["X"]) is not h5turbo.SparseDataset
            return
        for read in (s.to_scipy, lambda: s[[5, 0]], lambda: s[:], lambda: s.sum(axis=0), lambda: s.max(axis=1),
                     lambda: s.var(), lambda: s.count_nonzero(axis=0)):
            with pytest.raises(h5turbo.FormatError, match=message):
                read()


def test_closed_file(tmp_path):
    m = sp.random(6, 5, density=0.5, format="csr", random_state=2)
    path = _write(tmp_path / "c.h5", "csr", m.shape, m.data, m.indices, m.indptr)
    f = h5turbo.File(path)
    s = f["X"]
    s.indptr()  # read and kept: still no reads once the file is closed
    f.close()
    assert repr(s) == "<Closed SparseDataset>"
    for use in (lambda: s.ndim, lambda: s.nnz, lambda: s.dtype, s.to_scipy, s.indptr, lambda: s[1],
                lambda: s[[1, 2]], s.sum, lambda: s.max(axis=0), s.var, s.count_nonzero, lambda: list(s.keys())):
        with pytest.raises(h5turbo.ClosedError) as caught:
            use()
        assert not isinstance(caught.value, KeyError)  # a property is not a failed lookup
