"""Small value types shared with h5py's API: link descriptions, the Empty marker, and
names as h5py takes them."""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, ValuesView
from typing import Any

import numpy as np

from .. import _native

__all__ = ["Empty", "HardLink", "SoftLink", "ExternalLink",
           "KeysViewHDF5", "ValuesViewHDF5", "ItemsViewHDF5",
           "ReadOnlyError", "ReadOnlyKeyError", "ReadOnlyRuntimeError", "ClosedKeyError",
           "ClosedTypeError"]


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

    # no __bool__: an Empty is true, as h5py's is (code testing `if value:` on an
    # attribute must take the same branch under both)

    def __repr__(self):
        return f"Empty(dtype={self.dtype!r})"


class HardLink:
    """A hard link, as returned by ``Group.get(name, getlink=True)``."""

    def __eq__(self, other):
        return True if isinstance(other, HardLink) else NotImplemented

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


class KeysViewHDF5(KeysView):
    """Names of a group's links or of attributes, as h5py's view (its repr, reversed)."""

    def __repr__(self):
        return f"<KeysViewHDF5 {list(self)}>"

    __str__ = __repr__

    def __reversed__(self):
        yield from reversed(self._mapping)


class ValuesViewHDF5(ValuesView):
    """Values of a group or of attributes; a dangling soft link gives None (as h5py)."""

    def __contains__(self, value):
        return any(value == v for v in self)

    def __iter__(self):
        for name in self._mapping:
            yield self._mapping.get(name)

    def __reversed__(self):
        for name in reversed(self._mapping):
            yield self._mapping.get(name)


class ItemsViewHDF5(ItemsView):
    """(name, value) pairs; a dangling soft link gives (name, None) (as h5py)."""

    def __contains__(self, item):
        name, value = item
        return name in self._mapping and self._mapping.get(name) == value

    def __iter__(self):
        for name in self._mapping:
            yield (name, self._mapping.get(name))

    def __reversed__(self):
        for name in reversed(self._mapping):
            yield (name, self._mapping.get(name))


class ReadOnlyError(_native.Error, ValueError):
    """h5turbo only reads: a mode other than 'r', or a call that would write the file.
    An OSError (h5turbo.Error) and a ValueError, as h5py raises either for those."""


# h5py on a file opened with mode 'r' raises what libhdf5's refusal maps to, which
# depends on the call: these are ReadOnlyErrors that are also that builtin class, so an
# `except` written for h5py catches them.
class ReadOnlyKeyError(ReadOnlyError, KeyError):
    """A write h5py refuses with KeyError on a read-only file: deleting a link or an
    attribute, replacing an existing attribute, make_scale of a scale."""


class ReadOnlyRuntimeError(ReadOnlyError, RuntimeError):
    """A write h5py refuses with RuntimeError on a read-only file: resize, copy, and
    the dimension scale calls (make_scale, attach_scale, detach_scale, setting a label)."""


def read_only_error(what: str, kind: type = ReadOnlyError) -> ReadOnlyError:
    """The error for an h5py call that would write the file (``kind``: the ReadOnlyError
    class that is also what h5py raises there)."""
    return kind(f"{what}: the file is read-only (h5turbo only reads; write files with "
                "h5turbo.write or h5py)")


class ClosedKeyError(_native.ClosedError, KeyError):
    """A lookup by name (a link, an attribute) in a closed file: h5py raises KeyError
    there, as for a name that is not found."""


class DanglingReferenceError(_native.FormatError, KeyError, RuntimeError):
    """An object reference to an address that holds no object (the object was deleted
    after the reference was made, or the reference is damaged): h5py raises KeyError
    ("Unable to open object by token") there, and RuntimeError where it asks the
    dataspace of a region reference's dataset (regionref.selection / shape)."""


class ClosedTypeError(_native.ClosedError, TypeError):
    """hash() of an object first asked after its file was closed: h5py raises TypeError
    there (libhdf5 no longer gives the file number and address the hash is made of)."""


def closed_error(file, kind: type = _native.ClosedError) -> Exception:
    """The error for using an object of a closed file (an h5turbo.ClosedError, which is
    also the ValueError or RuntimeError h5py raises; ``kind`` for another class)."""
    return kind(f"{file._path_text}: the file is closed")


# A name whose bytes are not UTF-8 (Latin-1, from an old C program) comes from the
# native side with each stray byte 0x80-0xFF as the code point U+10FF80-U+10FFFF (the
# core's format/names.rs); h5py hands such a name to its users as bytes.
_FIRST_STRAY = "\U0010ff80"
_STRAY_TO_SURROGATE = {0x10FF00 + b: 0xDC00 + b for b in range(0x80, 0x100)}
_SURROGATE_TO_STRAY = {0xDC00 + b: 0x10FF00 + b for b in range(0x80, 0x100)}


def text_name(name: Any, error: str) -> str:
    """A name (a path, an attribute's name) as h5py takes it: str, or bytes (a name
    that is not UTF-8 is looked up by its bytes, as h5py does); anything else is a
    TypeError with the message ``error``."""
    if isinstance(name, bytes):
        try:
            return name.decode("utf-8")
        except UnicodeDecodeError:
            return name.decode("utf-8", "surrogateescape").translate(_SURROGATE_TO_STRAY)
    if isinstance(name, str):
        return name
    raise TypeError(error)


def user_name(name: str) -> str | bytes:
    """A name or path from the native side as h5py gives it: str, or bytes where the
    file's bytes are not UTF-8."""
    if name.isascii() or max(name) < _FIRST_STRAY:
        return name
    return name.translate(_STRAY_TO_SURROGATE).encode("utf-8", "surrogateescape")


def user_names(names: list[str]) -> list[str | bytes]:
    """``user_name`` of each name, at the cost of one scan when all are text."""
    joined = "".join(names)
    if joined.isascii() or max(joined) < _FIRST_STRAY:
        return names
    return [user_name(name) for name in names]


def stored_order(name: str) -> bytes:
    """The sort key that orders native names as the file does: by their stored bytes."""
    stored = user_name(name)
    return stored if isinstance(stored, bytes) else stored.encode("utf-8")
