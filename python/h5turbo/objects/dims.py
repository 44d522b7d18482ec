"""Dimension scales as h5py shows them (``ds.dims``), read from the attributes the HDF5
Dimension Scale convention (H5DS) stores, through the ordinary attribute and reference
machinery:

- on a dataset: DIMENSION_LIST (per axis, a variable-length list of object references
  to the scales attached there) and DIMENSION_LABELS (a label per axis);
- on a scale: CLASS = "DIMENSION_SCALE", NAME (its name, may be empty) and
  REFERENCE_LIST (the datasets it is attached to, kept by writers; not needed here).
"""

from __future__ import annotations

import operator

import warnings
from typing import Any, Union

import numpy as np

from .. import _native
from .types import ReadOnlyRuntimeError, read_only_error

__all__ = ["DimensionManager", "DimensionProxy", "is_scale"]


def is_scale(dataset) -> bool:
    """H5DSis_scale: a CLASS attribute of fixed-length, null-terminated strings
    reading "DIMENSION_SCALE" (a variable-length or padded CLASS is not one, as in
    libhdf5 and h5py)."""
    return dataset._obj.is_dimension_scale()


def scale_name(dataset) -> Union[str, bytes]:
    """H5DSget_scale_name as h5py decodes it: '' when the scale has no NAME."""
    if "NAME" not in dataset.attrs:
        return ""
    value = dataset.attrs["NAME"]
    return _text(value) if isinstance(value, (str, bytes)) else ""


def _encoded(name: object) -> object:
    """A scale name as h5py compares it (str as UTF-8 bytes; others as they are)."""
    return name.encode() if isinstance(name, str) else name


def _text(value: Union[str, bytes]) -> Union[str, bytes]:
    """A name as h5py gives it: str when it is UTF-8, else the bytes (h5py's _d); up to
    the first NUL, as a C string is read."""
    if isinstance(value, str):
        # a str with surrogate escapes held bytes that are not UTF-8: h5py gives those
        try:
            value = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # other lone surrogates: no bytes behind them
            return value.split("\0", 1)[0]
    raw = bytes(value).split(b"\0", 1)[0]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class AttachedScaleError(_native.FormatError, RuntimeError):
    """A DIMENSION_LIST entry names no object the file still has, or one that is no
    dimension scale (the scale was deleted after being attached, and its space maybe
    reused): libhdf5's H5DSiterate or H5DSget_scale_name fails there, and h5py raises
    RuntimeError; this names the file, the dataset and the axis."""


class _NoScale(KeyError, IndexError):
    """No scale at that position: the KeyError documented for a missing scale, and the
    IndexError of a list's position."""


class DimensionProxy:
    """One axis of a dataset (h5py's DimensionProxy): its label and attached scales.
    Iterating gives the scales' names, as h5py."""

    def __init__(self, dataset, axis: int):
        self._dataset = dataset
        self._axis = axis

    @property
    def label(self) -> Union[str, bytes]:
        """DIMENSION_LABELS[axis]; '' when the dataset has no labels."""
        if "DIMENSION_LABELS" not in self._dataset.attrs:
            return ""
        labels = np.asarray(self._dataset.attrs["DIMENSION_LABELS"], dtype=object).reshape(-1)
        if self._axis >= len(labels) or labels[self._axis] is None:
            return ""
        return _text(labels[self._axis])

    @label.setter
    def label(self, value: Union[str, bytes]) -> None:
        raise self._write_error(f"setting the label to {value!r}")

    # attaching, detaching, labelling: refused with RuntimeError, as h5py's H5DS calls
    # fail on a file opened read-only (ClosedError, a ValueError too, once it is closed)
    def attach_scale(self, dset) -> None:
        raise self._write_error(f"attach_scale({getattr(dset, 'name', dset)!r})")

    def detach_scale(self, dset) -> None:
        raise self._write_error(f"detach_scale({getattr(dset, 'name', dset)!r})")

    def _write_error(self, what: str) -> Exception:
        self._dataset._check_open()
        return read_only_error(f"{self._dataset.file.filename}: {self._dataset.name}: dimension "
                               f"{self._axis}: {what}", ReadOnlyRuntimeError)

    def _refs(self) -> list:
        """The object references DIMENSION_LIST holds for this axis (null ones left out)."""
        if "DIMENSION_LIST" not in self._dataset.attrs:
            return []
        lists = np.asarray(self._dataset.attrs["DIMENSION_LIST"], dtype=object).reshape(-1)
        if self._axis >= len(lists):
            return []
        return [ref for ref in np.asarray(lists[self._axis], dtype=object).reshape(-1) if ref]

    def _scales(self) -> list:
        """The attached scale datasets, in attachment order (H5DSiterate)."""
        return [self._open_scale(ref) for ref in self._refs()]

    def _open_scale(self, ref) -> Any:
        try:
            return self._dataset.file[ref]
        except (_native.FormatError, KeyError) as err:
            raise self._attached_error("an attached dimension scale is gone", err) from err

    def _attached_error(self, problem: str, detail: object) -> AttachedScaleError:
        return AttachedScaleError(f"{self._dataset.file.filename}: {self._dataset.name}: dimension "
                                  f"{self._axis}: {problem} (deleted after it was attached?): {detail}")

    def _name_of(self, scale) -> Union[str, bytes]:
        """H5DSget_scale_name, which fails for an attached object that is no scale."""
        if not getattr(scale, "is_scale", False):  # a group or a named type has none
            raise self._attached_error("an attached object is not a dimension scale",
                                       getattr(scale, "name", scale))
        return scale_name(scale)

    def __len__(self) -> int:
        """H5DSget_num_scales: counts the attached references without opening them, so a
        deleted scale still counts, as in h5py."""
        return len(self._refs())

    def __getitem__(self, item: Union[int, str]) -> Any:
        """The scale at position ``item``, or the first one whose name is ``item``."""
        if isinstance(item, int):
            scales = self._scales()
            if not -len(scales) <= item < len(scales):
                raise _NoScale(f"no dimension scale at position {item}: {len(scales)} attached to this axis")
            return scales[item]
        # compared as bytes, as h5py compares them: a str or a bytes name finds a scale;
        # in attachment order, opened one by one (H5DSiterate stops at the match), so a
        # deleted scale or an object that is no scale fails only when met first
        for scale in map(self._open_scale, self._refs()):
            if _encoded(self._name_of(scale)) == _encoded(item):
                return scale
        raise KeyError(item)

    def __iter__(self):
        yield from self.keys()

    def items(self) -> list:
        """(name, scale dataset) per attached scale."""
        return [(self._name_of(scale), scale) for scale in self._scales()]

    def keys(self) -> list:
        return [name for name, _scale in self.items()]

    def values(self) -> list:
        """The scales (through items(), as h5py: an attached object that is no scale fails)."""
        return [scale for _name, scale in self.items()]

    def _key(self):
        return (type(self), self._dataset._key(), self._axis)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, DimensionProxy) and self._key() == other._key()

    def __repr__(self):
        if not self._dataset:
            return "<Dimension of closed HDF5 dataset>"
        return f'<"{self.label}" dimension {self._axis} of HDF5 dataset at {id(self._dataset)}>'


class DimensionManager:
    """``ds.dims`` (h5py's DimensionManager): one DimensionProxy per axis."""

    def __init__(self, dataset):
        self._dataset = dataset

    def __len__(self) -> int:
        return self._dataset.ndim

    def __getitem__(self, index: int) -> DimensionProxy:
        # an axis number: numpy's integers, and True (numpy's too) as 1, as h5py takes them
        index = operator.index(int(index) if isinstance(index, np.bool_) else index)
        if index > len(self) - 1:
            raise IndexError("Index out of range")
        if index < 0:  # h5py hands a negative axis to libhdf5, which fails; count from the end
            index += len(self)
            if index < 0:
                raise IndexError("Index out of range")
        return DimensionProxy(self._dataset, index)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        if not self._dataset:
            return "<Dimensions of closed HDF5 dataset>"
        return f"<Dimensions of HDF5 object at {id(self._dataset)}>"

    def create_scale(self, dset, name: str = "") -> None:
        """Deprecated in h5py for ``dset.make_scale(name)``, which it calls: refused."""
        warnings.warn("other_ds.dims.create_scale(ds, name) is deprecated. "
                      "Use ds.make_scale(name) instead.", DeprecationWarning, stacklevel=2)
        dset.make_scale(name)
