"""Regenerate the filter fixtures: raw chunks written by libhdf5 + hdf5plugin.

Run from this folder: python make_fixtures.py
Writes <case>.chunk (the stored chunk), data_<dtype>_<n>.raw (decoded bytes, shared
by the cases with the same data) and manifest.txt, one line per case:
    case raw element_size filter_mask id:cd,cd,..;id:cd,..
With VBZ_TEST_DATA set to the test_data folder of github.com/nanoporetech/vbz_compression,
also extracts one read's vbz chunks (versions 0 and 1); its values come from the
gzip copy of the same file.
The large case's data is a ramp, (i % 1000) as int16, that the test regenerates
instead of storing ("ramp_<n>" in the raw column).
"""
import os
import tempfile

import h5py
import hdf5plugin
import numpy as np

N = 1003  # not a multiple of 8: exercises shuffle/bitshuffle tails


def data(dtype, n=N):
    rng = np.random.default_rng(7)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        # Quarter steps: few mantissa bits, so every codec finds something to compress.
        v = (np.round(np.cumsum(rng.normal(size=n)) * 4) / 4).astype(dt)
    else:
        info = np.iinfo(dt)
        v = (np.arange(n) % 37 * 3 + rng.integers(0, 5, n)).clip(info.min, info.max).astype(dt)
    return v


CASES = {
    "deflate_i4": ("<i4", dict(compression="gzip", compression_opts=4)),
    "shuffle_deflate_i2": ("<i2", dict(compression="gzip", shuffle=True)),
    "shuffle_deflate_f8be": (">f8", dict(compression="gzip", shuffle=True)),
    "fletcher_shuffle_deflate_f8": ("<f8", dict(compression="gzip", shuffle=True, fletcher32=True)),
    "fletcher_u1_odd": ("u1", dict(fletcher32=True)),
    "fletcher_shuffle_i4": ("<i4", dict(fletcher32=True, shuffle=True)),
    "lzf_f4": ("<f4", dict(compression="lzf")),
    "lzf_shuffle_i8": ("<i8", dict(compression="lzf", shuffle=True)),
    "zstd_i4": ("<i4", dict(**hdf5plugin.Zstd(clevel=5))),
    "lz4_f8_blocks": ("<f8", dict(**hdf5plugin.LZ4(nbytes=1024))),
    "lz4_i1": ("i1", dict(**hdf5plugin.LZ4())),
    "bitshuffle_none_i2": ("<i2", dict(**hdf5plugin.Bitshuffle(cname="none"))),
    "bitshuffle_lz4_f8": ("<f8", dict(**hdf5plugin.Bitshuffle(cname="lz4"))),
    "bitshuffle_zstd_i4_block64": ("<i4", dict(**hdf5plugin.Bitshuffle(nelems=64, cname="zstd"))),
    "bitshuffle_lz4_u1": ("u1", dict(**hdf5plugin.Bitshuffle(cname="lz4"))),
    "bzip2_i4": ("<i4", dict(**hdf5plugin.BZip2(blocksize=9))),
}

for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"]:
    for shuffle, tag in [(hdf5plugin.Blosc.SHUFFLE, "byte"), (hdf5plugin.Blosc.BITSHUFFLE, "bit"), (hdf5plugin.Blosc.NOSHUFFLE, "none")]:
        # 1000 elements: bit shuffle needs a multiple of 8 or Blosc stores the block as is.
        CASES[f"blosc_{cname}_{tag}_f8_1000"] = ("<f8", dict(**hdf5plugin.Blosc(cname=cname, clevel=5, shuffle=shuffle)))
# SZIP: entropy coding and nearest neighbour, 8- to 64-bit pixels (32 and 64 bits are
# coded as byte planes), both byte orders; 1003 pixels is not a whole number of blocks,
# and the 2-D case has 59-pixel scanlines, padded to whole blocks when coding.
for _dt, _opts in [("u1", ("nn", 8)), ("<i2", ("nn", 16)), (">u2", ("ec", 8)), ("<i4", ("nn", 32)),
                   ("<f4", ("ec", 16)), ("<f8", ("nn", 8)), (">i8", ("ec", 32)), ("<i2_2d", ("nn", 8)),
                   ("<f8_2d", ("ec", 16))]:
    _tag = _dt.replace("<", "le").replace(">", "be")
    CASES[f"szip_{_opts[0]}{_opts[1]}_{_tag}"] = (_dt.replace("_2d", ""), dict(compression="szip", compression_opts=_opts))
# Several blocks, split streams and a leftover block.
CASES["blosc_lz4_byte_i2_big"] = ("<i2", dict(**hdf5plugin.Blosc(cname="lz4", clevel=3, shuffle=hdf5plugin.Blosc.SHUFFLE)))
CASES["blosc_blosclz_bit_i2_big"] = ("<i2", dict(**hdf5plugin.Blosc(cname="blosclz", clevel=1, shuffle=hdf5plugin.Blosc.BITSHUFFLE)))
CASES["blosc_zstd_none_i2_big"] = ("<i2", dict(**hdf5plugin.Blosc(cname="zstd", clevel=1, shuffle=hdf5plugin.Blosc.NOSHUFFLE)))
# Blosc2 frames: 1-D (plain super-chunk), 2-D (B2ND metalayer), several blocks with a
# leftover one; each filter but truncated precision (lossy: h5py's values are the
# reference there, see tests/filters/test_filters.py).
_B2 = hdf5plugin.Blosc2
for _cname, _flt, _tag, _dt in [("lz4", _B2.SHUFFLE, "byte", "<i4"), ("zstd", _B2.BITSHUFFLE, "bit", "<f8"),
                                ("blosclz", _B2.DELTA, "delta", "<i2"), ("zlib", _B2.NOFILTER, "none", "u1"),
                                ("lz4hc", _B2.SHUFFLE, "byte", "<i8"), ("zstd", _B2.SHUFFLE, "byte", "<f8_2d")]:
    CASES[f"blosc2_{_cname}_{_tag}_{_dt.replace('<', 'le').replace('_2d', '') + ('_2d' if _dt.endswith('_2d') else '')}"] = (
        _dt.replace("_2d", ""), dict(**hdf5plugin.Blosc2(cname=_cname, clevel=5, filters=_flt)))
CASES["blosc2_lz4_byte_i2_big"] = ("<i2", dict(**hdf5plugin.Blosc2(cname="lz4", clevel=3, filters=_B2.SHUFFLE)))


def pipeline(dset):
    plist = dset.id.get_create_plist()
    parts = []
    for i in range(plist.get_nfilters()):
        code, _flags, values, _name = plist.get_filter(i)
        parts.append(f"{code}:" + ",".join(str(v) for v in values))
    return ";".join(parts)


def main():
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, (dtype, opts) in CASES.items():
            big = case.endswith("_big")
            n = 200_003 if big else (1000 if case.endswith("_1000") else N)
            arr = (np.arange(n) % 1000).astype(dtype) if big else data(dtype, n)
            if case.endswith("_2d"):
                arr = arr.reshape(17, 59)
            raw = f"ramp_{n}" if big else f"data_{np.dtype(dtype).str.replace('<', 'le').replace('>', 'be').replace('|', '')}_{n}"
            path = os.path.join(tmp, case + ".h5")
            with h5py.File(path, "w") as f:
                d = f.create_dataset("x", data=arr, chunks=arr.shape, **opts)
                mask, chunk = d.id.read_direct_chunk((0,) * arr.ndim)
                lines.append(f"{case} {raw} {arr.dtype.itemsize} {mask} {pipeline(d)}")
            with open(case + ".chunk", "wb") as out:
                out.write(chunk)
            if not big:
                with open(raw + ".raw", "wb") as out:
                    out.write(arr.tobytes())
        for case, (ftype, values, setup) in lowlevel_cases().items():
            raw, mask, chunk, pipe, size = write_lowlevel(os.path.join(tmp, case + ".h5"), ftype, values, setup)
            with open(case + ".raw", "wb") as out:
                out.write(raw)
            with open(case + ".chunk", "wb") as out:
                out.write(chunk)
            lines.append(f"{case} {case} {size} {mask} {pipe}")
    if os.environ.get("VBZ_TEST_DATA"):
        lines.extend(vbz_fixtures(os.environ["VBZ_TEST_DATA"]))
    with open("manifest.txt", "w") as out:
        out.write("\n".join(lines) + "\n")


def custom_int(base, precision, offset):
    t = base.copy()
    t.set_precision(precision)
    t.set_offset(offset)
    return t


def nbit_compound():
    t = h5py.h5t.create(h5py.h5t.COMPOUND, 8)
    t.insert(b"a", 0, custom_int(h5py.h5t.STD_I32LE, 17, 3))
    t.insert(b"b", 4, custom_int(h5py.h5t.STD_U16BE, 11, 2))
    t.insert(b"c", 6, h5py.h5t.STD_U8LE)
    return t


def compound_values(n):
    v = np.zeros(n, dtype=[("a", "<i4"), ("b", ">u2"), ("c", "u1")])
    v["a"] = np.arange(n) * 97 % 100000 - 50000
    v["b"] = np.arange(n) * 13 % 2048
    v["c"] = np.arange(n) % 251
    return v


# Low-level cases: (file type, values, dcpl setup). Their expected bytes are what
# libhdf5 itself decodes, read back in the file's own type (n-bit keeps only some bits;
# scale-offset on floats is lossy).
def lowlevel_cases():
    n = 400
    ints = np.arange(n) * 97 % 100000 - 50000
    nbit = lambda dcpl: dcpl.set_filter(5, h5py.h5z.FLAG_OPTIONAL, ())
    so = h5py.h5z

    def scaleoffset(scale_type, factor, fill=None, gzip=False, shuffle=False):
        def setup(dcpl):
            if fill is not None:
                dcpl.set_fill_value(np.array(fill))
            dcpl.set_scaleoffset(scale_type, factor)
            if shuffle:
                dcpl.set_shuffle()
            if gzip:
                dcpl.set_deflate(4)
        return setup

    def nbit_gzip(dcpl):
        nbit(dcpl)
        dcpl.set_deflate(4)

    floats = np.round(np.cumsum(np.random.default_rng(3).normal(size=n)), 3)
    with_fill = floats.copy()
    with_fill[::17] = -999.0
    wide = np.random.default_rng(4).integers(0, 2**63, size=n, dtype="<u8")
    return {
        "so_int_auto_lei4": (h5py.h5t.STD_I32LE, ints.astype("<i4"), scaleoffset(so.SO_INT, 0)),
        "so_int_auto_beu2": (h5py.h5t.STD_U16BE, (ints % 3000).astype(">u2"), scaleoffset(so.SO_INT, 0)),
        "so_int_12bits_lei8": (h5py.h5t.STD_I64LE, (ints % 4000).astype("<i8"), scaleoffset(so.SO_INT, 12)),
        "so_int_auto_i1": (h5py.h5t.STD_I8LE, (ints % 100 - 50).astype("i1"), scaleoffset(so.SO_INT, 0)),
        "so_int_fill_lei2": (h5py.h5t.STD_I16LE, np.where(ints % 9 == 0, -7, ints % 500).astype("<i2"),
                             scaleoffset(so.SO_INT, 0, fill=np.int16(-7))),
        "so_int_full_width_u8": (h5py.h5t.STD_U64LE, wide, scaleoffset(so.SO_INT, 0)),
        "so_float_d2_lef4": (h5py.h5t.IEEE_F32LE, floats.astype("<f4"), scaleoffset(so.SO_FLOAT_DSCALE, 2)),
        "so_float_d3_bef8": (h5py.h5t.IEEE_F64BE, floats.astype(">f8"), scaleoffset(so.SO_FLOAT_DSCALE, 3)),
        "so_float_d0_lef8": (h5py.h5t.IEEE_F64LE, floats * 100, scaleoffset(so.SO_FLOAT_DSCALE, 0)),
        "so_float_fill_lef4": (h5py.h5t.IEEE_F32LE, with_fill.astype("<f4"),
                               scaleoffset(so.SO_FLOAT_DSCALE, 1, fill=np.float32(-999.0))),
        "so_int_auto_gzip_lei4": (h5py.h5t.STD_I32LE, ints.astype("<i4"), scaleoffset(so.SO_INT, 0, gzip=True)),
        "so_int_shuffle_gzip_lei2": (h5py.h5t.STD_I16LE, (ints % 3000).astype("<i2"),
                                     scaleoffset(so.SO_INT, 0, gzip=True, shuffle=True)),
        "so_float_d2_gzip_lef8": (h5py.h5t.IEEE_F64LE, floats, scaleoffset(so.SO_FLOAT_DSCALE, 2, gzip=True)),
        "nbit_gzip_lei4_p17o3": (custom_int(h5py.h5t.STD_I32LE, 17, 3), ints.astype("<i4"), nbit_gzip),
        "nbit_lei4_p17o3": (custom_int(h5py.h5t.STD_I32LE, 17, 3), ints.astype("<i4"), nbit),
        "nbit_beu2_p11o2": (custom_int(h5py.h5t.STD_U16BE, 11, 2), (ints % 2048).astype(">u2"), nbit),
        "nbit_lei8_p40o8": (custom_int(h5py.h5t.STD_I64LE, 40, 8), (ints * 3_000_001).astype("<i8"), nbit),
        "nbit_u1_p3o4": (custom_int(h5py.h5t.STD_U8LE, 3, 4), (ints % 8).astype("u1"), nbit),
        "nbit_compound": (nbit_compound(), compound_values(n), nbit),
    }


def write_lowlevel(path, ftype, values, setup):
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(values.shape)
        setup(dcpl)
        space = h5py.h5s.create_simple(values.shape)
        dsid = h5py.h5d.create(f.id, b"x", ftype, space, dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, values)
    # Reopened, so the read decodes the stored chunk instead of hitting the chunk cache.
    with h5py.File(path, "r") as f:
        dsid = f["x"].id
        raw = np.empty(values.size * ftype.get_size(), dtype="u1")
        dsid.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=dsid.get_type())
        mask, chunk = dsid.read_direct_chunk((0,) * values.ndim)
        return raw.tobytes(), mask, chunk, pipeline(f["x"]), ftype.get_size()


VBZ_READ = "read_00919556-e519-4960-8aa5-c2dfa020980c/Raw/Signal"


def vbz_fixtures(folder):
    with h5py.File(os.path.join(folder, "multi_fast5_zip.fast5"), "r") as f:
        signal = f[VBZ_READ][...]
    raw = f"vbz_signal_{signal.dtype.str.replace('<', 'le')}_{len(signal)}"
    with open(raw + ".raw", "wb") as out:
        out.write(signal.tobytes())
    lines = []
    for version, name in [(0, "multi_fast5_vbz.fast5"), (1, "multi_fast5_vbz_v1.fast5")]:
        case = f"vbz_v{version}_i2"
        with h5py.File(os.path.join(folder, name), "r") as f:
            d = f[VBZ_READ]
            mask, chunk = d.id.read_direct_chunk((0,))
            lines.append(f"{case} {raw} {signal.dtype.itemsize} {mask} {pipeline(d)}")
        with open(case + ".chunk", "wb") as out:
            out.write(chunk)
    return lines


if __name__ == "__main__":
    main()
