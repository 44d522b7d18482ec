"""The sparse files of benchmarks/r/sparse.R, written once: one count matrix of
30,000 genes x `cells` cells (20,000 unless given) at 5 % density (per cell a
binomial number of distinct random genes, counts geometric from 1; 30 M values for
20,000 cells, 7.3 M for 5,000) stored two ways:

- a Cell Ranger v3 file (``matrix/``: data int32, indices and indptr int64, shape,
  barcodes, features/{id,name,feature_type,genome}; gzip 4, chunks of 80,000 as Cell
  Ranger writes them);
- an AnnData file (anndata's ``write_h5ad``, gzip): ``X`` the same counts as float32
  CSR (cells x genes), ``layers/csc`` the same as CSC.

    python benchmarks/r/make_sparse.py [folder] [cells]   (default ~/.cache/h5turbo, 20000; benchmarks/r/sparse.R
    uses 5000)

Prints the two paths.
"""
import os
import sys
import warnings

import h5py
import numpy as np
import scipy.sparse as sp

GENES, DENSITY, CHUNK = 30000, 0.05, 80000


def counts_by_cell(cells: int, rng: np.random.Generator) -> sp.csc_matrix:
    """genes x cells CSC: per cell, distinct genes in increasing order."""
    per_cell = rng.binomial(GENES, DENSITY, size=cells)
    cell = np.repeat(np.arange(cells, dtype=np.int64), per_cell)
    key = np.unique(cell * GENES + rng.integers(0, GENES, size=cell.size))   # sorted; repeats dropped
    indices = key % GENES
    indptr = np.zeros(cells + 1, dtype=np.int64)
    np.cumsum(np.bincount(key // GENES, minlength=cells), out=indptr[1:])
    data = rng.geometric(0.4, size=key.size).astype(np.int32)
    return sp.csc_matrix((data, indices, indptr), shape=(GENES, cells))


def write_10x(path: str, m: sp.csc_matrix) -> None:
    tmp = path + ".part"
    with h5py.File(tmp, "w") as f:
        g = f.create_group("matrix")
        def put(name, values, parent=g):
            parent.create_dataset(name, data=values, chunks=(min(CHUNK, max(len(values), 1)),),
                                  maxshape=(None,), compression="gzip", compression_opts=4)
        put("data", m.data.astype(np.int32))
        put("indices", m.indices.astype(np.int64))
        put("indptr", m.indptr.astype(np.int64))
        g.create_dataset("shape", data=np.array(m.shape, dtype=np.int32))
        put("barcodes", np.array([f"CELL{j:06d}-1".encode() for j in range(m.shape[1])]))
        feats = g.create_group("features")
        put("id", np.array([f"ENSG{i:011d}".encode() for i in range(m.shape[0])]), feats)
        put("name", np.array([f"gene{i}".encode() for i in range(m.shape[0])]), feats)
        put("feature_type", np.array([b"Gene Expression"] * m.shape[0]), feats)
        put("genome", np.array([b"GRCh38"] * m.shape[0]), feats)
    os.replace(tmp, path)


def write_h5ad(path: str, m: sp.csc_matrix) -> None:
    import anndata as ad
    import pandas as pd
    cells_by_genes = m.T.tocsr().astype(np.float32)   # the same bytes as m, float values
    obs = pd.DataFrame(index=[f"CELL{j:06d}-1" for j in range(m.shape[1])])
    var = pd.DataFrame(index=[f"ENSG{i:011d}" for i in range(m.shape[0])])
    tmp = path + ".part.h5ad"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.AnnData(X=cells_by_genes, obs=obs, var=var,
                   layers={"csc": cells_by_genes.tocsc()}).write_h5ad(tmp, compression="gzip")
    os.replace(tmp, path)


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/h5turbo")
    cells = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    os.makedirs(folder, exist_ok=True)
    tenx = os.path.join(folder, f"sparse_10x_{GENES}x{cells}.h5")
    h5ad = os.path.join(folder, f"sparse_{GENES}x{cells}.h5ad")
    if not (os.path.exists(tenx) and os.path.exists(h5ad)):
        m = counts_by_cell(cells, np.random.default_rng(15))
        if not os.path.exists(tenx):
            write_10x(tenx, m)
        if not os.path.exists(h5ad):
            write_h5ad(h5ad, m)
    print(tenx)
    print(h5ad)


if __name__ == "__main__":
    main()
