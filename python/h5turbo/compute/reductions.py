"""numpy-style reductions of a Dataset, computed chunk by chunk in the native engine.

Each thread folds whole chunks into its own partial result; the array is never
materialised. Results follow numpy's dtypes and shapes:

- ``sum``: integer and boolean data sum in int64 (uint64 for unsigned), wrapping
  modulo 2**64 as numpy does; floats keep their dtype. Float sums are accumulated in
  float64 whatever the data type, then cast: float32 results can differ from numpy's
  float32 pairwise sum in the last bits (ours is the more accurate one).
- ``mean``, ``var``, ``std``: float64 for integer data, the data's float type else.
  Variances combine per-chunk (count, mean, M2) with Chan et al.'s formula, so they
  are stable without a second pass.
- ``min``, ``max``: the dataset dtype; NaN propagates. The sign of a zero result
  (min of 0.0 and -0.0) is the first one met in storage order; numpy's depends on its
  SIMD loops (and the axis), so it is not compared.
- ``count_nonzero``: for ``axis=None`` the type the installed numpy gives (a Python
  int in NumPy 1.x, an intp scalar in 2.x), an intp array otherwise.
- ``dtype=``: the engine takes the accumulators it can give exactly (64-bit integer
  sums of integer data, cast to a narrower integer ``dtype`` afterwards: the same
  bits modulo 2**bits) and float32/float64 ones, accumulated in float64 as above (a
  float32 ``var`` of huge integers stays finite where numpy's float32 squares
  overflow). Every other ``dtype`` (bool, float16, complex, object, an integer
  ``dtype`` of float data or of a mean/var/std) has numpy's own semantics (wrapping
  narrow accumulators, platform casts of NaN to integers, ...): the selection is
  read and numpy reduces it.
- ``out=``: numpy's rules: the exact result shape, results cast into ``out``
  unsafely. An ``out`` of another dtype than the result's (a float one for
  mean/var/std) makes numpy choose another loop: numpy's own reduction then.
- Empty selections are reduced by numpy itself (its empty results, warnings and
  min/max errors); ``ddof >= count`` warns as numpy does.

The native path takes selections that are orthogonal blocks keeping every axis
(slices with positive or negative steps are read forwards; sorted integer lists).
Other selections (integers that drop axes, repeated or unordered lists, newaxis) and
other dtypes (float16, compound, ...) read the selection and let numpy reduce it.
Virtual datasets (no chunks of their own) are read in slabs along the first axis,
each reduced by numpy and the partial results combined the same way, so memory stays
at one slab.
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any, Optional

import numpy as np
try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy 1.x keeps it in numpy.core
    from numpy.core.numeric import normalize_axis_tuple

from ..objects.selection import plan_read
from .moments import count_total, float_result_dtype, merge_moments, sum_dtype

__all__ = ["reduce"]

_OPS = ("sum", "mean", "var", "std", "min", "max", "count_nonzero")

# Bytes of one slab of a virtual dataset read for a reduction.
SLAB_BYTES = 64 << 20


def reduce(ds: Any, op: str, axis: Any = None, dtype: Any = None, ddof: float = 0,
           keepdims: bool = False, selection: Any = None, threads: int = 0,
           out: Optional[np.ndarray] = None) -> Any:
    """``numpy.<op>(ds[selection], axis=..., out=...)`` without reading the whole
    selection."""
    if op not in _OPS:
        raise ValueError(f"unknown reduction {op!r}")
    _check_axis(ds, axis)
    if out is not None and not isinstance(out, np.ndarray):
        raise TypeError(f"{_where(ds)}: out must be a numpy array, not {type(out).__name__}")
    block = _native_block(ds, selection)
    # An empty block costs nothing to read, and numpy's result for it (empty arrays,
    # NaN with a warning, or an error for min/max) depends on its version.
    if block is None or 0 in block[1] or not _native_dtype(op, ds.dtype, dtype, out):
        return _numpy_reduce(ds, op, axis, dtype, ddof, keepdims, selection, threads, out)
    return _into(ds, out, _native_reduce(ds, op, block, axis, dtype, ddof, keepdims, threads))


def _native_reduce(ds: Any, op: str, block: tuple, axis: Any, dtype: Any, ddof: Any,
                   keepdims: bool, threads: int) -> Any:
    """`op` of a non-empty block (from `_native_block`) by the engine, or slab by slab
    for a virtual dataset, with numpy's result dtype and shape."""
    axes, shape, local = block
    reduced = (tuple(range(len(shape))) if axis is None
               else normalize_axis_tuple(axis, len(shape)))
    flags = [d in reduced for d in range(len(shape))]
    count = math.prod(int(n) for n, f in zip(shape, flags) if f)
    kshape = tuple(1 if f else n for n, f in zip(shape, flags))
    out_shape = kshape if keepdims else tuple(n for n, f in zip(shape, flags) if not f)

    def native(name: str) -> Any:
        if getattr(ds, "is_virtual", False):
            return _slab_reduce(ds, name, axes, shape, flags, threads)
        return ds._obj.reduce(list(axes), name, flags, threads)  # its errors name the file and dataset

    def finish(values: np.ndarray) -> Any:
        result = np.asarray(values).reshape(kshape)
        if local is not None:  # reversed axes: the kept ones come out reversed
            result = np.ascontiguousarray(result[local])
        result = result.reshape(out_shape)
        return result if result.ndim else result[()]

    element = ds.dtype
    if op == "sum":
        acc = sum_dtype(element) if dtype is None else np.dtype(dtype)
        values = native("sum_float" if acc.kind == "f" else "sum_int")
        return finish(values.astype(acc))
    if op == "mean":
        result_type = float_result_dtype(element) if dtype is None else np.dtype(dtype)
        sums = native("sum_float")
        with np.errstate(invalid="ignore", divide="ignore"):
            return finish((sums / count).astype(result_type))
    if op in ("var", "std"):
        result_type = float_result_dtype(element) if dtype is None else np.dtype(dtype)
        # numpy's divisor: an intp count less ddof, whatever ddof's type
        divisor = np.maximum(np.intp(count) - ddof, 0)
        if divisor <= 0:
            warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)
        _n, _mean, m2 = native("moments")
        with np.errstate(invalid="ignore", divide="ignore"):
            var = m2 / divisor
            values = np.sqrt(var) if op == "std" else var
        return finish(values.astype(result_type))
    if op in ("min", "max"):
        raw = native(op)
        return finish(np.frombuffer(raw, dtype=element.newbyteorder("=")).copy())
    counts = finish(native("count_nonzero").astype(np.intp))
    return count_total(counts) if axis is None and not keepdims else counts


def _where(ds: Any) -> str:
    """The file and the dataset, for error messages."""
    return f"{ds.file.filename}: {ds.name}"


def _check_axis(ds: Any, axis: Any) -> None:
    """numpy's TypeError for an axis that is not None, an integer or a tuple of them
    (a list, a bool, a float)."""
    for entry in axis if isinstance(axis, tuple) else (() if axis is None else (axis,)):
        try:
            if isinstance(entry, (bool, np.bool_)):
                raise TypeError("a bool is not an axis")
            operator.index(entry)
        except TypeError:
            raise TypeError(f"{_where(ds)}: axis must be None, an integer or a tuple of "
                            f"integers, not {axis!r}") from None


def _native_dtype(op: str, element: np.dtype, dtype: Any, out: Optional[np.ndarray]) -> bool:
    """Whether the engine gives numpy's result for this dtype= and out= (see the
    module docstring); else numpy reduces the selection itself."""
    if out is not None and not _native_out(op, element, dtype, out.dtype):
        return False
    if dtype is None:
        return True
    acc = np.dtype(dtype)
    if acc.kind == "f":
        return acc.itemsize in (4, 8)
    return op == "sum" and acc.kind in "iu" and element.kind in "biu"


def _native_out(op: str, element: np.dtype, dtype: Any, out: np.dtype) -> bool:
    """Whether numpy's reduction into an array of dtype `out` is the engine's result
    cast: numpy picks its loop from the data's and out's dtypes together (uint64 data
    into int64 sums in float64, float data into integers casts NaN...), so only an
    out of the result's own dtype, or a float one for mean/var/std, is left to the
    engine."""
    if op in ("mean", "var", "std"):
        return out.kind == "f" and out.itemsize in (4, 8)
    if op == "sum":
        natural = sum_dtype(element) if dtype is None else np.dtype(dtype)
    else:
        natural = element
    return out.newbyteorder("=") == natural.newbyteorder("=")


def _into(ds: Any, out: Optional[np.ndarray], result: Any) -> Any:
    """numpy's `out=`: the result written into `out` (exactly its shape, cast
    unsafely as numpy's reductions do), which is returned."""
    if out is None:
        return result
    if out.shape != np.shape(result):
        raise ValueError(f"{_where(ds)}: out has shape {out.shape}, the reduction's "
                         f"result {np.shape(result)}")
    np.copyto(out, result, casting="unsafe")
    return out


def _slab_reduce(ds: Any, name: str, axes: list, shape: tuple, flags: list, threads: int) -> Any:
    """What the engine's reduction `name` returns, computed over slabs of the block
    along its first axis (for virtual datasets): sums in float64 or 64-bit integers,
    (count, mean, M2) moments combined as the engine combines chunks, min/max raw."""
    reduced = tuple(d for d, f in enumerate(flags) if f)
    row_bytes = max(1, math.prod(int(n) for n in shape[1:]) * ds.dtype.itemsize)
    rows = max(1, SLAB_BYTES // row_bytes)
    native_dtype = ds.dtype.newbyteorder("=")
    total = None
    for first in range(0, shape[0], rows):
        n = min(rows, shape[0] - first)
        slab = np.empty((n,) + tuple(shape[1:]), dtype=ds.dtype)
        ds._obj.read([_rows_of(axes[0], first, n)] + list(axes[1:]), slab, threads)
        part = _slab_partial(name, slab.astype(native_dtype, copy=False), reduced)
        total = part if total is None else _combine(name, total, part, 0 in reduced)
    if name in ("min", "max"):
        return np.ascontiguousarray(total).tobytes()
    return total


def _rows_of(first_axis: Any, first: int, n: int) -> Any:
    """Rows first .. first + n of the block's first axis, as a native axis selection:
    a (start, count, step) slice or an array of indices (a sorted list, a mask)."""
    if isinstance(first_axis, np.ndarray):
        return first_axis[first:first + n]
    start, _count, step = first_axis
    return (start + first * step, n, step)


def _slab_partial(name: str, data: np.ndarray, reduced: tuple) -> Any:
    if name == "sum_int":
        return np.sum(data, axis=reduced, keepdims=True, dtype=sum_dtype(data.dtype))
    if name == "sum_float":
        return np.sum(data, axis=reduced, keepdims=True, dtype=np.float64)
    if name == "count_nonzero":
        return np.count_nonzero(data, axis=reduced, keepdims=True)
    if name in ("min", "max"):
        return (np.min if name == "min" else np.max)(data, axis=reduced, keepdims=True)
    n = math.prod(int(data.shape[d]) for d in reduced)
    mean = np.mean(data, axis=reduced, keepdims=True, dtype=np.float64)
    m2 = np.sum(np.square(data - mean, dtype=np.float64), axis=reduced, keepdims=True)
    return np.full(mean.shape, float(n)), mean, m2


def _combine(name: str, a: Any, b: Any, across: bool) -> Any:
    """Two slabs' partials: merged when the first axis is reduced, else stacked."""
    if not across:
        if name == "moments":
            return tuple(np.concatenate([x, y]) for x, y in zip(a, b))
        return np.concatenate([a, b])
    if name in ("min", "max"):
        return (np.minimum if name == "min" else np.maximum)(a, b)  # NaN propagates, as in numpy
    if name != "moments":
        return a + b
    return merge_moments(a, b)


def _native_block(ds: Any, selection: Any) -> Optional[tuple]:
    """(native axes, block shape, numpy index reordering the block or None) when the
    engine can reduce this; None otherwise."""
    shape, dt = ds.shape, ds.dtype
    if not shape or dt.fields is not None or dt.subdtype is not None:
        return None
    if dt.kind not in "biuf" or (dt.kind == "f" and dt.itemsize not in (4, 8)):
        return None
    if selection is None:
        return [(0, n, 1) for n in shape], tuple(shape), None
    plan = plan_read(selection, shape)
    # The same shape: the block is the selection's array (an integer drops an axis and
    # a newaxis adds one, so equal ranks alone are not enough: (None, :, 0)).
    if tuple(plan.out_shape) != tuple(plan.read_shape) or not _order_free(plan):
        return None
    return list(plan.axes), tuple(plan.read_shape), plan.local


def _order_free(plan: Any) -> bool:
    """The selection is the block, possibly with whole axes reversed (negative
    steps): the same elements, no repeats; only the order of kept axes changes."""
    if plan.local is None:
        return True
    for entry in plan.local:
        if isinstance(entry, slice):
            if entry.start is not None or entry.stop is not None:
                return False
            continue
        return False  # index arrays (may repeat), integers, newaxis: let numpy do it
    return True


def _numpy_reduce(ds, op, axis, dtype, ddof, keepdims, selection, threads, out=None) -> Any:
    data = np.asarray(ds.read(() if selection is None else selection,
                              threads=threads if threads else None))
    if op == "count_nonzero":
        counts = np.count_nonzero(data, axis=axis, keepdims=keepdims)
        return count_total(counts) if axis is None and not keepdims else counts
    kwargs: dict = {"axis": axis, "keepdims": keepdims}
    if out is not None:
        kwargs["out"] = out
    if op in ("sum", "mean", "var", "std") and dtype is not None:
        kwargs["dtype"] = dtype
    if op in ("var", "std"):
        kwargs["ddof"] = ddof
    return getattr(np, op)(data, **kwargs)
