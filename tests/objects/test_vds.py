"""Virtual datasets (VDS) read by h5turbo against h5py: sources in other files and in
the same file, stacked, tiled, interleaved and sub-selected, missing sources (fill
value), relative source paths, nested virtual datasets, every libver; what is not
supported says so."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo
from support.h5compare import selection_summary

LIBVERS = ["earliest", "v110", "latest"]
RNG = np.random.default_rng(77)


def write_source(path: Path, data: np.ndarray, **kwargs) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=data, **kwargs)


def assert_reads_like_h5py(path: Path, name: str, selections=()) -> None:
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        expected, ours = h[name], f[name]
        assert ours.is_virtual and ours.shape == expected.shape and ours.dtype == expected.dtype
        whole = ours[()]
        assert whole.dtype == expected.dtype and whole.tobytes() == expected[()].tobytes()
        for sel in selections:
            got, want = ours[sel], expected[sel]
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), sel


def random_selections(shape, n=12):
    out = []
    for _ in range(n):
        sel = []
        for length in shape:
            kind = RNG.integers(0, 4)
            if kind == 0:
                sel.append(int(RNG.integers(0, length)))
            elif kind == 1:
                a, b = sorted(RNG.integers(0, length + 1, 2))
                sel.append(slice(int(a), int(b), int(RNG.integers(1, 4))))
            elif kind == 2:
                sel.append(slice(None))
            else:
                sel.append(sorted(set(int(i) for i in RNG.integers(0, length, 3))))
        if sum(isinstance(s, list) for s in sel) > 1:  # h5py takes one index list at a time
            sel = [s if not isinstance(s, list) else slice(None) for s in sel]
        out.append(tuple(sel))
    return out


@pytest.mark.parametrize("libver", LIBVERS)
def test_stacked_sources_in_other_files_and_a_missing_row(tmp_path, libver):
    rows = []
    for i in range(3):
        data = RNG.integers(-1000, 1000, 500).astype("<i4")
        write_source(tmp_path / f"src{i}.h5", data, chunks=(64,), compression="gzip")
        rows.append(data)
    layout = h5py.VirtualLayout(shape=(4, 500), dtype="<i4")
    for i in range(3):
        layout[i] = h5py.VirtualSource(f"src{i}.h5", "data", shape=(500,))
    path = tmp_path / "vds.h5"
    with h5py.File(path, "w", libver=libver) as f:
        f.create_virtual_dataset("stack", layout, fillvalue=-7)
    assert_reads_like_h5py(path, "stack", random_selections((4, 500)))
    with h5turbo.File(path) as f:
        assert (f["stack"][3] == -7).all() and np.array_equal(f["stack"][1], rows[1])


@pytest.mark.parametrize("libver", LIBVERS)
def test_tiles_interleaving_and_sub_selections(tmp_path, libver):
    tiles = [RNG.random((50, 60)) for _ in range(4)]
    for i, tile in enumerate(tiles):
        write_source(tmp_path / f"tile{i}.h5", tile, chunks=(16, 16))
    evens, odds = RNG.integers(0, 9, 40).astype("<u2"), RNG.integers(0, 9, 40).astype("<u2")
    write_source(tmp_path / "evens.h5", evens)
    write_source(tmp_path / "odds.h5", odds)
    write_source(tmp_path / "wide.h5", RNG.random((80, 90)))
    path = tmp_path / "vds.h5"
    with h5py.File(path, "w", libver=libver) as f:
        grid = h5py.VirtualLayout(shape=(100, 120), dtype="<f8")
        for i in range(4):
            r, c = divmod(i, 2)
            grid[r * 50:(r + 1) * 50, c * 60:(c + 1) * 60] = h5py.VirtualSource(f"tile{i}.h5", "data", shape=(50, 60))
        f.create_virtual_dataset("grid", grid)
        woven = h5py.VirtualLayout(shape=(80,), dtype="<u2")
        woven[0::2] = h5py.VirtualSource("evens.h5", "data", shape=(40,))
        woven[1::2] = h5py.VirtualSource("odds.h5", "data", shape=(40,))
        f.create_virtual_dataset("woven", woven, fillvalue=3)
        part = h5py.VirtualLayout(shape=(30, 20), dtype="<f8")
        part[5:25, :] = h5py.VirtualSource("wide.h5", "data", shape=(80, 90))[10:70:3, 4:24]
        f.create_virtual_dataset("part", part, fillvalue=np.nan)
    assert_reads_like_h5py(path, "grid", random_selections((100, 120)))
    assert_reads_like_h5py(path, "woven", [np.s_[3:70:4], np.s_[[0, 1, 79]], np.s_[5]])
    assert_reads_like_h5py(path, "part", random_selections((30, 20)))


@pytest.mark.parametrize("libver", LIBVERS)
def test_sources_in_the_same_file_and_big_endian(tmp_path, libver):
    path = tmp_path / "self.h5"
    with h5py.File(path, "w", libver=libver) as f:
        f["raw"] = np.arange(200, dtype=">i2").reshape(10, 20)
        layout = h5py.VirtualLayout(shape=(20, 10), dtype=">i2")
        layout[0:10:2, :] = h5py.VirtualSource(f["raw"])[0:10:2, 5:15]
        layout[15, :] = h5py.VirtualSource(f["raw"])[3, 10:20]
        f.create_virtual_dataset("view", layout, fillvalue=-1)
    assert_reads_like_h5py(path, "view", random_selections((20, 10)))


def test_missing_sources_read_as_the_fill_value(tmp_path):
    write_source(tmp_path / "here.h5", np.arange(10, dtype="<i8"))
    with h5py.File(tmp_path / "no_data.h5", "w") as f:
        f["other"] = np.zeros(10, dtype="<i8")
    layout = h5py.VirtualLayout(shape=(3, 10), dtype="<i8")
    layout[0] = h5py.VirtualSource("here.h5", "data", shape=(10,))
    layout[1] = h5py.VirtualSource("gone.h5", "data", shape=(10,))
    layout[2] = h5py.VirtualSource("no_data.h5", "data", shape=(10,))
    path = tmp_path / "vds.h5"
    with h5py.File(path, "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=42)
    assert_reads_like_h5py(path, "v", [np.s_[1:], np.s_[:, 3]])
    with h5turbo.File(path) as f:
        assert (f["v"][1:] == 42).all()


def test_relative_sources_are_found_next_to_the_virtual_file(tmp_path, monkeypatch):
    (tmp_path / "run" / "parts").mkdir(parents=True)
    write_source(tmp_path / "run" / "parts" / "a.h5", np.arange(6.0))
    layout = h5py.VirtualLayout(shape=(6,), dtype="<f8")
    layout[:] = h5py.VirtualSource("parts/a.h5", "data", shape=(6,))
    path = tmp_path / "run" / "vds.h5"
    with h5py.File(path, "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1.0)
    monkeypatch.chdir(tmp_path)  # not the virtual file's folder
    with h5turbo.File(path) as f:
        assert np.array_equal(f["v"][()], np.arange(6.0))
    monkeypatch.setenv("HDF5_VDS_PREFIX", str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere" / "parts").mkdir(parents=True)
    write_source(tmp_path / "elsewhere" / "parts" / "a.h5", -np.arange(6.0))
    with h5turbo.File(path) as f:  # the prefix comes first, as in libhdf5
        assert np.array_equal(f["v"][()], -np.arange(6.0))


def test_virtual_dataset_of_virtual_datasets_and_a_cycle(tmp_path):
    write_source(tmp_path / "leaf.h5", np.arange(8, dtype="<i4"))
    inner = h5py.VirtualLayout(shape=(8,), dtype="<i4")
    inner[:] = h5py.VirtualSource("leaf.h5", "data", shape=(8,))
    with h5py.File(tmp_path / "inner.h5", "w") as f:
        f.create_virtual_dataset("data", inner)
    outer = h5py.VirtualLayout(shape=(2, 8), dtype="<i4")
    outer[1] = h5py.VirtualSource("inner.h5", "data", shape=(8,))
    with h5py.File(tmp_path / "outer.h5", "w") as f:
        f.create_virtual_dataset("v", outer, fillvalue=9)
    assert_reads_like_h5py(tmp_path / "outer.h5", "v", [np.s_[1, 2:5]])
    for name, other in [("x.h5", "y.h5"), ("y.h5", "x.h5")]:
        layout = h5py.VirtualLayout(shape=(4,), dtype="<i4")
        layout[:] = h5py.VirtualSource(other, "v", shape=(4,))
        with h5py.File(tmp_path / name, "w") as f:
            f.create_virtual_dataset("v", layout)
    with h5turbo.File(tmp_path / "x.h5") as f, pytest.raises(h5turbo.Error, match="nested|cycle"):
        f["v"][()]


def test_unsupported_mappings_say_so(tmp_path):
    write_source(tmp_path / "src.h5", np.arange(100, dtype="<i4"), maxshape=(None,))
    path = tmp_path / "vds.h5"
    with h5py.File(path, "w") as f:
        conv = h5py.VirtualLayout(shape=(100,), dtype="<f8")  # a datatype conversion
        conv[:] = h5py.VirtualSource("src.h5", "data", shape=(100,))
        f.create_virtual_dataset("converted", conv)
        grow = h5py.VirtualLayout(shape=(100,), maxshape=(None,), dtype="<i4")
        grow[:h5py.h5s.UNLIMITED] = h5py.VirtualSource("src.h5", "data", shape=(100,), maxshape=(None,))[
            :h5py.h5s.UNLIMITED]
        f.create_virtual_dataset("unlimited", grow)
    with h5turbo.File(path) as f:
        for name in ["converted", "unlimited"]:
            assert f[name].is_virtual
            with pytest.raises(h5turbo.UnsupportedError):
                f[name][()]
        with pytest.raises(h5turbo.UnsupportedError):
            f["converted"].sum()


@pytest.mark.parametrize("dtype", ["<i2", ">u4", "<f8", ">f4"])
def test_reductions_over_a_virtual_dataset_match_numpy(tmp_path, monkeypatch, dtype):
    from h5turbo.compute import reductions as _reduce
    monkeypatch.setattr(_reduce, "SLAB_BYTES", 700)  # many slabs, uneven last one
    parts = [(RNG.normal(size=(7, 40)) * 50).astype(dtype) for _ in range(3)]
    if np.dtype(dtype).kind == "f":
        parts[1][2, 5] = np.nan
    for i, part in enumerate(parts):
        write_source(tmp_path / f"p{i}.h5", part, chunks=(4, 16))
    layout = h5py.VirtualLayout(shape=(23, 40), dtype=dtype)
    for i in range(3):
        layout[i * 7:(i + 1) * 7] = h5py.VirtualSource(f"p{i}.h5", "data", shape=(7, 40))
    path = tmp_path / "vds.h5"
    with h5py.File(path, "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=3)
    with h5py.File(path) as h, h5turbo.File(path) as f:
        full, ds = h["v"][()], f["v"]
        for axis in [None, 0, 1, (0, 1)]:
            for op in ["sum", "mean", "var", "std", "min", "max", "count_nonzero"]:
                got = getattr(ds, op)(axis=axis)
                if op in ("mean", "var", "std") or (op == "sum" and full.dtype.kind == "f"):
                    # float results: against numpy in float64 (float32 data: ours accumulates
                    # in float64, numpy's float32 pairwise sum is the less exact one)
                    want = getattr(np, op)(full.astype(np.float64), axis=axis)
                    rtol = 1e-5 if full.dtype.itemsize == 4 and full.dtype.kind == "f" else 1e-9
                    np.testing.assert_allclose(got, want, rtol=rtol, equal_nan=True, err_msg=f"{op} {axis}")
                else:
                    want = getattr(np, op)(full, axis=axis)
                    assert np.asarray(got).dtype == np.asarray(want).dtype, (op, axis)
                    np.testing.assert_array_equal(got, want, err_msg=f"{op} {axis}")
        sub = np.s_[2:20:3, 5:35]
        # against float64 sums, as above: numpy's float32 sum was 5e-6 off for some draws
        want = np.sum(full[sub].astype(np.float64), axis=0)
        np.testing.assert_allclose(ds.sum(axis=0, selection=sub), want, rtol=1e-6, equal_nan=True)
        np.testing.assert_array_equal(ds.max(axis=1, selection=sub), np.max(full[sub], axis=1))


# ---------------------------------------------------------------------- virtual_sources


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_virtual_sources_like_h5py(tmp_path, libver):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f["a"] = np.arange(40.0).reshape(4, 10)
    layout = h5py.VirtualLayout(shape=(8, 10), dtype="f8")
    vsource = h5py.VirtualSource(str(src), "a", shape=(4, 10))
    layout[0:4] = vsource
    layout[4:8, ::2] = vsource[:, 1::2]
    layout[4, 1] = vsource[3, 9]
    layout[5:7, 1:4] = vsource[0:2, 7:10]
    path = tmp_path / "vds.h5"
    with h5py.File(path, "w", libver=libver) as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1)
        f["plain"] = np.zeros(3)
    with h5turbo.File(path) as ours, h5py.File(path, "r") as theirs:
        got, want = ours["v"].virtual_sources(), theirs["v"].virtual_sources()
        assert len(got) == len(want) == 4
        for g, w in zip(got, want):
            assert (g.file_name, g.dset_name) == (w.file_name, w.dset_name)
            assert selection_summary(g.vspace) == selection_summary(w.vspace)
            assert selection_summary(g.src_space) == selection_summary(w.src_space)
            assert g.vspace.shape == w.vspace.shape
        for ds in (ours["plain"], theirs["plain"]):
            with pytest.raises(RuntimeError, match="Not a virtual dataset"):
                ds.virtual_sources()


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_mappings_sharing_long_names(tmp_path, libver):
    """HDF5 2.0 with libver latest stores a source file or dataset name an earlier
    mapping has (and longer than an index) as that mapping's index (flags 0x01, 0x02)."""
    src = tmp_path / ("a_rather_long_source_file_name_" + libver + ".h5")
    with h5py.File(src, "w") as f:
        f["a_long_source_dataset_name"] = np.arange(40.0).reshape(4, 10)
        f["another_long_dataset_name"] = -np.arange(40.0).reshape(4, 10)
    layout = h5py.VirtualLayout(shape=(12, 10), dtype="f8")
    first = h5py.VirtualSource(str(src), "a_long_source_dataset_name", shape=(4, 10))
    second = h5py.VirtualSource(str(src), "another_long_dataset_name", shape=(4, 10))
    layout[0:4] = first
    layout[4:8, ::2] = first[:, 1::2]
    layout[8:12] = second
    layout[4, 1] = second[3, 9]
    path = tmp_path / "shared.h5"
    with h5py.File(path, "w", libver=libver) as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1)
        f["here_with_a_long_name"] = np.arange(20.0).reshape(2, 10)
        local = h5py.VirtualLayout(shape=(4, 10), dtype="f8")
        here = h5py.VirtualSource(".", "here_with_a_long_name", shape=(2, 10))
        local[0:2] = here
        local[2:4, ::2] = here[:, 1::2]
        f.create_virtual_dataset("w", local, fillvalue=-1)
    with h5turbo.File(path) as ours, h5py.File(path, "r") as theirs:
        for name in ("v", "w"):
            assert np.array_equal(ours[name][()], theirs[name][()])
            assert [(m.file_name, m.dset_name) for m in ours[name].virtual_sources()] == \
                [(m.file_name, m.dset_name) for m in theirs[name].virtual_sources()]


def test_many_mappings_of_every_shape_read_as_h5py_element_by_element(tmp_path):
    # a read skips the mappings whose box it misses: regular tiles, strided ones,
    # irregular unions (blocks), a whole-space mapping under them, and gaps of fill
    path = tmp_path / "many.h5"
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        layout = h5py.VirtualLayout(shape=(40, 30), dtype="i4")
        f["src/base"] = np.full((40, 30), -5, dtype="i4")
        layout[:, :] = h5py.VirtualSource(".", "src/base", shape=(40, 30))  # everywhere, first
        for i in range(0, 40, 4):
            f[f"src/row{i}"] = np.arange(30, dtype="i4") + 1000 * i
            layout[i, :] = h5py.VirtualSource(".", f"src/row{i}", shape=(30,))
        f["src/strided"] = np.arange(15, dtype="i4") + 50000
        layout[1, ::2] = h5py.VirtualSource(".", "src/strided", shape=(15,))
        f["src/tile"] = np.arange(36, dtype="i4").reshape(6, 6) + 70000
        layout[30:36, 20:26] = h5py.VirtualSource(".", "src/tile", shape=(6, 6))
        f.create_virtual_dataset("v", layout, fillvalue=-1)
        f.create_virtual_dataset("gaps", h5py.VirtualLayout(shape=(40, 30), dtype="i4"), fillvalue=-7)
    with h5py.File(path) as ref, h5turbo.File(path) as ours:
        whole = ref["v"][()]
        assert np.array_equal(ours["v"][()], whole)
        for i, j in zip(rng.integers(0, 40, 300), rng.integers(0, 30, 300)):
            assert ours["v"][i, j] == whole[i, j], (i, j)
        for sel in (np.s_[28:37, 19:27], np.s_[1, :], np.s_[::5, ::7], np.s_[[2, 30, 33], 21]):
            assert np.array_equal(ours["v"][sel], whole[sel]), sel
        assert ours["gaps"][5, 5] == ref["gaps"][5, 5] == -7
