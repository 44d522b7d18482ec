"""Fixed differences from h5py found by exploring the read API (2026-12-07): files named
relatively and read after the program changed folder, external links through files
that are symbolic links, paths ending in '.', soft links across files, axis numbers,
chunk offsets of the wrong rank, named types of a closed file. Each against h5py."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

import h5turbo


def test_virtual_sources_named_relatively_are_found_after_a_change_of_folder(tmp_path, monkeypatch):
    # read after os.chdir, the sources were looked for from the new folder: fill values,
    # or another folder's file of the same name (a decoy here), without an error
    base, decoy = tmp_path / "base", tmp_path / "decoy"
    for folder, scale in ((base, 1), (decoy, 100)):
        (folder / "src").mkdir(parents=True)
        with h5py.File(folder / "src" / "s.h5", "w") as f:
            f["d"] = np.arange(4) * scale
    monkeypatch.chdir(base)
    layout = h5py.VirtualLayout(shape=(4,), dtype="i8")
    layout[:] = h5py.VirtualSource("src/s.h5", "d", shape=(4,))
    with h5py.File("v.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1)
    for elsewhere in (tmp_path, decoy):
        for module in (h5py, h5turbo):
            monkeypatch.chdir(base)
            with module.File("v.h5", "r") as f:
                monkeypatch.chdir(elsewhere)
                assert f["v"][()].tolist() == [0, 1, 2, 3], (module.__name__, elsewhere)


def test_external_links_named_relatively_are_found_after_a_change_of_folder(tmp_path, monkeypatch):
    with h5py.File(tmp_path / "target.h5", "w") as f:
        f["x"] = np.arange(3)
    with h5py.File(tmp_path / "main.h5", "w") as f:
        f["ext"] = h5py.ExternalLink("target.h5", "/x")
    monkeypatch.chdir(tmp_path)
    with h5py.File("main.h5") as ref, h5turbo.File("main.h5") as ours:
        monkeypatch.chdir("/")
        assert ours["ext"][()].tolist() == ref["ext"][()].tolist() == [0, 1, 2]
        assert ours["ext"].file.filename == ref["ext"].file.filename == str(tmp_path / "target.h5")


def test_external_links_through_files_that_are_symbolic_links_as_h5py(tmp_path, monkeypatch):
    # as git-annex and DataLad keep files: data/b.h5 -> store/k1/b.h5, whose link to
    # c.h5 means data/c.h5 (next to the name it was opened by), not store/k1/c.h5
    (tmp_path / "store" / "k1").mkdir(parents=True)
    (tmp_path / "store" / "k2").mkdir()
    (tmp_path / "data").mkdir()
    with h5py.File(tmp_path / "store" / "k2" / "c.h5", "w") as f:
        f["x"] = np.arange(3)
    with h5py.File(tmp_path / "store" / "k1" / "b.h5", "w") as f:
        f["to_c"] = h5py.ExternalLink("c.h5", "/x")
    os.symlink("../store/k2/c.h5", tmp_path / "data" / "c.h5")
    os.symlink("../store/k1/b.h5", tmp_path / "data" / "b.h5")
    with h5py.File(tmp_path / "data" / "a.h5", "w") as f:
        f["to_b"] = h5py.ExternalLink("b.h5", "/to_c")
        f["one_hop"] = h5py.ExternalLink("b.h5", "/")
    monkeypatch.chdir("/")
    with h5py.File(tmp_path / "data" / "a.h5") as ref, h5turbo.File(tmp_path / "data" / "a.h5") as ours:
        assert ours["to_b"][()].tolist() == ref["to_b"][()].tolist() == [0, 1, 2]
        assert ours["to_b"].file.filename == ref["to_b"].file.filename
        assert ours["one_hop"].file.filename == ref["one_hop"].file.filename == str(tmp_path / "data" / "b.h5")


def test_a_path_going_on_past_a_dataset_with_a_dot_is_no_link_as_in_h5py(tmp_path):
    path = tmp_path / "dot.h5"
    with h5py.File(path, "w") as f:
        f["a"] = np.arange(3)
        f["s"] = h5py.SoftLink("/a")
        f.create_group("g")
    with h5py.File(path) as ref, h5turbo.File(path) as ours:
        for name in ("a/.", "s/.", "g/.", ".", "g/./"):
            assert (name in ours) == (name in ref), name
            got = ours.get(name, "none", getclass=True)
            want = ref.get(name, "none", getclass=True)
            assert (got == "none") == (want == "none"), name
            if name in ref:  # the group itself, reached by no link: h5py's RuntimeError
                with pytest.raises(RuntimeError):
                    ours.get(name, "none", getlink=True)
            else:  # was: a KeyError out of get, instead of the default
                assert ours.get(name, "none", getlink=True) == ref.get(name, "none", getlink=True) == "none"


def test_a_soft_link_across_an_external_link_names_what_it_reaches_by_its_path(tmp_path):
    with h5py.File(tmp_path / "t.h5", "w") as t:
        t.create_group("g")["x"] = np.arange(2)
    with h5py.File(tmp_path / "m.h5", "w") as f:
        f["ext"] = h5py.ExternalLink("t.h5", "/")
        f["soft"] = h5py.SoftLink("/ext/g")
    with h5py.File(tmp_path / "m.h5") as ref, h5turbo.File(tmp_path / "m.h5") as ours:
        for name in ("soft", "soft/x", "ext/g", "ext/g/x"):
            assert ours[name].name == ref[name].name, name
        assert ours["soft/x"][()].tolist() == [0, 1]


def test_an_axis_given_as_a_boolean_is_taken_as_h5py_takes_it(tmp_path):
    path = tmp_path / "dims.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("a", data=np.zeros((3, 4)))
        d.dims[0].label, d.dims[1].label = "rows", "cols"
    with h5py.File(path) as ref, h5turbo.File(path) as ours:
        for axis in (True, np.True_, False, np.int64(1)):
            assert ours["a"].dims[axis].label == ref["a"].dims[axis].label, axis


def test_chunk_offsets_of_the_wrong_rank_are_a_type_error_as_in_h5py(tmp_path):
    path = tmp_path / "chunks.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=np.arange(20).reshape(4, 5), chunks=(2, 5))
        f["flat"] = np.arange(20).reshape(4, 5)
    with h5py.File(path) as ref, h5turbo.File(path) as ours:
        for name in ("c", "flat"):
            with pytest.raises(TypeError, match="rank"):
                ref[name].id.read_direct_chunk((0,))
            with pytest.raises(TypeError, match="rank"):
                ours[name].id.read_direct_chunk((0,))


def test_a_named_type_of_a_closed_file_is_a_type_error_as_in_h5py(tmp_path):
    path = tmp_path / "types.h5"
    with h5py.File(path, "w") as f:
        f["t"] = np.dtype("<i4")
    for module in (h5py, h5turbo):
        f = module.File(path)
        named = f["t"]
        f.close()
        with pytest.raises(TypeError, match="Not a datatype"):
            named.dtype
    with pytest.raises(h5turbo.ClosedError):  # and h5turbo's error of a closed file
        named.dtype
