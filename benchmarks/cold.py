"""Cold and warm page cache: h5py against h5turbo (and optionally an earlier h5turbo
build) on the four cases of issue 16, with the disk's own sequential time measured in
the same run.

Cases (data written once under --data, default /work/bench-data, outside the repo):
  dense  12000 x 20000 int32 (random 1..100), chunks 256 x 1024, no compression, read all
  lz4    the same with LZ4 (hdf5plugin, filter 32004)
  gzip   the same with gzip level 4 (h5py's default level) behind the shuffle filter
  single 2000 single-read vbz fast5 files (benchmarks/fast5.py's generator)
  multi  50 multi-read vbz fast5 files, 400 reads each

Every timed run is its own process (so one implementation's memory or threads never
touch another's, and an earlier h5turbo build can be timed beside this one through
--before DIR: a folder holding an `h5turbo` package with its _native extension). Runs
are interleaved round by round: for each round, each case, each mode (cold: the files
evicted with posix_fadvise(DONTNEED) and checked with mincore; warm: every byte read
first), each implementation once. Disk-only: a cold sequential read of the same files
(1 MiB reads, one file after another), the lower bound for any cold reader.

    python benchmarks/cold.py [--cases dense,lz4,gzip,single,multi] [--rounds 3]
                              [--before DIR] [--memory as-found|warm] [--output benchmarks/results/cold.md]
"""

from __future__ import annotations

import argparse
import datetime
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
sys.path.insert(0, str(REPO / "python"))
# A worker timing another build (--before) is started with that build's folder on
# PYTHONPATH: it must come before this repository's package, or the run would time
# this build under the other's name.
for _entry in reversed([e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]):
    sys.path.insert(0, _entry)
from h5turbo.bench.measure import disk_bandwidth, evict, load_average, machine, warm  # noqa: E402
from h5turbo.bench.report import publish  # noqa: E402

SHAPE, CHUNKS = (12000, 20000), (256, 1024)
CASES = ("dense", "lz4", "gzip", "single", "multi")
DENSE_CASES = ("dense", "lz4", "gzip")


# ---------------------------------------------------------------------- data

def make_dense(path: Path, codec: str) -> None:
    if path.exists():
        return
    import h5py
    kwargs = {}
    if codec == "lz4":
        import hdf5plugin
        kwargs = dict(hdf5plugin.LZ4())
    elif codec == "gzip":
        kwargs = dict(compression="gzip", compression_opts=4, shuffle=True)
    tmp = path.with_suffix(".tmp")
    rng = np.random.default_rng(16)
    with h5py.File(tmp, "w") as f:
        ds = f.create_dataset("matrix", SHAPE, "<i4", chunks=CHUNKS, **kwargs)
        for row in range(0, SHAPE[0], CHUNKS[0]):
            stop = min(row + CHUNKS[0], SHAPE[0])
            ds[row:stop] = rng.integers(1, 101, (stop - row, SHAPE[1]), dtype="<i4")
    tmp.rename(path)


def make_fast5(folder: Path, workers: int = 1) -> tuple[list[Path], list[Path]]:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(REPO / "tests"))
    import fast5  # benchmarks/fast5.py: the same generator as the warm fast5 benchmark
    return fast5.make_files(folder, 2000, 50, 400, 30000, workers=workers)


def case_paths(data: Path, case: str) -> Path:
    """The file, or folder of files, a case reads."""
    return {"dense": data / "dense.h5", "lz4": data / "lz4.h5", "gzip": data / "gzip.h5",
            "single": data / "fast5" / "single", "multi": data / "fast5" / "multi"}[case]


def prepare(data: Path, cases: list[str], workers: int = 1) -> None:
    data.mkdir(parents=True, exist_ok=True)
    for case in DENSE_CASES:
        if case in cases:
            make_dense(case_paths(data, case), codec=case if case != "dense" else "none")
    if "single" in cases or "multi" in cases:
        make_fast5(data / "fast5", workers)


# ---------------------------------------------------------------------- one timed run (a worker process)

def fast5_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.glob("*.fast5"))


def run_h5py(case: str, path: Path) -> tuple[int, int]:
    """(checksum, bytes produced) of one h5py run; "colsums" reads the matrix whole and
    sums its columns."""
    import h5py
    if case not in ("single", "multi"):
        import hdf5plugin  # noqa: F401  (registers the LZ4 filter)
        with h5py.File(path, "r") as f:
            a = f["matrix"][()]
        if case == "colsums":
            return int(a.sum(axis=0, dtype=np.int64).sum()), a.nbytes
        return int(a[::97, ::89].sum(dtype=np.int64)), a.nbytes
    def signals():
        for p in fast5_files(path):
            with h5py.File(p, "r") as f:
                groups = f["Raw/Reads"].values() if "Raw" in f else [g["Raw"] for g in f.values()]
                for g in groups:
                    dict(g.attrs)
                    yield g["Signal"][()]
    return fast5_check(signals())


def run_h5turbo(case: str, path: Path, io_depth=None, threads=None) -> tuple[int, int]:
    """(checksum, bytes produced) of one h5turbo run; "colsums" is ds.sum(axis=0)."""
    import h5turbo
    extra = {k: v for k, v in (("io_depth", io_depth), ("threads", threads)) if v is not None}
    if case in ("single", "multi"):
        return fast5_check(r.signal for r in h5turbo.read_fast5(fast5_files(path), on_error="raise", **extra))
    with h5turbo.File(path) as f:
        ds = f["matrix"]
        if case == "colsums":
            sums = ds.sum(axis=0, threads=threads)
            return int(sums.sum()), ds.size * ds.dtype.itemsize  # bytes decoded
        a = ds.read(**extra)
    return int(a[::97, ::89].sum(dtype=np.int64)), a.nbytes


def fast5_check(signals) -> tuple[int, int]:
    """(sum of every 97th sample, signal bytes): a check that costs the reading thread
    little, so the timing is the reader's (a full sum per read in Python's one thread
    outlasted 16 decoding threads; runs before 2026-11-26 summed every sample)."""
    total = nbytes = 0
    for s in signals:
        total, nbytes = total + int(s[::97].sum(dtype=np.int64)), nbytes + s.nbytes
    return total, nbytes


def set_cache(path: Path, mode: str) -> None:
    """Before a timed run: `path` dropped from the page cache ("cold", checked) or read
    whole into it ("warm")."""
    if mode == "cold":
        ev = evict(path)
        if not ev.ok:
            raise SystemExit(ev.note())
    else:
        warm(path)


def warm_memory(case: str, path: Path) -> None:
    """Write, then free, as much memory as the read will fill (numpy's huge pages, as
    its output gets): in a VM that hands free memory back to its host, the read then
    finds memory at hand, as on a machine that keeps it (benchmarks/results/huge_pages.md)."""
    if case in ("single", "multi"):
        nbytes = 1 << 30
    else:
        import h5py
        with h5py.File(path, "r") as f:
            nbytes = f["matrix"].nbytes
    block = np.ones(nbytes + (64 << 20), dtype=np.uint8)
    del block


def measure_once(impl: str, case: str, path: Path, mode: str, threads=None, io_depth=None,
                 memory_warm: bool = False) -> dict:
    """One timed run in this process: the cache set up, the imports done (they are not
    the readers' work), the memory warmed when asked, then the read timed."""
    set_cache(path, mode)
    import h5py  # noqa: F401
    import h5turbo  # noqa: F401
    if impl == "h5py" and case in ("single", "multi"):
        sys.path.insert(0, str(REPO / "tests"))
        import conftest  # noqa: F401  (ONT's vbz plugin for h5py)
    if memory_warm:
        warm_memory(case, path)
    start = time.perf_counter()
    check = run_h5py(case, path) if impl == "h5py" else run_h5turbo(case, path, io_depth, threads)
    return {"seconds": time.perf_counter() - start, "check": list(check)}


def worker(args) -> None:
    print(json.dumps(measure_once(args.impl, args.case, Path(args.path), args.mode, io_depth=args.io_depth,
                                  memory_warm=args.memory == "warm")))


def spawn(cmd: list, pythonpath: str, label: str) -> dict:
    """Run a worker process (`cmd`) and give the JSON line it prints last."""
    out = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=pythonpath), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{label}: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- driver

def timed(impl: str, case: str, path: Path, mode: str, pythonpath: str, io_depth, memory: str) -> dict:
    cmd = [sys.executable, __file__, "--worker", impl, case, str(path), mode, "--memory", memory]
    if io_depth is not None:
        cmd += ["--io-depth", str(io_depth)]
    return spawn(cmd, pythonpath, f"{impl} {case} {mode}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=4, metavar=("IMPL", "CASE", "PATH", "MODE"), help=argparse.SUPPRESS)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data", type=Path, default=Path("/work/bench-data"))
    p.add_argument("--before", default=None, help="folder with an earlier h5turbo package, timed beside this one")
    p.add_argument("--no-h5py", action="store_true")
    p.add_argument("--modes", default="cold,warm")
    p.add_argument("--memory", choices=["as-found", "warm"], default="as-found",
                   help="warm: each run writes and frees as much memory as its read fills just before it "
                        "(for a VM that hands free memory back to its host; see results/huge_pages.md)")
    p.add_argument("--io-depth", default=None, help=argparse.SUPPRESS)
    p.add_argument("--depths", default=None,
                   help="comma-separated io_depth values to time this h5turbo at (e.g. 0,4M,32M; default: its default)")
    p.add_argument("--output", type=Path, default=None)
    args = p.parse_args(argv)
    if args.worker:
        args.impl, args.case, args.path, args.mode = args.worker
        return worker(args) or 0

    cases = [c for c in args.cases.split(",") if c]
    modes = [m for m in args.modes.split(",") if m]
    prepare(args.data, cases)
    here = str(REPO / "python")
    impls = {} if args.no_h5py else {"h5py": (here, None)}
    if args.before:
        impls["h5turbo before"] = (str(Path(args.before).resolve()), None)
    if args.depths:
        impls.update({f"h5turbo io_depth={d}": (here, d) for d in args.depths.split(",")})
    else:
        impls["h5turbo"] = (here, None)
    load_before = load_average()
    times: dict = {}
    disk: dict = {c: [] for c in cases}
    checks: dict = {}
    for rnd in range(args.rounds):
        for case in cases:
            path = case_paths(args.data, case)
            # 1 MiB reads: the kernel's read-ahead streams them (16 MiB reads measured slower here)
            seconds, nbytes, note = disk_bandwidth(path, block=1 << 20)
            if note:
                raise SystemExit(f"{case}: {note}")
            disk[case].append((seconds, nbytes))
            for mode in modes:
                for name, (pythonpath, depth) in impls.items():
                    impl = "h5py" if name == "h5py" else "h5turbo"
                    r = timed(impl, case, path, mode, pythonpath, depth, args.memory)
                    times.setdefault((case, mode, name), []).append(r["seconds"])
                    # every implementation must see the same data (signal sums / sampled sums)
                    ref = checks.setdefault(case, r["check"][0])
                    if ref != r["check"][0]:
                        raise SystemExit(f"{case}: {name} read {r['check']}, expected {ref}")
                    print(f"round {rnd + 1} {case} {mode} {name}: {r['seconds']:.3f} s "
                          f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    load_after = load_average()
    med = {k: statistics.median(v) for k, v in times.items()}
    lines = [
        "# Cold and warm reads (issue 16)", "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}",
        f"- command: `python benchmarks/cold.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        f"- load average (1, 5, 15 min) before: {load_before}; after: {load_after} "
        "(other work shares the 2 cores)",
        f"- {args.rounds} rounds, medians; cold: files evicted (posix_fadvise DONTNEED, mincore-checked) before "
        "every run; warm: every byte read just before; disk-only: cold sequential read of the same files, "
        "1 MiB reads",
        "",
        "| case | MB on disk | disk-only s (GB/s) | reader | cold s | warm s | cold / max(disk, warm) | cold vs h5py |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for case in cases:
        d = statistics.median(s for s, _ in disk[case])
        nbytes = disk[case][0][1]
        h5 = med.get((case, "cold", "h5py"))
        for name in impls:
            cold, warm_t = med.get((case, "cold", name)), med.get((case, "warm", name))
            cells = [f"{v:.3f}" if v is not None else "-" for v in (cold, warm_t)]
            ratio = f"{cold / max(d, warm_t):.2f}" if cold and warm_t else "-"
            vs = f"{h5 / cold:.1f}x" if h5 and cold else "-"
            lines.append(f"| {case} | {nbytes / 1e6:.0f} | {d:.3f} ({nbytes / d / 1e9:.2f}) | {name} | "
                         f"{cells[0]} | {cells[1]} | {ratio} | {vs} |")
    lines += ["", "Runs (s), round by round:", ""]
    for (case, mode, name), v in times.items():
        lines.append(f"- {case} {mode} {name}: {', '.join(f'{x:.3f}' for x in v)}")
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
