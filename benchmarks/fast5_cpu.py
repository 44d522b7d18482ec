"""CPU time (user + system) and wall time of h5turbo.read_fast5 over the fast5
benchmark's files (made by benchmarks/fast5.py), streamed, averaged over --runs reads
after one warm-up. On a machine whose speed drifts, CPU time shows a change of a few
percent that wall times hide; compare two builds by running this once per build, in
turn (PYTHONPATH pointing at each build's python/ folder)."""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import h5turbo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kind", choices=["single", "multi"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--folder", default="fast5-bench-2000s-50x400m-30000",
                        help="the benchmark's file folder under ~/.cache/h5turbo")
    args = parser.parse_args()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "h5turbo"
    files = sorted((cache / args.folder / args.kind).glob("*.fast5"))
    if not files:
        sys.exit(f"no files under {cache / args.folder}: run benchmarks/fast5.py first")

    def read_all() -> int:
        return sum(r.signal.size for r in h5turbo.read_fast5(files, threads=args.threads))

    read_all()
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(args.runs):
        read_all()
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - start
    user = (after.ru_utime - before.ru_utime) / args.runs
    system = (after.ru_stime - before.ru_stime) / args.runs
    print(f"{h5turbo.__file__}: {args.kind}, {args.threads} threads: wall {wall / args.runs:.4f} s, "
          f"CPU {user + system:.4f} s (user {user:.4f}, sys {system:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
