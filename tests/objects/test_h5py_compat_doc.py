"""docs/h5py-compat.md stays true: its tables list every public attribute and method
of h5py's File, Group, Dataset, AttributeManager and Datatype (the names come from
h5py itself, dir() of each class, so none is missed and a new h5py's additions show
up here), each with a status; every "same" has the h5turbo attribute and names test
files that exercise it."""

from __future__ import annotations

import re
from pathlib import Path

import h5py
import pytest

import h5turbo

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "h5py-compat.md"
CLASSES = {"File": (h5py.File, h5turbo.File), "Group": (h5py.Group, h5turbo.Group),
           "Dataset": (h5py.Dataset, h5turbo.Dataset),
           "AttributeManager": (h5py.AttributeManager, h5turbo.AttributeManager),
           "Datatype": (h5py.Datatype, h5turbo.Datatype)}
# the protocol methods that make up the API (others in dir() are Python's own)
PROTOCOL = {"__getitem__", "__setitem__", "__delitem__", "__contains__", "__iter__", "__len__",
            "__reversed__", "__enter__", "__exit__", "__array__", "__bool__", "__eq__", "__hash__",
            "__repr__"}
# how a test spells the use of a protocol method
SPELLING = {"__getitem__": "[", "__contains__": " in ", "__iter__": "for ", "__len__": "len(",
            "__reversed__": "reversed(", "__enter__": "with ", "__exit__": "with ", "__array__": "np.asarray(",
            "__bool__": "bool(", "__eq__": "==", "__hash__": "hash(", "__repr__": "repr("}
STATUSES = ("same", "different", "not applicable")


def h5py_names(cls) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") or n in PROTOCOL}


def doc_tables() -> dict[str, dict[str, tuple[str, str, str]]]:
    """{class: {name: (status, notes, tests)}} from the '## `Class`' sections."""
    tables, current = {}, None
    for line in DOC.read_text().splitlines():
        heading = re.match(r"^## `(\w+)`", line)
        if heading:
            current = heading.group(1) if heading.group(1) in CLASSES else None
            if current:
                tables[current] = {}
            continue
        row = re.match(r"^\| `([\w]+)` \| ([^|]+) \| ([^|]*) \| ([^|]*) \|$", line)
        if current and row:
            name, status, notes, tests = (g.strip() for g in row.groups())
            tables[current][name] = (status, notes, tests)
    return tables


TABLES = doc_tables()


def test_every_class_has_a_table():
    assert set(TABLES) == set(CLASSES)


@pytest.mark.parametrize("cls", CLASSES)
def test_table_lists_every_h5py_name(cls):
    listed, names = set(TABLES[cls]), h5py_names(CLASSES[cls][0])
    assert not names - listed, f"missing from docs/h5py-compat.md ({cls}): {sorted(names - listed)}"
    # (names listed that this h5py lacks: an older h5py than the table's, not an error)


@pytest.mark.parametrize("cls", CLASSES)
def test_statuses_and_same_claims(cls):
    theirs, ours = CLASSES[cls]
    for name, (status, notes, tests) in TABLES[cls].items():
        assert status in STATUSES, (cls, name, status)
        if status == "not applicable" or status == "different":
            assert notes, f"{cls}.{name}: say why"
        if status != "same":
            continue
        if getattr(theirs, name, None) is None:  # a protocol h5py switches off (hash of a mapping)
            assert getattr(ours, name, None) is None, f"h5turbo.{cls}.{name} should be off too"
        else:
            assert getattr(ours, name, None) is not None, f"h5turbo.{cls} has no {name}"
        files = [t.strip() for t in tests.split(",") if t.strip()]
        assert files, f"{cls}.{name}: 'same' names no test"
        spelling = SPELLING.get(name, name)
        for file in files:
            path = ROOT / "tests" / file
            assert path.is_file(), f"{cls}.{name}: no test file {file}"
            assert spelling in path.read_text(), f"{cls}.{name}: {file} does not use {spelling!r}"
