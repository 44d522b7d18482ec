"""Reading a chunked dataset from a file-like object at the native level (issue 17):
h5py's File(BytesIO) against `_native.File.from_fileobj` on a BytesIO (readinto), on
an object with only read + seek, and the native path on the file, each on a file
opened afresh per read (no decoded-chunk cache between reads); interleaved rounds
after a checked warm-up, medians. Shows whether decoding stays parallel when every
read of the file goes through Python (1 thread against all threads).

    python benchmarks/fileobj_native.py [--rows 4000 --cols 2000 --rounds 5]

To import h5turbo from a checkout's built extension: PYTHONPATH=$PWD/python.
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import shlex
import sys
import time
from pathlib import Path

import h5py
import numpy as np

from h5turbo.bench.measure import interleaved_times, machine  # noqa: E402
from h5turbo.bench.report import publish  # noqa: E402

from h5turbo import _native, default_threads  # noqa: E402


class ReadSeekOnly:
    """An object with only read(n) and seek (what a minimal wrapper offers)."""

    def __init__(self, data: bytes):
        self._buffer = io.BytesIO(data)

    def seek(self, *args):
        return self._buffer.seek(*args)

    def read(self, n=-1):
        return self._buffer.read(n)


def read_native(f, threads: int) -> np.ndarray:
    obj = f.get("/x")
    out = np.empty(obj.shape, dtype=obj.dtype)
    obj.read([(0, n, 1) for n in obj.shape], out, threads)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--cols", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path("/tmp/h5turbo-bench"))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    path = args.data / f"fileobj_{args.rows}x{args.cols}.h5"
    if not path.exists():
        values = np.random.default_rng(1).normal(100, 10, (args.rows, args.cols)).astype("<f4")
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=values, chunks=(250, 250), compression="gzip", shuffle=True)
    data = path.read_bytes()
    with h5py.File(path, "r") as h:
        want = h["x"][()]
    cores = default_threads()

    def h5py_bytesio():
        with h5py.File(io.BytesIO(data), "r") as f:
            return f["x"][()]

    readers = {
        "h5py, File(BytesIO)": h5py_bytesio,
        "h5turbo, from_fileobj(BytesIO), 1 thread": lambda: read_native(_native.File.from_fileobj(io.BytesIO(data), "b"), 1),
        f"h5turbo, from_fileobj(BytesIO), {cores} threads":
            lambda: read_native(_native.File.from_fileobj(io.BytesIO(data), "b"), cores),
        f"h5turbo, from_fileobj(read + seek only), {cores} threads":
            lambda: read_native(_native.File.from_fileobj(ReadSeekOnly(data), "s"), cores),
        f"h5turbo, path, {cores} threads": lambda: read_native(_native.File(str(path)), cores),
    }
    started, load_before = time.time(), os.getloadavg()
    times = interleaved_times(readers, args.rounds, lambda got: np.testing.assert_array_equal(got, want))
    load_after = os.getloadavg()
    base = sorted(times["h5py, File(BytesIO)"])[args.rounds // 2]
    lines = [
        f"# Read-all of a chunked dataset through a file-like object ({args.rows} x {args.cols} float32, gzip + shuffle, "
        f"chunks 250 x 250, {len(data) / 1e6:.1f} MB stored)",
        "",
        f"- date: {datetime.datetime.fromtimestamp(started, datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine()}",
        f"- load average (1, 5, 15 min) before / after: {', '.join(f'{x:.2f}' for x in load_before)}"
        f" / {', '.join(f'{x:.2f}' for x in load_after)}",
        f"- command: `python benchmarks/{Path(__file__).name} {shlex.join(sys.argv[1:])}`",
        f"- versions: h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), numpy {np.__version__}",
        f"- a file opened afresh per read; a checked warm-up, then {args.rounds} interleaved rounds, medians",
        "",
        "| reader | median s | runs (s) | h5py / reader |",
        "|---|---:|---|---:|",
    ]
    for name, runs in times.items():
        median = sorted(runs)[args.rounds // 2]
        lines.append(f"| {name} | {median:.3f} | {', '.join(f'{t:.3f}' for t in runs)} | {base / median:.2f}x |")
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
