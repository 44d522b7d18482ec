"""Parameter sweeps of every filter decoder against h5py + hdf5plugin (beyond
test_filters.py): deflate levels, shuffle over odd element sizes, unusual pipeline
orders built with the low-level property list, n-bit on every datatype class libhdf5
packs, scale-offset over sizes, signs, bit widths, fill values and decimal scales,
szip options, the Blosc / Blosc2 / bitshuffle / LZ4 / zstd / bzip2 / LZF / vbz
parameter matrices, chunks that do not compress, huge, single-element and edge
chunks, and corrupted chunks.

As in test_filters.py, h5turbo reads in a subprocess where hdf5plugin cannot be
imported and HDF5_PLUGIN_PATH names an empty folder, so only h5turbo's own decoders
run. Each file holds many datasets; the reader reports every dataset's outcome (value
or h5turbo error) and one test fails with the list of datasets that differ from h5py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import pickle
import subprocess
import sys
import textwrap

import h5py
import hdf5plugin
import numpy as np
import pytest

from support.h5compare import difference

Z = h5py.h5z
T = h5py.h5t
OPT, MAND = Z.FLAG_OPTIONAL, Z.FLAG_MANDATORY
B = hdf5plugin.Blosc
B2 = hdf5plugin.Blosc2

# Reads every dataset it is given; an h5turbo error is an outcome, anything else (a
# crash, another exception, a hang) fails the test. Values travel as (dtype, shape,
# bytes; a list for variable-length data): np.save refuses compounds with out-of-order
# fields, and pickling an array drops a non-native byte order with numpy 2.4.
READER = textwrap.dedent(
    """
    import json, pickle, sys
    sys.modules["hdf5plugin"] = None
    import h5turbo

    path, names, outdir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    outcome = {}
    with h5turbo.File(path) as f:
        for i, name in enumerate(names):
            print("START", name, flush=True)
            try:
                a = f[name][...]
            except h5turbo.Error as e:
                outcome[name] = [type(e).__name__, str(e)]
                continue
            with open(f"{outdir}/{i}.pkl", "wb") as fh:
                pickle.dump((a.dtype, a.shape, a.tolist() if a.dtype.hasobject else a.tobytes()), fh)
            outcome[name] = None
    with open(f"{outdir}/outcome.json", "w") as fh:
        json.dump(outcome, fh)
    """
)


def read_with_h5turbo(tmp_path: Path, path: Path, names: list[str], timeout: float = 120):
    """{name: ndarray | (error class name, message)} as h5turbo's own decoders read them."""
    empty = tmp_path / "no_plugins"
    empty.mkdir(exist_ok=True)
    outdir = tmp_path / f"out_{path.stem}"
    outdir.mkdir()
    env = dict(os.environ, HDF5_PLUGIN_PATH=str(empty))
    proc = subprocess.run([sys.executable, "-c", READER, str(path), json.dumps(names), str(outdir)],
                          env=env, capture_output=True, text=True, timeout=timeout)
    started = [line[6:] for line in proc.stdout.splitlines() if line.startswith("START ")]
    assert proc.returncode == 0, (f"reader died (rc {proc.returncode}) reading {started[-1:]}:\n"
                                  f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    outcome = json.loads((outdir / "outcome.json").read_text())
    got = {}
    for i, name in enumerate(names):
        if outcome[name] is None:
            with open(outdir / f"{i}.pkl", "rb") as fh:
                dtype, shape, raw = pickle.load(fh)
            if dtype.hasobject:  # variable-length strings and sequences
                value = np.empty(len(raw), dtype=dtype)
                value[:] = raw
                got[name] = value.reshape(shape)
            else:
                got[name] = np.frombuffer(raw, dtype=dtype).reshape(shape)
        else:
            got[name] = tuple(outcome[name])
    return got


def dataset_names(path: Path) -> list[str]:
    names = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return names


def differences(tmp_path: Path, path: Path, names: list[str] | None = None) -> tuple[list[str], int]:
    """Datasets where h5turbo's read is not h5py's (value, dtype, or an error where h5py
    reads). A dataset h5py cannot read must give an h5turbo error."""
    names = names or dataset_names(path)
    want = {}
    with h5py.File(path, "r") as f:
        for n in names:
            try:
                want[n] = f[n][...]
            except OSError as e:
                want[n] = e
    got = read_with_h5turbo(tmp_path, path, names)
    bad = []
    for n in names:
        w, g = want[n], got[n]
        if isinstance(w, OSError):
            if not isinstance(g, tuple):
                bad.append(f"{n}: h5py fails ({w}) but h5turbo returned values")
            continue
        if isinstance(g, tuple):
            bad.append(f"{n}: h5turbo {g[0]}: {g[1]}")
            continue
        problem = difference(w, g)
        if problem:
            bad.append(f"{n}: {problem}")
    return bad, len(names)


def assert_all_agree(tmp_path, path, names=None, at_least=1):
    bad, count = differences(tmp_path, path, names)
    assert count >= at_least, f"fixture wrote only {count} datasets"
    assert not bad, f"{len(bad)} of {count} datasets differ:\n" + "\n".join(bad[:40])


def create(f, name, data, *, chunks, filters=(), ftype=None, mtype=None, shape=None, fill=None, dcpl=None):
    """A dataset whose pipeline is exactly `filters` [(id, flags, client data)], in that
    order, of file type `ftype` (default: data's), written from `data` of memory type
    `mtype` (default: data's)."""
    dcpl = dcpl or h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    for fid, flags, cd in filters:
        dcpl.set_filter(fid, flags, tuple(cd))
    if fill is not None:
        dcpl.set_fill_value(np.asarray(fill, dtype=data.dtype))
    ftype = ftype or T.py_create(data.dtype, logical=True)
    if mtype is None and ftype.get_class() == T.ARRAY:
        mtype = ftype
    space = h5py.h5s.create_simple(shape or data.shape)
    ds = h5py.h5d.create(f.id, name.encode(), ftype, space, dcpl=dcpl)
    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=mtype or T.py_create(data.dtype))
    return ds


def reduced(base, precision, offset):
    t = base.copy()
    t.set_precision(precision)
    t.set_offset(offset)
    return t


def reduced_float(base, esize, msize, offset):
    """A float of 1 + esize + msize bits at bit `offset`."""
    t = base.copy()
    precision = 1 + esize + msize
    t.set_fields(precision - 1, msize, esize, 0, msize)
    t.set_precision(precision)
    t.set_offset(offset)
    t.set_ebias(2 ** (esize - 1) - 1)
    return t


def patterned(dtype, shape, rng, random_fraction=0.3):
    """Bytes of short runs (compressible) ending in random bytes (not), as `dtype`."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    raw = (np.arange(n * dt.itemsize) // 3 % 11).astype(np.uint8)
    k = int(raw.size * random_fraction)
    if k:
        raw[-k:] = rng.integers(0, 256, k, dtype=np.uint8)
    return np.frombuffer(raw.tobytes(), dtype=dt).reshape(shape + dt.shape)


def smooth_floats(dtype, shape, rng, random_fraction=0.3):
    n = int(np.prod(shape))
    v = np.round(np.cumsum(rng.normal(size=n)) * 8) / 8
    k = int(n * random_fraction)
    if k:
        v[-k:] = rng.normal(size=k) * 1e6
    return v.astype(dtype).reshape(shape)


# Shuffle element sizes 1..16 and beyond, odd ones included: strings, compounds (packed
# and with padding), arrays, complex.
SHUFFLE_DTYPES = {
    "u1": "u1", **{f"S{n}": f"S{n}" for n in range(1, 17)}, "S255": "S255", "S256": "S256", "S300": "S300",
    "cmp3": np.dtype([("a", "u1"), ("b", "<i2")]),
    "cmp11": np.dtype([("a", "<f8"), ("b", "u1"), ("c", ">i2")]),
    "cmp_pad9": np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 5], "itemsize": 9}),
    "arr_i2x3": np.dtype(("<i2", (3,))),
    "arr_f4x3": np.dtype((">f4", (3,))),
    "c8": ">c8", "c16": "<c16", "i8": ">i8",
}

SHUF = (Z.FILTER_SHUFFLE, OPT, ())
F32 = (Z.FILTER_FLETCHER32, MAND, ())


def gz(level):
    return (Z.FILTER_DEFLATE, OPT, (level,))


PIPELINES = {
    "shuffle": [SHUF],
    "shuffle_deflate": [SHUF, gz(4)],
    "fletcher32_shuffle": [F32, SHUF],
    "shuffle_shuffle": [SHUF, SHUF],
    "deflate_shuffle": [gz(6), SHUF],
    "deflate_fletcher32_shuffle": [gz(6), F32, SHUF],
    "fletcher32_fletcher32": [F32, F32],
    "shuffle_fletcher32_deflate_fletcher32": [SHUF, F32, gz(1), F32],
    "deflate_deflate": [gz(1), gz(9)],
    "fletcher32_deflate_shuffle_deflate": [F32, gz(3), SHUF, gz(3)],
}


def test_deflate_levels_shuffle_sizes_and_pipeline_orders(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "pipelines.h5"
    with h5py.File(path, "w") as f:
        x = (np.arange(5000) % 97).astype("<i4").reshape(50, 100)
        x[10] = rng.integers(-2**31, 2**31 - 1, 100)
        for level in range(10):
            create(f, f"deflate{level}", x, chunks=(7, 33), filters=[gz(level)])
            create(f, f"shuffle_deflate{level}_u1_odd", (np.arange(1001) % 7).astype("u1"), chunks=(333,),
                   filters=[SHUF, gz(level), F32])
        for tag, dt in SHUFFLE_DTYPES.items():
            dt = np.dtype(dt)
            shape, chunks = ((23, 17), (5, 6)) if dt.itemsize < 200 else ((9, 7), (4, 3))
            data = patterned(dt, shape, rng)
            for pname, pipeline in PIPELINES.items():
                create(f, f"{pname}_{tag}", data, shape=shape, chunks=chunks, filters=pipeline)
        # shuffle's client data is replaced by the element size whatever is asked
        for es in [1, 3, 16]:
            create(f, f"shuffle_cd{es}", patterned("<i4", (31,), rng), chunks=(10,),
                   filters=[(Z.FILTER_SHUFFLE, MAND, (es,))])
            assert f[f"shuffle_cd{es}"].id.get_create_plist().get_filter(0)[2] == (4,)
    assert_all_agree(tmp_path, path, at_least=300)


def test_fletcher32_pre_1_6_3_checksum_and_odd_lengths(tmp_path):
    """libhdf5 accepts the checksum with the bytes of each 16-bit half swapped (files
    from before 1.6.3); odd-length chunks count their last byte as a high byte."""
    path = tmp_path / "fletcher.h5"
    with h5py.File(path, "w") as f:
        data = (np.arange(333) * 7 % 251).astype("u1")
        for n in [1, 2, 3, 333]:
            f.create_dataset(f"odd{n}", data=data[:n], chunks=(n,), fletcher32=True)
        big = (np.arange(300_001, dtype=np.uint64) * 2654435761 % 2**32).astype("<u4")
        f.create_dataset("big", data=big, chunks=(300_001,), fletcher32=True)  # many 360-word reductions
        ds = f.create_dataset("swapped", data=data, chunks=(333,), fletcher32=True)
        mask, chunk = ds.id.read_direct_chunk((0,))
        c = bytearray(chunk)
        c[-4:] = bytes([c[-3], c[-4], c[-1], c[-2]])
        assert bytes(c) != chunk
        ds.id.write_direct_chunk((0,), bytes(c), filter_mask=mask)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["swapped"][...], data)  # the fixture is what libhdf5 accepts
    assert_all_agree(tmp_path, path, at_least=6)


NBIT = [(Z.FILTER_NBIT, OPT, ())]


def test_compressor_chains_in_unusual_orders(tmp_path):
    """Compressors behind compressors (the inner one's size is then known only from its
    own header, or not at all), plain bitshuffle between shuffles, checksums between
    compressors, n-bit and scale-offset under later filters."""
    rng = np.random.default_rng(16)
    path = tmp_path / "chains.h5"
    lzf, bz, zs, l4 = (32000, OPT, ()), (307, OPT, (9,)), (32015, OPT, (3,)), (32004, OPT, (0,))
    blosc, blosc2 = (32001, OPT, (2, 2, 4, 0, 5, 2, 0)), (32026, OPT, (0, 0, 0, 0, 5, 1, 1))
    bs_plain, bs_lz4 = (32008, OPT, (0, 0)), (32008, OPT, (0, 2))
    nbit, so = (Z.FILTER_NBIT, OPT, ()), (Z.FILTER_SCALEOFFSET, OPT, (2, 0))
    pipes = {
        "lzf_shuffle_zstd": [lzf, SHUF, zs], "bzip2_f32_deflate_shuffle": [bz, F32, gz(5), SHUF],
        "deflate_lzf_bzip2": [gz(5), lzf, bz], "nbit_deflate_shuffle_lzf": [nbit, gz(5), SHUF, lzf],
        "scaleoffset_shuffle_lzf_f32": [so, SHUF, lzf, F32], "deflate_blosc": [gz(5), blosc],
        "deflate_bitshuffle": [gz(3), bs_plain], "bitshuffle_deflate": [bs_plain, gz(3)], "lz4_lzf": [l4, lzf],
        "lzf_lz4": [lzf, l4], "blosc2_deflate": [blosc2, gz(1)], "deflate_blosc2": [gz(1), blosc2],
        "bitshuffle_lz4_bzip2": [bs_lz4, bz], "lzf_bitshuffle_lz4": [lzf, bs_lz4],
        "f32_lzf_f32_lzf": [F32, lzf, F32, lzf],
        "shuffle_bitshuffle_shuffle": [SHUF, bs_plain, SHUF], "lzf_lzf": [lzf, lzf], "zstd_zstd": [zs, zs],
        "bzip2_bzip2": [bz, bz],
    }
    if Z.filter_avail(Z.FILTER_SZIP):
        pipes["zstd_szip"] = [zs, (Z.FILTER_SZIP, OPT, (Z.SZIP_NN_OPTION_MASK, 8))]
    d = np.cumsum(rng.integers(-50, 50, (40, 120)), axis=1).astype("<i4")
    d[5] = rng.integers(-2**31, 2**31 - 1, 120)
    with h5py.File(path, "w") as f:
        for name, pipe in pipes.items():
            create(f, name, d, chunks=(16, 50), filters=pipe,
                   ftype=reduced(T.STD_I32LE, 26, 3) if name.startswith("nbit") else None)
    assert_all_agree(tmp_path, path, at_least=19)


INT_BASES = [(T.STD_I8LE, "i1"), (T.STD_U8LE, "u1"), (T.STD_I16LE, "<i2"), (T.STD_U16BE, ">u2"), (T.STD_I32BE, ">i4"),
             (T.STD_U32LE, "<u4"), (T.STD_I64LE, "<i8"), (T.STD_U64BE, ">u8"), (T.STD_I64BE, ">i8")]


def test_nbit_integer_precision_and_offset_sweep(tmp_path):
    """Every size and byte order, precision 1..full, offsets 0..size*8-precision (libhdf5
    2.0 refuses types whose top byte is all padding)."""
    rng = np.random.default_rng(1)
    path = tmp_path / "nbit_ints.h5"
    with h5py.File(path, "w") as f:
        for base, dt in INT_BASES:
            bits = np.dtype(dt).itemsize * 8
            signed = np.dtype(dt).kind == "i"
            for prec in sorted({1, 2, 3, 7, 8, 9, bits // 2 + 1, bits - 1, bits}):
                for off in sorted({0, 1, 5, (bits - prec) // 2, bits - prec - 1, bits - prec}):
                    if off < 0 or off + prec > bits or off + prec <= bits - 8:
                        continue
                    lo, hi = (-(2 ** (prec - 1)), 2 ** (prec - 1) - 1) if signed else (0, 2**prec - 1)
                    data = rng.integers(lo, hi, size=(40,), endpoint=True,
                                        dtype=np.int64 if signed else np.uint64).astype(dt)
                    data[:3] = [lo, hi, 0]
                    create(f, f"nbit_{dt}_p{prec}_o{off}", data, ftype=reduced(base, prec, off), chunks=(13,),
                           filters=NBIT)
    assert_all_agree(tmp_path, path, at_least=150)


def test_nbit_floats_compounds_arrays(tmp_path):
    """Reduced floats (h5turbo also widens the layout), compounds of reduced members with
    string and enum (no-op) members, nested compounds, arrays of compounds, arrays of
    enums, members out of offset order, full-precision types (stored as is), and n-bit
    inside longer pipelines."""
    rng = np.random.default_rng(2)
    path = tmp_path / "nbit_composite.h5"
    i4r, u2r = reduced(T.STD_I32LE, 20, 5), reduced(T.STD_U16BE, 12, 3)
    i8r, u1r = reduced(T.STD_I64BE, 33, 30), reduced(T.STD_U8LE, 3, 2)
    enum = T.enum_create(T.STD_I16LE)
    enum.enum_insert(b"A", 1)
    enum.enum_insert(b"B", -300)
    with h5py.File(path, "w") as f:
        for base, dt, layouts in [
            (T.IEEE_F32LE, "<f4", [(8, 15, 8), (8, 15, 5), (8, 23, 0), (5, 10, 10), (8, 7, 16), (6, 20, 3)]),
            (T.IEEE_F64BE, ">f8", [(11, 52, 0), (11, 40, 12), (8, 23, 32), (11, 44, 3), (9, 50, 2)]),
            (T.IEEE_F32BE, ">f4", [(8, 15, 8), (5, 18, 6)]),
            (T.IEEE_F64LE, "<f8", [(11, 36, 16), (15, 40, 1)]),
        ]:
            for es, ms, off in layouts:
                v = np.round(rng.normal(size=50) * 100, 2)
                v[:4] = [0.0, -0.0, 1.5, -3.25]
                create(f, f"float_{dt}_e{es}_m{ms}_o{off}", v.astype(dt), ftype=reduced_float(base, es, ms, off),
                       chunks=(17,), filters=NBIT)

        s5 = T.C_S1.copy()
        s5.set_size(5)
        ct = T.create(T.COMPOUND, 40)
        for name, offset, t in [(b"a", 0, i4r), (b"b", 4, u2r), (b"c", 7, i8r), (b"d", 15, u1r),
                                (b"e", 16, reduced_float(T.IEEE_F32LE, 8, 15, 8)), (b"f", 20, enum), (b"s", 22, s5),
                                (b"g", 27, T.array_create(u2r, (3,)))]:
            ct.insert(name, offset, t)
        mdt = np.dtype([("a", "<i4"), ("b", ">u2"), ("c", ">i8"), ("d", "u1"), ("e", "<f4"), ("f", "<i2"), ("s", "S5"),
                        ("g", ">u2", (3,))])
        n = 60
        d = np.zeros(n, dtype=mdt)
        d["a"] = rng.integers(-2**19, 2**19, n)
        d["b"] = rng.integers(0, 2**12, n)
        d["c"] = rng.integers(-2**32, 2**32, n)
        d["d"] = rng.integers(0, 8, n)
        d["e"] = np.round(rng.normal(size=n), 3)
        d["f"] = rng.choice([1, -300], n)
        d["s"] = [b"ab", b"hello", b"", b"xyz\x01q"] * 15
        d["g"] = rng.integers(0, 2**12, (n, 3))
        create(f, "compound", d, ftype=ct, mtype=T.py_create(mdt), chunks=(7,), filters=NBIT)

        inner = T.create(T.COMPOUND, 6)
        inner.insert(b"x", 0, u2r)
        inner.insert(b"y", 2, i4r)
        idt = np.dtype([("x", ">u2"), ("y", "<i4")])
        outer = T.create(T.COMPOUND, 9)
        outer.insert(b"p", 0, u1r)
        outer.insert(b"q", 1, inner)
        outer.insert(b"z", 7, T.STD_I16LE)
        d1 = np.zeros(33, np.dtype([("p", "u1"), ("q", idt), ("z", "<i2")]))
        d1["p"] = rng.integers(0, 8, 33)
        d1["q"]["x"] = rng.integers(0, 4096, 33)
        d1["q"]["y"] = rng.integers(-2**19, 2**19, 33)
        d1["z"] = rng.integers(-999, 999, 33)
        create(f, "nested_compound", d1, ftype=outer, mtype=T.py_create(d1.dtype), chunks=(5,), filters=NBIT)
        arrc = T.array_create(inner, (2,))
        o2 = T.create(T.COMPOUND, 13)
        o2.insert(b"p", 0, u1r)
        o2.insert(b"r", 1, arrc)
        d2 = np.zeros(33, np.dtype([("p", "u1"), ("r", idt, (2,))]))
        d2["p"] = rng.integers(0, 8, 33)
        d2["r"]["x"] = rng.integers(0, 4096, (33, 2))
        d2["r"]["y"] = rng.integers(-2**19, 2**19, (33, 2))
        create(f, "array_of_compound_member", d2, ftype=o2, mtype=T.py_create(d2.dtype), chunks=(5,), filters=NBIT)
        d3 = np.ascontiguousarray(d2["r"])
        create(f, "array_of_compound", d3, shape=(33,), ftype=arrc, mtype=T.array_create(T.py_create(idt), (2,)),
               chunks=(5,), filters=NBIT)
        ad = rng.integers(-2**19, 2**19, (21, 2, 3)).astype("<i4")
        create(f, "array_2x3", ad, shape=(21,), ftype=T.array_create(i4r, (2, 3)),
               mtype=T.array_create(T.STD_I32LE, (2, 3)), chunks=(4,), filters=NBIT)

        ce = T.create(T.COMPOUND, 12)
        ce.insert(b"a", 0, i4r)
        ce.insert(b"e", 4, T.array_create(enum, (3,)))
        ce.insert(b"b", 10, reduced(T.STD_U16LE, 9, 7))
        edt = np.dtype([("a", "<i4"), ("e", "<i2", (3,)), ("b", "<u2")])
        de = np.zeros(40, edt)
        de["a"] = rng.integers(-2**19, 2**19, 40)
        de["e"] = rng.choice([1, -300], (40, 3))
        de["b"] = rng.integers(0, 512, 40)
        me = T.create(T.COMPOUND, 12)
        me.insert(b"a", 0, T.STD_I32LE)
        me.insert(b"e", 4, T.array_create(T.STD_I16LE, (3,)))
        me.insert(b"b", 10, T.STD_U16LE)
        create(f, "compound_enum_array", de, ftype=ce, mtype=me, chunks=(7,), filters=NBIT)

        co = T.create(T.COMPOUND, 24)  # members inserted out of offset order, gaps between them
        co.insert(b"z", 16, reduced(T.STD_I64LE, 60, 2))
        co.insert(b"a", 1, reduced(T.STD_U16BE, 13, 1))
        co.insert(b"m", 8, T.IEEE_F32BE)
        odt = np.dtype([("z", "<i8"), ("a", ">u2"), ("m", ">f4")])
        do = np.zeros(30, odt)
        do["z"] = rng.integers(-2**59, 2**59, 30)
        do["a"] = rng.integers(0, 2**13, 30)
        do["m"] = rng.normal(size=30)
        create(f, "compound_out_of_order", do, ftype=co, mtype=T.py_create(odt), chunks=(7,), filters=NBIT)

        for dt in ["<i4", ">f8", "<c8"]:
            v = np.frombuffer(rng.integers(0, 255, 40 * np.dtype(dt).itemsize, dtype="u1").tobytes(), dtype=dt)
            create(f, f"full_{dt}", np.nan_to_num(v) if np.dtype(dt).kind in "fc" else v, chunks=(9,), filters=NBIT)
        cf = np.zeros(20, np.dtype([("a", "<i4"), ("b", ">f8")]))
        cf["a"] = np.arange(20)
        cf["b"] = np.arange(20) * 0.5
        create(f, "full_compound", cf, chunks=(6,), filters=NBIT)

        x = rng.integers(-2**19, 2**19, (33, 47)).astype("<i4")
        create(f, "nbit_shuffle_bzip2_fletcher32", x, ftype=i4r, chunks=(10, 9),
               filters=NBIT + [SHUF, (307, OPT, (3,)), F32])
        create(f, "nbit_lz4", x, ftype=i4r, chunks=(10, 9), filters=NBIT + [(32004, OPT, (0,))])
        create(f, "nbit_blosc", x, ftype=i4r, chunks=(10, 9), filters=NBIT + [(32001, OPT, (2, 2, 4, 0, 5, 1, 1))])
        create(f, "shuffle_nbit", x, ftype=i4r, chunks=(10, 9), filters=[SHUF] + NBIT)

        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(-77, "<i4"))
        dcpl.set_chunk((8,))
        dcpl.set_filter(Z.FILTER_NBIT, OPT, ())
        ds = h5py.h5d.create(f.id, b"partial_with_fill", i4r, h5py.h5s.create_simple((50,)), dcpl=dcpl)
        sel = h5py.h5s.create_simple((50,))
        sel.select_hyperslab((10,), (20,))
        ds.write(h5py.h5s.create_simple((20,)), sel, np.arange(20, dtype="<i4") * -1000)
    assert_all_agree(tmp_path, path, at_least=30)


def test_nbit_on_a_no_op_datatype(tmp_path):
    """libhdf5's n-bit leaves datatypes it does not pack (enum, fixed string, bitfield,
    opaque) as they are: client data [3, 1, elements]; h5py reads them."""
    rng = np.random.default_rng(3)
    enum = T.enum_create(T.STD_I16LE)
    enum.enum_insert(b"A", 1)
    enum.enum_insert(b"B", -300)
    path = tmp_path / "nbit_noop.h5"
    with h5py.File(path, "w") as f:
        create(f, "enum", rng.choice([1, -300], 40).astype("<i2"), ftype=enum, mtype=T.STD_I16LE, chunks=(9,),
               filters=NBIT)
        create(f, "string", np.array([b"abc", b"hello!!", b""] * 13, dtype="S7"), chunks=(9,), filters=NBIT)
        create(f, "bitfield", rng.integers(0, 2**16, 40).astype("<u2"), ftype=T.STD_B16LE.copy(), mtype=T.STD_B16LE,
               chunks=(9,), filters=NBIT)
        assert f["enum"].id.get_create_plist().get_filter(0)[2] == (3, 1, 9)
    assert_all_agree(tmp_path, path, at_least=3)


INT_DTYPES = ["i1", "u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8", "<u8", ">u8"]


def test_scaleoffset_integers(tmp_path):
    """Every integer size, sign and byte order; minbits 0 (computed), small, half, one
    short of and equal to the width (stored as is); fill values undefined, 0, the
    extremes and 5; chunks of random values (full width), of a small span, all equal,
    mixed, with the extremes; a partly written dataset whose chunks hold fill values."""
    rng = np.random.default_rng(4)
    path = tmp_path / "so_ints.h5"
    with h5py.File(path, "w") as f:
        for dt in INT_DTYPES:
            d = np.dtype(dt)
            info, bits = np.iinfo(d), d.itemsize * 8
            base = rng.integers(info.min, info.max, size=(30, 40), endpoint=True, dtype=d.newbyteorder("="))
            small = (np.arange(1200).reshape(30, 40) % 37 + (info.min // 3 + 11)).astype(d)
            mix = small.copy()
            mix[:8] = base[:8]
            ext = small.copy()
            ext[0, :2] = [info.min, info.max]
            sets = {"base": base, "small": small, "eq": np.full((30, 40), info.max // 2 + 1, dtype=d), "mix": mix,
                    "ext": ext}
            for so in sorted({0, 1, 3, 7, bits // 2, bits - 1, bits}):
                for fill in sorted({None, 0, info.max, info.min, 5}, key=str):
                    for tag, arr in sets.items():
                        if fill not in (None, 5) and (tag not in ("small", "ext") or so not in (0, bits // 2, bits)):
                            continue
                        kw = dict(scaleoffset=so, chunks=(8, 11))
                        if fill is not None:
                            kw["fillvalue"] = fill
                        f.create_dataset(f"{dt}_m{so}_f{fill}_{tag}", data=arr.astype(d), **kw)
            ds = f.create_dataset(f"{dt}_partial", shape=(30, 40), dtype=d, scaleoffset=0, chunks=(8, 11), fillvalue=7)
            ds[3:20, 5:30] = small[3:20, 5:30]
            ds[25:, :] = 7
    assert_all_agree(tmp_path, path, at_least=1000)


def test_scaleoffset_floats(tmp_path):
    """D-scaling 0..12 of f4/f8 in both byte orders, NaN-free: normal, negative, equal,
    zero, tiny values; spans too wide for the bits (stored whole); fill values (also
    where every value of a chunk is the fill value); partly written datasets; chained
    with shuffle + deflate."""
    rng = np.random.default_rng(5)
    path = tmp_path / "so_floats.h5"
    with h5py.File(path, "w") as f:
        for dt in ["<f4", ">f4", "<f8", ">f8"]:
            sets = {
                "norm": rng.normal(size=(30, 40)) * 10,
                "neg": -np.abs(rng.normal(size=(30, 40))) * 1000 - 5,
                "eq": np.full((30, 40), 3.14159),
                "big": rng.normal(size=(30, 40)) * 1e7,
                "huge": rng.normal(size=(30, 40)) * 1e12,
                "tiny": rng.normal(size=(30, 40)) * 1e-4,
                "zero": np.zeros((30, 40)),
                "mixed": np.concatenate([np.full((8, 40), 2.5), rng.normal(size=(22, 40)) * 1e9]),
            }
            for D in [0, 1, 2, 3, 4, 5, 6, 7, 9, 12]:
                for fill in [None, 0.0, -1.5, 1e30]:
                    for tag, arr in sets.items():
                        if (fill is not None and tag not in ("norm", "eq", "neg", "huge")) or (D > 6 and tag != "norm"):
                            continue
                        kw = dict(scaleoffset=D, chunks=(8, 11))
                        a = arr.astype(dt)
                        if fill is not None:
                            kw["fillvalue"] = fill
                            a[::3, ::5] = fill
                        f.create_dataset(f"{dt}_D{D}_f{fill}_{tag}", data=a, **kw)
            for fill in [None, -2.0]:
                kw = dict(scaleoffset=2, chunks=(8, 11), **({} if fill is None else {"fillvalue": fill}))
                ds = f.create_dataset(f"{dt}_partial_f{fill}", shape=(30, 40), dtype=dt, **kw)
                ds[:16, :22] = fill or 0.0  # whole chunks of the fill value
                ds[20:, 30:] = sets["norm"][20:, 30:]
            f.create_dataset(f"{dt}_gzip_shuffle", data=sets["norm"].astype(dt), scaleoffset=3, chunks=(8, 11),
                             compression="gzip", shuffle=True)
    assert_all_agree(tmp_path, path, at_least=400)


def test_scaleoffset_reduced_precision_integers(tmp_path):
    """Scale-offset works on the stored bits of reduced-precision integers (precision
    and offset), fill value or not."""
    rng = np.random.default_rng(6)
    path = tmp_path / "so_reduced.h5"
    with h5py.File(path, "w") as f:
        for base, dt, p, o in [(T.STD_I32LE, "<i4", 20, 5), (T.STD_U16BE, ">u2", 12, 3), (T.STD_I64BE, ">i8", 40, 20),
                               (T.STD_I8LE, "i1", 5, 2)]:
            signed = np.dtype(dt).kind == "i"
            lo, hi = (-(2 ** (p - 1)), 2 ** (p - 1) - 1) if signed else (0, 2**p - 1)
            d = rng.integers(lo, hi, 500, endpoint=True).astype(dt)
            d[:50] = lo + 3
            for so in [0, 4]:
                for fill in [None, lo + 3]:
                    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                    dcpl.set_scaleoffset(Z.SO_INT, so)
                    create(f, f"{dt}_m{so}_f{fill}", d, ftype=reduced(base, p, o), chunks=(64,), dcpl=dcpl, fill=fill)
    assert_all_agree(tmp_path, path, at_least=16)


@pytest.mark.skipif(not Z.filter_avail(Z.FILTER_SZIP), reason="h5py's libhdf5 has no szip encoder")
def test_szip_options_sweep(tmp_path):
    """nn / ec, every even pixels-per-block up to 32, 1..8-byte samples in both orders,
    chunks whose scanlines are not whole blocks, one-row and whole-dataset chunks, 3-D,
    with shuffle, and incompressible data (szip skipped in the chunk's mask)."""
    rng = np.random.default_rng(7)
    path = tmp_path / "szip.h5"
    with h5py.File(path, "w") as f:
        for dt in ["u1", "i1", "<i2", ">u2", "<i4", ">i4", "<f4", ">f4", "<f8", ">f8", "<i8", ">u8"]:
            d = np.dtype(dt)
            if d.kind == "f":
                v = np.round(np.cumsum(rng.normal(size=(37, 53)), axis=1) * 8) / 8
                v[5] = rng.normal(size=53) * 1e30
            else:
                info = np.iinfo(d)
                v = (np.arange(37 * 53).reshape(37, 53) % 23) + (info.min // 2 + 7)
                v[5:9] = rng.integers(info.min, info.max, size=(4, 53), endpoint=True, dtype=d.newbyteorder("="))
            v = v.astype(d)
            for mode in ["nn", "ec"]:
                for ppb in [2, 4, 8, 10, 16, 24, 32]:
                    for chunks in [(16, 20), (37, 53), (1, 53), (5, 7)]:
                        f.create_dataset(f"{dt}_{mode}{ppb}_{chunks[0]}x{chunks[1]}", data=v, chunks=chunks,
                                         compression="szip", compression_opts=(mode, ppb))
        v = rng.integers(0, 1000, (9, 10, 11)).astype("<u2")
        f.create_dataset("cube", data=v, chunks=(4, 5, 6), compression="szip", compression_opts=("nn", 16))
        f.create_dataset("cube_shuffle", data=v, chunks=(4, 5, 6), compression="szip", compression_opts=("nn", 16),
                         shuffle=True)
        f.create_dataset("random", data=rng.integers(0, 2**32, (64, 64), dtype="<u4"), chunks=(32, 64),
                         compression="szip", compression_opts=("ec", 32))
        assert f["random"].id.get_chunk_info(0).filter_mask == 1  # stored unfiltered
    assert_all_agree(tmp_path, path, at_least=670)


@pytest.mark.skipif(not Z.filter_avail(Z.FILTER_SZIP), reason="h5py's libhdf5 has no szip encoder")
def test_szip_reduced_precision_bits_per_pixel(tmp_path):
    """libhdf5 gives szip the type's precision as bits per pixel when it is at most 24
    and the bit offset is 0 (else 8 x size, or 32 / 64): 1..24-bit samples in 1, 2, 4
    and 8-byte integers."""
    rng = np.random.default_rng(14)
    path = tmp_path / "szip_bpp.h5"
    with h5py.File(path, "w") as f:
        for base, dt in [(T.STD_U8LE, "u1"), (T.STD_I8LE, "i1"), (T.STD_U16LE, "<u2"), (T.STD_U16BE, ">u2"),
                         (T.STD_I16LE, "<i2"), (T.STD_U32LE, "<u4"), (T.STD_I32BE, ">i4"), (T.STD_U64LE, "<u8")]:
            bits = np.dtype(dt).itemsize * 8
            signed = np.dtype(dt).kind == "i"
            for p in range(1, min(bits, 33) + 1):
                for o in sorted({0, 1, bits - p}):
                    if p + o > bits or p + o <= bits - 8 or (p % 3 and o):
                        continue
                    lo, hi = (-(2 ** (p - 1)), 2 ** (p - 1) - 1) if signed else (0, 2**p - 1)
                    d = rng.integers(lo, hi, (40, 50), endpoint=True).astype(dt)
                    d[:20] = (np.arange(1000).reshape(20, 50) % 5 + lo).astype(dt)
                    for mode, mask in [("nn", Z.SZIP_NN_OPTION_MASK), ("ec", Z.SZIP_EC_OPTION_MASK)]:
                        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                        dcpl.set_szip(mask, 8)
                        create(f, f"{dt}_p{p}_o{o}_{mode}", d, ftype=reduced(base, p, o), chunks=(16, 25), dcpl=dcpl)
        assert f["<u2_p12_o0_nn"].id.get_create_plist().get_filter(0)[2][2] == 12  # 12 bits per pixel
    assert_all_agree(tmp_path, path, at_least=240)


# Type sizes 1, 2, 3, 4, 7, 8, 16 and 300 (Blosc stores type sizes over 255 as 1).
CODEC_DTYPES = ["u1", "<i2", "S3", "<f4", np.dtype([("a", "u1"), ("b", "<i2"), ("c", "<f4")]), ">f8", "S16", "<c16",
                "S300"]


def test_blosc_cname_shuffle_clevel_typesize_matrix(tmp_path):
    rng = np.random.default_rng(8)
    path = tmp_path / "blosc.h5"
    with h5py.File(path, "w") as f:
        for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"]:
            for shuffle in [B.NOSHUFFLE, B.SHUFFLE, B.BITSHUFFLE]:
                for clevel in [0, 1, 5, 9]:
                    for i, dt in enumerate(CODEC_DTYPES):
                        n = 2000 if np.dtype(dt).itemsize < 100 else 200
                        f.create_dataset(f"{cname}_s{shuffle}_c{clevel}_t{i}", data=patterned(dt, (n,), rng),
                                         chunks=(n // 3 + 1,), **B(cname=cname, clevel=clevel, shuffle=shuffle))
    assert_all_agree(tmp_path, path, at_least=648)


def test_blosc_split_modes_and_forced_block_sizes(tmp_path, monkeypatch):
    """c-blosc reads BLOSC_SPLITMODE and BLOSC_BLOCKSIZE at each compression: streams
    split per byte of the type or not, and block sizes that are not a multiple of the
    type size (1, 7, 100 bytes), for type sizes 1 to 300. Where c-blosc writes buffers
    it cannot read back itself (splits of 17-byte types), h5turbo must fail too."""
    rng = np.random.default_rng(15)
    path = tmp_path / "blosc_env.h5"
    dtypes = ["u1", "<i2", "S3", ">f8", "S16", "S17", "S300"]
    with h5py.File(path, "w") as f:
        for split in ["ALWAYS", "NEVER", "FORWARD_COMPAT"]:
            for block in [None, "1", "7", "100", "4096"]:
                monkeypatch.setenv("BLOSC_SPLITMODE", split)
                if block:
                    monkeypatch.setenv("BLOSC_BLOCKSIZE", block)
                else:
                    monkeypatch.delenv("BLOSC_BLOCKSIZE", raising=False)
                for cname in ["blosclz", "lz4", "zstd", "snappy"]:
                    for shuffle in [B.NOSHUFFLE, B.SHUFFLE, B.BITSHUFFLE]:
                        for i, dt in enumerate(dtypes):
                            if (i + shuffle + len(cname)) % 2:
                                continue
                            d = patterned(dt, (3000 if np.dtype(dt).itemsize < 100 else 300,), rng)
                            f.create_dataset(f"{split}_{block}_{cname}_s{shuffle}_{dt}", data=d,
                                             chunks=(len(d) // 2 + 1,), **B(cname=cname, shuffle=shuffle))
        monkeypatch.delenv("BLOSC_SPLITMODE")
        monkeypatch.delenv("BLOSC_BLOCKSIZE", raising=False)
        split_flags = {f[n].id.read_direct_chunk((0,))[1][2] & 0x10 for n in f}
        assert split_flags == {0, 0x10}, split_flags
    assert_all_agree(tmp_path, path, at_least=150)


def test_blosc2_cname_filter_clevel_shapes_matrix(tmp_path):
    """Every codec and filter at clevel 0 (memcpy) to 9 over 1-D to 5-D datasets whose
    chunks do not divide the shape (b2nd tiles and edge chunks)."""
    rng = np.random.default_rng(9)
    path = tmp_path / "blosc2.h5"
    dtypes = ["u1", "<i2", "S3", "<f4", np.dtype([("a", "u1"), ("b", "<i2"), ("c", "<f4")]), ">f8", "<i8"]
    shapes = [((1000,), (333,)), ((37, 53), (16, 20)), ((13, 17, 9), (5, 6, 4)), ((7, 5, 6, 9), (3, 2, 4, 5)),
              ((4, 3, 5, 2, 7), (3, 2, 2, 2, 3))]
    with h5py.File(path, "w") as f:
        for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]:
            for filters in [B2.NOFILTER, B2.SHUFFLE, B2.BITSHUFFLE, B2.DELTA, B2.TRUNC_PREC]:
                for clevel in [0, 1, 5, 9]:
                    for i, dt in enumerate(dtypes):
                        if filters == B2.TRUNC_PREC and np.dtype(dt).kind != "f":
                            continue
                        if (i + clevel + len(cname)) % 2:  # half the matrix keeps the test short
                            continue
                        shape, chunks = shapes[(i + clevel) % len(shapes)]
                        data = smooth_floats(dt, shape, rng) if np.dtype(dt).kind == "f" else patterned(dt, shape, rng)
                        f.create_dataset(f"{cname}_f{filters}_c{clevel}_t{i}", data=data, chunks=chunks,
                                         **B2(cname=cname, clevel=clevel, filters=filters))
    assert_all_agree(tmp_path, path, at_least=250)


def test_blosc2_up_to_eight_dimensions_and_beyond_sixteen(tmp_path):
    """b2nd chunks of rank 6-8 (decoded), and rank 17+ (the filter writes plain frames)."""
    rng = np.random.default_rng(18)
    path = tmp_path / "blosc2_rank.h5"
    with h5py.File(path, "w") as f:
        for nd in [6, 7, 8, 17, 20, 32]:
            shape = tuple(3 if i < 6 else (2 if i < 8 else 1) for i in range(nd))
            chunks = tuple(2 if s > 1 else 1 for s in shape)
            d = np.cumsum(rng.integers(-5, 5, int(np.prod(shape)))).astype("<i4").reshape(shape)
            for filters in [B2.SHUFFLE, B2.BITSHUFFLE]:
                f.create_dataset(f"rank{nd}_f{filters}", data=d, chunks=chunks, **B2(cname="zstd", filters=filters))
    assert_all_agree(tmp_path, path, at_least=12)


def test_blosc2_b2nd_rank_9_to_16(tmp_path):
    """hdf5plugin's Blosc2 writes datasets of rank 9 to 16 as b2nd frames whose
    metalayer has that rank (rank 17 and up fall back to plain frames); h5py reads them."""
    rng = np.random.default_rng(19)
    path = tmp_path / "blosc2_rank9.h5"
    with h5py.File(path, "w") as f:
        for nd in [9, 12, 16]:
            shape = tuple(3 if i < 4 else (2 if i < 8 else 1) for i in range(nd))
            chunks = tuple(2 if s > 1 else 1 for s in shape)
            d = np.cumsum(rng.integers(-5, 5, int(np.prod(shape)))).astype("<i4").reshape(shape)
            f.create_dataset(f"rank{nd}", data=d, chunks=chunks, **B2(cname="zstd", filters=B2.SHUFFLE))
            assert b"b2nd" in f[f"rank{nd}"].id.read_direct_chunk((0,) * nd)[1]
    assert_all_agree(tmp_path, path, at_least=3)


def test_blosc2_bytedelta(tmp_path):
    """Blosc2's byte-delta filter (c-blosc2 >= 2.8, recommended with zstd for floats),
    chosen through the filter's raw client data [.., clevel, filter, codec]: hdf5plugin's
    filter and h5py read it."""
    rng = np.random.default_rng(20)
    path = tmp_path / "blosc2_bytedelta.h5"
    with h5py.File(path, "w") as f:
        for dt in ["<f4", ">f8", "<i2"]:
            d = (np.cumsum(rng.normal(size=64 * 70)) * 3).astype(dt).reshape(64, 70)
            for flt in [34, 35]:
                f.create_dataset(f"{dt}_filter{flt}_2d", data=d, chunks=(32, 35), compression=32026,
                                 compression_opts=(0, 0, 0, 0, 5, flt, 5))
                f.create_dataset(f"{dt}_filter{flt}_1d", data=d.ravel(), chunks=(1000,), compression=32026,
                                 compression_opts=(0, 0, 0, 0, 5, flt, 1))
    assert_all_agree(tmp_path, path, at_least=12)


def test_bzip2_lzf_lz4_zstd_bitshuffle_sweeps(tmp_path):
    """bzip2 block sizes 1-9; LZF; LZ4 block sizes from 1 byte to beyond the chunk; zstd
    levels -7..22; bitshuffle alone / LZ4 / zstd (levels -3..19) with block sizes 0
    (automatic), 8 .. 8192 elements, and chunks of element counts not a multiple of 8."""
    rng = np.random.default_rng(10)
    path = tmp_path / "codecs.h5"
    with h5py.File(path, "w") as f:
        for i, dt in enumerate(CODEC_DTYPES):
            n = 3001 if np.dtype(dt).itemsize < 100 else 301
            d = patterned(dt, (n,), rng)
            ch = (n // 3 + 5,)
            for bs in range(1, 10):
                f.create_dataset(f"bzip2_{bs}_t{i}", data=d, chunks=ch, **hdf5plugin.BZip2(blocksize=bs))
            f.create_dataset(f"lzf_t{i}", data=d, chunks=ch, compression="lzf")
            for nb in [0, 1, 7, 100, 1000, 4096, 1 << 20, 2113929216]:
                f.create_dataset(f"lz4_{nb}_t{i}", data=d, chunks=ch, **hdf5plugin.LZ4(nbytes=nb))
            for level in [-7, -1, 0, 1, 3, 9, 19, 22]:
                f.create_dataset(f"zstd_{level}_t{i}", data=d, chunks=ch, compression=32015,
                                 compression_opts=(level & 0xFFFFFFFF,))
            for cname, code in [(None, 0), ("lz4", 2), ("zstd", 3)]:
                for nelems in [0, 8, 16, 24, 1000, 2048, 8192]:
                    for clevel in ([None] if cname != "zstd" else [-3, 1, 19]):
                        opts = (nelems, code) + (() if clevel is None else (clevel & 0xFFFFFFFF,))
                        f.create_dataset(f"bitshuffle_{cname}_{nelems}_{clevel}_t{i}", data=d, chunks=ch,
                                         compression=32008, compression_opts=opts)
    assert_all_agree(tmp_path, path, at_least=500)


@pytest.mark.skipif(not Z.filter_avail(32020), reason="ONT's vbz plugin is not loaded (ont_fast5_api missing)")
def test_vbz_variants(tmp_path):
    """vbz written by Oxford Nanopore's own plugin: versions 0 and 1, StreamVByte of 1, 2
    and 4-byte integers, with and without delta + zig-zag, zstd off / on / negative.
    (The plugin itself dies with SIGFPE on integer size 0, so that is not written.)"""
    rng = np.random.default_rng(11)
    path = tmp_path / "vbz.h5"
    with h5py.File(path, "w") as f:
        for dt in ["i1", "u1", "<i2", "<u2", "<i4", "<u4"]:
            info = np.iinfo(dt)
            d = np.cumsum(rng.integers(-40, 40, 5000)).astype(dt)
            d[100:200] = rng.integers(-100000, 100000, 100).astype(dt)
            d[200:300] = rng.integers(info.min, info.max, 100, endpoint=True)  # every code length
            d[300:310] = [info.min, info.max] * 5
            size = np.dtype(dt).itemsize
            for version in [0, 1]:
                for zigzag in [0, 1]:
                    for level in [0, 1, 5, 0xFFFFFFFF]:
                        f.create_dataset(f"{dt}_v{version}_z{zigzag}_l{level}", data=d, chunks=(1777,),
                                         compression=32020, compression_opts=(version, size, zigzag, level))
                    for n in [1, 3]:  # chunks of one and three values
                        f.create_dataset(f"{dt}_v{version}_z{zigzag}_chunk{n}", data=d[195:315], chunks=(n,),
                                         compression=32020, compression_opts=(version, size, zigzag, 1))
    assert_all_agree(tmp_path, path, at_least=144)


EDGE_FILTERS = {
    "gzip9": dict(compression="gzip", compression_opts=9),
    "gzip0": dict(compression="gzip", compression_opts=0),
    "shuffle_gzip_fletcher32": dict(compression="gzip", shuffle=True, fletcher32=True),
    "lzf": dict(compression="lzf"),
    "lz4": dict(hdf5plugin.LZ4()),
    "zstd": dict(hdf5plugin.Zstd(clevel=1)),
    "bzip2": dict(hdf5plugin.BZip2(blocksize=1)),
    "bitshuffle_lz4": dict(hdf5plugin.Bitshuffle(cname="lz4")),
    "bitshuffle_zstd": dict(hdf5plugin.Bitshuffle(cname="zstd")),
    "blosc_lz4": dict(B(cname="lz4", shuffle=B.SHUFFLE, clevel=9)),
    "blosc_zstd_bit": dict(B(cname="zstd", shuffle=B.BITSHUFFLE)),
    "blosc2_zstd": dict(B2(cname="zstd", filters=B2.SHUFFLE)),
    "blosc2_lz4_bit": dict(B2(cname="lz4", filters=B2.BITSHUFFLE)),
    "scaleoffset": dict(scaleoffset=0),
}


def test_expanding_huge_single_element_and_edge_chunks(tmp_path):
    """Random bytes (compression expands them: optional filters are skipped, mandatory
    ones store what they produce), one 1.2 MB chunk, 1.16 MB edge chunks, one-element
    chunks, odd byte counts; compressors chained behind compressors."""
    rng = np.random.default_rng(12)
    path = tmp_path / "edges.h5"
    rnd = rng.integers(0, 2**32, (300, 1000), dtype="<u4")
    big = rnd.copy()
    big[:150] = np.arange(150 * 1000).reshape(150, 1000) % 1013
    with h5py.File(path, "w") as f:
        opts = dict(EDGE_FILTERS)
        if Z.filter_avail(Z.FILTER_SZIP):
            opts["szip"] = dict(compression="szip", compression_opts=("nn", 32))
        for n, kw in opts.items():
            f.create_dataset(f"{n}_random", data=rnd[:64], chunks=(16, 1000), **kw)
            f.create_dataset(f"{n}_bigchunk", data=big, chunks=(300, 1000), **kw)
            f.create_dataset(f"{n}_bigchunk_edge", data=big[:, :999], chunks=(290, 999), **kw)
            f.create_dataset(f"{n}_u1_odd", data=(np.arange(1001) % 7).astype("u1"), chunks=(333,), **kw)
            if n != "szip":  # szip needs a block of pixels per chunk
                f.create_dataset(f"{n}_single", data=big[:5, :7], chunks=(1, 1), **kw)
                f.create_dataset(f"{n}_one_value", data=np.array([12345], "<u4"), chunks=(1,), **kw)
        masks = {n: {f[n].id.get_chunk_info(i).filter_mask for i in range(4)} for n in ["lzf_random", "gzip9_random"]}
        assert masks == {"lzf_random": {1}, "gzip9_random": {0}}, masks
        # mandatory (LZF and Blosc fail the write on random bytes instead)
        compressors = [(Z.FILTER_DEFLATE, (9,)), (32004, (0,)), (32015, (3,)), (307, (9,)), (32008, (0, 2)),
                       (32026, (0, 0, 0, 0, 5, 1, 1))]
        for fid, cd in compressors:
            create(f, f"mandatory_{fid}_random", rnd[:64], chunks=(16, 1000), filters=[(fid, MAND, cd)])
            for fid2, cd2 in [(Z.FILTER_DEFLATE, (1,)), (32004, (0,)), (32015, (1,)), (32000, ())]:
                create(f, f"chain_{fid}_{fid2}", big[:100], chunks=(50, 1000),
                       filters=[(fid, OPT, cd), (fid2, OPT, cd2)])
    assert_all_agree(tmp_path, path, at_least=110)


def test_variable_length_data_through_filters(tmp_path):
    """Filters applied to the heap references of variable-length strings and sequences
    (libhdf5 refuses shuffle and fletcher32 for them; Blosc's plugin dies of SIGFPE)."""
    path = tmp_path / "vlen.h5"
    words = np.array([f"w{i}é" * (i % 7) for i in range(200)], dtype=object)
    seqs = np.empty(200, dtype=object)
    for i in range(200):
        seqs[i] = np.arange(i % 9, dtype="<i4") * i
    with h5py.File(path, "w") as f:
        for name, kw in {"gzip": dict(compression="gzip"), "lzf": dict(compression="lzf"), "zstd": dict(hdf5plugin.Zstd()),
                         "lz4": dict(hdf5plugin.LZ4()), "bzip2": dict(hdf5plugin.BZip2())}.items():
            f.create_dataset(f"{name}_str", data=words, dtype=h5py.string_dtype(), chunks=(33,), **kw)
            f.create_dataset(f"{name}_seq", data=seqs, dtype=h5py.vlen_dtype("<i4"), chunks=(33,), **kw)
    assert_all_agree(tmp_path, path, at_least=10)


def _libhdf5():
    """h5py's own libhdf5 (for H5Pset_chunk_opts, which h5py does not wrap)."""
    import ctypes

    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libhdf5" in line and "libhdf5_hl" not in line}
    for lib_path in sorted(paths):
        lib = ctypes.CDLL(lib_path)
        if hasattr(lib, "H5Pset_chunk_opts"):
            lib.H5Pset_chunk_opts.argtypes = [ctypes.c_int64, ctypes.c_uint]
            lib.H5Pset_chunk_opts.restype = ctypes.c_int
            return lib
    pytest.skip("h5py's libhdf5 not found in this process")


def test_partial_edge_chunks_left_unfiltered(tmp_path):
    """H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS (libhdf5 >= 1.10, new chunk indexes): edge
    chunks are stored as they are, with filter mask 0; only the layout says so. Fixed
    array, extensible array and v2 B-tree indexes, every decoder family."""
    lib = _libhdf5()
    rng = np.random.default_rng(17)
    path = tmp_path / "partial_unfiltered.h5"
    pipes = {
        "gzip": [gz(5)], "shuffle_gzip_f32": [SHUF, gz(5), F32], "lzf": [(32000, OPT, ())],
        "blosc": [(32001, OPT, (2, 2, 4, 0, 5, 1, 1))], "blosc2": [(32026, OPT, (0, 0, 0, 0, 5, 1, 1))],
        "zstd": [(32015, OPT, (3,))], "bitshuffle_lz4": [(32008, OPT, (0, 2))], "scaleoffset": [(6, OPT, (2, 0))],
        "nbit": [(5, OPT, ())], "fletcher32": [F32], "lz4": [(32004, OPT, (0,))], "bzip2": [(307, OPT, (9,))],
    }
    if Z.filter_avail(Z.FILTER_SZIP):
        pipes["szip"] = [(Z.FILTER_SZIP, OPT, (Z.SZIP_NN_OPTION_MASK, 8))]
    d = np.cumsum(rng.integers(-50, 50, (45, 107)), axis=1).astype("<i4")
    unlimited = h5py.h5s.UNLIMITED
    with h5py.File(path, "w", libver="latest") as f:
        for index, maxshape in [("fixed", None), ("earray", (unlimited, 107)), ("btree2", (unlimited, unlimited))]:
            for name, pipe in pipes.items():
                for opts in [0, 2]:  # 2: H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS
                    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                    dcpl.set_chunk((16, 25))
                    for fid, flags, cd in pipe:
                        dcpl.set_filter(fid, flags, cd)
                    assert lib.H5Pset_chunk_opts(dcpl.id, opts) >= 0
                    space = h5py.h5s.create_simple(d.shape, maxshape)
                    ds = h5py.h5d.create(f.id, f"{index}_{name}_opts{opts}".encode(), T.STD_I32LE, space, dcpl=dcpl)
                    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, d)
        edge = f["fixed_gzip_opts2"].id.get_chunk_info(f["fixed_gzip_opts2"].id.get_num_chunks() - 1)
        assert (edge.filter_mask, edge.size) == (0, 16 * 25 * 4), edge  # stored raw, mask 0
    assert_all_agree(tmp_path, path, at_least=72)


# Corruption: every decoder family, damaged in its headers, sizes, payload and
# checksum (flipped bytes, truncations, zeros, 0xff, trailing bytes, the chunk twice).
CORRUPT_FILTERS = {
    "gzip": dict(compression="gzip"),
    "shuffle_gzip_fletcher32": dict(compression="gzip", shuffle=True, fletcher32=True),
    "lzf": dict(compression="lzf"),
    "lz4": dict(hdf5plugin.LZ4()),
    "lz4_64": dict(hdf5plugin.LZ4(nbytes=64)),
    "zstd": dict(hdf5plugin.Zstd()),
    "bzip2": dict(hdf5plugin.BZip2()),
    "bitshuffle": dict(hdf5plugin.Bitshuffle(cname=None)),
    "bitshuffle_lz4": dict(hdf5plugin.Bitshuffle(cname="lz4")),
    "bitshuffle_zstd": dict(hdf5plugin.Bitshuffle(cname="zstd")),
    "scaleoffset": dict(scaleoffset=0),
    "nbit_shuffle": dict(shuffle=True),  # n-bit added below through the property list
}
for _c in ["blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"]:
    for _s in [B.NOSHUFFLE, B.SHUFFLE, B.BITSHUFFLE]:
        CORRUPT_FILTERS[f"blosc_{_c}_{_s}"] = dict(B(cname=_c, shuffle=_s))
for _c in ["blosclz", "lz4", "zstd"]:
    for _s in [B2.SHUFFLE, B2.BITSHUFFLE]:
        CORRUPT_FILTERS[f"blosc2_{_c}_{_s}"] = dict(B2(cname=_c, filters=_s))
# Checksummed pipelines: every damage to the payload must be detected.
CHECKSUMMED = ("shuffle_gzip_fletcher32", "bzip2")


def corrupt_variants(b: bytes) -> dict[str, bytes]:
    L = len(b)
    out = {}
    for k in sorted({1, 2, 4, 8, 16, L // 2, L - 1, L - 4}):
        if 0 < k < L:
            out[f"trunc{k}"] = b[:k]
    for p in sorted({*range(18), 20, 24, 28, 32, L // 3, L // 2, L - 8, L - 4, L - 2, L - 1}):
        if 0 <= p < L:
            c = bytearray(b)
            c[p] ^= 0xFF
            out[f"flip{p}"] = bytes(c)
    out["zeros"] = bytes(L)
    out["ones"] = b"\xff" * L
    out["extended"] = b + bytes(100)
    out["doubled"] = b * 2
    return out


def test_corrupted_chunks_raise_named_errors_never_crash(tmp_path):
    """About 1,400 damaged chunks: h5turbo must return values or raise an h5turbo.Error
    naming the file and the dataset; never crash or hang (libhdf5 + plugins do both on
    some of these, so h5py is not asked). Checksummed chunks must always fail."""
    rng = np.random.default_rng(13)
    path = tmp_path / "corrupt.h5"
    data = ((np.arange(64 * 96) % 23) * 3 - 30).astype("<i4").reshape(64, 96)
    data[10:20] = rng.integers(-2**20, 2**20, (10, 96))
    names = []
    with h5py.File(path, "w") as f:
        sources = {}
        filters = dict(CORRUPT_FILTERS)
        if Z.filter_avail(Z.FILTER_SZIP):
            filters["szip_nn"] = dict(compression="szip", compression_opts=("nn", 8))
            filters["szip_ec"] = dict(compression="szip", compression_opts=("ec", 16))
        if Z.filter_avail(32020):
            filters["vbz"] = dict(compression=32020, compression_opts=(1, 4, 1, 1))
            filters["vbz_no_zstd"] = dict(compression=32020, compression_opts=(0, 4, 1, 0))
        for name, kw in filters.items():
            if name == "nbit_shuffle":
                create(f, name, data, ftype=reduced(T.STD_I32LE, 22, 3), chunks=(32, 48), filters=NBIT + [SHUF])
                sources[name] = f[name]
            else:
                sources[name] = f.create_dataset(name, data=data, chunks=(32, 48), **kw)
        for name, src in sources.items():
            mask, chunk = src.id.read_direct_chunk((0, 0))
            for tag, damaged in corrupt_variants(chunk).items():
                target = f"{name}__{tag}"
                dcpl = src.id.get_create_plist()
                ds = h5py.h5d.create(f.id, target.encode(), src.id.get_type(), src.id.get_space(), dcpl=dcpl)
                ds.write_direct_chunk((0, 0), damaged, filter_mask=mask)
                names.append(target)
    assert len(names) > 1400
    got = read_with_h5turbo(tmp_path, path, names, timeout=240)
    bad = []
    for n in names:
        g = got[n]
        if isinstance(g, tuple):
            if "corrupt.h5" not in g[1] or f"/{n}" not in g[1]:
                bad.append(f"{n}: error does not name the file and dataset: {g[0]}: {g[1]}")
        elif n.split("__")[0] in CHECKSUMMED and not n.endswith(("__extended", "__doubled")):
            bad.append(f"{n}: damage to a checksummed chunk went unnoticed")
    assert not bad, "\n".join(bad[:40])
