"""engine="h5turbo" as a climate user meets it: files written at test time by
netCDF4-python (netCDF-C) and by xarray's to_netcdf (both engines), opened with every
decoding option, by group, as a DataTree, lazily and with dask, compared with
engine="h5netcdf" and engine="netcdf4" (values, dtypes with their byte order, attributes
with their Python types, and the encoding dict). Where h5netcdf differs from netCDF-C
(the true reference), the test follows netCDF4 and says so."""

from __future__ import annotations

import glob
import warnings
from pathlib import Path

import numpy as np
import pytest

import h5netcdf
import h5py
import xarray as xr

from support.common import corpus_dir
from h5turbo.xarray_backend import H5TurboBackendEntrypoint

netCDF4 = pytest.importorskip("netCDF4")
ENGINE = H5TurboBackendEntrypoint
DECODINGS = [{}, {"decode_cf": False}, {"mask_and_scale": False}, {"decode_times": False},
             {"use_cftime": True}, {"decode_timedelta": True}, {"concat_characters": False}]


# ---------------------------------------------------------------------- comparing


def _open(path, engine, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # phony_dims and use_cftime notices
        return xr.open_dataset(path, engine=engine, **kwargs)


def _comparable(value):
    """An encoding value made comparable: dtypes by byte-order-exact str and their enum
    metadata (numpy's == ignores metadata), NaN equal to NaN, arrays as lists."""
    if isinstance(value, np.dtype):
        meta = {k: v for k, v in (value.metadata or {}).items() if k.startswith("enum")}
        return ("dtype", value.str, meta)
    if isinstance(value, (float, np.floating)) and np.isnan(value):
        return ("nan", np.asarray(value).dtype.str)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.tolist())
    return value


def _encoding(var, keys=None):
    keys = set(var.encoding) if keys is None else keys
    return {k: _comparable(var.encoding[k]) for k in keys if k != "source"}


def _assert_attrs_same(got: dict, ref: dict, where: str):
    assert list(got) == list(ref), where
    for name, want in ref.items():
        have = got[name]
        assert type(have) is type(want), f"{where} attribute {name}: {type(have)} vs {type(want)}"
        if isinstance(want, np.ndarray):
            assert have.dtype == want.dtype, f"{where} attribute {name}"


def _assert_same(path, ref_engine="h5netcdf", **kwargs) -> xr.Dataset:
    """Identical values, attributes (and their Python types), dtypes and encoding: every
    key h5netcdf gives; against netcdf4 the keys both give (netCDF4 adds complevel 0 to
    uncompressed variables, h5netcdf adds szip/bzip2/blosc/zstd flags)."""
    ref = _open(path, ref_engine, **kwargs).load()
    got = _open(path, ENGINE, **kwargs).load()
    xr.testing.assert_identical(got, ref)
    _assert_attrs_same(got.attrs, ref.attrs, "global")
    for name, want in ref.variables.items():
        have = got[name]
        assert have.dtype.str == want.dtype.str, name
        _assert_attrs_same(have.attrs, want.attrs, name)
        keys = set(want.encoding) if ref_engine == "h5netcdf" else set(want.encoding) & set(have.encoding)
        assert _encoding(have, keys) == _encoding(want, keys), name
        if ref_engine == "h5netcdf":
            assert set(have.encoding) == set(want.encoding), name
    assert got.encoding["unlimited_dims"] == ref.encoding["unlimited_dims"]
    return got


def _open_tree(path, engine, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_datatree(path, engine=engine, **kwargs)


def _assert_same_tree(path, ref_engine="h5netcdf", **kwargs):
    ref = _open_tree(path, ref_engine, **kwargs).load()
    got = _open_tree(path, ENGINE, **kwargs).load()
    xr.testing.assert_identical(got, ref)
    for group in ref.groups:
        for name, want in ref[group].variables.items():
            keys = set(want.encoding) & set(got[group][name].encoding)
            assert _encoding(got[group][name], keys) == _encoding(want, keys), (group, name)


# ---------------------------------------------------------------------- files


def _write_netcdf4_kitchen_sink(path: Path) -> Path:
    """Most of what netCDF-C writes: an unlimited dimension partly written, packed
    integers, _Unsigned, a big-endian variable, contiguous and chunked storage with
    zlib/shuffle/fletcher32, vlen and char strings, scalars and a `coordinates`
    attribute, noleap and 360_day times, a duration with NaN, an enum and a compound
    type, groups three deep using dimensions of their ancestors, a group named as a
    dimension of its parent, and attributes of the netCDF types."""
    d = netCDF4.Dataset(path, "w")
    d.createDimension("time", None)
    d.createDimension("x", 4)
    d.createDimension("strlen", 5)
    d.title = "kitchen sink"
    d.int_attr = np.int32(3)
    d.arr_attr = np.arange(3, dtype="f4")
    d.setncattr_string("strlist", ["ab", "cd"])
    d.setncattr_string("one_string", "x")
    d.empty_attr = ""
    d.u8attr = np.array([1, 2], "u8")
    t = d.createVariable("time", "f8", ("time",))
    t.units, t.calendar = "days since 2000-01-01", "noleap"
    t[:] = np.arange(6)
    d.createVariable("x", "i4", ("x",))[:] = np.arange(4)
    packed = d.createVariable("packed", "i2", ("time", "x"), zlib=True, complevel=4, shuffle=True,
                              fletcher32=True, chunksizes=(2, 2), fill_value=-999)
    packed.scale_factor, packed.add_offset = 0.01, 5.0
    packed.valid_range = np.array([-500, 500], "i2")
    packed.set_auto_maskandscale(False)
    packed[:] = np.arange(24, dtype="i2").reshape(6, 4) * 10 - 100
    packed[0, 0] = -999
    unsigned = d.createVariable("unsigned", "i1", ("x",))
    unsigned._Unsigned = "true"
    unsigned.set_auto_maskandscale(False)
    unsigned[:] = np.array([-1, -2, 3, 4], "i1")
    d.createVariable("bigend", ">f4", ("x",), endian="big")[:] = np.arange(4.0)
    d.createVariable("contig", "f8", ("x",), contiguous=True)[:] = 1.5
    d.createVariable("vlenstr", str, ("x",))[:] = np.array(["a", "bé", "", "dddd"], object)
    chars = d.createVariable("chars", "S1", ("x", "strlen"))
    chars._Encoding = "utf-8"
    chars[:] = netCDF4.stringtochar(np.array(["ab", "cde", "", "fghij"], "S5"))
    d.createVariable("chars_no_encoding", "S1", ("x", "strlen"))[:] = netCDF4.stringtochar(
        np.array(["ab", "cde", "", "fghij"], "S5"))
    scalar = d.createVariable("scalar", "f4")
    scalar[...], scalar.units = 2.5, "K"
    height = d.createVariable("height", "f8")
    height[...], height.units = 2.0, "m"
    data = d.createVariable("data", "f4", ("time", "x"))
    data.coordinates = "height"
    data[:3] = np.ones((3, 4))
    t360 = d.createVariable("t360", "i4", ("x",))
    t360.units, t360.calendar = "hours since 1999-02-30", "360_day"
    t360[:] = [0, 24, 48, 100]
    duration = d.createVariable("duration", "f8", ("x",))
    duration.units = "seconds"
    duration[:] = [1, 2, np.nan, 4]
    d.createVariable("short_unlimited", "i4", ("time",))[:2] = [1, 2]
    g1 = d.createGroup("g1")
    g1.createDimension("y", 3)
    g2 = g1.createGroup("g2")
    g2.createDimension("z", 2)
    g3 = g2.createGroup("g3")
    g3.note = "deep"
    g3.createVariable("w", "f8", ("time", "x", "y", "z"))[:] = np.random.default_rng(0).random((6, 4, 3, 2))
    g3.createVariable("w2", "i8", ("z",))[:] = [7, 8]
    g1.createGroup("x").createVariable("in_x", "f4", ("x",))[:] = [1, 2, 3, 4]
    g1.createVariable("vx", "f4", ("x", "y"))[:] = np.ones((4, 3))
    cloud_t = d.createEnumType("u1", "cloud_t", {"clear": 0, "cloudy": 1, "missing": 255})
    d.createVariable("cloud", cloud_t, ("x",), fill_value=255)[:] = np.array([0, 1, 255, 1], "u1")
    pair = np.dtype([("a", "f4"), ("b", "i4")])
    pairs = np.zeros(4, pair)
    pairs["a"], pairs["b"] = [1, 2, 3, 4], [5, 6, 7, 8]
    d.createVariable("pairs", d.createCompoundType(pair, "pair_t"), ("x",))[:] = pairs
    d.close()
    return path


@pytest.fixture(scope="module")
def kitchen_sink(tmp_path_factory) -> Path:
    return _write_netcdf4_kitchen_sink(tmp_path_factory.mktemp("hunt") / "sink.nc")


def _write_with_xarray(path: Path, engine: str) -> Path:
    """What xarray's to_netcdf writes: NaT in CF times, timedeltas, bools, object and
    fixed strings, packed floats, an unsigned integer with a fill value, a scalar
    coordinate, list and bytes attributes, a group three deep."""
    import pandas as pd

    times = pd.date_range("2000-01-01", periods=6, freq="D").values.copy()
    times[2] = np.datetime64("NaT")
    ds = xr.Dataset(
        {"temp": (("time", "lat"), np.random.default_rng(1).random((6, 3)).astype("f4"),
                  {"units": "K", "valid_range": [0.0, 1.0]}),
         "count": (("time",), np.arange(1, 7, dtype="i8")),
         "flag": (("lat",), np.array([True, False, True])),
         "label": (("lat",), np.array(["a", "bb", "ccc"], object)),
         "fixed": (("lat",), np.array([b"x", b"yy", b"zzz"], "S3")),
         "unicode": (("lat",), np.array(["é", "ü", "ß"], "U1")),
         "lag": (("time",), pd.to_timedelta(np.arange(6), "h").values),
         "packed": (("time", "lat"), np.linspace(0, 10, 18).reshape(6, 3)),
         "scalar": ((), 3.5)},
        coords={"time": times, "lat": [10.0, 20.0, 30.0], "height": 2.0},
        attrs={"title": "xr", "nums": [1, 2, 3], "strs": ["a", "b"], "raw": np.bytes_(b"raw"), "f": 1.5})
    compression = ({"zlib": True, "complevel": 3} if engine == "netcdf4"
                   else {"compression": "gzip", "compression_opts": 3})
    encoding = {"temp": {**compression, "shuffle": True, "chunksizes": (2, 3), "fletcher32": True},
                "packed": {"dtype": "i2", "scale_factor": 0.01, "add_offset": 5, "_FillValue": -32767},
                "count": {"dtype": "u2", "_FillValue": 999},
                "time": {"units": "hours since 1999-12-31", "calendar": "proleptic_gregorian", "dtype": "f8"},
                "fixed": {"dtype": "S1"}}
    ds.to_netcdf(path, engine=engine, encoding=encoding, unlimited_dims=["time"])
    xr.Dataset({"deep": (("lat", "z"), np.ones((3, 2)))}, attrs={"where": "a/b/c"}).to_netcdf(
        path, mode="a", group="a/b/c", engine=engine)
    return path


@pytest.fixture(scope="module", params=["h5netcdf", "netcdf4"])
def xarray_written(request, tmp_path_factory) -> Path:
    return _write_with_xarray(tmp_path_factory.mktemp("hunt") / f"xr_{request.param}.nc", request.param)


# ---------------------------------------------------------------------- netCDF-C files


@pytest.mark.parametrize("decode", DECODINGS, ids=lambda d: ",".join(d) or "default")
@pytest.mark.parametrize("ref_engine", ["h5netcdf", "netcdf4"])
def test_netcdf_c_file_with_every_decoding(kitchen_sink, ref_engine, decode):
    _assert_same(kitchen_sink, ref_engine, **decode)


@pytest.mark.parametrize("group", ["g1", "/g1/g2", "g1/g2/g3", "g1/x"])
@pytest.mark.parametrize("ref_engine", ["h5netcdf", "netcdf4"])
def test_netcdf_c_groups_inherit_dimensions(kitchen_sink, ref_engine, group):
    got = _assert_same(kitchen_sink, ref_engine, group=group)
    if group == "g1/g2/g3":
        assert got["w"].dims == ("time", "x", "y", "z")  # from three groups above


def test_netcdf_c_classic_model(tmp_path):
    """NETCDF4_CLASSIC: netCDF-3 types and rules in an HDF5 file (_nc3_strict)."""
    path = tmp_path / "classic.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF4_CLASSIC") as d:
        d.createDimension("t", None)
        d.createDimension("n", 3)
        d.history = "classic"
        v = d.createVariable("v", "i2", ("t", "n"), zlib=True, fill_value=-1)
        v.scale_factor = 0.5
        v[:4] = np.arange(12).reshape(4, 3)
        d.createVariable("c", "S1", ("n",))[:] = np.array([b"a", b"b", b"c"])
        d.createVariable("short", "f8", ("t",))[:2] = [1.0, 2.0]
    for ref_engine in ("h5netcdf", "netcdf4"):
        for decode in ({}, {"decode_cf": False}):
            got = _assert_same(path, ref_engine, **decode)
    with h5py.File(path) as f:
        assert "_nc3_strict" in f.attrs  # netCDF's bookkeeping: in the file, not the Dataset
    assert "_nc3_strict" not in got.attrs


def test_enum_encoding_names_its_type(kitchen_sink, tmp_path):
    """An enum variable's encoding dtype carries the committed type's name
    ("enum_name"), as engines h5netcdf and netcdf4 give it: to_netcdf writes the type
    back under that name (without it xarray names the type after the variable)."""
    for ref_engine in ("h5netcdf", "netcdf4"):
        want = _open(kitchen_sink, ref_engine)["cloud"].encoding["dtype"].metadata
        got = _open(kitchen_sink, ENGINE)["cloud"].encoding["dtype"].metadata
        assert got["enum_name"] == want["enum_name"] == "cloud_t"
        assert got["enum"] == want["enum"]
    copy = tmp_path / "copy.nc"
    subset = _open(kitchen_sink, ENGINE)[["cloud"]]
    subset.encoding = {}  # (no unlimited dimension left to declare)
    subset.to_netcdf(copy, engine="netcdf4")
    with netCDF4.Dataset(copy) as d:
        assert list(d.enumtypes) == ["cloud_t"]
        assert d["cloud"].datatype.enum_dict == {"clear": 0, "cloudy": 1, "missing": 255}


def test_enum_type_found_in_an_ancestor_group(tmp_path):
    """netCDF lets a variable use an enum type of a group above; the nearest group's
    type of a name shadows one above (h5netcdf's lookup, netCDF's scoping)."""
    path = tmp_path / "enums.nc"
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("n", 2)
        top = d.createEnumType("i2", "level_t", {"low": 0, "high": 1})
        other = d.createEnumType("i2", "other_t", {"no": 0, "yes": 1})
        inner = d.createGroup("inner")
        inner.createVariable("level", top, ("n",))[:] = np.array([0, 1], "i2")
        inner.createVariable("other", other, ("n",))[:] = np.array([1, 1], "i2")
        deeper = inner.createGroup("deeper")
        shadow = deeper.createEnumType("i2", "level_t", {"low": 0, "high": 1})
        deeper.createVariable("level", shadow, ("n",))[:] = np.array([1, 0], "i2")
    for group in ("inner", "inner/deeper"):
        for ref_engine in ("h5netcdf", "netcdf4"):
            _assert_same(path, ref_engine, group=group)
    assert _open(path, ENGINE, group="inner")["other"].encoding["dtype"].metadata["enum_name"] == "other_t"


def test_unlimited_dimension_sized_over_every_group(tmp_path):
    """netCDF-C sizes an unlimited dimension by the longest variable using it in any
    group: a subgroup's variable written further makes the root's dimension (and
    every root variable, padded) longer. h5netcdf agrees (REFERENCE_LIST)."""
    path = tmp_path / "unlimited.nc"
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("time", None)
        d.createVariable("time", "i4", ("time",))[:3] = [0, 1, 2]
        d.createVariable("r", "f4", ("time",))[:2] = [1, 2]
        d.createGroup("g").createGroup("h").createVariable("v", "f8", ("time",))[:7] = np.arange(7.0)
    with netCDF4.Dataset(path) as d:
        assert len(d.dimensions["time"]) == 7
    for ref_engine in ("h5netcdf", "netcdf4"):
        for group in (None, "g", "g/h"):
            for chunks in (None, {}):
                _assert_same(path, ref_engine, group=group, chunks=chunks)
        assert _open(path, ENGINE).sizes["time"] == 7
        _assert_same_tree(path, ref_engine)


def test_short_variables_of_every_type_read_as_netcdf_c(tmp_path):
    """Variables written shorter than their unlimited dimension read, past their end,
    what netCDF-C reads: "" for strings, the type's fill for chars, enums, compounds.
    (h5netcdf fails on the vlen string variable: it pads numbers only.)"""
    path = tmp_path / "short.nc"
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("t", None)
        d.createDimension("n", 3)
        d.createVariable("full", "f8", ("t",))[:5] = np.arange(5.0)
        strings = d.createVariable("strings", str, ("t",))
        strings[0], strings[1] = "a", "bb"
        d.createVariable("chars", "S1", ("t", "n"))[:2] = netCDF4.stringtochar(np.array([b"ab", b"cde"], "S3"))
        enum_t = d.createEnumType("i1", "e_t", {"a": 1, "b": 2})
        d.createVariable("enum", enum_t, ("t",))[:2] = np.array([1, 2], "i1")
        pair = d.createCompoundType(np.dtype([("a", "f4"), ("b", "i4")]), "pair_t")
        pairs = np.zeros(2, pair.dtype)
        pairs["a"] = [1, 2]
        d.createVariable("pairs", pair, ("t",))[:2] = pairs
        d.createVariable("unsigned", "u2", ("t",))[:2] = [1, 2]
        d.createVariable("nan_filled", "f8", ("t",), fill_value=np.nan)[:1] = [3.0]
    for decode in ({}, {"mask_and_scale": False}, {"decode_cf": False}):
        _assert_same(path, "netcdf4", **decode)
    with pytest.raises(ValueError):  # the reference engine h5netcdf cannot
        _open(path, "h5netcdf").load()


@pytest.mark.parametrize("ref_engine", ["h5netcdf", "netcdf4"])
def test_lazy_selections_of_padded_variables(kitchen_sink, ref_engine):
    """Outer, negative, reversed, boolean and vectorized selections of variables shorter
    than their unlimited dimension, read lazily, equal the reference's."""
    ref = _open(kitchen_sink, ref_engine, decode_times=False)
    got = _open(kitchen_sink, ENGINE, decode_times=False)
    n = ref.sizes["time"]
    for sel in (slice(1, 5, 2), [n - 1, 0, n - 1], -1, 0, slice(None, None, -1), slice(-3, None),
                slice(-5, -1), np.arange(n) % 2 == 0, slice(n - 2, n)):
        xr.testing.assert_identical(got.isel(time=sel).load(), ref.isel(time=sel).load())
    points = {"time": xr.DataArray([0, n - 1, 2], dims="pts"), "x": xr.DataArray([1, 0, 3], dims="pts")}
    for name in ("data", "packed", "short_unlimited"):
        want = ref[name].isel({k: v for k, v in points.items() if k in ref[name].dims})
        have = got[name].isel({k: v for k, v in points.items() if k in got[name].dims})
        xr.testing.assert_identical(have.load(), want.load())
    dask_backed = _open(kitchen_sink, ENGINE, decode_times=False, chunks={})
    xr.testing.assert_identical(dask_backed.isel(time=slice(1, None, 2)).compute(),
                                ref.isel(time=slice(1, None, 2)).load())


@pytest.fixture(scope="module")
def short_3d(tmp_path_factory) -> Path:
    """A 3-D variable written for 3 of the 10 records of its unlimited dimension."""
    path = tmp_path_factory.mktemp("hunt") / "short3d.nc"
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("t", None)
        d.createDimension("y", 4)
        d.createDimension("x", 5)
        d.createVariable("full", "i4", ("t",))[:10] = np.arange(10)
        d.createVariable("v", "f4", ("t", "y", "x"), chunksizes=(2, 2, 5))[:3] = np.arange(
            60, dtype="f4").reshape(3, 4, 5)
        strings = d.createVariable("s", str, ("t",))
        strings[0], strings[1] = "a", "b"
    return path


def _random_axis_key(rng, n):
    kind = rng.integers(0, 5)
    if kind == 0:
        return int(rng.integers(-n, n))
    if kind == 1:
        start, stop = sorted(rng.integers(-n, n + 1, 2))
        return slice(int(start), int(stop), int(rng.choice([1, 2, 3, -1, -2])))
    if kind == 2:
        return [int(i) for i in rng.integers(0, n, rng.integers(1, 5))]
    if kind == 3:
        return slice(None)
    return rng.random(n) < 0.5


def test_random_selections_across_the_end_of_a_short_variable(short_3d):
    """Random outer selections (ints, negative and strided slices, index lists,
    booleans) that reach past a short variable's end read what netCDF-C reads."""
    ref = _open(short_3d, "netcdf4")
    got = _open(short_3d, ENGINE)
    rng = np.random.default_rng(7)
    compared = 0
    for _ in range(200):
        sel = {"t": _random_axis_key(rng, 10), "y": _random_axis_key(rng, 4), "x": _random_axis_key(rng, 5)}
        try:
            want = ref["v"].isel(sel).values
        except IndexError:  # xarray's own slice decomposition fails on some empty slices
            continue
        np.testing.assert_array_equal(got["v"].isel(sel).values, want, err_msg=str(sel))
        assert got["v"].isel(sel).shape == want.shape
        np.testing.assert_array_equal(got["s"].isel(t=sel["t"]).values, ref["s"].isel(t=sel["t"]).values)
        compared += 1
    assert compared > 100


def test_integer_and_list_around_a_slice_keep_the_axis_order(short_3d):
    """isel(t=1, x=[0, 2]) of a short variable: numpy moves the axes of an index mixing
    an integer and a list apart from a slice to the front; the padded read must not
    (it returned the (y, x) block transposed)."""
    want = _open(short_3d, "netcdf4")["v"].isel(t=1, x=[0, 2, 4])
    got = _open(short_3d, ENGINE)["v"].isel(t=1, x=[0, 2, 4])
    xr.testing.assert_identical(got.load(), want.load())


def test_a_step_of_a_short_variable_reads_only_that_step(short_3d, monkeypatch):
    """Selecting one record of a variable shorter than its unlimited dimension reads
    that record from the file, not the whole variable (h5netcdf reads it all)."""
    from h5turbo.objects.dataset import Dataset

    read_sizes = []
    original = Dataset.__getitem__

    def recording(self, key):
        out = original(self, key)
        read_sizes.append(np.asarray(out).size)
        return out

    monkeypatch.setattr(Dataset, "__getitem__", recording)
    got = _open(short_3d, ENGINE, cache=False)
    read_sizes.clear()  # (xarray decodes string variables on opening, for every engine)
    np.testing.assert_array_equal(got["v"].isel(t=1, y=2).values, np.arange(30, 35, dtype="f4"))
    assert read_sizes == [5]  # one row of one record
    read_sizes.clear()
    np.testing.assert_array_equal(got["v"].isel(t=slice(0, 7, 2)).values,
                                  _open(short_3d, "netcdf4")["v"].isel(t=slice(0, 7, 2)).values)
    assert read_sizes == [2 * 20]  # records 0 and 2 (of 0, 2, 4, 6), not record 1
    read_sizes.clear()
    past_the_end = got["v"].isel(t=8).values  # netCDF's default fill: nothing to read
    assert read_sizes == []
    np.testing.assert_array_equal(past_the_end, _open(short_3d, "netcdf4")["v"].isel(t=8).values)


def test_dimension_shadowed_in_a_subgroup(tmp_path):
    """A subgroup redefines a dimension of its parent with another length and holds a
    two-dimensional coordinate named as its own dimension (_Netcdf4Coordinates)."""
    path = tmp_path / "shadow.nc"
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("x", 4)
        d.createDimension("t", None)
        d.createVariable("x", "i4", ("x",))[:] = np.arange(4)
        d.createVariable("t", "i4", ("t",))[:] = np.arange(2)
        g = d.createGroup("g")
        g.createDimension("x", 2)
        g.createDimension("y", 3)
        g.createVariable("x", "i4", ("x",))[:] = [10, 20]
        g.createVariable("v", "f4", ("x", "y"))[:] = np.ones((2, 3))
        g.createVariable("w", "f4", ("t", "y"))[:] = np.ones((2, 3))
        h = g.createGroup("h")
        h.createDimension("z", 5)
        h.createVariable("z", "f8", ("z", "x"))[:] = np.arange(10.0).reshape(5, 2)
        h.createVariable("q", "f8", ("t", "z"))[:] = np.ones((4, 5))
    for group in (None, "g", "g/h"):
        for ref_engine in ("h5netcdf", "netcdf4"):
            _assert_same(path, ref_engine, group=group)
    assert _open(path, ENGINE, group="g").sizes["x"] == 2
    assert _open(path, ENGINE, group="g/h").sizes["t"] == 4  # q made the root's t longer


# ---------------------------------------------------------------------- xarray files


@pytest.mark.parametrize("decode", DECODINGS, ids=lambda d: ",".join(d) or "default")
def test_xarray_written_file_with_every_decoding(xarray_written, decode):
    for ref_engine in ("h5netcdf", "netcdf4"):
        _assert_same(xarray_written, ref_engine, **decode)


def test_xarray_written_groups_tree_and_selections(xarray_written):
    for group in ("a", "a/b", "/a/b/c"):
        for ref_engine in ("h5netcdf", "netcdf4"):
            _assert_same(xarray_written, ref_engine, group=group)
    for ref_engine in ("h5netcdf", "netcdf4"):
        _assert_same_tree(xarray_written, ref_engine)
    _assert_same(xarray_written, drop_variables=["temp", "time"])
    ref, got = _open(xarray_written, "h5netcdf"), _open(xarray_written, ENGINE)
    for sel in ({"time": slice(1, 5, 2)}, {"time": [4, 0, 4]}, {"time": -1}, {"lat": slice(None, None, -1)}):
        xr.testing.assert_identical(got.isel(sel).load(), ref.isel(sel).load())
    xr.testing.assert_identical(got.sel(lat=20.0).load(), ref.sel(lat=20.0).load())
    dask_ref = _open(xarray_written, "h5netcdf", chunks={})
    dask_got = _open(xarray_written, ENGINE, chunks={})
    assert {n: v.chunks for n, v in dask_got.variables.items()} == {
        n: v.chunks for n, v in dask_ref.variables.items()}
    xr.testing.assert_identical(dask_got.compute(), dask_ref.compute())


def test_open_mfdataset(tmp_path):
    import pandas as pd

    paths = []
    for i in range(3):
        ds = xr.Dataset({"v": (("time", "x"), np.full((2, 4), i, "f4"))},
                        coords={"time": pd.date_range(f"200{i}-01-01", periods=2), "x": np.arange(4)})
        paths.append(tmp_path / f"part{i}.nc")
        ds.to_netcdf(paths[-1], engine="netcdf4", unlimited_dims=["time"],
                     encoding={"v": {"chunksizes": (1, 2), "zlib": True}})
    for kwargs in ({"combine": "by_coords"}, {"combine": "nested", "concat_dim": "time", "parallel": True}):
        ref = xr.open_mfdataset(paths, engine="h5netcdf", **kwargs)
        got = xr.open_mfdataset(paths, engine=ENGINE, **kwargs)
        assert got["v"].chunks == ref["v"].chunks
        xr.testing.assert_identical(got.load(), ref.load())


# ---------------------------------------------------------------------- attributes, HDF5


def test_attributes_of_every_type(tmp_path):
    """Every attribute kind h5py writes, on a variable and the root, reaches the
    Dataset with the value and the Python type h5netcdf's reader gives."""
    path = tmp_path / "attrs.nc"
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"x": 3}
        f.create_variable("v", ("x",), "f4", data=np.arange(3, dtype="f4"))
    with h5py.File(path, "a") as f:
        for attrs in (f["v"].attrs, f.attrs):
            attrs["vlen"] = "hello"
            attrs["fixed"] = np.bytes_(b"fixed")
            attrs["fixed1"] = np.bytes_(b"f")
            attrs.create("utf8_fixed", data=np.array("héllo".encode(), dtype=h5py.string_dtype("utf-8", 6)))
            attrs["vlen_list"] = np.array(["a", "bc"], dtype=h5py.string_dtype())
            attrs["vlen_list1"] = np.array(["only"], dtype=h5py.string_dtype())
            attrs["fixed_list"] = np.array([b"ab", b"cd"], "S2")
            attrs["s1_list"] = np.array([b"a", b"b"], "S1")
            attrs["ints"] = np.arange(4, dtype="i2")
            attrs["one_int"] = np.array([7], "i8")
            attrs["f4"] = np.float32(1.5)
            attrs["u8"] = np.uint64(2**63 + 1)
            attrs["bool"] = np.bool_(True)
            attrs["empty_f4"] = h5py.Empty("f4")
            attrs["empty_s1"] = h5py.Empty("S1")
            attrs["empty_array"] = np.array([], "i4")
            attrs["latin1"] = np.bytes_("caf\xe9".encode("latin-1"))
            attrs["vlen_ascii"] = np.array(b"rawbytes", dtype=h5py.string_dtype("ascii"))
            attrs["complex"] = np.complex64(1 + 2j)
            attrs["enum"] = np.array(1, dtype=h5py.enum_dtype({"a": 0, "b": 1}, "u1"))
            attrs["two_d"] = np.arange(6).reshape(2, 3)
            attrs["missing_value"] = np.array([b"x"], "S1")
    for decode in ({}, {"decode_cf": False}):
        _assert_same(path, **decode)


def test_netcdf_scale_beside_plain_datasets(tmp_path):
    """A netCDF file to which plain HDF5 datasets were added: they get phony dimensions,
    the netCDF coordinate keeps its own. (h5netcdf gives the coordinate `x` a phony
    dimension whose id collides with x's _Netcdf4Dimid, and reads it truncated to 3 of
    its 4 values; netCDF-C reads x on dimension x: the test follows netCDF-C.)"""
    path = tmp_path / "mixed.nc"
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("x", 4)
        d.createVariable("x", "i4", ("x",))[:] = np.arange(4)
        d.createVariable("v", "f4", ("x",))[:] = np.ones(4)
    with h5py.File(path, "a") as f:
        f["plain"] = np.zeros((4, 3))
        f["plain2"] = np.zeros((3, 3))
        f.create_group("sub")["p"] = np.zeros((4, 4))
    ref = _open(path, "netcdf4").load()
    got = _open(path, ENGINE).load()
    xr.testing.assert_identical(got["x"], ref["x"])
    xr.testing.assert_identical(got["v"], ref["v"])
    assert got["plain"].dims[0] == "x"
    for name in ("plain", "plain2"):  # phony names: h5netcdf's numbering, netCDF-C's shapes
        np.testing.assert_array_equal(got[name].values, ref[name].values)
    _assert_same(path, phony_dims="sort", group="sub")


def test_plain_hdf5_phony_dimensions_in_groups(tmp_path):
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f["square"] = np.zeros((4, 4))
        f["cube"] = np.zeros((4, 4, 4), "i2")
        f["r"] = np.arange(5)
        f["scalar"] = 3.0
        f["strings"] = np.array(["a", "b", "c", "d", "e"], dtype=h5py.string_dtype())
        f["fixed"] = np.array([b"ab", b"cd"], "S2")
        f.create_dataset("chunked", data=np.arange(40.0).reshape(5, 8), chunks=(2, 4),
                         compression="gzip", shuffle=True)
        f.create_dataset("resizable", data=np.arange(3), maxshape=(None,))
        f.create_dataset("big_endian", data=np.arange(3, dtype=">i4"))
        g = f.create_group("g")
        g["a"], g["b"] = np.ones((5, 7)), np.ones((7, 5))
        h = g.create_group("h")
        h["c"], h["d"] = np.ones((4,)), np.ones((6, 6, 6))
        f.attrs["note"] = "plain"
    for mode in ("access", "sort"):
        for group in (None, "g", "g/h"):
            _assert_same(path, phony_dims=mode, group=group)
        _assert_same_tree(path, phony_dims=mode)
    assert _open(path, ENGINE, phony_dims="sort")["big_endian"].encoding["dtype"].str == ">i4"


CORPUS_NC = sorted(glob.glob(str(corpus_dir() / "netcdf4" / "*.nc"))
                   + glob.glob(str(corpus_dir() / "pyfive" / "*.nc")))


@pytest.mark.parametrize("path", CORPUS_NC, ids=lambda p: Path(p).name)
def test_corpus_with_decodings_and_netcdf_c(path):
    for decode in ({"decode_cf": False}, {"mask_and_scale": False},
                   {"use_cftime": True, "decode_timedelta": True}, {"chunks": {}}):
        _assert_same(path, **decode)
    _assert_same(path, "netcdf4")


STRING_FILES = ["test_string_datasets_earliest.hdf5", "test_string_datasets_latest.hdf5",
                "test_compact_datasets_latest.hdf5", "chunked_v4_datasets.hdf5"]


@pytest.mark.parametrize("name", STRING_FILES)
def test_ascii_vlen_strings_read_as_str(name):
    """Variable-length strings labelled ASCII read as str, as h5netcdf (which decodes
    every vlen string) and netCDF-C (NC_STRING) give them; they came back as bytes."""
    path = corpus_dir() / "jhdf" / name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        groups = list(xr.open_groups(path, engine="h5netcdf", phony_dims="sort"))
    for group in groups:
        _assert_same(path, phony_dims="sort", group=group)


def test_ascii_labelled_vlen_strings_decode_as_utf8_as_netcdf_c(tmp_path):
    """An ASCII-labelled vlen string holding UTF-8 bytes: netCDF-C (engine netcdf4)
    reads "café"; h5netcdf fails decoding it as ASCII. The test follows netCDF-C."""
    path = tmp_path / "ascii_vlen.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("names", data=np.array([b"plain", b"caf\xc3\xa9", b""], dtype=object),
                         dtype=h5py.string_dtype("ascii"))
    want = _open(path, "netcdf4")["names"].values
    got = _open(path, ENGINE)["names"].values
    assert got.tolist() == want.tolist() == ["plain", "café", ""]
    with pytest.raises(UnicodeDecodeError):
        _open(path, "h5netcdf").load()


def test_null_dataspace_variable_fails_clearly_and_can_be_dropped():
    """HDF5 "empty" datasets (null dataspace) have no netCDF counterpart: h5netcdf fails
    on them and netCDF-C refuses the file. Reading one raises a typed error naming the
    file and the variable; drop_variables leaves them out, as with h5netcdf."""
    import h5turbo

    path = corpus_dir() / "jhdf" / "test_scalar_empty_datasets_latest.hdf5"
    with h5py.File(path) as f:
        empties = [name for name in f if f[name].shape is None]
    assert "empty_string" in empties and "empty_float_64" in empties
    with pytest.raises(h5turbo.UnsupportedError, match=r"scalar_empty.*'/empty_string'.*null dataspace"):
        _open(path, ENGINE)
    got = _open(path, ENGINE, drop_variables=["empty_string"])
    with pytest.raises(h5turbo.UnsupportedError, match="'/empty_float_64'.*drop_variables"):
        got["empty_float_64"].load()
    _assert_same(path, drop_variables=empties)


@pytest.mark.parametrize("writer", ["h5netcdf", "netcdf4"])
def test_enum_written_by_xarray(tmp_path, writer):
    """xarray writes an enum from its encoding (enum_name) in the root and a group; it
    reads back with the same name and members."""
    enum = np.dtype("u1", metadata={"enum": {"a": 0, "b": 1, "c": 2}, "enum_name": "abc_t"})
    ds = xr.Dataset({"e": ("x", np.array([0, 1, 2, 1], enum)), "f": ("x", np.array([2, 2, 0, 1], enum))})
    for name in ds:
        ds[name].encoding["dtype"] = enum
    path = tmp_path / "enum.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # h5netcdf: "default fill_value 0 ... IS defined in enum"
        ds.to_netcdf(path, engine=writer)
        ds.to_netcdf(path, engine=writer, group="sub", mode="a")
    for group in (None, "sub"):
        for ref_engine in ("h5netcdf", "netcdf4"):
            _assert_same(path, ref_engine, group=group)
        assert _open(path, ENGINE, group=group)["f"].encoding["dtype"].metadata == enum.metadata


def test_sorted_phony_dimensions_of_a_later_group(tmp_path):
    """phony_dims="sort" names phony dimensions across the whole file (h5netcdf visits
    every group on opening, as netCDF-C does): opening group "b" directly names its
    dimensions after those of "a" (they were numbered from 0 as if b came first)."""
    path = tmp_path / "siblings.h5"
    with h5py.File(path, "w") as f:
        f["top"] = np.zeros(2)
        f.create_group("a")["x"] = np.zeros((3, 4))
        f["a"].create_group("deep")["y"] = np.zeros(5)
        f.create_group("b")["z"] = np.zeros((6, 7))
        f["b_link"] = h5py.SoftLink("/b")  # walked as a group of its own, as h5netcdf does
    for mode in ("sort", "access"):
        for group in ("b", "a/deep", "b_link", None):
            _assert_same(path, phony_dims=mode, group=group)
        _assert_same_tree(path, phony_dims=mode)
        _assert_same_tree(path, phony_dims=mode, group="b")
    assert _open(path, ENGINE, phony_dims="sort", group="b")["z"].dims == ("phony_dim_4", "phony_dim_5")


@pytest.mark.parametrize("writer", ["netcdf4", "h5netcdf"])
def test_open_then_save_as_h5netcdf_opened_saves(kitchen_sink, writer, tmp_path):
    """Open, save with to_netcdf: the file written from engine="h5turbo" reads back
    (through netCDF-C) identical, encoding too, to the one written from h5netcdf's."""
    written = {}
    for reader in ("h5netcdf", ENGINE):
        ds = _open(kitchen_sink, reader, drop_variables=["pairs"])  # (xarray writes no compounds)
        written[reader] = tmp_path / f"from_{'ref' if reader == 'h5netcdf' else 'got'}.nc"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_netcdf(written[reader], engine=writer)
    ref = _open(written["h5netcdf"], "netcdf4").load()
    got = _open(written[ENGINE], "netcdf4").load()
    xr.testing.assert_identical(got, ref)
    for name, want in ref.variables.items():
        assert _encoding(got[name]) == _encoding(want), name


@pytest.mark.parametrize("scales", [1, 2])
def test_phony_dims_sort_counts_scales_made_by_h5py(tmp_path, scales):
    """Scales without _Netcdf4Dimid (h5py's make_scale) counted as id -1: phony
    dimensions were numbered from 0 where h5netcdf and netCDF-C start past the scales."""
    path = tmp_path / "scales.h5"
    with h5py.File(path, "w") as f:
        for k in range(scales):
            f[f"x{k}"] = np.arange(3 + k)
            f[f"x{k}"].make_scale(f"x{k}")
            f[f"a{k}"] = np.zeros(3 + k)
            f[f"a{k}"].dims[0].attach_scale(f[f"x{k}"])
        f["b"] = np.zeros((5, 2))
    got = _assert_same(path, phony_dims="sort")
    assert got["b"].dims == (f"phony_dim_{scales}", f"phony_dim_{scales + 1}")
    with netCDF4.Dataset(path) as d:
        assert d["b"].dimensions == got["b"].dims


def test_a_file_rewritten_after_it_was_opened_is_an_error_not_padding(tmp_path):
    """A variable read lazily (on a dask worker: the dataset pickled) after its file was
    rewritten with fewer steps came back at its old length, the new values followed by
    fill values (NaN once decoded), as though it were shorter than its unlimited
    dimension; to_dask says the file changed, and now so does the engine."""
    import pickle
    import h5turbo

    def write(path, steps, value, dtype="f4"):
        xr.Dataset({"v": (("t",), np.full(steps, value, dtype))}, coords={"t": np.arange(steps)}).to_netcdf(
            str(path) + ".tmp", engine="h5netcdf", encoding={"v": {"chunksizes": (10,)}}, unlimited_dims=["t"])
        Path(str(path) + ".tmp").replace(path)

    path = tmp_path / "r.nc"
    for steps, value, dtype in [(50, 2.0, "f4"), (100, 7, "i8")]:
        write(path, 100, 1.0)
        with _open(path, ENGINE, chunks={}) as ds:
            write(path, steps, value, dtype)
            on_a_worker = pickle.loads(pickle.dumps(ds))
            with pytest.raises(h5turbo.Error, match="changed after it was opened"):
                on_a_worker.v.values


@pytest.mark.parametrize("how", ["in_place", "replaced"])
def test_a_file_rewritten_after_it_was_opened_reads_as_it_is_now_in_the_opening_process(tmp_path, how):
    """The opening process read through the File opened first, whose metadata described
    the file before it was rewritten: a variable moved by the rewrite came back as zeros
    at its old shape (rewritten in place), or as the old values (replaced), with no
    error. Now a changed shape is the documented error there too, and a variable of the
    same shape and dtype reads the new values, as on a worker."""
    import h5turbo
    path = tmp_path / "rw.nc"

    def write(steps, value, big):
        ds = xr.Dataset({"t": (("time", "lat"), np.full((steps, 5), value, dtype="f4"))})
        if big:  # a variable written first moves t's bytes
            ds["big"] = (("x",), np.arange(100_000, dtype="f8"))
            ds = ds[["big", "t"]]
        target = path if how == "in_place" else Path(str(path) + ".tmp")
        ds.to_netcdf(target, engine="h5netcdf", mode="w")
        if how == "replaced":
            target.replace(path)

    write(10, 1.0, big=False)
    with _open(path, ENGINE) as ds:
        write(12, 2.0, big=True)
        with pytest.raises(h5turbo.Error, match="changed after it was opened"):
            ds.t.values
    with _open(path, ENGINE) as ds:
        write(12, 3.0, big=False)
        np.testing.assert_array_equal(ds.t.values, np.full((12, 5), 3.0, dtype="f4"))
