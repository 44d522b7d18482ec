"""Computation on datasets without reading them whole: numpy-style reductions, sparse
matrices stored as groups, dask arrays. Shared rules (result dtypes, merging moments)
live in compute.moments."""
