"""The filter table comes from the native module: ids and names h5py and the plugins
register, the names the command line and Dataset attributes show."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo import _native
from h5turbo.objects.filters import FILTERS, filter_id, filter_name

# Registered ids (H5Zpublic.h and the HDF Group's list of registered filter plugins)
REGISTERED = {"deflate": 1, "shuffle": 2, "fletcher32": 3, "szip": 4, "nbit": 5, "scaleoffset": 6,
              "bzip2": 307, "lzf": 32000, "blosc": 32001, "lz4": 32004, "bitshuffle": 32008,
              "zstd": 32015, "vbz": 32020, "blosc2": 32026, "SZ": 32017}


def test_native_registry_is_the_table():
    rows = _native.filters()
    assert len({fid for fid, *_ in rows}) == len(rows)  # one row per id
    assert {name: fid for fid, name, *_ in rows if name in REGISTERED} == REGISTERED
    assert all(decodes or not encodes for _fid, _name, decodes, encodes in rows)
    assert not FILTERS[32017].decodes  # known by name, not decoded
    assert {f.name for f in FILTERS.values() if f.encodes} >= {"deflate", "shuffle", "lzf", "zstd", "lz4"}


def test_lookups():
    assert filter_id("deflate") == 1
    assert filter_name(32004) == "lz4"
    assert filter_name(32004, "stored name") == "stored name"
    assert filter_name(65000) == "filter 65000"
    with pytest.raises(KeyError, match="gzip"):
        filter_id("gzip")  # h5py's name, not the registry's


@pytest.mark.parametrize("kwargs, compression, opts", [
    ({"compression": "gzip", "compression_opts": 7}, "gzip", 7),
    ({"compression": "lzf"}, "lzf", None),
    ({"compression": "gzip", "shuffle": True, "fletcher32": True}, "gzip", 4),
    ({"compression": "gzip", "scaleoffset": 2}, "gzip", 4),
])
def test_dataset_filter_attributes_match_h5py(tmp_path, kwargs, compression, opts):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(100, dtype="i4"), chunks=(10,), **kwargs)
    with h5py.File(path, "r") as ref, h5turbo.File(path) as got:
        for attr in ("compression", "compression_opts", "shuffle", "fletcher32", "scaleoffset"):
            assert getattr(got["d"], attr) == getattr(ref["d"], attr), attr
        assert got["d"].compression == compression and got["d"].compression_opts == opts


@pytest.mark.parametrize("plugin", ["LZ4", "Zstd", "Blosc", "BZip2"])
def test_plugin_compression_is_unknown_as_in_h5py(tmp_path, plugin):
    """h5py names only its own filters: a plugin's compression is "unknown", no options."""
    import hdf5plugin

    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(100, dtype="i4"), chunks=(10,), **getattr(hdf5plugin, plugin)())
    with h5py.File(path, "r") as ref, h5turbo.File(path) as got:
        assert ref["d"].compression == "unknown"
        for attr in ("compression", "compression_opts", "shuffle", "fletcher32", "scaleoffset"):
            assert getattr(got["d"], attr) == getattr(ref["d"], attr), attr
