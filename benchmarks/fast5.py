"""Read every raw signal of many vbz fast5 files: h5turbo.read_fast5 against an h5py
loop (with ONT's vbz plugin) and ont_fast5_api, warm page cache.

The files are written once with h5py + the vbz plugin into a cache directory outside
the repository (~/.cache/h5turbo/fast5-bench-...): single-read files and multi-read
files, signal lengths drawn from a log-normal distribution (median --median-samples,
clipped to 2,000..300,000 samples), a random walk like a real current trace.

Every method's reads are checked against the h5py loop's once (read ids, lengths and
the sum of every signal) before timing.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the test suite's file generator and plugin set-up
from h5turbo.bench.measure import interleaved_times, machine, paired_ratio, warm
from h5turbo.bench.report import publish
import conftest  # noqa: E402,F401  (sets up h5py's filter plugins, ONT's vbz among them)
from support import h5gen  # noqa: E402


def signal_lengths(rng: np.random.Generator, n: int, median: int) -> list[int]:
    return [int(x) for x in np.clip(rng.lognormal(np.log(median), 0.6, n), 2000, 300000)]


def make_files(folder: Path, singles: int, multis: int, reads_per_multi: int, median: int,
               workers: int = 1) -> list[Path]:
    """The benchmark's files (written once; a marker file says they are complete). Each
    file's content is fixed by its seed and lengths, drawn up front, so `workers`
    processes write the same files as one."""
    done = folder / "complete"
    single_dir, multi_dir = folder / "single", folder / "multi"
    if not done.exists():
        single_dir.mkdir(parents=True, exist_ok=True)
        multi_dir.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(2026)
        jobs = [(h5gen.write_fast5_single, single_dir / f"read_{i:05d}.fast5", length, i)
                for i, length in enumerate(signal_lengths(rng, singles, median))]
        jobs += [(h5gen.write_fast5_multi, multi_dir / f"batch_{i:03d}.fast5",
                  signal_lengths(rng, reads_per_multi, median), 10 ** 6 + i) for i in range(multis)]
        if workers > 1:
            from concurrent.futures import ProcessPoolExecutor
            with ProcessPoolExecutor(workers) as pool:
                list(pool.map(_write, jobs, chunksize=16))
        else:
            for job in jobs:
                _write(job)
        done.write_text("ok\n")
    return sorted(single_dir.glob("*.fast5")), sorted(multi_dir.glob("*.fast5"))


def _write(job) -> None:
    write, path, lengths, seed = job
    write(path, lengths, seed=seed)


# Each reader returns [(read_id, signal)] in file order; `summary` reduces that to what
# the timed runs keep (so no method pays for the check).

def h5py_signals(paths: list[Path]) -> Iterator:
    import h5py
    for p in paths:
        with h5py.File(p, "r") as f:
            if "Raw" in f:  # single-read
                for name, read in f["Raw/Reads"].items():
                    yield name, read["Signal"][()]
            else:
                for name, read in f.items():
                    yield name, read["Raw/Signal"][()]


def h5py_everything(paths: list[Path]) -> Iterator:
    """What read_fast5 gives: signal, the read's attributes and channel_id's."""
    import h5py
    for p in paths:
        with h5py.File(p, "r") as f:
            if "Raw" in f:
                channel = dict(f["UniqueGlobalKey/channel_id"].attrs)
                for read in f["Raw/Reads"].values():
                    attrs = dict(read.attrs)
                    yield attrs["read_id"].decode(), read["Signal"][()], channel
            else:
                for read in f.values():
                    attrs = dict(read["Raw"].attrs)
                    yield attrs["read_id"].decode(), read["Raw/Signal"][()], dict(read["channel_id"].attrs)


def ont_everything(paths: list[Path]) -> Iterator:
    from ont_fast5_api.fast5_interface import get_fast5_file
    for p in paths:
        with get_fast5_file(str(p), mode="r") as f:
            for r in f.get_reads():
                yield r.read_id, r.get_raw_data(), r.get_channel_info()


def h5turbo_everything(paths: list[Path], threads: int) -> Iterator:
    import h5turbo
    return ((r.read_id, r.signal, r.channel) for r in h5turbo.read_fast5(paths, threads=threads, on_error="raise"))


def summary(reads: Iterable) -> tuple[int, int]:
    """(reads, samples): consumes a stream, so a streamed run never holds more than the
    reader's own window."""
    count = samples = 0
    for read in reads:
        count += 1
        samples += len(read[1])
    return count, samples


def checked(reads: list, reference: list, ids: bool) -> None:
    assert len(reads) == len(reference), (len(reads), len(reference))
    for ours, theirs in zip(reads, reference):
        if ids:
            assert ours[0] == theirs[0]
        assert ours[1].dtype == np.int16 and np.array_equal(ours[1], theirs[1]), ours[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--singles", type=int, default=2000)
    parser.add_argument("--multis", type=int, default=50)
    parser.add_argument("--reads-per-multi", type=int, default=400)
    parser.add_argument("--median-samples", type=int, default=30000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ont-repeats", type=int, default=1, help="0 leaves ont_fast5_api out")
    parser.add_argument("--output", type=Path, default=None, help="markdown file to write the tables to")
    parser.add_argument("--stream", action="store_true",
                        help="count each read and drop it instead of keeping every signal in a list")
    args = parser.parse_args(argv)

    import h5py
    import h5turbo

    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "h5turbo"
    folder = cache / (f"fast5-bench-{args.singles}s-{args.multis}x{args.reads_per_multi}m"
                      f"-{args.median_samples}")
    singles, multis = make_files(folder, args.singles, args.multis, args.reads_per_multi, args.median_samples)
    warm(folder)
    cores = h5turbo.default_threads()
    load_before = os.getloadavg()[0]
    tables = []
    for label, paths in (("single-read", singles), ("multi-read", multis)):
        reference = list(h5py_everything(paths))
        expected = summary(reference)

        def check(got, expected=expected):
            if got != expected:
                raise AssertionError(f"(reads, samples) {got}, expected {expected}")

        methods = [("h5py loop, signals only", lambda: h5py_signals(paths), False),
                   ("h5py loop, signals + read and channel attributes", lambda: h5py_everything(paths), True),
                   (f"h5turbo.read_fast5, {cores} threads", lambda: h5turbo_everything(paths, cores), True),
                   ("h5turbo.read_fast5, 1 thread", lambda: h5turbo_everything(paths, 1), True)]
        if args.ont_repeats:
            methods.append(("ont_fast5_api loop (get_raw_data, get_channel_info)", lambda: ont_everything(paths),
                            True))
        runs_of = {}
        for name, read, ids in methods:
            checked(list(read()), reference, ids)
            # collected: every read kept in a list (all signals in memory at the end);
            # streamed: each read dropped once counted (the reader's window bounds memory)
            runs_of[name] = ((lambda read=read: summary(read())) if args.stream
                             else (lambda read=read: summary(list(read()))))
        ont = {name: runs_of.pop(name) for name in list(runs_of) if name.startswith("ont_fast5_api")}
        times = interleaved_times(runs_of, args.repeats, check, before=lambda: warm(folder))
        if ont:
            times.update(interleaved_times(ont, args.ont_repeats, check, before=lambda: warm(folder)))
        base = times[methods[0][0]]
        rows = []
        for name, runs in times.items():
            ratio = paired_ratio(base, runs) if len(runs) == len(base) else float(np.median(base) / np.median(runs))
            rows.append((name, float(np.median(runs)), runs, ratio))
            print(f"{label}: {name}: {np.median(runs):.3f} s", file=sys.stderr)
        floor = decode_floor(paths, cores, args.repeats)
        if floor is not None:
            rows.append((f"floor: vbz decode only, {cores} threads (chunks from memory, no files, no Python)",
                         floor, [floor], float(np.median(base)) / floor))
        tables.append((label, paths, expected, rows))
    load_after = os.getloadavg()[0]

    argv_text = shlex.join(["benchmarks/fast5.py"] + (argv if argv is not None else sys.argv[1:]))
    lines = [
        "# Every raw signal of many vbz fast5 files, warm page cache"
        + (", streamed (each read dropped once counted)" if args.stream else ", collected (all kept in a list)"),
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}",
        f"- command: `python {argv_text}`",
        f"- versions: h5turbo {h5turbo.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), "
        f"numpy {np.__version__}",
        f"- files: {len(singles)} single-read + {len(multis)} multi-read ({args.reads_per_multi} reads each), "
        f"written by h5py with ONT's vbz plugin (filter 32020, options 0, 2, 1, 1), "
        f"signal lengths log-normal, median {args.median_samples} samples",
        "- each: every method's reads checked against the h5py loop's once and warmed up; then "
        f"{args.repeats} rounds, each timing every method once in turn (ont_fast5_api: {args.ont_repeats} "
        "rounds of its own); page cache warmed before every run. Speed-up: the median over rounds of the "
        "h5py loop's time over the method's in the same round (the floor: over the h5py median)",
        f"- 1-minute load average before / after: {load_before:.1f} / {load_after:.1f} "
        "(other work on the machine shares its cores)",
    ]
    for label, paths, (n_reads, n_samples), rows in tables:
        size = sum(p.stat().st_size for p in paths) / 2 ** 20
        lines += ["", f"## {label}: {len(paths)} files, {n_reads} reads, {n_samples / 1e6:.1f} M samples, "
                      f"{size:.0f} MiB on disk", "",
                  "| method | median s | runs (s), round by round | reads/s | vs h5py signals loop |",
                  "|---|---:|---|---:|---:|"]
        for name, t, runs, ratio in rows:
            lines.append(f"| {name} | {t:.3f} | {', '.join(f'{x:.3f}' for x in runs)} | {n_reads / t:,.0f} | "
                         f"{ratio:.2f}x |")
    publish(lines, args.output)
    return 0


def decode_floor(paths, threads: int, repeats: int):
    """Median seconds to decode every Signal chunk of these files from memory into a
    ready buffer (h5turbo._native.fast5_limit), the floor under any reader built on
    these decoders."""
    import h5turbo
    return h5turbo._native.fast5_limit([str(p) for p in paths], threads, repeats)


if __name__ == "__main__":
    sys.exit(main())
