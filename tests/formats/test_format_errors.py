"""Broken single-cell files give h5turbo.FormatError naming the file and the element
(docs/robustness.md), where anndata and scanpy raise bare TypeError, ValueError,
IndexError or RecursionError: elements whose values do not fit their encoding, a
group that contains itself, barcodes that do not fit the matrix, files that are not
h5ad at all, and a file cut inside a global heap."""

from __future__ import annotations

import shutil
import warnings

import h5py
import numpy as np
import pandas as pd
import pytest

import h5turbo
from support.common import corpus_dir


@pytest.fixture(scope="module")
def h5ad_base(tmp_path_factory):
    import anndata as ad
    path = tmp_path_factory.mktemp("h5ad") / "base.h5ad"
    obs = pd.DataFrame({"ni": pd.array([1, None, 3, 4], dtype="Int64")}, index=list("abcd"))
    adata = ad.AnnData(np.ones((4, 3), np.float32), obs=obs)
    adata.uns["d"] = {"x": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata.write_h5ad(path)
    return path


def _encode(ds, encoding: str) -> None:
    ds.attrs.update({"encoding-type": encoding, "encoding-version": "0.2.0"})


def _replace(f, path: str, data, encoding: str) -> None:
    del f[path]
    _encode(f.create_dataset(path, data=data), encoding)


BROKEN_H5AD = {
    "/uns/sa": lambda f: _encode(f["uns"].create_dataset("sa", data=np.arange(3)), "string-array"),
    "/uns/s": lambda f: _encode(f["uns"].create_dataset("s", data=3), "string"),
    "/uns/n": lambda f: _encode(f["uns"].create_dataset("n", data=np.arange(3)), "numeric-scalar"),
    "/obs/ni": lambda f: _replace(f, "obs/ni/mask", np.zeros(4, np.int8), "array"),
    "/obs/_index": lambda f: _replace(f, "obs/_index", np.arange(4), "string-array"),
    "/uns/d/self": lambda f: f["uns/d"].__setitem__("self", f["uns/d"]),
    "/: ": lambda f: _encode(f["obsm"].create_dataset("sc", data=1.0), "array"),
}


@pytest.mark.parametrize("element", BROKEN_H5AD)
def test_broken_h5ad_elements_are_format_errors_naming_them(h5ad_base, tmp_path, element):
    path = tmp_path / "broken.h5ad"
    shutil.copy(h5ad_base, path)
    with h5py.File(path, "a") as f:
        BROKEN_H5AD[element](f)
    with pytest.raises(h5turbo.FormatError) as info:
        h5turbo.read_h5ad(path)
    assert f"{path}: {element}" in str(info.value)


def test_a_file_that_is_not_h5ad_says_so(tmp_path):
    src = corpus_dir() / "10x" / "10x_data_3.0.0_filtered_feature_bc_matrix.h5"
    with pytest.raises(h5turbo.FormatError, match="is not an h5ad file: its root holds 'matrix'"):
        h5turbo.read_h5ad(src)


def test_a_cut_inside_a_global_heap_names_the_file(h5ad_base, tmp_path):
    data = h5ad_base.read_bytes()
    path = tmp_path / "cut.h5ad"
    failures = 0
    for cut in range(1800, 2600, 16):
        path.write_bytes(data[:cut])
        try:
            h5turbo.read_h5ad(path)
        except h5turbo.Error as exc:
            failures += 1
            assert str(path) in str(exc), (cut, str(exc))
    assert failures > 0


def _shorten(name: str):
    def change(f):
        values = f[name][:-1]
        del f[name]
        f[name] = values
    return change


TENX = corpus_dir() / "10x"
BROKEN_10X = [
    ("10x_data_3.0.0_filtered_feature_bc_matrix.h5", _shorten("matrix/barcodes"), "/matrix: barcodes and features"),
    ("10x_data_3.0.0_filtered_feature_bc_matrix.h5", _shorten("matrix/features/name"), "/matrix: barcodes and"),
    ("10x_data_1.2.0_filtered_gene_bc_matrices_h5.h5", _shorten("hg19_chr21/barcodes"), "/hg19_chr21: barcodes"),
    ("10x_data_3.0.0_filtered_feature_bc_matrix.h5",
     lambda f: (f.__delitem__("matrix"), f.create_dataset("matrix", data=1)), "/matrix: a 10x v3 matrix must be a group"),
]


@pytest.mark.parametrize("source, change, message", BROKEN_10X)
def test_broken_10x_files_are_format_errors_naming_the_group(tmp_path, source, change, message):
    path = tmp_path / "broken.h5"
    shutil.copy(TENX / source, path)
    with h5py.File(path, "a") as f:
        change(f)
    with pytest.raises(h5turbo.FormatError) as info:
        h5turbo.read_10x_h5(path)
    assert f"{path}: {message}" in str(info.value)


@pytest.mark.parametrize("member, dtype", [("indptr", "f8"), ("indices", "f8"), ("indices", "u8")])
def test_sparse_index_arrays_must_be_integers_scipy_takes(tmp_path, member, dtype):
    import anndata as ad
    import scipy.sparse as sp
    path = tmp_path / "sparse.h5ad"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.AnnData(sp.csr_matrix(np.eye(4, dtype="f4"))).write_h5ad(path)
    with h5py.File(path, "a") as f:
        values = f[f"X/{member}"][()].astype(dtype)
        del f[f"X/{member}"]
        f[f"X/{member}"] = values
    with pytest.raises(h5turbo.FormatError, match=f"/X: {member} are stored as"):
        h5turbo.read_h5ad(path)


def test_a_10x_group_inside_itself_is_a_format_error(tmp_path):
    # the walk for the matrix's datasets recursed until RecursionError
    import h5py
    import numpy as np
    path = tmp_path / "cycle.h5"
    with h5py.File(path, "w") as f:
        m = f.create_group("matrix")
        for name, value in [("data", np.ones(2, "f4")), ("indices", np.array([0, 1])), ("indptr", np.array([0, 1, 2])),
                            ("shape", np.array([2, 2])), ("barcodes", np.array([b"a", b"b"]))]:
            m[name] = value
        m["features/id"] = np.array([b"g1", b"g2"])
        m["features/loop"] = m["features"]
    with pytest.raises(h5turbo.FormatError, match="matrix/features.*: is inside itself"):
        h5turbo.read_10x_h5(path)
