"""h5turbo.File on file-like objects, as h5py.File(fileobj): io.BytesIO, open files,
a wrapper allowing only sequential read + seek, fsspec's local and HTTP file systems
(a Range-honouring server on 127.0.0.1), each read in full against h5py across libver
settings; objects that raise or end early give an h5turbo.Error naming the object;
external links and VDS sources of a file-object file are looked for from the working
folder, as libhdf5 does."""

from __future__ import annotations

import io
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo
from support.range_server import RangeServer

LIBVERS = ["earliest", "latest"]


def write_file(path: Path, libver: str) -> None:
    rng = np.random.default_rng(17)
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("chunked", data=rng.integers(0, 1000, (300, 70)).astype("<i4"), chunks=(64, 16),
                         compression="gzip", shuffle=True)
        f.create_dataset("contiguous", data=rng.standard_normal(5000))
        f["strings"] = np.array(["a", "bé", "ccc"], dtype=h5py.string_dtype())
        f["compound"] = np.array([(1, 2.5), (3, 4.5)], dtype=[("i", "<i4"), ("x", "<f8")])
        g = f.create_group("group")
        g.attrs["label"] = "ünïcode"
        g.attrs["numbers"] = np.arange(5.0)
        g.create_dataset("big_be", data=rng.standard_normal((200, 300)).astype(">f8"), chunks=(50, 300),
                         compression="gzip")
        f["refs"] = np.array([f["chunked"].ref, g.ref], dtype=h5py.ref_dtype)


@pytest.fixture(params=LIBVERS)
def h5file(request, tmp_path) -> Path:
    path = tmp_path / f"fo_{request.param}.h5"
    write_file(path, request.param)
    return path


def assert_same_as_h5py(f: h5turbo.File, h: h5py.File) -> None:
    """Every object, attribute and value of the file, as h5py gives them."""
    names = []
    h.visit(names.append)
    ours = []
    f.visit(ours.append)
    assert ours == names
    for name in names:
        theirs = h[name]
        assert sorted(f[name].attrs) == sorted(theirs.attrs), name
        for key in theirs.attrs:
            assert np.array_equal(f[name].attrs[key], theirs.attrs[key]), (name, key)
        if isinstance(theirs, h5py.Dataset):
            got, want = f[name][()], theirs[()]
            assert got.dtype == want.dtype and got.shape == want.shape, name
            if want.dtype.metadata and "ref" in want.dtype.metadata:
                assert [f[r].name for r in got] == [h[r].name for r in want]
            else:
                assert got.tolist() == want.tolist(), name
    assert f.driver == h.driver == "fileobj"


class SequentialOnly:
    """Only read(n) and seek(pos, whence): no readinto, tell or fileno."""

    def __init__(self, data: bytes):
        self._data, self._pos = data, 0

    def seek(self, pos, whence=0):
        self._pos = {0: pos, 1: self._pos + pos, 2: len(self._data) + pos}[whence]
        return self._pos

    def read(self, n=-1):
        end = len(self._data) if n < 0 else self._pos + n
        out = self._data[self._pos:end]
        self._pos += len(out)
        return out

    def tell(self):  # h5py needs tell; h5turbo does not (see test_without_tell)
        return self._pos


def _opener(kind: str, path: Path):
    if kind == "bytesio":
        return io.BytesIO(path.read_bytes())
    if kind == "open":
        return open(path, "rb")
    if kind == "sequential":
        return SequentialOnly(path.read_bytes())
    if kind == "fsspec-local":
        fsspec = pytest.importorskip("fsspec")
        return fsspec.filesystem("file").open(str(path), "rb")
    if kind == "fsspec-memory":
        fsspec = pytest.importorskip("fsspec")
        fs = fsspec.filesystem("memory")
        fs.pipe(f"/{path.name}", path.read_bytes())
        return fs.open(f"/{path.name}", "rb")
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["bytesio", "open", "sequential", "fsspec-local", "fsspec-memory"])
def test_file_objects_read_as_h5py_reads_them(h5file, kind):
    obj, theirs_obj = _opener(kind, h5file), _opener(kind, h5file)
    with h5turbo.File(obj) as f, h5py.File(theirs_obj, "r") as h:
        assert f.filename == repr(obj) and h.filename == repr(theirs_obj) and f.mode == "r"
        assert_same_as_h5py(f, h)
        assert f["chunked"].read(threads=2).sum() == h["chunked"][()].sum()
    assert not getattr(obj, "closed", False)  # closing the File leaves the object open (h5py too)


def test_driver_fileobj_arguments(h5file):
    obj = io.BytesIO(h5file.read_bytes())
    with h5turbo.File(obj, "r", driver="fileobj", fileobj=obj) as f:
        assert f.driver == "fileobj" and f["contiguous"].shape == (5000,)
    for kwargs in ({"driver": "core"}, {"fileobj": io.BytesIO()}):
        with pytest.raises(ValueError):
            h5py.File(obj, "r", **kwargs)
        with pytest.raises(ValueError):
            h5turbo.File(obj, "r", **kwargs)
    # a path and the object given as fileobj=: the object is read, the path names it
    named = h5file.parent / "elsewhere.h5"
    for lib in (h5turbo, h5py):
        with lib.File(named, "r", driver="fileobj", fileobj=io.BytesIO(h5file.read_bytes())) as f:
            assert f.filename == str(named) and f.driver == "fileobj" and f["contiguous"].shape == (5000,)


def test_without_tell(h5file):
    """read + seek suffice (the size is where seek(0, 2) lands)."""
    class NoTell(SequentialOnly):
        tell = None

    obj = NoTell(h5file.read_bytes())
    del NoTell.tell
    with h5turbo.File(obj) as f, h5py.File(h5file, "r") as h:
        assert np.array_equal(f["group/big_be"][()], h["group/big_be"][()])


class RaisingAfterOpen(io.BytesIO):
    failing = False

    def readinto(self, buffer):
        if self.failing:
            raise OSError("the network went away")
        return super().readinto(buffer)


class EndsEarly(io.BytesIO):
    cut = None

    def readinto(self, buffer):
        if self.cut is not None and self.tell() >= self.cut:
            return 0
        return super().readinto(buffer)


def test_an_object_that_raises_gives_an_error_naming_it(h5file):
    obj = RaisingAfterOpen(h5file.read_bytes())
    with h5turbo.File(obj) as f:
        obj.failing = True
        with pytest.raises(h5turbo.FileObjectError) as info:
            f["group/big_be"][()]
    assert isinstance(info.value, h5turbo.Error)
    assert "RaisingAfterOpen object at" in str(info.value) and "network went away" in str(info.value)
    assert isinstance(info.value.__cause__, OSError)


def test_an_object_that_raises_at_open_gives_an_error_naming_it():
    class Broken(SequentialOnly):
        def read(self, n=-1):
            raise ValueError("cannot read")

    with pytest.raises(h5turbo.FileObjectError, match="Broken object at"):
        h5turbo.File(Broken(b"\0" * 4096))


def test_short_reads_give_an_error_naming_the_object(h5file):
    data = h5file.read_bytes()
    obj = EndsEarly(data)
    with h5turbo.File(obj) as f:
        obj.cut = len(data) // 3
        with pytest.raises(h5turbo.FileObjectError, match="EndsEarly object at") as info:
            for name in ("chunked", "contiguous", "group/big_be"):
                f[name][()]
    assert isinstance(info.value, h5turbo.Error)


def test_not_hdf5_and_text_mode(tmp_path):
    with pytest.raises(h5turbo.FormatError):
        h5turbo.File(io.BytesIO(b"not an HDF5 file" * 100))
    (tmp_path / "t.h5").write_bytes(b"x" * 100)
    with open(tmp_path / "t.h5", "r") as text, pytest.raises(h5turbo.Error):
        h5turbo.File(text)


# ---------------------------------------------------------------------- links, VDS


@pytest.fixture
def linking(tmp_path, monkeypatch):
    """main.h5 (read as an object) with an external link and a VDS, both to source.h5,
    which is in src/; the working folder is elsewhere."""
    src = tmp_path / "src"
    src.mkdir()
    with h5py.File(src / "source.h5", "w") as f:
        f["data"] = np.arange(12, dtype="<i4")
    layout = h5py.VirtualLayout(shape=(12,), dtype="<i4")
    layout[:] = h5py.VirtualSource("source.h5", "data", shape=(12,))
    with h5py.File(src / "main.h5", "w", libver="latest") as f:
        f["ext"] = h5py.ExternalLink("source.h5", "/data")
        f.create_virtual_dataset("vds", layout, fillvalue=-1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("HDF5_EXT_PREFIX", raising=False)
    monkeypatch.delenv("HDF5_VDS_PREFIX", raising=False)
    return src


def test_links_from_a_file_object_are_looked_for_from_the_working_folder(linking, monkeypatch):
    """Where libhdf5 looks: a file object's name (its repr) has no folder, so the
    working folder. (h5py then opens the external link's target and the VDS source
    through the same file object, with the fileobj driver: it finds no '/data' there,
    so the link is not followed and the VDS gives its fill value.)"""
    data = (linking / "main.h5").read_bytes()
    with h5turbo.File(io.BytesIO(data)) as f, h5py.File(io.BytesIO(data), "r") as h:
        with pytest.raises(KeyError, match="source.h5"):
            f["ext"]  # not next to main.h5: a file object has no folder
        assert np.array_equal(f["vds"][()], h["vds"][()])  # no source: the fill value
        assert (f["vds"][()] == -1).all()
    monkeypatch.chdir(linking)
    with h5turbo.File(io.BytesIO(data)) as f, h5py.File(io.BytesIO(data), "r") as h:
        assert np.array_equal(f["ext"][()], np.arange(12))
        with pytest.raises(KeyError):
            h["ext"]
        assert np.array_equal(f["vds"][()], np.arange(12))
        assert (h["vds"][()] == -1).all()  # h5py: the source read as main.h5 again


# ---------------------------------------------------------------------- HTTP


@pytest.fixture
def http(h5file):
    pytest.importorskip("aiohttp")
    pytest.importorskip("fsspec")
    with RangeServer(h5file.parent) as server:
        yield server, server.url(h5file.name)


def test_http_through_fsspec(h5file, http):
    import fsspec

    server, url = http
    fs = fsspec.filesystem("http")
    with fs.open(url, "rb") as obj, h5py.File(h5file, "r") as h:
        with h5turbo.File(obj) as f:
            assert_same_as_h5py_values(f, h)
    assert server.requests[f"/{h5file.name}"] > 0
    # every byte fetched was asked for with a range: never the whole file at once
    assert server.bytes[f"/{h5file.name}"] >= h5file.stat().st_size // 4


def test_http_without_cache_reads_ranges(h5file, http):
    import fsspec

    server, url = http
    fs = fsspec.filesystem("http")
    with fs.open(url, "rb", cache_type="none") as obj, h5py.File(h5file, "r") as h:
        with h5turbo.File(obj) as f:
            assert np.array_equal(f["group/big_be"][10:60, ::3], h["group/big_be"][10:60, ::3])
    assert server.requests[f"/{h5file.name}"] > 1
    assert server.bytes[f"/{h5file.name}"] < h5file.stat().st_size


def assert_same_as_h5py_values(f, h) -> None:
    for name in ("chunked", "contiguous", "strings", "compound", "group/big_be"):
        assert f[name][()].tolist() == h[name][()].tolist(), name
    assert f["group"].attrs["label"] == h["group"].attrs["label"]


def test_to_dask_needs_a_path(h5file):
    pytest.importorskip("dask")
    with h5turbo.File(io.BytesIO(h5file.read_bytes())) as f:
        with pytest.raises(h5turbo.UnsupportedError, match="file opened by path"):
            f["chunked"].to_dask()


def test_ros3_driver_reads_urls_through_fsspec(h5file, http):
    """h5py's driver='ros3' (read-only S3/HTTP): the URL is read with ranged requests,
    the File owns (and closes) the object it opened."""
    server, url = http
    with h5turbo.File(url, "r", driver="ros3") as f, h5py.File(h5file, "r") as h:
        assert f.driver == "ros3" and f.filename == url
        assert_same_as_h5py_values(f, h)
        obj = f._fileobj
    assert obj.closed and server.requests[f"/{h5file.name}"] > 0
    with h5turbo.File(url.encode(), driver="ros3", aws_region=b"") as f:
        assert f["contiguous"].shape == (5000,)


def test_ros3_driver_arguments(h5file):
    with pytest.raises(ValueError, match="S3 location must begin"):
        h5turbo.File(str(h5file), driver="ros3")
    with pytest.raises(TypeError):
        h5turbo.File("https://example.invalid/x.h5", driver="ros3", block_size=4)


def test_http_ranged_requests_overlap(h5file):
    """An uncached fsspec file of an async file system is read by ranges from several
    threads: with latency, requests are in flight together."""
    pytest.importorskip("aiohttp")
    fsspec = pytest.importorskip("fsspec")
    with RangeServer(h5file.parent, delay=0.05) as server, h5py.File(h5file, "r") as h:
        want = h["group/big_be"][()]
        with fsspec.filesystem("http").open(server.url(h5file.name), "rb", cache_type="none") as obj, \
                h5turbo.File(obj) as f:
            server.reset_counts()
            assert np.array_equal(f["group/big_be"].read(threads=4), want)
        assert server.max_in_flight >= 2, server.max_in_flight
