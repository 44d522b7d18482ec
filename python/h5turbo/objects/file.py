"""File: an HDF5 file opened read-only; it is also its root group.

``File`` takes what h5py's ``File`` takes for reading: a path (str, bytes, os.PathLike)
or a file-like object (``read`` + ``seek``), ``mode='r'`` and h5py's other keyword
arguments, which are checked as h5py checks them and otherwise ignored where they
tune libhdf5 (caches, locking, allocation): the table in docs/h5py-compat.md.
"""

from __future__ import annotations

import io
import os
import weakref
from typing import Any, Optional

from .. import _native
from .access_args import check_access_args, check_core_driver_args
from .group import Group, wrap
from .references import Reference, RegionReference
from .types import ClosedKeyError, DanglingReferenceError, ReadOnlyError, closed_error

__all__ = ["File", "ReadOnlyError"]


# A file object h5turbo cannot read at all, refused before any read: each is a
# FileObjectError and also what h5py raises for it, so `except` clauses written for
# h5py catch them.
class TextModeError(_native.FileObjectError, TypeError, ValueError):
    """The file object was opened in text mode. h5py raises TypeError (str where bytes
    are expected) or, for UTF-8 text, the UnicodeDecodeError of the first read."""


class UnsupportedOperationError(_native.FileObjectError, io.UnsupportedOperation):
    """The file object cannot do what reading needs: seek (a pipe, a socket) or read (a
    file opened for writing only); h5py raises the object's io.UnsupportedOperation."""


class ClosedFileObjectError(_native.FileObjectError, ValueError):
    """The file object was closed before File opened it: h5py raises the object's
    ValueError ('I/O operation on closed file')."""


# read() returned something other than bytes (str, None): a FileObjectError that is also
# the TypeError h5py raises ('expected bytes, str found'), on every read, not only the first
NotBytesError = _native.NotBytesError


# h5py's modes: 'r' reads; the others write (h5turbo.write writes files)
_WRITE_MODES = ("r+", "w", "w-", "x", "a")
# h5py's file drivers: these read a whole single file, as h5turbo's positional reads do
_SINGLE_FILE_DRIVERS = ("sec2", "stdio", "core", "direct", "windows", "fileobj", "ros3")
# drivers whose files h5turbo cannot read (several files, parallel MPI, S3 requests)
_OTHER_DRIVERS = {
    "family": "a family of member files",
    "split": "split metadata/raw data files",
    "mpio": "parallel MPI-IO (h5turbo reads with threads: open the file by path)",
}
# driver keyword arguments h5py passes on to each driver (H5Pset_fapl_*)
_DRIVER_KWDS = {"sec2": (), "stdio": (), "direct": ("alignment", "block_size", "cbuf_size"),
                "windows": (), "core": ("backing_store", "block_size"), "fileobj": ("fileobj",),
                "ros3": ("aws_region", "secret_id", "secret_key", "session_token")}
# libhdf5's format version bounds, by h5py's names; 'latest' is the newest: HDF5 2.0's
_LIBVERS = ("earliest", "v108", "v110", "v112", "v114", "v200")
_LATEST = "v200"


class File(Group):
    """An HDF5 file opened read-only (h5py's ``File(name, 'r')``).

    ``name`` is a path or a file-like object with ``read`` and ``seek`` (``readinto``
    used when present); a real file (``open(path, 'rb')``) is then read natively through
    its descriptor, anything else (``io.BytesIO``, fsspec files) through its methods,
    one read at a time, while decoding still runs on all cores. Closing the File does
    not close a file object (as h5py).

    Reads never take a lock: one File may be shared by any number of threads.
    """

    def __init__(self, name: Any, mode: Optional[str] = "r", driver: Optional[str] = None,
                 libver: Any = None, userblock_size: Optional[int] = None, swmr: bool = False,
                 rdcc_nslots: Optional[int] = None, rdcc_nbytes: Optional[int] = None,
                 rdcc_w0: Optional[float] = None, track_order: Optional[bool] = None,
                 fs_strategy: Optional[str] = None, fs_persist: bool = False, fs_threshold: int = 1,
                 fs_page_size: Optional[int] = None, page_buf_size: Optional[int] = None,
                 min_meta_keep: int = 0, min_raw_keep: int = 0, locking: Any = None,
                 alignment_threshold: int = 1, alignment_interval: int = 1,
                 meta_block_size: Optional[int] = None, *, track_times: bool = False, **kwds):
        _check_mode(mode, name)
        if userblock_size is not None:
            raise ValueError("User block may only be specified when creating a file")
        if fs_strategy:
            raise ValueError("Unable to set file space strategy of an existing file")
        _check_locking(locking)
        check_access_args(rdcc_nslots, rdcc_nbytes, rdcc_w0, page_buf_size, alignment_threshold,
                          alignment_interval, track_times)
        self._libver = _libver_bounds(libver)
        self._meta_block_size = 2048 if meta_block_size is None else _check_meta_block_size(meta_block_size)
        self._swmr = bool(swmr)
        fileobj = name if hasattr(name, "read") and hasattr(name, "seek") else None
        # h5py's File(path, driver="fileobj", fileobj=obj): obj is read, the path names it
        named = fileobj is None and driver == "fileobj" and kwds.get("fileobj") is not None
        if named:
            fileobj = kwds["fileobj"]
        self._driver = _check_driver(driver, kwds, fileobj)
        self._owned_fileobj = None
        if self._driver == "ros3":  # h5py's read-only S3 / HTTP driver: through fsspec
            url = os.fsdecode(name) if isinstance(name, bytes) else str(name)
            fileobj = self._owned_fileobj = _open_url(url, kwds)
        if fileobj is not None:
            # h5py names a file object's file by its repr; the native side looks for
            # external-link and VDS files next to that name, which has no folder: from
            # the working folder, where libhdf5 looks too
            label = url if self._owned_fileobj is not None else os.fsdecode(os.fspath(name)) if named else repr(fileobj)
            self._label = label  # as given: a path would fold the '//' of a URL
            try:
                _check_fileobj(fileobj)
                self._native_file = _from_fileobj(fileobj, label)
            except BaseException:
                if self._owned_fileobj is not None:
                    self._owned_fileobj.close()
                raise
            self._identity = ("fileobj", id(self))  # two Files on one object: two files, as h5py
            self._fileobj = fileobj  # kept alive as long as the File
        else:
            path = os.fspath(name)
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if "\0" in path:  # as open() refuses it (the system would read a shorter path)
                raise ValueError(f"{path!r}: embedded null byte")
            self._native_file = _native.File(path)
            self._identity = _file_identity(path)
            self._fileobj = None
            self._label = path  # as given, as h5py names it ('./a.h5' stays so)
        self._externals: dict[str, File] = {}  # path -> File, least recently used first
        self._let_go: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        super().__init__(self._native_file.get("/"), self, "/")

    @classmethod
    def in_memory(cls, file_image: Any = None, **kwargs) -> "File":
        """A File reading ``file_image`` (bytes or any buffer: HDF5 file bytes), as
        h5py's ``File.in_memory(file_image)``; without an image h5py creates an empty
        writable file, which h5turbo does not (ReadOnlyError)."""
        for key in ("driver", "locking", "backing_store"):
            if key in kwargs:
                raise TypeError(f"File.in_memory() got an unexpected keyword argument {key!r}")
        if not file_image:
            raise ReadOnlyError("File.in_memory() without a file image creates a file; h5turbo "
                                "only reads: write files with h5turbo.write (or h5py)")
        return cls(io.BytesIO(bytes(file_image)), **kwargs)

    # ------------------------------------------------------------------ file properties
    # Once the file is closed these raise ClosedError (a ValueError), as h5py's do: they
    # ask libhdf5 about an identifier that is no longer valid.

    @property
    def filename(self) -> str:
        """The path it was opened with; for a file object its repr, for driver='ros3'
        the URL (as h5py)."""
        self._check_open()
        return self._path_text

    @property
    def mode(self) -> str:
        self._check_open()
        return "r"

    @property
    def driver(self) -> str:
        """h5py's name of the driver asked for: 'sec2' by default, 'fileobj' for a file
        object. h5turbo reads every single file the same way (positional reads)."""
        self._check_open()
        return self._driver

    @property
    def libver(self) -> tuple[str, str]:
        """The format version bounds asked for, as h5py reports them (h5py on HDF5 2.0:
        'latest' is 'v200'). They bound what libhdf5 writes: a reader reads all."""
        self._check_open()
        return self._libver

    @property
    def meta_block_size(self) -> int:
        """The ``meta_block_size`` asked for (h5py: libhdf5's default, 2048): it sizes
        metadata blocks libhdf5 allocates when writing; a reader allocates none."""
        self._check_open()
        return self._meta_block_size

    @property
    def swmr_mode(self) -> bool:
        """Whether it was opened with ``swmr=True`` (as h5py): see docs/h5py-compat.md."""
        self._check_open()
        return self._swmr

    @property
    def userblock_size(self) -> int:
        self._check_open()
        return self._native_file.userblock_size

    @property
    def attrs(self):
        """The root group's attributes; KeyError once the file is closed, as h5py (which
        opens the root group by name for them)."""
        if self.closed:
            raise closed_error(self, ClosedKeyError)
        return super().attrs

    @property
    def closed(self) -> bool:
        return self._native_file.closed

    def close(self) -> None:
        """Close this file; idempotent. The files its external links opened are let go:
        each closes as soon as no object read through it is left, so an object of a
        target (a NeXus master file's linked data) stays readable after this file is
        closed, as in h5py (libhdf5 keeps a target open while its objects are)."""
        self._externals.clear()
        self._let_go.clear()
        self._native_file.close()
        self._fileobj = None  # given back: h5py keeps no file object after close either
        if self._owned_fileobj is not None:  # opened here for driver='ros3'
            self._owned_fileobj.close()

    def flush(self) -> None:
        """Nothing is buffered for writing: nothing to do (h5py's flush, a file read-only);
        ClosedError (a RuntimeError, as h5py's) once the file is closed."""
        self._check_open()

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self):
        if self.closed:
            return "<Closed HDF5 file>"
        return f'<HDF5 file "{os.path.basename(self.filename)}" (mode {self.mode})>'

    # ------------------------------------------------------------------ internals

    @property
    def _path_text(self) -> str:
        """The file as messages name it (what ``filename`` gives while it is open)."""
        if self._label is not None:
            return self._label
        return os.fspath(self._native_file.path)  # the native side gives a pathlib.Path

    def _root_native(self):
        return self._obj

    def _see_refreshed(self, obj) -> None:
        """After a dataset of this file was refreshed, look up new objects in the file as
        that refresh read it (a SWMR writer's new shape, members, attributes), as h5py
        finds them; a dataset of another file (an external link's) changes nothing."""
        if os.fspath(obj.file_path) == os.fspath(self._native_file.path):
            self._obj = obj.root()

    def _dereference(self, ref: Reference):
        """The object a reference names (for a region reference: its dataset), named by
        a path to it as h5py names dereferenced objects (None if no link reaches it)."""
        if not ref:
            raise ValueError("Invalid HDF5 object reference (null reference)")
        address = ref.address
        if isinstance(ref, RegionReference):
            address = self._region_of(ref)[0]
        try:
            native_obj, path = self._native_file.dereference(address)
        except _native.FormatError as err:
            raise DanglingReferenceError(str(err)) from err
        return wrap(native_obj, self, path)

    def _region_of(self, ref: RegionReference):
        """(dataset address, kind, data) of a region reference: kept by one made with
        ``regionref``, read from the global heap for one read from the file."""
        if ref._region is not None:
            return ref._region
        return self._native_file.region(*ref.heap_id)

    def _open_external(self, filename: str) -> "File":
        """The target file of an external link, found where libhdf5 looks (the native
        lookup: HDF5_EXT_PREFIX, next to this file, the working folder; KeyError when
        it is nowhere), opened once and closed with this file. The last
        MAX_OPEN_EXTERNALS are kept open; an older one stays open while objects read
        through it are alive, and closes when they are gone (as libhdf5 keeps a target
        open only while its objects are), so a file with thousands of links does not
        hold a descriptor each."""
        found = self._native_file.external_link_file(filename)
        # kept by the real path (one opening per file, however it is named), opened by
        # the path found: the target's own links are looked for next to that (a file
        # that is a symbolic link into a store, as git-annex and DataLad keep them), and
        # it is the file's name (h5py's filename)
        path = os.path.realpath(found)
        if _file_identity(path) == self._identity:  # a link into this same file: no second opening
            return self
        target = self._externals.pop(path, None)
        if target is None or target.closed:
            target = self._let_go.pop(path, None)
        if target is None or target.closed:
            target = File(found)
        self._externals[path] = target  # now the most recent
        while len(self._externals) > MAX_OPEN_EXTERNALS:
            oldest, let_go = next(iter(self._externals.items()))
            del self._externals[oldest]
            self._let_go[oldest] = let_go
        return target

    # A File holds no reference to itself (objects hold their File; the File is its own
    # `file`): with no cycle, reference counting alone frees a File nobody holds, which
    # closes it, at once.
    @property
    def _file(self) -> "File":
        return self

    @_file.setter
    def _file(self, value: "File") -> None:
        if value is not self:
            raise AttributeError("a File is its own file")


# External link targets kept open by a File, at most (see File._open_external).
MAX_OPEN_EXTERNALS = 32


class _RangedFsspecFile:
    """An fsspec file of an asynchronous (remote) file system opened without a cache
    (``cache_type="none"``: every read a ranged request), read by ranges:
    ``pread(n, offset)`` is ``fs.cat_file(path, offset, offset + n)``, which may be
    called from several threads at once (fsspec runs the requests on its event loop and
    each caller waits without the GIL), so the native reader keeps several of its
    coalesced ranged requests in flight. seek/read stay the object's (the size is asked
    that way)."""

    def __init__(self, f):
        self._f = f
        self._fs, self._path = f.fs, f.path

    def seek(self, *args):
        return self._f.seek(*args)

    def read(self, n=-1):
        return self._f.read(n)

    def tell(self):
        return self._f.tell()

    def pread(self, n: int, offset: int) -> bytes:
        return self._fs.cat_file(self._path, start=offset, end=offset + n)


def _check_fileobj(fileobj) -> None:
    """Refuse, before any read, an object that cannot give HDF5 bytes: one opened in
    text mode, or closed."""
    if isinstance(fileobj, io.TextIOBase):
        raise TextModeError(f"{fileobj!r}: the file object is opened in text mode; an HDF5 file "
                            "is read as bytes: open it with mode 'rb'")
    if getattr(fileobj, "closed", False) is True:
        raise ClosedFileObjectError(f"{fileobj!r}: I/O operation on closed file")


def _from_fileobj(fileobj, label: str):
    """The native file reading `fileobj`; an object whose seek or read raised
    io.UnsupportedOperation (a pipe, a file opened for writing) gives
    UnsupportedOperationError. seekable() is not asked first: an io.RawIOBase subclass
    may implement seek and leave seekable() False, and h5py reads it."""
    try:
        return _native.File.from_fileobj(_ranged(fileobj), label)
    except _native.FileObjectError as exc:
        if isinstance(exc.__cause__, io.UnsupportedOperation):
            # the native message names the call that failed: "seek(...) failed"
            cannot_seek = "seek(" in str(exc)
            hint = " (HDF5 is read at any offset: read the stream into io.BytesIO first)" if cannot_seek else ""
            raise UnsupportedOperationError(f"{exc}{hint}") from exc.__cause__
        raise


def _ranged(fileobj):
    """A file object to read concurrently where it allows: an uncached fsspec file of an
    async file system (HTTP, S3, GCS ...) becomes a _RangedFsspecFile. A cached one is
    read through its cache, one read at a time: with fsspec's default read-ahead of
    5 MiB blocks, a read-all costs fewer requests than the reader's own ranges
    (benchmarks/results/fileobj_http.md); anything else as is."""
    fs = getattr(fileobj, "fs", None)
    uncached = getattr(getattr(fileobj, "cache", None), "name", None) == "none"
    if uncached and getattr(fs, "async_impl", False) and isinstance(getattr(fileobj, "path", None), str) \
            and hasattr(fs, "cat_file") and getattr(fileobj, "mode", "rb") == "rb":
        return _RangedFsspecFile(fileobj)
    return fileobj


def _open_url(url: str, kwds: dict):
    """driver='ros3': the object at an http(s):// or s3:// URL as an fsspec file (h5py's
    ros3 driver reads with ranged GETs too). s3:// needs s3fs, with the credentials and
    region h5py's keyword arguments give (bytes, as h5py takes them)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in ("http", "https", "s3"):
        raise ValueError(f'{url}: S3 location must begin with either "https://", "http://", or "s3://"')
    try:
        import fsspec
    except ImportError:
        raise _native.UnsupportedError("driver='ros3' reads through fsspec: pip install fsspec aiohttp") from None

    def text(key):
        value = kwds.get(key)
        return os.fsdecode(value) if isinstance(value, bytes) else value

    options = {}
    if scheme == "s3":
        if text("secret_id"):
            options.update(key=text("secret_id"), secret=text("secret_key"), token=text("session_token"))
        else:
            options["anon"] = True
        if text("aws_region"):
            options["client_kwargs"] = {"region_name": text("aws_region")}
    try:
        return fsspec.open(url, "rb", **options).open()
    except ImportError as exc:  # s3fs or aiohttp missing
        raise _native.UnsupportedError(f"driver='ros3' for {url}: {exc}") from None


def _file_identity(path: str) -> tuple:
    """One file however it is reached (symbolic or hard link), as libhdf5 tells files
    apart: its device and inode."""
    try:
        stat = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("inode", stat.st_dev, stat.st_ino)


def _check_locking(locking: Any) -> None:
    """h5py's accepted values (file locking itself is libhdf5's; h5turbo only reads)."""
    if locking is None or locking == "best-effort":
        return
    if isinstance(locking, str) and locking in ("true", "false"):
        return
    # h5py compares with == True / == False: numpy bools, 1.0 and 0 are those too
    if not isinstance(locking, str) and (locking == True or locking == False):  # noqa: E712
        return
    raise ValueError(f"Unsupported locking value: {locking}")


def _check_mode(mode: Optional[str], name: Any) -> None:
    if mode in ("r", None):
        return
    if mode in _WRITE_MODES:
        raise ReadOnlyError(f"{_shown(name)}: h5turbo opens files read-only: mode must be 'r', not {mode!r}; "
                            "to write files use h5turbo.write (or h5py)")
    raise ValueError(f"Invalid mode {mode!r}; must be one of r, r+, w, w-, x, a "
                     "(h5turbo reads: only 'r')")


def _shown(name: Any) -> str:
    """The file as an error names it: its path, or the object's repr."""
    try:
        return os.fsdecode(name)
    except TypeError:
        return repr(name)


def _check_meta_block_size(size: Any) -> int:
    """The size as h5py takes it (an unsigned 64-bit hsize_t: OverflowError outside)."""
    size = int(size)
    if not 0 <= size < 2**64:
        raise OverflowError(f"meta_block_size {size} is not an unsigned 64-bit size")
    return size


def _libver_bounds(libver: Any) -> tuple[str, str]:
    """h5py's libver property for what was passed: (low, high), 'latest' named as the
    newest version; ValueError for a name h5py does not know (h5py: KeyError) and for
    a low bound above the high one, as h5py."""
    if libver is None:
        return ("earliest", _LATEST)
    low, high = (libver, "latest") if isinstance(libver, str) else tuple(libver)
    names = []
    for bound in (low, high):
        if bound != "latest" and bound not in _LIBVERS:
            raise ValueError(f"unknown libver {bound!r}; one of {', '.join(_LIBVERS)}, latest")
        names.append(_LATEST if bound == "latest" else bound)
    if _LIBVERS.index(names[0]) > _LIBVERS.index(names[1]):
        raise ValueError("Invalid (low,high) combination of library version bound")
    return (names[0], names[1])


def _check_driver(driver: Optional[str], kwds: dict, fileobj: Any) -> str:
    """The driver name File reports, after h5py's checks of the driver and its
    keyword arguments. Single-file drivers all read the same here."""
    if fileobj is not None:
        if driver not in (None, "fileobj"):
            raise ValueError("Driver must be 'fileobj' for file-like object if specified.")
        if kwds.get("fileobj", fileobj) is not fileobj:
            raise ValueError("Invalid value of 'fileobj' argument; "
                             "must equal to file-like object if specified.")
        kwds = {k: v for k, v in kwds.items() if k != "fileobj"}
        driver = "fileobj"
    elif driver == "fileobj":
        raise ValueError("the 'fileobj' driver needs a file-like object as name")
    if driver is None:
        if kwds:
            raise TypeError(f"'{next(iter(kwds))}' is an invalid keyword argument for this function")
        return "sec2"
    if driver in _OTHER_DRIVERS:
        raise _native.UnsupportedError(f"driver {driver!r} ({_OTHER_DRIVERS[driver]}) is not "
                                       "supported by h5turbo")
    if driver not in _SINGLE_FILE_DRIVERS:
        raise ValueError(f"Unknown driver type {driver!r}")
    unknown = [k for k in kwds if k not in _DRIVER_KWDS[driver]]
    if unknown:
        raise TypeError(f"'{unknown[0]}' is an invalid keyword argument for driver {driver!r}")
    if driver == "core":
        check_core_driver_args(kwds)
    return driver
