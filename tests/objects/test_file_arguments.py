"""h5turbo.File takes what h5py's read-only File takes: modes, h5py's keyword
arguments (checked as h5py checks them, reported by the same properties), and the
external-link lookup (one lookup, the native one: HDF5_EXT_PREFIX, ${ORIGIN}, next to
the file, the working folder), each against h5py on files written here."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

LIBVERS = ["earliest", "latest"]


@pytest.fixture(params=LIBVERS)
def h5file(request, tmp_path) -> Path:
    path = tmp_path / f"args_{request.param}.h5"
    with h5py.File(path, "w", libver=request.param) as f:
        f.create_dataset("x", data=np.arange(60.0).reshape(6, 10), chunks=(2, 5), compression="gzip")
        f["g/y"] = np.arange(3, dtype="<i2")
    return path


def assert_same_file(ours: h5turbo.File, theirs: h5py.File) -> None:
    for prop in ("mode", "driver", "libver", "swmr_mode", "userblock_size", "name"):
        assert getattr(ours, prop) == getattr(theirs, prop), prop
    assert list(ours.keys()) == list(theirs.keys())
    assert np.array_equal(ours["x"][()], theirs["x"][()])


# every keyword argument of h5py's File with a value read-only code passes
READ_KWARGS = [
    {}, {"mode": None}, {"swmr": True}, {"libver": "earliest"}, {"libver": "latest"},
    {"libver": ("v108", "v110")}, {"libver": ("earliest", "v114")}, {"driver": "sec2"},
    {"driver": "stdio"}, {"driver": "core"}, {"driver": "core", "backing_store": False, "block_size": 1 << 16},
    {"rdcc_nbytes": 64 << 20, "rdcc_w0": 1.0, "rdcc_nslots": 10007}, {"locking": False},
    {"locking": "best-effort"}, {"track_order": True}, {"track_times": True}, {"fs_persist": False},
    {"fs_threshold": 1}, {"fs_page_size": 4096}, {"page_buf_size": None}, {"min_meta_keep": 0, "min_raw_keep": 0},
    {"alignment_threshold": 1, "alignment_interval": 1}, {"meta_block_size": 4096},
]


@pytest.mark.parametrize("kwargs", READ_KWARGS, ids=lambda kw: ",".join(kw) or "none")
def test_h5py_keyword_arguments_are_accepted_and_reported_alike(h5file, kwargs):
    h5py_kwargs = dict(kwargs)
    if h5py_kwargs.get("mode", "r") is None:
        h5py_kwargs["mode"] = "r"  # h5py refuses None; h5turbo takes it as 'r'
    with h5turbo.File(h5file, **kwargs) as ours, h5py.File(h5file, **{"mode": "r", **h5py_kwargs}) as theirs:
        assert_same_file(ours, theirs)
        assert ours.filename == theirs.filename == str(h5file)


@pytest.mark.parametrize("locking", ["bogus", "yes", 2])
def test_locking_values_h5py_refuses_are_refused(h5file, locking):
    for library in (h5py, h5turbo):
        with pytest.raises(ValueError, match="Unsupported locking value"):
            library.File(h5file, "r", locking=locking)


@pytest.mark.parametrize("mode", ["r+", "w", "w-", "x", "a"])
def test_write_modes_raise_a_read_only_error_pointing_to_write(h5file, mode):
    before = h5file.read_bytes()
    with pytest.raises(h5turbo.ReadOnlyError, match="h5turbo.write") as info:
        h5turbo.File(h5file, mode)
    assert isinstance(info.value, h5turbo.Error) and isinstance(info.value, ValueError)
    assert str(h5file) in str(info.value)  # names the file, as every error does
    assert h5file.read_bytes() == before  # nothing was written or truncated


@pytest.mark.parametrize("kwargs,error", [
    ({"mode": "q"}, ValueError),
    ({"driver": "nope"}, ValueError),
    ({"foo": 1}, TypeError),
    ({"driver": "core", "foo": 1}, TypeError),
    ({"userblock_size": 512}, ValueError),
    ({"fs_strategy": "page"}, ValueError),
])
def test_bad_arguments_fail_as_in_h5py(h5file, kwargs, error):
    kwargs = {"mode": "r", **kwargs}
    with pytest.raises(error):
        h5py.File(h5file, **kwargs)
    with pytest.raises(error):
        h5turbo.File(h5file, **kwargs)


@pytest.mark.parametrize("driver", ["family", "split", "mpio"])
def test_drivers_for_other_kinds_of_files_are_unsupported(h5file, driver):
    with pytest.raises(h5turbo.UnsupportedError, match=driver):
        h5turbo.File(h5file, driver=driver)


def test_unknown_libver_is_a_value_error(h5file):
    with pytest.raises(ValueError, match="v999"):
        h5turbo.File(h5file, libver="v999")


# ---------------------------------------------------------------------- external links


@pytest.fixture
def linked(tmp_path, monkeypatch):
    """main.h5 in a/, with a link to 'target.h5' that is in b/ (not next to it)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with h5py.File(tmp_path / "b" / "target.h5", "w") as f:
        f["data"] = np.arange(7, dtype="<i8")
    with h5py.File(tmp_path / "a" / "main.h5", "w") as f:
        f["ext"] = h5py.ExternalLink("target.h5", "/data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HDF5_EXT_PREFIX", raising=False)
    return tmp_path


def _follow_both(main: Path):
    with h5py.File(main, "r") as h:
        try:
            theirs = h["ext"][()]
        except KeyError:
            theirs = KeyError
    with h5turbo.File(main) as f:
        try:
            ours = f["ext"][()]
        except KeyError:
            ours = KeyError
    return ours, theirs


def test_external_link_target_lookup_like_libhdf5(linked, monkeypatch):
    main = linked / "a" / "main.h5"
    ours, theirs = _follow_both(main)
    assert ours is theirs is KeyError  # nowhere libhdf5 looks
    monkeypatch.setenv("HDF5_EXT_PREFIX", str(linked / "b"))
    ours, theirs = _follow_both(main)
    assert np.array_equal(ours, theirs) and np.array_equal(ours, np.arange(7))
    # ${ORIGIN} (the linking file's folder) is expanded as for HDF5_VDS_PREFIX; libhdf5
    # 2.0 does that for VDS sources only: h5turbo finds more here, never less
    monkeypatch.setenv("HDF5_EXT_PREFIX", "${ORIGIN}/../b")
    ours, theirs = _follow_both(main)
    assert np.array_equal(ours, np.arange(7)) and theirs is KeyError
    monkeypatch.delenv("HDF5_EXT_PREFIX")
    monkeypatch.chdir(linked / "b")  # the working folder is looked in last
    ours, theirs = _follow_both(main)
    assert np.array_equal(ours, theirs) and np.array_equal(ours, np.arange(7))


def test_external_link_lookup_is_the_native_one(linked, monkeypatch):
    monkeypatch.setenv("HDF5_EXT_PREFIX", str(linked / "b"))
    with h5turbo.File(linked / "a" / "main.h5") as f:
        found = f._native_file.external_link_file("target.h5")
        assert Path(found) == linked / "b" / "target.h5"
        with pytest.raises(KeyError, match="missing.h5"):
            f._native_file.external_link_file("missing.h5")
        assert f["ext"].file.filename == os.path.realpath(found)
