"""Files with shared object header messages (SOHM: dataspaces, datatypes, fill values
and filter pipelines stored once in a shared heap), made by libhdf5's h5repack (see
tests/data/sohm/make_sohm.py), read by h5turbo object by object against h5py; a
damaged shared message table is an error, not a crash."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo
from support.h5compare import assert_same
from support.common import DATA_DIR

FIXTURES = sorted((DATA_DIR / "sohm").glob("*.h5"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_every_object_like_h5py(path):
    seen = []
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        def visit(name, theirs):
            ours = f[name]
            for key in theirs.attrs:
                assert_same(theirs.attrs[key], ours.attrs[key], f"{name}@{key}")
            assert list(ours.attrs) == list(theirs.attrs), name
            if isinstance(theirs, h5py.Dataset):
                assert_same(theirs[()], ours[()], name)
                assert (ours.shape, ours.dtype, ours.chunks, ours.compression, ours.shuffle) == \
                       (theirs.shape, theirs.dtype, theirs.chunks, theirs.compression, theirs.shuffle), name
                assert_same(np.asarray(theirs.fillvalue), np.asarray(ours.fillvalue), f"{name} fill value")
            seen.append(name)
        h.visititems(visit)
    assert len(seen) > 20


def test_damaged_shared_message_table_is_an_error(tmp_path):
    data = bytearray(FIXTURES[0].read_bytes())
    table = data.find(b"SMTB")
    assert table > 0
    data[table + 12] ^= 0xFF  # inside the first index: the checksum no longer matches
    broken = tmp_path / "broken.h5"
    broken.write_bytes(bytes(data))
    with pytest.raises(h5turbo.Error, match="shared message table"):
        with h5turbo.File(broken) as f:
            f["g0/d0"][()]
