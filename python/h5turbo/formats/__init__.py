"""Readers for file formats built on HDF5."""

from .fast5 import Fast5Error, Fast5Read, read_fast5
from .genotype import GenotypeArray

__all__ = ["read_fast5", "Fast5Read", "Fast5Error", "GenotypeArray"]
