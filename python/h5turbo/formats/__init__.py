"""Readers for file formats built on HDF5, each giving what the format's own library
gives, read through h5turbo's parallel engine (no libhdf5):

- ``read_h5ad(path)``: AnnData ``.h5ad`` (anndata 0.5 and later), as ``anndata.read_h5ad``;
- ``read_10x_h5(path, genome=None)``: Cell Ranger ``.h5`` (v2 and v3+), as ``scanpy.read_10x_h5``;
- ``read_loom(path)``: ``.loom``, as ``anndata.read_loom``.
"""

from .h5ad import read_h5ad
from .loom import read_loom
from .tenx import read_10x_h5

__all__ = ["read_h5ad", "read_10x_h5", "read_loom"]
