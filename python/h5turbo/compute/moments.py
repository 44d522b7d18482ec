"""What every reduction shares: numpy's result dtypes, and Chan et al.'s rule for
merging (count, mean, M2) moments of two parts (used by Dataset reductions of
virtual datasets, slab by slab, and by sparse matrices, block by block)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sum_dtype", "float_result_dtype", "merge_moments", "count_total"]

# What np.count_nonzero gives for a count over all axes: int before NumPy 2, intp after.
_COUNT_TOTAL_TYPE = type(np.count_nonzero(np.zeros(1)))


def sum_dtype(dt: np.dtype) -> np.dtype:
    """numpy's accumulator for sum: at least 64-bit integers, floats as they are."""
    if dt.kind in "bi":
        return np.dtype(np.int64)
    if dt.kind == "u":
        return np.dtype(np.uint64)
    return dt.newbyteorder("=")


def float_result_dtype(dt: np.dtype) -> np.dtype:
    """The dtype of mean, var and std: float64 for integers, the data's float type else."""
    return dt.newbyteorder("=") if dt.kind == "f" else np.dtype(np.float64)


def merge_moments(a: tuple, b: tuple) -> tuple:
    """(n, mean, M2) of the union of two parts, each given as (n, mean, M2); scalars or
    arrays of the same shape. Stable without a second pass over the data."""
    (n_a, mean_a, m2_a), (n_b, mean_b, m2_b) = a, b
    n = n_a + n_b
    delta = mean_b - mean_a
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = mean_a + delta * (n_b / n)
        m2 = m2_a + m2_b + delta * delta * (n_a * n_b / n)
    return n, mean, m2


def count_total(count: Any) -> Any:
    """A count of nonzeros over all axes, typed as the installed numpy types it."""
    return _COUNT_TOTAL_TYPE(count)
