"""h5turbo repack: every corpus file h5py can read, rewritten and compared object by
object with h5py (values, dtypes, attributes, fill values, links); interrupted
repacks leave nothing behind; SRC is never modified."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo.writing import repack as _repack, write as _write
from h5turbo.cli import main as cli_main
import json
from support.h5compare import difference

from support.common import corpus_dir

CORPUS = corpus_dir()


def _h5py_readable(path: Path) -> bool:
    try:
        with h5py.File(path, "r") as f:
            def touch(_name, obj):
                if isinstance(obj, h5py.Dataset):
                    obj[()]
                for key in obj.attrs:
                    obj.attrs[key]
            touch("/", f)
            f.visititems(touch)
        return True
    except Exception:
        return False


CORPUS_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix != ".md"
                      and _h5py_readable(p))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read(ds):
    try:
        return ds[()], None
    except Exception as exc:  # e.g. a filter h5py's plugins cannot decode
        return None, type(exc).__name__


def _paths_by_object(f) -> dict:
    """Every hard-link path of each object of a file (an object linked twice has two)."""
    paths: dict = {}

    def visit(name, link):
        if isinstance(link, h5py.HardLink):
            paths.setdefault(_repack._object_key(f[name]), set()).add("/" + name)
    f.visititems_links(visit)
    return paths


def _refs_equal(a, b, fa, fb) -> bool:
    """References compare by the paths of what they point to (all of them: which name
    libhdf5 reports for an object linked twice is not fixed)."""
    def target(ref, f):
        if not ref:
            return None
        try:
            obj = f[ref]
        except Exception:
            return "<unresolvable>"
        return frozenset(_paths_by_object(f).get(_repack._object_key(obj), {obj.name}))
    if isinstance(a, h5py.RegionReference) or isinstance(b, h5py.RegionReference):
        return type(a) is type(b) and target(a, fa) == target(b, fb) and region(a, fa) == region(b, fb)
    return target(a, fa) == target(b, fb)


def region(ref, f):
    """What a region reference selects: its kind and its points or blocks."""
    if not ref:
        return None
    space = h5py.h5r.get_region(ref, f[ref].id)
    kind = space.get_select_type()
    if kind == h5py.h5s.SEL_POINTS:
        return kind, space.get_select_elem_pointlist().tolist()
    if kind == h5py.h5s.SEL_HYPERSLABS:
        return kind, space.get_select_hyper_blocklist().tolist()
    return kind, space.get_select_npoints()


def _value_difference(a, b, fa, fb, dtype) -> str | None:
    if h5py.check_dtype(ref=dtype) is not None or _repack._holds_refs(dtype):
        flat_a = [a] if not isinstance(a, np.ndarray) else list(np.asarray(a).reshape(-1))
        flat_b = [b] if not isinstance(b, np.ndarray) else list(np.asarray(b).reshape(-1))
        if len(flat_a) != len(flat_b):
            return "reference count differs"
        for x, y in zip(flat_a, flat_b):
            if isinstance(x, (h5py.Reference, h5py.RegionReference)):
                if not _refs_equal(x, y, fa, fb):
                    return "reference target differs"
        return None
    return difference(a, b)


def compare_files(src: Path, dst: Path) -> list[str]:
    problems = []
    with h5py.File(src, "r") as fa, h5py.File(dst, "r") as fb:
        def walk(ga, gb):
            if list(ga.keys()) != list(gb.keys()):
                problems.append(f"{ga.name}: members {list(ga.keys())} != {list(gb.keys())}")
                return
            compare_attrs(ga, gb)
            for name in ga:
                la, lb = ga.get(name, getlink=True), gb.get(name, getlink=True)
                if type(la) is not type(lb):
                    problems.append(f"{ga.name}/{name}: link {type(la).__name__} != {type(lb).__name__}")
                    continue
                if isinstance(la, h5py.SoftLink):
                    if la.path != lb.path:
                        problems.append(f"{name}: soft link {la.path} != {lb.path}")
                    continue
                if isinstance(la, h5py.ExternalLink):
                    if (la.filename, la.path) != (lb.filename, lb.path):
                        problems.append(f"{name}: external link differs")
                    continue
                a, b = ga[name], gb[name]
                if type(a) is not type(b):
                    problems.append(f"{a.name}: {type(a).__name__} != {type(b).__name__}")
                elif isinstance(a, h5py.Group):
                    walk(a, b)
                elif isinstance(a, h5py.Dataset):
                    compare_dataset(a, b)

        def compare_attrs(a, b):
            if sorted(a.attrs.keys()) != sorted(b.attrs.keys()):
                problems.append(f"{a.name}: attrs {sorted(a.attrs)} != {sorted(b.attrs)}")
                return
            for key in a.attrs:
                dt = a.attrs.get_id(key).dtype
                if dt != b.attrs.get_id(key).dtype:
                    problems.append(f"{a.name}@{key}: attr dtype {dt} != {b.attrs.get_id(key).dtype}")
                    continue
                base = h5py.check_vlen_dtype(dt)
                if base is not None and np.dtype(base).byteorder == ">":
                    continue  # h5py misreads vlen sequences of big-endian numbers (both files)
                try:
                    va = a.attrs[key]
                except Exception:
                    continue  # h5py cannot read it either
                p = _value_difference(va, b.attrs[key], fa, fb, dt)
                if p:
                    problems.append(f"{a.name}@{key}: {p}")

        def compare_dataset(a, b):
            compare_attrs(a, b)
            if (a.shape, a.dtype) != (b.shape, b.dtype):
                problems.append(f"{a.name}: {a.shape} {a.dtype} != {b.shape} {b.dtype}")
                return
            if h5py.check_dtype(ref=a.dtype) is None:
                try:
                    fa_ = a.fillvalue
                except RuntimeError:  # undefined fill value
                    fa_ = None
                fb_ = b.fillvalue if fa_ is not None else None
                if fa_ is not None and difference(fa_, fb_) and not (np.asarray(fa_).tobytes() == np.asarray(fb_).tobytes()):
                    problems.append(f"{a.name}: fill value {fa_!r} != {fb_!r}")
            va, ea = _read(a)
            if ea:
                return  # unreadable in SRC with h5py: nothing to compare
            vb, eb = _read(b)
            if eb:
                problems.append(f"{a.name}: DST unreadable by h5py ({eb})")
                return
            p = _value_difference(va, vb, fa, fb, a.dtype)
            if p:
                problems.append(f"{a.name}: {p}")

        walk(fa, fb)
        # hard links: two paths to one object in SRC are one object in DST
        seen = {}

        def collect(name, obj):
            key = h5py.h5o.get_info(obj.id).addr
            seen.setdefault(key, []).append(name)
        fa.visititems(collect)
        for names in seen.values():
            if len(names) > 1:
                addrs = {h5py.h5o.get_info(fb[n].id).addr for n in names if n in fb}
                if len(addrs) != 1:
                    problems.append(f"hard links {names} no longer one object")
    return problems


@pytest.mark.parametrize("src", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_repack_corpus_file(src, tmp_path):
    dst = tmp_path / "out.h5"
    before = sha256(src)
    summary = _repack.repack(src, dst, compression="zstd", chunks="auto")
    assert sha256(src) == before, "SRC was modified"
    assert compare_files(src, dst) == []
    assert [p for p in tmp_path.iterdir() if p.name != "out.h5"] == []
    assert isinstance(summary["reencoded"], list)


def _made_file(path: Path) -> Path:
    """Groups, attributes, links of every kind, a fill value, references, strings."""
    with h5py.File(path, "w") as f:
        rng = np.random.default_rng(0)
        g = f.create_group("g", track_order=True)
        g.attrs["title"] = "made"
        g.create_dataset("m", data=rng.integers(0, 9, (300, 200)).astype("i2"), chunks=(50, 50),
                         compression="gzip", shuffle=True, fillvalue=-1)
        g.create_dataset("f", data=rng.normal(size=(1000,)), compression="lzf")
        g.create_dataset("s", data=np.array(["a", "bc"], dtype=h5py.string_dtype()))
        g.create_dataset("scalar", data=3.5)
        f["hard"] = g["m"]
        f["soft"] = h5py.SoftLink("/g/f")
        f["ext"] = h5py.ExternalLink("other.h5", "/x")
        f.create_dataset("refs", data=np.array([g["m"].ref, g.ref], dtype=h5py.ref_dtype))
        f.attrs["ref"] = g["f"].ref
        m = g["m"]
        f.create_dataset("regions", data=np.array(
            [m.regionref[10:40, 5:150:7], m.regionref[...], m.regionref[3, 4], h5py.RegionReference()],
            dtype=h5py.regionref_dtype))
        f.attrs["region"] = g["f"].regionref[100:200:3]
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"compact", h5py.h5t.NATIVE_INT64, h5py.h5s.create_simple((10,)), dcpl=dcpl)
        f["compact"][...] = np.arange(10)
    return path


def test_repack_keeps_structure_links_and_fill_values(tmp_path):
    src = _made_file(tmp_path / "src.h5")
    dst = tmp_path / "dst.h5"
    summary = _repack.repack(src, dst, compression="lz4", chunks=(64, 64))
    assert compare_files(src, dst) == []
    assert sorted(summary["reencoded"]) == ["/g/f", "/g/m"]
    with h5py.File(dst, "r") as f:
        assert f["g/m"].fillvalue == -1 and f["g/m"].chunks == (64, 64)
        assert f["g/m"].id.get_create_plist().get_filter(0)[0] == 32004
        assert f["g/f"].chunks == (1000,)  # other rank: auto chunks
        assert f[f.attrs["ref"]].name == "/g/f"
        # region references select the same elements of the rewritten datasets
        with h5py.File(src, "r") as s:
            for ours, theirs in zip(f["regions"][()], s["regions"][()]):
                assert bool(ours) == bool(theirs)
                if theirs:
                    assert np.array_equal(f[ours][ours], s[theirs][theirs])
            assert np.array_equal(f["g/f"][f.attrs["region"]], s["g/f"][s.attrs["region"]])


def test_repack_keep_compression_and_dataset_glob(tmp_path):
    src = _made_file(tmp_path / "src.h5")
    dst = tmp_path / "dst.h5"
    summary = _repack.repack(src, dst, datasets="/g/m", chunks="keep")
    assert summary["reencoded"] == ["/g/m"]
    with h5py.File(dst, "r") as f:
        assert f["g/m"].compression == "gzip" and f["g/m"].shuffle and f["g/m"].chunks == (50, 50)
        assert f["g/f"].compression == "lzf"
    assert compare_files(src, dst) == []


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, RuntimeError])
def test_interrupted_repack_leaves_nothing(tmp_path, monkeypatch, interrupt):
    src = _made_file(tmp_path / "src.h5")
    before = sha256(src)
    dst = tmp_path / "out" / "dst.h5"
    dst.parent.mkdir()
    calls = []
    real = _write._write_batch

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise interrupt("injected")
        return real(*args, **kwargs)
    monkeypatch.setattr(_write, "_write_batch", failing)
    with pytest.raises(interrupt):
        _repack.repack(src, dst, compression="zstd", chunks=(16, 16))
    assert list(dst.parent.iterdir()) == []
    assert sha256(src) == before


def test_failed_verification_leaves_no_dst(tmp_path, monkeypatch):
    src = _made_file(tmp_path / "src.h5")
    dst = tmp_path / "dst.h5"
    real = _write._write_batch

    def corrupting(dset, batch, first_row, out):  # store every chunk of /g/m as zeros
        if dset.name == "/g/m":
            out = np.empty(1 << 16, np.uint8)
            [(_, start, length, _)] = _write._native.encode_chunks_into(
                np.zeros((50, 50), "i2"), [50, 50], _write._pipeline(dset), b"", 0, 1, out)
            out = out[start:start + length]
            batch = [(o, 0, length, m) for o, _, _, m in batch]
        real(dset, batch, first_row, out)
    monkeypatch.setattr(_write, "_write_batch", corrupting)
    with pytest.raises(_repack.RepackError, match="/g/m differs"):
        _repack.repack(src, dst, chunks="keep")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.h5"]


def test_repack_cli(tmp_path, capsys):
    src = _made_file(tmp_path / "src.h5")
    dst = tmp_path / "dst.h5"
    assert cli_main(["repack", str(src), str(dst), "--compression", "blosc:zstd", "--level", "3",
                     "--chunks", "100,100", "--threads", "2", "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["copied"]
    assert compare_files(src, dst) == []
    assert cli_main(["repack", str(tmp_path / "missing.h5"), str(dst), "-q"]) == 1
    assert "no such file" in capsys.readouterr().err
    assert cli_main(["repack", str(src), str(dst), "--compression", "brotli"]) == 2
    assert cli_main(["repack", str(src), str(dst), "--chunks", "0,4", "-q"]) == 1
    assert cli_main(["repack", str(src), str(src), "-q"]) == 1
    assert cli_main(["repack", str(src), str(tmp_path / "nodir" / "x.h5"), "-q"]) == 1
    assert cli_main(["repack", str(src), str(dst), "--compression", "lz4", "--level", "2", "-q"]) == 1


def test_repack_keeps_negative_zstd_level(tmp_path):
    """zstd's client data is unsigned: a negative level (-5) is stored as 2**32 - 5 and
    must be kept as -5, not refused as a level over 22."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    x = np.arange(4000, dtype="f4").reshape(200, 20)
    with h5py.File(src, "w") as f:
        f.create_dataset("d", data=x, chunks=(20, 20), **hdf5plugin.Zstd(clevel=-5))
    summary = _repack.repack(src, dst, chunks="keep")
    assert summary["reencoded"] == ["/d"]
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        assert b["d"].id.get_create_plist().get_filter(0)[:3] == a["d"].id.get_create_plist().get_filter(0)[:3]
        np.testing.assert_array_equal(b["d"][()], x)


def test_repack_copies_datasets_with_filters_h5turbo_cannot_decode(tmp_path):
    """A zfp dataset (h5py reads it with hdf5plugin; h5turbo does not decode zfp) is
    copied as it is when a new compression is asked for, not a failed repack."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    x = np.random.default_rng(0).standard_normal((64, 64)).astype("f4")
    with h5py.File(src, "w") as f:
        f.create_dataset("z", data=x, chunks=(16, 16), **hdf5plugin.Zfp(rate=16))
        f.create_dataset("g", data=x, chunks=(16, 16), compression="gzip")
    summary = _repack.repack(src, dst, compression="zstd")
    assert summary == {"reencoded": ["/g"], "copied": ["/z"]}
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        np.testing.assert_array_equal(b["z"][()], a["z"][()])
        assert b["z"].id.get_create_plist().get_filter(0)[0] == 32013


def test_repack_keeps_bitfield_type(tmp_path):
    """A bitfield dataset (h5py reads it as uint16) keeps its stored H5T_BITFIELD type,
    rather than being re-encoded as a plain integer."""
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    with h5py.File(src, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((2,))
        h5py.h5d.create(f.id, b"b", h5py.h5t.STD_B16BE, h5py.h5s.create_simple((5,)), dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(5, dtype=">u2"), mtype=h5py.h5t.STD_B16BE)
    _repack.repack(src, dst)
    with h5py.File(dst, "r") as f:
        assert f["b"].id.get_type().get_class() == h5py.h5t.BITFIELD
        np.testing.assert_array_equal(f["b"][()], np.arange(5))


def test_repack_keeps_the_110_file_format(tmp_path):
    """A file written with libver="latest" (superblock 3: fixed/extensible array chunk
    indexes, SWMR) comes out in the same format, not downgraded to 1.8's superblock 2
    and v1 B-trees (a read-only handle's libver bounds say nothing of the file)."""
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    with h5py.File(src, "w", libver="latest") as f:
        f.create_dataset("d", data=np.arange(100.0).reshape(10, 10), chunks=(5, 5), compression="gzip")
        f.create_dataset("e", data=np.arange(10), chunks=(4,), maxshape=(None,))
    _repack.repack(src, dst, chunks="keep")

    def superblock_version(path):
        return path.read_bytes()[8]

    assert superblock_version(src) == superblock_version(dst) == 3
    assert b"FAHD" in dst.read_bytes() and b"EAHD" in dst.read_bytes()  # fixed / extensible array indexes


def test_repack_keep_copies_pipelines_it_would_change(tmp_path):
    """compression='keep' copies a pipeline h5turbo.write would not make again as it
    is (fletcher32 before deflate before shuffle; an lz4 block size) rather than
    reordering it or dropping its parameters."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    x = np.arange(1000, dtype="i4").reshape(50, 20)
    with h5py.File(src, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10, 20))
        dcpl.set_fletcher32()
        dcpl.set_deflate(3)
        dcpl.set_shuffle()
        h5py.h5d.create(f.id, b"order", h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple(x.shape), dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, x)
        f.create_dataset("lz4", data=x, chunks=(10, 20), **hdf5plugin.LZ4(nbytes=256))
        f.create_dataset("plain", data=x, chunks=(10, 20), compression="gzip", shuffle=True)
    summary = _repack.repack(src, dst, chunks="keep")
    assert summary["reencoded"] == ["/plain"]
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        for name in ("order", "lz4", "plain"):
            pa, pb = a[name].id.get_create_plist(), b[name].id.get_create_plist()
            assert [pb.get_filter(i)[:3] for i in range(pb.get_nfilters())] == \
                [pa.get_filter(i)[:3] for i in range(pa.get_nfilters())], name
            np.testing.assert_array_equal(b[name][()], x)


def _stored_bytes(tid, read, shape):
    values = np.empty(shape, dtype=np.dtype((np.void, tid.get_size())))
    read(values, tid)
    return values.tobytes()


def _raw_objects(path: Path) -> dict:
    """path -> (type, stored bytes) of every dataset and attribute with a fixed-size
    type (read with their stored type as memory type: no conversion)."""
    found = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not obj.id.get_type().detect_class(h5py.h5t.VLEN):
                tid = obj.id.get_type()
                read = lambda v, t: obj.id.read(h5py.h5s.ALL, h5py.h5s.ALL, v, mtype=t)
                found[name] = (tid.get_class(), _stored_bytes(tid, read, obj.shape))
            for key in obj.attrs:
                aid = obj.attrs.get_id(key)
                tid = aid.get_type()
                if not tid.detect_class(h5py.h5t.VLEN) and aid.get_space().get_simple_extent_type() != h5py.h5s.NULL:
                    found[f"{name}@{key}"] = (tid.get_class(), _stored_bytes(tid, lambda v, t: aid.read(v, mtype=t), aid.shape))
        visit("/", f)
        f.visititems(visit)
    return found


@pytest.mark.parametrize("name", ["hdf5/t128bit_float.h5", "pytables/float.h5", "pytables/times-nested-be.h5",
                                  "pytables/attr-u16.h5"])
def test_repack_copies_types_numpy_has_none_for(name, tmp_path):
    # 128-bit floats and integers, HDF5 time types: h5py has no dtype for them (they
    # failed the whole repack); libhdf5 copies them as they are stored
    src, dst = CORPUS / name, tmp_path / "out.h5"
    _repack.repack(src, dst, compression="zstd")
    before, after = _raw_objects(src), _raw_objects(dst)
    assert sorted(after) == sorted(before)
    assert [k for k in before if before[k] != after[k]] == []
