"""``Dataset.id``: h5py's DatasetID queries about where a dataset's data lies in the
file (get_num_chunks, get_chunk_info, get_chunk_info_by_coord, chunk_iter,
read_direct_chunk, get_offset, get_storage_size), as tools that index HDF5 files for
other readers (kerchunk, VirtualiZarr) use them. There are no libhdf5 identifiers
behind it: the chunk index is read once and kept as arrays, not a tuple per chunk."""

from __future__ import annotations

import operator
from collections import namedtuple
from typing import Any, Callable, Optional, Sequence

import numpy as np

__all__ = ["DatasetID", "StoreInfo"]

# h5py.h5d.StoreInfo: the chunk's first element, the filters it skipped (bit i: filter
# i not applied), its absolute byte offset in the file and its stored size
StoreInfo = namedtuple("StoreInfo", ["chunk_offset", "filter_mask", "byte_offset", "size"])


class DatasetID:
    """What h5py's ``Dataset.id`` answers about storage, plus ``address`` and ``kind``
    of the native object. ``space`` and ``dxpl`` arguments are taken for h5py's
    signatures and must be None (libhdf5 ignores the space there too)."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._obj = dataset._obj
        # the File itself, not `dataset.file` (which raises once the file is closed): `valid`
        # must still answer then
        self._file = dataset._file
        self._table = None

    # asked of the dataset when used, so that `valid` answers also once the file is closed
    @property
    def shape(self) -> Optional[tuple]:
        return self._dataset.shape

    @property
    def dtype(self) -> np.dtype:
        return self._dataset.dtype

    def __repr__(self):
        return f"<h5turbo DatasetID {self._obj.name!r} at address {self._obj.address}>"

    @property
    def address(self) -> int:
        """The object header's address: the same object reached by two paths has one."""
        return self._obj.address

    @property
    def kind(self) -> str:
        return self._obj.kind

    @property
    def rank(self) -> int:
        return 0 if self.shape is None else len(self.shape)

    @property
    def valid(self) -> bool:
        """False once the file is closed."""
        return not self._file.closed

    # ------------------------------------------------------------------ whole dataset

    def get_storage_size(self) -> int:
        """Bytes allocated in the file for the raw data (after filters)."""
        return self._obj.storage_size()

    def get_offset(self) -> Optional[int]:
        """Byte offset of contiguous data in the file; None for chunked and compact
        data, storage never allocated and data in external files."""
        return self._obj.contiguous_offset

    # ------------------------------------------------------------------ chunks

    def get_num_chunks(self, space: Any = None) -> int:
        """Chunks allocated in the file."""
        _no_handle(space, "space")
        return len(self._chunk_table()[1])

    def get_chunk_info(self, index: int, space: Any = None) -> StoreInfo:
        """The index-th allocated chunk, in libhdf5's order."""
        _no_handle(space, "space")
        offsets, masks, file_offsets, sizes = self._chunk_table()
        index = _unsigned(index)
        if index >= len(masks):
            raise ValueError(f"Chunk index is out of range ({index} of {len(masks)} chunks)")
        return StoreInfo(tuple(offsets[index].tolist()), int(masks[index]), int(file_offsets[index]), int(sizes[index]))

    def get_chunk_info_by_coord(self, chunk_offset: Sequence[int]) -> StoreInfo:
        """The allocated chunk holding the element at ``chunk_offset`` (any element of
        it, as libhdf5 takes it, which h5py gives back as chunk_offset); all None and 0
        when that chunk was never written or lies outside the dataset."""
        self._require_chunked()
        coords = self._coords(chunk_offset)
        found = self._obj.chunk_info_at(coords)
        if found is None:
            return StoreInfo(None, 0, None, 0)
        mask, byte_offset, size = found
        return StoreInfo(tuple(chunk_offset), mask, byte_offset, size)

    def chunk_iter(self, func: Callable[[StoreInfo], Any], dxpl: Any = None) -> Any:
        """Call ``func`` with each allocated chunk's StoreInfo in libhdf5's order; a
        return value other than None ends the iteration and is returned."""
        _no_handle(dxpl, "dxpl")
        offsets, masks, file_offsets, sizes = self._chunk_table()
        # in blocks of Python ints: a numpy scalar per field per chunk took twice h5py's time
        for start in range(0, len(masks), _ITER_BLOCK):
            block = slice(start, start + _ITER_BLOCK)
            for info in zip(map(tuple, offsets[block].tolist()), masks[block].tolist(),
                            file_offsets[block].tolist(), sizes[block].tolist()):
                result = func(StoreInfo(*info))
                if result is not None:
                    return result
        return None

    def read_direct_chunk(self, offsets: Sequence[int], dxpl: Any = None, out: Any = None) -> tuple:
        """(filter mask, the chunk's stored bytes) for the chunk starting at element
        ``offsets``, as written (filtered, compressed or not). With ``out`` (a writable
        contiguous byte buffer large enough), the bytes go there and a memoryview of
        them is returned, as h5py."""
        _no_handle(dxpl, "dxpl")
        if len(offsets) != self.rank:  # before the layout, as h5py checks
            raise TypeError(f"offsets length ({len(offsets)}) must match dataset rank ({self.rank})")
        self._require_chunked()
        coords = self._coords(offsets)
        if any(c % n for c, n in zip(coords, self._obj.chunks)):
            raise OSError(f"Can't read unprocessed chunk data (offset {tuple(coords)} doesn't fall on a chunk's boundary)")
        stored = self._obj.read_stored_chunk(coords)
        if stored is None:
            raise RuntimeError(f"Can't get storage size of chunk (the chunk at {tuple(coords)} is not allocated)")
        mask, data = stored
        if out is None:
            return mask, data
        view = memoryview(out).cast("B")
        if view.readonly or len(view) < len(data):
            raise ValueError(f"out must be a writable buffer of at least {len(data)} bytes")
        view[:len(data)] = data
        return mask, view[:len(data)]

    # ------------------------------------------------------------------ helpers

    def _require_chunked(self) -> None:
        if self._obj.layout != "chunked":
            raise RuntimeError(f"Can't get chunk information ({self._obj.name!r} is not a chunked dataset)")

    def _chunk_table(self) -> tuple:
        self._require_chunked()
        if self._table is None:
            self._table = self._obj.chunk_table()
        return self._table

    def _coords(self, coords: Sequence[int]) -> list[int]:
        values = [_unsigned(c) for c in coords]
        if len(values) != self.rank:
            raise ValueError(f"Tuple length incompatible with array ({len(values)} coordinates, rank {self.rank})")
        return values


# chunk_iter converts this many chunks' fields to Python ints at a time
_ITER_BLOCK = 65536


def _unsigned(value: Any) -> int:
    value = operator.index(value)
    if value < 0:
        raise OverflowError(f"can't convert negative value {value} to hsize_t")
    return value


def _no_handle(value: Any, name: str) -> None:
    if value is not None:
        raise TypeError(f"{name}: h5turbo has no libhdf5 property lists or dataspaces; pass None")
