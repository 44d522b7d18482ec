"""Genotype matrices in scikit-allel's layout (variants, samples, ploidy 2) of int8:
reads and reductions against h5py (+ numpy), warm, medians of interleaved runs.

    python benchmarks/genotype_layout.py [--file /tmp/gt.h5] [--repeats 7]

Three datasets of the same values: chunks (8192, 128, 2) as allel's default shape
(65536, 64, 2) cut down, chunks of whole rows (512, 1500, 2), and the same bytes stored
2-d (30000, 3000) as the control. Results: benchmarks/results/genotype_layout.md."""

from __future__ import annotations

import argparse
import os
import statistics
import time

import h5py
import numpy as np

import h5turbo


def make(path: str) -> None:
    g = (np.random.default_rng(1).random((30000, 1500, 2)) < 0.1).astype(np.int8)
    with h5py.File(path, "w") as f:
        f.create_dataset("GT3d", data=g, chunks=(8192, 128, 2))
        f.create_dataset("GT3d_rows", data=g, chunks=(512, 1500, 2))
        f.create_dataset("GT2d", data=g.reshape(30000, 3000), chunks=(8192, 256))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", default="/tmp/genotype_layout.h5")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    if not os.path.exists(args.file):
        make(args.file)
    ref, f = h5py.File(args.file), h5turbo.File(args.file)
    print(f"h5turbo {h5turbo.__version__} from {os.path.dirname(h5turbo.__file__)}")
    print("| dataset | operation | h5py (+numpy) s | h5turbo s | h5turbo / h5py |")
    print("|---|---|---:|---:|---:|")
    for name in ["GT3d", "GT3d_rows", "GT2d"]:
        a, b = ref[name], f[name]
        assert a[...].tobytes() == b[...].tobytes()
        cases = [
            ("read [...]", lambda: a[...], lambda: b[...]),
            ("read [:, 0:200]", lambda: a[:, 0:200], lambda: b[:, 0:200]),
            ("sum(axis=0)", lambda: a[...].sum(axis=0), lambda: b.sum(axis=0)),
            ("sum()", lambda: a[...].sum(), lambda: b.sum()),
            ("count_nonzero(axis=0)", lambda: np.count_nonzero(a[...], axis=0), lambda: b.count_nonzero(axis=0)),
        ]
        for label, with_h5py, with_h5turbo in cases:
            with_h5py(), with_h5turbo()  # warm
            times: dict[str, list[float]] = {"h5py": [], "h5turbo": []}
            for _ in range(args.repeats):  # interleaved
                for key, run in (("h5py", with_h5py), ("h5turbo", with_h5turbo)):
                    start = time.perf_counter()
                    run()
                    times[key].append(time.perf_counter() - start)
            ta, tb = statistics.median(times["h5py"]), statistics.median(times["h5turbo"])
            print(f"| {name} | {label} | {ta:.4f} | {tb:.4f} | {tb / ta:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
