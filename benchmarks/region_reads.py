"""Reads through region references (``ds[regref]``), h5py against h5turbo: a regular
hyperslab, scattered points and a union of boxes of a 2000 x 2000 gzip float32 dataset
(chunks 200 x 200), and small regions of datasets far larger than memory (never
written: their chunks read as the fill value), where a reader that sized its work by
the dataset rather than by the selection would take seconds and gigabytes.

Each reader runs in a process of its own, the readers interleaved, every case once per
round (one warm-up read, then the median of 3); the median milliseconds per read over
the rounds are reported, with each process's peak resident memory. ``--before PATH`` adds an h5turbo build installed under
PATH (``pip install --target PATH``) as a third reader, to compare a change; its far
cases can take seconds and gigabytes each.

    python benchmarks/region_reads.py [--rounds 5] [--before PATH] [--output FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

CASES = {
    "regular 500 x 500 of 2000 x 2000": "regular",
    "5000 random points of 2000 x 2000": "points",
    "20 boxes of 2000 x 2000": "boxes",
    "2 x 5 of (3, 2**32+100), unwritten": "far_box",
    "4 points 2**32 apart of (2**33,), unwritten": "far_points",
}

# One reader's timing of every case, in a fresh process: prints {case: ms per read}
# and the process's peak resident memory.
CHILD = """
import json, resource, sys, time
import {module} as reader
cases = json.loads(sys.argv[2])
out = {{}}
with reader.File(sys.argv[1], "r") as f:
    for name, attr in cases.items():
        ref = f.attrs[attr]
        ds = f[ref]
        ds[ref]  # warm-up
        times = []
        for _ in range(3):
            start = time.perf_counter()
            ds[ref]
            times.append(time.perf_counter() - start)
        out[name] = sorted(times)[1] * 1e3
out["peak MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def make(path: Path) -> None:
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(4_000_000, dtype="f4").reshape(2000, 2000), chunks=(200, 200),
                             compression="gzip")
        f.attrs["regular"] = d.regionref[300:800, 1000:1500]
        space = d.id.get_space()
        space.select_elements(np.unique(rng.integers(0, 2000, (5000, 2)), axis=0))
        f.attrs["points"] = h5py.h5r.create(d.id, b".", h5py.h5r.DATASET_REGION, space)
        space = d.id.get_space()
        space.select_none()
        for start in rng.integers(0, 1900, (20, 2)):
            space.select_hyperslab(tuple(int(s) for s in start), (50, 80), op=h5py.h5s.SELECT_OR)
        f.attrs["boxes"] = h5py.h5r.create(d.id, b".", h5py.h5r.DATASET_REGION, space)
        wide = f.create_dataset("wide", shape=(3, 2**32 + 100), dtype="i1", chunks=(1, 2**20))
        space = wide.id.get_space()
        space.select_hyperslab((1, 2**32), (2, 5))
        f.attrs["far_box"] = h5py.h5r.create(wide.id, b".", h5py.h5r.DATASET_REGION, space)
        long = f.create_dataset("long", shape=(2**33,), dtype="i1", chunks=(2**20,))
        space = long.id.get_space()
        space.select_elements(np.array([[2**32 + 9], [2**32 + 4], [5], [2**33 - 1]]))
        f.attrs["far_points"] = h5py.h5r.create(long.id, b".", h5py.h5r.DATASET_REGION, space)


def time_reader(module: str, path: Path, extra_path: str | None) -> dict:
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
    code = CHILD.format(module=module)
    done = subprocess.run([sys.executable, "-c", code, str(path), json.dumps(CASES)],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", help="an h5turbo build installed with pip install --target PATH")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    readers = {"h5py": ("h5py", None), "h5turbo": ("h5turbo", None)}
    if args.before:
        readers["h5turbo (before)"] = ("h5turbo", args.before)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "regions.h5"
        make(path)
        runs: dict = {reader: {} for reader in readers}
        for _ in range(args.rounds):
            for reader, (module, extra) in readers.items():
                for case, value in time_reader(module, path, extra).items():
                    runs[reader].setdefault(case, []).append(value)
    lines = [
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.system()} {platform.release()}",
        f"- command: `python benchmarks/region_reads.py --rounds {args.rounds}"
        + (" --before PATH" if args.before else "") + "`",
        f"- {args.rounds} rounds, readers interleaved, each in a fresh process; per case one warm-up read "
        "(so decoded chunks are cached, in both readers), then the median of 3; the table gives the median "
        "over the rounds",
        "",
        "| case | " + " | ".join(f"{r} (ms per read)" for r in readers) + " |",
        "|---|" + "---:|" * len(readers),
    ]
    for case in list(CASES) + ["peak MB"]:
        cells = [f"{statistics.median(runs[r][case]):.1f}" for r in readers]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
