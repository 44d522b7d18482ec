"""``read_10x_h5``: a 10x Genomics Cell Ranger ``.h5`` matrix, as ``scanpy.read_10x_h5``.

Cell Ranger v3+ (and Space Ranger / Visium) files hold one ``matrix`` group: a CSC
matrix of features x barcodes (``data``, ``indices``, ``indptr``, ``shape``),
``barcodes`` and a ``features`` group (``id``, ``name``, ``feature_type``, ``genome``,
more). Cell Ranger v2 files hold one such group per genome, with ``genes`` and
``gene_names`` instead of ``features``. The CSC features x barcodes arrays are, read
as they are, the CSR barcodes x features matrix AnnData wants; the three are read
concurrently, each chunk-parallel.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..objects.dataset import Dataset
from ..objects.file import File
from ..objects.group import Group
from .._native import FormatError
from .._optional import require
from ..readahead import reading_pool
from ..compute.sparse import check_indices, check_indptr

__all__ = ["read_10x_h5"]

# Feature datasets scanpy does not copy into var as extra columns.
_NOT_EXTRA = ("name", "feature_type", "id", "gene_id", "_all_tag_keys")


def read_10x_h5(path: Any, genome: Optional[str] = None, gex_only: bool = True,
                threads: Optional[int] = None):
    """Read a Cell Ranger ``.h5`` matrix as an ``anndata.AnnData`` of cells x genes
    (CSR float32), equal to ``scanpy.read_10x_h5(path, genome=genome,
    gex_only=gex_only)``: obs names are the barcodes; var names the feature names, with
    ``gene_ids``, ``feature_types``, ``genome`` and the other feature columns (v3+).

    ``path``: a path or a file object (as h5turbo.File takes). ``genome``: keep that genome's features (v3+), or read that genome's group (v2,
    required when the file holds several). ``gex_only`` (v3+): only 'Gene Expression'
    features. ValueError for an unknown genome (as scanpy); h5turbo.FormatError naming
    the file and dataset when a required dataset is missing.
    """
    require("anndata", "h5turbo.read_10x_h5", "formats")
    with File(path) as f:
        if "matrix" in f:
            adata = _read_v3(f, threads)
            return _select_features(adata, f.filename, genome, gex_only)
        return _read_v2(f, _pick_genome(f, genome), threads)


def _pick_genome(f: File, genome: Optional[str]) -> str:
    children = list(f.keys())
    if not children:
        raise FormatError(f"{f.filename}: no matrix group (an empty file, not a 10x matrix)")
    if not genome:
        if len(children) > 1:
            raise ValueError(f"{f.filename} contains more than one genome. For legacy 10x h5 files you "
                             f"must specify the genome if more than one is present. "
                             f"Available genomes are: {children}")
        return children[0]
    if genome not in children:
        raise ValueError(f"Could not find genome {genome!r} in {f.filename}. Available genomes are: {children}")
    return genome


def _collect(group: Group, found: dict[str, Dataset], inside: Optional[set] = None) -> dict[str, Dataset]:
    """Every dataset below the group by its own name, in h5py's order (a later one of
    the same name wins, as scanpy's _collect_datasets). `inside`: the groups being
    walked; a hard link back to one of them is a FormatError (it recursed until
    RecursionError)."""
    inside = set() if inside is None else inside
    if group in inside:
        raise FormatError(f"{group.file.filename}: {group.name}: is inside itself "
                          "(a hard link back to a group being read)")
    inside.add(group)
    for name in group:
        obj = Group.__getitem__(group, name)
        if isinstance(obj, Dataset):
            found[name] = obj
        else:
            _collect(obj, found, inside)
    inside.discard(group)
    return found


def _required(group: Group, datasets: dict[str, Dataset], name: str) -> Dataset:
    if name not in datasets:
        raise FormatError(f"{group.file.filename}: {group.name}: required dataset {name!r} is missing")
    return datasets[name]


def _matrix(group: Group, datasets: dict[str, Dataset], threads: Optional[int]):
    """The cells x genes CSR matrix, float32 (scanpy converts int32 counts)."""
    from scipy.sparse import csr_matrix

    arrays = [_required(group, datasets, k) for k in ("data", "indices", "indptr")]
    shape = np.ravel(_required(group, datasets, "shape").read())
    if shape.shape != (2,) or shape.dtype.kind not in "iu":  # [8.5, 5.0] was cut to 8 x 5
        raise FormatError(f"{group.file.filename}: {group.name}/shape: must hold 2 integer sizes, not {shape}")
    n_cols, n_rows = (int(n) for n in shape)  # stored as features x barcodes
    with reading_pool(3) as pool:
        data, indices, indptr = pool.map(lambda ds: ds.read(threads=threads), arrays)
    where = f"{group.file.filename}: {group.name}"
    if len(data) != len(indices):
        raise FormatError(f"{where}: data has {len(data)} entries, indices {len(indices)}")
    check_indptr(indptr, n_rows, len(data), where)
    check_indices(indices, n_cols, where)
    if data.dtype == np.int32:
        data = data.astype(np.float32)
    try:
        # dtype=: scipy checks it is one scipy.sparse supports (float16 data made a
        # matrix that failed on first use, in scanpy's gene selection)
        return csr_matrix((data, indices, indptr), shape=(n_rows, n_cols), dtype=data.dtype)
    except ValueError as exc:
        raise FormatError(f"{group.file.filename}: {group.name}: not a valid sparse matrix: {exc}") from exc


def _strings(ds: Dataset, dtype: Any = str) -> np.ndarray:
    """The values as scanpy converts them (.astype(str): numpy decodes bytes as ASCII)."""
    try:
        return ds.read().astype(dtype)
    except (UnicodeDecodeError, ValueError, TypeError) as exc:  # non-ASCII bytes, values that are no text
        raise FormatError(f"{ds.file.filename}: {ds.name}: values do not convert to {dtype.__name__}: {exc}") from exc


def _read_v3(f: File, threads: Optional[int]):
    group = f["matrix"]
    if not isinstance(group, Group):
        raise FormatError(f"{f.filename}: /matrix: a 10x v3 matrix must be a group")
    datasets = _collect(group, {})
    matrix = _matrix(group, datasets, threads)
    obs = {"obs_names": _strings(_required(group, datasets, "barcodes"))}
    var = {"var_names": _strings(_required(group, datasets, "name"))}
    ids = _strings(_required(group, datasets, "id"))
    if "gene_id" in datasets:  # probe-based files: features are probes
        var.update(gene_ids=_strings(datasets["gene_id"]), probe_ids=ids)
    else:
        var["gene_ids"] = ids
    var["feature_types"] = _strings(_required(group, datasets, "feature_type"))
    if "filtered_barcodes" in group:
        obs["filtered_barcodes"] = _strings(_required(group, datasets, "filtered_barcodes"), bool)
    if "features" not in group:
        raise FormatError(f"{f.filename}: {group.name}: no features group")
    features = group["features"]
    for name in features:
        item = Group.__getitem__(features, name)
        if isinstance(item, Dataset) and name not in _NOT_EXTRA:
            var[name] = _strings(datasets[name], bool if item.dtype.kind == "b" else str)
    return _anndata(group, matrix, obs, var)


def _anndata(group: Group, matrix, obs: dict, var: dict):
    """The AnnData; barcodes or features that do not fit the matrix are a broken file."""
    import anndata

    try:
        return anndata.AnnData(matrix, obs=obs, var=var)
    except ValueError as exc:
        raise FormatError(f"{group.file.filename}: {group.name}: barcodes and features do not fit the "
                          f"{matrix.shape[0]} x {matrix.shape[1]} matrix: {exc}") from exc


def _select_features(adata, filename: str, genome: Optional[str], gex_only: bool):
    if genome:
        if genome not in adata.var["genome"].values:
            raise ValueError(f"Could not find data corresponding to genome {genome!r} in {filename}. "
                             f"Available genomes are: {list(adata.var['genome'].unique())}.")
        adata = adata[:, adata.var["genome"] == genome]
    if gex_only:
        adata = adata[:, adata.var["feature_types"] == "Gene Expression"]
    return adata.copy() if adata.is_view else adata


def _read_v2(f: File, genome: str, threads: Optional[int]):
    group = f[genome]
    if not isinstance(group, Group):
        raise FormatError(f"{f.filename}: {group.name}: a 10x v2 genome must be a group")
    datasets = _collect(group, {})
    matrix = _matrix(group, datasets, threads)
    return _anndata(
        group,
        matrix,
        obs={"obs_names": _strings(_required(group, datasets, "barcodes"))},
        var={"var_names": _strings(_required(group, datasets, "gene_names")),
             "gene_ids": _strings(_required(group, datasets, "genes"))},
    )
