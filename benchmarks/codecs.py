"""Read-all per codec (issue 3, "Speed"): h5turbo against h5py + hdf5plugin, and
against zarr-python + zarrs and tensorstore reading the same matrix stored as zarr v3
with the same codec; plus each codec's codec-only limit and h5turbo's fraction of it.

The matrix is random int32 1..100 (seed 42), chunks 512 x 512 (1 MiB). Files are
written once per size and codec into a cache folder outside the repository
(~/.cache/h5turbo/bench, or $H5TURBO_BENCH_DIR) and reused. Every reader gets a
warm-up read (checked equal to the source array), then the median of --repeats
timed runs is reported; the page cache is warmed before each reader. The codec-only
limit is h5turbo._native.codec_limit (every stored chunk decoded from memory into a
pre-faulted buffer on all cores).

    python benchmarks/codecs.py [--rows 30000 --cols 20000] [--repeats 5]
                                [--codecs zstd,gzip,...] [--output FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parent.parent
from h5turbo.bench.measure import codec_limit, machine, median_time, size_on_disk, warm
from h5turbo.bench.report import publish
CHUNK = 512


@dataclass
class Codec:
    """One row: how h5py writes it, how zarr v3 writes the same thing (None: no
    zarr equivalent), and a note on what exactly is compared."""
    name: str
    h5py_kwargs: Callable[[], dict]
    zarr_codecs: Callable[[], list] | None
    note: str = ""


def _blosc_h5(cname: str, shuffle: str) -> Callable[[], dict]:
    def kwargs():
        import hdf5plugin
        mode = {"shuffle": hdf5plugin.Blosc.SHUFFLE, "bitshuffle": hdf5plugin.Blosc.BITSHUFFLE}[shuffle]
        return dict(hdf5plugin.Blosc(cname=cname, clevel=5, shuffle=mode))
    return kwargs


def _blosc_zarr(cname: str, shuffle: str) -> Callable[[], list]:
    def codecs():
        from zarr.codecs import BloscCodec
        return [BloscCodec(cname=cname, clevel=5, shuffle=shuffle, typesize=4)]
    return codecs


def _codecs() -> list[Codec]:
    import hdf5plugin
    from zarr.codecs import GzipCodec, ZstdCodec

    def numcodecs(name):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import zarr.codecs.numcodecs as nc
        return getattr(nc, name)

    return [
        Codec("zstd 3", lambda: dict(hdf5plugin.Zstd(clevel=3)), lambda: [ZstdCodec(level=3)]),
        Codec("lz4", lambda: dict(hdf5plugin.LZ4()), lambda: [numcodecs("LZ4")(acceleration=1)],
              "HDF5 LZ4 filter (32004); zarr: numcodecs.lz4"),
        Codec("gzip 3", lambda: dict(compression="gzip", compression_opts=3), lambda: [GzipCodec(level=3)],
              "HDF5 deflate (zlib framing); zarr: gzip framing, same deflate level"),
        Codec("shuffle+gzip 3", lambda: dict(compression="gzip", compression_opts=3, shuffle=True),
              lambda: [numcodecs("Shuffle")(elementsize=4), GzipCodec(level=3)],
              "zarr: numcodecs.shuffle then gzip"),
        Codec("blosc-lz4 5 shuffle", _blosc_h5("lz4", "shuffle"), _blosc_zarr("lz4", "shuffle")),
        Codec("blosc-zstd 5 shuffle", _blosc_h5("zstd", "shuffle"), _blosc_zarr("zstd", "shuffle")),
        Codec("blosc-lz4 5 bitshuffle", _blosc_h5("lz4", "bitshuffle"), _blosc_zarr("lz4", "bitshuffle")),
        Codec("bitshuffle+lz4", lambda: dict(hdf5plugin.Bitshuffle(cname="lz4")), None,
              "HDF5 bitshuffle filter (32008) in LZ4 mode; zarr has no such codec (see blosc-lz4 bitshuffle)"),
        Codec("blosc2-lz4 5 shuffle", _blosc2_h5("lz4"), None, BLOSC2_NOTE),
        Codec("blosc2-zstd 5 shuffle", _blosc2_h5("zstd"), None, BLOSC2_NOTE),
    ]


BLOSC2_NOTE = ("HDF5 Blosc2 filter (32026): each 512 x 512 chunk a Blosc2 frame in B2ND mode; "
               "zarr v3 has no Blosc2 codec")


def _blosc2_h5(cname: str) -> Callable[[], dict]:
    def kwargs():
        import hdf5plugin
        return dict(hdf5plugin.Blosc2(cname=cname, clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE))
    return kwargs


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def cache_dir() -> Path:
    d = Path(os.environ.get("H5TURBO_BENCH_DIR", Path.home() / ".cache" / "h5turbo" / "bench"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def source_matrix(rows: int, cols: int) -> np.ndarray:
    return np.random.default_rng(42).integers(1, 101, size=(rows, cols), dtype=np.int32)


def write_hdf5(path: Path, data: np.ndarray, codec: Codec) -> None:
    import h5py
    tmp = path.with_suffix(".tmp")
    with h5py.File(tmp, "w") as f:
        f.create_dataset("matrix", data=data, chunks=(CHUNK, CHUNK), **codec.h5py_kwargs())
    tmp.rename(path)


def write_zarr(path: Path, data: np.ndarray, codec: Codec) -> None:
    import zarr
    tmp = path.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    arr = zarr.create_array(store=str(tmp), shape=data.shape, chunks=(CHUNK, CHUNK), dtype=data.dtype,
                            compressors=codec.zarr_codecs(), zarr_format=3)
    arr[...] = data
    tmp.rename(path)










def read_h5py(path: Path):
    import h5py
    import hdf5plugin  # noqa: F401  registers the plugins with libhdf5
    f = h5py.File(path, "r")
    return lambda: f["matrix"][...]


def read_h5turbo(path: Path, reuse: bool):
    import h5turbo
    d = h5turbo.File(path)["matrix"]
    if not reuse:
        return lambda: d.read()
    out = np.empty(d.shape, d.dtype)
    return lambda: d.read(out=out)


def read_zarrs(path: Path):
    import zarr
    # strict: a codec zarrs cannot decode is an error, not a silent fallback to zarr-python
    # the pipeline is chosen when the array is opened; writes keep zarr-python's
    with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}):
        arr = zarr.open_array(str(path), mode="r")
    return lambda: arr[...]


def read_tensorstore(path: Path):
    import tensorstore as ts
    arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}, read=True).result()
    return lambda: arr.read().result()


def load1() -> float:
    return os.getloadavg()[0]


@dataclass
class Row:
    codec: Codec
    ratio: float
    times: dict = field(default_factory=dict)  # reader -> (median, runs)
    skipped: dict = field(default_factory=dict)  # reader -> why
    limit: float | None = None
    load: list = field(default_factory=list)


def measure(row: Row, reader: str, make, path: Path, repeats: int, check) -> None:
    try:
        read = make(path)
        row.load.append(load1())
        row.times[reader] = median_time(read, repeats, check, before=lambda: warm(path))
        print(f"  {reader}: {row.times[reader][0]:.3f} s  (load {load1():.1f})", flush=True)
    except Exception as exc:  # a reader that cannot read this codec: note it, go on
        cause = exc.__cause__ or exc  # zarrs wraps the useful message ("codec ... is not supported")
        first = (str(cause).splitlines() or [""])[0][:120]
        row.skipped[reader] = f"{type(cause).__name__}: {first}"
        print(f"  {reader}: skipped ({row.skipped[reader]})", flush=True)


def prepare(codec: Codec, data: np.ndarray) -> tuple[Path, Path | None]:
    """The cached HDF5 file and zarr store for this codec, written if missing."""
    base = cache_dir() / f"matrix-{data.shape[0]}x{data.shape[1]}-c{CHUNK}-{slug(codec.name)}"
    h5, zpath = base.with_suffix(".h5"), base.with_suffix(".zarr")
    if not h5.exists():
        write_hdf5(h5, data, codec)
    if codec.zarr_codecs is None:
        return h5, None
    if not zpath.exists():
        write_zarr(zpath, data, codec)
    return h5, zpath


def run_codec(codec: Codec, data: np.ndarray, args) -> Row:
    h5, zpath = prepare(codec, data)
    row = Row(codec, size_on_disk(h5) / data.nbytes)

    def check(result):
        result = np.asarray(result)
        if not (result.dtype == data.dtype and result.shape == data.shape and np.array_equal(result, data)):
            raise AssertionError("result differs from the source array")

    print(f"{codec.name}: stored/raw {row.ratio:.3f}", flush=True)
    measure(row, "h5py", read_h5py, h5, args.repeats, check)
    measure(row, "h5turbo", lambda p: read_h5turbo(p, False), h5, args.repeats, check)
    measure(row, "h5turbo out=", lambda p: read_h5turbo(p, True), h5, args.repeats, check)
    row.limit = codec_limit(h5, os.cpu_count() or 1, args.repeats)
    if zpath is None:
        row.skipped["zarrs"] = row.skipped["tensorstore"] = "no zarr equivalent"
        return row
    measure(row, "zarrs", read_zarrs, zpath, args.repeats, check)
    measure(row, "tensorstore", read_tensorstore, zpath, args.repeats, check)
    return row




def versions() -> str:
    import h5py
    import h5turbo
    parts = [f"h5turbo {h5turbo.__version__}", f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version})"]
    from importlib.metadata import PackageNotFoundError, version
    for dist in ("hdf5plugin", "zarr", "zarrs", "tensorstore"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist} not installed")
    return ", ".join(parts + [f"numpy {np.__version__}"])


def cell(row: Row, reader: str) -> str:
    if reader in row.times:
        return f"{row.times[reader][0]:.3f}"
    return "n/a" if reader in row.skipped else ""


def ratio(a: float | None, b: float | None, fmt="{:.2f}x") -> str:
    return fmt.format(a / b) if a and b else "n/a"


def report(rows: list[Row], args, argv, started: str) -> list[str]:
    shape = f"{args.rows} x {args.cols}"
    lines = [
        f"# Read-all per codec: {shape} int32 (random 1..100), chunks {CHUNK} x {CHUNK} (1 MiB), warm page cache",
        "",
        f"- date: {started}",
        f"- machine: {machine()}",
        f"- command: `python {shlex.join(['benchmarks/codecs.py'] + argv)}`",
        f"- versions: {versions()}",
        f"- each reader: one warm-up read checked equal to the source array, then the median of {args.repeats} runs;"
        " h5turbo, zarrs, tensorstore and the codec limit on all cores (2), h5py on one (libhdf5 holds its lock)",
        "- load: 1-minute load average when each reader started (the machine is shared)",
        "",
        "Seconds (median):",
        "",
        "| codec | stored/raw | h5py + hdf5plugin | h5turbo | h5turbo out= | zarrs | tensorstore | codec limit | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lim = f"{r.limit:.3f}" if r.limit else "n/a"
        load = f"{min(r.load):.1f}-{max(r.load):.1f}" if r.load else ""
        lines.append(f"| {r.codec.name} | {r.ratio:.3f} | {cell(r, 'h5py')} | {cell(r, 'h5turbo')} | "
                     f"{cell(r, 'h5turbo out=')} | {cell(r, 'zarrs')} | {cell(r, 'tensorstore')} | {lim} | {load} |")
    lines += ["", "Against the targets (h5turbo into a fresh array; 'out=' a reused one):", "",
              "| codec | h5py / h5turbo (2.5x on zstd, blosc-lz4) | zarrs / h5turbo (>1) | tensorstore / h5turbo (>1) "
              "| fraction of codec limit (85%) | out= |",
              "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        t = r.times.get("h5turbo", (None,))[0]
        tr = r.times.get("h5turbo out=", (None,))[0]
        get = lambda k: r.times.get(k, (None,))[0]  # noqa: E731
        lines.append(f"| {r.codec.name} | {ratio(get('h5py'), t)} | {ratio(get('zarrs'), t)} | "
                     f"{ratio(get('tensorstore'), t)} | {ratio(r.limit, t, '{:.0%}')} | {ratio(r.limit, tr, '{:.0%}')} |")
    lines += ["", "Runs (s) and notes:", ""]
    for r in rows:
        runs = "; ".join(f"{k} " + ", ".join(f"{x:.2f}" for x in v[1]) for k, v in r.times.items())
        notes = [r.codec.note] if r.codec.note else []
        notes += [f"{k} skipped: {v}" for k, v in r.skipped.items()]
        lines.append(f"- {r.codec.name}: {runs}" + (f". {'; '.join(notes)}" if notes else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--cols", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--codecs", default="", help="comma-separated substrings of codec names to run")
    parser.add_argument("--output", type=Path, default=None, help="markdown file to write the tables to")
    parser.add_argument("--prepare", action="store_true", help="only write the cached files, measure nothing")
    args = parser.parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    wanted = [w for w in args.codecs.split(",") if w]
    codecs = [c for c in _codecs() if not wanted or any(w == slug(c.name) or w in c.name for w in wanted)]
    data = source_matrix(args.rows, args.cols)
    if args.prepare:
        for c in codecs:
            prepare(c, data)
        return 0
    rows = [run_codec(c, data, args) for c in codecs]
    publish(report(rows, args, argv, started), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
