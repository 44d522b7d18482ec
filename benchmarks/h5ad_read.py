"""Reading a sparse .h5ad whole: ``h5turbo.read_h5ad`` against ``anndata.read_h5ad``.

Writes (once, in h5turbo's cache folder, not in the repository) an AnnData with a CSR
X of --cells x 40 * --per-cell genes holding --per-cell stored values a row (100000 x
1000: 100 million non-zeros), float32 counts 1..30, gzip (anndata's
``write_h5ad(compression="gzip")``, h5py's default level 4 and chunking); small obs
and var dataframes. Warms the page cache, then times both readers: one checked
warm-up each (X equal element for element, index dtypes too, obs and var equal), then
the median of --repeats runs. ``threads`` of read_h5ad is per array read, and the three
arrays of a sparse matrix are read concurrently: its threads=1 row still overlaps them.

    python benchmarks/h5ad_read.py [--repeats 3] [--cells 100000] [--per-cell 1000] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
import warnings
from pathlib import Path

import numpy as np

from h5turbo.bench.measure import machine, median_time, warm
from h5turbo.bench.report import publish, timing_rows


def random_csr(cells: int, per_cell: int, seed: int = 0):
    """Strictly increasing column indices per row (gaps 1..39), count-like values."""
    import scipy.sparse

    rng = np.random.default_rng(seed)
    gaps = rng.integers(1, 40, size=(cells, per_cell), dtype=np.int32)
    indices = (np.cumsum(gaps, axis=1, dtype=np.int32) - 1).ravel()
    del gaps
    data = rng.integers(1, 31, size=cells * per_cell).astype(np.float32)
    indptr = np.arange(cells + 1, dtype=np.int64) * per_cell
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(cells, 40 * per_cell))


def write_file(path: Path, cells: int, per_cell: int) -> None:
    import anndata
    import pandas as pd

    x = random_csr(cells, per_cell)
    obs = pd.DataFrame({"batch": pd.Categorical(np.arange(cells) % 4),
                        "n_counts": np.asarray(x.sum(axis=1)).ravel()},
                       index=[f"cell{i}" for i in range(cells)])
    var = pd.DataFrame(index=[f"gene{i}" for i in range(x.shape[1])])
    tmp = path.with_suffix(".tmp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        anndata.AnnData(X=x, obs=obs, var=var).write_h5ad(tmp, compression="gzip")
    tmp.rename(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=100000)
    parser.add_argument("--per-cell", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write-only", action="store_true", help="write the file and stop")
    parser.add_argument("--output", type=Path, default=None, help="markdown file to write the table to")
    args = parser.parse_args(argv)

    import anndata
    import h5turbo
    from h5turbo.demo import cache_dir

    path = cache_dir() / f"sparse-{args.cells}x{args.per_cell}-gzip.h5ad"
    if not path.exists():
        write_file(path, args.cells, args.per_cell)
    if args.write_only:
        return 0
    def keep_warm():  # before every timed run: see warm()
        warm(path)


    def read_anndata():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return anndata.read_h5ad(path)

    reference = read_anndata()
    ref_x = reference.X

    def same_x(x) -> bool:
        return (type(x) is type(ref_x) and x.shape == ref_x.shape
                and x.indices.dtype == ref_x.indices.dtype and x.indptr.dtype == ref_x.indptr.dtype
                and np.array_equal(x.indptr, ref_x.indptr) and np.array_equal(x.indices, ref_x.indices)
                and np.array_equal(x.data, ref_x.data))

    def check(adata):
        if not (same_x(adata.X) and adata.obs.equals(reference.obs) and adata.var.equals(reference.var)):
            raise AssertionError("read_h5ad differs from anndata.read_h5ad")

    def check_x(x):
        if not same_x(x):
            raise AssertionError("to_scipy differs from anndata's X")

    def x_only():
        with h5turbo.File(path) as f:
            return f["X"].to_scipy()

    cores = h5turbo.default_threads()
    load_before = os.getloadavg()
    rows = [("anndata.read_h5ad", *median_time(read_anndata, args.repeats, check, before=keep_warm)),
            (f"h5turbo.read_h5ad, {cores} threads",
             *median_time(lambda: h5turbo.read_h5ad(path), args.repeats, check, before=keep_warm)),
            ("h5turbo.read_h5ad, threads=1 per array (data, indices, indptr still overlap)",
             *median_time(lambda: h5turbo.read_h5ad(path, threads=1), args.repeats, check, before=keep_warm)),
            (f"h5turbo, X alone: f['X'].to_scipy(), {cores} threads",
             *median_time(x_only, args.repeats, check_x, before=keep_warm))]
    load_after = os.getloadavg()

    base = rows[0][1]
    argv_text = shlex.join(["benchmarks/h5ad_read.py"] + (argv if argv is not None else sys.argv[1:]))
    size_mb = path.stat().st_size / 1e6
    lines = [
        f"# Reading a sparse h5ad whole ({ref_x.shape[0]} x {ref_x.shape[1]} CSR float32, "
        f"{ref_x.nnz:,} non-zeros, gzip, {size_mb:.0f} MB), warm page cache",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}",
        f"- command: `python {argv_text}`",
        f"- versions: h5turbo {h5turbo.__version__}, anndata {anndata.__version__}, numpy {np.__version__}",
        f"- each: one warm-up checked against anndata's result, then the median of {args.repeats} runs",
        f"- load average (1/5/15 min) before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
        "",
        "| reader | median s | runs (s) | vs anndata |",
        "|---|---:|---|---:|",
    ]
    lines += timing_rows(rows, base)
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
