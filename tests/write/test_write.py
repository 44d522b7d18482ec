"""h5turbo.write: every codec and dtype, 1-D to 4-D, edge chunks, shuffle on and off,
read back by h5py (+ hdf5plugin) and by h5turbo; iterator and dask sources; write_h5ad
read back by anndata; advise; bad arguments give typed errors."""

from __future__ import annotations

import json
import zlib

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo import _native
from h5turbo.writing.write import CODECS
from h5turbo.cli import main as cli_main

DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "bool", ">i4", ">f8"]
SHAPES = [((1000,), (64,)), ((37, 53), (8, 16)), ((9, 10, 11), (4, 3, 5)), ((5, 6, 7, 3), (2, 4, 3, 2))]
ALL_CODECS = [c for c in CODECS]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "f":
        a = rng.normal(0, 100, shape).astype(dt)
        a.flat[::7] = np.round(a.flat[::7])
        return a
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dt)


def read_both(path, name="x"):
    with h5py.File(path, "r") as f:
        a = f[name][()]
    with h5turbo.File(path) as f:
        b = f[name][()]
    return a, b


@pytest.mark.parametrize("codec", ALL_CODECS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_codec_and_dtype(tmp_path, codec, dtype):
    for i, (shape, chunks) in enumerate(SHAPES):
        data = sample(shape, dtype, i)
        shuffle = bool(i % 2) if codec is None or not codec.startswith("blosc") else [False, True, "bit", True][i]
        path = tmp_path / f"{i}.h5"
        h5turbo.write(path, "x", data, chunks=chunks, compression=codec, shuffle=shuffle, threads=2)
        a, b = read_both(path)
        assert a.dtype == data.dtype and a.shape == data.shape
        assert a.tobytes() == data.tobytes(), (codec, dtype, shape, shuffle)
        assert b.tobytes() == data.tobytes()


@pytest.mark.parametrize("libver", ["earliest", "v110", "latest"])
@pytest.mark.parametrize("codec,level", [("gzip", 1), ("gzip", 9), ("zstd", 1), ("zstd", 19),
                                         ("blosc:zlib", 9), ("bitshuffle:zstd", 5)])
def test_levels_and_chunk_indexes(tmp_path, libver, codec, level):
    # libver picks the chunk index libhdf5 builds (v1 B-tree, fixed / extensible array, v2 B-tree)
    data = sample((130, 70), "int32")
    path = tmp_path / "x.h5"
    with h5py.File(path, "w", libver=libver) as f:
        h5turbo.write(f, "x", data, chunks=(32, 32), compression=codec, level=level)
        h5turbo.write(f, "grow", data, chunks=(32, 32), compression=codec, level=level,
                      maxshape=(None, 70))
        h5turbo.write(f, "one", data, chunks=(130, 70), compression=codec, level=level)
    for name in ("x", "grow", "one"):
        a, b = read_both(path, name)
        assert np.array_equal(a, data) and np.array_equal(b, data)


def test_pipeline_is_what_h5py_writes(tmp_path):
    """Filter ids and client data equal h5py's own for the same options."""
    import hdf5plugin
    data = sample((100, 100), "float32")
    cases = {"gzip": ({"compression": "gzip", "compression_opts": 4, "shuffle": True}, {"shuffle": True}),
             "lzf": ({"compression": "lzf"}, {}),
             "zstd": (dict(hdf5plugin.Zstd(clevel=3)), {}),
             "lz4": (dict(hdf5plugin.LZ4()), {}),
             "bitshuffle": (dict(hdf5plugin.Bitshuffle()), {}),
             "blosc": (dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE)),
                       {"shuffle": True})}
    with h5py.File(tmp_path / "x.h5", "w") as f:
        for codec, (h5py_kwargs, ours) in cases.items():
            f.create_dataset("ref_" + codec, data=data, chunks=(50, 50), **h5py_kwargs)
            h5turbo.write(f, codec, data, chunks=(50, 50), compression=codec, **ours)
            plists = [f[n].id.get_create_plist() for n in ("ref_" + codec, codec)]
            filters = [[p.get_filter(i)[:3] for i in range(p.get_nfilters())] for p in plists]
            assert filters[0] == filters[1], codec


def test_edge_chunks_are_padded_with_the_fill_value(tmp_path):
    data = np.arange(10 * 7, dtype="<i4").reshape(10, 7)
    path = tmp_path / "x.h5"
    h5turbo.write(path, "x", data, chunks=(4, 4), compression="gzip", fillvalue=-5)
    with h5py.File(path, "r") as f:
        ds = f["x"]
        assert ds.fillvalue == -5
        mask, raw = ds.id.read_direct_chunk((8, 4))
        chunk = np.frombuffer(zlib.decompress(raw), "<i4").reshape(4, 4)
        assert np.array_equal(chunk[:2, :3], data[8:, 4:])
        assert (chunk[2:] == -5).all() and (chunk[:, 3] == -5).all()
        assert np.array_equal(ds[()], data)


def test_blocks_from_an_iterator_and_from_dask(tmp_path):
    import dask.array as da
    data = sample((1000, 30), "float64")
    blocks = (data[i:i + 77] for i in range(0, 1000, 77))  # not aligned with the chunks
    path = tmp_path / "x.h5"
    h5turbo.write(path, "it", blocks, shape=data.shape, dtype=data.dtype, chunks=(64, 16),
                  compression="zstd", batch_bytes=20_000)
    h5turbo.write(path, "dask", da.from_array(data, chunks=(300, 30)), chunks=(64, 16),
                  compression="lz4", batch_bytes=20_000)
    seen = []
    h5turbo.write(path, "mem", data, chunks=(64, 16), compression="gzip", batch_bytes=20_000,
                  progress=seen.append, attrs={"unit": "m"})
    for name in ("it", "dask", "mem"):
        a, b = read_both(path, name)
        assert np.array_equal(a, data) and np.array_equal(b, data), name
    assert seen[-1] == data.nbytes and seen == sorted(seen) and len(seen) > 1
    with h5py.File(path, "r") as f:
        assert f["mem"].attrs["unit"] == "m"


def test_auto_chunks_rule():
    assert h5turbo.auto_chunks((30000, 20000), 4) == (512, 512)
    assert h5turbo.auto_chunks((10**6, 10), 8) == (8192, 10)
    assert h5turbo.auto_chunks((10**7,), 4) == (262144,)
    assert h5turbo.auto_chunks((3, 5), 8) == (3, 5)
    assert h5turbo.auto_chunks((100, 100, 100, 100), 1) == (32, 32, 32, 32)
    for shape in [(1,), (7, 1, 3), (0, 5), (10**9, 3, 2)]:
        c = h5turbo.auto_chunks(shape, 4)
        assert len(c) == len(shape) and all(1 <= x for x in c) and np.prod(c) * 4 <= 1 << 20


def test_empty_array(tmp_path):
    h5turbo.write(tmp_path / "x.h5", "x", np.zeros((0, 5), "f4"), compression="gzip")
    a, _ = read_both(tmp_path / "x.h5")
    assert a.shape == (0, 5)


def test_bad_arguments_are_typed_errors(tmp_path):
    path = tmp_path / "x.h5"
    data = np.zeros((10, 10), "i4")
    bad = [dict(compression="snappy"), dict(compression="lz4", level=3), dict(compression="gzip", level=10),
           dict(chunks=(5,)), dict(chunks=(0, 5)), dict(threads=0), dict(shuffle="bit"),
           dict(shuffle="yes", compression="gzip"), dict(compression="blosc", level=11)]
    for kwargs in bad:
        with pytest.raises(h5turbo.ArgumentError):
            h5turbo.write(path, "x", data, **kwargs)
    with pytest.raises(h5turbo.Error):
        h5turbo.write(path, "x", data, chunks=(5,))
    with pytest.raises(h5turbo.ArgumentError, match="scalar"):
        h5turbo.write(path, "s", np.float64(3))
    with pytest.raises(h5turbo.UnsupportedError, match="dtype"):
        h5turbo.write(path, "o", np.array(["a", "b"], dtype=object))
    with pytest.raises(h5turbo.ArgumentError, match="shape= and dtype="):
        h5turbo.write(path, "i", iter([data]))
    with pytest.raises(h5turbo.ArgumentError, match="rows"):
        h5turbo.write(path, "i", iter([data]), shape=(20, 10), dtype="i4")
    h5turbo.write(path, "x", data)
    with pytest.raises(h5turbo.ArgumentError, match="already exists"):
        h5turbo.write(path, "x", data)
    with h5py.File(path, "r") as f:
        assert list(f) == ["x"], "a failed write leaves no dataset behind"


def test_encode_chunks_rejects_bad_pipelines():
    a = np.zeros((4, 4), "i4")
    out = np.empty(1 << 10, np.uint8)
    with pytest.raises(h5turbo.UnsupportedError, match="szip"):
        _native.encode_chunks_into(a, [2, 2], [(4, 0, [])], b"", 0, 4, out)
    with pytest.raises(ValueError):
        _native.encode_chunks_into(a, [2, 2], [], b"", 3, 4, out)
    with pytest.raises(ValueError):
        _native.encode_chunks_into(a[:, ::2], [2, 2], [], b"", 0, 1, out)
    with pytest.raises(ValueError):
        _native.encode_chunks_into(a, [2, 2], [], b"", 0, 4, out[:20])


def test_write_h5ad_reads_back_with_anndata(tmp_path):
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    X = sp.random(300, 120, density=0.1, format="csr", dtype=np.float32, random_state=1)
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["a", "b"], 300)),
                        "n": rng.integers(0, 9, 300)}, index=[f"c{i}" for i in range(300)])
    var = pd.DataFrame({"gene": [f"g{i}" for i in range(120)]}, index=[f"g{i}" for i in range(120)])
    adata = ad.AnnData(X=X, obs=obs, var=var, uns={"note": "hi"}, obsm={"pca": rng.normal(size=(300, 5))})
    adata.layers["counts"] = rng.integers(0, 50, (300, 120)).astype(np.int32)
    adata.layers["csc"] = sp.csc_matrix(X)
    for compression in ("gzip", "zstd"):
        path = tmp_path / f"{compression}.h5ad"
        h5turbo.write_h5ad(adata, path, compression=compression)
        back = ad.read_h5ad(path)
        assert (back.X != adata.X).nnz == 0 and back.X.format == "csr"
        assert np.array_equal(back.layers["counts"], adata.layers["counts"])
        assert (back.layers["csc"] != adata.layers["csc"]).nnz == 0 and back.layers["csc"].format == "csc"
        pd.testing.assert_frame_equal(back.obs, adata.obs)
        pd.testing.assert_frame_equal(back.var, adata.var)
        assert back.uns["note"] == "hi" and np.array_equal(back.obsm["pca"], adata.obsm["pca"])
    dense = ad.AnnData(X=rng.normal(size=(40, 7)))
    h5turbo.write_h5ad(dense, tmp_path / "d.h5ad", compression="lz4")
    assert np.array_equal(ad.read_h5ad(tmp_path / "d.h5ad").X, dense.X)


def test_advise_cli(tmp_path, capsys):
    path = tmp_path / "x.h5"
    h5turbo.write(path, "m", sample((2000, 300), "int32"), compression="gzip")
    assert cli_main(["advise", str(path), "/m", "--pattern", "rows", "--json"]) == 0
    advice = json.loads(capsys.readouterr().out)
    assert advice["chunks"] == [873, 300] and advice["compression"] == "zstd"
    assert cli_main(["advise", str(path), "/m", "--pattern", "cols", "--measure", "--json"]) == 0
    advice = json.loads(capsys.readouterr().out)
    assert advice["chunks"] == [2000, 131]
    assert len(advice["measured"]) >= 4 and all(r["read_s"] > 0 for r in advice["measured"])
    # the ratio is the data's, not the file's: uncompressed, 1 where the chunks tile the
    # sample, less only for the edge chunks' padding
    plain = {tuple(r["chunks"]): r["ratio"] for r in advice["measured"] if r["compression"] is None}
    assert plain[(2000, 300)] == 1 and plain[(2000, 131)] == 300 / 393, plain
    # a small dataset of bytes: no shuffle claimed, ratios not sunk by the file's size
    h5turbo.write(tmp_path / "b.h5", "b", (np.arange(500) % 7).astype("u1"), mode="w")
    assert cli_main(["advise", str(tmp_path / "b.h5"), "/b", "--pattern", "all", "--measure", "--json"]) == 0
    measured = json.loads(capsys.readouterr().out)["measured"]
    assert not any(r["shuffle"] for r in measured)
    assert [r["ratio"] for r in measured if r["compression"] is None] == [1], measured
    assert cli_main(["advise", str(path), "/nothing", "--pattern", "rows"]) == 1
    assert cli_main(["advise", str(path), "/m", "--pattern", "diagonal"]) == 2


def test_dtype_enum_over_the_data_type_is_stored_as_enum(tmp_path):
    """dtype=enum_dtype(..., basetype="i2") with int16 data: numpy calls the two types
    equal, but h5py stores an enum; so must h5turbo."""
    import h5py
    enum = h5py.enum_dtype({"a": 0, "b": 1}, basetype="i2")
    data = np.array([0, 1, 1, 0], dtype="i2")
    h5turbo.write(tmp_path / "t.h5", "d", data, dtype=enum, chunks=(2,), mode="w")
    with h5py.File(tmp_path / "r.h5", "w") as f:
        f.create_dataset("d", data=data, dtype=enum, chunks=(2,))
    with h5py.File(tmp_path / "t.h5", "r") as t, h5py.File(tmp_path / "r.h5", "r") as r:
        assert h5py.check_enum_dtype(t["d"].dtype) == {"a": 0, "b": 1}
        assert t["d"].id.get_type().get_class() == r["d"].id.get_type().get_class() == h5py.h5t.ENUM
        np.testing.assert_array_equal(t["d"][()], data)


@pytest.mark.parametrize("flag", [np.True_, 1])
def test_shuffle_given_as_numpy_bool_adds_the_shuffle_filter(tmp_path, flag):
    """shuffle=np.True_ (a flag read from numpy or a config) is True: it must not be
    accepted and then silently dropped."""
    x = np.arange(1000, dtype="i4").reshape(100, 10)
    h5turbo.write(tmp_path / "s.h5", "d", x, compression="gzip", shuffle=flag, mode="w")
    with h5py.File(tmp_path / "s.h5", "r") as f:
        assert f["d"].shuffle
        np.testing.assert_array_equal(f["d"][()], x)


@pytest.mark.parametrize("kwargs", [dict(compression="bitshuffle:zstd", level=30), dict(chunks=8), dict(chunks="auto")])
def test_more_bad_arguments_are_argument_errors(tmp_path, kwargs):
    """A bitshuffle:zstd level out of range and a chunk shape that is not a shape are
    ArgumentErrors naming the problem (not hdf5plugin's ValueError, not a TypeError)."""
    with pytest.raises(h5turbo.ArgumentError):
        h5turbo.write(tmp_path / "x.h5", "x", np.zeros((10, 10), "i4"), mode="w", **kwargs)
    assert not (tmp_path / "x.h5").exists()


@pytest.mark.parametrize("shape", [(10, 10), (0, 4)])
def test_chunks_true_picks_the_chunks_as_h5py(tmp_path, shape):
    """chunks=True (h5py's 'chunked, you pick') is chunks=None, chunked also when empty."""
    h5turbo.write(tmp_path / "x.h5", "x", np.zeros(shape, "i4"), chunks=True, mode="w")
    with h5py.File(tmp_path / "x.h5") as f:
        assert f["x"].chunks is not None and f["x"].shape == shape


def test_dask_data_honours_dtype_and_shape(tmp_path):
    """dtype= converts dask data as it converts a numpy array (as h5py stores
    create_dataset(data=..., dtype=...)), and a shape= that disagrees is refused."""
    da = pytest.importorskip("dask.array")
    x = np.linspace(-300, 300, 200).reshape(20, 10)
    h5turbo.write(tmp_path / "t.h5", "d", da.from_array(x, chunks=(5, 10)), dtype="u1", chunks=(4, 10), mode="w")
    with h5py.File(tmp_path / "r.h5", "w") as f:
        f.create_dataset("d", data=x, dtype="u1", chunks=(4, 10))
    with h5py.File(tmp_path / "t.h5", "r") as t, h5py.File(tmp_path / "r.h5", "r") as r:
        assert t["d"].dtype == r["d"].dtype == np.dtype("u1")
        np.testing.assert_array_equal(t["d"][()], r["d"][()])
    with pytest.raises(h5turbo.ArgumentError, match="shape"):
        h5turbo.write(tmp_path / "t.h5", "d", da.from_array(x, chunks=(5, 10)), shape=(5, 5), mode="w")


def test_small_chunks_keep_the_encode_buffers_to_the_batch_size(tmp_path, monkeypatch):
    """Batches were counted by raw chunk bytes while each chunk's room held 64 KiB for
    headers: 64-byte chunks asked for 30 GiB (MemoryError on a 32 MB array)."""
    sizes = []
    encode = _native.encode_chunks_into

    def recording(block, chunks, pipeline, fill, first, count, out, threads):
        sizes.append(out.size)
        return encode(block, chunks, pipeline, fill, first, count, out, threads)

    monkeypatch.setattr(_native, "encode_chunks_into", recording)
    x = np.arange(200_000, dtype="f8")
    batch = 1 << 20
    for codec in (None, "zstd", "blosc:lz4", "bitshuffle"):
        sizes.clear()
        h5turbo.write(tmp_path / "t.h5", "x", x, chunks=(8,), compression=codec, batch_bytes=batch, mode="w")
        assert sizes and max(sizes) <= 2 * batch, (codec, max(sizes))
        a, b = read_both(tmp_path / "t.h5")
        np.testing.assert_array_equal(a, x)
        np.testing.assert_array_equal(b, x)


def _counting_dask(x, chunks):
    """A dask array over x whose blocks count how often they are computed."""
    da = pytest.importorskip("dask.array")
    computed = []

    def count(block, block_info=None):
        computed.append(block_info[0]["chunk-location"])
        return block

    return da.from_array(x, chunks=chunks).map_blocks(count, dtype=x.dtype), computed


@pytest.mark.parametrize("dask_chunks", [(-1, 50), (70, 200), (30, 100)])
def test_each_dask_chunk_is_computed_once(tmp_path, dask_chunks):
    """Slabs cut at chunk rows straddled the dask bands: each band was computed again
    for every slab it crossed (81 times for chunks spanning every row)."""
    x = np.arange(3000 * 200, dtype="f8").reshape(3000, 200)
    lazy, computed = _counting_dask(x, dask_chunks)
    h5turbo.write(tmp_path / "t.h5", "x", lazy, chunks=(64, 200), batch_bytes=64 * 1600, mode="w")
    assert len(computed) == len(set(computed)) == lazy.npartitions
    a, b = read_both(tmp_path / "t.h5")
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x)


def test_a_lazy_xarray_and_another_files_dataset_are_not_read_whole(tmp_path):
    """An xarray DataArray over dask went through np.asarray (computed whole: a 1.3 GB
    array peaked at 2.6 GB); an h5py dataset was read whole the same way."""
    xr = pytest.importorskip("xarray")
    from h5turbo.writing.write import _Source
    x = np.arange(3000 * 20, dtype="i4").reshape(3000, 20)
    lazy, computed = _counting_dask(x, (500, 20))
    array = xr.DataArray(lazy, dims=("a", "b"))
    assert _Source.of(array, None, None, "t").dask is not None
    h5turbo.write(tmp_path / "t.h5", "x", array, chunks=(100, 20), batch_bytes=100 * 80, mode="w")
    assert len(computed) == lazy.npartitions
    with h5py.File(tmp_path / "src.h5", "w") as f:
        f.create_dataset("src", data=x, chunks=(7, 20))
    with h5py.File(tmp_path / "src.h5", "r") as f:
        source = _Source.of(f["src"], None, None, "t")
        assert source.array is None and source.blocks is not None
        h5turbo.write(tmp_path / "t.h5", "copy", f["src"], chunks=(100, 20), mode="a")
        h5turbo.write(tmp_path / "t.h5", "as_f8", f["src"], dtype="f8", mode="a")
    with h5turbo.File(tmp_path / "src.h5") as f:
        h5turbo.write(tmp_path / "t.h5", "from_h5turbo", f["src"], mode="a")
    with h5py.File(tmp_path / "t.h5", "r") as f:
        for name in ("x", "copy", "as_f8", "from_h5turbo"):
            np.testing.assert_array_equal(f[name][()], x)
        assert f["as_f8"].dtype == np.dtype("f8")


def test_replacing_a_file_keeps_its_owner_and_group(tmp_path):
    """mode="w" writes a new file and renames it over the old one: it came out owned
    by the writer (h5py, which writes into the file, keeps the owner)."""
    import os
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")
    path = tmp_path / "t.h5"
    h5turbo.write(path, "x", np.arange(3), mode="w")
    os.chown(path, 1234, 4321)
    os.chmod(path, 0o640)
    h5turbo.write(path, "x", np.arange(5), mode="w")
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (1234, 4321, 0o640)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][()], np.arange(5))


def test_write_h5ad_of_a_backed_anndata_and_of_dask_sparse(tmp_path):
    """A backed AnnData (read_h5ad(backed="r"): X an h5py dataset or anndata's
    CSRDataset) was refused ("//X is a Dataset"); a dask array of sparse chunks failed
    with numpy's "setting an array element with a sequence"."""
    ad = pytest.importorskip("anndata")
    sp = pytest.importorskip("scipy.sparse")
    da = pytest.importorskip("dask.array")
    import warnings
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(3)
    sparse = sp.random(300, 40, density=0.1, format="csr", dtype="f4", random_state=rng)
    for fmt in ("csr", "csc", "dense"):
        X = sparse.toarray() if fmt == "dense" else sparse.asformat(fmt)
        source = tmp_path / f"source_{fmt}.h5ad"
        ad.AnnData(X=X, layers={"twice": sparse.toarray() * 2}).write_h5ad(source)
        backed = ad.read_h5ad(source, backed="r")
        h5turbo.write_h5ad(backed, tmp_path / f"copy_{fmt}.h5ad", compression="zstd")
        backed.file.close()
        copy, expected = ad.read_h5ad(tmp_path / f"copy_{fmt}.h5ad"), ad.read_h5ad(source)
        assert type(copy.X) is type(expected.X)
        got = copy.X.toarray() if sp.issparse(copy.X) else copy.X
        np.testing.assert_array_equal(got, sparse.toarray())
        np.testing.assert_array_equal(copy.layers["twice"], expected.layers["twice"])
    chunked = da.from_array(sparse, chunks=(100, 40), asarray=False)
    h5turbo.write_h5ad(ad.AnnData(X=chunked), tmp_path / "dask_sparse.h5ad")
    back = ad.read_h5ad(tmp_path / "dask_sparse.h5ad")
    assert sp.issparse(back.X) and back.X.format == "csr"
    np.testing.assert_array_equal(back.X.toarray(), sparse.toarray())


def test_maxshape_smaller_than_the_shape_says_so(tmp_path):
    # was h5py's message about the chunks: "(5,) is not compatible with (5,)"
    with pytest.raises(h5turbo.ArgumentError, match=r"maxshape \(3,\) is smaller than the shape \(5,\)"):
        h5turbo.write(tmp_path / "t.h5", "d", np.arange(5), maxshape=(3,), mode="w")
    with pytest.raises(h5turbo.ArgumentError, match="has 2 axes, the data 1"):
        h5turbo.write(tmp_path / "t.h5", "d", np.arange(5), maxshape=(5, 5), mode="w")
    h5turbo.write(tmp_path / "t.h5", "d", np.arange(5), maxshape=8, mode="w")
    h5turbo.write(tmp_path / "t.h5", "e", np.ones((5, 2)), maxshape=(None, 2), mode="a")
    with h5py.File(tmp_path / "t.h5", "r") as f:
        assert f["d"].maxshape == (8,) and f["e"].maxshape == (None, 2)


def test_a_dask_array_of_unknown_chunk_sizes(tmp_path):
    """A boolean selection leaves dask's chunk sizes unknown (NaN): 'cannot convert float
    NaN to integer'; h5py writes it (computing it whole)."""
    da = pytest.importorskip("dask.array")
    a = np.arange(2000 * 4).reshape(2000, 4)
    d = da.from_array(a, chunks=(100, 4))
    selected = d[d[:, 0] % 3 == 0]
    assert np.isnan(selected.shape[0])
    h5turbo.write(tmp_path / "t.h5", "x", selected, mode="w")
    h5turbo.write(tmp_path / "t.h5", "flat", d[:, 0][d[:, 0] > 10], mode="a")
    with h5py.File(tmp_path / "t.h5", "r") as f:
        np.testing.assert_array_equal(f["x"][()], a[a[:, 0] % 3 == 0])
        np.testing.assert_array_equal(f["flat"][()], a[:, 0][a[:, 0] > 10])
