"""Attributes of a group, dataset or committed datatype, as a read-only mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .types import ItemsViewHDF5, KeysViewHDF5, ValuesViewHDF5, read_only_error, text_name
from .values import attribute_value

__all__ = ["AttributeManager"]


class AttributeManager(Mapping):
    """``obj.attrs``: attribute name -> value, with the values h5py would give."""

    def __init__(self, native_obj, file):
        self._obj = native_obj
        self._file = file

    def __getitem__(self, name: str | bytes) -> Any:
        return attribute_value(self._obj.attr(_attribute_name(name)))

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, (str, bytes)):
            return False
        return _attribute_name(name) in self._obj.attr_names()

    def __iter__(self):
        return iter(self._obj.attr_names())

    def __len__(self) -> int:
        return len(self._obj.attr_names())

    # writing: refused with an OSError, as h5py refuses it on a file opened read-only
    def __setitem__(self, name: str | bytes, value: Any) -> None:
        raise read_only_error(f"{self._file.filename}: setting attribute {name!r} of {self._obj.name}")

    def create(self, name: str | bytes, data: Any, shape: Any = None, dtype: Any = None) -> None:
        raise read_only_error(f"{self._file.filename}: creating attribute {name!r} of {self._obj.name}")

    def modify(self, name: str | bytes, value: Any) -> None:
        raise read_only_error(f"{self._file.filename}: modifying attribute {name!r} of {self._obj.name}")

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


def _attribute_name(name: object) -> str:
    return text_name(name, f"attribute names are str or bytes, not {type(name).__name__}")
