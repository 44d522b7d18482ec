"""Objects of a closed file, attribute names of the wrong type and file objects whose
read() gives something other than bytes, each against h5py on the same file:
`obj.file` after the close (h5py: ValueError; h5turbo answered), `hash()` first asked
after the close (h5py: TypeError; h5turbo answered), `3 in attrs` (h5py: TypeError;
h5turbo: False) and read() returning str (h5py: TypeError; h5turbo: FileObjectError,
an OSError only)."""

from __future__ import annotations

import io
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo

LIBRARIES = {"h5py": h5py.File, "h5turbo": h5turbo.File}
OBJECTS = ["/", "g", "ds", "t"]  # the File, a group, a dataset, a committed datatype


@pytest.fixture
def h5file(tmp_path) -> Path:
    path = tmp_path / "closed.h5"
    with h5py.File(path, "w") as f:
        f["ds"] = np.arange(10)
        f["ds"].attrs["b"] = 2
        f.create_group("g")
        f["t"] = np.dtype("<i4")
        f.attrs["a"] = 1
    return path


def outcome(call) -> tuple:
    """('value', result) or ('raises', exception) of call()."""
    try:
        return ("value", call())
    except Exception as exc:  # the exception is what is compared
        return ("raises", exc)


def builtin_class(exc: BaseException) -> type:
    """The builtin class of an exception h5py raised (what an `except` for it names)."""
    for kind in (TypeError, KeyError, RuntimeError, ValueError, OSError):
        if isinstance(exc, kind):
            return kind
    raise AssertionError(f"h5py raised {exc!r}")


def assert_same_outcome(ours: tuple, theirs: tuple) -> None:
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "raises":
        assert isinstance(ours[1], builtin_class(theirs[1])), (ours, theirs)
        assert isinstance(ours[1], h5turbo.Error), f"{ours[1]!r}: not an h5turbo error"


def opened(path: Path, name: str) -> dict:
    """{library: (File, the object at name)} of both libraries."""
    result = {}
    for library, opener in LIBRARIES.items():
        f = opener(path, "r")
        result[library] = (f, f[name])
    return result


# ---------------------------------------------------------------------- obj.file


@pytest.mark.parametrize("name", OBJECTS)
def test_file_of_an_object_of_a_closed_file_raises_as_h5py(h5file, name):
    both = opened(h5file, name)
    for f, obj in both.values():
        assert obj.file.filename == f.filename  # open: the File
        f.close()
    outcomes = {library: outcome(lambda: obj.file) for library, (_f, obj) in both.items()}
    assert outcomes["h5py"][0] == "raises"
    assert_same_outcome(outcomes["h5turbo"], outcomes["h5py"])


def test_dataset_id_valid_answers_after_close_as_h5py(h5file):
    """DatasetID reaches its File without `file`: `valid` is False after the close,
    whether the id was made before it or first asked after it."""
    made_before, made_after = opened(h5file, "ds"), opened(h5file, "ds")
    for (f, ds), (g, _ds) in zip(made_before.values(), made_after.values()):
        assert ds.id.valid
        f.close()
        g.close()
    for both in (made_before, made_after):
        assert bool(both["h5turbo"][1].id.valid) is bool(both["h5py"][1].id.valid) is False


# ---------------------------------------------------------------------- hash()


@pytest.mark.parametrize("name", OBJECTS)
def test_hash_after_close_as_h5py(h5file, name):
    """h5py keeps a hash made while the file was open (a set still finds the object);
    an object hashed first after the close raises TypeError."""
    hashed, fresh, kept = opened(h5file, name), opened(h5file, name), {}
    for library, (_f, obj) in hashed.items():
        kept[library] = (hash(obj), {obj})
    for (f, _obj), (g, _other) in zip(hashed.values(), fresh.values()):
        f.close()
        g.close()
    for library, (_f, obj) in hashed.items():
        value, members = kept[library]
        assert hash(obj) == value and obj in members, library
    outcomes = {library: outcome(lambda: hash(obj)) for library, (_f, obj) in fresh.items()}
    assert outcomes["h5py"][0] == "raises"
    assert_same_outcome(outcomes["h5turbo"], outcomes["h5py"])
    if name != "t":  # equality needs no hash: it answers after the close in both (h5py
        # compares committed datatypes by their type, which raises once closed)
        for library in LIBRARIES:
            assert fresh[library][1] == hashed[library][1]


# ---------------------------------------------------------------------- attribute names


NOT_NAMES = [3, None, 1.5]


def attrs_calls(attrs, key) -> dict:
    """What a user may do with an attribute name, each as a call."""
    def store():
        attrs[key] = 1

    def delete():
        del attrs[key]

    return {"in": lambda: key in attrs, "in keys": lambda: key in attrs.keys(),
            "in items": lambda: (key, 1) in attrs.items(), "get": lambda: attrs.get(key, 7),
            "getitem": lambda: attrs[key], "setitem": store, "create": lambda: attrs.create(key, 1),
            "modify": lambda: attrs.modify(key, 1), "delitem": delete, "pop": lambda: attrs.pop(key, 0)}


@pytest.mark.parametrize("closed", [False, True])
@pytest.mark.parametrize("key", NOT_NAMES)
def test_attribute_name_of_another_type_raises_type_error_as_h5py(h5file, key, closed):
    """h5py checks the name's type first, in every call, open or closed: TypeError."""
    both = opened(h5file, "ds")
    managers = {library: obj.attrs for library, (_f, obj) in both.items()}
    if closed:
        for f, _obj in both.values():
            f.close()
    theirs, ours = attrs_calls(managers["h5py"], key), attrs_calls(managers["h5turbo"], key)
    for call in theirs:
        expected, got = outcome(theirs[call]), outcome(ours[call])
        assert expected[0] == "raises" and isinstance(expected[1], TypeError), (call, expected)
        assert got[0] == "raises" and isinstance(got[1], TypeError), (call, got)
    if not closed:  # str and bytes names still answer by name
        for name in ("b", b"b", "nope", b"nope"):
            assert (name in managers["h5turbo"]) == (name in managers["h5py"]), name


# ---------------------------------------------------------------------- read() not bytes


class Reader:
    """A file-like object over the file's bytes; subclasses spoil what read() gives."""

    def __init__(self, data: bytes):
        self._buffer = io.BytesIO(data)

    def seek(self, *args):
        return self._buffer.seek(*args)

    def tell(self):
        return self._buffer.tell()

    def read(self, n=-1):
        return self._buffer.read(n)


class ReadGivesStr(Reader):
    def read(self, n=-1):
        return self._buffer.read(n).decode("latin-1")


class ReadGivesStrLater(Reader):
    """bytes for the superblock, str for what the root group's lookup reads."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self._reads = 0

    def read(self, n=-1):
        self._reads += 1
        data = self._buffer.read(n)
        return data if self._reads < 3 else data.decode("latin-1")


class ReadGivesNone(Reader):
    def read(self, n=-1):
        return None


class ReadGivesInt(Reader):
    def read(self, n=-1):
        return 5


class ReadintoGivesStr(Reader):
    """h5py fills the buffer with readinto and ignores what it returns: the file looks
    empty (OSError, 'file signature not found'); h5turbo: FileObjectError, an OSError."""

    def readinto(self, buffer):
        return "abc"


class ReadGivesStrWhenArmed(Reader):
    """bytes while the file is opened, str once armed (for the reads of a dataset)."""

    armed = False

    def read(self, n=-1):
        data = self._buffer.read(n)
        return data.decode("latin-1") if self.armed else data


def test_file_object_read_not_bytes_in_a_dataset_read_raises_what_h5py_raises(tmp_path):
    """Not only while the File opens the object: a str in any later read (here the
    data of a 1.6 MB dataset, which neither library has read yet) is h5py's TypeError."""
    path = tmp_path / "big.h5"
    with h5py.File(path, "w") as f:
        f["big"] = np.arange(200_000)
    outcomes = {}
    for library, opener in LIBRARIES.items():
        reader = ReadGivesStrWhenArmed(path.read_bytes())
        with opener(reader, "r") as f:
            dataset = f["big"]
            reader.armed = True
            outcomes[library] = outcome(lambda: dataset[()])
            reader.armed = False
    assert outcomes["h5py"][0] == "raises"
    assert_same_outcome(outcomes["h5turbo"], outcomes["h5py"])
    assert isinstance(outcomes["h5turbo"][1], h5turbo.FileObjectError)


@pytest.mark.parametrize("kind", [ReadGivesStr, ReadGivesStrLater, ReadGivesNone, ReadGivesInt,
                                  ReadintoGivesStr])
def test_file_object_read_not_bytes_raises_what_h5py_raises(h5file, kind):
    data = h5file.read_bytes()
    outcomes = {library: outcome(lambda: opener(kind(data), "r")["ds"][()])
                for library, opener in LIBRARIES.items()}
    assert outcomes["h5py"][0] == "raises"
    assert_same_outcome(outcomes["h5turbo"], outcomes["h5py"])
    assert isinstance(outcomes["h5turbo"][1], h5turbo.FileObjectError)
    assert kind.__name__ in str(outcomes["h5turbo"][1])  # the message names the object
