"""Variable-length data read whole: h5py against h5turbo (Python) and, with --r, rhdf5
against h5turbo's R package. Warm page cache.

Writes (once, cached) one file with three datasets, the shapes single-cell and
annotation files hold:
- names: 1,000,000 variable-length UTF-8 strings (gene_0 ... of 6-14 bytes), gzip,
  chunks of 65536;
- ragged: 200,000 variable-length float32 sequences of 0-15 values;
- table: a 1,000,000-row compound of 3 variable-length strings and 7 numbers, gzip,
  chunks of 65536 (a table of names and numbers, as AnnData 0.7 and pandas wrote them).

Each reader gets a checked warm-up (every result equal to h5py's), then --rounds rounds
that time every reader once in turn; the table gives each reader's median and the
median over rounds of h5py's time over the reader's.

    python benchmarks/vlen.py [--rounds 5] [--r] [--output benchmarks/results/vlen.md]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from h5turbo.bench.measure import interleaved_times, paired_ratio, warm
from h5turbo.bench.report import publish, run_header

ROWS = 1_000_000
RAGGED = 200_000
NUMBERS = [("a", "<f8"), ("b", "<i4"), ("c", "<f4"), ("d", "<i8"), ("e", "<f8"), ("f", "<u2"), ("g", "<f8")]


def write_file(path: Path) -> None:
    import h5py

    rng = np.random.default_rng(1)
    text = h5py.string_dtype()
    table = np.zeros(ROWS, dtype=[("gene", text), *NUMBERS[:3], ("note", text), *NUMBERS[3:], ("tag", text)])
    table["gene"] = np.array([f"gene_{i}" for i in range(ROWS)], dtype=object)
    table["note"] = np.array([f"n{i % 1000}" for i in range(ROWS)], dtype=object)
    table["tag"] = np.array(["t"] * ROWS, dtype=object)
    for name, _ in NUMBERS:
        table[name] = rng.random(ROWS) * 1000
    tmp = path.with_suffix(".tmp")
    with h5py.File(tmp, "w") as f:
        f.create_dataset("names", data=table["gene"], dtype=text, chunks=(65536,), compression="gzip")
        ragged = f.create_dataset("ragged", shape=(RAGGED,), dtype=h5py.vlen_dtype("<f4"))
        rows = np.empty(RAGGED, dtype=object)
        for i in range(RAGGED):
            rows[i] = np.arange(i % 16, dtype="<f4") * 0.5
        ragged[...] = rows
        f.create_dataset("table", data=table, chunks=(65536,), compression="gzip")
    tmp.rename(path)


def same(expected, got) -> bool:
    """Equal as h5py gives them: values, dtypes and, for object elements, each one."""
    if expected.dtype != got.dtype or expected.shape != got.shape:
        return False
    if expected.dtype.names:
        return all(same(expected[name], got[name]) for name in expected.dtype.names)
    if expected.dtype.kind == "O":
        return all(type(e) is type(g) and (np.array_equal(e, g) if isinstance(e, np.ndarray) else e == g)
                   for e, g in zip(expected, got))
    return np.array_equal(expected, got)


R_SCRIPT = r"""
args <- commandArgs(TRUE)
suppressMessages(library(h5turbo))
f <- args[1]; rounds <- as.integer(args[2])
stopifnot(identical(h5t_read(f, "table"), suppressWarnings(rhdf5::h5read(f, "table"))))
t <- list(rhdf5 = c(), h5turbo = c())
for (i in seq_len(rounds)) {
    t$rhdf5 <- c(t$rhdf5, system.time(suppressWarnings(rhdf5::h5read(f, "table")))[["elapsed"]])
    t$h5turbo <- c(t$h5turbo, system.time(h5t_read(f, "table"))[["elapsed"]])
}
cat("rhdf5", t$rhdf5, "\n"); cat("h5turbo", t$h5turbo, "\n")
"""


def r_times(path: Path, rounds: int) -> dict | None:
    """rhdf5::h5read against h5t_read of the table, interleaved (None without R)."""
    if shutil.which("Rscript") is None:
        return None
    done = subprocess.run(["Rscript", "-e", R_SCRIPT, str(path), str(rounds)], capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return None
    return {line.split()[0]: [float(x) for x in line.split()[1:]] for line in done.stdout.splitlines() if line.strip()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--r", action="store_true", help="also time the table from R (rhdf5 against h5turbo)")
    parser.add_argument("--output", type=Path, default=None, help="markdown file to write the report to")
    args = parser.parse_args(argv)

    import h5py
    import h5turbo
    from h5turbo.demo import cache_dir

    path = cache_dir() / "vlen-bench-v1.h5"
    if not path.exists():
        write_file(path)
    started, load_before = time.time(), os.getloadavg()
    cores = h5turbo.default_threads()
    sections = []
    with h5py.File(path, "r") as ref, h5turbo.File(path) as ours:
        for name in ["names", "ragged", "table"]:
            expected = ref[name][...]

            def check(result, expected=expected):
                if not same(expected, result):
                    raise AssertionError(f"{name}: result differs from h5py's")

            reads = {
                "h5py": lambda name=name: ref[name][...],
                "h5turbo, 1 thread": lambda name=name: ours[name].read(threads=1),
                f"h5turbo, {cores} threads": lambda name=name: ours[name].read(),
            }
            times = interleaved_times(reads, args.rounds, check, before=lambda: warm(path))
            sections.append((name, times))
            del expected
    r = r_times(path, args.rounds) if args.r else None
    lines = run_header("Variable-length data read whole (warm page cache)", started, load_before, os.getloadavg(),
                       __file__, argv if argv is not None else sys.argv[1:])
    lines += [
        f"- versions: h5turbo {h5turbo.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), "
        f"numpy {np.__version__}",
        f"- data: {path.name} ({os.path.getsize(path) / 1e6:.0f} MB): names = {ROWS:,} vlen strings; "
        f"ragged = {RAGGED:,} vlen float32 sequences; table = {ROWS:,} rows of 3 vlen strings + 7 numbers",
        f"- each reader: a warm-up checked equal to h5py's, then {args.rounds} interleaved rounds",
        "",
        "| dataset | reader | median s | runs (s) | h5py / reader (paired) |",
        "|---|---|---:|---|---:|",
    ]
    for name, times in sections:
        for reader, runs in times.items():
            ratio = paired_ratio(times["h5py"], runs)
            lines.append(f"| {name} | {reader} | {np.median(runs):.3f} | {', '.join(f'{x:.3f}' for x in runs)} | {ratio:.2f}x |")
    if r:
        lines += ["", "From R, the table (`h5t_read` against `rhdf5::h5read`, interleaved; results checked identical):", "",
                  "| reader | median s | runs (s) | rhdf5 / reader (paired) |", "|---|---:|---|---:|"]
        for reader, runs in r.items():
            lines.append(f"| {reader} | {np.median(runs):.3f} | {', '.join(f'{x:.3f}' for x in runs)} | "
                         f"{paired_ratio(r['rhdf5'], runs):.2f}x |")
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
