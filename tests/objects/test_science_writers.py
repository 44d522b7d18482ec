"""Files written by the big scientific writers (tests/data/corpus/{nwb, astropy, nexus,
hickle, h5io, pandas, keras}, made by tools/corpus/make_writer_files.py), compared
object by object with h5py (+ hdf5plugin) as the reference reader.

The writers' own readers (pynwb, astropy, nexusformat, silx, hickle, h5io, PyTables,
keras) are not in the project venv: h5py is the oracle everywhere.

Per file:
- traversal: visit, visititems, visit_links, visititems_links (names, order, link kinds);
- every group: keys / iteration / len / membership, and every member's link as
  get(name, getlink=True) gives it (class, soft path, external file and path);
- every dataset: dtype (byte order included), shape, maxshape, chunks, the filter
  pipeline (ids, client data), compression, compression_opts, shuffle, fletcher32,
  fill value, values bit for bit (object arrays element by element) whole and on
  selections;
- every attribute of every object and of the root: names in order, dtype, value;
- hard links: two paths are the same object for h5turbo exactly when they are for h5py;
- references (in datasets, compound fields and attributes) dereference to the same
  object (compared by hard-link identity, not by the name libhdf5 picks);
- soft and external links resolve to the same object / values.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from support import h5compare as hc
from support.common import corpus_dir, import_h5turbo

h5turbo = import_h5turbo()

FOLDERS = ("nwb", "astropy", "nexus", "hickle", "h5io", "pandas", "keras")
CORPUS = corpus_dir()
FILES = sorted(p for folder in FOLDERS for p in (CORPUS / folder).glob("*")
               if p.is_file() and p.suffix != ".md")
IDS = [str(p.relative_to(CORPUS)) for p in FILES]

pytestmark = pytest.mark.filterwarnings("ignore:endian-ness of dtype:UserWarning")


def test_writer_files_present():
    missing = [f for f in FOLDERS if not list((CORPUS / f).glob("*.*"))]
    assert not missing, f"corpus folders missing or empty: {missing} (tools/corpus/make_writer_files.py)"
    assert len(FILES) >= 15


@pytest.fixture(params=FILES, ids=IDS)
def pair(request):
    path = request.param
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as got:
        yield ref, got


# --------------------------------------------------------------------------- helpers

def _link_kind(link) -> tuple:
    name = type(link).__name__
    if name == "SoftLink":
        return (name, link.path)
    if name == "ExternalLink":
        return (name, os.fsdecode(link.filename), link.path)
    return (name,)


def _links(group) -> list[tuple]:
    out = []
    group.visititems_links(lambda name, link: out.append((name, _link_kind(link))))
    return out


def _hard_paths(ref) -> list[str]:
    return [name for name, kind in _links(ref) if kind == ("HardLink",)]


def _bit_difference(exp, got) -> str | None:
    """Same dtype (byte order too), shape and bytes; object arrays element by element,
    with the same Python types (str vs bytes)."""
    if isinstance(exp, np.ndarray) or isinstance(exp, np.generic):
        got_dtype = getattr(got, "dtype", None)
        if got_dtype != exp.dtype or (got_dtype is not None and got_dtype.str != exp.dtype.str):
            return f"dtype {got_dtype!r} != h5py {exp.dtype!r}"
        if np.shape(got) != np.shape(exp):
            return f"shape {np.shape(got)} != h5py {np.shape(exp)}"
        if exp.dtype.hasobject:
            return hc.difference(exp, got)
        if np.asarray(exp).tobytes() != np.asarray(got).tobytes():
            return "bytes differ: " + (hc.difference(exp, got) or "(equal by ==)")
        return None
    return hc.difference(exp, got)


def _references(value) -> list:
    """Every reference in a value read by either reader, in order."""
    if isinstance(value, (h5py.Reference, h5turbo.Reference)):
        return [value]
    if isinstance(value, (np.ndarray, np.void)) and value.dtype.names:
        return [r for n in value.dtype.names for r in _references(value[n])]
    if isinstance(value, np.ndarray) and value.dtype.hasobject:
        return [r for v in value.reshape(-1) for r in _references(v)]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in _references(v)]
    return []


def _identity_classes(f, paths) -> dict:
    """path -> frozenset of every path that is the same object (hard links)."""
    groups: dict = {}
    for p in paths:
        groups.setdefault(f[p], []).append(p)
    return {p: frozenset(ps) for ps in groups.values() for p in ps}


# --------------------------------------------------------------------------- tests

def test_traversal_order(pair):
    ref, got = pair
    for method in ("visit", "visit_links"):
        exp, out = [], []
        getattr(ref, method)(exp.append)
        _, exc = hc.call(lambda: getattr(got, method)(out.append))
        assert exc is None and out == exp, f"{method}: {out} {exc or ''} != h5py {exp}"
    exp, out = [], []
    ref.visititems(lambda n, o: exp.append((n, type(o).__name__)))
    got.visititems(lambda n, o: out.append((n, type(o).__name__)))
    assert out == exp
    assert _links(got) == _links(ref)


def test_groups_and_links(pair):
    ref, got = pair
    problems = []
    groups = [""] + [n for n in _hard_paths(ref) if isinstance(ref[n], h5py.Group)]
    for name in groups:
        rg, tg = (ref[name], got[name]) if name else (ref, got)
        where = "/" + name
        exp_keys = list(rg.keys())
        for what, value in (("keys", list(tg.keys())), ("iter", list(tg)), ("len", len(tg)),
                            ("items", [k for k, _ in tg.items()])):
            expected = len(exp_keys) if what == "len" else exp_keys
            if value != expected:
                problems.append(f"{where} {what}: {value} != h5py {expected}")
        for key in exp_keys:
            if key not in tg:
                problems.append(f"{where}: {key!r} not in group")
            exp = _link_kind(rg.get(key, getlink=True))
            out, exc = hc.call(lambda: _link_kind(tg.get(key, getlink=True)))
            if out != exp:
                problems.append(f"{where}/{key} link: {out} {exc or ''} != h5py {exp}")
            exp_class = rg.get(key, getclass=True)
            out_class, exc = hc.call(lambda: tg.get(key, getclass=True))
            if exc is not None or (exp_class is not None and getattr(out_class, "__name__", None) != exp_class.__name__):
                problems.append(f"{where}/{key} getclass: {out_class} {exc or ''} != h5py {exp_class}")
        if "no such member" in tg:
            problems.append(f"{where}: a missing member is 'in' the group")
    assert not problems, "\n".join(problems[:40])


def _dataset_problems(rd, td, where, rng) -> list[str]:
    problems = []
    try:
        exp_dtype = rd.dtype
    except Exception:  # noqa: BLE001 - a type h5py has no dtype for
        return problems
    if td.dtype != exp_dtype or td.dtype.str != exp_dtype.str:
        return [f"{where}.dtype: {td.dtype!r} != h5py {exp_dtype!r}"]
    for prop in ("shape", "maxshape", "chunks", "ndim", "size", "nbytes", "compression",
                 "compression_opts", "shuffle", "fletcher32", "scaleoffset", "is_virtual"):
        exp, h5py_exc = hc.call(lambda: getattr(rd, prop))
        if h5py_exc is not None:
            continue
        out, exc = hc.call(lambda: getattr(td, prop))
        if exc is not None or out != exp:
            problems.append(f"{where}.{prop}: {out!r} {exc or ''} != h5py {exp!r}")
    dcpl = rd.id.get_create_plist()
    exp_filters = [dcpl.get_filter(i)[0::2] for i in range(dcpl.get_nfilters())]
    exp_filters = [(fid, tuple(int(v) for v in data)) for fid, data in exp_filters]
    out_filters = [(fid, tuple(data)) for fid, _name, data in td.filters]
    if out_filters != exp_filters:
        problems.append(f"{where}.filters: {out_filters} != h5py {exp_filters}")
    if not exp_dtype.hasobject:  # vlen fill values: see test_foreign_writers' known bug
        problem = _bit_difference(np.asarray(rd.fillvalue, dtype=exp_dtype),
                                  np.asarray(td.fillvalue, dtype=exp_dtype))
        if problem:
            problems.append(f"{where}.fillvalue: {problem}")
    files = (rd.file, td.file) if hc.has_reference(exp_dtype) else None
    sels = [()]
    if rd.shape and 0 < rd.size < 1 << 18:
        sels += [s for s in hc.selections(rd.shape, rng, 3) if hc.h5py_reads_directly(s)]
    for sel in sels:
        try:
            exp = rd[sel]
        except Exception as h5py_exc:  # noqa: BLE001
            _, exc = hc.call(lambda: td[sel])
            if sel == () and not isinstance(exc, h5turbo.Error):
                problems.append(f"{where}: h5py refuses ({h5py_exc}); h5turbo gave {exc!r}")
            continue
        out, exc = hc.call(lambda: td[sel])
        if exc is not None:
            problems.append(f"{where}{hc.describe(sel)}: raised {exc!r}")
        elif files:
            problem = hc.reference_difference(exp, files[0], out, files[1])
            if problem:
                problems.append(f"{where}{hc.describe(sel)}: {problem}")
        else:
            problem = _bit_difference(exp, out)
            if problem:
                problems.append(f"{where}{hc.describe(sel)}: {problem}")
    return problems


def test_datasets(pair):
    ref, got = pair
    rng = np.random.default_rng(0)
    problems = []
    for name in _hard_paths(ref):
        if isinstance(ref[name], h5py.Dataset):
            problems += _dataset_problems(ref[name], got[name], "/" + name, rng)
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:40])


def test_attributes(pair):
    ref, got = pair
    problems = []
    for name in [""] + _hard_paths(ref):
        ro, to = (ref[name], got[name]) if name else (ref, got)
        where = "/" + name
        if isinstance(ro, h5py.Datatype):
            continue
        if list(to.attrs.keys()) != list(ro.attrs.keys()):
            problems.append(f"{where}: attrs {list(to.attrs.keys())} != h5py {list(ro.attrs.keys())}")
        for key in ro.attrs.keys():
            try:
                exp = ro.attrs[key]
            except Exception as h5py_exc:  # noqa: BLE001
                _, exc = hc.call(lambda: to.attrs[key])
                if not isinstance(exc, h5turbo.Error):
                    problems.append(f"{where} @{key}: h5py refuses ({h5py_exc}); h5turbo {exc!r}")
                continue
            out, exc = hc.call(lambda: to.attrs[key])
            if exc is not None:
                problems.append(f"{where} @{key}: raised {exc!r}")
                continue
            if hc.has_reference(ro.attrs.get_id(key).dtype):
                problem = hc.reference_difference(exp, ref, out, got)
            else:
                problem = _bit_difference(exp, out)
            if problem:
                problems.append(f"{where} @{key}: {problem}")
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:40])


def test_hard_link_identity(pair):
    ref, got = pair
    paths = _hard_paths(ref)
    exp = _identity_classes(ref, paths)
    out = _identity_classes(got, paths)
    assert out == exp


def test_references_dereferenced(pair):
    ref, got = pair
    paths = _hard_paths(ref)
    classes = _identity_classes(ref, paths)
    by_object = {ref[p]: classes[p] for p in paths}
    by_object_turbo = {got[p]: classes[p] for p in paths}
    problems, seen = [], 0
    holders = [("/", ref, got)] + [("/" + p, ref[p], got[p]) for p in paths]
    for where, ro, to in holders:
        values = []
        if isinstance(ro, h5py.Dataset) and hc.has_reference(ro.dtype):
            values.append((where, ro[()], to[()]))
        for key in ro.attrs.keys():
            if hc.has_reference(ro.attrs.get_id(key).dtype):
                values.append((f"{where} @{key}", ro.attrs[key], to.attrs[key]))
        for what, exp, out in values:
            exp_refs, out_refs = _references(exp), _references(out)
            if len(out_refs) != len(exp_refs):
                problems.append(f"{what}: {len(out_refs)} references != h5py {len(exp_refs)}")
                continue
            for i, (er, tr) in enumerate(zip(exp_refs, out_refs)):
                seen += 1
                if bool(er) != bool(tr):
                    problems.append(f"{what}[{i}]: null {not tr} != h5py {not er}")
                    continue
                if not er:
                    continue
                target = by_object.get(ref[er])
                got_obj, exc = hc.call(lambda: got[tr])
                if exc is not None:
                    problems.append(f"{what}[{i}]: dereference raised {exc!r}")
                    continue
                if by_object_turbo.get(got_obj) != target:
                    problems.append(f"{what}[{i}]: -> {got_obj.name} != h5py {ref[er].name}")
                elif got_obj.name not in {"/" + p for p in target}:
                    problems.append(f"{what}[{i}]: name {got_obj.name} names none of {sorted(target)}")
    assert not problems, f"{len(problems)} of {seen} references:\n" + "\n".join(problems[:40])


def test_soft_and_external_links_resolve(pair):
    ref, got = pair
    problems = []
    paths = _hard_paths(ref)
    classes = _identity_classes(ref, paths)
    by_object = {ref[p]: classes[p] for p in paths}
    by_object_turbo = {got[p]: classes[p] for p in paths}
    for name, kind in _links(ref):
        if kind[0] == "HardLink":
            continue
        try:
            exp = ref[name]
        except (KeyError, OSError):  # dangling for h5py: h5turbo must not resolve it
            _, exc = hc.call(lambda: got[name])
            if not isinstance(exc, (KeyError, h5turbo.Error)):
                problems.append(f"/{name}: dangling for h5py; h5turbo gave {exc!r}")
            continue
        out, exc = hc.call(lambda: got[name])
        if exc is not None:
            problems.append(f"/{name} ({kind[0]}): raised {exc!r}")
            continue
        if type(out).__name__ != type(exp).__name__:
            problems.append(f"/{name}: {type(out).__name__} != h5py {type(exp).__name__}")
            continue
        if out.name != exp.name:
            problems.append(f"/{name}: name {out.name} != h5py {exp.name}")
        if kind[0] == "SoftLink" and by_object_turbo.get(out) != by_object.get(exp):
            problems.append(f"/{name}: soft link resolves to another object than h5py's")
        if kind[0] == "ExternalLink":
            if Path(out.file.filename).resolve() != Path(exp.file.filename).resolve():
                problems.append(f"/{name}: file {out.file.filename} != h5py {exp.file.filename}")
        if isinstance(exp, h5py.Dataset):
            problem = _bit_difference(exp[()], out[()])
            if problem:
                problems.append(f"/{name}: {problem}")
            if list(out.attrs.keys()) != list(exp.attrs.keys()):
                problems.append(f"/{name}: attrs {list(out.attrs.keys())} != h5py {list(exp.attrs.keys())}")
    assert not problems, "\n".join(problems[:40])


def test_external_link_targets_exist():
    """The corpus keeps each external link's target beside its file, so the links
    resolve (for h5py) from any working directory: nothing is dangling."""
    dangling = []
    for path in FILES:
        with h5py.File(path, "r") as f:
            for name, kind in _links(f):
                if kind[0] == "ExternalLink" and not (path.parent / kind[1]).is_file():
                    dangling.append(f"{path.name}:/{name} -> {kind[1]}")
    assert not dangling


def _string_kind(dt: np.dtype):
    info = h5py.check_string_dtype(dt)
    return None if info is None else info.encoding


def test_field_string_and_row_access(pair):
    """The ways the writers' readers reach the data: compound fields by name
    (astropy, pandas, NWB's TimeSeriesReferenceVectorData), .fields(), .asstr() on
    string datasets, iteration over rows, len(), astype()."""
    ref, got = pair
    problems = []
    for name in _hard_paths(ref):
        rd = ref[name]
        if not isinstance(rd, h5py.Dataset) or rd.shape is None:
            continue
        td, where = got[name], "/" + name
        dt = rd.dtype
        files = (ref, got) if hc.has_reference(dt) else None

        def check(what, exp_fn, got_fn):
            try:
                exp = exp_fn()
            except Exception:  # noqa: BLE001 - nothing to compare with
                return
            out, exc = hc.call(got_fn)
            if exc is not None:
                problems.append(f"{where} {what}: raised {exc!r}")
                return
            problem = (hc.reference_difference(exp, files[0], out, files[1]) if files
                       else _bit_difference(exp, out))
            if problem:
                problems.append(f"{where} {what}: {problem}")

        if dt.names:
            for field in dt.names:
                check(f"[{field!r}]", lambda: rd[field], lambda: td[field])
                check(f".fields({field!r})", lambda: rd.fields(field)[()], lambda: td.fields(field)[()])
            if len(dt.names) > 1:
                two = list(dt.names[-2:])
                check(f".fields({two})", lambda: rd.fields(two)[()], lambda: td.fields(two)[()])
        if _string_kind(dt) is not None:
            check(".asstr()", lambda: rd.asstr()[()], lambda: td.asstr()[()])
        if rd.ndim >= 1 and rd.size:
            if len(td) != len(rd):
                problems.append(f"{where}: len {len(td)} != h5py {len(rd)}")
            exp_rows = list(itertools.islice(iter(rd), 5))
            got_rows = hc.call(lambda: list(itertools.islice(iter(td), 5)))[0] or []
            if len(got_rows) != len(exp_rows):
                problems.append(f"{where} rows: {len(got_rows)} != h5py {len(exp_rows)}")
            for i, (er, gr) in enumerate(zip(exp_rows, got_rows)):
                check(f"row {i}", lambda: er, lambda: gr)
        if dt.kind in "iuf" and rd.size:
            check(".astype('<f8')", lambda: rd.astype("<f8")[()], lambda: td.astype("<f8")[()])
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:40])


def test_repack_cli_fresh_process_pandas_blosc_vlen(tmp_path):
    import subprocess
    import sys
    src = CORPUS / "pandas" / "store.h5"
    dst = tmp_path / "out.h5"
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    r = subprocess.run([sys.executable, "-m", "h5turbo", "repack", "-q", str(src), str(dst)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        assert _bit_difference(a["fixed/block3_values"][()], b["fixed/block3_values"][()]) is None
