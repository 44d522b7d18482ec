"""Object and region references, as h5py's ``Reference`` and ``RegionReference``.

A reference read from a file is a small value: the address of the object it names
(for a region reference, where its dataset and selection are stored). Like h5py's,
it does not hold the file: ``f[ref]`` (any group of the file works) opens the object,
``ds[regref]`` reads the referenced selection of a dataset, and a null reference is
false. Datasets and attributes of references have an object dtype whose metadata is
``{'ref': Reference}`` (``{'ref': RegionReference}``), as ``h5py.ref_dtype``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Reference", "RegionReference", "ref_dtype", "regionref_dtype"]


class Reference:
    """An HDF5 object reference (H5R_OBJECT): the address of an object header."""

    __slots__ = ("_address",)
    typecode = "o"

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
        return isinstance(other, Reference) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "<HDF5 object reference>" if self else "<HDF5 object reference (null)>"


class RegionReference(Reference):
    """An HDF5 dataset region reference (H5R_DATASET_REGION): a global heap object
    holding the dataset's address and a selection of it."""

    __slots__ = ("_index",)
    typecode = "r"

    def __init__(self, collection: int = 0, index: int = 0):
        super().__init__(collection)
        self._index = int(index)

    @property
    def heap_id(self) -> tuple[int, int]:
        """(global heap collection address, object index) of the stored region."""
        return (self._address, self._index)

    def _key(self):
        return (type(self), self._address, self._index)

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "<HDF5 region reference>" if self else "<HDF5 region reference (null)>"


ref_dtype = np.dtype("O", metadata={"ref": Reference})
regionref_dtype = np.dtype("O", metadata={"ref": RegionReference})


def region_points(kind: str, data, shape: tuple[int, ...]):
    """The selection of a region reference over a dataset of ``shape``, as what numpy
    indexing of that array takes to give the selected elements in HDF5's order (a 1-d
    result): ``None`` for all, an index tuple of coordinate arrays otherwise."""
    if kind == "all":
        return None
    if kind == "none":
        return tuple(np.zeros(0, dtype=np.intp) for _ in shape)
    if kind == "points":
        coords = np.asarray(data, dtype=np.uint64).reshape(-1, len(shape))
        _check_inside(coords.max(axis=0) if len(coords) else None, shape)
        return tuple(coords[:, axis].astype(np.intp) for axis in range(len(shape)))
    mask = _hyperslab_mask(kind, data, shape)
    # Hyperslab elements come in increasing offset order, which is C order: nonzero's.
    return np.nonzero(mask)


def region_shape(kind: str, index, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape h5py gives ``ds[regref]`` (its guess_shape): the dataset's for 'all',
    1-d for points and for hyperslab unions that are no box product, else the number
    of selected indices along each axis."""
    if kind == "all":
        return shape
    n = len(index[0])
    if kind == "points":
        return (n,)
    if n == 0:
        return (0,) * len(shape)
    # Along each axis: all selected points / those on the lowest selected index.
    guess = tuple(n // int(np.count_nonzero(i == i.min())) for i in index)
    return guess if int(np.prod(guess)) == n else (n,)


def _hyperslab_mask(kind: str, data, shape: tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    if kind == "blocks":
        starts, ends = (np.asarray(a, dtype=np.uint64).reshape(-1, len(shape)) for a in data)
        _check_inside(ends.max(axis=0) if len(ends) else None, shape)
        for start, end in zip(starts, ends):
            mask[tuple(slice(int(s), int(e) + 1) for s, e in zip(start, end))] = True
        return mask
    if kind == "regular":
        axes = [_regular_axis(*per_axis, length) for *per_axis, length in zip(*data, shape)]
        mask[np.ix_(*axes)] = True
        return mask
    raise ValueError(f"unknown selection kind {kind!r}")


def _regular_axis(start: int, stride: int, count: int, block: int, length: int) -> np.ndarray:
    """Indices along one axis of a regular hyperslab: count blocks of block indices."""
    if count == 0 or block == 0:
        return np.zeros(0, dtype=np.intp)
    last = start + (count - 1) * stride + block - 1
    _check_inside(np.array([last]), (length,))
    offsets = (start + stride * np.arange(count, dtype=np.int64))[:, None] + np.arange(block)
    return np.unique(offsets.reshape(-1))


def _check_inside(maxima, shape) -> None:
    if maxima is not None and any(int(m) >= n for m, n in zip(maxima, shape)):
        raise ValueError(f"region reference selects outside the dataset's shape {shape}")
