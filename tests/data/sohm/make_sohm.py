"""Writes the source file that the SOHM fixtures here were made from with libhdf5's
h5repack (hdf5-tools 1.10.8, Debian 12), which h5py cannot do itself:

    python make_sohm.py plain.h5
    h5repack -s 1 plain.h5 sohm_all.h5          # dataspaces, datatypes, fill values, filters shared
    h5repack -s 1:dspace -L plain.h5 sohm_dspace_latest.h5

The fixtures are kept in the repository (tests/objects/test_sohm.py reads them and compares
with h5py); plain.h5 is not."""

import sys

import h5py
import numpy as np

rng = np.random.default_rng(1)
with h5py.File(sys.argv[1], "w") as f:
    compound = np.dtype([("x", "<f4"), ("n", "<i2")])
    for g in range(3):
        grp = f.create_group(f"g{g}")
        grp.attrs["units"] = "meters"
        grp.attrs["scale"] = np.float64(1.5)
        for i in range(3):
            d = grp.create_dataset(f"d{i}", data=rng.integers(0, 100, (20, 30)).astype("<i4"), chunks=(10, 10),
                                   compression="gzip", shuffle=True, fillvalue=-1)
            d.attrs["units"] = "meters"
            d.attrs["axis_values"] = np.arange(20, dtype="f8")
        many = grp.create_dataset("many_attrs", data=np.arange(5, dtype=">u2"))
        for k in range(12):  # past the compact limit: dense attribute storage with libver latest
            many.attrs[f"a{k:02d}"] = np.int32(k) if k % 2 else np.arange(k + 1, dtype="f4")
        grp.create_dataset("records", data=np.array([(1.5, 2), (3.0, -4)], dtype=compound))
        grp.create_dataset("strings", data=np.array(["alpha", "bé"], dtype=h5py.string_dtype()))
        grp.create_dataset("scalar", data=np.float32(2.5))
