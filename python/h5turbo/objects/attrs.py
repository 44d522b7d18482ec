"""Attributes of a group, dataset or committed datatype, as a read-only mapping."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from .. import _native
from .types import (ClosedKeyError, ItemsViewHDF5, KeysViewHDF5, ReadOnlyError, ReadOnlyKeyError,
                    ValuesViewHDF5, closed_error, read_only_error, text_name, user_names)
from .values import attribute_value

__all__ = ["AttributeManager", "AttrID"]


class AttributeManager(MutableMapping):
    """``obj.attrs``: attribute name -> value, with the values h5py would give.

    A MutableMapping as h5py's, whose writes the file refuses as h5py refuses them on a
    file opened read-only, each with the class h5py raises there: so pop, popitem,
    update, setdefault and clear (which, as h5py's, ends quietly at the first refused
    delete) behave as h5py's."""

    def __init__(self, native_obj, file):
        self._obj = native_obj
        self._file = file

    def __getitem__(self, name: str | bytes) -> Any:
        try:
            return attribute_value(self._obj.attr(_attribute_name(name)))
        except _native.ClosedError:
            # h5py: KeyError (the attribute cannot be opened), so attrs.get gives None
            raise closed_error(self._file, ClosedKeyError) from None

    def get_id(self, name: str | bytes) -> "AttrID":
        """h5py's ``attrs.get_id(name)``, for what code written for h5py asks of it
        (anndata, h5netcdf and ont-fast5-api ask ``.dtype`` and ``.shape``)."""
        try:
            dtype, shape, stored = self._obj.attr_info(_attribute_name(name))
        except _native.ClosedError:
            raise closed_error(self._file, ClosedKeyError) from None
        return AttrID(_attribute_name(name), dtype, shape, stored, self._file)

    def __contains__(self, name: object) -> bool:
        """TypeError for a name that is not str or bytes (``3 in attrs``), as h5py's,
        whether the file is open or closed."""
        return self._obj.has_attr(_attribute_name(name))

    def __iter__(self):
        return iter(user_names(self._obj.attr_names()))

    def __len__(self) -> int:
        return self._obj.attr_count()

    # writing: refused as h5py refuses it on a file opened read-only. h5py deletes an
    # existing attribute before creating the new one (the delete fails: KeyError) and
    # creates a new one straight away (OSError); a name that is not str or bytes is a
    # TypeError before anything else, then on a closed file ClosedError (h5py:
    # RuntimeError or ValueError).
    def __setitem__(self, name: str | bytes, value: Any) -> None:
        raise self._write_error(name, "setting")

    def create(self, name: str | bytes, data: Any, shape: Any = None, dtype: Any = None) -> None:
        raise self._write_error(name, "creating")

    def modify(self, name: str | bytes, value: Any) -> None:
        _attribute_name(name)
        self._check_open()
        # h5py modifies an existing attribute in place (OSError) and creates a missing one
        raise read_only_error(f"{self._where(name)}: modifying attribute")

    def __delitem__(self, name: str | bytes) -> None:
        _attribute_name(name)
        self._check_open()
        raise read_only_error(f"{self._where(name)}: deleting attribute", ReadOnlyKeyError)

    def _write_error(self, name: Any, doing: str) -> Exception:
        _attribute_name(name)
        self._check_open()
        kind = ReadOnlyKeyError if name in self else ReadOnlyError
        return read_only_error(f"{self._where(name)}: {doing} attribute", kind)

    def _where(self, name: Any) -> str:
        return f"{self._file._path_text}: {self._obj.name}: {name!r}"

    def _check_open(self) -> None:
        if self._file.closed:
            raise closed_error(self._file)

    # h5py's views (their repr names the keys); Mapping's would print the manager
    def keys(self) -> KeysViewHDF5:
        return KeysViewHDF5(self)

    def values(self) -> ValuesViewHDF5:
        return ValuesViewHDF5(self)

    def items(self) -> ItemsViewHDF5:
        return ItemsViewHDF5(self)

    def __repr__(self) -> str:
        if self._file.closed:
            return "<Attributes of closed HDF5 object>"
        return f"<Attributes of HDF5 object at {id(self)}>"


class AttrID:
    """What h5py's AttrID answers about an attribute, with no libhdf5 identifier behind
    it: ``name`` (bytes, as h5py's), ``dtype``, ``shape`` (None for an empty attribute),
    ``get_storage_size()`` and ``valid``. The value is ``attrs[name]``."""

    def __init__(self, name: str, dtype, shape: tuple | None, storage_size: int, file):
        self.name = name.encode("utf-8")
        self.dtype = dtype
        self.shape = shape
        self._storage_size = storage_size
        self._file = file

    def get_storage_size(self) -> int:
        """Bytes the value takes in the file: elements x the stored type's size (0 for an
        empty attribute, where h5py raises RuntimeError)."""
        return self._storage_size

    @property
    def valid(self) -> bool:
        return not self._file.closed

    def __repr__(self) -> str:
        return f"<h5turbo AttrID {self.name!r}: {self.shape} {self.dtype}>"


def _attribute_name(name: object) -> str:
    return text_name(name, f"attribute names are str or bytes, not {type(name).__name__}")
