"""Float reductions in a fixed chunk order: what it costs per layout.

Float sums and variances merge each chunk's partial in the file's chunk order (the same
bits on every thread count). That merge is one at a time: cheap when a chunk reduces
many elements into few cells (square chunks, column sums), as costly as the folding
itself when it does not (chunks of one row, summed down the rows). This times both
layouts, sum and var along axis 0, on 1 and 2 threads, warm page cache, and checks the
results are the same bits on both thread counts.

    python benchmarks/reduce_order.py [--rows 6000] [--repeats 5] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

import h5turbo

LAYOUTS = {"square chunks 256 x 1024": (256, 1024), "row chunks 1 x 20000": (1, 20000)}


def make(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((rows, 20000), dtype=np.float32) * 1e3
    with h5py.File(path, "w") as f:
        for name, chunks in LAYOUTS.items():
            f.create_dataset(name, data=data, chunks=chunks)


def timed(ds, op: str, threads: int, repeats: int) -> tuple[float, bytes]:
    result = getattr(ds, op)(axis=0, threads=threads)  # warm-up
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        getattr(ds, op)(axis=0, threads=threads)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), np.asarray(result).tobytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "floats.h5"
        make(path, args.rows)
        lines = [f"# Float reductions in fixed chunk order ({args.rows} x 20000 float32, warm)", "",
                 f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
                 f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                 f"{platform.system()} {platform.release()}",
                 f"- command: `python benchmarks/reduce_order.py --rows {args.rows} --repeats {args.repeats}`",
                 f"- load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}", "",
                 "| layout | op | 1 thread s | 2 threads s | speed-up | same bits |", "|---|---|---:|---:|---:|---|"]
        with h5turbo.File(path) as f:
            for name in LAYOUTS:
                for op in ("sum", "var"):
                    one, bits_one = timed(f[name], op, 1, args.repeats)
                    two, bits_two = timed(f[name], op, 2, args.repeats)
                    lines.append(f"| {name} | {op} | {one:.4f} | {two:.4f} | {one / two:.2f}x | "
                                 f"{'yes' if bits_one == bits_two else 'NO'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
