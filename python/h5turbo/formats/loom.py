"""``read_loom``: a ``.loom`` file read whole, as ``anndata.read_loom`` (through loompy)
reads it.

Loom keeps genes x cells: the main ``matrix``, more matrices in ``layers/``, per-gene
``row_attrs/`` and per-cell ``col_attrs/`` (1-D columns, or 2-D for multi-column
attributes). AnnData gets cells x genes: X and every layer transposed, as CSR
(``sparse=True``) or dense; obs from the column attributes, var from the row ones.
The matrices are read chunk-parallel by h5turbo's engine.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
import warnings
from typing import Any, Optional

import numpy as np

from ..objects.dataset import Dataset
from ..objects.file import File
from ..objects.group import Group
from .._native import FormatError
from .._optional import require

__all__ = ["read_loom"]


def read_loom(path: Any, *, sparse: bool = True, cleanup: bool = False, X_name: str = "spliced",
              obs_names: str = "CellID", var_names: str = "Gene", dtype: str = "float32",
              obsm_mapping: Mapping[str, Iterable[str]] = {},
              varm_mapping: Mapping[str, Iterable[str]] = {},
              threads: Optional[int] = None, obsm_names: Optional[Mapping[str, Iterable[str]]] = None,
              varm_names: Optional[Mapping[str, Iterable[str]]] = None, validate: bool = True,
              spec_version: Optional[str] = None):
    """Read a ``.loom`` file as an ``anndata.AnnData`` equal to ``anndata.read_loom(path,
    ...)`` with the same arguments: X is layer ``X_name`` if present, else the main
    matrix (then kept as layer 'matrix' too), cast to ``dtype``; other layers float64 as
    loompy gives them; attributes named ``obs_names`` / ``var_names`` become the index;
    2-D attributes go to obsm / varm; ``*_mapping`` gathers 1-D attributes into obsm /
    varm; ``path`` may be a file object (as h5turbo.File takes); ``cleanup`` moves single-valued columns to uns['loom-obs'] / uns['loom-var'].
    ``obsm_names`` / ``varm_names``: anndata's deprecated names of the mappings (a
    FutureWarning, as anndata gives). ``validate``: loompy's check of the file when
    anndata opens it; h5turbo checks only what it reads, so ``validate=False`` changes
    nothing, and neither does ``spec_version`` (the loom version loompy validates
    against; anndata passes it on to loompy).
    """
    anndata = require("anndata", "h5turbo.read_loom", "formats")

    obsm_mapping = _deprecated_mapping("obsm", obsm_names, obsm_mapping)
    varm_mapping = _deprecated_mapping("varm", varm_names, varm_mapping)

    with File(path) as f:
        matrix = _matrix_dataset(f, "matrix")
        layer_names = list(f["layers"]) if "layers" in f else []
        if X_name not in layer_names:
            X_name = ""
        X = _layer(f, X_name, matrix.shape, sparse, threads).astype(dtype, copy=False)
        layers = {}
        if X_name != "":
            layers["matrix"] = _layer(f, "", matrix.shape, sparse, threads)
        for name in layer_names:
            layers[name] = _layer(f, name, matrix.shape, sparse, threads)
        obs, obsm = _axis_frame(f, "col_attrs", _attributes(f, "col_attrs", matrix.shape[1]), obs_names, obsm_mapping)
        var, varm = _axis_frame(f, "row_attrs", _attributes(f, "row_attrs", matrix.shape[0]), var_names, varm_mapping)
    uns = {}
    if cleanup:
        for key, frame in (("loom-obs", obs), ("loom-var", var)):
            constant = _pop_constant_columns(frame)
            if constant:
                uns[key] = constant
    return anndata.AnnData(X, obs=obs, var=var, layers=layers, obsm=obsm or None, varm=varm or None, uns=uns)


def _deprecated_mapping(axis: str, names: Optional[Mapping], mapping: Mapping) -> Mapping:
    """anndata's ``{axis}m_names``: a FutureWarning, and an error alongside the mapping."""
    if names is None:
        return mapping
    warnings.warn(f"Argument {axis}_names has been deprecated in favour of `{axis}_mapping`.",
                  FutureWarning, stacklevel=3)
    if mapping:
        raise ValueError(f"Received values for both `{axis}_names` and `{axis}_mapping`. This is "
                         f"ambiguous, only pass `{axis}_mapping`.")
    return names


def _matrix_dataset(f: File, path: str) -> Dataset:
    if path not in f or not isinstance(f[path], Dataset):
        raise FormatError(f"{f.filename}: /{path}: missing (a loom file has its main matrix there)")
    ds = f[path]
    if ds.ndim != 2:
        raise FormatError(f"{f.filename}: {ds.name}: a loom matrix must be 2-D, not shape {ds.shape}")
    if ds.dtype.kind not in "biuf":
        raise FormatError(f"{f.filename}: {ds.name}: a loom matrix holds numbers, not {ds.dtype}")
    return ds


def _layer(f: File, name: str, shape: tuple, sparse: bool, threads: Optional[int]):
    """Cells x genes: loompy gives layers as float64 sparse (only the non-zeros) or as
    stored (dense); anndata transposes them."""
    import scipy.sparse

    ds = _matrix_dataset(f, "matrix" if name == "" else f"layers/{name}")
    if ds.shape != shape:
        raise FormatError(f"{f.filename}: {ds.name}: shape {ds.shape} differs from /matrix's {shape}")
    values = ds.read(threads=threads)
    if not sparse:
        return values.T
    return scipy.sparse.coo_matrix(values.T.astype(np.float64, copy=False)).tocsr()


def _attributes(f: File, group_name: str, length: int) -> dict[str, np.ndarray]:
    group = f.get(group_name)
    if not isinstance(group, Group):
        raise FormatError(f"{f.filename}: /{group_name}: missing (a loom file has its attributes there)")
    values = {}
    for name in group:
        ds = Group.__getitem__(group, name)
        if not isinstance(ds, Dataset) or not ds.shape or ds.shape[0] != length:
            raise FormatError(f"{f.filename}: {group.name}/{name}: an attribute must be a dataset of "
                              f"{length} rows, not {getattr(ds, 'shape', 'a group')}")
        values[name] = _materialize(ds.read())
    return values


def _materialize(a: np.ndarray) -> np.ndarray:
    """Strings as loompy gives them: ASCII only, XML entities unescaped, str objects."""
    if np.issubdtype(a.dtype, np.bytes_) or np.issubdtype(a.dtype, np.object_):
        if len(a) > 0 and hasattr(a[0], "decode"):
            a = np.array([x.decode("ascii", "ignore") for x in a])
        return np.array([html.unescape(x) for x in a.astype(str)], dtype=object)
    if np.issubdtype(a.dtype, np.str_):
        return np.array(a.astype(str), dtype=object)
    return a


def _axis_frame(f: File, group_name: str, values: dict, index_name: str, mapping: Mapping[str, Iterable[str]]):
    import pandas as pd

    frame = pd.DataFrame()
    multi = {key: np.array([values.pop(name) for name in names]).T for key, names in mapping.items()}
    for key, v in values.items():
        if v.ndim > 1 and v.shape[1] > 1:
            multi[key] = v
        else:
            try:
                frame[key] = v
            except (TypeError, ValueError) as exc:  # e.g. a 2-D (n, 1) string attribute
                raise FormatError(f"{f.filename}: /{group_name}/{key}: an attribute of shape {v.shape} and "
                                  f"dtype {v.dtype} does not make a column: {exc!r}") from exc
    if index_name in frame:
        frame.set_index(index_name, drop=True, inplace=True)
    return frame, multi


def _pop_constant_columns(frame) -> dict:
    constant = {}
    for key in list(frame.columns):
        if len(frame[key].unique()) == 1:
            constant[key] = frame[key].iloc[0]
            del frame[key]
    return constant
