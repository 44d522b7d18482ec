"""Records and ragged rows with variable-length parts, read as h5py reads them: tables of
names and numbers (compounds with vlen string fields, in any member order), nested
records, sequences; large ones resolved on several threads alike."""

import h5py
import numpy as np
import pytest

import h5turbo
from tests.support.h5compare import assert_same

VSTR = h5py.string_dtype()
# HDF5 members b, a, c at offsets 16, 0, 8: h5py's dtype sorts them by offset
OUT_OF_ORDER = np.dtype({"names": ["b", "a", "c"], "formats": [VSTR, "<f8", "<i2"], "offsets": [16, 0, 8], "itemsize": 24})
INNER = np.dtype([("name", VSTR), ("v", "<u4")])
NESTED = np.dtype([("id", "<i4"), ("in", INNER), ("arr", VSTR, (2,)), ("seq", h5py.vlen_dtype("<i2")), ("ref", h5py.ref_dtype)])


def _out_of_order(n):
    x = np.zeros(n, dtype=OUT_OF_ORDER)
    x["a"] = np.arange(n) * 1.5
    x["b"] = np.array([f"s{i}" for i in range(n)], dtype=object)
    x["c"] = np.arange(n)
    return x


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "records.h5"
    with h5py.File(path, "w") as f:
        f["out_of_order"] = _out_of_order(7)
        f.create_dataset("out_of_order_chunked", data=_out_of_order(7), chunks=(3,))
        nested = np.zeros((3, 2), dtype=NESTED)
        for i in range(3):
            for j in range(2):
                nested[i, j] = (i * 2 + j, (f"n{i}", i), [f"p{i}", f"q{j}"], np.arange(i + j, dtype="<i2"), f["out_of_order"].ref)
        f["nested"] = nested
        table = np.dtype([("name", VSTR), ("score", "<f8")])
        ds = f.create_dataset("with_attrs", data=1)
        ds.attrs["table"] = np.array([("u", 1.5), ("v", 2.5)], dtype=table)
        ds.attrs["one"] = np.array([("w", 3.5)], dtype=table)[0]
        ds.attrs["out_of_order"] = _out_of_order(2)
        ds.attrs.create("items", np.array([[b"x%d" % i, b"y", b""] for i in range(4)], dtype=object),
                        dtype=np.dtype((VSTR, (3,))))
        n = 40000  # several blocks of the parallel resolver, many heap collections
        f.create_dataset("names", data=np.array([f"gene_{i}" * (1 + i % 3) for i in range(n)], dtype=object),
                         dtype=VSTR, chunks=(4096,), compression="gzip")
        ragged = f.create_dataset("ragged", shape=(n,), dtype=h5py.vlen_dtype(np.dtype(">u2")), chunks=(4096,))
        ragged[...] = np.array([np.arange(i % 9, dtype=">u2") * 7 for i in range(n)], dtype=object)
        big = np.zeros(n, dtype=[("name", VSTR), ("x", "<f4"), ("k", ">i8")])
        big["name"] = np.array([f"r{i}" for i in range(n)], dtype=object)
        big["x"] = np.arange(n) / 4
        big["k"] = -np.arange(n)
        f.create_dataset("big_table", data=big, chunks=(5000,))
        # every kind of fixed member beside vlen strings; empty, unwritten and scalar tables
        e = h5py.enum_dtype({"A": 1, "B": 7}, basetype="i1")
        mix_t = np.dtype([("e", e), ("b", "?"), ("c", "<c16"), ("fs", "S5"), ("s", VSTR),
                          ("a", h5py.string_dtype("ascii")), ("i8", ">i8"), ("f2", "<f2")])
        mix = np.zeros(6, dtype=mix_t)
        mix["e"] = [1, 7] * 3
        mix["b"] = [True, False] * 3
        mix["c"] = np.arange(6) + 1j
        mix["fs"] = [b"ab", b"", b"abcde", b"x", b"y", b"z"]
        mix["s"] = np.array(["\u00e9%d" % i for i in range(6)], dtype=object)
        mix["a"] = np.array([b"q%d" % i for i in range(6)], dtype=object)
        mix["i8"] = -np.arange(6) * 10**12
        mix["f2"] = np.arange(6) / 3
        f.create_dataset("mix", data=mix, chunks=(4,), compression="gzip")
        f.create_dataset("mix_empty", shape=(0,), dtype=mix_t)
        f.create_dataset("mix_unwritten", shape=(5,), dtype=mix_t, chunks=(2,))
        f["mix_scalar"] = mix[2]
        # array types of vlen strings: their items are trailing axes
        items = f.create_dataset("string_items", shape=(4,), dtype=np.dtype((VSTR, (3,))))
        items[...] = np.array([[b"x%d" % i, b"y", b""] for i in range(4)], dtype=object)
        grid = f.create_dataset("string_grid_items", shape=(2, 3), dtype=np.dtype((VSTR, (2, 2))), chunks=(1, 2))
        grid[...] = np.array([[[[b"p%d%d" % (i, j), b"q"], [b"", b"r%d" % i]] for j in range(3)] for i in range(2)], dtype=object)
    return path


@pytest.mark.parametrize("name", ["out_of_order", "out_of_order_chunked"])
@pytest.mark.parametrize("sel", [np.s_[...], np.s_[1:5], np.s_[::3], np.s_[[0, 4, 6]]])
def test_members_out_of_offset_order_like_h5py(records, name, sel):
    with h5py.File(records) as ref, h5turbo.File(records) as ours:
        expected, got = ref[name][sel], ours[name][sel]
        assert got.dtype == expected.dtype
        assert_same(expected, got, name)
        # each member's values under its own name (the values come in offset order)
        assert got["b"].tolist() == np.array([f"s{i}".encode() for i in range(7)], dtype=object)[sel].tolist()
        assert got["c"].tolist() == np.arange(7)[sel].tolist()


def test_nested_records_like_h5py(records):
    with h5py.File(records) as ref, h5turbo.File(records) as ours:
        for sel in [np.s_[...], np.s_[1:, :], np.s_[::2, 1]]:
            expected, got = ref["nested"][sel], ours["nested"][sel]
            assert got.dtype == expected.dtype and got.shape == expected.shape
            for field in ["id", "arr"]:
                assert_same(expected[field], got[field], field)
            assert_same(expected["in"]["name"], got["in"]["name"])
            assert_same(expected["in"]["v"], got["in"]["v"])
            for e, g in zip(expected["seq"].ravel(), got["seq"].ravel()):
                assert e.dtype == g.dtype and np.array_equal(e, g)
            for e, g in zip(expected["ref"].ravel(), got["ref"].ravel()):
                assert ours[g].name == ref[e].name


@pytest.mark.parametrize("attr", ["table", "one", "out_of_order"])
def test_record_attributes_keep_bytes_like_h5py(records, attr):
    with h5py.File(records) as ref, h5turbo.File(records) as ours:
        expected, got = ref["with_attrs"].attrs[attr], ours["with_attrs"].attrs[attr]
        assert type(got) is type(expected) and got.dtype == expected.dtype
        assert got.tolist() == expected.tolist()
        # h5py decodes only top-level strings of attributes: inside a record they stay bytes
        assert all(isinstance(v, bytes) for v in np.atleast_1d(got)["name" if attr != "out_of_order" else "b"])


@pytest.mark.parametrize("name", ["names", "ragged", "big_table"])
def test_large_vlen_reads_are_the_same_on_one_and_many_threads(records, name):
    with h5py.File(records) as ref, h5turbo.File(records) as ours:
        expected = ref[name][...]
        one, two = ours[name].read(threads=1), ours[name].read(threads=2)
        part = ours[name].read(np.s_[123:31000:7], threads=2)
        assert_same(expected, one, name)
        assert_same(expected, two, name)
        assert_same(expected[123:31000:7], part, name)
        if name == "ragged":
            for e, g in zip(expected[:50], two[:50]):
                assert g.dtype == e.dtype and g.flags.owndata == e.flags.owndata and g.flags.writeable


@pytest.mark.parametrize("name", ["string_items", "string_grid_items"])
@pytest.mark.parametrize("sel", [np.s_[...], np.s_[1:], np.s_[::2]])
def test_array_types_of_vlen_strings_like_h5py(records, name, sel):
    with h5py.File(records) as ref, h5turbo.File(records) as ours:
        expected, got = ref[name][sel], ours[name][sel]
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert_same(expected, got, name)


def test_array_type_attribute_of_vlen_strings_like_h5py(records):
    with h5py.File(records) as ref, h5turbo.File(records) as ours:
        expected, got = ref["with_attrs"].attrs["items"], ours["with_attrs"].attrs["items"]
        assert got.shape == expected.shape == (4, 3) and got.dtype == expected.dtype
        assert got.tolist() == expected.tolist()
        assert all(type(g) is type(e) for g, e in zip(got.ravel(), expected.ravel()))


@pytest.mark.parametrize("name", ["mix", "mix_empty", "mix_unwritten", "mix_scalar"])
def test_records_of_every_fixed_kind_beside_strings_like_h5py(records, name):
    with h5py.File(records) as ref, h5turbo.File(records) as ours:
        sels = [()] if name == "mix_scalar" else [np.s_[...], np.s_[1:5:2]]
        for sel in sels:
            expected, got = ref[name][sel], ours[name][sel]
            assert got.dtype == expected.dtype
            assert_same(expected, got, name)


def test_sequences_of_records_with_object_members_are_record_arrays_like_h5py(tmp_path):
    # each element an array of the record type (fields by name), not an object array
    # of np.void records
    path = tmp_path / "sequences_of_records.h5"
    of_strings = h5py.vlen_dtype(np.dtype([("s", VSTR), ("i", "<i4")]))
    of_sequences = h5py.vlen_dtype(np.dtype([("v", h5py.vlen_dtype("<i2")), ("i", "<i4")]))
    of_refs = h5py.vlen_dtype(np.dtype([("r", h5py.ref_dtype), ("i", "<i4")]))
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("strings", shape=(2,), dtype=of_strings)
        ds[0] = np.array([("a", 1), ("bc", 2)], of_strings.metadata["vlen"])
        ds[1] = np.array([("", 3)], of_strings.metadata["vlen"])
        f.create_dataset("sequences", shape=(1,), dtype=of_sequences)[0] = np.array(
            [(np.array([1, 2], "i2"), 1)], of_sequences.metadata["vlen"])
        f.create_dataset("refs", shape=(1,), dtype=of_refs)[0] = np.array(
            [(f["strings"].ref, 7)], of_refs.metadata["vlen"])
        f.attrs.create("strings", data=f["strings"][...], dtype=of_strings)
    with h5py.File(path) as ref, h5turbo.File(path) as ours:
        for name in ("strings", "sequences"):
            assert_same(ref[name][...], ours[name][...], name)
            assert ours[name][0].dtype == ref[name][0].dtype, name
        assert_same(ref.attrs["strings"], ours.attrs["strings"], "attribute")
        assert ours.attrs["strings"][0].dtype == ref.attrs["strings"][0].dtype
        got = ours["refs"][0]
        assert got.dtype.names == ("r", "i") and got["i"].tolist() == [7]
        assert ours[got["r"][0]].name == "/strings"
        assert list(ours["strings"][0]["s"]) == [b"a", b"bc"]
