"""What a write must never do to a user's data, and what a repack must keep: a failed
write leaves an existing file as it was; values are converted as h5py converts them;
options of empty datasets are kept; a repacked file keeps attribute types, creation
order, dimension scales, the user block, fill time, permissions and symbolic links."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo.writing.repack import repack


def _failing_blocks(rows: int, cols: int):
    yield np.ones((rows // 2, cols), "f4")
    raise RuntimeError("the source failed half-way")


def _precious(path):
    with h5py.File(path, "w") as f:
        f["precious"] = np.arange(10)


def _still_precious(path) -> bool:
    with h5py.File(path, "r") as f:
        return list(f) == ["precious"] and f["precious"][-1] == 9


@pytest.mark.parametrize("failure", ["source", "chunks"])
def test_a_failed_write_in_mode_w_leaves_the_old_file(tmp_path, failure):
    path = tmp_path / "data.h5"
    _precious(path)
    if failure == "source":
        with pytest.raises(RuntimeError, match="half-way"):
            h5turbo.write(path, "x", _failing_blocks(100, 4), shape=(100, 4), dtype="f4", mode="w")
    else:
        with pytest.raises(h5turbo.ArgumentError, match="data.h5"):
            h5turbo.write(path, "x", np.zeros((4, 4)), chunks=(8, 8), mode="w")
    assert _still_precious(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.h5"]  # no temporary file left


def test_mode_w_dash_refuses_an_existing_file_and_w_replaces_it(tmp_path):
    path = tmp_path / "data.h5"
    _precious(path)
    with pytest.raises(FileExistsError):
        h5turbo.write(path, "x", np.zeros(3), mode="w-")
    assert _still_precious(path)
    h5turbo.write(path, "x", np.arange(3.0), mode="w")
    with h5py.File(path) as f:
        assert list(f) == ["x"]


def test_bytes_file_names_are_taken_in_every_mode(tmp_path):
    path = tmp_path / "data.h5"
    name = os.fsencode(path)
    h5turbo.write(name, "x", np.arange(3), mode="w")
    h5turbo.write(name, "y", np.arange(4), mode="a")
    repack(name, os.fsencode(tmp_path / "packed.h5"))
    with h5py.File(tmp_path / "packed.h5") as f:
        assert sorted(f) == ["x", "y"] and list(f["y"][()]) == [0, 1, 2, 3]


_PROTECTED = """
import sys, numpy as np, h5py, h5turbo
path, lib = sys.argv[1], sys.argv[2]
try:
    if lib == "h5py":
        h5py.File(path, "w").close()
    else:
        h5turbo.write(path, "x", np.zeros(1), mode="w")
    print("replaced")
except PermissionError as exc:
    print("refused", exc)
"""


def test_mode_w_refuses_a_write_protected_file_as_h5py(tmp_path):
    # renaming over a file needs only its folder's permission: the file's own 0444 was
    # ignored and its contents lost. Run without the right to override permissions
    # (root has it: then as h5py, both replace the file).
    command = [sys.executable, "-c", _PROTECTED]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop the permission override")
        drop = "-dac_override,-dac_read_search"
        command = [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}"] + command
    outcomes = {}
    for lib in ("h5py", "h5turbo"):
        path = tmp_path / f"{lib}.h5"
        _precious(path)
        os.chmod(path, 0o444)
        done = subprocess.run(command + [str(path), lib], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outcomes[lib] = done.stdout.split()[0]
        assert (outcomes[lib] == "refused") == _still_precious(path)
    assert outcomes == {"h5py": "refused", "h5turbo": "refused"}
    assert "write-protected" in done.stdout


def test_a_failed_write_removes_the_groups_it_made(tmp_path):
    path = tmp_path / "data.h5"
    _precious(path)
    with pytest.raises(RuntimeError):
        h5turbo.write(path, "a/b/c", _failing_blocks(100, 4), shape=(100, 4), dtype="f4")
    assert _still_precious(path)


def test_blocks_must_have_the_dataset_rank(tmp_path):
    with pytest.raises(h5turbo.ArgumentError, match="x.h5:x: block of shape"):
        h5turbo.write(tmp_path / "x.h5", "x", iter([np.float32(1), np.float32(2)]), shape=(2,), dtype="f4")


@pytest.mark.parametrize("rows", [3, 7])
def test_blocks_of_other_row_counts_name_the_file_and_dataset(tmp_path, rows):
    blocks = iter([np.zeros((rows, 2), "f4")])
    with pytest.raises(h5turbo.ArgumentError, match=f"x.h5:d: blocks hold .*{rows}|x.h5:d: blocks hold more"):
        h5turbo.write(tmp_path / "x.h5", "d", blocks, shape=(5, 2), dtype="f4", mode="w")
    assert not (tmp_path / "x.h5").exists()


def test_values_are_converted_as_h5py_converts_them(tmp_path):
    values = np.array([np.nan, np.inf, -np.inf, 300.7, -300.7, 1.7, -1.7, 1e20])
    path = tmp_path / "x.h5"
    for dtype in ("u1", "i1", "i4", "u8", "f2", "f4"):
        h5turbo.write(path, f"t{dtype}", values, dtype=dtype)
        with h5py.File(tmp_path / "ref.h5", "a") as ref:
            ref.create_dataset(dtype, data=values, dtype=dtype)
            want = ref[dtype][()]
        with h5py.File(path) as f:
            got = f[f"t{dtype}"][()]
        np.testing.assert_array_equal(got, want, err_msg=dtype)
    with pytest.raises(h5turbo.ArgumentError):
        h5turbo.write(path, "bool", values, dtype=bool)  # libhdf5 has no such conversion


def test_an_empty_array_keeps_its_options(tmp_path):
    path = tmp_path / "x.h5"
    h5turbo.write(path, "x", np.zeros((0, 3), "f4"), maxshape=(None, 3), chunks=(64, 3), compression="gzip",
                  fletcher32=True)
    with h5py.File(path, "a") as f:
        ds = f["x"]
        assert (ds.maxshape, ds.chunks, ds.compression, ds.fletcher32) == ((None, 3), (64, 3), "gzip", True)
        ds.resize((5, 3))  # appendable, as asked


def _adata_with_raw(value: float):
    import anndata as ad
    a = ad.AnnData(X=np.full((4, 5), value, "f4"))
    a.raw = ad.AnnData(X=np.arange(24.0).reshape(4, 6), var={"gene": list("abcdef"), "kind": list("xxyyxx")})
    return a


def test_write_h5ad_keeps_raw_and_a_failed_write_keeps_the_old_file(tmp_path):
    import anndata as ad
    path = tmp_path / "cells.h5ad"
    h5turbo.write_h5ad(_adata_with_raw(1.0), path)
    back = ad.read_h5ad(path)
    np.testing.assert_array_equal(back.raw.X, np.arange(24.0).reshape(4, 6))
    assert list(back.raw.var["gene"]) == list("abcdef")
    # raw.var's repeated strings as categoricals, as anndata writes them
    reference = tmp_path / "anndata.h5ad"
    _adata_with_raw(1.0).write_h5ad(reference)
    theirs = ad.read_h5ad(reference).raw.var
    assert back.raw.var["kind"].dtype == theirs["kind"].dtype == "category"
    assert back.raw.var["gene"].dtype == theirs["gene"].dtype
    reference.unlink()
    bad = _adata_with_raw(2.0)
    bad.layers["text"] = np.full((4, 5), "x")  # refused, after anndata wrote obs and var
    with pytest.raises(h5turbo.UnsupportedError, match="cells.h5ad"):
        h5turbo.write_h5ad(bad, path)
    assert ad.read_h5ad(path).X[0, 0] == 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.h5ad"]


# ----------------------------------------------------------------------- repack


def _repacked(src, dst, **kwargs):
    repack(src, dst, **kwargs)
    return h5py.File(dst, "r")


def test_repack_keeps_attribute_types_order_and_dimension_scales(tmp_path):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        x = f.create_dataset("x", data=np.arange(10.0))
        x.make_scale("x")
        v = f.create_dataset("v", data=np.arange(10.0) * 2, track_order=True)
        v.dims[0].attach_scale(x)
        for key in ("zeta", "alpha", "mid"):
            v.attrs[key] = 1
        nullterm = h5py.h5t.C_S1.copy()
        nullterm.set_size(5)  # "GROUP" fills it: no room for the terminator
        nullterm.set_strpad(h5py.h5t.STR_NULLTERM)
        h5py.h5a.create(f.id, b"CLASS", nullterm, h5py.h5s.create(h5py.h5s.SCALAR)).write(
            np.array(b"GROUP", "S5"), mtype=nullterm)
        ascii_vlen = h5py.h5t.C_S1.copy()
        ascii_vlen.set_size(h5py.h5t.VARIABLE)
        h5py.h5a.create(f.id, b"units", ascii_vlen, h5py.h5s.create(h5py.h5s.SCALAR)).write(
            np.array("µm".encode(), dtype=h5py.string_dtype("ascii")))  # bytes that are not ASCII
        padded = f.create_dataset("names", data=np.array([b"ab", b"cde"], "S6"))
        del padded  # NULLPAD, as numpy makes it: re-encoded
        strings = h5py.h5d.create(f.id, b"nullterm", nullterm, h5py.h5s.create_simple((2,)))
        strings.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([b"ab", b"cde"], "S5"), mtype=nullterm)
    with _repacked(src, tmp_path / "dst.h5", compression="zstd") as g:
        assert h5py.h5ds.is_scale(g["x"].id)
        assert [s.name for s in g["v"].dims[0].values()] == ["/x"]
        assert [k for k in g["v"].attrs if k in ("zeta", "alpha", "mid")] == ["zeta", "alpha", "mid"]
        assert g.attrs["CLASS"] == b"GROUP"
        assert g.attrs.get_id("CLASS").get_type().get_strpad() == h5py.h5t.STR_NULLTERM
        assert g.attrs.get_id("units").get_type().get_cset() == h5py.h5t.CSET_ASCII
        units = g.attrs.get_id("units")
        stored = np.empty((), dtype=h5py.string_dtype("ascii"))
        units.read(stored)
        assert stored[()] == "µm".encode()
        assert g["nullterm"].id.get_type().get_strpad() == h5py.h5t.STR_NULLTERM
        assert list(g["nullterm"][()]) == [b"ab", b"cde"]
        assert g["names"].compression is not None  # the numpy-like strings were re-encoded


def test_repack_keeps_sequences_of_references(tmp_path):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        a, g = f.create_dataset("a", data=np.arange(3)), f.create_group("g")
        seqs = np.empty(2, object)
        seqs[0] = np.array([a.ref, g.ref], dtype=h5py.ref_dtype)
        seqs[1] = np.array([g.ref], dtype=h5py.ref_dtype)
        f.create_dataset("refs", data=seqs, dtype=h5py.vlen_dtype(h5py.ref_dtype))
    with _repacked(src, tmp_path / "dst.h5") as g:
        assert [[g[r].name for r in seq] for seq in g["refs"][()]] == [["/a", "/g"], ["/g"]]


def _sequences(dtype, *elements):
    values = np.empty(len(elements), dtype=h5py.vlen_dtype(np.dtype(dtype)))
    values[:] = [np.array(e, dtype) for e in elements]
    return values


def test_repack_keeps_the_numbers_of_big_endian_sequence_attributes(tmp_path):
    # h5py reads a sequence of big-endian numbers as native numbers of the stored
    # bytes; written back, those wrong numbers were stored (1 became 2**56)
    src = tmp_path / "src.h5"
    record = np.dtype([("s", h5py.string_dtype()), ("v", h5py.vlen_dtype(np.dtype(">i2"))),
                       ("w", h5py.vlen_dtype(np.dtype(">u4")), (2,))])
    records = np.zeros(2, record)
    records["s"] = ["x", "yy"]
    records["v"] = list(_sequences(">i2", [1, -2], [300]))
    for i in range(2):
        for j in range(2):
            records["w"][i, j] = np.array([10 * i + j, 65536], ">u4")
    with h5py.File(src, "w") as f:
        f.attrs["u8"] = _sequences(">u8", [1, 2], [42])
        f.attrs["f4"] = _sequences(">f4", [1.5, -2.0], [3.0])
        f.attrs["le"] = _sequences("<i2", [7], [8, 9])
        f.attrs.create("records", records, dtype=record)
    with h5py.File(src) as before, _repacked(src, tmp_path / "dst.h5") as after:
        # both read through h5py's same conversion: the same stored numbers read alike
        for name in ("u8", "f4", "le"):
            assert after.attrs.get_id(name).dtype == before.attrs.get_id(name).dtype
            for x, y in zip(before.attrs[name], after.attrs[name]):
                assert x.tobytes() == y.tobytes() and x.dtype == y.dtype, name
        a, b = before.attrs["records"], after.attrs["records"]
        for field in ("v", "w"):
            for x, y in zip(a[field].ravel(), b[field].ravel()):
                assert x.tobytes() == y.tobytes(), field
        assert list(b["s"]) == list(a["s"])


def test_repack_keeps_the_user_block_and_fill_time(tmp_path):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w", userblock_size=512) as f:
        f.create_dataset("never", shape=(10,), dtype="i4", chunks=(4,), fillvalue=9, fill_time="never")
        f["never"][:4] = 1
    with open(src, "r+b") as raw:
        raw.write(b"my header")
    with _repacked(src, tmp_path / "dst.h5") as g:
        assert g.userblock_size == 512
        assert g["never"].id.get_create_plist().get_fill_time() == h5py.h5d.FILL_TIME_NEVER
    assert (tmp_path / "dst.h5").read_bytes()[:9] == b"my header"


def test_repack_keeps_permissions_and_symbolic_links(tmp_path):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(100)
    target = tmp_path / "real.h5"
    target.write_bytes(b"old")
    os.chmod(target, 0o664)
    link = tmp_path / "link.h5"
    link.symlink_to(target)
    repack(src, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o664
    with h5py.File(target) as f:
        assert f["x"][-1] == 99
    fresh = tmp_path / "fresh.h5"
    repack(src, fresh)
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o666 & ~umask


def test_repack_refuses_a_level_without_compression_and_zero_threads(tmp_path):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(100)
    with pytest.raises(h5turbo.ArgumentError, match="level"):
        repack(src, tmp_path / "dst.h5", level=9)
    with pytest.raises(h5turbo.ArgumentError, match="threads"):
        repack(src, tmp_path / "dst.h5", threads=0)
    text = tmp_path / "notes.txt"
    text.write_text("not hdf5")
    with pytest.raises(OSError, match="notes.txt"):
        repack(text, tmp_path / "dst.h5")
    with pytest.raises(IsADirectoryError):
        repack(tmp_path, tmp_path / "dst.h5")
    assert not (tmp_path / "dst.h5").exists()


def test_unwritable_folder_error_names_the_destination(tmp_path, monkeypatch):
    """A folder where no file can be created (simulated: the test may run as root) is
    an OSError of the same kind naming DST and its folder, not the temporary name."""
    from h5turbo.writing import atomic

    def refuse(folder):
        raise PermissionError(13, "Permission denied", str(folder / ".h5turbo-abcd1234.tmp"))

    monkeypatch.setattr(atomic, "_create_temporary", refuse)
    with pytest.raises(PermissionError) as info:
        h5turbo.write(tmp_path / "x.h5", "d", np.arange(3), mode="w")
    assert str(tmp_path / "x.h5") in str(info.value) and ".h5turbo-" not in str(info.value)
    assert not (tmp_path / "x.h5").exists()


def test_repack_refuses_dst_that_is_src_by_any_link(tmp_path):
    src = tmp_path / "src.h5"
    _precious(src)
    hard = tmp_path / "hard.h5"
    os.link(src, hard)
    soft = tmp_path / "soft.h5"
    soft.symlink_to(src)
    for dst in (hard, soft, src):
        with pytest.raises(h5turbo.ArgumentError, match="DST must differ from SRC"):
            repack(src, dst)
    assert _still_precious(src)


def test_repack_with_a_new_codec_keeps_fletcher32(tmp_path):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.arange(10000, dtype="i4").reshape(100, 100), chunks=(50, 50),
                         compression="gzip", shuffle=True, fletcher32=True)
    with _repacked(src, tmp_path / "dst.h5", compression="zstd") as g:
        assert g["x"].fletcher32 and not g["x"].shuffle
        plist = g["x"].id.get_create_plist()
        assert [plist.get_filter(i)[0] for i in range(plist.get_nfilters())] == [32015, h5py.h5z.FILTER_FLETCHER32]
        assert g["x"][-1, -1] == 9999
