"""Reading a chunked dataset over HTTP through fsspec (issue 17): h5py.File(fsspec
file) against h5turbo.File(fsspec file), served by a Range-honouring HTTP server on
127.0.0.1 (tests/support/range_server.py) with an optional per-request latency.
Reports per read: HTTP requests, bytes sent, the most requests in flight at once, and
seconds (a file object opened afresh per read; a checked warm-up, then interleaved
rounds, medians). Readers: h5py and h5turbo with fsspec's default read-ahead cache
and without a cache (h5turbo then reads by ranges with fs.cat_file, concurrently), and
h5turbo on the uncached file behind a plain read/seek wrapper (one request at a time).

    PYTHONPATH=$PWD/python python benchmarks/fileobj_http.py [--rows 2000 --cols 2000 --rounds 5 --latency 0.02]
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


class PlainObject:
    """read + seek of an fsspec file, nothing else: read one request at a time."""

    def __init__(self, f):
        self._f = f

    def seek(self, *args):
        return self._f.seek(*args)

    def read(self, n=-1):
        return self._f.read(n)


def readers_for(url: str, sel) -> dict:
    def open_http(**options):
        return fsspec.filesystem("http").open(url, "rb", **options)

    def h5py_read(**options):
        with open_http(**options) as obj, h5py.File(obj, "r") as f:
            return f["x"][sel]

    def h5turbo_read(plain: bool = False, **options):
        with open_http(**options) as obj, h5turbo.File(PlainObject(obj) if plain else obj) as f:
            return f["x"][sel]

    return {
        "h5py, fsspec default cache (readahead, 5 MiB blocks)": lambda: h5py_read(),
        "h5turbo, fsspec default cache (readahead, 5 MiB blocks)": lambda: h5turbo_read(),
        "h5py, no cache (cache_type='none')": lambda: h5py_read(cache_type="none"),
        "h5turbo, no cache (ranges via fs.cat_file, concurrent)": lambda: h5turbo_read(cache_type="none"),
        "h5turbo, no cache, plain read/seek wrapper (one request at a time)":
            lambda: h5turbo_read(True, cache_type="none"),
    }


def counted(server: RangeServer, read, path: str) -> tuple[int, int, int]:
    """(requests, bytes sent, most in flight) of one read."""
    server.reset_counts()
    read()
    return server.requests[path], server.bytes[path], server.max_in_flight


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--cols", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each GET waits (network latency)")
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
    one_chunk = np.s_[: args.chunk, args.chunk: 2 * args.chunk]
    with RangeServer(args.data, delay=args.latency) as server:
        url = server.url(name)
        readers = readers_for(url, ())
        costs = {label: counted(server, read, f"/{name}") for label, read in readers.items()}
        partial = {}
        for label, read in readers_for(url, one_chunk).items():
            np.testing.assert_array_equal(read(), want[one_chunk])
            partial[label] = counted(server, read, f"/{name}")
        started, load_before = time.time(), os.getloadavg()
        times = interleaved_times(readers, args.rounds, lambda got: np.testing.assert_array_equal(got, want))
        load_after = os.getloadavg()
    lines = [
        f"# Read-all of a chunked dataset over HTTP through fsspec, latency {args.latency * 1000:.0f} ms per request "
        f"({args.rows} x {args.cols} float32, gzip + shuffle, chunks {args.chunk} x {args.chunk}: {n_chunks} chunks, "
        f"file {size / 1e6:.1f} MB)",
        "",
        f"- date: {datetime.datetime.fromtimestamp(started, datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine()}; h5turbo threads: {h5turbo.default_threads()}",
        f"- load average (1, 5, 15 min) before / after: {', '.join(f'{x:.2f}' for x in load_before)}"
        f" / {', '.join(f'{x:.2f}' for x in load_after)}",
        f"- command: `PYTHONPATH=$PWD/python python benchmarks/{Path(__file__).name} {shlex.join(sys.argv[1:])}`",
        f"- versions: h5turbo {h5turbo.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), "
        f"fsspec {fsspec.__version__}, numpy {np.__version__}",
        "- server: tests/support/range_server.py on 127.0.0.1 (threaded, HTTP/1.1 keep-alive); requests "
        "include HEAD; bytes are response bodies; in flight: the most GETs served at once",
        f"- a file object opened afresh per read; a checked warm-up, then {args.rounds} interleaved rounds, medians",
        "",
        "| reader | requests | MB sent | sent / file | in flight | median s | runs (s) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, runs in times.items():
        requests, sent, most = costs[label]
        lines.append(f"| {label} | {requests} | {sent / 1e6:.1f} | {sent / size:.2f} | {most} | "
                     f"{statistics.median(runs):.3f} | {', '.join(f'{t:.3f}' for t in runs)} |")
    lines += ["", f"One chunk (`x[:{args.chunk}, {args.chunk}:{2 * args.chunk}]`) from a freshly opened object:", "",
              "| reader | requests | MB sent |", "|---|---:|---:|"]
    lines += [f"| {label} | {requests} | {sent / 1e6:.2f} |" for label, (requests, sent, _) in partial.items()]
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
