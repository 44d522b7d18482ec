"""Datasets whose raw data lives in external files (h5py's ``external=``), read by
h5turbo against h5py: several segments with offsets, an unlimited last segment, a
file shorter than its segment (zeros, as libhdf5), the search path, a missing file."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo


@pytest.fixture
def in_tmp(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)  # libhdf5 looks for external files from the working folder
    return tmp_path


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_segments_offsets_and_an_unlimited_tail(in_tmp, libver):
    data = np.random.default_rng(3).normal(size=(50, 30)).astype(">f8")
    raw = data.tobytes()
    (in_tmp / "a.bin").write_bytes(b"preamble" + raw[:5000] + b"trailing junk")
    (in_tmp / "b.bin").write_bytes(raw[5000:7000])
    (in_tmp / "c.bin").write_bytes(b"xx" + raw[7000:])
    with h5py.File("ext.h5", "w", libver=libver) as f:
        f.create_dataset("x", shape=data.shape, dtype=">f8",
                         external=[("a.bin", 8, 5000), ("b.bin", 0, 2000), ("c.bin", 2, h5py.h5f.UNLIMITED)])
    with h5py.File("ext.h5", "r") as h, h5turbo.File("ext.h5") as f:
        assert f["x"].external == h["x"].external
        # libhdf5 counts external data as stored (it was 0)
        assert f["x"].id.get_storage_size() == h["x"].id.get_storage_size() == data.nbytes
        assert f["x"][()].tobytes() == h["x"][()].tobytes() == data.astype(">f8").tobytes()
        for sel in [np.s_[3:40:7, 5], np.s_[16:18], np.s_[[1, 30, 49], 2:29:3], np.s_[49, -1]]:
            assert np.array_equal(f["x"][sel], h["x"][sel])


def test_short_external_file_reads_zeros_and_the_search_path(in_tmp, monkeypatch):
    (in_tmp / "short.bin").write_bytes(np.arange(10, dtype="<i4").tobytes())  # 40 of 80 bytes
    with h5py.File("ext.h5", "w") as f:
        f.create_dataset("x", shape=(20,), dtype="<i4", external=[("short.bin", 0, 80)])
    with h5py.File("ext.h5", "r") as h, h5turbo.File("ext.h5") as f:
        assert np.array_equal(f["x"][()], h["x"][()])
        assert np.array_equal(f["x"][()], np.r_[np.arange(10), np.zeros(10)].astype("<i4"))
    # from another working folder: found next to the HDF5 file
    elsewhere = in_tmp / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with h5turbo.File(in_tmp / "ext.h5") as f:
        assert f["x"][3] == 3
    # HDF5_EXTFILE_PREFIX comes first, as in libhdf5
    (elsewhere / "short.bin").write_bytes(np.full(20, 7, dtype="<i4").tobytes())
    monkeypatch.setenv("HDF5_EXTFILE_PREFIX", str(elsewhere))
    with h5turbo.File(in_tmp / "ext.h5") as f:
        assert (f["x"][()] == 7).all()


def test_missing_external_file_is_an_error_naming_it(in_tmp):
    with h5py.File("ext.h5", "w") as f:
        f.create_dataset("x", shape=(4,), dtype="<i2", external=[("nowhere.bin", 0, 8)])
    with h5py.File("ext.h5", "r") as h, h5turbo.File("ext.h5") as f:
        assert f["x"].shape == (4,) and f["x"].external == [("nowhere.bin", 0, 8)]
        assert f["x"].id.get_storage_size() == h["x"].id.get_storage_size() == 8  # never written
        with pytest.raises(FileNotFoundError, match="nowhere.bin"):  # h5py: OSError too
            f["x"][()]
