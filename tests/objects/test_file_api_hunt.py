"""Differential hunt of h5turbo.File as an h5py user opens and uses it, against
h5py.File (mode 'r') on files written here: the kinds of path and of file (user
block, prepended bytes, trailing bytes, truncated, empty, not HDF5, a folder), the
errors, the File properties, equality and hashing of handles, the context manager,
close/flush, two handles at once, and the root-group calls (visit, get, ``in``).
Not repeated here: what test_file_arguments.py, test_fileobj*.py, test_h5py_compat.py
and test_h5py_hunt3.py (closed files) already compare."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("fileapi")
    with h5py.File(d / "a.h5", "w") as f:
        f["x"] = np.arange(5)
        f.create_group("g/h")
        f.attrs["a"] = 1
    data = (d / "a.h5").read_bytes()
    for ub in (512, 1024, 4096):
        with h5py.File(d / f"ub{ub}.h5", "w", userblock_size=ub) as f:
            f["x"] = np.arange(5)
    for k in (512, 1024, 4096):  # bytes put before a file written without a user block
        (d / f"pre{k}.h5").write_bytes(b"\0" * k + data)
    (d / "pre100.h5").write_bytes(b"\0" * 100 + data)  # not where a superblock is looked for
    (d / "trailing.h5").write_bytes(data + b"junk" * 100)
    (d / "empty.h5").write_bytes(b"")
    (d / "text.h5").write_bytes(b"hello world\n" * 100)
    (d / "half.h5").write_bytes(data[: len(data) // 2])
    (d / "head.h5").write_bytes(data[:100])
    shutil.copyfile(d / "a.h5", d / "üñí 文件.h5")
    os.symlink("a.h5", d / "link.h5")
    os.link(d / "a.h5", d / "hard.h5")
    (d / "sub").mkdir()
    return d


def _summary(f) -> tuple:
    return (f.filename, f.name, f.mode, f.driver, f.userblock_size, f.libver, f.swmr_mode,
            f.meta_block_size, repr(f), list(f.keys()), f["x"][()].tolist(), bool(f), len(f))


OPENABLE = {
    "str": lambda d: str(d / "a.h5"),
    "Path": lambda d: d / "a.h5",
    "bytes": lambda d: os.fsencode(d / "a.h5"),
    "unicode str": lambda d: str(d / "üñí 文件.h5"),
    "unicode bytes": lambda d: os.fsencode(d / "üñí 文件.h5"),
    "symlink": lambda d: d / "link.h5",
    "hard link": lambda d: d / "hard.h5",
    "user block 512": lambda d: d / "ub512.h5",
    "user block 1024": lambda d: d / "ub1024.h5",
    "user block 4096": lambda d: d / "ub4096.h5",
    "512 bytes prepended": lambda d: d / "pre512.h5",
    "1024 bytes prepended": lambda d: d / "pre1024.h5",
    "4096 bytes prepended": lambda d: d / "pre4096.h5",
    "trailing bytes": lambda d: d / "trailing.h5",
}


@pytest.mark.parametrize("name", OPENABLE.values(), ids=OPENABLE.keys())
@pytest.mark.parametrize("driver", [None, "sec2", "stdio", "core"])
def test_files_that_open_are_opened_and_reported_alike(folder, name, driver):
    name = name(folder)
    with h5py.File(name, "r", driver=driver) as h, h5turbo.File(name, "r", driver=driver) as f:
        assert _summary(f) == _summary(h)
    assert h5turbo.is_hdf5(name) == h5py.is_hdf5(name) is True


@pytest.mark.parametrize("libver", ["earliest", "latest"])
@pytest.mark.parametrize("prepended", [512, 1536, 3584])
def test_bytes_put_before_a_file_with_a_user_block_as_h5py(tmp_path, libver, prepended):
    # the superblock is then found at 1024, 2048, 4096 while it records a base address 0:
    # libhdf5 takes the offset where it found it as the base
    src = tmp_path / "src.h5"
    with h5py.File(src, "w", userblock_size=512, libver=libver) as f:
        f["x"] = np.arange(5)
        f.create_dataset("c", data=np.arange(100), chunks=(10,))
        f["g/s"] = h5py.SoftLink("/x")
        f.attrs["a"] = "t"
    path = tmp_path / "moved.h5"
    path.write_bytes(b"\2" * prepended + src.read_bytes())

    def read(file):
        return (file.userblock_size, file["x"][()].tolist(), file["c"][()].tolist(),
                file["g/s"][()].tolist(), file.attrs["a"], list(file))

    with h5py.File(path, "r") as h:
        want = read(h)
    assert want[0] == 512 + prepended
    for name in (path, io.BytesIO(path.read_bytes())):
        with h5turbo.File(name) as f:
            assert read(f) == want


@pytest.mark.parametrize("change", ["remove", "replace", "rename"])
def test_a_file_removed_or_replaced_while_open_reads_as_h5py(tmp_path, change):
    results = []
    for library in (h5py, h5turbo):
        path = tmp_path / f"{library.__name__}.h5"
        with h5py.File(path, "w") as f:
            f["x"] = np.arange(5)
            f["y"] = np.arange(1000.0)
        other = tmp_path / "other.h5"
        with h5py.File(other, "w") as f:
            f["z"] = np.arange(3)
        file = library.File(path)
        if change == "remove":
            os.remove(path)
        elif change == "replace":
            os.replace(other, path)
        else:
            os.replace(path, other)
        results.append((file["x"][()].tolist(), float(file["y"][()].sum()), list(file), bool(file),
                        os.path.basename(file.filename).replace(library.__name__, "")))
        file.close()
    assert results[1] == results[0]


@pytest.mark.parametrize("relative", ["a.h5", "sub/../a.h5", "link.h5", b"a.h5"])
def test_relative_paths_are_reported_as_given(folder, monkeypatch, relative):
    monkeypatch.chdir(folder)
    with h5py.File(relative, "r") as h, h5turbo.File(relative) as f:
        assert (f.filename, repr(f)) == (h.filename, repr(h))


@pytest.mark.parametrize("relative", ["./a.h5", "sub//../a.h5", "{folder}/./a.h5", "{folder}//a.h5"])
def test_paths_with_dot_and_double_slash_are_reported_as_given(folder, monkeypatch, relative):
    monkeypatch.chdir(folder)
    relative = relative.format(folder=folder)
    with h5py.File(relative, "r") as h, h5turbo.File(relative) as f:
        assert h.filename == relative
        assert f.filename == h.filename


NOT_OPENABLE = {
    "folder": lambda d: d,
    "folder with slash": lambda d: str(d) + "/",
    "missing": lambda d: d / "nope.h5",
    "missing bytes": lambda d: os.fsencode(d / "nope.h5"),
    "missing folder": lambda d: d / "nope" / "a.h5",
    "file as folder": lambda d: str(d / "a.h5") + "/",
    "empty file": lambda d: d / "empty.h5",
    "text file": lambda d: d / "text.h5",
    "100 bytes prepended": lambda d: d / "pre100.h5",
    "truncated in half": lambda d: d / "half.h5",
    "first 100 bytes": lambda d: d / "head.h5",
    "empty name": lambda d: "",
    "/dev/null": lambda d: "/dev/null",
    "/dev/zero": lambda d: "/dev/zero",
}


@pytest.mark.parametrize("name", NOT_OPENABLE.values(), ids=NOT_OPENABLE.keys())
def test_files_that_do_not_open_raise_h5pys_class(folder, name):
    name = name(folder)
    with pytest.raises(OSError) as theirs:
        h5py.File(name, "r")
    with pytest.raises(OSError) as ours:
        h5turbo.File(name, "r")
    # an except clause written for h5py's class catches ours; errno as h5py's
    assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)
    if theirs.value.errno is not None:  # '': h5py's 'invalid file name' has none
        assert ours.value.errno == theirs.value.errno
    assert os.fsdecode(name) in str(ours.value)  # names the file
    assert h5turbo.is_hdf5(name) == h5py.is_hdf5(name)


def test_an_unreadable_file_raises_permission_error_as_h5py(folder, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads a file with mode 000")
    path = tmp_path / "locked.h5"
    path.write_bytes((folder / "a.h5").read_bytes())
    path.chmod(0)
    try:
        with pytest.raises(PermissionError) as theirs:
            h5py.File(path, "r")
        with pytest.raises(PermissionError) as ours:
            h5turbo.File(path, "r")
        assert ours.value.errno == theirs.value.errno
        assert h5turbo.is_hdf5(path) == h5py.is_hdf5(path)
    finally:
        path.chmod(0o600)


def test_a_file_truncated_in_its_data_fails_on_read_not_with_zeros(tmp_path):
    """Different from h5py on purpose: libhdf5 refuses the file at open (its end of
    file is before the superblock's); h5turbo opens it and refuses what it cannot read."""
    path = tmp_path / "big.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=np.arange(100000, dtype="<f8"))
        f["small"] = np.arange(3)
    with h5py.File(path, "r") as h:
        keys = list(h.keys())
    path.write_bytes(path.read_bytes()[:-1000])
    with pytest.raises(OSError, match="truncated"):
        h5py.File(path, "r")
    with h5turbo.File(path) as f:
        assert list(f.keys()) == keys
        for name, index in (("c", slice(-3, None)), ("c", slice(0, 3)), ("small", ())):
            with pytest.raises(OSError, match="beyond the end of the file"):
                f[name][index]


# ---------------------------------------------------------------------- modes


@pytest.mark.parametrize("mode", ["r+", "a", "w", "x", "w-"])
def test_write_modes_on_a_missing_file_create_nothing(tmp_path, mode):
    path = tmp_path / "new.h5"
    with pytest.raises(h5turbo.ReadOnlyError) as info:
        h5turbo.File(path, mode)
    assert isinstance(info.value, OSError) and str(path) in str(info.value)
    assert not path.exists()


@pytest.mark.parametrize("mode", ["R", "", "rb", 1, "read"])
def test_unknown_modes_are_value_errors_as_h5py(folder, mode):
    for library in (h5py, h5turbo):
        with pytest.raises(ValueError, match="Invalid mode"):
            library.File(folder / "a.h5", mode)


# ---------------------------------------------------------------------- keyword arguments


@pytest.mark.parametrize("kwargs", [
    {"libver": ("earliest", "v110")}, {"libver": ("v108", "v108")}, {"libver": ("v200", "latest")},
    {"libver": ("latest", "latest")}, {"libver": "v114"}, {"libver": ("v110", "v112")},
    {"swmr": "yes"}, {"swmr": 0}, {"locking": True}, {"locking": "true"}, {"locking": "false"},
    {"locking": 1}, {"locking": 0}, {"rdcc_nslots": 0}, {"fs_strategy": None}, {"fs_persist": True},
    {"fs_threshold": 5}, {"page_buf_size": 1}, {"track_order": False}, {"userblock_size": None},
    {"meta_block_size": 0}, {"meta_block_size": 4096.7}, {"meta_block_size": np.int64(4096)},
    {"alignment_threshold": 0}, {"driver": "core", "backing_store": True},
    {"mode": "r", "swmr": True, "locking": False},
], ids=repr)
def test_more_keyword_arguments_are_reported_alike(folder, kwargs):
    kwargs = {"mode": "r", **kwargs}
    with h5py.File(folder / "a.h5", **kwargs) as h, h5turbo.File(folder / "a.h5", **kwargs) as f:
        assert _summary(f) == _summary(h)
        assert type(f.meta_block_size) is type(h.meta_block_size)


@pytest.mark.parametrize("kwargs,error", [
    ({"libver": ("earliest",)}, ValueError), ({"libver": 5}, TypeError),
    ({"meta_block_size": "x"}, ValueError), ({"userblock_size": 0}, ValueError),
    ({"fs_strategy": "fsm"}, ValueError), ({"driver": ""}, ValueError), ({"driver": 5}, ValueError),
    ({"driver": "SEC2"}, ValueError), ({"driver": "stdio", "block_size": 3}, TypeError),
    ({"driver": "sec2", "backing_store": True}, TypeError), ({"driver": None, "fileobj": None}, TypeError),
])
def test_more_bad_arguments_fail_as_in_h5py(folder, kwargs, error):
    for library in (h5py, h5turbo):
        with pytest.raises(error):
            library.File(folder / "a.h5", "r", **kwargs)


@pytest.mark.parametrize("libver", [("latest", "earliest"), ("v112", "v110"), ("v110", "v108")])
def test_reversed_libver_bounds_are_a_value_error_as_h5py(folder, libver):
    with pytest.raises(ValueError, match="Invalid"):
        h5py.File(folder / "a.h5", "r", libver=libver)
    with pytest.raises(ValueError):
        h5turbo.File(folder / "a.h5", "r", libver=libver)


@pytest.mark.parametrize("size", [-1, -5, 2**64, 2**70])
def test_meta_block_size_out_of_range_is_an_overflow_error_as_h5py(folder, size):
    with pytest.raises(OverflowError):
        h5py.File(folder / "a.h5", "r", meta_block_size=size)
    with pytest.raises(OverflowError):
        h5turbo.File(folder / "a.h5", "r", meta_block_size=size)


# ---------------------------------------------------------------------- handles


def test_two_handles_on_one_file_are_equal_and_hash_alike(folder):
    for library in (h5py, h5turbo):
        a, b = library.File(folder / "a.h5"), library.File(str(folder / "a.h5"))
        c = library.File(folder / "link.h5")
        other = library.File(folder / "ub512.h5")
        assert a == b and hash(a) == hash(b) and a == c
        assert a["g"] == b["g"] and hash(a["g"]) == hash(b["g"])
        assert a != other
        assert a == a["/"] and a["/"] == a and hash(a) == hash(a["/"])
        assert a["g"].parent.parent == a and a["g"].file == b and a.parent == a
        for f in (a, b, c, other):
            f.close()
        assert a == b  # h5py compares closed handles by their (invalid) id: equal


def test_handles_through_a_hard_link_are_equal_as_h5py(folder):
    with h5py.File(folder / "a.h5") as h1, h5py.File(folder / "hard.h5") as h2:
        assert h1 == h2
    with h5turbo.File(folder / "a.h5") as f1, h5turbo.File(folder / "hard.h5") as f2:
        assert f1 == f2


def test_two_files_on_one_file_object_are_not_equal_as_h5py(folder):
    data = (folder / "a.h5").read_bytes()
    buf = io.BytesIO(data)
    assert h5py.File(buf) != h5py.File(buf)
    buf = io.BytesIO(data)
    assert h5turbo.File(buf) != h5turbo.File(buf)


def test_a_path_and_a_file_object_on_one_file_are_not_equal_as_h5py(folder):
    for library in (h5py, h5turbo):
        with open(folder / "a.h5", "rb") as fileobj:
            assert library.File(folder / "a.h5") != library.File(fileobj)


def test_context_manager_close_and_flush_as_h5py(folder):
    results = []
    for library in (h5py, h5turbo):
        f = library.File(folder / "a.h5")
        got = [f.flush()]
        with f as g:
            got += [g is f, bool(g), g.attrs["a"]]
        got += [bool(f), repr(f), f.name]
        with f as g:  # entering a closed file: allowed, as in h5py
            got.append(repr(g))
        f.close()
        f.close()  # twice: nothing
        got += [repr(f), "x" in f, f.get("x", 3)]
        results.append(got)
    assert results[1] == results[0]


def test_two_handles_at_once_close_independently(folder):
    for library in (h5py, h5turbo):
        a, b = library.File(folder / "a.h5"), library.File(folder / "a.h5")
        x = a["x"]
        b.close()
        assert bool(a) and not bool(b) and x[()].tolist() == list(range(5))
        a.close()


def test_file_attributes_as_h5py(folder):
    with h5py.File(folder / "a.h5") as h, h5turbo.File(folder / "a.h5") as f:
        assert dict(f.attrs) == dict(h.attrs) and list(f.attrs) == list(h.attrs)
        assert f[f.ref].name == h[h.ref].name == "/" and bool(f.ref) == bool(h.ref)
        assert type(f.parent).__name__ == type(h.parent).__name__ == "Group"
        assert f.get(f["x"].ref).name == h.get(h["x"].ref).name
        assert f["g"][f["x"].ref].name == h["g"][h["x"].ref].name
        assert str(f.keys()) == str(h.keys())


# ---------------------------------------------------------------------- root-group calls


NAMES = ["/g//h", "g/", "/g/", "./g", "/g/./h", ".", "/.", "//", "g/h/", b"g", b"/g/h", "/g/../x",
         "x/", "x/y", "", "ü", "/nope", "/nope/deeper", "x/deeper", "/g/h", "/"]


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_names_at_the_root_as_h5py(folder, name):
    with h5py.File(folder / "a.h5") as h, h5turbo.File(folder / "a.h5") as f:
        assert (name in f) == (name in h)
        assert getattr(f.get(name, "D"), "name", "D") == getattr(h.get(name, "D"), "name", "D")
        try:
            want = h[name].name
        except KeyError:
            want = KeyError
        try:
            got = f[name].name
        except KeyError:
            got = KeyError
        assert got == want
        if want is not KeyError:
            assert f.get(name, getclass=True).__name__ == h.get(name, getclass=True).__name__
        if want not in (KeyError, "/"):
            assert type(f.get(name, getlink=True)).__name__ == type(h.get(name, getlink=True)).__name__


@pytest.mark.parametrize("where,name", [("/", "/"), ("/", "."), ("/", "/."), ("/", "//"), ("g", ".")])
def test_getlink_of_the_group_itself_raises_as_h5py(folder, where, name):
    with h5py.File(folder / "a.h5") as h, h5turbo.File(folder / "a.h5") as f:
        with pytest.raises(RuntimeError, match="doesn't exist"):
            h[where].get(name, getlink=True)
        with pytest.raises((RuntimeError, KeyError)):
            f[where].get(name, getlink=True)


@pytest.mark.parametrize("name", [0, None, 1.5, Path("/g")], ids=repr)
def test_names_of_other_types_are_type_errors_as_h5py(folder, name):
    with h5py.File(folder / "a.h5") as h, h5turbo.File(folder / "a.h5") as f:
        for file in (h, f):
            with pytest.raises(TypeError):
                file[name]
            with pytest.raises(TypeError):
                name in file  # noqa: B015
            with pytest.raises(TypeError):
                file.get(name, "D")


def test_visit_at_the_root_as_h5py(folder):
    with h5py.File(folder / "a.h5") as h, h5turbo.File(folder / "a.h5") as f:
        results = []
        for file in (h, f):
            names, items = [], []
            file.visit(names.append)
            file.visititems(lambda n, o: items.append((n, type(o).__name__, o.name)))
            links = []
            file.visititems_links(lambda n, link: links.append((n, type(link).__name__)))
            results.append((names, items, links,
                            file.visit(lambda n: n if n == "g/h" else None),
                            file.visititems(lambda n, o: 7 if n == "x" else None),
                            file.visit(lambda n: 0), file.visit(lambda n: "")))
            with pytest.raises(ZeroDivisionError):
                file.visit(lambda n: 1 / 0)
            with pytest.raises(TypeError):
                file.visit(5)
        assert results[1] == results[0]


def test_is_hdf5_of_a_file_object_and_of_other_names_as_h5py(folder):
    for name in (folder / "a.h5", str(folder / "ub512.h5"), folder / "pre100.h5", folder / "sub"):
        assert h5turbo.is_hdf5(name) == h5py.is_hdf5(name)


OBJECTS = {
    "file": lambda f: f,
    "root group": lambda f: f["/"],
    "group": lambda f: f["g"],
    "dataset": lambda f: f["x"],
    "object reference": lambda f: f["x"].ref,
    "hard link": lambda f: f.get("x", getlink=True),
}


@pytest.mark.parametrize("obj", OBJECTS.values(), ids=OBJECTS.keys())
def test_comparing_with_other_types_as_h5py(folder, obj):
    with h5py.File(folder / "a.h5") as h, h5turbo.File(folder / "a.h5") as f:
        for other in (5, None, "x", object()):
            assert (obj(f) == other) == (obj(h) == other) is False
            assert (obj(f) != other) == (obj(h) != other) is True


@pytest.mark.parametrize("obj", OBJECTS.values(), ids=OBJECTS.keys())
def test_comparing_with_mock_any_defers_to_it_as_h5py(folder, obj):
    from unittest import mock

    with h5py.File(folder / "a.h5") as h, h5turbo.File(folder / "a.h5") as f:
        assert obj(h) == mock.ANY
        assert obj(f) == mock.ANY


@pytest.mark.parametrize("locking", [np.bool_(True), np.bool_(False), 1.0, 0.0, np.int64(1), np.int64(0)],
                         ids=repr)
def test_locking_values_equal_to_true_or_false_are_taken_as_h5py(folder, locking):
    h5py.File(folder / "a.h5", "r", locking=locking).close()
    h5turbo.File(folder / "a.h5", "r", locking=locking).close()


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_a_changed_superblock_byte_reads_as_h5py_or_is_an_exception(tmp_path, libver):
    """Each byte of the superblock changed (to 0xff, and its lowest bit flipped): where
    h5py reads the file h5turbo reads the same; where h5py refuses it, h5turbo either
    refuses it with an Exception (never a panic) or reads it (it checks fewer fields:
    free-space and symbol-table versions, B-tree K values, base and EOF addresses)."""
    src = tmp_path / "src.h5"
    with h5py.File(src, "w", libver=libver) as f:
        f["x"] = np.arange(5)
        f.create_group("g").attrs["a"] = 1
    data = src.read_bytes()
    path = tmp_path / "changed.h5"

    def read(library):
        try:
            with library.File(path, "r") as f:
                return (sorted(f.keys()), f["x"][()].tolist() if "x" in f else None, f.userblock_size)
        except Exception as exc:  # noqa: BLE001 - a BaseException (a panic) fails the test
            return type(exc)

    for i in range(96 if libver == "earliest" else 48):
        for value in {0xFF, data[i] ^ 1} - {data[i]}:
            changed = bytearray(data)
            changed[i] = value
            path.write_bytes(bytes(changed))
            theirs, ours = read(h5py), read(h5turbo)
            if not isinstance(theirs, type):
                assert ours == theirs, (i, value)


def test_objects_of_a_file_nobody_holds_keep_it_open_as_h5py(folder):
    import gc

    results = []
    for library in (h5py, h5turbo):
        x = library.File(folder / "a.h5")["x"]
        g = library.File(folder / "a.h5")["g"]
        attrs = library.File(folder / "a.h5").attrs
        gc.collect()
        results.append((x[()].tolist(), bool(x.file), x.file.filename, list(g), g.parent.name,
                        dict(attrs), x.parent["g/h"].name))
    assert results[1] == results[0]


def test_nested_with_on_one_file_as_h5py(folder):
    results = []
    for library in (h5py, h5turbo):
        f = library.File(folder / "a.h5")
        with f:
            with f as inner:
                got = [inner is f, bool(f)]
            got.append(bool(f))  # the inner exit closed it
        got.append(bool(f))
        results.append(got)
    assert results[1] == results[0]
