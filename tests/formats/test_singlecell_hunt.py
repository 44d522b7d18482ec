"""Differential hunt of the single-cell readers as their users see them:
h5turbo.read_h5ad against anndata.read_h5ad on files anndata writes here (write_h5ad
with and without compression, write_elem) and on hand-made files with odd or older
encodings; h5turbo.read_10x_h5 against scanpy.read_10x_h5 and h5turbo.read_loom
against anndata.read_loom on hand-made files. Every slot is compared (values, types,
dtypes, index names). Broken files must raise h5turbo.Error naming the file and the
element, never a bare Python error or a crash."""

from __future__ import annotations

import warnings

import h5py
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from support.common import import_h5turbo

h5turbo = import_h5turbo()
import anndata  # noqa: E402

from test_formats import assert_same  # noqa: E402  (the comparison of test_formats.py)

pytestmark = pytest.mark.filterwarnings("ignore")


def _index(n, prefix="o"):
    return [f"{prefix}{i}" for i in range(n)]


def _both(read_ref, read_ours):
    """(value, exception) of each reader."""
    out = []
    for call in (read_ref, read_ours):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append((call(), None))
        except Exception as exc:  # noqa: BLE001 - compared
            out.append((None, exc))
    return out


def _compare_h5ad(path):
    (want, want_exc), (got, got_exc) = _both(lambda: anndata.read_h5ad(path), lambda: h5turbo.read_h5ad(path, threads=2))
    if want_exc is not None:
        assert got_exc is not None, f"anndata raised {want_exc!r}, h5turbo read {got!r}"
        assert isinstance(got_exc, h5turbo.Error), f"anndata: {want_exc!r}; h5turbo: {got_exc!r}"
        assert str(path.name) in str(got_exc), got_exc
        return
    assert got_exc is None, f"anndata read it, h5turbo raised {got_exc!r}"
    assert_same(got, want)
    assert got.obs.index.name == want.obs.index.name and got.var.index.name == want.var.index.name
    assert got.obs_names.dtype == want.obs_names.dtype and got.var_names.dtype == want.var_names.dtype
    assert list(got.obs.dtypes.astype(str)) == list(want.obs.dtypes.astype(str))


# ---------------------------------------------------------------------- written by anndata

N = 10
rng0 = np.random.default_rng(0)


def _raw_case():
    a = anndata.AnnData(sp.random(6, 4, density=0.5, format="csc", random_state=2),
                        var=pd.DataFrame({"c": pd.Categorical(list("abab"))}, index=list("wxyz")))
    a.varm["pc"] = np.ones((4, 2))
    a.raw = a
    return a[:, :2].copy()


def _raw_dense():
    b = anndata.AnnData(np.ones((3, 2)))
    b.raw = b
    return b


CASES = {
    "many_categories": lambda: anndata.AnnData(np.zeros((3000, 2)), obs=pd.DataFrame(
        {"c": pd.Categorical([f"k{i}" for i in range(3000)]),
         "c40000": pd.Categorical([f"k{i % 1500}" for i in range(3000)], categories=[f"k{i}" for i in range(40000)])},
        index=_index(3000))),
    "non_string_categories": lambda: anndata.AnnData(np.zeros((N, 2)), obs=pd.DataFrame(
        {"int": pd.Categorical(rng0.integers(0, 3, N)), "float": pd.Categorical(np.arange(N) / 4),
         "bool": pd.Categorical(np.arange(N) % 2 == 0),
         "ordered_int": pd.Categorical(np.arange(N) % 3, categories=[2, 0, 1], ordered=True)}, index=_index(N))),
    "categories_with_nan": lambda: anndata.AnnData(np.zeros((N, 2)), obs=pd.DataFrame(
        {"all_nan": pd.Categorical([np.nan] * N, categories=["a", "b"]), "no_categories": pd.Categorical([np.nan] * N),
         "ordered_nan": pd.Categorical(["a", None] * 5, categories=["b", "a"], ordered=True)}, index=_index(N))),
    "index_names": lambda: anndata.AnnData(np.zeros((N, 2)), obs=pd.DataFrame(
        {"x": np.arange(N)}, index=pd.Index(_index(N), name="cell_id")),
        var=pd.DataFrame(index=pd.Index(["a", "b"], name="gene"))),
    "nullable_columns": lambda: anndata.AnnData(np.zeros((N, 2)), obs=pd.DataFrame(
        {"s": pd.array([None if i % 3 == 0 else f"s{i}" for i in range(N)], dtype="string"),
         "s_full": pd.array([f"ü{i}" for i in range(N)], dtype="string"),
         "u8": pd.array([None if i % 4 else i for i in range(N)], dtype="UInt8"),
         "i64": pd.array([None] * N, dtype="Int64"), "i64_nonull": pd.array(range(N), dtype="Int64"),
         "b": pd.array([None, True] * 5, dtype="boolean")}, index=_index(N))),
    "zero_obs": lambda: anndata.AnnData(np.zeros((0, 5), np.float32), var=pd.DataFrame(
        {"c": pd.Categorical(list("aabbc"))}, index=list("vwxyz"))),
    "zero_vars": lambda: anndata.AnnData(np.zeros((5, 0), np.float32), obsm={"e": np.zeros((5, 0))}),
    "zero_both": lambda: anndata.AnnData(np.zeros((0, 0), np.float32)),
    "sparse_zero_obs": lambda: anndata.AnnData(sp.csr_matrix((0, 5), dtype=np.float32)),
    "sparse_zero_vars_csc": lambda: anndata.AnnData(sp.csc_matrix((5, 0), dtype=np.float64)),
    "sparse_no_nonzeros": lambda: anndata.AnnData(sp.csr_matrix((7, 5), dtype=np.int64),
                                                  layers={"c": sp.csc_matrix((7, 5), dtype=np.uint8)}),
    "wide_sparse": lambda: anndata.AnnData(sp.random(2, 20000, density=0.01, format="csr", random_state=1,
                                                     dtype=np.float32)),
    "narrow_dense": lambda: anndata.AnnData(rng0.random((20000, 1))),
    "one_by_one": lambda: anndata.AnnData(np.array([[7]], dtype=np.int8)),
    "no_X": lambda: anndata.AnnData(obs=pd.DataFrame(index=_index(4)), var=pd.DataFrame(index=["a", "b"]),
                                    layers={"l": np.ones((4, 2))}),
    "obsm_dataframe": lambda: anndata.AnnData(np.zeros((N, 2)), obsm={"df": pd.DataFrame(
        {"a": np.arange(N), "c": pd.Categorical(["x", "y"] * 5, ordered=True),
         "ni": pd.array([1, None] * 5, dtype="Int16"), "nb": pd.array([True, None] * 5, dtype="boolean"),
         "s": np.array(_index(N, "s"), dtype=object)}, index=[str(i) for i in range(N)])},
        varm={"df": pd.DataFrame({"f": [1.5, np.nan]}, index=["0", "1"])}),
    "uns_scalars": lambda: anndata.AnnData(np.zeros((2, 2)), uns={
        "i8": np.int8(-3), "u64": np.uint64(2**63 + 5), "f16": np.float16(1.5), "c128": np.complex128(1 + 2j),
        "c64": np.complex64(3 - 1j), "np_bool": np.bool_(True), "py_bool": False, "py_int": 2**62,
        "py_float": float("nan"), "inf": float("-inf"), "s": "x", "empty_str": "", "unicode": "ünï ✓",
        "empty": {}, "list_int": [1, 2, 3], "list_float": [1.0, np.nan], "list_str": ["a", "b"],
        "list_bool": [True, False], "empty_list_arr": np.array([], dtype=np.float64),
        "nested": {"a": {"b": {"c": "d", "e": {}}}}, "str2d": np.array([["a", "b"], ["c", "d"]], dtype=object),
        "empty_str_arr": np.array([], dtype=object), "unicode_arr": np.array(["ä", "b"]), "none": None,
        "u_fixed": np.array(["abc", "d"], dtype="U3"), "bool_arr": np.array([True, False]),
        "int_matrix3d": np.arange(24, dtype=np.uint32).reshape(2, 3, 4)}),
    "uns_dataframes": lambda: anndata.AnnData(np.zeros((2, 2)), uns={
        "df": pd.DataFrame({"x": [1, 2]}, index=pd.Index(["a", "b"], name="nm")), "empty_df": pd.DataFrame(),
        "df_no_rows": pd.DataFrame({"x": np.array([], dtype=np.int16)})}),
    "uns_sparse": lambda: anndata.AnnData(np.zeros((2, 2)), uns={
        "csr": sp.csr_matrix(np.eye(3, dtype=np.float32)), "csc": sp.csc_matrix((0, 4), dtype=np.int16)}),
    "layers_dtypes": lambda: anndata.AnnData(np.zeros((4, 3), np.float32), layers={
        "i8": np.ones((4, 3), np.int8), "bool": np.ones((4, 3), bool), "csc_i32": sp.csc_matrix(np.eye(4, 3, dtype=np.int32)),
        "f16": np.ones((4, 3), np.float16), "c64": np.ones((4, 3), np.complex64), "u64": np.full((4, 3), 2**64 - 1, np.uint64)}),
    "pairwise": lambda: anndata.AnnData(np.zeros((4, 3)), obsp={"csc": sp.csc_matrix(np.eye(4)), "dense": np.eye(4)},
                                        varp={"csr": sp.csr_matrix(np.eye(3, dtype=np.float32))}),
    "x_uint16": lambda: anndata.AnnData(np.arange(12, dtype=np.uint16).reshape(4, 3)),
    "x_bool": lambda: anndata.AnnData(np.ones((4, 3), dtype=bool)),
    "x_csr_int_data": lambda: anndata.AnnData(sp.csr_matrix(np.arange(12, dtype=np.int32).reshape(4, 3))),
    "raw_subset": _raw_case,
    "raw_dense": _raw_dense,
    "numeric_string_index": lambda: anndata.AnnData(np.zeros((3, 1)), obs=pd.DataFrame({"x": [1, 2, 3]}, index=["1", "2", "3"])),
    "column_named_index": lambda: anndata.AnnData(np.zeros((3, 1)), obs=pd.DataFrame(
        {"_index_col": [1, 2, 3], "index": ["a", "b", "c"]}, index=pd.Index(["p", "q", "r"]))),
    "duplicate_obs_names": lambda: anndata.AnnData(np.zeros((3, 1)), obs=pd.DataFrame(index=["a", "a", "b"])),
    "string_columns_kept": lambda: anndata.AnnData(np.zeros((3, 1)), obs=pd.DataFrame(
        {"obj": np.array(["x", "ÿ", "x"], dtype=object), "num_obj": [1.5, 2.5, np.nan]}, index=list("abc"))),
    "string_dtype_index": lambda: anndata.AnnData(np.zeros((3, 1)), obs=pd.DataFrame(index=pd.Index(["a", "b", "c"], dtype="string"))),
    "categorical_index": lambda: anndata.AnnData(np.zeros((3, 1)), obs=pd.DataFrame(index=pd.CategoricalIndex(["a", "b", "c"]))),
    "categories_of_string_dtype": lambda: anndata.AnnData(np.zeros((3, 1)), obs=pd.DataFrame(
        {"c": pd.Categorical(pd.array(["a", "b", "a"], dtype="string"))}, index=list("pqr"))),
    "float16_column": lambda: anndata.AnnData(np.zeros((3, 1)), obs=pd.DataFrame(
        {"f": np.array([1, 2, 3], np.float16)}, index=list("pqr"))),
    "uns_list_of_lists": lambda: anndata.AnnData(np.zeros((3, 1)), uns={"l": [[1, 2], [3, 4]], "lf": [[1.5], [np.nan]]}),
}


def _write_h5ad(adata, path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with anndata.settings.override(allow_write_nullable_strings=True):
            adata.write_h5ad(path, **kwargs)


@pytest.mark.parametrize("name", CASES)
def test_written_h5ad(tmp_path, name):
    path = tmp_path / f"{name}.h5ad"
    _write_h5ad(CASES[name](), path)
    _compare_h5ad(path)


@pytest.mark.parametrize("compression", ["gzip", "lzf"])
@pytest.mark.parametrize("name", ["non_string_categories", "nullable_columns", "obsm_dataframe", "uns_scalars",
                                  "layers_dtypes", "raw_subset", "wide_sparse", "zero_obs", "sparse_no_nonzeros"])
def test_written_h5ad_compressed(tmp_path, name, compression):
    path = tmp_path / f"{name}.h5ad"
    _write_h5ad(CASES[name](), path, compression=compression, compression_opts=None)
    _compare_h5ad(path)


@pytest.mark.parametrize("name", ["pairwise", "uns_sparse", "raw_subset", "layers_dtypes", "sparse_no_nonzeros",
                                  "sparse_zero_vars_csc"])
def test_sparse_array_setting_everywhere(tmp_path, name):
    """anndata.settings.use_sparse_array_on_read: csr_array / csc_array in every slot."""
    path = tmp_path / f"{name}.h5ad"
    _write_h5ad(CASES[name](), path)
    with anndata.settings.override(use_sparse_array_on_read=True):
        _compare_h5ad(path)


def test_write_elem_chunked_and_as_dense(tmp_path):
    """write_h5ad(as_dense=...) and write_elem with odd dataset options (small chunks,
    shuffle, maximum gzip level)."""
    adata = anndata.AnnData(sp.random(50, 30, density=0.3, format="csr", random_state=4, dtype=np.float64),
                            layers={"raw": sp.random(50, 30, density=0.1, format="csc", random_state=5)})
    adata.raw = adata
    path = tmp_path / "as_dense.h5ad"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata.write_h5ad(path, as_dense=("X", "raw/X"))
    _compare_h5ad(path)
    path = tmp_path / "chunked.h5ad"
    with h5py.File(path, "w") as f:
        anndata.io.write_elem(f, "/", adata, dataset_kwargs={"chunks": True, "shuffle": True,
                                                          "compression": "gzip", "compression_opts": 9})
    _compare_h5ad(path)


# ---------------------------------------------------------------------- hand-made encodings


def _encode(obj, encoding, version="0.2.0"):
    obj.attrs.update({"encoding-type": encoding, "encoding-version": version})
    return obj


def _base(path, n=4, m=3, x=True):
    adata = anndata.AnnData(np.arange(n * m, dtype=np.float32).reshape(n, m) if x else None,
                            obs=pd.DataFrame(index=_index(n)), var=pd.DataFrame(index=_index(m, "g")))
    _write_h5ad(adata, path)
    return path


ODD = {
    "uns_fixed_length_string_array": lambda f: _encode(f["uns"].create_dataset("s", data=np.array([b"ab", b"c"])), "string-array"),
    "uns_vlen_ascii_string_array": lambda f: _encode(f["uns"].create_dataset(
        "s", data=np.array([b"ab", b"c"], dtype=object), dtype=h5py.string_dtype("ascii")), "string-array"),
    "uns_fixed_length_utf8_string_array": lambda f: _encode(_fixed_utf8(f["uns"], "s", ["äb", "c"]), "string-array"),
    "uns_fixed_length_utf8_string_scalar": lambda f: _encode(_fixed_utf8(f["uns"], "s", "äb"), "string"),
    "uns_fixed_length_string_scalar": lambda f: _encode(f["uns"].create_dataset("s", data=np.bytes_(b"abc")), "string"),
    "uns_vlen_ascii_string_scalar": lambda f: _encode(f["uns"].create_dataset(
        "s", data=b"abc", dtype=h5py.string_dtype("ascii")), "string"),
    "uns_numeric_scalar_bool": lambda f: _encode(f["uns"].create_dataset("b", data=np.bool_(True)), "numeric-scalar"),
    "uns_numeric_scalar_big_endian": lambda f: _encode(f["uns"].create_dataset("b", data=np.array(3.5, ">f8")), "numeric-scalar"),
    "uns_array_big_endian": lambda f: _encode(f["uns"].create_dataset("b", data=np.arange(5, dtype=">i4")), "array"),
    "uns_array_fixed_bytes": lambda f: _encode(f["uns"].create_dataset("b", data=np.array([b"x", b"yz"])), "array"),
    "uns_legacy_dataset_bytes_one": lambda f: f["uns"].create_dataset("b", data=np.array([b"only"])),
    "uns_legacy_dataset_bytes_many": lambda f: f["uns"].create_dataset("b", data=np.array([b"a", b"bc"])),
    "uns_legacy_dataset_vlen_str": lambda f: f["uns"].create_dataset("b", data="text", dtype=h5py.string_dtype()),
    "uns_legacy_dataset_scalar_int": lambda f: f["uns"].create_dataset("b", data=np.int16(5)),
    "uns_legacy_dataset_compound": lambda f: f["uns"].create_dataset("b", data=np.array(
        [(1, b"a", 2.5), (2, b"bc", -np.inf)], dtype=[("i", "i4"), ("s", "S2"), ("f", "f8")])),
    "uns_legacy_dataset_scalar_bytes": lambda f: f["uns"].create_dataset("b", data=np.bytes_(b"abc")),
    "uns_legacy_dataset_scalar_byte": lambda f: f["uns"].create_dataset("b", data=np.bytes_(b"a")),
    "uns_legacy_dataset_vlen_ascii": lambda f: f["uns"].create_dataset("b", data=np.array([b"a", b"bc"], dtype=object),
                                                                       dtype=h5py.string_dtype("ascii")),
    "uns_legacy_dataset_vlen_ascii_scalar": lambda f: f["uns"].create_dataset("b", data=b"ab", dtype=h5py.string_dtype("ascii")),
    "uns_legacy_dataset_bytes_2d_one_row": lambda f: f["uns"].create_dataset("b", data=np.array([[b"a", b"bc"]])),
    "uns_legacy_dataset_empty_bytes": lambda f: f["uns"].create_dataset("b", data=np.array([], dtype="S1")),
    "uns_legacy_dataset_compound_vlen": lambda f: f["uns"].create_dataset("b", data=np.array(
        [(1, "ä"), (2, "bc")], dtype=[("i", "i4"), ("s", h5py.string_dtype())])),
    "uns_legacy_dataset_compound_nested": lambda f: f["uns"].create_dataset("b", data=np.array(
        [((1, 2.0), b"x")], dtype=[("p", [("a", "i2"), ("b", "f4")]), ("s", "S1")])),
    "uns_legacy_dataset_compound_array_field": lambda f: f["uns"].create_dataset("b", data=np.array(
        [([1, 2], b"xy")], dtype=[("a", "i4", (2,)), ("s", "S2", (1,))])),
    "uns_legacy_dataset_enum_bool": lambda f: f["uns"].create_dataset("b", data=np.array([True, False])),
    "uns_legacy_empty_dataset": lambda f: f["uns"].create_dataset("b", dtype="f4"),
    "uns_string_array_empty_vlen": lambda f: _encode(f["uns"].create_dataset("s", shape=(0,), dtype=h5py.string_dtype()), "string-array"),
    "uns_numeric_scalar_u8": lambda f: _encode(f["uns"].create_dataset("b", data=np.uint8(250)), "numeric-scalar"),
    "uns_array_scalar_shape": lambda f: _encode(f["uns"].create_dataset("b", data=np.float32(2)), "array"),
    "uns_vlen_string_array_never_written": lambda f: _encode(f["uns"].create_dataset("s", shape=(3,), dtype=h5py.string_dtype()), "string-array"),
    "uns_legacy_vlen_never_written": lambda f: f["uns"].create_dataset("s", shape=(3,), dtype=h5py.string_dtype()),
    "uns_space_padded_string_array": lambda f: _encode(_space_padded(f["uns"], "s", ["a", "bc"]), "string-array"),
    "uns_legacy_space_padded": lambda f: _space_padded(f["uns"], "s", ["a", "bc"]),
    "uns_fixed_string_with_nul_inside": lambda f: _encode(f["uns"].create_dataset("s", data=np.array([b"a\x00b", b"c"])), "string-array"),
    "X_csr_bool_data": lambda f: _sparse_x(f, "csr_matrix", np.int32, np.int32, data=np.array([True, False, True, True, True])),
    "X_csc_complex_data": lambda f: _sparse_x(f, "csc_matrix", np.int32, np.int32, data=np.arange(5) * 1j),
    "obs_categorical_uint8_codes_int_categories": lambda f: _categorical_obs(f, np.array([0, 1, 1, 0], np.uint8), np.array([3, 1]), False),
    "obs_categorical_ordered_as_int8": lambda f: _categorical_obs(f, np.array([0, 1, 1, -1], np.int8), np.array([2.5, 1.0]), np.int8(1)),
    "obs_index_is_a_column_too": lambda f: (_encode(f["obs"].create_dataset("k", data=np.array(_index(4, "k"), dtype=object),
                                                                            dtype=h5py.string_dtype()), "string-array"),
                                            _column_order(f["obs"], ["k"]), f["obs"].attrs.__setitem__("_index", "k")),
    "obs_duplicate_column_order": lambda f: (_encode(f["obs"].create_dataset("k", data=np.arange(4)), "array"),
                                             _column_order(f["obs"], ["k", "k"])),
    "X_scaleoffset_int": lambda f: (f.__delitem__("X"), _encode(f.create_dataset(
        "X", data=np.arange(12, dtype=np.int32).reshape(4, 3), chunks=(2, 2), scaleoffset=0), "array")),
    "X_scaleoffset_float": lambda f: (f.__delitem__("X"), _encode(f.create_dataset(
        "X", data=np.arange(12, dtype=np.float32).reshape(4, 3) / 3, chunks=(2, 2), scaleoffset=2), "array")),
    "uns_legacy_group": lambda f: f["uns"].create_group("g").create_dataset("x", data=np.arange(3)),
    "uns_rec_array": lambda f: _encode(f["uns"].create_dataset("r", data=np.array(
        [(1, b"a"), (2, b"bc")], dtype=[("i", "i4"), ("s", "S2")])), "rec-array"),
    "uns_rec_array_vlen": lambda f: _encode(f["uns"].create_dataset("r", data=np.array(
        [(1, "ä"), (2, "bc")], dtype=[("i", "i4"), ("s", h5py.string_dtype())])), "rec-array"),
    "X_big_endian": lambda f: (f.__delitem__("X"), _encode(f.create_dataset("X", data=np.arange(12, dtype=">f8").reshape(4, 3)), "array")),
    "X_partly_written_chunks": lambda f: (f.__delitem__("X"), _encode(f.create_dataset(
        "X", shape=(4, 3), dtype="f4", chunks=(1, 3), fillvalue=np.float32(-1.5)), "array"),
        f["X"].__setitem__((1, slice(None)), 2.0)),
    "X_csr_int64_indices": lambda f: _sparse_x(f, "csr_matrix", np.int64, np.int64),
    "X_csc_uint32_indices": lambda f: _sparse_x(f, "csc_matrix", np.uint32, np.uint32),
    "X_csr_int16_indices": lambda f: _sparse_x(f, "csr_matrix", np.int16, np.int64),
    "X_csr_shape_int32": lambda f: _sparse_x(f, "csr_matrix", np.int32, np.int32, shape_dtype=np.int32),
    "X_csr_unsorted_indices": lambda f: _sparse_x(f, "csr_matrix", np.int32, np.int32, unsorted=True),
    "obs_column_int_name": lambda f: _int_named_column(f),
    "uns_empty_dict_no_attrs": lambda f: f["uns"].create_group("e"),
    "uns_dict_v010_with_links": lambda f: (f["uns"].__setitem__("alias", f["obs"]),),
    "obs_nullable_int_2bit_mask": lambda f: _nullable_obs(f, "nullable-integer", np.arange(4, dtype=np.int32), np.array([0, 1, 0, 1], bool)),
    "obs_nullable_bool_int_values": lambda f: _nullable_obs(f, "nullable-boolean", np.array([1, 0, 1, 1], np.uint8), np.array([0, 1, 0, 0], bool)),
}


def _fixed_utf8(group, name, value):
    """A fixed-length UTF-8 string dataset (h5py writes no such thing from numpy)."""
    data = np.array(value.encode() if isinstance(value, str) else [v.encode() for v in value], "S3")
    ds = group.create_dataset(name, data.shape, dtype=h5py.string_dtype("utf-8", 3))
    ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, data, mtype=ds.id.get_type())
    return ds


def _space_padded(group, name, values, size=4):
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(size)
    tid.set_strpad(h5py.h5t.STR_SPACEPAD)
    dsid = h5py.h5d.create(group.id, name.encode(), tid, h5py.h5s.create_simple((len(values),)))
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([v.ljust(size).encode() for v in values], f"S{size}"), mtype=tid)
    return group[name]


def _categorical_obs(f, codes, categories, ordered):
    g = _encode(f["obs"].create_group("cu"), "categorical", "0.2.0")
    g.attrs["ordered"] = ordered
    _encode(g.create_dataset("codes", data=codes), "array")
    _encode(g.create_dataset("categories", data=categories), "array")
    _column_order(f["obs"], ["cu"])


def _column_order(group, names):
    group.attrs.create("column-order", np.array(names, dtype=object), dtype=h5py.string_dtype())


def _sparse_x(f, encoding, index_dtype, indptr_dtype, shape_dtype=np.int64, unsorted=False, data=None):
    del f["X"]
    g = _encode(f.create_group("X"), encoding, "0.1.0")
    n_major = 4 if encoding == "csr_matrix" else 3
    indptr = np.array([0, 2, 2, 3, 5][: n_major + 1], dtype=indptr_dtype)
    indptr[-1] = 5 if n_major == 4 else indptr[-1]
    if n_major == 3:
        indptr = np.array([0, 2, 3, 5], dtype=indptr_dtype)
    indices = np.array([0, 2, 1, 0, 1] if not unsorted else [2, 0, 1, 1, 0], dtype=index_dtype)
    g["data"] = np.arange(1, 6, dtype=np.float32) if data is None else data
    g["indices"] = indices
    g["indptr"] = indptr
    g.attrs["shape"] = np.array([4, 3], dtype=shape_dtype)


def _int_named_column(f):
    """column-order holding a name that is not a string (an int array)."""
    g = f["obs"]
    _encode(g.create_dataset("7", data=np.arange(4)), "array")
    g.attrs["column-order"] = np.array(["7"], dtype=object)


def _nullable_obs(f, encoding, values, mask):
    g = _encode(f["obs"].create_group("n"), encoding, "0.1.0")
    _encode(g.create_dataset("values", data=values), "array")
    _encode(g.create_dataset("mask", data=mask), "array")
    f["obs"].attrs["column-order"] = np.array(["n"], dtype=object)


@pytest.mark.parametrize("name", ODD)
def test_hand_made_encodings(tmp_path, name):
    path = _base(tmp_path / f"{name}.h5ad")
    with h5py.File(path, "a") as f:
        ODD[name](f)
    if name.endswith("array_field"):  # structured values with array fields: compared field by field
        want, got = anndata.read_h5ad(path).uns.pop("b"), h5turbo.read_h5ad(path).uns.pop("b")
        assert got.dtype == want.dtype and got.shape == want.shape
        for field in want.dtype.names:
            assert np.array_equal(got[field], want[field]), field
        return
    _compare_h5ad(path)


def _anndata07(path, ordered=True, with_nan=True):
    """anndata 0.7-style obs: dataframe 0.1.0, categorical columns as code datasets
    whose 'categories' attribute references a dataset under __categories; var a
    dataframe group without encoding attributes."""
    with h5py.File(path, "w") as f:
        f.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})
        f["X"] = np.arange(12, dtype=np.float32).reshape(4, 3)
        obs = _encode(f.create_group("obs"), "dataframe", "0.1.0")
        obs.attrs["_index"] = "cell"
        _column_order(obs, ["ct", "n"])
        obs.create_dataset("cell", data=np.array(_index(4), dtype=object), dtype=h5py.string_dtype())
        cats = obs.create_group("__categories")
        cats.create_dataset("ct", data=np.array(["T", "B"], dtype=object), dtype=h5py.string_dtype())
        if ordered:
            cats["ct"].attrs["ordered"] = True
        codes = np.array([0, 1, -1 if with_nan else 0, 1], dtype=np.int8)
        obs.create_dataset("ct", data=codes)
        obs["ct"].attrs["categories"] = cats["ct"].ref
        obs.create_dataset("n", data=np.arange(4.0))
        var = _encode(f.create_group("var"), "dataframe", "0.1.0")
        var.attrs["_index"] = "_index"
        _column_order(var, [])
        var.create_dataset("_index", data=np.array(_index(3, "g"), dtype=object), dtype=h5py.string_dtype())
        f.create_group("uns")
        f.create_group("obsm")
        f.create_group("varm")
    return path


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("with_nan", [True, False])
def test_anndata07_categoricals(tmp_path, ordered, with_nan):
    _compare_h5ad(_anndata07(tmp_path / "a07.h5ad", ordered, with_nan))


def test_dataframe_without_encoding_attributes(tmp_path):
    """obs a group with _index/column-order but no encoding attributes."""
    path = _anndata07(tmp_path / "noenc.h5ad")
    with h5py.File(path, "a") as f:
        for key in ("encoding-type", "encoding-version"):
            del f["var"].attrs[key]
    _compare_h5ad(path)


# ---------------------------------------------------------------------- broken h5ad


def _sparse_member(member, value):
    def edit(f):
        g = f["X"]
        del g[member]
        g[member] = value
    return edit


def _make_sparse_base(path):
    adata = anndata.AnnData(sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 3], [4, 5, 0], [0, 6, 0]], np.float32)),
                            obs=pd.DataFrame({"c": pd.Categorical(list("abab"))}, index=_index(4)))
    _write_h5ad(adata, path)
    return path


BROKEN = {
    "indptr_decreasing": (_sparse_member("indptr", np.array([0, 2, 1, 5, 6])), ("/X", "indptr")),
    "indptr_not_from_zero": (_sparse_member("indptr", np.array([1, 2, 3, 5, 6])), ("/X", "indptr")),
    "indptr_short": (_sparse_member("indptr", np.array([0, 2, 6])), ("/X", "indptr")),
    "indptr_past_data": (_sparse_member("indptr", np.array([0, 2, 3, 5, 9])), ("/X",)),
    "indptr_float": (_sparse_member("indptr", np.array([0.0, 2, 3, 5, 6])), ("/X",)),
    "indptr_2d": (_sparse_member("indptr", np.array([[0, 2, 3, 5, 6]])), ("/X",)),
    "data_short": (_sparse_member("data", np.ones(4, np.float32)), ("/X",)),
    "indices_long": (_sparse_member("indices", np.zeros(9, np.int32)), ("/X",)),
    "indices_negative": (_sparse_member("indices", np.array([0, -2, 2, 0, 1, 1], np.int32)), ("/X", "indices")),
    "data_missing": (lambda f: f["X"].__delitem__("data"), ("/X",)),
    "indices_a_group": (lambda f: (f["X"].__delitem__("indices"), f["X"].create_group("indices")), ("/X",)),
    "shape_negative": (lambda f: f["X"].attrs.__setitem__("shape", np.array([-4, 3])), ("/X",)),
    "shape_too_big_for_obs": (lambda f: f["X"].attrs.__setitem__("shape", np.array([5, 3])), ("broken",)),
    "X_missing": (lambda f: f.__delitem__("X"), ()),
    "X_dense_wrong_shape": (lambda f: (f.__delitem__("X"), _encode(f.create_dataset("X", data=np.zeros((3, 3))), "array")), ()),
    "X_a_string": (lambda f: (f.__delitem__("X"), _encode(f.create_dataset("X", data="x", dtype=h5py.string_dtype()), "string")), ()),
    "obs_index_short": (lambda f: (f["obs"].__delitem__("_index"), _encode(f["obs"].create_dataset(
        "_index", data=np.array(["a", "b"], dtype=object), dtype=h5py.string_dtype()), "string-array")), ("/obs",)),
    "obs_missing_column": (lambda f: f["obs"].__delitem__("c"), ("/obs", "'c'")),
    "categories_missing": (lambda f: f["obs/c"].__delitem__("categories"), ("/obs/c", "categories")),
    "categorical_codes_float": (lambda f: (f["obs/c"].__delitem__("codes"), _encode(f["obs/c"].create_dataset(
        "codes", data=np.array([0.0, 1, 0, 1])), "array")), ("/obs/c",)),
    "codes_2d": (lambda f: (f["obs/c"].__delitem__("codes"), _encode(f["obs/c"].create_dataset(
        "codes", data=np.zeros((2, 2), np.int8)), "array")), ("/obs",)),
    "encoding_version_unknown": (lambda f: f["X"].attrs.__setitem__("encoding-version", "9.9.9"), ("/X", "9.9.9")),
    "obs_a_dataset_of_ints": (lambda f: (f.__delitem__("obs"), f.create_dataset("obs", data=np.arange(4))), ("/obs",)),
    "column_order_names_a_group": (lambda f: (f["obs"].attrs.__setitem__("column-order", np.array(["c", "x"], dtype=object)),
                                              f["obs"].create_group("x")), ("/obs", "'x'")),
}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_h5ad_is_an_error_naming_the_element(tmp_path, name):
    edit, names = BROKEN[name]
    path = _make_sparse_base(tmp_path / "broken.h5ad")
    with h5py.File(path, "a") as f:
        edit(f)
    (want, want_exc), (got, got_exc) = _both(lambda: anndata.read_h5ad(path), lambda: h5turbo.read_h5ad(path))
    if got_exc is None:
        # anndata reads it whole too (X optional; a dense X of its own shape): the same AnnData
        assert want_exc is None, f"anndata raised {want_exc!r}; h5turbo read it without complaint"
        assert_same(got, want)
        return
    assert isinstance(got_exc, h5turbo.Error), f"{got_exc!r} (anndata: {want_exc!r})"
    message = str(got_exc)
    assert "broken.h5ad" in message, message
    for part in names:
        assert part in message, message


# ---------------------------------------------------------------------- 10x


def _strings(values, kind):
    if kind == "fixed":
        return np.array([v.encode() for v in values])
    return np.array([v.encode() for v in values], dtype=object)


def _write_10x(path, version=3, strings="fixed", data_dtype=np.int32, index_dtype=np.int64, extra=True,
               probes=False, filtered=False, genomes=("GRCh38", "mm10"), n_cells=6, n_features=7):
    rng = np.random.default_rng(11)
    dense = rng.integers(0, 4, (n_features, n_cells)) * (rng.random((n_features, n_cells)) > 0.5)
    m = sp.csc_matrix(dense.astype(data_dtype))
    sdt = None if strings == "fixed" else h5py.string_dtype("ascii" if strings == "vlen-ascii" else "utf-8")
    barcodes = [f"AAAC{i}-1" for i in range(n_cells)]
    names = [f"Gene{i % 5}" for i in range(n_features)]  # repeated names, as real files have
    ids = [f"ENSG{i:05d}" for i in range(n_features)]
    with h5py.File(path, "w") as f:
        g = f.create_group("matrix" if version == 3 else genomes[0])
        g["data"] = m.data
        g["indices"] = m.indices.astype(index_dtype)
        g["indptr"] = m.indptr.astype(index_dtype)
        g["shape"] = np.array([n_features, n_cells], dtype=np.int32)
        g.create_dataset("barcodes", data=_strings(barcodes, strings), dtype=sdt)
        if version == 2:
            g.create_dataset("gene_names", data=_strings(names, strings), dtype=sdt)
            g.create_dataset("genes", data=_strings(ids, strings), dtype=sdt)
            return path
        feats = g.create_group("features")
        feats.create_dataset("name", data=_strings(names, strings), dtype=sdt)
        feats.create_dataset("id", data=_strings(ids, strings), dtype=sdt)
        types = ["Gene Expression"] * (n_features - 2) + ["Antibody Capture", "CRISPR Guide Capture"]
        feats.create_dataset("feature_type", data=_strings(types, strings), dtype=sdt)
        feats.create_dataset("genome", data=_strings([genomes[i % len(genomes)] for i in range(n_features)], strings), dtype=sdt)
        feats["_all_tag_keys"] = np.array([b"genome", b"pattern"])
        if extra:
            feats.create_dataset("pattern", data=_strings([f"p{i}" for i in range(n_features)], strings), dtype=sdt)
            feats["target_flag"] = np.arange(n_features) % 2 == 0
            feats["score"] = np.arange(n_features, dtype=np.float32)
            sets = feats.create_group("target_sets")
            sets["panel"] = np.arange(3, dtype=np.uint32)
        if probes:
            feats.create_dataset("gene_id", data=_strings([f"G{i}" for i in range(n_features)], strings), dtype=sdt)
            feats["probe_region"] = _strings(["spliced"] * n_features, "fixed")
        if filtered:
            g["filtered_barcodes"] = np.arange(n_cells) % 3 == 0
    return path


TENX_FILES = {
    "v3_fixed": {}, "v3_vlen_utf8": {"strings": "vlen-utf8"}, "v3_vlen_ascii": {"strings": "vlen-ascii"},
    "v3_float_data": {"data_dtype": np.float64}, "v3_uint16_data": {"data_dtype": np.uint16},
    "v3_int64_data": {"data_dtype": np.int64}, "v3_int32_indices": {"index_dtype": np.int32},
    "v3_uint32_indices": {"index_dtype": np.uint32}, "v3_no_extra": {"extra": False},
    "v3_probes_filtered": {"probes": True, "filtered": True}, "v3_one_genome": {"genomes": ("GRCh38",)},
    "v3_no_cells": {"n_cells": 0}, "v2": {"version": 2}, "v2_vlen": {"version": 2, "strings": "vlen-utf8"},
}
TENX_ARGS = [{}, {"gex_only": False}, {"genome": "mm10"}, {"genome": "GRCh38", "gex_only": False}, {"genome": "hg19"}]


@pytest.fixture(scope="module")
def tenx_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tenx")
    return {name: _write_10x(folder / f"{name}.h5", **kwargs) for name, kwargs in TENX_FILES.items()}


@pytest.mark.parametrize("kwargs", TENX_ARGS, ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items()) or "default")
@pytest.mark.parametrize("name", TENX_FILES)
def test_10x_hand_made(tenx_files, name, kwargs):
    import scanpy

    path = tenx_files[name]
    (want, want_exc), (got, got_exc) = _both(lambda: scanpy.read_10x_h5(path, **kwargs),
                                             lambda: h5turbo.read_10x_h5(path, threads=2, **kwargs))
    if want_exc is not None:
        assert got_exc is not None, f"scanpy raised {want_exc!r}, h5turbo read {got!r}"
        assert type(got_exc) is type(want_exc) or isinstance(got_exc, h5turbo.Error), f"{want_exc!r} / {got_exc!r}"
        return
    assert got_exc is None, f"scanpy read it, h5turbo raised {got_exc!r}"
    assert_same(got, want)
    assert list(got.var.columns) == list(want.var.columns)
    assert list(got.var.dtypes.astype(str)) == list(want.var.dtypes.astype(str))


# ---------------------------------------------------------------------- loom


def _write_loom_h5py(path, strings="fixed", layer_dtype=np.int32, attr_2d_one=False):
    """A loom file as other writers (loomR, loompy 2, velocyto) leave it."""
    rng = np.random.default_rng(12)
    genes, cells = 9, 7
    sdt = None if strings == "fixed" else h5py.string_dtype()
    enc = (lambda vs: np.array([v.encode() for v in vs])) if strings == "fixed" else \
        (lambda vs: np.array(list(vs), dtype=object))
    with h5py.File(path, "w") as f:
        f.create_dataset("matrix", data=rng.poisson(1, (genes, cells)).astype(np.float32), chunks=(4, 4), compression="gzip")
        layers = f.create_group("layers")
        layers["spliced"] = rng.poisson(1, (genes, cells)).astype(layer_dtype)
        layers["ambiguous"] = (rng.random((genes, cells)) > 0.7).astype(np.uint8)
        ra = f.create_group("row_attrs")
        ra.create_dataset("Gene", data=enc([f"g&lt;{i}" for i in range(genes)]), dtype=sdt)
        ra.create_dataset("Accession", data=enc([f"ENS{i}" for i in range(genes)]), dtype=sdt)
        ra["Selected"] = (np.arange(genes) % 2).astype(np.int64)
        ra["flag"] = np.arange(genes) % 3 == 0
        ra["pcs"] = rng.random((genes, 3))
        ca = f.create_group("col_attrs")
        ca.create_dataset("CellID", data=enc([f"cell{i}" for i in range(cells)]), dtype=sdt)
        ca.create_dataset("Cluster", data=enc(["a", "b", "a", "c", "a", "b", "a"]), dtype=sdt)
        ca["nUMI"] = rng.random(cells).astype(np.float32)
        ca["const"] = np.full(cells, 5, dtype=np.int16)
        ca["tsne_1"], ca["tsne_2"] = rng.random(cells), rng.random(cells)
        if attr_2d_one:
            ca["one_column"] = rng.random((cells, 1))
        f.create_group("row_graphs")
        f.create_group("col_graphs")
        f.create_group("attrs")
        f.attrs["LOOM_SPEC_VERSION"] = "3.0.0"
    return path


LOOM_FILES = {"fixed": {}, "vlen": {"strings": "vlen"}, "float_layer": {"layer_dtype": np.float64},
              "uint16_layer": {"layer_dtype": np.uint16}, "column_of_one": {"attr_2d_one": True}}
LOOM_ARGS = [{}, {"sparse": False}, {"cleanup": True}, {"X_name": "ambiguous", "dtype": "int32"},
             {"obs_names": "Cluster", "var_names": "Accession"},
             {"obsm_mapping": {"tsne": ["tsne_1", "tsne_2"]}, "varm_mapping": {"sel": ["Selected"]}}]


@pytest.fixture(scope="module")
def loom_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("loom")
    return {name: _write_loom_h5py(folder / f"{name}.loom", **kwargs) for name, kwargs in LOOM_FILES.items()}


@pytest.mark.parametrize("kwargs", LOOM_ARGS, ids=lambda k: "-".join(map(str, k)) or "default")
@pytest.mark.parametrize("name", LOOM_FILES)
def test_loom_hand_made(loom_files, name, kwargs):
    path = loom_files[name]
    (want, want_exc), (got, got_exc) = _both(lambda: anndata.read_loom(path, validate=False, **kwargs),
                                             lambda: h5turbo.read_loom(path, **kwargs))
    if want_exc is not None:
        assert got_exc is not None, f"anndata raised {want_exc!r}, h5turbo read {got!r}"
        assert isinstance(got_exc, (type(want_exc), h5turbo.Error)), f"{want_exc!r} / {got_exc!r}"
        return
    assert got_exc is None, f"anndata read it, h5turbo raised {got_exc!r}"
    assert_same(got, want)
    assert list(got.obs.dtypes.astype(str)) == list(want.obs.dtypes.astype(str))
    assert got.obs.index.name == want.obs.index.name and got.var.index.name == want.var.index.name


LOOM_EDITS = {
    "utf8_vlen_attr": lambda f: f["col_attrs"].create_dataset(
        "u", data=np.array(["ä", "b&amp;", "✓", "x", "y", "z", "w"], dtype=object), dtype=h5py.string_dtype()),
    "utf8_fixed_bytes_attr": lambda f: f["col_attrs"].create_dataset(
        "u", data=np.array(["ä".encode(), b"b", b"c", b"x", b"y", b"z", b"w"])),
    "string_2d_attr": lambda f: f["col_attrs"].create_dataset("u", data=np.array([["a", "b"]] * 7, dtype=object),
                                                              dtype=h5py.string_dtype()),
    "int8_attr": lambda f: f["col_attrs"].create_dataset("u", data=np.arange(7, dtype=np.int8)),
    "no_cell_ids": lambda f: f["col_attrs"].__delitem__("CellID"),
    "numeric_cell_ids": lambda f: (f["col_attrs"].__delitem__("CellID"), f["col_attrs"].create_dataset("CellID", data=np.arange(7))),
    "repeated_cell_ids": lambda f: (f["col_attrs"].__delitem__("CellID"), f["col_attrs"].create_dataset("CellID", data=np.array([b"a"] * 7))),
    "3d_attr": lambda f: f["col_attrs"].create_dataset("u", data=np.zeros((7, 2, 2))),
    "int64_matrix": lambda f: (f.__delitem__("matrix"), f.create_dataset("matrix", data=np.arange(63, dtype=np.int64).reshape(9, 7))),
    "empty_string_attr": lambda f: f["col_attrs"].create_dataset("u", data=np.array([b""] * 7)),
    "nan_attr": lambda f: f["col_attrs"].create_dataset("u", data=np.array([np.nan] * 7)),
    "scalar_attr": lambda f: f["col_attrs"].create_dataset("u", data=3),
    "layer_of_another_shape": lambda f: f["layers"].create_dataset("bad", data=np.zeros((3, 3))),
}


@pytest.mark.parametrize("kwargs", [{}, {"cleanup": True}, {"sparse": False}], ids=["default", "cleanup", "dense"])
@pytest.mark.parametrize("name", LOOM_EDITS)
def test_loom_edited(tmp_path, name, kwargs):
    """Agreement with anndata.read_loom (validate=False) where it reads the file; where it
    or loompy cannot (or reads a layer of the wrong shape), an h5turbo.Error naming the
    file and the attribute or layer."""
    path = _write_loom_h5py(tmp_path / "edited.loom", strings="vlen")
    with h5py.File(path, "a") as f:
        LOOM_EDITS[name](f)
    (want, want_exc), (got, got_exc) = _both(lambda: anndata.read_loom(path, validate=False, **kwargs),
                                             lambda: h5turbo.read_loom(path, **kwargs))
    if name in ("scalar_attr", "layer_of_another_shape"):
        assert isinstance(got_exc, h5turbo.Error), f"{got_exc!r} (anndata: {want_exc!r})"
        assert "edited.loom" in str(got_exc) and ("/col_attrs/u" in str(got_exc) or "/layers/bad" in str(got_exc))
        return
    assert want_exc is None and got_exc is None, f"anndata: {want_exc!r}, h5turbo: {got_exc!r}"
    assert_same(got, want)


# ---------------------------------------------------------------------- write_elem into uns, links


UNS_VALUES = {
    "categorical": lambda: pd.Categorical(["a", "b", None], ordered=True),
    "empty_categorical": lambda: pd.Categorical([], categories=["a"]),
    "nullable_int": lambda: pd.array([1, None], dtype="Int8"),
    "nullable_bool": lambda: pd.array([True, None], dtype="boolean"),
    "nullable_str": lambda: pd.array(["x", None], dtype="string"),
    "np_str_0d": lambda: np.str_("abc"),
    "masked_array": lambda: np.ma.masked_array([1, 2], mask=[0, 1]),
    "csr_array": lambda: sp.csr_array(np.eye(3)),
    "csc_array": lambda: sp.csc_array(np.eye(3, dtype=np.float32)),
    "nested_anndata": lambda: anndata.AnnData(np.ones((2, 2)), obs=pd.DataFrame(
        {"c": pd.Categorical(["a", "b"])}, index=["x", "y"]), uns={"deep": {"k": 1}}),
    "recarray": lambda: np.rec.fromarrays([np.arange(3), np.array(["a", "b", "c"])], names="i,s"),
    "frame_int_index": lambda: pd.DataFrame({"a": [1]}, index=pd.Index([5])),
    "frame_int_categories": lambda: pd.DataFrame({"a": pd.Categorical([1, 2])}, index=["p", "q"]),
    "mixed_list": lambda: [1, "a"],
    "uint64_max": lambda: 2**64 - 1,
}


@pytest.mark.parametrize("name", UNS_VALUES)
def test_write_elem_into_uns(tmp_path, name):
    path = tmp_path / f"{name}.h5ad"
    _write_h5ad(anndata.AnnData(np.ones((2, 2))), path)
    with anndata.settings.override(allow_write_nullable_strings=True):
        with h5py.File(path, "a") as f:
            anndata.io.write_elem(f["uns"], "v", UNS_VALUES[name]())
    _compare_h5ad(path)


def _other_file(tmp_path):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        _encode(f.create_dataset("arr", data=np.arange(3)), "array")
    return other


LINKS = {
    "X_soft_link_to_a_layer": lambda f, tmp: (
        _encode(f["layers"].create_dataset("c", data=np.ones((4, 3), np.float32)), "array"),
        f.__delitem__("X"), f.__setitem__("X", h5py.SoftLink("/layers/c"))),
    "uns_external_link": lambda f, tmp: f["uns"].__setitem__("e", h5py.ExternalLink(str(_other_file(tmp)), "/arr")),
    "uns_dangling_soft_link": lambda f, tmp: f["uns"].__setitem__("d", h5py.SoftLink("/nowhere")),
    "uns_dangling_external_link": lambda f, tmp: f["uns"].__setitem__("e", h5py.ExternalLink(str(tmp / "missing.h5"), "/arr")),
    "uns_committed_datatype": lambda f, tmp: f["uns"].__setitem__("t", np.dtype("f4")),
    "raw_group_without_attributes": lambda f, tmp: f.create_group("raw").create_dataset("X", data=np.ones((4, 5))),
    "encoding_attribute_fixed_bytes": lambda f, tmp: f["X"].attrs.__setitem__("encoding-type", np.bytes_(b"array")),
    "dict_of_unknown_version": lambda f, tmp: _encode(f["uns"].create_group("g"), "dict", "0.2.0"),
    "root_with_other_attributes": lambda f, tmp: f.attrs.__setitem__("note", "hi"),
}


@pytest.mark.parametrize("name", LINKS)
def test_links_and_odd_objects(tmp_path, name):
    path = _base(tmp_path / f"{name}.h5ad")
    with h5py.File(path, "a") as f:
        LINKS[name](f, tmp_path)
    _compare_h5ad(path)


def test_broken_raw_names_raw(tmp_path):
    path = _base(tmp_path / "broken.h5ad")
    with h5py.File(path, "a") as f:
        raw = f.create_group("raw")
        raw["X"] = np.ones((4, 2))
        raw["var"] = np.array([(b"a", 1), (b"b", 2)], dtype=[("index", "S1"), ("n", "i4")])
    with pytest.raises(h5turbo.FormatError, match=r"broken\.h5ad: /raw"):
        h5turbo.read_h5ad(path)


# ---------------------------------------------------------------------- anndata < 0.7 (h5sparse groups, raw.X)


def _h5sparse(f, name, m, fmt):
    g = f.create_group(name)
    g.attrs["h5sparse_format"] = fmt
    g.attrs["h5sparse_shape"] = np.array(m.shape)
    g["data"], g["indices"], g["indptr"] = m.data, m.indices, m.indptr


def _legacy_h5sparse_file(path, fmt, raw=True, raw_shape=None):
    n, m = 6, 3
    with h5py.File(path, "w") as f:
        _h5sparse(f, "X", sp.random(n, m, density=0.5, format=fmt, random_state=1, dtype=np.float32), fmt)
        f["obs"] = np.array([(f"c{i}".encode(), i, i % 2) for i in range(n)],
                            dtype=[("index", "S4"), ("n_genes", "i8"), ("louvain", "i1")])
        f["var"] = np.array([(f"g{i}".encode(), i * 1.5) for i in range(m)], dtype=[("index", "S4"), ("mean", "f4")])
        f.create_group("uns")
        f["uns/louvain_categories"] = np.array([b"T", b"B"])
        f["uns/louvain_colors"] = np.array([b"#fff", b"#000"])
        f["obsm"] = np.array([(np.arange(2.0),)] * n, dtype=[("X_pca", "f8", (2,))])
        f["varm"] = np.array([(np.arange(2.0),)] * m, dtype=[("PCs", "f8", (2,))])
        f.create_group("layers")
        if raw:
            rs = raw_shape or (n, m + 1)
            _h5sparse(f, "raw.X", sp.random(*rs, density=0.5, format=fmt, random_state=2), fmt)
            f["raw.var"] = np.array([(f"r{i}".encode(),) for i in range(rs[1])], dtype=[("index", "S4")])
            f["raw.varm"] = np.array([(np.arange(2.0),)] * rs[1], dtype=[("PCs", "f8", (2,))])
    return path


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("raw", [True, False])
def test_anndata05_h5sparse_file(tmp_path, fmt, raw):
    _compare_h5ad(_legacy_h5sparse_file(tmp_path / "old.h5ad", fmt, raw))


def test_anndata05_raw_of_other_rows_is_an_error(tmp_path):
    path = _legacy_h5sparse_file(tmp_path / "old.h5ad", "csr", raw_shape=(4, 2))
    with pytest.raises(h5turbo.FormatError, match=r"old\.h5ad: /raw\.X"):
        h5turbo.read_h5ad(path)
    with pytest.raises(ValueError):
        anndata.read_h5ad(path)


# ---------------------------------------------------------------------- many chunks


def test_many_small_chunks(tmp_path):
    """Arrays of many chunks with partial edge chunks, read chunk-parallel."""
    rng = np.random.default_rng(9)
    x = sp.random(3001, 1203, density=0.02, format="csr", random_state=9, dtype=np.float32)
    adata = anndata.AnnData(x, layers={"dense": np.zeros((3001, 1203), np.float32),
                                       "csc": x.tocsc().astype(np.float64)},
                            obsm={"pca": rng.random((3001, 7))})
    path = tmp_path / "chunks.h5ad"
    with h5py.File(path, "w") as f:
        anndata.io.write_elem(f, "/", adata, dataset_kwargs={"chunks": True, "compression": "gzip", "shuffle": True})
        del f["layers/dense"]
        _encode(f["layers"].create_dataset("dense", data=rng.random((3001, 1203)).astype(np.float32),
                                           chunks=(97, 61), compression="gzip"), "array")
    _compare_h5ad(path)


# ---------------------------------------------------------------------- undecodable strings


def _fixed_cset(group, name, values, cset, size=3):
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(size)
    tid.set_cset(cset)
    dsid = h5py.h5d.create(group.id, name.encode(), tid, h5py.h5s.create_simple((len(values),)))
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(values, dtype=f"S{size}"), mtype=tid)
    return group[name]


UNDECODABLE = {
    "ascii_string_array_with_utf8": lambda f: _encode(_fixed_cset(f["uns"], "s", ["ä".encode(), b"ok"], h5py.h5t.CSET_ASCII), "string-array"),
    "utf8_string_array_invalid": lambda f: _encode(_fixed_cset(f["uns"], "s", [b"\xff", b"ok"], h5py.h5t.CSET_UTF8), "string-array"),
    "utf8_cut_inside_a_character": lambda f: _encode(_fixed_cset(f["uns"], "s", ["aä".encode()[:2], b"ok"], h5py.h5t.CSET_UTF8, 2), "string-array"),
    "legacy_ascii_with_utf8": lambda f: _fixed_cset(f["uns"], "s", ["ä".encode(), b"ok"], h5py.h5t.CSET_ASCII),
    "string_scalar_invalid_utf8": lambda f: _encode(f["uns"].create_dataset("s", data=b"\xff", dtype=h5py.string_dtype()), "string"),
}


@pytest.mark.parametrize("name", UNDECODABLE)
def test_undecodable_strings_are_format_errors(tmp_path, name):
    """anndata raises a bare UnicodeDecodeError; h5turbo a FormatError naming /uns/s."""
    path = _base(tmp_path / "broken.h5ad")
    with h5py.File(path, "a") as f:
        UNDECODABLE[name](f)
    with pytest.raises(UnicodeDecodeError):
        anndata.read_h5ad(path)
    with pytest.raises(h5turbo.FormatError, match=r"broken\.h5ad: /uns/s: .*codec can't decode"):
        h5turbo.read_h5ad(path)


def test_long_strings_and_thread_counts(tmp_path):
    path = _base(tmp_path / "long.h5ad")
    with h5py.File(path, "a") as f:
        _encode(f["uns"].create_dataset("s", data=np.array(["x" * 200000, "y"], dtype=object),
                                        dtype=h5py.string_dtype(), compression="gzip"), "string-array")
    want = anndata.read_h5ad(path)
    for threads in (1, 3):
        assert_same(h5turbo.read_h5ad(path, threads=threads), want)


# ---------------------------------------------------------------------- missing slots, nested AnnData


def _nested(f, extra=None):
    inner = anndata.AnnData(np.ones((3, 2)), obs=pd.DataFrame(index=list("abc")), layers={"l": np.zeros((3, 2))})
    inner.raw = inner
    anndata.io.write_elem(f["uns"], "v", inner)
    if extra == "group":
        f["uns/v"].create_group("junk")
    elif extra == "raw.X":
        f["uns/v"].create_dataset("raw.X", data=np.ones((3, 2)))


@pytest.mark.parametrize("extra", [None, "raw.X"])
def test_nested_anndata_in_uns(tmp_path, extra):
    path = _base(tmp_path / "nested.h5ad")
    with h5py.File(path, "a") as f:
        _nested(f, extra)
    _compare_h5ad(path)


def test_nested_anndata_with_a_foreign_member_is_an_error(tmp_path):
    path = _base(tmp_path / "nested.h5ad")
    with h5py.File(path, "a") as f:
        _nested(f, "group")
    with pytest.raises(TypeError):
        anndata.read_h5ad(path)
    with pytest.raises(h5turbo.FormatError, match=r"nested\.h5ad: /uns/v.*junk"):
        h5turbo.read_h5ad(path)


def test_an_empty_hdf5_file_is_not_an_h5ad_file(tmp_path):
    path = tmp_path / "empty.h5"
    h5py.File(path, "w").close()
    with pytest.raises(KeyError):
        anndata.read_h5ad(path)
    with pytest.raises(h5turbo.FormatError, match=r"empty\.h5"):
        h5turbo.read_h5ad(path)


@pytest.mark.parametrize("drop", [("var",), ("X",), ("obs",), ("obs", "X")])
def test_missing_slots(tmp_path, drop):
    """Without var or X anndata reads the file (X None); without obs anndata raises
    KeyError from its own compatibility check (isinstance(f['obs'], h5py.Dataset)),
    where h5turbo builds the AnnData from the slots present: either way no bare error."""
    path = _base(tmp_path / "missing.h5ad")
    with h5py.File(path, "a") as f:
        for key in drop:
            del f[key]
    if "obs" not in drop:
        _compare_h5ad(path)
        return
    with pytest.raises(KeyError):
        anndata.read_h5ad(path)
    got = h5turbo.read_h5ad(path)
    assert got.n_vars == 3 and got.n_obs == (4 if "X" not in drop else 0)
    assert list(got.var_names) == _index(3, "g")


def _rm(path):
    return lambda f: f.__delitem__(path)


def _repl(path, data):
    return lambda f: (f.__delitem__(path), f.__setitem__(path, data))


TENX_EDITS = {
    "few_barcodes": _repl("matrix/barcodes", np.array([b"a", b"b"])),
    "many_names": _repl("matrix/features/name", np.array([b"x"] * 9)),
    "shape_of_3": _repl("matrix/shape", np.array([7, 6, 1], dtype=np.int32)),
    "data_2d": _repl("matrix/data", np.ones((1, 1))),
    "no_features_group": _rm("matrix/features"),
    "no_feature_type": _rm("matrix/features/feature_type"),
    "no_genome_column": _rm("matrix/features/genome"),
    "extra_column_of_other_length": _repl("matrix/features/pattern", np.array([b"p"] * 3)),
    "extra_column_2d": lambda f: f["matrix/features"].__setitem__("q2", np.zeros((7, 2))),
    "features_data_shadows_matrix_data": lambda f: f["matrix/features"].__setitem__("data", np.array([b"z"] * 7)),
    "integer_barcodes": _repl("matrix/barcodes", np.arange(6)),
    "filtered_barcodes_ints": lambda f: f["matrix"].__setitem__("filtered_barcodes", np.array([0, 1, 2, 0, 1, 1])),
    "filtered_barcodes_strings": lambda f: f["matrix"].__setitem__("filtered_barcodes", np.array([b"True", b"", b"x", b"", b"", b""])),
    "extra_float_column": lambda f: f["matrix/features"].__setitem__("q", np.array([0.5] * 7)),
    # scanpy reads these without a check: h5turbo refuses a decreasing indptr, takes a (2, 1) shape
    "indptr_decreasing": lambda f: f["matrix/indptr"].__setitem__(slice(1, 3), np.array([3, 1])),
    "shape_2x1": _repl("matrix/shape", np.array([[7], [6]], dtype=np.int32)),
}


@pytest.mark.parametrize("name", TENX_EDITS)
def test_10x_edited(tmp_path, name):
    import scanpy

    path = _write_10x(tmp_path / "edited.h5")
    with h5py.File(path, "a") as f:
        TENX_EDITS[name](f)
    (want, want_exc), (got, got_exc) = _both(lambda: scanpy.read_10x_h5(path), lambda: h5turbo.read_10x_h5(path))
    if name == "shape_2x1":
        assert isinstance(want_exc, TypeError) and got_exc is None
        assert got.shape == (6, 5)  # gex_only: the 7 features less 2 of other types
        return
    if want_exc is not None or name == "indptr_decreasing":
        assert isinstance(got_exc, h5turbo.FormatError), f"scanpy: {want_exc!r}; h5turbo: {got_exc!r}"
        assert "edited.h5" in str(got_exc) and "/matrix" in str(got_exc), got_exc
        return
    assert got_exc is None, f"scanpy read it; h5turbo: {got_exc!r}"
    assert_same(got, want)


@pytest.mark.parametrize("categories,codes", [
    (np.array([b"T", b"B"]), [0, 1, 0, 1]),
    (np.array([b"T"]), [0, 0, -1, 0]),  # one fixed-length string: anndata's read_dataset makes it a scalar
    (np.array([5, 7]), [0, 1, 1, 0]),
    (np.array(["T"], dtype=object), [0, 0, 0, 0]),
], ids=["fixed_bytes", "one_fixed_bytes", "integers", "one_vlen"])
def test_anndata07_categories_of_other_types(tmp_path, categories, codes):
    path = _anndata07(tmp_path / "a07.h5ad")
    with h5py.File(path, "a") as f:
        del f["obs/__categories/ct"]
        if categories.dtype == object:
            f["obs/__categories"].create_dataset("ct", data=categories, dtype=h5py.string_dtype())
        else:
            f["obs/__categories/ct"] = categories
        f["obs/ct"][...] = np.array(codes, np.int8)
        f["obs/ct"].attrs["categories"] = f["obs/__categories/ct"].ref
    _compare_h5ad(path)
