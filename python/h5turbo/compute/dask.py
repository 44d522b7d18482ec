"""Dataset.to_dask: chunk-aligned dask arrays that need no lock and pickle small.

Each task holds only (path, dataset name, block slices). On a worker it opens the file
once per process (a module-level cache keyed by path) and reads its block with the
native engine, which takes no lock: tasks in threads and in processes run side by side.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from typing import Any, Optional

import numpy as np

from .._native import Error, UnsupportedError
from .._optional import require

__all__ = ["to_dask", "block_shape", "DatasetSource", "sparse_to_dask", "sparse_layout"]

# Per-process open files, keyed by real path, with what the file was when opened (device,
# inode, size, modification time): a worker reuses one File for every task, and a file
# rewritten at the same path is opened again. At most _MAX_OPEN_FILES, least recently
# used dropped first (dropped, not closed: a task may still be reading it; the File
# closes when the last one is done).
_OPEN_FILES: "OrderedDict[str, tuple]" = OrderedDict()
_OPEN_FILES_LOCK = threading.Lock()
_MAX_OPEN_FILES = 64

# Contiguous and compact datasets have no chunk grid; blocks of about this size then.
_DEFAULT_BLOCK_BYTES = 128 << 20


def open_cached(path: str):
    """The File at path, opened once per process; opened again when the file on disk
    changed (rewritten, replaced) or someone closed it."""
    from ..objects.file import File

    signature = disk_signature(path)
    with _OPEN_FILES_LOCK:
        entry = _OPEN_FILES.get(path)
        if entry is not None and entry[1] == signature and not entry[0].closed:
            _OPEN_FILES.move_to_end(path)
            return entry[0]
    f = File(path)
    with _OPEN_FILES_LOCK:
        _OPEN_FILES[path] = (f, signature)
        _OPEN_FILES.move_to_end(path)
        while len(_OPEN_FILES) > _MAX_OPEN_FILES:
            _OPEN_FILES.popitem(last=False)
    return f


def disk_signature(path: str) -> Optional[tuple]:
    """What tells a file rewritten or replaced since: device, inode, size, modification time."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # File(path) says why
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class DatasetSource:
    """What a dask task reads from: picklable as (path, name, shape, dtype) only; the
    file is opened on first use in whatever process the task runs."""

    def __init__(self, path: str, name: str, shape: tuple, dtype: np.dtype):
        self.path, self.name = path, name
        self.shape, self.dtype = tuple(shape), dtype
        self.ndim = len(self.shape)

    def __reduce__(self):
        return (DatasetSource, (self.path, self.name, self.shape, self.dtype))

    def __getitem__(self, index: Any) -> np.ndarray:
        return self._dataset().read(index, threads=_task_threads())

    def _dataset(self):
        """The dataset as the array was made from it. A file replaced since then is read
        as it is now, but one whose dataset changed shape or dtype (or is gone) would give
        blocks that do not fit the array: a clear error instead."""
        from ..objects.dataset import Dataset

        obj = open_cached(self.path)[self.name]
        if not isinstance(obj, Dataset):
            raise _changed(self.path, self.name, "is no longer a dataset")
        if obj.shape != self.shape or obj.dtype != self.dtype:
            raise _changed(self.path, self.name, f"is now {obj.shape} {obj.dtype}, the dask "
                           f"array was made for {self.shape} {self.dtype}")
        return obj

    def __repr__(self):
        return f"DatasetSource({self.path!r}, {self.name!r})"


def _changed(path: str, name: str, what: str) -> Error:
    return Error(f"{path}: {name} {what}: the file changed after to_dask; make the dask "
                 "array again")


def _task_threads() -> Optional[int]:
    """Dask already runs one task per core: each read decodes on one thread unless the
    user asks otherwise (H5TURBO_DASK_THREADS=N; 0: all cores), so tasks do not
    oversubscribe cores. A value that is no such number is an error, not all cores."""
    value = os.environ.get("H5TURBO_DASK_THREADS", "1")
    try:
        threads = int(value)
    except ValueError:
        threads = -1
    if threads < 0:
        raise ValueError(f"H5TURBO_DASK_THREADS={value!r}: give the threads each dask task "
                         "decodes on (0: all cores)")
    return threads or None


def block_shape(shape: tuple, dtype: np.dtype, hdf5_chunks: Optional[tuple],
                chunks: Any = None) -> tuple:
    """Per axis the dask block size: the HDF5 chunk by default; a requested size is
    rounded up to a multiple of the HDF5 chunk so no chunk is split between tasks
    (-1 or None: the whole axis); 'auto' or a byte size lets dask pick multiples of the
    chunks. Every form dask takes is taken: a number, a tuple of them (any entry 'auto'
    or a byte size), a dict {axis: size} (missing axes whole), explicit block sizes per
    axis (a tuple of tuples: kept as given)."""
    import dask.array as da

    # dask sizes no blocks of objects (variable-length strings): size them as 8-byte
    # elements, one pointer each
    sized = np.dtype("f8") if np.dtype(dtype).hasobject else dtype
    if hdf5_chunks is None:  # contiguous or compact: dask's own choice
        limit = _DEFAULT_BLOCK_BYTES if chunks is None else None
        request = "auto" if chunks is None else chunks
        return da.core.normalize_chunks(request, shape, dtype=sized, limit=limit)
    if chunks is None:
        return da.core.normalize_chunks(hdf5_chunks, shape, dtype=dtype)
    requested = _per_axis_request(chunks, shape)
    if any(isinstance(r, str) for r in requested):
        requested = _dask_sizes(requested, shape, sized, hdf5_chunks)
    sizes = tuple(_aligned(r, c, n) for r, c, n in zip(requested, hdf5_chunks, shape))
    return da.core.normalize_chunks(sizes, shape, dtype=dtype)


def _per_axis_request(chunks: Any, shape: tuple) -> tuple:
    """One entry per axis, as dask's normalize_chunks reads the request."""
    if isinstance(chunks, dict):  # dask: an axis not named is whole
        chunks = tuple(chunks.get(axis, None) for axis in range(len(shape)))
    elif np.isscalar(chunks):
        chunks = (chunks,) * len(shape)
    else:
        chunks = tuple(chunks)
    if (len(shape) == 1 and len(chunks) > 1
            and all(isinstance(c, (int, np.integer)) for c in chunks)):
        chunks = (chunks,)  # dask: block sizes of the one axis
    if len(chunks) != len(shape):
        raise ValueError(f"chunks {chunks!r} has {len(chunks)} entries, the dataset "
                         f"has {len(shape)} axes")
    return chunks


def _dask_sizes(requested: tuple, shape: tuple, dtype: np.dtype, hdf5_chunks: tuple) -> tuple:
    """dask's block size on the 'auto' / byte-size axes (its size may cut below one
    chunk; _aligned rounds it up); an axis of length 0 keeps its HDF5 chunk."""
    import dask.array as da

    chosen = da.core.normalize_chunks(requested, shape, dtype=dtype,
                                      previous_chunks=hdf5_chunks)
    return tuple((axis[0] if axis and axis[0] > 0 else chunk) if isinstance(r, str) else r
                 for r, axis, chunk in zip(requested, chosen, hdf5_chunks))


def _aligned(requested: Any, chunk: int, length: int) -> Any:
    if requested is None or requested == -1:
        return max(length, 1)
    if isinstance(requested, (tuple, list)):  # explicit block sizes: as the user gave them
        return tuple(requested)
    if isinstance(requested, float) and requested.is_integer():
        requested = int(requested)
    if not isinstance(requested, (int, np.integer)) or requested < 1:
        raise ValueError(f"block sizes must be positive integers, -1 or None, not {requested!r}")
    return max(chunk, math.ceil(int(requested) / chunk) * chunk)


def _check_opened_by_path(obj) -> None:
    """Tasks reopen the file by path in each worker: a file object has none."""
    if obj.file._fileobj is not None:
        raise UnsupportedError(f"{obj.name}: to_dask needs a file opened by path; this one was "
                               f"opened from a file object ({obj.file.filename}), which dask's "
                               "workers cannot reopen")


def to_dask(dataset, chunks: Any = None):
    """The dask array of a dataset (see Dataset.to_dask)."""
    da = require("dask.array", "Dataset.to_dask", "dask")
    from dask.base import tokenize

    if dataset.shape is None:
        raise TypeError("Empty datasets have no numpy representation")
    _check_opened_by_path(dataset)
    path = os.path.realpath(dataset.file.filename)
    blocks = block_shape(dataset.shape, dataset.dtype, dataset.chunks, chunks)
    source = DatasetSource(path, dataset.name, dataset.shape, dataset.dtype)
    stamp = os.stat(path)
    name = "h5turbo-" + tokenize(path, dataset.name, stamp.st_mtime_ns, stamp.st_size, blocks)
    # lock=False: the native reader is thread- and process-safe. Fancy indexing on (the
    # native read takes numpy's index arrays): with it off, dask cannot push a selection
    # into the read and reads whole blocks for one element (2.5 s and 941 MB for one
    # element of a 10000 x 10000 block, against 0.13 s). The source sits once in the
    # graph, not per task.
    return da.from_array(source, chunks=blocks, name=name, lock=False,
                         asarray=True, inline_array=False,
                         meta=np.empty((0,) * len(dataset.shape), dtype=dataset.dtype))


# ---------------------------------------------------------------------- sparse groups

# Without a request, a sparse block holds about this many stored values (rounded up to
# whole chunks of the data dataset), so a task reads a few MiB.
_SPARSE_BLOCK_NNZ = 1 << 20


def sparse_layout(group) -> tuple[str, tuple[int, int]]:
    """('csr' or 'csc', shape) of a sparse-matrix group (AnnData csr/csc, h5sparse, 10x:
    what SparseDataset opens); TypeError for any other group."""
    from .sparse import SparseDataset

    sparse = group if isinstance(group, SparseDataset) else SparseDataset(group)
    return sparse.format, sparse.shape


def _major_bounds(indptr: np.ndarray, step: Optional[int], data_chunk: int) -> list[int]:
    """Block edges along the compressed axis: every `step` rows/columns when asked,
    else greedily about _SPARSE_BLOCK_NNZ stored values (whole data chunks) a block."""
    major = len(indptr) - 1
    if major <= 0:  # no rows (CSR) / columns (CSC): one empty block, as the chunks say
        return [0, 0]
    if step is not None:
        return list(range(0, major, step)) + [major]
    target = max(data_chunk, 1) * max(1, math.ceil(_SPARSE_BLOCK_NNZ / max(data_chunk, 1)))
    bounds, start = [0], 0
    while start < major:
        stop = int(np.searchsorted(indptr, indptr[start] + target, side="right")) - 1
        stop = min(major, max(stop, start + 1))
        bounds.append(stop)
        start = stop
    return bounds


def read_sparse_block(path: str, name: str, kind: str, start: int, stop: int, minor: int):
    """One block of rows (CSR) or columns (CSC) as a scipy.sparse matrix."""
    import scipy.sparse

    group = _sparse_group(path, name, kind, stop, minor)
    ptr = group["indptr"].read(np.s_[start:stop + 1], threads=_task_threads()).astype(np.int64)
    lo, hi = int(ptr[0]), int(ptr[-1])
    data = group["data"].read(np.s_[lo:hi], threads=_task_threads())
    indices = group["indices"].read(np.s_[lo:hi], threads=_task_threads())
    if kind == "csr":
        return scipy.sparse.csr_matrix((data, indices, ptr - lo), shape=(stop - start, minor))
    return scipy.sparse.csc_matrix((data, indices, ptr - lo), shape=(minor, stop - start))


def _sparse_group(path: str, name: str, kind: str, stop: int, minor: int):
    """The sparse group as the array was made from it, or a clear error when the file
    changed under it (blocks of another layout or size would not fit the array)."""
    group = open_cached(path)[name]
    try:
        now_kind, shape = sparse_layout(group)
    except TypeError:
        raise _changed(path, name, "is no longer a sparse matrix group") from None
    major, now_minor = shape if now_kind == "csr" else shape[::-1]
    if now_kind != kind or now_minor != minor or major < stop:
        raise _changed(path, name, f"is now a {now_kind} matrix {shape}")
    return group


def sparse_to_dask(group, chunks: Optional[int] = None):
    """A dask array of scipy.sparse blocks: CSR groups split by rows, CSC by columns."""
    da = require("dask.array", "a sparse matrix's to_dask", "dask")
    import scipy.sparse
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    kind, shape = sparse_layout(group)
    _check_opened_by_path(group)
    if chunks is not None and (not isinstance(chunks, (int, np.integer)) or chunks < 1):
        raise ValueError(f"chunks must be a positive number of rows/columns, not {chunks!r}")
    indptr = group["indptr"][()]
    data = group["data"]
    bounds = _major_bounds(indptr, chunks, (data.chunks or data.shape or (1,))[0])
    path = os.path.realpath(group.file.filename)
    stamp = os.stat(path)
    name = "h5turbo-sparse-" + tokenize(path, group.name, stamp.st_mtime_ns, bounds)
    major_axis, minor = (0, shape[1]) if kind == "csr" else (1, shape[0])
    graph = {}
    for i, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        key = (name, i, 0) if kind == "csr" else (name, 0, i)
        graph[key] = (read_sparse_block, path, group.name, kind, start, stop, minor)
    sizes = tuple(b - a for a, b in zip(bounds[:-1], bounds[1:])) or (0,)
    block_chunks = [None, None]
    block_chunks[major_axis] = sizes
    block_chunks[1 - major_axis] = (minor,)
    matrix = scipy.sparse.csr_matrix if kind == "csr" else scipy.sparse.csc_matrix
    meta = matrix((0, 0), dtype=data.dtype)
    return da.Array(HighLevelGraph.from_collections(name, graph, dependencies=()), name,
                    chunks=tuple(block_chunks), meta=meta)
