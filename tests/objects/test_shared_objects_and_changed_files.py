"""Several readers on one thing, and things that change under a reader: two Files on
one file object read from two threads; a file rewritten at the same path read again
through dask and xarray; Ctrl-C inside a file object's read; a closed file's errors
as h5py's handlers expect them; an xarray Dataset pickled; h5py's small API details
(asstr's attributes, read_direct's TypeErrors, iter_chunks with a step)."""

from __future__ import annotations

import io
import pickle
import threading
import time

import h5py
import numpy as np
import pytest

import h5turbo


class SlowSeekFile:
    """A pure-Python file object (as fsspec's are) whose seek lets other threads run."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def seek(self, offset, whence=0):
        self.pos = offset if whence == 0 else (self.pos + offset if whence == 1 else len(self.data) + offset)
        time.sleep(0.0002)
        return self.pos

    def tell(self):
        return self.pos

    def read(self, n=-1):
        out = self.data[self.pos:self.pos + n if n >= 0 else None]
        self.pos += len(out)
        return out


def test_two_files_on_one_file_object_do_not_split_each_others_reads():
    buf = io.BytesIO()
    y = np.arange(500_000, dtype="f8")
    x = np.arange(100_000, dtype="i4").reshape(100, 1000)
    with h5py.File(buf, "w") as f:
        f["y"] = y
        f.create_dataset("x", data=x, chunks=(10, 1000))
    shared = SlowSeekFile(buf.getvalue())
    files = [h5turbo.File(shared) for _ in range(2)]
    problems = []

    def work(i):
        try:
            for k in range(15):
                s = (i * 37 + k * 11) % 90
                if not (np.array_equal(files[i]["x"][s:s + 10], x[s:s + 10])
                        and np.array_equal(files[i]["y"][s * 5000:s * 5000 + 4000], y[s * 5000:s * 5000 + 4000])):
                    problems.append("wrong values")
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            problems.append(repr(exc))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert problems == []


def test_ctrl_c_inside_a_file_objects_read_is_not_swallowed_as_an_oserror():
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        f["x"] = np.arange(1000)

    class Interrupting(io.BytesIO):
        armed = False

        def read(self, n=-1):
            if self.armed:
                raise KeyboardInterrupt
            return super().read(n)

        def readinto(self, buffer):
            if self.armed:
                raise KeyboardInterrupt
            return super().readinto(buffer)

    obj = Interrupting(buf.getvalue())
    with h5turbo.File(obj) as f:
        obj.armed = True
        with pytest.raises(KeyboardInterrupt):
            f["x"][()]


def test_a_closed_file_raises_what_h5py_handlers_catch(tmp_path):
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f["d"] = np.arange(3)
    f = h5turbo.File(path)
    d = f["d"]
    f.close()
    for call in (lambda: d[0], lambda: d.shape, lambda: len(f), lambda: list(f.keys())):
        with pytest.raises(h5turbo.ClosedError) as info:
            call()
        assert isinstance(info.value, (ValueError)) and isinstance(info.value, RuntimeError)
        assert isinstance(info.value, OSError)


def _rewrite(path, value: float) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.full(10_000, value), chunks=(1000,))


def test_a_file_rewritten_at_the_same_path_is_read_again_by_dask(tmp_path):
    path = tmp_path / "x.h5"
    _rewrite(path, 1.0)
    with h5turbo.File(path) as f:
        assert float(f["x"].to_dask().sum().compute()) == 10_000
    time.sleep(0.01)
    _rewrite(path, 2.0)
    with h5turbo.File(path) as f:
        assert float(f["x"].to_dask().sum().compute()) == 20_000


def test_to_dask_of_a_contiguous_string_dataset(tmp_path):
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f["s"] = np.array([b"a", b"bb", b"ccc"], dtype=object)
    with h5turbo.File(path) as f:
        assert list(f["s"].to_dask().compute()) == [b"a", b"bb", b"ccc"]


def test_an_xarray_dataset_pickles(tmp_path):
    xr = pytest.importorskip("xarray")
    from h5turbo.xarray_backend import H5TurboBackendEntrypoint
    path = tmp_path / "v.nc"
    xr.Dataset({"v": ("t", np.arange(4.0))}).to_netcdf(path, engine="h5netcdf")
    for chunks in (None, {}):
        # the class itself: works from a source tree too (no installed entry point)
        with xr.open_dataset(path, engine=H5TurboBackendEntrypoint, chunks=chunks) as ds:
            back = pickle.loads(pickle.dumps(ds))
            assert float(back["v"].sum()) == 6.0


def test_h5py_small_api_details(tmp_path):
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f["s"] = np.array(["a", "b"], dtype=h5py.string_dtype())
        f.create_dataset("z", data=np.arange(100).reshape(10, 10), chunks=(3, 4))
    with h5py.File(path) as ref, h5turbo.File(path) as f:
        view, want = f["s"].asstr(), ref["s"].asstr()
        assert (view.dtype, view.encoding, view.errors) == (want.dtype, want.encoding, want.errors)
        sel = np.s_[2:7:2, 1:9]
        assert list(f["z"].iter_chunks(sel)) == list(ref["z"].iter_chunks(sel))
        read_only = np.zeros((10, 10), "i8")
        read_only.flags.writeable = False
        for dest, dest_sel in ((np.zeros((3, 3), "i8"), None), (np.zeros((10, 10), "i8"), np.s_[0:3]),
                               (read_only, None)):
            with pytest.raises(TypeError):
                ref["z"].read_direct(dest, None, dest_sel)
            with pytest.raises(TypeError):
                f["z"].read_direct(dest, None, dest_sel)
