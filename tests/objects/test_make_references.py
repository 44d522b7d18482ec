"""References made by h5turbo, as h5py makes them: ``obj.ref`` for datasets, groups,
the file and committed datatypes (``f[ref]`` opens the object h5py opens), and
``ds.regionref[sel]`` for slices, integers, increasing index lists and boolean masks
(``ds[ref]`` reads what h5py reads from its own reference to the same selection, shaped
alike; ``regionref.shape`` / ``.selection`` agree), across libver settings.

libhdf5 stores a region reference it makes in the file's global heap, so h5py makes
them only with write intent (``r+``: here on a copy of the file); h5turbo keeps the
selection in the reference and makes them on any file."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

LIBVERS = ["earliest", "latest"]


@pytest.fixture(params=LIBVERS)
def h5file(request, tmp_path) -> Path:
    path = tmp_path / f"mkref_{request.param}.h5"
    rng = np.random.default_rng(5)
    with h5py.File(path, "w", libver=request.param) as f:
        f.create_dataset("d2", data=rng.integers(0, 100, (6, 10)), chunks=(4, 3))
        f.create_dataset("d3", data=rng.standard_normal((4, 5, 7)).astype("<f4"))
        f["d1"] = np.arange(8, dtype="<u2")
        f["scalar"] = 5.5
        f["compound"] = np.array([(1, 2.5), (3, 4.5), (5, 6.5)], dtype=[("i", "<i4"), ("x", "<f8")])
        f.create_group("g/h")["leaf"] = np.arange(3)
        f["named"] = np.dtype("<f8")
    return path


def h5py_writable_copy(path: Path) -> h5py.File:
    """h5py on a copy opened r+ (h5py makes region references only with write intent)."""
    copy = path.with_name("h5py_" + path.name)
    shutil.copy(path, copy)
    return h5py.File(copy, "r+")


OBJECTS = ["/", "d2", "d1", "scalar", "g", "g/h", "g/h/leaf", "named"]


@pytest.mark.parametrize("name", OBJECTS)
def test_object_references_open_what_h5py_opens(h5file, name):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        ref = f[name].ref
        assert isinstance(ref, h5turbo.Reference) and bool(ref)
        assert f[ref].name == h[h[name].ref].name
        assert f[ref] == f[name] and ref == f[name].ref and hash(ref) == hash(f[name].ref)
        assert type(f[ref]).__name__ == type(h[h[name].ref]).__name__
        assert f["g"][ref] == f[name]  # any group of the file dereferences


def test_file_ref_is_the_root(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        assert f[f.ref].name == h[h.ref].name == "/"
        assert f[f.ref] == f


def _mask(shape, seed):
    return np.random.default_rng(seed).random(shape) < 0.3


SELECTIONS = {
    "d2": [np.s_[...], np.s_[()], np.s_[2:5], np.s_[1:5:2, ::3], np.s_[3], np.s_[3, 2:5], np.s_[-1],
           np.s_[[0, 2, 3], :], np.s_[:, [1, 5]], np.s_[[0, 2, 3], 2:4], np.s_[[1, 2, 4], ::4],
           np.s_[1:1], np.s_[_mask((6, 10), 1)], np.s_[..., 7], np.s_[2:3, [0, 1, 2, 9]]],
    "d3": [np.s_[1, :, 2:6:2], np.s_[:, [0, 4], ...], np.s_[_mask((4, 5, 7), 2)], np.s_[..., [1, 2, 3, 6]],
           np.s_[::2, 1:4, -3]],
    "d1": [np.s_[[1, 3, 5]], np.s_[np.array([True, False] * 4)], np.s_[::3], np.s_[5], np.s_[[0, 1, 2, 7]]],
    "scalar": [np.s_[()], np.s_[...]],
    "compound": [np.s_[1:], np.s_[[0, 2]]],
}
CASES = [(name, i) for name, sels in SELECTIONS.items() for i in range(len(sels))]


@pytest.mark.parametrize("name,i", CASES, ids=lambda v: str(v))
def test_region_references_read_what_h5py_reads(h5file, name, i):
    sel = SELECTIONS[name][i]
    with h5turbo.File(h5file) as f, h5py_writable_copy(h5file) as h:
        ds, hds = f[name], h[name]
        ref, href = ds.regionref[sel], hds.regionref[sel]
        assert isinstance(ref, h5turbo.RegionReference) and bool(ref)
        got, want = ds[ref], hds[href]
        assert type(got) is type(want)
        assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype
        assert np.array_equal(got, want)
        assert ds.regionref.selection(ref) == hds.regionref.selection(href)
        assert f["g"].regionref.shape(ref) == h["g"].regionref.shape(href) == hds.shape
        assert f[ref] == ds and f[ref].name == h[href].name
        assert ref == ds.regionref[sel] and hash(ref) == hash(ds.regionref[sel])


def test_random_region_references(h5file):
    rng = np.random.default_rng(11)
    with h5turbo.File(h5file) as f, h5py_writable_copy(h5file) as h:
        ds, hds = f["d3"], h["d3"]
        for _ in range(60):
            sel = tuple(_random_axis(rng, n) for n in ds.shape[: rng.integers(1, 4)])
            lists = [i for i, e in enumerate(sel) if isinstance(e, list)]
            sel = tuple(slice(None) if i in lists[1:] else e for i, e in enumerate(sel))  # h5py: one list
            got, want = ds[ds.regionref[sel]], hds[hds.regionref[sel]]
            assert got.shape == want.shape and np.array_equal(got, want), sel


def _random_axis(rng, n):
    kind = rng.integers(0, 3)
    if kind == 0:
        return int(rng.integers(-n, n))
    if kind == 1:
        start = int(rng.integers(0, n))
        return slice(start, int(rng.integers(start, n + 1)), int(rng.integers(1, 4)))
    return sorted(set(rng.integers(0, n, int(rng.integers(1, n + 1))).tolist()))


@pytest.mark.parametrize("sel,error", [
    (np.s_[::-1], ValueError), (np.s_[[3, 1]], TypeError), (np.s_[9], (IndexError, ValueError)),
])
def test_bad_region_selections_fail_as_in_h5py(h5file, sel, error):
    with h5turbo.File(h5file) as f, h5py_writable_copy(h5file) as h:
        with pytest.raises(error):
            h["d1"].regionref[sel]
        with pytest.raises(error):
            f["d1"].regionref[sel]


def test_region_references_on_read_only_files(h5file):
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        with pytest.raises(RuntimeError, match="no write intent"):
            h["d1"].regionref[1:3]
        assert f["d1"][f["d1"].regionref[1:3]].tolist() == [1, 2]


def test_region_references_only_to_datasets_and_their_own(h5file):
    with h5turbo.File(h5file) as f, h5py_writable_copy(h5file) as h:
        with pytest.raises(TypeError, match="datasets"):
            h["g"].regionref[:]
        with pytest.raises(TypeError, match="datasets"):
            f["g"].regionref[:]
        ref = f["d1"].regionref[2:4]
        with pytest.raises(ValueError, match="this dataset"):
            f["d2"][ref]


def test_several_index_lists_select_their_cross_product(h5file):
    """h5py takes one index list per region; h5turbo several (the blocks they cross)."""
    with h5turbo.File(h5file) as f, h5py.File(h5file, "r") as h:
        got = f["d2"][f["d2"].regionref[[0, 2, 3], [1, 5, 6]]]
        assert np.array_equal(got, h["d2"][()][np.ix_([0, 2, 3], [1, 5, 6])])
