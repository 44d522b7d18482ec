"""``ds.fields(names)`` and compound field access against h5py, across libver
settings: one name, a list (any order, one name in a list), nested compounds, array
and string fields, with selections; the view's dtype, shape, len; errors alike."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

LIBVERS = ["earliest", "latest"]
POINT = np.dtype([("x", "<f4"), ("y", "<i8"), ("tag", "S3"), ("vec", "<f8", (3,)),
                  ("inner", [("a", "<u2"), ("b", "<f8")])])


@pytest.fixture(params=LIBVERS)
def h5file(request, tmp_path) -> Path:
    path = tmp_path / f"fields_{request.param}.h5"
    rng = np.random.default_rng(2)
    data = np.zeros((40,), dtype=POINT)
    data["x"], data["y"] = rng.random(40), rng.integers(-99, 99, 40)
    data["tag"] = [b"t%d" % i for i in range(40)]
    data["vec"] = rng.random((40, 3))
    data["inner"]["a"], data["inner"]["b"] = np.arange(40), rng.random(40)
    with h5py.File(path, "w", libver=request.param) as f:
        f.create_dataset("c1", data=data, chunks=(7,), compression="gzip")
        f.create_dataset("c2", data=data[:36].reshape(6, 6))
        f["scalar"] = data[3]
        f["plain"] = np.arange(5)
    return path


NAMES = ["x", "tag", "vec", "inner", ["x"], ["y", "x"], ["inner", "tag", "vec"], ("x", "y")]
SELECTIONS = {"c1": [np.s_[()], np.s_[...], np.s_[3], np.s_[5:30:4], np.s_[-1], np.s_[[1, 7, 9]],
                     np.s_[np.arange(40) % 3 == 0]],
              "c2": [np.s_[()], np.s_[2], np.s_[1:4, ::2], np.s_[:, 5], np.s_[[0, 3], 1:3]],
              "scalar": [np.s_[()], np.s_[...]]}
CASES = [(ds, i, j) for ds, sels in SELECTIONS.items() for i in range(len(sels)) for j in range(len(NAMES))]


@pytest.mark.parametrize("ds,i,j", CASES)
def test_fields_like_h5py(h5file, ds, i, j):
    sel, names = SELECTIONS[ds][i], NAMES[j]
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        ours, theirs = f[ds].fields(names), h[ds].fields(names)
        assert ours.dtype == theirs.dtype
        assert (ours.shape, ours.ndim, ours.size) == (theirs.shape, theirs.ndim, theirs.size)
        if theirs.shape:
            assert len(ours) == len(theirs)
        got, want = ours[sel], theirs[sel]
        assert type(got) is type(want), (type(got), type(want))
        assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_fields_array_conversion(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        for names in ("x", ["y", "x"]):
            got, want = np.asarray(f["c1"].fields(names)), np.asarray(h["c1"].fields(names))
            assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("ds,names", [("c1", "nope"), ("c1", ["x", "nope"]), ("plain", "x")])
def test_fields_errors_like_h5py(h5file, ds, names):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        with pytest.raises(ValueError) as theirs:
            h[ds].fields(names)
        with pytest.raises(ValueError) as ours:
            f[ds].fields(names)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("index", [np.s_["x"], np.s_[2:9, "y"], np.s_["tag", 3], np.s_[1:4, "inner"],
                                   np.s_["x", "y"], np.s_[("vec", "y") + (slice(2, 5),)]])
def test_compound_field_access_like_h5py(h5file, index):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        got, want = f["c1"][index], h["c1"][index]
        assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


PADDED_INNER = np.dtype({"names": ["z", "a", "m"], "formats": [">i4", "<f8", "<u2"],
                         "offsets": [12, 0, 8], "itemsize": 16})
PADDED = np.dtype({"names": ["inner", "first"], "formats": [PADDED_INNER, "i1"],
                   "offsets": [20, 2], "itemsize": 40})


@pytest.mark.parametrize("read", [lambda d: d["inner"], lambda d: d[::3, "inner"],
                                  lambda d: d.fields("inner")[...], lambda d: d.fields(["inner"])[...],
                                  lambda d: d.fields(["first", "inner"])[2:900]],
                         ids=["field", "sliced-field", "fields-one", "fields-list-one", "fields-two"])
def test_fields_holding_padded_records_are_h5pys_bytes(tmp_path, read):
    # numpy copies records field by field: the padding of a field's copy held
    # whatever the memory held before (different from run to run)
    path = tmp_path / "padded.h5"
    data = np.zeros(1000, PADDED)
    data["inner"]["z"], data["inner"]["a"], data["inner"]["m"], data["first"] = 3, 1.5, 8, -1
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(7,))
    with h5py.File(path) as f:
        want = read(f["x"])
    with h5turbo.File(path) as f:
        for _ in range(3):
            dirty = [np.full(n, 0xAB, "u1") for n in (16000, 5600, 27000, 40000) for _ in range(8)]
            del dirty
            got = read(f["x"])
            assert got.dtype == want.dtype
            assert got.tobytes() == want.tobytes()
