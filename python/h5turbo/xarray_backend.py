"""xarray backend ``engine="h5turbo"``: NetCDF4 and plain HDF5 files read by h5turbo.

It follows h5netcdf's reading rules so that ``xr.open_dataset(path, engine="h5turbo")``
gives what ``engine="h5netcdf"`` gives: dimension scales become dimensions, the netCDF
bookkeeping attributes are hidden, attributes are converted as h5netcdf converts them,
and xarray's CF decoding does the rest. Data stays lazy: each variable is a
BackendArray that reads only what is indexed, through the lock-free native engine, and
announces the HDF5 chunks as ``preferred_chunks`` (so ``chunks={}`` gives dask blocks
aligned to them). The arrays pickle as (path, dataset name) and reopen the file once
per process, so the dask graphs work on a distributed cluster.

Dimension names, in this order, from: ``_Netcdf4Coordinates`` (dimension ids, matched
against each scale's ``_Netcdf4Dimid``); a dataset that is itself the dimension scale of
the same name; the dimension scales its ``DIMENSION_LIST`` object references point to
(the last scale of each axis, named by its path's last component, as h5netcdf does).
Datasets without dimension scales get phony dimensions as h5netcdf does
(``phony_dims="access"``, xarray's default, or ``"sort"``).
"""

from __future__ import annotations

import io
import os
from collections import ChainMap, Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

import numpy as np

from . import _native
from .compute.dask import disk_signature, open_cached
from .objects.dataset import Dataset
from .objects.file import File
from .objects.group import Datatype, Group, depth_first
from .objects.special_dtypes import is_hdf5 as _has_hdf5_signature
from .objects.types import Empty
from .objects.filters import FILTERS

try:  # the module must import without xarray (the package does not require it)
    from xarray.backends import BackendArray, BackendEntrypoint
    from xarray.backends.common import AbstractDataStore
    from xarray.core import indexing
except ImportError:  # pragma: no cover - exercised only where xarray is absent
    BackendArray = BackendEntrypoint = AbstractDataStore = object
    indexing = None

__all__ = ["H5TurboBackendEntrypoint", "H5TurboStore", "is_hdf5"]

# netCDF's own bookkeeping, never shown as attributes (as h5netcdf's _HIDDEN_ATTRS)
_HIDDEN_ATTRS = frozenset(["REFERENCE_LIST", "CLASS", "DIMENSION_LIST", "NAME",
                           "_Netcdf4Dimid", "_Netcdf4Coordinates", "_nc3_strict",
                           "_NCProperties"])
_NOT_A_VARIABLE = b"This is a netCDF dimension but not a netCDF variable."


def is_hdf5(path: Any) -> bool:
    """True when the file has the HDF5 signature at byte 0, 512, 1024, 2048, ... (where
    HDF5 looks for it after a userblock); False for anything that cannot be read so."""
    try:
        return _has_hdf5_signature(path)
    except (OSError, TypeError, ValueError):
        return False


# ---------------------------------------------------------------------- attributes


def _attr_bytes_encoding(value: Any) -> str:
    meta = getattr(getattr(value, "dtype", None), "metadata", None) or {}
    return meta.get("h5py_encoding", "ascii")


def netcdf_attr(value: Any) -> Any:
    """An attribute value as h5netcdf gives it, then as xarray's reader passes it on."""
    if isinstance(value, Empty):
        if value.dtype.kind == "S" and value.dtype.itemsize == 1:
            return b""
        return np.array([], dtype=value.dtype)
    if isinstance(value, np.ndarray) and _is_string_array(value):
        if value.dtype.kind == "S" and value.dtype.itemsize > 1:
            encoding = _attr_bytes_encoding(value)
            value = [b.decode(encoding, "surrogateescape") for b in value.flat]
        else:
            value = value.tolist()
    elif isinstance(value, np.bytes_) and len(value) > 1:
        value = bytes(value).decode("utf-8", "surrogateescape")
    # Only arrays and lists of one element are unwrapped (h5netcdf 1.8): a reference is
    # no numpy scalar and has no length.
    if isinstance(value, (np.ndarray, list)) and len(value) == 1:
        value = value[0]
    return value


def _is_string_array(value: np.ndarray) -> bool:
    if value.dtype.kind == "S":
        return True
    return value.dtype.kind == "O" and (value.dtype.metadata or {}).get("vlen") in (str, bytes)


def read_attributes(obj) -> dict:
    """The attributes xarray's h5netcdf reader would give for a group or dataset."""
    attrs = {}
    for name in obj.attrs:
        if name in _HIDDEN_ATTRS:
            continue
        value = netcdf_attr(obj.attrs[name])
        if name not in ("_FillValue", "missing_value") and isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                pass  # xarray keeps undecodable bytes as they are
        attrs[name] = value
    return attrs


# ---------------------------------------------------------------------- dimensions


@dataclass
class Dim:
    """One netCDF dimension: a dimension-scale dataset, or a phony one."""

    name: str
    length: int  # the scale's own length
    unlimited: bool
    dimid: Optional[int]
    phony: bool = False
    size: int = field(init=False)  # netCDF size: for unlimited dims the longest user

    def __post_init__(self):
        self.size = self.length


_NON_COORD_PREFIX = "_nc4_non_coord_"


def _is_scale(ds: Dataset) -> bool:
    return _attr_or(ds, "CLASS", b"") == b"DIMENSION_SCALE"


def _attr_or(obj, name: str, default: Any) -> Any:
    try:
        return obj.attrs[name] if name in obj.attrs else default
    except _native.Error:
        return default


def _linked_objects(group: Group) -> Iterator[tuple[str, Any]]:
    """(name, object) of each link of `group`, in link order; soft links to nothing left out."""
    for name in group:
        try:
            yield name, group[name]
        except KeyError:  # dangling soft link
            continue


def _dataset_children(group: Group) -> list[tuple[str, Dataset]]:
    """(name, dataset) in link order; groups, datatypes and soft links to nothing left out."""
    return [(name, obj) for name, obj in _linked_objects(group) if isinstance(obj, Dataset)]


class _GroupDims:
    """The dimensions of one group (its scales, then its phony dimensions)."""

    def __init__(self, group: Group, counter: "_PhonyCounter"):
        self.dims: dict[str, Dim] = {}
        self.children = _dataset_children(group)
        for name, ds in self.children:
            if _is_scale(ds):
                dim = Dim(name, ds.shape[0] if ds.shape else 0,
                          bool(ds.maxshape) and ds.maxshape[0] is None, _dimid(ds))
                if dim.unlimited:
                    dim.size = max(dim.size, _longest_user(ds))
                self.dims[name] = dim
        counter.add_phony(self)

    def unlabeled_shapes(self) -> Counter:
        """How many axes of each length need phony dimensions (per dataset, as h5netcdf)."""
        needed = Counter()
        for _name, ds in self.children:
            if not _is_scale(ds) and "DIMENSION_LIST" not in ds.attrs and ds.shape:
                needed |= Counter(ds.shape)
        return needed


def _longest_user(scale: Dataset) -> int:
    """The longest axis, among the variables attached to an unlimited dimension scale (its
    REFERENCE_LIST), that the scale labels. netCDF-C (and h5netcdf) size an unlimited
    dimension so, over every group of the file: a variable in a subgroup written further
    than the variables beside the scale makes the dimension longer in the parent too."""
    refs = _attr_or(scale, "REFERENCE_LIST", None)
    if refs is None or getattr(refs, "dtype", None) is None or refs.dtype.names is None:
        return 0
    longest = 0
    for ref, axis in zip(refs[refs.dtype.names[0]], refs[refs.dtype.names[1]]):
        try:
            shape = scale.file[ref].shape
        except (KeyError, ValueError, TypeError, _native.Error):
            continue  # a reference to nothing (a deleted variable): netCDF skips it too
        if shape and int(axis) < len(shape):
            longest = max(longest, shape[int(axis)])
    return longest


def _not_a_variable(ds: Dataset) -> bool:
    """A dimension scale netCDF made only to hold a dimension (NAME says so)."""
    name = _attr_or(ds, "NAME", b"")
    if isinstance(name, str):
        name = name.encode("utf-8", "surrogateescape")
    return _NOT_A_VARIABLE in bytes(name)


def _dimid(ds: Dataset) -> Optional[int]:
    value = _attr_or(ds, "_Netcdf4Dimid", None)
    return None if value is None else int(np.asarray(value).reshape(-1)[0])


class _PhonyCounter:
    """Numbers phony dimensions across the file as h5netcdf does: in the order groups are
    opened ('access'), offset past the largest dimension id ('sort')."""

    def __init__(self, mode: Optional[str], max_dim_id: int):
        if mode not in (None, "access", "sort"):
            raise ValueError(f"phony_dims must be 'access' or 'sort', not {mode!r}")
        self.mode, self.max_dim_id, self.count = mode, max_dim_id, 0

    def add_phony(self, group_dims: _GroupDims) -> None:
        if self.mode is None:
            return
        labeled = Counter(d.length for d in group_dims.dims.values() if not d.unlimited)
        for size, needed in group_dims.unlabeled_shapes().items():
            for _ in range(labeled[size], needed):
                number = self.count + (self.max_dim_id + 1 if self.mode == "sort" else 0)
                name = f"phony_dim_{number}"
                group_dims.dims[name] = Dim(name, size, False, None, phony=True)
                self.count += 1


def _max_dim_id(f: File) -> int:
    """The largest dimension id of the file's scales. A scale without _Netcdf4Dimid
    (h5py's make_scale) is numbered in visiting order, as h5netcdf and netCDF-C number
    it: with n scales, ids reach n - 1 at least (they counted as -1, and phony
    dimensions were numbered from 0 where h5netcdf and netCDF-C start at n)."""
    ids = []

    def visit(_name, obj):
        if isinstance(obj, Dataset) and _is_scale(obj):
            ids.append(_dimid(obj) if _dimid(obj) is not None else -1)

    f.visititems(visit)
    return max(ids + [len(ids) - 1]) if ids else -1


def _lookup_dimensions(name: str, ds: Dataset, scope: ChainMap, local: dict) -> tuple:
    """The dimension names of one variable (see the module docstring for the rules)."""
    if not ds.shape:
        return ()
    coords = _attr_or(ds, "_Netcdf4Coordinates", None)
    if coords is not None:
        by_id = {d.dimid: d.name for d in scope.values() if d.dimid is not None}
        ids = [int(i) for i in np.asarray(coords).reshape(-1)]
        if len(ids) == len(ds.shape) and all(i in by_id for i in ids):
            return tuple(by_id[i] for i in ids)
    if name in scope and len(ds.shape) == 1 and _is_scale(ds):
        return (name,)
    if "DIMENSION_LIST" in ds.attrs:
        dims = _referenced_dimensions(name, ds)
        if dims is not None:
            return dims
    if name in scope and len(ds.shape) == 1:
        return (name,)
    return _phony_dimensions(name, ds, local)


def _referenced_dimensions(name: str, ds: Dataset) -> Optional[tuple]:
    """Dimension names from the scales DIMENSION_LIST references (the last scale of each
    axis, as h5netcdf and netCDF-c take it); None when no axis has a scale. An axis
    without a scale next to one with a scale is a malformed variable (h5netcdf's error)."""
    per_axis = [list(refs) for refs in np.asarray(ds.attrs["DIMENSION_LIST"], dtype=object).reshape(-1)]
    if not any(per_axis):
        return None
    if not all(per_axis):
        raise ValueError(f"malformed variable {name.split('/')[-1]} has mixing of labeled "
                         "and unlabeled dimensions.")
    return tuple(ds.file[refs[-1]].name.split("/")[-1] for refs in per_axis)


def _phony_dimensions(name: str, ds: Dataset, local: dict) -> tuple:
    dims, used = [], Counter()
    for axis, size in enumerate(ds.shape):
        names = [d.name for d in local.values() if d.length == size]
        if used[size] >= len(names):
            raise ValueError(f"variable {name!r} has no dimension scale associated with "
                             f"axis {axis}. Use phony_dims='sort' or phony_dims='access'.")
        dims.append(names[used[size]])
        used[size] += 1
    return tuple(dims)


# ---------------------------------------------------------------------- lazy arrays


class H5TurboArray(BackendArray):
    """A variable's data, read on indexing. In the opening process it reads through the
    store's File; it pickles as (path, dataset name, shape) and, unpickled elsewhere (a
    dask worker), opens the file once per process. A file opened from a file object
    (path None) pickles with that object and is opened again from its copy."""

    __slots__ = ("path", "name", "shape", "dtype", "as_str", "file", "stored", "signature")

    def __init__(self, path: Optional[str], name: str, shape: tuple, dtype: np.dtype, as_str: bool,
                 file: Optional[File] = None, stored: Optional[tuple] = None):
        self.path, self.name, self.shape, self.dtype = path, name, tuple(shape), dtype
        self.as_str, self.file = as_str, file
        # the dataset's own shape when opened: shorter than `shape` along an unlimited
        # dimension is netCDF's padding; any other shape later is a file changed since
        self.stored = self.shape if stored is None else tuple(stored)
        # the file on disk when opened: `file` keeps the metadata read then, which does not
        # describe a file rewritten since (its reads would be of other bytes)
        self.signature = None if path is None else disk_signature(path)

    def __getstate__(self):
        state = {k: getattr(self, k) for k in self.__slots__ if k != "file"}
        if self.path is None:
            state["fileobj"] = self.file._fileobj
        return state

    def __setstate__(self, state):
        fileobj = state.pop("fileobj", None)
        for key, value in state.items():
            setattr(self, key, value)
        self.file = None if fileobj is None else File(fileobj)

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER_1VECTOR, self._getitem)

    def _open_file(self) -> File:
        """The store's File while it is open and the file on disk is the one it read;
        else the file as it is now, opened once per process (its dataset's shape and
        dtype are then checked against what was opened)."""
        if self.file is not None and not self.file.closed:
            if self.path is None or disk_signature(self.path) == self.signature:
                return self.file
        if self.path is None:
            raise _native.ClosedError(f"{self.name}: the file (opened from a file object) is closed")
        return open_cached(self.path)

    def _getitem(self, key: tuple) -> np.ndarray:
        ds = self._open_file()[self.name]
        if ds.shape is None:  # h5netcdf fails here too, netCDF-C refuses the whole file
            raise _native.UnsupportedError(
                f"{ds.file.filename}: variable {self.name!r} has a null dataspace (an HDF5 "
                "empty dataset: no shape, no value), which netCDF has no counterpart for; "
                "leave it out with drop_variables")
        # UTF-8 for ASCII-labelled strings too, as netCDF-C reads them (h5netcdf decodes
        # those as ASCII and fails on any other byte)
        source = ds.asstr("utf-8") if self.as_str else ds
        if tuple(ds.shape) != self.stored or ds.dtype != self.dtype:
            raise _native.Error(
                f"{ds.file.filename}: variable {self.name!r} is now {tuple(ds.shape)} {ds.dtype}, "
                f"opened as {self.stored} {self.dtype}: the file changed after it was opened; open it again")
        if tuple(ds.shape) == self.shape:
            return np.asarray(source[key])
        return self._read_padded(ds, source, key)

    def _read_padded(self, ds: Dataset, source, key: tuple) -> np.ndarray:
        """A selection of a variable shorter than its unlimited dimension: netCDF readers
        give the fill value past its end. Reads only the stored part the selection
        covers (a time step of a long variable is one step read, not the variable)."""
        wanted = [_absolute_indices(k, n) for k, n in zip(key, self.shape)]
        out = np.empty([idx.size for idx in wanted], dtype=self._read_dtype())
        padding = _padding_value(ds)
        if out.dtype.hasobject:
            out.fill(padding)  # the value itself in each element (assigning an array broadcasts it)
        else:
            out[...] = self.dtype.type(padding)
        parts = [_StoredPart(idx, have) for idx, have in zip(wanted, ds.shape)]
        if all(part.positions.size for part in parts):
            block = np.asarray(source[tuple(part.read for part in parts)])
            out[np.ix_(*(p.positions for p in parts))] = block[np.ix_(*(p.local for p in parts))]
        # an integer index drops its axis, as it does in source[key]
        return out.reshape([idx.size for k, idx in zip(key, wanted) if not _is_integer(k)])

    def _read_dtype(self) -> np.dtype:
        return np.dtype(object) if self.as_str else self.dtype


class _StoredPart:
    """Of the indices one axis selects, those the dataset stores (below `have`): where
    they go in the result (positions), the slice that reads them (a strided selection
    stays strided) and where each lies in what that slice reads (local)."""

    def __init__(self, idx: np.ndarray, have: int):
        self.positions = np.flatnonzero(idx < have)
        inside = idx[self.positions]
        if not inside.size:
            self.read, self.local = slice(0, 0), inside
            return
        lo, hi = int(inside.min()), int(inside.max())
        steps = np.diff(np.unique(inside))
        step = int(steps[0]) if steps.size and (steps == steps[0]).all() else 1
        self.read = slice(lo, hi + 1, step)
        self.local = (inside - lo) // step


def _is_integer(k) -> bool:
    return isinstance(k, (int, np.integer))


def _absolute_indices(k, length: int) -> np.ndarray:
    """The indices, in order and from 0, that one axis of an outer key selects."""
    if isinstance(k, slice):
        return np.arange(length)[k]
    idx = np.asarray(k).reshape(-1)
    if idx.dtype == bool:
        return np.flatnonzero(idx)
    return np.where(idx < 0, idx + length, idx).astype(np.intp)


# netCDF's default fill values (netCDF4.default_fillvals), by numpy type code.
_NETCDF_DEFAULT_FILL = {
    "i1": -127, "u1": 255, "i2": -32767, "u2": 65535, "i4": -2147483647, "u4": 4294967295,
    "i8": -9223372036854775806, "u8": 18446744073709551614,
    "f4": 9.969209968386869e36, "f8": 9.969209968386869e36,
}


def _padding_value(ds: Dataset):
    """What netCDF-C reads past the end of a variable shorter than its unlimited
    dimension: the dataset's own fill value when the file defines one, else the
    _FillValue attribute, else netCDF's default for the type. A variable written in
    no-fill mode (fill_value=False) defines none: libhdf5's zero would be wrong there."""
    if ds._obj.fillvalue_defined:
        return ds.fillvalue
    if "_FillValue" in ds.attrs:
        return np.asarray(ds.attrs["_FillValue"]).reshape(-1)[0]
    default = _NETCDF_DEFAULT_FILL.get(ds.dtype.str[1:])
    return ds.fillvalue if default is None else default


# ---------------------------------------------------------------------- store


def _enum_named(dtype: np.dtype, types_in_scope) -> np.dtype:
    """An enum variable's dtype with the name of its committed type, as xarray's
    h5netcdf and netCDF4 engines give it (metadata "enum_name"; to_netcdf writes the type
    back under that name). Other dtypes pass unchanged. `types_in_scope()` gives the
    committed types the variable's group sees (asked only for an enum)."""
    enum = (dtype.metadata or {}).get("enum")
    if enum is None:
        return dtype
    name = _enum_type_name(dtype, enum, types_in_scope())
    if name is None:  # not a committed type of the group or above: h5netcdf gives no name
        return dtype
    return np.dtype(dtype, metadata={"enum": enum, "enum_name": name})


def _enum_type_name(dtype: np.dtype, enum: dict, types: dict) -> Optional[str]:
    """The name of the first committed enum type equal to `dtype` (base type and
    members, as H5Tequal compares them)."""
    for name, type_dtype in types.items():
        if type_dtype.str == dtype.str and (type_dtype.metadata or {}).get("enum") == enum:
            return name
    return None


def _committed_types(ancestry: list) -> dict:
    """name -> dtype of the committed datatypes in the groups from the root down, a
    nearer group's type shadowing one of the same name above it, in h5netcdf's
    ChainMap order (names in order of first appearance from the root)."""
    types: dict = {}
    for group in ancestry:
        for name, obj in _linked_objects(group):
            if isinstance(obj, Datatype):
                types[name] = obj.dtype  # same name: keeps its place, takes the nearer type
    return types


def _filters_encoding(ds: Dataset) -> dict:
    """netCDF4-python's var.filters() as h5netcdf (1.x, Variable.filters) reports it.

    h5netcdf sets zlib and complevel from h5py's gzip settings, then walks h5py's filter
    dict, in pipeline order, under its names: szip, bzip2 ("307"), zstd ("32015"), and
    "blosc" for the lz4 filter ("32004": h5netcdf's own table calls it blosc); the
    last of those with client data sets complevel (szip: its mask name)."""
    enc = {"zlib": False, "szip": False, "bzip2": False, "blosc": False, "zstd": False,
           "shuffle": ds.shuffle, "fletcher32": ds.fletcher32}
    if ds.compression == "gzip":
        enc["zlib"], enc["complevel"] = True, ds.compression_opts
    for fid, _name, data in ds.filters:
        key = _H5NETCDF_FILTER_KEYS.get(FILTERS[fid].name if fid in FILTERS else None)
        if key is None:
            continue
        enc[key] = True
        opts = ds.compression_opts if key == "szip" else data
        if opts:
            enc["complevel"] = opts[0]
    return enc


# registry name -> the key h5netcdf's Variable.filters() sets for it
_H5NETCDF_FILTER_KEYS = {"szip": "szip", "bzip2": "bzip2", "lz4": "blosc", "zstd": "zstd"}


class _OpenedGroups:
    """Dimensions of the groups opened so far in one file, shared by the stores of one
    open_datatree call so phony dimensions are numbered once, in opening order.

    phony_dims="sort" numbers them across the whole file, whichever group is asked for:
    h5netcdf (like netCDF-C) visits every group on opening the file, depth first in link
    order, so group="b" names b's phony dimensions after those of an earlier group a."""

    def __init__(self, f: File, phony_dims: Optional[str]):
        self.counter = _PhonyCounter(phony_dims, _max_dim_id(f) if phony_dims == "sort" else -1)
        self.groups: dict[str, _GroupDims] = {}
        if phony_dims == "sort":
            for path, group, _above in depth_first([("/", f, frozenset())], _subgroups):
                self.dims_of(path, group)

    def dims_of(self, path: str, group: Group) -> _GroupDims:
        if path not in self.groups:
            self.groups[path] = _GroupDims(group, self.counter)
        return self.groups[path]


def _subgroups(item: tuple) -> list[tuple]:
    """(path, group, addresses above it) of each group a group's links lead to, soft links
    too (as h5netcdf walks them); a link back to a group above is not followed again."""
    path, group, above = item
    above = above | {group._key()}
    return [(path.rstrip("/") + "/" + name, child, above) for name, child in _linked_objects(group)
            if isinstance(child, Group) and child._key() not in above]


class H5TurboStore(AbstractDataStore):
    """One group of a file as xarray's data store."""

    def __init__(self, filename: Any, group: Optional[str] = None,
                 phony_dims: Optional[str] = "access", opened: Optional[_OpenedGroups] = None,
                 file: Optional[File] = None):
        """`filename`: a path or a file object; `file`: that file already open, shared
        (then this store does not close it)."""
        self._owns_file = file is None
        self._file = File(filename) if file is None else file
        self._path = None if self._file._fileobj is not None else os.path.realpath(filename)
        self._filename = self._file.filename if self._path is None else filename
        try:
            self._open_group(group or "/", opened or _OpenedGroups(self._file, phony_dims))
        except BaseException:
            self._file.close()
            raise

    def _open_group(self, group: str, opened: _OpenedGroups) -> None:
        """Collect the dimensions of every group from the root down to `group`, in the
        order h5netcdf opens them (which numbers the phony dimensions)."""
        parts = [p for p in group.split("/") if p]
        node = self._file
        maps = [opened.dims_of("/", node)]
        self._ancestry = [node]  # the groups from the root down to `group`
        self._types: Optional[dict] = None  # their committed datatypes, when first needed
        for i, part in enumerate(parts):
            path = "/" + "/".join(parts[:i + 1])
            try:
                node = node[part]
            except KeyError:
                raise OSError(f"group not found: {path}") from None
            if not isinstance(node, Group):  # a variable: h5netcdf and netCDF4 say so
                raise OSError(f"group not found: {path}")
            maps.append(opened.dims_of(path, node))
            self._ancestry.append(node)
        # the datasets read through this store's own File (the dims may come from another)
        self._children = _dataset_children(node)
        self._group = node
        self._local = maps[-1]
        self._scope = ChainMap(*(m.dims for m in reversed(maps)))
        self._variables = self._resolve_variables()

    def _resolve_variables(self) -> dict:
        """name -> (dataset, dims); widens unlimited dimensions to their longest user."""
        variables = {}
        for name, ds in self._children:
            if _not_a_variable(ds):
                continue
            dims = _lookup_dimensions(name, ds, self._scope, self._local.dims)
            for dim, length in zip(dims, ds.shape or ()):
                if self._scope[dim].unlimited:
                    self._scope[dim].size = max(self._scope[dim].size, length)
            # netCDF-C stores a variable named as a dimension it does not describe
            # under this prefix; netCDF4 and h5netcdf show its own name
            variables[name.removeprefix(_NON_COORD_PREFIX)] = (ds, dims)
        return variables

    def open_store_variable(self, name: str, ds: Dataset, dims: tuple):
        from xarray.core.variable import Variable

        shape = tuple(self._scope[d].size for d in dims)
        vlen = (ds.dtype.metadata or {}).get("vlen")
        # a dataset an external link leads to lives (under ds.name) in its own file
        home = ds.file
        path = self._path if home is self._file else (
            None if home._fileobj is not None else os.path.realpath(home.filename))
        # vlen strings of either character set read as str: h5netcdf (decode_vlen_strings)
        # and netCDF-C (NC_STRING) both decode ASCII-labelled ones too
        array = H5TurboArray(path, ds.name, shape, ds.dtype, as_str=vlen in (str, bytes), file=home,
                             stored=ds.shape)
        encoding = {"dtype": str if vlen is str else _enum_named(ds.dtype, self._types_in_scope)}
        chunks = ds.chunks if shape else None
        encoding["contiguous"] = not chunks
        encoding["chunksizes"] = chunks or None
        if chunks:
            encoding["preferred_chunks"] = dict(zip(dims, chunks))
        encoding.update(_filters_encoding(ds))
        if ds.compression == "gzip":
            encoding["zlib"], encoding["complevel"] = True, ds.compression_opts
        elif ds.compression is not None:
            encoding["compression"] = ds.compression
            encoding["compression_opts"] = ds.compression_opts
        encoding["source"] = self._filename
        encoding["original_shape"] = shape
        return Variable(dims, indexing.LazilyIndexedArray(array), read_attributes(ds),
                        encoding)

    def _types_in_scope(self) -> dict:
        """The committed datatypes this group sees, read once per store."""
        if self._types is None:
            self._types = _committed_types(self._ancestry)
        return self._types

    def get_variables(self):
        variables = {}
        for name, (ds, dims) in self._variables.items():
            try:
                variables[name] = self.open_store_variable(name, ds, dims)
            except _native.Error as exc:  # say which variable, keep the error's type
                raise type(exc)(f"variable {ds.name!r}: {exc}") from exc
        return variables

    def get_attrs(self):
        return read_attributes(self._group)

    def get_dimensions(self):
        return {name: d.length for name, d in self._local.dims.items()}

    def get_encoding(self):
        return {"unlimited_dims": {n for n, d in self._local.dims.items() if d.unlimited}}

    def close(self, **kwargs):
        if self._owns_file and self._file is not None:
            self._file.close()

    # A Dataset keeps its store (for close()), so pickling a Dataset pickles the store:
    # it travels as nothing but a closed handle. The variables it made pickle on their
    # own (H5TurboArray) and reopen the file where they are read.
    def __getstate__(self):
        return {"_filename": self._filename, "_path": self._path}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._owns_file, self._file = False, None


# ---------------------------------------------------------------------- entry point


def _normalize_path(filename_or_obj: Any) -> Any:
    """An absolute path, or the file object itself (read + seek, as h5py takes); bytes
    or a memoryview are the file's contents (as xarray's h5netcdf engine takes them)."""
    if isinstance(filename_or_obj, (bytes, memoryview)):
        return io.BytesIO(bytes(filename_or_obj))
    if isinstance(filename_or_obj, (str, os.PathLike)):
        return os.path.abspath(os.path.expanduser(os.fspath(filename_or_obj)))
    if hasattr(filename_or_obj, "read") and hasattr(filename_or_obj, "seek"):
        return filename_or_obj
    raise TypeError("engine='h5turbo' reads a path or a file object (read + seek); got "
                    f"{type(filename_or_obj).__name__}")


class H5TurboBackendEntrypoint(BackendEntrypoint):
    """xarray engine "h5turbo": NetCDF4 and HDF5 files read in parallel, without libhdf5."""

    description = "Open NetCDF4 and HDF5 files with h5turbo (lock-free, parallel, no libhdf5)"
    url = "https://github.com/h5turbo/h5turbo"
    supports_groups = True
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mask_and_scale",
                               "decode_times", "concat_characters", "decode_coords",
                               "use_cftime", "decode_timedelta", "group", "phony_dims")

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        return is_hdf5(filename_or_obj)

    def open_dataset(self, filename_or_obj: Any, *, drop_variables: Optional[Iterable[str]] = None,
                     mask_and_scale=True, decode_times=True, concat_characters=True,
                     decode_coords=True, use_cftime=None, decode_timedelta=None,
                     group: Optional[str] = None, phony_dims: Optional[str] = "access"):
        from xarray.backends.store import StoreBackendEntrypoint

        store = H5TurboStore(_normalize_path(filename_or_obj), group=group,
                             phony_dims=_phony_mode(phony_dims))
        try:
            return StoreBackendEntrypoint().open_dataset(
                store, mask_and_scale=mask_and_scale, decode_times=decode_times,
                concat_characters=concat_characters, decode_coords=decode_coords,
                drop_variables=drop_variables, use_cftime=use_cftime,
                decode_timedelta=decode_timedelta)
        except BaseException:
            store.close()
            raise

    def open_groups_as_dict(self, filename_or_obj: Any, *, group: Optional[str] = None,
                            phony_dims: Optional[str] = "access", **decode) -> dict:
        """{group path: Dataset} for `group` (default the root) and every group below it,
        depth first in link order, as xarray's h5netcdf engine gives them."""
        path = _normalize_path(filename_or_obj)
        phony_dims = _phony_mode(phony_dims)
        top = "/" + (group or "").strip("/")
        # a file object is opened once, its File shared by every group's store (one
        # object is read one seek + read at a time); a path once per store
        shared = None if isinstance(path, str) else File(path)
        with File(path) if shared is None else nullcontext(shared) as f:
            if top not in f or not isinstance(f[top], Group):  # absent, or a variable
                raise OSError(f"group not found: {top}")
            paths = _group_paths(f[top], top)
            opened = _OpenedGroups(f, phony_dims)
        groups = {}
        try:
            for gpath in paths:
                groups[_tree_key(gpath, top, group)] = self._open_group_dataset(
                    path, gpath, phony_dims, opened, decode, shared)
        except BaseException:
            for ds in groups.values():
                ds.close()
            raise
        return groups

    def open_datatree(self, filename_or_obj: Any, **kwargs):
        from xarray.backends.common import datatree_from_dict_with_io_cleanup

        return datatree_from_dict_with_io_cleanup(self.open_groups_as_dict(filename_or_obj,
                                                                           **kwargs))

    @staticmethod
    def _open_group_dataset(path, gpath, phony_dims, opened, decode, shared=None):
        from xarray.backends.store import StoreBackendEntrypoint

        store = H5TurboStore(path, group=gpath, phony_dims=phony_dims, opened=opened, file=shared)
        try:
            return StoreBackendEntrypoint().open_dataset(store, **decode)
        except BaseException:
            store.close()
            raise


def _phony_mode(phony_dims: Optional[str]) -> str:
    """xarray's h5netcdf engine takes phony_dims=None as "access" (it used to raise)."""
    return "access" if phony_dims is None else phony_dims


def _group_paths(group: Group, path: str) -> list[str]:
    """The group and its subgroups, depth first in link order. Soft (and external) links
    to groups count, as h5netcdf and netCDF-C list them; a link back up is not followed."""
    return [p for p, _group, _above in depth_first([(path, group, frozenset())], _subgroups)]


def _tree_key(gpath: str, top: str, group: Optional[str]) -> str:
    from xarray.core.treenode import NodePath

    if group:
        return str(NodePath(gpath).relative_to(NodePath(top)))
    return str(NodePath(gpath))
