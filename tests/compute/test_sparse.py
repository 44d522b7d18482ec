"""SparseDataset against scipy/anndata: files written at test time by anndata (CSR and
CSC, gzip, explicit zeros, empty rows) and the corpus's h5ad and 10x files."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from support.common import corpus_dir, in_ci, import_h5turbo

h5turbo = import_h5turbo()
import scipy.sparse as sp  # noqa: E402
import anndata  # noqa: E402

OPS = ("sum", "mean", "var", "min", "max", "count_nonzero")


def _random_sparse(rng, shape, dtype, fmt):
    m = sp.random(*shape, density=0.15, format="csr", random_state=rng, dtype=np.float64)
    m.data = np.round(m.data * 50 - 10)  # negatives, explicit zeros
    m = m.astype(dtype).tolil()
    m[3, :] = 0  # an empty row
    m = m.tocsr()
    m.eliminate_zeros()
    m.data[::7] = 0  # explicit zeros are stored entries but count as zero
    return m.asformat(fmt)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    rng = np.random.default_rng(3)
    folder = tmp_path_factory.mktemp("sparse")
    files = {}
    for fmt in ("csr", "csc"):
        for dtype in ("float32", "int64"):
            x = _random_sparse(rng, (61, 47), np.dtype(dtype), fmt)
            path = folder / f"{fmt}-{dtype}.h5ad"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                anndata.AnnData(X=x).write_h5ad(path, compression="gzip")
            files[(fmt, dtype)] = (path, x)
    return files


def _check(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want).ravel() if np.ndim(want) else np.asarray(want)
    assert got.shape == want.shape
    rtol = 1e-5 if np.dtype(dtype).itemsize == 4 else 1e-9
    np.testing.assert_allclose(got.astype("f8"), want.astype("f8"), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_generated(written, fmt, dtype, monkeypatch):
    path, x = written[(fmt, dtype)]
    ref = anndata.read_h5ad(path).X
    with h5turbo.File(path) as f:
        s = h5turbo.SparseDataset(f["X"])
        assert (s.format, s.shape, s.nnz, s.dtype) == (fmt, x.shape, x.nnz, x.dtype)
        m = s.to_scipy(threads=2)
        assert type(m) is type(ref) and (m != ref).nnz == 0 and m.dtype == ref.dtype
        dense = x.toarray().astype("f8")
        monkeypatch.setattr(h5turbo.compute.sparse, "_BLOCK_NNZ", 50)  # many blocks
        for axis in (None, 0, 1, -1):
            for op in OPS:
                _check(getattr(s, op)(axis=axis), getattr(np, op)(dense, axis=axis), dtype)
        _check(s.var(axis=0, ddof=1), dense.var(axis=0, ddof=1), dtype)
        assert s.sum().dtype == np.sum(x.toarray()).dtype
        assert type(s.count_nonzero()) is type(np.count_nonzero(dense))  # int under NumPy 1, intp under 2
        for index in ([5, 2, 2, 40], slice(10, 20), slice(None, None, 3), 7, np.arange(47 if fmt == "csc" else 61) % 2 == 0, []):
            key = index if fmt == "csr" else (slice(None), index)
            want = ref[key]
            got = s[key]
            assert got.shape == want.shape and (got != want).nnz == 0, index
            # the stored index types (int32 here), as scipy's selection keeps them:
            # a wider indptr beside them made a matrix tocoo() refuses
            assert (got.indices.dtype, got.indptr.dtype) == (want.indices.dtype, want.indptr.dtype), index
            assert (got.tocoo() != want.tocoo()).nnz == 0, index


def test_rejects_other_groups_and_axes(written):
    path, _ = written[("csr", "float32")]
    with h5turbo.File(path) as f:
        assert not h5turbo.is_sparse_group(f["obs"])
        with pytest.raises(TypeError):
            h5turbo.SparseDataset(f["obs"])
        s = h5turbo.SparseDataset(f["X"])
        with pytest.raises(IndexError):
            s[:, [1, 2]]
        with pytest.raises(np.exceptions.AxisError):
            s.sum(axis=2)


CORPUS = [("10x/10x_data_3.0.0_filtered_feature_bc_matrix.h5", "matrix"),
          ("10x/10x_data_1.2.0_filtered_gene_bc_matrices_h5.h5", "hg19_chr21"),
          ("h5ad/anndata_v0.5.0.h5ad", "raw.X"),
          ("h5ad/anndata_v0.7.0.h5ad", "X")]


@pytest.mark.parametrize("rel,name", CORPUS)
def test_corpus(rel, name):
    import h5py
    path = corpus_dir() / rel
    if not path.exists():
        if in_ci():
            pytest.fail(f"{path} not present: CI must have the shared corpus")
        pytest.skip(f"{path} not present")
    with h5py.File(path, "r") as g, h5turbo.File(path) as f:
        s = h5turbo.SparseDataset(f[name])
        grp = g[name]
        cls = sp.csr_matrix if s.format == "csr" else sp.csc_matrix
        ref = cls((grp["data"][()], grp["indices"][()], grp["indptr"][()]), shape=s.shape)
        assert (s.to_scipy() != ref).nnz == 0
        dense = ref.toarray().astype("f8")
        for axis in (None, 0, 1):
            for op in OPS:
                _check(getattr(s, op)(axis=axis), getattr(np, op)(dense, axis=axis), s.dtype)


def test_big_endian_arrays_read_in_native_order(tmp_path):
    """scipy.sparse takes native byte order only: big-endian data, indices and indptr
    (other writers, other machines) come back native, values unchanged."""
    m = sp.random(50, 40, density=0.1, format="csr", random_state=0)
    path = tmp_path / "big-endian.h5"
    import h5py

    with h5py.File(path, "w") as f:
        g = f.create_group("X")
        g.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": m.shape})
        g["data"], g["indices"], g["indptr"] = m.data.astype(">f8"), m.indices.astype(">i4"), m.indptr.astype(">i8")
    with h5turbo.File(path) as f:
        matrix = h5turbo.SparseDataset(f["X"])
        for got, want in ((matrix.to_scipy(), m), (matrix[2:9], m[2:9]), (matrix[[1, 7, 3]], m[[1, 7, 3]])):
            assert got.dtype == np.float64 and got.data.dtype.isnative and got.indices.dtype.isnative
            assert (got != want).nnz == 0
