"""File objects as a demanding user meets them, against h5py.File(fileobj): objects opened
in text mode, streams that cannot seek, objects closed before or while a File reads
them, objects whose seek returns something other than the position, whose readinto
fills the buffer but returns None, Ctrl-C during a read that the pool makes through a
slow object (in a subprocess, with a timeout: without the fix it hangs for the whole
read), and read_fast5 given a file object."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

@pytest.fixture
def h5file(tmp_path) -> Path:
    """A chunked dataset of 200 chunks (each read by its own call) and a contiguous one."""
    path = tmp_path / "hunt.h5"
    rng = np.random.default_rng(5)
    with h5py.File(path, "w") as f:
        f.create_dataset("chunked", data=rng.integers(0, 1000, (400, 300)).astype("<i4"), chunks=(20, 30),
                         compression="gzip")
        f.create_dataset("contiguous", data=rng.standard_normal(5000))
    return path


def h5py_values(path: Path) -> dict:
    with h5py.File(path, "r") as h:
        return {name: h[name][()] for name in ("chunked", "contiguous")}


def raised(opener, fileobj, read=lambda f: f["chunked"][()]) -> BaseException:
    """The exception File(fileobj) then `read` raise (AssertionError if none)."""
    try:
        with opener(fileobj, "r") as f:
            read(f)
    except Exception as exc:  # the exception is what is compared
        return exc
    raise AssertionError(f"{opener} read {fileobj!r}")


def builtin_kind(exc: BaseException) -> type:
    """The builtin class an `except` written for h5py names: TypeError or ValueError
    (UnicodeDecodeError, io.UnsupportedOperation are ValueErrors too)."""
    for kind in (TypeError, ValueError):
        if isinstance(exc, kind):
            return kind
    raise AssertionError(f"h5py raised {exc!r}")


# ---------------------------------------------------------------------- objects h5turbo cannot read


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_text_mode_raises_what_h5py_raises(h5file, encoding):
    """h5py: TypeError (latin-1 text: str where bytes are expected) or the
    UnicodeDecodeError (a ValueError) of its first read; h5turbo said OSError only."""
    with open(h5file, encoding=encoding) as text:
        theirs = raised(h5py.File, text)
    with open(h5file, encoding=encoding) as text:
        ours = raised(h5turbo.File, text)
    assert isinstance(ours, builtin_kind(theirs)), (ours, theirs)
    assert isinstance(ours, h5turbo.FileObjectError) and "'rb'" in str(ours)


@pytest.mark.parametrize("kind", ["pipe", "write-only"])
def test_an_object_that_cannot_seek_or_read_raises_unsupported_operation_as_h5py(h5file, kind):
    """A pipe (seek) or a file opened with 'ab' (read): h5py raises the object's
    io.UnsupportedOperation; h5turbo said OSError only."""
    def pipe():
        read_end, write_end = os.pipe()
        os.write(write_end, h5file.read_bytes()[:4096])
        os.close(write_end)
        return open(read_end, "rb")

    def make():
        return pipe() if kind == "pipe" else open(h5file, "ab")

    with make() as stream:
        theirs = raised(h5py.File, stream)
    with make() as stream:
        ours = raised(h5turbo.File, stream)
    assert isinstance(theirs, io.UnsupportedOperation)
    assert isinstance(ours, io.UnsupportedOperation) and isinstance(ours, h5turbo.FileObjectError)
    assert isinstance(ours.__cause__, io.UnsupportedOperation)


def test_an_object_closed_before_open_raises_value_error_as_h5py(h5file):
    closed = io.BytesIO(h5file.read_bytes())
    closed.close()
    theirs, ours = raised(h5py.File, closed), raised(h5turbo.File, closed)
    assert builtin_kind(theirs) is ValueError
    assert isinstance(ours, ValueError) and isinstance(ours, h5turbo.FileObjectError)
    assert "closed" in str(ours)


def test_an_object_closed_while_the_file_is_open_raises_value_error_as_h5py(h5file):
    """The user closes the object, then reads: h5py raises the object's ValueError;
    h5turbo raised FileObjectError (an OSError), now ClosedError (a ValueError)."""
    errors = []
    for opener in (h5py.File, h5turbo.File):
        obj = io.BytesIO(h5file.read_bytes())
        f = opener(obj, "r")
        obj.close()
        with pytest.raises(ValueError) as info:
            f["chunked"][()]
        errors.append(info.value)
        f.close()
    assert isinstance(errors[1], h5turbo.ClosedError) and "file-like object was closed" in str(errors[1])


# ---------------------------------------------------------------------- objects h5py reads


class SeekReturnsZero(io.BytesIO):
    """C's convention: seek returns 0 on success (h5py asks tell() for the position)."""

    def seek(self, *args):
        super().seek(*args)
        return 0


class SeekReturnsSelf(io.BytesIO):
    def seek(self, *args):
        super().seek(*args)
        return self


class ReadintoForgetsToReturn(io.BytesIO):
    """Fills the buffer, returns None (h5py ignores what readinto returns)."""

    def readinto(self, buffer):
        super().readinto(buffer)


@pytest.mark.parametrize("kind", [SeekReturnsZero, SeekReturnsSelf, ReadintoForgetsToReturn])
def test_objects_h5py_reads_are_read_alike(h5file, kind):
    want = h5py_values(h5file)
    with h5py.File(kind(h5file.read_bytes()), "r") as h:
        assert all(np.array_equal(h[name][()], value) for name, value in want.items())
    with h5turbo.File(kind(h5file.read_bytes())) as f:
        for name, value in want.items():
            assert np.array_equal(f[name].read(threads=2), value), name


# ---------------------------------------------------------------------- Ctrl-C during a read


INTERRUPTED_READ = textwrap.dedent("""
    import io, signal, sys, time
    import h5turbo

    class Slow(io.BytesIO):
        calls, slow = 0, False

        def readinto(self, buffer):
            if self.slow:
                self.calls += 1
                time.sleep(0.02)  # a slow network: the whole read takes seconds
            return super().readinto(buffer)

    def interrupt(*_):
        raise KeyboardInterrupt

    CALLS = {"read": lambda d: d.read(threads=2), "sum": lambda d: d.sum(threads=2),
             "column sums": lambda d: d.sum(axis=0, threads=2), "max": lambda d: d.max(threads=2)}
    obj = Slow(open(sys.argv[1], "rb").read())
    name, call = sys.argv[2], CALLS[sys.argv[3]]
    with h5turbo.File(obj) as f:
        dataset = f[name]
        dataset.chunks
        obj.slow = True
        signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        try:
            call(dataset)
        except KeyboardInterrupt:
            print("interrupted after", obj.calls)
        else:
            print("not interrupted after", obj.calls)
""")


@pytest.mark.skipif(not hasattr(__import__("signal"), "setitimer"), reason="needs signal.setitimer")
@pytest.mark.parametrize("name, call", [("chunked", "read"), ("chunked", "sum"), ("chunked", "column sums"),
                                        ("chunked", "max"), ("strings", "read")])
def test_keyboard_interrupt_stops_a_read_the_pool_makes_through_a_slow_object(h5file, name, call):
    """Python runs a signal handler in the main thread only; pool threads read the
    chunks: the KeyboardInterrupt came once all 200 chunks were read (h5py reads on the
    calling thread and stops at once). Now the read stops after the calls in flight;
    so do reductions and reads of variable-length strings (they waited for the end)."""
    with h5py.File(h5file, "a") as h:
        h.create_dataset("strings", data=np.array([f"value {i}" for i in range(6000)], dtype=object),
                         dtype=h5py.string_dtype(), chunks=(30,))
        chunks = h[name].id.get_num_chunks()
    run = subprocess.run([sys.executable, "-c", INTERRUPTED_READ, str(h5file), name, call], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    outcome, calls = run.stdout.strip().rsplit(" ", 1)
    assert outcome == "interrupted after"
    assert int(calls) < chunks // 2, f"{calls} of {chunks} chunks read after Ctrl-C"


INTERRUPTED_INDEX = textwrap.dedent("""
    import io, signal, sys, time
    import h5turbo

    class Counting(io.BytesIO):
        calls, delay = 0, 0.0

        def readinto(self, buffer):
            self.calls += 1
            time.sleep(self.delay)
            return super().readinto(buffer)

    def interrupt(*_):
        raise KeyboardInterrupt

    data = open(sys.argv[1], "rb").read()
    CALLS = {"chunks": lambda d: d.id.get_num_chunks(), "storage": lambda d: d.id.get_storage_size(),
             "chunk table": lambda d: d.id.get_chunk_info(0)}

    def calls_of(call, delay):
        obj = Counting(data)
        with h5turbo.File(obj) as f:
            dataset = f["index"]
            dataset.chunks
            obj.calls, obj.delay = 0, delay
            try:
                call(dataset)
            except KeyboardInterrupt:
                pass
        return obj.calls

    call = CALLS[sys.argv[2]]
    whole = calls_of(call, 0.0)
    signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    print(calls_of(call, 0.02), whole)
""")


@pytest.mark.skipif(not hasattr(__import__("signal"), "setitimer"), reason="needs signal.setitimer")
@pytest.mark.parametrize("call", ["chunks", "storage", "chunk table"])
def test_keyboard_interrupt_stops_reading_a_chunk_index_through_a_slow_object(tmp_path, call):
    """The chunk count, the storage size and the chunk table read the whole chunk index
    (20,000 chunks, about 50 reads through the object). They read it on the calling
    thread, where Python runs the handler inside the object's read, so Ctrl-C stops
    them; an index read by pool threads would need pyfile::interruptible, as reads do."""
    path = tmp_path / "index.h5"
    with h5py.File(path, "w") as h:
        h.create_dataset("index", data=np.arange(20000, dtype="u1"), chunks=(1,))
    run = subprocess.run([sys.executable, "-c", INTERRUPTED_INDEX, str(path), call], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    interrupted, whole = map(int, run.stdout.split())
    assert whole >= 20, f"the index took only {whole} reads: too few to tell"
    assert interrupted < whole // 2, f"{interrupted} of {whole} reads made after Ctrl-C"


# ---------------------------------------------------------------------- formats


def test_read_fast5_refuses_a_file_object_as_it_refuses_one_in_a_list(h5file):
    """read_fast5 takes paths. Given [BytesIO] it raises TypeError; given a BytesIO it
    iterated its lines and yielded a Fast5Error per line, named by the bytes of HDF5."""
    with pytest.raises(TypeError) as in_a_list:
        list(h5turbo.read_fast5([io.BytesIO(h5file.read_bytes())]))
    with pytest.raises(type(in_a_list.value)):
        h5turbo.read_fast5(io.BytesIO(h5file.read_bytes()))  # at the call, as its other arguments
    with pytest.raises(type(in_a_list.value)):
        h5turbo.Fast5Index(io.BytesIO(h5file.read_bytes()))
