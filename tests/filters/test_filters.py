"""Filtered datasets written by h5py + hdf5plugin read back by h5turbo, bit for bit.

Files are written at test time with libhdf5 (h5py) and the hdf5plugin filters. They
are then read by h5turbo in a subprocess where hdf5plugin cannot be imported and
HDF5_PLUGIN_PATH points to an empty folder, so every decoder that runs is h5turbo's
own. The values are compared with what h5py + hdf5plugin read from the same file.
"""

import json
import os
from pathlib import Path
import subprocess
import sys
import textwrap

import h5py
import hdf5plugin
import numpy as np
import pytest

import h5turbo
from support.common import REPO_ROOT

DTYPES = ["i1", "<i2", "<i4", "<i8", "u1", "<u2", "<u4", "<u8", "<f4", "<f8", ">i2", ">i4", ">u8", ">f4", ">f8"]
SHAPE = (37, 53)
CHUNKS = (16, 20)  # edge chunks on both axes

# The reader: no hdf5plugin (an import of it fails) and no plugin folder with anything in it.
READER = textwrap.dedent(
    """
    import json, sys
    sys.modules["hdf5plugin"] = None
    import numpy as np
    import h5turbo

    path, names, outdir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    try:
        with h5turbo.File(path) as f:
            for i, name in enumerate(names):
                np.save(f"{outdir}/{i}.npy", f[name][...], allow_pickle=False)
    except h5turbo.Error as e:
        print(f"H5TURBO_ERROR {type(e).__name__}: {e}")
        sys.exit(3)
    """
)


def values(dtype, seed, specials=True):
    """Structured runs (compressible) mixed with random rows (so some chunks do not
    compress and optional filters get skipped), plus float specials."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        v = np.round(np.cumsum(rng.normal(size=SHAPE), axis=1) * 8) / 8
        if specials:
            v[5] = rng.normal(size=SHAPE[1]) * 1e30
            v[0, :6] = [np.nan, np.inf, -np.inf, -0.0, np.finfo(dt).max, np.finfo(dt).tiny]
    else:
        info = np.iinfo(dt)
        v = ((np.arange(np.prod(SHAPE)).reshape(SHAPE) % 23) + (info.min // 2 + 7)).astype(dt)
        v[5:9] = rng.integers(info.min, info.max, size=(4, SHAPE[1]), dtype=dt.newbyteorder("="), endpoint=True)
        v[0, :2] = [info.min, info.max]
    return v.astype(dt)


def run_reader(tmp_path, path, names):
    empty = tmp_path / "no_plugins"
    empty.mkdir(exist_ok=True)
    outdir = tmp_path / "out"
    outdir.mkdir(exist_ok=True)
    env = dict(os.environ, HDF5_PLUGIN_PATH=str(empty))
    return subprocess.run(
        [sys.executable, "-c", READER, str(path), json.dumps(names), str(outdir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    ), outdir


def read_with_h5turbo(tmp_path, path, names):
    proc, outdir = run_reader(tmp_path, path, names)
    assert proc.returncode == 0, f"reader failed:\n{proc.stdout}\n{proc.stderr}"
    return [np.load(outdir / f"{i}.npy", allow_pickle=False) for i in range(len(names))]


def assert_same(got, want, what):
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.tobytes() == want.tobytes(), f"{what}: values differ"


def write_all_dtypes(path, opts, dtypes=DTYPES, specials=True):
    names = []
    with h5py.File(path, "w") as f:
        for i, dt in enumerate(dtypes):
            name = f"d{i}_{np.dtype(dt).str.replace('<', 'le').replace('>', 'be').replace('|', '')}"
            f.create_dataset(name, data=values(dt, i, specials), chunks=CHUNKS, **opts)
            names.append(name)
    return names


def expected(path, names):
    with h5py.File(path, "r") as f:
        return [f[n][...] for n in names]


def bitshuffle(cname, **kw):
    return dict(hdf5plugin.Bitshuffle(cname=cname, **kw))


def blosc(cname, shuffle, clevel=5):
    return dict(hdf5plugin.Blosc(cname=cname, clevel=clevel, shuffle=shuffle))


B = hdf5plugin.Blosc
FILTERS = {
    "gzip1": dict(compression="gzip", compression_opts=1),
    "gzip9": dict(compression="gzip", compression_opts=9),
    "shuffle": dict(shuffle=True),
    "shuffle_gzip": dict(compression="gzip", shuffle=True),
    "fletcher32": dict(fletcher32=True),
    "fletcher32_shuffle_gzip": dict(compression="gzip", shuffle=True, fletcher32=True),
    "lzf": dict(compression="lzf"),
    "shuffle_lzf": dict(compression="lzf", shuffle=True),
    "fletcher32_lzf": dict(compression="lzf", fletcher32=True),
    "zstd1": dict(hdf5plugin.Zstd(clevel=1)),
    "zstd19": dict(hdf5plugin.Zstd(clevel=19)),
    "shuffle_zstd": dict(hdf5plugin.Zstd(), shuffle=True),
    "lz4": dict(hdf5plugin.LZ4()),
    "lz4_small_blocks": dict(hdf5plugin.LZ4(nbytes=256)),
    "bitshuffle": bitshuffle("none"),
    "bitshuffle_lz4": bitshuffle("lz4"),
    "bitshuffle_zstd": bitshuffle("zstd"),
    "bitshuffle_lz4_block16": bitshuffle("lz4", nelems=16),
    "bzip2": dict(hdf5plugin.BZip2(blocksize=9)),
    "bzip2_fletcher32": dict(hdf5plugin.BZip2(blocksize=1), fletcher32=True),
    # 20-pixel scanlines (the chunks' last axis) are not whole 8- or 32-pixel blocks.
    "szip_nn8": dict(compression="szip", compression_opts=("nn", 8)),
    "szip_ec32": dict(compression="szip", compression_opts=("ec", 32)),
    "szip_nn16_shuffle_fletcher32": dict(compression="szip", compression_opts=("nn", 16), shuffle=True, fletcher32=True),
}
for _cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"]:
    for _shuffle, _tag in [(B.NOSHUFFLE, "none"), (B.SHUFFLE, "byte"), (B.BITSHUFFLE, "bit")]:
        FILTERS[f"blosc_{_cname}_{_tag}"] = blosc(_cname, _shuffle)
FILTERS["blosc_lz4_byte_clevel9"] = blosc("lz4", B.SHUFFLE, clevel=9)


def blosc2(cname, filters, clevel=5):
    return dict(hdf5plugin.Blosc2(cname=cname, clevel=clevel, filters=filters))


B2 = hdf5plugin.Blosc2
# Rank 2: written in B2ND mode (the chunk's blocks are 2-D tiles), edge chunks included.
for _cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]:
    for _filters, _tag in [(B2.NOFILTER, "none"), (B2.SHUFFLE, "byte"), (B2.BITSHUFFLE, "bit"),
                           (B2.DELTA, "delta")]:
        FILTERS[f"blosc2_{_cname}_{_tag}"] = blosc2(_cname, _filters)
FILTERS["blosc2_zstd_trunc_prec"] = blosc2("zstd", B2.TRUNC_PREC)
FILTERS["blosc2_lz4_clevel0"] = blosc2("lz4", B2.SHUFFLE, clevel=0)
FILTERS["blosc2_zstd_clevel9"] = blosc2("zstd", B2.BITSHUFFLE, clevel=9)
FILTERS["blosc_zstd_bit_clevel1"] = blosc("zstd", B.BITSHUFFLE, clevel=1)


# Scale-offset: integers with computed or fixed bit widths, floats with decimal scaling
# (lossy: h5py's decoded values are the reference). No NaN/inf: libhdf5's float
# scaling is undefined for them.
FLOATS = [dt for dt in DTYPES if np.dtype(dt).kind == "f"]
INTS = [dt for dt in DTYPES if np.dtype(dt).kind != "f"]
SCALEOFFSET = {
    "scaleoffset_int_auto": (dict(scaleoffset=0), INTS),
    "scaleoffset_int_auto_fill": (dict(scaleoffset=0, fillvalue=3), INTS),
    "scaleoffset_int_gzip": (dict(scaleoffset=0, compression="gzip", shuffle=True), INTS),
    "scaleoffset_float_d0": (dict(scaleoffset=0), FLOATS),
    "scaleoffset_float_d3": (dict(scaleoffset=3), FLOATS),
    "scaleoffset_float_d2_fill": (dict(scaleoffset=2, fillvalue=-1.5), FLOATS),
}


@pytest.mark.parametrize("filter_name", list(FILTERS) + list(SCALEOFFSET))
def test_filter_matches_h5py(tmp_path, filter_name):
    path = tmp_path / f"{filter_name}.h5"
    if filter_name in SCALEOFFSET:
        opts, dtypes = SCALEOFFSET[filter_name]
        names = write_all_dtypes(path, opts, dtypes, specials=False)
    else:
        names = write_all_dtypes(path, FILTERS[filter_name])
    want = expected(path, names)
    got = read_with_h5turbo(tmp_path, path, names)
    for name, g, w in zip(names, got, want):
        assert_same(g, w, f"{filter_name} {name}")


def test_optional_filter_skipped_chunks(tmp_path):
    """Random bytes do not compress: libhdf5 stores such chunks unfiltered and marks
    the optional filter as skipped in the chunk's filter mask."""
    path = tmp_path / "skipped.h5"
    rng = np.random.default_rng(1)
    data = rng.integers(0, 2**32, size=(64, 64), dtype="<u4")
    data[:32] = 5  # compressible half
    with h5py.File(path, "w") as f:
        f.create_dataset("lzf", data=data, chunks=(32, 64), compression="lzf")
        f.create_dataset("blosc", data=data, chunks=(32, 64), **blosc("lz4", B.NOSHUFFLE))
        masks = [f["lzf"].id.get_chunk_info(i).filter_mask for i in range(2)]
    assert 0 in masks and any(masks), f"fixture should mix filtered and skipped chunks: {masks}"
    got = read_with_h5turbo(tmp_path, path, ["lzf", "blosc"])
    for g in got:
        assert_same(g, data, "skipped chunks")


def test_optional_filter_that_refused_the_dataset(tmp_path):
    """bitshuffle cannot take variable-length strings: libhdf5 stores it with the two
    client values it was given and skips it in every chunk (as anndata's
    write_h5ad(compression=hdf5plugin.Bitshuffle()) leaves its string columns). h5py
    reads such chunks; so must we. A chunk that did not skip it cannot be decoded."""
    path = tmp_path / "refused.h5"
    words = np.array(["alpha", "béta", "", "gamma" * 20], dtype=object)
    with h5py.File(path, "w") as f:
        f.create_dataset("s", data=words, dtype=h5py.string_dtype(), chunks=(2,), **hdf5plugin.Bitshuffle(cname="lz4"))
        cd = f["s"].id.get_create_plist().get_filter(0)[2]
        masks = {f["s"].id.get_chunk_info(i).filter_mask for i in range(2)}
    assert len(cd) < 3 and masks == {1}, f"fixture: client data {cd}, masks {masks}"
    with h5turbo.File(path) as f:
        assert list(f["s"].asstr()[()]) == list(words)


def test_large_chunks_many_blocks(tmp_path):
    """Chunks large enough for several Blosc / bitshuffle / LZ4 blocks."""
    path = tmp_path / "large.h5"
    data = (np.arange(300_000, dtype="<i4") % 1013) * 3
    data[::7] = -data[::7]
    opts = {
        "blosc_lz4_byte": blosc("lz4", B.SHUFFLE, clevel=3),
        "blosc_blosclz_bit": blosc("blosclz", B.BITSHUFFLE, clevel=1),
        "bitshuffle_zstd": bitshuffle("zstd"),
        "lz4": dict(hdf5plugin.LZ4(nbytes=4096)),
        "gzip_shuffle": dict(compression="gzip", shuffle=True),
    }
    with h5py.File(path, "w") as f:
        for name, o in opts.items():
            f.create_dataset(name, data=data, chunks=(150_001,), **o)
    got = read_with_h5turbo(tmp_path, path, list(opts))
    for name, g in zip(opts, got):
        assert_same(g, data, name)


def write_nbit(path, ftype, data):
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(CHUNKS)
        dcpl.set_filter(h5py.h5z.FILTER_NBIT, h5py.h5z.FLAG_OPTIONAL, ())
        dsid = h5py.h5d.create(f.id, b"x", ftype, h5py.h5s.create_simple(data.shape), dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data)


def reduced(base, precision, offset):
    t = base.copy()
    t.set_precision(precision)
    t.set_offset(offset)
    return t


@pytest.mark.parametrize(
    "ftype,dtype",
    [
        (h5py.h5t.STD_I32LE, "<i4"),  # full precision: libhdf5 stores it as is
        (reduced(h5py.h5t.STD_I32LE, 17, 3), "<i4"),
        (reduced(h5py.h5t.STD_U16BE, 11, 2), ">u2"),
        (reduced(h5py.h5t.STD_I64LE, 40, 8), "<i8"),
    ],
)
def test_nbit(tmp_path, ftype, dtype):
    """n-bit keeps only the significant bits of each value; a reader also has to turn
    the reduced-precision type (precision, bit offset) into whole values."""
    data = (np.arange(np.prod(SHAPE)).reshape(SHAPE) * 97 % 2000 - (0 if dtype == ">u2" else 1000)).astype(dtype)
    path = tmp_path / "nbit.h5"
    write_nbit(path, ftype, data)
    (want,) = expected(path, ["x"])
    (got,) = read_with_h5turbo(tmp_path, path, ["x"])
    assert_same(got, want, "nbit")


FIXTURES = REPO_ROOT / "crates/h5turbo-core/tests/data/filters"


@pytest.mark.parametrize("version,cd", [(0, (0, 2, 1, 1, 1)), (1, (1, 2, 1, 1))])
def test_vbz_chunks_from_nanopore_files(tmp_path, version, cd):
    """hdf5plugin has no vbz encoder: store chunks taken from Oxford Nanopore's own
    vbz test files (see make_fixtures.py) with a direct chunk write."""
    signal = np.fromfile(FIXTURES / "vbz_signal_lei2_9885.raw", dtype="<i2")
    chunk = (FIXTURES / f"vbz_v{version}_i2.chunk").read_bytes()
    path = tmp_path / "vbz.h5"
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(signal.shape)
        dcpl.set_filter(32020, h5py.h5z.FLAG_OPTIONAL, cd)
        space = h5py.h5s.create_simple(signal.shape)
        dsid = h5py.h5d.create(f.id, b"Signal", h5py.h5t.STD_I16LE, space, dcpl=dcpl)
        dsid.write_direct_chunk((0,), chunk, filter_mask=0)
    (got,) = read_with_h5turbo(tmp_path, path, ["Signal"])
    assert_same(got, signal, f"vbz v{version}")


def flip_chunk_bytes(path, dataset, positions):
    """Flip bytes of the first stored chunk, at offsets relative to the chunk
    (negative: from its end)."""
    with h5py.File(path, "r") as f:
        info = f[dataset].id.get_chunk_info(0)
    with open(path, "r+b") as fh:
        for p in positions:
            at = info.byte_offset + (p if p >= 0 else info.size + p)
            fh.seek(at)
            b = fh.read(1)
            fh.seek(at)
            fh.write(bytes([b[0] ^ 0x5A]))


# Where a flip must be noticed: inside checksummed data, or in a size field.
CORRUPTIONS = {
    "gzip_middle": (dict(compression="gzip"), [0.5]),
    "gzip_adler": (dict(compression="gzip"), [-1]),
    "fletcher32_data": (dict(fletcher32=True), [0.3]),
    "fletcher32_shuffle_gzip_checksum": (dict(compression="gzip", shuffle=True, fletcher32=True), [-2]),
    "lzf_fletcher32": (dict(compression="lzf", fletcher32=True), [0.5]),
    "lz4_size_header": (dict(hdf5plugin.LZ4()), [3, 4, 5, 6, 7]),
    "bitshuffle_lz4_size_header": (bitshuffle("lz4"), [6, 7]),
    "blosc_nbytes": (blosc("lz4", B.SHUFFLE), [4, 5]),
    "bzip2_middle": (dict(hdf5plugin.BZip2()), [0.5]),
    "zstd_magic": (dict(hdf5plugin.Zstd()), [0, 1]),
    "blosc2_frame_magic": (blosc2("lz4", B2.SHUFFLE), [2, 3]),
    "blosc2_frame_length": (blosc2("zstd", B2.SHUFFLE), [0x10, 0x11, 0x12]),
    "blosc2_chunk_sizes": (blosc2("blosclz", B2.BITSHUFFLE), [-20, -40, -60]),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_corrupted_chunk_raises(tmp_path, case):
    opts, where = CORRUPTIONS[case]
    path = tmp_path / f"{case}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=values("<i4", 3), chunks=CHUNKS, **opts)
        size = f["x"].id.get_chunk_info(0).size
    flip_chunk_bytes(path, "x", [int(w * size) if isinstance(w, float) else w for w in where])
    proc, _ = run_reader(tmp_path, path, ["x"])
    assert proc.returncode == 3, f"expected h5turbo.Error, got rc {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert "H5TURBO_ERROR" in proc.stdout


@pytest.mark.parametrize(
    "opts,needle",
    [
        (dict(hdf5plugin.SZ(absolute=0.1)), "32017"),
        (dict(hdf5plugin.Zfp(rate=8)), "32013"),
        (dict(hdf5plugin.SZ3(absolute=0.1)), "32024"),
    ],
)
def test_unsupported_filter_is_named(tmp_path, opts, needle):
    path = tmp_path / "unsupported.h5"
    with h5py.File(path, "w") as f:
        # no NaN/inf: SZ3 takes ~24 s to compress this array with them, 0.01 s without
        f.create_dataset("x", data=values("<f4", 0, specials=False), chunks=CHUNKS, **opts)
    proc, _ = run_reader(tmp_path, path, ["x"])
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "UnsupportedError" in proc.stdout and needle in proc.stdout, proc.stdout


def test_reader_environment_has_no_plugin_filters(tmp_path):
    """The isolation the other tests rely on: in the reader's environment libhdf5
    itself cannot decode a plugin filter, so only h5turbo's decoders can succeed."""
    path = tmp_path / "blosc.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=values("<i4", 0), chunks=CHUNKS, **blosc("lz4", B.SHUFFLE))
    empty = tmp_path / "no_plugins"
    empty.mkdir()
    probe = textwrap.dedent(
        """
        import sys
        sys.modules["hdf5plugin"] = None
        try:
            import hdf5plugin
            sys.exit("hdf5plugin is importable")
        except ImportError:
            pass
        import h5py
        with h5py.File(sys.argv[1], "r") as f:
            try:
                f["x"][...]
            except OSError:
                sys.exit(0)
        sys.exit("libhdf5 decoded a plugin filter")
        """
    )
    env = dict(os.environ, HDF5_PLUGIN_PATH=str(empty))
    proc = subprocess.run([sys.executable, "-c", probe, str(path)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_blosc2_shapes_blocks_and_unwritten_chunks(tmp_path):
    """Blosc2 beyond the dtype matrix: 1-D (no b2nd metalayer) and 2-D / 3-D datasets
    whose b2nd blocks do not divide the chunk, chunks big enough for many blocks, a chunk that
    is all zeros, one of a single repeated value, all-NaN floats, and never-written
    chunks that read as the fill value."""
    path = tmp_path / "blosc2.h5"
    rng = np.random.default_rng(5)
    big = (np.arange(400_000, dtype="<i8") % 977) - 300
    cube = rng.normal(size=(30, 41, 23)).astype(">f4")
    cube[:15] = 0  # whole chunks of zeros
    cube[15:, :20] = 7.25  # and of one repeated value
    nans = np.full((64, 64), np.nan, dtype="<f8")
    names = {
        "big_1d_zstd": (big, (150_001,), blosc2("zstd", B2.SHUFFLE)),
        "big_1d_blosclz_delta": (big, (131_072,), blosc2("blosclz", B2.DELTA)),
        "cube_lz4_bit": (cube, (15, 20, 11), blosc2("lz4", B2.BITSHUFFLE)),
        "cube_zlib_byte": (cube, (7, 41, 23), blosc2("zlib", B2.SHUFFLE)),
        "nans": (nans, (32, 64), blosc2("zstd", B2.SHUFFLE)),
        # Chunks big enough that the filter picks smaller b2nd blocks that do not divide
        # them (256 x 256 tiles of a 300 x 700 chunk; 32 x 32 x 64 of 45 x 100 x 100).
        "tiled_2d": (rng.normal(size=(600, 700)), (300, 700), blosc2("zstd", B2.SHUFFLE)),
        "tiled_3d": (rng.integers(-999, 999, size=(90, 100, 100)).astype("<i2"), (45, 100, 100),
                     blosc2("lz4", B2.BITSHUFFLE)),
    }
    with h5py.File(path, "w") as f:
        for name, (data, chunks, opts) in names.items():
            f.create_dataset(name, data=data, chunks=chunks, **opts)
        partial = f.create_dataset("partial", shape=(100, 100), dtype="<i2", chunks=(32, 32), fillvalue=-9,
                                   **blosc2("lz4", B2.SHUFFLE))
        partial[40:70, 10:50] = np.arange(1200, dtype="<i2").reshape(30, 40)
    want = expected(path, list(names) + ["partial"])
    got = read_with_h5turbo(tmp_path, path, list(names) + ["partial"])
    for name, g, w in zip(list(names) + ["partial"], got, want):
        assert_same(g, w, f"blosc2 {name}")
