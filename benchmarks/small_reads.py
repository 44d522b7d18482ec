"""Loops of small reads, as h5py code writes them: a row, a column or an element at a
time from a gzip dataset of 1000 x 1000 float32 in chunks of 100 x 100 (each row
meets 10 chunks). Both readers keep recently decoded chunks (h5py's chunk cache,
h5turbo's per-dataset cache), so these loops time the per-call work around a cache.

Each reader runs in a process of its own, the readers interleaved, every loop once per
round; the median microseconds per call over the rounds are reported. ``--before
PATH`` adds an h5turbo build installed under PATH (``pip install --target PATH``) as a
third reader, to compare a change.

    python benchmarks/small_reads.py [--rounds 7] [--before PATH] [--output FILE]
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

LOOPS = {
    "rows 0..999, ds[i]": "lambda d, i: d[i]",
    "one row again, ds[5]": "lambda d, i: d[5]",
    "columns 0..999, ds[:, i]": "lambda d, i: d[:, i]",
    "elements, ds[i, 7 * i % 1000]": "lambda d, i: d[i, 7 * i % 1000]",
}

# One reader's timing of every loop, in a fresh process: prints {loop: us per call}.
CHILD = """
import json, sys, time
import {module} as reader
loops = json.loads(sys.argv[2])
out = {{}}
with reader.File(sys.argv[1], "r") as f:
    d = f["c"]
    for name, code in loops.items():
        call = eval(code)
        for i in range(50):  # warm-up: the cache and the pool as a loop finds them
            call(d, i)
        start = time.perf_counter()
        for i in range(1000):
            call(d, i)
        out[name] = (time.perf_counter() - start) / 1000 * 1e6
print(json.dumps(out))
"""


def make(path: Path) -> None:
    data = np.arange(1_000_000, dtype="f4").reshape(1000, 1000)
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=data, chunks=(100, 100), compression="gzip")


def time_reader(module: str, path: Path, extra_path: str | None) -> dict:
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
    code = CHILD.format(module=module)
    done = subprocess.run([sys.executable, "-c", code, str(path), json.dumps(LOOPS)],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", help="an h5turbo build installed with pip install --target PATH")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    readers = {"h5py": ("h5py", None), "h5turbo": ("h5turbo", None)}
    if args.before:
        readers["h5turbo (before)"] = ("h5turbo", args.before)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "small.h5"
        make(path)
        runs: dict = {reader: {loop: [] for loop in LOOPS} for reader in readers}
        for _ in range(args.rounds):
            for reader, (module, extra) in readers.items():
                for loop, us in time_reader(module, path, extra).items():
                    runs[reader][loop].append(us)
    lines = [
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        f"- command: `python benchmarks/small_reads.py --rounds {args.rounds}" + (" --before PATH" if args.before else "") + "`",
        f"- {args.rounds} rounds, readers interleaved, each in a fresh process; 50 warm-up calls, then 1000 timed",
        "",
        "| loop | " + " | ".join(f"{r} (us per call)" for r in readers) + " |",
        "|---|" + "---:|" * len(readers),
    ]
    for loop in LOOPS:
        cells = [f"{statistics.median(runs[r][loop]):.1f}" for r in readers]
        lines.append(f"| {loop} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
