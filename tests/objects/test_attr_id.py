"""attrs.get_id(name): h5py's AttrID questions (name, dtype, shape, storage size),
which anndata, h5netcdf and ont-fast5-api ask of h5py, answered as h5py answers them."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import h5turbo

CHECKS = ("check_string_dtype", "check_vlen_dtype", "check_enum_dtype", "check_ref_dtype", "check_opaque_dtype")


@pytest.fixture(scope="module")
def attr_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("attr_id") / "attrs.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("d", data=[1, 2])
        for obj in (f, ds):
            obj.attrs["int"] = np.int32(3)
            obj.attrs["matrix"] = np.arange(6.0).reshape(2, 3)
            obj.attrs["big_endian"] = np.arange(4, dtype=">u2")
            obj.attrs["text"] = "hello"
            obj.attrs["texts"] = ["a", "bb"]
            obj.attrs.create("fixed", np.array([b"ab", b"c"], dtype="S3"))
            obj.attrs.create("fixed_scalar", np.bytes_(b"xyz"))
            obj.attrs["empty"] = h5py.Empty("f4")
            obj.attrs.create("ragged", [np.arange(3), np.arange(1)], dtype=h5py.vlen_dtype("i4"))
            obj.attrs["records"] = np.zeros(2, dtype=[("x", "<i2"), ("y", ">f8")])
            obj.attrs["enum"] = np.array([0, 1], dtype=h5py.enum_dtype({"a": 0, "b": 1}))
            obj.attrs["ref"] = f.ref
            obj.attrs.create("opaque", np.void(b"\x01\x02"), dtype=h5py.opaque_dtype("V2"))
    return path


@pytest.mark.parametrize("owner", ["/", "d"])
def test_get_id_answers_as_h5py(attr_file, owner):
    with h5py.File(attr_file, "r") as f, h5turbo.File(attr_file) as g:
        names = list(f[owner].attrs)
        assert names == list(g[owner].attrs)
        for name in names:
            want, got = f[owner].attrs.get_id(name), g[owner].attrs.get_id(name)
            assert (got.name, got.shape, got.dtype) == (want.name, want.shape, want.dtype), name
            for check in CHECKS:  # references: h5turbo's classes where h5py names its own
                expected = getattr(h5py, check)(want.dtype)
                expected = getattr(h5turbo, expected.__name__) if check == "check_ref_dtype" and expected else expected
                assert getattr(h5turbo, check)(got.dtype) == expected, (name, check)
            if want.shape is None:  # h5py: H5Aget_storage_size's 0 taken for an error
                with pytest.raises(RuntimeError):
                    want.get_storage_size()
                assert got.get_storage_size() == 0
            else:
                assert got.get_storage_size() == want.get_storage_size(), name
            assert got.valid


def test_get_id_by_bytes_name_and_missing_names(attr_file):
    with h5py.File(attr_file, "r") as f, h5turbo.File(attr_file) as g:
        assert g.attrs.get_id(b"int").name == f.attrs.get_id(b"int").name == b"int"
        with pytest.raises(KeyError):
            f.attrs.get_id("nope")
        with pytest.raises(KeyError, match="nope"):
            g.attrs.get_id("nope")
        with pytest.raises(TypeError):
            g.attrs.get_id(3)


def test_get_id_on_a_closed_file(attr_file):
    """h5py: KeyError from the manager of a closed file, and the id no longer valid."""
    f = h5turbo.File(attr_file)
    attrs, attr_id = f.attrs, f.attrs.get_id("int")
    f.close()
    assert not attr_id.valid
    with pytest.raises(KeyError):
        attrs.get_id("int")
    with pytest.raises(h5turbo.ClosedError):
        attrs.get_id("int")


def test_anndata_reads_string_attributes_through_get_id(attr_file):
    """anndata's attribute reader for h5py (anndata.compat._read_attr_hdf5) asks
    get_id(name).dtype and .shape to decode fixed-length strings: the same values from
    either file."""
    read_attr = pytest.importorskip("anndata.compat")._read_attr_hdf5
    with h5py.File(attr_file, "r") as f, h5turbo.File(attr_file) as g:
        for name in ("text", "texts", "fixed", "fixed_scalar", "int"):
            want, got = read_attr(f.attrs, name), read_attr(g.attrs, name)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=name)
            assert type(got) is type(want), name
