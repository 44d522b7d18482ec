"""Scaling with threads, warm and cold page cache: h5turbo from 1 to N threads on the
read-all, column-sum and fast5 cases of issue 16, beside h5py (one thread: libhdf5
decodes under one lock) and the disk's own sequential time, all in one run.

Cases (cold.py's files, written once under --data):
  dense    12000 x 20000 int32, chunks 256 x 1024, no compression: read all
  lz4      the same with LZ4: read all
  colsums  the LZ4 file: ds.sum(axis=0) (h5py: the whole matrix read, then summed)
  single   2000 single-read vbz fast5 files: read_fast5, every signal
  multi    50 multi-read vbz fast5 files, 400 reads each: read_fast5, every signal

Every timed run is its own process. Rounds are interleaved: for each round, each case,
each cache state (cold: files evicted with posix_fadvise(DONTNEED), checked with
mincore; warm: every byte read first), each thread count once, then h5py while its
rounds last. Medians; every run's checksum must equal the others'.

    python benchmarks/scaling.py [--threads 1,2,4,8,16] [--cases ...] [--rounds 3]
                                 [--h5py-rounds 1] [--h5py-cases ...] [--data DIR] [--workers N]
                                 [--before DIR] [--output FILE]

--before DIR: a folder holding an earlier `h5turbo` package (with its _native
extension), timed beside this one at every thread count, interleaved.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path


HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(HERE))
import cold  # noqa: E402  (the cases' files and paths)
from h5turbo.bench.measure import disk_bandwidth, load_average, machine  # noqa: E402
from h5turbo.bench.report import publish  # noqa: E402

CASES = ("dense", "lz4", "colsums", "single", "multi")
FILE_OF = {"dense": "dense", "lz4": "lz4", "colsums": "lz4", "single": "single", "multi": "multi"}
WHAT = {"dense": "read all, no compression", "lz4": "read all, LZ4", "colsums": "ds.sum(axis=0), LZ4",
        "single": "read_fast5, 2000 single-read files", "multi": "read_fast5, 50 multi-read files"}


# ---------------------------------------------------------------------- driver

def timed(impl: str, case: str, path: Path, mode: str, threads: int, build: str | None = None) -> dict:
    """One run in a process of its own, with cold.py's readers and timing; `build`: the
    folder of an earlier h5turbo package to time instead of this one."""
    cmd = [sys.executable, __file__, "--worker", impl, case, str(path), mode, str(threads)]
    first = build or str(REPO / "python")
    pythonpath = os.pathsep.join([first] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return cold.spawn(cmd, pythonpath, f"{impl} {case} {mode} {threads} threads{' (before)' if build else ''}")


def touch_memory(nbytes: int) -> None:
    """Write `nbytes` of fresh memory once, in a process of its own. In a virtual machine
    the first touch of guest memory the host has not backed yet is many times slower
    than later ones (measured here: a 1 GB read 0.7-1.8 s as a process's first, 0.18 s
    after), so without this whichever run comes first pays for the whole machine."""
    subprocess.run([sys.executable, "-c", f"import numpy; numpy.ones({nbytes}, numpy.uint8).sum()"], check=True)


def measure(args, cases: list[str], threads: list[int], modes: list[str]) -> tuple[dict, dict, dict]:
    """times[(case, mode, reader)] = [seconds per round]; disk[case] = [(seconds, bytes)];
    checks[case] = [checksum, bytes produced]."""
    times: dict = {}
    disk: dict = {c: [] for c in cases}
    checks: dict = {}
    for rnd in range(args.rounds):
        for case in cases:
            path = cold.case_paths(args.data, FILE_OF[case])
            seconds, nbytes, note = disk_bandwidth(path, block=1 << 20)
            if note:
                raise SystemExit(f"{case}: {note}")
            disk[case].append((seconds, nbytes))
            for mode in modes:
                with_h5py = rnd < args.h5py_rounds and case in args.h5py_cases
                builds = [None] + [args.before] * bool(args.before)
                readers = [("h5turbo", t, b) for t in threads for b in builds] + [("h5py", 1, None)] * with_h5py
                for impl, t, build in readers:
                    r = timed(impl, case, path, mode, t, build)
                    if checks.setdefault(case, r["check"]) != r["check"]:
                        raise SystemExit(f"{case}: {impl} ({t} threads) read {r['check']}, expected {checks[case]}")
                    name = "h5py" if impl == "h5py" else f"before {t}" if build else t
                    times.setdefault((case, mode, name), []).append(r["seconds"])
                    print(f"round {rnd + 1} {case} {mode} {impl}{' before' if build else ''} {t}: {r['seconds']:.3f} s "
                          f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    return times, disk, checks


def report(args, argv, cases, threads, modes, times, disk, checks, load_before) -> list[str]:
    med = {k: statistics.median(v) for k, v in times.items()}
    head = " | ".join(f"{t} thr s (x vs 1)" for t in threads)
    lines = [
        "# Scaling with threads, warm and cold page cache", "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}",
        f"- command: `python {shlex.join(['benchmarks/scaling.py'] + argv)}`",
        f"- load average (1, 5, 15 min) before: {load_before}; after: {load_average()}",
        f"- {args.rounds} interleaved rounds (h5py: {min(args.h5py_rounds, args.rounds)}), medians; each run its own "
        "process; cold: files evicted (posix_fadvise DONTNEED, mincore-checked) before every run; warm: every byte "
        "read just before; disk-only: a cold sequential read of the same files (1 MiB reads, one file after another)",
        "- GB/s: bytes produced (decoded array or signals) per second", "",
        f"| case | cache | disk-only s (GB/s) | h5py s | {head} | best GB/s | best vs h5py |",
        "|---|---|---:|---:|" + "---:|" * len(threads) + "---:|---:|",
    ]
    for case in cases:
        d = statistics.median(s for s, _ in disk[case])
        on_disk = disk[case][0][1]
        produced = checks[case][1]
        for mode in modes:
            for label, key in [("", lambda t: t)] + [(" (before)", lambda t: f"before {t}")] * bool(args.before):
                one = med.get((case, mode, key(threads[0])))
                cells = [f"{med[(case, mode, key(t))]:.3f} ({one / med[(case, mode, key(t))]:.1f}x)" for t in threads]
                best = min(med[(case, mode, key(t))] for t in threads)
                h5 = med.get((case, mode, "h5py"))
                lines.append(f"| {case}: {WHAT[case]}{label} | {mode} | {d:.3f} ({on_disk / d / 1e9:.2f}) | "
                             f"{f'{h5:.3f}' if h5 else '-'} | {' | '.join(cells)} | {produced / best / 1e9:.2f} | "
                             f"{f'{h5 / best:.1f}x' if h5 else '-'} |")
    lines += ["", "Runs (s), round by round:", ""]
    lines += [f"- {case} {mode} {name}{'' if name == 'h5py' else ' threads'}: {', '.join(f'{x:.3f}' for x in v)}"
              for (case, mode, name), v in times.items()]
    return lines


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=5, metavar=("IMPL", "CASE", "PATH", "MODE", "THREADS"), help=argparse.SUPPRESS)
    p.add_argument("--threads", default="1,2,4,8,16")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--modes", default="cold,warm")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--h5py-rounds", type=int, default=1, help="rounds that also time h5py (it reads on one core)")
    p.add_argument("--h5py-cases", default=",".join(CASES), help="cases that also time h5py")
    p.add_argument("--data", type=Path, default=Path("/work/bench-data"))
    p.add_argument("--workers", type=int, default=os.cpu_count(), help="processes writing the fast5 files")
    p.add_argument("--before", default=None, help="folder with an earlier h5turbo package, timed beside this one")
    p.add_argument("--output", type=Path, default=None)
    args = p.parse_args(argv)
    if args.before:
        args.before = str(Path(args.before).resolve())
    if args.worker:
        impl, case, path, mode, threads = args.worker
        print(json.dumps(cold.measure_once(impl, case, Path(path), mode, threads=int(threads))))
        return 0
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        p.error(f"unknown cases {sorted(unknown)}; known: {', '.join(CASES)}")
    threads = [int(t) for t in args.threads.split(",")]
    args.h5py_cases = set(args.h5py_cases.split(","))
    modes = [m for m in args.modes.split(",") if m]
    cold.prepare(args.data, sorted({FILE_OF[c] for c in cases}), workers=args.workers)
    touch_memory(4 << 30)
    load_before = load_average()
    times, disk, checks = measure(args, cases, threads, modes)
    publish(report(args, argv, cases, threads, modes, times, disk, checks, load_before), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
