"""File-like objects at the native level (`_native.File.from_fileobj`), against h5py on
files written here: BytesIO, an open file (read through its descriptor: the object may
be closed once opened), a wrapper that only reads and seeks, one that returns a few
bytes per call, objects that raise, end early or return text (typed FileObjectError,
the Python exception as its cause), and reads from several threads at once."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest

from h5turbo import _native

LIBVERS = ["earliest", "latest"]


def write_file(path: Path, libver: str) -> None:
    rng = np.random.default_rng(17)
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("chunked", data=rng.integers(0, 1000, (300, 70)).astype("<i4"), chunks=(64, 16),
                         compression="gzip", shuffle=True)
        f.create_dataset("contiguous", data=rng.standard_normal(5000))
        f.create_dataset("small", data=np.arange(12, dtype="<u2").reshape(3, 4))
        g = f.create_group("group")
        g.attrs["label"] = "ünïcode"
        g.attrs["numbers"] = np.arange(5.0)
        g.create_dataset("big_be", data=rng.standard_normal((400, 300)).astype(">f8"), chunks=(50, 300),
                         compression="gzip")


DATASETS = ["/chunked", "/contiguous", "/small", "/group/big_be"]


def read_native(f, name: str, threads: int = 0) -> np.ndarray:
    obj = f.get(name)
    out = np.empty(obj.shape, dtype=obj.dtype)
    obj.read([(0, n, 1) for n in obj.shape], out, threads)
    return out


def assert_like_h5py(f, path: Path, threads: int = 0) -> None:
    with h5py.File(path, "r") as h:
        for name in DATASETS:
            got, want = read_native(f, name, threads), h[name][()]
            assert got.dtype == want.dtype and np.array_equal(got, want), name
        group = f.get("/group")
        assert group.attr("label") == h["group"].attrs["label"]
        assert np.array_equal(group.attr("numbers"), h["group"].attrs["numbers"])
        assert [link[0] for link in f.get("/").links()] == list(h.keys())


@pytest.fixture(params=LIBVERS)
def h5file(request, tmp_path) -> Path:
    path = tmp_path / f"file_{request.param}.h5"
    write_file(path, request.param)
    return path


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


class Dribbling(SequentialOnly):
    """Returns at most 7 bytes per read call (short reads that are not the end)."""

    def read(self, n=-1):
        return super().read(min(n, 7) if n >= 0 else 7)


class RaisesAfterOpen(io.BytesIO):
    failing = False

    def readinto(self, buffer):
        if self.failing:
            raise OSError("the network went away")
        return super().readinto(buffer)


class EndsEarly(io.BytesIO):
    """Claims its full size, then returns nothing past `cut` once `cut` is set."""

    cut = None

    def readinto(self, buffer):
        if self.cut is not None and self.tell() >= self.cut:
            return 0
        return super().readinto(buffer)


class TextMode(SequentialOnly):
    def read(self, n=-1):
        return super().read(n).decode("latin-1")


def test_bytesio(h5file):
    f = _native.File.from_fileobj(io.BytesIO(h5file.read_bytes()), "<bytes>")
    assert str(f.path) == "<bytes>"
    assert_like_h5py(f, h5file)
    for threads in (1, 3):
        assert_like_h5py(f, h5file, threads)


def test_open_file_is_read_through_its_descriptor(h5file):
    handle = open(h5file, "rb")
    f = _native.File.from_fileobj(handle, str(h5file))
    handle.close()  # the native path owns a duplicate descriptor: the object is not used
    assert_like_h5py(f, h5file)
    f.close()
    with pytest.raises(_native.ClosedError):
        read_native(f, "/chunked")


def test_member_of_a_bigger_file_is_not_read_through_its_descriptor(h5file, tmp_path):
    """A file object whose fileno() names a file with other bytes (an archive member)."""
    data = h5file.read_bytes()
    bigger = tmp_path / "bigger.bin"
    bigger.write_bytes(b"x" * 4096 + data)

    class Member(io.BytesIO):
        def __init__(self):
            super().__init__(data)
            self._outer = open(bigger, "rb")

        def fileno(self):
            return self._outer.fileno()

    member = Member()
    f = _native.File.from_fileobj(member, "member")
    assert_like_h5py(f, h5file)
    member._outer.close()


@pytest.mark.parametrize("kind", [SequentialOnly, Dribbling])
def test_objects_with_only_read_and_seek(h5file, kind):
    f = _native.File.from_fileobj(kind(h5file.read_bytes()), "<sequential>")
    assert_like_h5py(f, h5file, threads=2)


def test_an_object_that_raises_gives_a_typed_error_with_the_cause(h5file):
    obj = RaisesAfterOpen(h5file.read_bytes())
    f = _native.File.from_fileobj(obj, "<raising>")
    obj.failing = True
    with pytest.raises(_native.FileObjectError) as info:
        read_native(f, "/group/big_be", threads=2)
    assert isinstance(info.value, _native.Error)
    assert isinstance(info.value.__cause__, OSError) and "network went away" in str(info.value)
    assert "<raising>" in str(info.value)
    obj.failing = False  # the object recovers: so does the file
    assert_like_h5py(f, h5file)


def test_an_object_that_raises_at_open():
    class Broken(SequentialOnly):
        def read(self, n=-1):
            raise ValueError("cannot read")

    with pytest.raises(_native.FileObjectError) as info:
        _native.File.from_fileobj(Broken(b"\0" * 1024), "<broken>")
    assert isinstance(info.value.__cause__, ValueError)


def test_an_object_that_ends_early_gives_a_typed_error(h5file):
    data = h5file.read_bytes()
    obj = EndsEarly(data)
    f = _native.File.from_fileobj(obj, "<short>")
    obj.cut = len(data) // 3
    with pytest.raises(_native.FileObjectError, match="ended after"):
        for name in DATASETS:
            read_native(f, name)


def test_text_mode_and_missing_methods(h5file):
    with pytest.raises(_native.FileObjectError, match="binary mode"):
        _native.File.from_fileobj(TextMode(h5file.read_bytes()), "<text>")

    class NoSeek:
        def read(self, n=-1):
            return b""

    with pytest.raises(TypeError, match="seek"):
        _native.File.from_fileobj(NoSeek(), "<noseek>")


def test_reads_from_many_python_threads_at_once(h5file):
    """Python threads reading (each read in parallel inside) from one object: the
    seek + read pairs never interleave, nothing deadlocks."""
    f = _native.File.from_fileobj(SequentialOnly(h5file.read_bytes()), "<shared>")
    with h5py.File(h5file, "r") as h:
        want = {name: h[name][()] for name in DATASETS}
    errors = []

    def work():
        try:
            for _ in range(3):
                for name in DATASETS:
                    assert np.array_equal(read_native(f, name, threads=2), want[name])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a reader hangs"
    assert not errors, errors


class Positional(SequentialOnly):
    """Also pread(n, offset): positional, safe from several threads (it keeps no
    position), slow enough that overlapping calls show."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self._lock = threading.Lock()
        self.active = self.most_active = self.calls = 0
        self.fail = False

    def pread(self, n, offset):
        import time

        with self._lock:
            self.calls += 1
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            if self.fail:
                raise ConnectionError("range request failed")
            time.sleep(0.002)  # releases the GIL, as a request in flight does
            return self._data[offset:offset + n]
        finally:
            with self._lock:
                self.active -= 1


def test_an_object_with_pread_is_read_concurrently_without_seek(h5file):
    obj = Positional(h5file.read_bytes())
    f = _native.File.from_fileobj(obj, "<positional>")
    obj.seek(0)  # pread never moves the position
    assert_like_h5py(f, h5file, threads=4)
    assert obj.calls > 0 and obj._pos == 0
    assert obj.most_active >= 2  # several reads in flight at once


def test_pread_failures_are_typed_errors(h5file):
    obj = Positional(h5file.read_bytes())
    f = _native.File.from_fileobj(obj, "<positional>")
    obj.fail = True
    with pytest.raises(_native.FileObjectError, match="pread") as info:
        read_native(f, "/group/big_be", threads=2)
    assert isinstance(info.value.__cause__, ConnectionError)
    obj.fail = False
    obj._data = obj._data[: len(obj._data) // 2]  # shrank: pread comes back short
    with pytest.raises(_native.FileObjectError, match="ended after"):
        for name in DATASETS:
            read_native(f, name)
