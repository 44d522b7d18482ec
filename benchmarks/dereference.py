"""Following object references in a file with many objects (issue 17).

Writes (once, cached) a MATLAB v7.3-style file with h5py: a `#refs#` group of
--objects small datasets and a cell array `/cell` of --refs object references to
them (MATLAB cell and struct arrays are stored exactly this way). Then, interleaved
round by round after a checked warm-up, times with h5py and h5turbo, each on a file
opened afresh (h5turbo works out the objects' paths once per open file, on the first
dereference, so that cost is inside every timing):

- values: `[f[ref][()] for ref in f["cell"][()]]`, every value checked equal;
- names: `[f[ref].name for ref in ...]` for the first --name-refs references (h5py
  walks the file for every name: 0.1 s each here), checked equal to h5py's.

    python benchmarks/dereference.py [--objects 15000 --refs 3699 --name-refs 50 --rounds 5]

To import h5turbo from a checkout's built extension: PYTHONPATH=$PWD/python.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from h5turbo.bench.measure import interleaved_times, paired_ratio  # noqa: E402
from h5turbo.bench.report import publish, run_header  # noqa: E402

import h5turbo  # noqa: E402


def write_cell_file(path: Path, objects: int, refs: int) -> None:
    """`#refs#/<hex>`: `objects` small datasets (as MATLAB names them); /cell holds
    `refs` references spread over them."""
    tmp = path.with_suffix(".tmp")
    with h5py.File(tmp, "w") as f:
        group = f.create_group("#refs#")
        targets = []
        for i in range(objects):
            targets.append(group.create_dataset(format(i, "x"), data=np.arange(i % 7, dtype="f8")).ref)
        f.create_group("data").create_dataset("x", data=np.zeros(10))
        step = max(1, objects // refs)
        cell = f.create_dataset("cell", (refs,), dtype=h5py.ref_dtype)
        cell[...] = np.array([targets[(i * step) % objects] for i in range(refs)], dtype=object)
    os.replace(tmp, path)


def read_values(module, path: Path) -> list:
    with module.File(path, "r") as f:
        return [f[ref][()] for ref in f["cell"][()]]


def read_names(module, path: Path, count: int) -> list:
    with module.File(path, "r") as f:
        return [f[ref].name for ref in f["cell"][:count]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=15000)
    parser.add_argument("--refs", type=int, default=3699)
    parser.add_argument("--name-refs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path("/tmp/h5turbo-bench"))
    parser.add_argument("--output", type=Path, default=None, help="markdown file to write the report to")
    args = parser.parse_args(argv)

    args.data.mkdir(parents=True, exist_ok=True)
    path = args.data / f"cell_{args.objects}_{args.refs}.h5"
    if not path.exists():
        write_cell_file(path, args.objects, args.refs)

    expected_values = read_values(h5py, path)
    expected_names = read_names(h5py, path, args.name_refs)

    def check_values(values):
        assert len(values) == len(expected_values)
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(values, expected_values))

    def check_names(names):
        assert names == expected_names, "names differ from h5py's"

    started = time.time()
    load_before = os.getloadavg()
    values = interleaved_times({"h5py": lambda: read_values(h5py, path),
                                "h5turbo": lambda: read_values(h5turbo, path)}, args.rounds, check_values)
    names = interleaved_times({"h5py": lambda: read_names(h5py, path, args.name_refs),
                               "h5turbo": lambda: read_names(h5turbo, path, args.name_refs)}, args.rounds, check_names)
    load_after = os.getloadavg()

    def row(what, times, count):
        med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
        per_ref = {k: 1e3 * m / count for k, m in med.items()}
        return (f"| {what} | {med['h5py']:.3f} | {med['h5turbo']:.3f} | {per_ref['h5py']:.3f} | "
                f"{per_ref['h5turbo']:.3f} | {paired_ratio(times['h5py'], times['h5turbo']):.2f}x |")

    title = f"Following {args.refs} object references in a file of {args.objects} objects (MATLAB-style cell array)"
    lines = run_header(title, started, load_before, load_after, __file__, sys.argv[1:]) + [
        f"- versions: h5turbo {getattr(h5turbo, '__version__', '?')}, h5py {h5py.__version__} "
        f"(HDF5 {h5py.version.hdf5_version}), numpy {np.__version__}",
        f"- each file opened afresh per read (h5turbo's path map is built inside every timing); "
        f"a checked warm-up, then {args.rounds} interleaved rounds, medians; values and names checked equal to h5py's",
        "",
        "| read | h5py s | h5turbo s | h5py ms/ref | h5turbo ms/ref | h5py / h5turbo (paired) |",
        "|---|---:|---:|---:|---:|---:|",
        row(f"values `f[ref][()]`, {args.refs} references", values, args.refs),
        row(f"names `f[ref].name`, first {args.name_refs} references", names, args.name_refs),
    ]
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
