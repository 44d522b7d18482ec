"""Options of h5turbo.write checked before anything is written, as typed errors that
name the file and the dataset; file objects; failures of libhdf5 named."""

from __future__ import annotations

import errno
import io
import os
import re

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo.writing import write as write_module
from h5turbo.writing.repack import repack
from h5turbo.writing.write import ArgumentError, MAX_THREADS_PER_CORE


@pytest.mark.parametrize("level", [3.7, "3", True])
def test_level_must_be_an_integer(tmp_path, level):
    """level=3.7 was truncated to 3 and "3" taken (h5py: "GZIP setting must be an
    integer from 0-9")."""
    path = tmp_path / "t.h5"
    with pytest.raises(ArgumentError, match=re.escape(f"{path}:d") + ".*level"):
        h5turbo.write(path, "d", np.arange(10), compression="gzip", level=level, mode="w")
    assert not path.exists()
    h5turbo.write(path, "d", np.arange(10), compression="gzip", level=np.int64(5), mode="w")
    with h5py.File(path, "r") as f:
        assert f["d"].compression_opts == 5


@pytest.mark.parametrize("threads", ["two", "2", 2.5, True, 0, -1])
def test_threads_must_be_a_positive_integer(tmp_path, threads):
    """threads="two" was a bare ValueError, 2.5 became 2."""
    with pytest.raises(ArgumentError, match="threads"):
        h5turbo.write(tmp_path / "t.h5", "d", np.arange(10), threads=threads, mode="w")
    with pytest.raises(ArgumentError, match="threads"):
        repack(_small_file(tmp_path), tmp_path / "r.h5", threads=threads)


def _small_file(tmp_path):
    path = tmp_path / "src.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(10)
    return path


def test_threads_are_capped(tmp_path):
    """threads=10000 started 1024 encoding threads, which the native pools keep."""
    os_threads = lambda: len(os.listdir("/proc/self/task"))  # noqa: E731
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("needs /proc")
    cap = MAX_THREADS_PER_CORE * write_module._cores()
    before = os_threads()
    x = np.random.default_rng(0).random((256, 256))
    h5turbo.write(tmp_path / "t.h5", "d", x, chunks=(16, 16), compression="gzip", level=1, threads=10_000,
                  mode="w")
    assert os_threads() - before <= cap
    with h5py.File(tmp_path / "t.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][()], x)


def test_attributes_are_checked_before_the_data_is_written(tmp_path):
    """attrs=[1, 2] was a bare AttributeError; an attribute h5py cannot store was a
    TypeError naming neither attribute nor file, once all the data was written."""
    path = tmp_path / "t.h5"
    with pytest.raises(ArgumentError, match=re.escape(f"{path}:d") + ".*attrs"):
        h5turbo.write(path, "d", np.arange(3), attrs=[1, 2], mode="w")
    consumed = []

    def blocks():
        for i in range(2):
            consumed.append(i)
            yield np.zeros((4, 3), "i4")

    for mode in ("w", "a"):
        with pytest.raises(ArgumentError, match=re.escape(f"{path}:d") + ".*'bad'"):
            h5turbo.write(path, "d", blocks(), shape=(8, 3), dtype="i4", attrs={"ok": 1, "bad": object()},
                          mode=mode)
    assert consumed == []
    with h5py.File(path, "r") as f:  # "a" made the file; the dataset was removed
        assert list(f) == []


def test_fill_value_of_the_wrong_kind_names_the_dataset(tmp_path):
    """fillvalue=3 for dtype "S5": h5py's bare AttributeError ("'int' object has no
    attribute 'encode'")."""
    path = tmp_path / "t.h5"
    with pytest.raises(ArgumentError, match=re.escape(f"{path}:s")):
        h5turbo.write(path, "s", np.array([b"ab"], "S5"), fillvalue=3, mode="w")
    assert not path.exists()


def test_progress_must_be_callable(tmp_path):
    """progress=5 failed with "'int' object is not callable" after the first batch."""
    with pytest.raises(ArgumentError, match="progress"):
        h5turbo.write(tmp_path / "t.h5", "d", np.arange(3), progress=5, mode="w")


@pytest.mark.parametrize("source, dtype", [(np.arange(3.0), "c8"), (np.array([True, False]), "c16"),
                                           (np.arange(3), "c8"), (np.arange(3) + 1j, "f8")])
def test_no_conversion_between_real_and_complex(tmp_path, source, dtype):
    """Stored through numpy, where libhdf5 (and so h5py) has no conversion path."""
    with pytest.raises(ArgumentError, match="complex"):
        h5turbo.write(tmp_path / "t.h5", "d", source, dtype=dtype, mode="w")
    h5turbo.write(tmp_path / "t.h5", "c", np.arange(3) + 1j, dtype="c8", mode="w")  # complex to complex: kept
    with h5py.File(tmp_path / "t.h5", "r") as f:
        np.testing.assert_array_equal(f["c"][()], (np.arange(3) + 1j).astype("c8"))


def test_file_objects_in_the_new_file_modes():
    """mode="w" on an io.BytesIO was a bare TypeError (h5py writes one). A failed write
    leaves the object as it was; "w-" refuses an object holding data."""
    buffer = io.BytesIO()
    h5turbo.write(buffer, "d", np.arange(5), mode="w")
    h5turbo.write(buffer, "e", np.arange(3), mode="w")  # a new file: "d" is gone
    with h5py.File(buffer, "r") as f:
        assert list(f) == ["e"]
        np.testing.assert_array_equal(f["e"][()], np.arange(3))
    before = buffer.getvalue()

    def failing():
        yield np.zeros((2, 3), "i4")
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        h5turbo.write(buffer, "d", failing(), shape=(4, 3), dtype="i4", mode="w")
    assert buffer.getvalue() == before
    with pytest.raises(FileExistsError):
        h5turbo.write(buffer, "d", np.arange(5), mode="w-")
    fresh = io.BytesIO()
    h5turbo.write(fresh, "d", np.arange(5), mode="x")
    with h5py.File(fresh, "r") as f:
        np.testing.assert_array_equal(f["d"][()], np.arange(5))


def test_disk_full_names_the_file_and_the_dataset(tmp_path, monkeypatch):
    """libhdf5's "Can't write unprocessed chunk data (file write failed: ... errno =
    28 ...)" named neither the file the caller gave nor the dataset."""
    message = "Can't write unprocessed chunk data (file write failed: errno = 28, error message = 'No space left')"

    def full(*args):
        raise OSError(message)

    monkeypatch.setattr(write_module, "_write_batch", full)
    for mode in ("w", "a"):
        path = tmp_path / f"{mode}.h5"
        with pytest.raises(OSError) as info:
            h5turbo.write(path, "d", np.arange(10), mode=mode)
        assert str(info.value).startswith(f"[Errno 28] {path}:d: ")
        assert info.value.errno == errno.ENOSPC and isinstance(info.value.__cause__, OSError)
        assert ".h5turbo-" not in str(info.value)
