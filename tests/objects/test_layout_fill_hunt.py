"""Differential hunt: dataset reads across storage layouts, chunk indexes, fill values,
allocation times, partial writes, filters on partial chunks and dtypes, compared with
h5py (libhdf5) on files h5py writes at test time.

Every file is written with each libver bound pair, which picks the chunk index:
('earliest', 'latest') and ('v108', 'latest'): v1 B-tree; ('v110', 'v110'), ('v112', 'v112')
and 'latest': single chunk, implicit (early allocation), fixed array, extensible array
(one unlimited axis), v2 B-tree (two unlimited axes)."""

from __future__ import annotations

import warnings
import zlib

import h5py
import numpy as np
import pytest

from support.common import import_h5turbo
from support.h5compare import outcome as _outcome

h5turbo = import_h5turbo()

LIBVERS = {"earliest": ("earliest", "latest"), "v108": ("v108", "latest"), "v110": ("v110", "v110"),
           "v112": ("v112", "v112"), "latest": "latest"}


def _lowlevel(f, name, dtype, shape, layout=None, chunks=None, fill=None, fill_time=None, alloc=None,
              maxshape=None, data=None, filters=()):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if layout is not None:
        dcpl.set_layout(layout)
    if chunks is not None:
        dcpl.set_chunk(chunks)
    for flt in filters:
        flt(dcpl)
    if fill is not None:
        dcpl.set_fill_value(np.array(fill, dtype=dtype))
    if fill_time is not None:
        dcpl.set_fill_time(fill_time)
    if alloc is not None:
        dcpl.set_alloc_time(alloc)
    space = h5py.h5s.create_simple(shape, maxshape) if shape != () else h5py.h5s.create(h5py.h5s.SCALAR)
    tid = h5py.h5t.py_create(np.dtype(dtype), logical=True)
    dsid = h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
    if data is not None:
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data, dtype=dtype))
    return f[name]


def _build_layouts(path, libver):
    rng = np.random.default_rng(5)
    with h5py.File(path, "w", libver=LIBVERS[libver]) as f:
        # compact
        _lowlevel(f, "compact", "<i4", (3, 5), layout=h5py.h5d.COMPACT, data=np.arange(15).reshape(3, 5))
        _lowlevel(f, "compact_unwritten_fill", "<f4", (7,), layout=h5py.h5d.COMPACT, fill=2.5)
        _lowlevel(f, "compact_be", ">i8", (4, 2), layout=h5py.h5d.COMPACT, data=np.arange(8).reshape(4, 2) - 3)
        _lowlevel(f, "compact_scalar", "<f8", (), layout=h5py.h5d.COMPACT, data=np.float64(3.25))
        # contiguous
        f.create_dataset("contig", data=rng.integers(-1000, 1000, (13, 11)).astype(">i2"))
        d = f.create_dataset("contig_partial", shape=(10, 6), dtype="<f8", fillvalue=-1.5)
        d[2:5, 1:3] = 7.0
        f.create_dataset("contig_never", shape=(6, 4), dtype="<u2", fillvalue=65000)
        f.create_dataset("contig_never_default", shape=(6, 4), dtype="<i8")
        _lowlevel(f, "contig_early_never_written", "<i4", (5, 5), alloc=h5py.h5d.ALLOC_TIME_EARLY, fill=11)
        _lowlevel(f, "contig_fill_never", "<i4", (5, 5), alloc=h5py.h5d.ALLOC_TIME_EARLY,
                  fill_time=h5py.h5d.FILL_TIME_NEVER, fill=11)
        # chunked
        a = rng.integers(0, 255, (17, 13)).astype("<u1")
        f.create_dataset("chunk_nondiv", data=a, chunks=(4, 5))
        f.create_dataset("chunk_1x1", data=np.arange(30, dtype="<f4").reshape(5, 6), chunks=(1, 1))
        f.create_dataset("chunk_huge", data=np.arange(24, dtype="<i4").reshape(4, 6), chunks=(40, 60), maxshape=(None, 60))
        f.create_dataset("chunk_exact_single", data=np.arange(24, dtype="<i4").reshape(4, 6), chunks=(4, 6))
        d = f.create_dataset("chunk_partial", shape=(20, 9), chunks=(6, 4), dtype="<i4", fillvalue=-7)
        d[0:3, 0:2] = 1
        d[19, 8] = 2
        d[7:13, 4:8] = np.arange(24).reshape(6, 4)
        d = f.create_dataset("chunk_partial_gzip", shape=(20, 9), chunks=(6, 4), dtype="<f8", fillvalue=np.nan,
                             compression="gzip")
        d[0:3, 0:2] = 1.5
        d[19, 8] = -2
        d[13:, :] = np.arange(63).reshape(7, 9)
        f.create_dataset("chunk_never", shape=(9, 9), chunks=(4, 4), dtype="<i2", fillvalue=3)
        # unlimited, one dim (extensible array in latest) and resized
        d = f.create_dataset("grow1", shape=(5, 4), maxshape=(None, 4), chunks=(3, 3), dtype="<i4", fillvalue=9)
        d[...] = np.arange(20).reshape(5, 4)
        d.resize((14, 4))
        d[12, 1] = -5
        d = f.create_dataset("grow_second", shape=(4, 5), maxshape=(4, None), chunks=(3, 2), dtype="<i4")
        d[...] = np.arange(20).reshape(4, 5)
        d.resize((4, 23))
        d[:, 20] = 1
        d = f.create_dataset("grow_both", shape=(3, 3), maxshape=(None, None), chunks=(2, 2), dtype="<f4",
                             fillvalue=0.5)
        d[...] = np.arange(9).reshape(3, 3)
        d.resize((8, 7))
        d[7, 6] = 100
        d = f.create_dataset("shrunk", shape=(10, 10), maxshape=(None, None), chunks=(3, 3), dtype="<i4",
                             fillvalue=4)
        d[...] = np.arange(100).reshape(10, 10)
        d.resize((5, 4))
        d = f.create_dataset("shrunk_regrown", shape=(10, 10), maxshape=(None, None), chunks=(3, 3), dtype="<i4",
                             fillvalue=4)
        d[...] = np.arange(100).reshape(10, 10)
        d.resize((5, 4))
        d.resize((10, 10))
        d = f.create_dataset("shrunk_regrown_gzip", shape=(10,), maxshape=(None,), chunks=(4,), dtype="<i4",
                             fillvalue=4, compression="gzip")
        d[...] = np.arange(10)
        d.resize((5,))
        d.resize((12,))
        d = f.create_dataset("ea_many", shape=(0,), maxshape=(None,), chunks=(2,), dtype="<i8", fillvalue=-1)
        d.resize((3000,))
        d[::7] = np.arange(0, 3000, 7)
        d = f.create_dataset("bt2_many", shape=(0, 0), maxshape=(None, None), chunks=(2, 3), dtype="<i2")
        d.resize((60, 50))
        d[::3, ::4] = 1
        d[59, 49] = 2
        d = f.create_dataset("fa_many", shape=(300, 40), chunks=(3, 4), dtype="<u4", fillvalue=1)
        d[::5, ::2] = 77
        # zero-size / scalar
        f.create_dataset("empty_05", shape=(0, 5), dtype="<f8")
        f.create_dataset("empty_05_chunked", shape=(0, 5), maxshape=(None, 5), dtype="<f8", chunks=(2, 5))
        f.create_dataset("empty_1d", shape=(0,), dtype="<i4")
        f.create_dataset("scalar", data=np.int16(-3))
        f.create_dataset("scalar_never", shape=(), dtype="<f4", fillvalue=1.25)
        # implicit index: early alloc, fixed shape
        _lowlevel(f, "implicit", "<i4", (9, 7), chunks=(4, 3), alloc=h5py.h5d.ALLOC_TIME_EARLY, fill=6)
        d = f["implicit"]
        d[1:3, 1:5] = 8
        _lowlevel(f, "implicit_never_fill", "<i4", (9, 7), chunks=(4, 3), alloc=h5py.h5d.ALLOC_TIME_EARLY,
                  fill=6, fill_time=h5py.h5d.FILL_TIME_NEVER)
        f["implicit_never_fill"][0:4, 0:3] = 1
        _lowlevel(f, "chunk_alloc_incr", "<i4", (9, 7), chunks=(4, 3), alloc=h5py.h5d.ALLOC_TIME_INCR, fill=6)
        f["chunk_alloc_incr"][8, 6] = 2
        _lowlevel(f, "chunk_fill_alloc", "<f8", (9, 7), chunks=(4, 3), alloc=h5py.h5d.ALLOC_TIME_INCR, fill=6.5,
                  fill_time=h5py.h5d.FILL_TIME_ALLOC)
        f["chunk_fill_alloc"][8, 6] = 2
        _lowlevel(f, "chunk_fill_never", "<f8", (9, 7), chunks=(4, 3), fill=6.5, fill_time=h5py.h5d.FILL_TIME_NEVER)
        f["chunk_fill_never"][8, 6] = 2
        _lowlevel(f, "chunk_fill_undefined", "<i4", (9, 7), chunks=(4, 3))
        # custom fill values
        cdt = np.dtype([("a", "<i4"), ("b", "<f8"), ("s", "S3")])
        fv = np.array((5, -1.5, b"ab"), dtype=cdt)
        d = f.create_dataset("fill_compound", shape=(7,), chunks=(3,), dtype=cdt, fillvalue=fv)
        d[1] = (1, 2.0, b"xyz")
        d = f.create_dataset("fill_compound_contig", shape=(4,), dtype=cdt, fillvalue=fv)
        d = f.create_dataset("fill_str", shape=(7,), chunks=(2,), dtype="S5", fillvalue=b"ab")
        d[3] = b"hello"
        d = f.create_dataset("fill_nan32", shape=(7,), chunks=(2,), dtype=">f4", fillvalue=np.nan)
        d[3] = 1
        d = f.create_dataset("fill_i8be", shape=(7,), chunks=(2,), dtype=">i8", fillvalue=-123456789012)
        d[3] = 1
        d = f.create_dataset("fill_u16", shape=(7,), chunks=(2,), dtype="<u2", fillvalue=65535)
        d[3] = 1
        d = f.create_dataset("fill_f16", shape=(7,), chunks=(2,), dtype="<f2", fillvalue=1.5)
        d[3] = 1
        d = f.create_dataset("fill_complex", shape=(7,), chunks=(2,), dtype="<c16", fillvalue=1 + 2j)
        d[3] = 1
        d = f.create_dataset("fill_bool", shape=(7,), chunks=(2,), dtype=bool, fillvalue=True)
        d[3] = False
        # filters on partial chunks
        base = np.arange(11 * 7, dtype="<i4").reshape(11, 7) - 30
        d = f.create_dataset("gz_partial", shape=(11, 7), chunks=(4, 3), dtype="<i4", compression="gzip",
                             compression_opts=9, fillvalue=-1)
        d[:6] = base[:6]
        d = f.create_dataset("shuf_fl", data=base.astype(">i8"), chunks=(4, 3), shuffle=True, fletcher32=True)
        d = f.create_dataset("shuf_fl_partial", shape=(11, 7), chunks=(4, 3), dtype="<f4", shuffle=True,
                             fletcher32=True, fillvalue=2)
        d[5:, 4:] = base[5:, 4:]
        f.create_dataset("so_int", data=(base * 3).astype("<i4"), chunks=(4, 3), scaleoffset=0)
        f.create_dataset("so_int_be", data=(base * 3).astype(">i2"), chunks=(4, 3), scaleoffset=0)
        f.create_dataset("so_uint", data=(base + 100).astype("<u2"), chunks=(4, 3), scaleoffset=4)
        d = f.create_dataset("so_int_partial", shape=(11, 7), chunks=(4, 3), dtype="<i4", scaleoffset=0,
                             fillvalue=17)
        d[2:5, :] = base[2:5]
        f.create_dataset("so_float", data=base.astype("<f8") / 7, chunks=(4, 3), scaleoffset=3)
        f.create_dataset("so_float32", data=base.astype("<f4") / 7, chunks=(4, 3), scaleoffset=2)
        f.create_dataset("so_const", data=np.full((11, 7), 5, "<i4"), chunks=(4, 3), scaleoffset=0)
        # nbit via low-level
        for name, prec, off, sign in [("nbit", 32, 0, True), ("nbit_be", 32, 0, False)]:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk((4, 3))
            dcpl.set_filter(h5py.h5z.FILTER_NBIT, 0, ())
            tid = (h5py.h5t.STD_I32LE if sign else h5py.h5t.STD_U32BE).copy()
            tid.set_precision(prec)
            tid.set_offset(off)
            dsid = h5py.h5d.create(f.id, name.encode(), tid, h5py.h5s.create_simple((11, 7)), dcpl=dcpl)
            vals = (base * 37 % 2000 - 1000) if sign else (base * 37 % 1000 + 30)
            dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(vals, dtype="<i4" if sign else "<u4"))
        if h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP):
            try:
                f.create_dataset("szip", data=base.astype("<i4"), chunks=(4, 3), compression="szip")
                d = f.create_dataset("szip_partial", shape=(11, 7), chunks=(4, 3), dtype="<f8", compression="szip",
                                     fillvalue=-3)
                d[3:9, 1:5] = base[3:9, 1:5]
            except Exception as exc:  # szip encoder may be missing
                pass
        d = f.create_dataset("skipfilter", shape=(12,), chunks=(4,), dtype="<i4", compression="gzip",
                             shuffle=True)
        raw = np.arange(100, 104, dtype="<i4")
        shuffled = raw.view("u1").reshape(4, 4).T.copy().tobytes()
        d.id.write_direct_chunk((4,), zlib.compress(raw.tobytes()), filter_mask=0b01)  # shuffle skipped
        d.id.write_direct_chunk((8,), shuffled, filter_mask=0b10)  # gzip skipped
        d = f.create_dataset("skipfilter_all", shape=(12,), chunks=(4,), dtype="<i4", compression="gzip",
                             shuffle=True)
        d.id.write_direct_chunk((4,), raw.tobytes(), filter_mask=0b11)
        d[0] = 1
        d[:4] = 9
        # dtypes
        for dt in ["<i1", ">i1", "<u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8",
                   "<u8", ">u8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "<c8", ">c8", "<c16", ">c16"]:
            arr = (rng.standard_normal((6, 5)) * 50).astype(dt) if dt[1] in "fc" else \
                rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, (6, 5), endpoint=True, dtype=np.dtype(dt).newbyteorder("="))
            f.create_dataset("dt_" + dt.replace("<", "le").replace(">", "be"), data=arr, chunks=(4, 2))
            f.create_dataset("dtc_" + dt.replace("<", "le").replace(">", "be"), data=arr)
        f.create_dataset("dt_bool", data=rng.integers(0, 2, (6, 5)).astype(bool), chunks=(4, 2))
        f.create_dataset("dt_S7", data=np.array([[b"a", b"bcdefgh"], [b"", b"xy\x00z"]], "S7"), chunks=(1, 2))


def _build_many(path, libver):
    rng = np.random.default_rng(7)
    with h5py.File(path, "w", libver=LIBVERS[libver]) as f:
        # paged fixed array: > 1024 chunks, some unallocated, filtered
        d = f.create_dataset("fa_paged", shape=(3000, 3), chunks=(1, 3), dtype="<i4", compression="gzip",
                             fillvalue=-2)
        d[::3] = np.arange(3000).reshape(1000, 3)[:, :1] * np.ones(3, int)
        d = f.create_dataset("fa_paged_raw", shape=(2100,), chunks=(1,), dtype="<u2", fillvalue=5)
        d[1::2] = 7
        d[2099] = 8
        # maxshape fixed but larger than shape
        d = f.create_dataset("max_bigger", shape=(5, 3), maxshape=(50, 3), chunks=(2, 2), dtype="<i4", fillvalue=3)
        d[...] = 1
        d.resize((37, 3))
        d[36] = 2
        # extensible array with many chunks, filtered, big (incompressible) chunks
        d = f.create_dataset("ea_big", shape=(0,), maxshape=(None,), chunks=(20000,), dtype="<u4",
                             compression="gzip", compression_opts=1)
        d.resize((100001,))
        d[:60000] = rng.integers(0, 2**32, 60000, dtype="<u4")
        d[-1] = 9
        d = f.create_dataset("ea_many_gz", shape=(0,), maxshape=(None,), chunks=(3,), dtype="<i4",
                             compression="gzip", shuffle=True)
        d.resize((5000 * 3 + 1,))
        d[::5] = np.arange(len(range(0, 15001, 5)))
        # single chunk, filtered, big
        f.create_dataset("single_big_gz", data=rng.integers(0, 2**16, (300, 300), dtype="<u2"),
                         chunks=(300, 300), compression="gzip", compression_opts=1)
        # bt2 many
        d = f.create_dataset("bt2_gz", shape=(0, 0), maxshape=(None, None), chunks=(3, 2), dtype="<f8",
                             compression="gzip", fletcher32=True, fillvalue=np.inf)
        d.resize((200, 80))
        d[::2, 1::3] = rng.standard_normal((100, 27))
        # v1 btree-ish many chunks with 3 dims
        d = f.create_dataset("cube", shape=(17, 19, 23), chunks=(4, 5, 6), dtype=">i2", compression="gzip",
                             fillvalue=-9)
        d[2:15, :, 5:20] = rng.integers(-500, 500, (13, 19, 15))
        # big contiguous
        f.create_dataset("contig_big", data=rng.standard_normal((700, 300)).astype(">f4"))
        # large chunk with filtered size > 65535 in fixed array
        f.create_dataset("fa_bigchunk", data=rng.integers(0, 2**63, (4, 40000), dtype="<u8"),
                         chunks=(1, 40000), compression="gzip", compression_opts=1)


def _build_special(path, libver):
    rng = np.random.default_rng(3)
    with h5py.File(path, "w", libver=LIBVERS[libver]) as f:
        d = f.create_dataset("ea_20k", shape=(0,), maxshape=(None,), chunks=(1,), dtype="<i2", fillvalue=-4)
        d.resize((20000,))
        d[::3] = np.arange(0, 20000, 3) % 30000
        d = f.create_dataset("ea_20k_gz", shape=(0,), maxshape=(None,), chunks=(1,), dtype="<i2",
                             compression="gzip", fillvalue=-4)
        d.resize((20000,))
        d[1::2] = 1
        d = f.create_dataset("bt2_20k", shape=(0, 0), maxshape=(None, None), chunks=(1, 1), dtype="<i2")
        d.resize((150, 140))
        d[::2, :] = 5
        d = f.create_dataset("fa_20k_gz", shape=(20000,), chunks=(1,), dtype="<i2", compression="gzip", fillvalue=2)
        d[::2] = 3
        # sparse huge
        d = f.create_dataset("sparse_huge", shape=(2**40,), maxshape=(None,), chunks=(1024,), dtype="<f4",
                             fillvalue=-0.0)
        d[2**40 - 10:2**40 - 3] = 1
        d[5] = 2
        # vlen and special types with fills / unwritten chunks
        d = f.create_dataset("vstr", shape=(9,), chunks=(2,), dtype=h5py.string_dtype())
        d[1] = "hello"
        d[8] = ""
        f.create_dataset("vstr_never", shape=(4,), chunks=(2,), dtype=h5py.string_dtype())
        f.create_dataset("vstr_contig_never", shape=(4,), dtype=h5py.string_dtype())
        d = f.create_dataset("vbytes", shape=(5,), chunks=(2,), dtype=h5py.string_dtype("ascii"))
        d[0] = b"xy"
        d = f.create_dataset("vint", shape=(5,), chunks=(2,), dtype=h5py.vlen_dtype("<i4"))
        d[0] = np.arange(3)
        et = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i1")
        d = f.create_dataset("enum", shape=(7,), chunks=(2,), dtype=et, fillvalue=42)
        d[2] = 1
        d = f.create_dataset("arr", shape=(5,), chunks=(2,), dtype=np.dtype(("<i4", (2, 3))))
        d[1] = np.ones((2, 3))
        d = f.create_dataset("arr_be", shape=(5,), dtype=np.dtype((">f8", (3,))))
        d[1] = [1, 2, 3]
        d = f.create_dataset("opaque", shape=(5,), chunks=(2,), dtype="V3", fillvalue=np.void(b"abc"))
        d[1] = np.void(b"xyz")
        cdt = np.dtype({"names": ["a", "b"], "formats": ["<i2", ">f8"], "offsets": [0, 8], "itemsize": 24})
        d = f.create_dataset("cmp_padded", shape=(6,), chunks=(4,), dtype=cdt,
                             fillvalue=np.array((3, 1.5), dtype=cdt))
        d[5] = (9, 9.5)
        nested = np.dtype([("p", [("x", "<u1"), ("y", ">i4")]), ("q", "S2"), ("r", ("<f4", (2,)))])
        d = f.create_dataset("cmp_nested", shape=(6,), chunks=(4,), dtype=nested,
                             fillvalue=np.array(((1, -2), b"q", (0.5, 1.5)), dtype=nested))
        d[0] = ((7, 8), b"zz", (1, 2))
        _lowlevel(f, "compact_cmp", cdt, (3,), layout=h5py.h5d.COMPACT, fill=np.array((1, 2.0), dtype=cdt))
        _lowlevel(f, "compact_str", "S4", (2, 2), layout=h5py.h5d.COMPACT,
                  data=np.array([[b"ab", b"cdef"], [b"", b"g"]], "S4"))
        # early-alloc gzip with fill: every chunk allocated, compressed fill
        _lowlevel(f, "early_gz", "<i4", (10, 10), chunks=(3, 4), alloc=h5py.h5d.ALLOC_TIME_EARLY, fill=13,
                  filters=[lambda dcpl: dcpl.set_deflate(4)])
        f["early_gz"][4, 4] = 0
        _lowlevel(f, "early_gz_never_written", "<f8", (10,), chunks=(3,), alloc=h5py.h5d.ALLOC_TIME_EARLY,
                  fill=-0.0, filters=[lambda dcpl: dcpl.set_shuffle(), lambda dcpl: dcpl.set_deflate(1)])
        # shrunk to zero then regrown
        d = f.create_dataset("zero_regrown", shape=(6, 4), maxshape=(None, 4), chunks=(2, 2), dtype="<i4",
                             fillvalue=8)
        d[...] = 1
        d.resize((0, 4))
        d.resize((5, 4))
        d[4, 3] = 0
        d = f.create_dataset("zero_now", shape=(6, 4), maxshape=(None, None), chunks=(2, 2), dtype="<i4")
        d[...] = 1
        d.resize((6, 0))
        # contiguous late alloc written partially via hyperslab
        _lowlevel(f, "contig_late", "<u8", (12,), alloc=h5py.h5d.ALLOC_TIME_LATE, fill=2**64 - 1)
        f["contig_late"][3:5] = 0
        _lowlevel(f, "contig_fill_alloc_never_written", "<i1", (12,), fill=-5, fill_time=h5py.h5d.FILL_TIME_ALLOC)


# ---------------------------------------------------------------------------------------
# comparison helpers

BUILDERS = {"layouts": _build_layouts, "many": _build_many, "special": _build_special}


def _chunk_tables(r, t) -> tuple[list, list]:
    """Every stored chunk's (offset, filter mask, address, size): h5py's, h5turbo's."""
    table = []
    r.id.chunk_iter(lambda info: table.append(tuple(info)))
    return table, [tuple(t.id.get_chunk_info(i)) for i in range(t.id.get_num_chunks())]


def _dataset_pairs(path):
    """(name, h5py dataset, h5turbo dataset) for each member of the file, both files
    open while the caller looks at them."""
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as f:
        for name in ref:
            yield name, ref[name], f[name]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{(builder, libver): path}, written once for the module."""
    root = tmp_path_factory.mktemp("layout_fill")
    made = {}

    def get(kind, libver):
        key = (kind, libver)
        if key not in made:
            path = root / f"{kind}_{libver}.h5"
            BUILDERS[kind](path, libver)
            made[key] = path
        return made[key]

    return get


def _same(want, got):
    """None when equal in value, dtype and shape (NaN equal to NaN, -0.0 not 0.0)."""
    if isinstance(want, np.ndarray) and want.dtype == object:
        if not isinstance(got, np.ndarray) or got.dtype != object or got.shape != want.shape:
            return f"object array vs {type(got).__name__} {getattr(got, 'dtype', None)}"
        for a, b in zip(want.ravel(), got.ravel()):
            if type(a) is not type(b):
                return f"element {type(a).__name__} vs {type(b).__name__}"
            diff = _same(a, b) if isinstance(a, np.ndarray) else (None if a == b else f"{a!r} vs {b!r}")
            if diff:
                return diff
        return None
    if not isinstance(want, np.ndarray) and type(want) is not type(got):
        return f"type {type(want).__name__} {want!r} vs {type(got).__name__} {got!r}"
    a, b = np.asarray(want), np.asarray(got)
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if a.dtype.kind in "fc":
        equal = np.array_equal(a, b, equal_nan=True)
        if equal and a.dtype.kind == "f":
            equal = np.array_equal(np.signbit(a), np.signbit(b))
    elif a.dtype.kind == "V":
        equal = a.tobytes() == b.tobytes()
    else:
        equal = np.array_equal(a, b)
    return None if equal else f"values differ:\n{a!r}\nvs\n{b!r}"


def _same_fill(want, got):
    """Fill values: compound ones field by field (their padding bytes may differ)."""
    if isinstance(want, (np.ndarray, np.void)) and want.dtype.names and isinstance(got, type(want)) \
            and got.dtype == want.dtype and np.shape(got) == np.shape(want):
        for field in want.dtype.names:
            diff = _same_fill(want[field], got[field])
            if diff:
                return f"field {field}: {diff}"
        return None
    return _same(want, got)


def _compare(fn_ref, fn_got, tag, problems, equal=_same):
    """h5py's value or exception type against h5turbo's. h5turbo's index errors
    subclass h5py's (IndexMismatchError is a ValueError and an IndexError)."""
    want, werr = _outcome(fn_ref)
    got, gerr = _outcome(fn_got)
    if werr is not None or gerr is not None:
        if werr is None or not isinstance(gerr, type(werr)):
            problems.append(f"{tag}: h5py {werr!r} vs h5turbo {gerr!r}")
        return
    diff = equal(want, got)
    if diff:
        problems.append(f"{tag}: {diff[:600]}")


def _selections(shape):
    if shape == ():
        return [(), Ellipsis]
    n = shape[0]
    out = [Ellipsis, np.s_[:], np.s_[::2], np.s_[1::3], np.s_[-2:], np.s_[3:3], np.s_[5:1], np.s_[n:]]
    if n:
        out += [np.s_[-1], np.s_[0], [0, n - 1] if n > 1 else [0], np.arange(n) % 2 == 0,
                np.s_[n // 2:n // 2 + 1]]
    if len(shape) >= 2:
        m = shape[1]
        out += [np.s_[:, ::3], np.s_[1:-1, 1:-1], np.s_[::4, 1::2], np.s_[:, 0:0], np.s_[..., 1:]]
        if n and m:
            out += [np.s_[n // 2, :], np.s_[-1, -1], np.s_[..., -1], (slice(None), [0, m - 1] if m > 1 else [0]),
                    (n - 1, slice(None, None, 2)), np.s_[[0], -1], np.ones(shape, bool),
                    (np.arange(n) % 3 == 0, slice(1, None))]
    return out


LAYOUT_LIBVERS = list(LIBVERS)
# libhdf5 answers get_chunk_info wrongly for an extensible-array index whose unlimited
# axis is not the first (see test_chunk_info.py): its chunk table is compared by sorted offsets
LATER_AXIS_EA = {"grow_second"}


def _names(path):
    with h5py.File(path, "r") as f:
        return list(f)


# ---------------------------------------------------------------------------------------
# tests


@pytest.mark.parametrize("kind", ["layouts", "special"])
@pytest.mark.parametrize("libver", LAYOUT_LIBVERS)
def test_metadata_and_fill_values(files, libver, kind):
    path = files(kind, libver)
    problems = []
    for name, r, t in _dataset_pairs(path):
        for attr in ("shape", "dtype", "chunks", "maxshape", "compression", "compression_opts",
                     "shuffle", "fletcher32", "scaleoffset", "size", "ndim"):
            _compare(lambda: getattr(r, attr), lambda: getattr(t, attr), f"{name}.{attr}", problems,
                     equal=lambda a, b: None if (a == b and type(a) is type(b)) else f"{a!r} vs {b!r}")
        _compare(lambda: r.fillvalue, lambda: t.fillvalue, f"{name}.fillvalue", problems, equal=_same_fill)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("kind", ["layouts", "special"])
@pytest.mark.parametrize("libver", LAYOUT_LIBVERS)
def test_reads_with_every_selection(files, libver, kind):
    path = files(kind, libver)
    problems = []
    for name, r, t in _dataset_pairs(path):
        if kind == "special" and 1000 <= r.size < 10**6:
            continue  # test_many_chunks_and_large_chunks
        if r.shape and r.shape[0] > 10**6:  # the sparse one: read near its ends only
            sels = [np.s_[-20:], np.s_[:10], np.s_[2**40 - 2048: 2**40 - 1024: 100], np.s_[-4],
                    np.s_[2**39:2**39 + 3]]
        else:
            sels = _selections(r.shape)
        for sel in sels:
            _compare(lambda: r[sel], lambda: t[sel], f"{name}[{sel!r:.60}]", problems)
        if not (r.shape and r.shape[0] > 10**6):
            for threads in (1, 2):
                _compare(lambda: r[()], lambda: t.read(threads=threads), f"{name} threads={threads}",
                         problems)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("libver", ["earliest", "v110", "latest"])
def test_many_chunks_and_large_chunks(files, libver):
    """Paged fixed arrays, extensible arrays with many data blocks, deep v2 B-trees,
    filtered chunks larger than 64 KiB, many v1 B-tree nodes: whole reads with and
    without threads, random selections, integer reductions, the chunk table."""
    problems = []
    rng = np.random.default_rng(11)
    for kind in ("many", "special"):
        path = files(kind, libver)
        for name, r, t in _dataset_pairs(path):
            if r.shape == () or r.shape[0] > 10**6 or (kind == "special" and r.size < 1000):
                continue
            want = r[()]
            for threads in (None, 1, 2):
                _compare(lambda: want, lambda: t.read(threads=threads), f"{name} threads={threads}", problems)
            for _ in range(6):
                sel = []
                for n in r.shape:
                    pick = rng.integers(0, 4)
                    if pick == 0:
                        a, b = sorted(rng.integers(-n, n + 1, 2).tolist())
                        sel.append(slice(a, b, int(rng.integers(1, 5))))
                    elif pick == 1:
                        sel.append(int(rng.integers(-n, n)))
                    elif pick == 2 and not any(isinstance(s, list) for s in sel):
                        sel.append(sorted(set(rng.integers(0, n, 3).tolist())))
                    else:
                        sel.append(slice(None))
                sel = tuple(sel)
                _compare(lambda: r[sel], lambda: t[sel], f"{name}[{sel}]", problems)
            if want.dtype.kind in "iu":
                for axis in (None, 0, -1):
                    for op in ("sum", "max", "min"):
                        _compare(lambda: getattr(np, op)(want, axis=axis), lambda: getattr(t, op)(axis=axis),
                                 f"{name}.{op}(axis={axis})", problems)
            if r.chunks:
                table, got = _chunk_tables(r, t)
                if table != got:
                    problems.append(f"{name}: chunk table differs ({len(table)} vs {len(got)} chunks)")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("libver", LAYOUT_LIBVERS)
def test_chunk_tables_and_direct_chunks(files, libver):
    path = files("layouts", libver)
    problems = []
    for name, r, t in _dataset_pairs(path):
        if not r.chunks:
            _compare(lambda: r.id.get_num_chunks(), lambda: t.id.get_num_chunks(), f"{name} contiguous",
                     problems)
            continue
        table, got = _chunk_tables(r, t)
        if name in LATER_AXIS_EA and libver in ("v110", "v112", "latest"):
            table, got = sorted(x[1:] for x in table), sorted(x[1:] for x in got)
        if table != got:
            problems.append(f"{name}: chunk table {table} vs {got}")
            continue
        for info in table:
            offset = info[0]
            if name in LATER_AXIS_EA and libver in ("v110", "v112", "latest"):
                break
            _compare(lambda: tuple(r.id.read_direct_chunk(offset)),
                     lambda: (lambda x: (x[0], bytes(x[1])))(t.id.read_direct_chunk(offset)),
                     f"{name} read_direct_chunk{offset}", problems,
                     equal=lambda a, b: None if (a[0], bytes(a[1])) == b else f"{a!r} vs {b!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("libver", LAYOUT_LIBVERS)
def test_iter_chunks(files, libver):
    path = files("layouts", libver)
    problems = []
    for name, r, t in _dataset_pairs(path):
        if not r.chunks:
            continue
        nd = len(r.shape)
        # (h5py's iter_chunks refuses negative bounds: ValueError; h5turbo takes them)
        sels = [None, np.s_[1:], np.s_[::2] if nd == 1 else np.s_[1:3, :],
                np.s_[0:0] if nd == 1 else np.s_[0:0, :],
                np.s_[max(r.shape[0] - 3, 0):] if nd == 1 else np.s_[2:, 1:max(r.shape[1] - 1, 1)]]
        for sel in sels:
            _compare(lambda: list(r.iter_chunks(sel)), lambda: list(t.iter_chunks(sel)),
                     f"{name}.iter_chunks({sel})", problems,
                     equal=lambda a, b: None if a == b else f"{a} vs {b}")
    assert not problems, "\n".join(problems)


def _close(want, got, op):
    """Reductions: integers exact; floats to the rounding of their type (h5turbo sums
    floats more accurately than numpy's float32 pairwise sums)."""
    a, b = np.asarray(want), np.asarray(got)
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if not isinstance(want, np.ndarray) and type(want) is not type(got):
        return f"type {type(want).__name__} vs {type(got).__name__}"
    if a.dtype.kind in "fc":
        rtol = {2: 2e-3, 4: 1e-5}.get(a.real.dtype.itemsize, 1e-11)
        return None if np.allclose(a, b, rtol=rtol, atol=0, equal_nan=True) else f"{a} vs {b}"
    return None if np.array_equal(a, b) else f"{a} vs {b}"


@pytest.mark.parametrize("libver", ["earliest", "v110", "latest"])
def test_reductions_over_fill_and_partial_chunks(files, libver):
    path = files("layouts", libver)
    problems = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, r, t in _dataset_pairs(path):
            if r.dtype.kind not in "iufcb" or r.dtype.names:
                continue
            a = r[()]
            axes = [None] + list(range(-a.ndim, a.ndim)) + ([(0, 1)] if a.ndim >= 2 else [])
            for op in ("sum", "mean", "max", "min", "var", "std", "count_nonzero"):
                for axis in axes:
                    for keepdims in (False, True):
                        ref_fn = getattr(np, op)
                        _compare(lambda: ref_fn(a, axis=axis, keepdims=keepdims),
                                 lambda: getattr(t, op)(axis=axis, keepdims=keepdims),
                                 f"{name}.{op}(axis={axis}, keepdims={keepdims})", problems,
                                 equal=lambda w, g: _close(w, g, op))
            if a.ndim and a.shape[0] > 2:
                for op in ("sum", "max"):
                    _compare(lambda: getattr(np, op)(a[1:-1], axis=0),
                             lambda: getattr(t, op)(axis=0, selection=np.s_[1:-1]),
                             f"{name}.{op}(selection)", problems, equal=lambda w, g: _close(w, g, op))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_astype_of_layouts(files, libver):
    """Conversions of stored values (fills included) to types that hold them."""
    path = files("layouts", libver)
    problems = []
    for name, r, t in _dataset_pairs(path):
        if r.dtype.kind not in "iuf" or r.size == 0:
            continue
        targets = ["<f8", ">f8"] + (["<i8", ">i8"] if r.dtype.kind in "iu" and r.dtype != np.dtype(">u8")
                                    and r.dtype != np.dtype("<u8") else [])
        if r.dtype.kind == "f" and r.dtype.itemsize <= 4:
            targets.append("<f4")
        for to in targets:
            for sel in ((), np.s_[..., ::2]) if r.shape else ((),):
                _compare(lambda: r.astype(to)[sel], lambda: t.astype(to)[sel], f"{name}.astype({to})[{sel}]",
                         problems)
    assert not problems, "\n".join(problems)


READ_DIRECT_2D = [
    ((10, 10), np.s_[1:3, 0:2], np.s_[5:7, 3:5]),
    ((10, 10), np.s_[::2, 1], None),  # dest_sel set below from the source's length
    ((10, 10), np.s_[0:2, 0:2], np.s_[0:4:2, 0:6:3]),
    ((10, 10), np.s_[[0, 2], 0:2], np.s_[0:2, 0:2]),
    ((10, 10), np.s_[0:2, 0:2], np.s_[0:3, 0:2]),  # shapes differ
    ((10, 10), np.s_[-2:, -1], np.s_[0:2, 0]),
    ((3, 2), np.s_[0:3, 0:2], None),
    ((2, 2), np.s_[0:3, 0:2], None),
    ((6,), np.s_[0:3, 0:2], None),
    ((10, 10), np.s_[1, 1], np.s_[9, 9]),
]


@pytest.mark.parametrize("libver", ["earliest", "v112", "latest"])
def test_read_direct(files, libver):
    path = files("layouts", libver)
    problems = []
    for name, r, t in _dataset_pairs(path):
        shape, nd = r.shape, len(r.shape)
        cases = [(shape, None, None, None), (shape, None, None, "<f8")]
        if r.dtype.kind in "iub" and r.dtype.itemsize < 8:
            cases.append((shape, None, None, ">i8"))  # holds every value: no libhdf5 overflow rules
        if r.dtype.names:
            cases = cases[:1]
        if nd == 2 and shape[0] >= 4 and shape[1] >= 3:
            for dest_shape, source_sel, dest_sel in READ_DIRECT_2D:
                if dest_sel is None and dest_shape == (10, 10):
                    dest_sel = np.s_[0:(shape[0] + 1) // 2, 9]
                cases.append((dest_shape, source_sel, dest_sel, None))
        if nd == 1 and shape[0] >= 4:
            cases += [((20,), np.s_[1:4], np.s_[10:13], None),
                      ((20,), np.s_[::2], np.s_[0:(shape[0] + 1) // 2], None)]
            if r.dtype.kind != "S":  # see test_read_direct_one_string_element
                cases.append(((20,), np.s_[1:2], np.s_[3], None))
        if nd == 0:
            cases += [((), (), (), None), ((1,), None, np.s_[0], None), ((1,), None, None, None)]

        def into(obj, dest_shape, source_sel, dest_sel, dtype):
            out = np.full(dest_shape, 0, dtype=dtype or r.dtype)
            obj.read_direct(out, source_sel, dest_sel)
            return out

        for case in cases:
            _compare(lambda: into(r, *case), lambda: into(t, *case), f"{name}.read_direct{case}", problems)
    assert not problems, "\n".join(problems)


def test_read_direct_one_compound_element(tmp_path):
    path = tmp_path / "cmp.h5"
    dtype = np.dtype([("a", "<i4"), ("b", "<f8")])
    with h5py.File(path, "w") as f:
        f["c"] = np.array([(1, 1.5), (2, 2.5), (3, 3.5)], dtype=dtype)
    outs = []
    for lib in (h5py, h5turbo):
        with lib.File(path, "r") as f:
            out = np.zeros(5, dtype)
            f["c"].read_direct(out, np.s_[1], np.s_[3])
            outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()


def test_read_direct_one_string_element(tmp_path):
    path = tmp_path / "str.h5"
    with h5py.File(path, "w") as f:
        f["s"] = np.array([b"hello", b"ab"], "S5")
    outs = []
    for lib in (h5py, h5turbo):
        with lib.File(path, "r") as f:
            out = np.full(3, b"x", "S5")  # each element b"x": one byte long
            f["s"].read_direct(out, np.s_[0], np.s_[1])
            outs.append(out)
    assert list(outs[0]) == [b"x", b"hello", b"x"]
    assert list(outs[1]) == list(outs[0])


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_index_errors_agree(files, libver):
    """Where h5py raises for a bad index, h5turbo raises the same type (or a subclass);
    h5turbo's extensions (negative steps, unsorted lists, newaxis) are not compared."""
    path = files("layouts", libver)
    problems = []
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as f:
        for name in ("chunk_partial", "contig_partial", "compact", "grow_both", "fill_compound", "empty_1d",
                     "scalar", "implicit", "chunk_never"):
            r, t = ref[name], f[name]
            shape, nd = r.shape, len(r.shape)
            sels = [np.s_[..., ...], (0,) * (nd + 1), np.s_[::0], "nofield", np.s_[1.5]]
            if nd:
                # (an out-of-range index list: h5py's OSError from libhdf5, h5turbo's IndexError)
                sels += [np.s_[shape[0]], np.s_[-(shape[0] + 1)], np.s_[np.zeros(shape[0] + 1, bool)]]
            else:
                sels += [0, np.s_[:]]
            for sel in sels:
                want, werr = _outcome(lambda: r[sel])
                got, gerr = _outcome(lambda: t[sel])
                if werr is None:
                    diff = _same(want, got) if gerr is None else f"h5turbo raised {gerr!r}"
                    if diff:
                        problems.append(f"{name}[{sel!r}]: {diff}")
                elif gerr is None or not isinstance(gerr, type(werr)):
                    if nd == 0 and isinstance(werr, ValueError) and gerr is None:
                        continue  # h5turbo reads scalar[0]-like newaxis forms numpy's way
                    problems.append(f"{name}[{sel!r}]: h5py {werr!r} vs h5turbo {gerr!r}")
    assert not problems, "\n".join(problems)


def test_astype_nan_and_2_63_from_big_endian_floats(tmp_path):
    path = tmp_path / "nan.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("f", data=np.array([np.nan, 2.0**63, 1.5, -2.0**64], ">f8"))
        f.create_dataset("fill", shape=(3,), chunks=(1,), dtype=">f4", fillvalue=np.nan)
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as f:
        for name in ("f", "fill"):
            for to in ("<i8", "<i4", "<u4"):
                np.testing.assert_array_equal(f[name].astype(to)[()], ref[name].astype(to)[()], err_msg=f"{name} {to}")


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_threaded_selections_and_out(files, libver):
    """read(sel, threads=, io_depth=) and read(sel, out=) equal h5py's ds[sel]."""
    path = files("layouts", libver)
    problems = []
    for name, r, t in _dataset_pairs(path):
        for sel in _selections(r.shape):
            want, werr = _outcome(lambda: r[sel])
            if werr is not None:
                continue
            for threads, io_depth in ((2, None), (3, 0), (2, "1K")):
                _compare(lambda: want, lambda: t.read(sel, threads=threads, io_depth=io_depth),
                         f"{name}.read({sel!r:.50}, threads={threads}, io_depth={io_depth})", problems)
            if isinstance(want, np.ndarray) and want.size and r.dtype.kind in "iuf":
                out = np.empty(want.shape, r.dtype)
                _compare(lambda: want, lambda: (t.read(sel, out=out, threads=2), out)[1],
                         f"{name}.read({sel!r:.50}, out=)", problems)
    assert not problems, "\n".join(problems)


def test_filter_mask_skipping_each_filter(tmp_path):
    """Chunks written raw with write_direct_chunk and a filter mask skipping any subset of
    shuffle, deflate and fletcher32 (pipeline order: shuffle, deflate, fletcher32)."""
    path = tmp_path / "masks.h5"
    raw = np.arange(4, dtype="<i4")
    shuffled = raw.view("u1").reshape(4, 4).T.copy().tobytes()
    with h5py.File(path, "w", libver="latest") as f:
        for name, maxshape in (("a", (None,)), ("b", (20,))):  # extensible array, fixed array
            d = f.create_dataset(name, shape=(20,), chunks=(4,), dtype="<i4", shuffle=True,
                                 fletcher32=True, compression="gzip", maxshape=maxshape, fillvalue=-1)
            d.id.write_direct_chunk((0,), raw.tobytes(), filter_mask=0b111)
            d.id.write_direct_chunk((4,), zlib.compress(shuffled), filter_mask=0b100)
            d.id.write_direct_chunk((8,), zlib.compress(raw.tobytes()), filter_mask=0b101)
            d.id.write_direct_chunk((12,), shuffled, filter_mask=0b110)
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as f:
        for name in ("a", "b"):
            np.testing.assert_array_equal(f[name][()], ref[name][()])
            np.testing.assert_array_equal(f[name][3:13:3], ref[name][3:13:3])
            assert int(f[name].sum()) == int(ref[name][()].sum())
            assert [tuple(f[name].id.get_chunk_info(i)) for i in range(4)] == \
                   [tuple(ref[name].id.get_chunk_info(i)) for i in range(4)]


@pytest.mark.parametrize("libver", ["earliest", "latest"])
@pytest.mark.parametrize("filters", [dict(fletcher32=True), dict(fletcher32=True, compression="gzip"),
                                     dict(fletcher32=True, shuffle=True), dict(compression="gzip")],
                         ids=["fletcher32", "gzip+fletcher32", "shuffle+fletcher32", "gzip"])
def test_corrupt_chunk_raises_like_h5py(tmp_path, libver, filters):
    """A flipped bit in a stored chunk: h5py's OSError; h5turbo raises an OSError too
    (its FormatError), for the whole read and for a read of that chunk alone."""
    path = tmp_path / "corrupt.h5"
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("d", data=np.arange(100, dtype="<i4").reshape(10, 10), chunks=(4, 4), **filters)
        info = f["d"].id.get_chunk_info(0)
    with open(path, "r+b") as handle:
        handle.seek(info.byte_offset + 5)
        byte = handle.read(1)[0]
        handle.seek(info.byte_offset + 5)
        handle.write(bytes([byte ^ 0x10]))
    with h5py.File(path, "r") as ref:
        with pytest.raises(OSError):
            ref["d"][()]
        untouched = ref["d"][4:, 4:]
    with h5turbo.File(path, "r") as f:
        with pytest.raises(OSError):
            f["d"][()]
        with pytest.raises(OSError):
            f["d"][1, 1]
        np.testing.assert_array_equal(f["d"][4:, 4:], untouched)


@pytest.mark.parametrize("libver", ["earliest", "v110", "latest"])
def test_sparse_datasets_beyond_32_bit_indexes(tmp_path, libver):
    """Element offsets past 2**32 in every chunk index, nearly all chunks unallocated:
    reads near the far end, across 2**32, and the chunk table. (Chunk counts stay a few
    million: h5py's chunk queries walk every slot, minutes for 2**30 of them.)"""
    path = tmp_path / "sparse.h5"
    with h5py.File(path, "w", libver=LIBVERS[libver]) as f:
        d = f.create_dataset("fixed", shape=(2**33 + 3,), chunks=(5000,), dtype="<i2", fillvalue=7)
        d[-5:] = 1
        d[2**32 - 2:2**32 + 2] = 3
        d = f.create_dataset("two", shape=(2**20 + 1, 2**20 + 3), chunks=(1024, 1024), dtype="<u1", fillvalue=9)
        d[-2:, -2:] = 1
        d[2**20 - 1:2**20 + 1, 5] = 2
        d = f.create_dataset("ea", shape=(5,), maxshape=(None,), chunks=(6007,), dtype="<f8", fillvalue=np.nan)
        d.resize((2**33,))
        d[-3:] = 1.5
        d[2**32] = 2
        d = f.create_dataset("bt2", shape=(5, 5), maxshape=(None, None), chunks=(1, 3), dtype="<f8")
        d.resize((2**33, 7))
        d[-3:, 4:] = 1.5
    cases = {"fixed": [np.s_[-10:], np.s_[2**32 - 4:2**32 + 4], np.s_[2**33 - 2000:2**33:499], np.s_[2**32]],
             "two": [np.s_[-3:, -3:], np.s_[2**20 - 2:2**20 + 1, 4:7], np.s_[-1, ::2**18]],
             "ea": [np.s_[-5:], np.s_[2**32 - 1:2**32 + 2], np.s_[2**32]],  # (h5py lists: ~40 s)
             "bt2": [np.s_[-4:, 3:], np.s_[2**32:2**32 + 2], np.s_[-1]]}
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as f:
        for name, sels in cases.items():
            for sel in sels:
                want, got = ref[name][sel], f[name][sel]
                assert _same(want, got) is None, (name, sel, _same(want, got))
            table = []
            ref[name].id.chunk_iter(lambda info: table.append(tuple(info)))
            assert [tuple(f[name].id.get_chunk_info(i)) for i in range(f[name].id.get_num_chunks())] == table, name
        assert int(f["fixed"].sum(selection=np.s_[2**32 - 10:2**32 + 10])) == \
            int(ref["fixed"][2**32 - 10:2**32 + 10].sum())


def test_astype_longer_fixed_string_keeps_what_libhdf5_keeps(tmp_path):
    """Without embedded NULs: fixed strings widened and cut as h5py converts them."""
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("s", data=np.array([b"a", b"bcdefgh", b"", b"xyz"], "S7"), chunks=(2,))
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as f:
        for to in ("S3", "S9"):
            assert _same(ref["s"].astype(to)[()], f["s"].astype(to)[()]) is None, to
            assert _same(ref["s"].astype(to)[1], f["s"].astype(to)[1]) is None, to


def test_astype_longer_fixed_string_with_embedded_nul(tmp_path):
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("s", data=np.array([b"ab", b"xy\x00z"], "S7"))
    with h5py.File(path, "r") as ref, h5turbo.File(path, "r") as f:
        assert ref["s"][1] == f["s"][1] == b"xy\x00z"  # a plain read keeps the stored bytes in both
        assert list(f["s"].astype("S9")[()]) == list(ref["s"].astype("S9")[()])
        want, got = np.zeros(2, "S9"), np.zeros(2, "S9")
        ref["s"].read_direct(want)
        f["s"].read_direct(got)
        assert list(got) == list(want)
