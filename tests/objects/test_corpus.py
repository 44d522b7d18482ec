"""Corpus comparison: every HDF5 file in the shared corpus (jhdf, pyfive, fast5 with
vbz, netCDF4, loom, 10x, h5ad) is walked with h5py (hdf5plugin + ONT's vbz plugin)
and h5turbo side by side. Group keys must match; every dataset and attribute h5py
reads must read identically through h5turbo (dtype and bytes; object arrays element
by element); whatever h5py cannot read must raise h5turbo.Error, never another
exception type. Files h5py refuses to open are walked with h5turbo alone: every
access either works or raises h5turbo.Error. One test per file; the failure message
lists every object that differed.

Corpus location: tests/data/corpus (part of the repository; a missing corpus fails)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from support import h5compare as hc
from support.common import corpus_dir, corpus_files, import_h5turbo

h5turbo = import_h5turbo()

FULL_READ_LIMIT = 32 << 20  # bytes; bigger datasets are compared on bounded slices
SLAB_ELEMENTS = 1 << 16


FILES = corpus_files()


def test_corpus_present():
    assert len(FILES) > 10, f"HDF5 corpus missing or incomplete at {corpus_dir()}"


# --------------------------------------------------------------------------- helpers

class Report:
    """Per-object findings of one file, joined into the failure message."""

    def __init__(self):
        self.lines: list[str] = []

    def add(self, where: str, problem: str | None) -> None:
        if problem:
            self.lines.append(f"{where}: {problem}")


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _must_be_turbo_error(exc, allow_key_error=False) -> str | None:
    if exc is None:
        return "h5py cannot read this but h5turbo returned a value"
    if isinstance(exc, h5turbo.Error) or (allow_key_error and isinstance(exc, KeyError)):
        return None
    if isinstance(exc, FileNotFoundError):  # a file the dataset names (external storage) is missing
        return None
    return f"raised {_describe(exc)}, not an h5turbo.Error"


# libhdf5 2.0 refuses global heap collections smaller than its 4096-byte minimum;
# jhdf and older libhdf5 read them.  There h5turbo may raise h5turbo.Error or return
# a value of the shape and dtype h5py declares (no oracle for the content).
# The same for types libhdf5 has no conversion for to h5py's dtype (opaque data: h5py
# declares the dtype but cannot read it; h5turbo reads the stored bytes).
LIBHDF5_ONLY_STRICTNESS = ("global heap size is too small", "no appropriate function for conversion path")


def _h5py_refusal(h5py_exc, turbo_fn, declared_shape, declared_dtype) -> str | None:
    if not any(text in str(h5py_exc) for text in LIBHDF5_ONLY_STRICTNESS):
        _, exc = hc.call(turbo_fn)
        return _must_be_turbo_error(exc)
    got, exc = hc.call(turbo_fn)
    if exc is not None:
        return _must_be_turbo_error(exc)
    shape_differs = declared_shape is not None and np.shape(got) != declared_shape
    if shape_differs or getattr(got, "dtype", None) != declared_dtype:
        return (f"h5py refuses ({h5py_exc}); h5turbo's value has shape {np.shape(got)}, "
                f"dtype {getattr(got, 'dtype', None)}, declared {declared_shape} {declared_dtype}")
    return None


# --------------------------------------------------------------------------- comparison

def _compare_attrs(ref_obj, turbo_obj, where: str, report: Report) -> None:
    names, exc = hc.call(lambda: list(turbo_obj.attrs.keys()))
    if exc is not None:
        report.add(where, f"attrs.keys() raised {_describe(exc)}")
        return
    expected_names = list(ref_obj.attrs.keys())
    if names != expected_names:
        report.add(where, f"attr names {names} != h5py {expected_names}")
    for name in expected_names:
        try:
            exp = ref_obj.attrs[name]
        except Exception as h5py_exc:
            try:
                declared = ref_obj.attrs.get_id(name)
                shape, dtype = declared.shape, declared.dtype
            except TypeError:  # a type numpy lacks (PyTables' 16-byte integers): h5turbo must refuse too
                shape, dtype = None, None
            report.add(f"{where} @{name}", _h5py_refusal(h5py_exc, lambda: turbo_obj.attrs[name], shape, dtype))
            continue
        refs = hc.has_reference(ref_obj.attrs.get_id(name).dtype)
        files = (ref_obj.file, turbo_obj.file) if refs else None
        report.add(f"{where} @{name}", hc.expect_same(exp, lambda: turbo_obj.attrs[name], files))


def _slabs(shape) -> list[tuple]:
    """Bounded selections of a dataset too big to read whole: start, end, strided."""
    n = shape[0]
    rows = max(1, SLAB_ELEMENTS // max(1, int(np.prod(shape[1:], dtype=np.int64))))
    rest = tuple(slice(0, min(d, 64)) for d in shape[1:])
    step = max(1, n // 16)  # few elements: each may cost a whole chunk to decode
    return [(slice(0, rows), *rest), (slice(max(0, n - rows), n), *rest),
            (slice(0, n, step), *rest), (n - 1, *rest)]


def _compare_dataset(ref, turbo, where: str, report: Report) -> None:
    try:
        dtype, shape = ref.dtype, ref.shape
    except Exception:
        _, exc = hc.call(lambda: turbo[()])
        report.add(where, _must_be_turbo_error(exc))
        return
    refs = hc.has_reference(dtype)
    _compare_dataset_metadata(ref, turbo, where, report)
    small = shape is None or ref.size * dtype.itemsize <= FULL_READ_LIMIT
    for sel in ([()] if small else _slabs(shape)):
        try:
            exp = ref[sel]
        except Exception as h5py_exc:
            declared_shape = shape if sel == () else None  # only whole reads are checked
            report.add(f"{where}{hc.describe(sel)}", _h5py_refusal(
                h5py_exc, lambda: turbo[sel], declared_shape, dtype))
            continue
        files = (ref.file, turbo.file) if refs else None
        report.add(f"{where}{hc.describe(sel)}", hc.expect_same(exp, lambda: turbo[sel], files))


def _compare_dataset_metadata(ref, turbo, where: str, report: Report) -> None:
    for attr in ("shape", "chunks", "maxshape"):
        got, exc = hc.call(lambda: getattr(turbo, attr))
        expected = getattr(ref, attr)
        report.add(f"{where} .{attr}", _describe(exc) if exc else
                   (None if got == expected else f"{got!r} != h5py {expected!r}"))
    got_dtype, exc = hc.call(lambda: turbo.dtype)
    if exc is not None:
        report.add(f"{where} .dtype", _describe(exc))
    else:
        report.add(f"{where} .dtype", hc.dtype_difference(ref.dtype, got_dtype))


def _compare_link(ref_group, turbo_group, name, report: Report, seen: set) -> None:
    where = f"{ref_group.name.rstrip('/')}/{name}"
    try:
        link = ref_group.get(name, getlink=True)
        ref_obj = ref_group[name]
    except Exception:  # dangling soft link, unreachable external file, unopenable object
        _, exc = hc.call(lambda: turbo_group[name])
        report.add(where, _must_be_turbo_error(exc, allow_key_error=True))
        return
    turbo_obj, exc = hc.call(lambda: turbo_group[name])
    if isinstance(ref_obj, h5py.Datatype):  # committed datatype: no h5turbo API promised
        report.add(where, None if exc is None else _must_be_turbo_error(exc))
        return
    if isinstance(link, h5py.ExternalLink) and isinstance(exc, h5turbo.Error):
        report.add(where, None if link.filename in str(exc) else f"error does not name {link.filename}")
        return
    if exc is not None:
        report.add(where, f"h5py opens it; h5turbo raised {_describe(exc)}")
        return
    if isinstance(link, (h5py.SoftLink, h5py.ExternalLink)):
        _compare_object(ref_obj, turbo_obj, where, report, seen, recurse=False)
    else:
        _compare_object(ref_obj, turbo_obj, where, report, seen, recurse=True)


def _compare_object(ref_obj, turbo_obj, where, report: Report, seen: set, recurse: bool) -> None:
    if isinstance(ref_obj, h5py.Datatype):
        return  # committed datatype reached through a soft link: nothing to compare
    kind = "group" if isinstance(ref_obj, h5py.Group) else "dataset"
    if not isinstance(turbo_obj, h5turbo.Group if kind == "group" else h5turbo.Dataset):
        report.add(where, f"h5turbo gave {type(turbo_obj).__name__}, h5py a {kind}")
        return
    if kind == "dataset":
        _compare_attrs(ref_obj, turbo_obj, where, report)
        _compare_dataset(ref_obj, turbo_obj, where, report)
    elif ref_obj.id not in seen and recurse:
        seen.add(ref_obj.id)
        _compare_group(ref_obj, turbo_obj, report, seen)
    else:
        keys, exc = hc.call(lambda: list(turbo_obj.keys()))
        report.add(where, _describe(exc) if exc else
                   (None if keys == list(ref_obj.keys()) else f"keys {keys} != h5py"))


def _compare_group(ref_group, turbo_group, report: Report, seen: set) -> None:
    where = ref_group.name
    _compare_attrs(ref_group, turbo_group, where, report)
    expected = list(ref_group.keys())
    keys, exc = hc.call(lambda: list(turbo_group.keys()))
    if exc is not None:
        report.add(where, f"keys() raised {_describe(exc)}")
        return
    if keys != expected:
        report.add(where, f"keys {keys} != h5py {expected}")
    for name in expected:
        _compare_link(ref_group, turbo_group, name, report, seen)


# --------------------------------------------------------------------------- files h5py refuses

def _smoke_walk(turbo_group, where: str, report: Report, depth: int = 0) -> None:
    """No oracle: every access must work or raise h5turbo.Error (KeyError for links)."""
    names, exc = hc.call(lambda: list(turbo_group.keys()))
    if exc is not None:
        report.add(where, _must_be_turbo_error(exc))
        return
    _smoke_attrs(turbo_group, where, report)
    for name in names:
        obj, exc = hc.call(lambda: turbo_group[name])
        if exc is not None:
            report.add(f"{where}/{name}", _must_be_turbo_error(exc, allow_key_error=True))
        elif isinstance(obj, h5turbo.Group) and depth < 16:
            _smoke_walk(obj, f"{where}/{name}", report, depth + 1)
        elif isinstance(obj, h5turbo.Dataset):
            _smoke_attrs(obj, f"{where}/{name}", report)
            _smoke_read(obj, f"{where}/{name}", report)


def _smoke_attrs(obj, where: str, report: Report) -> None:
    names, exc = hc.call(lambda: list(obj.attrs.keys()))
    if exc is not None:
        report.add(where, _must_be_turbo_error(exc))
        return
    for name in names:
        _, exc = hc.call(lambda: obj.attrs[name])
        if exc is not None:
            report.add(f"{where} @{name}", _must_be_turbo_error(exc))


def _smoke_read(ds, where: str, report: Report) -> None:
    shape, exc = hc.call(lambda: ds.shape)
    if exc is not None:
        report.add(where, _must_be_turbo_error(exc))
        return
    sel = () if not shape else tuple(slice(0, 64) for _ in shape)
    _, exc = hc.call(lambda: ds[sel])
    if exc is not None:
        report.add(where, _must_be_turbo_error(exc))


# --------------------------------------------------------------------------- the test

def _ids(paths):
    return [str(p.relative_to(corpus_dir())) for p in paths]


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_corpus_file(path):
    report = Report()
    try:
        ref = h5py.File(path, "r")
    except OSError:
        _walk_without_oracle(path, report)
    else:
        with ref:
            _walk_with_oracle(ref, path, report)
    assert not report.lines, f"{len(report.lines)} problem(s):\n" + "\n".join(report.lines)


def _walk_with_oracle(ref, path: Path, report: Report) -> None:
    turbo, exc = hc.call(lambda: h5turbo.File(str(path)))
    if exc is not None:
        report.add("/", f"h5py opens the file; h5turbo raised {_describe(exc)}")
        return
    with turbo:
        root = ref["/"]
        _compare_group(root, turbo, report, {root.id})


def _walk_without_oracle(path: Path, report: Report) -> None:
    turbo, exc = hc.call(lambda: h5turbo.File(str(path)))
    if exc is not None:
        report.add("/", _must_be_turbo_error(exc))
        return
    with turbo:
        _smoke_walk(turbo, "", report)
