"""One attribute looked up on a freshly opened object holding many: h5turbo against
h5py, per open + lookup, median of rounds.

    python benchmarks/attrs_lookup.py [--lookups 200] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import h5py

import h5turbo


def per_lookup_ms(open_file, path: Path, lookups: int, rounds: int) -> float:
    f = open_file(path)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(lookups):
            f["g"].attrs["a5"]
        times.append((time.perf_counter() - start) / lookups * 1e3)
    f.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (100, 1000, 10000):
            path = Path(tmp) / f"attrs{n}.h5"
            with h5py.File(path, "w", libver="latest") as f:
                g = f.create_group("g")
                for k in range(n):
                    g.attrs[f"a{k}"] = k
            ours = per_lookup_ms(h5turbo.File, path, args.lookups, args.rounds)
            theirs = per_lookup_ms(lambda p: h5py.File(p, "r"), path, args.lookups, args.rounds)
            print(f"{n:6d} attributes: h5turbo {ours:.3f} ms, h5py {theirs:.3f} ms per open + lookup")


if __name__ == "__main__":
    main()
