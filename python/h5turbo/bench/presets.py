"""What a benchmark run covers (`Config`), and the named presets."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from .patterns import ALL as ALL_PATTERNS
from .source import Source
from .strategies import ALL as ALL_STRATEGIES, Layout

CACHES = ("cold", "warm")


def thread_counts(cores: Optional[int] = None) -> list[int]:
    """1, 2, 4, ... up to the machine's cores, and the core count itself."""
    cores = cores or os.cpu_count() or 1
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return counts + [cores]


@dataclass
class Config:
    name: str
    source: Source
    layouts: list[Layout]
    patterns: list[str]
    strategies: list[str] = field(default_factory=lambda: [s.name for s in ALL_STRATEGIES])
    threads: list[int] = field(default_factory=thread_counts)
    caches: tuple = CACHES
    repeats: int = 3
    warmups: int = 1
    # pattern name -> rows for row_block (the oom preset's rows 4001..5000)
    row_block: Optional[slice] = None
    limits: bool = True  # measure the reference rows (disk bandwidth, codec decode-only)
    description: str = ""
    # a user's own file: measure the hdf5 strategies on it instead of generated stores
    user_file: Optional[str] = None


def quick(scale: float = 1.0) -> Config:
    # whole chunks in each direction (hidefix cannot read partial edge chunks safely)
    c = max(8, int(100 * scale))
    rows, cols = max(8, round(2000 * scale / c)) * c, max(2, round(500 * scale / c)) * c
    return Config(
        "quick", Source(rows, cols, "int32"),
        [Layout((c, c), "gzip", 3), Layout((max(1, c // 10), cols), "lzf", shuffle=True),
         Layout((rows, max(1, c // 10)), "zstd", 3)],
        list(ALL_PATTERNS),
        description="every strategy, every pattern, both cache states on a small matrix")


def colsums() -> Config:
    return Config(
        "colsums", Source(30000, 20000, "int32"), [Layout((100, 100), "gzip", 3)], ["colsums"],
        strategies=["h5turbo", "h5py", "hidefix"], repeats=3,
        description="the reference matrix: column sums, speed-up versus cores")


def genotype() -> Config:
    layouts = []
    for width in (1, 10, 100):
        for exp in range(13, 20):
            rows = max(1, (1 << exp) // width)  # int8: one byte per value
            for codec, level in (("lzf", None), ("gzip", 1), ("gzip", 3), ("none", None)):
                layouts.append(Layout((rows, width), codec, level))
    return Config(
        "genotype", Source(1_000_000, 100, "int8", "mostly-zeros"), layouts,
        ["read_all", "random_rows", "col_block", "colsums"], strategies=["h5turbo", "h5py", "hidefix"],
        repeats=3, description="genotype calls: chunk sizes 2^13..2^19 bytes x widths 1/10/100")


def oom() -> Config:
    return Config(
        "oom", Source(5000, 100, "float64", "normal"), [Layout((500, 100), "gzip", 4)],
        ["write", "read_all", "row_block"], row_block=slice(4000, 5000),
        description="5000 x 100 float64: write, full read, rows 4001..5000, every strategy")


def h5ad(scale: float = 1.0) -> Config:
    from .sparse import SPARSE, SparseSource, h5ad_layout
    rows = max(ROW_MIN, int(50_000 * scale))
    cols = max(ROW_MIN, int(20_000 * scale))
    return Config(
        "h5ad", SparseSource(rows, cols, per_row=max(1, min(cols // 2, int(1000 * scale)))), [h5ad_layout()],
        ["read_all", "random_rows"], strategies=[s.name for s in SPARSE], repeats=3,
        description="a single-cell-sized sparse CSR matrix (AnnData X, gzip 4), read whole and by 100 random rows")


ROW_MIN = 64
PRESETS = {"quick": quick, "colsums": colsums, "genotype": genotype, "oom": oom, "h5ad": h5ad}


def preset(name: str, scale: float = 1.0) -> Config:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; one of {', '.join(PRESETS)}")
    return PRESETS[name](scale) if name in ("quick", "h5ad") else PRESETS[name]()
