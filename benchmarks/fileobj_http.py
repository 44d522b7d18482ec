"""Reading a chunked dataset over HTTP through fsspec (issue 17): h5py.File(fsspec
file) against h5turbo.File(fsspec file) on the same kind of object, served by a
Range-honouring HTTP server on 127.0.0.1 (tests/support/range_server.py), for fsspec's
default read-ahead cache and without a cache (every read a ranged request). Reports
per read-all: HTTP requests, bytes sent, and seconds (a file object opened afresh per
read; a checked warm-up, then interleaved rounds, medians).

    PYTHONPATH=$PWD/python:$PWD/tests python benchmarks/fileobj_http.py [--rows 2000 --cols 2000 --rounds 5]
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import fsspec
import h5py
import numpy as np

import h5turbo
from h5turbo.bench.measure import interleaved_times, machine
from h5turbo.bench.report import publish

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.range_server import RangeServer  # noqa: E402

CACHES = {"fsspec default (readahead, 5 MiB blocks)": {},
          "no cache (cache_type='none')": {"cache_type": "none"}}


def read_h5py(url: str, options: dict, sel=()) -> np.ndarray:
    with fsspec.filesystem("http").open(url, "rb", **options) as obj, h5py.File(obj, "r") as f:
        return f["x"][sel]


def read_h5turbo(url: str, options: dict, sel=()) -> np.ndarray:
    with fsspec.filesystem("http").open(url, "rb", **options) as obj, h5turbo.File(obj) as f:
        return f["x"][sel]


def counted(server: RangeServer, read, path: str) -> tuple[int, int]:
    """(requests, bytes sent) of one read."""
    server.reset_counts()
    read()
    return server.requests[path], server.bytes[path]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--cols", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path("/tmp/h5turbo-bench"))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    name = f"http_{args.rows}x{args.cols}_{args.chunk}.h5"
    path = args.data / name
    if not path.exists():
        values = np.random.default_rng(1).normal(100, 10, (args.rows, args.cols)).astype("<f4")
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=values, chunks=(args.chunk, args.chunk), compression="gzip", shuffle=True)
    with h5py.File(path, "r") as h:
        want = h["x"][()]
        n_chunks = h["x"].id.get_num_chunks()
    size = path.stat().st_size
    with RangeServer(args.data) as server:
        url = server.url(name)
        readers = {}
        for cache, options in CACHES.items():
            readers[f"h5py, {cache}"] = lambda o=options: read_h5py(url, o)
            readers[f"h5turbo, {cache}"] = lambda o=options: read_h5turbo(url, o)
        costs = {label: counted(server, read, f"/{name}") for label, read in readers.items()}
        one_chunk = np.s_[: args.chunk, args.chunk: 2 * args.chunk]
        partial = {}
        for cache, options in CACHES.items():
            for reader, read in (("h5py", read_h5py), ("h5turbo", read_h5turbo)):
                np.testing.assert_array_equal(read(url, options, one_chunk), want[one_chunk])
                partial[f"{reader}, {cache}"] = counted(server, lambda: read(url, options, one_chunk), f"/{name}")
        started, load_before = time.time(), os.getloadavg()
        times = interleaved_times(readers, args.rounds, lambda got: np.testing.assert_array_equal(got, want))
        load_after = os.getloadavg()
    lines = [
        f"# Read-all of a chunked dataset over HTTP through fsspec ({args.rows} x {args.cols} float32, gzip + "
        f"shuffle, chunks {args.chunk} x {args.chunk}: {n_chunks} chunks, file {size / 1e6:.1f} MB)",
        "",
        f"- date: {datetime.datetime.fromtimestamp(started, datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine()}",
        f"- load average (1, 5, 15 min) before / after: {', '.join(f'{x:.2f}' for x in load_before)}"
        f" / {', '.join(f'{x:.2f}' for x in load_after)}",
        f"- command: `PYTHONPATH=$PWD/python:$PWD/tests python benchmarks/{Path(__file__).name} "
        f"{shlex.join(sys.argv[1:])}`",
        f"- versions: h5turbo {h5turbo.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), "
        f"fsspec {fsspec.__version__}, numpy {np.__version__}",
        "- server: tests/support/range_server.py on 127.0.0.1 (threaded, HTTP/1.1 keep-alive); requests "
        "include HEAD; bytes are response bodies",
        f"- a file object opened afresh per read; a checked warm-up, then {args.rounds} interleaved rounds, medians",
        "",
        "| reader | requests | MB sent | MB sent / file size | median s | runs (s) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for label, runs in times.items():
        requests, sent = costs[label]
        lines.append(f"| {label} | {requests} | {sent / 1e6:.1f} | {sent / size:.2f} | "
                     f"{statistics.median(runs):.3f} | {', '.join(f'{t:.3f}' for t in runs)} |")
    lines += ["", f"One chunk (`x[:{args.chunk}, {args.chunk}:{2 * args.chunk}]`) from a freshly opened object:", "",
              "| reader | requests | MB sent |", "|---|---:|---:|"]
    lines += [f"| {label} | {requests} | {sent / 1e6:.2f} |" for label, (requests, sent) in partial.items()]
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
