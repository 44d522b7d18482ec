"""File arguments that tune libhdf5's caches and allocation (h5py's file access
property list): a reader has no use for them, but h5py checks them even in mode 'r',
so a mistyped value (``rdcc_nbytes="64M"``) fails here as it fails there, with the
exception h5py raises, instead of passing unnoticed."""

from __future__ import annotations

import math
import operator
from typing import Any

_SIZE_T_END = 2**64
_LONG_END = 2**63


def check_access_args(rdcc_nslots: Any, rdcc_nbytes: Any, rdcc_w0: Any, page_buf_size: Any,
                      alignment_threshold: Any, alignment_interval: Any, track_times: Any) -> None:
    """TypeError, ValueError or OverflowError, each as h5py 3 raises it."""
    if rdcc_nbytes is not None:
        _unsigned("rdcc_nbytes", _c_integer("rdcc_nbytes", rdcc_nbytes))
    if rdcc_nslots is not None:
        _signed_long("rdcc_nslots", _c_integer("rdcc_nslots", rdcc_nslots))
    if rdcc_w0 is not None:
        _cache_weight(rdcc_w0)
    if page_buf_size is not None:
        _unsigned("page_buf_size", _int_of_anything("page_buf_size", page_buf_size))
    _unsigned("alignment_threshold", _c_integer("alignment_threshold", alignment_threshold))
    if _unsigned("alignment_interval", _c_integer("alignment_interval", alignment_interval)) == 0:
        raise ValueError("alignment_interval is 0: alignment must be positive")
    if track_times not in (None, True, False):
        raise TypeError(f"track_times must be either True or False, not {track_times!r}")


def check_core_driver_args(kwds: dict) -> None:
    """The core driver's block_size (a size) and backing_store (a C boolean)."""
    if "block_size" in kwds:
        _unsigned("block_size", _c_integer("block_size", kwds["block_size"]))
    if "backing_store" in kwds:
        store = _c_integer("backing_store", kwds["backing_store"])
        if not 0 <= store <= 1:
            raise OverflowError(f"backing_store {store} is not a boolean (True or False)")


def _c_integer(name: str, value: Any) -> int:
    """What Cython's conversion to a C integer takes: an integer, or a float (truncated;
    NaN and infinities refused); TypeError for anything else (a str, None)."""
    if isinstance(value, float) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "f"):
        if not math.isfinite(value):
            raise ValueError(f"{name} is {value}: cannot convert float {value} to an integer")
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def _int_of_anything(name: str, value: Any) -> int:
    """h5py passes page_buf_size through int() first: '100' is taken, 'abc' is a ValueError."""
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} {value!r} is not an integer") from None


def _unsigned(name: str, value: int) -> int:
    if value < 0:
        raise OverflowError(f"{name} is {value}: it cannot be negative")
    if value >= _SIZE_T_END:
        raise OverflowError(f"{name} is {value}: too large for an unsigned 64-bit size")
    return value


def _signed_long(name: str, value: int) -> int:
    if not -_LONG_END <= value < _LONG_END:
        raise OverflowError(f"{name} is {value}: too large for a 64-bit integer")
    return value


def _cache_weight(weight: Any) -> None:
    try:
        weight = float(weight) if not isinstance(weight, (str, bytes)) else None
    except TypeError:
        weight = None
    if weight is None:
        raise TypeError("rdcc_w0 must be a real number between 0.0 and 1.0")
    if not math.isnan(weight) and not 0.0 <= weight <= 1.0:  # h5py lets NaN through
        raise ValueError(f"rdcc_w0 is {weight}: the raw data cache w0 value must be between 0.0 and 1.0 inclusive")
