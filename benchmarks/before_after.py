"""The same reads with two h5turbo builds, interleaved: this tree against an earlier one
(--before DIR: a folder holding an `h5turbo` package with its _native extension, for
example a checkout of an earlier commit after `make setup`). It answers "did a change
make anything slower?" for the workloads of the other benchmarks, warm page cache:

  read_reference  read-all of read_reference.py's matrix (30000 x 20000 int32, gzip 3,
                  chunks 512 x 512), all cores and one thread
  colsums         colsums.py's column sums (the same matrix, chunks 100 x 100), ds.sum(axis=0)
  fast5           fast5.py's files: 2000 single-read and 50 x 400 multi-read vbz files, read_fast5
  codecs          read-all of an 8192 x 8192 int32 matrix (random 1..100, chunks 512 x 512)
                  per codec (gzip, shuffle + gzip, lzf, lz4, zstd, blosc-lz4, bitshuffle-lz4)

Each timed run is a process of its own (the build on PYTHONPATH, one untimed warm-up
read, then one timed read; the checksum of what it read is compared between builds);
rounds go workload by workload, build after build. Reported: medians, and the median
over rounds of before / now (above 1: now is faster), for the wall clock and for the
CPU time the reading process spent.

    python benchmarks/before_after.py --before DIR [--rounds 5] [--workloads ...] [--output FILE]
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
# A worker is started with the build it times on PYTHONPATH: that build must come before
# this repository's package (until 2026-11-26 it did not, and "before" timed this build).
for _entry in reversed([e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]):
    sys.path.insert(0, _entry)
from h5turbo.bench.measure import paired_ratio, warm  # noqa: E402
from h5turbo.bench.report import publish, run_header  # noqa: E402

CODECS = {
    "gzip": dict(compression="gzip", compression_opts=3),
    "shuffle-gzip": dict(compression="gzip", compression_opts=3, shuffle=True),
    "lzf": dict(compression="lzf"),
    "lz4": "LZ4",
    "zstd": "Zstd",
    "blosc-lz4": "Blosc",
    "bitshuffle-lz4": "Bitshuffle",
}


def codec_kwargs(name: str) -> dict:
    spec = CODECS[name]
    if isinstance(spec, dict):
        return spec
    import hdf5plugin
    return dict(getattr(hdf5plugin, spec)())


def data_files(name: str) -> list[Path]:
    """The files a workload reads (written once where they are missing)."""
    from h5turbo.demo import cache_dir, write_matrix
    if name.startswith("read_reference"):
        path = cache_dir() / "demo-30000x20000-c512-gzip3.h5"
        if not path.exists():
            write_matrix(path, 30000, 20000, 512, 3)
        return [path]
    if name == "colsums":
        path = cache_dir() / "demo-30000x20000-c100-gzip3.h5"
        if not path.exists():
            write_matrix(path, 30000, 20000, 100, 3)
        return [path]
    if name.startswith("fast5"):
        from fast5 import make_files  # benchmarks/fast5.py's files, its default sizes
        singles, multis = make_files(cache_dir() / "fast5-bench-2000s-50x400m-30000", 2000, 50, 400, 30000)
        return singles if name == "fast5-single" else multis
    codec = name.split(":", 1)[1]
    path = cache_dir() / "bench" / f"before-after-8192-{codec}.h5"
    if not path.exists():
        write_codec_matrix(path, codec)
    return [path]


def write_codec_matrix(path: Path, codec: str) -> None:
    import h5py
    import numpy as np
    path.parent.mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(42).integers(1, 101, size=(8192, 8192), dtype=np.int32)
    tmp = path.with_suffix(".partial")
    with h5py.File(tmp, "w") as f:
        f.create_dataset("matrix", data=data, chunks=(512, 512), **codec_kwargs(codec))
    os.replace(tmp, path)


def workload(name: str, files: list[Path]):
    """A function doing the workload's read once and returning a checksum."""
    import numpy as np
    import h5turbo
    if name.startswith("fast5"):
        def read():
            total = 0
            for r in h5turbo.read_fast5(files, on_error="raise"):
                total += int(r.signal.sum(dtype=np.int64))
            return total
        return read
    f = h5turbo.File(files[0], "r")
    ds = f["matrix"]
    if name == "colsums":
        return lambda: int(ds.sum(axis=0).sum())
    threads = 1 if name.endswith("1 thread") else None
    return lambda: int(ds.read(threads=threads)[::97, ::89].sum(dtype=np.int64))


def worker(name: str, files: list[str]) -> None:
    read = workload(name, [Path(p) for p in files])
    read()  # warm-up: page cache, thread pools, allocator
    start, cpu = time.perf_counter(), time.process_time()
    checksum = read()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "cpu": cpu, "checksum": checksum}))


def run_once(build: Path, name: str, files: list[Path]) -> tuple[float, float, int]:
    env = dict(os.environ, PYTHONPATH=str(build))
    out = subprocess.run([sys.executable, __file__, "--worker", name, *map(str, files)], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{name} with {build}: {out.stderr.strip()[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["seconds"], result["cpu"], result["checksum"]


def all_workloads() -> list[str]:
    return (["read_reference", "read_reference 1 thread", "colsums", "fast5-single", "fast5-multi"]
            + [f"codecs:{c}" for c in CODECS])


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="folder holding the earlier h5turbo package")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workloads", default=",".join(all_workloads()),
                        help="comma-separated; default: all (see the description)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    builds = {"before": args.before.resolve(), "now": (HERE.parent / "python").resolve()}
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    files = {name: data_files(name) for name in names}
    times: dict = {(name, b): [] for name in names for b in builds}
    cpus: dict = {(name, b): [] for name in names for b in builds}
    started, load_before = time.time(), os.getloadavg()
    for rnd in range(args.rounds):
        for name in names:
            for f in files[name]:
                warm(f)
            sums = set()
            for build, folder in builds.items():
                seconds, cpu, checksum = run_once(folder, name, files[name])
                times[(name, build)].append(seconds)
                cpus[(name, build)].append(cpu)
                sums.add(checksum)
                print(f"round {rnd + 1} {name} {build}: {seconds:.3f} s, CPU {cpu:.3f} s", file=sys.stderr, flush=True)
            if len(sums) != 1:
                raise SystemExit(f"{name}: the builds read different values ({sums})")
    load_after = os.getloadavg()
    lines = run_header("Before and after: the same warm reads with two h5turbo builds", started, load_before,
                       load_after, __file__, sys.argv[1:] if argv is None else argv)
    lines += [
        f"- before: {args.before}; now: this tree; each timed run a process of its own after an untimed "
        f"warm-up read; {args.rounds} interleaved rounds; the two builds' results checked equal",
        "",
        "- CPU: user + system time of the reading process during the timed read, all its threads; on a",
        "  shared machine it moves less with other work than the wall clock does",
        "",
        "| workload | before s | now s | before / now (paired) | before CPU s | now CPU s | before / now CPU (paired) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        b, n = times[(name, "before")], times[(name, "now")]
        cb, cn = cpus[(name, "before")], cpus[(name, "now")]
        lines.append(f"| {name} | {statistics.median(b):.3f} | {statistics.median(n):.3f} | {paired_ratio(b, n):.2f} "
                     f"| {statistics.median(cb):.3f} | {statistics.median(cn):.3f} | {paired_ratio(cb, cn):.2f} |")
    lines += ["", "Runs (s), round by round:", ""]
    for (name, build), v in times.items():
        lines.append(f"- {name} {build}: {', '.join(f'{x:.3f}' for x in v)} (CPU "
                     f"{', '.join(f'{x:.3f}' for x in cpus[(name, build)])})")
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
