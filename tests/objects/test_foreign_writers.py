"""Files written by programs other than plain h5py, read through h5turbo and compared
with h5py (+ hdf5plugin) as the reference reader.

Writers: netCDF4-python (groups, unlimited dimensions grown in several appends, vlen
strings and sequences, compound, nested compound and enum types, every compression its
netCDF build has, shuffle, fletcher32, big-endian, fill values default / explicit /
off, packed variables, NC_STRING attributes, dimension scales, classic model, dense
attributes and links with creation order, files reopened and grown), xarray's
to_netcdf with engines netcdf4 and h5netcdf, h5netcdf itself (both APIs), h5py with
unusual creation settings (every libver, track_order, external raw storage, compact
and contiguous layouts, userblocks, file-space strategies, the core driver, SWMR
appends, attribute creation order, dense attributes and links, fill times), and
PyTables / pandas.HDFStore when `tables` is importable (the CI venv has none: those
tests skip; they write in a child process so two libhdf5 builds never share one).

Every file is walked (visititems) with both readers: group keys and order, every
attribute (names, order, values, dtypes), every dataset's dtype, shape, maxshape,
chunks, filters, fill value and values (whole and on selections), and dimension scales.
NetCDF files also open with xarray's engine="h5turbo" as with engine="h5netcdf".
`h5turbo ls` (text and --json) and `h5turbo info` of every dataset must not fail."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest

from support import h5compare as hc
from support.common import import_h5turbo

h5turbo = import_h5turbo()
from h5turbo import cli  # noqa: E402

HAVE_NETCDF4 = importlib.util.find_spec("netCDF4") is not None
HAVE_H5NETCDF = importlib.util.find_spec("h5netcdf") is not None
HAVE_XARRAY = importlib.util.find_spec("xarray") is not None
HAVE_TABLES = importlib.util.find_spec("tables") is not None

needs_netcdf4 = pytest.mark.skipif(not HAVE_NETCDF4, reason="netCDF4 is not installed")
needs_h5netcdf = pytest.mark.skipif(not (HAVE_H5NETCDF and HAVE_XARRAY), reason="h5netcdf/xarray not installed")
pytestmark = pytest.mark.filterwarnings("ignore:endian-ness of dtype:UserWarning")

needs_tables = pytest.mark.skipif(not HAVE_TABLES, reason="PyTables (tables) is not installed")

DATASET_PROPERTIES = ("shape", "maxshape", "chunks", "compression", "compression_opts", "shuffle",
                      "fletcher32", "scaleoffset", "is_scale", "ndim", "size", "nbytes")


# --------------------------------------------------------------------------- comparison

def _has_vlen(dt: np.dtype) -> bool:
    return dt.hasobject


def _compare_attrs(ref, turbo, where: str, out: list) -> None:
    names, exc = hc.call(lambda: list(turbo.attrs.keys()))
    if exc is not None:
        out.append(f"{where}: attrs.keys() raised {exc!r}")
        return
    if names != list(ref.attrs.keys()):
        out.append(f"{where}: attribute names {names} != h5py {list(ref.attrs.keys())}")
    for name in ref.attrs.keys():
        try:
            exp = ref.attrs[name]
        except Exception as h5py_exc:  # h5py cannot read it: h5turbo must say so, typed
            _, exc = hc.call(lambda: turbo.attrs[name])
            if not isinstance(exc, h5turbo.Error):
                out.append(f"{where} @{name}: h5py refuses ({h5py_exc}); h5turbo gave {exc!r}")
            continue
        files = (ref.file, turbo.file) if hc.has_reference(ref.attrs.get_id(name).dtype) else None
        problem = hc.expect_same(exp, lambda: turbo.attrs[name], files)
        if problem:
            out.append(f"{where} @{name}: {problem}")


def _compare_properties(ref, turbo, where: str, out: list) -> None:
    for prop in DATASET_PROPERTIES:
        expected, h5py_exc = hc.call(lambda: getattr(ref, prop))
        if h5py_exc is not None:
            continue
        got, exc = hc.call(lambda: getattr(turbo, prop))
        if exc is not None or got != expected:
            out.append(f"{where}.{prop}: {got!r} {exc or ''} != h5py {expected!r}")
    external, _ = hc.call(lambda: ref.external)
    if external is not None:
        got = [(os.fsdecode(n), o, s) for n, o, s in (turbo.external or [])]
        if got != [(os.fsdecode(n), o, s) for n, o, s in external]:
            out.append(f"{where}.external: {turbo.external!r} != h5py {external!r}")
    # vlen fill values are known to differ (test_vlen_fill_value_known_bug)
    if not _has_vlen(ref.dtype):
        problem = hc.expect_same(ref.fillvalue, lambda: turbo.fillvalue)
        if problem:
            out.append(f"{where}.fillvalue: {problem}")


def _compare_values(ref, turbo, where: str, out: list, rng) -> None:
    files = (ref.file, turbo.file) if hc.has_reference(ref.dtype) else None
    selections = [()]
    # PyTables' blosc2 chunks can hold millions of rows (300 MB): each selection decodes one
    chunk_bytes = int(np.prod(ref.chunks, dtype=np.int64)) * ref.dtype.itemsize if ref.chunks else 0
    if ref.shape and ref.size and ref.size < 1 << 20 and chunk_bytes < 16 << 20:
        selections += [s for s in hc.selections(ref.shape, rng, 4) if hc.h5py_reads_directly(s)]
    for sel in selections:
        try:
            exp = ref[sel]
        except Exception as h5py_exc:
            _, exc = hc.call(lambda: turbo[sel])
            if sel == () and not isinstance(exc, h5turbo.Error):
                out.append(f"{where}: h5py refuses ({h5py_exc}); h5turbo gave {exc!r}")
            continue
        problem = hc.expect_same(exp, lambda: turbo[sel], files)
        if problem:
            out.append(f"{where}{hc.describe(sel)}: {problem}")


def _compare_dims(ref, turbo, where: str, out: list) -> None:
    if ref.shape is None or ref.is_scale:
        return
    for axis in range(len(ref.shape)):
        try:
            expected = ([s.name for s in ref.dims[axis].values()], ref.dims[axis].label)
        except Exception:  # h5py cannot resolve the scales: nothing to compare with
            continue
        got, exc = hc.call(lambda: ([s.name for s in turbo.dims[axis].values()], turbo.dims[axis].label))
        if exc is not None or got != expected:
            out.append(f"{where}.dims[{axis}]: {got} {exc or ''} != h5py {expected}")


def _compare_dataset(ref, turbo, where: str, out: list, rng) -> None:
    try:
        dtype = ref.dtype
    except Exception as h5py_exc:  # no numpy equivalent (HDF5 time type): typed error
        _, exc = hc.call(lambda: turbo[()])
        if not isinstance(exc, h5turbo.Error):
            out.append(f"{where}: h5py has no dtype ({h5py_exc}); h5turbo gave {exc!r}")
        return
    problem = hc.dtype_difference(dtype, hc.call(lambda: turbo.dtype)[0])
    if problem:
        out.append(f"{where}.dtype: {problem}")
        return
    _compare_properties(ref, turbo, where, out)
    _compare_values(ref, turbo, where, out, rng)
    _compare_dims(ref, turbo, where, out)


def _visit_names(group) -> list[str]:
    names = []
    group.visititems(lambda name, obj: names.append(name))
    return names


def _compare_object(ref, turbo_file, name: str, out: list, rng) -> None:
    where = "/" + name
    ref_obj = ref[name]
    turbo_obj, exc = hc.call(lambda: turbo_file[name])
    if exc is not None:
        out.append(f"{where}: h5py opens it; h5turbo raised {exc!r}")
        return
    if isinstance(ref_obj, h5py.Datatype):  # committed (netCDF user) types: no API promised
        return
    kind = h5turbo.Group if isinstance(ref_obj, h5py.Group) else h5turbo.Dataset
    if not isinstance(turbo_obj, kind):
        out.append(f"{where}: h5turbo gave {type(turbo_obj).__name__}, h5py {type(ref_obj).__name__}")
        return
    _compare_attrs(ref_obj, turbo_obj, where, out)
    if kind is h5turbo.Group:
        keys, exc = hc.call(lambda: list(turbo_obj.keys()))
        if keys != list(ref_obj.keys()):
            out.append(f"{where}: keys {keys} {exc or ''} != h5py {list(ref_obj.keys())}")
    else:
        _compare_dataset(ref_obj, turbo_obj, where, out, rng)


def file_differences(path) -> list[str]:
    """Every difference between h5turbo and h5py on one file (empty: identical)."""
    out: list[str] = []
    rng = np.random.default_rng(0)
    with h5py.File(path, "r") as ref:
        turbo, exc = hc.call(lambda: h5turbo.File(path, "r"))
        if exc is not None:
            return [f"h5py opens the file; h5turbo raised {exc!r}"]
        with turbo:
            if turbo.userblock_size != ref.userblock_size:
                out.append(f"userblock_size {turbo.userblock_size} != h5py {ref.userblock_size}")
            expected = _visit_names(ref)
            got, exc = hc.call(lambda: _visit_names(turbo))
            if got != expected:
                out.append(f"visititems: {got} {exc or ''} != h5py {expected}")
            if list(turbo.keys()) != list(ref.keys()):
                out.append(f"/: keys {list(turbo.keys())} != h5py {list(ref.keys())}")
            _compare_attrs(ref, turbo, "/", out)
            for name in expected:
                _compare_object(ref, turbo, name, out, rng)
    return out


def cli_failures(path) -> list[str]:
    """`h5turbo ls` (text, --json) and `h5turbo info` of every dataset must work."""
    out = []
    commands = [(["ls", str(path)], 0), (["ls", str(path), "--json"], 0)]
    with h5py.File(path, "r") as ref:
        for name in _visit_names(ref):
            if isinstance(ref[name], h5py.Dataset):
                # a type h5py has no dtype for (HDF5 time): one line and status 1
                status = 0 if hc.call(lambda: ref[name].dtype)[1] is None else 1
                commands.append((["info", str(path), "/" + name], status))
    for argv, expected in commands:
        status, exc = hc.call(lambda: cli.main(argv, out=io.StringIO()))
        if exc is not None or status != expected:
            out.append(f"h5turbo {' '.join(argv)}: status {status} (not {expected}), {exc!r}")
    return out


def assert_reads_as_h5py(path) -> None:
    problems = file_differences(path) + cli_failures(path)
    assert not problems, f"{path}: {len(problems)} problem(s):\n" + "\n".join(problems[:40])


# --------------------------------------------------------------------------- netCDF4

def write_netcdf(path, fmt="NETCDF4", **comp) -> None:
    """Groups, unlimited dims grown in several appends, user types, fill values, packing."""
    import netCDF4
    rng = np.random.default_rng(1)
    full = fmt == "NETCDF4"
    ds = netCDF4.Dataset(path, "w", format=fmt)
    ds.title = "global title"
    ds.intlist = np.arange(5, dtype="i2")
    ds.dbl = 3.5
    if full:
        ds.setncattr_string("strattr", "an NC_STRING attribute")
        ds.setncattr_string("strlist", ["a", "bb", "ccc"])
    ds.createDimension("time", None)
    ds.createDimension("lat", 7)
    ds.createDimension("lon", 9)
    ds.createDimension("unl2", None if full else 10)
    time = ds.createVariable("time", "f8", ("time",))
    time.units = "days since 2000-01-01"
    ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-90, 90, 7)
    ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 360, 9)
    temp = ds.createVariable("temp", "f4", ("time", "lat", "lon"), **comp)
    temp.long_name = "temperature"
    packed = ds.createVariable("packed", "i2", ("time", "lat", "lon"), fill_value=-999, **comp)
    packed.scale_factor = 0.01
    packed.add_offset = 273.15
    nofill = ds.createVariable("nofill", "i4", ("time", "lat"), fill_value=False)
    deffill = ds.createVariable("deffill", "u8" if full else "i4", ("time", "lat"))
    ds.createVariable("small", "u1" if full else "i1", ("unl2",), fill_value=7)[5:8] = [1, 2, 3]
    for k in range(1, 5):  # four appends along the unlimited dimension
        n = ds.dimensions["time"].size
        time[n:n + k] = np.arange(n, n + k)
        temp[n:n + k] = rng.standard_normal((k, 7, 9)).astype("f4")
        packed[n:n + k] = rng.uniform(250, 300, (k, 7, 9))
        nofill[n:n + k, :3] = rng.integers(0, 100, (k, 3))
        deffill[n:n + k, 2] = rng.integers(0, 2**30, k).astype(deffill.dtype)
        ds.sync()
    ds.createVariable("scalar", "f8", ())[...] = 2.5
    if full:
        _netcdf_user_types(ds)
    ds.close()


def _netcdf_user_types(ds) -> None:
    group = ds.createGroup("grp")
    group.createDimension("x", 4)
    inner = group.createGroup("sub").createVariable("gv", "i8", ("x", "lat"))  # parent's dim
    inner[:] = np.arange(28).reshape(4, 7)
    inner.setncattr_string("note", "ünïcödé")
    ds.createVariable("names", str, ("lat",))[:] = np.array(
        ["a", "", "ccc", "dddd", "é", "f" * 50, "g"], dtype=object)
    ragged = ds.createVariable("ragged", ds.createVLType(np.int32, "vli"), ("lat",))
    values = np.empty(7, object)
    values[:] = [np.arange(i, dtype="i4") for i in range(7)]
    ragged[:] = values
    record = ds.createCompoundType(np.dtype([("a", "i4"), ("b", "f8"), ("c", "S3")]), "cmp")
    data = np.zeros(9, record.dtype)
    data["a"], data["b"], data["c"] = np.arange(9), np.arange(9) * 0.5, b"xyz"
    cmpv = ds.createVariable("cmpv", record, ("lon",))
    cmpv[:] = data
    cmpv.setncattr("cattr", data[:2])
    nested = ds.createCompoundType(np.dtype([("x", "f4"), ("inner", record.dtype)]), "nested_t")
    nested_data = np.zeros(7, nested.dtype)
    nested_data["x"], nested_data["inner"]["a"] = 1.5, 3
    ds.createVariable("nestedv", nested, ("lat",))[:] = nested_data
    cloud = ds.createEnumType(np.uint8, "cloud", {"clear": 0, "cumulus": 1, "stratus": 2, "missing": 255})
    ds.createVariable("clouds", cloud, ("time",), fill_value=255)[:3] = [0, 1, 2]
    ds.createVariable("scalar_str", str, ())[0] = "scalar string"
    import netCDF4
    ds.createVariable("chars", "S1", ("lat", "lon"))[:] = netCDF4.stringtochar(np.array(["abcdefghi"] * 7, "S9"))


NETCDF_VARIANTS = {
    "plain": {},
    "zlib": dict(zlib=True, complevel=4),
    "zlib9_shuffle": dict(zlib=True, complevel=9, shuffle=True),
    "zlib_fletcher32": dict(zlib=True, fletcher32=True),
    "fletcher32": dict(fletcher32=True),
    "zstd": dict(compression="zstd", complevel=3),
    "bzip2": dict(compression="bzip2", complevel=5),
    "szip_nn": dict(compression="szip", szip_coding="nn", szip_pixels_per_block=8),
    "szip_ec": dict(compression="szip", szip_coding="ec", szip_pixels_per_block=16),
    "small_chunks": dict(chunksizes=(1, 3, 4)),
    "chunk_cache": dict(zlib=True, chunk_cache=1 << 20),
    "big_endian": dict(endian="big"),
    "big_endian_zlib_shuffle": dict(endian="big", zlib=True, shuffle=True),
}


PLUGIN_CODECS = ("zstd", "bzip2")  # filters netCDF-C loads as HDF5 plugins


def write_netcdf_with_plugins(path, **comp) -> None:
    """write_netcdf in a child process whose HDF5_PLUGIN_PATH names netCDF4's own plugin
    folder: netCDF4 only sets it when unset, and the suite sets it for h5py's vbz plugin."""
    import netCDF4
    plugins = Path(netCDF4.__file__).parent / "plugins"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), HDF5_PLUGIN_PATH=os.pathsep.join(
        [str(plugins)] + [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]))
    script = ("import importlib.util, sys, json\n"
              f"spec = importlib.util.spec_from_file_location('writers', {__file__!r})\n"
              "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
              "module.write_netcdf(sys.argv[1], **json.loads(sys.argv[2]))\n")
    done = subprocess.run([sys.executable, "-c", script, str(path), json.dumps(comp)],
                          capture_output=True, text=True, timeout=300, env=env)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])


@needs_netcdf4
@pytest.mark.parametrize("variant", NETCDF_VARIANTS)
def test_netcdf4_variables(tmp_path, variant):
    import netCDF4
    path = tmp_path / f"{variant}.nc"
    comp = NETCDF_VARIANTS[variant]
    try:
        if comp.get("compression") in PLUGIN_CODECS:
            write_netcdf_with_plugins(path, **comp)
        else:
            write_netcdf(path, **comp)
    except (RuntimeError, ValueError) as exc:  # codec not in this netCDF build
        if variant in PLUGIN_CODECS or variant.startswith("szip"):
            pytest.skip(f"netCDF {netCDF4.__netcdf4libversion__} cannot write {variant}: {exc}")
        raise
    assert_reads_as_h5py(path)


@needs_netcdf4
def test_netcdf4_classic_model(tmp_path):
    path = tmp_path / "classic.nc"
    write_netcdf(path, fmt="NETCDF4_CLASSIC", zlib=True)
    assert_reads_as_h5py(path)


@needs_netcdf4
def test_netcdf4_layouts_and_fill(tmp_path):
    import netCDF4
    path = tmp_path / "layouts.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 100)
        ds.createVariable("contiguous", "f8", ("x",), contiguous=True)[:] = np.arange(100.0)
        ds.createVariable("contiguous_nofill", "f8", ("x",), contiguous=True, fill_value=False)
        ds.createVariable("unwritten", "i2", ("x",), fill_value=-5)
        ds.createVariable("half", "i4", ("x",))[:50] = 1
    assert_reads_as_h5py(path)


@needs_netcdf4
def test_netcdf4_dense_attributes_and_links(tmp_path):
    """netCDF-C tracks creation order: many variables / attributes go dense, renames and
    deletions reorder nothing."""
    import netCDF4
    path = tmp_path / "dense.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 3)
        for i in range(40):
            var = ds.createVariable(f"v{(i * 17) % 40:02d}", "i4" if i % 2 else "f8", ("x",))
            var[:] = i
            for j in range(12):
                var.setncattr(f"a{(j * 5) % 12}", j)
            var.setncattr_string("s", "x" * i)
            var.setncattr("arr", np.arange(i + 1, dtype="u2"))
        for j in range(30):
            ds.setncattr(f"g{(j * 7) % 30}", np.float32(j))
        for i in range(12):
            ds.createGroup(f"grp{(i * 5) % 12}").setncattr("i", i)
        ds.renameVariable("v03", "renamed")
        ds.delncattr("g5")
    assert_reads_as_h5py(path)


@needs_netcdf4
def test_netcdf4_reopened_and_grown(tmp_path):
    import netCDF4
    path = tmp_path / "reopen.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("y", 4)
        ds.createVariable("v", "i2", ("t", "y"), zlib=True, chunksizes=(3, 4))[0:2] = 1
    for k in range(5):
        with netCDF4.Dataset(path, "a") as ds:
            n = ds["v"].shape[0]
            ds["v"][n:n + k + 1] = k
            ds.setncattr(f"k{k}", k)
            ds.createVariable(f"late{k}", "u4", ("t",))
    with netCDF4.Dataset(tmp_path / "diskless.nc", "w", diskless=True, persist=True) as ds:
        ds.createDimension("t", None)
        ds.createVariable("v", "f4", ("t",))[:10] = np.arange(10)
    assert_reads_as_h5py(path)
    assert_reads_as_h5py(tmp_path / "diskless.nc")


@needs_netcdf4
def test_vlen_fill_value(tmp_path):
    """The fill value a file defines for a vlen string or sequence is decoded from its
    global heap (h5turbo gave b'' / None whatever the file said)."""
    import netCDF4
    path = tmp_path / "vlen_fill.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 3)
        ds.createVariable("s", str, ("x",), fill_value="abc")  # explicit vlen string fill
        ds.createVariable("v", ds.createVLType(np.float64, "vf"), ("x",))  # netCDF's default fill
    with h5py.File(path, "r") as ref, h5turbo.File(path) as turbo:
        for name in ("s", "v"):
            hc.assert_same(ref[name].fillvalue, turbo[name].fillvalue, name)
        assert turbo["s"].fillvalue == b"abc"
    plain = tmp_path / "vlen_fill.h5"
    with h5py.File(plain, "w") as f:
        f.create_dataset("s", shape=(2,), dtype=h5py.string_dtype(), fillvalue="xyz")
        f.create_dataset("t", shape=(2,), dtype=h5py.string_dtype())
    with h5py.File(plain, "r") as ref, h5turbo.File(plain) as turbo:
        for name in ("s", "t"):
            assert turbo[name].fillvalue == ref[name].fillvalue, name


# --------------------------------------------------------------------------- xarray / h5netcdf

def _xarray_dataset():
    import pandas as pd
    import xarray as xr
    rng = np.random.default_rng(4)
    return xr.Dataset(
        {"temp": (("time", "y", "x"), rng.standard_normal((12, 5, 6)).astype("f4"), {"units": "K"}),
         "count": (("time",), np.arange(12, dtype="i8")),
         "mask": (("y", "x"), rng.random((5, 6)) > 0.5),
         "label": (("y",), np.array(["a", "bb", "ccc", "", "é"], dtype=object)),
         "fixed": (("y",), np.array([b"ab", b"c", b"", b"d", b"e"], dtype="S2")),
         "withnan": (("x",), np.array([1.0, np.nan, 3, 4, 5, 6])),
         "td": (("time",), pd.to_timedelta(np.arange(12), "h"))},
        coords={"time": pd.date_range("2001-01-01", periods=12, freq="D"), "y": np.arange(5) * 10.0,
                "x": np.linspace(0, 1, 6), "aux": (("y",), list("vwxyz"))},
        attrs={"title": "xr test", "history": ["one", "two"], "num": np.float32(1.5), "ints": [1, 2, 3]})


XARRAY_ENCODINGS = {
    "plain": {},
    "zlib_chunked": {"temp": {"zlib": True, "complevel": 5, "shuffle": True, "chunksizes": (3, 5, 2)}},
    "packed": {"temp": {"dtype": "i2", "scale_factor": 0.001, "add_offset": 1.0, "_FillValue": -32768},
               "withnan": {"_FillValue": -9999.0}},
}


def _groups(path) -> list:
    found = [None]
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: found.append("/" + n) if isinstance(o, h5py.Group) else None)
    return found


def xarray_differences(path) -> list[str]:
    """engine="h5turbo" must give what engine="h5netcdf" gives, group by group (the
    engine passed by its class: the oldest-numpy run has no installed entry point)."""
    import xarray as xr
    from h5turbo.xarray_backend import H5TurboBackendEntrypoint
    out = []
    for group in _groups(path):
        for decode in ({}, {"decode_cf": False}, {"mask_and_scale": False}):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    exp = xr.open_dataset(path, engine="h5netcdf", group=group, **decode).load()
                except Exception:  # h5netcdf cannot: no reference
                    continue
                got, exc = hc.call(lambda: xr.open_dataset(path, engine=H5TurboBackendEntrypoint, group=group, **decode).load())
            if exc is not None:
                out.append(f"{group} {decode}: h5turbo raised {exc!r}; h5netcdf reads it")
            elif not got.identical(exp):
                out.append(f"{group} {decode}: not identical to h5netcdf's:\n{got}\n{exp}")
            else:
                out += [f"{group} {decode} {name}: encoding dtype {got[name].encoding.get('dtype')} != "
                        f"{exp[name].encoding.get('dtype')}" for name in exp.variables
                        if got[name].encoding.get("dtype") != exp[name].encoding.get("dtype")]
    return out


@needs_h5netcdf
@pytest.mark.parametrize("engine", ["netcdf4", "h5netcdf"])
@pytest.mark.parametrize("encoding", XARRAY_ENCODINGS)
@pytest.mark.parametrize("unlimited", [False, True], ids=["fixed", "unlimited"])
def test_xarray_to_netcdf(tmp_path, engine, encoding, unlimited):
    if engine == "netcdf4" and not HAVE_NETCDF4:
        pytest.skip("netCDF4 is not installed")
    path = tmp_path / "xr.nc"
    ds = _xarray_dataset()
    kw = {"unlimited_dims": ["time"]} if unlimited else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_netcdf(path, engine=engine, encoding=XARRAY_ENCODINGS[encoding], **kw)
        ds.isel(time=slice(0, 3)).to_netcdf(path, mode="a", group="sub/deeper", engine=engine)
    assert_reads_as_h5py(path)
    problems = xarray_differences(path)
    assert not problems, "\n".join(problems)


@needs_h5netcdf
def test_h5netcdf_both_apis(tmp_path):
    import h5netcdf
    import h5netcdf.legacyapi
    path = tmp_path / "h5netcdf.nc"
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"x": 5, "t": None}
        f.create_variable("v", ("x",), float, fillvalue=-1.0)[:3] = [1, 2, 3]
        u = f.create_variable("u", ("t", "x"), "i4", chunks=(2, 5), compression="gzip")
        f.resize_dimension("t", 4)
        u[:] = np.arange(20).reshape(4, 5)
        f.resize_dimension("t", 7)
        u[4:] = -np.arange(15).reshape(3, 5)
        group = f.create_group("grp")
        group.dimensions["y"] = 3
        w = group.create_variable("w", ("y", "x"), "f4")
        w[:] = 1
        w.attrs["s"] = "text"
        w.attrs["arr"] = np.arange(3)
        f.create_variable("s", ("x",), h5py.string_dtype())[:] = np.array(list("abcde"), dtype=object)
        f.create_variable("scalar", (), "f8")[...] = 3.0
    legacy = tmp_path / "legacy.nc"
    with h5netcdf.legacyapi.Dataset(legacy, "w") as f:
        f.createDimension("x", 4)
        f.createDimension("t", None)
        v = f.createVariable("v", "f8", ("t", "x"), zlib=True)
        v[0:2, :] = 1.0
        v[2:5, :] = 2.0
        v.setncattr("units", "m")
        f.createVariable("x", "i4", ("x",))[:] = np.arange(4)
    for p in (path, legacy):
        assert_reads_as_h5py(p)
        problems = xarray_differences(p)
        assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- h5py, unusual settings

def _h5py_content(f, dense=False) -> None:
    rng = np.random.default_rng(3)
    f.attrs["a"] = 1
    f.attrs["s"] = "str"
    group = f.create_group("g", track_order=True)
    for n in "zamb":
        group.create_dataset(n, data=np.arange(5) * ord(n))
        group.attrs[n] = n
    f.create_dataset("contig", data=rng.standard_normal((20, 30)))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    compact = h5py.h5d.create(f.id, b"compact", h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple((12,)), dcpl=dcpl)
    compact.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(12, dtype="i4"))
    f.create_dataset("chunked", data=rng.integers(0, 1000, (100, 50)), chunks=(7, 9),
                     compression="gzip", shuffle=True, fletcher32=True, maxshape=(None, 50))
    grown = f.create_dataset("resizable", shape=(0,), maxshape=(None,), dtype="f4", chunks=(4,))
    for k in range(5):
        grown.resize((grown.shape[0] + 3 + k,))
        grown[-3 - k:] = k
    f.create_dataset("fill", shape=(6, 6), dtype="f8", fillvalue=np.nan)
    f.create_dataset("scaleoffset", data=np.arange(100, dtype="i4"), scaleoffset=0, chunks=(10,))
    f.create_dataset("so_float", data=np.linspace(0, 1, 100), scaleoffset=3, chunks=(10,))
    f.create_dataset("lzf", data=np.arange(100.0), compression="lzf")
    f.create_dataset("empty", data=h5py.Empty("f4"))
    f.create_dataset("zero", shape=(0, 5), dtype="i8")
    f.create_dataset("strs", data=np.array(["a", "bé", ""], dtype=h5py.string_dtype()))
    if dense:
        for i in range(40):
            f.attrs[f"attr{i:03d}"] = np.arange(i)
        many = f.create_group("many")
        for i in range(300):
            many.create_group(f"k{(i * 7919) % 300:04d}")
        try:  # over 64 KiB: dense attribute storage (refused by the earliest format)
            f.attrs["huge"] = np.arange(20000, dtype="f8")
            f["contig"].attrs["huge"] = np.arange(20000, dtype="i4")
        except OSError:
            pass


@pytest.mark.parametrize("dense", [False, True], ids=["compact", "dense"])
@pytest.mark.parametrize("libver", ["earliest", "v108", "v110", "v112", "v114", "latest"])
def test_h5py_libver(tmp_path, libver, dense):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", libver=(libver, "latest")) as f:
        _h5py_content(f, dense)
    assert_reads_as_h5py(path)


@pytest.mark.parametrize("track_order", [False, True])
def test_h5py_track_order(tmp_path, track_order):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", track_order=track_order) as f:
        _h5py_content(f, dense=True)
    assert_reads_as_h5py(path)


FILE_OPTIONS = {
    "userblock_512": dict(userblock_size=512, libver="latest"),
    "userblock_4096": dict(userblock_size=4096),
    "fs_page": dict(fs_strategy="page", fs_page_size=4096, fs_persist=True),
    "fs_fsm_persist": dict(fs_strategy="fsm", fs_persist=True, fs_threshold=1),
    "fs_aggregate": dict(fs_strategy="aggregate"),
    "fs_none": dict(fs_strategy="none"),
    "core_backing_store": dict(driver="core", backing_store=True, block_size=1 << 16),
    "alignment_rdcc": dict(rdcc_nbytes=1 << 10, rdcc_nslots=7, alignment_threshold=1,
                           alignment_interval=4096, meta_block_size=8192),
}


@pytest.mark.parametrize("option", FILE_OPTIONS)
def test_h5py_file_options(tmp_path, option):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", **FILE_OPTIONS[option]) as f:
        _h5py_content(f, dense=True)
        del f["contig"]  # freed space for the strategies to track
        f.create_dataset("after_delete", data=np.arange(1000))
    if option.startswith("userblock"):
        with open(path, "r+b") as handle:
            handle.write(b"USERBLOCK DATA")
    assert_reads_as_h5py(path)


def test_h5py_fill_times(tmp_path):
    path = tmp_path / "fill_time.h5"
    times = {"never": h5py.h5d.FILL_TIME_NEVER, "alloc": h5py.h5d.FILL_TIME_ALLOC,
             "ifset": h5py.h5d.FILL_TIME_IFSET}
    allocs = {"early": h5py.h5d.ALLOC_TIME_EARLY, "incr": h5py.h5d.ALLOC_TIME_INCR,
              "late": h5py.h5d.ALLOC_TIME_LATE}
    with h5py.File(path, "w") as f:
        for fill_time, ft in times.items():
            for alloc, at in allocs.items():
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                dcpl.set_chunk((5,))
                dcpl.set_fill_value(np.array(42, "i4"))
                dcpl.set_fill_time(ft)
                dcpl.set_alloc_time(at)
                name = f"{fill_time}_{alloc}"
                h5py.h5d.create(f.id, name.encode(), h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple((20,)), dcpl=dcpl)
                if fill_time != "never":  # unwritten elements of "never" are undefined
                    f[name][3:7] = 5
        f.create_dataset("contig_never", shape=(20,), dtype="i4", fillvalue=42, fill_time="never")[...] = np.arange(20)
        f.create_dataset("chunked_never", shape=(30,), dtype="i4", fillvalue=9, chunks=(30,),
                         fill_time="never")[...] = 1
    assert_reads_as_h5py(path)


def test_h5py_external_storage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative external names resolve from the working folder
    path = tmp_path / "external.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("ext", shape=(100,), dtype="<i4",
                         external=[(str(tmp_path / "raw1.bin"), 0, 200), (str(tmp_path / "raw2.bin"), 16, 200)])
        f["ext"][...] = np.arange(100)
        f.create_dataset("ext_rel", shape=(10,), dtype=">f8", external=[("rel.bin", 8, h5py.h5f.UNLIMITED)])
        f["ext_rel"][...] = np.arange(10.0)
    assert_reads_as_h5py(path)


def test_h5py_swmr_appends(tmp_path):
    path = tmp_path / "swmr.h5"
    f = h5py.File(path, "w", libver="latest")
    rows = f.create_dataset("rows", shape=(0, 3), maxshape=(None, 3), chunks=(2, 3), dtype="f8")
    flat = f.create_dataset("flat", shape=(0,), maxshape=(None,), chunks=(5,), dtype="i2", compression="gzip")
    f.swmr_mode = True
    for k in range(30):
        rows.resize((rows.shape[0] + 1, 3))
        rows[-1] = k
        flat.resize((flat.shape[0] + 2,))
        flat[-2:] = k
        rows.flush()
        flat.flush()
    f.close()
    assert_reads_as_h5py(path)


def test_h5py_attribute_creation_order(tmp_path):
    path = tmp_path / "attrs.h5"
    with h5py.File(path, "w", track_order=True) as f:
        ds = f.create_dataset("x", data=1, track_order=True)
        for n in ["zeta", "alpha", "mid", "Beta", "_u"] + [f"n{19 - i}" for i in range(20)]:
            ds.attrs[n] = n
        group = f.create_group("g", track_order=True)
        for i in range(100):  # dense, with a creation-order index
            group.attrs[f"{(i * 37) % 100:03d}"] = np.full(i, i, dtype="i1")
        del group.attrs["050"]
        ds.attrs.create("typed", 5, dtype="u2")
        ds.attrs["empty"] = h5py.Empty("i4")
        ds.attrs["vlen"] = np.array([np.arange(3), np.arange(1)], dtype=h5py.vlen_dtype("i8"))
    assert_reads_as_h5py(path)


def test_cli_json_with_references(tmp_path):
    """Every netCDF-4 variable with dimensions carries DIMENSION_LIST references: `info
    --json` and `cat --json` give them as {"object_reference": address} (a TypeError
    from json before)."""
    path = tmp_path / "refs.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3.0)
        f["x"].make_scale("x")
        f["v"] = np.arange(3)
        f["v"].dims[0].attach_scale(f["x"])
        f.create_dataset("refs", data=[f["x"].ref], dtype=h5py.ref_dtype)
    for argv in (["info", str(path), "/v", "--json"], ["info", str(path), "/x", "--json"],
                 ["cat", str(path), "/refs", "--json"]):
        text = io.StringIO()
        assert cli.main(argv, out=text) == 0
        assert "object_reference" in json.dumps(json.loads(text.getvalue()))


# --------------------------------------------------------------------------- PyTables / pandas

PYTABLES_WRITER = textwrap.dedent('''
    import sys
    import numpy as np
    import tables as tb
    import pandas as pd

    folder, complib, complevel, shuffle, bitshuffle, fletcher32 = sys.argv[1:7]
    complevel, shuffle, bitshuffle, fletcher32 = int(complevel), shuffle == "1", bitshuffle == "1", fletcher32 == "1"
    rng = np.random.default_rng(2)

    class Particle(tb.IsDescription):
        name = tb.StringCol(16, pos=0)
        idnumber = tb.Int64Col(pos=1)
        energy = tb.Float64Col(pos=2)
        flag = tb.BoolCol(pos=3)
        vec = tb.Float32Col(shape=(3,), pos=4)
        c = tb.ComplexCol(itemsize=16, pos=5)
        e = tb.EnumCol(tb.Enum(["red", "green", "blue"]), "red", base="uint8", pos=6)
        u = tb.UInt16Col(pos=7)

        class nested(tb.IsDescription):
            a = tb.Int8Col()
            b = tb.Float16Col()

    name = f"{complib or 'none'}_{complevel}_{int(shuffle)}{int(bitshuffle)}{int(fletcher32)}".replace(":", "-")
    filters = tb.Filters(complevel=complevel, complib=complib, shuffle=shuffle, bitshuffle=bitshuffle,
                         fletcher32=fletcher32) if complib else None
    # VLArrays take neither blosc2 nor fletcher32
    vfilters = tb.Filters(complevel=5, complib="zlib") if complib.startswith("blosc2") or fletcher32 else None
    with tb.open_file(f"{folder}/{name}.h5", "w", title="pt file", filters=filters) as f:
        table = f.create_table(f.create_group("/", "detector"), "readout", Particle, "Readout", expectedrows=5000)
        row = table.row
        for i in range(3000):
            row["name"], row["idnumber"], row["energy"] = f"Particle: {i:6d}", i * 2**40, float(i * i)
            row["flag"], row["vec"], row["c"], row["e"] = i % 3 == 0, [i, i + 0.5, -i], complex(i, -i), i % 3
            row["u"], row["nested/a"], row["nested/b"] = i % 65535, i % 100, i / 7
            row.append()
        table.flush()
        table.attrs.note = "table attr"
        table.attrs.arr = np.arange(4)
        table.attrs.pyobj = {"a": 1}  # pickled
        table.cols.idnumber.create_index()
        earray = f.create_earray("/", "earray", tb.Float64Atom(), (0, 5), expectedrows=1000)
        for k in range(7):
            earray.append(rng.standard_normal((k * 13 + 1, 5)))
        earray2 = f.create_earray("/", "earray_axis1", tb.Int32Atom(), (4, 0))
        for k in range(5):
            earray2.append(rng.integers(-100, 100, (4, k + 3)).astype("i4"))
        carray = f.create_carray("/", "carray", tb.Int16Atom(dflt=-7), (123, 77), chunkshape=(10, 11))
        carray[5:100, 3:60] = rng.integers(-1000, 1000, (95, 57))
        f.create_carray("/", "carray_nan", tb.Float32Atom(dflt=np.nan), (50, 60))[:20] = rng.standard_normal((20, 60))
        f.create_array("/", "array", np.arange(100, dtype=">f8").reshape(10, 10), "plain array")
        f.create_array("/", "scalar", 42)
        f.create_array("/", "strarr", np.array([b"abc", b"de", b""]))
        f.create_array("/", "complex", np.array([1 + 2j, 3j]))
        vl = f.create_vlarray("/", "vlarray", tb.Int32Atom(), "ragged ints", filters=vfilters)
        for k in range(20):
            vl.append(np.arange(k, dtype="i4"))
        vs = f.create_vlarray("/", "vlstr", tb.VLStringAtom(), filters=vfilters)
        for s in ["a", "bb", "", "dddd" * 30]:
            vs.append(s.encode())
        vu = f.create_vlarray("/", "vlunicode", tb.VLUnicodeAtom(), filters=vfilters)
        for s in ["ä", "bé", ""]:
            vu.append(s)
        f.create_vlarray("/", "vlobj", tb.ObjectAtom(), filters=vfilters).append({"x": [1, 2]})
        vf = f.create_vlarray("/", "vlfloat3", tb.Float64Atom(shape=(3,)), filters=vfilters)
        vf.append(np.ones((2, 3)))
        vf.append(np.zeros((0, 3)))
        f.create_group("/", "empty_group")
        f.create_table("/", "timetab", {"t": tb.Time64Col(), "x": tb.Int8Col()}).append([(1.5, 1), (2.5, 2)])
        f.create_soft_link("/", "soft", "/detector/readout")
        f.create_hard_link("/", "hard", "/carray")
    if complib == "zlib" and complevel == 5:
        df = pd.DataFrame({"a": np.arange(1000), "b": rng.standard_normal(1000), "s": [f"x{i}" for i in range(1000)],
                           "t": pd.date_range("2000", periods=1000, freq="h"), "bo": [True, False] * 500,
                           "f32": np.arange(1000, dtype="f4")})
        p = f"{folder}/pandas.h5"
        df.to_hdf(p, key="fixed", format="fixed")
        df.assign(c=pd.Categorical(["u", "v"] * 500)).to_hdf(p, key="table", format="table", data_columns=["a", "s"])
        df.to_hdf(p, key="table_blosc", format="table", complib="blosc:zstd", complevel=9)
        df.to_hdf(p, key="fixed_blosc2", format="fixed", complib="blosc2", complevel=5)
        df.to_hdf(p, key="fixed_bzip2", format="fixed", complib="bzip2", complevel=5)
        pd.Series(np.arange(10.0)).to_hdf(p, key="series")
        df.set_index(["a", "s"]).to_hdf(p, key="multi_table", format="table")
        df.set_index(["a", "s"]).to_hdf(p, key="multi_fixed", format="fixed")
        with pd.HDFStore(p) as store:
            for i in range(5):
                store.append("appended", df.iloc[i * 100:(i + 1) * 100], data_columns=True, min_itemsize={"s": 20})
''')

PYTABLES_FILTERS = [
    ("", 0, 0, 0, 0), ("zlib", 5, 1, 0, 0), ("zlib", 1, 0, 0, 1), ("bzip2", 9, 1, 0, 0),
    ("blosc", 5, 1, 0, 0), ("blosc:lz4", 5, 1, 0, 0), ("blosc:lz4hc", 5, 1, 0, 0),
    ("blosc:zlib", 5, 1, 0, 0), ("blosc:zstd", 5, 1, 0, 1), ("blosc:blosclz", 5, 0, 1, 0),
    ("blosc2", 5, 1, 0, 0), ("blosc2:lz4", 5, 1, 0, 0), ("blosc2:zstd", 9, 1, 0, 0),
    ("blosc2:zlib", 5, 1, 0, 0), ("blosc2:lz4hc", 5, 0, 1, 0),
]


@needs_tables
@pytest.mark.parametrize("complib,level,shuffle,bitshuffle,fletcher32", PYTABLES_FILTERS,
                         ids=["-".join(map(str, f)).replace(":", "_") or "none" for f in PYTABLES_FILTERS])
def test_pytables(tmp_path, complib, level, shuffle, bitshuffle, fletcher32):
    done = subprocess.run([sys.executable, "-c", PYTABLES_WRITER, str(tmp_path), complib, str(level),
                           str(shuffle), str(bitshuffle), str(fletcher32)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode and "not supported" in done.stderr:
        pytest.skip(f"this PyTables build cannot write {complib}")
    assert done.returncode == 0, done.stderr[-3000:]
    files = sorted(tmp_path.glob("*.h5"))
    assert files
    for path in files:
        assert_reads_as_h5py(path)
