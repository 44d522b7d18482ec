"""Reading ahead (issue 16): the io_depth window changes when bytes are fetched, never
what is read; files truncated or closed while reads are in flight end in h5turbo.Error.

io_depth=0 is the path without read-ahead hints (what runs where the system offers
none); every test here runs it beside tiny and huge windows."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest

from support import h5gen
import h5turbo

# none (the fallback path), smaller than any chunk, the default, larger than any file
DEPTHS = [0, 1, 4096, None, "1G"]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> tuple[Path, np.ndarray]:
    path = tmp_path_factory.mktemp("cold") / "m.h5"
    data = np.random.default_rng(16).integers(0, 1000, (700, 900), dtype="<i4")
    with h5py.File(path, "w") as f:
        f.create_dataset("plain", data=data, chunks=(64, 128))
        f.create_dataset("gzip", data=data, chunks=(50, 100), compression="gzip", shuffle=True)
        f.create_dataset("contiguous", data=data)
        f.create_dataset("sparse_chunks", shape=data.shape, dtype="<i4", chunks=(64, 64), fillvalue=-1)
        f["sparse_chunks"][100:300, 200:700] = data[100:300, 200:700]
    return path, data


SELECTIONS = [np.s_[()], np.s_[17:650:3, 5:800], np.s_[::-7, [1, 50, 899]], np.s_[333], np.s_[:, 450:451]]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("name", ["plain", "gzip", "contiguous", "sparse_chunks"])
def test_every_window_reads_the_same(matrix, name, depth):
    path, _ = matrix
    with h5py.File(path, "r") as ref:
        whole = ref[name][()]  # libhdf5's reading, as the reference
    with h5turbo.File(path) as f:
        for sel in SELECTIONS:
            np.testing.assert_array_equal(f[name].read(sel, io_depth=depth), whole[sel])
            np.testing.assert_array_equal(f[name].read(sel, threads=1, io_depth=depth), whole[sel])
        with h5turbo.io_depth(depth):
            np.testing.assert_array_equal(f[name].sum(axis=0), whole.sum(axis=0))
            np.testing.assert_array_equal(f[name].max(axis=1, selection=np.s_[10:500]), whole[10:500].max(axis=1))


def test_io_depth_values():
    with h5turbo.io_depth("64M") as d:
        assert d == 64 << 20
        with h5turbo.io_depth(0) as inner:
            assert inner == 0
        assert h5turbo._native.io_depth() == 64 << 20
    with h5turbo.io_depth("512KiB") as d:
        assert d == 512 << 10
    for bad in (-1, "lots", 1.5, True):
        with pytest.raises(ValueError):
            with h5turbo.io_depth(bad):
                pass


def test_window_is_per_thread(matrix):
    """A window set on one thread does not leak into reads started on another."""
    seen = {}
    with h5turbo.io_depth(12345):
        t = threading.Thread(target=lambda: seen.setdefault("other", h5turbo._native.io_depth()))
        t.start()
        t.join()
        assert h5turbo._native.io_depth() == 12345
    assert seen["other"] != 12345


@pytest.fixture(scope="module")
def many_fast5(tmp_path_factory) -> list[Path]:
    """Thousands of small single-read files (plus a few multi-read ones between them)."""
    folder = tmp_path_factory.mktemp("many")
    paths = []
    for i in range(2000):
        p = folder / f"s{i:05d}.fast5"
        h5gen.write_fast5_single(p, 50 + i % 300, seed=i)
        paths.append(p)
    for i in range(3):
        p = folder / f"m{i}.fast5"
        h5gen.write_fast5_multi(p, [100 + 37 * j for j in range(40)], seed=100 + i)
        paths.insert(700 * i + 5, p)
    return paths


def _summary(reads) -> list:
    return [(r.read_id, r.signal.tobytes(), r.path) for r in reads]


def test_thousands_of_small_files_every_window(many_fast5):
    expected = _summary(h5turbo.read_fast5(many_fast5, on_error="raise", io_depth=0))
    assert len(expected) == 2000 + 3 * 40
    for depth in (1, 4096, None, "1G"):
        assert _summary(h5turbo.read_fast5(many_fast5, on_error="raise", io_depth=depth)) == expected
    with h5py.File(many_fast5[0], "r") as f:
        read = next(iter(f["Raw/Reads"].values()))
        assert expected[0][1] == read["Signal"][()].tobytes()


@pytest.fixture(scope="module")
def large_multi_fast5(tmp_path_factory) -> list[Path]:
    """Multi-read files larger than read_fast5's small-file bound (hinted in order by
    its hinting thread, each the only file of its first task), small files between."""
    folder = tmp_path_factory.mktemp("large")
    paths = []
    for i in range(4):
        big = folder / f"m{i}.fast5"
        h5gen.write_fast5_multi(big, [9000 + 311 * j for j in range(150)], seed=40 + i)
        paths.append(big)
        for k in range(3 * i):
            small = folder / f"s{i}_{k}.fast5"
            h5gen.write_fast5_single(small, 400 + 50 * k, seed=500 + 10 * i + k)
            paths.append(small)
    return paths


def test_large_multi_read_files_every_window_and_thread_count(large_multi_fast5):
    from h5turbo.formats import fast5
    assert os.path.getsize(large_multi_fast5[0]) > fast5.SMALL_FILE_BYTES  # the path under test
    expected = _summary(h5turbo.read_fast5(large_multi_fast5, on_error="raise", io_depth=0, threads=1))
    assert len(expected) == 4 * 150 + 3 * (0 + 1 + 2 + 3)
    for depth in (1, 4096, None, "1G"):
        for threads in (1, 3, 8):
            got = _summary(h5turbo.read_fast5(large_multi_fast5, on_error="raise", io_depth=depth, threads=threads))
            assert got == expected, (depth, threads)
    with h5py.File(large_multi_fast5[-1], "r") as f:  # the last read, against libhdf5
        read = next(iter(f["Raw/Reads"].values()))
        assert expected[-1][1] == read["Signal"][()].tobytes()


def test_a_folder_mixing_sizes_reads_the_same_and_measures_every_file_once_mixed(large_multi_fast5, tmp_path):
    """A small file first: the large files after it join its group (only a group's
    first file is measured) until its results show a multi-read file; from then on
    every file is measured, and large files get their own tasks again."""
    from h5turbo.formats import fast5
    small = tmp_path / "a_small.fast5"
    h5gen.write_fast5_single(small, 300, seed=9)
    paths = [small] + large_multi_fast5 * 2  # more than one group's worth of files
    expected = _summary(h5turbo.read_fast5(paths, on_error="raise", io_depth=0, threads=1))
    for depth in (4096, None):
        assert _summary(h5turbo.read_fast5(paths, on_error="raise", io_depth=depth, threads=3)) == expected

    class Hints:
        pushed: list = []

        def push(self, path):
            self.pushed.append(path)
            return len(self.pushed) - 1

    grouping = fast5._Grouping([str(p) for p in paths], Hints())
    groups = grouping.groups()
    first = next(groups)
    assert not first.large and first.paths[:2] == [str(small), str(large_multi_fast5[0])]
    grouping.measure_every_file = True  # as _tasks does on seeing the first group's results
    rest = list(groups)
    large = [g.paths[0] for g in rest if g.large]
    assert large and all(os.path.getsize(p) > fast5.SMALL_FILE_BYTES for p in large)
    assert all(os.path.getsize(p) <= fast5.SMALL_FILE_BYTES for g in rest if not g.large for p in g.paths)
    assert [p for g in [first, *rest] for p in g.paths] == [str(p) for p in paths]


def test_large_files_removed_or_cut_after_the_walk_began(tmp_path):
    """A large file gone (or cut short) after read_fast5 measured it and gave it to the
    hinting thread: its error in its place, every other read read, nothing hangs."""
    paths = []
    for i in range(6):
        p = tmp_path / f"m{i}.fast5"
        h5gen.write_fast5_multi(p, [9000 + 97 * j for j in range(130)], seed=70 + i)
        paths.append(p)
    reads = h5turbo.read_fast5(paths, threads=2, io_depth="1G")
    first = next(reads)
    assert isinstance(first, h5turbo.Fast5Read) and first.path == str(paths[0])
    paths[4].unlink()
    os.truncate(paths[5], 5000)
    rest = list(reads)
    by_file = {}
    for r in rest:
        by_file.setdefault(r.path, []).append(r)
    assert all(isinstance(r, h5turbo.Fast5Read) for p in paths[:4] for r in by_file.get(str(p), []))
    assert sum(len(by_file[str(p)]) for p in paths[:4]) == 4 * 130 - 1
    for gone in paths[4:]:
        got = by_file[str(gone)]
        assert any(isinstance(r, h5turbo.Fast5Error) for r in got)
        assert all(str(gone) in str(r) for r in got if isinstance(r, h5turbo.Fast5Error))


def test_fast5_files_truncated_after_they_were_opened_ahead(tmp_path):
    """Files truncated (or removed) while the reader holds them open ahead of their
    turn: each gives an error in its place, the others read, nothing hangs."""
    paths = []
    for i in range(200):
        p = tmp_path / f"r{i:03d}.fast5"
        h5gen.write_fast5_single(p, 3000, seed=i)
        paths.append(p)
    reads = h5turbo.read_fast5(paths, threads=1, io_depth="1G")
    first = next(reads)  # the reader is now running ahead of this
    assert isinstance(first, h5turbo.Fast5Read)
    for p in paths[100:]:  # beyond the reader's window of tasks (2 x 16 files)
        os.truncate(p, 1000)
    rest = list(reads)
    assert len(rest) == 199
    errors = [r for r in rest if isinstance(r, h5turbo.Fast5Error)]
    assert all(isinstance(r, (h5turbo.Fast5Read, h5turbo.Fast5Error)) for r in rest)
    assert len(errors) >= 90  # files the reader had not reached yet are surely cut short
    assert all(e.path.endswith(".fast5") for e in errors)


def _big_file(tmp_path: Path, compression) -> tuple[Path, np.ndarray]:
    path = tmp_path / "big.h5"
    data = np.random.default_rng(1).integers(0, 50, (4096, 2048), dtype="<i4")  # 32 MiB
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(128, 512), compression=compression)
    return path, data


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_truncated_while_reads_are_in_flight(tmp_path, compression):
    path, data = _big_file(tmp_path, compression)
    size = path.stat().st_size
    outcomes = []
    for attempt in range(6):
        with h5turbo.File(path) as f:
            ds = f["x"]
            cutter = threading.Timer(0.002 * attempt, os.truncate, (path, size // 3))
            cutter.start()
            try:
                got = ds.read(io_depth=4 << 20)
                np.testing.assert_array_equal(got, data)  # finished before the cut
                outcomes.append("read")
            except h5turbo.Error as exc:
                assert str(path) in str(exc)
                outcomes.append("error")
            cutter.join()
            # after the cut, a read always fails cleanly
            with pytest.raises(h5turbo.Error):
                ds.read(io_depth=4 << 20)
        _big_file(tmp_path, compression)  # whole again for the next attempt


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_closed_while_reads_are_in_flight(tmp_path, compression):
    path, data = _big_file(tmp_path, compression)
    for attempt in range(6):
        f = h5turbo.File(path)
        ds = f["x"]
        closer = threading.Timer(0.002 * attempt, f.close)
        closer.start()
        try:
            np.testing.assert_array_equal(ds.read(io_depth=4 << 20), data)
        except h5turbo.Error:
            pass  # ClosedError (or the error of a read cut short): never a crash or hang
        closer.join()
        with pytest.raises(h5turbo.Error):
            ds.read(io_depth=4 << 20)
