"""Big-metadata cases, h5turbo against h5py: 200k-chunk indexes, a 100k-link group,
20k attributes. Files are written with h5py into a temporary folder; each case runs
h5py and h5turbo interleaved, warm (one untimed run first), median of --repeat.

    python benchmarks/scale.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

import h5turbo

N = 200_000


def write(folder: Path) -> dict:
    paths = {}
    for kind in ("btree_v1", "btree_v2", "extensible_array", "fixed_array"):
        p = folder / f"{kind}.h5"
        with h5py.File(p, "w", libver="earliest" if kind == "btree_v1" else "latest") as f:
            if kind == "btree_v2":
                kw = dict(shape=(N, 1), maxshape=(None, None), chunks=(1, 1))
            elif kind == "extensible_array":
                kw = dict(shape=(N,), maxshape=(None,), chunks=(1,))
            else:
                kw = dict(shape=(N,), chunks=(1,))
            f.create_dataset("x", dtype="<i4", **kw)[...] = np.arange(N, dtype="<i4").reshape(kw["shape"])
        paths[kind] = p
    p = folder / "group.h5"
    with h5py.File(p, "w", libver="latest") as f:
        f["t"] = 1
        g = f.create_group("g", track_order=True)
        for i in range(100_000):
            g[f"m{(i * 7919) % 100_000:06d}"] = h5py.SoftLink("/t")
        a = f.create_group("a")
        for i in range(20_000):
            a.attrs[f"a{i:05d}"] = np.int32(i)
    paths["group"] = p
    return paths


def cases(paths: dict):
    def idx(kind, i):
        return (i, 0) if kind == "btree_v2" else i
    for kind in ("btree_v1", "btree_v2", "extensible_array", "fixed_array"):
        p = paths[kind]
        yield f"{kind}: open + 1 element", lambda L, p=p, k=kind: L.File(p)["x"][idx(k, 123456)]
        yield f"{kind}: open + whole (200k chunks)", lambda L, p=p: L.File(p)["x"][...]
        yield f"{kind}: open + first row of iter()", lambda L, p=p: next(iter(L.File(p)["x"]))
    p = paths["group"]
    yield "100k-link group: open + list names", lambda L: list(L.File(p)["g"])
    yield "100k-link group: open + 100 lookups", lambda L: [f"m{i:06d}" in L.File(p)["g"] for i in range(0, 100_000, 1000)]
    yield "20k attributes: open + 100 `in`", lambda L: [f"a{i:05d}" in L.File(p)["a"].attrs for i in range(0, 20_000, 200)]
    yield "20k attributes: open + dict(attrs)", lambda L: dict(L.File(p)["a"].attrs)


def timed(fn, lib) -> float:
    t = time.perf_counter()
    fn(lib)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = write(Path(tmp))
        print(f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), h5turbo, "
              f"{platform.machine()}, median of {args.repeat}, warm, interleaved\n")
        print("| case | h5py s | h5turbo s | h5py / h5turbo |")
        print("|---|---:|---:|---:|")
        for label, fn in cases(paths):
            fn(h5py), fn(h5turbo)
            a, b = [], []
            for _ in range(args.repeat):
                a.append(timed(fn, h5py))
                b.append(timed(fn, h5turbo))
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"| {label} | {ma:.4f} | {mb:.4f} | {ma / mb:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
