"""h5turbo builds side by side, each run a fresh Python process, with the system's free
memory in two states:

    python benchmarks/memory_state.py [--rounds 4] [--idle 6] [--cases single,multi,lz4] BUILD...

BUILD: a folder holding an `h5turbo` package with its _native extension (for
PYTHONPATH; `-` for the one installed). Cases: every read of the 2000 single-read and
of the 50 multi-read vbz fast5 files of benchmarks/fast5.py (read_fast5, 2 threads),
and cold.py's LZ4 dataset (12000 x 20000 int32, chunks 256 x 1024, under --data) read
whole. The files are in the page cache before every run. For each round, case and build: the machine idles
--idle seconds, the case runs ("coldmem": in a virtual machine that hands free memory
back to its host, the first write of each page then waits for the host too), and at
once again ("warmmem": the memory just freed is reused). Prints each run (the time
inside the process, then wall, user and system s of the process) and the medians.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))
import cold  # noqa: E402  (the LZ4 file)
import fast5  # noqa: E402  (the fast5 files)
from h5turbo.bench.measure import warm  # noqa: E402

CASE = r"""
import sys, time
import h5turbo
case, listing, lz4 = sys.argv[1:4]
t = time.perf_counter()
if case == "lz4":
    with h5turbo.File(lz4) as f:
        a = f["matrix"][:]
    check = int(a[::97, ::89].sum())
else:
    paths = open(listing).read().split("\n")
    check = sum(int(r.signal[::97].sum()) for r in h5turbo.read_fast5(paths, threads=2))
print(f"{time.perf_counter() - t:.3f} {check}")
"""


def run(build: str, case: str, listing: Path, lz4: Path) -> tuple[float, float, float, str]:
    env = dict(os.environ)
    if build != "-":
        env["PYTHONPATH"] = build
    before = os.times()
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CASE, case, str(listing), str(lz4)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return float(out[0]), wall, cpu, out[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="+")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--idle", type=float, default=6.0)
    parser.add_argument("--cases", default="single,multi,lz4")
    parser.add_argument("--data", type=Path, default=Path("/work/bench-data"), help="cold.py's --data")
    args = parser.parse_args(argv)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "h5turbo"
    folder = cache / "fast5-bench-2000s-50x400m-30000"
    singles, multis = fast5.make_files(folder, 2000, 50, 400, 30000, workers=os.cpu_count())
    cold.prepare(args.data, ["lz4"])
    lz4 = cold.case_paths(args.data, "lz4")
    listings = {}
    for case, paths in (("single", singles), ("multi", multis)):
        listings[case] = cache / f"memory_state_{case}.txt"
        listings[case].write_text("\n".join(str(p) for p in paths))
    files = {"single": singles, "multi": multis, "lz4": [lz4]}
    results = collections.defaultdict(list)
    checks = {}
    for r in range(args.rounds):
        for case in args.cases.split(","):
            for build in args.builds:
                for path in files[case]:
                    warm(path)
                time.sleep(args.idle)
                for state in ("coldmem", "warmmem"):
                    inner, wall, cpu, check = run(build, case, listings.get(case, lz4), lz4)
                    if checks.setdefault(case, check) != check:
                        raise SystemExit(f"{case}: {build} gave {check}, expected {checks[case]}")
                    results[(case, state, build)].append((inner, wall, cpu))
                    print(f"{r} {case} {state} {build}: {inner:.3f} s inside, {wall:.3f} s wall, {cpu:.3f} s CPU", flush=True)
    print("case state build: median s inside, wall, CPU (runs inside)")
    for (case, state, build), runs in sorted(results.items()):
        med = [statistics.median(x[i] for x in runs) for i in range(3)]
        print(f"{case} {state} {build}: {med[0]:.3f} {med[1]:.3f} {med[2]:.3f} ({' '.join(f'{x[0]:.2f}' for x in runs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
