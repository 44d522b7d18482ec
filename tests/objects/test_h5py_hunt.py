"""Regressions found by comparing h5turbo's h5py-style read API with h5py on files
h5py writes: astype of variable-length sequences, numpy unicode targets and opaque
types; iterating views of scalar datasets; reference typecodes."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo


@pytest.fixture(scope="module")
def h5file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hunt") / "hunt.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("vlen_i", data=np.array([np.arange(3), np.arange(0), np.arange(5)], dtype=object),
                         dtype=h5py.vlen_dtype("i8"))
        f.create_dataset("vlen_scalar", shape=(), dtype=h5py.vlen_dtype("i4"))
        f["vlen_scalar"][()] = np.array([7, 300], "i4")
        f["vs"] = np.array(["héllo", "x"], dtype=h5py.string_dtype())
        f["vs_scalar"] = np.array("scalar", dtype=h5py.string_dtype())
        f["fs"] = np.array([b"ab", b"cd"])
        f["i4"] = np.arange(4, dtype="i4")
        f["dt64"] = np.array(["2020-01-01", "2021-02-03"], dtype="M8[D]").astype(h5py.opaque_dtype("M8[D]"))
        f["opaque"] = np.array([b"\x01\x02\x03", b"abc"], dtype="V3")
    return path


def _both(path: Path):
    return h5py.File(path, "r"), h5turbo.File(path, "r")


@pytest.mark.parametrize("name", ["vs", "fs", "i4", "vlen_i"])
def test_astype_unicode_is_a_type_error_as_h5py(h5file, name):
    # h5py has no HDF5 type for numpy's 'U': TypeError whatever is stored (h5turbo
    # gave a UnicodeDecodeError for UTF-8 text, OSError for numbers)
    a, b = _both(h5file)
    with a, b:
        with pytest.raises(TypeError):
            a[name].astype("U10")[()]
        with pytest.raises(TypeError, match="No conversion path"):
            b[name].astype("U10")[()]


@pytest.mark.parametrize("target", ["f8", "i2", "S10"])
def test_astype_of_sequences_to_a_plain_type_is_a_type_error(h5file, target):
    a, b = _both(h5file)
    with a, b:
        with pytest.raises(TypeError):
            a["vlen_i"].astype(target)[()]
        with pytest.raises(TypeError, match="variable-length sequences of int64"):
            b["vlen_i"].astype(target)[()]


def test_astype_of_sequences_to_sequences_converts_each(h5file):
    with h5turbo.File(h5file) as f:
        got = f["vlen_i"].astype(h5py.vlen_dtype("f8"))[()]
        assert h5py.check_vlen_dtype(got.dtype) == "f8"
        assert [x.dtype for x in got] == [np.dtype("f8")] * 3
        assert [x.tolist() for x in got] == [[0, 1, 2], [], [0, 1, 2, 3, 4]]
        one = f["vlen_i"].astype(h5turbo.vlen_dtype(np.int8))[2]
        assert one.dtype == np.int8 and one.tolist() == [0, 1, 2, 3, 4]
        # a scalar dataset's value is one sequence, converted as a whole
        scalar = f["vlen_scalar"].astype(h5py.vlen_dtype("u1"))[()]
        assert scalar.dtype == np.uint8 and scalar.tolist() == [7, 255]  # saturates


@pytest.mark.parametrize("name", ["vlen_i", "vs"])
def test_astype_to_plain_object_gives_the_values(h5file, name):
    a, b = _both(h5file)
    with a, b:
        want = a[name].astype("O")[()]
        got = b[name].astype("O")[()]
        assert got.dtype == np.dtype("O") and len(got) == len(want)
        for x, y in zip(want, got):
            assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y


@pytest.mark.parametrize("name, target", [("dt64", "M8[D]"), ("opaque", "V3")])
def test_astype_of_an_opaque_type_to_itself(h5file, name, target):
    a, b = _both(h5file)
    with a, b:
        want = a[name].astype(target)[()]
        got = b[name].astype(target)[()]
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("view", [lambda d: d.asstr(), lambda d: d.astype("S10")])
def test_iterating_a_view_of_a_scalar_dataset_raises(h5file, view):
    # the views had no __iter__: Python's fallback indexed [0], got an IndexError
    # (the scalar's "illegal index") and iterated nothing, silently
    with h5turbo.File(h5file) as f:
        with pytest.raises(TypeError, match="scalar"):
            list(view(f["vs_scalar"]))
        assert list(f["vs"].asstr()) == ["héllo", "x"]
        assert list(f["i4"].astype("f4")) == [0.0, 1.0, 2.0, 3.0]
        assert list(f["i4"].astype("f4"))[1].dtype == np.float32


def test_reference_typecodes_are_h5py_ints(tmp_path):
    path = tmp_path / "refs.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(10))
        f["refs"] = np.array([d.ref], dtype=h5py.ref_dtype)
        f["regrefs"] = np.array([d.regionref[2:4]], dtype=h5py.regionref_dtype)
    a, b = _both(path)
    with a, b:
        for name in ("refs", "regrefs"):
            assert b[name][0].typecode == a[name][0].typecode
            assert b[name][0].typesize == a[name][0].typesize
        assert (b["refs"][0].typecode, b["regrefs"][0].typecode) == (h5py.h5r.OBJECT, h5py.h5r.DATASET_REGION)



@pytest.fixture(scope="module")
def ordered(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hunt") / "ordered.h5"
    with h5py.File(path, "w", track_order=True) as f:
        g = f.create_group("g", track_order=True)
        for name in ["b", "a", "c", "10", "2"]:
            g.create_group(name)
            g.attrs[name] = name.upper()
        g["dangling"] = h5py.SoftLink("/nowhere")
    return path


@pytest.mark.parametrize("view", ["keys", "values", "items"])
def test_group_views_are_reversible_as_h5py(ordered, view):
    # h5py's KeysViewHDF5/ValuesViewHDF5/ItemsViewHDF5 define __reversed__
    a, b = _both(ordered)
    with a, b:
        def names(items):
            return [x if isinstance(x, str) else x[0] if isinstance(x, tuple) else x and x.name
                    for x in items]
        want = names(reversed(getattr(a["g"], view)()))
        assert names(reversed(getattr(b["g"], view)())) == want
        assert want[0] in ("dangling", None)  # the dangling link comes first, as None


@pytest.mark.parametrize("view", ["keys", "values", "items"])
def test_attrs_views_are_h5py_views(ordered, view):
    # AttributeManager's keys()/values()/items() were Mapping's plain views, whose
    # repr prints the manager instead of the names
    a, b = _both(ordered)
    with a, b:
        ours, theirs = getattr(b["g"].attrs, view)(), getattr(a["g"].attrs, view)()
        assert type(ours).__name__ == type(theirs).__name__
        assert list(ours) == list(theirs)
        if view == "keys":
            assert repr(ours) == repr(theirs) == "<KeysViewHDF5 ['b', 'a', 'c', '10', '2']>"
        with pytest.raises(TypeError):  # attributes are not reversible, in h5py neither
            list(reversed(ours))


def test_asarray_of_an_empty_dataset_is_a_type_error(tmp_path):
    # np.asarray gave a 0-d object array holding the Empty marker
    path = tmp_path / "empty.h5"
    with h5py.File(path, "w") as f:
        f["e"] = h5py.Empty("f4")
        f["s"] = h5py.Empty(h5py.string_dtype())
    a, b = _both(path)
    with a, b:
        with pytest.raises(TypeError):
            np.asarray(a["e"])
        with pytest.raises(TypeError, match="Empty datasets"):
            np.asarray(b["e"])
        with pytest.raises(TypeError, match="Empty datasets"):
            np.asarray(b["e"].astype("f8"))
        with pytest.raises(TypeError, match="Empty datasets"):
            np.asarray(b["s"].asstr())
        assert b["e"][()] == h5turbo.Empty("f4")


@pytest.mark.parametrize("index", [np.array([True, False, True, False, False, True]),
                                   (np.array([False, True] * 3), 2),
                                   (slice(1, 3), np.array([True, False] * 5))])
def test_regionref_of_a_mask_along_one_axis(tmp_path, index):
    # a 1-d mask of a 2-d dataset selects rows, as in h5py; h5turbo took any mask for a
    # whole-dataset mask and refused it ("must have the dataset's shape")
    path = tmp_path / "rr.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(60).reshape(6, 10), chunks=(4, 4))
    with h5py.File(path, "r+") as a, h5turbo.File(path) as b:
        want = a["d"][a["d"].regionref[index]]
        got = b["d"][b["d"].regionref[index]]
        assert got.shape == want.shape and np.array_equal(got, want)


@pytest.fixture(scope="module")
def complexes(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hunt") / "complex.h5"
    with h5py.File(path, "w") as f:
        f["c16"] = np.array([1 + 2j, -3.5 + 4j])
        f["c8be"] = np.array([1 + 2j, -3.5 + 4j], dtype=">c8")
        for name, fields in {"ir": [("i", "<f4"), ("r", "<f4")], "ri_int": [("r", "<i4"), ("i", "<i2")],
                             "rix": [("r", "<f8"), ("i", "<f8"), ("x", "<f8")],
                             "real_imag": [("real", "<f8"), ("imag", "<f8")]}.items():
            data = np.zeros(2, fields)
            for k, (field, _) in enumerate(fields):
                data[field] = [k + 1, -(k + 1)]
            f[name] = data
    return path


@pytest.mark.parametrize("name, target", [
    ("c16", [("r", "f8"), ("i", "f8")]), ("c16", [("i", "f4")]), ("c16", [("i", "f4"), ("q", "i4")]),
    ("c8be", [("r", "<f8"), ("i", "<f8")]), ("c16", [("r", "i1"), ("i", "u1")]),
    ("ir", "c16"), ("ri_int", "c8"), ("rix", "c16"), ("real_imag", "c16"), ("c8be", "c16")])
def test_astype_between_complex_and_compounds_matches_fields_by_name(complexes, name, target):
    # complex data is an {r, i} compound for libhdf5: numpy's cast put the real part
    # in every field (c16 as [('r','f8'),('i','f8')] gave (1, 1)) or refused a
    # compound to complex (TypeError)
    a, b = _both(complexes)
    with a, b:
        want = a[name].astype(target)[()]
        got = b[name].astype(target)[()]
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        out = np.zeros(want.shape, want.dtype)
        b[name].read_direct(out)
        assert out.tobytes() == want.tobytes()


def test_astype_to_a_compound_with_an_array_field(tmp_path):
    # the field's subarray dtype was applied to data that had its axes already:
    # ValueError "could not broadcast (2,2,3,2,3) into (2,2,3)"
    path = tmp_path / "arrfield.h5"
    data = np.zeros(4, [("a", "<i4"), ("d", "<i2", (2, 3))])
    data["a"], data["d"] = np.arange(4), np.arange(24).reshape(4, 2, 3)
    with h5py.File(path, "w") as f:
        f["c"] = data
    a, b = _both(path)
    with a, b:
        for target in ([("d", "f4", (2, 3))], [("d", ">i8", (2, 3)), ("a", "f4")]):
            want, got = a["c"].astype(target)[1:3], b["c"].astype(target)[1:3]
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_astype_of_big_endian_sequences_converts_the_stored_numbers(tmp_path):
    # plain reads label the elements of big-endian sequences native, as h5py does
    # (wrong numbers, kept for h5py's sake); astype must convert what is stored
    path = tmp_path / "vlen_be.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=np.array([np.array([1, 2], ">i4"), np.array([3], ">i4")], dtype=object),
                         dtype=h5py.vlen_dtype(">i4"))
        f.create_dataset("s", shape=(), dtype=h5py.vlen_dtype(">f8"))
        f["s"][()] = np.array([1.5, -2.0], ">f8")
    with h5turbo.File(path) as f:
        got = f["v"].astype(h5py.vlen_dtype("i8"))[()]
        assert [x.tolist() for x in got] == [[1, 2], [3]]
        assert f["v"].astype(h5py.vlen_dtype("<i4"))[1].tolist() == [3]
        assert f["s"].astype(h5py.vlen_dtype("f4"))[()].tolist() == [1.5, -2.0]


def test_empty_is_true_as_h5py_empty(tmp_path):
    # h5turbo's Empty was false; h5py's is true, so `if f.attrs[name]:` branched apart
    path = tmp_path / "empty_attr.h5"
    with h5py.File(path, "w") as f:
        f.attrs["e"] = h5py.Empty("f4")
    a, b = _both(path)
    with a, b:
        assert bool(a.attrs["e"]) is True
        assert bool(b.attrs["e"]) is True


def test_read_direct_converts_what_was_read(tmp_path):
    # the conversion was checked against the dataset's dtype, not what the selection
    # read: a field into another type, or an array type's elements, raised OSError
    path = tmp_path / "rd.h5"
    data = np.zeros(4, [("x", "<i4"), ("y", "<f4")])
    data["x"] = [5, 6, 7, 8]
    with h5py.File(path, "w") as f:
        f["c"] = data
        f.create_dataset("a", shape=(3,), dtype=np.dtype(("f4", (2, 2))))
        f["a"][...] = np.arange(12, dtype="f4").reshape(3, 2, 2)
    with h5turbo.File(path) as f:
        out = np.zeros(2, "i8")
        f["c"].read_direct(out, np.s_[1:3, "x"])
        assert out.tolist() == [6, 7]
        grid = np.zeros((3, 2, 2), "f8")
        f["a"].read_direct(grid)
        assert grid.ravel().tolist() == list(range(12))
