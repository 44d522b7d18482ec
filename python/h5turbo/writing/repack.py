"""``h5turbo repack``: rewrite an HDF5 file with new chunks and compression, reading in
parallel with h5turbo and writing in parallel with :func:`h5turbo.write`.

Groups, attributes (object references in them remapped to the new file), dtypes,
fill values and links (soft, external, and hard links to one object) are kept. A
dataset is re-encoded when it is chunkable numeric data (numbers, booleans, enums,
fixed-size bytes; at least one dimension; not compact); anything else (variable-length
strings, compounds, references, scalars, compact layout, named datatypes) is copied
through h5py (libhdf5's H5Ocopy) as it is. The new file is written to a temporary
file in DST's folder, checked (every re-encoded dataset read back with h5turbo and
compared with SRC), and renamed to DST only then, with DST's permissions (a symbolic
link at DST keeps its target, which is replaced); on any failure or interrupt the
temporary file is removed. SRC is opened read-only. Attributes keep their exact
stored types (string padding and character set included) and creation order; the
user block is kept.
"""

from __future__ import annotations

import fnmatch
import functools
import io
import math
import os
import sys
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from .._native import Error as _Error
from .atomic import replacing
from .write import ArgumentError, CODECS, auto_chunks, check_threads, write
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
    if not (chunks in ("auto", "keep") or (isinstance(chunks, tuple) and chunks and min(chunks) >= 1)):
        raise ArgumentError(f"chunks={chunks!r}: 'auto', 'keep' or a shape of positive sizes")
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
        with h5py.File(tmp, "w", libver=_libver(fin), track_order=_tracks_order(fin["/"]),
                       userblock_size=fin.userblock_size) as fout:
            job = _Repack(fin, fout, src, chunks, compression, level, datasets, threads, progress)
            job.run()
        _copy_user_block(src, tmp, fin.userblock_size)
        if verify:
            job.verify(tmp)
    return {"reencoded": job.reencoded, "copied": job.copied}


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


def _tracks_order(group) -> bool:
    return bool(group.id.get_create_plist().get_link_creation_order())


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
        self.total = self._reencodable_bytes()
        self.written = 0

    # ----------------------------------------------------------------- walking

    def run(self) -> None:
        self.deferred_attrs.append((self.fin, "/"))
        self._copy_members(self.fin, self.fout)
        for obj, path in self.deferred_refs:
            _remap_dataset_refs(self.fout[path], obj, self.fin, self.fout)
        for obj, path in self.deferred_attrs:
            _copy_attrs(obj, self.fout[path], self.fin, self.fout)

    def _copy_members(self, gin, gout) -> None:
        import h5py
        for name in gin:
            link = gin.get(name, getlink=True)
            if isinstance(link, h5py.SoftLink):
                gout[name] = h5py.SoftLink(link.path)
            elif isinstance(link, h5py.ExternalLink):
                gout[name] = h5py.ExternalLink(link.filename, link.path)
            else:
                self._copy_object(gin, gout, name)

    def _copy_object(self, gin, gout, name: str) -> None:
        import h5py
        obj = gin[name]
        key = _object_key(obj)
        if key in self.done:
            gout[name] = self.fout[self.done[key]]  # a second hard link to the same object
            return
        path = _join(gout.name, name)
        if isinstance(obj, h5py.Group):
            sub = gout.create_group(name, track_order=_tracks_order(obj))
            self.done[key] = sub.name
            self.deferred_attrs.append((obj, sub.name))
            self._copy_members(obj, sub)
        elif isinstance(obj, h5py.Dataset) and self._reencodable(obj):
            self._reencode(obj, gout, name)
            self.done[key] = path
            self.deferred_attrs.append((obj, path))
            self.reencoded.append(obj.name)
        elif isinstance(obj, h5py.Dataset) and _vlen_with_fill(obj):
            _copy_vlen_with_fill(obj, gout, name)
            self.done[key] = path
            self.deferred_attrs.append((obj, path))
            self.copied.append(obj.name)
        else:  # named datatypes, and datasets we do not re-encode: libhdf5 copies them
            gin.copy(obj, gout, name=name, without_attrs=True)
            if isinstance(obj, h5py.Dataset) and _holds_refs(_numpy_dtype(obj)):
                self.deferred_refs.append((obj, path))
            self.done[key] = path
            self.deferred_attrs.append((obj, path))
            if isinstance(obj, h5py.Dataset):
                self.copied.append(obj.name)

    # ------------------------------------------------------------- datasets

    def _reencodable(self, ds) -> bool:
        if self.pattern is not None and not fnmatch.fnmatchcase(ds.name, self.pattern):
            return False
        if self.compression == KEEP and not _keepable_filters(ds):
            return False  # copied with its own filters rather than silently decompressed
        return _numeric_chunkable(ds)

    def _reencodable_bytes(self) -> int:
        total = []

        def visit(_name, obj):
            import h5py
            if isinstance(obj, h5py.Dataset) and self._reencodable(obj):
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

    def _reencode(self, ds, gout, name) -> None:
        from ..objects.file import File
        compression, level, shuffle, fletcher32 = self._codec(ds)
        chunks = self._new_chunks(ds)
        fill = ds.fillvalue if _fill_is_set(ds) else None
        maxshape = ds.maxshape if ds.maxshape != ds.shape else None
        plist = ds.id.get_create_plist()
        fill_time = {0: "alloc", 1: "never", 2: "ifset"}.get(plist.get_fill_time())
        track_order = bool(plist.get_attr_creation_order())
        with File(self.src_path) as turbo:
            source = turbo[ds.name]
            step = chunks[0] * max(1, _slab_rows(ds.shape, ds.dtype.itemsize) // chunks[0])  # whole chunk rows

            def slabs():
                for start in range(0, ds.shape[0], step):
                    yield source.read(np.s_[start:start + step], threads=self.threads)

            before = self.written

            def advance(done):
                self.written = before + done
                if self.progress:
                    self.progress(self.written, self.total)

            write(gout, name, slabs(), chunks=chunks, compression=compression, level=level,
                  shuffle=shuffle, threads=self.threads, shape=ds.shape, dtype=ds.dtype,
                  fillvalue=fill, fletcher32=fletcher32, progress=advance, maxshape=maxshape,
                  fill_time=fill_time, track_order=track_order)

    # ---------------------------------------------------------------- checks

    def verify(self, tmp: Path) -> None:
        """Every re-encoded dataset reads back (with h5turbo) equal to SRC."""
        from ..objects.file import File
        with File(self.src_path) as a, File(tmp) as b:
            for name in self.reencoded:
                x, y = a[name], b[name]
                if x.shape != y.shape or x.dtype != y.dtype:
                    raise RepackError(f"{tmp}: {name} came out {y.shape} {y.dtype}, SRC has {x.shape} {x.dtype}")
                step = _slab_rows(x.shape, x.dtype.itemsize)
                for start in range(0, x.shape[0], step):
                    sel = np.s_[start:start + step]
                    if not np.array_equal(x.read(sel), y.read(sel), equal_nan=x.dtype.kind in "fc"):
                        raise RepackError(f"{tmp}: {name} differs from SRC in rows {start}..{start + step}")


class RepackError(_Error):
    """The new file did not verify against SRC; DST was not written."""


def _join(parent: str, name: str) -> str:
    return (parent.rstrip("/") + "/" + name) if parent != "/" else "/" + name


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


def _copy_vlen_with_fill(ds, gout, name: str) -> None:
    """The dataset made again with its own creation properties (chunks, filters, fill
    value, in memory here) and type, its values written in slabs."""
    import h5py
    if ds.shape:
        maxshape = tuple(h5py.h5s.UNLIMITED if m is None else m for m in ds.maxshape)
        space = h5py.h5s.create_simple(ds.shape, maxshape)
    else:
        space = h5py.h5s.create(h5py.h5s.SCALAR)
    out = h5py.Dataset(h5py.h5d.create(gout.id, name.encode(), ds.id.get_type(), space,
                                       dcpl=ds.id.get_create_plist()))
    if not ds.shape:
        out[()] = ds[()]
        return
    rows = _slab_rows(ds.shape, _VLEN_ELEMENT_BYTES)
    for start in range(0, ds.shape[0], rows):
        out[start:start + rows] = ds[start:start + rows]


def _numpy_dtype(obj) -> Optional[np.dtype]:
    """The numpy dtype h5py gives a dataset or attribute; None for a type numpy has
    none for (128-bit floats and integers, HDF5 time types): libhdf5 copies those as
    they are stored."""
    try:
        return obj.dtype
    except (TypeError, ValueError):
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
        return fout[name].ref if name and name in fout else h5py.Reference()
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
    name = source.name
    if not name or name not in fout or not isinstance(fout[name], h5py.Dataset):
        return h5py.RegionReference()
    target = fout[name]
    selection = h5py.h5r.get_region(ref, source.id)  # SRC's dataspace with the selection
    if selection.shape != target.shape:
        return h5py.RegionReference()
    return h5py.h5r.create(target.id, b".", h5py.h5r.DATASET_REGION, selection)


def _copy_attrs(src_obj, dst_obj, fin, fout) -> None:
    """Every attribute of ``src_obj`` onto ``dst_obj``, in creation order where it is
    tracked: references remapped to DST's objects, everything else with its exact
    stored type and bytes."""
    import h5py
    for name in src_obj.attrs:
        aid = src_obj.attrs.get_id(name)
        if not _holds_refs(_numpy_dtype(aid)):
            _copy_attr_exactly(aid, dst_obj, name)
            continue
        value = src_obj.attrs[name]
        if isinstance(value, h5py.Empty):
            dst_obj.attrs.create(name, value)
            continue
        value = _remap(np.asarray(value) if isinstance(value, np.ndarray) else value, fin, fout)
        dst_obj.attrs.create(name, value, shape=aid.shape, dtype=aid.dtype)


def _copy_attr_exactly(aid, dst_obj, name: str) -> None:
    """One attribute with its stored type (string padding, character set, byte order,
    named types copied as plain ones) and its stored bytes (variable-length values
    through h5py, strings as bytes, never decoded). In a value holding variable-length
    parts, the fixed strings are stored NULLPAD: they pass through h5py's NULLPAD memory
    strings, and libhdf5 converting those to NULLTERM keeps room for the terminator,
    which empties the 1-byte names of MATLAB's MATLAB_fields."""
    import h5py
    ftype = aid.get_type()
    if ftype.committed():
        ftype = ftype.copy()
    space = aid.get_space()
    stored = _numpy_dtype(aid)
    has_objects = stored is not None and stored.hasobject
    new_type = _fixed_strings_nullpad(ftype) if has_objects else ftype
    new = h5py.h5a.create(dst_obj.id, name.encode("utf-8"), new_type, space)
    if space.get_simple_extent_type() == h5py.h5s.NULL:
        return
    if not has_objects:  # the stored bytes as they are, no conversion at all
        values = np.empty(aid.shape, dtype=np.dtype((np.void, ftype.get_size())))
        aid.read(values, mtype=ftype)
        new.write(values, mtype=ftype)
        return
    dtype = _as_stored(stored)
    values = np.empty(aid.shape, dtype=dtype)
    aid.read(values, mtype=h5py.h5t.py_create(dtype))
    if _h5py_mislabels_big_endian_sequences():
        _label_sequences_as_stored(values, dtype)
    new.write(values, mtype=h5py.h5t.py_create(dtype))


@functools.lru_cache(maxsize=None)
def _h5py_mislabels_big_endian_sequences() -> bool:
    """Whether this h5py reads a sequence of big-endian numbers as native-order numbers
    of the stored bytes (h5py 3.x: [1] stored as >u8 reads as 2**56), which written back
    would store those wrong numbers. Asked of h5py itself, on a file in memory."""
    import h5py
    probe = np.empty(1, dtype=h5py.vlen_dtype(np.dtype(">u8")))
    probe[0] = np.array([1], ">u8")
    with h5py.File(io.BytesIO(), "w") as f:
        f.attrs.create("probe", probe)
        return int(f.attrs["probe"][0][0]) != 1


def _label_sequences_as_stored(values: np.ndarray, dtype: np.dtype) -> None:
    """Relabel, in place, the elements of every sequence of big-endian numbers in
    ``values`` (read by h5py as ``dtype``) with their stored byte order: the numbers
    they hold."""
    import h5py
    base = h5py.check_dtype(vlen=dtype)
    if base is not None and not isinstance(base, type):
        base = np.dtype(base)
        if base.kind in "iuf" and not base.isnative:
            for at in np.ndindex(values.shape):
                if isinstance(values[at], np.ndarray):
                    values[at] = values[at].view(base)
        return
    if dtype.fields:
        for name in dtype.names:
            _label_sequences_as_stored(values[name], dtype.fields[name][0])
    elif dtype.subdtype is not None:  # taken out of records, the array's axes are values' own
        _label_sequences_as_stored(values, dtype.subdtype[0])


def _fixed_strings_nullpad(ftype):
    """``ftype`` with every fixed-length string inside it NULLPAD (the padding h5py's
    memory strings have, so that their bytes are written unchanged)."""
    from h5py import h5t
    kind = ftype.get_class()
    if kind == h5t.STRING and not ftype.is_variable_str():
        if ftype.get_strpad() == h5t.STR_NULLPAD:
            return ftype
        nullpad = ftype.copy()
        nullpad.set_strpad(h5t.STR_NULLPAD)
        return nullpad
    if kind == h5t.VLEN:
        return h5t.vlen_create(_fixed_strings_nullpad(ftype.get_super()))
    if kind == h5t.ARRAY:
        return h5t.array_create(_fixed_strings_nullpad(ftype.get_super()), ftype.get_array_dims())
    if kind == h5t.COMPOUND:
        compound = h5t.create(h5t.COMPOUND, ftype.get_size())
        for i in range(ftype.get_nmembers()):
            compound.insert(ftype.get_member_name(i), ftype.get_member_offset(i),
                            _fixed_strings_nullpad(ftype.get_member_type(i)))
        return compound
    return ftype


def _as_stored(dtype: np.dtype) -> np.dtype:
    """``dtype`` with every variable-length string read as bytes (h5py decodes UTF-8
    ones, and a string tagged ASCII may hold other bytes)."""
    import h5py
    if h5py.check_dtype(vlen=dtype) is str:
        return h5py.string_dtype("ascii")
    if dtype.fields:
        return np.dtype([(field, _as_stored(dtype.fields[field][0])) for field in dtype.names])
    return dtype


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
