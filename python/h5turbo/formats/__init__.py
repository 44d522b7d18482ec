"""Readers for file formats built on HDF5, each giving what the format's own library
gives, read through h5turbo's parallel engine (no libhdf5):

- ``read_h5ad(path)``: AnnData ``.h5ad`` (anndata 0.5 and later), as ``anndata.read_h5ad``;
- ``read_10x_h5(path, genome=None)``: Cell Ranger ``.h5`` (v2 and v3+), as ``scanpy.read_10x_h5``;
- ``read_loom(path)``: ``.loom``, as ``anndata.read_loom``;
- ``read_fast5(paths)``: Oxford Nanopore ``.fast5`` reads (single- and multi-read), as ont_fast5_api gives them;
- ``GenotypeArray``: counts over a scikit-allel ``calldata/GT`` matrix.
"""

from .fast5 import Fast5Error, Fast5Index, Fast5Read, read_fast5
from .genotype import GenotypeArray
from .h5ad import read_h5ad
from .loom import read_loom
from .tenx import read_10x_h5

__all__ = ["read_h5ad", "read_10x_h5", "read_loom", "read_fast5", "Fast5Index", "Fast5Read", "Fast5Error", "GenotypeArray"]
