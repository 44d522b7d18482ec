"""Object and region references, as h5py's ``Reference`` and ``RegionReference``.

A reference read from a file is a small value: the address of the object it names
(for a region reference, where its dataset and selection are stored). Like h5py's,
it does not hold the file: ``f[ref]`` (any group of the file works) opens the object,
``ds[regref]`` reads the referenced selection of a dataset, and a null reference is
false. Datasets and attributes of references have an object dtype whose metadata is
``{'ref': Reference}`` (``{'ref': RegionReference}``), as ``h5py.ref_dtype``.
"""

from __future__ import annotations

import itertools
from typing import Optional

import numpy as np

__all__ = ["Reference", "RegionReference", "ref_dtype", "regionref_dtype", "make_region"]


class Reference:
    """An HDF5 object reference (H5R_OBJECT): the address of an object header."""

    __slots__ = ("_address",)
    typecode = 0  # H5R_OBJECT, as h5py's Reference.typecode
    typesize = 8  # bytes of the stored reference, as h5py's Reference.typesize

    def __init__(self, address: int = 0):
        self._address = int(address)

    @property
    def address(self) -> int:
        """The object header address it points to (0 for a null reference)."""
        return self._address

    def __bool__(self) -> bool:
        return self._address != 0

    def _key(self):
        return (type(self), self._address)

    def __eq__(self, other):
        return self._key() == other._key() if isinstance(other, Reference) else NotImplemented

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "<HDF5 object reference>" if self else "<HDF5 object reference (null)>"


class RegionReference(Reference):
    """An HDF5 dataset region reference (H5R_DATASET_REGION): a global heap object
    holding the dataset's address and a selection of it. One made by
    ``ds.regionref[sel]`` holds its (dataset address, kind, data) itself: nothing is
    written to the file."""

    __slots__ = ("_index", "_region")
    typecode = 1  # H5R_DATASET_REGION, as h5py's RegionReference.typecode
    typesize = 12  # as h5py's RegionReference.typesize

    def __init__(self, collection: int = 0, index: int = 0):
        super().__init__(collection)
        self._index = int(index)
        self._region = None

    @classmethod
    def _made(cls, dataset_address: int, kind: str, data) -> "RegionReference":
        """A reference made here (ds.regionref[sel]), not read from a file."""
        ref = cls(0, 0)
        ref._region = (int(dataset_address), kind, data)
        return ref

    @property
    def heap_id(self) -> tuple[int, int]:
        """(global heap collection address, object index) of the stored region
        ((0, 0) for a reference made by ``regionref``)."""
        return (self._address, self._index)

    def __bool__(self) -> bool:
        return self._region is not None or self._address != 0

    def _key(self):
        if self._region is not None:
            return (type(self), self._region[0], self._region[1], _hashable(self._region[2]))
        return (type(self), self._address, self._index)

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "<HDF5 region reference>" if self else "<HDF5 region reference (null)>"


def _hashable(data):
    if isinstance(data, np.ndarray):
        return (data.shape, data.tobytes())
    if isinstance(data, (tuple, list)):
        return tuple(_hashable(d) for d in data)
    return data


ref_dtype = np.dtype("O", metadata={"ref": Reference})
regionref_dtype = np.dtype("O", metadata={"ref": RegionReference})


def region_points(kind: str, data, shape: tuple[int, ...]):
    """The selection of a region reference over a dataset of ``shape``, as what numpy
    indexing of that array takes to give the selected elements in HDF5's order (a 1-d
    result): ``None`` for all, an index tuple of coordinate arrays otherwise. Memory
    follows the selected elements, never the dataset's size. (A box or a grid of boxes
    is read and shaped from its per-axis indices, `box_axes`, without listing them.)"""
    if kind == "all":
        return None
    if kind == "none":
        return tuple(np.zeros(0, dtype=np.intp) for _ in shape)
    if kind == "points":
        coords = np.asarray(data, dtype=np.uint64).reshape(-1, len(shape))
        _check_inside(coords.max(axis=0) if len(coords) else None, shape)
        return tuple(coords[:, axis].astype(np.intp) for axis in range(len(shape)))
    if kind == "blocks":
        return _block_union_points(data, shape)
    raise ValueError(f"unknown selection kind {kind!r}")


def box_axes(kind: str, data, shape: tuple[int, ...]) -> Optional[list[np.ndarray]]:
    """The indices a region selects along each axis when it selects their product (in
    C order): a regular hyperslab, one box, or boxes forming a grid (how libhdf5 often
    stores a slice); None for other regions."""
    if not shape:
        return None
    if kind == "regular":
        return [_regular_axis(*per_axis, length) for *per_axis, length in zip(*data, shape)]
    if kind != "blocks":
        return None
    starts, ends = (np.asarray(a, dtype=np.uint64).reshape(-1, len(shape)) for a in data)
    if not len(starts):
        return None
    _check_inside(ends.max(axis=0), shape)
    intervals = [sorted(set(zip(starts[:, d].tolist(), ends[:, d].tolist()))) for d in range(len(shape))]
    disjoint = all(a[1] < b[0] for per_axis in intervals for a, b in zip(per_axis, per_axis[1:]))
    grid = set(itertools.product(*intervals))
    blocks = {tuple(zip(s.tolist(), e.tolist())) for s, e in zip(starts, ends)}
    if not disjoint or len(blocks) != len(starts) or blocks != grid:
        return None
    return [np.concatenate([np.arange(a, b + 1, dtype=np.intp) for a, b in per_axis]) for per_axis in intervals]


def region_selection_shape(kind: str, data, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape h5py gives ``ds[regref]`` for a region (kind, data) of a dataset of
    ``shape``: a product of per-axis indices from their counts, others from their points."""
    axes = box_axes(kind, data, shape)
    if axes is not None:
        counts = tuple(len(a) for a in axes)
        return (0,) * len(shape) if 0 in counts else counts
    return region_shape(kind, region_points(kind, data, shape), shape)


def region_shape(kind: str, index, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape h5py gives ``ds[regref]`` (its guess_shape): the dataset's for 'all',
    1-d for points and for hyperslab unions that are no box product, else the number
    of selected indices along each axis."""
    if kind == "all":
        return shape
    if not shape:
        return ()  # a scalar dataset: nothing or its element
    n = len(index[0])
    if kind == "points":
        return (n,)
    if n == 0:
        return (0,) * len(shape)
    # Along each axis: all selected points / those on the lowest selected index.
    guess = tuple(n // int(np.count_nonzero(i == i.min())) for i in index)
    return guess if int(np.prod(guess)) == n else (n,)


def block_boxes(data, shape: tuple[int, ...]) -> list[list[np.ndarray]]:
    """The boxes of a 'blocks' region (each start..end inclusive), each as its indices
    along every axis."""
    starts, ends = (np.asarray(a, dtype=np.uint64).reshape(-1, len(shape)) for a in data)
    _check_inside(ends.max(axis=0) if len(ends) else None, shape)
    return [[np.arange(int(s), int(e) + 1, dtype=np.intp) for s, e in zip(start, end)]
            for start, end in zip(starts, ends)]


def box_coordinates(axes: list[np.ndarray]) -> np.ndarray:
    """The coordinates (one row each, C order) of the product of per-axis indices."""
    return np.stack([g.reshape(-1) for g in np.meshgrid(*axes, indexing="ij")], axis=1)


def flat_offsets_fit(shape: tuple[int, ...]) -> bool:
    """Whether C-order offsets of elements of `shape` fit numpy's int64."""
    return int(np.prod(shape, dtype=object)) < 2**63


def _block_union_points(data, shape: tuple[int, ...]) -> tuple:
    """The elements of a union of boxes (each start..end inclusive), each once, in C
    order (HDF5's order for hyperslabs)."""
    pieces = [box_coordinates(axes) for axes in block_boxes(data, shape)]
    if not pieces:
        return tuple(np.zeros(0, dtype=np.intp) for _ in shape)
    coords = np.concatenate(pieces)
    if flat_offsets_fit(shape):
        # C order, overlaps once: sorting flat offsets is far faster than sorting rows
        flat = np.sort(np.ravel_multi_index(tuple(coords.T), shape))
        # (a sort and a mask: np.unique of NumPy 2 hashes first, several times slower here)
        flat = flat[np.concatenate(([True], flat[1:] != flat[:-1]))]
        return tuple(np.asarray(a, dtype=np.intp) for a in np.unravel_index(flat, shape))
    coords = np.unique(coords, axis=0)  # sorted rows: C order, overlaps once
    return tuple(coords[:, axis] for axis in range(len(shape)))


def _regular_axis(start: int, stride: int, count: int, block: int, length: int) -> np.ndarray:
    """Indices along one axis of a regular hyperslab: count blocks of block indices."""
    if count == 0 or block == 0:
        return np.zeros(0, dtype=np.intp)
    last = start + (count - 1) * stride + block - 1
    _check_inside(np.array([last]), (length,))
    offsets = (start + stride * np.arange(count, dtype=np.int64))[:, None] + np.arange(block)
    return np.unique(offsets.reshape(-1))


class RegionOutsideError(ValueError, OSError):
    """A region reference that reaches past its dataset's extent (the dataset shrank
    since): a ValueError, and the OSError h5py raises reading it."""


def _check_inside(maxima, shape) -> None:
    if maxima is not None and any(int(m) >= n for m, n in zip(maxima, shape)):
        raise RegionOutsideError(f"region reference selects outside the dataset's shape {shape}")


# ---------------------------------------------------------------------- making regions


def make_region(index, shape: tuple[int, ...]) -> tuple[str, object]:
    """(kind, data) of the selection h5py's ``regionref[index]`` stores, in the form
    ``region`` gives for stored ones: 'all' for ``()`` / ``...``; 'points' (n x rank) for
    a boolean mask of the dataset's shape; 'none' for an empty selection; 'regular'
    (start, stride, count, block per axis) for integers and slices; 'blocks' (starts,
    ends: one block per run of consecutive indices per axis, crossed) when an axis has
    an index list, which must increase, as h5py requires."""
    entries = list(index) if isinstance(index, tuple) else [index]
    if sum(e is Ellipsis for e in entries) > 1:
        raise ValueError("Only one ellipsis may be used.")
    if not shape or all(e is Ellipsis for e in entries):
        if shape is None:
            raise TypeError("Empty datasets have no region references")
        if entries and not all(e is Ellipsis for e in entries):
            raise ValueError(f"a scalar dataset takes () or ..., not {index!r}")
        return ("all", None)
    mask = _full_mask(entries, shape)
    if mask is not None:
        # a mask selecting nothing is no points selection but none (h5py: shape (0, 0))
        return ("points", np.argwhere(mask).astype(np.uint64)) if mask.any() else ("none", None)
    axes = [_axis(entry, n) for entry, n in zip(_expand_ellipsis(entries, len(shape)), shape)]
    if any(len(indices) == 0 for _, indices in axes):
        return ("none", None)
    if all(regular is not None for regular, _ in axes):
        return ("regular", tuple(tuple(int(r[k]) for r, _ in axes) for k in range(4)))
    runs = [_runs(indices) for _, indices in axes]
    blocks = np.array(list(itertools.product(*runs)), dtype=np.uint64)
    return ("blocks", (blocks[:, :, 0].copy(), blocks[:, :, 1].copy()))


def _full_mask(entries: list, shape: tuple[int, ...]):
    if len(entries) != 1:
        return None
    arr = entries[0]
    # a 1-d mask of a dataset of higher rank selects along the first axis (as h5py)
    if isinstance(arr, np.ndarray) and arr.dtype == bool and (arr.ndim > 1 or len(shape) == 1):
        if arr.shape != tuple(shape):
            raise TypeError(f"a boolean mask must have the dataset's shape {shape}, not {arr.shape}")
        return arr
    return None


def _expand_ellipsis(entries: list, rank: int) -> list:
    if any(e is None for e in entries):
        raise TypeError("region references take no np.newaxis")
    if any(isinstance(e, (str, bytes)) for e in entries):
        raise TypeError("region references take no field names")
    n_ellipsis = sum(e is Ellipsis for e in entries)
    if n_ellipsis > 1:
        raise ValueError("only one Ellipsis is allowed")
    if n_ellipsis:
        at = next(i for i, e in enumerate(entries) if e is Ellipsis)
        entries = entries[:at] + [slice(None)] * (rank - len(entries) + 1) + entries[at + 1:]
    if len(entries) > rank:
        raise ValueError(f"{len(entries)} indices for a dataset of rank {rank}")
    return entries + [slice(None)] * (rank - len(entries))


def _axis(entry, n: int):
    """(regular (start, stride, count, block) or None, the selected indices) on one
    axis (a range for integers and slices: nothing is allocated for them)."""
    if isinstance(entry, slice):
        start, stop, step = entry.indices(n)
        if step < 1:
            raise ValueError(f"Step must be >= 1 (got {step})")
        indices = range(start, stop, step)
        return (start, step, len(indices), 1), indices
    if isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
        i = int(entry) + n if entry < 0 else int(entry)
        if not 0 <= i < n:
            raise IndexError(f"index {int(entry)} is out of range for an axis of length {n}")
        return (i, 1, 1, 1), range(i, i + 1)
    arr = np.asarray(entry)
    if arr.dtype == bool and arr.ndim == 1 and len(arr) == n:
        arr = np.flatnonzero(arr)
    if arr.ndim != 1 or (arr.dtype.kind not in "iu" and len(arr)):
        raise TypeError(f"region references take integers, slices, increasing index lists "
                        f"or a boolean mask, not {entry!r}")
    arr = arr.astype(np.int64)
    arr = np.where(arr < 0, arr + n, arr)
    if len(arr) and (arr.min() < 0 or arr.max() >= n):
        raise IndexError(f"index out of range for an axis of length {n}")
    if np.any(np.diff(arr) <= 0):
        raise TypeError("Indexing elements must be in increasing order")
    return None, arr


def _runs(indices) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive indices."""
    if isinstance(indices, range) and indices.step == 1:
        return [(indices.start, indices.stop - 1)]
    arr = np.asarray(indices, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(arr) != 1) + 1
    return [(int(run[0]), int(run[-1])) for run in np.split(arr, breaks)]
