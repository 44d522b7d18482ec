"""Virtual datasets of variable-length strings and sequences, and of object
references, read through the public API (`h5turbo.File(...)[...]`) against h5py on
files written here: values from each source (their heap objects live in the source's
file), the fill value where no mapping reaches (h5py gives b'' / an empty array),
sources in other files and in the same file, strided mappings, selections, a missing
source file, a virtual dataset of virtual datasets."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

LIBVERS = ["v110", "latest"]
STR_UTF8 = h5py.string_dtype("utf-8")
STR_ASCII = h5py.string_dtype("ascii")
INT_SEQ = h5py.vlen_dtype(np.dtype("int32"))
FLOAT_SEQ = h5py.vlen_dtype(np.dtype("<f8"))


def words(row: int, n: int) -> list[str]:
    return [("ü" if (row + i) % 3 == 0 else "w") + "-%d-%d" % (row, i) * ((row + i) % 4) for i in range(n)]


def sequences(row: int, n: int, dtype) -> np.ndarray:
    out = np.empty(n, dtype=object)
    for i in range(n):
        out[i] = np.arange((row * 7 + i) % 5, dtype=dtype) * (row + 1) + i
    return out


def values_for(dtype, row: int, n: int):
    if dtype is STR_UTF8:
        return np.array(words(row, n), dtype=object)
    if dtype is STR_ASCII:
        return np.array([w.replace("ü", "u").encode() for w in words(row, n)], dtype=object)
    return sequences(row, n, np.int32 if dtype is INT_SEQ else np.float64)


def same(got, want) -> bool:
    """Equal element by element, as h5py gives them (str/bytes, or 1-d arrays)."""
    got, want = np.asarray(got, dtype=object), np.asarray(want, dtype=object)
    if got.shape != want.shape:
        return False
    for a, b in zip(got.ravel(), want.ravel()):
        if isinstance(b, np.ndarray):
            if not (isinstance(a, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)):
                return False
        elif type(a) is not type(b) or a != b:
            return False
    return True


def assert_reads_like_h5py(path: Path, name: str, selections=()) -> None:
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        want, ours = h[name], f[name]
        assert ours.shape == want.shape and ours.dtype == want.dtype
        assert same(ours[()], want[()])
        for sel in selections:
            assert same(ours[sel], want[sel]), sel


@pytest.mark.parametrize("libver", LIBVERS)
@pytest.mark.parametrize("dtype", [STR_UTF8, STR_ASCII, INT_SEQ, FLOAT_SEQ], ids=["utf8", "ascii", "int32seq", "f8seq"])
def test_rows_from_source_files_and_an_unmapped_row(tmp_path, libver, dtype):
    rows, n = 4, 9
    layout = h5py.VirtualLayout(shape=(rows + 1, n), dtype=dtype)
    for r in range(rows):
        with h5py.File(tmp_path / f"src{r}.h5", "w", libver=libver) as f:
            f.create_dataset("data", data=values_for(dtype, r, n), dtype=dtype)
        layout[r] = h5py.VirtualSource(f"src{r}.h5", "data", shape=(n,))
    # row `rows` has no mapping: h5py reads the fill value (b'' or an empty array)
    with h5py.File(tmp_path / "vds.h5", "w", libver=libver) as f:
        f.create_virtual_dataset("v", layout)
    with h5py.File(tmp_path / "vds.h5", "r") as h:
        assert all(len(x) == 0 for x in h["v"][rows])  # the oracle's fill, as documented
    assert_reads_like_h5py(tmp_path / "vds.h5", "v",
                           [np.s_[1], np.s_[rows], np.s_[:, 3], np.s_[1:4, ::2], np.s_[::2, 7:], np.s_[2, [0, 4, 8]]])


@pytest.mark.parametrize("dtype", [STR_UTF8, INT_SEQ], ids=["utf8", "int32seq"])
def test_interleaved_and_offset_mappings_in_the_same_file(tmp_path, dtype):
    n = 12
    path = tmp_path / "same.h5"
    with h5py.File(path, "w", libver="latest") as f:
        a = f.create_dataset("a", data=values_for(dtype, 1, n), dtype=dtype)
        b = f.create_dataset("b", data=values_for(dtype, 2, n), dtype=dtype)
        layout = h5py.VirtualLayout(shape=(2 * n + 3,), dtype=dtype)
        layout[0:2 * n:2] = h5py.VirtualSource(a)  # even elements from a
        layout[1:n:2] = h5py.VirtualSource(b)[::2]  # odd elements of the first half from b
        layout[2 * n:2 * n + 2] = h5py.VirtualSource(b)[n - 2:]  # b's last two at the end
        f.create_virtual_dataset("v", layout)
    assert_reads_like_h5py(path, "v", [np.s_[::3], np.s_[5:20], np.s_[-4:], np.s_[[1, 2, 25]], np.s_[2 * n + 2]])


def test_missing_source_file_reads_as_fill(tmp_path):
    n = 5
    with h5py.File(tmp_path / "present.h5", "w") as f:
        f.create_dataset("data", data=values_for(STR_UTF8, 0, n), dtype=STR_UTF8)
    layout = h5py.VirtualLayout(shape=(2, n), dtype=STR_UTF8)
    layout[0] = h5py.VirtualSource("present.h5", "data", shape=(n,))
    layout[1] = h5py.VirtualSource("absent.h5", "data", shape=(n,))
    with h5py.File(tmp_path / "vds.h5", "w") as f:
        f.create_virtual_dataset("v", layout)
    assert_reads_like_h5py(tmp_path / "vds.h5", "v", [np.s_[1], np.s_[:, 2]])


def test_virtual_dataset_of_virtual_datasets(tmp_path):
    n = 6
    for r in range(2):
        with h5py.File(tmp_path / f"src{r}.h5", "w") as f:
            f.create_dataset("data", data=values_for(INT_SEQ, r, n), dtype=INT_SEQ)
    inner = h5py.VirtualLayout(shape=(2, n), dtype=INT_SEQ)
    for r in range(2):
        inner[r] = h5py.VirtualSource(f"src{r}.h5", "data", shape=(n,))
    with h5py.File(tmp_path / "inner.h5", "w") as f:
        f.create_virtual_dataset("v", inner)
    outer = h5py.VirtualLayout(shape=(3, n), dtype=INT_SEQ)
    outer[1:3] = h5py.VirtualSource("inner.h5", "v", shape=(2, n))
    with h5py.File(tmp_path / "outer.h5", "w") as f:
        f.create_virtual_dataset("v", outer)
    assert_reads_like_h5py(tmp_path / "outer.h5", "v", [np.s_[0], np.s_[2, 1:4]])


def test_object_references_from_a_source_in_the_same_file(tmp_path):
    path = tmp_path / "refs.h5"
    with h5py.File(path, "w", libver="latest") as f:
        targets = [f.create_dataset(f"t{i}", data=np.arange(i)) for i in range(4)]
        refs = f.create_dataset("refs", (4,), dtype=h5py.ref_dtype)
        refs[...] = np.array([t.ref for t in targets], dtype=object)
        layout = h5py.VirtualLayout(shape=(6,), dtype=h5py.ref_dtype)
        layout[1:5] = h5py.VirtualSource(refs)
        f.create_virtual_dataset("v", layout)
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        want, got = h["v"][()], f["v"][()]
        assert len(got) == len(want) == 6
        for g, w in zip(got, want):
            assert bool(g) == bool(w)  # unmapped elements: null references
            if w:
                assert f[g].name == h[w].name and np.array_equal(f[g][()], h[w][()])


def test_compound_with_a_vlen_string_field(tmp_path):
    dtype = np.dtype([("id", "<i4"), ("label", STR_UTF8)])
    n = 7
    with h5py.File(tmp_path / "src.h5", "w") as f:
        f.create_dataset("data", data=np.array([(i, "x" * i) for i in range(n)], dtype=dtype))
    layout = h5py.VirtualLayout(shape=(n + 2,), dtype=dtype)
    layout[2:] = h5py.VirtualSource("src.h5", "data", shape=(n,))
    with h5py.File(tmp_path / "vds.h5", "w") as f:
        f.create_virtual_dataset("v", layout)
    with h5py.File(tmp_path / "vds.h5", "r") as h, h5turbo.File(tmp_path / "vds.h5") as f:
        want, got = h["v"][()], f["v"][()]
        assert got.dtype == want.dtype
        assert [tuple(x) for x in got.tolist()] == [tuple(x) for x in want.tolist()]
