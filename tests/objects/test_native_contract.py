"""The contract of h5turbo._native (python/h5turbo/_native.pyi) that the package relies
on, checked on both backends: keeps the test double faithful and the native module to
its word."""

import h5py
import numpy as np
import pytest

import h5turbo.objects.file


@pytest.fixture
def native(backend):
    return h5turbo.objects.file._native


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    path = tmp_path_factory.mktemp("contract") / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100, dtype="<i4").reshape(10, 10), chunks=(3, 4),
                         compression="gzip")
        f["scalar"] = np.float32(1.5)
        f["g/y"] = np.arange(3)
        f["soft"] = h5py.SoftLink("/g/y")
        f["ext"] = h5py.ExternalLink("elsewhere.h5", "/z")
        f.attrs["empty"] = h5py.Empty("i2")
        f["fixed"] = np.array([b"ab"], "S4")
        spaced = h5py.h5t.C_S1.copy()
        spaced.set_size(4)
        spaced.set_strpad(h5py.h5t.STR_SPACEPAD)
        h5py.h5d.create(f.id, b"spaced", spaced, h5py.h5s.create_simple((1,))).close()
    return str(path)


def test_objects_and_links(native, path):
    f = native.File(path)
    root = f.get("/")
    assert root.kind == "group" and isinstance(root.address, int)
    assert f.get("/g/y").kind == "dataset" and f.get("/soft").address == f.get("/g/y").address
    links = {name: (kind, target) for name, kind, target in root.links()}
    assert links["soft"] == ("soft", "/g/y")
    assert root.link("soft") == ("soft", "soft", "/g/y") and root.link("no such link") is None
    assert links["ext"] == ("external", ("elsewhere.h5", "/z"))
    assert links["g"][0] == "hard" and links["g"][1] == root.child("g").address
    with pytest.raises(KeyError):
        root.child("nope")
    with pytest.raises(KeyError):
        f.get("/g/nope")
    with pytest.raises(native.Error):
        root.child("ext")
    assert root.attr("empty") == ("empty", np.dtype("<i2"))
    f.close()
    f.close()
    assert f.closed
    with pytest.raises(native.ClosedError):
        f.get("/x")


def test_read_ranges_and_points(native, path):
    x = native.File(path).get("/x")
    whole = np.arange(100, dtype="<i4").reshape(10, 10)
    out = np.empty((2, 3), "<i4")
    x.read([(0, 2, 3), (1, 3, 2)], out, 0)
    np.testing.assert_array_equal(out, whole[0:4:3, 1:6:2])
    out = np.empty((3, 10), "<i4")
    x.read([np.array([1, 5, 9], np.uint64), (0, 10, 1)], out, 2)
    np.testing.assert_array_equal(out, whole[[1, 5, 9]])
    x.read([(0, 0, 1), (0, 10, 1)], np.empty((0, 10), "<i4"), 1)


def test_read_scalar(native, path):
    out = np.empty((), "<f4")
    native.File(path).get("/scalar").read([], out, 0)
    assert out[()] == np.float32(1.5)


@pytest.mark.parametrize("selection, out", [
    ([(8, 2, 3), (0, 10, 1)], np.empty((2, 10), "<i4")),  # past the end
    ([np.array([1, 10], np.uint64), (0, 10, 1)], np.empty((2, 10), "<i4")),
    ([np.array([5, 1], np.uint64), (0, 10, 1)], np.empty((2, 10), "<i4")),  # not increasing
    ([np.array([1, 1], np.uint64), (0, 10, 1)], np.empty((2, 10), "<i4")),
    ([(0, 2, 0), (0, 10, 1)], np.empty((2, 10), "<i4")),  # step 0
    ([(0, 2, 1), (0, 10, 1)], np.empty((3, 10), "<i4")),  # wrong size
    ([(0, 2, 1)], np.empty((2,), "<i4")),  # wrong rank
    ([(0, 2, 1), (0, 10, 1)], np.empty((2, 10), "<i8")),  # wrong dtype
    ([(0, 2, 1), (0, 10, 1)], np.empty((10, 2), "<i4").T),  # not C-contiguous
])
def test_read_rejects_what_the_contract_excludes(native, path, selection, out):
    x = native.File(path).get("/x")
    with pytest.raises(ValueError):
        x.read(selection, out, 0)


def test_default_threads(native):
    assert native.default_threads() >= 1


def test_string_padding(native, path):
    f = native.File(path)
    assert [f.get(name).string_padding for name in ("fixed", "spaced", "x")] == ["nullpad", "spacepad", None]
