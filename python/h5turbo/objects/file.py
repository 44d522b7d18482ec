"""File: an HDF5 file opened read-only; it is also its root group."""

from __future__ import annotations

import os
from typing import Any

from .. import _native
from .group import Group, wrap
from .references import Reference, RegionReference

__all__ = ["File"]


class File(Group):
    """An HDF5 file opened read-only (h5py's ``File(path, 'r')``).

    Reads never take a lock: one File may be shared by any number of threads.
    """

    def __init__(self, name: Any, mode: str = "r"):
        if mode != "r":
            raise ValueError(f"h5turbo opens files read-only: mode must be 'r', not {mode!r}")
        path = os.fspath(name)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        self._native_file = _native.File(path)
        self._identity = os.path.realpath(path)
        self._externals: dict[str, File] = {}
        super().__init__(self._native_file.get("/"), self, "/")

    # ------------------------------------------------------------------ file properties

    @property
    def filename(self) -> str:
        return os.fspath(self._native_file.path)  # the native side may give a pathlib.Path

    @property
    def mode(self) -> str:
        return "r"

    @property
    def userblock_size(self) -> int:
        return self._native_file.userblock_size

    @property
    def closed(self) -> bool:
        return self._native_file.closed

    def close(self) -> None:
        """Close this file and the files its external links opened; idempotent."""
        for external in self._externals.values():
            external.close()
        self._externals.clear()
        self._native_file.close()

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self):
        if self.closed:
            return "<Closed HDF5 file>"
        return f'<HDF5 file "{os.path.basename(self.filename)}" (mode {self.mode})>'

    # ------------------------------------------------------------------ internals

    def _root_native(self):
        return self._obj

    def _dereference(self, ref: Reference):
        """The object a reference names (for a region reference: its dataset), named by
        a path to it as h5py names dereferenced objects (None if no link reaches it)."""
        if not ref:
            raise ValueError("Invalid HDF5 object reference (null reference)")
        address = ref.address
        if isinstance(ref, RegionReference):
            address = self._native_file.region(*ref.heap_id)[0]
        native_obj, path = self._native_file.dereference(address)
        return wrap(native_obj, self, path)

    def _open_external(self, filename: str) -> "File":
        """The target file of an external link, opened once and closed with this file."""
        path = _find_external_file(filename, os.path.dirname(self.filename))
        if path not in self._externals:
            self._externals[path] = File(path)
        return self._externals[path]


def _find_external_file(filename: str, parent_dir: str) -> str:
    """Where HDF5 would look: HDF5_EXT_PREFIX, the linking file's folder, then as given."""
    if os.path.isabs(filename):
        candidates = [filename]
    else:
        prefixes = [p for p in os.environ.get("HDF5_EXT_PREFIX", "").split(os.pathsep) if p]
        candidates = [os.path.join(p, filename) for p in prefixes]
        candidates += [os.path.join(parent_dir, filename), filename]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return os.path.realpath(candidate)
    raise KeyError(f"Unable to open external link target: file {filename!r} not found")
