"""``h5turbo repack``: rewrite an HDF5 file with new chunks and compression, reading in
parallel with h5turbo and writing in parallel with :func:`h5turbo.write`.

Groups, attributes (object references in them remapped to the new file), dtypes,
fill values and links (soft, external, and hard links to one object) are kept. A
dataset is re-encoded when it is chunkable numeric data (numbers, booleans, enums,
fixed-size bytes; at least one dimension; not compact); anything else (variable-length
strings, compounds, references, scalars, compact layout, named datatypes, types numpy
has no dtype for, datasets h5turbo's reader cannot open) is copied through h5py
(libhdf5's H5Ocopy) as it is. The new file is written to a temporary
file in DST's folder, checked (every re-encoded dataset read back with h5turbo and
compared with SRC), and renamed to DST only then, with DST's permissions (a symbolic
link at DST keeps its target, which is replaced); on any failure or interrupt the
temporary file is removed. SRC is opened read-only. Attributes keep their exact
stored types and bytes (string padding and character set included); the root group,
every group and every dataset keep SRC's link and attribute creation-order flags
(tracked, indexed), each as SRC has it; link names keep their bytes (UTF-8 or not) and
character set; the user block is kept. A failure while copying is a RepackError naming
SRC and the object (the original error as its __cause__).
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import math
import os
import sys
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from .._native import Error as _Error, UnsupportedError
from .atomic import replacing
from .write import ArgumentError, CODECS, auto_chunks, check_threads, is_count, write
from ..objects.filters import FILTERS, filter_id

__all__ = ["repack", "KEEP"]

KEEP = "keep"  # compression: keep each dataset's own codec where h5turbo can write it

# filter id -> codec name of h5turbo.write, for compression="keep": the one-filter codecs
# (blosc and bitshuffle carry a sub-codec in their client data and are re-encoded)
_KEEPABLE = {filter_id(name): codec for name, codec in
             (("deflate", "gzip"), ("lzf", "lzf"), ("zstd", "zstd"), ("lz4", "lz4"))}
_SHUFFLE, _FLETCHER32 = filter_id("shuffle"), filter_id("fletcher32")
_SLAB_BYTES = 256 << 20
# what a variable-length element is counted as in a slab (its size is known only once
# read): 65536 strings or sequences at a time
_VLEN_ELEMENT_BYTES = 4096


def repack(src, dst, chunks="auto", compression=KEEP, level=None, datasets: Optional[str] = None,
           threads: Optional[int] = None, verify: bool = True,
           progress: Optional[Callable[[int, int], None]] = None) -> dict:
    """Rewrite SRC into DST. ``chunks``: "auto" (:func:`h5turbo.auto_chunks`), "keep"
    (SRC's chunk shape where it has one, else auto) or a shape tuple (for datasets of
    its rank, clipped to their shape; datasets of other ranks get auto chunks). ``compression``:
    "keep" or a codec name of :func:`h5turbo.write` (None: uncompressed).
    ``datasets``: a glob on the dataset path ("/X/*"); others are copied as they are.
    Returns a summary {"reencoded": [...], "copied": [...]}.
    """
    import h5py

    _register_filter_plugins()
    src, dst = Path(os.fsdecode(src)), Path(os.fsdecode(dst))  # bytes names too, as h5py
    if not (chunks in ("auto", "keep") or _is_chunk_shape(chunks)):
        raise ArgumentError(f"{src}: chunks={chunks!r}: 'auto', 'keep' or a shape of positive integers")
    if compression != KEEP and compression not in CODECS:
        raise ArgumentError(f"unknown compression {compression!r}")
    if level is not None and compression == KEEP:
        raise ArgumentError(f"level={level} needs a compression (with 'keep' each dataset keeps its own level)")
    threads = check_threads(threads, str(dst))
    if src.is_dir():
        raise IsADirectoryError(f"{src}: is a directory, not a file")
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such file")
    if dst.exists() and dst.samefile(src):  # a symbolic or a hard link to SRC too
        raise ArgumentError(f"{dst}: DST must differ from SRC")
    if not dst.parent.is_dir():
        raise ArgumentError(f"{dst.parent}: no such folder for DST")
    try:
        fin = h5py.File(src, "r")
    except OSError as exc:
        raise OSError(f"{src}: cannot be opened as HDF5 ({exc})") from None
    with fin, replacing(dst) as tmp:
        with _new_file_like(fin, tmp) as fout:
            job = _Repack(fin, fout, src, chunks, compression, level, datasets, threads, progress)
            with contextlib.closing(job):
                job.run()
        _copy_user_block(src, tmp, fin.userblock_size)
        if verify:
            job.verify(tmp)
    return {"reencoded": [_os_name(p) for p in job.reencoded],
            "copied": [_os_name(p) for p in job.copied]}


def _is_chunk_shape(chunks) -> bool:
    """A tuple of integers (numpy's too), each at least 1: not floats, strings or bools."""
    return (isinstance(chunks, tuple) and len(chunks) > 0
            and all(is_count(c) and c >= 1 for c in chunks))


def _register_filter_plugins() -> None:
    """Objects not re-encoded are copied by libhdf5 (H5Ocopy), which decodes the chunks
    of some (variable-length data) and so needs their filters: hdf5plugin's (blosc,
    zstd, lz4, bitshuffle, ...) are registered with libhdf5 when it is installed."""
    try:
        import hdf5plugin  # noqa: F401  (importing it registers the filters)
    except ImportError:
        pass


def _copy_user_block(src: Path, dst: Path, size: int) -> None:
    """The bytes before the HDF5 superblock (a user block: libhdf5 leaves them zero)."""
    if size:
        with open(src, "rb") as fin, open(dst, "r+b") as fout:
            fout.write(fin.read(size))


def _libver(f) -> tuple:
    """The lower format bound SRC was written with, read from its superblock version
    (the bounds of a read-only handle are the default ones whatever the file holds):
    a version 3 superblock means 1.10 formats (fixed and extensible array chunk
    indexes, SWMR), kept; otherwise at least v108 (attributes over 64 KiB need dense
    storage)."""
    try:
        with open(f.filename, "rb") as raw:
            raw.seek(f.userblock_size + 8)
            version = raw.read(1)[0]
    except (OSError, IndexError):
        version = 0
    return ("v110" if version >= 3 else "v108", "latest")


_LIBVER_BOUNDS = {"v108": "LIBVER_V18", "v110": "LIBVER_V110", "latest": "LIBVER_LATEST"}


def _new_file_like(fin, path: Path):
    """DST opened for writing with SRC's format bounds, user block size and root group
    creation-order flags (links and attributes each as SRC has them: h5py.File's
    track_order= sets both, tracked and indexed, or neither)."""
    import h5py
    from h5py import h5f, h5p
    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_libver_bounds(*(getattr(h5f, _LIBVER_BOUNDS[bound]) for bound in _libver(fin)))
    fcpl = h5p.create(h5p.FILE_CREATE)
    fcpl.set_userblock(fin.userblock_size)
    fcpl.set_obj_track_times(False)  # as h5py.File makes it: no modification times
    _copy_order_flags(fin["/"].id.get_create_plist(), fcpl)
    return h5py.File(h5f.create(os.fsencode(path), h5f.ACC_TRUNC, fapl=fapl, fcpl=fcpl))


def _copy_order_flags(source_plist, new_plist) -> None:
    """SRC's link and attribute creation-order flags (0, tracked, tracked | indexed)
    onto a new group's or file's creation property list, each on its own."""
    new_plist.set_link_creation_order(source_plist.get_link_creation_order())
    new_plist.set_attr_creation_order(source_plist.get_attr_creation_order())


def _group_plist_like(group):
    import h5py
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    _copy_order_flags(group.id.get_create_plist(), gcpl)
    return gcpl


def _link_plist(cset: int):
    """A link creation property list giving the new link SRC's character set."""
    import h5py
    lcpl = h5py.h5p.create(h5py.h5p.LINK_CREATE)
    lcpl.set_char_encoding(cset)
    return lcpl


def _copy_plist_without_attrs():
    import h5py
    copypl = h5py.h5p.create(h5py.h5p.OBJECT_COPY)
    copypl.set_copy_object(h5py.h5o.COPY_WITHOUT_ATTR_FLAG)  # attributes come later, remapped
    return copypl


def _join(parent: bytes, name: bytes) -> bytes:
    """A path as the bytes stored in the file (link names need not be UTF-8)."""
    return parent.rstrip(b"/") + b"/" + name


def _display(path) -> str:
    """A path for messages: bytes that are not UTF-8 written as escapes (\\xff), which
    print on any terminal."""
    return path.decode("utf-8", "backslashreplace") if isinstance(path, bytes) else path


def _os_name(path) -> str:
    """A path for the summary and for matching --datasets: bytes that are not UTF-8 as
    surrogates, as os.fsdecode gives names and Python decodes argv
    (``.encode("utf-8", "surrogateescape")`` gives the bytes back)."""
    return path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else path


def _h5py_spelling(name: bytes, cset: int) -> Optional[str]:
    """The str that h5py's high level turns into exactly this link: the same bytes and
    the character set it picks (ASCII for an ASCII name, else UTF-8); None if none does."""
    import h5py
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:
        return None
    picked = h5py.h5t.CSET_ASCII if text.isascii() else h5py.h5t.CSET_UTF8
    return text if picked == cset else None


def _unused_name(group) -> str:
    """A link name not taken in ``group`` (a dataset is written there, then renamed)."""
    n = 0
    while group.id.links.exists(f".h5turbo-repack-{n}".encode()):
        n += 1
    return f".h5turbo-repack-{n}"


@functools.lru_cache(maxsize=None)
def _attr_order_group_class():
    """An h5py.Group whose create_dataset gives the new dataset the attribute
    creation-order flags it was made with, exactly: h5py's track_order= sets tracked and
    indexed together (or neither), and h5turbo.write creates its dataset through
    create_dataset. track_order=None keeps h5py from applying its default over them."""
    import h5py

    class AttrOrderGroup(h5py.Group):
        def __init__(self, group, attr_order: int):
            super().__init__(group.id)
            self._attr_order = attr_order

        def create_dataset(self, name, *args, **kwds):
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_attr_creation_order(self._attr_order)
            kwds.update(dcpl=dcpl, track_order=None)
            return super().create_dataset(name, *args, **kwds)

    return AttrOrderGroup


@contextlib.contextmanager
def _naming(src: Path, path, attribute: Optional[bytes] = None):
    """A failure while copying an object (or one of its attributes) as a RepackError
    naming SRC and the object (h5py's and libhdf5's messages name neither), on one line,
    still of the failure's kind (a RuntimeError stays one). One already named passes;
    MemoryError and interrupts pass as they are."""
    try:
        yield
    except (RepackError, MemoryError):
        raise
    except Exception as exc:
        what = _display(path) if attribute is None else f"attribute {_display(attribute)!r} of {_display(path)}"
        detail = " ".join(str(exc).split()) or "failed"
        if type(exc) not in (OSError, RuntimeError):  # h5py's: the message alone says it
            detail = f"{type(exc).__name__}: {detail}"
        raise _repack_error_like(type(exc))(f"{src}: {what}: {detail}") from exc


@functools.lru_cache(maxsize=None)
def _repack_error_like(kind: type) -> type:
    """RepackError that is also a ``kind`` (RuntimeError, KeyError, ...): callers that
    catch the original kind still catch it."""
    if issubclass(RepackError, kind):
        return RepackError
    try:
        return type("RepackError", (RepackError, kind), {"__module__": __name__})
    except TypeError:  # a kind whose instance layout does not mix with OSError's
        return RepackError


class _Repack:
    def __init__(self, fin, fout, src_path, chunks, compression, level, pattern, threads, progress):
        self.fin, self.fout, self.src_path = fin, fout, src_path
        self.chunks, self.compression, self.level = chunks, compression, level
        self.pattern, self.threads, self.progress = pattern, threads, progress
        self.done: dict = {}  # SRC object address -> DST path (hard links)
        self.deferred_attrs: list = []  # (src obj, dst path): after all objects exist
        self.deferred_refs: list = []  # datasets of references, remapped at the end
        self.reencoded: list = []
        self.copied: list = []
        self.total = self.written = 0
        self._turbo = None  # SRC opened with h5turbo, once a dataset needs it

    def close(self) -> None:
        if self._turbo is not None:
            self._turbo.close()

    # ----------------------------------------------------------------- walking
    # Names and paths are the bytes stored in the file: h5py's high level fails on link
    # names that are not UTF-8 ("name in group" decodes them), its low level takes bytes.

    def run(self) -> None:
        self.total = self._reencodable_bytes()
        # the root group, not the file: a file's creation property list reports no
        # attribute creation order whatever the root group tracks
        self.deferred_attrs.append((self.fin["/"], b"/"))
        self._copy_members(self.fin, self.fout, b"/")
        for obj, path in self.deferred_refs:
            with _naming(self.src_path, path):
                _remap_dataset_refs(self.fout[path], obj, self.fin, self.fout)
        for obj, path in self.deferred_attrs:
            self._copy_attrs(obj, self.fout[path], path)

    def _copy_members(self, gin, gout, path: bytes) -> None:
        for name in gin.id:  # as h5py lists them: in creation order where it is tracked
            member = _join(path, name)
            with _naming(self.src_path, member):
                self._copy_link(gin, gout, name, member)

    def _copy_link(self, gin, gout, name: bytes, path: bytes) -> None:
        from h5py import h5l
        info = gin.id.links.get_info(name)
        lcpl = _link_plist(info.cset)
        if info.type == h5l.TYPE_SOFT:
            gout.id.links.create_soft(name, gin.id.links.get_val(name), lcpl=lcpl)
        elif info.type == h5l.TYPE_EXTERNAL:
            filename, target = gin.id.links.get_val(name)
            gout.id.links.create_external(name, filename, target, lcpl=lcpl)
        elif info.type == h5l.TYPE_HARD:
            self._copy_object(gin, gout, name, path, info.cset)
        else:
            raise UnsupportedError(f"a user-defined link (type {info.type}), which repack does not copy")

    def _copy_object(self, gin, gout, name: bytes, path: bytes, cset: int) -> None:
        import h5py
        obj = gin[name]
        key = _object_key(obj)
        lcpl = _link_plist(cset)
        if key in self.done:  # a second hard link to an object already copied
            gout.id.links.create_hard(name, self.fout.id, self.done[key], lcpl=lcpl)
            return
        self.done[key] = path
        self.deferred_attrs.append((obj, path))
        if isinstance(obj, h5py.Group):
            sub = h5py.Group(h5py.h5g.create(gout.id, name, lcpl=lcpl, gcpl=_group_plist_like(obj)))
            self._copy_members(obj, sub, path)
        elif isinstance(obj, h5py.Dataset) and self._reencodable(obj, path):
            self._reencode(obj, gout, name, path, cset)
            self.reencoded.append(path)
        elif isinstance(obj, h5py.Dataset) and _vlen_with_fill(obj):
            _copy_vlen_with_fill(obj, gout, name, lcpl)
            self.copied.append(path)
        else:  # named datatypes, and datasets we do not re-encode: libhdf5 copies them
            h5py.h5o.copy(gin.id, name, gout.id, name, copypl=_copy_plist_without_attrs(), lcpl=lcpl)
            if isinstance(obj, h5py.Dataset) and _holds_refs(_numpy_dtype(obj)):
                self.deferred_refs.append((obj, path))
            if isinstance(obj, h5py.Dataset):
                self.copied.append(path)

    def _copy_attrs(self, src_obj, dst_obj, path: bytes) -> None:
        """Every attribute of ``src_obj`` onto ``dst_obj``, in the order h5py lists them
        (creation order where it is tracked); a failure names the attribute."""
        for name in _attr_names(src_obj):
            with _naming(self.src_path, path, attribute=name):
                _copy_attr(src_obj, dst_obj, name, self.fin, self.fout)

    # ------------------------------------------------------------- datasets

    def _reencodable(self, ds, path: bytes) -> bool:
        """Whether h5turbo reads and re-encodes the dataset at ``path``."""
        if self.pattern is not None and not fnmatch.fnmatchcase(_os_name(path), self.pattern):
            return False
        if self.compression == KEEP and not _keepable_filters(ds):
            return False  # copied with its own filters rather than silently decompressed
        return _numeric_chunkable(ds) and self._turbo_dataset(path) is not None

    def _turbo_dataset(self, path):
        """SRC's dataset at ``path`` opened with h5turbo, or None where h5turbo cannot
        open it (a name libhdf5 takes that h5turbo's reader refuses, such as a soft link
        to a path that is not UTF-8 in the same group): libhdf5 copies those."""
        from ..objects.file import File
        if self._turbo is None:
            self._turbo = File(self.src_path)
        try:
            return self._turbo[path]
        except (_Error, KeyError):
            return None

    def _reencodable_bytes(self) -> int:
        total = []

        def visit(name, obj):  # h5py gives a name that is not UTF-8 as bytes
            import h5py
            path = b"/" + (name if isinstance(name, bytes) else name.encode())
            with _naming(self.src_path, path):
                if isinstance(obj, h5py.Dataset) and self._reencodable(obj, path):
                    total.append(obj.size * obj.dtype.itemsize)
        self.fin.visititems(visit)
        return sum(total)

    def _codec(self, ds) -> tuple:
        """(compression, level, shuffle, fletcher32) for the new dataset."""
        if self.compression != KEEP:
            # a new codec replaces the old one and its shuffle; the checksum stays
            return self.compression, self.level, False, bool(ds.fletcher32)
        plist = ds.id.get_create_plist()
        codec, level, shuffle = None, None, False
        for i in range(plist.get_nfilters()):
            fid, _flags, values, _name = plist.get_filter(i)
            if fid == _SHUFFLE:
                shuffle = True
            elif fid in _KEEPABLE:
                codec = _KEEPABLE[fid]
                if CODECS[codec] is not None and len(values):  # a codec with a level
                    level = int(values[0])
                    if codec == "zstd" and level >= 1 << 31:  # client data is unsigned: zstd's negative levels
                        level -= 1 << 32
        if codec == "gzip" and level is not None:
            level = min(level, 9)
        return codec, level, shuffle, bool(ds.fletcher32)

    def _new_chunks(self, ds) -> tuple:
        shape = ds.shape
        if self.chunks == "keep" and ds.chunks:
            return ds.chunks
        if self.chunks in ("auto", "keep", None):
            return auto_chunks(shape, ds.dtype.itemsize)
        chunks = tuple(int(c) for c in self.chunks)
        if len(chunks) != len(shape):  # the shape is for datasets of its rank
            return auto_chunks(shape, ds.dtype.itemsize)
        return tuple(max(1, min(c, s)) for c, s in zip(chunks, shape))

    def _reencode(self, ds, gout, name: bytes, path: bytes, cset: int) -> None:
        """Written by h5turbo.write: with SRC's attribute creation-order flags, and under
        the link name h5py spells as SRC's (bytes and character set), else under a
        temporary name then moved to SRC's."""
        compression, level, shuffle, fletcher32 = self._codec(ds)
        chunks = self._new_chunks(ds)
        fill = ds.fillvalue if _fill_is_set(ds) else None
        maxshape = ds.maxshape if ds.maxshape != ds.shape else None
        plist = ds.id.get_create_plist()
        fill_time = {0: "alloc", 1: "never", 2: "ifset"}.get(plist.get_fill_time())
        target = _attr_order_group_class()(gout, plist.get_attr_creation_order())
        spelled = _h5py_spelling(name, cset)
        written_as = spelled if spelled is not None else _unused_name(gout)
        source = self._turbo_dataset(path)
        step = chunks[0] * max(1, _slab_rows(ds.shape, ds.dtype.itemsize) // chunks[0])  # whole chunk rows

        def slabs():
            for start in range(0, ds.shape[0], step):
                yield source.read(np.s_[start:start + step], threads=self.threads)

        before = self.written

        def advance(done):
            self.written = before + done
            if self.progress:
                self.progress(self.written, self.total)

        write(target, written_as, slabs(), chunks=chunks, compression=compression, level=level,
              shuffle=shuffle, threads=self.threads, shape=ds.shape, dtype=ds.dtype,
              fillvalue=fill, fletcher32=fletcher32, progress=advance, maxshape=maxshape,
              fill_time=fill_time)
        if spelled is None:
            gout.id.links.move(written_as.encode(), gout.id, name, lcpl=_link_plist(cset))

    # ---------------------------------------------------------------- checks

    def verify(self, tmp: Path) -> None:
        """Every re-encoded dataset reads back (with h5turbo) equal to SRC."""
        from ..objects.file import File
        with File(self.src_path) as a, File(tmp) as b:
            for name in self.reencoded:
                x, y = a[name], b[name]
                if x.shape != y.shape or x.dtype != y.dtype:
                    raise RepackError(f"{tmp}: {_display(name)} came out {y.shape} {y.dtype}, "
                                      f"SRC has {x.shape} {x.dtype}")
                step = _slab_rows(x.shape, x.dtype.itemsize)
                for start in range(0, x.shape[0], step):
                    sel = np.s_[start:start + step]
                    if not np.array_equal(x.read(sel), y.read(sel), equal_nan=x.dtype.kind in "fc"):
                        raise RepackError(f"{tmp}: {_display(name)} differs from SRC in rows {start}..{start + step}")


class RepackError(_Error):
    """An object of SRC could not be copied, or the new file did not verify against
    SRC; DST was not written."""


def _object_key(obj) -> tuple:
    import h5py
    info = h5py.h5o.get_info(obj.id)
    token = getattr(info, "token", None)
    return (info.fileno, token if token is not None else info.addr)


def _keepable_filters(ds) -> bool:
    """The pipeline is one h5turbo.write makes again as it is: shuffle, one codec,
    fletcher32, in that order (h5py's), no lz4 block size of its own. Any other is
    copied as it is, not silently reordered or re-parametrized."""
    plist = ds.id.get_create_plist()
    filters = [plist.get_filter(i) for i in range(plist.get_nfilters())]
    ids = [f[0] for f in filters]
    if not all(fid in (*_KEEPABLE, _SHUFFLE, _FLETCHER32) for fid in ids):
        return False
    rank = [0 if fid == _SHUFFLE else 2 if fid == _FLETCHER32 else 1 for fid in ids]
    if rank != sorted(rank) or len(set(rank)) != len(rank):
        return False
    return not any(fid == filter_id("lz4") and len(values) and int(values[0]) != 0
                   for fid, _flags, values, _name in filters)


def _fill_is_set(ds) -> bool:
    import h5py
    return ds.id.get_create_plist().fill_value_defined() == h5py.h5d.FILL_VALUE_USER_DEFINED


def _slab_rows(shape: tuple, element_bytes: int) -> int:
    """Rows of a dataset of `shape` that make one slab of about _SLAB_BYTES."""
    return max(1, _SLAB_BYTES // max(1, element_bytes * math.prod(int(n) for n in shape[1:])))


def _vlen_with_fill(ds) -> bool:
    """Variable-length data (strings, sequences) with a fill value of its own: libhdf5
    2.0's H5Ocopy keeps that fill value's global heap ID, which points into SRC, and
    the copy's creation properties can then not be read ("bad global heap collection
    signature"; netCDF-C's string variables have one)."""
    dt = _numpy_dtype(ds)
    return dt is not None and dt.hasobject and not _holds_refs(dt) and _fill_is_set(ds)


def _copy_vlen_with_fill(ds, gout, name: bytes, lcpl) -> None:
    """The dataset made again with its own creation properties (chunks, filters, fill
    value, in memory here) and type, its values copied in slabs as stored."""
    import h5py
    from h5py import h5s
    if ds.shape:
        maxshape = tuple(h5s.UNLIMITED if m is None else m for m in ds.maxshape)
        space = h5s.create_simple(ds.shape, maxshape)
    else:
        space = h5s.create(h5s.SCALAR)
    out = h5py.h5d.create(gout.id, name, ds.id.get_type(), space, dcpl=ds.id.get_create_plist(), lcpl=lcpl)
    if not ds.shape:
        _copy_as_stored(ds.id, out, h5s.ALL, ())
        return
    rows = _slab_rows(ds.shape, _VLEN_ELEMENT_BYTES)
    for start in range(0, ds.shape[0] if ds.size else 0, rows):
        count = (min(rows, ds.shape[0] - start),) + ds.shape[1:]
        _copy_as_stored(ds.id, out, (start,) + (0,) * (ds.ndim - 1), count)


def _copy_as_stored(source, target, offset, count: tuple) -> None:
    """One block of a dataset copied with the dataset's own type, so nothing is
    converted (through numpy's types, fixed strings inside variable-length values come
    back NULLPAD). ``offset`` h5s.ALL: the whole (scalar) dataset."""
    from h5py import h5s
    mtype = source.get_type()  # variable-length parts in their in-memory form
    values = np.empty(count, dtype=np.dtype((np.void, mtype.get_size())))
    if offset is h5s.ALL:
        memory = source.get_space()
        read_spaces = write_spaces = (h5s.ALL, h5s.ALL)
    else:
        memory = h5s.create_simple(count)
        read_spaces = (memory, _block(source, offset, count))
        write_spaces = (memory, _block(target, offset, count))

    def read(lib):
        if lib is None:
            return source.read(*read_spaces, values, mtype=mtype)
        return lib.H5Dread(source.id, mtype.id, *(s.id for s in read_spaces), 0, values.ctypes.data)

    def write(lib):
        if lib is None:
            return target.write(*write_spaces, values, mtype=mtype)
        return lib.H5Dwrite(target.id, mtype.id, *(s.id for s in write_spaces), 0, values.ctypes.data)
    _through_memory(values, mtype, memory, read, write)


def _block(dataset, offset: tuple, count: tuple):
    """The dataset's space with the block at ``offset`` of ``count`` selected."""
    space = dataset.get_space()
    space.select_hyperslab(offset, count)
    return space


def _through_memory(values, mtype, memory_space, read, write) -> None:
    """``read`` fills ``values`` (of type ``mtype``, the stored type in memory), then
    ``write`` stores them; each takes libhdf5 (call it, return its status) or None
    (h5py's own call, which raises with libhdf5's message). Values with variable-length
    parts are moved by libhdf5's calls and freed after: h5py's read of those goes
    through a conversion buffer whose variable-length data it never frees (a leak of
    twice the values' size per call). Others go through h5py, which converts nothing
    when the memory type is the stored one."""
    if not _has_variable_parts(mtype):
        read(None)
        write(None)
        return
    from h5py._objects import phil  # h5py's lock around every libhdf5 call
    lib = _libhdf5()
    with phil:
        if read(lib) < 0:
            read(None)  # h5py's call: raises with libhdf5's message (or reads after all)
        try:
            if write(lib) < 0:
                write(None)  # h5py's call: raises with libhdf5's message (or writes after all)
        finally:
            lib.H5Treclaim(mtype.id, memory_space.id, 0, values.ctypes.data)  # 0: H5P_DEFAULT


def _has_variable_parts(tid) -> bool:
    """Whether values of ``tid`` hold variable-length sequences or strings."""
    from h5py import h5t
    kind = tid.get_class()
    if kind == h5t.STRING:
        return tid.is_variable_str()
    if kind == h5t.VLEN:
        return True
    if kind == h5t.COMPOUND:
        return any(_has_variable_parts(tid.get_member_type(i)) for i in range(tid.get_nmembers()))
    if kind == h5t.ARRAY:
        return _has_variable_parts(tid.get_super())
    return False


@functools.lru_cache(maxsize=None)
def _libhdf5():
    """libhdf5's read, write and reclaim calls, from the library h5py uses: looked up
    through h5py's extension module, whose dependencies hold it (hid_t is 64-bit)."""
    import ctypes
    import h5py.h5a
    lib = ctypes.CDLL(h5py.h5a.__file__)
    hid, buffer = ctypes.c_int64, ctypes.c_void_p
    for name, arguments in (("H5Aread", [hid, hid, buffer]), ("H5Awrite", [hid, hid, buffer]),
                            ("H5Dread", [hid] * 5 + [buffer]), ("H5Dwrite", [hid] * 5 + [buffer]),
                            ("H5Treclaim", [hid] * 3 + [buffer])):
        call = getattr(lib, name)
        call.argtypes, call.restype = arguments, ctypes.c_int
    return lib


def _numpy_dtype(obj) -> Optional[np.dtype]:
    """The numpy dtype h5py gives a dataset or attribute; None for a type numpy has
    none for (128-bit floats and integers, HDF5 time types; VAX floats, whose byte
    order h5py looks up and does not find: KeyError): libhdf5 copies those as they
    are stored."""
    try:
        return obj.dtype
    except (TypeError, ValueError, KeyError):
        return None


def _numeric_chunkable(ds) -> bool:
    import h5py
    dt = _numpy_dtype(ds)
    if dt is None:
        return False
    if ds.ndim == 0 or ds.size == 0 or dt.hasobject or dt.fields is not None or dt.subdtype is not None:
        return False
    if dt.kind not in "biufcS" or h5py.check_dtype(ref=dt) or h5py.check_dtype(vlen=dt):
        return False
    if dt.kind == "S" and not _numpy_like_string(ds.id.get_type()):
        return False  # copied: written again from numpy it would come out NULLPAD ASCII
    if not ds.id.get_type().equal(h5py.h5t.py_create(dt, logical=True)):
        return False  # a type numpy's does not map back to (a bitfield reads as uint): copied
    layout = ds.id.get_create_plist().get_layout()
    if layout in (h5py.h5d.COMPACT, getattr(h5py.h5d, "VIRTUAL", -1)):
        return False
    if ds.external:
        return False
    plist = ds.id.get_create_plist()
    ids = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
    # filters h5turbo cannot decode (zfp, SZ, LZO, ...: h5py reads them with a plugin):
    # copied as they are rather than failing the whole repack
    if not all(fid in FILTERS and FILTERS[fid].decodes for fid in ids):
        return False
    # n-bit and scale-offset change what is stored per element (lossy or packed): keep them
    return not any(fid in (5, 6) for fid in ids)


def _numpy_like_string(tid) -> bool:
    """A fixed-length string type that numpy's bytes map back to exactly."""
    import h5py
    if not isinstance(tid, h5py.h5t.TypeStringID):
        return True  # opaque bytes: numpy's void maps back to them
    return tid.get_strpad() == h5py.h5t.STR_NULLPAD and tid.get_cset() == h5py.h5t.CSET_ASCII


def _holds_refs(dt) -> bool:
    import h5py
    if dt is None:
        return False
    if h5py.check_dtype(ref=dt) is not None:
        return True
    base = h5py.check_dtype(vlen=dt)
    if base is not None and not isinstance(base, type) and _holds_refs(np.dtype(base)):
        return True
    if dt.fields:
        return any(_holds_refs(f[0]) for f in dt.fields.values())
    if dt.subdtype is not None:
        return _holds_refs(dt.subdtype[0])
    return False


def _remap(value, fin, fout):
    """A value read from SRC with every reference pointed at the same object in DST (by
    path), region references with the same selection; null references stay null."""
    import h5py
    if isinstance(value, h5py.Reference) and not isinstance(value, h5py.RegionReference):
        if not value:
            return h5py.Reference()
        try:
            name = fin[value].name
        except KeyError:  # a dangling reference (its object deleted): null, as unreachable ones
            return h5py.Reference()
        target = _lookup(fout, name)
        return target.ref if target is not None else h5py.Reference()
    if isinstance(value, h5py.RegionReference):
        return _remap_region(value, fin, fout)
    if isinstance(value, np.ndarray):
        if value.dtype.fields:
            out = value.copy()
            for field, (fdt, *_rest) in value.dtype.fields.items():
                if fdt.hasobject:
                    out[field] = _remap(value[field], fin, fout)
            return out
        if value.dtype.hasobject:
            out = np.empty(value.shape, dtype=value.dtype)
            for idx in np.ndindex(value.shape):
                out[idx] = _remap(value[idx], fin, fout)
            return _tag_references(out)
        return value
    if isinstance(value, np.void) and value.dtype.fields:
        return _remap(np.array(value), fin, fout)[()]
    return value


def _tag_references(values: np.ndarray) -> np.ndarray:
    """An object array of references as h5py's reference dtype (arrays read from a
    variable-length sequence of references come back untagged, and h5py writes
    untagged objects as nothing it knows)."""
    import h5py
    if values.dtype.metadata or not values.size:
        return values
    if all(isinstance(v, h5py.RegionReference) for v in values.flat):
        return values.astype(h5py.regionref_dtype)
    if all(isinstance(v, h5py.Reference) and not isinstance(v, h5py.RegionReference) for v in values.flat):
        return values.astype(h5py.ref_dtype)
    return values


def _lookup(f, path):
    """The object at ``path`` (str or bytes) in ``f``, or None (also for no path: an
    anonymous object). Not ``path in f``: h5py decodes the path there, and link names
    need not be UTF-8."""
    if not path:
        return None
    try:
        return f[path]
    except KeyError:
        return None


def _remap_region(ref, fin, fout):
    """The same selection of the same dataset (by path) in DST; a null reference, or
    one whose dataset is not in DST under that path, becomes null."""
    import h5py
    if not ref:
        return h5py.RegionReference()
    try:
        source = fin[ref]
    except KeyError:  # its dataset deleted
        return h5py.RegionReference()
    target = _lookup(fout, source.name)
    if not isinstance(target, h5py.Dataset):
        return h5py.RegionReference()
    selection = h5py.h5r.get_region(ref, source.id)  # SRC's dataspace with the selection
    if selection.shape != target.shape:
        return h5py.RegionReference()
    return h5py.h5r.create(target.id, b".", h5py.h5r.DATASET_REGION, selection)


def _attr_names(obj) -> list:
    """The attribute names of ``obj`` as stored (bytes: they need not be UTF-8), in the
    order h5py lists them: creation order where it is tracked, else by name."""
    import h5py
    tracked = obj.id.get_create_plist().get_attr_creation_order() & h5py.h5p.CRT_ORDER_TRACKED
    names: list = []
    h5py.h5a.iterate(obj.id, lambda name, *_info: names.append(name),
                     index_type=h5py.h5.INDEX_CRT_ORDER if tracked else h5py.h5.INDEX_NAME)
    return names


def _copy_attr(src_obj, dst_obj, name: bytes, fin, fout) -> None:
    """One attribute onto ``dst_obj``: references remapped to DST's objects, anything
    else with its exact stored type and bytes."""
    import h5py
    aid = h5py.h5a.open(src_obj.id, name)
    if not _holds_refs(_numpy_dtype(aid)):
        _copy_attr_exactly(aid, dst_obj, name)
        return
    value = src_obj.attrs[name]
    if isinstance(value, h5py.Empty):
        dst_obj.attrs.create(name, value)
        return
    value = _remap(np.asarray(value) if isinstance(value, np.ndarray) else value, fin, fout)
    dst_obj.attrs.create(name, value, shape=aid.shape, dtype=aid.dtype)


def _copy_attr_exactly(aid, dst_obj, name: bytes) -> None:
    """One attribute with its stored type (string padding, character set, byte order;
    a named type copied as a plain one) and its stored bytes: read and written with its
    own type, nothing is converted (through numpy's types, fixed strings inside
    variable-length values would come back NULLPAD, and 1-byte NULLTERM ones, as
    MATLAB's MATLAB_fields, empty)."""
    import h5py
    mtype = aid.get_type()  # variable-length parts in their in-memory form
    if mtype.committed():
        mtype = mtype.copy()
    space = aid.get_space()
    new = h5py.h5a.create(dst_obj.id, name, mtype, space)
    if space.get_simple_extent_type() == h5py.h5s.NULL:
        return
    values = np.empty(aid.shape, dtype=np.dtype((np.void, mtype.get_size())))

    def read(lib):
        return aid.read(values, mtype=mtype) if lib is None else lib.H5Aread(aid.id, mtype.id, values.ctypes.data)

    def write(lib):
        return new.write(values, mtype=mtype) if lib is None else lib.H5Awrite(new.id, mtype.id, values.ctypes.data)
    _through_memory(values, mtype, space, read, write)


def _remap_dataset_refs(dst_ds, src_ds, fin, fout) -> None:
    import h5py
    values = np.asarray(_remap(src_ds[()], fin, fout), dtype=dst_ds.dtype)
    # Written through the low-level call: h5py's __setitem__ re-converts sequences of
    # references and loses them.
    dst_ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, values)


def progress_bar(description: str):
    """A progress callback (done, total bytes) drawing a tqdm bar on stderr, or a plain
    percentage when tqdm is not installed; returns (callback, close)."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    state = {"bar": None, "last": -1}

    def update(done: int, total: int) -> None:
        if tqdm is not None:
            if state["bar"] is None:
                state["bar"] = tqdm(total=total, unit="B", unit_scale=True, desc=description, file=sys.stderr)
            state["bar"].update(done - state["bar"].n)
        else:
            pct = done * 100 // max(1, total)
            if pct != state["last"]:
                state["last"] = pct
                print(f"\r{description}: {pct:3d}%", end="", file=sys.stderr, flush=True)

    def close() -> None:
        if state["bar"] is not None:
            state["bar"].close()
        elif state["last"] >= 0:
            print(file=sys.stderr)

    return update, close
