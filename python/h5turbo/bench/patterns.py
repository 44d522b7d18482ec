"""Access patterns: each turns a matrix shape and chunk shape into a list of
operations (reads of a selection, or chunk-aligned sums), and knows the expected
result of each operation from the source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from .source import Source

Index = Union[slice, np.ndarray]  # a slice or a sorted array of unique indices

# Chunk-aligned sums read blocks of about this many bytes at a time (bounded memory).
SUM_BLOCK_BYTES = 64 << 20


@dataclass(frozen=True)
class Read:
    rows: Index
    cols: Index

    def expected(self, source: Source) -> np.ndarray:
        return source.select(self.rows, self.cols)

    def nbytes(self, source: Source) -> int:
        if hasattr(source, "selected_bytes"):  # a sparse matrix: the stored values of those rows
            return source.selected_bytes(self.rows)
        return _length(self.rows, source.rows) * _length(self.cols, source.cols) * source.dtype.itemsize


@dataclass(frozen=True)
class Sums:
    """numpy's ``matrix.sum(axis)``, computed from blocks of whole chunks along the
    other axis: `blocks` are (start, stop) ranges of columns (axis 0) or rows (axis 1)."""
    axis: int
    blocks: tuple

    def expected(self, source: Source) -> np.ndarray:
        return source.sums(self.axis)

    def nbytes(self, source: Source) -> int:
        return source.nbytes


Op = Union[Read, Sums]


def _length(index: Index, n: int) -> int:
    return len(range(n)[index]) if isinstance(index, slice) else len(index)


@dataclass(frozen=True)
class Pattern:
    name: str
    description: str
    # Preset overrides, e.g. the oom preset's rows 4001..5000 (as a 0-based slice).
    rows: Optional[slice] = None

    def ops(self, shape: tuple[int, int], chunks: tuple[int, int], seed: int = 0) -> list[Op]:
        rng = np.random.default_rng([seed, sum(map(ord, self.name))])
        return _BUILDERS[self.name](self, shape, chunks, rng)


def _all(p, shape, chunks, rng):
    return [Read(slice(0, shape[0]), slice(0, shape[1]))]


def _block(n: int, fraction: int, rng) -> slice:
    length = max(1, n // fraction)
    start = int(rng.integers(0, n - length + 1))
    return slice(start, start + length)


def _row_block(p, shape, chunks, rng):
    rows = p.rows if p.rows is not None else _block(shape[0], 10, rng)
    return [Read(slice(*rows.indices(shape[0])[:2]), slice(0, shape[1]))]


def _col_block(p, shape, chunks, rng):
    return [Read(slice(0, shape[0]), _block(shape[1], 10, rng))]


def _random(n: int, count: int, rng) -> np.ndarray:
    return np.sort(rng.choice(n, size=min(n, count), replace=False)).astype(np.int64)


def _random_rows(p, shape, chunks, rng):
    return [Read(_random(shape[0], 100, rng), slice(0, shape[1]))]


def _random_cols(p, shape, chunks, rng):
    return [Read(slice(0, shape[0]), _random(shape[1], 100, rng))]


def _random_blocks(p, shape, chunks, rng):
    """50 blocks of 10 x 10 at random places (clipped at the edges)."""
    ops = []
    for _ in range(50):
        r = int(rng.integers(0, max(1, shape[0] - 9)))
        c = int(rng.integers(0, max(1, shape[1] - 9)))
        ops.append(Read(slice(r, min(shape[0], r + 10)), slice(c, min(shape[1], c + 10))))
    return ops


def aligned_blocks(n: int, chunk: int, other: int, itemsize: int) -> tuple:
    """Ranges of whole chunks along one axis, each about SUM_BLOCK_BYTES when read
    across the whole other axis."""
    per_chunk = max(1, chunk * other * itemsize)
    width = chunk * max(1, SUM_BLOCK_BYTES // per_chunk)
    return tuple((a, min(n, a + width)) for a in range(0, n, width))


def _sums(axis: int):
    def build(p, shape, chunks, rng):
        along = 1 if axis == 0 else 0  # colsums walk blocks of columns
        return [Sums(axis, aligned_blocks(shape[along], chunks[along], shape[1 - along], 8))]
    return build


_BUILDERS = {
    "read_all": _all, "row_block": _row_block, "col_block": _col_block,
    "random_rows": _random_rows, "random_cols": _random_cols, "random_blocks": _random_blocks,
    "colsums": _sums(0), "rowsums": _sums(1),
}

DESCRIPTIONS = {
    "write": "write the whole matrix (in blocks of rows)",
    "read_all": "read the whole matrix",
    "row_block": "one contiguous block of rows (a tenth), all columns",
    "col_block": "one contiguous block of columns (a tenth), all rows",
    "random_rows": "100 random rows (sorted), all columns",
    "random_cols": "100 random columns (sorted), all rows",
    "random_blocks": "50 random 10 x 10 blocks",
    "colsums": "column sums over chunk-aligned column blocks",
    "rowsums": "row sums over chunk-aligned row blocks",
}
ALL = list(DESCRIPTIONS)


def pattern(name: str, rows: Optional[slice] = None) -> Pattern:
    if name not in DESCRIPTIONS:
        raise ValueError(f"unknown pattern {name!r}; one of {', '.join(ALL)}")
    return Pattern(name, DESCRIPTIONS[name], rows)


def verify(result, expected: np.ndarray, op: Op) -> tuple[bool, str]:
    """Values identical to the source (integers and reads bit for bit; float sums to
    1e-9 relative, as the summation order differs between readers)."""
    if not isinstance(expected, np.ndarray):  # a scipy sparse matrix (the h5ad preset)
        from .sparse import verify_sparse
        return verify_sparse(result, expected)
    result = np.asarray(result)
    if result.shape != expected.shape:
        return False, f"shape {result.shape} != expected {expected.shape}"
    if isinstance(op, Sums) and np.issubdtype(expected.dtype, np.floating):
        ok = np.allclose(result, expected, rtol=1e-9, atol=0)
        return ok, "" if ok else "float sums differ by more than 1e-9 relative"
    if result.dtype != expected.dtype:
        return False, f"dtype {result.dtype} != expected {expected.dtype}"
    if not np.array_equal(result, expected):
        bad = int(np.count_nonzero(result != expected))
        return False, f"{bad} of {expected.size} values differ"
    return True, ""
