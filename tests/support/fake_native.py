"""Test double of the compiled module ``h5turbo._native``, backed by h5py.

It implements the contract in python/h5turbo/_native.pyi (File, Object, the error
classes, default_threads) so the Python package can be tested before, and
alongside, the Rust bindings. ``Object.read`` validates its arguments exactly as the
contract states, then reads the orthogonal selection through h5py.

Test code only: the package itself always imports the real ``h5turbo._native``.
"""

from __future__ import annotations

import os
import posixpath

import h5py
import numpy as np


class Error(Exception):
    """Base of every h5turbo error."""


class FormatError(Error):
    pass


class UnsupportedError(Error):
    pass


class ClosedError(Error):
    pass


def use_error_classes(module) -> None:
    """Raise the given module's error classes (the real ones when they are importable),
    so that ``h5turbo.Error`` catches what this double raises."""
    global Error, FormatError, UnsupportedError, ClosedError
    Error, FormatError = module.Error, module.FormatError
    UnsupportedError, ClosedError = module.UnsupportedError, module.ClosedError


def default_threads() -> int:
    env = os.environ.get("H5TURBO_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else (os.cpu_count() or 1)


_LINK_KINDS = {h5py.h5l.TYPE_HARD: "hard", h5py.h5l.TYPE_SOFT: "soft",
               h5py.h5l.TYPE_EXTERNAL: "external"}
_LAYOUTS = {h5py.h5d.COMPACT: "compact", h5py.h5d.CONTIGUOUS: "contiguous",
            h5py.h5d.CHUNKED: "chunked", h5py.h5d.VIRTUAL: "virtual"}


class File:
    def __init__(self, path: str) -> None:
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        self._path = path
        try:
            self._h5 = h5py.File(path, "r")
        except OSError as exc:  # the file exists: libhdf5 could not read it
            raise FormatError(str(exc)) from None

    @property
    def path(self) -> str:
        return self._path

    @property
    def closed(self) -> bool:
        return not self._h5.id.valid

    @property
    def userblock_size(self) -> int:
        self._check_open()
        return self._h5.userblock_size

    def close(self) -> None:
        if not self.closed:
            self._h5.close()

    def get(self, path: str) -> "Object":
        self._check_open()
        obj = Object(self, self._h5["/"], "/")
        for component in [c for c in path.split("/") if c]:
            obj = obj.child(component)
        return obj

    def external_link_file(self, name: str) -> str:
        """libhdf5's order for an external link's file: HDF5_EXT_PREFIX, next to this
        file, then as given (the contract; the real side does this in the core)."""
        prefixes = [p for p in os.environ.get("HDF5_EXT_PREFIX", "").split(":") if p]
        here = os.path.dirname(self._path)
        candidates = [name] if os.path.isabs(name) else (
            [os.path.join(p.replace("${ORIGIN}", here), name) for p in prefixes]
            + [os.path.join(here, name), name])
        for candidate in candidates:
            if os.path.isfile(candidate):
                return candidate
        raise KeyError(f"external link target file '{name}' not found")

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError("the file is closed")


class Object:
    def __init__(self, file: File, h5obj, name: str):
        self._file = file
        self._h5obj = h5obj
        self._name = name

    def _h5(self):
        self._file._check_open()
        return self._h5obj

    @property
    def kind(self) -> str:
        h5obj = self._h5()
        if isinstance(h5obj, h5py.Group):
            return "group"
        return "dataset" if isinstance(h5obj, h5py.Dataset) else "datatype"

    @property
    def name(self) -> str:
        return self._name

    @property
    def address(self) -> int:
        return h5py.h5o.get_info(self._h5().id).addr

    @property
    def hard_links(self) -> int:
        return h5py.h5o.get_info(self._h5().id).rc

    @property
    def file_path(self) -> str:
        return self._h5().file.filename

    # --- groups ---

    def links(self):
        group = self._h5()
        return [self._link(group, name) for name in group]

    def link_count(self) -> int:
        return len(self._h5())

    def link(self, name: str):
        group = self._h5()
        return self._link(group, name) if name in group or group.get(name, getlink=True) is not None else None

    def _link(self, group, name: str):
        info = group.id.links.get_info(name.encode())
        kind = _LINK_KINDS[info.type]
        if kind == "hard":
            return (name, kind, h5py.h5o.get_info(group.id, name.encode()).addr)
        if kind == "soft":
            return (name, kind, group.id.links.get_val(name.encode()).decode())
        filename, path = group.id.links.get_val(name.encode())
        return (name, kind, (filename.decode(), path.decode()))

    def child(self, name: str) -> "Object":
        group = self._h5()
        if "/" in name or not isinstance(group, h5py.Group) or not _link_exists(group, name):
            raise KeyError(f"no link {name!r} in {self._name!r}")
        info = group.id.links.get_info(name.encode())
        if info.type == h5py.h5l.TYPE_EXTERNAL:
            filename, path = group.id.links.get_val(name.encode())
            raise Error(f"external link {name!r} to {path.decode()!r} in file "
                        f"{filename.decode()!r}")
        try:
            target = group[name]
        except KeyError:
            raise KeyError(f"dangling link {name!r} in {self._name!r}") from None
        return Object(self._file, target, posixpath.join(self._name, name))

    # --- attributes ---

    def attr_names(self):
        return list(self._h5().attrs)

    def attr_count(self):
        return len(self._h5().attrs)

    def has_attr(self, name: str):
        return name in self._h5().attrs

    def attr(self, name: str):
        attrs = self._h5().attrs
        if name not in attrs:
            raise KeyError(f"no attribute {name!r} on {self._name!r}")
        value = attrs[name]
        if isinstance(value, h5py.Empty):
            return ("empty", value.dtype)
        return value

    # --- datasets ---

    @property
    def shape(self):
        return self._h5().shape

    @property
    def maxshape(self):
        return self._h5().maxshape

    @property
    def dtype(self):
        return self._h5().dtype

    @property
    def layout(self) -> str:
        return _LAYOUTS[self._h5().id.get_create_plist().get_layout()]

    @property
    def external(self):
        return self._h5().external

    @property
    def chunks(self):
        return self._h5().chunks

    @property
    def string_padding(self):
        tid = self._h5().id.get_type()
        if not isinstance(tid, h5py.h5t.TypeStringID) or tid.is_variable_str():
            return None
        return {h5py.h5t.STR_NULLTERM: "nullterm", h5py.h5t.STR_NULLPAD: "nullpad",
                h5py.h5t.STR_SPACEPAD: "spacepad"}[tid.get_strpad()]

    @property
    def native_complex(self):
        tid = self._h5().id.get_type()
        while isinstance(tid, h5py.h5t.TypeArrayID):
            tid = tid.get_super()
        return tid.get_class() == getattr(h5py.h5t, "COMPLEX", -1)

    @property
    def chunk_index(self):
        # h5py exposes no chunk index type; the package does not use it
        return None

    @property
    def filters(self):
        plist = self._h5().id.get_create_plist()
        result = []
        for i in range(plist.get_nfilters()):
            code, _flags, values, name = plist.get_filter(i)
            result.append((code, name.decode(errors="replace"), tuple(values)))
        return result

    @property
    def fillvalue(self):
        return self._h5().fillvalue

    def chunk_count(self) -> int:
        ds = self._h5()
        if ds.chunks is None:
            return int(ds.id.get_storage_size() > 0)
        return ds.id.get_num_chunks()

    def storage_size(self) -> int:
        return self._h5().id.get_storage_size()

    def read(self, selection, out, threads) -> None:
        ds = self._h5()
        if not isinstance(threads, int):
            raise TypeError("threads must be an int")
        if ds.shape is None:
            raise Error("a null dataspace has no data to read")
        axes = _validate_selection(selection, ds.shape)
        _validate_out(out, ds.dtype, tuple(_axis_length(a) for a in axes))
        if out.size == 0:
            return
        if not axes:
            out[()] = ds[()]
            return
        out[...] = _read_orthogonal(ds, axes)

    def reduce(self, selection, op, reduce_axis, threads):
        """The contract's reductions, computed by numpy on the selection read whole."""
        ds = self._h5()
        axes = _validate_selection(selection, ds.shape)
        block = np.asarray(_read_orthogonal(ds, axes))
        if block.dtype.kind not in "biuf":
            raise UnsupportedError("reductions need integer, float or boolean elements")
        along = tuple(d for d, flag in enumerate(reduce_axis) if flag)
        if op == "sum_int":
            return block.astype(np.int64).sum(axis=along, keepdims=True).ravel()
        if op == "sum_float":
            return block.astype(np.float64).sum(axis=along, keepdims=True).ravel()
        if op in ("min", "max"):
            native = block.astype(block.dtype.newbyteorder("="))
            return getattr(np, op)(native, axis=along, keepdims=True).ravel().tobytes()
        if op == "count_nonzero":
            return np.count_nonzero(block, axis=along, keepdims=True).astype(np.uint64).ravel()
        if op == "moments":
            values = block.astype(np.float64)
            count = int(np.prod([block.shape[d] for d in along]))
            mean = values.mean(axis=along, keepdims=True)
            m2 = ((values - mean) ** 2).sum(axis=along, keepdims=True)
            return (np.full(mean.size, count, np.uint64), mean.ravel(), m2.ravel())
        raise ValueError(f"unknown reduction {op!r}")


def _axis_length(axis) -> int:
    return axis[1] if isinstance(axis, tuple) else len(axis)


def _validate_selection(selection, shape):
    if len(selection) != len(shape):
        raise ValueError(f"selection has {len(selection)} axes, the dataset {len(shape)}")
    return [_validate_axis(axis, n) for axis, n in zip(selection, shape)]


def _validate_axis(axis, n: int):
    if isinstance(axis, tuple):
        start, count, step = axis
        if step < 1 or start < 0 or count < 0:
            raise ValueError(f"invalid range {axis}")
        if count and start + (count - 1) * step >= n:
            raise ValueError(f"range {axis} out of bounds for axis of size {n}")
        return (int(start), int(count), int(step))
    if not isinstance(axis, np.ndarray) or axis.dtype != np.uint64 or axis.ndim != 1:
        raise ValueError("an index axis must be a 1-D uint64 numpy array")
    if len(axis) and (axis[-1] >= n or (np.diff(axis.astype(np.int64)) <= 0).any()):
        raise ValueError("index arrays must be strictly increasing and in bounds")
    return axis


def _validate_out(out, dtype, shape) -> None:
    if not isinstance(out, np.ndarray):
        raise TypeError("out must be a numpy array")
    if out.dtype != dtype:
        raise ValueError(f"out dtype {out.dtype} != dataset dtype {dtype}")
    if out.shape != shape:
        raise ValueError(f"out shape {out.shape} != selection shape {shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writeable")


def _read_orthogonal(ds, axes) -> np.ndarray:
    """h5py reads slices; index arrays are read as their bounding range, then taken."""
    slices = []
    takes = []
    for k, axis in enumerate(axes):
        if isinstance(axis, tuple):
            start, count, step = axis
            slices.append(slice(start, start + (count - 1) * step + 1, step))
        else:
            low, high = int(axis[0]), int(axis[-1])
            slices.append(slice(low, high + 1))
            takes.append((k, axis.astype(np.intp) - low))
    data = ds[tuple(slices)]
    for k, positions in takes:
        data = np.take(data, positions, axis=k)
    return data


def _link_exists(group, name: str) -> bool:
    return name not in ("", ".") and group.id.links.exists(name.encode())
