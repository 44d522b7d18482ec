"""The first small read in a large file (a large chunk index, a large group): open the file, read a
few elements, close (what a script, a notebook cell or a dask task opening a file
afresh does). h5turbo finds a small read's chunks one by one in the index; before
2026-11-26 it read the whole index first (every node of a v1 B-tree, every page of a
fixed or extensible array).

Writes (once, cached under --data) two files with h5py, one per format generation:
libver "earliest" (v1 B-trees, what h5py, anndata and most tools write by default)
and "latest" (fixed array, extensible array, v2 B-tree):

- big1d: int32, 4,194,304 elements in chunks of 4 (1,048,576 chunks);
- grid: float32 2000 x 1000 in chunks of 10 x 1 (200,000 chunks);
- ext: int32, one unlimited axis, 1,048,576 elements in chunks of 4;
- both: int32 2000 x 1000, two unlimited axes, chunks of 10 x 1 (latest only: a v2 B-tree);

and two more files, each a group of 50,000 scalar datasets (a symbol table in the
earliest format, dense link storage in the latest), where the first read opens one
member by name: before 2026-11-26 h5turbo listed the whole group for it; and a small
file (a 100-element dataset in 10 gzip chunks, a contiguous one) for the cost of one
small read itself. Besides open + read + close warm and cold, each case is timed as
the same read repeated on one open handle (per call).

Each run is one worker process per reader, round by round (interleaved), each timing
--repeats opens+reads after an untimed warm-up, checked equal to h5py's values. Cold:
the file evicted (posix_fadvise DONTNEED, mincore-checked) before every timed read.

    python benchmarks/first_read.py [--rounds 5 --repeats 5] [--before DIR]
        [--output benchmarks/results/first_read.md]

--before DIR: a folder holding an earlier `h5turbo` package (with its _native
extension), timed beside this one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# A worker for another build (--before) has that build first on PYTHONPATH; it must
# stay ahead of this repository's package.
sys.path.insert(0, str(REPO / "python"))
for _entry in reversed([e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]):
    sys.path.insert(0, _entry)
from h5turbo.bench.measure import evict  # noqa: E402
from h5turbo.bench.report import publish, run_header  # noqa: E402

# (file, dataset, selection as written inside np.s_[...], what it is)
CASES = [
    ("earliest", "big1d", "1000:1010", "10 elements (3 chunks of 1,048,576)"),
    ("earliest", "grid", "5, 0:10", "10 elements of a row (10 chunks of 200,000)"),
    ("earliest", "grid", "5, :", "a row (1000 chunks of 200,000)"),
    ("earliest", "ext", "700000:700010", "10 elements (3 chunks of 262,144)"),
    ("latest", "big1d", "1000:1010", "10 elements, fixed array"),
    ("latest", "grid", "5, :", "a row, fixed array"),
    ("latest", "ext", "700000:700010", "10 elements, extensible array"),
    ("latest", "both", "5, :", "a row, v2 B-tree"),
    ("groups-earliest", "g/d31337", "()", "one member of a 50,000-member group, symbol table"),
    ("groups-latest", "g/d31337", "()", "one member of a 50,000-member group, dense storage"),
    ("small", "gz", ":", "a whole 100-element dataset in 10 gzip chunks"),
    ("small", "gz", "5", "one element of it"),
    ("small", "c", "10:20", "10 elements of a contiguous dataset"),
]
GROUP_MEMBERS = 50_000
# warm / cold: open + read + close, the file in the page cache or evicted; open: the
# same read repeated on one open handle, per call.
MODES = ("warm", "cold", "open")
MODE_TITLES = {"warm": "warm ms", "cold": "cold ms", "open": "open handle us"}
MODE_SCALE = {"warm": 1e3, "cold": 1e3, "open": 1e6}


def write_group_file(path: Path, libver: str) -> None:
    if path.exists():
        return
    import h5py
    tmp = path.with_suffix(".tmp")
    with h5py.File(tmp, "w", libver=libver) as f:
        group = f.create_group("g")
        for i in range(GROUP_MEMBERS):
            group.create_dataset(f"d{i}", data=np.int32(i))
    tmp.rename(path)


def write_small_file(path: Path) -> None:
    if path.exists():
        return
    import h5py
    tmp = path.with_suffix(".tmp")
    with h5py.File(tmp, "w") as f:
        f.create_dataset("gz", data=np.arange(100, dtype="<f8"), chunks=(10,), compression="gzip")
        f.create_dataset("c", data=np.arange(1000, dtype="<i8"))
    tmp.rename(path)


def write_file(path: Path, libver: str) -> None:
    if path.exists():
        return
    import h5py
    tmp = path.with_suffix(".tmp")
    with h5py.File(tmp, "w", libver=libver) as f:
        f.create_dataset("big1d", data=np.arange(1 << 22, dtype="<i4"), chunks=(4,))
        grid = np.arange(2000 * 1000, dtype="<f4").reshape(2000, 1000)
        f.create_dataset("grid", data=grid, chunks=(10, 1))
        ext = f.create_dataset("ext", shape=(0,), maxshape=(None,), chunks=(4,), dtype="<i4")
        ext.resize((1 << 20,))
        ext[:] = np.arange(1 << 20, dtype="<i4")
        if libver == "latest":
            both = f.create_dataset("both", shape=(0, 0), maxshape=(None, None), chunks=(10, 1), dtype="<i4")
            both.resize((2000, 1000))
            both[...] = grid.astype("<i4")
    tmp.rename(path)


# ------------------------------------------------------------------ worker

def worker(impl: str, path: str, name: str, sel: str, mode: str, repeats: int) -> dict:
    module = __import__("h5py" if impl == "h5py" else "h5turbo")
    selection = eval(f"np.s_[{sel}]")  # a benchmark's own table of selections

    def once():
        with module.File(path, "r") as f:
            return f[name][selection]

    first = once()
    if mode == "open":
        return {"times": per_call_on_open_handle(module, path, name, selection, repeats),
                "sum": float(np.asarray(first, dtype="f8").sum()), "module": module.__file__}
    cold = mode == "cold"
    times = []
    for _ in range(repeats):
        if cold:
            eviction = evict(Path(path))
            if not eviction.ok:
                raise RuntimeError(f"eviction failed: {eviction.note}")
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    return {"times": times, "sum": float(np.asarray(first, dtype="f8").sum()), "module": module.__file__}


def per_call_on_open_handle(module, path: str, name: str, selection, repeats: int, calls: int = 2000) -> list:
    """Seconds per call of the same read repeated on one open handle (after 200 untimed)."""
    with module.File(path, "r") as f:
        ds = f[name]
        for _ in range(200):
            ds[selection]
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                ds[selection]
            times.append((time.perf_counter() - start) / calls)
    return times


def run_worker(impl: str, pythonpath: str | None, args: list[str]) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, __file__, "--worker", impl, *args], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--worker":
        impl, path, name, sel, mode, repeats = sys.argv[2:8]
        print(json.dumps(worker(impl, path, name, sel, mode, int(repeats))))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--data", type=Path, default=Path("/tmp/h5turbo-bench/first_read"))
    p.add_argument("--before", default=None, help="folder with an earlier h5turbo package, timed beside this one")
    p.add_argument("--output", type=Path, default=None)
    args = p.parse_args(argv)

    args.data.mkdir(parents=True, exist_ok=True)
    paths = {}
    for libver in ("earliest", "latest"):
        paths[libver] = args.data / f"{libver}.h5"
        write_file(paths[libver], libver)
        paths[f"groups-{libver}"] = args.data / f"groups_{libver}.h5"
        write_group_file(paths[f"groups-{libver}"], libver)
    paths["small"] = args.data / "small.h5"
    write_small_file(paths["small"])
    impls = {"h5py": None, "h5turbo": str(REPO / "python")}
    if args.before:
        impls["h5turbo before"] = str(Path(args.before).resolve())

    started, load_before = time.time(), os.getloadavg()
    rows = []
    for libver, name, sel, what in CASES:
        medians = {}
        for mode in MODES:
            times: dict = {impl: [] for impl in impls}
            sums = {}
            for _ in range(args.rounds):
                for impl, pythonpath in impls.items():
                    result = run_worker(impl, pythonpath, [str(paths[libver]), name, sel, mode, str(args.repeats)])
                    times[impl] += result["times"]
                    sums[impl] = result["sum"]
            if len(set(sums.values())) != 1:
                raise AssertionError(f"{libver}:{name}[{sel}]: readers disagree: {sums}")
            medians[mode] = {impl: statistics.median(t) for impl, t in times.items()}
        rows.append((libver, name, sel, what, medians))
    load_after = os.getloadavg()

    header = "| file | dataset[selection] | what | " + " | ".join(
        f"{impl} {MODE_TITLES[mode]}" for mode in MODES for impl in impls) + " |"
    lines = run_header("First small read in a large file: a large chunk index, a large group", started, load_before,
                       load_after, __file__, sys.argv[1:]) + [
        f"- {args.rounds} rounds x {args.repeats} reads per reader (one worker process per reader and round, "
        "interleaved), medians of open + read + close (warm, cold: evicted before each) and of the "
        "per-call time of 2000 reads on one open handle (open handle); values checked equal to h5py's",
        "",
        header,
        "|---|---|---|" + "---:|" * (len(MODES) * len(impls)),
    ]
    for libver, name, sel, what, medians in rows:
        cells = " | ".join(f"{MODE_SCALE[mode] * medians[mode][impl]:.2f}" for mode in MODES for impl in impls)
        lines.append(f"| {libver} | `{name}[{sel}]` | {what} | {cells} |")
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
