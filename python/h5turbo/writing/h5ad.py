"""``h5turbo.write_h5ad``: an AnnData file whose heavy arrays (X and layers) are
compressed in parallel by :func:`h5turbo.write`; obs, var, uns, obsm, varm, obsp and
varp are written by anndata's own writer, so every encoding is anndata's."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._native import UnsupportedError
from .atomic import replacing
from .write import _codec_kwargs, _is_stored_array, check_threads, write

__all__ = ["write_h5ad"]

_DENSE = {"encoding-type": "array", "encoding-version": "0.2.0"}


def write_h5ad(adata, path, compression: Optional[str] = "gzip", level: Optional[int] = None,
               shuffle: bool = False, threads: Optional[int] = None, chunks=None) -> None:
    """Write ``adata`` to ``path`` so that ``anndata.read_h5ad`` reads it back equal.
    X, every layer and raw.X (dense numpy or dask arrays, scipy CSR/CSC matrices, dask
    arrays of those, the X of a backed AnnData: copied from its file a slab at a time)
    are written with h5turbo's parallel encoders (``compression``/``level``/``shuffle`` as in
    :func:`h5turbo.write`; ``chunks`` applies to dense arrays, None: auto); the rest by
    anndata, with ``compression`` passed on when it is one anndata knows (gzip, lzf).
    The file is written next to ``path`` and renamed over it only when complete: a
    failed write leaves an existing file as it was."""
    import anndata as ad
    import h5py

    # options checked before anything is written (each matrix would check them again)
    threads = check_threads(threads, f"{path}")
    _codec_kwargs(compression, level, shuffle)
    light = ad.AnnData(obs=adata.obs, var=adata.var, uns=dict(adata.uns), obsm=dict(adata.obsm),
                       varm=dict(adata.varm), obsp=dict(adata.obsp), varp=dict(adata.varp))
    anndata_compression = compression if compression in ("gzip", "lzf") else None
    options = dict(compression=compression, level=level, shuffle=shuffle, threads=threads)
    with replacing(path) as tmp:
        light.write_h5ad(tmp, compression=anndata_compression)
        with h5py.File(tmp, "a") as f:
            if adata.X is not None:
                _write_matrix(f, "X", adata.X, chunks, options)
            layers = f.require_group("layers")
            for key, value in adata.layers.items():
                _write_matrix(layers, key, value, chunks, options)
            if adata.raw is not None:
                _write_raw(f, adata.raw, light, chunks, options, anndata_compression)


def _write_raw(f, raw, light, chunks, options: dict, anndata_compression) -> None:
    """``raw`` as anndata writes it: its var (string columns as categoricals, as
    anndata turns them, on a copy: the caller's raw is left as it is) and varm by
    anndata, its X by h5turbo."""
    try:
        from anndata.io import write_elem
    except ImportError:  # anndata < 0.11
        from anndata.experimental import write_elem

    group = f.create_group("raw")
    group.attrs.update({"encoding-type": "raw", "encoding-version": "0.1.0"})
    kwargs = {"compression": anndata_compression} if anndata_compression else {}
    var = raw.var.copy()
    light.strings_to_categoricals(var)
    write_elem(group, "var", var, dataset_kwargs=kwargs)
    write_elem(group, "varm", dict(raw.varm), dataset_kwargs=kwargs)
    _write_matrix(group, "X", raw.X, chunks, options)


def _write_matrix(group, name: str, value, chunks, options: dict) -> None:
    import scipy.sparse as sp
    if sp.issparse(value):
        fmt = value.format
        if fmt not in ("csr", "csc"):
            value, fmt = value.tocsr(), "csr"
        g = group.create_group(name)
        g.attrs.update({"encoding-type": f"{fmt}_matrix", "encoding-version": "0.1.0",
                        "shape": np.array(value.shape)})
        for part in ("data", "indices", "indptr"):
            write(g, part, np.asarray(getattr(value, part)), **options)
        return
    if _backed_sparse(value):
        # anndata's backed CSR/CSC (read_h5ad(..., backed="r")): its arrays copied from
        # the file a slab at a time, not loaded whole
        g = group.create_group(name)
        g.attrs.update({"encoding-type": f"{value.format}_matrix", "encoding-version": "0.1.0",
                        "shape": np.array(value.shape)})
        for part in ("data", "indices", "indptr"):
            write(g, part, value.group[part], **options)
        return
    if hasattr(value, "dask") and sp.issparse(getattr(value, "_meta", None)):
        # a dask array of sparse chunks: computed, then written as the matrix it makes
        _write_matrix(group, name, value.compute(), chunks, options)
        return
    if hasattr(value, "dask") or _is_stored_array(value):
        # dask (a band of chunks at a time) or a backed dense X (an h5py dataset: slabs)
        write(group, name, value, chunks=chunks, attrs=_DENSE, **options)
        return
    if isinstance(value, (np.ndarray, np.matrix)):
        write(group, name, np.asarray(value), chunks=chunks, attrs=_DENSE, **options)
        return
    raise UnsupportedError(f"{group.file.filename}: {group.name.rstrip('/')}/{name} is a {type(value).__name__}; "
                           "write_h5ad writes numpy, dask, scipy CSR/CSC and backed anndata matrices")


def _backed_sparse(value) -> bool:
    """anndata's sparse dataset of a backed AnnData (its CSRDataset / CSCDataset)."""
    return type(value).__module__.startswith("anndata") and getattr(value, "format", None) in ("csr", "csc") \
        and hasattr(value, "group") and hasattr(value, "shape")
