"""xarray engine "h5turbo" against engine "h5netcdf": every NetCDF4 file of the corpus,
generated files with groups, unlimited dimensions and plain HDF5 datasets."""

from __future__ import annotations

import pickle
import warnings
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo
from support.common import REPO_ROOT, corpus_dir

import xarray as xr  # noqa: E402
import h5netcdf  # noqa: E402,F401  (the reference engine)

from h5turbo.xarray_backend import H5TurboBackendEntrypoint, is_hdf5  # noqa: E402

ENGINE = H5TurboBackendEntrypoint  # the class itself: works from a source tree too
CORPUS = corpus_dir()
# (h5netcdf_test.hdf5: netCDF-C's "_nc4_non_coord_" variable, a variable named as a
# dimension it does not describe, whose prefix readers drop)
NETCDF_FILES = sorted(list((CORPUS / "netcdf4").glob("*.nc")) + list((CORPUS / "pyfive").glob("*.nc"))
                      + [CORPUS / "pyfive" / "h5netcdf_test.hdf5"])
# Files whose dimension names exist only as object references (DIMENSION_LIST), with
# several dimensions of the same length: they need the references followed.
REFERENCE_ONLY = {"20171025_2056.Cloud_Top_Height.nc", "test_gold.nc"}


def _open(path, engine, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xarray's phony_dims notice for h5netcdf
        return xr.open_dataset(path, engine=engine, **kwargs)


def _assert_same(path, **kwargs):
    ref = _open(path, "h5netcdf", **kwargs)
    got = _open(path, ENGINE, **kwargs)
    xr.testing.assert_identical(got.load(), ref.load())
    for name in ref.variables:  # storage encoding too: chunks, filters, dtype
        assert got[name].encoding == ref[name].encoding, name
    assert got.encoding["unlimited_dims"] == ref.encoding["unlimited_dims"]
    return got


@pytest.mark.parametrize("path", NETCDF_FILES, ids=lambda p: p.name)
def test_corpus_netcdf_same_as_h5netcdf(path):
    _open(path, "h5netcdf").load()  # the reference must read it (every corpus file does)
    _assert_same(path)


def test_corpus_covered():
    """The corpus still holds the files that need DIMENSION_LIST references followed."""
    assert len(NETCDF_FILES) >= 12
    assert REFERENCE_ONLY <= {p.name for p in NETCDF_FILES}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A NetCDF4 file written by h5netcdf: groups, an unlimited dimension with a shorter
    variable, CF time and scale/offset encodings, chunked and compressed variables."""
    import h5netcdf

    path = tmp_path_factory.mktemp("xr") / "groups.nc"
    rng = np.random.default_rng(3)
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"x": 6, "time": None}
        f.resize_dimension("time", 5)
        f.attrs["title"] = "written by h5netcdf"
        x = f.create_variable("x", ("x",), "f8", data=np.linspace(0, 1, 6))
        x.attrs["units"] = "m"
        t = f.create_variable("time", ("time",), "i4", data=np.arange(5))
        t.attrs["units"] = "days since 2000-01-01"
        v = f.create_variable("temp", ("time", "x"), "i2", chunks=(2, 3), compression="gzip",
                              data=rng.integers(0, 1000, (5, 6)).astype("i2"))
        v.attrs.update({"scale_factor": 0.5, "add_offset": 10.0, "_FillValue": np.int16(-1)})
        short = f.create_variable("short", ("time",), "f4", data=np.ones(5, "f4"), fillvalue=np.float32(-9))
        short.attrs["long_name"] = "three of five written"
        g = f.create_group("inner")
        g.dimensions = {"y": 4}
        g.create_variable("y", ("y",), "i8", data=np.arange(4) * 10)
        g.create_variable("field", ("x", "y"), "f4", chunks=(3, 2),
                          data=rng.random((6, 4)).astype("f4"))
        names = g.create_variable("names", ("y",), h5py.string_dtype())
        names[:] = np.array(["a", "bb", "ccc", "d"], dtype=object)
    with h5py.File(path, "a") as f:  # netCDF allows a variable shorter than its dimension
        f["short"].resize((3,))
    return path


def test_written_root_same(written):
    got = _assert_same(written)
    assert got["short"].shape == (5,)  # padded to the unlimited dimension's length
    assert got["temp"].encoding["preferred_chunks"] == {"time": 2, "x": 3}


def test_padding_past_a_short_variable_is_what_netcdf_reads(tmp_path):
    """A variable shorter than its unlimited dimension reads, past its end, what
    netCDF-C (engine netcdf4) reads: its fill value, else netCDF's default fill for the
    type when the file defines none (no-fill mode; h5netcdf pads with 0 there)."""
    import netCDF4

    path = tmp_path / "nofill.nc"
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("t", None)
        d.createVariable("full", "f8", ("t",))[:6] = np.arange(6.0)
        for name, dtype in (("f4", "f4"), ("i4", "i4"), ("u1", "u1"), ("i8", "i8")):
            d.createVariable(name, dtype, ("t",), fill_value=False)[:2] = [1, 2]
        d.createVariable("own", "i2", ("t",), fill_value=-5)[:2] = [1, 2]
    for mask in (False, True):
        ref = _open(path, "netcdf4", mask_and_scale=mask)
        got = _open(path, ENGINE, mask_and_scale=mask)
        for name in ("f4", "i4", "u1", "i8", "own"):
            assert got[name].dtype == ref[name].dtype, name
            np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)
    assert _open(path, ENGINE, mask_and_scale=False)["i4"].values[-1] == -2147483647


def test_group_argument(written):
    got = _assert_same(written, group="inner")
    assert got["field"].dims == ("x", "y")  # 'x' found in the parent group's scope
    _assert_same(written, group="/inner")
    with pytest.raises(OSError, match="group not found"):
        _open(written, ENGINE, group="nope")


def test_lazy_and_dask_chunks(written):
    got = _open(written, ENGINE, chunks={})
    assert got["temp"].chunks == ((2, 2, 1), (3, 3))  # blocks = the HDF5 chunks
    ref = _open(written, "h5netcdf")
    xr.testing.assert_identical(got.compute(), ref.load())
    lazy = _open(written, ENGINE)
    backend = lazy["temp"].variable._data
    assert not isinstance(backend, np.ndarray)  # nothing read yet
    np.testing.assert_array_equal(lazy["temp"][1:4, ::2].values, ref["temp"][1:4, ::2].values)
    # the dask graph pickles small: (path, name) per array, not the data
    blob = pickle.dumps(got["temp"].data)
    assert len(blob) < 20_000
    got.close()  # the unpickled copy reopens the file by path, as a dask worker would
    np.testing.assert_array_equal(pickle.loads(blob).compute(), ref["temp"].values)


def test_plain_hdf5_phony_dims(tmp_path):
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f["a"] = np.arange(12.0).reshape(3, 4)
        f["b"] = np.arange(3)
        f.create_group("g")["c"] = np.ones((4, 4), "i2")
        f.attrs["note"] = "no netCDF here"
    for mode in ("access", "sort"):
        _assert_same(path, phony_dims=mode)
        _assert_same(path, phony_dims=mode, group="g")


def test_guess_can_open_by_signature(tmp_path):
    entry = H5TurboBackendEntrypoint()
    userblock = next(p for p in (CORPUS / "jhdf").glob("*") if h5turbo.File(p).userblock_size)
    assert entry.guess_can_open(userblock) and is_hdf5(str(userblock))
    assert entry.guess_can_open(NETCDF_FILES[0])
    text = tmp_path / "plain.nc"
    text.write_text("CDF not really")
    assert not entry.guess_can_open(text)
    assert not entry.guess_can_open(tmp_path / "missing.nc")
    assert not entry.guess_can_open(b"\x89HDF\r\n\x1a\n")  # bytes are not a path here


def test_entry_point_declared():
    """pyproject registers the engine; an installed distribution built from it too."""
    text = (REPO_ROOT / "pyproject.toml").read_text()
    assert '[project.entry-points."xarray.backends"]' in text
    assert 'h5turbo = "h5turbo.xarray_backend:H5TurboBackendEntrypoint"' in text
    try:
        points = distribution("h5turbo").entry_points
    except PackageNotFoundError:
        pytest.skip("h5turbo is not installed (source tree on PYTHONPATH)")
    if not any(ep.group == "xarray.backends" for ep in points):
        pytest.skip("the installed h5turbo metadata predates the entry point: make setup")
    assert "h5turbo" in xr.backends.list_engines()
    xr.testing.assert_identical(_open(NETCDF_FILES[1], "h5turbo"), _open(NETCDF_FILES[1], "h5netcdf"))


def _assert_same_tree(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = xr.open_datatree(path, engine="h5netcdf", **kwargs)
        got = xr.open_datatree(path, engine=ENGINE, **kwargs)
    xr.testing.assert_identical(got.load(), ref.load())
    assert got.groups == ref.groups


def test_datatree(written, tmp_path):
    _assert_same_tree(written)
    _assert_same_tree(written, group="inner")
    _assert_same_tree(NETCDF_FILES[1])
    plain = tmp_path / "nested.h5"
    with h5py.File(plain, "w") as f:  # phony dimensions numbered across the groups
        f["a"] = np.zeros((3, 4))
        f.create_group("g")["c"] = np.ones((4, 4), "i2")
        f["g"].create_group("h")["d"] = np.ones((5,), "i2")
    for mode in ("access", "sort"):
        _assert_same_tree(plain, phony_dims=mode)


def test_unreadable_variable_is_named(tmp_path):
    """A dataset h5turbo cannot read (here: an HDF5 1.12+ reference type) fails opening
    with a typed error naming it."""
    from support.h5gen import write_revised_reference_file
    path = write_revised_reference_file(tmp_path / "revised.h5")
    with pytest.raises(h5turbo.UnsupportedError, match="variable '/refs'.*1.12"):
        _open(path, ENGINE)


def _reference_targets(value, file):
    """An attribute value with each reference replaced by (kind, target name)."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [_reference_targets(v, file) for v in value]
    kind = type(value).__name__
    if kind in ("Reference", "RegionReference"):
        return kind, file[value].name
    return value


def test_reference_valued_attributes_read_as_in_h5netcdf():
    """pyfive's references.hdf5 keeps references in root attributes. h5netcdf 1.8.3 gives
    them as they are (before, its attribute conversion took len() of a reference and
    failed); the engine gives its own references, to the same objects."""
    path = CORPUS / "pyfive" / "references.hdf5"
    ref, got = _open(path, "h5netcdf"), _open(path, ENGINE)
    assert list(got.attrs) == list(ref.attrs)
    assert got.attrs["root_attr"] == ref.attrs["root_attr"] == 123
    with h5py.File(path, "r") as f, h5turbo.File(path) as g:
        for name in ref.attrs:
            expected = _reference_targets(ref.attrs[name], f)
            assert _reference_targets(got.attrs[name], g) == expected, name
        assert _reference_targets(got.attrs["group1_reference"], g) == ("Reference", "/group1")
    assert type(got.attrs["vlen_refs"][1][0]).__name__ == "Reference"


@pytest.mark.parametrize("codec", ["lz4", "zstd", "blosc", "bzip2", "gzip_then_zstd", "szip"])
def test_filter_encoding_named_as_h5netcdf_names_it(tmp_path, codec):
    """The filter flags and complevel of a variable's encoding, for each plugin filter
    h5netcdf names (h5netcdf calls the lz4 filter, 32004, "blosc"; a real blosc
    filter, 32001, sets no flag), match engine="h5netcdf" exactly."""
    import hdf5plugin

    if codec == "szip" and not h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP):
        pytest.skip("this libhdf5 has no szip encoder")
    options = {"lz4": hdf5plugin.LZ4(), "zstd": hdf5plugin.Zstd(clevel=7), "blosc": hdf5plugin.Blosc(),
               "bzip2": hdf5plugin.BZip2(blocksize=5), "szip": {"compression": "szip"},
               "gzip_then_zstd": {"compression": "gzip", "compression_opts": 3}}[codec]
    path = tmp_path / f"{codec}.h5"
    with h5py.File(path, "w") as f:
        if codec == "gzip_then_zstd":  # two compressors: the last with client data sets complevel
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((4, 5))
            dcpl.set_deflate(3)
            dcpl.set_filter(32015, h5py.h5z.FLAG_OPTIONAL, (9,))
            space = h5py.h5s.create_simple((20, 10))
            h5py.h5d.create(f.id, b"v", h5py.h5t.NATIVE_INT32, space, dcpl=dcpl)
            f["v"][...] = np.arange(200, dtype="i4").reshape(20, 10)
        else:
            f.create_dataset("v", data=np.arange(200, dtype="i4").reshape(20, 10), chunks=(4, 5),
                             **options)
    ref = _open(path, "h5netcdf", phony_dims="sort")
    got = _open(path, ENGINE, phony_dims="sort")
    expected = {"lz4": "blosc", "zstd": "zstd", "blosc": None, "bzip2": "bzip2",
                "gzip_then_zstd": "zstd", "szip": "szip"}[codec]
    if expected:
        assert ref["v"].encoding[expected] is True  # the reference's naming, as documented above
    assert got["v"].encoding == ref["v"].encoding
    np.testing.assert_array_equal(got["v"].values, ref["v"].values)


# ---------------------------------------------------------------------- file objects


def _assert_same_from_objects(path, make_obj, **kwargs):
    """engine='h5turbo' on a file object gives what h5netcdf gives on another."""
    ref = _open(make_obj(path), "h5netcdf", **kwargs)
    got = _open(make_obj(path), ENGINE, **kwargs)
    xr.testing.assert_identical(got.load(), ref.load())
    for name in ref.variables:
        want = {k: v for k, v in ref[name].encoding.items() if k != "source"}
        assert {k: v for k, v in got[name].encoding.items() if k != "source"} == want, name
    return got


@pytest.mark.parametrize("kind", ["bytesio", "open"])
def test_file_objects(written, kind):
    import io

    def make_obj(path):
        return io.BytesIO(path.read_bytes()) if kind == "bytesio" else open(path, "rb")

    got = _assert_same_from_objects(written, make_obj)
    assert got["short"].shape == (5,)
    _assert_same_from_objects(written, make_obj, group="inner")


def test_file_object_lazy_dask_and_pickle(written):
    import io

    got = _open(io.BytesIO(written.read_bytes()), ENGINE, chunks={})
    ref = _open(written, "h5netcdf")
    xr.testing.assert_identical(got.compute(), ref.load())
    blob = pickle.dumps(got["temp"].data)  # carries the object: it has no path
    got.close()
    np.testing.assert_array_equal(pickle.loads(blob).compute(), ref["temp"].values)


def test_file_object_datatree(written):
    import io

    if not hasattr(xr, "open_datatree"):
        pytest.skip("xarray without open_datatree")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = xr.open_datatree(written, engine="h5netcdf")
        got = xr.open_datatree(io.BytesIO(written.read_bytes()), engine=ENGINE)
    xr.testing.assert_identical(got.load(), ref.load())


def test_fsspec_http_file_object(written):
    pytest.importorskip("aiohttp")
    fsspec = pytest.importorskip("fsspec")
    from support.range_server import RangeServer

    with RangeServer(written.parent) as server:
        with fsspec.filesystem("http").open(server.url(written.name), "rb") as obj:
            got = _open(obj, ENGINE)
            xr.testing.assert_identical(got.load(), _open(written, "h5netcdf").load())


@pytest.mark.parametrize("wrap", [bytes, memoryview])
def test_file_bytes_as_h5netcdf_takes_them(written, wrap):
    """bytes (or a buffer) are the file's contents, as engine='h5netcdf' takes them."""
    image = written.read_bytes()
    got = _assert_same_from_objects(written, lambda p: wrap(image))
    assert got["short"].shape == (5,)
    _assert_same_from_objects(written, lambda p: wrap(image), group="inner")
    if wrap is memoryview:  # (xarray itself fails on bytes with chunks=, any engine)
        ref = _open(written, "h5netcdf")
        xr.testing.assert_identical(pickle.loads(pickle.dumps(
            _open(wrap(image), ENGINE, chunks={}))).load(), ref.load())


def test_phony_dims_none_means_access_as_in_h5netcdf(tmp_path):
    """xarray's h5netcdf engine reads phony_dims=None as 'access' (it no longer raises)."""
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f["a"] = np.arange(12.0).reshape(3, 4)
        f.create_group("g")["c"] = np.ones((4, 4), "i2")
    _assert_same(path, phony_dims=None)
    _assert_same(path, phony_dims=None, group="g")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = xr.open_datatree(path, engine="h5netcdf", phony_dims=None)
        got = xr.open_datatree(path, engine=ENGINE, phony_dims=None)
    assert got.identical(ref)


def test_group_naming_a_dataset_is_not_found(written):
    """group= naming a variable: OSError 'group not found', as h5netcdf and netCDF4."""
    for engine in ("h5netcdf", ENGINE):
        with pytest.raises(OSError, match="group not found"):
            _open(written, engine, group="temp")
        with pytest.raises(OSError, match="group not found"):
            xr.open_datatree(written, engine=engine, group="temp")


def test_variable_behind_an_external_link_reads(tmp_path, monkeypatch):
    """A variable that is an external link to a dataset is read from the link's target
    file (h5netcdf reads it), in this process, after pickling, and from a file object."""
    import io

    (tmp_path / "sub").mkdir()
    with h5py.File(tmp_path / "sub" / "target.h5", "w") as f:
        f.create_dataset("g/d", data=np.arange(50.0).reshape(10, 5), chunks=(3, 5))
    path = tmp_path / "source.h5"
    with h5py.File(path, "w") as f:
        f["ext"] = h5py.ExternalLink("sub/target.h5", "/g/d")
        f["own"] = np.arange(4)
    ref = _open(path, "h5netcdf").load()
    got = _open(path, ENGINE)
    xr.testing.assert_identical(got.load(), ref)
    dask_backed = _open(path, ENGINE, chunks={})
    xr.testing.assert_identical(pickle.loads(pickle.dumps(dask_backed)).load(), ref)
    assert float(_open(path, ENGINE, group=None)["ext"][::-2, 1:3].sum()) == float(
        ref["ext"][::-2, 1:3].sum())
    monkeypatch.chdir(tmp_path)  # a file object's links are found from the working folder
    from_object = _open(io.BytesIO(path.read_bytes()), ENGINE, chunks={})
    xr.testing.assert_identical(pickle.loads(pickle.dumps(from_object)).load(), ref)
