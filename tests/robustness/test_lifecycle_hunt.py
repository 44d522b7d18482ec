"""Process and thread lifecycle, as a PyTorch DataLoader (fork / spawn workers), dask,
a Jupyter user pressing Ctrl-C or a many-core server use the Python API: children
forked from a parent that read with threads through every kind of source (path,
io.BytesIO, open binary file, fsspec local and memory files), spawn workers that
receive a picklable wrapper holding a path, pickling itself (a TypeError, as h5py),
32 Python threads reading one Dataset and many files, closing or deleting a File while
threads read it, `threads=` and H5TURBO_THREADS values, SIGINT during a read, objects
outliving their File, and thousands of open/close cycles (descriptors, threads).
Every value read is compared with h5py's. Anything that may hang or crash runs in a
child interpreter with a time limit."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np
import pytest

from support.common import import_h5turbo

h5turbo = import_h5turbo()

SOURCES = ["path", "bytesio", "open", "fsspec", "fsspec_memory"]


def _write(path) -> dict:
    rng = np.random.default_rng(20261128)
    data = {
        "m": rng.integers(0, 1000, (700, 300), dtype="i4"),
        "f": rng.random((900, 24)),
        "g/s": np.array([b"row%d" % i for i in range(300)]),
    }
    with h5py.File(path, "w") as f:
        f.create_dataset("m", data=data["m"], chunks=(50, 40), compression="gzip")
        f.create_dataset("f", data=data["f"], chunks=(64, 24), compression="gzip", shuffle=True)
        f.create_dataset("g/s", data=data["g/s"])
        f["g"].attrs["x"] = 5
    with h5py.File(path, "r") as f:  # the oracle: what h5py reads back
        return {k: f[k][()] for k in data}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("lifecycle") / "a.h5"
    return path, _write(path)


def _child(script: str, *args, timeout: float = 120, env: dict | None = None) -> str:
    """Run ``script`` in a fresh interpreter (with this one's import path); its stdout,
    after checking it exited 0 within the time limit (a hang fails, it does not stall)."""
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    environ.update(env or {})
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=environ)
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-4000:])
    return done.stdout


OPEN_SOURCES = """
    import io, sys
    import fsspec
    import h5turbo

    def open_source(kind, path):
        if kind == "path":
            return path
        if kind == "bytesio":
            return io.BytesIO(open(path, "rb").read())
        if kind == "open":
            return open(path, "rb")
        if kind == "fsspec":
            return fsspec.open(path, "rb").open()
        fs = fsspec.filesystem("memory")
        fs.pipe("/lifecycle/" + kind + ".h5", open(path, "rb").read())
        return fs.open("/lifecycle/" + kind + ".h5", "rb")
"""


# ---------------------------------------------------------------- pickling


def test_pickling_files_and_objects_is_a_type_error_as_in_h5py(sample):
    path, _ = sample
    with h5turbo.File(path, "r") as f, h5py.File(path, "r") as h:
        for ours, theirs in [(f, h), (f["m"], h["m"]), (f["g"], h["g"]), (f.attrs, None)]:
            with pytest.raises(TypeError):
                pickle.dumps(ours)
            if theirs is not None:
                with pytest.raises(TypeError):
                    pickle.dumps(theirs)
    with h5turbo.File(io.BytesIO(path.read_bytes())) as f:
        with pytest.raises(TypeError):
            pickle.dumps(f["m"])
        assert np.array_equal(f["m"][:3], sample[1]["m"][:3])  # still usable after the failed pickle


# ---------------------------------------------------------------- fork


FORK_SCRIPT = OPEN_SOURCES + """
    import multiprocessing as mp
    import os
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np

    path = sys.argv[1]
    expected = {k: np.load(sys.argv[2] + "/" + k + ".npy") for k in ("m", "f")}
    kinds = sys.argv[3].split(",")
    files = {kind: h5turbo.File(open_source(kind, path), "r") for kind in kinds}

    def parallel_reads(f, count):
        def one(j):
            return (np.array_equal(f["m"][j::5, ::3], expected["m"][j::5, ::3])
                    and np.array_equal(f["f"][j * 20:j * 20 + 300], expected["f"][j * 20:j * 20 + 300]))
        with ThreadPoolExecutor(6) as ex:
            return all(ex.map(one, range(count)))

    # the parent reads with many threads (pools built, caches filled) before forking
    assert all(parallel_reads(files[kind], 12) for kind in kinds)

    def child(task):
        kind, i = task
        f = files[kind]
        return (kind, parallel_reads(f, 10),
                np.array_equal(f["m"].read(threads=3), expected["m"]),
                np.array_equal(f["m"].sum(axis=0, threads=2), expected["m"].sum(axis=0)))

    with mp.get_context("fork").Pool(3) as pool:
        results = pool.map(child, [(kind, i) for kind in kinds for i in range(3)])
    bad = [r for r in results if not all(r[1:])]
    assert not bad, bad

    # os.fork directly, children exiting with os._exit (no atexit, no finalizers)
    pids = []
    for kind in kinds:
        pid = os.fork()
        if pid == 0:
            try:
                os._exit(0 if all(child((kind, 0))[1:]) else 3)
            except BaseException:
                os._exit(4)
        pids.append((kind, pid))
    codes = {kind: os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for kind, pid in pids}
    assert set(codes.values()) == {0}, codes
    # and the parent goes on reading with its threads
    assert all(parallel_reads(files[kind], 6) for kind in kinds)
    print("ok", len(results), len(codes))
"""


def test_forked_children_read_inherited_files_of_every_source(sample, tmp_path):
    path, expected = sample
    for k in ("m", "f"):
        np.save(tmp_path / f"{k}.npy", expected[k])
    out = _child(FORK_SCRIPT, path, tmp_path, ",".join(SOURCES))
    assert out.split() == ["ok", str(3 * len(SOURCES)), str(len(SOURCES))]


CHILD_CLOSES_SCRIPT = OPEN_SOURCES + """
    import os
    import numpy as np

    path = sys.argv[1]
    expected = np.load(sys.argv[2])
    for kind in sys.argv[3].split(","):
        source = open_source(kind, path)
        f = h5turbo.File(source, "r")
        f["m"][0]
        pid = os.fork()
        if pid == 0:  # the child reads, then closes the File and the object it was given
            ok = np.array_equal(f["m"][::2], expected[::2])
            f.close()
            if kind != "path":
                source.close()
            os._exit(0 if ok else 3)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, kind
        # the parent's File and object are its own: they read on
        assert np.array_equal(f["m"][1::2], expected[1::2]), kind
        assert np.array_equal(f["m"].read(threads=2), expected), kind
        f.close()
    print("ok")
"""


def test_a_forked_child_closing_its_inherited_file_leaves_the_parents_file_open(sample, tmp_path):
    path, expected = sample
    np.save(tmp_path / "m.npy", expected["m"])
    assert _child(CHILD_CLOSES_SCRIPT, path, tmp_path / "m.npy", ",".join(SOURCES), timeout=60).split() == ["ok"]


# ---------------------------------------------------------------- spawn / DataLoader


DATALOADER_SCRIPT = """
    import multiprocessing as mp
    import pickle
    import sys

    import h5py
    import numpy as np
    import h5turbo


    class Rows:
        '''A torch-style map Dataset: holds the path, opens the file lazily in each
        worker, drops the open File when pickled (the DataLoader pattern for h5py).'''

        def __init__(self, path):
            self.path = path
            self.file = None

        def __getstate__(self):
            return {"path": self.path, "file": None}

        def __len__(self):
            with h5turbo.File(self.path, "r") as f:
                return f["m"].shape[0]

        def __getitem__(self, i):
            if self.file is None:
                self.file = h5turbo.File(self.path, "r")
            return i, self.file["m"][i], self.file["f"][i % 900]


    def batch(args):
        rows, lo, hi = args
        return [rows[i] for i in range(lo, hi)]


    if __name__ == "__main__":
        path, method = sys.argv[1], sys.argv[2]
        rows = Rows(path)
        rows[0]  # the parent has an open file too (its File is not pickled)
        with h5py.File(path, "r") as h:
            m, f = h["m"][()], h["f"][()]
        with mp.get_context(method).Pool(2) as pool:
            parts = pool.map(batch, [(rows, lo, min(lo + 100, len(rows))) for lo in range(0, len(rows), 100)])
            # an open File or Dataset sent to a worker: a TypeError in the parent, as h5py's
            for obj in (rows.file, rows.file["m"]):
                try:
                    pool.map(len, [obj])
                except TypeError:
                    print("TypeError")
        got = [item for part in parts for item in part]
        assert [i for i, _, _ in got] == list(range(len(m)))
        assert all(np.array_equal(a, m[i]) and np.array_equal(b, f[i % 900]) for i, a, b in got)
        print("ok", len(got))
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawned_workers_read_through_a_picklable_path_holder(sample, tmp_path, method):
    path, expected = sample
    script = tmp_path / "loader.py"  # spawn re-imports __main__: it must be a file
    script.write_text(textwrap.dedent(DATALOADER_SCRIPT))
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(script), str(path), method], capture_output=True, text=True,
                          timeout=180, env=environ)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split() == ["TypeError", "TypeError", "ok", str(len(expected["m"]))]


# ---------------------------------------------------------------- threads


def test_32_python_threads_read_one_dataset_and_many_files_as_h5py(sample, tmp_path):
    path, expected = sample
    paths = []
    for i in range(6):  # six more files, each with its own values
        p = tmp_path / f"t{i}.h5"
        with h5py.File(p, "w") as h:
            h.create_dataset("v", data=np.arange(i, i + 30000, dtype="f4").reshape(300, 100),
                             chunks=(16, 100), compression="gzip")
        paths.append(p)
    with h5py.File(paths[0], "r") as h:
        base = h["v"][()]
    shared = h5turbo.File(path, "r")
    files = [h5turbo.File(p, "r") for p in paths]
    rng = np.random.default_rng(5)
    jobs = [(int(rng.integers(0, 700)), int(rng.integers(1, 9)), int(rng.integers(0, 300)), int(rng.integers(1, 5)))
            for _ in range(400)]

    def job(k):
        start, step, col, threads = jobs[k]
        a = shared["m"].read(np.s_[start::step, col:], threads=threads)
        b = files[k % 6]["v"][start % 300::step, ::threads]
        c = shared["g/s"][start % 300:]
        return (np.array_equal(a, expected["m"][start::step, col:])
                and np.array_equal(b, base[start % 300::step, ::threads] + k % 6)
                and np.array_equal(c, expected["g/s"][start % 300:]))

    with ThreadPoolExecutor(32) as ex:
        ok = list(ex.map(job, range(len(jobs))))
    assert all(ok), ok.index(False)
    for f in files + [shared]:
        f.close()


CLOSE_WHILE_READING = OPEN_SOURCES + """
    import gc, threading, time
    import numpy as np

    path, kind = sys.argv[1], sys.argv[2]
    expected = np.load(sys.argv[3])
    tally = {"ok": 0, "closed": 0, "wrong": 0, "other": []}
    for it in range(12):
        f = h5turbo.File(open_source(kind, path), "r")
        ds = f["m"]
        start = threading.Barrier(7)

        def body(i):
            start.wait()
            for k in range(5):
                try:
                    r = ds.read(np.s_[i + k::4], threads=1 + i % 3)
                    tally["ok" if np.array_equal(r, expected[i + k::4]) else "wrong"] += 1
                except h5turbo.ClosedError as e:
                    assert isinstance(e, ValueError) and isinstance(e, RuntimeError)
                    tally["closed"] += 1
                except BaseException as e:
                    tally["other"].append(repr(e))

        threads = [threading.Thread(target=body, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        start.wait()
        time.sleep(0.0005 * (it % 4))
        if it % 2:
            f.close()
        else:
            del f  # the Dataset keeps the file open, as h5py: reads go on
            gc.collect()
        for t in threads:
            t.join()
        del ds
    assert tally["wrong"] == 0 and not tally["other"], tally
    print("ok", tally["ok"] + tally["closed"])
"""


@pytest.mark.parametrize("kind", SOURCES)
def test_close_or_del_while_threads_read_gives_values_or_closed_error(sample, tmp_path, kind):
    path, expected = sample
    np.save(tmp_path / "m.npy", expected["m"])
    out = _child(CLOSE_WHILE_READING, path, kind, tmp_path / "m.npy", timeout=120)
    assert out.split() == ["ok", str(12 * 6 * 5)]


def test_threads_argument_values(sample):
    path, expected = sample
    with h5turbo.File(path, "r") as f:
        for threads in [None, 1, 2, 7, 64, 1024, 5000, 2**63 - 1, 2**64, 10**30, np.int64(3), np.uint8(2),
                        np.uint64(2**64 - 1)]:
            assert np.array_equal(f["m"].read(threads=threads), expected["m"]), threads
            assert np.array_equal(f["m"].read(np.s_[::7, 3], threads=threads), expected["m"][::7, 3]), threads
        assert f["m"].sum(threads=1024) == expected["m"].sum()
        for threads in [0, -1, -2**63, True, 1.0, "2"]:
            with pytest.raises(ValueError):
                f["m"].read(threads=threads)
            with pytest.raises(ValueError):
                f["m"].sum(threads=threads)
        # and the File still reads after refused arguments
        assert np.array_equal(f["m"][5], expected["m"][5])


def test_h5turbo_threads_environment_values(sample):
    """H5TURBO_THREADS is read at each read: positive counts are used (clamped to 1024
    threads), anything else means all cores; every value reads h5py's values."""
    path, _ = sample
    out = _child("""
        import os, sys
        import h5py, numpy as np, h5turbo
        path = sys.argv[1]
        with h5py.File(path, "r") as h:
            m = h["m"][()]
        os.environ.pop("H5TURBO_THREADS", None)
        cores = h5turbo._native.default_threads()
        f = h5turbo.File(path, "r")
        for value in ["0", "-3", "abc", "", "99999999999999999999", "1", " 3 ", "100000", "2"]:
            os.environ["H5TURBO_THREADS"] = value
            assert np.array_equal(f["m"][()], m), value
            assert np.array_equal(f["m"].read(np.s_[1::3], threads=2), m[1::3]), value
            assert f["m"].sum(axis=0).tolist() == m.sum(axis=0).tolist(), value
            print(repr(value), h5turbo._native.default_threads() == cores, h5turbo._native.default_threads())
    """, path, timeout=60)
    got = {line.rsplit(" ", 2)[0]: line.rsplit(" ", 2)[1:] for line in out.splitlines()}
    for value in ["'0'", "'-3'", "'abc'", "''", "'99999999999999999999'"]:
        assert got[value][0] == "True", (value, got)
    assert [got[v][1] for v in ["'1'", "' 3 '", "'100000'", "'2'"]] == ["1", "3", "100000", "2"]


# ---------------------------------------------------------------- interrupts


SIGINT_SCRIPT = """
    import io, os, signal, sys, threading, time
    import h5py, numpy as np, h5turbo

    # Python's Ctrl-C handler, whatever this process inherited: a shell without job
    # control starts background commands with SIGINT ignored, and Python then keeps it so
    signal.signal(signal.SIGINT, signal.default_int_handler)

    path, how = sys.argv[1], sys.argv[2]
    with h5py.File(path, "r") as h:
        expected = h["x"][()]

    class Interrupting:
        '''A file object (no descriptor: read through its methods) whose reads send
        SIGINT to the process once (Ctrl-C mid-read).'''
        sent = True  # armed below, after the metadata reads

        def __init__(self, path):
            self.raw = io.BytesIO(open(path, "rb").read())
            self.calls = 0

        def seek(self, *args):
            return self.raw.seek(*args)

        def tell(self):
            return self.raw.tell()

        def read(self, n=-1):
            return self.raw.read(n)

        def readinto(self, buf):
            self.calls += 1
            if Interrupting.sent is False:
                Interrupting.sent = True
                os.kill(os.getpid(), signal.SIGINT)
            return self.raw.readinto(buf)

    if how == "fileobj":
        obj = Interrupting(path)
        f = h5turbo.File(obj, "r")
    else:
        f = h5turbo.File(path, "r")
    f["x"][0]  # metadata read before the interrupt
    if how == "fileobj":
        calls = obj.calls
        Interrupting.sent = False
    else:
        threading.Timer(0.02, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    interrupted = False
    try:
        f["x"][()]
        for _ in range(500):  # a read that finished before the signal: it arrives now
            time.sleep(0.01)
    except KeyboardInterrupt:
        interrupted = True
    except h5turbo.Error as e:
        # only if the KeyboardInterrupt is its cause
        interrupted = isinstance(e.__cause__, KeyboardInterrupt)
    assert interrupted
    if how == "fileobj":
        assert obj.calls > calls  # the interrupt came from inside the read
    # the File is usable afterwards, and reads the right values
    assert np.array_equal(f["x"][()], expected)
    assert np.array_equal(f["x"].read(np.s_[::3, 7::5], threads=2), expected[::3, 7::5])
    print("ok")
"""


FIRST_ARRAY_INTERRUPTED = """
    import sys
    import numpy as np, numpy.lib

    # numpy's version check, which loading numpy's C API runs, raises KeyboardInterrupt
    # once armed: as a Ctrl-C landing in it would
    version_check = numpy.lib.NumpyVersion.__init__
    armed = False

    def interrupted_check(self, version):
        if armed:
            raise KeyboardInterrupt
        return version_check(self, version)

    numpy.lib.NumpyVersion.__init__ = interrupted_check
    import h5turbo

    armed = True
    with h5turbo.File(sys.argv[1], "r") as f:
        total = f["x"].sum()  # the session's first array made in native code
        values = f["x"][()]
    assert total == values.sum(), (total, values.sum())
    print("ok")
"""


def test_a_ctrl_c_while_numpy_api_would_load_is_not_a_panic(tmp_path):
    """The numpy crate loaded numpy's C API at the first array made, running numpy's
    version check; a KeyboardInterrupt raised there made it panic (PanicException with
    a Rust backtrace, exit 1). The API is now loaded when h5turbo is imported."""
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as h:
        h["x"] = np.arange(1000.0)
    assert _child(FIRST_ARRAY_INTERRUPTED, path).split() == ["ok"]


@pytest.mark.parametrize("how", ["path", "fileobj"])
def test_sigint_during_a_read_raises_keyboardinterrupt_and_leaves_the_file_usable(tmp_path, how):
    path = tmp_path / "big.h5"
    with h5py.File(path, "w") as h:
        x = (np.arange(3_000_000, dtype="f8") % 977).reshape(1500, 2000)
        h.create_dataset("x", data=x, chunks=(100, 250), compression="gzip", compression_opts=1)
    assert _child(SIGINT_SCRIPT, path, how, timeout=90).split() == ["ok"]


# ---------------------------------------------------------------- garbage collection


def test_objects_outliving_a_closed_file_raise_closed_error_as_h5py_raises(sample):
    path, expected = sample
    f = h5turbo.File(path, "r")
    ds, group, attrs = f["m"], f["g"], f["g"].attrs
    f.close()
    for action in (lambda: ds[0], lambda: ds.shape, lambda: list(group.keys()), lambda: dict(attrs),
                   lambda: ds.read(threads=2), lambda: group["s"]):
        with pytest.raises(h5turbo.ClosedError):
            action()
    assert not ds and not group and ds.name is None and repr(ds) == "<Closed HDF5 dataset>"
    h = h5py.File(path, "r")
    hds = h["m"]
    h.close()
    with pytest.raises((ValueError, RuntimeError)):  # h5py: the same error classes
        hds[0]


def test_objects_keep_a_deleted_file_alive_as_h5py(sample):
    import gc
    import weakref

    path, expected = sample
    f = h5turbo.File(path, "r")
    ds, group = f["m"], f["g"]
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is not None  # the Dataset holds its File, as h5py's
    assert np.array_equal(ds[()], expected["m"])
    assert np.array_equal(group["s"][()], expected["g/s"])
    h = h5py.File(path, "r")
    hds = h["m"]
    del h
    gc.collect()
    assert np.array_equal(hds[()], ds[()])
    del ds, group
    gc.collect()
    assert ref() is None  # and goes once nothing holds it


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_thousands_of_open_close_cycles_leak_no_descriptors_or_threads(sample):
    path, expected = sample
    data = path.read_bytes()
    for _ in range(20):  # warm: pools and caches built
        with h5turbo.File(path, "r") as f:
            f["m"][0]
    fds, threads = _descriptors(), threading.active_count()
    tasks = len(os.listdir("/proc/self/task"))
    for i in range(1500):
        f = h5turbo.File(path, "r")
        assert np.array_equal(f["m"][i % 700], expected["m"][i % 700])
        if i % 2:
            f.close()
        else:
            del f
    for _ in range(300):
        with open(path, "rb") as fo, h5turbo.File(fo, "r") as f:
            f["g/s"][:2]
        with h5turbo.File(io.BytesIO(data), "r") as f:
            f["f"][3]
    many = [h5turbo.File(path, "r") for _ in range(200)]
    assert all(f["m"].shape == (700, 300) for f in many)
    assert _descriptors() == fds + 1  # one descriptor for the 200 Files of one file
    del many
    import gc
    gc.collect()
    assert _descriptors() == fds
    assert threading.active_count() == threads
    assert len(os.listdir("/proc/self/task")) == tasks


# ---------------------------------------------------------------- file objects shared by threads


@pytest.mark.parametrize("kind", ["bytesio", "open", "fsspec"])
def test_one_file_object_shared_by_several_files_and_threads(sample, kind, tmp_path):
    """Several Files opened on ONE object, read from 16 threads: reads through the object
    take turns (a seek and a read are a pair), so values match h5py's."""
    import fsspec

    path, expected = sample
    obj = {"bytesio": lambda: io.BytesIO(path.read_bytes()), "open": lambda: open(path, "rb"),
           "fsspec": lambda: fsspec.open(str(path), "rb").open()}[kind]()
    files = [h5turbo.File(obj, "r") for _ in range(3)]

    def job(k):
        f = files[k % 3]
        return (np.array_equal(f["m"][k % 50::7, k % 3::2], expected["m"][k % 50::7, k % 3::2])
                and np.array_equal(f["f"][k::11], expected["f"][k::11]))

    with ThreadPoolExecutor(16) as ex:
        assert all(ex.map(job, range(96)))
    for f in files:
        f.close()
    assert not obj.closed  # a file object given to File stays open, as h5py
    obj.close()


# ---------------------------------------------------------------- resources


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_threads_that_cannot_start_are_an_oserror_and_leave_the_file_usable(sample):
    """A read asking for threads the address space has no room for (a limit 2 MiB above
    what the process uses: the output array fits, no 2 MiB thread stack does) fails
    with OSError, starts no thread that stays, and the next reads on the pool started
    before give h5py's values. (Each read is of a file opened anew: chunks the dataset's
    cache already holds are copied on the calling thread, with no pool to start.) The
    limit leaves no room for a thread to start at all: with room for some stacks, the
    allocator's per-thread memory (mimalloc 2.x maps it for each new thread) can be what
    runs out, in a thread already started, and Rust aborts there."""
    path, _ = sample
    out = _child("""
        import os, resource, sys, time
        import h5py, numpy as np, h5turbo
        path = sys.argv[1]
        with h5py.File(path, "r") as h:
            m = h["m"][()]
        f = h5turbo.File(path, "r")
        f["m"].read(threads=2)
        pages = int(open("/proc/self/statm").read().split()[0])
        limit = pages * os.sysconf("SC_PAGE_SIZE") + (2 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        tasks = len(os.listdir("/proc/self/task"))
        for threads in (1024, 1000, 1024):
            try:
                with h5turbo.File(path, "r") as fresh:
                    fresh["m"].read(threads=threads)
                print("read")
            except OSError as e:
                assert "threads" in str(e), e
                print("OSError")
        time.sleep(0.2)
        assert len(os.listdir("/proc/self/task")) == tasks
        assert np.array_equal(f["m"].read(threads=2), m) and np.array_equal(f["m"][()], m)
        print("ok")
    """, path, timeout=60)
    assert out.split() == ["OSError", "OSError", "OSError", "ok"]


@pytest.mark.parametrize("exception", [KeyboardInterrupt, TimeoutError, OSError])
def test_a_file_objects_exception_in_a_metadata_read_is_not_swallowed(tmp_path, exception):
    """The first reads of a dataset go through the metadata blocks: an exception the
    object's read() raised there was dropped and the read tried again directly, so a
    Ctrl-C (or any error) vanished. h5py raises it; so does h5turbo now."""
    path = tmp_path / "m.h5"
    with h5py.File(path, "w") as h:
        h.create_dataset("m", data=np.arange(20_000, dtype="i4").reshape(200, 100), chunks=(64, 50),
                         compression="gzip")
    contents = path.read_bytes()

    class Armed:
        def __init__(self):
            self.b, self.arm = io.BytesIO(contents), False

        def seek(self, *a):
            return self.b.seek(*a)

        def tell(self):
            return self.b.tell()

        def read(self, n=-1):
            if self.arm:
                self.arm = False
                raise exception("from read()")
            return self.b.read(n)

    for opener in (h5py.File, h5turbo.File):
        obj = Armed()
        f = opener(obj, "r")
        obj.arm = True
        expected = exception if exception is KeyboardInterrupt else OSError
        with pytest.raises(expected):
            f["m"][()]
        np.testing.assert_array_equal(f["m"][()], np.arange(20_000).reshape(200, 100))  # still readable
        f.close()


@pytest.mark.parametrize("source", ["path", "bytesio"])
def test_forking_while_other_threads_read_never_leaves_a_child_hung(sample, source):
    """A child forked while parent threads were mid-read inherited their locks (the pool
    registry, a chunk cache, a file object's turn) held, and its own read of that file
    hung (about 1 child in 16). The fork now waits until no native call runs, as
    h5py's reads (which hold the GIL) make it wait. 60 forks: none may hang."""
    path, data = sample
    out = _child("""
        import io, os, signal, sys, threading, time
        import numpy as np, h5turbo
        path, source = sys.argv[1], sys.argv[2]
        f = h5turbo.File(path if source == "path" else io.BytesIO(open(path, "rb").read()))
        expected = f["m"][5::11]
        stop = False
        def background(t):
            i = 0
            while not stop:
                f["m"].read(threads=1 + (i + t) % 5) if source == "path" else f["m"][i % 7::3]
                i += 1
        threads = [threading.Thread(target=background, args=(t,)) for t in range(3)]
        for t in threads:
            t.start()
        bad = 0
        for n in range(60):
            time.sleep(0.002 * (n % 5))
            pid = os.fork()
            if pid == 0:
                signal.alarm(10)   # a hung child dies of SIGALRM
                ok = np.array_equal(f["m"][5::11], expected)
                os._exit(0 if ok else 3)
            bad += os.waitpid(pid, 0)[1] != 0
        stop = True
        for t in threads:
            t.join()
        print(bad)
    """, path, source, timeout=180)
    assert out.strip() == "0"


def test_reads_through_readinto_leave_no_python_objects_behind(sample):
    """Each readinto() of a file object left one Python int alive (pyo3's PySlice::new
    leaks its ints): 55 objects a cycle of 5 small reads of a BytesIO, without bound."""
    path, _ = sample
    out = _child("""
        import gc, io, sys
        import numpy as np, h5turbo
        data = open(sys.argv[1], "rb").read()
        def cycle():
            f = h5turbo.File(io.BytesIO(data))
            for r in range(5):
                f["m"].read(np.s_[r * 100:r * 100 + 1], threads=1)
            f.close()
        for _ in range(50):
            cycle()
        gc.collect()
        before = sys.getallocatedblocks()
        for _ in range(300):
            cycle()
        gc.collect()
        print((sys.getallocatedblocks() - before) / 300)
    """, path)
    assert float(out) < 2, out


@pytest.mark.parametrize("source", ["path", "bytesio"])
def test_python_exits_cleanly_while_daemon_threads_read(sample, source):
    """Daemon threads still reading when Python exits: a read that ended after Python
    began to finalize took the GIL back, Python ended its thread with pthread_exit, and
    the unwind through the native frames aborted the process ("FATAL: exception not
    rethrown", exit status 134, every time). h5py hangs there. The thread now parks and
    the interpreter exits with status 0; atexit handlers and output are kept."""
    path, _ = sample
    for _ in range(3):
        out = _child("""
            import atexit, io, sys, threading, time
            import h5turbo
            path, source = sys.argv[1], sys.argv[2]
            f = h5turbo.File(path if source == "path" else io.BytesIO(open(path, "rb").read()))
            def background():
                while True:
                    f["m"][:10, :10]
            for _ in range(3):
                threading.Thread(target=background, daemon=True).start()
            time.sleep(0.3)
            atexit.register(lambda: print("atexit ran", flush=True))
            print("main done", flush=True)
        """, path, source, timeout=60)
        assert out.split() == ["main", "done", "atexit", "ran"]


def test_a_thread_still_running_after_the_main_thread_returned_can_read(tmp_path):
    """Python stops every ThreadPoolExecutor when the main thread returns, before it
    waits for the other threads: a non-daemon thread reading fast5 files, fetching reads
    by id, converting a sparse matrix or writing failed with 'cannot schedule new
    futures after interpreter shutdown'. ont_fast5_api and h5py read there."""
    fast5 = os.path.join(os.path.dirname(__file__), "..", "data", "corpus", "fast5", "vbz_multi_fast5_vbz.fast5")
    script = textwrap.dedent(f"""
        import threading, time, h5py, numpy as np, scipy.sparse as sp, h5turbo
        fast5, folder = {os.path.abspath(fast5)!r}, {str(tmp_path)!r}
        with h5py.File(folder + "/csr.h5", "w") as f:
            m = sp.random(300, 200, density=0.1, format="csr", random_state=1)
            g = f.create_group("X")
            g.attrs["encoding-type"], g.attrs["shape"] = "csr_matrix", m.shape
            g["data"], g["indices"], g["indptr"] = m.data, m.indices, m.indptr
        def work():
            time.sleep(0.3)  # the main thread has returned by now
            streamed = [r.read_id for r in h5turbo.read_fast5(fast5, threads=2)]
            index = h5turbo.Fast5Index(fast5)
            fetched = [r.read_id for r in index.get_reads(index.read_ids)]
            with h5turbo.File(folder + "/csr.h5") as f:
                matrix = f["X"].to_scipy()
            h5turbo.write(folder + "/w.h5", "a", np.arange(10**6), chunks=(10**5,), compression="gzip")
            with h5py.File(folder + "/w.h5") as f:
                written = int(f["a"][-1])
            print(len(streamed), fetched == sorted(fetched, key=streamed.index), (matrix != m).nnz, written, flush=True)
        threading.Thread(target=work).start()
    """)
    expected = [str(sum(1 for _ in h5turbo.read_fast5(fast5))), "True", "0", str(10**6 - 1)]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0 and done.stdout.split() == expected, done.stderr[-3000:]


def test_a_pool_shut_down_from_one_of_its_own_threads_does_not_wait_for_itself():
    """A reader's generator finalised by the cyclic garbage collector on one of its own
    pool threads shut the pool down there, waiting for itself: 'cannot join current
    thread', printed as an ignored exception, and the shutdown left half done."""
    from h5turbo.workers import WorkerPool
    plain = ThreadPoolExecutor(1)
    with pytest.raises(RuntimeError, match="cannot join current thread"):
        plain.submit(plain.shutdown).result(timeout=30)
    pool = WorkerPool(2)
    assert pool.submit(pool.shutdown, cancel_futures=True).result(timeout=30) is None


def test_readers_left_in_reference_cycles_are_collected_quietly():
    corpus = os.path.join(os.path.dirname(__file__), "..", "data", "corpus", "fast5")
    script = textwrap.dedent(f"""
        import gc, h5turbo
        index = h5turbo.Fast5Index({os.path.abspath(corpus)!r}, threads=4)
        for _ in range(30):
            for reads in (h5turbo.read_fast5({os.path.abspath(corpus)!r}, threads=4),
                          index.get_reads(index.read_ids)):
                next(reads)
                holder = {{"reads": reads}}
                holder["self"] = holder  # a loader object in a cycle: the cyclic GC's to free
                del reads, holder
        gc.collect()
        print("done")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0 and done.stdout.split() == ["done"], done.stderr[-2000:]
    assert "cannot join" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr[-2000:]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_files_of_one_file_share_one_descriptor_as_libhdf5s_do(sample, tmp_path):
    """Each File opened its own descriptor: keeping about 1000 Files (or objects that
    outlive them) of one file ran out of descriptors under `ulimit -n 1024`, where h5py,
    whose opens of one file share libhdf5's, kept 3000 with 7 descriptors. Each File
    still closes on its own, and a file replaced on disk is opened anew."""
    path, expected = sample
    script = textwrap.dedent(f"""
        import os, resource, shutil, numpy as np, h5py, h5turbo
        path = {str(path)!r}
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        files = [h5turbo.File(path) for _ in range(600)]
        datasets = [h5turbo.File(path)["m"] for _ in range(600)]  # objects outliving their File
        first = files[0]["m"][5]
        assert all(np.array_equal(f["m"][5], first) for f in files[1:])
        assert all(np.array_equal(d[7], datasets[0][7]) for d in datasets)
        for f in files[:599]:
            f.close()
        assert np.array_equal(files[599]["m"][5], first)  # the others' closes leave it be
        on_path = lambda: sum(os.path.realpath("/proc/self/fd/" + fd) == os.path.realpath(path) for fd in os.listdir("/proc/self/fd"))
        shared = on_path()
        # replaced: a new File reads the new file, the kept ones the old
        copy = path + ".new"
        with h5py.File(copy, "w") as f:
            f["m"] = np.arange(6)
        os.replace(copy, path)
        assert list(h5turbo.File(path)["m"][()]) == list(range(6))
        assert np.array_equal(files[599]["m"][5], first)
        files[599].close()
        del files, datasets
        print(shared)
    """)
    copied = tmp_path / "a.h5"  # replaced by the script: a copy of the module's file
    copied.write_bytes(path.read_bytes())
    assert _child(script.replace(repr(str(path)), repr(str(copied)))).split() == ["1"]


def test_decoded_chunks_kept_by_all_files_stay_within_the_process_budget(tmp_path):
    """Each open file kept up to 64 MiB of decoded chunks, read once by a dask task and
    never again: a worker holding 48 files reached 3.3 GB (h5py 70 MB), and workers with
    a memory limit paused for good. All files together now keep at most 256 MiB."""
    chunk = (1024, 1024)  # 4 MiB of int32
    for k in range(12):
        with h5py.File(tmp_path / f"f{k}.h5", "w") as f:
            f.create_dataset("v", data=np.full((20 * 1024, 1024), k, dtype="i4"), chunks=chunk, compression="gzip")
    script = textwrap.dedent(f"""
        import h5turbo
        def rss():
            with open("/proc/self/status") as s:
                return next(int(l.split()[1]) for l in s if l.startswith("VmRSS")) >> 10
        files = [h5turbo.File({str(tmp_path)!r} + f"/f{{k}}.h5") for k in range(12)]
        before = rss()
        total = 0
        for k, f in enumerate(files):  # each chunk read once, as dask reads its blocks
            for i in range(20):
                total += int(f["v"][i * 1024:(i + 1) * 1024].sum())
        print(total == sum(k * 20 * 1024 * 1024 for k in range(12)), rss() - before)
    """)
    ok, grown = _child(script, timeout=300).split()
    assert ok == "True" and int(grown) < 450, f"RSS grew by {grown} MiB reading 12 files (was about 770)"


def test_imported_by_a_thread_that_exits_then_read_from_other_threads(tmp_path):
    """h5turbo imported lazily by a worker thread that is gone before the main thread, and
    then new threads, read on 2 to 4 threads (pools start then): the first new thread to
    allocate crashed the interpreter (mimalloc 3.x, microsoft/mimalloc#1287), in 10 runs
    of 10. Three fresh interpreters, each must print the sums."""
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(200_000, dtype="i8").reshape(400, 500), chunks=(50, 100), compression="gzip")
    script = """
        import sys, threading
        loader = threading.Thread(target=lambda: __import__("h5turbo"))
        loader.start()
        loader.join()
        import h5turbo
        sums = []
        def read(threads):
            with h5turbo.File(sys.argv[1]) as f:
                sums.append(int(f["x"].read(threads=threads).sum()))
        read(2)
        for threads in (3, 4):
            reader = threading.Thread(target=read, args=(threads,))
            reader.start()
            reader.join()
        print(*sums)
    """
    for _ in range(3):
        assert _child(script, str(path)).split() == [str(200_000 * 199_999 // 2)] * 3
