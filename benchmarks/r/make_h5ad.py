"""The AnnData file of benchmarks/r/h5ad.R: 50,000 cells x 20,000 genes, CSR X at 5 %
density (float32), gzip; obs: a categorical, an integer and a float column; var: a
boolean column; obsm: a 50-column X_pca. Written once with anndata.

    python benchmarks/r/make_h5ad.py [path]   (default ~/.cache/h5turbo/bench_50000x20000.h5ad)
"""

import sys
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

path = Path(sys.argv[1] if len(sys.argv) > 1 else Path.home() / ".cache/h5turbo/bench_50000x20000.h5ad")
if not path.exists():
    rng = np.random.default_rng(0)
    n, g = 50000, 20000
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(list("ABCDEFG"), n)),
                        "n_genes": rng.integers(0, 5000, n), "score": rng.normal(size=n)},
                       index=[f"c{i}" for i in range(n)])
    var = pd.DataFrame({"hv": rng.random(g) < 0.1}, index=[f"g{j}" for j in range(g)])
    X = sp.random(n, g, density=0.05, format="csr", dtype=np.float32, random_state=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.h5ad")
    ad.AnnData(X=X, obs=obs, var=var, obsm={"X_pca": rng.normal(size=(n, 50))}).write_h5ad(tmp, compression="gzip")
    tmp.rename(path)
print(path)
