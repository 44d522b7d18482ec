"""``h5turbo advise``: a chunk shape and codec for an access pattern, optionally
measured on a sample of the data.

Rules (1 MiB of raw data per chunk, as :func:`h5turbo.auto_chunks`):
  rows   - whole rows: chunks span all columns (all trailing axes) and as many rows as
           fit; reading a row range then touches only the chunks of those rows.
  cols   - whole columns (2-D and up: slices along axis 1): chunks span all rows (axis 0)
           and as few columns as fit.
  blocks - rectangular blocks in both directions: square chunks (auto_chunks).
  all    - whole-array reads: chunk shape matters little; 4 MiB square chunks (fewer,
           larger chunks: less per-chunk overhead).
Codec: zstd level 3 with byte shuffle (no shuffle for 1-byte types): a good ratio on
numeric data and fast decoding; readers need hdf5plugin (use gzip for readers without
it). --measure compares it with lz4, gzip and no compression on your data.

``--measure`` writes each candidate (chunk shape x codec) for a sample of the data
(the first rows, up to 64 MiB) into a temporary folder with h5turbo.write, then times
reading the sample with h5turbo in the pattern (median of 3) and reports size and times.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from .write import ArgumentError, auto_chunks, write

PATTERNS = ("rows", "cols", "blocks", "all")
_MIB = 1 << 20
SAMPLE_BYTES = 64 * _MIB


def chunks_for(pattern: str, shape: tuple, itemsize: int, target: int = _MIB) -> tuple:
    if pattern not in PATTERNS:
        raise ArgumentError(f"pattern {pattern!r}: one of {', '.join(PATTERNS)}")
    if not shape:
        raise ArgumentError("a scalar has no chunks")
    budget = max(1, target // itemsize)
    if pattern == "all":
        return auto_chunks(shape, itemsize, 4 * target)
    if pattern == "blocks" or len(shape) == 1:
        return auto_chunks(shape, itemsize, target)
    if pattern == "rows":
        inner = auto_chunks(shape[1:], itemsize, target) if math.prod(shape[1:]) > budget else tuple(shape[1:])
        rows = max(1, min(shape[0], budget // max(1, math.prod(inner))))
        return (rows,) + tuple(inner)
    # cols: all rows, few columns, trailing axes whole where they fit
    rows = min(shape[0], budget)
    rest = tuple(shape[2:])
    per_col = rows * max(1, math.prod(rest))
    cols = max(1, min(shape[1], budget // max(1, per_col)))
    return (rows, cols) + rest


def suggest(shape: tuple, dtype: np.dtype, pattern: str) -> dict:
    codec = {"compression": "zstd", "level": 3, "shuffle": True} if np.dtype(dtype).itemsize > 1 \
        else {"compression": "zstd", "level": 3, "shuffle": False}
    return {"pattern": pattern, "chunks": chunks_for(pattern, shape, np.dtype(dtype).itemsize), **codec}


def _reads(pattern: str, shape: tuple, chunks: tuple, rng) -> list:
    """Selections typical of the pattern: 8 row ranges, 8 column ranges, 8 blocks, or all."""
    if pattern == "all":
        return [np.s_[...]]
    sels = []
    for _ in range(8):
        if pattern == "rows" or len(shape) == 1:
            n = max(1, shape[0] // 16)
            start = int(rng.integers(0, max(1, shape[0] - n + 1)))
            sels.append(np.s_[start:start + n])
        elif pattern == "cols":
            n = max(1, shape[1] // 16)
            start = int(rng.integers(0, max(1, shape[1] - n + 1)))
            sels.append(np.s_[:, start:start + n])
        else:
            sizes = [max(1, s // 4) for s in shape]
            starts = [int(rng.integers(0, max(1, s - z + 1))) for s, z in zip(shape, sizes)]
            sels.append(tuple(slice(a, a + z) for a, z in zip(starts, sizes)))
    return sels


def measure(ds, pattern: str, threads=None, codecs=None) -> list[dict]:
    """Write candidates for a sample of ``ds`` (an h5turbo Dataset) and time reading them."""
    from ..objects.file import File
    shape, dtype = ds.shape, ds.dtype
    if not shape or 0 in shape:
        raise ArgumentError(f"{ds.file.filename}:{ds.name}: an empty or scalar dataset ({shape}) "
                            "has no data to measure")
    row_bytes = dtype.itemsize * max(1, math.prod(shape[1:]))
    rows = max(1, min(shape[0], SAMPLE_BYTES // row_bytes))
    sample = ds[:rows]
    candidates = {chunks_for(p, sample.shape, dtype.itemsize) for p in PATTERNS}
    codecs = codecs or [("zstd", 3, True), ("lz4", None, True), ("gzip", 4, True), (None, None, False)]
    results = []
    with tempfile.TemporaryDirectory(prefix="h5turbo-advise-") as tmp:
        for i, chunks in enumerate(sorted(candidates)):
            for compression, level, shuffle in codecs:
                shuffle = shuffle and dtype.itemsize > 1  # (a no-op on bytes: not claimed)
                path = Path(tmp) / f"c{i}-{compression}.h5"
                t0 = time.perf_counter()
                write(path, "x", sample, chunks=chunks, compression=compression, level=level,
                      shuffle=shuffle, threads=threads, mode="w")
                write_s = time.perf_counter() - t0
                # the same selections for every candidate, so their times compare
                sels = _reads(pattern, sample.shape, chunks, np.random.default_rng(0))
                with File(path) as f:
                    x = f["x"]
                    # the data's stored bytes, not the file's (its metadata would count)
                    stored = max(1, x.id.get_storage_size())
                    times = []
                    for _ in range(3):
                        t0 = time.perf_counter()
                        for sel in sels:
                            x.read(sel, threads=threads)
                        times.append(time.perf_counter() - t0)
                results.append({"chunks": chunks, "compression": compression, "shuffle": shuffle,
                                "ratio": sample.nbytes / stored, "write_s": write_s,
                                "read_s": statistics.median(times)})
                path.unlink()
    return sorted(results, key=lambda r: r["read_s"])
