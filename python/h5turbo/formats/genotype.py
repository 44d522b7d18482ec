"""Genotype matrices in scikit-allel's layout: ``calldata/GT``, variants x samples x
ploidy of small integers (allele 0 = reference, 1.. = alternates, -1 = missing).

``GenotypeArray(f["calldata/GT"])`` counts alleles and calls without loading the
matrix: the variants are cut into blocks of whole HDF5 chunk rows, each block is read
(native reader, one thread) and counted with numpy (which releases the GIL) on a
thread pool, and at most two blocks per thread are in flight. Results follow
scikit-allel's ``GenotypeArray`` methods of the same names (the few deliberate
differences: docs/formats.md).
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any, Callable, Optional

import numpy as np

from .. import _native
from ..objects.base import HLObject
from ..objects.dataset import Dataset, pool_threads
from ..workers import WorkerPool
from ._window import in_order

__all__ = ["GenotypeArray"]

# Bytes of genotypes per block: a few MiB keeps numpy's passes in cache-friendly
# sizes and the memory at (2 x threads) blocks.
BLOCK_BYTES = 8 << 20

# Up to this many alleles count_alleles counts each with one numpy pass over a block;
# above, one bincount pass (a matrix whose largest allele is 10**6 must not take a
# million passes).
FEW_ALLELES = 16

# Worker threads at most: 2 blocks each in flight, 4 GiB of blocks at 256.
MAX_THREADS = 256


class GenotypeArray:
    """A read-only genotype dataset (variants, samples, ploidy) of signed integers.

    ``threads``: worker threads (default, also for 0: ``h5turbo.default_threads()``;
    at most MAX_THREADS).
    ``block_variants``: variants per block (default: whole chunk rows, about 8 MiB).
    """

    def __init__(self, dataset: Any, threads: Optional[int] = None, block_variants: Optional[int] = None):
        _check_genotypes(dataset)
        if block_variants is not None and (isinstance(block_variants, (bool, np.bool_))
                                           or not isinstance(block_variants, (int, np.integer)) or block_variants < 1):
            raise ValueError(f"block_variants must be a positive integer, not {block_variants!r}")
        self.dataset = dataset
        self.threads = _pool_size(threads)
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

    def count_alleles(self, max_allele: Optional[int] = None, subpop: Any = None) -> np.ndarray:
        """(variants, max_allele + 1) int32: how often each allele is called per variant,
        over every sample or the samples ``subpop`` lists (indices, a repeat counts twice,
        as scikit-allel). max_allele defaults to the largest allele in the data (no columns
        when every call is missing, as scikit-allel); alleles above it are not counted."""
        samples = _subpop_indices(subpop, self.n_samples)
        from_data = max_allele is None
        if from_data:
            max_allele = self._largest_value()
        elif int(max_allele) < -1:
            raise ValueError(f"max_allele must be -1 or more, not {max_allele}")  # allel: negative dimensions
        n_alleles = max(int(max_allele), -1) + 1
        self._check_counts_fit(n_alleles, from_data)
        count = _count_few_alleles if n_alleles <= FEW_ALLELES else _count_many_alleles

        def count_block(block: np.ndarray) -> np.ndarray:
            if samples is not None:
                block = block[:, samples]
            return count(block.reshape(len(block), -1), n_alleles)

        return self._per_variant(count_block, (n_alleles,), np.int32)

    def _largest_value(self) -> int:
        """The largest value in the matrix, -1 when it has none (as every call missing),
        read block by block as the counts are: a chunk that cannot be read is an error
        naming the file and the dataset (Dataset.max's engine reduction names neither)."""
        largest = -1
        for _, value in self._blocks(lambda b: int(b.max()) if b.size else -1):
            largest = max(largest, value)
        return largest

    def _check_counts_fit(self, n_alleles: int, from_data: bool) -> None:
        """Refuse an allele-count matrix larger than the machine's memory before
        allocating it: a stray allele of 2**40 in the data would otherwise ask for
        terabytes (scikit-allel: MemoryError) or be killed while filling it."""
        needed = self.n_variants * n_alleles * np.dtype(np.int32).itemsize
        if needed <= _physical_memory():
            return
        what = f"{self.n_variants} variants x {n_alleles} alleles of counts ({needed / 2**30:.1f} GiB)"
        if from_data:
            raise _native.FormatError(
                f"{self.dataset.file.filename}: {self.dataset.name}: largest allele {n_alleles - 1} "
                f"would need {what}, more than this machine's memory: pass max_allele")
        raise MemoryError(f"count_alleles(max_allele={n_alleles - 1}) would need {what}")

    def count_alt(self) -> np.ndarray:
        """Per variant (int64): alternate alleles called (values >= 1), over every sample."""
        return self._per_variant(lambda b: np.count_nonzero(b > 0, axis=(1, 2)), (), np.int64)

    def count_called(self, axis: Optional[int] = None):
        """Calls with every allele present (>= 0); axis None: total, 0: per sample, 1: per variant."""
        return self._count_calls(_is_called, axis)

    def count_missing(self, axis: Optional[int] = None):
        """Calls with any allele missing (< 0); axis as count_called."""
        return self._count_calls(_is_missing, axis)

    def count_hom(self, allele: Optional[int] = None, axis: Optional[int] = None):
        """Called calls whose alleles are all the same; with ``allele``, all that allele."""
        return self._count_calls(partial(_is_hom, allele=allele), axis)

    def count_hom_ref(self, axis: Optional[int] = None):
        """Calls whose alleles are all 0."""
        return self._count_calls(partial(_is_hom, allele=0), axis)

    def count_hom_alt(self, axis: Optional[int] = None):
        """Called calls whose alleles are all the same alternate."""
        return self._count_calls(_is_hom_alt, axis)

    def count_het(self, allele: Optional[int] = None, axis: Optional[int] = None):
        """Called calls with at least two different alleles; with ``allele``, only those
        that carry it (scikit-allel's argument order: ``count_het(1)`` is allele 1)."""
        return self._count_calls(partial(_is_het, allele=allele), axis)

    def count_call(self, call: Any, axis: Optional[int] = None):
        """Calls equal to ``call`` (one allele per ploidy, in order)."""
        return self._count_calls(partial(_is_call, call=self._checked_call(call)), axis)

    # ------------------------------------------------------------------ per call
    # (variants, samples) arrays, made block by block as the counts are

    def is_called(self) -> np.ndarray:
        return self._per_call(_is_called, bool)

    def is_missing(self) -> np.ndarray:
        return self._per_call(_is_missing, bool)

    def is_hom(self, allele: Optional[int] = None) -> np.ndarray:
        return self._per_call(partial(_is_hom, allele=allele), bool)

    def is_hom_ref(self) -> np.ndarray:
        return self._per_call(partial(_is_hom, allele=0), bool)

    def is_hom_alt(self) -> np.ndarray:
        return self._per_call(_is_hom_alt, bool)

    def is_het(self, allele: Optional[int] = None) -> np.ndarray:
        return self._per_call(partial(_is_het, allele=allele), bool)

    def is_call(self, call: Any) -> np.ndarray:
        return self._per_call(partial(_is_call, call=self._checked_call(call)), bool)

    def to_n_alt(self, fill: int = 0, dtype: Any = "i1") -> np.ndarray:
        """Alternate alleles (> 0) in each call; ``fill`` for calls with a missing allele."""
        return self._per_call(partial(_n_alleles, wanted=np.greater, fill=fill), dtype)

    def to_n_ref(self, fill: int = 0, dtype: Any = "i1") -> np.ndarray:
        """Reference alleles (0) in each call; ``fill`` for calls with a missing allele."""
        return self._per_call(partial(_n_alleles, wanted=np.equal, fill=fill), dtype)

    def _checked_call(self, call: Any) -> np.ndarray:
        call = np.asarray(call)
        if call.ndim != 1 or len(call) != self.ploidy:
            raise ValueError(f"invalid call ploidy: {call.tolist()!r} for ploidy {self.ploidy}")
        return call

    # ------------------------------------------------------------------ blocks

    def _count_calls(self, predicate: Callable[[np.ndarray], np.ndarray], axis: Any):
        axis = _normalize_axis(axis)
        if axis == 1:
            return self._per_variant(lambda b: np.count_nonzero(predicate(b), axis=1), (), np.int64)
        per_sample = np.zeros(self.n_samples, dtype=np.int64)
        for _, counts in self._blocks(lambda b: np.count_nonzero(predicate(b), axis=0)):
            per_sample += counts
        return per_sample if axis == 0 else per_sample.sum()  # np.int64, as allel's np.sum

    def _per_call(self, fn: Callable[[np.ndarray], np.ndarray], dtype: Any) -> np.ndarray:
        return self._per_variant(fn, (self.n_samples,), dtype)

    def _per_variant(self, fn: Callable[[np.ndarray], np.ndarray], tail: tuple, dtype) -> np.ndarray:
        out = np.empty((self.n_variants,) + tail, dtype=dtype)
        for (start, stop), values in self._blocks(fn):
            out[start:stop] = values
        return out

    def _blocks(self, fn: Callable[[np.ndarray], Any]):
        """(variant range, fn(block)) for every block, in order, computed on the pool."""
        # made as they are taken: a declared (2**40, ...) shape read in blocks of one
        # variant must not build its list of ranges first
        starts = range(0, self.n_variants, self.block_variants)

        def ranges():
            return ((s, min(s + self.block_variants, self.n_variants)) for s in starts)

        with WorkerPool(self.threads, "h5turbo-genotype") as pool:
            tasks = (partial(self._map_block, fn, r) for r in ranges())
            yield from zip(ranges(), in_order(pool, tasks, 2 * self.threads))

    def _map_block(self, fn: Callable[[np.ndarray], Any], variants: tuple[int, int]) -> Any:
        start, stop = variants
        return fn(self.dataset.read(np.s_[start:stop], threads=1))

    def _default_block(self) -> int:
        row_bytes = max(1, self.n_samples * self.ploidy * self.dataset.dtype.itemsize)
        rows = max(1, BLOCK_BYTES // row_bytes)
        chunk_rows = (self.dataset.chunks or (1,))[0]
        return max(chunk_rows, rows // chunk_rows * chunk_rows)  # whole chunk rows: no chunk decoded twice


def _pool_size(threads: Any) -> int:
    """Worker threads (the default for None or 0, as read_fast5), at most MAX_THREADS:
    each thread holds up to two blocks (8 MiB each by default) in memory."""
    return min(pool_threads(threads, _native.default_threads), MAX_THREADS)


# What each call is: (variants, samples, ploidy) block -> (variants, samples), as
# scikit-allel's GenotypeArray.is_* (a missing allele is any negative value).

def _is_called(block: np.ndarray) -> np.ndarray:
    return np.all(block >= 0, axis=2)


def _is_missing(block: np.ndarray) -> np.ndarray:
    return np.any(block < 0, axis=2)


def _is_hom(block: np.ndarray, allele: Optional[int]) -> np.ndarray:
    if allele is None:
        return (block[..., 0] >= 0) & np.all(block == block[..., :1], axis=2)
    return np.all(block == allele, axis=2)


def _is_hom_alt(block: np.ndarray) -> np.ndarray:
    return (block[..., 0] > 0) & np.all(block == block[..., :1], axis=2)


def _is_het(block: np.ndarray, allele: Optional[int]) -> np.ndarray:
    het = _is_called(block) & np.any(block != block[..., :1], axis=2)
    return het if allele is None else het & np.any(block == allele, axis=2)


def _is_call(block: np.ndarray, call: np.ndarray) -> np.ndarray:
    return np.all(block == call, axis=2)


def _n_alleles(block: np.ndarray, wanted: Callable, fill: int) -> np.ndarray:
    """How many alleles of each call are wanted(allele, 0), ``fill`` where one is missing."""
    counts = np.count_nonzero(wanted(block, 0), axis=2)
    if fill != 0:
        counts[_is_missing(block)] = fill
    return counts


def _check_genotypes(dataset: Any) -> None:
    """A typed error naming the file and the object for anything but an open dataset of
    variants x samples x ploidy (ploidy >= 1) signed integers."""
    if not isinstance(dataset, Dataset):
        if isinstance(dataset, HLObject):  # a group, a named type of an h5turbo file
            raise _native.FormatError(f"{dataset.file.filename}: {dataset.name}: not a genotype array "
                                      f"(variants x samples x ploidy of signed integers): a {type(dataset).__name__}")
        kind = type(dataset)
        raise TypeError(f"GenotypeArray takes an h5turbo Dataset (h5turbo.File(...)[name]), "
                        f"not {kind.__module__}.{kind.__qualname__}")
    filename = dataset.file.filename  # ClosedError once the file is closed
    shape, dtype = dataset.shape, dataset.dtype
    if shape is None or len(shape) != 3 or shape[2] < 1 or dtype.kind != "i":
        raise _native.FormatError(
            f"{filename}: {dataset.name}: not a genotype array (variants x samples x "
            f"ploidy of signed integers): shape {shape}, dtype {dtype}")


def _normalize_axis(axis: Any) -> Optional[int]:
    """None (every call), 0 (per sample) or 1 (per variant) from what numpy's sum over
    the (variants, samples) calls takes, as scikit-allel passes it: -2/-1, a tuple."""
    if isinstance(axis, tuple):
        if not axis:
            raise ValueError("axis=() would count nothing: pass None, 0, 1 or (0, 1)")
        axes = {_normalize_axis(a) for a in axis}
        if len(axes) != len(axis):
            raise ValueError(f"repeated axis in {axis!r}")
        return axes.pop() if len(axes) == 1 else None
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or not -2 <= axis <= 1:
        raise ValueError(f"axis must be None, 0 (per sample), 1 (per variant), -2, -1 or a tuple, not {axis!r}")
    return int(axis) % 2


def _subpop_indices(subpop: Any, n_samples: int) -> Optional[np.ndarray]:
    """scikit-allel's subpop check: sample indices, 1-D, in range, not negative."""
    if subpop is None:
        return None
    indices = np.asarray(subpop, dtype=np.int64)
    if indices.ndim != 1:
        raise TypeError(f"subpop must be a 1-D sequence of sample indices, not {indices.ndim}-D")
    if np.any(indices >= n_samples):
        raise ValueError(f"subpop index out of bounds for {n_samples} samples")
    if np.any(indices < 0):
        raise ValueError("subpop: negative indices not supported (as scikit-allel)")
    return indices


def _count_few_alleles(calls: np.ndarray, n_alleles: int) -> np.ndarray:
    """(rows, n_alleles) int32 counts of calls (rows, calls per row), one pass per allele
    (n_alleles <= FEW_ALLELES: every allele fits the smallest stored type)."""
    counts = np.zeros((len(calls), n_alleles), np.int32)
    for allele in range(n_alleles):
        counts[:, allele] = np.count_nonzero(calls == allele, axis=1)
    return counts


def _count_many_alleles(calls: np.ndarray, n_alleles: int) -> np.ndarray:
    """As _count_few_alleles, in one bincount of (row, allele) pairs. Alleles the stored
    type cannot hold (int8 and max_allele 200) stay 0."""
    kept = (calls >= 0) & (calls < n_alleles)
    rows = np.repeat(np.arange(len(calls), dtype=np.int64) * n_alleles, np.count_nonzero(kept, axis=1))
    pairs = rows + calls[kept]  # calls[kept] is in row order, as the repeated row starts
    return np.bincount(pairs, minlength=len(calls) * n_alleles).reshape(len(calls), n_alleles).astype(np.int32)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: no guard
        return 1 << 62
