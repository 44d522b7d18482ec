"""Translate a numpy-style index into one orthogonal native read plus numpy post-processing.

The native reader only knows orthogonal selections: per dataset axis either a
``(start, count, step)`` range with ``step >= 1`` or a strictly increasing uint64
index array. Every numpy index is mapped onto that in two stages:

1. ``axes`` / ``read_shape``: the smallest orthogonal block that holds every element
   the index touches (an integer reads one element, a stepped slice stays stepped, a
   list becomes its sorted unique values, a multi-axis boolean mask its bounding box).
2. ``local``: a numpy index applied to that block which gives exactly what numpy
   would give on the whole array. It keeps the structure of the caller's index (same
   Ellipsis, newaxis, integers, arrays in the same places), so numpy's own rules for
   where advanced-index dimensions land are reproduced rather than re-implemented.

Negative slice steps are supported as numpy does: the range is read forwards and
reversed in ``local``. Like h5py, at most one index array (or boolean mask) per
selection is accepted, because two would need a pointwise read, not an orthogonal one.
"""

from __future__ import annotations

import array
import operator
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np

__all__ = ["ReadPlan", "plan_read", "split_fields"]

class InvalidIndexError(IndexError, TypeError):
    """An index of a kind no selection takes (a float, a string, a reference), or a
    boolean mask of the wrong shape: an IndexError as numpy raises, and a TypeError as
    h5py raises, so code written for either catches it."""


class IndexMismatchError(IndexError, ValueError):
    """An index that does not fit the dataset (more indices than axes, any index of a
    scalar, two ellipses, a field name of a dataset without fields): an IndexError as
    numpy raises, and a ValueError as h5py raises."""


_INVALID_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
    "and integer or boolean arrays are valid indices"
)
_ONE_ARRAY_ONLY = (
    "Only one indexing vector or array is currently allowed for fancy indexing"
)


class ReadPlan(NamedTuple):
    """What to ask the native reader for, and how to turn its block into the result.
    (A named tuple: built for every read, it costs a third of a frozen dataclass.)"""

    axes: tuple  # one AxisSelection per dataset axis
    read_shape: tuple[int, ...]  # shape of the block the native read fills
    local: Optional[tuple]  # numpy index into the block; None: block.reshape(out_shape)
    out_shape: tuple[int, ...]  # shape numpy would give for the same index
    scalar_result: bool  # numpy returns a scalar, not an array (every axis an int)

    @property
    def is_empty(self) -> bool:
        """Nothing to read: some axis selects zero elements."""
        return 0 in self.read_shape

    def finish(self, block: np.ndarray) -> Any:
        """The numpy result of the original index, given the filled block."""
        if self.local is None:
            # A sub-array dtype adds trailing axes to the block: keep them.
            trailing = block.shape[len(self.read_shape):]
            result = block.reshape(self.out_shape + trailing)
            return result[()] if self.scalar_result else result
        # Integers are applied as length-1 slices and dropped by the reshape, so the
        # one index array keeps its place (h5py semantics, see _advanced_positions).
        local = tuple(slice(None) if isinstance(e, (int, np.integer)) else e for e in self.local)
        trailing = block.shape[len(self.read_shape):]
        if any(e is Ellipsis for e in local):
            # an array type's axes closed off: the Ellipsis covers the dataset's axes
            # only ([..., ::-2] reversed the element's own axis too)
            local += (slice(None),) * len(trailing)
        result = block[local].reshape(self.out_shape + trailing)
        return result[()] if self.scalar_result else result


@dataclass
class _Item:
    """One entry of the caller's index, resolved against the dataset axes it consumes."""

    kind: str  # 'int', 'slice', 'newaxis', 'ellipsis', 'array', 'bool0'; 'tail': axes
    #            the index leaves out (read whole, numpy appends them itself)
    local: Any  # what this entry becomes in the index applied to the block
    axes: list  # native AxisSelection per consumed dataset axis
    counts: list  # block length per consumed dataset axis
    adv_shape: tuple = ()  # for advanced entries: the shape it contributes
    identity: bool = False  # an array whose local form is arange: a slice would do


def split_fields(index: Any) -> tuple[Any, list[str]]:
    """Separate compound field names (h5py style, anywhere in the index) from the rest."""
    entries = index if isinstance(index, tuple) else (index,)
    names = [e for e in entries if isinstance(e, str)]
    if not names:
        return index, []
    return tuple(e for e in entries if not isinstance(e, str)), names


def plan_read(index: Any, shape: tuple[int, ...]) -> ReadPlan:
    """Plan the read of ``array[index]`` for a dataset of the given (non-null) shape."""
    if not shape and not _fits_a_scalar(index):
        # checked before the kinds of the entries: h5py's ValueError for any of them
        raise IndexMismatchError(f"illegal index for a scalar dataset: {index!r} (only (), ... and newaxis)")
    basic = plan_basic(index, shape)
    return basic if basic is not None else _plan_general(index, shape)


def _fits_a_scalar(index: Any) -> bool:
    """An index that consumes no axis: (), ..., newaxis, a boolean (numpy's 0-d mask)."""
    entries = index if isinstance(index, tuple) else (index,)
    return all(e is Ellipsis or e is None or isinstance(e, (bool, np.bool_)) for e in entries)


def _plan_general(index: Any, shape: tuple[int, ...]) -> ReadPlan:
    entries = _as_entries(index)
    items = _resolve(entries, shape)
    _check_single_array(items)
    axes = [a for item in items for a in item.axes]
    counts = [c for item in items for c in item.counts]
    local = _local_index(items)
    out_shape = _result_shape(items)
    return ReadPlan(
        axes=tuple(axes),
        read_shape=tuple(counts),
        local=local,
        out_shape=out_shape,
        # h5py returns a scalar whenever nothing is left of the dataset's axes (and
        # for ds[()] on a scalar dataset); ds[...] of a scalar stays a 0-d array.
        scalar_result=(out_shape == () and len(shape) > 0) or all(item.kind == "int" for item in items),
    )


def plan_basic(index: Any, shape: tuple[int, ...]) -> Optional[ReadPlan]:
    """The plan of the most common index, integers and forward slices only (``ds[5]``,
    ``ds[3, 10:20]``), without the general machinery (half of a small read's time);
    None for any other index, or one that fails, which the general path then plans or
    reports. Written for speed: a loader calls it once per element it reads."""
    if index is Ellipsis:  # ds[...]: every element (a scalar's is a 0-d array: the general path)
        if not shape:
            return None
        index = ()
    entries = index if type(index) is tuple else (index,)
    if len(entries) > len(shape):
        return None
    axes, counts, out_shape = [], [], []
    for entry, n in zip(entries, shape):
        kind = type(entry)
        if kind is int or (kind is not slice and isinstance(entry, np.integer)):
            position = int(entry) + n if entry < 0 else int(entry)
            if not 0 <= position < n:
                return None
            axes.append((position, 1, 1))
            counts.append(1)
        elif kind is slice and (entry.step is None or type(entry.step) is int and entry.step > 0):
            try:
                start, stop, step = entry.indices(n)
            except TypeError:
                return None
            count = len(range(start, stop, step))
            axes.append((start, count, step) if count else (0, 0, 1))
            counts.append(count)
            out_shape.append(count)
        else:
            return None
    if len(entries) < len(shape):
        for n in shape[len(entries):]:
            axes.append((0, n, 1))
            counts.append(n)
            out_shape.append(n)
    # every axis taken by an integer: numpy (and h5py) give a scalar
    return ReadPlan(tuple(axes), tuple(counts), None, tuple(out_shape), not out_shape)


# ---------------------------------------------------------------------------------
# Normalising entries


def _as_entries(index: Any) -> list:
    """The index as a list of entries, lists converted to arrays as numpy does."""
    entries = list(index) if isinstance(index, tuple) else [index]
    return [_as_entry(e) for e in entries]


def _as_entry(entry: Any) -> Any:
    if entry is None or entry is Ellipsis or isinstance(entry, slice):
        return entry
    if isinstance(entry, (bool, np.bool_)):
        return np.bool_(entry)
    if _is_multi_block_slice(entry):
        return _MultiBlock(entry)
    # a tuple inside the index is a list of indices, as numpy and h5py take it; so is
    # any other sequence of integers (range, array.array, memoryview)
    # (an array.array of floats too: _as_index_array refuses it)
    if isinstance(entry, (list, tuple, np.ndarray, range, memoryview, array.array)) or _is_array_like(entry):
        return _as_index_array(entry)
    try:
        return operator.index(entry)
    except TypeError:
        raise InvalidIndexError(_INVALID_INDEX) from None


def _is_multi_block_slice(entry: Any) -> bool:
    # h5py's MultiBlockSlice, recognised without importing h5py
    return type(entry).__name__ == "MultiBlockSlice" and hasattr(entry, "indices")


@dataclass(frozen=True)
class _MultiBlock:
    """An h5py MultiBlockSlice (`count` blocks of `block` indices, `stride` apart),
    resolved once its axis length is known. Like a slice it selects along its axis,
    no advanced indexing."""

    slice: Any

    def resolve(self, n: int) -> "_Item":
        start, stride, count, block = self.slice.indices(n)  # h5py's ValueError past the end
        if count > 1 and block > stride:
            raise ValueError(f"blocks of {block} overlap at stride {stride}")
        starts = start + stride * np.arange(count, dtype=np.int64)
        indices = (starts[:, None] + np.arange(block, dtype=np.int64)).reshape(-1)
        return _Item("slice", slice(None), [axis_selection(indices)], [len(indices)])


def _is_array_like(entry: Any) -> bool:
    return hasattr(entry, "__array__") and not isinstance(entry, (str, bytes))


def _as_index_array(entry: Any) -> Any:
    arr = np.asarray(entry)
    if arr.dtype == np.bool_:
        return arr if arr.ndim else np.bool_(arr[()])
    if arr.size == 0 and arr.dtype.kind not in "iu" and isinstance(entry, (list, tuple)):
        # numpy treats an empty list as an empty integer index (an empty float array
        # is no index)
        arr = arr.astype(np.intp)
    if arr.dtype.kind not in "iu":
        raise InvalidIndexError(_INVALID_INDEX)
    if arr.ndim == 0:
        return int(arr)
    return arr


# ---------------------------------------------------------------------------------
# Resolving entries against dataset axes


def _consumed_axes(entry: Any) -> int:
    if entry is None or entry is Ellipsis or isinstance(entry, np.bool_):
        return 0
    if isinstance(entry, np.ndarray) and entry.dtype == np.bool_:
        return entry.ndim
    return 1


def _resolve(entries: list, shape: tuple[int, ...]) -> list[_Item]:
    """Match every entry with the dataset axes it consumes; trailing axes are read whole."""
    ndim = len(shape)
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexMismatchError("an index can only have a single ellipsis ('...')")
    consumed = sum(_consumed_axes(e) for e in entries)
    if consumed > ndim:
        message = f"too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed"
        # more entries than axes: h5py's ValueError ("3 indexing arguments for 2
        # dimensions"), masks or not; else a boolean mask of the wrong shape: h5py's
        # TypeError (and numpy's IndexError)
        entries_given = sum(e is not None and e is not Ellipsis for e in entries)
        masked = any(isinstance(e, np.ndarray) and e.dtype == np.bool_ for e in entries)
        if masked and entries_given <= ndim:
            raise InvalidIndexError(message)
        raise IndexMismatchError(message)
    items = []
    axis = 0
    for entry in entries:
        width = ndim - consumed if entry is Ellipsis else _consumed_axes(entry)
        items.append(_resolve_entry(entry, axis, shape[axis:axis + width]))
        axis += width
    if axis < ndim:
        # implicit trailing full slices; kept out of `local` (numpy adds them itself)
        tail = shape[axis:]
        items.append(_Item("tail", None, [(0, n, 1) for n in tail], list(tail)))
    return items


def _resolve_entry(entry: Any, first_axis: int, dims: tuple[int, ...]) -> _Item:
    if entry is None:
        return _Item("newaxis", None, [], [])
    if entry is Ellipsis:
        return _Item("ellipsis", Ellipsis, [(0, n, 1) for n in dims], list(dims))
    if isinstance(entry, np.bool_):
        return _Item("bool0", entry, [], [], adv_shape=(1,) if entry else (0,))
    if isinstance(entry, slice):
        return _resolve_slice(entry, dims[0])
    if isinstance(entry, _MultiBlock):
        return entry.resolve(dims[0])
    if isinstance(entry, np.ndarray) and entry.dtype == np.bool_:
        return _resolve_mask(entry, first_axis, dims)
    if isinstance(entry, np.ndarray):
        return _resolve_int_array(entry, first_axis, dims[0])
    return _resolve_int(entry, first_axis, dims[0])


def _resolve_int(i: int, axis: int, n: int) -> _Item:
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    i = i + n if i < 0 else i
    return _Item("int", 0, [(i, 1, 1)], [1])


def _resolve_slice(s: slice, n: int) -> _Item:
    start, stop, step = s.indices(n)  # raises ValueError for a zero step, as numpy
    count = len(range(start, stop, step))
    if count == 0:
        return _Item("slice", slice(None), [(0, 0, 1)], [0])
    if step > 0 or count == 1:
        return _Item("slice", slice(None), [(start, count, max(step, 1))], [count])
    # read the same elements forwards, then reverse them
    lowest = start + (count - 1) * step
    return _Item("slice", slice(None, None, -1), [(lowest, count, -step)], [count])


def _resolve_int_array(arr: np.ndarray, axis: int, n: int) -> _Item:
    # compare before converting: a huge uint64 must not wrap into a negative index
    out_of_range = (arr >= n) if arr.dtype.kind == "u" else (arr < -n) | (arr >= n)
    if out_of_range.any():
        bad = int(arr[out_of_range].flat[0])
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    idx = arr.astype(np.int64, copy=False)
    idx = np.where(idx < 0, idx + n, idx)
    if arr.ndim == 1 and (len(idx) < 2 or (idx[1:] > idx[:-1]).all()):
        # already sorted and unique (the usual list): np.unique's sort is not needed
        return _Item("array", np.arange(len(idx)), [axis_selection(idx)], [len(idx)],
                     adv_shape=arr.shape, identity=True)
    unique, inverse = np.unique(idx, return_inverse=True)
    inverse = inverse.reshape(arr.shape)
    identity = arr.ndim == 1 and np.array_equal(unique, idx)  # already sorted and unique
    return _Item(
        "array", inverse, [axis_selection(unique)], [len(unique)],
        adv_shape=arr.shape, identity=identity,
    )


def _resolve_mask(mask: np.ndarray, first_axis: int, dims: tuple[int, ...]) -> _Item:
    # numpy lets an axis of length 0 in the mask stand for any axis length
    mismatched = [k for k, (m, n) in enumerate(zip(mask.shape, dims)) if m not in (n, 0)]
    if mismatched:
        axis = mismatched[0]
        raise InvalidIndexError(
            f"boolean index did not match indexed array along axis {first_axis + axis}; "
            f"size of axis is {dims[axis]} but size of corresponding boolean axis "
            f"is {mask.shape[axis]}"
        )
    if mask.ndim == 1:
        hits = np.flatnonzero(mask)
        return _Item(
            "array", np.arange(len(hits)), [axis_selection(hits)], [len(hits)],
            adv_shape=(len(hits),), identity=True,
        )
    return _resolve_mask_box(mask)


def _resolve_mask_box(mask: np.ndarray) -> _Item:
    """A multi-axis mask: read its bounding box, apply the mask cropped to that box."""
    coords = np.nonzero(mask)
    nnz = len(coords[0])
    if nnz == 0:
        box = tuple(slice(0, 0) for _ in coords)
    else:
        box = tuple(slice(int(c.min()), int(c.max()) + 1) for c in coords)
    axes = [(b.start, b.stop - b.start, 1) for b in box]
    return _Item(
        "array", mask[box], axes, [a[1] for a in axes], adv_shape=(nnz,),
    )


def axis_selection(sorted_unique: np.ndarray) -> Any:
    """A sorted unique index list as native AxisSelection: a range when it is evenly spaced."""
    if len(sorted_unique) == 0:
        return (0, 0, 1)
    if len(sorted_unique) == 1:
        return (int(sorted_unique[0]), 1, 1)
    steps = np.diff(sorted_unique)
    if (steps == steps[0]).all():
        return (int(sorted_unique[0]), len(sorted_unique), int(steps[0]))
    return np.ascontiguousarray(sorted_unique, dtype=np.uint64)


def _check_single_array(items: list[_Item]) -> None:
    if sum(item.kind == "array" for item in items) > 1:
        raise TypeError(_ONE_ARRAY_ONLY)


# ---------------------------------------------------------------------------------
# Post-processing and result shape


def _advanced_positions(items: list[_Item]) -> list[int]:
    """Positions of the index arrays. Unlike numpy (which would count integers as
    advanced too and move the array's axes first), h5py drops integer axes and keeps
    the one array's axes in place; we follow h5py."""
    return [k for k, item in enumerate(items) if item.kind in ("array", "bool0")]


def _local_index(items: list[_Item]) -> Optional[tuple]:
    """The index into the block; None when a reshape of the block is the result."""
    positions = _advanced_positions(items)
    entries = [item for item in items if item.kind != "tail"]
    if positions and _only_identity_advanced(items, positions):
        # the one array keeps its place and order: numpy would give the same as a slice
        entries = [_as_slice_item(item) if item.kind == "array" else item for item in entries]
        positions = []
    if not positions and all(_is_reshape_only(item) for item in entries):
        return None
    return tuple(item.local for item in entries)


def _only_identity_advanced(items: list[_Item], positions: list[int]) -> bool:
    consecutive = positions == list(range(positions[0], positions[-1] + 1))
    advanced = [items[k] for k in positions if items[k].kind != "int"]
    return consecutive and len(advanced) == 1 and advanced[0].identity


def _as_slice_item(item: _Item) -> _Item:
    return _Item("slice", slice(None), item.axes, item.counts)


def _is_reshape_only(item: _Item) -> bool:
    """Entries that only drop or add length-1 axes, or keep an axis as it was read."""
    if item.kind == "slice":
        return item.local == slice(None)
    return item.kind in ("int", "newaxis", "ellipsis")


def _result_shape(items: list[_Item]) -> tuple[int, ...]:
    """numpy's result shape: advanced dims in place if adjacent, else first."""
    positions = _advanced_positions(items)
    if not positions:
        return tuple(d for item in items for d in _basic_dims(item))
    try:
        adv = np.broadcast_shapes(*(items[k].adv_shape for k in positions))
    except ValueError:
        shapes = " ".join(str(items[k].adv_shape) for k in positions)
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together "
            f"with shapes {shapes}"
        ) from None
    before = [d for item in items[:positions[0]] for d in _basic_dims(item)]
    after = [d for item in items[positions[0]:] if item.kind not in ("int", "array", "bool0")
             for d in _basic_dims(item)]
    consecutive = positions == list(range(positions[0], positions[-1] + 1))
    if consecutive:
        return tuple(before) + tuple(adv) + tuple(after)
    return tuple(adv) + tuple(before) + tuple(after)


def _basic_dims(item: _Item) -> list[int]:
    if item.kind == "newaxis":
        return [1]
    if item.kind in ("slice", "ellipsis", "tail"):
        return list(item.counts)
    return []
