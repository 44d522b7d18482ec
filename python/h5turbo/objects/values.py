"""Values as h5py shows them, shared by the object model, the formats and the tools."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .types import Empty

__all__ = ["attribute_value", "string_encoding", "text"]


def attribute_value(value: Any) -> Any:
    """An attribute value from the native side, as h5py gives it: a null dataspace,
    reported as ('empty', dtype), becomes Empty(dtype)."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "empty":
        return Empty(value[1])
    return value


def string_encoding(dtype: np.dtype) -> Optional[str]:
    """The encoding h5py records for a string dtype; None when it is not a string type."""
    metadata = dtype.metadata or {}
    if dtype.kind == "S":
        return metadata.get("h5py_encoding", "ascii")
    vlen = metadata.get("vlen")
    if dtype.kind == "O" and vlen in (str, bytes):
        return "utf-8" if vlen is str else "ascii"
    return None


def text(value: Any) -> str:
    """A string attribute (bytes, str or a 0-d array of either) as str."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray) and value.shape == ():
        return text(value[()])
    return str(value)
