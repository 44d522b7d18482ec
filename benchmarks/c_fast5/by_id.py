"""Reads fetched by id, in random order, from C: f5c's access pattern (its index maps
each read id of a BAM or FASTQ batch to a fast5 file, and each read is fetched on its
own). libhdf5 as f5c uses it (hdf5_get.c: per read H5Fopen, Raw/Signal, channel_id's
four attributes, H5Fclose) against h5turbo_fast5_get from 1 and 2 C threads sharing
one handle, and h5turbo_fast5_get_batch of 512 ids at a time (f5c's batch size) on a
pool of 1 and 2 threads (h5turbo_get.c; the index of read ids built on the first fetch,
timed too).

python benchmarks/c_fast5/by_id.py [--repeats N] [--threads 1,2] [--before-lib DIR] [--python]
                                   [--output benchmarks/results/c_fast5_by_id.md]

--before-lib DIR: a folder with an earlier build's libh5turbo.so, run beside this one.
--python: also from Python, ont_fast5_api (each file opened once and kept, get_read per
id: its best case) and h5turbo.Fast5Index.get_reads on 1 and 2 threads
(python_readers.py; times include the interpreter's start and imports).
The files are benchmarks/fast5.py's 50 multi-read vbz files (20000 reads, HDF5 1.10
format), as in bench.py; the read order is a fixed shuffle. Warm: every file read before
each run; cold: evicted (posix_fadvise DONTNEED, mincore-checked) before each run.
Interleaved rounds, medians; every program prints the same totals, checked first.
Needs `make c` and libhdf5-dev (the vbz plugin from ont-fast5-api).
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(REPO / "python"))
import fast5  # noqa: E402  (the benchmark files)
from bench import before_library, build, timed_run, vbz_plugin  # noqa: E402
from h5turbo.bench.measure import evict, machine, paired_ratio, warm  # noqa: E402
from h5turbo.bench.report import publish  # noqa: E402


def read_list(paths: list[Path], out: Path) -> Path:
    """`read_id<TAB>path` for every read of `paths` (multi-read files: the read groups'
    names), shuffled with a fixed seed."""
    import h5py
    rows = []
    for p in paths:
        with h5py.File(p, "r") as f:
            rows += [f"{name[len('read_'):]}\t{p}\n" for name in f if name.startswith("read_")]
    random.Random(2026).shuffle(rows)
    out.write_text("".join(rows))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--before-lib", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--python", action="store_true",
                        help="also the Python readers: ont_fast5_api and h5turbo.Fast5Index")
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "h5turbo"
    folder = cache / "fast5-bench-2000s-50x400m-30000"
    _, multis = fast5.make_files(folder, 2000, 50, 400, 30000, workers=os.cpu_count())
    listing = folder / "multi-files.txt"
    listing.write_text("".join(f"{p}\n" for p in multis))
    reads = read_list(multis, folder / "multi-reads-shuffled.txt")
    programs = build(Path(tempfile.mkdtemp(prefix="c_fast5_by_id-")), "get")
    methods = {"libhdf5, f5c-style (open per read), 1 process": [programs["hdf5"], reads]}
    for t in threads:
        methods[f"h5turbo_fast5_get, {t} C thread{'s' if t > 1 else ''}"] = [programs["h5turbo"], str(t), listing, reads]
        if args.before_lib:
            methods[f"h5turbo_fast5_get (before), {t} C thread{'s' if t > 1 else ''}"] = \
                ["env", f"LD_LIBRARY_PATH={before_library(args.before_lib.resolve())}", programs["h5turbo"], str(t), listing, reads]
    for t in threads:
        methods[f"h5turbo_fast5_get_batch (512 ids), {t} pool thread{'s' if t > 1 else ''}"] = \
            [programs["h5turbo"], str(t), listing, reads, "512"]
    readers = [sys.executable, str(HERE / "python_readers.py")]
    if args.python:
        methods["Python: ont_fast5_api get_read (files kept open)"] = readers + ["ont-by-id", reads]
        for t in threads:
            methods[f"Python: h5turbo.Fast5Index.get_reads, {t} thread{'s' if t > 1 else ''}"] = \
                readers + ["h5turbo-by-id", listing, reads, str(t)]
    env = dict(os.environ, HDF5_PLUGIN_PATH=vbz_plugin())
    outputs = {name: subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
               for name, cmd in methods.items()}
    if len(set(outputs.values())) != 1:
        raise AssertionError(f"the programs disagree: {outputs}")
    load_before = os.getloadavg()[0]
    rows = []
    for cache_state in ("warm", "cold"):
        times = {name: [] for name in methods}
        cpu = {name: [] for name in methods}
        notes = set()
        for _ in range(args.repeats):
            for name, cmd in methods.items():
                for p in multis:
                    if cache_state == "warm":
                        warm(p)
                    elif not (e := evict(p)).ok:
                        notes.add(e.note())
                wall, used = timed_run(cmd, env)
                times[name].append(wall)
                cpu[name].append(used)
                print(f"{cache_state} {name}: {times[name][-1]:.3f} s", file=sys.stderr, flush=True)
        base = times[next(iter(methods))]
        for name, runs in times.items():
            rows.append(f"| {cache_state} | {name} | {statistics.median(runs):.3f} | {', '.join(f'{r:.3f}' for r in runs)} | "
                        f"{paired_ratio(base, runs):.2f}x | {statistics.median(cpu[name]):.3f} |")
        rows += [f"| {cache_state} | note: {n} | | | | |" for n in sorted(notes)]
    title = "# fast5 reads fetched by id in random order, from C: libhdf5 (f5c-style) and h5turbo_fast5_get"
    lines = [title + (" (and from Python: ont_fast5_api, h5turbo.Fast5Index)" if args.python else ""), "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"- machine: {machine()}",
             f"- command: `make c && python {shlex.join(['benchmarks/c_fast5/by_id.py'] + (argv or sys.argv[1:]))}`",
             "- files: benchmarks/fast5.py's 50 multi-read vbz files (400 reads each, HDF5 1.10 format); the 20000 "
             "read ids in one fixed shuffle",
             "- programs: benchmarks/c_fast5/hdf5_get.c (per read H5Fopen, Raw/Signal H5Dread, channel_id's 4 float "
             "attributes, H5Fclose) and h5turbo_get.c (h5turbo_fast5_open on the 50 files, h5turbo_fast5_get per "
             "read from N C threads, or h5turbo_fast5_get_batch of 512 ids from one thread)" + (
                 "; with --python, python_readers.py (ont-by-id, h5turbo-by-id)" if args.python else "") +
             "; all sum every signal and print the same totals, checked first",
             f"- each: {args.repeats} interleaved rounds; times include process start and h5turbo's index build; "
             "speed-up = median of per-round ratios over libhdf5",
             f"- 1-minute load average before / after: {load_before:.1f} / {os.getloadavg()[0]:.1f}", "",
             "| cache | method | median wall s | runs (s) | vs libhdf5 | median CPU s |",
             "|---|---|---:|---|---:|---:|"] + rows + [
             "", f"Totals (reads, samples, signal sum, channel sum): {outputs[next(iter(methods))].strip()}"]
    publish(lines, args.output)


if __name__ == "__main__":
    main()
