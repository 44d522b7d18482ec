"""The source matrix of a benchmark: generated block by block from a seed, so any
rows can be regenerated for verification and memory stays bounded for big presets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

# Rows per generated block: a block's values depend only on (seed, block index), so the
# matrix is the same whichever rows are asked for and in which order.
BLOCK_ROWS = 1024


def _randint(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Random integers 1..100 (the reference matrix); floats uniform in [0, 1)."""
    if np.issubdtype(dtype, np.integer):
        return rng.integers(1, 101, size=shape, dtype=dtype)
    return rng.random(shape).astype(dtype)


def _mostly_zeros(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Genotype-like calls: 0 for 90 %, else 1 or 2."""
    calls = rng.choice(np.array([0, 1, 2], dtype=dtype), size=shape, p=[0.9, 0.07, 0.03])
    return calls.astype(dtype, copy=False)


def _normal(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(rng.normal(0, 30, size=shape), info.min, info.max).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def _mod251(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Easy to read by eye: 0, 1, 2, ... 250, 0, ... within each block."""
    return (np.arange(shape[0] * shape[1]) % 251).reshape(shape).astype(dtype)


GENERATORS: dict[str, Callable] = {
    "randint": _randint, "mostly-zeros": _mostly_zeros, "normal": _normal, "mod251": _mod251,
}


@dataclass(frozen=True)
class Source:
    rows: int
    cols: int
    dtype: np.dtype
    generator: str = "randint"
    seed: int = 42

    def __post_init__(self):
        if self.rows < 1 or self.cols < 1:
            raise ValueError(f"matrix shape must be positive, not {self.rows} x {self.cols}")
        if self.generator not in GENERATORS:
            raise ValueError(f"unknown generator {self.generator!r}; one of {', '.join(GENERATORS)}")
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.dtype.itemsize

    def describe(self) -> str:
        return f"{self.rows} x {self.cols} {self.dtype} ({self.generator}, seed {self.seed})"

    def block(self, index: int) -> np.ndarray:
        start = index * BLOCK_ROWS
        stop = min(self.rows, start + BLOCK_ROWS)
        rng = np.random.default_rng([self.seed, index])
        return GENERATORS[self.generator](rng, (stop - start, self.cols), self.dtype)

    def blocks(self, step: int = BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, rows) pieces of `step` rows covering the matrix in order (writers
        pass whole chunks, so no chunk is written twice)."""
        step = max(1, step)
        for start in range(0, self.rows, step):
            yield start, self.row_range(start, min(self.rows, start + step))

    def row_range(self, start: int, stop: int) -> np.ndarray:
        first, last = start // BLOCK_ROWS, (stop - 1) // BLOCK_ROWS
        if stop <= start:
            return np.empty((0, self.cols), self.dtype)
        parts = [self.block(i) for i in range(first, last + 1)]
        whole = parts[0] if len(parts) == 1 else np.concatenate(parts)
        offset = first * BLOCK_ROWS
        return whole[start - offset:stop - offset]

    def take_rows(self, rows: np.ndarray) -> np.ndarray:
        out = np.empty((len(rows), self.cols), self.dtype)
        for b in np.unique(np.asarray(rows) // BLOCK_ROWS):
            where = np.flatnonzero(np.asarray(rows) // BLOCK_ROWS == b)
            out[where] = self.block(int(b))[np.asarray(rows)[where] - b * BLOCK_ROWS]
        return out

    def select(self, rows, cols) -> np.ndarray:
        """The values at (rows, cols): each a slice or a sorted index array."""
        part = self.row_range(rows.start, rows.stop) if isinstance(rows, slice) else self.take_rows(rows)
        return part[:, cols]

    def array(self) -> np.ndarray:
        return self.row_range(0, self.rows)

    def sums(self, axis: int) -> np.ndarray:
        """numpy's sum along an axis, computed block by block (exact for integers)."""
        acc = None
        pieces = []
        for _, part in self.blocks(1 << 16):
            s = part.sum(axis=axis)
            if axis == 0:
                acc = s if acc is None else acc + s
            else:
                pieces.append(s)
        return acc if axis == 0 else np.concatenate(pieces)


class FileSource(Source):
    """A user's 2-D dataset as the source: reference values read with h5py (libhdf5),
    block by block."""

    def __init__(self, path: str, dataset: str):
        import h5py
        try:
            import hdf5plugin  # noqa: F401  the filters libhdf5 needs for plugin-compressed data
        except ImportError:
            pass
        try:
            with h5py.File(path, "r") as f:
                ds = f[dataset]
                shape, dtype, chunks = ds.shape, ds.dtype, ds.chunks
                self._filters = (ds.compression, ds.compression_opts, ds.shuffle)
        except FileNotFoundError:
            raise ValueError(f"{path}: no such file") from None
        except KeyError:
            raise ValueError(f"{path}: no dataset {dataset!r}") from None
        except OSError as exc:
            raise ValueError(f"{path}: not a readable HDF5 file ({exc})") from None
        if len(shape) != 2 or dtype.kind not in "iuf":
            raise ValueError(f"{path}:{dataset}: the bench needs a 2-D numeric dataset, not {shape} {dtype}")
        object.__setattr__(self, "rows", shape[0])
        object.__setattr__(self, "cols", shape[1])
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "generator", "file")
        object.__setattr__(self, "seed", 0)
        for name, value in (("path", path), ("dataset", dataset), ("chunks", chunks)):
            object.__setattr__(self, name, value)

    def __hash__(self):
        return hash((self.path, self.dataset))

    def describe(self) -> str:
        return f"{self.path}:{self.dataset}, {self.rows} x {self.cols} {self.dtype}"

    def layout(self):
        from .strategies import Layout
        comp, opts, shuffle = self._filters
        codec = {None: "none", "gzip": "gzip", "lzf": "lzf"}.get(comp, str(comp))
        return Layout(self.chunks or (self.rows, self.cols), codec, opts if codec == "gzip" else None, bool(shuffle),
                      kind="chunked")

    def block(self, index: int) -> np.ndarray:
        import h5py
        start = index * BLOCK_ROWS
        with h5py.File(self.path, "r") as f:
            return f[self.dataset][start:min(self.rows, start + BLOCK_ROWS)]
