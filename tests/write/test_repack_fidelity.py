"""h5turbo repack keeps what h5py's high level would lose or refuse, checked with h5py's
low level: each creation-order flag (links, attributes; tracked, indexed) of the root
group, every group and every dataset as SRC has it; link and attribute names that are
not UTF-8, byte for byte; fixed strings inside variable-length attributes with their
own padding; types numpy has no dtype for (VAX floats) copied as stored. Failures name
SRC and the object, and the CLI prints them on one line. h5turbo.write refuses chunk
sizes that are not integers."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo.cli import main as cli_main
from h5turbo.writing import repack as _repack
from support.common import corpus_dir

CORPUS = corpus_dir()
TRACKED, INDEXED = h5py.h5p.CRT_ORDER_TRACKED, h5py.h5p.CRT_ORDER_INDEXED
BOTH = TRACKED | INDEXED


# ------------------------------------------------------------------ helpers


def _attr_names(obj) -> list:
    """Attribute names as stored, in the order h5py lists them."""
    tracked = obj.id.get_create_plist().get_attr_creation_order() & TRACKED
    names: list = []
    h5py.h5a.iterate(obj.id, lambda name, *_: names.append(name),
                     index_type=h5py.h5.INDEX_CRT_ORDER if tracked else h5py.h5.INDEX_NAME)
    return names


def _orders(path) -> dict:
    """{path bytes: (kind, link flags, attribute flags, link names, attribute names)}
    for the root group and every object under it (by hard links, each object once)."""
    out: dict = {}
    with h5py.File(path, "r") as f:
        seen = set()

        def walk(obj, at: bytes):
            address = h5py.h5o.get_info(obj.id).addr
            if address in seen:
                return
            seen.add(address)
            plist = obj.id.get_create_plist()
            if isinstance(obj, h5py.Group):
                links = list(obj.id)
                out[at] = ("group", plist.get_link_creation_order(), plist.get_attr_creation_order(),
                           links, _attr_names(obj))
                for name in links:
                    if obj.id.links.get_info(name).type == h5py.h5l.TYPE_HARD:
                        walk(obj[name], at.rstrip(b"/") + b"/" + name)
            else:
                out[at] = (type(obj).__name__, None, plist.get_attr_creation_order(), None, _attr_names(obj))
        walk(f["/"], b"/")
    return out


def _with_order(parent, name: bytes, links: int, attrs: int):
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_link_creation_order(links)
    gcpl.set_attr_creation_order(attrs)
    return h5py.Group(h5py.h5g.create(parent.id, name, gcpl=gcpl))


def _dataset_with_attr_order(parent, name: bytes, attrs: int, values: np.ndarray, tid=None, fill=None):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_attr_creation_order(attrs)
    if fill is not None:
        dcpl.set_chunk((2,))
        dcpl.set_fill_value(fill)
    tid = tid if tid is not None else h5py.h5t.py_create(values.dtype, logical=True)
    ds = h5py.Dataset(h5py.h5d.create(parent.id, name, tid, h5py.h5s.create_simple(values.shape), dcpl=dcpl))
    ds[...] = values
    return ds


def _ordered_file(path, root_links: int, root_attrs: int):
    """Groups and datasets with each combination of flags, members and attributes
    created out of name order; datasets re-encoded, copied by libhdf5, and made again
    (variable-length strings with a fill value)."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_link_creation_order(root_links)
    fcpl.set_attr_creation_order(root_attrs)
    with h5py.File(h5py.h5f.create(bytes(path), h5py.h5f.ACC_TRUNC, fcpl=fcpl)) as f:
        for key in ("zeta", "alpha", "mid"):
            f.attrs[key] = 1
        for links, attrs in ((0, BOTH), (BOTH, 0), (TRACKED, TRACKED), (BOTH, TRACKED), (0, 0)):
            g = _with_order(f, f"g_{links}_{attrs}".encode(), links, attrs)
            for key in ("z", "a", "m"):
                g[key] = np.arange(3)
                g.attrs[key] = 2
        strings = np.array([b"b", b"a", b"c"], dtype=object)
        vlen = h5py.h5t.py_create(h5py.string_dtype("ascii"), logical=True)
        for attrs in (TRACKED, BOTH, 0):
            made = [_dataset_with_attr_order(f, f"numbers_{attrs}".encode(), attrs, np.arange(10.0)),
                    _dataset_with_attr_order(f, f"records_{attrs}".encode(), attrs,
                                             np.zeros(3, dtype=[("a", "i4"), ("b", "f8")])),
                    _dataset_with_attr_order(f, f"strings_{attrs}".encode(), attrs, strings, tid=vlen,
                                             fill=np.array(b"", dtype=h5py.string_dtype("ascii")))]
            for ds in made:
                for key in ("z", "a", "m"):
                    ds.attrs[key] = 3
    return path


# ------------------------------------------------------------ creation order


@pytest.mark.parametrize("root", [(0, BOTH), (BOTH, 0), (TRACKED, TRACKED), (0, 0)],
                         ids=["root-attrs", "root-links", "root-tracked-only", "root-none"])
def test_repack_keeps_each_creation_order_flag(tmp_path, root):
    src = _ordered_file(tmp_path / "src.h5", *root)
    dst = tmp_path / "dst.h5"
    summary = _repack.repack(src, dst)
    assert "/numbers_1" in summary["reencoded"] and "/records_1" in summary["copied"]
    assert "/strings_1" in summary["copied"]
    before, after = _orders(src), _orders(dst)
    assert before[b"/"][1:3] == root
    assert after == before


def _ordered_corpus_files() -> list:
    found = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix != ".md"):
        try:
            orders = _orders(path)
        except Exception:  # not HDF5, or not readable by h5py
            continue
        if any(flags for entry in orders.values() for flags in entry[1:3]):
            found.append(path)
    return found


# two jhdf files that libhdf5 cannot read (their global heaps) are left out: repack
# refuses them, as test_repack_error_names_file_and_object checks
ORDERED_CORPUS = [p for p in _ordered_corpus_files()
                  if p.name not in ("globalheaps_test.hdf5", "var-length-strings-reused.hdf5")]


def test_corpus_has_files_with_creation_order():
    names = {p.name for p in ORDERED_CORPUS}
    assert {"torderattr.h5", "tordergr.h5", "netcdf4_classic.nc"} <= names


@pytest.mark.parametrize("src", ORDERED_CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_repack_keeps_creation_order_of_corpus_file(src, tmp_path):
    """netCDF-4 files track both orders on the root group: their global attributes used
    to come out sorted by name."""
    dst = tmp_path / "dst.h5"
    _repack.repack(src, dst)
    assert _orders(dst) == _orders(src)


# --------------------------------------------------------- names not UTF-8


def _file_with_raw_names(path):
    with h5py.File(path, "w") as f:
        g = h5py.Group(h5py.h5g.create(f.id, b"g\xfe"))
        x = h5py.Dataset(h5py.h5d.create(g.id, b"x\xff", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((6,))))
        x[...] = np.arange(6)
        h5py.h5a.create(x.id, b"unit\xfc", h5py.h5t.STD_I32LE,
                        h5py.h5s.create(h5py.h5s.SCALAR)).write(np.array(7, "i4"))
        records = np.array([(1, 2.5)], dtype=[("a", "i4"), ("b", "f8")])
        r = h5py.Dataset(h5py.h5d.create(g.id, b"r\xfd", h5py.h5t.py_create(records.dtype),
                                         h5py.h5s.create_simple((1,))))
        r[...] = records
        _dataset_with_attr_order(g, b"s\xfb", 0, np.array([b"p", b"q"], dtype=object),
                                 tid=h5py.h5t.py_create(h5py.string_dtype("ascii"), logical=True),
                                 fill=np.array(b"", dtype=h5py.string_dtype("ascii")))
        # a soft link to a path that is not UTF-8, in a group beside a dataset
        links = h5py.Group(h5py.h5g.create(f.id, b"l\xf7"))
        links.id.links.create_soft(b"soft\xfa", b"/g\xfe/x\xff")
        links["blocked"] = np.arange(4.0)
        g.id.links.create_hard(b"z\xf9", g.id, b"x\xff")
        h5py.h5a.create(f.id, b"attr\xfe", h5py.h5t.STD_I32LE,
                        h5py.h5s.create(h5py.h5s.SCALAR)).write(np.array(5, "i4"))
        f.attrs.create(b"ref\xf8", x.ref, dtype=h5py.ref_dtype)
        f["fine"] = 1
    return path


def _raw_names(path) -> dict:
    """{path bytes: (link type, character set, soft target or None)} and every
    attribute name, all as stored."""
    out: dict = {}
    with h5py.File(path, "r") as f:
        def walk(group, at: bytes):
            out[at + b"@"] = _attr_names(group)
            for name in group.id:
                info = group.id.links.get_info(name)
                here = at.rstrip(b"/") + b"/" + name
                target = group.id.links.get_val(name) if info.type == h5py.h5l.TYPE_SOFT else None
                out[here] = (info.type, info.cset, target)
                if info.type == h5py.h5l.TYPE_HARD:
                    obj = group[name]
                    if isinstance(obj, h5py.Group):
                        walk(obj, here)
                    else:
                        out[here + b"@"] = _attr_names(obj)
        walk(f["/"], b"/")
    return out


def test_repack_keeps_names_that_are_not_utf8(tmp_path):
    src = _file_with_raw_names(tmp_path / "src.h5")
    dst = tmp_path / "dst.h5"
    summary = _repack.repack(src, dst)
    assert _raw_names(dst) == _raw_names(src)
    # the summary spells such names as os.fsdecode does: the bytes come back
    assert "/g\udcfe/x\udcff".encode("utf-8", "surrogateescape") == b"/g\xfe/x\xff"
    assert "/g\udcfe/x\udcff" in summary["reencoded"] and "/g\udcfe/r\udcfd" in summary["copied"]
    assert "/l\udcf7/blocked" in summary["reencoded"]
    with h5py.File(dst, "r") as f:
        x = f[b"/g\xfe/x\xff"]
        assert list(x[()]) == list(range(6)) and x.attrs[b"unit\xfc"] == 7
        assert f[b"/g\xfe/z\xf9"] == x  # still one object, two hard links
        assert f[f.attrs[b"ref\xf8"]] == x  # the reference remapped by path
        assert f[b"/g\xfe/r\xfd"][0].tolist() == (1, 2.5)
        assert list(f[b"/g\xfe/s\xfb"][()]) == [b"p", b"q"]
        assert f.attrs[b"attr\xfe"] == 5
        assert f[b"/l\xf7/soft\xfa"] == x and list(f[b"/l\xf7/blocked"][()]) == [0, 1, 2, 3]


def test_repack_cli_json_with_names_that_are_not_utf8(tmp_path, capsys):
    src = _file_with_raw_names(tmp_path / "src.h5")
    assert cli_main(["repack", "-q", "--json", str(src), str(tmp_path / "dst.h5")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "/g\udcfe/x\udcff" in summary["reencoded"]


# ----------------------------------------------------- types and exact bytes


def _raw_values(obj_id, tid):
    """A dataset's stored bytes, read with its own type (no conversion)."""
    values = np.empty(obj_id.shape, dtype=np.dtype((np.void, tid.get_size())))
    obj_id.read(h5py.h5s.ALL, h5py.h5s.ALL, values, mtype=tid)
    return values.tobytes()


@pytest.mark.skipif(not (CORPUS / "hdf5" / "tvms.h5").exists(), reason="corpus file missing")
def test_repack_copies_vax_floats_as_stored(tmp_path, capsys):
    """h5py has no numpy dtype for a VAX float (its byte order lookup raises KeyError):
    libhdf5 copies the dataset, type and bytes unchanged."""
    src = CORPUS / "hdf5" / "tvms.h5"
    dst = tmp_path / "dst.h5"
    assert cli_main(["repack", "-q", str(src), str(dst)]) == 0
    assert "1 copied" in capsys.readouterr().out
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        ta, tb = a["Array"].id.get_type(), b["Array"].id.get_type()
        assert ta.get_order() == tb.get_order() == h5py.h5t.ORDER_VAX
        assert tb.equal(ta)
        assert _raw_values(b["Array"].id, tb) == _raw_values(a["Array"].id, ta)


def test_repack_keeps_string_padding_inside_variable_length_attributes(tmp_path):
    """A SPACEPAD fixed string in a record holding a sequence: the attribute's type is
    kept exactly (it came out NULLPAD)."""
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    name = h5py.h5t.C_S1.copy()
    name.set_size(4)
    name.set_strpad(h5py.h5t.STR_SPACEPAD)
    record = h5py.h5t.create(h5py.h5t.COMPOUND, 4 + 16)
    record.insert(b"name", 0, name)
    record.insert(b"values", 4, h5py.h5t.vlen_create(h5py.h5t.STD_I16BE))
    numbers = h5py.vlen_dtype(np.dtype(">i2"))
    values = np.array([(b"ab", np.array([1, -2], ">i2")), (b"xyz", np.array([], ">i2"))],
                      dtype=[("name", "S4"), ("values", numbers)])
    with h5py.File(src, "w") as f:
        h5py.h5a.create(f.id, b"records", record, h5py.h5s.create_simple((2,))).write(
            values, mtype=h5py.h5t.py_create(values.dtype))
    _repack.repack(src, dst)
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        ta, tb = a.attrs.get_id("records").get_type(), b.attrs.get_id("records").get_type()
        assert tb.get_member_type(0).get_strpad() == h5py.h5t.STR_SPACEPAD
        assert tb.equal(ta)
        assert [bytes(v["name"]) for v in b.attrs["records"]] == [b"ab", b"xyz"]


def test_repack_frees_variable_length_values_it_copies(tmp_path):
    """Values with variable-length parts are moved through memory that libhdf5
    allocates: freed after each copy (h5py's own read of them leaks twice their size)."""
    import resource

    sequences = np.empty(64, dtype=h5py.vlen_dtype(np.dtype("f8")))
    for i in range(64):
        sequences[i] = np.arange(8192.0)  # 4 MiB in all
    with h5py.File(tmp_path / "src.h5", "w", libver="latest") as f:
        f.attrs["seq"] = sequences
        g = f.create_group("g")
        aid = h5py.h5a.open(f.id, b"seq")
        _repack._copy_attr_exactly(aid, g, b"seq")  # once before measuring: caches warmed
        h5py.h5a.delete(g.id, b"seq")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(25):
            _repack._copy_attr_exactly(aid, g, b"seq")
            h5py.h5a.delete(g.id, b"seq")
        grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024  # leaking, 25 copies would take 200 MiB


MATLAB_FILES = sorted((CORPUS / "matlab").glob("*.mat")) if (CORPUS / "matlab").exists() else []


def _matlab_fields(path) -> dict:
    """{object: (padding of the 1-byte strings, the names)} for every MATLAB_fields."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if "MATLAB_fields" in obj.attrs:
                base = obj.attrs.get_id("MATLAB_fields").get_type().get_super()
                out[name] = (base.get_strpad(), [bytes(v) for v in obj.attrs["MATLAB_fields"]])
        f.visititems(visit)
    return out


@pytest.mark.parametrize("src", [p for p in MATLAB_FILES if p.name == "struct.mat"], ids=lambda p: p.name)
def test_repack_keeps_matlab_fields_nullterm(src, tmp_path):
    """MATLAB_fields: a sequence of 1-byte NULLTERM strings with no room for the
    terminator. Kept NULLTERM, each name whole."""
    dst = tmp_path / "dst.h5"
    _repack.repack(src, dst)
    before = _matlab_fields(src)
    assert before and all(pad == h5py.h5t.STR_NULLTERM for pad, _ in before.values())
    assert _matlab_fields(dst) == before


# -------------------------------------------------------------------- errors


@pytest.mark.skipif(not (CORPUS / "jhdf" / "globalheaps_test.hdf5").exists(), reason="corpus file missing")
def test_repack_error_names_file_and_object(tmp_path, capsys):
    src = CORPUS / "jhdf" / "globalheaps_test.hdf5"
    with pytest.raises(_repack.RepackError, match=r"globalheaps_test\.hdf5: attribute 'attribute' of /: ") as info:
        _repack.repack(src, tmp_path / "dst.h5")
    assert isinstance(info.value.__cause__, OSError) and "global heap" in str(info.value.__cause__)
    assert list(tmp_path.iterdir()) == []
    assert cli_main(["repack", "-q", str(src), str(tmp_path / "dst.h5")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "globalheaps_test.hdf5: attribute 'attribute' of /" in err


def test_repack_error_keeps_the_kind_and_names_the_dataset(tmp_path, monkeypatch):
    """A libhdf5 failure copying a dataset: a RepackError that is still a RuntimeError,
    naming SRC and the dataset, the original as its cause."""
    src = _ordered_file(tmp_path / "src.h5", 0, 0)
    real = h5py.h5o.copy

    def failing(src_loc, src_name, *args, **kwargs):
        if src_name == b"records_3":
            raise RuntimeError("Unable to copy object\n(injected)")
        return real(src_loc, src_name, *args, **kwargs)
    monkeypatch.setattr(h5py.h5o, "copy", failing)
    with pytest.raises(RuntimeError) as info:
        _repack.repack(src, tmp_path / "dst.h5")
    assert isinstance(info.value, _repack.RepackError)
    assert str(info.value) == f"{src}: /records_3: Unable to copy object (injected)"
    assert str(info.value.__cause__) == "Unable to copy object\n(injected)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.h5"]


# -------------------------------------------------------------------- chunks


@pytest.mark.parametrize("chunks", [(2.5, 5), ("4", 5), (True, 5), (4, np.float32(5)), (4, None)])
def test_write_refuses_chunk_sizes_that_are_not_integers(tmp_path, chunks):
    path = tmp_path / "x.h5"
    with pytest.raises(h5turbo.ArgumentError, match=r"x\.h5.*data.*chunks=.*integers"):
        h5turbo.write(path, "data", np.zeros((10, 10)), chunks=chunks, mode="w")
    assert not path.exists()


def test_write_takes_numpy_integer_chunk_sizes(tmp_path):
    path = tmp_path / "x.h5"
    h5turbo.write(path, "data", np.zeros((10, 10)), chunks=(np.int64(4), np.uint8(5)), mode="w")
    h5turbo.write(path, "again", np.zeros((10, 10)), chunks=np.array([2, 5]))
    with h5py.File(path, "r") as f:
        assert f["data"].chunks == (4, 5) and f["again"].chunks == (2, 5)


@pytest.mark.parametrize("chunks", [(2.5, 5), ("4", 5), (True, 5), ()])
def test_repack_refuses_chunk_sizes_that_are_not_integers(tmp_path, chunks):
    src = _ordered_file(tmp_path / "src.h5", 0, 0)
    with pytest.raises(h5turbo.ArgumentError, match=r"src\.h5: chunks="):
        _repack.repack(src, tmp_path / "dst.h5", chunks=chunks)
