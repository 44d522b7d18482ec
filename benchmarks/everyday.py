"""Everyday operations, h5py against h5turbo: opening files, group lookups and listings
(old-style groups of 10, 1000 and 50000 members; new-style ones of 8, compact, and of
1000 and 50000, dense), visiting a tree, attributes, dataset properties, scalar and
single-element reads, rows and columns, fancy and boolean indexes, small datasets of
many dtypes, whole small arrays, astype, read_direct, iteration, compound fields,
object and region references, and a small ``.h5ad`` (when anndata is installed).
The big reads have benchmarks of their own (small_reads.py times row / column /
element loops on a gzip dataset; region_reads.py large region references).

The files are written once, with h5py, in a temporary folder (or ``--folder``, kept
and reused). Each reader runs in a process of its own (``--child``), the readers
interleaved and their order alternated round by round; in a round every operation is
called twice (warm-up), then repeated until one timing takes at least 20 ms (1, 2, 5,
10, 20, 50 ... calls, as timeit's autorange). The table gives the median microseconds
per call over the rounds, h5turbo's median over h5py's (above 1.2: h5turbo is slower,
marked), and the ratio of the two readers' fastest rounds, steadier on a loaded machine.

Where h5py has no equivalent (an unsorted or repeated index list, which h5py refuses)
its row times what h5py users write instead: read the sorted unique indices, then
reorder with numpy (``ds[u][inverse]``).

    python benchmarks/everyday.py [--rounds 5] [--only SUBSTRING ...] [--folder DIR] [--output FILE]
    python benchmarks/everyday.py --profile SUBSTRING [--reader h5turbo] [--folder DIR]  # cProfile"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MIN_TIME = 0.020  # seconds one timing takes at least
GROUP_SIZES = {"old": (10, 1000, 50000), "new": (8, 1000, 50000)}


# ---------------------------------------------------------------------- the files


def make_files(folder: Path) -> None:
    import h5py

    rng = np.random.default_rng(0)

    with h5py.File(folder / "small.h5", "w") as f:
        f["x"] = np.arange(10.0)
        f.attrs["title"] = "small"

    # a file whose root group holds 50000 datasets (h5py's default: an old-style group)
    with h5py.File(folder / "root50k.h5", "w") as f:
        for i in range(50000):
            f.create_dataset(f"m{i:05d}", data=i)

    # groups of scalar datasets: old-style (symbol table, h5py's default) of 10, 1000
    # and 50000; new-style (libver='latest') of 8 (compact: libhdf5 keeps up to 8 links
    # in the object header, and h5py cannot raise that), 1000 and 50000 (dense)
    for style in ("old", "new"):
        with h5py.File(folder / f"groups_{style}.h5", "w", libver="latest" if style == "new" else None) as f:
            for n in GROUP_SIZES[style]:
                g = f.create_group(f"g{n}")
                for i in range(n):
                    g.create_dataset(f"m{i:05d}", data=i)

    # a tree of 5050 objects: 50 groups x (10 groups x 9 datasets)
    with h5py.File(folder / "tree.h5", "w") as f:
        for a in range(50):
            ga = f.create_group(f"a{a:02d}")
            for b in range(10):
                gb = ga.create_group(f"b{b}")
                for c in range(9):
                    gb.create_dataset(f"d{c}", data=np.arange(4))

    with h5py.File(folder / "data.h5", "w") as f:
        # 50 attributes of mixed types
        d = f.create_dataset("withattrs", data=np.arange(10))
        for i in range(10):
            d.attrs[f"int{i}"] = np.int64(i)
            d.attrs[f"float{i}"] = i * 0.5
            d.attrs[f"vstr{i}"] = f"a string value {i}"  # h5py: variable-length UTF-8
            d.attrs[f"arr{i}"] = np.arange(i + 3, dtype="f8")
        for i in range(5):
            d.attrs[f"fstr{i}"] = np.bytes_(f"fixed{i}")
            d.attrs[f"vstrarr{i}"] = np.array([f"s{j}" for j in range(4)], dtype=h5py.string_dtype())
        assert len(d.attrs) == 50

        f.create_dataset("props", shape=(1000, 100), dtype="f4", chunks=(100, 100), compression="gzip",
                         maxshape=(None, 100), fillvalue=-1.0, data=np.ones((1000, 100), "f4"))

        f["s_f8"] = np.float64(3.5)
        f["s_vstr"] = "a scalar string"
        f["s_fstr"] = np.bytes_("fixed scalar")

        values = np.arange(100_000, dtype="f8")
        f.create_dataset("contig", data=values)
        f.create_dataset("chunked", data=values, chunks=(1000,))
        f.create_dataset("gzip", data=values, chunks=(1000,), compression="gzip")
        # read whole only, by one op: no earlier partial read has left its chunks cached
        f.create_dataset("gzip_whole", data=values, chunks=(1000,), compression="gzip")
        f.create_dataset("m2d", data=np.arange(4_000_000, dtype="f4").reshape(2000, 2000), chunks=(100, 100))
        f.create_dataset("m2dgz", data=np.arange(4_000_000, dtype="f4").reshape(2000, 2000), chunks=(100, 100),
                         compression="gzip")

        f["i4"] = np.arange(10, dtype="i4")
        f["f8"] = np.arange(10, dtype="f8")
        cmpd = np.dtype([("a", "i4"), ("b", "f8"), ("c", "S8")])
        f["cmpd"] = np.array([(i, i / 2, b"x%d" % i) for i in range(10)], dtype=cmpd)
        f.create_dataset("vstr", data=[f"value {i}" for i in range(10)], dtype=h5py.string_dtype())
        f["fstr"] = np.array([b"fixed%d" % i for i in range(10)], dtype="S10")
        f.create_dataset("enum", data=np.arange(10, dtype="i1") % 3,
                         dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1"))

        f.create_dataset("rows", data=np.arange(10_000, dtype="f4").reshape(500, 20))
        big = np.dtype([("a", "i4"), ("b", "f8"), ("c", "f4"), ("d", "i8")])
        f.create_dataset("cmp10k", data=np.zeros(10_000, dtype=big), chunks=(1000,))

        targets = f.create_group("targets")
        refs = []
        for i in range(100):
            refs.append(targets.create_dataset(f"t{i:02d}", data=np.arange(3)).ref)
        f.create_dataset("refs", data=np.array(refs, dtype=h5py.ref_dtype))

        m2d = f["m2d"]
        f.attrs["box"] = m2d.regionref[10:20, 30:40]
        space = m2d.id.get_space()
        space.select_elements(np.array([[1, 2], [3, 4], [50, 60], [700, 800], [1999, 1999]]))
        f.attrs["pts"] = h5py.h5r.create(m2d.id, b".", h5py.h5r.DATASET_REGION, space)

    try:
        import anndata
        import pandas as pd
        import scipy.sparse as sp
    except ImportError:
        return
    n_obs, n_vars = 1000, 500
    obs = pd.DataFrame({"n_counts": rng.random(n_obs), "batch": pd.Categorical(rng.choice(["a", "b", "c"], n_obs)),
                        "ok": rng.random(n_obs) > 0.5}, index=[f"cell{i}" for i in range(n_obs)])
    var = pd.DataFrame({"gene_ids": [f"ENSG{i:08d}" for i in range(n_vars)]},
                       index=[f"gene{i}" for i in range(n_vars)])
    X = sp.random(n_obs, n_vars, density=0.05, format="csr", dtype="f4", random_state=0)
    adata = anndata.AnnData(X=X, obs=obs, var=var)
    adata.obsm["X_pca"] = rng.random((n_obs, 20)).astype("f4")
    adata.layers["counts"] = X.copy()
    adata.uns["note"] = "small"
    adata.write_h5ad(folder / "small.h5ad")


# ---------------------------------------------------------------------- the operations
# Each op: setup(h5, folder, files) -> (call, calls_inside): `call` runs the operation
# `calls_inside` times (per-call time = timing / calls_inside). `h5` is h5py or h5turbo;
# `files(name)` gives that file opened once for the child's whole run.

OPS: dict[str, tuple[str, callable]] = {}  # name -> (section, setup)


def op(name: str, section: str):
    def register(setup):
        OPS[name] = (section, setup)
        return setup
    return register


def _open_close(path):
    def setup(h5, folder, files):
        p = str(folder / path)
        return (lambda: h5.File(p, "r").close()), 1
    return setup


op("open + close, small file", "files")(_open_close("small.h5"))
op("open + close, root of 50000 members", "files")(_open_close("root50k.h5"))


def _open_then(path: str, action):
    """Open `path`, do `action(file)`, close: per call."""
    def setup(h5, folder, files):
        p = str(folder / path)

        def call():
            with h5.File(p, "r") as f:
                action(f)
        return call, 1
    return setup


op("open + f['x'][()] + close, small file", "files")(_open_then("small.h5", lambda f: f["x"][()]))
op("open + len(root) + close, root of 50000", "files")(_open_then("root50k.h5", len))
op("open + 'm25000' in root + close, root of 50000", "files")(_open_then("root50k.h5", lambda f: "m25000" in f))


def _group_ops(style: str, n: int):
    fname = f"groups_{style}.h5"
    label = {"old": "old-style", "new": "compact" if n <= 8 else "dense"}[style]
    member = f"m{n // 2:05d}"

    def held(h5, files):
        return files(fname)[f"g{n}"]

    def setup_len(h5, folder, files):
        g = held(h5, files)
        return (lambda: len(g)), 1

    def setup_list(h5, folder, files):
        g = held(h5, files)
        return (lambda: list(g)), 1

    def setup_in(h5, folder, files):
        g = held(h5, files)
        return (lambda: member in g), 1

    def setup_missing(h5, folder, files):
        g = held(h5, files)
        return (lambda: "nope" in g), 1

    def setup_get(h5, folder, files):
        g = held(h5, files)
        return (lambda: g[member]), 1

    def setup_path(h5, folder, files):
        f = files(fname)
        path = f"g{n}/{member}"
        return (lambda: f[path]), 1

    def setup_fresh_len(h5, folder, files):
        f = files(fname)
        key = f"g{n}"
        return (lambda: len(f[key])), 1

    def setup_items(h5, folder, files):
        g = held(h5, files)

        def call():
            for _name, _obj in g.items():
                pass
        return call, 1

    section = f"groups ({label}, {n})"
    op(f"len(g), {label} {n}", section)(setup_len)
    op(f"list(g), {label} {n}", section)(setup_list)
    op(f"name in g, {label} {n}", section)(setup_in)
    op(f"missing name in g, {label} {n}", section)(setup_missing)
    op(f"g[name], {label} {n}", section)(setup_get)
    op(f"f['g/name'], {label} {n}", section)(setup_path)
    op(f"len(f['g']), {label} {n}", section)(setup_fresh_len)
    if n <= 1000:  # 50000 objects opened one by one: seconds a call in h5py
        op(f"for name, obj in g.items(), {label} {n}", section)(setup_items)


for _style in ("old", "new"):
    for _n in GROUP_SIZES[_style]:
        _group_ops(_style, _n)


@op("f.visit(func), 5050 objects", "visiting")
def _(h5, folder, files):
    f = files("tree.h5")
    return (lambda: f.visit(lambda name: None)), 1


@op("f.visititems(func), 5050 objects", "visiting")
def _(h5, folder, files):
    f = files("tree.h5")
    return (lambda: f.visititems(lambda name, obj: None)), 1


@op("f['a07'].visit(func), 101 objects", "visiting")
def _(h5, folder, files):
    g = files("tree.h5")["a07"]
    return (lambda: g.visit(lambda name: None)), 1


def _attrs(name, make_call):
    op(name, "attributes")(lambda h5, folder, files: (make_call(files("data.h5")["withattrs"]), 1))


_attrs("dict(ds.attrs), 50 mixed", lambda d: lambda: dict(d.attrs))
_attrs("list(ds.attrs), 50", lambda d: lambda: list(d.attrs))
_attrs("len(ds.attrs), 50", lambda d: lambda: len(d.attrs))
_attrs("'float3' in ds.attrs", lambda d: lambda: "float3" in d.attrs)
_attrs("ds.attrs['int3'] (int64)", lambda d: lambda: d.attrs["int3"])
_attrs("ds.attrs['float3'] (float64)", lambda d: lambda: d.attrs["float3"])
_attrs("ds.attrs['vstr3'] (vlen str)", lambda d: lambda: d.attrs["vstr3"])
_attrs("ds.attrs['fstr3'] (fixed bytes)", lambda d: lambda: d.attrs["fstr3"])
_attrs("ds.attrs['arr7'] (f8 array)", lambda d: lambda: d.attrs["arr7"])
_attrs("ds.attrs['vstrarr3'] (vlen str array)", lambda d: lambda: d.attrs["vstrarr3"])
_attrs("ds.attrs.get('missing')", lambda d: lambda: d.attrs.get("missing"))

PROPERTIES = ("shape", "dtype", "chunks", "compression", "fillvalue", "maxshape")

for _prop in PROPERTIES:
    op(f"ds.{_prop} (held dataset)", "dataset properties")(
        lambda h5, folder, files, _prop=_prop: (
            (lambda d: (lambda: getattr(d, _prop)))(files("data.h5")["props"]), 1))


@op("f['props'] + its 6 properties", "dataset properties")
def _(h5, folder, files):
    f = files("data.h5")

    def call():
        d = f["props"]
        return d.shape, d.dtype, d.chunks, d.compression, d.fillvalue, d.maxshape
    return call, 1


@op("f['props'] (open a dataset)", "dataset properties")
def _(h5, folder, files):
    f = files("data.h5")
    return (lambda: f["props"]), 1


@op("len(ds), ds.ndim, ds.size", "dataset properties")
def _(h5, folder, files):
    d = files("data.h5")["props"]
    return (lambda: (len(d), d.ndim, d.size)), 1


for _name, _label in (("s_f8", "float64"), ("s_vstr", "vlen str"), ("s_fstr", "fixed bytes")):
    op(f"ds[()] scalar {_label}", "scalar reads")(
        lambda h5, folder, files, _name=_name: ((lambda d: (lambda: d[()]))(files("data.h5")[_name]), 1))


def _loop(name, section, dataset, index_of, count=100, read=None):
    def setup(h5, folder, files):
        d = files("data.h5")[dataset]
        indexes = [index_of(i) for i in range(count)]

        def call():
            for i in indexes:
                d[i]
        return call, count
    op(name, section)(setup)


for _name in ("contig", "chunked", "gzip"):
    _loop(f"ds[i] loop, 1-d f8, {_name}", "single elements", _name, lambda i: (i * 997) % 100_000)
_loop("ds[i, j] loop, 2000x2000 chunked", "single elements", "m2d", lambda i: ((i * 37) % 2000, (i * 91) % 2000))
_loop("ds[i, :] row loop, 2000x2000 chunked 100x100", "rows and columns", "m2d",
      lambda i: (i * 17 % 2000, slice(None)), count=50)
_loop("ds[:, j] column loop, 2000x2000 chunked 100x100", "rows and columns", "m2d",
      lambda i: (slice(None), i * 17 % 2000), count=20)
_loop("ds[i, :] rows 0..49 in order, 2000x2000 chunked 100x100", "rows and columns", "m2d",
      lambda i: (i, slice(None)), count=50)
_loop("ds[:, j] columns 0..19 in order, 2000x2000 chunked 100x100", "rows and columns", "m2d",
      lambda i: (slice(None), i), count=20)
_loop("ds[i, :] rows 0..49 in order, 2000x2000 gzip 100x100", "rows and columns", "m2dgz",
      lambda i: (i, slice(None)), count=50)
_loop("ds[i, 100:200] short row loop, 2000x2000", "rows and columns", "m2d",
      lambda i: (i * 17 % 2000, slice(100, 200)), count=100)
_loop("ds[a:a+10] slice loop, 1-d chunked", "rows and columns", "chunked",
      lambda i: slice(i * 997 % 99_000, i * 997 % 99_000 + 10), count=100)


def _fancy(name, dataset, indexes, h5py_workaround=False, rows=False):
    def setup(h5, folder, files):
        d = files("data.h5")[dataset]
        idx = np.asarray(indexes)
        key = (idx, slice(None)) if rows else idx
        if h5py_workaround and h5.__name__ == "h5py":
            unique, inverse = np.unique(idx, return_inverse=True)
            ukey = (unique, slice(None)) if rows else unique
            return (lambda: d[ukey][inverse]), 1
        return (lambda: d[key]), 1
    op(name, "fancy and boolean indexes")(setup)


_rng = np.random.default_rng(1)
_idx100 = _rng.choice(100_000, 100, replace=False)
_fancy("ds[sorted 100 of 100000], chunked", "chunked", np.sort(_idx100))
_fancy("ds[sorted 100 of 100000], contiguous", "contig", np.sort(_idx100))
_fancy("ds[unsorted 100] (h5py: unique + reorder)", "chunked", _idx100, h5py_workaround=True)
_fancy("ds[100 with repeats] (h5py: unique + reorder)", "chunked",
       np.sort(np.concatenate([_idx100[:50], _idx100[:50]])), h5py_workaround=True)
_fancy("ds[sorted 50 rows, :] of 2000x2000", "m2d", np.sort(_rng.choice(2000, 50, replace=False)), rows=True)
_fancy("ds[[3, 7, 11]] of 100000, chunked", "chunked", [3, 7, 11])
_mask = _rng.random(100_000) < 0.1
_fancy("ds[mask 10% of 100000], chunked", "chunked", _mask)
_fancy("ds[mask 10% of 100000], gzip", "gzip", _mask)
_fancy("ds[mask of 2000 rows, :] of 2000x2000 (5%)", "m2d", _rng.random(2000) < 0.05, rows=True)

for _name in ("i4", "f8", "cmpd", "vstr", "fstr", "enum"):
    op(f"ds[...] 10 elements, {_name}", "small datasets")(
        lambda h5, folder, files, _name=_name: ((lambda d: (lambda: d[...]))(files("data.h5")[_name]), 1))
op("ds[()] 10 elements, i4", "small datasets")(
    lambda h5, folder, files: ((lambda d: (lambda: d[()]))(files("data.h5")["i4"]), 1))
op("np.asarray(ds) 10 elements, f8", "small datasets")(
    lambda h5, folder, files: ((lambda d: (lambda: np.asarray(d)))(files("data.h5")["f8"]), 1))
op("f['f8'][:] (open + read) 10 elements", "small datasets")(
    lambda h5, folder, files: ((lambda f: (lambda: f["f8"][:]))(files("data.h5")), 1))
op("ds.asstr()[...] 10 vlen str", "small datasets")(
    lambda h5, folder, files: ((lambda d: (lambda: d.asstr()[...]))(files("data.h5")["vstr"]), 1))


for _name in ("contig", "chunked", "gzip"):
    op(f"ds[:] 100000 f8, {_name}", "whole small arrays")(
        lambda h5, folder, files, _name=_name: ((lambda d: (lambda: d[:]))(files("data.h5")[_name]), 1))
op("ds[:] again, 100000 f8, gzip, only ever read whole", "whole small arrays")(
    lambda h5, folder, files: ((lambda d: (lambda: d[:]))(files("data.h5")["gzip_whole"]), 1))
op("ds[:] 500 x 20 f4 contiguous", "whole small arrays")(
    lambda h5, folder, files: ((lambda d: (lambda: d[:]))(files("data.h5")["rows"]), 1))


@op("ds.name, ds.parent, ds.file", "dataset properties")
def _(h5, folder, files):
    d = files("data.h5")["targets/t05"]
    return (lambda: (d.name, d.parent, d.file)), 1


@op("dict(f.attrs) (root, 1 string)", "attributes")
def _(h5, folder, files):
    f = files("small.h5")
    return (lambda: dict(f.attrs)), 1


@op("ds.astype('f4')[...] 10 f8", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["f8"]
    return (lambda: d.astype("f4")[...]), 1


@op("ds.astype('f4')[...] 100000 f8 contiguous", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["contig"]
    return (lambda: d.astype("f4")[...]), 1


@op("ds.astype('f4')[0:10] of 100000", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["contig"]
    return (lambda: d.astype("f4")[0:10]), 1


@op("ds.read_direct(out) 10 f8", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["f8"]
    out = np.empty(10, "f8")
    return (lambda: d.read_direct(out)), 1


@op("ds.read_direct(out) 100000 f8 contiguous", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["contig"]
    out = np.empty(100_000, "f8")
    return (lambda: d.read_direct(out)), 1


@op("ds.read_direct(out, np.s_[0:10], np.s_[0:10]) of 100000", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["contig"]
    out = np.empty(10, "f8")
    return (lambda: d.read_direct(out, np.s_[0:10], np.s_[0:10])), 1


@op("for row in ds (500 rows of 20 f4)", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["rows"]

    def call():
        for _row in d:
            pass
    return call, 1


@op("for row in ds (200 rows of 100 f4, gzip 100x100)", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["m2dgz"]

    def call():
        for i, _row in enumerate(d):
            if i == 199:
                break
    return call, 1


@op("ds.fields(['a', 'c'])[...] of 10000 compound", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["cmp10k"]
    return (lambda: d.fields(["a", "c"])[...]), 1


@op("ds['b'] of 10000 compound", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["cmp10k"]
    return (lambda: d["b"]), 1


@op("ds[...] of 10000 compound", "conversions and views")
def _(h5, folder, files):
    d = files("data.h5")["cmp10k"]
    return (lambda: d[...]), 1


@op("refs[...] (100 object references)", "references")
def _(h5, folder, files):
    d = files("data.h5")["refs"]
    return (lambda: d[...]), 1


@op("f[ref] loop (100 object references)", "references")
def _(h5, folder, files):
    f = files("data.h5")
    refs = list(f["refs"][...])

    def call():
        for r in refs:
            f[r]
    return call, len(refs)


@op("f[ref][()] loop (100 object references)", "references")
def _(h5, folder, files):
    f = files("data.h5")
    refs = list(f["refs"][...])

    def call():
        for r in refs:
            f[r][()]
    return call, len(refs)


@op("f[regref] (dereference a region reference)", "references")
def _(h5, folder, files):
    f = files("data.h5")
    ref = f.attrs["box"]
    return (lambda: f[ref]), 1


def _region_read(attr):
    """ds[ref] for the region reference in data.h5's attribute `attr`."""
    def setup(h5, folder, files):
        f = files("data.h5")
        ref = f.attrs[attr]
        d = f[ref]
        return (lambda: d[ref]), 1
    return setup


op("ds[regref] 10x10 box of 2000x2000", "references")(_region_read("box"))
op("ds[regref] 5 points of 2000x2000", "references")(_region_read("pts"))


@op("f.attrs['box'] (read a region reference)", "references")
def _(h5, folder, files):
    f = files("data.h5")
    return (lambda: f.attrs["box"]), 1


@op("read_h5ad, 1000 x 500 CSR + obs/var/obsm/layers", "h5ad")
def _(h5, folder, files):
    path = folder / "small.h5ad"
    if not path.exists():
        return None
    if h5.__name__ == "h5py":
        import anndata
        return (lambda: anndata.read_h5ad(path)), 1
    return (lambda: h5.read_h5ad(path)), 1


# ---------------------------------------------------------------------- the child


def autorange(call) -> tuple[int, float]:
    """(calls, seconds): repeat until one timing takes MIN_TIME, as timeit's autorange."""
    n = 1
    while True:
        for factor in (1, 2, 5):
            number = n * factor
            start = time.perf_counter()
            for _ in range(number):
                call()
            elapsed = time.perf_counter() - start
            if elapsed >= MIN_TIME:
                return number, elapsed
        n *= 10


def prepared_ops(module: str, folder: Path, only: list[str]):
    """(reader module, iterator of (name, call, calls inside one call) of the ops whose
    name holds one of `only` (all when empty), close) with the files opened on demand."""
    import importlib
    h5 = importlib.import_module(module)
    opened: dict = {}

    def files(name):
        if name not in opened:
            opened[name] = h5.File(str(folder / name), "r")
        return opened[name]

    def ops():
        for name, (_section, setup) in OPS.items():
            if only and not any(s in name for s in only):
                continue
            made = setup(h5, folder, files)
            if made is not None:
                yield name, made[0], made[1]

    def close():
        for f in opened.values():
            f.close()
    return h5, ops(), close


def child(module: str, folder: Path, only: list[str]) -> None:
    _h5, ops, close = prepared_ops(module, folder, only)
    out = {}
    for name, call, inside in ops:
        call()
        call()  # warm-up
        number, elapsed = autorange(call)
        out[name] = elapsed / number / inside * 1e6
    close()
    print(json.dumps(out))


def run_child(module: str, folder: Path, only: list[str]) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", module, "--folder", str(folder)]
                          + [a for s in only for a in ("--only", s)],
                          capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"{module} child failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def profile(module: str, folder: Path, only: list[str]) -> None:
    """cProfile of each matching op (after its warm-up), sorted by own time."""
    import cProfile
    import pstats
    _h5, ops, _close = prepared_ops(module, folder, only)
    for name, call, _inside in ops:
        call()
        number, _elapsed = autorange(call)
        number = max(number, 5)
        print(f"==== {module}: {name} ({number} calls)")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(number):
            call()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", action="append", default=[], help="ops whose name contains this (repeatable)")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help="use (or fill) this folder of files instead of a temporary one")
    parser.add_argument("--profile", action="append", default=[], help="cProfile ops whose name contains this")
    parser.add_argument("--reader", default="h5turbo", help="module --profile profiles")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder, args.only)
        return

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or Path(tmp)
        started = time.perf_counter()
        if not (folder / "data.h5").exists():
            make_files(folder)
        made_s = time.perf_counter() - started
        if args.profile:
            profile(args.reader, folder, args.profile)
            return
        load_before = loadavg()
        readers = ["h5py", "h5turbo"]
        runs: dict = {r: {} for r in readers}
        for rnd in range(args.rounds):
            for reader in (readers if rnd % 2 == 0 else readers[::-1]):
                for name, us in run_child(reader, folder, args.only).items():
                    runs[reader].setdefault(name, []).append(us)
        load_after = loadavg()
        total_s = time.perf_counter() - started

    versions = _versions()
    lines = [
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.system()} {platform.release()}",
        f"- versions: {versions}",
        f"- command: `python benchmarks/everyday.py --rounds {args.rounds}"
        + "".join(f" --only {s!r}" for s in args.only) + "`",
        f"- {args.rounds} rounds, readers interleaved (order alternated), each in a fresh process; per op "
        f"2 warm-up calls, then repeated until one timing takes >= {MIN_TIME * 1e3:.0f} ms; "
        "median over the rounds, in microseconds per call",
        f"- load average (1/5/15 min) before: {load_before}, after: {load_after}; "
        f"files written in {made_s:.0f} s, whole run {total_s:.0f} s",
        "",
        "Columns: median microseconds per call over the rounds; their ratio (above 1.2: h5turbo "
        "slower, marked); and the ratio of each reader's fastest round, less disturbed by other "
        "work on a loaded machine.",
        "",
        "| section | operation | h5py (us) | h5turbo (us) | h5turbo / h5py | fastest rounds' ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    slow = []
    for name, (section, _setup) in OPS.items():
        if name not in runs["h5py"] or name not in runs["h5turbo"]:
            continue
        a, b = statistics.median(runs["h5py"][name]), statistics.median(runs["h5turbo"][name])
        ratio = b / a
        best = min(runs["h5turbo"][name]) / min(runs["h5py"][name])
        mark = " **slower**" if ratio > 1.2 else ""
        lines.append(f"| {section} | {name} | {_fmt(a)} | {_fmt(b)} | {ratio:.2f}{mark} | {best:.2f} |")
        if ratio > 1.2:
            slow.append((ratio, name, a, b, best))
    lines += ["", f"{len(slow)} operations where h5turbo takes more than 1.2x h5py's time:", ""]
    lines += [f"- {name}: {_fmt(a)} vs {_fmt(b)} us ({ratio:.2f}x; fastest rounds {best:.2f}x)"
              for ratio, name, a, b, best in sorted(slow, reverse=True)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text)


def _fmt(us: float) -> str:
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version
    parts = []
    for dist in ("h5turbo", "h5py", "numpy", "anndata"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            pass
    import h5py
    parts.append(f"libhdf5 {h5py.version.hdf5_version}")
    return ", ".join(parts)


if __name__ == "__main__":
    main()
