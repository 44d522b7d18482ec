"""Differences from anndata / scanpy / numpy found by a differential hunt over files
written here: broken elements that anndata's own constructor rejects with an
AttributeError, broken anndata < 0.7 files, a min/max of a sparse matrix with an
empty axis, and a 10x filtered_barcodes that is not a dataset. Broken files must
raise h5turbo.FormatError naming the file and the element (docs/formats.md), never a
bare Python error."""

from __future__ import annotations


import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from support.common import import_h5turbo

h5turbo = import_h5turbo()
import anndata  # noqa: E402


# anndata's and scipy's warnings about the files written here are not under test
pytestmark = pytest.mark.filterwarnings("ignore")


def _encode(ds, encoding: str, version: str = "0.2.0"):
    ds.attrs.update({"encoding-type": encoding, "encoding-version": version})
    return ds


@pytest.fixture(scope="module")
def h5ad_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("diff") / "base.h5ad"
    anndata.AnnData(np.ones((4, 3), np.float32)).write_h5ad(path)
    return path


NOT_ARRAYS = {
    "obsm-scalar": lambda f: _encode(f["obsm"].create_dataset("z", data=3), "numeric-scalar"),
    "obsm-string": lambda f: _encode(f["obsm"].create_dataset("z", data="x", dtype=h5py.string_dtype()), "string"),
    "obsm-null": lambda f: _encode(f["obsm"].create_dataset("z", data=0), "null", "0.1.0"),
    "obsm-dict": lambda f: _encode(f["obsm"].create_group("z"), "dict", "0.1.0"),
    "layers-scalar": lambda f: _encode(f["layers"].create_dataset("z", data=3), "numeric-scalar"),
    "varm-string": lambda f: _encode(f["varm"].create_dataset("z", data="x", dtype=h5py.string_dtype()), "string"),
}


@pytest.mark.parametrize("edit", NOT_ARRAYS)
def test_an_axis_member_that_is_no_array_is_a_format_error(h5ad_path, tmp_path, edit):
    """anndata.AnnData raises AttributeError ('int' object has no attribute 'shape');
    read_h5ad let it through bare."""
    path = tmp_path / "broken.h5ad"
    path.write_bytes(h5ad_path.read_bytes())
    with h5py.File(path, "a") as f:
        NOT_ARRAYS[edit](f)
    with pytest.raises(h5turbo.FormatError, match=f"{path}: /: the elements do not make an AnnData"):
        h5turbo.read_h5ad(path)


def _legacy_file(path, obs=None, categories=np.array([b"a", b"b"]), raw_rows: int = 6):
    """An anndata < 0.7 file: compound obs/var, categories of obs columns in uns, raw.X."""
    n, m = 6, 3
    with h5py.File(path, "w") as f:
        f["X"] = np.arange(n * m, dtype=np.float32).reshape(n, m)
        if obs is None:
            obs = np.array([(f"c{i}".encode(), i % 2) for i in range(n)], dtype=[("index", "S4"), ("louvain", "i1")])
        f["obs"] = obs
        f["var"] = np.array([(f"g{i}".encode(), i) for i in range(m)], dtype=[("index", "S4"), ("n", "i4")])
        f.create_group("uns")
        f["uns/louvain_categories"] = categories
        f["raw.X"] = np.zeros((raw_rows, m + 1))
    return path


def test_legacy_file_reads_as_anndata(tmp_path):
    path = _legacy_file(tmp_path / "old.h5ad")
    got, want = h5turbo.read_h5ad(path), anndata.read_h5ad(path)
    assert list(got.obs["louvain"]) == list(want.obs["louvain"]) == ["a", "b"] * 3
    assert got.raw.shape == want.raw.shape == (6, 4)


@pytest.mark.parametrize("kind, kwargs, names", [
    ("negative code", dict(obs=np.array([(f"c{i}".encode(), -2) for i in range(6)],
                                       dtype=[("index", "S4"), ("louvain", "i1")])), ("/uns", "categories")),
    ("duplicate categories", dict(categories=np.array([b"a", b"a"])), ("/uns", "categories")),
    ("2-D categories", dict(categories=np.zeros((2, 2))), ("/uns", "categories")),
    ("scalar categories", dict(categories=3), ("/uns", "categories")),
    ("2-D obs", dict(obs=np.array([(f"c{i}".encode(), 0) for i in range(6)],
                                  dtype=[("index", "S4"), ("louvain", "i1")]).reshape(2, 3)), ("/obs", "1-D")),
    ("raw.X rows", dict(raw_rows=5), ("/raw.X",)),
])
def test_broken_legacy_file_is_a_format_error(tmp_path, kind, kwargs, names):
    """anndata < 0.7 layouts: anndata's _clean_uns, pandas and the raw obs_names
    assignment raised bare ValueError/TypeError."""
    path = _legacy_file(tmp_path / "old.h5ad", **kwargs)
    with pytest.raises(h5turbo.FormatError) as info:
        h5turbo.read_h5ad(path)
    message = str(info.value)
    assert str(path) in message
    for name in names:
        assert name in message, message


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("shape", [(0, 4), (4, 0)])
@pytest.mark.parametrize("name", ["min", "max"])
def test_sparse_min_max_along_an_axis_of_an_empty_matrix(tmp_path, fmt, shape, name):
    """As numpy: reducing along the non-empty axis gives an empty array; only reducing
    over an empty axis (or all of an empty matrix) is an error."""
    path = tmp_path / "empty.h5ad"
    anndata.AnnData(getattr(sp, f"{fmt}_matrix")(shape, dtype=np.float32)).write_h5ad(path)
    dense = np.zeros(shape, np.float32)
    with h5turbo.File(path) as f:
        x = f["X"]
        for axis in (None, 0, 1, -1):
            try:
                want = getattr(dense, name)(axis=axis)
            except ValueError:
                with pytest.raises(ValueError, match="zero-size array"):
                    getattr(x, name)(axis=axis)
                continue
            got = getattr(x, name)(axis=axis)
            assert got.dtype == want.dtype and got.shape == want.shape, (axis, got, want)


def _10x_file(path, m):
    with h5py.File(path, "w") as f:
        g = f.create_group("matrix")
        g["data"], g["indices"], g["indptr"], g["shape"] = m.data, m.indices, m.indptr, np.array([5, 3])
        g["barcodes"] = np.array([b"b1", b"b2", b"b3"])
        features = g.create_group("features")
        features["id"] = np.array([b"i%d" % i for i in range(5)])
        features["name"] = np.array([b"n%d" % i for i in range(5)])
        features["feature_type"] = np.array([b"Gene Expression"] * 5)
        features["genome"] = np.array([b"g"] * 5)


def test_10x_filtered_barcodes_that_is_not_a_dataset(tmp_path):
    path = tmp_path / "filtered.h5"
    _10x_file(path, sp.random(5, 3, density=0.5, format="csc", random_state=0, dtype=np.float32))
    assert h5turbo.read_10x_h5(path).shape == (3, 5)
    with h5py.File(path, "a") as f:
        f.create_group("matrix/filtered_barcodes")
    with pytest.raises(h5turbo.FormatError, match=f"{path}: /matrix: .*'filtered_barcodes'"):
        h5turbo.read_10x_h5(path)


def _fixed_length_string_attr(obj, name: str, value) -> None:
    """Rewrite a string attribute as fixed-length strings (as Julia's HDF5.jl and R's
    writers store them; h5py reads them as bytes)."""
    del obj.attrs[name]
    if isinstance(value, str):
        obj.attrs.create(name, np.bytes_(value.encode()))
    else:
        encoded = [v.encode() for v in value]
        obj.attrs.create(name, np.array(encoded, dtype=f"S{max(map(len, encoded))}"))


def test_fixed_length_string_attributes_read_as_anndata_reads_them(tmp_path):
    """anndata decodes fixed-length string attributes (_read_attr); read_h5ad kept the
    column names of a fixed-length 'column-order' as bytes (b'cell_type')."""
    import pandas as pd

    path = tmp_path / "fixed_attrs.h5ad"
    obs = pd.DataFrame({"cell_type": pd.Categorical(list("abcab")), "n_genes": np.arange(5), "ü": list("pqrst")},
                       index=pd.Index([f"c{i}" for i in range(5)], name="barcode"))
    anndata.AnnData(sp.csr_matrix(np.eye(5, 3, dtype=np.float32)), obs=obs).write_h5ad(path)
    with h5py.File(path, "a") as f:
        for obj in (f["obs"], f["var"], f["X"], f["obs/cell_type"]):
            for name in ("encoding-type", "encoding-version", "_index"):
                if name in obj.attrs:
                    _fixed_length_string_attr(obj, name, obj.attrs[name])
        _fixed_length_string_attr(f["obs"], "column-order", list(f["obs"].attrs["column-order"]))
        assert f["obs"].attrs["column-order"].dtype.kind == "S"
    got, want = h5turbo.read_h5ad(path), anndata.read_h5ad(path)
    assert list(want.obs.columns) == ["cell_type", "n_genes", "ü"]
    pd.testing.assert_frame_equal(got.obs, want.obs, check_exact=True)
    assert got.obs.index.name == "barcode"


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_index_by_two_arrays_is_an_index_error(tmp_path, fmt):
    """sp[rows, cols] with arrays on both axes: the documented IndexError, not numpy's
    'truth value of an array is ambiguous' ValueError from comparing an array with ':'."""
    path = tmp_path / "m.h5ad"
    matrix = sp.random(6, 5, density=0.5, format=fmt, random_state=0, dtype=np.float32)
    anndata.AnnData(matrix).write_h5ad(path)
    with h5turbo.File(path) as f:
        x = f["X"]
        with pytest.raises(IndexError, match="SparseDataset is indexed by"):
            x[np.array([0, 1]), np.array([0, 1])]
        whole = x[[0, 1], 0:] if fmt == "csr" else x[0:, [0, 1]]  # a slice over the whole axis is ':'
        want = matrix[[0, 1]] if fmt == "csr" else matrix[:, [0, 1]]
        assert (whole != want).nnz == 0


@pytest.mark.parametrize("threads", [0, -1, 2.5, True])
def test_a_bad_threads_argument_is_a_value_error_not_a_broken_file(h5ad_path, tmp_path, threads):
    """read_h5ad(threads=0) said '<file>: /X: is not a valid array: threads must be ...'
    (a FormatError blaming the file); read_10x_h5 and read_loom raise ValueError."""
    sparse_path = tmp_path / "sparse.h5ad"
    anndata.AnnData(sp.csr_matrix(np.eye(3, dtype=np.float32))).write_h5ad(sparse_path)
    for path in (h5ad_path, sparse_path):
        with pytest.raises(ValueError, match="threads must be None or a positive integer") as info:
            h5turbo.read_h5ad(path, threads=threads)
        assert not isinstance(info.value, h5turbo.FormatError)


@pytest.mark.parametrize("dtype", ["i1", "i2"])
def test_count_alleles_with_max_allele_past_the_stored_type(tmp_path, dtype):
    """count_alleles(max_allele=300) on int8 genotypes: the alleles were
    np.arange(301, dtype=int8), which wraps (255 -> -1, 256 -> 0), so missing calls
    and reference alleles were counted again in the high columns. As scikit-allel: the
    columns past the largest allele stored are zeros."""
    from h5turbo.formats import GenotypeArray

    gt = np.array([[[0, 1], [-1, 2]], [[1, 1], [0, -1]], [[-1, -1], [2, 2]]], dtype=dtype)
    path = tmp_path / "gt.h5"
    with h5py.File(path, "w") as f:
        f["calldata/GT"] = gt
    max_allele = int(np.iinfo(dtype).max) + 200
    want = np.zeros((3, max_allele + 1), np.int32)
    for allele in range(3):
        want[:, allele] = (gt == allele).sum(axis=(1, 2))
    with h5turbo.File(path) as f:
        got = GenotypeArray(f["calldata/GT"], threads=2).count_alleles(max_allele=max_allele)
    assert got.dtype == np.int32 and got.shape == want.shape
    assert np.array_equal(got, want)


def _sparse_file(path, fmt, data, indices, indptr, shape):
    cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    arrays = (np.asarray(data, np.float64), np.asarray(indices, np.int32), np.asarray(indptr, np.int32))
    matrix = cls(arrays, shape=shape)
    anndata.AnnData(matrix).write_h5ad(path)
    return matrix


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_reductions_sum_entries_stored_twice_in_a_cell(tmp_path, fmt):
    """A non-canonical matrix (scipy and anndata keep it as written): cell (0, 0) stored
    as 2 and 3 is 5 in the dense matrix, (1, 1) stored as 1 and -1 is 0. max gave 3
    (not 5), min -1, count_nonzero 4 (not 1), var from the separate entries."""
    path = tmp_path / "dups.h5ad"
    shape = (2, 3) if fmt == "csr" else (3, 2)
    matrix = _sparse_file(path, fmt, [2.0, 3.0, 1.0, -1.0], [0, 0, 1, 1], [0, 2, 4], shape)
    assert not matrix.has_canonical_format
    dense = matrix.toarray()
    with h5turbo.File(path) as f:
        x = f["X"]
        for axis in (None, 0, 1):
            for name in ("sum", "mean", "var", "std", "min", "max"):
                np.testing.assert_allclose(getattr(x, name)(axis=axis), getattr(dense, name)(axis=axis),
                                           err_msg=f"{name} axis={axis}")
            np.testing.assert_array_equal(x.count_nonzero(axis=axis), np.count_nonzero(dense, axis=axis))


@pytest.mark.parametrize("index, message", [(-1, "indices range from -1"), (3, "outside 0..2")])
def test_sparse_reductions_check_the_indices(tmp_path, index, message):
    """A negative minor index wrapped to the last column in sum/mean/count_nonzero
    (a silent wrong result); one past the end was numpy's bare IndexError. to_scipy and
    selections already raised FormatError."""
    path = tmp_path / "bad.h5ad"
    _sparse_file(path, "csr", [1.0, 2.0, 3.0], [0, 2, 1], [0, 2, 3], (2, 3))
    with h5py.File(path, "a") as f:
        f["X/indices"][0] = index
    with h5turbo.File(path) as f:
        for name in ("sum", "mean", "var", "min", "max", "count_nonzero"):
            for axis in (None, 0, 1):
                with pytest.raises(h5turbo.FormatError, match=message):
                    getattr(f["X"], name)(axis=axis)


def test_sparse_reductions_check_indptr_before_allocating_the_output(tmp_path):
    """A shape attribute of 2^40 rows over a 2-row indptr: sum(axis=1) tried to allocate
    8 TiB (MemoryError) before the indptr was checked; now the FormatError as for
    axis=0."""
    path = tmp_path / "huge.h5ad"
    _sparse_file(path, "csr", [1.0, 2.0, 3.0], [0, 2, 1], [0, 2, 3], (2, 3))
    with h5py.File(path, "a") as f:
        f["X"].attrs["shape"] = np.array([2**40, 3])
    with h5turbo.File(path) as f:
        for name in ("sum", "mean", "var", "max", "count_nonzero"):
            with pytest.raises(h5turbo.FormatError, match="indptr"):
                getattr(f["X"], name)(axis=1)
        with pytest.raises(h5turbo.FormatError, match="indptr"):
            f["X"][[0]]  # a selection made arange(2^40) first


def test_loom_attribute_that_makes_no_column_is_a_format_error(tmp_path):
    """A (cells, 1) string column attribute: pandas' bare 'ValueError: 2' (anndata.read_loom
    fails the same way); docs/robustness.md: values that do not fit are FormatErrors
    naming the file and the element."""
    path = tmp_path / "cells.loom"
    with h5py.File(path, "w") as f:
        f["matrix"] = np.arange(12, dtype=np.float32).reshape(3, 4)
        f.create_group("layers")
        f["row_attrs/Gene"] = np.array([b"g0", b"g1", b"g2"])
        f["col_attrs/CellID"] = np.array([b"c0", b"c1", b"c2", b"c3"])
    assert h5turbo.read_loom(path).shape == (4, 3)
    with h5py.File(path, "a") as f:
        f["col_attrs/label"] = np.array([[b"a"], [b"b"], [b"c"], [b"d"]])
    with pytest.raises(h5turbo.FormatError, match=f"{path}: /col_attrs/label"):
        h5turbo.read_loom(path)


def test_10x_data_of_a_type_scipy_sparse_does_not_take(tmp_path):
    """float16 counts: the csr_matrix was built (scipy checks dtypes only when given one)
    and failed in the gene selection with scipy's bare 'Output dtype not compatible
    with inputs'."""
    path = tmp_path / "f16.h5"
    _10x_file(path, sp.random(5, 3, density=0.5, format="csc", random_state=0, dtype=np.float32))
    with h5py.File(path, "a") as f:
        data = f["matrix/data"][()].astype(np.float16)
        del f["matrix/data"]
        f["matrix/data"] = data
    with pytest.raises(h5turbo.FormatError, match=f"{path}: /matrix: .*float16"):
        h5turbo.read_10x_h5(path)


@pytest.mark.parametrize("member", ["barcodes", "features/name", "features/extra"])
def test_10x_strings_that_are_not_ascii(tmp_path, member):
    """scanpy converts with numpy's astype(str), which decodes bytes as ASCII: UTF-8
    names raised a bare UnicodeDecodeError (scanpy's too); a FormatError naming the
    dataset now."""
    path = tmp_path / "utf8.h5"
    _10x_file(path, sp.random(5, 3, density=0.5, format="csc", random_state=0, dtype=np.float32))
    n = 3 if member == "barcodes" else 5
    with h5py.File(path, "a") as f:
        if f"matrix/{member}" in f:
            del f[f"matrix/{member}"]
        f[f"matrix/{member}"] = np.array([f"ü{i}".encode() for i in range(n)])
    with pytest.raises(h5turbo.FormatError, match=f"{path}: /matrix/{member}: values do not convert to str"):
        h5turbo.read_10x_h5(path)


def test_10x_shape_must_be_integers(tmp_path):
    """A float shape [5.9, 3.0] was cut to 5 x 3 by int() (scanpy raises TypeError;
    the h5ad reader's sparse shapes must be integers too)."""
    path = tmp_path / "shape.h5"
    _10x_file(path, sp.random(5, 3, density=0.5, format="csc", random_state=0, dtype=np.float32))
    with h5py.File(path, "a") as f:
        del f["matrix/shape"]
        f["matrix/shape"] = np.array([5.9, 3.0])
    with pytest.raises(h5turbo.FormatError, match=f"{path}: /matrix/shape: must hold 2 integer sizes"):
        h5turbo.read_10x_h5(path)
