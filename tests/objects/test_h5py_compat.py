"""What docs/h5py-compat.md claims and no other test covers, against h5py on a file
written here: require_group / require_dataset on existing objects (and the errors),
filter_ids, len(), the attribute mapping's equality and hashing, committed datatypes'
references, and the ``id`` difference."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo


@pytest.fixture(params=["earliest", "latest"])
def h5file(request, tmp_path) -> Path:
    path = tmp_path / f"compat_{request.param}.h5"
    with h5py.File(path, "w", libver=request.param) as f:
        f.create_dataset("x", data=np.arange(20, dtype="<i4").reshape(4, 5), chunks=(2, 5),
                         compression="gzip", shuffle=True, maxshape=(None, 5))
        f.create_group("g").attrs.update({"a": 1, "b": "text"})
        f["named"] = np.dtype("<f8")
        f["scalar"] = 2.0
    return path


def test_require_group_like_h5py(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        assert f.require_group("g").name == h.require_group("g").name == "/g"
        with pytest.raises(TypeError, match="Incompatible object"):
            h.require_group("x")
        with pytest.raises(TypeError, match="Incompatible object"):
            f.require_group("x")
        with pytest.raises(h5turbo.ReadOnlyError, match="h5turbo.write"):
            f.require_group("new")


@pytest.mark.parametrize("args,kwargs", [
    (((4, 5), "<i4"), {}), (((4, 5), "<i2"), {}), ((4, "<i4"), {}), (((4, 5), "<f8"), {}),
    (((4, 5), "<i2"), {"exact": True}), (((4, 5), "<i4"), {"exact": True}),
    (((3, 5), "<i4"), {}), (((3, 5), "<i4"), {"maxshape": (None, 5)}), (((3, 5), "<i4"), {"maxshape": (9, 5)}),
])
def test_require_dataset_like_h5py(h5file, args, kwargs):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        try:
            want = h.require_dataset("x", *args, **kwargs).name
        except TypeError as exc:
            want = (TypeError, str(exc))
        try:
            got = f.require_dataset("x", *args, **kwargs).name
        except TypeError as exc:
            got = (TypeError, str(exc))
        assert got == want


def test_require_dataset_errors(h5file):
    with h5turbo.File(h5file) as f:
        with pytest.raises(TypeError, match="Incompatible object"):
            f.require_dataset("g", (1,), "<i4")
        with pytest.raises(h5turbo.ReadOnlyError):
            f.require_dataset("new", (1,), "<i4")


def test_filter_ids_and_len_like_h5py(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        assert f["x"].filter_ids == h["x"].filter_ids
        assert f["x"].len() == h["x"].len() == 4
        with pytest.raises(TypeError):
            h["scalar"].len()
        with pytest.raises(TypeError):
            f["scalar"].len()


def test_attribute_mapping_equality_and_hashing(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        assert (f["g"].attrs == {"a": 1, "b": "text"}) == (h["g"].attrs == {"a": 1, "b": "text"}) is True
        assert (f["g"].attrs == {"a": 2}) == (h["g"].attrs == {"a": 2}) is False
        for attrs in (f["g"].attrs, h["g"].attrs):  # mappings: not hashable
            with pytest.raises(TypeError):
                hash(attrs)


def test_named_datatype_like_h5py(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        ours, theirs = f["named"], h["named"]
        assert f[ours.ref].name == h[theirs.ref].name and f[ours.ref] == ours
        assert repr(ours) == repr(theirs) and bool(ours) and hash(ours) == hash(f["named"])
        assert ours.parent == f and ours.file is f and ours.dtype == theirs.dtype
        for obj in (ours, theirs):
            with pytest.raises(TypeError, match="datasets"):
                obj.regionref[()]


def test_id_is_the_native_object_or_a_dataset_id(h5file):
    """Different from h5py on purpose: no libhdf5 identifiers. A group's ``id`` is the
    native object (address, kind) the Python layer is written against; a dataset's
    answers h5py's storage queries (objects/test_chunk_info.py) and tells the same
    address and kind."""
    with h5turbo.File(h5file) as f:
        assert isinstance(f["/"].id, h5turbo._native.Object)
        assert isinstance(f["x"].id, h5turbo.objects.dataset_id.DatasetID)
        assert (f["x"].id.address, f["x"].id.kind) == (f["x"].ref.address, "dataset")
