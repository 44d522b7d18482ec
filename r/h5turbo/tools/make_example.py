"""Writes inst/extdata/example.h5, the small file the package's examples read.
Run: python tools/make_example.py (needs h5py, numpy, scipy)."""
import h5py
import numpy as np
import scipy.sparse as sp

rng = np.random.default_rng(15)
with h5py.File("inst/extdata/example.h5", "w") as f:
    counts = f.create_dataset("counts", data=rng.integers(1, 101, size=(40, 30), dtype="i4"),
                              chunks=(16, 16), compression="gzip", compression_opts=3)
    counts.attrs["description"] = "random counts, 40 rows x 30 columns in HDF5 (30 x 40 in R)"
    counts.attrs["scale"] = 1.5
    f["scores"] = rng.normal(size=(20, 5))
    g = f.create_group("cells")
    g.create_dataset("type", data=np.array([0, 1, 1, 2], dtype="i1"), dtype=h5py.enum_dtype({"B": 0, "T": 1, "NK": 2}, basetype="i1"))
    g["name"] = np.array(["c1", "c2", "c3", "c4"], dtype=h5py.string_dtype())
    g["table"] = np.array([(1, 0.5, b"a"), (2, 1.5, b"b")], dtype=[("id", "i4"), ("value", "f8"), ("tag", "S1")])
    # an AnnData-style csr_matrix: 6 cells x 4 genes
    m = sp.random(6, 4, density=0.5, format="csr", random_state=1, dtype="f4")
    x = f.create_group("X")
    x.attrs["encoding-type"] = "csr_matrix"
    x.attrs["encoding-version"] = "0.1.0"
    x.attrs["shape"] = np.array(m.shape, dtype="i8")
    x["data"] = m.data
    x["indices"] = m.indices
    x["indptr"] = m.indptr
