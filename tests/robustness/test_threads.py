"""Thread safety: 16 Python threads reading different random selections (gzip,
fletcher32, vlen strings, compounds, fill values, many-chunk indexes) from ONE shared
h5turbo File at once get exactly the serial results; many files open and read from
many threads at once match h5py; closing a file while other threads read yields
h5turbo errors, never a crash (checked in a subprocess, by its return code)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest

from support import h5compare as hc
from support.common import import_h5turbo, run_python

h5turbo = import_h5turbo()

THREADS = 16
JOBS_PER_THREAD = 8
ROUNDS = 3
SHARED_DATASETS = [
    "layouts/btree2_many_gzip",
    "layouts/big_1d_paged",
    "layouts/fixed_array",
    "layouts/ext_array_gzip",
    "filters/shuffle_gzip_fletcher32_fixed_f8",
    "filters/lzf_incompressible",
    "fill/int_partial",
    "dtypes/vlen_utf8/chunked_gzip",
    "dtypes/compound_nested/chunked_gzip",
    "dtypes/f8be/chunked_fixed",
]


def _jobs(shape_of: dict, seed: int, count: int) -> list[tuple]:
    """(dataset path, selection, threads for read(), use read(out=)) per job."""
    rng = np.random.default_rng(seed)
    jobs = []
    for _ in range(count):
        path = SHARED_DATASETS[int(rng.integers(len(SHARED_DATASETS)))]
        sel = hc.random_selection(shape_of[path], rng)
        jobs.append((path, sel, int(rng.integers(1, 4)), bool(rng.random() < 0.5)))
    return jobs


def _run_job(turbo_file, job):
    path, sel, threads, into_out = job
    ds = turbo_file[path]
    if not into_out:
        return ds[sel]
    shape = np.shape(hc.oracle(np.empty(ds.shape, dtype=np.uint8), sel, ds.shape))
    out = np.empty(shape, dtype=ds.dtype)
    ds.read(selection=sel, out=out, threads=threads)
    return out


def _in_threads(count: int, work) -> list:
    """Run work(i) in `count` threads released together; return results or exceptions."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def body(i):
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as exc:  # reported by the caller
            results[i] = exc

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _failures(expected_per_thread, results) -> list[str]:
    failures = []
    for i, (expected, got) in enumerate(zip(expected_per_thread, results)):
        if isinstance(got, BaseException):
            failures.append(f"thread {i}: raised {type(got).__name__}: {got}")
            continue
        for j, (exp, value) in enumerate(zip(expected, got)):
            problem = hc.difference(exp, value)
            if problem:
                failures.append(f"thread {i} job {j}: {problem}")
    return failures


@pytest.mark.timeout(300)
def test_shared_file_many_threads(matrix_paths):
    path = str(matrix_paths[("data", "latest")])
    with h5py.File(path, "r") as ref:
        shape_of = {p: ref[p].shape for p in SHARED_DATASETS}
    jobs = [_jobs(shape_of, seed, JOBS_PER_THREAD) for seed in range(THREADS)]
    with h5turbo.File(path) as turbo:
        serial = [[_run_job(turbo, job) for job in thread_jobs] for thread_jobs in jobs]
        _check_serial_against_h5py(path, jobs, serial)
        for _ in range(ROUNDS):
            results = _in_threads(THREADS, lambda i: [_run_job(turbo, j) for j in jobs[i]])
            failures = _failures(serial, results)
            assert not failures, "\n".join(failures)


def _check_serial_against_h5py(path, jobs, serial) -> None:
    """The serial baseline itself must be right, or the thread test proves nothing."""
    with h5py.File(path, "r") as ref:
        full = {p: ref[p][()] for p in SHARED_DATASETS}
        for thread_jobs, values in zip(jobs, serial):
            for (p, sel, _, into_out), value in zip(thread_jobs, values):
                expected = hc.oracle(full[p], sel, ref[p].shape, as_array=into_out)
                hc.assert_same(expected, value, f"{p}{hc.describe(sel)}")


@pytest.mark.timeout(300)
def test_many_files_many_threads(matrix_paths):
    """Each thread opens its own files (all libver variants) and reads whole datasets."""
    paths = [str(p) for key, p in sorted(matrix_paths.items()) if key[0] == "data"]
    expected = {}
    for path in paths:
        with h5py.File(path, "r") as ref:
            expected[path] = {p: ref[p][()] for p in SHARED_DATASETS[:6]}

    def work(i):
        out = []
        for k in range(len(paths)):
            path = paths[(i + k) % len(paths)]
            with h5turbo.File(path) as turbo:
                out.append((path, {p: turbo[p][()] for p in SHARED_DATASETS[:6]}))
        return out

    results = _in_threads(THREADS, work)
    failures = []
    for i, got in enumerate(results):
        if isinstance(got, BaseException):
            failures.append(f"thread {i}: raised {type(got).__name__}: {got}")
            continue
        for path, values in got:
            for p, value in values.items():
                problem = hc.difference(expected[path][p], value)
                if problem:
                    failures.append(f"thread {i} {Path(path).name}:{p}: {problem}")
    assert not failures, "\n".join(failures)


CLOSE_WHILE_READING = r"""
import sys, threading, time
import numpy as np
import h5turbo

path, names = sys.argv[1], sys.argv[2:]
f = h5turbo.File(path)
datasets = [f[n] for n in names]
outs = [np.empty(ds.shape, dtype=ds.dtype) for ds in datasets]
bad, lock, counts = [], threading.Lock(), {"ok": 0, "error": 0}
stop = threading.Event()
start = threading.Barrier(9)

def reader(i):
    start.wait()
    k = i
    while not stop.is_set():
        ds, out = datasets[k % len(datasets)], outs[k % len(datasets)].copy()
        k += 1
        try:
            if k % 2:
                ds[...]
            else:
                ds.read(selection=(), out=out, threads=2)
            kind = "ok"
        except h5turbo.Error:
            kind = "error"
        except BaseException as exc:
            with lock:
                bad.append(f"reader raised {type(exc).__name__}: {exc}")
            return
        with lock:
            counts[kind] += 1

threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
start.wait()
# close mid-read, once reads have succeeded (a loaded machine may take a while)
started = time.monotonic()
while time.monotonic() - started < 30 and (counts["ok"] == 0 or time.monotonic() - started < 0.3):
    time.sleep(0.01)
f.close()
time.sleep(0.3)
stop.set()
for t in threads:
    t.join()

def after_close(what, fn):
    try:
        fn()
        bad.append(f"{what} after close succeeded")
    except h5turbo.Error:
        pass
    except BaseException as exc:
        bad.append(f"{what} after close raised {type(exc).__name__}: {exc}")

after_close("read", lambda: datasets[0][...])
after_close("read(out=)", lambda: datasets[0].read(out=outs[0]))
after_close("f[name]", lambda: f[names[0]])
f.close()  # idempotent
print("counts", counts)
print("bad", bad)
sys.exit(1 if bad or counts["ok"] == 0 else 0)
"""


@pytest.mark.timeout(300)
def test_close_while_reading_is_an_error_not_a_crash(matrix_paths, tmp_path):
    script = tmp_path / "close_while_reading.py"
    script.write_text(CLOSE_WHILE_READING)
    names = ["layouts/btree2_many_gzip", "layouts/big_1d_paged", "filters/shuffle_gzip_fixed_f8",
             "dtypes/vlen_ascii/chunked_gzip"]
    env = dict(os.environ)
    package_root = str(Path(h5turbo.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(script), str(matrix_paths[("data", "latest")]), *names],
                          capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, (f"return code {proc.returncode} (negative: killed by a signal)\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}")


def test_varying_thread_counts_do_not_keep_a_pool_each(tmp_path):
    """A caller that asks for another thread count on every read keeps at most a few
    pools alive: 1 to 40 threads once each used to leave all 820 threads running (and
    their scratch memory). Counted in a fresh process, from /proc."""
    if not Path("/proc/self/status").exists():
        pytest.skip("thread counts come from /proc")
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(200_000, dtype="f8"), chunks=(1000,), compression="gzip")
    # the four most recent pools (37 to 40 threads) and the interpreter's own
    bound = 37 + 38 + 39 + 40 + 8
    script = (
        "import h5turbo\n"
        "def threads():\n"
        "    return int(next(l for l in open('/proc/self/status') if l.startswith('Threads:')).split()[1])\n"
        f"with h5turbo.File({str(path)!r}) as f:\n"
        "    for n in range(1, 41):\n"
        "        f['x'].read(threads=n)\n"
        "        f['x'].sum(threads=n)\n"
        # a pool let go of ends its threads asynchronously: the last ones may still be
        # exiting when the loop ends, so wait (a bounded while) for them to go
        "import time\n"
        "deadline = time.monotonic() + 20\n"
        f"while threads() > {bound} and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print(threads())\n"
    )
    output = run_python(script, timeout=120)
    assert int(output.split()[-1]) <= bound
