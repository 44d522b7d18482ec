"""h5py's module-level dtype helpers, for code written against h5py that reads with
``import h5turbo as h5py``: the special dtypes are numpy dtypes with h5py's metadata
(``vlen``, ``enum``, ``ref``, ``h5py_encoding``, ``h5py_opaque``), which h5turbo's
datasets and attributes carry as h5py's do."""

from __future__ import annotations

import os
from collections import namedtuple
from typing import Any

import numpy as np

from .references import Reference, RegionReference

__all__ = [
    "string_info", "string_dtype", "check_string_dtype", "vlen_dtype", "check_vlen_dtype",
    "enum_dtype", "check_enum_dtype", "opaque_dtype", "check_opaque_dtype", "check_ref_dtype",
    "special_dtype", "check_dtype", "check_complex_dtype", "complex_compat_dtype", "is_hdf5",
]

string_info = namedtuple("string_info", ["encoding", "length"])

_ENCODINGS = {"utf-8": "utf-8", "utf8": "utf-8", "ascii": "ascii"}


def _metadata(dt: Any) -> dict:
    """The h5py metadata of a dtype (or of what numpy reads as one); {} for anything
    else, as h5py's checks answer None (False) for what has no dtype metadata."""
    try:
        return np.dtype(dt).metadata or {}
    except TypeError:
        return {}


def string_dtype(encoding: str = "utf-8", length: int | None = None) -> np.dtype:
    """A string dtype: variable length (``length=None``, numpy object) or fixed length
    (``S``), UTF-8 or ASCII, as h5py's ``string_dtype``."""
    try:
        encoding = _ENCODINGS[encoding.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"Invalid encoding ({encoding!r}); 'utf-8' or 'ascii' allowed") from None
    if length is None:
        return np.dtype("O", metadata={"vlen": str if encoding == "utf-8" else bytes})
    if not isinstance(length, (int, np.integer)) or length < 0:
        raise TypeError(f"length must be an integer >= 0 or None, not {length!r}")
    return np.dtype(f"S{int(length)}", metadata={"h5py_encoding": encoding})


def check_string_dtype(dt: Any) -> string_info | None:
    """``string_info(encoding, length)`` for a string dtype (length None: variable
    length), else None."""
    dt = np.dtype(dt)
    vlen = _metadata(dt).get("vlen")
    if vlen is str:
        return string_info("utf-8", None)
    if vlen is bytes:
        return string_info("ascii", None)
    if dt.kind == "S":
        return string_info(_metadata(dt).get("h5py_encoding", "ascii"), dt.itemsize)
    return None


def vlen_dtype(basetype: Any) -> np.dtype:
    """A variable-length sequence dtype of ``basetype``."""
    return np.dtype("O", metadata={"vlen": basetype})


def check_vlen_dtype(dt: Any) -> Any:
    """The base type of a variable-length dtype (str or bytes for strings), else None."""
    return _metadata(dt).get("vlen")


def enum_dtype(values_dict: dict, basetype: Any = np.uint8) -> np.dtype:
    """An enum dtype: integers of ``basetype`` named by ``values_dict``."""
    dt = np.dtype(basetype)
    if dt.kind not in "iu":
        raise TypeError(f"enum base type must be an integer type, not {dt}")
    return np.dtype(dt, metadata={"enum": dict(values_dict)})


def check_enum_dtype(dt: Any) -> dict | None:
    """The name -> value dict of an enum dtype, else None."""
    return _metadata(dt).get("enum")


def opaque_dtype(np_dtype: Any) -> np.dtype:
    """A dtype marked as HDF5 opaque data."""
    dt = np.dtype(np_dtype)
    if dt.hasobject:
        raise TypeError("an opaque dtype cannot hold objects")
    return np.dtype(dt, metadata={"h5py_opaque": True})


def check_opaque_dtype(dt: Any) -> bool:
    """Whether the dtype is marked as HDF5 opaque data."""
    return bool(_metadata(dt).get("h5py_opaque", False))


def check_ref_dtype(dt: Any) -> type | None:
    """Reference or RegionReference for a reference dtype, else None."""
    return _metadata(dt).get("ref")


def complex_compat_dtype(spec: Any) -> np.dtype:
    """The compound of two floats named r and i that stores a complex dtype where the
    file format has no complex type (HDF5 1.x), as h5py 3.16 makes it."""
    dt = np.dtype(spec)
    if dt.kind != "c":
        raise TypeError(f"{dt!r} is not a complex dtype")
    part = np.dtype(f"{dt.byteorder}f{dt.itemsize // 2}")
    return np.dtype([("r", part), ("i", part)])


def check_complex_dtype(dt: np.dtype, names: tuple | None = ("r", "i")) -> np.dtype | None:
    """The complex dtype a dtype stands for: a complex dtype itself, or a packed compound
    of two floats of one type whose field names are ``names`` (any names for None), as
    complex_compat_dtype makes; None for anything else (as h5py 3.16)."""
    if dt.kind == "c":
        return dt
    if dt.names is None or len(dt.names) != 2 or (names is not None and dt.names != tuple(names)):
        return None
    real, imag = (dt.fields[name] for name in dt.names)
    part = real[0]
    if part.kind != "f" or imag[0] != part or (real[1], imag[1]) != (0, part.itemsize) \
            or dt.itemsize != 2 * part.itemsize:
        return None
    return np.dtype(f"{part.byteorder}c{dt.itemsize}")


def special_dtype(**kwds: Any) -> np.dtype:
    """h5py's older spelling: ``vlen=base``, ``enum=(base, values)`` or
    ``ref=Reference|RegionReference`` (exactly one)."""
    if len(kwds) != 1:
        raise TypeError("exactly one keyword: vlen, enum or ref")
    (name, value), = kwds.items()
    if name == "vlen":
        return vlen_dtype(value)
    if name == "enum":
        try:
            base, values = value
        except (TypeError, ValueError):
            raise TypeError("enum= takes a (basetype, values_dict) pair") from None
        return enum_dtype(values, base)
    if name == "ref":
        if value not in (Reference, RegionReference):
            raise ValueError("ref= takes h5turbo.Reference or h5turbo.RegionReference")
        return np.dtype("O", metadata={"ref": value})
    raise TypeError(f"unknown keyword {name!r}: vlen, enum or ref")


def check_dtype(**kwds: Any) -> Any:
    """h5py's older spelling: ``vlen=dt``, ``enum=dt`` or ``ref=dt`` (exactly one)."""
    if len(kwds) != 1:
        raise TypeError("exactly one keyword: vlen, enum or ref")
    (name, dt), = kwds.items()
    if name not in ("vlen", "enum", "ref"):
        raise TypeError(f"unknown keyword {name!r}: vlen, enum or ref")
    return _metadata(dt).get(name)


_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def is_hdf5(fname: Any) -> bool:
    """Whether the file holds an HDF5 superblock signature (at 0, 512, 1024 ...: after
    a user block); False for a path that is not a file."""
    path = os.path.abspath(os.fspath(fname))
    if not os.path.isfile(path):
        return False
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        offset = 0
        while offset + len(_SIGNATURE) <= size:
            f.seek(offset)
            if f.read(len(_SIGNATURE)) == _SIGNATURE:
                return True
            offset = 512 if offset == 0 else offset * 2
    return False
