"""Regressions found by running the same code against h5py.File and h5turbo.File (a
second hunt, see test_h5py_hunt.py for the first): np.asarray(ds, dtype) converting as
libhdf5, views' __array__, field names in the index of fields and astype views, tuples
inside an index, get(getclass=True) of sparse groups, astype of references,
read_direct's broadcasting, and the refusal of writes on a file opened read-only."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo
from support.common import corpus_dir
from support.h5compare import outcome as _outcome

COMPOUND = np.dtype([("x", "i4"), ("y", "f8"), ("s", "S5")])


@pytest.fixture(scope="module")
def h5file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hunt2") / "hunt2.h5"
    with h5py.File(path, "w") as f:
        f["floats"] = np.array([300.7, -5.0, 1e10, np.inf, 2.5])
        f["shorts"] = np.array([300, -300, 5], "i2")
        f["matrix"] = np.arange(60, dtype="i4").reshape(6, 10)
        f["records"] = np.array([(i, i / 2, b"ab%d" % i) for i in range(5)], COMPOUND)
        f["record"] = np.array((3, 1.5, b"q"), COMPOUND)
        f["text"] = np.array(["x", "yy"], dtype=h5py.string_dtype())
        f["refs"] = np.array([f["matrix"].ref, f["/"].ref, h5py.Reference()], dtype=h5py.ref_dtype)
        f.attrs["a"] = 1
    return path


def _both(path: Path):
    return h5py.File(path, "r"), h5turbo.File(path, "r")


def _assert_same(expected_fn, got_fn):
    expected, h5py_exc = _outcome(expected_fn)
    got, exc = _outcome(got_fn)
    if h5py_exc is not None:
        assert isinstance(exc, type(h5py_exc)), f"h5py raised {h5py_exc!r}, h5turbo gave {exc or got!r}"
        return
    assert exc is None, f"h5py gave {expected!r}, h5turbo raised {exc!r}"
    assert type(got) is type(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("name, dtype", [
    ("floats", "u1"), ("floats", "i4"),  # saturate at the target's limits, as libhdf5
    ("shorts", "i1"), ("shorts", "u1"),
    ("records", [("x", "f4")]), ("records", [("y", "i2"), ("x", "f8")]),  # fields by name
    ("records", [("s", "S2")]),
    ("records", "f4"),  # no conversion: OSError, as h5py
    ("text", "f4"),  # no conversion: TypeError, as h5py
])
def test_asarray_with_a_dtype_converts_as_h5py(h5file, name, dtype):
    # h5py reads into an array of that dtype (libhdf5 converts); numpy's cast wraps
    h, f = _both(h5file)
    _assert_same(lambda: np.asarray(h[name], dtype=dtype), lambda: np.asarray(f[name], dtype=dtype))


@pytest.mark.parametrize("name, view_dtype, dtype", [("floats", "f4", "u1"), ("shorts", "i4", "i1")])
def test_asarray_of_an_astype_view_with_a_dtype_converts_as_h5py(h5file, name, view_dtype, dtype):
    h, f = _both(h5file)
    _assert_same(lambda: np.asarray(h[name].astype(view_dtype), dtype=dtype),
                 lambda: np.asarray(f[name].astype(view_dtype), dtype=dtype))


def test_asarray_of_a_fields_view_of_a_scalar_keeps_the_field_type(h5file):
    # np.asarray(view) went through np.bytes_, which keeps only the bytes present: S1
    h, f = _both(h5file)
    _assert_same(lambda: np.asarray(h["record"].fields("s")), lambda: np.asarray(f["record"].fields("s")))


@pytest.mark.parametrize("fields, index", [
    ("x", "y"),  # a field the view does not have: ValueError, as h5py
    (["x", "y"], "x"), (["x", "y"], ("y", "x", slice(0, 2))),  # names read as from the dataset
    (["x", "y"], "s"),
])
def test_field_names_in_a_fields_view_index_like_h5py(h5file, fields, index):
    h, f = _both(h5file)
    _assert_same(lambda: h["records"].fields(fields)[index], lambda: f["records"].fields(fields)[index])


@pytest.mark.parametrize("index", [((0, 2),), (slice(None), (1, 3)), ((1, 4), slice(2, 5))],
                         ids=["rows", "columns", "rows-and-slice"])
def test_a_tuple_inside_an_index_is_an_index_list(h5file, index):
    # numpy and h5py take it as a list of indices; h5turbo refused it as a bad index
    h, f = _both(h5file)
    _assert_same(lambda: h["matrix"][index], lambda: f["matrix"][index])
    assert np.array_equal(f["matrix"][index], np.arange(60, dtype="i4").reshape(6, 10)[index])


@pytest.mark.parametrize("dtype", [object, "i8"])
def test_astype_of_references(h5file, dtype):
    # references read as plain objects (h5py) or refuse other types with TypeError (h5py)
    h, f = _both(h5file)
    expected, h5py_exc = _outcome(lambda: h["refs"].astype(dtype)[()])
    got, exc = _outcome(lambda: f["refs"].astype(dtype)[()])
    if h5py_exc is not None:
        assert isinstance(exc, type(h5py_exc)), exc
        return
    assert exc is None, exc
    assert got.dtype == expected.dtype
    assert [h[r].name if r else None for r in expected] == [f[r].name if r else None for r in got]
    assert f[f["refs"].astype(dtype)[0]].name == h[h["refs"].astype(dtype)[0]].name


def test_getclass_of_a_sparse_group_is_group_as_in_h5py():
    # h5turbo opens a CSR/CSC group as a SparseDataset, a Group; getclass named the
    # subclass, so `f.get(name, getclass=True) is h5turbo.Group` failed where h5py's holds
    path = corpus_dir() / "h5ad" / "anndata_v0.7.0.h5ad"
    h, f = _both(path)
    assert h.get("X", getclass=True) is h5py.Group
    assert f.get("X", getclass=True) is h5turbo.Group
    assert f.get("X/data", getclass=True) is h5turbo.Dataset


WRITES = {
    "attrs[name] = value": lambda f: f.attrs.__setitem__("b", 2),
    "attrs.create": lambda f: f.attrs.create("b", 2),
    "attrs.modify": lambda f: f.attrs.modify("a", 2),
    "group[name] = value": lambda f: f.__setitem__("new", 1),
    "create_group": lambda f: f.create_group("new"),
    "create_dataset": lambda f: f.create_dataset("new", data=[1]),
    "dataset[index] = value": lambda f: f["matrix"].__setitem__(0, 1),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_writes_are_refused_with_h5pys_error_type(h5file, write):
    # an AttributeError ('no attribute modify') before: code that catches what h5py
    # raises on a read-only file now catches it, and the message says why
    h, f = _both(h5file)
    _, h5py_exc = _outcome(lambda: write(h))
    assert h5py_exc is not None
    with pytest.raises(type(h5py_exc)) as refused:
        write(f)
    assert isinstance(refused.value, h5turbo.ReadOnlyError)
    assert "h5turbo only reads" in str(refused.value)


@pytest.mark.parametrize("obj", ["/", "matrix"])
def test_flush_does_nothing_as_h5py_on_a_read_only_file(h5file, obj):
    h, f = _both(h5file)
    target = (lambda file: file) if obj == "/" else (lambda file: file[obj])
    assert target(h).flush() is None
    assert target(f).flush() is None


@pytest.mark.parametrize("dest_shape, source_sel, dest_sel", [
    ((10,), None, None),  # (6, 10) into (10,): broadcasts *with* it, not onto it
    ((3,), np.s_[0:2, 0:3], None),
    ((4,), np.s_[2:3, 4:5], np.s_[1]),  # a (1, 1) block into one element
], ids=["too-big", "too-big-selection", "block-into-element"])
def test_read_direct_broadcasts_as_h5py(h5file, dest_shape, source_sel, dest_sel):
    def read(file):
        dest = np.full(dest_shape, -1, "i4")
        file["matrix"].read_direct(dest, source_sel, dest_sel)
        return dest

    h, f = _both(h5file)
    _assert_same(lambda: read(h), lambda: read(f))


@pytest.mark.parametrize("name, dtype, index", [
    ("records", [("y", "f4"), ("x", "i8")], "x"),
    ("records", [("y", "f4"), ("x", "i8")], ("x", slice(0, 2))),
    ("records", [("y", "f4"), ("x", "i8")], (slice(None), "y")),
    ("record", [("y", "f4"), ("x", "i8")], "x"),
    ("records", "f4", "x"),  # field names of a view that has none: ValueError, as h5py
])
def test_field_names_in_an_astype_view_index_like_h5py(h5file, name, dtype, index):
    # h5py reads the named field of the target compound; numpy's cast of the one
    # field read put its values into every field of the target
    h, f = _both(h5file)
    _assert_same(lambda: h[name].astype(dtype)[index], lambda: f[name].astype(dtype)[index])
