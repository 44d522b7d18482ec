"""Regressions found by running the same code against h5py.File and h5turbo.File (a
third hunt, after test_h5py_hunt.py and test_h5py_hunt2.py): writes refused with the
class h5py raises on a file opened read-only (deleting, pop, resize, dimension scales,
...), astype of a null dataspace, iter_chunks of empty selections, and what objects of a
closed file still answer."""

from __future__ import annotations

import builtins
import subprocess
import sys
from collections.abc import MutableMapping
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo
from support.h5compare import outcome as _outcome


@pytest.fixture(scope="module")
def h5file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hunt3") / "hunt3.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(10)
        f["x"].attrs["a"] = 1
        f.attrs["top"] = 2
        f.create_dataset("c", data=np.arange(40).reshape(8, 5), chunks=(3, 2), maxshape=(None, 5))
        f.create_dataset("z", shape=(0, 5), chunks=(2, 2), maxshape=(None, 5), dtype="i4")
        f.create_dataset("null", data=h5py.Empty("f4"))
        f.create_group("g")
        f["scale"] = np.arange(8)
        f["scale"].make_scale("s")
        f["c"].dims[0].attach_scale(f["scale"])
        f["c"].dims[1].label = "columns"
    return path


def _assert_refused_alike(h, f, call, says: str, kind=h5turbo.Error):
    """``call`` raises on the h5py file; on the h5turbo one it raises an instance of the
    same class (so an `except` written for h5py catches it), a ``kind`` whose message
    says ``says``."""
    _, theirs = _outcome(lambda: call(h))
    assert theirs is not None, "h5py did not raise"
    _, ours = _outcome(lambda: call(f))
    assert isinstance(ours, type(theirs)), (ours, theirs)
    assert isinstance(ours, kind), ours
    assert says in str(ours), ours


def _both(path: Path):
    return h5py.File(path, "r"), h5turbo.File(path, "r")


def _lib(f):
    """The module whose File ``f`` is: its link classes go with it."""
    return h5py if isinstance(f, h5py.Group) else h5turbo


# ---------------------------------------------------------------------- writes refused

WRITES = {
    "del group[name]": lambda f: f.__delitem__("x"),
    "del group[missing]": lambda f: f.__delitem__("nope"),
    "group.pop": lambda f: f.pop("x"),
    "group.popitem": lambda f: f.popitem(),
    "group.update": lambda f: f.update({"y": 1}),
    "group.setdefault": lambda f: f.setdefault("y", 1),
    "group.move": lambda f: f.move("x", "y"),
    "group.create_dataset_like": lambda f: f.create_dataset_like("y", f["x"]),
    "group[name] = dtype": lambda f: f.__setitem__("T", np.dtype("i4")),
    "group[name] = ExternalLink": lambda f: f.__setitem__("e", _lib(f).ExternalLink("o.h5", "/x")),
    "group[name] = SoftLink": lambda f: f.__setitem__("s", _lib(f).SoftLink("/x")),
    "group[name] = object": lambda f: f.__setitem__("h", f["x"]),
    "del attrs[name]": lambda f: f["x"].attrs.__delitem__("a"),
    "del attrs[missing]": lambda f: f["x"].attrs.__delitem__("zz"),
    "attrs.pop": lambda f: f["x"].attrs.pop("a"),
    "attrs.pop with a default": lambda f: f["x"].attrs.pop("a", 5),
    "attrs.popitem": lambda f: f["x"].attrs.popitem(),
    "attrs.update": lambda f: f["x"].attrs.update({"b": 1}),
    "attrs.setdefault": lambda f: f["x"].attrs.setdefault("b", 1),
    "attrs[existing] = value": lambda f: f["x"].attrs.__setitem__("a", 3),
    "attrs.create(existing)": lambda f: f["x"].attrs.create("a", 3),
    "ds.resize": lambda f: f["c"].resize((10, 5)),
    "ds.resize(axis=)": lambda f: f["c"].resize(10, axis=0),
    "ds.write_direct": lambda f: f["x"].write_direct(np.arange(10)),
    "ds.make_scale": lambda f: f["x"].make_scale("n"),
    "ds.make_scale of a scale": lambda f: f["scale"].make_scale("n"),
    "dims[0].attach_scale": lambda f: f["c"].dims[0].attach_scale(f["scale"]),
    "dims[0].detach_scale": lambda f: f["c"].dims[0].detach_scale(f["scale"]),
    "dims[1].label = ...": lambda f: setattr(f["c"].dims[1], "label", "z"),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_writes_are_refused_with_h5pys_class(h5file, write):
    # a TypeError or AttributeError before ('no attribute resize', 'does not support
    # item deletion'): code catching what h5py raises on a read-only file missed it
    h, f = _both(h5file)
    _assert_refused_alike(h, f, write, "read-only", h5turbo.ReadOnlyError)


def test_copy_is_refused_with_h5pys_class(h5file):
    # h5py's copy inside a read-only file leaves libhdf5 writing on close: asked in a
    # process of its own
    probe = ("import sys, h5py\nf = h5py.File(sys.argv[1], 'r')\n"
             "try:\n    f.copy('x', 'y')\nexcept Exception as e:\n    print(type(e).__name__)\n")
    done = subprocess.run([sys.executable, "-c", probe, str(h5file)], capture_output=True, text=True)
    theirs = getattr(builtins, done.stdout.split()[0])
    with h5turbo.File(h5file) as f, pytest.raises(theirs) as refused:
        f.copy("x", "y")
    assert isinstance(refused.value, h5turbo.ReadOnlyError)


ARGUMENT_ERRORS = {
    "resize of a contiguous dataset": lambda f: f["x"].resize((12,)),
    "resize of a null dataset": lambda f: f["null"].resize((1,)),
    "resize with a bad axis": lambda f: f["c"].resize(10, axis=5),
    "resize to another rank": lambda f: f["c"].resize((10,)),
    "resize(axis=) with a tuple": lambda f: f["c"].resize((10, 5), axis=0),
}


SELECTION_ERRORS = {
    "an index out of range": lambda f: f["x"].__setitem__(100, 1),
    "a negative index out of range": lambda f: f["c"].__setitem__((0, -9), 1),
    "more indices than axes": lambda f: f["x"].__setitem__((0, 0), 1),
}


@pytest.mark.parametrize("call", SELECTION_ERRORS.values(), ids=SELECTION_ERRORS.keys())
def test_writing_checks_the_selection_first_as_h5py(h5file, call):
    # h5py checks where it would write before it tries to: not a ReadOnlyError
    h, f = _both(h5file)
    _, theirs = _outcome(lambda: call(h))
    _, ours = _outcome(lambda: call(f))
    assert isinstance(ours, type(theirs)) and not isinstance(ours, h5turbo.ReadOnlyError), (ours, theirs)


@pytest.mark.parametrize("call", ARGUMENT_ERRORS.values(), ids=ARGUMENT_ERRORS.keys())
def test_resize_checks_its_arguments_as_h5py(h5file, call):
    h, f = _both(h5file)
    _, theirs = _outcome(lambda: call(h))
    _, ours = _outcome(lambda: call(f))
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


def test_clear_and_pop_of_a_missing_name_behave_as_h5py(h5file):
    # MutableMapping's: clear() ends quietly at the first refused delete (as h5py's on
    # a read-only file), pop(missing, default) gives the default
    h, f = _both(h5file)
    for file in (h, f):
        assert file["x"].attrs.clear() is None and file["g"].clear() is None
        assert file["x"].attrs.pop("zz", 7) == 7 and file.pop("zz", 7) == 7
    assert dict(f["x"].attrs) == dict(h["x"].attrs) and list(f) == list(h)
    for ours, theirs in ((f, h), (f.attrs, h.attrs)):
        assert isinstance(ours, MutableMapping) and isinstance(theirs, MutableMapping)


# ---------------------------------------------------------------------- null astype


@pytest.mark.parametrize("dtype", ["i8", "f8", "S3", "U3"])
@pytest.mark.parametrize("index", [(), Ellipsis])
def test_astype_of_a_null_dataset_gives_the_stored_type(h5file, dtype, index):
    # h5py reads a null dataspace before converting anything (so 'U3', which it cannot
    # convert to, is no error either)
    h, f = _both(h5file)
    theirs = h["null"].astype(dtype)[index]
    ours = f["null"].astype(dtype)[index]
    assert isinstance(ours, h5turbo.Empty) and ours.dtype == theirs.dtype == np.dtype("f4")


@pytest.mark.parametrize("index", [(), Ellipsis, (Ellipsis,), (Ellipsis, Ellipsis), (slice(None),), 0],
                         ids=["()", "...", "(...,)", "(..., ...)", "(:,)", "0"])
def test_a_null_dataset_indexed_as_h5py(h5file, index):
    # ds[(Ellipsis,)] (how a tuple-building caller writes ds[...]) was "cannot be sliced"
    h, f = _both(h5file)
    theirs, their_error = _outcome(lambda: h["null"][index])
    ours, our_error = _outcome(lambda: f["null"][index])
    if their_error is not None:
        assert isinstance(our_error, type(their_error)), (our_error, their_error)
        return
    assert isinstance(ours, h5turbo.Empty) and ours.dtype == theirs.dtype


# ---------------------------------------------------------------------- iter_chunks


@pytest.mark.parametrize("name, sel", [
    ("c", np.s_[0:0, :]), ("c", np.s_[0:0, 0:0]), ("c", np.s_[:, 0:0]), ("c", np.s_[0, 0:0]),
    ("c", np.s_[3:0, :]), ("c", np.s_[3:0:2, 0]), ("c", np.s_[0:0:2, :]),
    ("z", None),  # an axis of length 0: nothing to iterate, a ValueError in h5py
])
def test_iter_chunks_of_empty_selections_as_h5py(h5file, name, sel):
    # h5py takes a slice's `stop or length`: a stop of 0 means the whole axis
    h, f = _both(h5file)
    theirs, their_exc = _outcome(lambda: list(h[name].iter_chunks(sel)))
    ours, our_exc = _outcome(lambda: list(f[name].iter_chunks(sel)))
    assert type(our_exc) is type(their_exc) and ours == theirs


# ---------------------------------------------------------------------- closed files

CLOSED_FILE = ["filename", "mode", "driver", "libver", "userblock_size", "meta_block_size",
               "swmr_mode", "parent", "ref", "attrs"]


@pytest.mark.parametrize("prop", CLOSED_FILE)
def test_file_properties_of_a_closed_file_raise_as_h5py(h5file, prop):
    h, f = _both(h5file)
    h.close()
    f.close()
    _assert_refused_alike(h, f, lambda file: getattr(file, prop), "closed", h5turbo.ClosedError)


CLOSED_CALLS = {
    "ds.ndim": lambda f, o: o["c"].ndim,
    "ds.size": lambda f, o: o["c"].size,
    "ds.nbytes": lambda f, o: o["c"].nbytes,
    "len(ds.dims)": lambda f, o: len(o["c"].dims),
    "ds.dims[0]": lambda f, o: o["c"].dims[0],
    "null[()]": lambda f, o: o["null"][()],
    "ds.parent": lambda f, o: o["c"].parent,
    "ds.ref": lambda f, o: o["c"].ref,
    "ds.regionref[...]": lambda f, o: o["c"].regionref[0:2],
    "ds.flush()": lambda f, o: o["c"].flush(),
    "file.flush()": lambda f, o: f.flush(),
    "file[name]": lambda f, o: f["x"],
    "group[name]": lambda f, o: o["g"]["x"],
    "reversed(file)": lambda f, o: list(reversed(f)),
    "attrs[name]": lambda f, o: o["xattrs"]["a"],
    "del file[name]": lambda f, o: f.__delitem__("x"),
    "file[name] = value": lambda f, o: f.__setitem__("y", 1),
    "attrs[name] = value": lambda f, o: o["xattrs"].__setitem__("a", 1),
    "del attrs[name]": lambda f, o: o["xattrs"].__delitem__("a"),
    "ds.resize": lambda f, o: o["c"].resize((10, 5)),
    "ds.make_scale": lambda f, o: o["x"].make_scale("n"),
    "dims[0].attach_scale": lambda f, o: o["dim0"].attach_scale(o["scale"]),
    "require_group(existing)": lambda f, o: f.require_group("g"),
}


def _opened(file) -> dict:
    """Objects reached while the file was open, as code keeps them, their metadata
    asked (h5turbo answered what it had read once the file was closed)."""
    kept = {"c": file["c"], "null": file["null"], "g": file["g"], "x": file["x"],
            "scale": file["scale"], "xattrs": file["x"].attrs, "dim0": file["c"].dims[0]}
    c = kept["c"]
    null = kept["null"]
    assert (c.shape, c.dtype, c.chunks, null.shape, null.dtype) == ((8, 5), "i8", (3, 2), None, "f4")
    return kept


@pytest.mark.parametrize("call", CLOSED_CALLS.values(), ids=CLOSED_CALLS.keys())
def test_objects_of_a_closed_file_raise_as_h5py(h5file, call):
    h, f = _both(h5file)
    theirs, ours = _opened(h), _opened(f)
    h.close()
    f.close()
    _assert_refused_alike(h, f, lambda file: call(file, theirs if file is h else ours), "closed",
                          h5turbo.ClosedError)


def test_a_closed_dataset_keeps_the_shape_it_gave_as_h5py(h5file):
    # h5py keeps shape (and size) of a read-only file's dataset once asked, also after
    # close, but not its rank: h5turbo answered both from what it had read
    h, f = _both(h5file)
    h_kept, f_kept = (h["c"], h["x"]), (f["c"], f["x"])
    for ds in (*h_kept, *f_kept):
        ds.shape
    h_kept[1].size, f_kept[1].size
    h.close()
    f.close()
    for (theirs_c, theirs_x), (ours_c, ours_x) in [(h_kept, f_kept)]:
        assert ours_c.shape == theirs_c.shape and len(ours_c) == len(theirs_c)
        assert ours_x.size == theirs_x.size
        for call in (lambda ds: ds.ndim, lambda ds: ds.size):
            _assert_refused_alike(theirs_c, ours_c, call, "closed", h5turbo.ClosedError)


def test_get_of_a_closed_file_gives_the_default_as_h5py(h5file):
    # a lookup in a closed file is a KeyError in h5py, which get() turns into the default
    h, f = _both(h5file)
    h_attrs, f_attrs = h["x"].attrs, f["x"].attrs
    h.close()
    f.close()
    assert f.get("x", 5) == h.get("x", 5) == 5
    assert f_attrs.get("a", 5) == h_attrs.get("a", 5) == 5
