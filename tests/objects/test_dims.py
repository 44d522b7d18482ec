"""Dimension scales (``ds.dims``, ``ds.is_scale``) against h5py on files h5py and
h5netcdf write here, across libver settings: labels, scales attached by position and
by name, keys/values/items, iteration, scales shared by datasets and axes, scales in
other groups, datasets without scales or labels, scalar datasets."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

LIBVERS = ["earliest", "latest"]


def write_scales(path: Path, libver: str) -> None:
    with h5py.File(path, "w", libver=libver) as f:
        data = f.create_dataset("data", data=np.arange(12.0).reshape(3, 4))
        x = f.create_dataset("x", data=np.arange(3))
        x.make_scale("xname")
        y = f.create_dataset("coords/y", data=np.arange(4))
        y.make_scale()  # an empty NAME
        y2 = f.create_dataset("coords/y2", data=np.arange(4) * 2.0)
        y2.make_scale("ünï second")
        data.dims[0].attach_scale(x)
        data.dims[1].attach_scale(y)
        data.dims[1].attach_scale(y2)
        data.dims[0].label = "rows"
        other = f.create_dataset("g/other", data=np.zeros((3, 3, 4), "<i2"))
        other.dims[0].attach_scale(x)  # one scale, two datasets
        other.dims[1].attach_scale(x)  # and two axes of one dataset
        other.dims[2].attach_scale(y2)
        other.dims[2].label = "z"
        labelled = f.create_dataset("labels_only", data=np.zeros((2, 5)))
        labelled.dims[1].label = "cols"
        f["plain"] = np.zeros((2, 2))
        f["scalar"] = 1.0
        unnamed = f.create_dataset("unnamed_class", data=np.arange(3))
        unnamed.attrs["CLASS"] = np.bytes_(b"DIMENSION_SCALE")  # a scale without NAME
        f.create_dataset("uses_unnamed", data=np.arange(3)).dims[0].attach_scale(unnamed)
        f.create_dataset("not_a_scale", data=np.arange(3)).attrs["CLASS"] = np.bytes_(b"IMAGE")


def write_netcdf(path: Path) -> None:
    h5netcdf = pytest.importorskip("h5netcdf")
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"time": 4, "lat": 3}
        f.create_variable("time", ("time",), "f8", data=np.arange(4.0))
        f.create_variable("temp", ("time", "lat"), "f4", data=np.ones((4, 3), "f4"))  # lat: no variable


@pytest.fixture(params=LIBVERS + ["netcdf"])
def h5file(request, tmp_path) -> Path:
    path = tmp_path / f"dims_{request.param}.h5"
    if request.param == "netcdf":
        write_netcdf(path)
    else:
        write_scales(path, request.param)
    return path


def _datasets(h: h5py.File) -> list[str]:
    names = []
    h.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


def assert_dims_like_h5py(ds: h5turbo.Dataset, hds: h5py.Dataset) -> None:
    assert ds.is_scale == hds.is_scale
    assert len(ds.dims) == len(hds.dims)
    assert len(list(ds.dims)) == len(list(hds.dims))
    for axis in range(len(hds.dims)):
        ours, theirs = ds.dims[axis], hds.dims[axis]
        assert ours.label == theirs.label, axis
        assert len(ours) == len(theirs), axis
        assert ours.keys() == theirs.keys(), axis
        assert list(ours) == list(theirs), axis
        assert [v.name for v in ours.values()] == [v.name for v in theirs.values()], axis
        assert [(k, v.name) for k, v in ours.items()] == [(k, v.name) for k, v in theirs.items()]
        for i in range(len(theirs)):
            assert ours[i].name == theirs[i].name
            assert np.array_equal(ours[i][()], theirs[i][()])
        if len(theirs):
            assert ours[-1].name == theirs[-1].name
        for name in theirs.keys():
            assert ours[name].name == theirs[name].name
        # without scales libhdf5's H5DSiterate fails: h5py raises RuntimeError there
        with pytest.raises(KeyError if len(theirs) else RuntimeError):
            theirs["no such scale"]
        with pytest.raises(KeyError):
            ours["no such scale"]
        with pytest.raises(IndexError if len(theirs) else RuntimeError):
            theirs[len(theirs)]
        with pytest.raises(IndexError):
            ours[len(theirs)]
    with pytest.raises(IndexError):
        hds.dims[len(hds.dims)]
    with pytest.raises(IndexError):
        ds.dims[len(hds.dims)]


def test_dims_like_h5py(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        names = _datasets(h)
        assert names
        for name in names:
            assert_dims_like_h5py(f[name], h[name])


def test_scales_and_labels_found(h5file):
    """The fixture files do hold scales and labels (the comparison is not vacuous)."""
    with h5turbo.File(h5file) as f:
        scales = [n for n in ("x", "coords/y", "coords/y2", "time") if n in f and f[n].is_scale]
        assert scales
        if "data" in f:
            dims = f["data"].dims
            assert dims[0].label == "rows" and dims[0][0].name == "/x" and dims[0]["xname"] == f["x"]
            assert dims[1].keys() == ["", "ünï second"] and dims[1]["ünï second"] == f["coords/y2"]
            assert f["g/other"].dims[1][0] == f["x"] and not f["not_a_scale"].is_scale
        else:
            assert f["temp"].dims[0][0] == f["time"]


def test_dims_equality_and_repr(h5file):
    with h5turbo.File(h5file) as f:
        name = "data" if "data" in f else "temp"
        ds = f[name]
        assert ds.dims[0] == ds.dims[0] and ds.dims[0] != ds.dims[1]
        assert hash(ds.dims[1]) == hash(f[name].dims[1])
        assert "dimension 0 of HDF5 dataset" in repr(ds.dims[0])
        assert ds.dims[-1] == ds.dims[len(ds.dims) - 1]


def test_no_scale_at_a_position_is_a_key_error(tmp_path):
    # the documented KeyError (h5py: RuntimeError), also an IndexError as a list's
    path = tmp_path / "noscale.h5"
    with h5py.File(path, "w") as h:
        h["x"] = np.arange(3.0)
        h["d"] = np.zeros((3, 2))
        h["x"].make_scale("x")
        h["d"].dims[0].attach_scale(h["x"])
    with h5turbo.File(path) as f:
        assert f["d"].dims[0][0].name == "/x" and f["d"].dims[0][-1].name == "/x"
        for axis, position in ((1, 0), (0, 1), (0, -2)):
            with pytest.raises(KeyError):
                f["d"].dims[axis][position]
            with pytest.raises(IndexError):
                f["d"].dims[axis][position]


def test_is_scale_needs_a_null_terminated_fixed_string_as_h5py(tmp_path):
    """H5DSis_scale takes only a fixed-length, null-terminated CLASS string: a
    variable-length, null- or space-padded one is not a scale (h5py: False)."""
    path = tmp_path / "classes.h5"
    scalar = h5py.h5s.create(h5py.h5s.SCALAR)

    def fixed_class(ds, size, pad):
        tid = h5py.h5t.C_S1.copy()
        tid.set_size(size)
        tid.set_strpad(pad)
        h5py.h5a.create(ds.id, b"CLASS", tid, scalar).write(np.array(b"DIMENSION_SCALE", dtype=f"S{size}"))

    with h5py.File(path, "w") as h:
        for name, value in (("vlen", "DIMENSION_SCALE"), ("nullpad", np.bytes_(b"DIMENSION_SCALE")),
                            ("number", np.int32(1)), ("other", "X")):
            h.create_dataset(name, data=[1, 2]).attrs["CLASS"] = value
        fixed_class(h.create_dataset("nullterm", data=[1, 2]), 16, h5py.h5t.STR_NULLTERM)
        fixed_class(h.create_dataset("cut", data=[1, 2]), 15, h5py.h5t.STR_NULLTERM)
        fixed_class(h.create_dataset("spacepad", data=[1, 2]), 15, h5py.h5t.STR_SPACEPAD)
        h.create_dataset("made", data=[1, 2]).make_scale("made")
        h.create_dataset("plain", data=[1, 2])
    with h5py.File(path) as ref, h5turbo.File(path) as f:
        got = {name: f[name].is_scale for name in ref}
        assert got == {name: ref[name].is_scale for name in ref}
    assert got["nullterm"] and got["made"] and not got["vlen"] and not got["spacepad"]


def test_a_scale_is_found_by_a_bytes_name_too(tmp_path):
    path = tmp_path / "named.h5"
    with h5py.File(path, "w") as h:
        h["d"], h["a"] = np.zeros(3), np.arange(3)
        h["a"].make_scale("A")
        h["d"].dims[0].attach_scale(h["a"])
    with h5py.File(path) as ref, h5turbo.File(path) as f:
        for key in ("A", b"A"):
            assert f["d"].dims[0][key].name == ref["d"].dims[0][key].name == "/a"
        with pytest.raises(KeyError):
            f["d"].dims[0][b"B"]
