"""Dataset: h5py-like metadata and numpy-style reads through the native chunk engine."""

from __future__ import annotations

import itertools
import math
import posixpath
from typing import Any, Callable, Iterator, Optional, Union

import numpy as np

from .. import readahead
from ..compute import reductions
from .base import HLObject, cached_property
from .dataset_id import DatasetID
from .dims import DimensionManager, is_scale
from .references import (RegionReference, block_boxes, box_axes, box_coordinates, flat_offsets_fit,
                         region_points, region_selection_shape, region_shape)
from .selection import IndexMismatchError, ReadPlan, axis_selection, plan_basic, plan_read, split_fields
from .types import Empty, ReadOnlyError, ReadOnlyKeyError, ReadOnlyRuntimeError, read_only_error
from .values import string_encoding
from .filters import FILTERS, H5PY_COMPRESSION, H5PY_NAMED, filter_id

__all__ = ["Dataset"]

_GZIP, _SHUFFLE, _FLETCHER32, _SZIP, _SCALEOFFSET = (
    filter_id(name) for name in ("deflate", "shuffle", "fletcher32", "szip", "scaleoffset"))
# Rows read at once when iterating a dataset (h5py reads one row per step).
_ITERATION_BLOCK_BYTES = 1 << 20
# h5py's Dataset.compression: the first of these present, under h5py's name, else
# "unknown" when a filter h5py does not name (a plugin) is in the pipeline
_COMPRESSION_NAMES = {filter_id(name): h5py_name for name, h5py_name in H5PY_COMPRESSION.items()}
_H5PY_NAMED_IDS = frozenset(filter_id(name) for name in H5PY_NAMED)
# szip option-mask bits, as h5py decodes them
_SZIP_EC_OPTION_MASK, _SZIP_NN_OPTION_MASK = 4, 32


# index types plan_basic may plan (a tuple: when all its entries are integers and slices)
_BASIC_INDEX_TYPES = frozenset({int, slice, tuple} | {t for t in np.sctypeDict.values() if issubclass(t, np.integer)})


# the block of one element and its index, by rank (HDF5 allows 32 axes)
_ONES = [(1,) * rank for rank in range(33)]
_ZEROS = [(0,) * rank for rank in range(33)]


def _element_axes(index: Any, shape: tuple[int, ...]) -> Optional[list]:
    """The native selection of one element when `index` is a Python int per axis, each
    in range (negative ones counted from the end); else None."""
    if type(index) is int:
        if len(shape) != 1:
            return None
        index = (index,)
    elif type(index) is not tuple or len(index) != len(shape):
        return None
    axes = []
    for position, n in zip(index, shape):
        if type(position) is not int:
            return None
        if position < 0:
            position += n
        if not 0 <= position < n:
            return None
        axes.append((position, 1, 1))
    return axes


def _span_of(index: Any, shape: tuple[int, ...]) -> Optional[tuple[int, int]]:
    """(start, stop) on the first axis when `index` takes a span of it and every other
    axis whole: ``()``, or a slice of step 1 (``ds[a:b]``, ``ds[:]``); else None."""
    if type(index) is tuple:
        return None if index else (0, shape[0])
    if type(index) is not slice or index.step is not None:
        return None
    try:
        start, stop, _ = index.indices(shape[0])
    except TypeError:  # not integers: the general path says so as h5py does
        return None
    return start, stop


def threads_arg(threads: Optional[int]) -> int:
    """The native `threads` argument: 0 asks for the default (H5TURBO_THREADS or all cores)."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be None or a positive integer, not {threads!r}")
    # the engine clamps counts to its maximum; a count past 64 bits must not overflow first
    return min(int(threads), 2**63 - 1)


def pool_threads(threads: Any, default: Callable[[], int]) -> int:
    """A Python pool's size from a `threads` argument: default() for None or 0 (the
    format readers' convention), else threads_arg's positive count."""
    if threads is None or (isinstance(threads, (int, np.integer)) and not isinstance(threads, bool)
                           and threads == 0):
        return default()
    return threads_arg(threads)


class Dataset(HLObject):
    """An HDF5 dataset opened read-only.

    Indexing follows numpy: integers (negative too), slices with any non-zero step
    (negative steps are read forwards and reversed), Ellipsis, np.newaxis, one integer
    list/array (any order, repeats allowed) or boolean mask per selection, compound field
    names as in h5py (``ds["x"]``, ``ds[0:5, "x"]``). Out-of-range indexes raise
    IndexError as numpy does. Each read fetches only the elements the index touches.
    """

    def __repr__(self):
        if not self:
            return "<Closed HDF5 dataset>"
        name = posixpath.basename(posixpath.normpath(self.name))
        return f'<HDF5 dataset "{name}": shape {self.shape}, type "{self.dtype.str}">'

    # ------------------------------------------------------------------ metadata

    @cached_property
    def id(self) -> DatasetID:
        """h5py's DatasetID storage queries: get_chunk_info, chunk_iter,
        read_direct_chunk, get_offset ... (see objects/dataset_id.py)."""
        return DatasetID(self)

    # h5py keeps `shape` and `size` of a dataset in a read-only file once they are asked
    # (until refresh()), and answers them also once the file is closed; asked first after
    # that they raise, as `ndim` always does then (h5py: RuntimeError; ClosedError is one).
    # Internal code asks _stored_shape, which is not asking `shape`.

    @cached_property
    def shape(self) -> Optional[tuple[int, ...]]:
        """None for a null dataspace."""
        self._check_open()
        return self._stored_shape

    @cached_property
    def _stored_shape(self) -> Optional[tuple[int, ...]]:
        return self._obj.shape

    @cached_property
    def dtype(self) -> np.dtype:
        return self._obj.dtype

    @cached_property
    def _spacepad(self) -> bool:
        """Fixed strings padded with spaces, which conversions to another length keep
        whole (null-terminated and null-padded ones end at their first NUL there)."""
        return self._obj.string_padding == "spacepad"

    @property
    def ndim(self) -> int:
        self._check_open()
        shape = self._stored_shape
        return 0 if shape is None else len(shape)

    @cached_property
    def size(self) -> Optional[int]:
        self._check_open()
        shape = self._stored_shape
        return None if shape is None else math.prod(int(n) for n in shape)  # past 2**64 too, as h5py

    @property
    def nbytes(self) -> int:
        return (self.size or 0) * self.dtype.itemsize

    @cached_property
    def maxshape(self) -> Optional[tuple]:
        return self._obj.maxshape

    @cached_property
    def chunks(self) -> Optional[tuple[int, ...]]:
        return self._obj.chunks

    @property
    def layout(self) -> str:
        return self._obj.layout

    @cached_property
    def external(self) -> Optional[list[tuple[str, int, int]]]:
        """h5py's ``external``: [(file name, offset, size)] when the raw data lives in
        other files (read as libhdf5 reads them: see the README), else None."""
        return self._obj.external

    @property
    def dims(self) -> "DimensionManager":
        """The dimension scales per axis (h5py's ``dims``): ``ds.dims[0].label``,
        ``ds.dims[0][0]`` (a scale by position), ``ds.dims[0]["name"]`` (by name)."""
        return DimensionManager(self)

    @property
    def is_scale(self) -> bool:
        """Whether this dataset is a dimension scale (h5py's ``is_scale``)."""
        return is_scale(self)

    @property
    def is_virtual(self) -> bool:
        """Whether this is a virtual dataset (VDS), as h5py's ``is_virtual``: its data is
        read from source datasets in this or other files (see the README)."""
        return self._obj.layout == "virtual"

    def virtual_sources(self) -> list:
        """A virtual dataset's mappings, as h5py's: [VDSmap(vspace, file_name,
        dset_name, src_space)]; the selections are h5turbo.objects.vds.VirtualSelection
        (h5py's are libhdf5 dataspaces). RuntimeError for another layout, as h5py."""
        from .vds import virtual_sources

        return virtual_sources(self)

    @property
    def chunk_index(self) -> Optional[str]:
        """How the chunks are indexed in the file ('btree_v1', 'single_chunk', 'implicit',
        'fixed_array', 'extensible_array', 'btree_v2'); None unless chunked."""
        return self._obj.chunk_index

    @property
    def chunk_count(self) -> int:
        """Chunks allocated in the file (1 for a contiguous dataset with storage)."""
        return self._obj.chunk_count()

    @property
    def storage_size(self) -> int:
        """Bytes the data takes in the file (after filters), as h5py's id.get_storage_size()."""
        return self._obj.storage_size()

    @property
    def filters(self) -> tuple[tuple[int, str, tuple[int, ...]], ...]:
        """The filter pipeline in order: (filter id, name, client data) per filter."""
        return tuple((fid, name, tuple(data)) for fid, name, data in self._obj.filters)

    @cached_property
    def _filters(self) -> dict[int, tuple]:
        return {fid: tuple(data) for fid, _name, data in self._obj.filters}

    @property
    def filter_names(self) -> tuple[str, ...]:
        """The filters' names as stored in the file (h5py's ``filter_names``). Version 2
        pipelines store no name for libhdf5's own filters (ids below 256): libhdf5 then
        gives its name for them, and so does this."""
        return tuple(name or (FILTERS[fid].name if fid < 256 and fid in FILTERS else "")
                     for fid, name, _data in self._obj.filters)

    @property
    def filter_ids(self) -> tuple[int, ...]:
        return tuple(fid for fid, _name, _data in self._obj.filters)

    @property
    def compression(self) -> Optional[str]:
        named = next((name for fid, name in _COMPRESSION_NAMES.items() if fid in self._filters), None)
        if named is None and any(fid not in _H5PY_NAMED_IDS for fid in self._filters):
            return "unknown"
        return named

    @property
    def compression_opts(self) -> Any:
        """gzip: the level; szip: (mask name, pixels per block); otherwise None (as h5py)."""
        if _GZIP in self._filters:
            return self._filters[_GZIP][0]
        if _SZIP in self._filters:
            return _szip_opts(self._filters[_SZIP])
        return None

    @property
    def shuffle(self) -> bool:
        return _SHUFFLE in self._filters

    @property
    def fletcher32(self) -> bool:
        return _FLETCHER32 in self._filters

    @property
    def scaleoffset(self) -> Optional[int]:
        data = self._filters.get(_SCALEOFFSET)
        return None if data is None else data[1]

    @cached_property
    def fillvalue(self) -> Any:
        return self._obj.fillvalue

    def refresh(self) -> None:
        """Read this dataset's metadata again (h5py's ``refresh()``), for a file a SWMR
        writer is appending to: its shape, chunk index and attributes as the writer
        last flushed them, so later reads see the new data. Objects looked up in the
        file afterwards (``f["d"]`` again) see it too; objects opened earlier keep the
        view they had until refreshed themselves. A read of metadata the writer is
        rewriting at that moment is tried again (up to 100 times, 1 ms apart)."""
        self._obj = self._obj.refreshed()
        for name in _CACHED:
            self.__dict__.pop(name, None)
        self._file._see_refreshed(self._obj)

    # ------------------------------------------------------------------ length, iteration

    def __len__(self) -> int:
        return self.len()

    def len(self) -> int:
        """The size of the first axis; TypeError for scalar and null datasets (as h5py)."""
        if not self.shape:
            raise TypeError("Attempt to take len() of scalar dataset")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the first axis: rows as ``ds[i]`` gives them, read in blocks
        rather than one read per row. The first block is one chunk's rows (the first
        row of a huge dataset costs one chunk, as in h5py), each next one twice the
        last, up to about 1 MiB of rows."""
        if not self.shape:
            raise TypeError("Can't iterate over a scalar dataset")
        n = self.shape[0]
        row_bytes = max(1, self.dtype.itemsize * math.prod(self.shape[1:]))
        most = max(1, _ITERATION_BLOCK_BYTES // row_bytes)
        rows = min(most, self.chunks[0] if self.chunks else most)
        start = 0
        while start < n:
            yield from self[start:start + rows]
            start += rows
            rows = min(most, rows * 2)

    # ------------------------------------------------------------------ reading

    def __getitem__(self, index: Any) -> Any:
        # the commonest index (integers and forward slices: a loader's ds[i], ds[a:b])
        # skips read()'s checks for region references, field names and `out`; that
        # bookkeeping was twice the native read of one cached element
        shape = self._stored_shape
        if shape and type(index) in _BASIC_INDEX_TYPES:
            element = _element_axes(index, shape)
            if element is not None:
                return self._read_element(element)
            if type(index) is int and -shape[0] <= index < shape[0]:  # a row: rank >= 2 here
                position = index + shape[0] if index < 0 else index
                return self._read_span(position, position + 1)[0]
            span = _span_of(index, shape)
            if span is not None:
                return self._read_span(*span)
            plan = plan_basic(index, shape)
            if plan is not None:
                return self._read_plan(plan, 0)
        elif shape and index is Ellipsis:
            return self._read_span(0, shape[0])
        return self.read(index)

    def _read_span(self, start: int, stop: int) -> np.ndarray:
        """``ds[start:stop]`` (stop past start or not), whole along the other axes: a
        slice of step 1, ``ds[()]``, ``ds[...]`` and (its first element) a row, as
        plan_basic and ReadPlan.finish make them, without them."""
        count = max(stop - start, 0)
        rest = self._row_rest
        block = np.empty((count,) + rest[0], dtype=self.dtype)
        if block.size:
            self._obj.read([(start, count, 1)] + rest[1], block, 0)
        return block

    @cached_property
    def _row_rest(self) -> tuple:
        """The shape of a row and the native selection of its axes, whole."""
        rest = self._stored_shape[1:]
        return rest, [(0, n, 1) for n in rest]

    def _read_element(self, axes: list) -> Any:
        """The one element `axes` select: what plan_basic and ReadPlan.finish make of
        ``ds[i]`` or ``ds[i, j]``, without them (a loop's element reads)."""
        rank = len(axes)
        block = np.empty(_ONES[rank], dtype=self.dtype)
        self._obj.read(axes, block, 0)
        return block[_ZEROS[rank]]  # (an array type's element: an array of its shape)

    # ------------------------------------------------------------------ writing: refused
    # as h5py refuses it on a file opened read-only, with the class h5py raises there
    # (ReadOnlyError is an OSError and a ValueError); on a closed file ClosedError first

    def __setitem__(self, index: Any, value: Any) -> None:
        self._check_open()
        if self._stored_shape is not None:
            # h5py checks the selection before writing: IndexError out of range,
            # ValueError for more indices than axes
            plan_read(split_fields(index)[0], self._stored_shape)
        raise self._write_error("writing into the dataset")

    def write_direct(self, source: Any, source_sel: Any = None, dest_sel: Any = None) -> None:
        raise self._write_error("write_direct")

    def resize(self, size: Any, axis: Optional[int] = None) -> None:
        """h5py's checks of the arguments (TypeError for an unchunked dataset or a shape
        of another rank, ValueError for a bad axis), then RuntimeError: the file is
        read-only."""
        self._check_open()
        if self.chunks is None:
            raise TypeError("Only chunked datasets can be resized")
        new_shape = _resized_shape(self.shape, size, axis)
        if len(new_shape) != len(self.shape):
            raise TypeError(f"New shape length ({len(new_shape)}) must match dataset rank ({len(self.shape)})")
        raise self._write_error(f"resize to {new_shape}", ReadOnlyRuntimeError)

    def make_scale(self, name: str = "") -> None:
        """Refused: RuntimeError, as h5py on a read-only file (KeyError for a dataset
        that already is a scale: libhdf5 first deletes its old attributes)."""
        self._check_open()
        kind = ReadOnlyKeyError if self.is_scale else ReadOnlyRuntimeError
        raise self._write_error(f"make_scale({name!r})", kind)

    def _write_error(self, what: str, kind: type = ReadOnlyError) -> Exception:
        self._check_open()
        return read_only_error(f"{self._file._path_text}: {self._name}: {what}", kind)

    def flush(self) -> None:
        """Nothing is buffered for writing: nothing to do (h5py's flush, a file read-only);
        ClosedError (a ValueError, as h5py's) once the file is closed."""
        self._check_open()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False:
            raise ValueError(
                "Dataset.__array__ received copy=False but memory allocation "
                "cannot be avoided on read"
            )
        _refuse_empty(self)
        if dtype is not None and np.dtype(dtype).kind == "T":  # numpy 2's StringDType: as astype
            return np.asarray(self.astype(dtype)[...], dtype=dtype)
        if dtype is not None and self.astype(dtype)._real_parts_wanted():  # HDF5 2.0 complex
            return np.asarray(self.astype(dtype)[...])
        arr = np.asarray(self.read(Ellipsis))
        # h5py reads into an array of `dtype` (read_direct): libhdf5 converts, so
        # out-of-range numbers saturate and compounds match fields by name
        # an array type's elements convert one by one, where h5py raises OSError
        return arr if dtype is None else _converted(arr, _element_dtype(self.dtype), dtype, self._spacepad)

    def read(self, selection: Any = (), out: Optional[np.ndarray] = None,
             threads: Optional[int] = None, io_depth: Union[int, str, None] = None) -> Any:
        """Read ``self[selection]`` (everything by default, like h5py's ``ds[()]``);
        with ``out``, fill that array and return it. ``io_depth``: bytes read ahead of
        the decoding threads (an int or "64M"; 0: none; default ``H5TURBO_IO_DEPTH``
        or 32 MiB; see :func:`h5turbo.io_depth`).

        ``out`` must be a writeable C-contiguous array of the selection's shape. When it
        has the dataset's dtype and the selection needs no reordering (no index arrays
        out of order, no negative steps, no field names) the native reader writes
        straight into it; otherwise the data goes through a temporary block and is
        converted to ``out``'s dtype where numpy can cast it (as h5py's read_direct).
        """
        if io_depth is not None:
            with readahead.io_depth(io_depth):
                return self.read(selection, out, threads)
        region = _region_of_selection(selection)
        if region is not None:
            ref, fields = region
            _check_fields(fields, self.dtype)
            data = self._read_region(ref, threads)
            return _deliver(_select_fields(data, fields) if fields else data, out)
        nthreads = threads_arg(threads)
        shape = self._stored_shape
        if shape is None:
            self._check_open()  # (reading data checks it otherwise)
            return self._read_null(selection, out)
        index, fields = split_fields(selection)
        _check_fields(fields, self.dtype)
        plan = plan_read(index, shape)
        if fields:
            return _deliver(_select_fields(self._read_plan(plan, nthreads), fields), out)
        if out is None:
            return self._read_plan(plan, nthreads)
        element, trailing = _element_dtype(self.dtype), _array_shape(self.dtype)
        direct = plan.local is None and isinstance(out, np.ndarray) and out.dtype == element
        if direct:
            _check_out(out, plan.out_shape + trailing, element)
            self._fill(plan, out.reshape(plan.read_shape + trailing), nthreads)
            return out
        return _deliver(self._read_plan(plan, nthreads), out)

    def read_direct(self, dest: np.ndarray, source_sel: Any = None, dest_sel: Any = None,
                    threads: Optional[int] = None) -> None:
        """Read ``self[source_sel]`` into ``dest[dest_sel]`` (h5py's read_direct)."""
        if self.shape is None:
            raise TypeError("Empty datasets have no numpy representation")
        if not isinstance(dest, np.ndarray) or not dest.flags.c_contiguous or not dest.flags.writeable:
            raise TypeError("Array must be C-contiguous and writable")
        source = Ellipsis if source_sel is None else source_sel
        if any(e is None for e in (source if isinstance(source, tuple) else (source,))):
            raise TypeError("Selection can't process None (no newaxis in a read_direct source)")
        target = dest if dest_sel is None else _dest_part(dest, dest_sel)
        if not isinstance(target, np.ndarray):
            # one element (integer dest_sel): numpy gives a scalar, not a view, whose
            # dtype may be narrower than dest's (np.bytes_ of what the slot held)
            target = np.empty((), dtype=dest.dtype)
        if (_is_view_of(target, dest) and target.flags.c_contiguous and target.dtype == self.dtype
                and self._selection_shape(source) == target.shape):
            self.read(source, out=target, threads=threads)
            return
        data = self.read(source, threads=threads)
        if data.dtype != target.dtype and data.size > 0:  # nothing read: no conversion
            # what was read: a field's type with field names, the element type of an
            # array type (converted element by element, where h5py raises TypeError)
            _check_conversion(data.dtype, target.dtype)
            data = convert(data, target.dtype, self._spacepad)
        dest[Ellipsis if dest_sel is None else dest_sel] = _broadcastable(data, target.shape)

    def _selection_shape(self, selection: Any) -> Optional[tuple]:
        """The shape ``self[selection]`` has (None with field names, which change it,
        and for a region reference, known once its region is read)."""
        if _region_of_selection(selection) is not None:
            return None
        index, fields = split_fields(selection)
        if fields:
            return None
        return plan_read(index, self._stored_shape).out_shape + _array_shape(self.dtype)

    def iter_chunks(self, sel: Any = None) -> Iterator[tuple[slice, ...]]:
        """Per stored chunk meeting ``sel`` (slices or ints), the slices of that intersection.

        As h5py: TypeError at once for an unchunked dataset, ValueError for a region that
        does not lie inside the dataset or is empty (an axis of length 0 too); a slice's
        stop of 0, as None, means the end of the axis (h5py's ``stop or length``)."""
        shape = self.shape  # as h5py: once the file is closed, only if asked before
        if not self.chunks:
            raise TypeError("Chunked dataset required")
        return _chunk_slices(_chunk_region(sel, shape), self.chunks)

    def to_dask(self, chunks: Any = None):
        """A dask array of this dataset, its blocks aligned to the HDF5 chunks.

        ``chunks``: None for one block per HDF5 chunk; an int or a tuple (per axis; -1 or
        None for a whole axis) for bigger blocks, rounded up to whole HDF5 chunks; 'auto'
        (or a byte size such as '256MiB') for dask's choice of chunk multiples. Tasks
        need no lock and carry only (path, name, block): each worker process opens the
        file once and reads its blocks with the native engine (one thread per task
        unless H5TURBO_DASK_THREADS says more). Needs dask installed.
        """
        from ..compute.dask import to_dask

        return to_dask(self, chunks)

    def astype(self, dtype) -> "AstypeView":
        """A view that reads with ``ds.astype(t)[sel]`` and converts to ``t``."""
        dtype = np.dtype(dtype)
        if dtype.kind == "T" and string_encoding(self.dtype) is None:  # numpy 2's StringDType
            raise TypeError("dset.astype(StringDType()) can only be used on datasets with an HDF5 string datatype")
        return AstypeView(self, dtype)

    def fields(self, names: Union[str, list]) -> "FieldsView":
        """A view reading only some fields of a compound dataset (h5py's ``fields``):
        one name gives arrays of that field's dtype, a list a compound of those fields
        in that order. ``ds.fields(["x", "y"])[10:20]``."""
        return FieldsView(self, names)

    def asstr(self, encoding: Optional[str] = None, errors: str = "strict") -> "AsStrView":
        """A view whose reads decode strings to ``str`` (h5py's ``asstr``)."""
        stored = string_encoding(self.dtype)
        if stored is None:
            raise TypeError("dset.asstr() can only be used on datasets with "
                            "an HDF5 string datatype")
        return AsStrView(self, encoding or stored, errors)

    # ------------------------------------------------------------------ reductions
    # numpy semantics (see reductions.py), computed chunk by chunk on all cores without
    # reading the whole dataset; `selection` reduces ``self[selection]`` instead.

    # `out` is numpy's protocol (np.sum(ds) calls ds.sum(axis=, dtype=, out=)).

    def sum(self, axis=None, dtype=None, out=None, keepdims: bool = False, *,
            selection: Any = None, threads: Optional[int] = None) -> Any:
        """The sum of the elements, as ``np.sum(ds[selection], axis, dtype, out, keepdims)``
        gives it (integers in numpy's accumulator type, exactly), computed chunk by chunk
        on ``threads`` threads without reading the dataset whole. ``selection``: reduce
        ``ds[selection]`` (any index h5turbo reads) instead of the whole dataset."""
        return reductions.reduce(self, "sum", axis, dtype, 0, keepdims, selection,
                                 threads_arg(threads), out)

    def mean(self, axis=None, dtype=None, out=None, keepdims: bool = False, *,
             selection: Any = None, threads: Optional[int] = None) -> Any:
        """The mean, as ``np.mean(ds[selection], axis, dtype, out, keepdims)`` (float64 for
        integers); computed chunk by chunk on ``threads`` threads."""
        return reductions.reduce(self, "mean", axis, dtype, 0, keepdims, selection,
                                 threads_arg(threads), out)

    def var(self, axis=None, dtype=None, out=None, ddof: float = 0, keepdims: bool = False, *,
            selection: Any = None, threads: Optional[int] = None) -> Any:
        """The variance, as ``np.var(ds[selection], axis, dtype, out, ddof, keepdims)``
        (divided by ``n - ddof``); one pass over the chunks, merged stably."""
        return reductions.reduce(self, "var", axis, dtype, ddof, keepdims, selection,
                                 threads_arg(threads), out)

    def std(self, axis=None, dtype=None, out=None, ddof: float = 0, keepdims: bool = False, *,
            selection: Any = None, threads: Optional[int] = None) -> Any:
        """The standard deviation, as ``np.std(ds[selection], axis, dtype, out, ddof,
        keepdims)``."""
        return reductions.reduce(self, "std", axis, dtype, ddof, keepdims, selection,
                                 threads_arg(threads), out)

    def min(self, axis=None, out=None, keepdims: bool = False, *, selection: Any = None,
            threads: Optional[int] = None) -> Any:
        """The smallest element, as ``np.min(ds[selection], axis, out, keepdims)``: NaN if
        any is NaN; an empty reduction is a ValueError, as numpy's."""
        return reductions.reduce(self, "min", axis, None, 0, keepdims, selection,
                                 threads_arg(threads), out)

    def max(self, axis=None, out=None, keepdims: bool = False, *, selection: Any = None,
            threads: Optional[int] = None) -> Any:
        """The largest element, as ``np.max(ds[selection], axis, out, keepdims)``: NaN if
        any is NaN; an empty reduction is a ValueError, as numpy's."""
        return reductions.reduce(self, "max", axis, None, 0, keepdims, selection,
                                 threads_arg(threads), out)

    def count_nonzero(self, axis=None, keepdims: bool = False, *, selection: Any = None,
                      threads: Optional[int] = None) -> Any:
        """The number of non-zero elements, as ``np.count_nonzero(ds[selection], axis,
        keepdims=keepdims)``."""
        return reductions.reduce(self, "count_nonzero", axis, None, 0, keepdims, selection,
                              threads_arg(threads))

    # ------------------------------------------------------------------ internals

    def _read_plan(self, plan: ReadPlan, nthreads: int) -> Any:
        block = np.empty(plan.read_shape, dtype=self.dtype)
        self._fill(plan, block, nthreads)
        return plan.finish(block)

    def _fill(self, plan: ReadPlan, block: np.ndarray, nthreads: int) -> None:
        if not plan.is_empty:
            self._obj.read(list(plan.axes), block, nthreads)

    def _read_region(self, ref: RegionReference, threads: Optional[int]) -> np.ndarray:
        """``ds[regref]``: the referenced selection, shaped as h5py shapes it (points and
        irregular hyperslab unions 1-d, in HDF5's order). Reads what it selects: a box,
        a grid of boxes or a regular hyperslab as one orthogonal read, points by their
        bounding box when that is small, else row by row."""
        if not ref:
            raise ValueError("Invalid HDF5 object reference (null reference)")
        address, kind, data = self._file._region_of(ref)
        if address != self._obj.address:
            raise ValueError("Region reference must point to this dataset")
        if self.shape is None or not self.shape and kind == "none":
            return Empty(self.dtype)  # (h5py: a scalar's empty selection too)
        axes = box_axes(kind, data, self.shape)
        if axes is not None:  # a box, a grid of boxes, a regular hyperslab: one orthogonal read
            if any(len(a) == 0 for a in axes):
                return np.zeros(region_selection_shape(kind, data, self.shape), dtype=self.dtype)
            return self._read_axes(axes, threads)
        index = region_points(kind, data, self.shape)
        if index is None:
            return self.read(Ellipsis, threads=threads)
        shape = region_shape(kind, index, self.shape)
        if len(index[0]) == 0:
            return np.zeros(shape, dtype=self.dtype)
        if kind == "blocks":
            values = self._read_boxes(block_boxes(data, self.shape), index, threads)
        else:
            values = self._read_points(index, threads)
        return values.reshape(shape + _array_shape(self.dtype))

    def _read_boxes(self, boxes: list, index: tuple, threads: Optional[int]) -> np.ndarray:
        """The union of `boxes` (per-axis indices each), whose elements, each once in C
        order, are at `index`: each box one orthogonal read, placed where its elements
        fall in the union (overlapping boxes write the same values twice)."""
        union = np.ravel_multi_index(index, self.shape) if flat_offsets_fit(self.shape) else None
        if union is None:
            return self._read_points(index, threads)
        out = None
        for axes in boxes:
            block = np.asarray(self._read_axes(axes, threads))
            block = block.reshape((-1,) + block.shape[len(axes):])
            if out is None:
                out = np.empty((len(union),) + block.shape[1:], dtype=block.dtype)
            offsets = np.ravel_multi_index(tuple(box_coordinates(axes).T), self.shape)
            out[np.searchsorted(union, offsets)] = block
        return out

    def _read_axes(self, axes: list, threads: Optional[int]) -> np.ndarray:
        """The product of sorted index arrays, one per axis: an orthogonal read (which
        one numpy-style index with several arrays would not be)."""
        plan = ReadPlan(axes=tuple(axis_selection(a) for a in axes), read_shape=tuple(len(a) for a in axes),
                        local=None, out_shape=tuple(len(a) for a in axes), scalar_result=False)
        return self._read_plan(plan, threads_arg(threads))

    def _read_points(self, index: tuple, threads: Optional[int]) -> np.ndarray:
        """The elements at coordinates `index` (one array per axis), in that order."""
        n = len(index[0])
        lows = [int(i.min()) for i in index]
        box = [int(i.max()) + 1 - lo for i, lo in zip(index, lows)]
        order = np.lexsort(index[::-1])
        coords = np.stack([i[order] for i in index], axis=1)
        breaks = np.flatnonzero((coords[1:, :-1] != coords[:-1, :-1]).any(axis=1)) + 1
        # the bounding box when reading it costs less than a read per row (about what
        # 64 Ki elements cost) and it fits in 256 MiB; else one read per row of points
        box_elements = int(np.prod(box, dtype=object))
        rows = len(breaks) + 1
        if box_elements <= max(4 * n, rows << 16) and box_elements * self.dtype.itemsize <= 1 << 28:
            block = self.read(tuple(slice(lo, lo + k) for lo, k in zip(lows, box)), threads=threads)
            return block[tuple(i - lo for i, lo in zip(index, lows))]
        pieces = []
        native_threads = threads_arg(threads)
        for run in np.split(coords, breaks):
            # planned directly: a row and its sorted columns need none of read()'s checks
            if len(run) == 1:  # a lone point (scattered points): one element
                rank = run.shape[1]
                plan = ReadPlan(axes=tuple((int(c), 1, 1) for c in run[0]), read_shape=(1,) * rank, local=None,
                                out_shape=(1,), scalar_result=False)
                pieces.append(self._read_plan(plan, native_threads))
                continue
            columns, back = np.unique(run[:, -1], return_inverse=True)
            row = [run[:1, k] for k in range(run.shape[1] - 1)]
            pieces.append(self._read_axes(row + [columns], threads).reshape(-1)[back.reshape(-1)])
        values = np.concatenate(pieces)
        out = np.empty_like(values)
        out[order] = values
        return out

    def _read_null(self, selection: Any, out: Optional[np.ndarray]) -> Empty:
        if out is not None:
            raise TypeError("Empty datasets have no numpy representation")
        # h5py: () and ..., also written as a tuple (ds[(Ellipsis,)])
        if selection is Ellipsis or (isinstance(selection, tuple)
                                     and (selection == () or (len(selection) == 1 and selection[0] is Ellipsis))):
            return Empty(self.dtype)
        raise ValueError("Empty datasets cannot be sliced")


class _View:
    """What h5py's views (astype, asstr, fields) share: the dataset's shape and length."""

    _dataset: Dataset

    @property
    def shape(self):
        return self._dataset.shape

    @property
    def ndim(self) -> int:
        return self._dataset.ndim

    @property
    def size(self):
        return self._dataset.size

    def __len__(self) -> int:
        return len(self._dataset)

    def __iter__(self) -> Iterator[Any]:
        """Rows of the first axis. Without this Python would iterate by indexing until
        an IndexError, which a scalar dataset raises at once: an empty iteration."""
        if not self.shape:
            raise _ScalarIterationError("Can't iterate over a scalar dataset")
        for i in range(self.shape[0]):
            yield self[i]


class _ScalarIterationError(TypeError, ValueError):
    """Iterating a view of a scalar dataset: a TypeError as iterating the dataset, and
    the ValueError h5py's views raise (their first row is an illegal index)."""


class AstypeView(_View):
    """``ds.astype(dtype)``: reads convert to another dtype (h5py's AstypeWrapper)."""

    def __init__(self, dataset: Dataset, dtype: np.dtype):
        self._dataset = dataset
        self.dtype = dtype

    def __getitem__(self, index: Any) -> Any:
        if self._dataset._stored_shape is None:
            # h5py reads a null dataspace before any conversion: Empty of the stored
            # type, whatever the view's (or ValueError for a selection)
            return self._dataset[index]
        if self.dtype.kind == "T":
            return self._read_strings(index)
        names = split_fields(index)[1]
        if names:
            return self._read_fields(index, names)
        shape = self._dataset._selection_shape(index)
        if shape is not None and 0 in shape and self.dtype.kind != "U":
            # nothing to read, nothing to convert: libhdf5 looks for no conversion path
            return np.zeros(shape, _element_dtype(self.dtype))
        if self._real_parts_wanted():
            data = self._dataset[index]
            real = convert(np.asarray(data).real, _element_dtype(self.dtype))
            return real if isinstance(data, np.ndarray) else real[()]
        _check_conversion(self._dataset.dtype, self.dtype)
        data = self._dataset[index]
        stored = _vlen_base(self._dataset.dtype)
        if stored is not None and _is_one_sequence(data):
            # one element of a sequence dataset: the sequence itself is the value
            base = _vlen_base(self.dtype)
            return data if base is None else convert(_relabel(data, stored), base)
        if stored is not None and isinstance(data, np.ndarray) and _vlen_base(self.dtype) is not None:
            data = _relabelled_sequences(data, stored)
        # an array type converts element by element (the read has the array's axes)
        wanted = _element_dtype(self.dtype)
        if isinstance(data, np.ndarray):
            return convert(data, wanted, self._dataset._spacepad)
        return convert(np.asarray(data), wanted, self._dataset._spacepad)[()]

    def _real_parts_wanted(self) -> bool:
        """HDF5 2.0 complex numbers asked for as integers or reals: libhdf5 converts
        them to their real parts (its {r, i} compounds have no such conversion)."""
        stored, wanted = self._dataset.dtype, self.dtype
        if stored.subdtype is not None or wanted.subdtype is not None:
            if stored.shape != wanted.shape:
                return False
            stored, wanted = stored.base, wanted.base
        return (stored.kind == "c" and wanted.kind in "iuf" and wanted.fields is None
                and getattr(self._dataset._obj, "native_complex", False))

    def _read_strings(self, index: Any) -> Any:
        """numpy 2's StringDType, as h5py gives it: the strings decoded as UTF-8 whatever
        their stored character set (strictly: bytes that are not UTF-8 raise), a fixed
        string ending at its first NUL; a scalar as str."""
        if self._dataset.dtype.kind != "S":  # variable-length strings
            data = self._dataset.asstr(encoding="utf-8")[index]
            return data if isinstance(data, str) else np.asarray(data, dtype=object).astype(self.dtype)
        raw = self._dataset[index]
        if not isinstance(raw, np.ndarray):
            return bytes(raw).split(b"\0", 1)[0].decode("utf-8")
        return np.char.decode(_cut_at_nul(raw), "utf-8").astype(self.dtype)

    def _read_fields(self, index: Any, names: list[str]) -> Any:
        """``ds.astype(compound)[..., "x"]``: as h5py, the named fields of the target
        compound (one name: that field alone), each converted from the stored field
        of that name; numpy would cast one field's values into every target field."""
        _check_fields(names, self.dtype)
        wanted = (self.dtype.fields[names[0]][0] if len(names) == 1
                  else np.dtype([(name, self.dtype.fields[name][0]) for name in names]))
        data = self._dataset[index]  # the stored fields of those names
        _check_conversion(np.asarray(data).dtype, wanted)
        converted = convert(np.asarray(data), wanted)
        return converted if isinstance(data, np.ndarray) else converted[()]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False:
            raise ValueError("AstypeView.__array__ received copy=False but memory "
                             "allocation cannot be avoided on read")
        _refuse_empty(self._dataset)
        arr = np.asarray(self[...])
        # h5py converts the stored values to `dtype` as libhdf5 does (read_direct)
        return arr if dtype is None else _converted(arr, _element_dtype(self._dataset.dtype), dtype,
                                                    self._dataset._spacepad)

    def __len__(self) -> int:
        return len(self._dataset)


def _region_of_selection(selection: Any) -> Optional[tuple]:
    """(region reference, field names) when `selection` is a region reference, alone,
    in a tuple, or with field names (``ds[ref, 'x']``, as h5py takes them); else None."""
    if isinstance(selection, RegionReference):
        return selection, []
    if not isinstance(selection, tuple):
        return None
    refs = [e for e in selection if isinstance(e, RegionReference)]
    if len(refs) != 1 or any(not isinstance(e, (str, RegionReference)) for e in selection):
        return None
    return refs[0], [e for e in selection if isinstance(e, str)]


def _element_dtype(dtype: np.dtype) -> np.dtype:
    """What a read gives elements of: an array type's element type (the innermost of
    an array of arrays), else the dtype."""
    while dtype.subdtype is not None:
        dtype = dtype.subdtype[0]
    return dtype


def _array_shape(dtype: np.dtype) -> tuple[int, ...]:
    """The axes an array type adds to a read (an array of arrays: both's, outer first)."""
    shape: tuple[int, ...] = ()
    while dtype.subdtype is not None:
        dtype, dims = dtype.subdtype
        shape += dims
    return shape


def _converted(arr: np.ndarray, stored: np.dtype, wanted: Any, spacepad: bool = False) -> np.ndarray:
    """``arr`` (read from data of type ``stored``) as ``wanted``, converted as libhdf5
    converts and refused where it has no conversion (h5py's ``np.asarray(ds, dtype)``)."""
    wanted = np.dtype(wanted)
    if arr.dtype == wanted:
        return arr
    _check_conversion(stored, wanted)
    return np.asarray(convert(arr, wanted, spacepad))


def convert(data: np.ndarray, wanted: np.dtype, spacepad: bool = False) -> np.ndarray:
    """`data` as `wanted`, converted as libhdf5 converts (h5py's astype and read_direct):
    integers saturate at the target's range instead of wrapping, floats beyond it (and
    infinities) become its minimum or maximum, compound fields are matched by name
    (a field the data lacks stays zero; complex numbers are {r, i} compounds),
    sequences convert element by element, fixed strings end at their first NUL unless
    space-padded (`spacepad`: the stored strings' padding). Everything else as numpy
    casts."""
    wanted = np.dtype(wanted)
    if _vlen_base(wanted) is not None and data.dtype.kind == "O":
        stored = _vlen_base(data.dtype)  # a compound's member keeps its stored type here
        return _convert_sequences(data if stored is None else _relabelled_sequences(data, stored), wanted)
    if _is_record(data.dtype) and _is_record(wanted) and (data.dtype.names or wanted.names):
        return _convert_records(data, wanted)
    if wanted.kind == "S" and data.dtype.kind == "S" and wanted.itemsize != data.dtype.itemsize:
        return (data if spacepad else _cut_at_nul(data)).astype(wanted)
    if wanted.kind == "f" and data.dtype.kind in "iuf":
        return _to_float(data, wanted)
    if wanted.kind == "c" and data.dtype.kind == "c" and wanted != data.dtype:
        return _complex_to_complex(data, wanted)
    if wanted.kind not in "iu" or data.dtype.kind not in "iuf":
        return data.astype(wanted)
    if data.dtype.kind in "iu":
        return _int_to_int(data, wanted)
    return _float_to_int(data, wanted)


def _complex_to_complex(data: np.ndarray, wanted: np.dtype) -> np.ndarray:
    """Complex numbers (libhdf5's {r, i} compounds) to another size or byte order: each
    part converted as libhdf5 converts a float (a NaN then has every mantissa bit set,
    where numpy's cast gives its own quiet NaN)."""
    part = np.dtype(wanted.str.replace("c", "f").replace(str(wanted.itemsize), str(wanted.itemsize // 2)))
    out = np.empty(data.shape, wanted)
    out.real = _to_float(np.asarray(data.real), part)
    out.imag = _to_float(np.asarray(data.imag), part)
    return out


def _both_native(data: np.ndarray, wanted: np.dtype) -> bool:
    """libhdf5 converts with C casts (its hardware path) only between native types;
    either side in the other byte order takes its software conversion."""
    return data.dtype.isnative and wanted.isnative


def _to_float(data: np.ndarray, wanted: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):  # h5py is silent about overflow
        out = np.asarray(data.astype(wanted))
        if _both_native(data, wanted) and (data.dtype.kind in "iu" or wanted.itemsize < data.dtype.itemsize):
            # libhdf5's hardware path: beyond the target's maximum is infinity, also
            # where rounding to nearest would have given the maximum
            top = float(np.finfo(wanted).max)
            out[data > top] = np.inf
            out[data < -top] = -np.inf
        elif not _both_native(data, wanted) and data.dtype.kind == "f" and data.dtype.itemsize != wanted.itemsize:
            _as_software_conversion(data, out)
    return out


def _as_software_conversion(data: np.ndarray, out: np.ndarray) -> None:
    """Make numpy's cast of floats `data` to floats of another size (`out`) what
    libhdf5's software conversion gives (either side in the other byte order): ties
    round away from zero, a value whose rounding alone passes the maximum is the
    maximum, and NaN has every mantissa bit set."""
    wanted = out.dtype
    if wanted.itemsize < data.dtype.itemsize:
        finite = np.isfinite(data) & np.isfinite(out)
        away = np.nextafter(out, np.copysign(np.inf, data).astype(wanted))
        exact_out, exact_away = out.astype(data.dtype), away.astype(data.dtype)
        tie = finite & (exact_out != data) & (np.abs(data - exact_out) == np.abs(exact_away - data))
        out[tie] = away[tie]
        # libhdf5 rounds the mantissa after choosing the exponent: a carry past the
        # largest exponent gives the maximum, not infinity
        # (2**maxexp, where the exponent no longer fits, held by the wider source type)
        top, limit = np.finfo(wanted).max, np.ldexp(np.ones((), data.dtype), np.finfo(wanted).maxexp)
        rounded_over = np.isfinite(data) & np.isinf(out) & (np.abs(data) < limit)
        out[rounded_over] = np.copysign(top, data[rounded_over])
    nan = np.isnan(data)
    if not nan.any():
        return
    if wanted.itemsize == 16:  # the x87 long double: 64 mantissa bits, 15 exponent bits, sign
        if np.finfo(wanted).nmant != 63:
            return  # another platform's long double: left as numpy casts it
        raw = out.reshape(-1).view(np.uint8).reshape(-1, 16)
        flat = nan.reshape(-1)
        raw[flat, :9] = 0xFF
        raw[flat, 9] = 0x7F | (np.signbit(data.reshape(-1)[flat]).astype(np.uint8) << 7)
        return
    bits = out.view(f"{wanted.byteorder}u{wanted.itemsize}")
    mantissa_and_exponent = (1 << (8 * wanted.itemsize - 1)) - 1
    sign = np.signbit(data[nan]).astype(bits.dtype) << (8 * wanted.itemsize - 1)
    bits[nan] = sign | bits.dtype.type(mantissa_and_exponent)


def _int_to_int(data: np.ndarray, wanted: np.dtype) -> np.ndarray:
    # saturating always: libhdf5 (h5py) swaps the bytes only, without saturating, for a
    # same-size pair of other sign and byte order ('<i2' -1 as '>u2' is 65535), a
    # quirk not copied (docs/h5py-compat.md)
    low, high = np.iinfo(wanted).min, np.iinfo(wanted).max
    have = np.iinfo(data.dtype)
    # both bounds held by the source type, so the clip is exact; a 0-d array stays one
    clipped = np.asarray(np.clip(data, data.dtype.type(max(have.min, low)), data.dtype.type(min(have.max, high))))
    return clipped.astype(wanted)


def _float_to_int(data: np.ndarray, wanted: np.dtype) -> np.ndarray:
    low, high = np.iinfo(wanted).min, np.iinfo(wanted).max
    with np.errstate(all="ignore"):
        if _both_native(data, wanted) and data.dtype.itemsize == 2 and float(np.float16(high)) == np.inf:
            # libhdf5 checks a float16 against the target's maximum as a float16, which
            # is infinity from 16-bit unsigned on: no check applies, the C cast decides
            # (numpy's cast is that cast)
            return data.astype(wanted)
        out = np.asarray(data.astype(wanted))
        if _both_native(data, wanted):
            # libhdf5's hardware conversion: clipped above (double)MAX, which for 64-bit
            # targets is 2**63 itself (a long double holds MAX exactly), then the
            # processor's cast (NaN as numpy casts it, but 0 for 32-bit unsigned)
            top = data.dtype.type(high) if data.dtype.itemsize > 8 else float(high)
            out[data > top] = high
            if wanted.kind == "u" and wanted.itemsize == 4:
                out[np.isnan(data)] = 0
        else:
            # its software conversion (either side in the other byte order): clipped
            # from high + 1 (a power of two, exact in floating point) on, NaN is 0,
            # and a negative value above -0.5 is the minimum of a signed target
            out[data >= float(high) + 1] = high
            out[np.isnan(data)] = 0
            if wanted.kind == "i":
                out[(data < 0) & (data > -0.5)] = low
        out[data < float(low)] = low
    return out


def _cut_at_nul(data: np.ndarray) -> np.ndarray:
    """Fixed-length strings ended at their first NUL byte, as libhdf5 converts a string
    to one of another length (a plain read keeps the bytes after it)."""
    size = data.dtype.itemsize
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8).reshape(-1, size).copy()
    raw[np.cumsum(raw == 0, axis=1) > 0] = 0
    return raw.reshape(-1).view(data.dtype).reshape(data.shape)


def _is_record(dtype: np.dtype) -> bool:
    """A compound in the file: a structured dtype, or complex (an {r, i} compound)."""
    return dtype.names is not None or dtype.kind == "c"


def _complex_fields(dtype: np.dtype) -> np.dtype:
    """The compound a complex dtype is stored as (h5py's names 'r' and 'i')."""
    part = np.dtype(f"{dtype.byteorder}f{dtype.itemsize // 2}")
    return np.dtype([("r", part), ("i", part)])


def _convert_records(data: np.ndarray, wanted: np.dtype) -> np.ndarray:
    """Compound to compound as libhdf5 converts: fields matched by name, a field the
    data lacks stays zero. Complex numbers take part as their {r, i} compound, so a
    complex dataset read as [('i', 'f4')] gives the imaginary parts (numpy would cast
    the complex number to every field) and a compound with 'r' and 'i' reads as complex."""
    if data.dtype.kind == "c":
        record = np.empty(data.shape, _complex_fields(data.dtype))
        record["r"], record["i"] = data.real, data.imag
        data = record
    target = _complex_fields(wanted) if wanted.kind == "c" else wanted
    out = np.zeros(data.shape, target)
    for name in target.names:
        if name in data.dtype.names:
            # libhdf5 converts a compound only where it can convert each member
            _check_conversion(data.dtype.fields[name][0], target.fields[name][0])
            # an array field: data[name] has its axes already, convert the elements
            out[name] = convert(data[name], target.fields[name][0].base)
    if wanted.kind != "c":
        return out
    result = np.empty(data.shape, wanted)
    result.real, result.imag = out["r"], out["i"]
    return result


def _vlen_base(dtype: np.dtype) -> Optional[np.dtype]:
    """The element dtype of a variable-length sequence dtype (h5py's vlen_dtype);
    None for anything else, variable-length strings included."""
    base = (dtype.metadata or {}).get("vlen")
    # h5py keeps whatever vlen_dtype was given ('f8', np.int32, a dtype)
    return None if base is None or base in (str, bytes) else np.dtype(base)


def _is_one_sequence(data: Any) -> bool:
    """Whether a read of a sequence dataset gave one element (an array of the
    element type), not an object array of elements."""
    return isinstance(data, np.ndarray) and data.dtype.kind != "O"


def _relabel(sequence: np.ndarray, stored: np.dtype) -> np.ndarray:
    """A sequence element as its stored type: reads give the elements of big-endian
    sequences labelled native, as h5py does, which would convert the wrong numbers."""
    if stored.byteorder == ">" and sequence.dtype != stored and sequence.dtype.itemsize == stored.itemsize:
        return sequence.view(stored)
    return sequence


def _relabelled_sequences(data: np.ndarray, stored: np.dtype) -> np.ndarray:
    """An object array of sequences, each as its stored type (see _relabel)."""
    if stored.byteorder != ">":
        return data
    out = np.empty(data.shape, dtype=data.dtype)
    flat = out.reshape(-1)
    for i, sequence in enumerate(data.reshape(-1)):
        flat[i] = _relabel(sequence, stored)
    return out


def _convert_sequences(data: np.ndarray, wanted: np.dtype) -> np.ndarray:
    """Each sequence of an object array converted to `wanted`'s element type (libhdf5
    converts vlen to vlen element by element)."""
    out = np.empty(data.shape, dtype=wanted)
    flat = out.reshape(-1)
    # one by one: assigning a list of equal-length arrays would make a 2-d array
    for i, sequence in enumerate(data.reshape(-1)):
        flat[i] = convert(np.asarray(sequence), _vlen_base(wanted))
    return out


def _type_name(dtype: np.dtype) -> str:
    """A dtype as messages name it: object dtypes by what their metadata says."""
    vlen = (dtype.metadata or {}).get("vlen")
    if vlen in (str, bytes):
        return f"variable-length strings ({vlen.__name__})"
    if vlen is not None:
        return f"variable-length sequences of {np.dtype(vlen)}"
    return str(dtype)


def _charset(dtype: np.dtype) -> str:
    """A fixed string dtype's character set, as h5py marks it (plain 'S' is ASCII)."""
    return (dtype.metadata or {}).get("h5py_encoding", "ascii")


def _check_conversion(stored: np.dtype, wanted: np.dtype) -> None:
    """Refuse what libhdf5 has no conversion for (as h5py's astype does, which numpy
    would do with loss: complex to real drops the imaginary part, bytes parse as
    numbers): OSError, and TypeError for variable-length strings, sequences and
    references to other types (references read as plain objects) and for numpy's
    unicode strings, as h5py raises."""
    if wanted.kind == "U" or wanted.kind in "Mm" and stored != wanted:
        # h5py has no HDF5 type for numpy's UCS-4 strings, whatever is stored, nor for
        # dates (but those it stored as opaque data convert to themselves)
        raise TypeError(f"No conversion path for dtype: {wanted!r}")
    if stored.subdtype is not None or wanted.subdtype is not None:
        # an array type converts to an array type of the same dimensions only
        if stored.shape != wanted.shape:
            raise OSError(f"Can't convert {stored} to {wanted}: no conversion path (libhdf5 converts "
                          "array types only to array types of the same dimensions)")
        stored, wanted = stored.base, wanted.base

    def kind(dt: np.dtype) -> str:
        if dt.names is not None:
            return "compound"
        if (dt.metadata or {}).get("vlen") in (str, bytes):
            return "vlen-string"
        if _vlen_base(dt) is not None:
            return "vlen"
        if dt.kind == "O" and not dt.metadata:
            return "object"  # numpy's plain object dtype: values given as they are
        if (dt.metadata or {}).get("ref") is not None:
            return "reference"
        # complex numbers are {r, i} compounds in the file
        return {"i": "integer", "u": "integer", "b": "bool", "f": "float", "c": "compound",
                "S": "string", "U": "string"}.get(dt.kind, "other")

    have, want = kind(stored), kind(wanted)
    numbers = {"integer", "bool", "float"}
    ok = (have == want and (have != "other" or stored == wanted)  # opaque: to itself
          or have in {"integer", "bool"} and want in numbers
          or have == "float" and want in {"integer", "float"}
          or have in {"string", "vlen-string"} and want == "string"
          or have in {"vlen", "vlen-string", "reference"} and want == "object")
    if ok and have == want == "string" and stored.itemsize != wanted.itemsize and _charset(stored) != _charset(wanted):
        # libhdf5 converts fixed strings between character sets only where it copies them
        raise OSError(f"Can't convert {_charset(stored)} strings to {_charset(wanted)} ones of another length: "
                      "no conversion path (h5py and libhdf5 have none either)")
    if ok:
        return
    message = (f"Can't convert {_type_name(stored)} to {_type_name(wanted)}: "
               "no conversion path (h5py and libhdf5 have none either)")
    if have in {"vlen-string", "vlen", "reference"}:
        # h5py: TypeError ("Operation not defined for data type class") for sequences
        # and references
        raise TypeError(message)
    if have == "compound" and _has_variable_parts(stored):
        # h5py: TypeError ("Unable to convert between src and dst data types") where a
        # member is variable-length; for other compounds, OSError
        raise _ConversionPathError(message)
    raise OSError(message)


class _ConversionPathError(TypeError, OSError):
    """No conversion from a compound with variable-length members: h5py's TypeError,
    an OSError as the other conversions libhdf5 has no path for."""


def _has_variable_parts(dtype: np.dtype) -> bool:
    """Whether a compound (at any depth, arrays of members too) holds objects: strings,
    sequences or references of variable length."""
    if dtype.names is None:
        return dtype.base.kind == "O"
    return any(_has_variable_parts(dtype.fields[name][0]) for name in dtype.names)


def _dest_part(dest: np.ndarray, dest_sel: Any) -> Any:
    """`dest[dest_sel]`; an index numpy refuses (more indices than axes, out of range)
    is h5py's ValueError too, as a source selection's is."""
    try:
        return dest[dest_sel]
    except IndexError as e:
        raise IndexMismatchError(str(e)) from None


class FieldsView(_View):
    """``ds.fields(names)`` (h5py's FieldsView): reads give only those fields."""

    def __init__(self, dataset: Dataset, names: Union[str, list]):
        self._dataset = dataset
        self._single = names if isinstance(names, str) else None
        self._names = [names] if isinstance(names, str) else list(names)
        base = dataset.dtype
        if base.names is None:
            raise ValueError("Field names only allowed for compound types")
        for name in self._names:
            if name not in base.names:
                raise ValueError(f"Field {name} does not appear in this type.")
        self._read_dtype = np.dtype([(name, base.fields[name][0]) for name in self._names])

    @property
    def dtype(self) -> np.dtype:
        return self._read_dtype[self._single] if self._single is not None else self._read_dtype

    def __getitem__(self, index: Any) -> Any:
        if not self._names:
            raise ValueError("a view of no field has no values (h5py: 'Size must be positive')")
        _index, names = split_fields(index)
        # h5py looks field names of an index up among the view's fields, not the dataset's
        _check_fields(names, self._read_dtype)
        data = self._dataset[index]
        if names and self._single is None:
            return data  # those names read, as from the dataset
        if self._single is not None:
            return _copy_of_field(data[self._single])
        return _select_fields(data, self._names) if len(self._names) > 1 else _as_record(data, self._read_dtype)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False:
            raise ValueError("FieldsView.__array__ received copy=False but memory "
                             "allocation cannot be avoided on read")
        _refuse_empty(self._dataset)
        # [...], not [()]: a scalar dataset's field then stays a 0-d array of the
        # field's type (np.bytes_ would lose the width of a fixed-length string)
        arr = np.asarray(self[...])
        return arr if dtype is None else arr.astype(dtype, copy=False)


def _copy_of_field(picked: Any) -> Any:
    """A field taken out of records, in memory of its own. numpy copies records field
    by field and leaves their padding as it was: a copy of compound values starts
    zeroed, as h5py's (so that they compare equal byte for byte)."""
    if not isinstance(picked, np.ndarray):
        return picked
    if picked.dtype.fields is None:
        return picked.copy()
    copy = np.zeros(picked.shape, picked.dtype)
    copy[...] = picked
    return copy


def _as_record(data: Any, dtype: np.dtype) -> Any:
    """A one-field compound of the selected records (h5py's fields([name]))."""
    arr = np.asarray(data)
    packed = np.zeros(arr.shape, dtype=dtype)
    packed[dtype.names[0]] = arr[dtype.names[0]]
    return packed if isinstance(data, np.ndarray) else packed[()]


class AsStrView(_View):
    """``ds.asstr()``: reads give str (scalars) or object arrays of str."""

    def __init__(self, dataset: Dataset, encoding: str, errors: str):
        self._dataset = dataset
        self._encoding = encoding
        self._errors = errors

    # h5py's AsStrWrapper attributes
    dtype = np.dtype(object)

    @property
    def encoding(self) -> str:
        return self._encoding

    @property
    def errors(self) -> str:
        return self._errors

    def __getitem__(self, index: Any) -> Any:
        data = self._dataset[index]
        if isinstance(data, np.ndarray):
            decoded = np.empty(data.shape, dtype=object)
            decoded.reshape(-1)[:] = [self._decode(v) for v in data.ravel()]
            return decoded
        return self._decode(data)

    def _decode(self, value: Any) -> Any:
        if isinstance(value, bytes):  # np.bytes_ included
            return value.decode(self._encoding, self._errors)
        return value

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False:
            raise ValueError("AsStrView.__array__ received copy=False but memory "
                             "allocation cannot be avoided on read")
        _refuse_empty(self._dataset)
        arr = np.asarray(self[...], dtype=object)
        return arr if dtype is None else arr.astype(dtype)

    def __len__(self) -> int:
        return len(self._dataset)


# ---------------------------------------------------------------------- helpers


def _szip_opts(data: tuple) -> tuple:
    mask, pixels = data[0], data[1]
    if mask & _SZIP_EC_OPTION_MASK:
        return ("ec", pixels)
    if mask & _SZIP_NN_OPTION_MASK:
        return ("nn", pixels)
    raise TypeError("Unknown SZIP configuration")


def _refuse_empty(dataset: Dataset) -> None:
    """np.asarray of a null dataset (h5py.Empty): a TypeError, as h5py gives, not a
    0-d object array holding the Empty marker."""
    if dataset.shape is None:
        raise TypeError("Empty datasets have no numpy representation")


def _check_fields(fields: list[str], dtype: np.dtype) -> None:
    """Field names in an index must name fields of the dataset's compound type."""
    if not fields:
        return
    if dtype.names is None:
        raise IndexMismatchError("Field names only allowed for compound types")
    for name in fields:
        if name not in dtype.names:
            raise ValueError(f"Field {name} does not appear in this type.")


def _select_fields(data: Any, fields: list[str]) -> Any:
    """Compound fields as h5py gives them: one name -> that field, several -> packed record."""
    if len(fields) == 1:
        return _copy_of_field(data[fields[0]])
    arr = np.asarray(data)
    packed = np.zeros(arr.shape, dtype=[(n, arr.dtype.fields[n][0]) for n in fields])
    for name in fields:
        packed[name] = arr[name]
    return packed[()] if np.ndim(data) == 0 and not isinstance(data, np.ndarray) else packed


def _check_out(out: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
    if not np.can_cast(dtype, out.dtype, casting="same_kind"):
        raise TypeError(f"out has dtype {out.dtype}, the selection reads {dtype}, "
                        "which does not cast to it (use ds.astype(...) to convert)")
    if out.shape != tuple(shape):
        raise ValueError(f"out has shape {out.shape}, the selection has shape {tuple(shape)}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")


def _deliver(data: Any, out: Optional[np.ndarray]) -> Any:
    if out is None:
        return data
    _check_out(out, np.shape(data), np.asarray(data).dtype)
    np.copyto(out, data, casting="same_kind")
    return out


def _is_view_of(target: np.ndarray, base: np.ndarray) -> bool:
    """True when writing into `target` writes into `base` (basic indexing gave a view)."""
    return target is base or target.base is not None and np.shares_memory(target, base)


def _broadcastable(data: Any, shape: tuple[int, ...]) -> Any:
    """`data`, when it broadcasts onto `shape` (not merely with it: (6, 3) and (3,)
    broadcast together, yet (6, 3) does not fit into (3,)); else h5py's TypeError.
    Leading axes of length 1 go, as h5py drops them (also onto a single element)."""
    nothing = np.size(data) == 0 == np.prod(shape)
    have = list(np.shape(data))
    # (reading nothing into nothing, h5py drops leading axes of length 0 too)
    while len(have) > len(shape) and (have[0] == 1 or nothing and have[0] == 0):
        have.pop(0)
    try:
        fits = np.broadcast_shapes(tuple(have), shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits and (np.size(data) == 0) != (np.prod(shape) == 0):
        # libhdf5 refuses it as selections of different sizes (h5py: OSError)
        raise _CountMismatchError(f"Can't read {np.size(data)} elements into {int(np.prod(shape))}: "
                                  f"{np.shape(data)} -> {tuple(shape)}")
    if not fits:
        raise TypeError(f"Can't broadcast {np.shape(data)} -> {tuple(shape)}")
    return np.zeros(shape, np.asarray(data).dtype) if nothing else np.reshape(data, have)


class _CountMismatchError(TypeError, OSError):
    """read_direct of a selection into a destination selection of another number of
    elements, one of them empty: a TypeError as other shapes that do not broadcast, and
    the OSError h5py raises there."""


# iter_chunks lists each axis's slices once when every axis has at most this many
# chunks, and gives their product (twice as fast as making each tuple afresh); past it
# the positions are made one at a time (no list as long as an axis of 2**32 chunks).
_SLICES_LISTED = 1 << 16


def _chunk_slices(region: list[range], chunks: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    """Chunk-grid positions meeting the region in C order, clipped to the region."""
    grids = [range(r.start // c, (r.stop - 1) // c + 1) for r, c in zip(region, chunks)]
    if all(len(grid) <= _SLICES_LISTED for grid in grids):
        listed = [[slice(max(r.start, k * c), min(r.stop, (k + 1) * c), 1) for k in grid]
                  for r, c, grid in zip(region, chunks, grids)]
        yield from itertools.product(*listed)
        return
    for position in _grid_positions(grids):
        yield tuple(
            slice(max(r.start, k * c), min(r.stop, (k + 1) * c), 1)
            for r, c, k in zip(region, chunks, position)
        )


def _grid_positions(grids: list[range]) -> Iterator[tuple[int, ...]]:
    """Every position of the grids in C order, one at a time: itertools.product would
    first copy each range into a tuple (2**32 chunks along one axis: MemoryError before
    the first chunk; 2**25: 1.4 GB)."""
    if not grids:
        yield ()
        return
    for k in grids[0]:
        for rest in _grid_positions(grids[1:]):
            yield (k, *rest)


def _chunk_region(sel: Any, shape: tuple[int, ...]) -> list[range]:
    """The iter_chunks selection as one step-1 range per axis (ints select one element;
    a slice's step is ignored, as by h5py)."""
    # None: the whole dataset, which as in h5py must not be empty (an axis of length 0)
    entries = [slice(None)] * len(shape) if sel is None else list(sel) if isinstance(sel, tuple) else [sel]
    if len(entries) != len(shape):
        raise ValueError("Invalid selection - selection region must have same rank as dataset")
    return [_chunk_region_axis(entry, n) for entry, n in zip(entries, shape)]


def _chunk_region_axis(entry: Any, n: int) -> range:
    """Like h5py, a region reaching past the dataset is an error, not clipped; negative
    bounds count from the end, as in numpy."""
    if isinstance(entry, slice):
        # a step is ignored: the pieces cover the slice's bounds, as h5py's do
        start = _from_end(entry.start, n, default=0)
        stop = _from_end(entry.stop, n, default=n)
    elif isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
        start = _from_end(int(entry), n, default=0)
        stop = start + 1
    else:
        raise TypeError(f"{entry!r}: iter_chunks selections are slices or integers")
    if not 0 <= start < stop <= n:
        raise ValueError("Invalid selection - selection region must be within dataset space")
    return range(start, stop)


def _from_end(bound: Optional[int], n: int, default: int) -> int:
    # h5py takes `bound or default`: a 0 stop is the end of the axis, as None is
    if not bound:
        return default
    return int(bound) + n if bound < 0 else int(bound)


def _resized_shape(shape: tuple, size: Any, axis: Optional[int]) -> tuple:
    """The shape ``resize(size, axis)`` asks for, with h5py's argument checks."""
    if axis is None:
        return tuple(size)
    if not 0 <= axis < len(shape):
        raise ValueError(f"Invalid axis (0 to {len(shape) - 1} allowed)")
    try:
        length = int(size)
    except TypeError:
        raise TypeError("Argument must be a single int if axis is specified") from None
    return shape[:axis] + (length,) + shape[axis + 1:]


# metadata Dataset keeps after the first use: refresh() forgets it
_CACHED = tuple(name for name, value in vars(Dataset).items() if isinstance(value, cached_property))
