"""Repack of a file of many small datasets: time per dataset against h5py copying the
same groups (which re-encodes nothing), median of rounds, interleaved.

    python benchmarks/repack_many.py [--datasets 500] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

from h5turbo.writing.repack import repack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "many_small.h5"
        with h5py.File(src, "w") as f:
            for i in range(args.datasets):
                f.create_dataset(f"g{i % 10}/d{i}", data=np.arange(100, dtype="f4") * i, chunks=(50,),
                                 compression="gzip")
        times: dict[str, list[float]] = {"h5turbo repack (zstd)": [], "h5py copy": []}
        for _ in range(args.rounds):
            start = time.perf_counter()
            repack(src, Path(tmp) / "repacked.h5", compression="zstd")
            times["h5turbo repack (zstd)"].append(time.perf_counter() - start)
            start = time.perf_counter()
            with h5py.File(src, "r") as a, h5py.File(Path(tmp) / "copied.h5", "w") as b:
                for name in a:
                    a.copy(a[name], b, name=name)
            times["h5py copy"].append(time.perf_counter() - start)
        for name, runs in times.items():
            print(f"{name:24s} {statistics.median(runs) / args.datasets * 1e3:.3f} ms per dataset "
                  f"(runs {min(runs):.2f}-{max(runs):.2f} s)")


if __name__ == "__main__":
    main()
