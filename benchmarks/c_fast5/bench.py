"""fast5 loading from C: an f5c-style libhdf5 loop against h5turbo's C fast5 API.

python benchmarks/c_fast5/bench.py [--repeats N] [--output benchmarks/results/c_fast5.md]

Needs `make c` (build/c) and libhdf5-dev (pkg-config hdf5-serial); the vbz plugin for
libhdf5 is taken from the ont-fast5-api package (HDF5_PLUGIN_PATH). The files are
benchmarks/fast5.py's (2000 single-read and 50 multi-read vbz files, written once into
~/.cache/h5turbo/fast5-bench-...; HDF5 1.10 format). Both programs do the same work
(every read's int16 signal and the four channel_id floats) and print the same totals,
checked before timing. Warm: every file read once before each run. Cold: every file
dropped from the page cache (posix_fadvise DONTNEED, checked with mincore) before each
run. Interleaved rounds; medians; ratios are the median of per-round ratios.
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
import fast5  # noqa: E402  (the benchmark files)
from benchlib import machine, paired_ratio, publish, warm  # noqa: E402
from h5turbo.bench.measure import evict  # noqa: E402


def build(out: Path) -> dict[str, Path]:
    """Compile the two programs against build/c and libhdf5."""
    pc = "hdf5-serial" if subprocess.run(["pkg-config", "--exists", "hdf5-serial"]).returncode == 0 else "hdf5"
    hdf5 = subprocess.run(["pkg-config", "--cflags", "--libs", pc], capture_output=True, text=True, check=True).stdout.split()
    lib = REPO / "build/c/lib"
    # -O3: the checksum loop over the signals (the same in both programs) vectorized
    cc = ["cc", "-std=gnu11", "-O3", "-march=x86-64-v2"]
    subprocess.run(cc + ["-o", out / "hdf5_loop", HERE / "hdf5_loop.c"] + hdf5, check=True)
    subprocess.run(cc + [f"-I{REPO / 'build/c/include'}", "-o", out / "h5turbo_loop", HERE / "h5turbo_loop.c",
                         f"-L{lib}", "-lh5turbo", f"-Wl,-rpath,{lib}"], check=True)
    return {"hdf5": out / "hdf5_loop", "h5turbo": out / "h5turbo_loop"}


def vbz_plugin() -> str:
    import ont_fast5_api
    return str(Path(ont_fast5_api.__file__).parent / "vbz_plugin")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "h5turbo"
    folder = cache / "fast5-bench-2000s-50x400m-30000"
    singles, multis = fast5.make_files(folder, 2000, 50, 400, 30000)
    work = Path(tempfile.mkdtemp(prefix="c_fast5-"))
    programs = build(work)
    env = dict(os.environ, HDF5_PLUGIN_PATH=vbz_plugin())
    load_before = os.getloadavg()[0]
    tables = []
    for label, paths in (("2000 single-read files", singles), ("50 multi-read files (20000 reads)", multis)):
        listing = work / "files.txt"
        listing.write_text("".join(f"{p}\n" for p in paths))
        methods = {
            "libhdf5 loop (f5c-style), 1 process": [programs["hdf5"], "1", listing],
            "libhdf5 loop (f5c-style), 2 processes": [programs["hdf5"], "2", listing],
            # batches of 512 reads: f5c's default batch size (-K)
            "h5turbo fast5 API, 1 thread": [programs["h5turbo"], "1", listing, "512"],
            "h5turbo fast5 API, 2 threads": [programs["h5turbo"], "2", listing, "512"],
        }
        outputs = {name: subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
                   for name, cmd in methods.items()}
        if len(set(outputs.values())) != 1:
            raise AssertionError(f"the programs disagree: {outputs}")
        for cache_state in ("warm", "cold"):
            notes = set()

            def before():
                if cache_state == "warm":
                    warm(folder)
                else:
                    for p in paths:
                        e = evict(p)
                        if not e.ok:
                            notes.add(e.note())

            times = {name: [] for name in methods}
            cpu = {name: [] for name in methods}
            for _ in range(args.repeats):
                for name, cmd in methods.items():
                    before()
                    used = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start = time.perf_counter()
                    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
                    times[name].append(time.perf_counter() - start)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu[name].append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
            tables.append((label, cache_state, outputs[next(iter(methods))].split(), times, cpu, sorted(notes)))
    load_after = os.getloadavg()[0]

    import statistics
    lines = ["# fast5 from C: an f5c-style libhdf5 loop against h5turbo's C fast5 API", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"- machine: {machine()}",
             f"- command: `make c && python {shlex.join(['benchmarks/c_fast5/bench.py'] + (argv or sys.argv[1:]))}`",
             "- files: benchmarks/fast5.py's (h5py + ONT's vbz plugin, HDF5 1.10 format, signal lengths log-normal, "
             "median 30000 samples)",
             "- programs: benchmarks/c_fast5/hdf5_loop.c (per file H5Fopen, file_version, per read Raw/Signal "
             "H5Dread + channel_id's 4 float attributes; libhdf5 1.10 serial, so 2 = two forked processes as f5c's "
             "--iop) and h5turbo_loop.c (h5turbo_fast5_open + next_batch(512), f5c's default batch); both print the same totals, "
             "checked first",
             f"- each: {args.repeats} interleaved rounds, every program once per round; warm = files read before "
             "each run, cold = files evicted (posix_fadvise DONTNEED, mincore-checked) before each run; "
             "times include process start; speed-up = median of per-round ratios over the 1-process libhdf5 loop",
             f"- 1-minute load average before / after: {load_before:.1f} / {load_after:.1f}", ""]
    lines += ["| files | cache | method | median wall s | runs (s) | wall vs libhdf5 1 process | "
              "median CPU s (user + sys) | min CPU s | CPU vs libhdf5 1 process |",
              "|---|---|---|---:|---|---:|---:|---:|---:|"]
    for label, cache_state, totals, times, cpu, notes in tables:
        base = times["libhdf5 loop (f5c-style), 1 process"]
        base_cpu = cpu["libhdf5 loop (f5c-style), 1 process"]
        for name, runs in times.items():
            lines.append(f"| {label} | {cache_state} | {name} | {statistics.median(runs):.3f} | "
                         f"{', '.join(f'{r:.3f}' for r in runs)} | {paired_ratio(base, runs):.2f}x | "
                         f"{statistics.median(cpu[name]):.3f} | {min(cpu[name]):.3f} | "
                         f"{paired_ratio(base_cpu, cpu[name]):.2f}x |")
        if notes:
            lines.append(f"| {label} | {cache_state} | note: {'; '.join(notes)} | | | | | | |")
    lines.append("")
    lines.append("Totals (reads, samples, signal sum, channel sum): " +
                 "; ".join(f"{label}: {' '.join(t)}" for label, c, t, *_ in tables if c == "warm"))
    publish(lines, args.output)


if __name__ == "__main__":
    main()
