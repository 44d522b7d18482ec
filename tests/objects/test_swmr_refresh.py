"""Dataset.refresh() on files an h5py SWMR writer is appending to (h5py's refresh):
the shape, chunk index and values as the writer last flushed them, through a path or a
file object; objects not refreshed keep their view; closing the file closes the
refreshed views too; a writer in another process appending while the reader refreshes
in a loop never gives the reader a wrong value."""

from __future__ import annotations

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

import h5turbo


@pytest.fixture
def swmr_writer(tmp_path):
    """An h5py file in SWMR mode with a growing 2-D dataset 'x' (25 rows written)."""
    path = tmp_path / "swmr.h5"
    f = h5py.File(path, "w", libver="latest")
    ds = f.create_dataset("x", (0, 3), maxshape=(None, 3), chunks=(10, 3), dtype="<i4")
    f.swmr_mode = True
    append(ds, 25)
    yield path, ds
    f.close()


def append(ds, rows: int) -> None:
    start = ds.shape[0]
    ds.resize((start + rows, 3))
    ds[start:] = np.arange(start * 3, (start + rows) * 3, dtype="<i4").reshape(rows, 3)
    ds.flush()


@pytest.mark.parametrize("opener", ["path", "file object"])
def test_refresh_sees_what_the_writer_appended(swmr_writer, opener):
    path, writer = swmr_writer
    source = open(path, "rb") if opener == "file object" else path
    with h5turbo.File(source, swmr=True) as f:
        ds = f["x"]
        assert ds.shape == (25, 3)
        append(writer, 975)
        assert ds.shape == (25, 3)  # read once, at open, until refreshed
        ds.refresh()
        assert ds.shape == (1000, 3) and len(ds) == 1000
        np.testing.assert_array_equal(ds[()], writer[()])
        np.testing.assert_array_equal(ds[990:], writer[990:])
        append(writer, 4000)
        ds.refresh()
        assert ds.shape == (5000, 3) and ds.maxshape == (None, 3)
        np.testing.assert_array_equal(ds[()], writer[()])
    if opener == "file object":
        source.close()


def test_objects_not_refreshed_keep_their_view(swmr_writer):
    path, writer = swmr_writer
    with h5turbo.File(path, swmr=True) as f:
        old = f["x"]
        append(writer, 50)
        fresh = f["x"]
        fresh.refresh()
        assert old.shape == (25, 3) and fresh.shape == (75, 3)
        np.testing.assert_array_equal(old[()], writer[:25])


@pytest.mark.parametrize("opener", ["path", "file object"])
def test_objects_looked_up_after_a_refresh_see_it(swmr_writer, opener):
    """h5py's pattern `ds = f["x"]; ds.refresh(); f["x"][n:]`: a lookup after a refresh
    finds the dataset as the refresh read it (it once kept the shape of the first
    lookup until the file was opened again), attributes too."""
    path, writer = swmr_writer
    source = open(path, "rb") if opener == "file object" else path
    with h5turbo.File(source, swmr=True) as f:
        ds = f["x"]
        append(writer, 30)
        writer.attrs["rows"] = 55
        writer.file.flush()
        ds.refresh()
        assert f["x"].shape == (55, 3) and f["/x"].shape == (55, 3)
        np.testing.assert_array_equal(f["x"][25:], writer[25:])
        assert f["x"].attrs["rows"] == 55
        append(writer, 5)
        assert f["x"].shape == (55, 3)  # until refreshed again
        f["x"].refresh()
        assert f["x"].shape == (60, 3)
    if opener == "file object":
        source.close()


def test_closing_the_file_closes_the_refreshed_views(swmr_writer):
    path, writer = swmr_writer
    f = h5turbo.File(path, swmr=True)
    ds = f["x"]
    append(writer, 10)
    ds.refresh()
    f.close()
    with pytest.raises(h5turbo.ClosedError):
        ds[()]
    with pytest.raises(h5turbo.ClosedError):
        ds.refresh()


WRITER = """
import sys, time, h5py, numpy as np
f = h5py.File(sys.argv[1], "a", libver="latest")
f.swmr_mode = True
ds = f["x"]
print("ready", flush=True)
for step in range(150):
    n = ds.shape[0]
    ds.resize((n + 37,))
    ds[n:] = np.arange(n, n + 37)
    ds.flush()
    time.sleep(0.001)
f.close()
"""


def test_a_reader_refreshing_while_another_process_appends_reads_only_written_values(tmp_path):
    path = tmp_path / "growing.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("x", (0,), maxshape=(None,), chunks=(64,), dtype="<i8")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "ready"
    with h5turbo.File(path, swmr=True) as f:
        ds = f["x"]
        seen = refreshes = 0
        while writer.poll() is None or refreshes == 0:
            ds.refresh()
            refreshes += 1
            values = ds[()]
            assert len(values) >= seen  # never goes back
            seen = len(values)
            np.testing.assert_array_equal(values, np.arange(len(values)))
        assert writer.wait(timeout=60) == 0
        ds.refresh()
        np.testing.assert_array_equal(ds[()], np.arange(150 * 37))


def test_refreshing_a_file_cut_short_is_an_error_naming_it(tmp_path):
    path = tmp_path / "cut.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("x", data=np.arange(10000), chunks=(100,))
    with h5turbo.File(path) as f:
        ds = f["x"]
        with open(path, "r+b") as raw:
            raw.truncate(os.path.getsize(path) // 2)
        with pytest.raises(h5turbo.Error, match="cut.h5"):
            ds.refresh()
        assert ds.shape == (10000,)  # the view it had is kept


def test_refreshing_an_object_that_no_longer_exists_is_a_key_error(tmp_path):
    path = tmp_path / "gone.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f["x"] = np.arange(3)
        f["y"] = np.arange(3)
    with h5turbo.File(path) as f:
        ds = f["x"]
        with h5py.File(path, "a") as w:
            del w["x"]
        with pytest.raises(KeyError):
            ds.refresh()
