"""Write speed (issue 8): h5turbo.write against h5py (+ hdf5plugin) writing the
reference matrix, per codec, and each codec's encode-only limit.

The matrix is the reference one (benchmarks/read_reference.py, h5turbo.demo): 30000 x
20000 int32, random 1..100 (numpy default_rng(42), drawn in stripes of 4096 rows as
demo.write_matrix does), held in memory; chunks 512 x 512 (1 MiB raw), no shuffle.
Each writer writes the whole matrix into a new file in --dir (page cache; the file is
fsynced by neither writer, and deleted after each run). A checked warm-up of each (the
file is read back with h5py and compared with the matrix), then --repeats rounds that
time h5py, h5turbo and the encoder in turn; the speed-up is the median of the per-round
ratios (this VM's speed drifts within minutes: writers timed minutes apart would be
compared across it).
"encode only" is h5turbo's parallel encoder on the same chunks with no file at all
(chunks from memory, compressed bytes packed into a pre-faulted buffer): the limit a
writer built on those encoders can reach.

    python benchmarks/write.py [--rows 30000 --cols 20000] [--repeats 3]
                               [--codecs gzip,zstd,lz4] [--dir /tmp] [--output FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np

from h5turbo.bench.measure import interleaved_times, machine, paired_ratio
from h5turbo.bench.report import publish

CHUNK = 512
LEVELS = {"gzip": 3, "zstd": 3, "lz4": None}


def reference_matrix(rows: int, cols: int) -> np.ndarray:
    rng = np.random.default_rng(42)
    out = np.empty((rows, cols), np.int32)
    step = CHUNK * max(1, 4096 // CHUNK)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        out[start:stop] = rng.integers(1, 101, size=(stop - start, cols), dtype=np.int32)
    return out


def h5py_kwargs(codec: str) -> dict:
    import hdf5plugin
    if codec == "gzip":
        return {"compression": "gzip", "compression_opts": LEVELS["gzip"]}
    if codec == "zstd":
        return dict(hdf5plugin.Zstd(clevel=LEVELS["zstd"]))
    return dict(hdf5plugin.LZ4())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--cols", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--codecs", default="gzip,zstd,lz4")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)

    import h5py
    import h5turbo
    from h5turbo import _native
    from h5turbo.writing.write import _pipeline

    matrix = reference_matrix(args.rows, args.cols)
    raw = matrix.nbytes
    path = args.dir / f"h5turbo-write-bench-{os.getpid()}.h5"
    cores = h5turbo.default_threads()

    def check_file(_):
        with h5py.File(path, "r") as f:
            if not np.array_equal(f["m"][...], matrix):
                raise AssertionError("file differs from the matrix")
        path.unlink()

    results = []
    for codec in args.codecs.split(","):
        kwargs = h5py_kwargs(codec)

        def write_h5py():
            with h5py.File(path, "w") as f:
                f.create_dataset("m", data=matrix, chunks=(CHUNK, CHUNK), **kwargs)

        def write_turbo():
            h5turbo.write(path, "m", matrix, chunks=(CHUNK, CHUNK), compression=codec,
                          level=LEVELS[codec], mode="w")

        def timed(fn):
            def run():
                fn()
                size = path.stat().st_size
                path.unlink()
                return size
            return run

        write_h5py(); check_file(None)
        write_turbo()
        stored = path.stat().st_size
        check_file(None)

        with h5py.File(path, "w") as f:  # the pipeline libhdf5 stores for this codec
            pipeline = _pipeline(f.create_dataset("m", shape=(1, 1), dtype="i4", chunks=(1, 1), **kwargs))
        path.unlink()
        chunks = math.ceil(args.rows / CHUNK) * math.ceil(args.cols / CHUNK)

        out = np.empty(chunks * (CHUNK * CHUNK * 4 * 17 // 16 + 65536), np.uint8)
        out[::4096] = 0  # pre-fault: the limit excludes first-touch page faults

        def encode_only():
            return _native.encode_chunks_into(matrix, [CHUNK, CHUNK], pipeline, b"", 0, chunks, out, 0)
        times = interleaved_times({"h5py": timed(write_h5py), "h5turbo": timed(write_turbo), "encode": encode_only},
                                  args.repeats, lambda r: None)
        runs_h5py, runs_turbo, runs_enc = times["h5py"], times["h5turbo"], times["encode"]
        t_h5py, t_turbo, t_enc = (float(np.median(r)) for r in (runs_h5py, runs_turbo, runs_enc))
        ratio = paired_ratio(runs_h5py, runs_turbo)
        results.append((codec, t_h5py, runs_h5py, t_turbo, runs_turbo, t_enc, runs_enc, stored, ratio))
        print(f"{codec}: h5py {t_h5py:.2f} s, h5turbo {t_turbo:.2f} s ({ratio:.2f}x), "
              f"encode only {t_enc:.2f} s", flush=True)

    load = open("/proc/loadavg").read().split()[:3]
    gb = raw / 1e9
    lines = [
        f"# Writing the reference matrix ({args.rows} x {args.cols} int32, random 1..100, "
        f"chunks {CHUNK} x {CHUNK}, no shuffle), into the page cache",
        "",
        f"- command: `python benchmarks/write.py {shlex.join(argv if argv is not None else sys.argv[1:])}`",
        f"- machine: {machine()}; h5turbo threads: {cores}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"load average after the run: {' '.join(load)}",
        f"- h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}); levels: gzip 3, zstd 3, lz4 default",
        f"- {args.repeats} rounds after a checked warm-up, each timing h5py, h5turbo and the encoder in turn; "
        f"medians, and the speed-up as the median of per-round ratios; raw data {gb:.2f} GB",
        "",
        "| codec | h5py s | h5turbo.write s | speed-up | h5turbo GB/s (raw) | encode only s | encode-only GB/s | "
        "write / encode-only | stored MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for codec, th, _, tt, _, te, _, stored, ratio in results:
        lines.append(f"| {codec} | {th:.2f} | {tt:.2f} | {ratio:.2f}x | {gb / tt:.2f} | {te:.2f} | "
                     f"{gb / te:.2f} | {te / tt:.0%} | {stored / 1e6:.0f} |")
    lines.append("")
    lines.append("Runs (s): " + "; ".join(
        f"{c}: h5py {', '.join(f'{x:.2f}' for x in rh)} / h5turbo {', '.join(f'{x:.2f}' for x in rt)}"
        f" / encode {', '.join(f'{x:.2f}' for x in re)}" for c, _, rh, _, rt, _, re, _, _ in results))
    publish(lines, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
