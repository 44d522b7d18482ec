"""Loops of small reads, as h5py code writes them: a row, a column or an element at a
time from datasets of 1000 x 1000 float32 (gzip in chunks of 100 x 100, each row
meeting 10 chunks; the same unfiltered; contiguous), elements or rows at random
positions of 64 MB of contiguous float64 (more than either reader's cache holds), rows
and columns of gzip data in chunks of 2-6 MB, a row across 40 datasets (a table stored
a dataset a column; h5py opens each dataset again per call, and with it a fresh chunk
cache), elements of a virtual dataset of 8000 mappings, and a dataset of tiny chunks
read whole.
Both readers keep recently decoded chunks (h5py's chunk cache and sieve buffer,
h5turbo's per-file cache), so these loops time the per-call work around a cache; the
random loops time what keeping costs when little is read again.

Each reader runs in a process of its own, the readers interleaved (their order
alternating by round), every loop once per round; the median microseconds per call
over the rounds are reported. ``--before PATH`` adds an h5turbo build installed under
PATH (``pip install --target PATH``) as a third reader, to compare a change.

    python benchmarks/small_reads.py [--rounds 7] [--before PATH] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

# name: (dataset, call, timed calls); `p` holds random positions (seed 0) below len(d)
LOOPS = {
    "gzip: rows 0..999, ds[i]": ("gzip", "lambda d, i, p: d[i]", 1000),
    "gzip: one row again, ds[5]": ("gzip", "lambda d, i, p: d[5]", 1000),
    "gzip: columns 0..999, ds[:, i]": ("gzip", "lambda d, i, p: d[:, i]", 1000),
    "gzip: elements, ds[i, 7 * i % 1000]": ("gzip", "lambda d, i, p: d[i, 7 * i % 1000]", 1000),
    "unfiltered chunks: rows 0..999, ds[i]": ("chunked", "lambda d, i, p: d[i]", 1000),
    "unfiltered chunks: columns 0..999, ds[:, i]": ("chunked", "lambda d, i, p: d[:, i]", 1000),
    "unfiltered chunks: elements, ds[i, 7 * i % 1000]": ("chunked", "lambda d, i, p: d[i, 7 * i % 1000]", 1000),
    "contiguous: rows 0..999, ds[i]": ("contiguous", "lambda d, i, p: d[i]", 1000),
    "contiguous: elements in order, ds[i // 1000, i % 1000]": ("contiguous", "lambda d, i, p: d[i // 1000, i % 1000]", 20000),
    "contiguous 1-d: elements in order, ds[i]": ("flat", "lambda d, i, p: d[i]", 20000),
    "contiguous 64 MB: random elements, ds[p[i]]": ("big", "lambda d, i, p: d[p[i]]", 20000),
    "contiguous 64 MB: random rows of 4 KB, ds[p[i]]": ("big_rows", "lambda d, i, p: d[p[i]]", 20000),
    # chunks larger than a small cache: libhdf5 2.0 keeps 8 MiB of them per dataset
    "gzip, 6 MB chunks: rows 0..99, ds[i]": ("gzip_6mb", "lambda d, i, p: d[i]", 100),
    "gzip, 4 x 2 MB chunks: columns, ds[:, 20 * i]": ("gzip_8mb", "lambda d, i, p: d[:, 20 * i % 1000]", 50),
    "40 gzip datasets of 1 MB chunks: row i of each": ("columns", "lambda d, i, p: [d[f'c{k}'][i] for k in range(40)]", 50),
    "virtual dataset of 8000 mappings: elements, ds[i, 7]": ("vds", "lambda d, i, p: d[i % 8000, 7]", 500),
    "3.2 MB in 25,000 chunks of 1 x 16: whole, ds[()]": ("tiny_chunks", "lambda d, i, p: d[()]", 5),
}

# One reader's timing of every loop, in a fresh process: prints {loop: us per call}.
CHILD = """
import json, sys, time
import numpy as np
import {module} as reader
loops = json.loads(sys.argv[2])
out = {{}}
with reader.File(sys.argv[1], "r") as f:
    for name, (dataset, code, calls) in loops.items():
        d = f[dataset]
        call = eval(code)
        p = [int(x) for x in np.random.default_rng(0).integers(0, len(d), calls)]
        for i in range(50):  # warm-up: the cache and the pool as a loop finds them
            call(d, i, p)
        start = time.perf_counter()
        for i in range(calls):
            call(d, i, p)
        out[name] = (time.perf_counter() - start) / calls * 1e6
print(json.dumps(out))
"""


def make(path: Path) -> None:
    data = np.arange(1_000_000, dtype="f4").reshape(1000, 1000)
    big = np.arange(8 << 20, dtype="f8")
    with h5py.File(path, "w") as f:
        f.create_dataset("gzip", data=data, chunks=(100, 100), compression="gzip")
        f.create_dataset("chunked", data=data, chunks=(100, 100))
        f["contiguous"] = data
        f["flat"] = data.ravel()
        f["big"] = big
        f["big_rows"] = big.reshape(-1, 512)
        noise = np.random.default_rng(0).random((3000, 1000)).astype("f4")
        f.create_dataset("gzip_6mb", data=noise, chunks=(1500, 1000), compression="gzip", compression_opts=1)
        f.create_dataset("gzip_8mb", data=noise[:2000], chunks=(500, 1000), compression="gzip", compression_opts=1)
        table = np.random.default_rng(1).random((40, 1 << 18))
        for k in range(40):  # a table stored a dataset per column
            f.create_dataset(f"columns/c{k}", data=table[k], chunks=(1 << 17,), compression="gzip", compression_opts=1)
        f.create_dataset("tiny_chunks", data=np.ones((400, 1000)), chunks=(1, 16))
        layout = h5py.VirtualLayout(shape=(8000, 50), dtype="i4")
        for i in range(8000):
            f[f"vds_sources/s{i}"] = np.full(50, i, dtype="i4")
            layout[i] = h5py.VirtualSource(".", f"vds_sources/s{i}", shape=(50,))
        f.create_virtual_dataset("vds", layout, fillvalue=-1)


def time_reader(module: str, path: Path, extra_path: str | None) -> dict:
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
    code = CHILD.format(module=module)
    done = subprocess.run([sys.executable, "-c", code, str(path), json.dumps(LOOPS)],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", help="an h5turbo build installed with pip install --target PATH")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    readers = {"h5py": ("h5py", None), "h5turbo": ("h5turbo", None)}
    if args.before:
        readers["h5turbo (before)"] = ("h5turbo", args.before)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "small.h5"
        make(path)
        runs: dict = {reader: {loop: [] for loop in LOOPS} for reader in readers}
        for round_ in range(args.rounds):
            order = list(readers.items())
            for reader, (module, extra) in order[::-1] if round_ % 2 else order:
                for loop, us in time_reader(module, path, extra).items():
                    runs[reader][loop].append(us)
    lines = [
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        f"- command: `python benchmarks/small_reads.py --rounds {args.rounds}" + (" --before PATH" if args.before else "") + "`",
        f"- {args.rounds} rounds, readers interleaved, each in a fresh process; 50 warm-up calls, then the loop's count timed",
        "",
        "| loop | " + " | ".join(f"{r} (us per call)" for r in readers) + " |",
        "|---|" + "---:|" * len(readers),
    ]
    for loop in LOOPS:
        cells = [f"{statistics.median(runs[r][loop]):.1f}" for r in readers]
        lines.append(f"| {loop} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
