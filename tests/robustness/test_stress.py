"""Concurrency stress: many Python threads on one shared File and on many files.

Results must equal a serial run of the same operations (and h5py's values); closing
a file while other threads read from it gives h5turbo errors, never a crash (run in a
child process, so a crash fails the test instead of killing pytest).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

from support.common import REPO_ROOT
THREADS = 32
OPS = 1500
SEED = 11


def _write(path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w", libver="latest" if seed % 2 else "earliest") as f:
        ints = rng.integers(0, 1000, (300, 200), dtype="<i4")
        f.create_dataset("gzip", data=ints, chunks=(32, 24), compression="gzip", shuffle=True)
        f.create_dataset("lzf", data=ints.astype("<f8") / 7, chunks=(50, 50), compression="lzf")
        f.create_dataset("contig", data=ints[:100].astype("<i2"))
        f.create_dataset("strings", data=[f"s{i}" * (i % 5) for i in range(64)],
                         dtype=h5py.string_dtype())
        g = f.create_group("grp")
        for i in range(20):
            g.attrs[f"a{i}"] = np.arange(i + 1, dtype="<i8") * seed
        g.attrs["title"] = f"file {seed}"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("stress")
    paths = [folder / f"f{i}.h5" for i in range(8)]
    for i, p in enumerate(paths):
        _write(p, i + 1)
    return paths


def _random_selection(rng: random.Random, shape: tuple[int, ...]):
    """A numpy-style selection: slices with steps, integers, or sorted index lists."""
    sel = []
    for n in shape:
        kind = rng.randrange(3)
        if kind == 0:
            start = rng.randrange(n)
            sel.append(slice(start, rng.randrange(start, n) + 1, rng.randint(1, 5)))
        elif kind == 1:
            sel.append(rng.randrange(n))
        else:
            sel.append(sorted(rng.sample(range(n), rng.randint(1, min(n, 12)))))
    if sum(isinstance(s, list) for s in sel) > 1:  # h5py allows one index list
        sel[0] = slice(None, None, 3)
    return tuple(sel)


def _ops(count: int, n_files: int) -> list[tuple]:
    """(file index, kind, name, selection) operations, reproducible from SEED."""
    rng = random.Random(SEED)
    shapes = {"gzip": (300, 200), "lzf": (300, 200), "contig": (100, 200), "strings": (64,)}
    ops = []
    for _ in range(count):
        fi = rng.randrange(n_files)
        roll = rng.random()
        if roll < 0.2:
            ops.append((fi, "attr", f"a{rng.randrange(20)}", None))
        elif roll < 0.35:
            name = rng.choice(["gzip", "lzf", "contig"])
            method = rng.choice(["sum", "mean", "var", "min", "max", "count_nonzero"])
            ops.append((fi, "reduce", name, (method, rng.choice([None, 0, 1]))))
        else:
            name = rng.choice(list(shapes))
            ops.append((fi, "read", name, _random_selection(rng, shapes[name])))
    return ops


def _run(handles: list, op: tuple):
    fi, kind, name, sel = op
    f = handles[fi]
    if kind == "attr":
        return f["grp"].attrs[name]
    if kind == "reduce":
        method, axis = sel
        if isinstance(f, h5py.File):  # the oracle: numpy over h5py's values
            return getattr(np, method)(f[name][()], axis=axis)
        return getattr(f[name], method)(axis=axis)
    return f[name][sel]


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        # Float reductions combine per-thread partials in scheduling order: equal to
        # the last bits only. Reads of float data are still compared exactly, below.
        return a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=0, equal_nan=True)
    return a.dtype == b.dtype and np.array_equal(a, b)


def _bits(value):
    """A read's exact content: its bytes, or its objects for object (vlen) arrays."""
    if isinstance(value, np.ndarray):
        return value.tolist() if value.dtype.kind == "O" else (value.dtype.str, value.shape, value.tobytes())
    return value


def test_threads_match_serial_on_one_shared_file(files):
    ops = [(0, kind, name, sel) for _, kind, name, sel in _ops(OPS, 1)]
    with h5turbo.File(str(files[0])) as f, h5py.File(files[0], "r") as ref:
        serial = [_run([f], op) for op in ops]
        oracle = [_run([ref], op) for op in ops[:100]]
        assert all(_same(a, b) for a, b in zip(serial, oracle))
        assert any(op[1] == "reduce" for op in ops[:100])
        reads = [i for i, op in enumerate(ops) if op[1] == "read"]
        exact = [_bits(serial[i]) for i in reads]
        with ThreadPoolExecutor(THREADS) as pool:
            parallel = list(pool.map(lambda op: _run([f], op), ops))
    bad = [i for i, (a, b) in enumerate(zip(serial, parallel)) if not _same(a, b)]
    assert not bad, f"{len(bad)} results differ from the serial run, first op {ops[bad[0]]}"
    # Reads are exact, bit for bit.
    again = [_bits(parallel[i]) for i in reads]
    assert again == exact


def test_threads_match_serial_on_many_files(files):
    ops = _ops(OPS, len(files))
    handles = [h5turbo.File(str(p)) for p in files]
    try:
        serial = [_run(handles, op) for op in ops]
        with ThreadPoolExecutor(THREADS) as pool:
            parallel = list(pool.map(lambda op: _run(handles, op), ops))
    finally:
        for h in handles:
            h.close()
    assert all(_same(a, b) for a, b in zip(serial, parallel))


def test_threads_open_read_close_their_own_files(files):
    """Each task opens, reads and closes its own handle, all at once."""
    def task(i: int):
        with h5turbo.File(str(files[i % len(files)])) as f:
            return f["gzip"][i % 300], dict(f["grp"].attrs)["title"]
    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(task, range(256)))
    for i, (row, title) in enumerate(results):
        with h5py.File(files[i % len(files)], "r") as ref:
            assert _same(row, ref["gzip"][i % 300]) and title == ref["grp"].attrs["title"]


CLOSE_WHILE_READING = textwrap.dedent("""
    import sys, threading, time
    import h5turbo
    f = h5turbo.File(sys.argv[1])
    counts = {"ok": 0, "error": 0}
    lock = threading.Lock()
    other = []
    def reader(k):
        deadline = time.time() + 40
        while time.time() < deadline:
            try:
                f["gzip"][k:k + 200:2, ::3].sum()
                f["grp"].attrs["a3"]
                key = "ok"
            except h5turbo.Error:
                key = "error"
            except Exception as exc:  # anything else is a failure of the contract
                other.append(repr(exc))
                return
            with lock:
                counts[key] += 1
            if key == "error" and f.closed:
                return
    threads = [threading.Thread(target=reader, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    # close mid-read, once reads have succeeded (a loaded machine may take a while)
    started = time.time()
    while time.time() - started < 30 and (counts["ok"] == 0 or time.time() - started < 0.3):
        time.sleep(0.01)
    f.close()
    for t in threads:
        t.join()
    print(counts["ok"], counts["error"], other)
""")


def test_close_while_reading_is_an_error_not_a_crash(files):
    proc = subprocess.run([sys.executable, "-c", CLOSE_WHILE_READING, str(files[1])],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              [str(REPO_ROOT / "python"), os.environ.get("PYTHONPATH", "")])))
    assert proc.returncode == 0, proc.stderr[-2000:]
    ok, errors, other = proc.stdout.split(" ", 2)
    assert other.strip() == "[]", other
    assert int(ok) > 0 and int(errors) >= 16, proc.stdout  # every reader saw the close
