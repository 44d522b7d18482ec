"""Generated-matrix comparison: every dataset h5gen writes (4 libver bounds x dtypes,
layouts, chunk indexes, filters, fill values, partial writes, empty/null/scalar) read
through h5turbo must equal h5py exactly: metadata, full reads, many selections
(slices with steps, ints, negatives, lists in any order with repeats, masks),
read(out=, threads=), iter_chunks; plus attributes, group listings, links and visit
on the structure files, and the error types for missing/broken files."""

from __future__ import annotations

import zlib

import h5py
import numpy as np
import pytest

from support import h5compare as hc
from support.common import import_h5turbo
from support import h5gen

h5turbo = import_h5turbo()

DATASET_CASES = [pytest.param(libver, spec.path, id=f"{libver}:{spec.path}")
                 for libver in h5gen.LIBVERS for spec in h5gen.DATASET_SPECS
                 if h5gen.supports(libver, spec)]
METADATA = ["shape", "ndim", "size", "nbytes", "chunks", "maxshape", "compression",
            "compression_opts", "shuffle", "fletcher32", "name"]


def _pair(open_pairs, libver, path):
    ref, turbo = open_pairs[("data", libver)]
    return ref[path], turbo[path]


def _seed(libver, path) -> int:
    return zlib.crc32(f"{libver}:{path}".encode())


# --------------------------------------------------------------------------- datasets

@pytest.mark.parametrize("libver,path", DATASET_CASES)
def test_dataset_metadata(open_pairs, libver, path):
    ref, turbo = _pair(open_pairs, libver, path)
    assert isinstance(turbo, h5turbo.Dataset)
    problem = hc.dtype_difference(ref.dtype, turbo.dtype)
    assert problem is None, problem
    for attr in METADATA:
        assert getattr(turbo, attr) == getattr(ref, attr), attr
    hc.assert_same(ref.fillvalue, turbo.fillvalue, "fillvalue")


@pytest.mark.parametrize("libver,path", DATASET_CASES)
def test_full_read(open_pairs, libver, path):
    ref, turbo = _pair(open_pairs, libver, path)
    expected = ref[()]
    hc.assert_same(expected, turbo[()], "ds[()]")
    hc.assert_same(expected, turbo.read(), "ds.read() (everything, like ds[()])")
    if not isinstance(expected, h5py.Empty):
        hc.assert_same(np.asarray(ref[...]), np.asarray(turbo), "np.asarray(ds)")
        hc.assert_same(ref[...], turbo[...], "ds[...]")


def _expected(ref, full, sel):
    """h5py's answer: direct where h5py can read the selection (checked against the
    oracle, so the oracle is trusted), else the oracle on h5py's full read (h5py
    refuses unsorted lists and repeats, and some empty or masked selections)."""
    if ref.shape is None or len(ref.shape) == 0:
        return ref[sel]
    computed = hc.oracle(full, sel, ref.shape)
    if not hc.h5py_reads_directly(sel):
        return computed
    try:
        direct = ref[sel]
    except (ValueError, TypeError, OSError):
        return computed
    hc.assert_same(direct, computed, f"test oracle vs h5py for {hc.describe(sel)}")
    return direct


@pytest.mark.parametrize("libver,path", DATASET_CASES)
def test_selections(open_pairs, libver, path):
    ref, turbo = _pair(open_pairs, libver, path)
    full = ref[()]
    rng = np.random.default_rng(_seed(libver, path))
    failures = []
    for sel in hc.selections(ref.shape, rng):
        expected = _expected(ref, full, sel)
        try:
            problem = hc.difference(expected, turbo[sel])
        except Exception as exc:  # report every selection, not just the first
            problem = f"raised {type(exc).__name__}: {exc}"
        if problem:
            failures.append(f"{hc.describe(sel)}: {problem}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("libver,path", DATASET_CASES)
def test_read_into_out(open_pairs, libver, path):
    """read(selection=, out=, threads=) fills an array of the dataset's dtype."""
    ref, turbo = _pair(open_pairs, libver, path)
    if ref.shape is None:
        pytest.skip("null dataspace: nothing to read into")
    full = ref[...]
    rng = np.random.default_rng(_seed(libver, path) + 1)
    for threads, sel in zip([1, 2, 4, 3], hc.selections(ref.shape, rng, n_random=2)[-4:]):
        expected = hc.oracle(full, sel, ref.shape, as_array=True) if ref.shape else full
        selected = expected.shape[: expected.ndim - len(ref.dtype.shape)]
        out = np.empty(selected, dtype=ref.dtype)  # a subarray dtype expands, as in h5py
        turbo.read(selection=sel, out=out, threads=threads)
        hc.assert_same(expected, out, f"read({hc.describe(sel)}, out=, threads={threads})")


CHUNKED_CASES = [c for c in DATASET_CASES if c.values[1].startswith(("layouts/", "fill/", "filters/"))]


@pytest.mark.parametrize("libver,path", CHUNKED_CASES)
def test_iter_chunks(open_pairs, libver, path):
    ref, turbo = _pair(open_pairs, libver, path)
    if ref.chunks is None:
        pytest.skip("not chunked")
    expected = [tuple((s.start, s.stop, s.step) for s in c) for c in ref.iter_chunks()]
    got = [tuple((s.start, s.stop, s.step) for s in c) for c in turbo.iter_chunks()]
    assert got == expected
    for chunk in expected[:: max(1, len(expected) // 5)]:
        sel = tuple(slice(*c) for c in chunk)
        hc.assert_same(ref[sel], turbo[sel], f"chunk {chunk}")


# --------------------------------------------------------------------------- structure

def _objects(ref_file) -> list[str]:
    """Every object path reachable through hard links (h5py's visit), plus '/'."""
    names = ["/"]
    ref_file.visit(lambda name: names.append("/" + name))
    return names


def _attr_failures(ref_obj, turbo_obj) -> list[str]:
    failures = []
    if list(turbo_obj.attrs.keys()) != list(ref_obj.attrs.keys()):
        failures.append(f"attr names {list(turbo_obj.attrs.keys())} != h5py {list(ref_obj.attrs.keys())}")
    if len(turbo_obj.attrs) != len(ref_obj.attrs):
        failures.append("len(attrs) differs")
    for name in ref_obj.attrs:
        if name not in turbo_obj.attrs:
            failures.append(f"attr {name!r}: not `in` attrs")
            continue
        try:
            problem = hc.difference(ref_obj.attrs[name], turbo_obj.attrs[name])
        except Exception as exc:
            problem = f"raised {type(exc).__name__}: {exc}"
        if problem:
            failures.append(f"attr {name!r}: {problem}")
    return failures


@pytest.mark.parametrize("kind", ["structure", "data"])
@pytest.mark.parametrize("libver", list(h5gen.LIBVERS))
def test_attributes(open_pairs, libver, kind):
    ref, turbo = open_pairs[(kind, libver)]
    failures = []
    for path in _objects(ref):
        failures += [f"{path}: {p}" for p in _attr_failures(ref[path], turbo[path])]
    assert not failures, "\n".join(failures)


def test_attribute_matrix_is_covered(open_pairs):
    """The attribute kinds the matrix promises really are in the files."""
    ref, _ = open_pairs[("structure", "latest")]
    assert set(h5gen.attr_values()) <= set(ref["attrs_compact"].attrs)
    assert ref["attrs_big"].attrs["big"].nbytes > 65536
    assert len(ref["attrs_dense"].attrs) == 40
    assert len(ref["dense_group"]) == 120


def _kind_name(obj) -> str:
    return "group" if isinstance(obj, (h5py.Group, h5turbo.Group)) else "dataset"


def _link_failures(ref_group, turbo_group, name) -> list[str]:
    link = ref_group.get(name, getlink=True)
    where = f"{ref_group.name.rstrip('/')}/{name}"
    if isinstance(link, h5py.ExternalLink):
        return _external_failures(ref_group, turbo_group, name, link, where)
    if isinstance(link, h5py.SoftLink) and ref_group.get(name) is None:
        return _dangling_failures(turbo_group, name, where)
    ref_obj, turbo_obj = ref_group[name], turbo_group[name]
    if _kind_name(turbo_obj) != _kind_name(ref_obj):
        return [f"{where}: {_kind_name(turbo_obj)} != h5py {_kind_name(ref_obj)}"]
    if turbo_obj.name != ref_obj.name:
        return [f"{where}: .name {turbo_obj.name!r} != h5py {ref_obj.name!r}"]
    if isinstance(ref_obj, h5py.Dataset):
        problem = hc.difference(ref_obj[()], turbo_obj[()])
        return [f"{where}: {problem}"] if problem else []
    return []


def _dangling_failures(turbo_group, name, where) -> list[str]:
    try:
        turbo_group[name]
    except KeyError:
        return []
    except Exception as exc:
        return [f"{where}: dangling soft link raised {type(exc).__name__}, not KeyError"]
    return [f"{where}: dangling soft link resolved"]


def _external_failures(ref_group, turbo_group, name, link, where) -> list[str]:
    """An external link is followed (same data as h5py) or an h5turbo error naming the file."""
    try:
        turbo_obj = turbo_group[name]
    except h5turbo.Error as exc:
        return [] if link.filename in str(exc) else [f"{where}: error does not name {link.filename}: {exc}"]
    problem = hc.difference(ref_group[name][()], turbo_obj[()])
    return [f"{where}: followed external link reads differently: {problem}"] if problem else []


def _group_failures(ref_group, turbo_group) -> list[str]:
    keys = list(ref_group.keys())
    failures = []
    for what, got in [("keys()", list(turbo_group.keys())), ("iter", list(turbo_group)),
                      ("items() names", [k for k, _ in _safe_items(turbo_group)])]:
        if got != keys:
            failures.append(f"{ref_group.name}: {what} {_list_difference(keys, got)}")
    if len(turbo_group) != len(ref_group):
        failures.append(f"{ref_group.name}: len {len(turbo_group)} != {len(ref_group)}")
    for name in keys:
        if name not in turbo_group:
            failures.append(f"{ref_group.name}: {name!r} not `in` group")
        failures += _link_failures(ref_group, turbo_group, name)
    if "no_such_member" in turbo_group:
        failures.append(f"{ref_group.name}: absent name is `in` group")
    return failures


def _list_difference(expected: list, got: list) -> str:
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    if missing or extra:
        return f"missing {missing[:10]}, extra {extra[:10]} (h5py has {len(expected)}, got {len(got)})"
    return f"order differs: {got[:10]}... != h5py {expected[:10]}..."


def _safe_items(group):
    """items() may raise for a dangling soft link or an external link it does not
    follow (h5py yields None for the first); the names must still all be there."""
    try:
        return list(group.items())
    except (h5turbo.Error, KeyError):
        return [(k, None) for k in group.keys()]


@pytest.mark.parametrize("libver", list(h5gen.LIBVERS))
def test_groups_and_links(open_pairs, libver):
    ref, turbo = open_pairs[("structure", libver)]
    failures = []
    for path in _objects(ref):
        if isinstance(ref[path], h5py.Group):
            failures += _group_failures(ref[path], turbo[path])
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", ["structure", "data"])
@pytest.mark.parametrize("libver", list(h5gen.LIBVERS))
def test_visit(open_pairs, libver, kind):
    ref, turbo = open_pairs[(kind, libver)]
    expected, got = [], []
    ref.visit(expected.append)
    turbo.visit(got.append)
    assert sorted(got) == sorted(expected)
    pairs = []
    turbo.visititems(lambda name, obj: pairs.append((name, _kind_name(obj))))
    expected_pairs = []
    ref.visititems(lambda name, obj: expected_pairs.append((name, _kind_name(obj))))
    assert sorted(pairs) == sorted(expected_pairs)


@pytest.mark.parametrize("libver", list(h5gen.LIBVERS))
def test_hard_links_and_paths(open_pairs, libver):
    ref, turbo = open_pairs[("structure", libver)]
    hc.assert_same(ref["data"][()], turbo["hard_alias"][()], "hard link")
    hc.assert_same(ref["nested/a/b/c/d"][()], turbo["/nested/a/b/c/d"][()], "absolute path")
    hc.assert_same(ref["nested/a/b/c/d"][()], turbo["nested"]["a/b"]["c/d"][()], "relative path")
    hc.assert_same(ref["nested/a/b/c/d"][()], turbo["soft_relative/b/c/d"][()], "through soft link")
    assert list(turbo["nested/hard_to_group"].keys()) == list(ref["attrs_dense"].keys())


# --------------------------------------------------------------------------- errors

def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        h5turbo.File(str(tmp_path / "absent.h5"))


def test_missing_object(open_pairs):
    _, turbo = open_pairs[("structure", "latest")]
    for path in ["no_such", "nested/no_such", "nested/a/b/c/d/e", "dangling"]:
        with pytest.raises(KeyError):
            turbo[path]


def test_not_hdf5_is_format_error(tmp_path):
    path = tmp_path / "garbage.h5"
    path.write_bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(h5turbo.FormatError):
        h5turbo.File(str(path))
    empty = tmp_path / "empty.h5"
    empty.write_bytes(b"")
    with pytest.raises(h5turbo.FormatError):
        h5turbo.File(str(empty))


def test_error_hierarchy():
    assert issubclass(h5turbo.FormatError, h5turbo.Error)
    assert issubclass(h5turbo.UnsupportedError, h5turbo.Error)
    assert issubclass(h5turbo.Error, Exception)


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_truncated_file_raises_h5turbo_error(matrix_paths, tmp_path, libver):
    """Cut the file short: whatever opens must read right or raise h5turbo.Error."""
    source = matrix_paths[("data", libver)]
    cut = tmp_path / "cut.h5"
    cut.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    with h5py.File(source, "r") as ref:
        paths = [p for p in _objects(ref) if isinstance(ref[p], h5py.Dataset)]
        errors = _read_all_or_error(ref, cut, paths)
    assert errors > 0, "half the file is gone; some reads must fail"


def _read_all_or_error(ref, cut, paths) -> int:
    errors = 0
    try:
        turbo = h5turbo.File(str(cut))
    except h5turbo.Error:
        return 1
    with turbo:
        for path in paths:
            try:
                got = turbo[path][()]
            except h5turbo.Error:
                errors += 1
                continue
            hc.assert_same(ref[path][()], got, path)
    return errors


def test_context_manager_closes(matrix_paths):
    with h5turbo.File(str(matrix_paths[("data", "latest")])) as turbo:
        ds = turbo["layouts/fixed_array"]
        assert ds[0, 0] is not None
    with pytest.raises(h5turbo.Error):
        ds[0, 0]
