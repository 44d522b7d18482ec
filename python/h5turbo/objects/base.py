"""What every object in a file shares: name, file, parent, attrs, identity."""

from __future__ import annotations

import posixpath
from typing import Optional

from .attrs import AttributeManager
from .references import Reference, RegionReference, make_region, region_selection_shape
from .types import ClosedTypeError, closed_error, user_name

__all__ = ["HLObject", "RegionProxy", "cached_property"]


class HLObject:
    """A group, dataset or committed datatype reached in an open File."""

    def __init__(self, native_obj, file, name: str):
        self._obj = native_obj
        self._file = file
        self._name = name

    @property
    def id(self):
        """The native object (an ``h5turbo._native.Object``)."""
        return self._obj

    @property
    def name(self) -> Optional[str]:
        """The absolute path this object was reached by (through a soft link: the link's
        path, as h5py), kept here rather than asked of the native side; None once the
        file is closed, as h5py."""
        return user_name(self._name) if self else None

    @property
    def file(self):
        """The File this object is in; ClosedError (a ValueError, as h5py's) once it is
        closed. Internal code that must reach the File after close uses ``_file``."""
        self._check_open()
        return self._file

    @property
    def parent(self):
        """The group holding the link this object was reached by; ClosedError (a
        ValueError, as h5py's) once the file is closed."""
        self._check_open()
        return self._file[posixpath.dirname(self._name)]

    @property
    def attrs(self) -> AttributeManager:
        return AttributeManager(self._obj, self._file)

    @property
    def ref(self) -> Reference:
        """An object reference to this object (h5py's ``ref``): ``f[obj.ref]`` opens it;
        ClosedError (a ValueError, as h5py's) once the file is closed."""
        self._check_open()
        return Reference(self._obj.address)

    @property
    def regionref(self) -> "RegionProxy":
        """``ds.regionref[sel]`` makes a region reference to a selection of a dataset;
        ``.shape(ref)`` / ``.selection(ref)`` tell its dataset's and selection's shapes
        (h5py's regionref)."""
        return RegionProxy(self)

    def _key(self):
        # two hard links to one object are the same object, as in h5py
        return (self._file._identity, self._obj.address)

    def __eq__(self, other):
        # another type decides for itself (unittest.mock.ANY equals anything), as in h5py
        return self._key() == other._key() if isinstance(other, HLObject) else NotImplemented

    def __hash__(self):
        """Kept from the first call, as h5py keeps the hash libhdf5 gave it: an object
        hashed while the file was open stays findable in a set or dict after close;
        hashed first after close it cannot be (h5py: TypeError; ClosedTypeError is one)."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            if self._file.closed:
                raise ClosedTypeError(f"{self._file._path_text}: {self._name}: an object of a closed file "
                                      "cannot be hashed (h5py neither): hash it while the file is open")
            cached = self.__dict__["_hash"] = hash(self._key())
        return cached

    def __bool__(self):
        """False once the file is closed (h5py's 'valid'); never by emptiness."""
        return not self._file.closed

    def _check_open(self) -> None:
        """ClosedError (an OSError, ValueError and RuntimeError: what h5py raises
        varies by call) when the file is closed."""
        if self._file.closed:
            raise closed_error(self._file)


class RegionProxy:
    """h5py's ``obj.regionref`` (its _RegionProxy)."""

    def __init__(self, obj: HLObject):
        self.obj = obj

    def __getitem__(self, index) -> RegionReference:
        self.obj._check_open()  # h5py: RuntimeError (ClosedError is one)
        if getattr(self.obj._obj, "kind", None) != "dataset":
            raise TypeError("Region references can only be made to datasets")
        kind, data = make_region(index, self.obj.shape)
        return RegionReference._made(self.obj._obj.address, kind, data)

    def shape(self, ref: RegionReference) -> tuple:
        """The shape of the dataset ``ref`` points into (any object of the file works)."""
        return self.obj.file[ref].shape

    def selection(self, ref: RegionReference) -> tuple:
        """The shape of the selection ``ref`` holds, as h5py guesses it."""
        dataset = self.obj.file[ref]
        _address, kind, data = self.obj.file._region_of(ref)
        if dataset.shape is None:
            return None
        if not dataset.shape:
            return ()
        return region_selection_shape(kind, data, dataset.shape)


class cached_property:
    """functools.cached_property without the lock Python < 3.12 takes there (one per
    class, shared by every instance): metadata of a read-only file never changes, so two
    threads racing here at worst both compute the same value."""

    def __init__(self, func):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.func(obj)
        return value
