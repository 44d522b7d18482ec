"""Parallel writing: chunks are cut and compressed on every core by h5turbo's own
encoders, then handed to libhdf5 through h5py's direct chunk write, so the file, its
filter pipeline and its chunk index are what h5py (+ hdf5plugin) would have written.

The dataset is created by h5py with the filters asked for; libhdf5 and the plugins
fill in their client data (element size, chunk size, level); h5turbo reads that
pipeline back and encodes exactly those filters.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Optional

import numpy as np

from .. import _native
from .._native import Error, UnsupportedError
from ..workers import WorkerPool
from .atomic import replacing

__all__ = ["write", "auto_chunks", "ArgumentError", "CODECS", "check_threads", "is_count", "MAX_THREADS_PER_CORE"]


class ArgumentError(Error, ValueError):
    """A bad argument to a writer (codec, level, chunk shape, data): nothing was written."""


# codec name -> default level (None: the codec has no level)
CODECS = {
    None: None, "gzip": 4, "lzf": None, "zstd": 3, "lz4": None,
    "blosc": 5, "blosc:lz4": 5, "blosc:lz4hc": 5, "blosc:zlib": 5, "blosc:zstd": 5, "blosc:snappy": 5,
    "blosc:blosclz": 5,
    "bitshuffle": None, "bitshuffle:lz4": None, "bitshuffle:zstd": 3,
}

# One chunk's raw bytes for chunks=None; the encode batch size (memory bound).
CHUNK_TARGET_BYTES = 1 << 20
BATCH_BYTES = 64 << 20
# A dask array's band of chunks along axis 0 up to this size is computed whole, once
# (computing part of a chunk computes all of it, so slicing a band costs as much memory)
DASK_BAND_BYTES = 1 << 30


def auto_chunks(shape: tuple, itemsize: int, target_bytes: int = CHUNK_TARGET_BYTES) -> tuple:
    """The chunk shape ``chunks=None`` picks: as square as the array allows, each side a
    power of two (or the whole axis when that is shorter), holding at most
    ``target_bytes`` (1 MiB) raw. 30000 x 20000 int32 gives 512 x 512; 10**6 x 10 float64
    gives 8192 x 10; a 1-D array gets 1 MiB runs. Square chunks serve row, column and
    block reads alike; 1 MiB keeps per-chunk overhead small and a chunk in cache."""
    if not shape:
        raise ArgumentError("a scalar has no chunks")
    budget = max(1, target_bytes // max(1, itemsize))
    chunks = [0] * len(shape)
    free = list(range(len(shape)))
    # Axes shorter than their share take all of it; the rest share what remains.
    while free:
        side = budget ** (1.0 / len(free))
        short = [d for d in free if max(1, shape[d]) <= side]
        if not short:
            break
        for d in short:
            chunks[d] = max(1, shape[d])
            budget = max(1, budget // chunks[d])
            free.remove(d)
    if free:
        side = max(1, 2 ** int(math.floor(math.log2(budget ** (1.0 / len(free))) + 1e-9)))
        for d in free:
            chunks[d] = min(side, max(1, shape[d]))
    return tuple(int(c) for c in chunks)


def _codec_kwargs(compression: Optional[str], level: Optional[int], shuffle) -> dict:
    """h5py create_dataset keywords for the codec (hdf5plugin for the plugin filters)."""
    if compression not in CODECS:
        raise ArgumentError(f"unknown compression {compression!r}; one of "
                            f"{', '.join(repr(c) for c in CODECS if c)} or None")
    if level is not None and CODECS[compression] is None:
        raise ArgumentError(f"compression {compression!r} takes no level")
    lvl = CODECS[compression] if level is None else _check_level(level, compression)
    if compression is None:
        return {}
    if compression == "gzip":
        if not 0 <= lvl <= 9:
            raise ArgumentError(f"gzip level {lvl} (0-9)")
        return {"compression": "gzip", "compression_opts": lvl}
    if compression == "lzf":
        return {"compression": "lzf"}
    try:
        import hdf5plugin
    except ImportError:  # pragma: no cover - hdf5plugin is a dependency of the writer
        raise UnsupportedError(f"compression {compression!r} needs hdf5plugin (pip install hdf5plugin)") from None
    if compression == "zstd":
        if not -131072 <= lvl <= 22:
            raise ArgumentError(f"zstd level {lvl} (up to 22)")
        return dict(hdf5plugin.Zstd(clevel=lvl))
    if compression == "lz4":
        return dict(hdf5plugin.LZ4())
    if compression.startswith("bitshuffle"):
        cname = compression.partition(":")[2] or "lz4"
        if cname != "lz4" and not 0 <= lvl <= 22:
            raise ArgumentError(f"bitshuffle:zstd level {lvl} (0-22)")
        kw = {"cname": cname} if cname == "lz4" else {"cname": cname, "clevel": lvl}
        return dict(hdf5plugin.Bitshuffle(**kw))
    # blosc: shuffle happens inside the blosc frame
    cname = compression.partition(":")[2] or "lz4"
    if not 0 <= lvl <= 9:
        raise ArgumentError(f"blosc level {lvl} (0-9)")
    mode = {False: hdf5plugin.Blosc.NOSHUFFLE, True: hdf5plugin.Blosc.SHUFFLE,
            "bit": hdf5plugin.Blosc.BITSHUFFLE}[shuffle]
    return dict(hdf5plugin.Blosc(cname=cname, clevel=lvl, shuffle=mode))


def is_count(value) -> bool:
    """An integer, numpy's too, and not a bool (which Python counts as one): what a
    level, a thread count or a chunk size must be (int() truncated 2.5 and parsed "4",
    where h5py refuses both)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_level(level, compression: str) -> int:
    """A level is an integer (numpy's too): 3.7 was truncated to 3 and "3" taken, where
    h5py says "GZIP setting must be an integer from 0-9"."""
    if not is_count(level):
        raise ArgumentError(f"compression {compression!r}: level={level!r} (an integer)")
    return int(level)


# Encoding is CPU-bound: more threads than this many per core gain nothing, and the
# native pools keep their threads (threads=10000 left 1024 threads alive).
MAX_THREADS_PER_CORE = 4


def check_threads(threads, where: str) -> Optional[int]:
    """``threads`` as an int of at least 1 (None: every core), at most
    MAX_THREADS_PER_CORE per core available to this process. A float (2.5 became 2),
    a string or a bool is an ArgumentError."""
    if threads is None:
        return None
    if not is_count(threads):
        raise ArgumentError(f"{where}: threads={threads!r} (an integer, at least 1, or None for every core)")
    if threads < 1:
        raise ArgumentError(f"{where}: threads={threads} (at least 1)")
    return min(int(threads), MAX_THREADS_PER_CORE * _cores())


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _pipeline(dset) -> list:
    """The dataset's filter pipeline as stored: [(id, flags, client data)]."""
    dcpl = dset.id.get_create_plist()
    out = []
    for i in range(dcpl.get_nfilters()):
        code, flags, values, _name = dcpl.get_filter(i)
        out.append((int(code), int(flags), [int(v) for v in values]))
    return out


def _check_dtype(dtype: np.dtype, where: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.hasobject or dtype.kind in "OUMm":
        raise UnsupportedError(f"{where}: dtype {dtype} cannot be written by h5turbo "
                               "(fixed-size numbers, booleans, bytes and structs only; use h5py)")
    return dtype


def _check_chunks(chunks, shape: tuple, where: str) -> tuple:
    if isinstance(chunks, (bool, str, bytes, int, float)) or not hasattr(chunks, "__iter__"):
        raise ArgumentError(f"{where}: chunks={chunks!r} (a shape such as (512, 512), or None for auto chunks)")
    chunks = tuple(chunks)
    for size in chunks:
        if not is_count(size):
            raise ArgumentError(f"{where}: chunks={chunks!r}: chunk sizes are integers, not {size!r}")
    chunks = tuple(int(c) for c in chunks)
    if len(chunks) != len(shape) or any(c < 1 for c in chunks):
        raise ArgumentError(f"{where}: chunk shape {chunks} does not fit shape {shape}")
    return chunks


def write(path, name: str, data, chunks=None, compression: Optional[str] = None,
          level: Optional[int] = None, shuffle=False, threads: Optional[int] = None,
          mode: str = "a", attrs: Optional[dict] = None, *, shape=None, dtype=None,
          fillvalue=None, fletcher32: bool = False, maxshape=None, fill_time: Optional[str] = None,
          track_order: Optional[bool] = None, batch_bytes: int = BATCH_BYTES, progress=None):
    """Write ``data`` as dataset ``name`` of the HDF5 file ``path``, compressing chunks
    on ``threads`` threads (default: all cores; at most 4 per core). Returns nothing;
    the file is standard HDF5 that h5py (with hdf5plugin for zstd, lz4, blosc and
    bitshuffle) reads.

    ``data``: a numpy array (or anything ``np.asarray`` takes), a dask array (computed
    one slab of chunk rows at a time), or an iterable of numpy blocks stacked along
    axis 0 (then ``shape`` and ``dtype`` are required) for arrays larger than memory.
    ``dtype``: values are converted as libhdf5 converts them (as h5py stores
    ``create_dataset(data=..., dtype=...)``): out-of-range values saturate.
    ``path`` may also be an open, writable ``h5py.File`` or ``h5py.Group``, or a file
    object (``io.BytesIO``, a file opened "w+b"), as h5py takes.

    ``mode``: as h5py's. "a" and "r+" add the dataset to the file in place (a failed
    write removes what it added). "w" (and "w-"/"x", which refuse an existing file)
    write a new file to a temporary file next to ``path`` and rename it over ``path``
    only when complete: a failed or interrupted write leaves the old file as it was.
    "w-"/"x" also refuse a file created while the write runs. Where the rename is refused
    (a sticky folder, a bind-mounted file) or the folder takes no new file, "w" writes
    the finished file over ``path`` in place (not atomic; docs/writing.md). A file
    object gets the new file copied in once complete.

    ``compression``: None, "gzip" (level 0-9, default 4), "lzf", "zstd" (level, default
    3), "lz4", "blosc" / "blosc:lz4|lz4hc|zlib|zstd|snappy|blosclz" (level 0-9, default 5;
    ``shuffle`` True or "bit" selects blosc's own byte or bit shuffle),
    "bitshuffle" / "bitshuffle:lz4" / "bitshuffle:zstd". ``shuffle=True`` adds HDF5's
    byte-shuffle filter before the compressor (except for blosc, see above).
    ``chunks=None`` (or h5py's ``True``) picks :func:`auto_chunks`. ``fillvalue``, ``fill_time``,
    ``fletcher32``, ``maxshape`` and ``track_order`` are h5py's ``create_dataset``
    options. ``progress``: called with the number of bytes of raw data written so far
    (after each batch).
    """
    import h5py

    where = _describe(path, name)
    source = _Source.of(data, shape, dtype, where)
    if source.ndim == 0:
        raise ArgumentError(f"{where}: cannot chunk a scalar (use h5py for scalars)")
    if shuffle not in (False, True, "bit") or (shuffle == "bit" and not str(compression).startswith("blosc")):
        raise ArgumentError(f"{where}: shuffle={shuffle!r} (True, False, or 'bit' with blosc)")
    if not isinstance(shuffle, str):
        shuffle = bool(shuffle)  # numpy's True (or 1) is True: `shuffle is True` below
    try:
        kwargs = _codec_kwargs(compression, level, shuffle)
    except ArgumentError as exc:
        raise ArgumentError(f"{where}: {exc}") from None
    if progress is not None and not callable(progress):
        raise ArgumentError(f"{where}: progress={progress!r} (a function taking the bytes written so far)")
    if shuffle is True and not str(compression).startswith("blosc"):
        kwargs["shuffle"] = True
    if fletcher32:
        kwargs["fletcher32"] = True
    if maxshape is not None:
        kwargs["maxshape"] = _check_maxshape(maxshape, source.shape, where)
    # Without chunks or any option that needs them, an empty array is an empty
    # contiguous dataset, as h5py makes it.
    picked = chunks is True  # h5py's chunks=True: chunked, the shape picked here
    if picked:
        chunks = None
    chunked = picked or chunks is not None or bool(kwargs) or 0 not in source.shape
    if chunks is not None:
        chunks = _check_chunks(chunks, source.shape, where)
    elif 0 in source.shape:
        chunks = True  # nothing to write: h5py picks the chunks, as it does for an empty array
    else:
        chunks = auto_chunks(source.shape, source.dtype.itemsize)
    if fill_time is not None:
        kwargs["fill_time"] = fill_time
    if track_order is not None:
        kwargs["track_order"] = track_order
    threads = check_threads(threads, where)
    if attrs is not None and not isinstance(attrs, Mapping):
        raise ArgumentError(f"{where}: attrs={attrs!r} (a dict of attribute names and values)")
    job = _Job(name, source, chunks if chunked else None, kwargs, fillvalue, attrs, threads, batch_bytes,
               progress, where)
    if isinstance(path, h5py.Group):
        job.into(path)
    elif mode in ("w", "w-", "x") and _is_file_object(path):
        _write_file_object(path, mode, job, where)
    elif mode in ("w", "w-", "x"):
        with replacing(path, exclusive=mode != "w") as tmp:
            with _naming_failures(where), h5py.File(tmp, "w") as f:
                job.into(f)
    else:
        try:
            f = h5py.File(path, mode)
        except ValueError as exc:
            raise ArgumentError(f"{path}: {exc}") from None
        with _naming_failures(where), f:
            job.into(f)


def _is_file_object(path) -> bool:
    return hasattr(path, "read") and hasattr(path, "seek") and hasattr(path, "write")


def _write_file_object(fileobj, mode: str, job, where: str) -> None:
    """A new file in a file object (``io.BytesIO``, an open file), as h5py writes one:
    written to a temporary file first, then copied into the object (truncated) only
    when complete, so a failed write leaves the object as it was. "w-" and "x" refuse
    an object that holds data already."""
    import shutil
    import tempfile

    import h5py

    size = fileobj.seek(0, os.SEEK_END)
    if mode != "w" and size:
        raise FileExistsError(errno.EEXIST, f"{where}: the file object holds {size} bytes already "
                                            f"(mode {mode!r} never replaces a file)")
    with tempfile.TemporaryFile(prefix=".h5turbo-") as tmp:
        with _naming_failures(where), h5py.File(tmp, "w") as f:
            job.into(f)
        tmp.seek(0)
        fileobj.seek(0)
        fileobj.truncate()
        shutil.copyfileobj(tmp, fileobj, 1 << 20)
        fileobj.flush()


@contextmanager
def _naming_failures(where: str):
    """libhdf5's OSErrors (a full disk: "Can't write unprocessed chunk data (file write
    failed: ... errno = 28 ...)", at a chunk or when the file is closed) say neither
    which file nor which dataset: raised again naming both, the original as the cause.
    The system's own errors about a file they name (the source's, say) pass as they are."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, Error) or exc.filename is not None or str(exc).startswith(where):
            raise
        code = exc.errno if exc.errno is not None else _errno_in(str(exc))
        if code is None:
            raise OSError(f"{where}: {exc}") from exc
        raise OSError(code, f"{where}: {exc.strerror or exc}") from exc


def _errno_in(message: str) -> Optional[int]:
    """The "errno = N" libhdf5 puts in its messages (h5py leaves OSError.errno unset)."""
    import re
    found = re.search(r"errno = (\d+)", message)
    return int(found.group(1)) if found else None


def _describe(path, name: str) -> str:
    """File and object, for messages: ``path`` is a file name or an open h5py group."""
    group_file = getattr(getattr(path, "file", None), "filename", None)
    if group_file is None:
        return f"{path}:{name}"
    parent = path.name
    if isinstance(parent, bytes):  # h5py gives a group name that is not UTF-8 as bytes
        parent = parent.decode("utf-8", "backslashreplace")
    return f"{group_file}:{parent.rstrip('/')}/{name}"


class _Job:
    """One dataset to create and fill, its arguments checked."""

    def __init__(self, name, source, chunks, kwargs, fillvalue, attrs, threads, batch_bytes, progress, where):
        self.name, self.source, self.chunks, self.kwargs = name, source, chunks, kwargs
        self.fillvalue, self.attrs, self.threads = fillvalue, attrs, threads
        self.batch_bytes, self.progress, self.where = batch_bytes, progress, where

    def into(self, group) -> None:
        """Create the dataset in ``group`` and fill it; on failure remove what was added
        (the dataset, and the groups made on the way to it)."""
        if self.name in group:
            raise ArgumentError(f"{self.where}: an object of that name already exists")
        made = _missing_groups(group, self.name)
        try:
            dset = self._create(group)
            # attributes first: one h5py cannot store fails before the data is written
            self._set_attrs(dset)
            if self.chunks is not None:
                _fill(dset, self.source, self.chunks, self.threads, self.batch_bytes, self.progress)
        except BaseException:
            if self.name in group:
                del group[self.name]
            for path in reversed(made):
                if path in group and len(group[path]) == 0:
                    del group[path]
            raise

    def _create(self, group):
        source = self.source
        try:
            if self.chunks is None:
                return group.create_dataset(self.name, shape=source.shape, dtype=source.dtype,
                                            fillvalue=self.fillvalue, **self.kwargs)
            return group.create_dataset(self.name, shape=source.shape, dtype=source.dtype, chunks=self.chunks,
                                        fillvalue=self.fillvalue, **self.kwargs)
        except (ValueError, TypeError, AttributeError) as exc:
            # AttributeError: h5py's for a fill value of the wrong kind ("'int' object
            # has no attribute 'encode'" for fillvalue=3 with dtype "S5")
            raise ArgumentError(f"{self.where}: {exc}") from None

    def _set_attrs(self, dset) -> None:
        for key, value in (self.attrs or {}).items():
            try:
                dset.attrs[key] = value
            except (ValueError, TypeError) as exc:
                raise ArgumentError(f"{self.where}: attribute {key!r}: {exc}") from None


def _missing_groups(group, name: str) -> list:
    """The groups on the way to ``name`` (relative to ``group``) that do not exist yet."""
    parts = [p for p in name.split("/")[:-1] if p]
    missing, path = [], ""
    for part in parts:
        path = f"{path}/{part}" if path else part
        if path not in group:
            missing.append(path)
    return missing


def convert(array: np.ndarray, dtype: np.dtype, where: str) -> np.ndarray:
    """``array`` as ``dtype``, converted as libhdf5 converts numbers (as h5py stores
    ``create_dataset(data=array, dtype=dtype)``): out-of-range values saturate, floats
    are truncated toward zero. Other kinds convert as numpy's ``astype``."""
    dtype = np.dtype(dtype)
    if array.dtype == dtype:
        # equal numpy types may still differ in h5py's metadata (an enum over int16
        # equals int16): the stored type is the one asked for
        return array if array.dtype.metadata == dtype.metadata else array.view(dtype)
    if (array.dtype.kind == "c") != (dtype.kind == "c") and array.dtype.kind in "biufc" and dtype.kind in "biufc":
        # libhdf5 has no conversion between real and complex numbers (h5py: "no
        # appropriate function for conversion path"); numpy's would drop or invent parts
        raise ArgumentError(f"{where}: values of {array.dtype} cannot be stored as {dtype} "
                            "(no conversion between real and complex numbers; convert with numpy first)")
    numeric = "biuf"
    if array.dtype.kind not in numeric or dtype.kind not in numeric or dtype.kind == "f" and dtype.itemsize == 2:
        return array.astype(dtype)  # float16: h5py converts with numpy too
    import h5py
    src = np.ascontiguousarray(array)
    width = max(src.dtype.itemsize, dtype.itemsize)
    buf = np.empty(src.size * width, np.uint8)
    buf[:src.nbytes] = src.reshape(-1).view(np.uint8)
    try:
        h5py.h5t.convert(h5py.h5t.py_create(src.dtype), h5py.h5t.py_create(dtype), src.size, buf)
    except Exception as exc:
        raise ArgumentError(f"{where}: values of {src.dtype} cannot be stored as {dtype} ({exc})") from None
    return buf[:src.size * dtype.itemsize].view(dtype).reshape(src.shape)


class _Source:
    """Where the values come from: one in-memory array, or slabs along axis 0."""

    def __init__(self, shape, dtype, array=None, blocks=None, dask=None, where: str = ""):
        self.shape, self.dtype = tuple(int(s) for s in shape), dtype
        self.ndim = len(self.shape)
        self.array, self.blocks, self.dask = array, blocks, dask
        self.where = where  # file and object, for the blocks' messages

    @classmethod
    def of(cls, data, shape, dtype, where: str) -> "_Source":
        data = _unwrapped(data)
        dask = hasattr(data, "dask") and hasattr(data, "compute") and hasattr(data, "chunks")
        if dask or _is_stored_array(data):
            # read a slab at a time, not whole: dask computed a band of chunks at a time,
            # another file's dataset (h5py, h5turbo, zarr) sliced; dtype= converts each
            # slab as an in-memory array would be
            if dask and any(math.isnan(n) for axis in data.chunks for n in axis) and hasattr(data, "compute_chunk_sizes"):
                # unknown sizes (after a boolean selection): found by dask's own remedy,
                # one computation (h5py computes the whole array; a NaN shape failed here)
                data = data.compute_chunk_sizes()
            _check_shape(tuple(data.shape), shape, where)
            dtype = _check_dtype(data.dtype if dtype is None else dtype, where)
            if dask:
                return cls(data.shape, dtype, dask=data, where=where)
            return cls(data.shape, dtype, blocks=_slabs_of(data), where=where)
        if isinstance(data, Iterator):
            if shape is None or dtype is None:
                raise ArgumentError(f"{where}: writing from an iterator of blocks needs shape= and dtype=")
            return cls(shape, _check_dtype(dtype, where), blocks=iter(data), where=where)
        array = np.asarray(data)
        if dtype is not None:
            array = convert(array, dtype, where)
        _check_shape(array.shape, shape, where)
        _check_dtype(array.dtype, where)
        return cls(array.shape, array.dtype, array=np.ascontiguousarray(array), where=where)

    def slabs(self, rows: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, C-contiguous block) covering the array; every block but the last
        holds a multiple of ``rows`` rows (so slabs start on chunk boundaries)."""
        if self.array is not None:
            yield 0, self.array
        elif self.dask is not None and self._band_bytes() <= DASK_BAND_BYTES:
            yield from self._stacked(rows, self._dask_bands(rows))
        elif self.dask is not None:
            # bands too large to hold: slabs sliced out of them (a band's chunks are
            # computed again for each slab that crosses it)
            for start in range(0, self.shape[0], rows):
                block = convert(np.asarray(self.dask[start:start + rows].compute()), self.dtype, f"{self.where}: block")
                yield start, np.ascontiguousarray(block, dtype=self.dtype)
        else:
            yield from self._stacked(rows, self.blocks)

    def _band_bytes(self) -> int:
        """The bytes of the dask array's largest band of chunks along axis 0."""
        return max(self.dask.chunks[0], default=0) * self.dtype.itemsize * math.prod(self.shape[1:])

    def _dask_bands(self, rows: int) -> Iterator[np.ndarray]:
        """The dask array computed in whole bands of its chunks along axis 0, as many
        bands at a time as make up `rows` rows: each chunk is computed once. Slabs cut
        at chunk-row multiples straddled the bands, and each band was computed again for
        every slab it crossed (81 times for chunks spanning every row)."""
        start = end = 0
        for band in self.dask.chunks[0]:
            end += band
            if end - start >= rows:
                yield self.dask[start:end].compute()
                start = end
        if end > start:
            yield self.dask[start:end].compute()

    def _stacked(self, rows: int, blocks: Iterator):
        pending, have, start = [], 0, 0
        for block in blocks:
            block = convert(np.asarray(block), self.dtype, f"{self.where}: block")
            if block.ndim != len(self.shape) or block.shape[1:] != self.shape[1:]:
                raise ArgumentError(f"{self.where}: block of shape {block.shape} does not stack into {self.shape}")
            pending.append(block)
            have += block.shape[0]
            if have >= rows:
                joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
                take = have // rows * rows
                if start + take > self.shape[0]:
                    raise ArgumentError(f"{self.where}: blocks hold more than the {self.shape[0]} rows of shape=")
                yield start, np.ascontiguousarray(joined[:take], dtype=self.dtype)
                start += take
                pending, have = [joined[take:]], have - take
        if have:
            joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
            if start + have > self.shape[0]:
                raise ArgumentError(f"{self.where}: blocks hold more than the {self.shape[0]} rows of shape=")
            yield start, np.ascontiguousarray(joined, dtype=self.dtype)
            start += have
        if start != self.shape[0]:
            raise ArgumentError(f"{self.where}: blocks hold {start} rows, shape= says {self.shape[0]}")


def _check_shape(have: tuple, shape, where: str) -> None:
    """The data's shape agrees with shape= when one is given."""
    if shape is not None and tuple(shape) != have:
        raise ArgumentError(f"{where}: data has shape {have}, shape= says {tuple(shape)}")


def _slabs_of(data) -> Iterator:
    """Another file's dataset in slabs of rows of about BATCH_BYTES."""
    row_bytes = np.dtype(data.dtype).itemsize * math.prod(data.shape[1:])
    step = max(1, BATCH_BYTES // max(1, row_bytes))
    return (data[start:start + step] for start in range(0, data.shape[0], step))


def _check_maxshape(maxshape, shape: tuple, where: str) -> tuple:
    """maxshape as h5py takes it (None: unlimited), checked against the shape first:
    h5py's own message came after the chunks were picked ("Chunk shape must not be
    greater than data shape ... (5,) is not compatible with (5,)")."""
    try:
        maxshape = (maxshape,) if isinstance(maxshape, (int, np.integer)) else tuple(maxshape)
    except TypeError:
        raise ArgumentError(f"{where}: maxshape={maxshape!r} (a tuple, one entry per axis)") from None
    if len(maxshape) != len(shape):
        raise ArgumentError(f"{where}: maxshape {maxshape} has {len(maxshape)} axes, the data {len(shape)}")
    for axis, (limit, size) in enumerate(zip(maxshape, shape)):
        if limit is not None and int(limit) < size:
            raise ArgumentError(f"{where}: maxshape {maxshape} is smaller than the shape {shape} along axis {axis}")
    return maxshape


def _unwrapped(data):
    """An xarray DataArray or Variable over a dask array: that dask array (np.asarray
    computed it whole: a 1.3 GB lazy array peaked at 2.6 GB)."""
    inner = getattr(data, "data", None)
    if type(data).__module__.startswith("xarray") and hasattr(inner, "dask") and hasattr(inner, "compute"):
        return inner
    return data


def _is_stored_array(data) -> bool:
    """A dataset of a file (h5py's, h5turbo's, a zarr array) of rank >= 1: read in
    slabs of rows, as blocks are."""
    module = type(data).__module__.split(".")[0]
    return module in ("h5py", "h5turbo", "zarr") and len(getattr(data, "shape", ()) or ()) >= 1 \
        and hasattr(data, "dtype") and hasattr(data, "__getitem__")


def _fill(dset, source: _Source, chunks: tuple, threads, batch_bytes: int, progress) -> None:
    """Encode and write every chunk: slabs of whole chunk rows, each in batches of chunks
    encoded in parallel (into one of two reused buffers) while the previous batch goes
    to libhdf5."""
    if 0 in source.shape:
        return
    pipeline = _pipeline(dset)
    fill = np.asarray(dset.fillvalue, dtype=dset.dtype).tobytes() if dset.fillvalue is not None else b""
    if len(fill) != dset.dtype.itemsize:
        fill = b""
    itemsize = source.dtype.itemsize
    chunk_bytes = itemsize * math.prod(chunks)
    bound = _encoded_bound(chunk_bytes)
    # batches of batch_bytes of encoded room: counted by raw bytes, chunks of 64 bytes
    # asked for 30 GiB (each chunk's room for headers dwarfing the chunk)
    per_batch = max(1, batch_bytes // bound)
    row_bytes = itemsize * math.prod(source.shape[1:])
    slab_rows = chunks[0] * max(1, batch_bytes // max(1, row_bytes * chunks[0]))
    buffers = [None, None]
    written = 0
    nthreads = int(threads or 0)
    # The encoding thread is started only for a slab of several batches: a dataset of
    # one batch is encoded here (a thread started per dataset cost a file of 500 small
    # datasets 1.3 ms each on a loaded host).
    encoder: Optional[WorkerPool] = None
    try:
        for first_row, block in source.slabs(slab_rows):
            grid = [math.ceil(s / c) for s, c in zip(block.shape, chunks)]
            total = math.prod(grid)

            def encode(first, which, block=block):
                count = min(per_batch, total - first)
                if buffers[which] is None or buffers[which].size < count * bound:
                    buffers[which] = np.empty(count * bound, np.uint8)
                out = buffers[which]
                return out, _native.encode_chunks_into(block, list(chunks), pipeline, fill, first, count, out,
                                                       nthreads)

            if total > per_batch and encoder is None:
                encoder = WorkerPool(1, "h5turbo-encode")
            pending = encoder.submit(encode, 0, 0) if total > per_batch else None
            for k, first in enumerate(range(0, total, per_batch)):
                out, batch = pending.result() if pending is not None else encode(0, 0)
                if first + per_batch < total:
                    pending = encoder.submit(encode, first + per_batch, (k + 1) % 2)
                _write_batch(dset, batch, first_row, out)
                written += len(batch) * chunk_bytes
                if progress is not None:
                    progress(min(written, itemsize * math.prod(source.shape)))
    finally:
        if encoder is not None:
            encoder.shutdown(wait=True)


def _encoded_bound(chunk_bytes: int) -> int:
    """Room for one chunk encoded, the worst case of every codec: incompressible data
    grows by well under 1/16, plus headers (a few hundred bytes at most for a small
    chunk); a chunk that would not fit is an error, never an overrun."""
    return chunk_bytes + chunk_bytes // 16 + min(65536, 4096 + chunk_bytes)


def _write_batch(dset, batch: list, first_row: int, out: np.ndarray) -> None:
    """Hand a batch of encoded chunks [(offset, start, length, mask)] packed in `out`
    to libhdf5, at rows shifted by `first_row` (the slab's place in the dataset)."""
    write_chunk = dset.id.write_direct_chunk
    view = memoryview(out)
    for offset, start, length, mask in batch:
        if first_row:
            offset = (offset[0] + first_row,) + tuple(offset[1:])
        write_chunk(offset, view[start:start + length], mask)
