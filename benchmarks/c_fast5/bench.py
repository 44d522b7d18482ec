"""fast5 loading from C: an f5c-style libhdf5 loop against h5turbo's C fast5 API, and
the same reads converted to BLOW5 (read by slow5lib) and POD5 (read by the pod5 library).

python benchmarks/c_fast5/bench.py [--repeats N] [--slow5lib DIR] [--threads 1,2] [--programs DIR]
                                   [--data DIR] [--before-lib DIR] [--output benchmarks/results/c_fast5.md]

--before-lib DIR: a folder holding an earlier build's libh5turbo.so; the h5turbo rows are
then also run against it (the same program, the library found first through
LD_LIBRARY_PATH), interleaved with the others.

Needs `make c` (build/c) and libhdf5-dev (pkg-config hdf5-serial); the vbz plugin for
libhdf5 is taken from the ont-fast5-api package (HDF5_PLUGIN_PATH). The files are
benchmarks/fast5.py's (2000 single-read and 50 multi-read vbz files, written once into
~/.cache/h5turbo/fast5-bench-...; HDF5 1.10 format). Every program does the same work
(every read's int16 signal and the four channel_id floats) and prints the same totals,
checked before timing. Warm: every file a program reads, read once before each run.
Cold: those files dropped from the page cache (posix_fadvise DONTNEED, checked with
mincore) before each run. Interleaved rounds; medians; ratios are the median of
per-round ratios.

The peers (each row left out, with a note, when its piece is missing):
- BLOW5: each set of files converted once (with pyslow5: zstd records, svb-zd signals)
  into one BLOW5 file, read by blow5_loop.c through slow5lib's multi-threaded batch API.
  slow5lib is built from the source tree given with --slow5lib (the pyslow5 source
  package holds one: `pip download --no-deps --no-binary :all: pyslow5` in an
  environment with Cython and numpy, then unpack) with zstd (libzstd-dev).
- POD5: each set converted once (with the pod5 package, its default vbz signal
  compression) into one POD5 file, read with the pod5 library's Reader from Python
  (the library has no C API on the package index); beside it, h5turbo's Python
  read_fast5 on the fast5 files, so the two Python rows compare like with like.
  (`pip install pyslow5 pod5` for the conversions and the POD5 reader.)
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
sys.path.insert(0, str(REPO / "python"))
import fast5  # noqa: E402  (the benchmark files)
from h5turbo.bench.measure import evict, machine, paired_ratio, warm  # noqa: E402
from h5turbo.bench.report import publish  # noqa: E402


CC = ["cc", "-std=gnu11", "-O3", "-march=x86-64-v2"]  # -O3: the checksum loop, the same in every program, vectorized


def build(out: Path, kind: str = "loop") -> dict[str, Path]:
    """Compile the libhdf5 and h5turbo programs (hdf5_KIND.c, h5turbo_KIND.c) against
    libhdf5 and build/c."""
    pc = "hdf5-serial" if subprocess.run(["pkg-config", "--exists", "hdf5-serial"]).returncode == 0 else "hdf5"
    hdf5 = subprocess.run(["pkg-config", "--cflags", "--libs", pc], capture_output=True, text=True, check=True).stdout.split()
    lib = REPO / "build/c/lib"
    subprocess.run(CC + ["-o", out / f"hdf5_{kind}", HERE / f"hdf5_{kind}.c"] + hdf5, check=True)
    subprocess.run(CC + [f"-I{REPO / 'build/c/include'}", "-o", out / f"h5turbo_{kind}", HERE / f"h5turbo_{kind}.c",
                         f"-L{lib}", "-lh5turbo", "-lpthread", f"-Wl,-rpath,{lib}"], check=True)
    return {"hdf5": out / f"hdf5_{kind}", "h5turbo": out / f"h5turbo_{kind}"}


def build_blow5_loop(out: Path, slow5lib: Path) -> Path:
    """slow5lib (zstd, multi-threaded API; its own Makefile and flags), then blow5_loop."""
    subprocess.run(["make", "-s", "-C", slow5lib, "zstd=1", "slow5_mt=1", "lib/libslow5.a"], check=True)
    subprocess.run(CC + [f"-I{slow5lib / 'include'}", "-o", out / "blow5_loop", HERE / "blow5_loop.c",
                         slow5lib / "lib/libslow5.a", "-lzstd", "-lz", "-lm", "-lpthread"], check=True)
    return out / "blow5_loop"


def soname() -> str:
    """The name this build's programs load libh5turbo by (crates/h5turbo-c/build.rs)."""
    version = next(line.split('"')[1] for line in (REPO / "Cargo.toml").read_text().splitlines()
                   if line.startswith("version = "))
    major, minor = version.split(".")[:2]
    return f"libh5turbo.so.{'0.' + minor if major == '0' else major}"


def before_library(folder: Path) -> Path:
    """A folder for LD_LIBRARY_PATH that gives this build's programs an earlier build's
    library: FOLDER when it holds the file they load (the SONAME), else a new folder with
    that name linked to FOLDER's libh5turbo.so (builds before 2026-12-07 had no SONAME;
    without the link the loader would fall through to this build's)."""
    if (folder / soname()).exists():
        return folder
    if not (folder / "libh5turbo.so").exists():
        raise SystemExit(f"--before-lib {folder}: no libh5turbo.so there")
    linked = Path(tempfile.mkdtemp(prefix="before-lib-"))
    (linked / soname()).symlink_to((folder / "libh5turbo.so").resolve())
    return linked


def vbz_plugin() -> str:
    """libhdf5's plugin path: ont-fast5-api's vbz plugin, or HDF5_PLUGIN_PATH as given
    (where that package is not installed)."""
    if not importable("ont_fast5_api"):
        if not os.environ.get("HDF5_PLUGIN_PATH"):
            raise SystemExit("the vbz plugin: install ont-fast5-api or set HDF5_PLUGIN_PATH")
        return os.environ["HDF5_PLUGIN_PATH"]
    import ont_fast5_api
    return str(Path(ont_fast5_api.__file__).parent / "vbz_plugin")


def converted(paths: list[Path], out: Path, write) -> Path:
    """`out`, written once from the reads of `paths` by `write(reads, temporary path)`."""
    if not out.exists():
        import h5turbo
        tmp = out.with_name(out.stem + ".tmp" + out.suffix)  # the libraries go by the extension
        tmp.unlink(missing_ok=True)
        write(h5turbo.read_fast5([str(p) for p in paths], on_error="raise"), tmp)
        tmp.rename(out)
    return out


def write_blow5(reads, path: Path) -> None:
    import pyslow5
    s5 = pyslow5.Open(str(path), "w", rec_press="zstd", sig_press="svb_zd")
    if s5.write_header({"run_id": "h5turbo-bench"}) != 0:
        raise RuntimeError(f"{path}: pyslow5 could not write the header")
    for r in reads:
        record = s5.get_empty_record()
        record.update(read_id=r.read_id, read_group=0, digitisation=float(r.channel["digitisation"]),
                      offset=float(r.channel["offset"]), range=float(r.channel["range"]),
                      sampling_rate=float(r.channel["sampling_rate"]), len_raw_signal=len(r.signal), signal=r.signal)
        if s5.write_record(record) != 0:
            raise RuntimeError(f"{path}: pyslow5 could not write read {r.read_id}")
    s5.close()


def write_pod5(reads, path: Path) -> None:
    import datetime as dt
    import uuid
    import pod5
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    run_info = None
    with pod5.Writer(str(path)) as writer:
        for r in reads:
            ch = r.channel
            if run_info is None:
                run_info = pod5.RunInfo(
                    acquisition_id="h5turbo-bench", acquisition_start_time=start, adc_max=0, adc_min=0,
                    context_tags={}, experiment_name="", flow_cell_id="", flow_cell_product_code="",
                    protocol_name="", protocol_run_id="", protocol_start_time=start, sample_id="",
                    sample_rate=int(ch["sampling_rate"]), sequencing_kit="", sequencer_position="",
                    sequencer_position_type="", software="", system_name="", system_type="", tracking_id={})
            writer.add_read(pod5.Read(
                read_id=uuid.UUID(r.read_id), pore=pod5.Pore(channel=1, well=1, pore_type="not_set"),
                calibration=pod5.Calibration(offset=float(ch["offset"]), scale=float(ch["range"]) / float(ch["digitisation"])),
                read_number=0, start_sample=0, median_before=0.0,
                end_reason=pod5.EndReason.from_reason_with_default_forced(pod5.EndReasonEnum.UNKNOWN),
                run_info=run_info, signal=r.signal))


def plural(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def importable(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None


def methods_for(label: str, paths: list[Path], folder: Path, programs: dict, args, notes: list) -> dict:
    """name -> (command, the files it reads) for one set of files."""
    listing = folder / f"{label.split()[0]}-files.txt"
    listing.write_text("".join(f"{p}\n" for p in paths))
    py = [sys.executable, HERE / "python_readers.py"]
    threads = args.threads
    methods = {f"libhdf5 loop (f5c-style), {plural(t, 'process', 'processes')}": ([programs["hdf5"], str(t), listing], paths)
               for t in threads}
    # batches of 512 reads: f5c's default batch size (-K)
    methods.update({f"h5turbo fast5 API, {plural(t, 'thread')}": ([programs["h5turbo"], str(t), listing, "512"], paths)
                    for t in threads})
    if args.before_lib:
        search = os.pathsep.join([str(args.before_lib)] + [p for p in [os.environ.get("LD_LIBRARY_PATH")] if p])
        methods.update({f"h5turbo fast5 API (before), {plural(t, 'thread')}":
                        (["env", f"LD_LIBRARY_PATH={search}", programs["h5turbo"], str(t), listing, "512"], paths)
                        for t in threads})
    kind = label.split()[1]  # "single-read" / "multi-read"
    if "blow5" in programs and importable("pyslow5"):
        blow5 = converted(paths, folder / f"{kind}.blow5", write_blow5)
        for t in threads:
            methods[f"BLOW5, slow5lib batch API, {plural(t, 'thread')}"] = ([programs["blow5"], str(t), blow5, "512"], [blow5])
    else:
        notes.append("BLOW5 rows left out: " + ("no --slow5lib" if "blow5" not in programs else "pyslow5 is not installed"))
    most = max(threads)
    methods[f"h5turbo.read_fast5 from Python, {plural(most, 'thread')}"] = (py + ["h5turbo", listing, str(most)], paths)
    if importable("pod5"):
        pod5_file = converted(paths, folder / f"{kind}.pod5", write_pod5)
        methods["POD5, pod5 library from Python"] = (py + ["pod5", pod5_file], [pod5_file])
    else:
        notes.append("POD5 row left out: the pod5 package is not installed")
    return methods


def timed_run(cmd: list, env: dict) -> tuple[float, float]:
    """Run `cmd` (its output dropped): wall seconds and CPU seconds (user + system)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime


def agree(outputs: dict[str, str]) -> None:
    """Every program read the same reads, samples and signal sum (and, where it has them,
    the same channel sum: POD5 keeps a scale, not digitisation and range)."""
    first = {name: out.split()[:3] for name, out in outputs.items()}
    full = {name: out.split() for name, out in outputs.items() if len(out.split()) == 4}
    if len({tuple(v) for v in first.values()}) != 1 or len({tuple(v) for v in full.values()}) != 1:
        raise AssertionError(f"the programs disagree: {outputs}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--slow5lib", type=Path, default=None, help="a slow5lib source tree (for the BLOW5 rows)")
    parser.add_argument("--threads", default="1,2", help="thread (and libhdf5 process) counts, e.g. 1,2,4,8,16")
    parser.add_argument("--programs", type=Path, default=None,
                        help="a folder with hdf5_loop, h5turbo_loop (and blow5_loop) built earlier, "
                             "for a machine without libhdf5-dev or a compiler")
    parser.add_argument("--data", type=Path, default=None, help="folder for the fast5 files (default: a cache folder)")
    parser.add_argument("--before-lib", type=Path, default=None,
                        help="a folder with an earlier libh5turbo.so, run beside this build's")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.before_lib:
        args.before_lib = before_library(args.before_lib.resolve())
    args.threads = [int(t) for t in args.threads.split(",")]
    if 1 not in args.threads:
        parser.error("--threads must include 1: the speed-ups are over the 1-process libhdf5 loop")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "h5turbo"
    folder = args.data or cache / "fast5-bench-2000s-50x400m-30000"
    singles, multis = fast5.make_files(folder, 2000, 50, 400, 30000, workers=os.cpu_count())
    if args.programs:
        programs = {name: args.programs / f"{name}_loop" for name in ("hdf5", "h5turbo", "blow5")
                    if (args.programs / f"{name}_loop").exists()}
    else:
        work = Path(tempfile.mkdtemp(prefix="c_fast5-"))
        programs = build(work)
        if args.slow5lib:
            programs["blow5"] = build_blow5_loop(work, args.slow5lib.resolve())
    env = dict(os.environ, HDF5_PLUGIN_PATH=vbz_plugin())
    load_before = os.getloadavg()[0]
    tables, notes_all = [], []
    for label, paths in (("2000 single-read files", singles), ("50 multi-read files (20000 reads)", multis)):
        methods = methods_for(label, paths, folder, programs, args, notes_all)
        outputs = {name: subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
                   for name, (cmd, _) in methods.items()}
        agree(outputs)
        for cache_state in ("warm", "cold"):
            notes = set()

            def before(files):
                for p in files:
                    if cache_state == "warm":
                        warm(p)
                    else:
                        e = evict(p)
                        if not e.ok:
                            notes.add(e.note())

            times = {name: [] for name in methods}
            cpu = {name: [] for name in methods}
            for _ in range(args.repeats):
                for name, (cmd, files) in methods.items():
                    before(files)
                    wall, used = timed_run(cmd, env)
                    times[name].append(wall)
                    cpu[name].append(used)
                    print(f"{label} {cache_state} {name}: {times[name][-1]:.3f} s (load {os.getloadavg()[0]:.1f})",
                          file=sys.stderr, flush=True)
            tables.append((label, cache_state, outputs[next(iter(methods))].split(), times, cpu, sorted(notes)))
    load_after = os.getloadavg()[0]

    import statistics
    lines = ["# fast5 from C: an f5c-style libhdf5 loop, h5turbo's C fast5 API, slow5lib on BLOW5, pod5 on POD5", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"- machine: {machine()}",
             f"- command: `make c && python {shlex.join(['benchmarks/c_fast5/bench.py'] + (argv or sys.argv[1:]))}`",
             "- files: benchmarks/fast5.py's (h5py + ONT's vbz plugin, HDF5 1.10 format, signal lengths log-normal, "
             "median 30000 samples)",
             "- programs: benchmarks/c_fast5/hdf5_loop.c (per file H5Fopen, file_version, per read Raw/Signal "
             "H5Dread + channel_id's 4 float attributes; libhdf5 1.10 serial, so 2 = two forked processes as f5c's "
             "--iop) and h5turbo_loop.c (h5turbo_fast5_open + next_batch(512), f5c's default batch); blow5_loop.c "
             "(slow5lib's slow5_get_next_batch(512) on one BLOW5 file per set, zstd + svb-zd, written with pyslow5); "
             "python_readers.py (pod5.Reader on one POD5 file per set, written with pod5; h5turbo.read_fast5); all "
             "print the same totals, checked first (the POD5 reader without the channel sum: POD5 keeps a scale)",
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
    lines += [f"- {n}" for n in dict.fromkeys(notes_all)]
    lines.append("")
    lines.append("Totals (reads, samples, signal sum, channel sum): " +
                 "; ".join(f"{label}: {' '.join(t)}" for label, c, t, *_ in tables if c == "warm"))
    publish(lines, args.output)


if __name__ == "__main__":
    main()
