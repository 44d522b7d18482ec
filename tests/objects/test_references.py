"""Object and region references against h5py: datasets and attributes of references
(null ones included), vlen of references and compounds with them (what dimension scales
store), region references of every selection kind, under several libver settings; the
corpus files with references; broken references give typed errors."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import h5turbo
from support.h5gen import write_revised_reference_file
from support import h5compare as hc
from support.common import corpus_dir

LIBVERS = [("earliest", "latest"), ("v108", "latest"), ("v110", "latest"), ("latest", "latest")]


def _region(ds, select) -> h5py.RegionReference:
    """A region reference to the selection `select(space)` makes on ds's dataspace."""
    space = ds.id.get_space()
    select(space)
    return h5py.h5r.create(ds.id, b".", h5py.h5r.DATASET_REGION, space)


def _points(coords):
    return lambda space: space.select_elements(coords)


def _union(*boxes):
    def select(space):
        space.select_none()
        for start, count in boxes:
            space.select_hyperslab(start, count, op=h5py.h5s.SELECT_OR)
    return select


def _write(path, libver):
    rng = np.random.default_rng(7)
    with h5py.File(path, "w", libver=libver) as f:
        g = f.create_group("g")
        d2 = g.create_dataset("d2", data=rng.integers(0, 1000, (12, 9)).astype("i4"))
        d3 = f.create_dataset("d3", data=rng.random((4, 5, 6)), chunks=(2, 5, 3))
        d1 = f.create_dataset("d1", data=np.arange(50, dtype="f4"))
        f["g/also_d2"] = d2  # a second hard link: h5py names it by the first one found
        f["t"] = np.dtype("<i8")
        targets = [g.ref, d2.ref, d3.ref, f["t"].ref, f.ref, h5py.Reference()]
        # groups in dense link storage, with creation order tracked or not, holding one
        # dataset under two names: h5py names it by libhdf5's visiting order
        for track in (False, True):
            dense = f.create_group(f"dense_{track}", track_order=track)
            for i in range(24):
                dense.create_group(f"m{(i * 7) % 24:02d}")
            inner = dense["m05"].create_dataset("k", data=[track])
            dense["m13"]["other_name"] = inner
            dense["b_link"] = inner
            targets.append(inner.ref)

        f.create_dataset("refs", data=np.array(targets, dtype=h5py.ref_dtype))
        f.create_dataset("refs_chunked", data=np.array(targets * 3, dtype=h5py.ref_dtype),
                         chunks=(4,), compression="gzip", shuffle=True)
        f.create_dataset("refs_2d", data=np.array(targets, dtype=h5py.ref_dtype).reshape(2, 4))
        f.create_dataset("ref_scalar", data=d3.ref, dtype=h5py.ref_dtype)
        f.create_dataset("refs_empty", shape=(0,), dtype=h5py.ref_dtype)

        vlen = f.create_dataset("vlen_refs", (3,), dtype=h5py.vlen_dtype(h5py.ref_dtype))
        vlen[0] = np.array([g.ref, d2.ref], dtype=object)
        vlen[1] = np.array([], dtype=object)
        vlen[2] = np.array([d1.ref], dtype=object)
        compound = np.dtype([("obj", h5py.ref_dtype), ("n", "<i4"), ("x", "<f8")])
        f.create_dataset("compound_refs", data=np.array(
            [(d1.ref, 1, 0.5), (h5py.Reference(), 2, 1.5), (g.ref, 3, 2.5)], dtype=compound))

        regions = [
            d2.regionref[2:7, 1:8:3],       # regular hyperslab
            d2.regionref[...],              # all
            d2.regionref[5, 4],
            _region(d2, _points([(1, 1), (11, 8), (0, 0), (1, 1)])),  # points, stored order
            _region(d2, _union(((0, 0), (2, 2)), ((5, 5), (3, 3)))),   # irregular union
            _region(d2, _union(((0, 0), (2, 3)), ((4, 0), (2, 3)))),   # union that is a box product
            _region(d2, lambda space: space.select_none()),
            d3.regionref[1:3, ::2, 4:],
            d1.regionref[10:40:7],
            h5py.RegionReference(),
        ]
        f.create_dataset("regions", data=np.array(regions, dtype=h5py.regionref_dtype))

        f.attrs["ref"] = d2.ref
        f.attrs["null_ref"] = h5py.Reference()
        f.attrs["refs"] = np.array(targets, dtype=h5py.ref_dtype)
        f.attrs["region"] = d2.regionref[3:5, 2:4]
        f.attrs["regions"] = np.array(regions[:4], dtype=h5py.regionref_dtype)
        d1.attrs["vlen_refs"] = np.array(
            [np.array([g.ref], dtype=object), np.array([d3.ref, d1.ref], dtype=object)],
            dtype=h5py.vlen_dtype(h5py.ref_dtype))

        # dimension scales write DIMENSION_LIST (vlen of refs) and REFERENCE_LIST (compound)
        x = f.create_dataset("x", data=np.arange(12.0))
        y = f.create_dataset("y", data=np.arange(9.0))
        y2 = f.create_dataset("y2", data=np.arange(9.0) * 2)
        for scale, name in ((x, "x"), (y, "y"), (y2, "y2")):
            scale.make_scale(name)
        d2.dims[0].attach_scale(x)
        d2.dims[1].attach_scale(y)
        d2.dims[1].attach_scale(y2)


@pytest.fixture(scope="module", params=LIBVERS, ids=lambda v: "-".join(v))
def pair(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("refs") / "refs.h5"
    _write(path, request.param)
    with h5py.File(path, "r") as h, h5turbo.File(path) as t:
        yield h, t


DATASETS = ["refs", "refs_chunked", "refs_2d", "ref_scalar", "refs_empty", "vlen_refs",
            "compound_refs", "regions"]


@pytest.mark.parametrize("name", DATASETS)
def test_reference_datasets_match_h5py(pair, name):
    h, t = pair
    assert hc.dtype_difference(h[name].dtype, t[name].dtype) is None
    problem = hc.reference_difference(h[name][()], h, t[name][()], t)
    assert problem is None, problem


@pytest.mark.parametrize("name", ["refs", "vlen_refs", "compound_refs", "regions"])
def test_fillvalue_like_h5py(pair, name):
    h, t = pair
    expected, got = h[name].fillvalue, t[name].fillvalue
    if expected is None:
        assert got is None
    else:
        assert got.dtype == expected.dtype and got.tolist() == expected.tolist()


def test_reference_attributes_match_h5py(pair):
    h, t = pair
    checked = 0
    for obj in ("/", "/d1", "/g/d2", "/x", "/y", "/y2"):
        assert list(t[obj].attrs) == list(h[obj].attrs)
        for name in h[obj].attrs:
            problem = hc.reference_difference(h[obj].attrs[name], h, t[obj].attrs[name], t)
            assert problem is None, f"{obj} @{name}: {problem}"
            checked += 1
    assert checked >= 12


def test_dimension_scale_attributes(pair):
    h, t = pair
    dims = t["g/d2"].attrs["DIMENSION_LIST"]
    assert dims.dtype.metadata["vlen"].metadata["ref"] is h5turbo.Reference
    assert [[t[r].name for r in axis] for axis in dims] == [["/x"], ["/y", "/y2"]]
    ref_list = t["y2"].attrs["REFERENCE_LIST"]
    assert ref_list.dtype.names == h["y2"].attrs["REFERENCE_LIST"].dtype.names
    expected = [(h[r].name, int(i)) for r, i in h["y2"].attrs["REFERENCE_LIST"]]
    assert [(t[r].name, int(i)) for r, i in ref_list] == expected
    assert expected[0][0] in ("/g/d2", "/g/also_d2")


def test_dereference_like_h5py(pair):
    h, t = pair
    for tref, href in zip(t["refs"][()], h["refs"][()]):
        assert bool(tref) == bool(href)
        if not href:
            with pytest.raises(ValueError, match="Invalid HDF5 object reference"):
                t[tref]
            continue
        obj, expected = t[tref], h[href]
        assert obj.name == expected.name
        assert type(obj).__name__ == type(expected).__name__
        assert t["g"][tref] == obj  # any group dereferences, as in h5py
    d2 = t[t["refs"][1]]
    np.testing.assert_array_equal(d2[...], h["g/d2"][...])
    assert t[t["refs"][3]].dtype == h["t"].dtype


def test_region_reads_like_h5py(pair):
    h, t = pair
    for i, (tref, href) in enumerate(zip(t["regions"][()], h["regions"][()])):
        if not href:
            assert not tref
            continue
        target = h[href]
        assert t[tref].name == target.name
        got, exp = t[target.name][tref], target[href]
        assert got.shape == exp.shape and got.dtype == exp.dtype, i
        np.testing.assert_array_equal(got, exp)
    with pytest.raises(ValueError, match="must point to this dataset"):
        t["d1"][t["regions"][0]]


def test_reference_objects():
    a, b, null = h5turbo.Reference(96), h5turbo.Reference(96), h5turbo.Reference()
    assert a == b and hash(a) == hash(b) and a != null and not null
    region = h5turbo.RegionReference(4096, 1)
    assert region and region != h5turbo.RegionReference(4096, 2) and region.heap_id == (4096, 1)
    assert h5py.check_dtype(ref=h5turbo.ref_dtype) is h5turbo.Reference
    assert h5py.check_dtype(ref=h5turbo.regionref_dtype) is h5turbo.RegionReference


CORPUS = corpus_dir()
CORPUS_WITH_REFERENCES = sorted({
    *CORPUS.glob("pyfive/references.hdf5"), *CORPUS.glob("pyfive/dim_scales.hdf5"),
    *CORPUS.glob("netcdf4/*.nc"),
})


def _reference_values(h, t):
    """(where, h5py value, h5turbo value) of every dataset and attribute holding references."""
    found = []

    def visit(name, obj):
        for attr in obj.attrs:
            dt = obj.attrs.get_id(attr).dtype
            if _holds_reference(dt):
                found.append((f"{name} @{attr}", obj.attrs[attr], t[name].attrs[attr]))
        if isinstance(obj, h5py.Dataset) and _holds_reference(obj.dtype):
            found.append((name, obj[()], t[name][()]))

    h.visititems(visit)
    return found


def _holds_reference(dt) -> bool:
    if h5py.check_dtype(ref=dt) is not None:
        return True
    base = h5py.check_vlen_dtype(dt)
    if base is not None and base not in (str, bytes):
        return _holds_reference(np.dtype(base))
    return bool(dt.names) and any(_holds_reference(dt.fields[n][0]) for n in dt.names)


@pytest.mark.parametrize("path", CORPUS_WITH_REFERENCES, ids=lambda p: p.name)
def test_corpus_references_match_h5py(path):
    with h5py.File(path, "r") as h, h5turbo.File(path) as t:
        found = _reference_values(h, t)
        assert found, "the file was listed for its references"
        for where, exp, got in found:
            problem = hc.reference_difference(exp, h, got, t)
            assert problem is None, f"{where}: {problem}"


# ---------------------------------------------------------------------- broken input


def _corrupt(path, dataset, element_bytes: bytes):
    """Overwrite the first stored element of a contiguous dataset."""
    with h5py.File(path, "r") as f:
        offset = f[dataset].id.get_offset()
    with open(path, "r+b") as raw:
        raw.seek(offset)
        raw.write(element_bytes)


@pytest.fixture
def broken(tmp_path):
    path = tmp_path / "broken.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(10))
        f.create_dataset("refs", data=np.array([d.ref, d.ref], dtype=h5py.ref_dtype))
        f.create_dataset("regions", data=np.array([d.regionref[2:4]] * 2, dtype=h5py.regionref_dtype))
    return path


@pytest.mark.parametrize("address", [16, 3, 10**9, 2**63])
def test_object_reference_to_garbage_is_a_typed_error(broken, address):
    _corrupt(broken, "refs", address.to_bytes(8, "little"))
    with h5turbo.File(broken) as f:
        ref = f["refs"][0]
        assert ref.address == address
        with pytest.raises(h5turbo.Error) as info:
            f[ref]
        message = str(info.value)
        assert str(broken) in message and f"object reference to address {address}" in message
        assert f[f["refs"][1]].name == "/d"  # the intact reference still works


@pytest.mark.parametrize("collection", [16, 10**9])
def test_region_reference_to_garbage_is_a_typed_error(broken, collection):
    _corrupt(broken, "regions", collection.to_bytes(8, "little") + (1).to_bytes(4, "little"))
    with h5turbo.File(broken) as f:
        ref = f["regions"][0]
        with pytest.raises(h5turbo.Error) as info:
            f["d"][ref]
        assert str(broken) in str(info.value) and "region reference" in str(info.value)
        np.testing.assert_array_equal(f["d"][f["regions"][1]], [2, 3])


def test_region_selection_garbage_is_a_typed_error(tmp_path):
    """A region whose serialized selection is damaged (here: its selection type)."""
    path = tmp_path / "selection.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(10))
        f.create_dataset("regions", data=np.array([d.regionref[2:4]], dtype=h5py.regionref_dtype))
    data = bytearray(path.read_bytes())
    with h5py.File(path, "r") as f:
        address = f["d"].id.get_offset()  # not the heap: find the heap object by content
    heap = data.find(b"GCOL")
    assert heap > 0 and address
    # the heap object: 16-byte object header, then dataset address (8), selection type (4)
    object_start = heap + 16 + 16
    data[object_start + 8:object_start + 12] = (77).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with h5turbo.File(path) as f:
        with pytest.raises(h5turbo.FormatError, match="unknown selection type 77"):
            f["d"][f["regions"][0]]


def test_revised_references_are_unsupported_and_named(tmp_path):
    path = write_revised_reference_file(tmp_path / "revised.h5")
    with h5turbo.File(path) as f:
        np.testing.assert_array_equal(f["plain"][()], np.arange(3))
        with pytest.raises(h5turbo.UnsupportedError, match="1.12") as info:
            f["refs"][()]
        assert str(path) in str(info.value) and "/refs" in str(info.value)
