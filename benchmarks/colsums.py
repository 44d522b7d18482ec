"""Column sums of the reference matrix (issue 5, "Speed": reductions).

Writes (once, cached next to h5turbo.demo's files) a 30000 x 20000 int32 matrix of
random integers 1..100, gzip level 3, chunks 100 x 100; warms the page cache; then
times column sums three ways:

- h5turbo: ``ds.sum(axis=0)`` (chunk-parallel, never materialises the matrix);
- h5py: a loop over chunk-aligned blocks of 1000 columns, ``ds[:, a:b].sum(axis=0)``;
- two h5py worker processes (fork), each summing every other block (the
  fork-per-core approach), results gathered through a pipe.

Each: one warm-up, then the median of --repeats runs; all results checked equal.

    python benchmarks/colsums.py [--repeats 3] [--rows 30000 --cols 20000] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import shlex
import sys
from pathlib import Path

import numpy as np

from h5turbo.bench.measure import machine, median_time, warm
from h5turbo.bench.report import publish, timing_rows

BLOCK = 1000


def h5py_blocks(path: str, blocks: list[tuple[int, int]]) -> list[np.ndarray]:
    import h5py

    with h5py.File(path, "r") as f:
        ds = f["matrix"]
        return [ds[:, a:b].sum(axis=0) for a, b in blocks]


def column_blocks(cols: int) -> list[tuple[int, int]]:
    return [(a, min(cols, a + BLOCK)) for a in range(0, cols, BLOCK)]


def h5py_loop(path: str, cols: int) -> np.ndarray:
    return np.concatenate(h5py_blocks(path, column_blocks(cols)))


def _worker(path: str, blocks: list[tuple[int, int]], conn) -> None:
    conn.send(h5py_blocks(path, blocks))
    conn.close()


def h5py_two_processes(path: str, cols: int) -> np.ndarray:
    blocks = column_blocks(cols)
    ctx = multiprocessing.get_context("fork")
    shares = [blocks[0::2], blocks[1::2]]
    pipes, procs = [], []
    for share in shares:
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, args=(path, share, child))
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    parts = [p.recv() for p in pipes]
    for proc in procs:
        proc.join()
    ordered = [None] * len(blocks)
    ordered[0::2], ordered[1::2] = parts[0], parts[1]
    return np.concatenate(ordered)




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--cols", type=int, default=20000)
    parser.add_argument("--chunk", type=int, default=100)
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=None, help="markdown file to write the table to")
    args = parser.parse_args(argv)

    import h5py
    import h5turbo
    from h5turbo.demo import cache_dir, write_matrix

    path = cache_dir() / f"demo-{args.rows}x{args.cols}-c{args.chunk}-gzip{args.level}.h5"
    if not path.exists():
        write_matrix(path, args.rows, args.cols, args.chunk, args.level)
    def keep_warm():  # before every timed run: see warm()
        warm(path)


    reference = h5py_loop(str(path), args.cols)

    def check(result):
        if not (result.shape == reference.shape and np.array_equal(result, reference)):
            raise AssertionError("column sums differ from the h5py loop's")

    cores = h5turbo.default_threads()
    load_before = os.getloadavg()[0]
    rows = [("h5py, loop over 1000-column blocks",
             *median_time(lambda: h5py_loop(str(path), args.cols), args.repeats, check, before=keep_warm)),
            ("h5py, 2 worker processes splitting the blocks",
             *median_time(lambda: h5py_two_processes(str(path), args.cols), args.repeats, check, before=keep_warm))]
    with h5turbo.File(path) as f:
        ds = f["matrix"]
        rows.append((f"h5turbo ds.sum(axis=0), {cores} threads",
                     *median_time(lambda: ds.sum(axis=0), args.repeats, check, before=keep_warm)))
        rows.append(("h5turbo ds.sum(axis=0), 1 thread",
                     *median_time(lambda: ds.sum(axis=0, threads=1), args.repeats, check, before=keep_warm)))

    load_after = os.getloadavg()[0]
    base = rows[0][1]
    argv_text = shlex.join(["benchmarks/colsums.py"] + (argv if argv is not None else sys.argv[1:]))
    lines = [
        f"# Column sums of the reference matrix ({args.rows} x {args.cols} int32, random 1..100, "
        f"gzip {args.level}, chunks {args.chunk} x {args.chunk}), warm page cache",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}",
        f"- command: `python {argv_text}`",
        f"- versions: h5turbo {h5turbo.__version__}, h5py {h5py.__version__} "
        f"(HDF5 {h5py.version.hdf5_version}), numpy {np.__version__}",
        f"- each: one warm-up, then the median of {args.repeats} runs; every result checked equal",
        f"- 1-minute load average before / after: {load_before:.1f} / {load_after:.1f} "
        "(other work on the machine shares its cores)",
        "",
        "| method | median s | runs (s) | vs h5py loop |",
        "|---|---:|---|---:|",
    ]
    lines += timing_rows(rows, base)
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
