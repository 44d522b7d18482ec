"""``read_h5ad``: an AnnData ``.h5ad`` file read whole, as ``anndata.read_h5ad`` reads it.

Every element is dispatched on its ``encoding-type`` / ``encoding-version`` attributes
as anndata's registry does (anndata 0.8+ encodings), with the fallbacks anndata keeps
for older files: elements without encoding attributes (anndata < 0.7: compound-dtype
obs/var, ``h5sparse_format`` sparse groups, ``raw.X``/``raw.var``/``raw.varm``,
categories kept in ``uns/<column>_categories``) and the ``dataframe`` 0.1.0 encoding
of anndata 0.7, whose categorical columns point to their categories with an HDF5
object reference (followed as h5py follows it).

Arrays are read by h5turbo's engine (chunk-parallel, no libhdf5); the three arrays of
a sparse matrix are read concurrently. Not done: backed mode, ``as_sparse``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..objects.dataset import Dataset, threads_arg
from ..objects.values import string_encoding, text
from ..objects.file import File
from ..objects.types import Empty
from ..objects.group import Group
from .._native import Error, FormatError, UnsupportedError
from .._optional import require
from ..compute.sparse import SparseDataset

__all__ = ["read_h5ad"]

# The slots of an AnnData, in anndata's reading order.
_ANNDATA_KEYS = ("X", "obs", "var", "obsm", "varm", "obsp", "varp", "layers", "uns", "raw")


def read_h5ad(path: Any, threads: Optional[int] = None):
    """Read an ``.h5ad`` file into memory as an ``anndata.AnnData``, equal to what
    ``anndata.read_h5ad(path)`` returns (same values, dtypes, index and column types).

    ``path``: a path or a file object (as h5turbo.File takes).
    ``threads``: threads per array read (default: H5TURBO_THREADS or all cores).
    Errors: ``h5turbo.FormatError`` for a broken file or element (the message names the
    file and the element), ``h5turbo.UnsupportedError`` for an encoding h5turbo does not
    read, FileNotFoundError for a missing file.
    """
    threads_arg(threads)  # a bad argument is the caller's ValueError, not a broken element of the file
    require("anndata", "h5turbo.read_h5ad", "formats")
    with File(path) as f:
        return _H5adReader(f, threads).read_file()


def _fail(obj: Any, problem: str) -> FormatError:
    return FormatError(f"{obj.file.filename}: {obj.name}: {problem}")


def _member(group: Group, name: str) -> Any:
    """group[name]; a missing member of an encoded element is a broken file."""
    try:
        return Group.__getitem__(group, name)
    except KeyError:
        raise _fail(group, f"member {name!r} is missing") from None


def _attr(obj: Any, name: str) -> Any:
    """obj.attrs[name]; a missing attribute of an encoded element is a broken file."""
    if name not in obj.attrs:
        raise _fail(obj, f"attribute {name!r} is missing")
    return obj.attrs[name]


def _anndata(obj: Any, slots: dict):
    """anndata.AnnData(**slots); elements that do not fit together are a broken file."""
    import anndata

    try:
        return anndata.AnnData(**slots)
    except (TypeError, ValueError, IndexError, AttributeError, KeyError) as exc:
        # AttributeError: an obsm/varm/layers member that is no array (a scalar, a
        # string, None or a dict has no .shape)
        raise _fail(obj, f"the elements do not make an AnnData: {exc}") from exc


def _spec(obj: Any) -> tuple[str, str]:
    attrs = obj.attrs
    return tuple(text(attrs[k]) if k in attrs else "" for k in ("encoding-type", "encoding-version"))


class _H5adReader:
    def __init__(self, f: File, threads: Optional[int]):
        self.file = f
        self.threads = threads
        self.reading: set = set()  # the groups being read, outermost first: a cycle is an error

    # ------------------------------------------------------------------ the file

    def read_file(self):
        f = self.file
        encoding = _spec(f)[0]
        if encoding not in ("", "anndata"):
            raise _fail(f, f"root encoding-type is {encoding!r}, not 'anndata'")
        foreign = [k for k in f if k not in _ANNDATA_KEYS and not k.startswith("raw.")]
        if foreign:
            raise _fail(f, f"is not an h5ad file: its root holds {', '.join(map(repr, foreign[:3]))}, "
                           f"which are not AnnData slots ({', '.join(_ANNDATA_KEYS)})")
        if not len(f):
            raise _fail(f, f"is not an h5ad file: its root is empty (no AnnData slot: {', '.join(_ANNDATA_KEYS)})")
        legacy = isinstance(f.get("obs"), Dataset)  # anndata < 0.7
        slots = {}
        for key in f:
            if key.startswith("raw."):
                continue
            if key in ("obs", "var"):
                slots[key] = self.read_dataframe(f[key])
            elif key == "raw":
                slots[key] = self.read_raw()
            else:
                slots[key] = self.read_elem(f[key])
        try:
            adata = _anndata(f, slots)
        except FormatError:
            if "raw" in slots and "raw" in f:
                _anndata(f["raw"], slots["raw"])  # raw's own parts that do not fit: blamed on /raw
            raise
        if "raw.X" in f:  # anndata < 0.7 kept raw beside the other slots
            raw = _anndata(f["raw.X"], self.read_raw())
            try:
                raw.obs_names = adata.obs_names
                adata.raw = raw
            except (TypeError, ValueError) as exc:
                raise _fail(f["raw.X"], f"does not fit the AnnData: {exc}") from exc
        if legacy:
            from anndata.compat import _clean_uns

            try:
                _clean_uns(adata)  # categories of old obs/var columns were kept in uns
            except (TypeError, ValueError, IndexError) as exc:
                raise _fail(f["uns"] if "uns" in f else f, "categories of old-style obs/var columns "
                                                            f"(uns/<column>_categories) do not fit: {exc}") from exc
        return adata

    def read_raw(self) -> dict:
        f = self.file
        raw = {k: self.read_elem(f[f"raw/{k}"]) for k in ("X", "var", "varm") if f"raw/{k}" in f}
        if raw:
            if any(k.startswith("raw.") for k in f):
                raise _fail(f, "has both the legacy (raw.X) and the current (raw/X) raw formats")
            return raw
        if "raw.X" in f:
            raw["X"] = self.read_elem(f["raw.X"])
        if "raw.var" in f:
            raw["var"] = self.read_dataframe(f["raw.var"])
        if "raw.varm" in f:
            raw["varm"] = self.read_elem(f["raw.varm"])
        return raw

    # ------------------------------------------------------------------ dispatch

    def read_elem(self, obj: Any) -> Any:
        if not isinstance(obj, (Group, Dataset)):
            raise _fail(obj, "a committed datatype is not an AnnData element")
        spec = _spec(obj)
        table = _GROUP_READERS if isinstance(obj, Group) else _DATASET_READERS
        reader = table.get(spec)
        if reader is None:
            kind = "group" if isinstance(obj, Group) else "dataset"
            raise UnsupportedError(f"{obj.file.filename}: {obj.name}: unknown encoding "
                                   f"{spec[0]!r} version {spec[1]!r} for a {kind}")
        if obj in self.reading:
            raise _fail(obj, "is inside itself (a hard link back to a group being read)")
        if isinstance(obj, Group):
            self.reading.add(obj)
        try:
            return reader(self, obj)
        except Error:
            raise  # h5turbo's own errors name the file and the element already
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            # values that do not fit their encoding (an integer string-array, a mask
            # that is not boolean, a 0-d array where a matrix must be, a string as a
            # numeric-scalar, plain numbers as a rec-array)
            raise _fail(obj, f"is not a valid {spec[0] or 'element'}: {exc}") from exc
        finally:
            self.reading.discard(obj)

    # ------------------------------------------------------------------ groups

    def read_mapping(self, group: Group) -> dict:
        return {name: self.read_elem(_member(group, name)) for name in group}

    def read_anndata(self, group: Group):
        foreign = [k for k in group if k not in _ANNDATA_KEYS and not k.startswith("raw.")]
        if foreign:  # anndata: AnnData() gets an unexpected keyword argument
            raise _fail(group, f"an AnnData element holds {', '.join(map(repr, foreign[:3]))}, "
                               f"which are not AnnData slots ({', '.join(_ANNDATA_KEYS)})")
        return _anndata(group, {k: self.read_elem(group[k]) for k in _ANNDATA_KEYS if k in group})

    def read_awkward(self, group: Group):
        """An awkward array: its form (JSON) and length in attributes, one member per
        buffer. Needs the awkward package, as anndata does."""
        try:
            import awkward
        except ImportError:
            raise UnsupportedError(f"{group.file.filename}: {group.name}: an awkward-array element "
                                   "needs the awkward package (pip install awkward)") from None
        form, length = text(_attr(group, "form")), int(_attr(group, "length"))
        buffers = {name: self.read_elem(_member(group, name)) for name in group}
        try:
            return awkward.from_buffers(form, length, buffers)
        except (ValueError, TypeError, KeyError) as exc:
            raise _fail(group, f"not a valid awkward array: {exc}") from exc

    def read_legacy_group(self, group: Group) -> Any:
        if "h5sparse_format" in group.attrs:
            return self.read_sparse(group)
        return self.read_mapping(group)

    def read_sparse(self, group: Group):
        if not isinstance(group, SparseDataset):
            try:
                group = SparseDataset(group)
            except TypeError:
                raise _fail(group, "is not a well-formed sparse matrix (needs data, indices, indptr "
                                   "and a shape attribute)") from None
        matrix = group.to_scipy(threads=self.threads)
        return _as_anndata_sparse_class(matrix)

    def read_dataframe(self, obj: Any):
        if isinstance(obj, Dataset):
            return self.read_dataframe_legacy(obj)
        return self.read_elem(obj)

    def read_dataframe_v2(self, group: Group):
        return self._dataframe(group, self.read_elem)

    def read_dataframe_v1(self, group: Group):
        return self._dataframe(group, self.read_series)

    def _dataframe(self, group: Group, read_column: Callable[[Any], Any]):
        import pandas as pd

        columns = _column_order(_attr(group, "column-order"))
        index_key = text(_attr(group, "_index"))
        data = {k: read_column(_member(group, k)) for k in columns}
        index = read_column(_member(group, index_key))
        for name, values in data.items():
            if _length(values) != _length(index):
                raise _fail(group, f"column {name!r} has {_length(values)} values, the index {_length(index)}")
        try:
            df = pd.DataFrame(data, index=index, columns=columns if len(columns) else None)
        except (TypeError, ValueError) as exc:
            raise _fail(group, f"not a valid dataframe: {exc}") from exc
        if index_key != "_index":
            df.index.name = index_key
        return df

    def read_series(self, ds: Dataset):
        """A column of an anndata 0.7 dataframe: categorical when it names categories."""
        import pandas as pd

        if "categories" not in ds.attrs:
            return self.read_elem(ds)
        categories_ds = self._legacy_categories(ds)
        ordered = bool(categories_ds.attrs.get("ordered", False))
        try:
            return pd.Categorical.from_codes(self.read_elem(ds), self.read_elem(categories_ds), ordered=ordered)
        except (TypeError, ValueError) as exc:
            raise _fail(ds, f"not a valid categorical column: {exc}") from exc

    def _legacy_categories(self, ds: Dataset) -> Dataset:
        """The dataset the 'categories' object reference of ds points to."""
        target = ds.parent[ds.attrs["categories"]]
        if not isinstance(target, Dataset):
            raise _fail(ds, f"its 'categories' reference points to {target.name}, not a dataset")
        return target

    def read_categorical(self, group: Group):
        import pandas as pd

        codes = self.read_elem(_member(group, "codes"))
        categories = self.read_elem(_member(group, "categories"))
        try:
            return pd.Categorical.from_codes(codes=codes, categories=categories,
                                             ordered=bool(_attr(group, "ordered")))
        except (TypeError, ValueError) as exc:
            raise _fail(group, f"not a valid categorical: {exc}") from exc

    def _nullable(self, group: Group, array_type):
        values = self.read_elem(_member(group, "values"))
        mask = self.read_elem(_member(group, "mask"))
        if np.shape(values) != np.shape(mask):
            raise _fail(group, f"values {np.shape(values)} and mask {np.shape(mask)} differ in shape")
        return array_type(values, mask=mask)

    def read_nullable_integer(self, group: Group):
        import pandas as pd

        return self._nullable(group, pd.arrays.IntegerArray)

    def read_nullable_boolean(self, group: Group):
        import pandas as pd

        return self._nullable(group, pd.arrays.BooleanArray)

    def read_nullable_string(self, group: Group):
        import anndata.compat
        import pandas as pd

        string_type = getattr(anndata.compat, "NULLABLE_NUMPY_STRING_TYPE", object)  # anndata >= 0.11
        values = self.read_elem(_member(group, "values"))
        mask = self.read_elem(_member(group, "mask"))
        if np.shape(values) != np.shape(mask):
            raise _fail(group, f"values {np.shape(values)} and mask {np.shape(mask)} differ in shape")
        array = pd.array(values.astype(string_type), dtype=pd.StringDtype())
        array[mask] = pd.NA
        return array

    # ------------------------------------------------------------------ datasets

    def read_array(self, ds: Dataset) -> np.ndarray:
        return _h5py_empty(ds.read(threads=self.threads))

    def read_string_array(self, ds: Dataset) -> np.ndarray:
        return ds.asstr()[()]

    def read_scalar(self, ds: Dataset) -> Any:
        return ds.read(threads=self.threads).item()

    def read_string(self, ds: Dataset) -> str:
        return ds.asstr()[()]

    def read_null(self, ds: Dataset) -> None:
        return None

    def read_recarray(self, ds: Dataset) -> np.ndarray:
        value = ds.read(threads=self.threads)
        return _decode_structured(_from_fixed_length_strings(value), ds.dtype)

    def read_legacy_dataset(self, ds: Dataset) -> Any:
        """A dataset without encoding attributes, as anndata's read_dataset."""
        if string_encoding(ds.dtype) == "utf-8":
            value = ds.asstr()[()]
        else:
            value = ds.read(threads=self.threads)
        if isinstance(value, Empty):
            return _h5py_empty(value)
        if not hasattr(value, "dtype"):
            return value
        if issubclass(value.dtype.type, np.bytes_):
            value = value.astype(str)
            if len(value) == 1:  # old files kept strings as one-element arrays
                return value[0]
        elif len(value.dtype.descr) > 1:  # compound
            value = _decode_structured(_from_fixed_length_strings(value), ds.dtype)
        if value.shape == ():
            value = value[()]
        return value

    def read_dataframe_legacy(self, ds: Dataset):
        """obs/var of anndata < 0.7: a compound dataset, the first field the index."""
        import pandas as pd

        if ds.dtype.names is None:
            raise _fail(ds, f"an old-style dataframe must be a compound dataset, not {ds.dtype}")
        if ds.ndim != 1:
            raise _fail(ds, f"an old-style dataframe must be a 1-D compound dataset, not shape {ds.shape}")
        value = ds.read(threads=self.threads)
        df = pd.DataFrame(_decode_structured(_from_fixed_length_strings(value), ds.dtype))
        return df.set_index(df.columns[0])


_GROUP_READERS: dict[tuple[str, str], Callable] = {
    ("", ""): _H5adReader.read_legacy_group,
    ("anndata", "0.1.0"): _H5adReader.read_anndata,
    ("raw", "0.1.0"): _H5adReader.read_anndata,
    ("dict", "0.1.0"): _H5adReader.read_mapping,
    ("csr_matrix", "0.1.0"): _H5adReader.read_sparse,
    ("csc_matrix", "0.1.0"): _H5adReader.read_sparse,
    ("dataframe", "0.2.0"): _H5adReader.read_dataframe_v2,
    ("dataframe", "0.1.0"): _H5adReader.read_dataframe_v1,
    ("categorical", "0.2.0"): _H5adReader.read_categorical,
    ("nullable-integer", "0.1.0"): _H5adReader.read_nullable_integer,
    ("nullable-boolean", "0.1.0"): _H5adReader.read_nullable_boolean,
    ("nullable-string-array", "0.1.0"): _H5adReader.read_nullable_string,
    ("awkward-array", "0.1.0"): _H5adReader.read_awkward,
}

_DATASET_READERS: dict[tuple[str, str], Callable] = {
    ("", ""): _H5adReader.read_legacy_dataset,
    ("null", "0.1.0"): _H5adReader.read_null,
    ("array", "0.2.0"): _H5adReader.read_array,
    ("string-array", "0.2.0"): _H5adReader.read_string_array,
    ("rec-array", "0.2.0"): _H5adReader.read_recarray,
    ("numeric-scalar", "0.2.0"): _H5adReader.read_scalar,
    ("bytes", "0.2.0"): _H5adReader.read_scalar,
    ("string", "0.2.0"): _H5adReader.read_string,
}


def _column_order(value: Any) -> list:
    """The column names of a dataframe's 'column-order' attribute, as str: writers other
    than h5py (Julia's HDF5.jl, R) store fixed-length strings, read as bytes, which
    anndata decodes (as UTF-8)."""
    if isinstance(value, (bytes, str)) or (isinstance(value, np.ndarray) and value.shape == ()):
        return list(text(value))  # one string: its characters, as anndata's list(...)
    return [text(name) if isinstance(name, (bytes, np.ndarray)) else name for name in value]


def _length(values: Any) -> Optional[int]:
    """len() of a column or index; None for a scalar (a 0-d dataset)."""
    try:
        return len(values)
    except TypeError:
        return None


def _as_anndata_sparse_class(matrix):
    """csr_array/csc_array when anndata is set to read sparse arrays (as its to_memory)."""
    import anndata
    import scipy.sparse

    # anndata.settings is 0.11's: older releases (0.9, 0.10) read sparse matrices
    settings = getattr(anndata, "settings", None)
    if getattr(settings, "use_sparse_array_on_read", False):
        cls = scipy.sparse.csr_array if matrix.format == "csr" else scipy.sparse.csc_array
        array = cls(matrix.shape, dtype=matrix.dtype)
        array.data, array.indices, array.indptr = matrix.data, matrix.indices, matrix.indptr
        return array
    return matrix


def _from_fixed_length_strings(value: np.ndarray) -> np.ndarray:
    """Fixed-length bytes fields of a compound become str fields (anndata's conversion
    for old files); vlen string fields become object fields."""
    new_dtype = []
    for name, (field, _offset) in value.dtype.fields.items():
        base = field.base
        if issubclass(base.type, np.bytes_):
            field = np.dtype((f"U{base.itemsize}", field.shape)) if field.shape else np.dtype(f"U{base.itemsize}")
        elif string_encoding(base) is not None or issubclass(base.type, np.str_):
            field = np.dtype("O")
        new_dtype.append((name, field))
    return value.astype(new_dtype)


def _decode_structured(value: np.ndarray, stored: np.dtype) -> np.ndarray:
    """Decode the bytes of utf-8 vlen string fields to str, in place."""
    decode = np.frompyfunc(lambda x: x.decode("utf-8") if isinstance(x, bytes) else x, 1, 1)
    for name, (field, _offset) in stored.fields.items():
        if string_encoding(field) == "utf-8":
            decode(value[name], out=value[name])
    return value


def _h5py_empty(value: Any) -> Any:
    """A null dataset's value as anndata gives it: h5py's Empty (h5py, anndata's
    dependency, is importable where anndata is)."""
    if not isinstance(value, Empty):
        return value
    import h5py

    return h5py.Empty(value.dtype)
