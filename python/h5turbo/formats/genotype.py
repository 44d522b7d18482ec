"""Genotype matrices in scikit-allel's layout: ``calldata/GT``, variants x samples x
ploidy of small integers (allele 0 = reference, 1.. = alternates, -1 = missing).

``GenotypeArray(f["calldata/GT"])`` counts alleles and calls without loading the
matrix: the variants are cut into blocks of whole HDF5 chunk rows, each block is read
(native reader, one thread) and counted with numpy (which releases the GIL) on a
thread pool, and at most two blocks per thread are in flight. Results follow
scikit-allel's ``GenotypeArray`` methods of the same names.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Optional

import numpy as np

from .. import _native
from ._window import in_order

__all__ = ["GenotypeArray"]

# Bytes of genotypes per block: a few MiB keeps numpy's passes in cache-friendly
# sizes and the memory at (2 x threads) blocks.
BLOCK_BYTES = 8 << 20


class GenotypeArray:
    """A read-only genotype dataset (variants, samples, ploidy) of signed integers.

    ``threads``: worker threads (default: ``h5turbo.default_threads()``).
    ``block_variants``: variants per block (default: whole chunk rows, about 8 MiB).
    """

    def __init__(self, dataset: Any, threads: Optional[int] = None, block_variants: Optional[int] = None):
        shape, dtype = dataset.shape, dataset.dtype
        if shape is None or len(shape) != 3 or dtype.kind != "i":
            raise _native.FormatError(
                f"{dataset.file.filename}: {dataset.name}: not a genotype array (variants x samples x "
                f"ploidy of signed integers): shape {shape}, dtype {dtype}")
        if block_variants is not None and block_variants < 1:
            raise ValueError(f"block_variants must be positive, not {block_variants}")
        self.dataset = dataset
        self.threads = threads if threads and threads > 0 else _native.default_threads()
        self.block_variants = block_variants or self._default_block()

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.dataset.shape

    @property
    def n_variants(self) -> int:
        return self.shape[0]

    @property
    def n_samples(self) -> int:
        return self.shape[1]

    @property
    def ploidy(self) -> int:
        return self.shape[2]

    def __repr__(self) -> str:
        return f"<GenotypeArray {self.shape} {self.dataset.dtype} of {self.dataset.name}>"

    # ------------------------------------------------------------------ counts

    def count_alleles(self, max_allele: Optional[int] = None) -> np.ndarray:
        """(variants, max_allele + 1) int32: how often each allele is called per variant.
        max_allele defaults to the largest allele in the data (no columns when every call
        is missing, as scikit-allel)."""
        if max_allele is None:
            max_allele = int(self.dataset.max()) if self.dataset.size else -1
        n_alleles = max(max_allele, -1) + 1
        # alleles the stored type can hold (an int8 matrix never calls allele 200: its
        # column stays 0; np.arange(201, dtype=int8) would wrap to -56 and count those)
        alleles = np.arange(min(n_alleles, int(np.iinfo(self.dataset.dtype).max) + 1), dtype=self.dataset.dtype)

        def count(block: np.ndarray) -> np.ndarray:
            calls = block.reshape(len(block), -1)
            counts = np.zeros((len(block), n_alleles), np.int32)
            for column, allele in enumerate(alleles):
                counts[:, column] = np.count_nonzero(calls == allele, axis=1)
            return counts

        return self._per_variant(count, (n_alleles,), np.int32)

    def count_alt(self) -> np.ndarray:
        """Per variant (int64): alternate alleles called (values >= 1), over every sample."""
        return self._per_variant(lambda b: np.count_nonzero(b > 0, axis=(1, 2)), (), np.int64)

    def count_called(self, axis: Optional[int] = None):
        """Calls with every allele present (>= 0); axis None: total, 0: per sample, 1: per variant."""
        return self._count_calls(_is_called, axis)

    def count_missing(self, axis: Optional[int] = None):
        """Calls with any allele missing (< 0); axis as count_called."""
        return self._count_calls(lambda b: np.any(b < 0, axis=2), axis)

    def count_hom_ref(self, axis: Optional[int] = None):
        """Calls whose alleles are all 0."""
        return self._count_calls(lambda b: np.all(b == 0, axis=2), axis)

    def count_hom_alt(self, axis: Optional[int] = None):
        """Called calls whose alleles are all the same alternate."""
        return self._count_calls(lambda b: _is_called(b) & (b[..., 0] > 0) & np.all(b == b[..., :1], axis=2), axis)

    def count_het(self, axis: Optional[int] = None):
        """Called calls with at least two different alleles."""
        return self._count_calls(lambda b: _is_called(b) & np.any(b != b[..., :1], axis=2), axis)

    # ------------------------------------------------------------------ blocks

    def _count_calls(self, predicate: Callable[[np.ndarray], np.ndarray], axis: Optional[int]):
        if axis not in (None, 0, 1):
            raise ValueError(f"axis must be None, 0 (per sample) or 1 (per variant), not {axis!r}")
        if axis == 1:
            return self._per_variant(lambda b: np.count_nonzero(predicate(b), axis=1), (), np.int64)
        per_sample = np.zeros(self.n_samples, dtype=np.int64)
        for _, counts in self._blocks(lambda b: np.count_nonzero(predicate(b), axis=0)):
            per_sample += counts
        return per_sample if axis == 0 else int(per_sample.sum())

    def _per_variant(self, fn: Callable[[np.ndarray], np.ndarray], tail: tuple, dtype) -> np.ndarray:
        out = np.empty((self.n_variants,) + tail, dtype=dtype)
        for (start, stop), values in self._blocks(fn):
            out[start:stop] = values
        return out

    def _blocks(self, fn: Callable[[np.ndarray], Any]):
        """(variant range, fn(block)) for every block, in order, computed on the pool."""
        ranges = [(s, min(s + self.block_variants, self.n_variants))
                  for s in range(0, self.n_variants, self.block_variants)]
        with ThreadPoolExecutor(self.threads, thread_name_prefix="h5turbo-genotype") as pool:
            tasks = (partial(self._map_block, fn, r) for r in ranges)
            yield from zip(ranges, in_order(pool, tasks, 2 * self.threads))

    def _map_block(self, fn: Callable[[np.ndarray], Any], variants: tuple[int, int]) -> Any:
        start, stop = variants
        return fn(self.dataset.read(np.s_[start:stop], threads=1))

    def _default_block(self) -> int:
        row_bytes = max(1, self.n_samples * self.ploidy * self.dataset.dtype.itemsize)
        rows = max(1, BLOCK_BYTES // row_bytes)
        chunk_rows = (self.dataset.chunks or (1,))[0]
        return max(chunk_rows, rows // chunk_rows * chunk_rows)  # whole chunk rows: no chunk decoded twice


def _is_called(block: np.ndarray) -> np.ndarray:
    return np.all(block >= 0, axis=2)
