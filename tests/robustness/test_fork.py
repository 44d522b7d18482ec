"""Fork safety: a process that has read with h5turbo's thread pools (and holds an open
file) forks children, as multiprocessing's fork start method, R's mclapply or a
dask/gunicorn worker model do; each child reads in parallel again, through the
inherited file and a fresh one, and gets the parent's values. A pool thread does not
survive fork, so a child that reused the parent's pool would hang: the scenario runs
in a subprocess with a time limit, so a hang fails the test instead of the suite."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import h5py
import numpy as np

SCRIPT = textwrap.dedent("""
    import multiprocessing as mp
    import sys
    import numpy as np
    import h5turbo

    path = sys.argv[1]
    parent = h5turbo.File(path, "r")
    expected = parent["m"].read(threads=2)
    expected_sums = parent["m"].sum(axis=0, threads=2)

    def child(i):
        inherited = parent["m"].read(threads=2)
        with h5turbo.File(path, "r") as f:
            fresh = f["m"][i::3, :]
            sums = f["m"].sum(axis=0, threads=2)
        ok = (np.array_equal(inherited, expected) and np.array_equal(fresh, expected[i::3, :])
              and np.array_equal(sums, expected_sums))
        return bool(ok)

    with mp.get_context("fork").Pool(3) as pool:
        results = pool.map(child, range(6))
    assert all(results), results
    # and the parent's pools still work after forking
    assert np.array_equal(parent["m"].read(threads=2), expected)
    print("ok", len(results))
""")


def test_children_forked_after_parallel_reads_read_in_parallel(tmp_path):
    path = tmp_path / "fork.h5"
    data = np.random.default_rng(7).integers(0, 1000, (600, 500), dtype="i4")
    with h5py.File(path, "w") as f:
        f.create_dataset("m", data=data, chunks=(64, 50), compression="gzip")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "6"]
