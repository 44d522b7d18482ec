"""Type stub of the compiled module ``h5turbo._native`` (crates/h5turbo-py).

This is the contract between the Rust bindings and the Python package: the Python
layer (File/Group/Dataset, selection parsing, attrs) is written against it. The
native side is deliberately low-level: it knows objects by address, reads orthogonal
selections into a caller's C-contiguous array, and returns attribute values already
converted to what h5py would return.
"""

import os
from typing import Any, Optional, Sequence, Tuple, Union
import numpy as np

class Error(Exception):
    """Base of every h5turbo error."""

H5TurboError = Error  # the class's own name, under which pickle finds it

class FormatError(Error):
    """The file is broken or malformed where we looked."""

class UnsupportedError(Error):
    """Valid HDF5 that h5turbo does not read yet (the message names the feature)."""

class ClosedError(Error, ValueError, RuntimeError):
    """The file was closed."""

class TooManyLinksError(FormatError, RuntimeError):
    """A path followed too many soft links (a cycle); a RuntimeError too, as h5py raises."""

class OutOfMemoryError(Error, MemoryError):
    """The memory the values need cannot be had (more than the machine has, or a memory
    limit refused it): read less at a time. A MemoryError too, as numpy raises."""

class FileObjectError(Error):
    """A file-like object given to File.from_fileobj failed: it raised (that exception
    is the ``__cause__``), returned fewer bytes than it holds, returned something other
    than bytes (a file opened in text mode), or misreported a byte count."""

class NotBytesError(FileObjectError, TypeError):
    """A file-like object's read() returned something other than bytes (str, None):
    also the TypeError h5py raises."""

# Errors of kind NotFound are raised as KeyError, InvalidArgument as ValueError,
# a missing file as FileNotFoundError, other OS errors as OSError; a Rust panic
# is caught and raised as Error.

# One axis of an orthogonal selection:
#   (start, count, step) with step >= 1, or
#   a 1-D numpy uint64 array of strictly increasing indices.
AxisSelection = Union[Tuple[int, int, int], np.ndarray]

class File:
    def __init__(self, path: str) -> None:
        """Open read-only; parses the superblock and root group only."""
    @staticmethod
    def from_fileobj(obj: Any, name: str) -> "File":
        """Open a Python file-like object read-only (h5py's ``File(fileobj)``); ``name``
        stands for the file in messages and is ``path``.

        The object needs ``seek`` and ``read`` (``readinto`` is used when present: no
        bytes object per read); its size is where ``seek(0, 2)`` lands (its return
        value, else ``tell()``). When ``fileno()`` names a regular file of that size
        whose first bytes are the object's (an ``open(path, 'rb')`` file, not a member
        of an archive), that descriptor (duplicated) is read natively instead and the
        object is not used again. When the object has ``pread(n, offset)`` (as
        ``os.pread``: bytes, fewer only at the end) it is read with that alone, from
        several threads at once: it must be safe to call concurrently (its reads then
        overlap, e.g. ranged requests in flight together). Otherwise each positional read
        takes the GIL only for the object's seek + read calls, one read at a time per
        object; decoding runs in parallel with the GIL released. Closing the File does
        not close the object.

        Raises TypeError for an object without seek/read, FileObjectError when the
        object raises (the exception is the cause), ends early, or returns something
        other than bytes; then FormatError etc. as for a path."""
    @property
    def path(self) -> "os.PathLike[str]":
        """The path the file was opened with (a pathlib.Path)."""
    @property
    def closed(self) -> bool: ...
    @property
    def userblock_size(self) -> int: ...
    def external_link_file(self, name: str) -> "os.PathLike[str]":
        """Where the target file of an external link naming ``name`` is, found as
        libhdf5 finds it (the core's one lookup, shared with VDS sources and external
        raw data): an absolute name as given; else under each folder of
        HDF5_EXT_PREFIX (':'-separated; ``${ORIGIN}`` is this file's folder), next to
        this file, then from the working folder. KeyError when it is nowhere."""
    def close(self) -> None:
        """Idempotent. Reads still in flight on other threads finish or fail with
        ClosedError; nothing crashes."""
    def get(self, path: str) -> "Object":
        """Resolve an absolute path ('/', '/a/b'). Soft links are followed; an
        external link raises Error naming the target file and path. KeyError if a
        component does not exist."""
    def dereference(self, address: int) -> tuple["Object", Optional[str]]:
        """The object whose header is at ``address`` (an object reference) and a path
        to it from the root (None when no hard link reaches it). Error (FormatError)
        naming the reference and the file when no object header is there."""
    def region(self, collection: int, index: int) -> tuple[int, str, Any]:
        """A region reference's stored region (global heap collection address, object
        index): (dataset address, kind, data); kind 'none' or 'all' (data None),
        'points' (n x rank uint64 coordinates), 'blocks' ((starts, ends), n x rank
        uint64, ends inclusive) or 'regular' ((start, stride, count, block) lists)."""

class Object:
    """A group, dataset or committed datatype, identified by its object header."""
    @property
    def kind(self) -> str:
        """'group', 'dataset' or 'datatype'."""
    @property
    def name(self) -> str:
        """An absolute path to the object: the path it was reached by, except that a
        soft link gives its target's path (the Python layer tracks h5py's names)."""
    @property
    def address(self) -> int:
        """Object header address: equal for two hard links to the same object."""
    def root(self) -> "Object":
        """The root group of the file this object was read from (a refreshed object's
        view of it)."""
    @property
    def file_path(self) -> "os.PathLike[str]":
        """The path of the file this object was read from."""
    @property
    def hard_links(self) -> int:
        """How many hard links lead to the object (its header's reference count)."""
    @property
    def valid(self) -> bool:
        """False once the file is closed (h5py's obj.id.valid)."""

    # --- groups ---
    def links(self) -> list[Tuple[str, str, Any]]:
        """(name, link_kind, target) in h5py iteration order (creation order when
        the group tracks it, else name order). link_kind is 'hard' (target: object
        header address), 'soft' (target: path str), 'external' (target:
        (file, path)) or 'unreadable' (target: what is wrong with it: a
        user-defined link, an external link value that cannot be read)."""
    def link_count(self) -> int:
        """How many links the group has (len): without listing them where the storage
        counts them (dense storage's name index)."""
    def link(self, name: str) -> Optional[Tuple[str, str, Any]]:
        """The link ``name`` as links() gives it, None when there is none (one
        lookup, whatever the size of the group)."""
    def child(self, name: str) -> "Object":
        """Follow one link (name is one path component). KeyError if absent."""

    # --- attributes (all kinds) ---
    def attr_names(self) -> list[str]:
        """In creation order when tracked, else name order (as h5py)."""
    def attr_count(self) -> int:
        """How many attributes (no names built)."""
    def has_attr(self, name: str) -> bool:
        """Whether an attribute of that name exists (a hash lookup)."""
    def attr(self, name: str) -> Any:
        """The value as h5py returns it: a numpy array for non-scalar dataspaces, a
        numpy scalar for scalar numeric ones, str for variable-length strings
        (scalar), np.bytes_ for fixed-length strings, an object array of str for
        arrays of vlen strings, an h5py-style Empty marker (None dims) for null
        dataspaces -> returned as the tuple ('empty', dtype). KeyError if absent."""
    def attr_info(self, name: str) -> tuple[Any, Optional[tuple[int, ...]], int]:
        """(dtype, shape or None for a null dataspace, bytes of the value in the file):
        what h5py's attrs.get_id(name) answers. KeyError if absent."""

    def is_dimension_scale(self) -> bool:
        """H5DSis_scale: a CLASS attribute of fixed-length null-terminated strings
        reading "DIMENSION_SCALE" (other string kinds: False, as libhdf5)."""

    # --- datasets ---
    @property
    def shape(self) -> Optional[Tuple[int, ...]]:
        """None for a null dataspace; () for a scalar."""
    @property
    def maxshape(self) -> Optional[Tuple[Optional[int], ...]]:
        """None entries for unlimited axes."""
    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype h5py would give (structured for compounds, bool for
        h5py's boolean enum, complex for h5py's complex compounds, object with
        h5py-style vlen metadata for vlen strings, h5py's metadata on fixed
        strings, enums and tagged opaque types). For a committed datatype object:
        the type it stores."""
    @property
    def layout(self) -> str:
        """'compact', 'contiguous', 'chunked' or 'virtual'."""
    @property
    def external(self) -> Optional[list[Tuple[str, int, int]]]:
        """[(file name, offset, size)] of raw data in external files, or None."""
    def virtual_sources(self) -> Optional[list[Tuple[str, Any, str, str, str, Any]]]:
        """A virtual dataset's mappings: (virtual selection kind, data, source file name
        as stored ('.' for this file), source dataset name, source selection kind,
        data) each, selections as File.region gives them; None for other layouts."""
    @property
    def chunks(self) -> Optional[Tuple[int, ...]]: ...
    @property
    def string_padding(self) -> Optional[str]:
        """'nullterm', 'nullpad' or 'spacepad' for a fixed-length string dataset;
        None for other types."""
    @property
    def native_complex(self) -> bool:
        """HDF5 2.0 complex elements (not {r, i} compounds), alone or in an array type."""
    @property
    def chunk_index(self) -> Optional[str]:
        """'btree_v1', 'single_chunk', 'implicit', 'fixed_array',
        'extensible_array', 'btree_v2' (chunked layouts only)."""
    @property
    def filters(self) -> list[Tuple[int, str, Tuple[int, ...]]]:
        """(filter id, name, client data) in pipeline order."""
    @property
    def fillvalue(self) -> Any:
        """A numpy scalar of self.dtype (zero when the file defines none)."""
    @property
    def fillvalue_defined(self) -> bool:
        """Whether the file defines a fill value (else fillvalue is the zero default)."""
    def read(self, selection: Sequence[AxisSelection], out: np.ndarray, threads: int) -> None:
        """Read an orthogonal selection into `out`, which must be C-contiguous,
        writeable, of dtype == self.dtype and of shape (len(axis) for each axis).
        For a scalar dataset `selection` is [] and `out` has shape (). A sub-array
        dtype may also be given as its base dtype with the array's trailing axes.
        Releases the GIL for the read and decode. Object dtypes (vlen) are filled
        with Python objects: bytes for variable-length strings (as h5py's dataset
        reads), numpy arrays for sequences. threads <= 0 means the default
        (H5TURBO_THREADS or all cores). Reads of few chunks go through a small
        per-dataset cache of decoded chunks."""
    def reduce(self, selection: Sequence[AxisSelection], op: str, reduce_axis: Sequence[bool],
               threads: int) -> Any:
        """Reduce an orthogonal selection of a numeric dataset (rank >= 1) chunk by chunk
        along the axes flagged in `reduce_axis`; flat results in row-major order over
        the selection's shape with reduced axes of length 1. op: 'sum_int' (int64,
        wrapping), 'sum_float' (float64), 'min' / 'max' (bytes of the element type in
        native order), 'count_nonzero' (uint64), 'moments' ((count uint64, mean
        float64, m2 float64): variance = m2 / (count - ddof)). Releases the GIL."""
    def chunk_count(self) -> int:
        """Allocated chunks in the chunk index (1 for contiguous with storage)."""
    def storage_size(self) -> int:
        """Bytes allocated in the file for the data (sum of stored chunk sizes)."""
    def chunk_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every allocated chunk in libhdf5's order: first-element offsets (n x rank,
        uint64), filter masks (uint32), absolute file offsets and stored sizes (uint64)."""
    def chunk_info_at(self, element: list[int]) -> tuple[int, int, int] | None:
        """(filter mask, file offset, size) of the allocated chunk holding `element`."""
    def read_stored_chunk(self, offset: list[int]) -> tuple[int, bytes] | None:
        """(filter mask, stored bytes) of the chunk starting at `offset`; None if unwritten."""
    @property
    def contiguous_offset(self) -> int | None:
        """Where contiguous data starts in the file; None otherwise (h5py's get_offset)."""

def fork_prepare() -> None:
    """os.register_at_fork's before hook: wait until no native call runs (fork_gate.rs)."""
def fork_parent() -> None: ...
def fork_child() -> None: ...
def prepare_exit() -> None:
    """atexit hook: from now on only this thread takes the GIL in native code (shutdown.rs)."""
def default_threads() -> int:
    """H5TURBO_THREADS if set and positive, else the number of cores."""

def filters() -> list[Tuple[int, str, bool, bool]]:
    """Every filter the core knows, sorted by id: (registered id, name, decodes, encodes).
    Ids known by name only (decodes False) are listed so errors can name them."""

def codec_limit(path: str, dataset: str, threads: int = 0, repeats: int = 5) -> float:
    """Median seconds, over `repeats` timed passes after one warm-up, to decode every
    stored chunk of `dataset` from memory into a pre-faulted buffer on `threads`
    threads (0: the default): the codec-only limit of a warm read. The chunks are read
    into memory before timing. UnsupportedError for a dataset without chunks."""

def fast5_limit(paths: Sequence[str], threads: int = 0, repeats: int = 5) -> float:
    """As codec_limit, for the raw signal of every read in these fast5 files (single-
    or multi-read), decoded all together: the floor under a fast5 reader."""

def fast5_reads(jobs: Sequence[Tuple[str, int, int, Optional[Tuple[int, ...]]]],
                io_depth: Optional[int] = None) -> list[Tuple[Optional[int], Optional[str], list[Any], Optional[Tuple[int, ...]]]]:
    """Oxford Nanopore fast5 files (python/h5turbo/formats/fast5.py builds the reads).
    For each job (path, first read, read limit, the file's version as an earlier job
    gave it, or None): (reads in the file, None, reads, the file's version: device,
    inode, size, mtime and ctime) or (None, error message naming the file, [], None),
    the error when the file is no longer the version given. A read is (group path, int16 signal or
    None, raw-group attributes dict or None, channel_id attributes dict or None, error
    message or None, read_id str or None, done): raw-group values as h5py gives them,
    channel values as plain Python int, float or str; done is False when some value
    took the general path (the caller finishes those: numpy values, Empty). The GIL is
    released while the files are walked and the signals decoded (one thread per call)."""

def fast5_fetch(jobs: Sequence[Tuple[str, bool, Sequence[Tuple[str, int]]]],
                io_depth: Optional[int] = None) -> list[Tuple[Optional[int], Optional[str], list[Any], Optional[Tuple[int, ...]]]]:
    """Reads fetched by id from files a Fast5ReadIndex indexed: for each job (path,
    multi-read file, [(read id, read number in the file)]) the reads in the order
    asked, in fast5_reads' form. A multi-read file's read groups are looked up by name
    (the file is not listed again); the GIL is released meanwhile."""


class Fast5ReadIndex:
    """Where each read of many fast5 files is, by read id: every file's read ids (a
    multi-read file's group names, a single-read file's read_id attribute) read once,
    in parallel on `threads` threads (0: the default), the GIL released. Files that
    cannot be indexed are left out (see unindexed); the first file holding an id wins."""

    def __init__(self, paths: Sequence[str], threads: int = 0) -> None: ...
    def __len__(self) -> int: ...
    def __contains__(self, read_id: str) -> bool: ...

    def find(self, read_ids: Sequence[str]) -> list[Tuple[int, int, bool]]:
        """(file number, read number in the file, multi-read file) of each id; KeyError
        naming the first id that is in none of the files."""

    def read_ids(self) -> list[str]:
        """Every read id, in file order then read order."""

    def unindexed(self) -> Tuple[int, Optional[str]]:
        """How many files could not be indexed, and the first one's error."""

    def unindexed_files(self) -> list[tuple[int, str]]:
        """Each file that could not be indexed (its number in file order) and its error."""


def encode_chunks_into(array: Any, chunk: Sequence[int], filters: Sequence[tuple[int, int, Sequence[int]]],
                       fill: bytes, first: int, count: int, out: Any,
                       threads: int = 0) -> list[tuple[tuple[int, ...], int, int, int]]:
    """Encode chunks first .. first+count (C order over the chunk grid) of a C-contiguous
    numpy array through a filter pipeline [(filter id, flags, client data)] as libhdf5
    stores it, in parallel with the GIL released, the stored bytes packed one after
    another into `out` (a writeable C-contiguous uint8 array, reused between calls: no
    allocation per chunk). Edge chunks are padded to the full chunk shape with `fill`
    (one element's bytes; b'' for zeros). Returns [(chunk offset in elements, start in
    out, length, filter mask)] in chunk order, for H5Dwrite_chunk. Filters: deflate,
    shuffle, fletcher32, lzf, zstd, lz4, bitshuffle, blosc (not blosclz); others raise
    UnsupportedError. Bad shapes or ranges, or an `out` too small, raise ValueError."""


def swap_io_depth(bytes: Optional[int]) -> Optional[int]:
    """Set this thread's read-ahead window (None: the default); returns the previous one."""


def io_depth() -> int:
    """The read-ahead window, in bytes, of a read started now on this thread."""


class FileHints:
    """Files hinted to the system in reading order by a thread of their own, `window`
    bytes (None: this thread's window) beyond the farthest reader; a window of 0
    starts no thread and makes every method a no-op (read_fast5's large files)."""

    def __init__(self, window: Optional[int] = None) -> None: ...

    def push(self, path: str) -> int:
        """The next file to be read; returns its number (from 0, in the order pushed)."""

    def reached(self, file: int, done: int, of: int) -> None:
        """A reader has reached file number `file`, `done / of` of the way into it."""

    def close(self) -> None:
        """Stop the thread (after the hint in progress)."""
