"""Small value types shared with h5py's API: link descriptions, the Empty marker, and
names as h5py takes them."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Empty", "HardLink", "SoftLink", "ExternalLink"]


class Empty:
    """The value of a dataset or attribute with a null dataspace (no shape, no data)."""

    shape = None
    size = None

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def __eq__(self, other):
        return isinstance(other, Empty) and self.dtype == other.dtype

    def __hash__(self):
        return hash((Empty, self.dtype))

    def __bool__(self):
        return False

    def __repr__(self):
        return f"Empty(dtype={self.dtype!r})"


class HardLink:
    """A hard link, as returned by ``Group.get(name, getlink=True)``."""

    def __eq__(self, other):
        return isinstance(other, HardLink)

    def __hash__(self):
        return hash(HardLink)

    def __repr__(self):
        return "<HardLink>"


class SoftLink:
    """A soft link: a path (absolute or relative) inside the same file."""

    def __init__(self, path: str):
        self._path = str(path)

    @property
    def path(self) -> str:
        return self._path

    def __eq__(self, other):
        return isinstance(other, SoftLink) and self.path == other.path

    def __hash__(self):
        return hash((SoftLink, self.path))

    def __repr__(self):
        return f'<SoftLink to "{self.path}">'


class ExternalLink:
    """A link to an object in another HDF5 file."""

    def __init__(self, filename: str, path: str):
        self._filename = str(filename)
        self._path = str(path)

    @property
    def filename(self) -> str:
        return self._filename

    @property
    def path(self) -> str:
        return self._path

    def __eq__(self, other):
        return (isinstance(other, ExternalLink)
                and (self.filename, self.path) == (other.filename, other.path))

    def __hash__(self):
        return hash((ExternalLink, self.filename, self.path))

    def __repr__(self):
        return f'<ExternalLink to "{self.path}" in file "{self.filename}">'


def text_name(name: Any, error: str) -> str:
    """A name (a path, an attribute's name) as h5py takes it: str, or bytes of UTF-8;
    anything else is a TypeError with the message ``error``."""
    if isinstance(name, bytes):
        return name.decode("utf-8")
    if isinstance(name, str):
        return name
    raise TypeError(error)
