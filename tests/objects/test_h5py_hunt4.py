"""A fourth differential hunt against h5py: dimension scales (shared, several per axis,
in other groups, unnamed, labels without scales, deleted after attaching; written by
h5py, by libhdf5's H5DS calls, by netCDF4 and h5netcdf), object and region references
(attributes and datasets, scalar and arrays, null, named datatypes, compound members,
hyperslab unions and point selections of rank 1 to 6), and h5py's dtype helpers on the
dtypes both libraries give for the same objects. Every file is written by h5py (or a
netCDF writer) at test time, or is a corpus file; h5py reading it is the reference."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
# the corpus files with dimension scales or references (see tests/data/corpus/README.md)
CORPUS_FILES = ["pyfive/dim_scales.hdf5", "pyfive/references.hdf5", "pyfive/h5netcdf_test.hdf5",
                "pyfive/netcdf4_classic.nc", "pyfive/enum_variable.nc", "pyfive/enums_from_netcdf.nc",
                "pyfive/issue23_A.nc", "pyfive/issue23_A_contiguous.nc", "pyfive/issue23_B.nc",
                "pyfive/noy_AERmonZ_UKESM1-0-LL_piControl_r1i1p1f2_gnz_200001-200012.nc",
                "netcdf4/test_gold.nc", "netcdf4/issue671.nc", "netcdf4/issue672.nc", "netcdf4/issue1152.nc",
                "netcdf4/20171025_2056.Cloud_Top_Height.nc"]


# ---------------------------------------------------------------------- files


def _write_scales_and_refs(path: Path, libver: str) -> None:
    with h5py.File(path, "w", libver=libver) as f:
        f["x"] = np.arange(4.0)
        f["x"].make_scale("xname")
        coords = f.create_group("coords")
        coords["y"] = np.arange(3)
        coords["y"].make_scale("ünï")
        coords["y2"] = np.arange(3) * 2
        coords["y2"].make_scale("")  # a scale without a name
        f["data"] = np.zeros((4, 3))
        f["data2"] = np.ones((4, 3))
        for name in ("data", "data2"):  # one scale shared by two datasets
            f[name].dims[0].attach_scale(f["x"])
            f[name].dims[1].attach_scale(coords["y"])
        f["data"].dims[1].attach_scale(coords["y2"])  # two scales on one axis
        f["data"].dims[0].label = "rows"
        f["labelled"] = np.zeros((2, 2))
        f["labelled"].dims[1].label = "only a label"
        f["s0"] = 5
        _write_references(f)
        _write_dtypes(f)


def _write_references(f: h5py.File) -> None:
    f["T"] = np.dtype("i4")  # a named datatype
    f.attrs["r"] = f["x"].ref
    f.attrs["rnull"] = h5py.Reference()
    f.attrs["rarr"] = np.array([f["x"].ref, f["coords"].ref, h5py.Reference()], dtype=h5py.ref_dtype)
    f.attrs["rt"] = f["T"].ref
    f["refs"] = np.array([[f["x"].ref, f["coords"].ref], [f["T"].ref, h5py.Reference()]],
                         dtype=h5py.ref_dtype)
    f["a3"] = np.arange(60).reshape(3, 4, 5)
    a3 = f["a3"]
    f["rr"] = np.array([a3.regionref[...], a3.regionref[1:3, ::2, 4], a3.regionref[0, 1, 2],
                        a3.regionref[:, [0, 2, 3], 1:5:2], a3.regionref[np.arange(60).reshape(3, 4, 5) % 7 == 0],
                        a3.regionref[1:1]], dtype=h5py.regionref_dtype)
    f["a1"] = np.arange(10)
    f.attrs["rr1"] = f["a1"].regionref[2:8:3]
    f.attrs["rrs"] = f["s0"].regionref[()]
    members = np.dtype([("r", h5py.ref_dtype), ("v", "i4")])
    f["comp"] = np.array([(f["x"].ref, 1), (h5py.Reference(), 2)], dtype=members)


def _write_dtypes(f: h5py.File) -> None:
    f["sfix"] = np.array([b"ab"], dtype=h5py.string_dtype("utf-8", 5))
    f["svl"] = np.array(["ab"], dtype=h5py.string_dtype())
    f["sasc"] = np.array([b"ab"], dtype=h5py.string_dtype("ascii"))
    f.create_dataset("vl", (2,), dtype=h5py.vlen_dtype("i2"))
    f["en"] = np.array([0, 1], dtype=h5py.enum_dtype({"a": 0, "b": 1}, "i1"))
    f["op"] = np.array([b"ab"], dtype=h5py.opaque_dtype("V2"))
    f["b"] = np.array([True, False])
    f.attrs["fixu"] = np.array(b"hi", dtype=h5py.string_dtype("utf-8", 2))
    # nested: vlen of enums, compounds, fixed strings, references, vlens; arrays of enums;
    # compounds of every special member
    enum = h5py.enum_dtype({"a": 0, "b": 1}, "i1")
    for name, base in (("v_enum", enum), ("v_comp", np.dtype([("a", "i4"), ("b", "f4")])),
                       ("v_fixed", h5py.string_dtype("utf-8", 3)), ("v_ref", h5py.ref_dtype),
                       ("v_vlen", h5py.vlen_dtype("i2"))):
        f.create_dataset(name, (2,), dtype=h5py.vlen_dtype(base))
    f.create_dataset("a_enum", (2,), dtype=np.dtype((enum, (3,))))
    members = np.dtype([("s", h5py.string_dtype()), ("e", enum), ("f", h5py.string_dtype("ascii", 4)),
                        ("r", h5py.regionref_dtype), ("v", h5py.vlen_dtype("f8")), ("o", h5py.opaque_dtype("V3"))])
    f.create_dataset("c_special", (2,), dtype=members)
    f.attrs.create("a_enum", np.zeros(2, dtype=np.dtype((enum, (3,)))))
    f.attrs.create("c_special", np.zeros(1, dtype=np.dtype([("e", enum), ("f", h5py.string_dtype("utf-8", 4))])))


def _write_region_unions(path: Path, libver: str) -> None:
    """Region references made with libhdf5's selection calls: point lists, unions and
    exclusive-ors of overlapping hyperslabs, strided blocks, over datasets of rank 1 to 6."""
    rng = np.random.default_rng(1)
    with h5py.File(path, "w", libver=libver) as f:
        refs = []
        for rank in (1, 2, 3, 4, 6):
            shape = tuple(int(n) for n in rng.integers(2, 6 if rank < 6 else 4, size=rank))
            ds = f.create_dataset(f"d{rank}", data=np.arange(int(np.prod(shape))).reshape(shape))
            refs += [_region(f, ds, kind % 4, rng) for kind in range(12)]
        f["regs"] = np.array(refs, dtype=h5py.regionref_dtype)
        f.attrs["regs"] = np.array(refs[:5], dtype=h5py.regionref_dtype)


def _region(f: h5py.File, ds: h5py.Dataset, kind: int, rng) -> h5py.RegionReference:
    space, shape = ds.id.get_space(), ds.shape
    if kind == 0:
        points = [[int(rng.integers(0, n)) for n in shape] for _ in range(int(rng.integers(1, 6)))]
        space.select_elements(np.array(points))
    elif kind in (1, 2):
        space.select_none()
        for _ in range(int(rng.integers(1, 4))):
            start = tuple(int(rng.integers(0, n)) for n in shape)
            count = tuple(int(rng.integers(1, n - s + 1)) for n, s in zip(shape, start))
            space.select_hyperslab(start, count, op=h5py.h5s.SELECT_OR if kind == 1 else h5py.h5s.SELECT_XOR)
    else:
        space.select_hyperslab((0,) * len(shape), tuple(max(1, n // 2) for n in shape),
                               (2,) * len(shape), (1,) * len(shape))
    return h5py.h5r.create(f.id, ds.name.encode(), h5py.h5r.DATASET_REGION, space)


def _write_low_level_scales(path: Path) -> None:
    """Scales set, attached, labelled and detached through h5py.h5ds (libhdf5's H5DS)."""
    with h5py.File(path, "w") as f:
        f["s"] = np.arange(3)
        f["s2"] = np.arange(3.0) * 2
        f["d"] = np.zeros((3, 3))
        f["e"] = np.zeros(3)
        h5py.h5ds.set_scale(f["s"].id, b"sname")
        h5py.h5ds.set_scale(f["s2"].id)
        h5py.h5ds.attach_scale(f["d"].id, f["s"].id, 0)
        h5py.h5ds.attach_scale(f["d"].id, f["s2"].id, 0)
        h5py.h5ds.attach_scale(f["d"].id, f["s2"].id, 1)
        h5py.h5ds.set_label(f["d"].id, 1, b"lbl")
        h5py.h5ds.detach_scale(f["d"].id, f["s"].id, 0)
        h5py.h5ds.attach_scale(f["e"].id, f["s"].id, 0)
        h5py.h5ds.detach_scale(f["e"].id, f["s"].id, 0)  # an emptied DIMENSION_LIST


def _write_netcdf4(path: Path) -> None:
    netCDF4 = pytest.importorskip("netCDF4")
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 3)
        nc.createDimension("nocoord", 2)  # a dimension without a variable
        nc.createVariable("time", "f8", ("time",))[:] = [1, 2]
        nc.createVariable("x", "i4", ("x",))[:] = [1, 2, 3]
        nc.createVariable("v", "f4", ("time", "x", "nocoord"))[:] = np.ones((2, 3, 2))
        sub = nc.createGroup("sub")
        sub.createVariable("w", "f4", ("x",))[:] = [1, 2, 3]  # a scale of the parent group
        sub.createDimension("inner", 2)
        sub.createVariable("q", "i2", ("inner", "time"))


def _write_h5netcdf(path: Path) -> None:
    h5netcdf = pytest.importorskip("h5netcdf")
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"x": 3, "y": 2}
        f.create_variable("x", ("x",), data=np.arange(3))
        f.create_variable("v", ("x", "y"), data=np.zeros((3, 2)))
        f.create_group("g").create_variable("w", ("x",), data=np.arange(3))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("hunt4")
    made = {}
    for libver in ("earliest", "latest"):
        made[f"scales-{libver}"] = root / f"scales-{libver}.h5"
        _write_scales_and_refs(made[f"scales-{libver}"], libver)
        made[f"regions-{libver}"] = root / f"regions-{libver}.h5"
        _write_region_unions(made[f"regions-{libver}"], libver)
    for name, writer in (("h5ds", _write_low_level_scales), ("netcdf4", _write_netcdf4),
                         ("h5netcdf", _write_h5netcdf)):
        made[name] = root / f"{name}.h5"
        writer(made[name])
    return made


def _all_files(files: dict) -> list:
    return list(files.values()) + [CORPUS / name for name in CORPUS_FILES if (CORPUS / name).exists()]


def _datasets(h: h5py.File) -> list:
    names = []
    h.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


# ---------------------------------------------------------------------- dimension scales


def _dims_view(ds) -> list:
    """What ``ds.dims`` shows, axis by axis, with scales named by their paths."""
    view = [ds.is_scale, len(ds.dims)]
    for axis, dim in enumerate(ds.dims):
        view.append((axis, dim.label, len(dim), list(dim.keys()), list(dim),
                     [v.name for v in dim.values()], [(k, v.name) for k, v in dim.items()],
                     [dim[i].name for i in range(len(dim))], [dim[k].name for k in dim.keys()]))
    return view


def test_dims_like_h5py(files):
    compared = 0
    for path in _all_files(files):
        with h5py.File(path, "r") as h, h5turbo.File(path) as f:
            for name in _datasets(h):
                assert _dims_view(f[name]) == _dims_view(h[name]), (path, name)
                compared += sum(len(d) for d in h[name].dims)
    assert compared > 20  # scales were attached: the comparison is not vacuous


def test_scale_attributes_like_h5py(files):
    for key in ("scales-earliest", "scales-latest", "h5ds", "netcdf4"):
        with h5py.File(files[key], "r") as h, h5turbo.File(files[key]) as f:
            for name in _datasets(h):
                for attr in ("NAME", "CLASS", "_Netcdf4Dimid", "_Netcdf4Coordinates", "DIMENSION_LABELS"):
                    if attr in h[name].attrs:
                        assert np.array_equal(f[name].attrs[attr], h[name].attrs[attr]), (name, attr)
                if "REFERENCE_LIST" in h[name].attrs:
                    theirs = [(h[r].name, int(i)) for r, i in h[name].attrs["REFERENCE_LIST"]]
                    assert [(f[r].name, int(i)) for r, i in f[name].attrs["REFERENCE_LIST"]] == theirs


def _write_deleted_scale(path: Path, libver: str, reuse: bool) -> None:
    """/d axis 0 holds /kept then /gone, deleted after it was attached; with ``reuse``
    a dataset written next (/after) takes the freed object header, which the stale
    reference then names."""
    with h5py.File(path, "w", libver=libver) as h:
        h["gone"] = np.arange(4.0)
        h["gone"].make_scale("gone")
        h["kept"] = np.arange(4.0)
        h["kept"].make_scale("kept")
        h["d"] = np.zeros(4)
        h["d"].dims[0].attach_scale(h["kept"])
        h["d"].dims[0].attach_scale(h["gone"])
        del h["gone"]
        if reuse:
            h["after"] = np.zeros(4)
            h["after"].dims[0].attach_scale(h["kept"])


def _dims_outcomes(dim) -> list:
    """Each read of one axis: its answer, or the class of the error (RuntimeError for
    the RuntimeErrors h5py raises and those here, which are also h5turbo errors)."""
    reads = (len, lambda d: d.keys(), lambda d: d[0].name, lambda d: d[1].name, lambda d: d["kept"].name,
             list, lambda d: [v.name for v in d.values()], lambda d: [n for n, _v in d.items()])
    outcomes = []
    for read in reads:
        try:
            outcomes.append(read(dim))
        except RuntimeError:
            outcomes.append(RuntimeError)
    return outcomes


@pytest.mark.parametrize("reuse", [False, True])
@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_deleted_scale_like_h5py(tmp_path, libver, reuse):
    """A scale deleted after being attached leaves its reference in DIMENSION_LIST:
    h5py (H5DSget_num_scales) still counts it; opening it, or naming an object there
    that is no scale, fails with RuntimeError; here too, naming file, dataset, axis."""
    path = tmp_path / "dangling.h5"
    _write_deleted_scale(path, libver, reuse)
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        theirs = _dims_outcomes(h["d"].dims[0])
        assert RuntimeError in theirs  # the case is not vacuous
        assert _dims_outcomes(f["d"].dims[0]) == theirs
        with pytest.raises(h5turbo.Error, match=r"dangling\.h5: /d: dimension 0: .*(gone|not a dimension scale)"):
            f["d"].dims[0].keys()


# ---------------------------------------------------------------------- references


def _deref_name(file, ref):
    return file[ref].name if ref else None


def test_object_references_like_h5py(files):
    for key in ("scales-earliest", "scales-latest"):
        with h5py.File(files[key], "r") as h, h5turbo.File(files[key]) as f:
            assert f[f.attrs["r"]].name == h[h.attrs["r"]].name
            assert [_deref_name(f, r) for r in f.attrs["rarr"]] == [_deref_name(h, r) for r in h.attrs["rarr"]]
            assert f.attrs["rarr"].shape == h.attrs["rarr"].shape
            assert type(f[f.attrs["rt"]]).__name__ == type(h[h.attrs["rt"]]).__name__ == "Datatype"
            assert bool(f.attrs["rnull"]) == bool(h.attrs["rnull"]) is False
            with pytest.raises(ValueError):
                h[h.attrs["rnull"]]
            with pytest.raises(ValueError, match="null reference"):
                f[f.attrs["rnull"]]
            ours, theirs = f["refs"][()], h["refs"][()]
            assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
            assert [_deref_name(f, r) for r in ours.flat] == [_deref_name(h, r) for r in theirs.flat]
            assert [(_deref_name(f, r), v) for r, v in f["comp"][()]] == \
                   [(_deref_name(h, r), v) for r, v in h["comp"][()]]
            assert (f.attrs["r"].typecode, f["rr"][0].typecode) == (h.attrs["r"].typecode, h["rr"][0].typecode)


def _assert_same_array(ours, theirs, what):
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, what
    assert np.array_equal(ours, theirs), what


def test_region_references_like_h5py(files):
    for key in ("scales-earliest", "scales-latest"):
        with h5py.File(files[key], "r") as h, h5turbo.File(files[key]) as f:
            for ours, theirs in zip(f["rr"][()], h["rr"][()]):
                _assert_same_array(f["a3"][ours], h["a3"][theirs], theirs)
                assert f[ours].name == h[theirs].name
            _assert_same_array(f["a1"][f.attrs["rr1"]], h["a1"][h.attrs["rr1"]], "rr1")
            assert f["s0"][f.attrs["rrs"]] == h["s0"][h.attrs["rrs"]]
            with pytest.raises(ValueError):  # a region of another dataset
                h["a1"][h["rr"][1]]
            with pytest.raises(ValueError, match="point to this dataset"):
                f["a1"][f["rr"][1]]


def test_region_unions_and_points_like_h5py(files):
    for key in ("regions-earliest", "regions-latest"):
        with h5py.File(files[key], "r") as h, h5turbo.File(files[key]) as f:
            for where in ("dataset", "attribute"):
                theirs = h["regs"][()] if where == "dataset" else h.attrs["regs"]
                ours = f["regs"][()] if where == "dataset" else f.attrs["regs"]
                for i, (mine, ref) in enumerate(zip(ours, theirs)):
                    _assert_same_array(f[mine][mine], h[ref][ref], (key, where, i))
                    assert f[mine].regionref.shape(mine) == h[ref].regionref.shape(ref)


# ---------------------------------------------------------------------- dtype helpers


def _checks(lib, dt) -> list:
    """What each of the library's dtype helpers says of ``dt``, with its own
    Reference classes named alike."""
    answers = [lib.check_string_dtype(dt), lib.check_vlen_dtype(dt), lib.check_enum_dtype(dt),
               lib.check_ref_dtype(dt), lib.check_opaque_dtype(dt),
               lib.check_dtype(vlen=dt), lib.check_dtype(enum=dt), lib.check_dtype(ref=dt)]
    names = {lib.Reference: "Reference", lib.RegionReference: "RegionReference"}
    return [names.get(a, a) if isinstance(a, type) else a for a in answers]


def _member_dtypes(dt) -> list:
    """A dtype and those of its compound members, array bases and vlen bases."""
    found = [dt]
    base = h5py.check_vlen_dtype(dt)
    if isinstance(base, np.dtype):
        found += _member_dtypes(base)
    if dt.names:
        for name in dt.names:
            found += _member_dtypes(dt[name])
    if dt.subdtype:
        found += _member_dtypes(dt.subdtype[0])
    return found


def _attribute_dtypes(ours, theirs) -> list:
    """(our dtype, h5py's dtype) of each array attribute's value (h5turbo has no
    attrs.get_id; scalars come back as Python values in both)."""
    pairs = []
    for name in theirs.attrs:
        value = theirs.attrs[name]
        if isinstance(value, np.ndarray):
            pairs.append((np.asarray(ours.attrs[name]).dtype, value.dtype))
    return pairs


def test_dtype_checks_agree_on_what_each_library_reads(files):
    compared = 0
    for path in _all_files(files):
        with h5py.File(path, "r") as h, h5turbo.File(path) as f:
            pairs = []
            for name in _datasets(h):
                pairs.append((f[name].dtype, h[name].dtype))
                pairs += _attribute_dtypes(f[name], h[name])
            pairs += _attribute_dtypes(f, h)
            for ours, theirs in pairs:
                for mine, ref in zip(_member_dtypes(ours), _member_dtypes(theirs)):
                    assert _checks(h5turbo, mine) == _checks(h5py, ref), (path, ref)
                    compared += 1
    assert compared > 100


@pytest.mark.parametrize("not_a_dtype", [5, "nonsense", object()])
def test_checks_of_what_is_no_dtype_answer_as_h5py(not_a_dtype):
    """h5py's check_enum/ref/opaque_dtype read the metadata if there is one: what has
    none gets None (False), not an error."""
    for check in ("check_enum_dtype", "check_ref_dtype", "check_opaque_dtype"):
        assert getattr(h5turbo, check)(not_a_dtype) == getattr(h5py, check)(not_a_dtype), check


def _references_in(value) -> list:
    """The references a value holds, in order: in object arrays (vlen lists too) and in
    compound members."""
    if isinstance(value, (h5py.Reference, h5turbo.Reference)):
        return [value]
    array = np.asarray(value) if isinstance(value, (np.ndarray, np.void)) else None
    if array is None:
        return []
    found = []
    if array.dtype.names:
        for record in array.reshape(-1):
            for name in array.dtype.names:
                found += _references_in(record[name])
    elif array.dtype.kind == "O":
        for item in array.reshape(-1):
            found += _references_in(item)
    return found


def test_attribute_references_like_h5py(files):
    """Every reference held by an attribute (DIMENSION_LIST, REFERENCE_LIST, plain ones)
    opens the object h5py opens."""
    compared = 0
    for path in _all_files(files):
        with h5py.File(path, "r") as h, h5turbo.File(path) as f:
            names = ["/"] + _datasets(h)
            for name in names:
                for attr in h[name].attrs:
                    theirs = [_deref_name(h, r) for r in _references_in(h[name].attrs[attr])]
                    ours = [_deref_name(f, r) for r in _references_in(f[name].attrs[attr])]
                    assert ours == theirs, (path, name, attr)
                    compared += len(theirs)
    assert compared > 100


def test_text_that_is_no_utf8_reads_as_h5py(tmp_path):
    """Variable-length string attributes (ASCII or UTF-8) holding bytes that are no
    UTF-8: h5py decodes them with surrogateescape (the bytes come back from
    s.encode("utf-8", "surrogateescape")); U+FFFD would lose them. A dimension label is
    such an attribute, which h5py gives back as the stored bytes."""
    path = tmp_path / "bytes.h5"
    stored = b"r\xe9sum\xe9 \xff"
    with h5py.File(path, "w") as f:
        for charset in ("ascii", "utf-8"):
            f.attrs.create(charset, stored, dtype=h5py.string_dtype(charset))
            f.attrs.create(charset + "-array", np.array([stored, b"ok"], dtype=object),
                           dtype=h5py.string_dtype(charset))
        d = f.create_dataset("d", data=np.zeros(3))
        d.attrs.create("DIMENSION_LABELS", np.array([stored], dtype=object), dtype=h5py.string_dtype("ascii"))
    with h5py.File(path, "r") as h, h5turbo.File(path) as f:
        for name in h.attrs:
            want, got = h.attrs[name], f.attrs[name]
            assert type(got) is type(want) and np.array_equal(np.asarray(got), np.asarray(want)), name
        assert f.attrs["ascii"].encode("utf-8", "surrogateescape") == stored
        assert f["d"].dims[0].label == h["d"].dims[0].label


def test_a_reference_to_a_deleted_object_is_a_key_error_as_h5py(tmp_path):
    """h5py: KeyError "Unable to open object by token"; here a FormatError that is also
    a KeyError, naming the file and the address."""
    path = tmp_path / "dead.h5"
    with h5py.File(path, "w") as f:
        f.attrs["r"] = f.create_dataset("gone", data=[1, 2, 3]).ref
        del f["gone"]
    with h5py.File(path, "r") as h:
        with pytest.raises(KeyError):
            h[h.attrs["r"]]
    with h5turbo.File(path) as f:
        with pytest.raises(KeyError, match="dead.h5: object reference to address"):
            f[f.attrs["r"]]
        with pytest.raises(h5turbo.FormatError):
            f[f.attrs["r"]]
