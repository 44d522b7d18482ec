"""Trailing axes a read takes whole (a genotype matrix's ploidy, an image's colour
channels) are copied as one run with the axes before them: the engine copied 2 bytes
at a time for (variants, samples, 2) int8, 12x h5py's time. Every way such a read can
meet the chunks is compared with h5py: edge chunks, steps and lists on the leading
axes, partial trailing axes, unwritten chunks with a fill value whose bytes differ,
and read_direct into part of a larger array."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from support.common import import_h5turbo

h5turbo = import_h5turbo()

SHAPES = [
    ((101, 37, 2), (16, 8, 2), "i1"),
    ((101, 37, 2), (16, 37, 2), "i1"),
    ((57, 9, 3, 4), (10, 4, 3, 4), "<i2"),
    ((57, 9, 3, 4), (57, 9, 3, 4), ">f8"),
    ((40, 6, 5), (7, 6, 2), "<u4"),  # the last axis not whole in a chunk: no folding
]

SELECTIONS = [
    np.s_[...],
    np.s_[3:90],
    np.s_[:, 2:7],
    np.s_[::3, 1:],
    np.s_[[0, 5, 6, 39]],
    np.s_[-1],
    np.s_[:, :, 0],
    np.s_[:, :, ::2],
    np.s_[5:6, 0:1],
]


@pytest.fixture(scope="module", params=SHAPES, ids=lambda s: f"{s[0]}-{s[1]}-{s[2]}")
def stored(request, tmp_path_factory):
    shape, chunks, dtype = request.param
    path = tmp_path_factory.mktemp("trailing") / "t.h5"
    data = (np.random.default_rng(7).integers(0, 120, shape)).astype(dtype)
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=chunks)
        f.create_dataset("c", data=data, chunks=chunks, compression="gzip")
        part = f.create_dataset("p", shape=shape, dtype=dtype, chunks=chunks, fillvalue=np.array(0x1234).astype(dtype))
        part[: shape[0] // 2] = data[: shape[0] // 2]  # the rest never written: the fill value
    return path


@pytest.mark.parametrize("name", ["d", "c", "p"])
@pytest.mark.parametrize("sel", SELECTIONS, ids=range(len(SELECTIONS)))
def test_reads_equal_h5pys(stored, name, sel):
    with h5py.File(stored) as ref, h5turbo.File(stored) as f:
        try:
            expected = ref[name][sel]
        except (TypeError, ValueError, IndexError):
            pytest.skip("h5py refuses this selection here")
        got = f[name][sel]
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", ["d", "p"])
def test_read_direct_into_part_of_a_larger_array(stored, name):
    with h5py.File(stored) as ref, h5turbo.File(stored) as f:
        shape = ref[name].shape
        big = (shape[0] + 3,) + tuple(n + 1 for n in shape[1:])
        expected = np.full(big, 9, dtype=ref[name].dtype)
        got = expected.copy()
        dest = (np.s_[2:2 + shape[0]],) + tuple(np.s_[1:1 + n] for n in shape[1:])
        ref[name].read_direct(expected, dest_sel=dest)
        f[name].read_direct(got, dest_sel=dest)
        assert got.tobytes() == expected.tobytes()


REDUCTIONS = ["sum", "mean", "min", "max", "count_nonzero"]
AXES = [None, 0, 1, -1, (0, 1), (1, 2), (0, 2)]


@pytest.mark.parametrize("how", REDUCTIONS)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("sel", [None, np.s_[3:90, 1:], np.s_[::2]], ids=["all", "part", "step"])
def test_reductions_equal_numpys(stored, how, axis, sel):
    """Reductions fold trailing axes taken whole (and reduced or kept alike) in one run:
    (variants, samples, 2) int8 was folded two elements at a time, 4x numpy's time."""
    with h5py.File(stored) as ref, h5turbo.File(stored) as f:
        for name in ["d", "p"]:
            data = ref[name][()] if sel is None else ref[name][sel]
            if how == "count_nonzero":
                expected = np.count_nonzero(data, axis=axis)
            else:
                expected = getattr(data, how)(axis=axis)
            got = getattr(f[name], how)(axis=axis, selection=sel)
            np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float), rtol=1e-12)
            if how != "mean":
                assert np.asarray(got).dtype == np.asarray(expected).dtype
