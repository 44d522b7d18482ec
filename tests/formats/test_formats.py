"""read_h5ad / read_10x_h5 / read_loom against the libraries that define the formats:
anndata.read_h5ad on files anndata writes here (every encoding, dense/csr/csc X,
gzip/lzf/none, default and latest libver) and on the corpus h5ad files (anndata 0.5 to
0.11); scanpy.read_10x_h5 on the corpus 10x files (v2, v3, multiple genomes, Visium);
anndata.read_loom on the corpus loom and a loompy-written one. Values, types, dtypes
(index dtypes of sparse matrices too) are compared field by field. Broken files give
typed errors naming the file and the element."""

from __future__ import annotations

import shutil
from collections.abc import Mapping

import numpy as np
import pytest

from support.common import corpus_dir, import_h5turbo

h5turbo = import_h5turbo()
import anndata  # noqa: E402
import h5py  # noqa: E402  (writes the test files and breaks them; never reads for h5turbo)
import pandas as pd  # noqa: E402
import scipy.sparse as sp  # noqa: E402


# anndata's and scipy's warnings about the files written here are not under test
pytestmark = pytest.mark.filterwarnings("ignore")


# ---------------------------------------------------------------------- comparison


def assert_same(got, want, where: str = "") -> None:
    """Equal values, same types and dtypes, recursively (NaN equals NaN)."""
    if isinstance(want, anndata.AnnData):
        assert isinstance(got, anndata.AnnData), where
        for slot in ("X", "obs", "var", "obsm", "varm", "obsp", "varp", "layers", "uns"):
            assert_same(getattr(got, slot), getattr(want, slot), f"{where}/{slot}")
        assert (got.raw is None) == (want.raw is None), where
        if want.raw is not None:
            for slot in ("X", "var", "varm"):
                assert_same(getattr(got.raw, slot), getattr(want.raw, slot), f"{where}/raw/{slot}")
        return
    assert type(got) is type(want), f"{where}: {type(got)} != {type(want)}"
    if sp.issparse(want):
        assert got.shape == want.shape and got.dtype == want.dtype, where
        for name in ("data", "indices", "indptr"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype, f"{where}.{name}: {a.dtype} != {b.dtype}"
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{where}.{name}"
    elif type(want).__module__.startswith("awkward"):
        import awkward

        assert str(got.type) == str(want.type), where
        assert awkward.to_list(got) == awkward.to_list(want), where
    elif isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want, check_exact=True, obj=where)
    elif isinstance(want, (pd.Categorical, pd.api.extensions.ExtensionArray)):
        pd.testing.assert_extension_array_equal(got, want, check_exact=True)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: {got.dtype} {want.dtype}"
        if want.dtype.kind in "fc":
            assert np.array_equal(got, want, equal_nan=True), where
        elif want.dtype.names:
            assert got.tolist() == want.tolist(), where
        else:
            assert np.array_equal(got, want), where
    elif isinstance(want, Mapping) or hasattr(want, "keys"):
        assert list(got.keys()) == list(want.keys()), f"{where}: {list(got.keys())} != {list(want.keys())}"
        for key in want.keys():
            assert_same(got[key], want[key], f"{where}/{key}")
    elif isinstance(want, float) and np.isnan(want):
        assert np.isnan(got), where
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


# ---------------------------------------------------------------------- generated h5ad


def _sparse(rng, shape, fmt, dtype="float32"):
    m = sp.random(*shape, density=0.2, format=fmt, random_state=rng, dtype=np.float64)
    m.data = np.round(m.data * 100).astype(dtype)
    return m.astype(dtype)


def _frame(rng, n: int, prefix: str) -> pd.DataFrame:
    labels = np.array(["alpha", "beta", "gamma", "δέλτα"])
    with_nan = pd.Categorical(rng.choice(labels, n))
    with_nan[::5] = np.nan
    floats = rng.normal(size=n)
    floats[::7] = np.nan
    return pd.DataFrame({
        "cat": pd.Categorical(rng.choice(labels, n)),
        "cat_ordered": pd.Categorical(rng.choice(labels[:3], n), categories=labels[:3][::-1], ordered=True),
        "cat_nan": with_nan,
        "int64": rng.integers(-1000, 1000, n),
        "uint8": rng.integers(0, 255, n).astype(np.uint8),
        "float64": floats,
        "float32": rng.normal(size=n).astype(np.float32),
        "bool": rng.random(n) > 0.5,
        "text": np.array([f"{prefix}-{i}-ü" for i in range(n)], dtype=object),
        "nullable_int": pd.array([None if i % 4 == 0 else i for i in range(n)], dtype="Int32"),
        "nullable_bool": pd.array([None if i % 3 == 0 else bool(i % 2) for i in range(n)], dtype="boolean"),
        "nullable_str": pd.array([None if i % 6 == 0 else f"s{i}" for i in range(n)], dtype="string"),
    }, index=pd.Index([f"{prefix}{i}" for i in range(n)]))


def _full_anndata(x_kind: str, seed: int = 0) -> anndata.AnnData:
    rng = np.random.default_rng(seed)
    n_obs, n_vars = 37, 23
    x = _sparse(rng, (n_obs, n_vars), x_kind) if x_kind != "dense" else rng.normal(size=(n_obs, n_vars)).astype("f4")
    obs, var = _frame(rng, n_obs, "cell"), _frame(rng, n_vars, "gene")
    var.index.name = "gene_symbol"
    adata = anndata.AnnData(
        X=x, obs=obs, var=var,
        obsm={"X_pca": rng.normal(size=(n_obs, 5)), "sparse": _sparse(rng, (n_obs, 9), "csr"),
              "frame": pd.DataFrame({"a": rng.integers(0, 9, n_obs), "b": pd.Categorical(rng.choice(["x", "y"], n_obs))},
                                    index=obs.index)},
        varm={"PCs": rng.normal(size=(n_vars, 5)).astype(np.float32), "csc": _sparse(rng, (n_vars, 4), "csc")},
        obsp={"distances": _sparse(rng, (n_obs, n_obs), "csr", "float64"), "dense": rng.random((n_obs, n_obs))},
        varp={"corr": rng.random((n_vars, n_vars))},
        layers={"counts": rng.integers(0, 50, (n_obs, n_vars)).astype(np.int32),
                "csr": _sparse(rng, (n_obs, n_vars), "csr"), "csc": _sparse(rng, (n_obs, n_vars), "csc", "float64")},
        uns={"int": 3, "float": 2.5, "bool": True, "text": "hello ✓", "np_int": np.int64(-7),
             "np_float32": np.float32(1.5), "strings": np.array(["a", "bb", "ccc"], dtype=object),
             "ints": np.arange(6, dtype=np.int16).reshape(2, 3), "colors": ["#ff0000", "#00ff00"],
             "nested": {"deeper": {"x": 1.0, "matrix": rng.random((3, 2))}, "empty": {}, "label": "n"},
             "sparse": _sparse(rng, (4, 6), "csr"),
             # write_h5ad turns obs/var string columns into categoricals, not uns frames:
             # this one keeps the nullable-string-array encoding
             "frame": pd.DataFrame({"v": [1.0, 2.0, 3.0], "s": pd.array(["x", None, "x"], dtype="string"),
                                    "i": pd.array([1, None, 1], dtype="Int64")}, index=["p", "q", "r"])},
    )
    raw = anndata.AnnData(X=_sparse(rng, (n_obs, n_vars + 5), "csr"), obs=obs,
                          var=pd.DataFrame({"mean": rng.random(n_vars + 5)},
                                           index=[f"rawgene{i}" for i in range(n_vars + 5)]),
                          varm={"loadings": rng.random((n_vars + 5, 2))})
    adata.raw = raw
    return adata


def _write(adata: anndata.AnnData, path, compression, libver) -> None:
    with anndata.settings.override(allow_write_nullable_strings=True):
        if libver is None:
            adata.write_h5ad(path, compression=compression)
            return
        kwargs = {} if compression is None else {"compression": compression}
        with h5py.File(path, "w", libver=libver) as f:
            anndata.io.write_elem(f, "/", adata, dataset_kwargs=kwargs)


CASES = [(x, comp, None) for x in ("dense", "csr", "csc") for comp in (None, "gzip", "lzf")]
CASES += [("csr", "gzip", "latest"), ("dense", None, "latest"), ("csc", "lzf", "earliest")]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("h5ad")
    paths = {}
    for i, (x_kind, comp, libver) in enumerate(CASES):
        path = folder / f"{x_kind}-{comp}-{libver}.h5ad"
        _write(_full_anndata(x_kind, seed=i), path, comp, libver)
        paths[(x_kind, comp, libver)] = path
    return paths


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_generated_h5ad(generated, case):
    path = generated[case]
    want = anndata.read_h5ad(path)
    got = h5turbo.read_h5ad(path, threads=2)
    assert_same(got, want)
    assert isinstance(got.uns["frame"]["s"].dtype, pd.StringDtype)


def test_read_path_uses_no_h5py(generated, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("h5py opened a file")

    path = generated[("csr", "gzip", None)]
    want = anndata.read_h5ad(path)
    monkeypatch.setattr(h5py, "File", refuse)
    assert_same(h5turbo.read_h5ad(path), want)


def test_sparse_arrays_setting(generated):
    path = generated[("csc", None, None)]
    with anndata.settings.override(use_sparse_array_on_read=True):
        assert_same(h5turbo.read_h5ad(path), anndata.read_h5ad(path))


def test_scalar_x_and_empty(tmp_path):
    path = tmp_path / "empty.h5ad"
    anndata.AnnData(obs=pd.DataFrame(index=["a", "b"]), uns={"none_here": np.zeros(0)}).write_h5ad(path)
    assert_same(h5turbo.read_h5ad(path), anndata.read_h5ad(path))


def test_awkward_arrays(tmp_path):
    import awkward

    path = tmp_path / "awkward.h5ad"
    anndata.AnnData(np.zeros((3, 2)),
                    obsm={"ragged": awkward.Array([[1, 2], [3], [4, 5, 6]])},
                    uns={"records": awkward.Array([{"x": 1, "y": [1.5]}, {"x": 2, "y": []}]),
                         "strings": awkward.Array([["a", "bc"], [], ["d"]])}).write_h5ad(path)
    assert_same(h5turbo.read_h5ad(path), anndata.read_h5ad(path))


@pytest.mark.parametrize("name", ["anndata_v0.5.0.h5ad", "anndata_v0.7.0.h5ad", "anndata_v0.7.8.h5ad",
                                  "anndata_v0.11.4.h5ad"])
def test_corpus_h5ad(name):
    path = _corpus("h5ad", name)
    assert_same(h5turbo.read_h5ad(path), anndata.read_h5ad(path))


def _corpus(*parts):
    path = corpus_dir().joinpath(*parts)
    assert path.exists(), f"{path} not present: the corpus is part of the repository"
    return path


# ---------------------------------------------------------------------- sparse groups open as matrices


def test_sparse_group_opens_as_sparse_dataset(generated):
    path = generated[("csr", "gzip", None)]
    want = anndata.read_h5ad(path)
    with h5turbo.File(path) as f:
        x = f["X"]
        assert isinstance(x, h5turbo.SparseDataset) and isinstance(x, h5turbo.Group)
        assert (x.format, x.shape, x.nnz, x.dtype, x.ndim) == ("csr", want.X.shape, want.X.nnz, want.X.dtype, 2)
        assert sorted(x.keys()) == ["data", "indices", "indptr"] and len(x) == 3
        assert x.attrs["encoding-type"] == "csr_matrix"
        assert isinstance(x["data"], h5turbo.Dataset) and "indptr" in x
        assert_same(x.to_scipy(), want.X)
        assert (x[[3, 1, 3]] != want.X[[3, 1, 3]]).nnz == 0
        np.testing.assert_allclose(x.sum(axis=0), np.asarray(want.X.sum(axis=0)).ravel(), rtol=1e-6)
        assert isinstance(f["layers/csc"], h5turbo.SparseDataset) and f["layers/csc"].format == "csc"
        assert type(f["obs"]) is h5turbo.Group and type(f["layers"]) is h5turbo.Group
        assert x == h5turbo.SparseDataset(f["X"]) and x.group == f["X"]


# ---------------------------------------------------------------------- broken h5ad


def _encoded(ds, kind):
    ds.attrs["encoding-type"], ds.attrs["encoding-version"] = kind, "0.2.0"


def _broken_copy(generated, tmp_path, edit):
    path = tmp_path / "broken.h5ad"
    shutil.copy(generated[("csr", "gzip", None)], path)
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


@pytest.mark.parametrize("edit,error,names", [
    (lambda f: f["obs"].attrs.__delitem__("_index"), h5turbo.FormatError, ("/obs", "_index")),
    (lambda f: f["obs"].attrs.__delitem__("column-order"), h5turbo.FormatError, ("/obs", "column-order")),
    (lambda f: f["X"].attrs.__delitem__("shape"), h5turbo.FormatError, ("/X",)),
    (lambda f: f["obs/cat"].__delitem__("codes"), h5turbo.FormatError, ("/obs/cat", "codes")),
    (lambda f: f["obs/cat"].attrs.__delitem__("ordered"), h5turbo.FormatError, ("/obs/cat", "ordered")),
    (lambda f: f["layers/csr"].attrs.__setitem__("encoding-type", "mystery"), h5turbo.UnsupportedError,
     ("/layers/csr", "mystery")),
    (lambda f: f["X"].attrs.__setitem__("shape", np.array([37, 23, 2])), h5turbo.FormatError, ("/X",)),
    (lambda f: f["X"].attrs.__setitem__("shape", "wide"), h5turbo.FormatError, ("/X", "integers")),
    (lambda f: f["X"].attrs.__setitem__("shape", np.array([37.0, 23.0])), h5turbo.FormatError, ("/X",)),
    (lambda f: (f["X"].__delitem__("indptr"), f["X"].create_dataset("indptr", data=np.arange(5))),
     h5turbo.FormatError, ("/X", "indptr")),
    (lambda f: f["X/indices"].__setitem__(4, 23), h5turbo.FormatError, ("/X", "indices")),
    (lambda f: f["X/indptr"].__setitem__(3, 10**6), h5turbo.FormatError, ("/X", "indptr")),
    (lambda f: (f["obs"].__delitem__("int64"), f["obs"].create_dataset("int64", data=np.arange(3))),
     h5turbo.FormatError, ("/obs", "int64")),
    (lambda f: f["obs/cat/codes"].__setitem__(0, 9), h5turbo.FormatError, ("/obs/cat", "categorical")),
    (lambda f: (f["obs"].__delitem__("float32"), f["obs"].create_dataset("float32", data=1.0)),
     h5turbo.FormatError, ("/obs", "float32")),
    (lambda f: (f["obsm"].__delitem__("X_pca"), f["obsm"].create_dataset("X_pca", data=np.zeros((5, 2)))),
     h5turbo.FormatError, ("broken.h5ad",)),
    # values that do not fit: a bare AttributeError before
    (lambda f: _encoded(f["uns"].create_dataset("ns", data="abc"), "numeric-scalar"),
     h5turbo.FormatError, ("/uns/ns", "numeric-scalar")),
    (lambda f: _encoded(f["uns"].create_dataset("r", data=np.arange(3)), "rec-array"),
     h5turbo.FormatError, ("/uns/r", "rec-array")),
])
def test_broken_h5ad(generated, tmp_path, edit, error, names):
    path = _broken_copy(generated, tmp_path, edit)
    with pytest.raises(error) as info:
        h5turbo.read_h5ad(path)
    message = str(info.value)
    assert "broken.h5ad" in message
    for name in names:
        assert name in message, message


def test_broken_sparse_group_stays_browsable(generated, tmp_path):
    path = _broken_copy(generated, tmp_path, lambda f: f["X"].attrs.__setitem__("shape", "wide"))
    with h5turbo.File(path) as f:
        x = f["X"]
        assert type(x) is h5turbo.Group and sorted(x) == ["data", "indices", "indptr"]
        with pytest.raises(h5turbo.FormatError, match="broken.h5ad.*/X"):
            h5turbo.SparseDataset(x)


def test_truncated_h5ad(generated, tmp_path):
    source = generated[("dense", "gzip", None)]
    data = source.read_bytes()
    path = tmp_path / "truncated.h5ad"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(h5turbo.Error) as info:
        h5turbo.read_h5ad(path)
    assert isinstance(info.value, (h5turbo.FormatError, h5turbo.UnsupportedError))
    assert "truncated.h5ad" in str(info.value)
    with pytest.raises(FileNotFoundError):
        h5turbo.read_h5ad(tmp_path / "absent.h5ad")


def test_old_categories_reference_to_a_group_is_an_error(tmp_path):
    """anndata 0.7 categoricals name their categories with an object reference; one
    that points to a group is a FormatError naming the column."""
    path = tmp_path / "old.h5ad"
    shutil.copy(_corpus("h5ad", "anndata_v0.7.8.h5ad"), path)
    with h5py.File(path, "r+") as f:
        f["obs/obs_cat"].attrs["categories"] = f["obs"].ref
    with pytest.raises(h5turbo.FormatError, match="/obs/obs_cat"):
        h5turbo.read_h5ad(path)


# ---------------------------------------------------------------------- 10x


TENX = ["10x_data_1.2.0_filtered_gene_bc_matrices_h5.h5", "10x_data_1.2.0_multiple_genomes.h5",
        "10x_data_3.0.0_filtered_feature_bc_matrix.h5", "visium_data_1.0.0_filtered_feature_bc_matrix.h5",
        "visium_data_2.1.0_raw_probe_bc_matrix.h5"]


def _scanpy_or_error(path, **kwargs):
    import scanpy

    try:
        return scanpy.read_10x_h5(path, **kwargs)
    except ValueError as exc:
        return exc


@pytest.mark.parametrize("name", TENX)
@pytest.mark.parametrize("kwargs", [{}, {"genome": "hg19_chr21"}, {"genome": "mm10"}, {"gex_only": False},
                                    {"genome": "GRCh38"}])
def test_10x(name, kwargs):
    path = _corpus("10x", name)
    want = _scanpy_or_error(path, **kwargs)
    if isinstance(want, ValueError):
        with pytest.raises(ValueError):
            h5turbo.read_10x_h5(path, **kwargs)
        return
    assert_same(h5turbo.read_10x_h5(path, **kwargs), want)


def test_10x_multiple_genomes_each():
    path = _corpus("10x", "10x_data_1.2.0_multiple_genomes.h5")
    with h5turbo.File(path) as f:
        genomes = list(f)
        assert len(genomes) > 1 and all(isinstance(f[g], h5turbo.SparseDataset) for g in genomes)
    for genome in genomes:
        assert_same(h5turbo.read_10x_h5(path, genome=genome), _scanpy_or_error(path, genome=genome))


def test_10x_broken(tmp_path):
    path = tmp_path / "broken10x.h5"
    shutil.copy(_corpus("10x", "10x_data_3.0.0_filtered_feature_bc_matrix.h5"), path)
    with h5py.File(path, "r+") as f:
        del f["matrix/features/id"]
    with pytest.raises(h5turbo.FormatError, match="broken10x.h5.*/matrix.*'id'"):
        h5turbo.read_10x_h5(path)


@pytest.mark.parametrize("member,index,value", [("indices", 0, 10**6), ("indices", 3, -1),
                                                ("indptr", 5, 10**7), ("indptr", 2, 0)])
def test_10x_bad_indices(tmp_path, member, index, value):
    """Index arrays scipy would trust are checked: a typed error, not memory errors later."""
    path = tmp_path / "bad10x.h5"
    shutil.copy(_corpus("10x", "10x_data_3.0.0_filtered_feature_bc_matrix.h5"), path)
    with h5py.File(path, "r+") as f:
        ds = f[f"matrix/{member}"]
        if ds.dtype.kind == "u" and value < 0:
            pytest.skip("unsigned indices")
        ds[index] = value if member == "indices" or index != 2 else ds[index + 1] + 5
    with pytest.raises(h5turbo.FormatError, match=f"bad10x.h5.*/matrix.*{member}"):
        h5turbo.read_10x_h5(path)


# ---------------------------------------------------------------------- loom


@pytest.fixture(scope="module")
def loom_file(tmp_path_factory):
    import loompy

    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("loom") / "written.loom"
    genes, cells = 31, 45
    matrix = rng.poisson(0.7, (genes, cells)).astype(np.float32)
    layers = {"": matrix, "spliced": rng.poisson(0.5, (genes, cells)).astype(np.int32),
              "unspliced": rng.random((genes, cells)) * (rng.random((genes, cells)) > 0.7)}
    loompy.create(str(path), layers,
                  row_attrs={"Gene": np.array([f"g&amp;{i}" for i in range(genes)]),
                             "mean": rng.random(genes), "loadings": rng.random((genes, 3))},
                  col_attrs={"CellID": np.array([f"c{i}" for i in range(cells)]), "batch": np.ones(cells, int),
                             "umap_1": rng.random(cells), "umap_2": rng.random(cells)})
    return path


LOOM_ARGS = [{}, {"sparse": False}, {"X_name": ""}, {"cleanup": True},
             {"obsm_mapping": {"X_umap": ["umap_1", "umap_2"]}, "dtype": "float64"},
             {"validate": False}, {"obsm_names": {"X_umap": ["umap_1", "umap_2"]}}]


@pytest.mark.parametrize("kwargs", LOOM_ARGS)
@pytest.mark.filterwarnings("ignore:Argument obsm_names has been deprecated:FutureWarning")
def test_loom_written(loom_file, kwargs):
    assert_same(h5turbo.read_loom(loom_file, **kwargs), anndata.read_loom(loom_file, **kwargs))


@pytest.mark.parametrize("kwargs", LOOM_ARGS[:4])
def test_loom_corpus(kwargs):
    path = _corpus("loom", "test.loom")
    assert_same(h5turbo.read_loom(path, **kwargs), anndata.read_loom(path, **kwargs))


def test_loom_broken(loom_file, tmp_path):
    path = tmp_path / "broken.loom"
    shutil.copy(loom_file, path)
    with h5py.File(path, "r+") as f:
        del f["col_attrs/batch"]
        f["col_attrs"].create_dataset("batch", data=np.zeros(3))
    with pytest.raises(h5turbo.FormatError, match="broken.loom.*/col_attrs/batch"):
        h5turbo.read_loom(path)
    with h5py.File(path, "r+") as f:
        f.create_dataset("layers/text", data=np.full(f["matrix"].shape, b"a"))
    with pytest.raises(h5turbo.FormatError, match="broken.loom.*/layers/text.*numbers"):  # was a bare ValueError
        h5turbo.read_loom(path)
    with h5py.File(path, "r+") as f:
        del f["matrix"]
    with pytest.raises(h5turbo.FormatError, match="broken.loom.*/matrix"):
        h5turbo.read_loom(path)


def test_loom_takes_anndatas_spec_version(loom_file):
    assert_same(h5turbo.read_loom(loom_file, spec_version="3.0.0"), anndata.read_loom(loom_file, spec_version="3.0.0"))


def test_null_datasets_of_h5ad_are_h5pys_empty_as_anndata_gives(generated, tmp_path):
    def edit(f):
        _encoded(f["uns"].create_dataset("encoded", data=h5py.Empty("f")), "array")
        f["uns"].create_dataset("plain", data=h5py.Empty("f"))
    path = _broken_copy(generated, tmp_path, edit)
    ours, theirs = h5turbo.read_h5ad(path).uns, anndata.read_h5ad(path).uns
    for name in ("encoded", "plain"):
        assert type(ours[name]) is type(theirs[name]) is h5py.Empty, name
        assert ours[name].dtype == theirs[name].dtype


def test_many_small_sparse_matrices_are_read_as_anndata_reads_them(tmp_path):
    # each matrix read its three arrays on a new pool of threads: 1.5 ms a matrix
    path = tmp_path / "many.h5ad"
    a = anndata.AnnData(np.ones((5, 5), dtype=np.float32))
    a.uns["sp"] = {f"m{i}": sp.random(5, 5, 0.3, format="csr", random_state=i) for i in range(40)}
    a.write_h5ad(path)
    assert_same(h5turbo.read_h5ad(path), anndata.read_h5ad(path))


# ---------------------------------------------------------------------- file objects


def _objects(path):
    import io

    yield io.BytesIO(path.read_bytes())
    with open(path, "rb") as handle:
        yield handle


def test_h5ad_from_file_objects(generated):
    path = generated[("csr", "gzip", "latest")]
    want = anndata.read_h5ad(path)
    for obj in _objects(path):
        assert_same(h5turbo.read_h5ad(obj, threads=2), want)


def test_10x_from_file_objects():
    path = _corpus("10x", "10x_data_3.0.0_filtered_feature_bc_matrix.h5")
    want = _scanpy_or_error(path)
    for obj in _objects(path):
        assert_same(h5turbo.read_10x_h5(obj), want)


def test_loom_from_file_objects(loom_file):
    want = anndata.read_loom(loom_file)
    for obj in _objects(loom_file):
        assert_same(h5turbo.read_loom(obj), want)
