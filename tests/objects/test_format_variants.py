"""Files in less common but valid format variants, compared with h5py:

* superblocks whose size of offsets differs from the size of lengths
  (``H5Pset_sizes``): every superblock address field is "size of offsets" wide;
* global heaps (vlen data) with 2- or 4-byte lengths: collection and object headers are
  rounded up to a multiple of 8 bytes;
* datasets made with ``H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS``: partial edge chunks are
  stored unfiltered (files in tests/data/regressions, see the README there)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from support.common import DATA_DIR, import_h5turbo

h5turbo = import_h5turbo()

REGRESSIONS = DATA_DIR / "regressions"
CORPUS = DATA_DIR / "corpus"

SIZES = [((8, 4), "earliest"), ((4, 8), "earliest"), ((4, 2), "latest"), ((8, 4), "latest"),
         ((4, 4), "earliest"), ((2, 2), "earliest"), ((2, 8), "latest"), ((8, 2), "earliest")]


def _sized_file(path, sizes, libver):
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_sizes(*sizes)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    if libver == "latest":
        fapl.set_libver_bounds(h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST)
    fid = h5py.h5f.create(str(path).encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    with h5py.File(fid) as f:
        f["a"] = np.arange(10)
        f["a"].attrs["s"] = "vlen string attr"
        f["vs"] = np.array(["x", "yy", "zzz", "", "a longer string of 29 bytes.."], dtype=h5py.string_dtype())
        f.create_dataset("vi", data=np.array([np.arange(n, dtype="<i4") for n in (1, 3, 0, 9)],
                                             dtype=h5py.vlen_dtype("<i4")))
        f.create_group("g")["b"] = np.arange(3)
        f.create_dataset("c", data=np.arange(40.0).reshape(8, 5), chunks=(3, 2), compression="gzip")


@pytest.mark.parametrize("sizes,libver", SIZES, ids=[f"o{o}l{l}-{v}" for (o, l), v in SIZES])
def test_offset_and_length_sizes(tmp_path, sizes, libver):
    """Regression: the end-of-file address was read with the size of lengths (the file
    did not open), and vlen data with 2- or 4-byte lengths missed every heap object."""
    path = tmp_path / "sized.h5"
    _sized_file(path, sizes, libver)
    with h5py.File(path, "r") as f, h5turbo.File(path, "r") as t:
        want, got = [], []
        f.visit(want.append)
        t.visit(got.append)
        assert got == want
        assert t["a"].attrs["s"] == f["a"].attrs["s"]
        assert list(t["vs"][()]) == list(f["vs"][()])
        for a, b in zip(t["vi"][()], f["vi"][()]):
            np.testing.assert_array_equal(a, b)
        for name in ("a", "g/b", "c"):
            np.testing.assert_array_equal(t[name][()], f[name][()])


PARTIAL = ["dont_filter_partial_earliest.h5", "dont_filter_partial_latest.h5"]


@pytest.mark.parametrize("name", PARTIAL)
def test_unfiltered_partial_edge_chunks(name):
    """Regression: with H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS the edge chunks are stored
    raw; h5turbo ran the gzip pipeline on them ("corrupt zlib stream")."""
    path = REGRESSIONS / name
    with h5py.File(path, "r") as f:
        datasets = {n: f[n][()] for n in f}
    assert {"d", "shuffle", "many"} <= set(datasets)
    # first reads of a freshly opened file: small ones find their chunks one by one
    for n, want in datasets.items():
        with h5turbo.File(path, "r") as t:
            assert t[n][-1, -1] == want[-1, -1], n
            np.testing.assert_array_equal(t[n][-3:, 2:7], want[-3:, 2:7], err_msg=n)
    # whole reads, and reductions, which decode through the same path
    with h5turbo.File(path, "r") as t:
        for n, want in datasets.items():
            np.testing.assert_array_equal(t[n][()], want, err_msg=n)
            assert int(t[n].sum()) == int(want.sum()), n
            np.testing.assert_array_equal(t[n].max(axis=0), want.max(axis=0), err_msg=n)


def test_dense_attributes_tracked_without_an_index_come_in_creation_order(tmp_path):
    """More than 8 attributes (dense storage) with creation order tracked but not
    indexed: h5py lists them in creation order (they came by name)."""
    path = tmp_path / "tracked.h5"
    with h5py.File(path, "w") as f:
        for count in (3, 12):
            gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
            gcpl.set_attr_creation_order(h5py.h5p.CRT_ORDER_TRACKED)
            group = h5py.Group(h5py.h5g.create(f.id, f"g{count}".encode(), gcpl=gcpl))
            for i in range(count):
                group.attrs[f"z{count - i:02d}"] = i  # made z12, z11 ...: name order reversed
    with h5py.File(path) as ref, h5turbo.File(path) as f:
        for name in ("g3", "g12"):
            assert list(f[name].attrs) == list(ref[name].attrs), name
        assert list(f["g12"].attrs)[0] == "z12"


def test_a_name_that_is_not_utf8_in_an_old_style_group_leaves_the_group_readable(tmp_path):
    """A Latin-1 member name in a symbol-table group (libhdf5's default format) made
    the whole group unreadable ("local heap string is not valid UTF-8"): it is listed
    by its bytes, as h5py lists it, and it and its siblings open."""
    path = tmp_path / "latin1.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset(b"caf\xe9", data=np.arange(3))
        f["ok"] = np.arange(4)
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        assert list(f) == list(h) == [b"caf\xe9", "ok"]
        assert f["ok"][-1] == 3 and f[b"caf\xe9"][-1] == 2


def test_an_empty_compact_dataset_reads_through_every_path(tmp_path):
    """A compact dataset with a zero-length axis: read as a chunk of size zero before
    (the engine's "chunk dimension of zero"; fast5 signals of 0 samples failed so)."""
    path = tmp_path / "compact_empty.h5"
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"e", h5py.h5t.NATIVE_INT16, h5py.h5s.create_simple((0,)), dcpl=dcpl)
    with h5turbo.File(path) as f:
        assert f["e"][()].shape == (0,) and f["e"][:].dtype == np.int16
        assert f["e"].sum() == 0 and f["e"].read(threads=2).shape == (0,)


def test_an_unknown_message_flagged_fail_always_refuses_its_object_as_libhdf5():
    """libhdf5's tbogus.h5: message type 0x1a with flag 0x80 ('fail if unknown, always')."""
    path = REGRESSIONS / "tbogus.h5"
    with h5py.File(path, "r") as h:
        with pytest.raises(Exception):
            h["Dataset3"]
    with h5turbo.File(path) as f:
        for name in ("Dataset3", "group/Dataset3"):
            with pytest.raises(h5turbo.FormatError, match="must understand"):
                f[name][()]
        assert f["Dataset1"].shape == h5py.File(path, "r")["Dataset1"].shape  # its siblings read


def test_a_compound_of_no_members_is_a_format_error_as_in_libhdf5():
    path = REGRESSIONS / "bad_compound.h5"
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.FormatError, match="no members"):
            f["dataset"].dtype


def test_reductions_of_bitfields_reduce_the_integers_h5py_reads(tmp_path):
    path = tmp_path / "bits.h5"
    values = np.array([[1, 200, 3], [255, 0, 7]], dtype="<u1")
    with h5py.File(path, "w") as f:
        space = h5py.h5s.create_simple(values.shape)
        ds = h5py.h5d.create(f.id, b"b8", h5py.h5t.STD_B8LE, space)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, values)
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        read = h["b8"][()]
        assert f["b8"].sum() == read.sum() and f["b8"].max() == read.max()
        np.testing.assert_array_equal(f["b8"].sum(axis=0), read.sum(axis=0))
        np.testing.assert_allclose(f["b8"].mean(axis=1), read.mean(axis=1))


def test_a_sequence_of_sequences_is_a_plain_object_array_as_in_h5py():
    """libhdf5's h5copytst_new.h5 /nested_vl: vlen of vlen of int32."""
    path = CORPUS / "hdf5" / "h5copytst_new.h5"
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        want, got = h["nested_vl"][()], f["nested_vl"][()]
        assert [w.dtype for w in want.flat] == [g.dtype for g in got.flat]
        assert [[list(x) for x in w] for w in want.flat] == [[list(x) for x in g] for g in got.flat]


def test_a_reference_chosen_as_fill_value_is_that_reference_as_in_h5py():
    """MATLAB fills its cell arrays' reference datasets with /#refs#/a, its canonical empty."""
    path = CORPUS / "matlab" / "cell.mat"
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        want, got = h["cell"].fillvalue, f["cell"].fillvalue
        assert isinstance(got, h5turbo.Reference) and f[got].name == h[want].name
