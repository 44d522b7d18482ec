"""HDF5 filters by identity, as the native module knows them.

The native module's registry is the only place a filter's id and name are written
(``_native.filters()``: (id, name, decodes, encodes) per filter). This module looks
them up and maps them to the names h5py's API shows ("gzip" for deflate).
"""

from __future__ import annotations

from typing import NamedTuple

from .. import _native

__all__ = ["Filter", "FILTERS", "filter_id", "filter_name", "H5PY_COMPRESSION", "H5PY_NAMED"]


class Filter(NamedTuple):
    id: int
    name: str
    decodes: bool
    encodes: bool


FILTERS: dict[int, Filter] = {fid: Filter(fid, name, decodes, encodes)
                              for fid, name, decodes, encodes in _native.filters()}
_BY_NAME = {f.name: f.id for f in FILTERS.values()}

# The filters h5py reports in Dataset.compression, under h5py's names, in the order it
# looks for them; and every filter h5py knows by name (any other is a plugin to h5py,
# and Dataset.compression is then "unknown").
H5PY_COMPRESSION = {"deflate": "gzip", "lzf": "lzf", "szip": "szip"}
H5PY_NAMED = ("deflate", "lzf", "szip", "shuffle", "fletcher32", "scaleoffset")


def filter_id(name: str) -> int:
    """The registered id of a filter the native module knows, by its registry name."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown filter name {name!r}; known: {sorted(_BY_NAME)}") from None


def filter_name(fid: int, stored_name: str = "") -> str:
    """The name a pipeline stores for a filter, else the registry's, else 'filter ID'."""
    if stored_name:
        return stored_name
    known = FILTERS.get(fid)
    return known.name if known else f"filter {fid}"
