"""Read-all benchmark on the reference matrix (issue: core reader, "Speed").

Writes (once, cached) a 30000 x 20000 int32 matrix of random integers 1..100, gzip
level 3, chunks 512 x 512; warms the page cache; then, in one run, times reading the
whole dataset with h5py, hidefix (if installed), h5turbo on one thread and on all
cores, and the codec-only limit (every chunk decoded from memory into a pre-faulted
buffer on all cores: h5turbo._native.codec_limit). Each reader gets a
warm-up and the median of --repeats runs; every result is checked against h5py's.

    python benchmarks/read_reference.py [--repeats 5] [--rows 30000 --cols 20000]
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import sys
from pathlib import Path

import numpy as np

from h5turbo.bench.measure import codec_limit, machine, median_time, warm
from h5turbo.bench.report import publish








def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--cols", type=int, default=20000)
    parser.add_argument("--chunk", type=int, default=512)
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
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

    with h5py.File(path, "r") as f:
        reference = f["matrix"][...]

    def check(result):
        if not (result.dtype == reference.dtype and result.shape == reference.shape
                and np.array_equal(result, reference)):
            raise AssertionError("result differs from h5py's")

    cores = h5turbo.default_threads()
    rows = []
    with h5py.File(path, "r") as f:
        rows.append(("h5py", *median_time(lambda: f["matrix"][...], args.repeats, check, before=keep_warm)))
    try:
        import hidefix
        ds = hidefix.Index(str(path)).dataset("matrix")
        rows.append(("hidefix", *median_time(lambda: ds[0:args.rows, 0:args.cols], args.repeats, check, before=keep_warm)))
    except ImportError:
        print("  hidefix not installed: row skipped", file=sys.stderr)
    with h5turbo.File(path) as f:
        d = f["matrix"]
        rows.append(("h5turbo, 1 thread", *median_time(lambda: d.read(threads=1), args.repeats, check, before=keep_warm)))
        rows.append((f"h5turbo, {cores} threads", *median_time(lambda: d.read(), args.repeats, check, before=keep_warm)))
        out = np.empty(d.shape, d.dtype)
        rows.append((f"h5turbo, {cores} threads, into a reused out=",
                     *median_time(lambda: d.read(out=out), args.repeats, check, before=keep_warm)))
    limit = codec_limit(path, cores, args.repeats)

    times = {name: t for name, t, _ in rows}
    turbo = times[f"h5turbo, {cores} threads"]
    lines = [
        f"# Read-all of the reference matrix ({args.rows} x {args.cols} int32, random 1..100, "
        f"gzip {args.level}, chunks {args.chunk} x {args.chunk}), warm page cache",
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- machine: {machine()}",
        f"- command: `python {shlex.join(['benchmarks/read_reference.py'] + (argv if argv is not None else sys.argv[1:]))}`",
        f"- versions: h5turbo {h5turbo.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), numpy {np.__version__}",
        f"- each reader: one warm-up, then the median of {args.repeats} runs; every result checked equal to h5py's",
        "",
        "| reader | median s | runs (s) | h5py / reader |",
        "|---|---:|---|---:|",
    ]
    for name, t, all_times in rows:
        runs = ", ".join(f"{x:.2f}" for x in all_times)
        lines.append(f"| {name} | {t:.2f} | {runs} | {times['h5py'] / t:.1f}x |")
    if limit:
        lines.append(f"| codec only (libdeflate, {cores} threads, from memory into a pre-faulted buffer) | {limit:.2f} | | |")
    lines.append("")
    lines.append(f"- h5turbo ({cores} threads) vs h5py: **{times['h5py'] / turbo:.2f}x**")
    if "hidefix" in times:
        lines.append(f"- h5turbo ({cores} threads) vs hidefix: **{times['hidefix'] / turbo:.2f}x**")
    lines.append(f"- h5turbo (1 thread) vs h5py: **{times['h5py'] / times['h5turbo, 1 thread']:.2f}x**")
    if limit:
        reused = times[f"h5turbo, {cores} threads, into a reused out="]
        lines.append(f"- fraction of the codec-only limit: {limit / turbo:.0%} into a fresh array, "
                     f"{limit / reused:.0%} into a reused one")
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
