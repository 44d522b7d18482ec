"""Writes, with h5py, the matrix of HDF5 files the comparison tests read back.

One data file per library-version bound (earliest, v108, v110, latest) holds every
dataset spec in DATASET_SPECS; one structure file per bound holds groups, links
and attributes (build_structure); a shared target file serves the external links.
Everything is deterministic: data comes from a seeded RNG per spec name.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import h5py
import numpy as np
from h5py import h5d, h5p, h5s, h5t

# h5py libver bounds per matrix name: (low, high).  "earliest" is h5py's default.
LIBVERS = {
    "earliest": ("earliest", "latest"),
    "v108": ("v108", "v108"),
    "v110": ("v110", "v110"),
    "latest": ("latest", "latest"),
}
LIBVER_ORDER = list(LIBVERS)
EXTERNAL_TARGET = "external_target.h5"


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


# --------------------------------------------------------------------------- values

def _ints(dt, shape, rng):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt.newbyteorder("="))


def _floats(dt, shape, rng):
    data = (rng.standard_normal(shape) * 1000).astype(dt)
    flat = data.reshape(-1)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0], dtype=dt)
    flat[: min(flat.size, 4)] = specials[: min(flat.size, 4)]
    return data


def _random_words(rng, shape, max_len, alphabet):
    count = int(np.prod(shape))
    lengths = rng.integers(0, max_len + 1, size=count)
    words = ["".join(rng.choice(alphabet, size=n)) for n in lengths]
    return words


ASCII = list("abcdefghijklmnopqrstuvwxyz ABC0123456789_-")
UNICODE = list("aé€ß漢字🙂xyzЖ ")


def _fixed_bytes(size):
    def make(shape, rng):
        words = _random_words(rng, shape, size, ASCII)
        return np.array([w.encode() for w in words], dtype=f"S{size}").reshape(shape)
    return make


def _fixed_utf8(shape, rng):
    words = [w.encode() for w in _random_words(rng, shape, 3, UNICODE)]  # <= 12 bytes
    return np.array(words, dtype=h5py.string_dtype("utf-8", 12)).reshape(shape)


def _vlen(alphabet, encode):
    def make(shape, rng):
        words = _random_words(rng, shape, 20, alphabet)
        values = [w.encode() if encode else w for w in words]
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(shape)
    return make


def _structured(dt, shape, rng):
    """Random bytes per leaf field (NaN-free floats keep h5py's reads simple)."""
    out = np.zeros(shape, dtype=dt)
    _fill_fields(out, rng)
    return out


def _fill_fields(arr, rng):
    dt = arr.dtype
    if dt.names:
        for name in dt.names:
            _fill_fields(arr[name], rng)
    elif dt.kind in "iu":
        arr[...] = _ints(dt, arr.shape, rng)
    elif dt.kind == "f":
        arr[...] = (rng.standard_normal(arr.shape) * 100).astype(dt)
    elif dt.kind == "S":
        arr[...] = _fixed_bytes(dt.itemsize)(arr.shape, rng)
    elif dt.kind == "O":
        arr[...] = _vlen(ASCII, True)(arr.shape, rng)
    else:
        raise ValueError(f"no filler for {dt}")


def _enum_values(codes):
    def make(shape, rng):
        return rng.choice(np.array(codes), size=shape)
    return make


def _opaque(size):
    def make(shape, rng):
        raw = rng.integers(0, 256, size=int(np.prod(shape)) * size, dtype=np.uint8)
        return raw.view(f"V{size}").reshape(shape)
    return make


COMPOUND = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])
NESTED = np.dtype([("x", "<i2"), ("inner", [("p", "<f4"), ("q", "u1")]), ("y", ">i8")])
WITH_ARRAYS = np.dtype([("id", "<u4"), ("vec", "<f4", (3,)), ("m", "<i2", (2, 2))])
WITH_VLEN = np.dtype([("k", "<i4"), ("s", h5py.string_dtype("ascii"))])
ENUM_I1 = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i1")
ENUM_U2 = h5py.enum_dtype({"OFF": 0, "ON": 1000, "UNKNOWN": 65535}, basetype=">u2")


@dataclass(frozen=True)
class Kind:
    """A dtype of the matrix: how h5py is asked to store it and how values are made."""
    name: str
    dtype: object  # numpy dtype, or an h5t type id factory for low-level types
    make: Callable[[tuple, np.random.Generator], np.ndarray]
    low_level: bool = False
    raw_write: bool = False  # write the bytes with the file type as memory type


def _numeric(code):
    dt = np.dtype(code)
    maker = _ints if dt.kind in "iu" else _floats
    return Kind(f"{dt.kind}{dt.itemsize}{'be' if dt.byteorder == '>' else ''}",
                dt, lambda shape, rng, dt=dt: maker(dt, shape, rng).astype(dt))


def _strtype(size, pad):
    def factory():
        tid = h5t.C_S1.copy()
        tid.set_size(size)
        tid.set_strpad(pad)
        return tid
    return factory


def _bitfield(tid):
    return lambda: tid.copy()


def _complex(code):
    dt = np.dtype(code)
    return Kind(code, dt, lambda shape, rng: (_floats(np.dtype(np.float64), shape, rng)
                                              + 1j * rng.standard_normal(shape)).astype(dt))


KINDS = [
    *[_numeric(c) for c in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"]],
    *[_numeric(c) for c in [">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">f4", ">f8"]],
    Kind("bool", np.dtype(bool), lambda shape, rng: rng.random(shape) < 0.5),
    _complex("c8"),
    _complex("c16"),
    Kind("str_nullpad", np.dtype("S7"), _fixed_bytes(7)),
    Kind("str_spacepad", _strtype(7, h5t.STR_SPACEPAD), _fixed_bytes(7), low_level=True),
    Kind("str_nullterm", _strtype(7, h5t.STR_NULLTERM), _fixed_bytes(6), low_level=True),
    Kind("str_fixed_utf8", h5py.string_dtype("utf-8", 12), _fixed_utf8),
    Kind("vlen_ascii", h5py.string_dtype("ascii"), _vlen(ASCII, True)),
    Kind("vlen_utf8", h5py.string_dtype("utf-8"), _vlen(UNICODE, False)),
    Kind("enum_i1", ENUM_I1, _enum_values([0, 1, 42])),
    Kind("enum_u2be", ENUM_U2, _enum_values([0, 1000, 65535])),
    Kind("compound", COMPOUND, lambda shape, rng: _structured(COMPOUND, shape, rng)),
    Kind("compound_nested", NESTED, lambda shape, rng: _structured(NESTED, shape, rng)),
    Kind("compound_arrays", WITH_ARRAYS, lambda shape, rng: _structured(WITH_ARRAYS, shape, rng)),
    Kind("compound_vlen", WITH_VLEN, lambda shape, rng: _structured(WITH_VLEN, shape, rng)),
    Kind("array_i4x3", np.dtype(("<i4", (3,))),
         lambda shape, rng: _ints(np.dtype("<i4"), shape + (3,), rng)),
    Kind("array_f8x2x2", np.dtype((">f8", (2, 2))),
         lambda shape, rng: _floats(np.dtype(">f8"), shape + (2, 2), rng)),
    Kind("opaque6", np.dtype("V6"), _opaque(6)),
    Kind("bitfield8", _bitfield(h5t.STD_B8LE), lambda shape, rng: _ints(np.dtype("u1"), shape, rng),
         low_level=True, raw_write=True),
    Kind("bitfield16be", _bitfield(h5t.STD_B16BE),
         lambda shape, rng: _ints(np.dtype(">u2"), shape, rng).astype(">u2"),
         low_level=True, raw_write=True),
]
KINDS_BY_NAME = {k.name: k for k in KINDS}


# --------------------------------------------------------------------------- writers

def _dcpl(chunks=None, compact=False, early=False, fill=None, dtype=None):
    plist = h5p.create(h5p.DATASET_CREATE)
    if compact:
        plist.set_layout(h5d.COMPACT)
    if chunks is not None:
        plist.set_chunk(chunks)
    if early:
        plist.set_alloc_time(h5d.ALLOC_TIME_EARLY)
    if fill is not None:
        plist.set_fill_value(np.asarray(fill, dtype=dtype))
    return plist


def create_kind(group, name, kind: Kind, shape, **kwargs):
    """Create a dataset of `kind` (high-level h5py, or low-level for exotic types)."""
    if not kind.low_level:
        return group.create_dataset(name, shape=shape, dtype=kind.dtype, **kwargs)
    if kwargs:
        raise ValueError("low-level kinds take no options")
    space = h5s.create_simple(shape) if shape != () else h5s.create(h5s.SCALAR)
    parent, _, leaf = name.rpartition("/")
    where = group.require_group(parent) if parent else group
    h5d.create(where.id, leaf.encode(), kind.dtype(), space)
    return group[name]


def write_kind(group, name, kind: Kind, shape, **kwargs):
    ds = create_kind(group, name, kind, shape, **kwargs)
    data = kind.make(shape, rng_for(ds.name))
    if kind.raw_write:
        ds.id.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(data), mtype=ds.id.get_type())
    else:
        ds[...] = data
    return ds


@dataclass(frozen=True)
class Spec:
    """One dataset of the data file: its path and the function that writes it."""
    path: str
    write: Callable[[h5py.File, str], None]
    min_libver: str = "earliest"


def _dtype_specs():
    specs = []
    for kind in KINDS:
        base = f"dtypes/{kind.name}"
        specs.append(Spec(f"{base}/contiguous",
                          lambda f, p, k=kind: write_kind(f, p, k, (11, 6))))
        specs.append(Spec(f"{base}/scalar", lambda f, p, k=kind: write_kind(f, p, k, ())))
        if not kind.low_level:
            specs.append(Spec(f"{base}/chunked_gzip",
                              lambda f, p, k=kind: write_kind(
                                  f, p, k, (37, 23), chunks=(8, 5), maxshape=(None, None),
                                  compression="gzip", shuffle=True)))
            specs.append(Spec(f"{base}/chunked_fixed",
                              lambda f, p, k=kind: write_kind(f, p, k, (29, 7), chunks=(6, 4))))
    return specs


def _write_array(f, path, data, **kwargs):
    ds = f.create_dataset(path, shape=data.shape, dtype=data.dtype, **kwargs)
    ds[...] = data
    return ds


def _small_ints(shape, rng, dtype="<i4"):
    return rng.integers(-50, 50, size=shape).astype(dtype)


def _layout(path, shape, dtype="<i4", **kwargs):
    def write(f, p):
        _write_array(f, p, _small_ints(shape, rng_for(p), dtype), **kwargs)
    return Spec(f"layouts/{path}", write)


def _compact(f, p):
    data = _small_ints((50,), rng_for(p), "<f8")
    f.create_dataset(p, data=data, dcpl=_dcpl(compact=True))


def _compact_2d(f, p):
    data = _small_ints((6, 7), rng_for(p), ">i2")
    f.create_dataset(p, data=data, dcpl=_dcpl(compact=True))


def _implicit(f, p):
    data = _small_ints((60, 50), rng_for(p), "<i8")
    f.create_dataset(p, data=data, dcpl=_dcpl(chunks=(16, 16), early=True))


def _implicit_partial(f, p):
    ds = f.create_dataset(p, shape=(45, 33), dtype="<i2",
                          dcpl=_dcpl(chunks=(10, 7), early=True, fill=-3, dtype="<i2"))
    ds[12:30, 3:20] = _small_ints((18, 17), rng_for(p), "<i2")


def _layout_specs():
    return [
        _layout("contiguous_2d", (40, 30)),
        _layout("contiguous_3d", (5, 6, 7), "<u2"),
        Spec("layouts/compact_1d", _compact),
        Spec("layouts/compact_2d", _compact_2d),
        _layout("fixed_array", (100, 90), chunks=(7, 11)),
        _layout("fixed_array_gzip", (100, 90), chunks=(7, 11), compression="gzip"),
        _layout("single_chunk", (30, 20), chunks=(30, 20)),
        _layout("single_chunk_gzip", (30, 20), chunks=(30, 20), compression="gzip"),
        _layout("single_chunk_unlimited", (30, 20), chunks=(30, 20), maxshape=(None, 20)),
        Spec("layouts/implicit", _implicit),
        Spec("layouts/implicit_partial", _implicit_partial),
        _layout("ext_array", (120, 17), chunks=(10, 5), maxshape=(None, 17)),
        _layout("ext_array_gzip", (120, 17), chunks=(10, 5), maxshape=(None, 17),
                compression="gzip", shuffle=True),
        _layout("ext_array_axis1", (17, 120), chunks=(5, 10), maxshape=(17, None)),
        _layout("btree2", (45, 38), chunks=(4, 6), maxshape=(None, None)),
        _layout("btree2_many", (200, 150), chunks=(8, 8), maxshape=(None, None)),
        _layout("btree2_many_gzip", (200, 150), chunks=(8, 8), maxshape=(None, None),
                compression="gzip"),
        _layout("maxshape_gt_shape", (30, 40), chunks=(7, 9), maxshape=(50, 60)),
        _layout("chunk_gt_shape", (10, 7), chunks=(16, 4), maxshape=(None, 7)),
        _layout("chunked_3d", (13, 17, 19), "<f4", chunks=(4, 5, 6)),
        _layout("chunked_4d", (3, 4, 5, 6), "<i8", chunks=(2, 3, 2, 4), maxshape=(None,) * 4),
        _layout("big_1d_paged", (70001,), "<f4", chunks=(61,), compression="gzip", shuffle=True),
        _layout("big_1d_unlimited", (70001,), "<i2", chunks=(50,), maxshape=(None,)),
        _layout("big_1d_contiguous", (70001,), "<u4"),
    ]


FILTERS = {
    "gzip1": dict(compression="gzip", compression_opts=1),
    "gzip4": dict(compression="gzip", compression_opts=4),
    "gzip9": dict(compression="gzip", compression_opts=9),
    "shuffle": dict(shuffle=True),
    "fletcher32": dict(fletcher32=True),
    "lzf": dict(compression="lzf"),
    "shuffle_gzip": dict(compression="gzip", shuffle=True),
    "shuffle_gzip_fletcher32": dict(compression="gzip", shuffle=True, fletcher32=True),
    "shuffle_lzf": dict(compression="lzf", shuffle=True),
    "lzf_fletcher32": dict(compression="lzf", fletcher32=True),
}
MAXSHAPES = {"fixed": (57, 43), "unlim1": (None, 43), "unlim2": (None, None)}


def _filter_spec(fname, opts, mname, maxshape, dtype):
    def write(f, p):
        data = _small_ints((57, 43), rng_for(p), dtype)
        _write_array(f, p, data, chunks=(10, 9), maxshape=maxshape, **opts)
    return Spec(f"filters/{fname}_{mname}_{np.dtype(dtype).str[1:]}", write)


def _incompressible(f, p):
    data = rng_for(p).integers(0, 256, size=(40, 50), dtype=np.uint8)
    data[:10] = 7  # some chunks compress, the rest keep their filter-mask bit set
    _write_array(f, p, data, chunks=(10, 10), compression="lzf")


def _filter_specs():
    specs = [_filter_spec(fn, o, mn, m, "<i4")
             for fn, o in FILTERS.items() for mn, m in MAXSHAPES.items()]
    specs += [_filter_spec(fn, FILTERS[fn], "fixed", MAXSHAPES["fixed"], dt)
              for fn in ("shuffle_gzip", "shuffle_gzip_fletcher32") for dt in ("<f8", ">i2", "<f2")]
    specs.append(Spec("filters/lzf_incompressible", _incompressible))
    return specs


def _partial(shape, dtype, fill, region, **kwargs):
    def write(f, p):
        ds = f.create_dataset(p, shape=shape, dtype=dtype, fillvalue=fill, **kwargs)
        if region is not None:
            sub = ds[region]
            ds[region] = _structured(np.dtype(dtype), sub.shape, rng_for(p))
    return write


def _resized_grow(f, p):
    ds = f.create_dataset(p, shape=(20, 10), dtype="<i4", chunks=(6, 4), maxshape=(None, None),
                          fillvalue=9)
    ds[...] = _small_ints((20, 10), rng_for(p))
    ds.resize((35, 27))
    ds[30:, 20:] = 1


def _resized_shrink(f, p):
    ds = f.create_dataset(p, shape=(40, 30), dtype="<f8", chunks=(7, 7), maxshape=(None, None),
                          compression="gzip")
    ds[...] = _small_ints((40, 30), rng_for(p), "<f8")
    ds.resize((25, 12))


def _resized_shrink_grow(f, p):
    ds = f.create_dataset(p, shape=(40,), dtype="<i2", chunks=(6,), maxshape=(None,),
                          fillvalue=-1)
    ds[...] = _small_ints((40,), rng_for(p), "<i2")
    ds.resize((13,))
    ds.resize((50,))


COMPOUND_FILL = np.array((-1, 2.5, b"fil"), dtype=COMPOUND)


def _fill_specs():
    sl = np.s_[10:20, 5:15]
    return [
        Spec("fill/int_partial", _partial((50, 40), "<i4", -7, sl, chunks=(8, 8))),
        Spec("fill/float_nan_partial", _partial((50, 40), "<f8", np.nan, sl, chunks=(8, 8))),
        Spec("fill/float_partial_gzip", _partial((50, 40), ">f4", 1.5, sl, chunks=(8, 8),
                                                 compression="gzip")),
        Spec("fill/compound_partial", _partial((30, 20), COMPOUND, COMPOUND_FILL,
                                               np.s_[3:9, 2:11], chunks=(4, 4))),
        Spec("fill/never_written_chunked", _partial((30, 30), "<u2", 3, None, chunks=(7, 7))),
        Spec("fill/never_written_btree2", _partial((30, 30), "<i8", 11, None, chunks=(7, 7),
                                                   maxshape=(None, None))),
        Spec("fill/never_written_contiguous", _partial((20, 20), "<i4", 5, None)),
        Spec("fill/never_written_default", _partial((12, 9), "<f4", None, None, chunks=(5, 5))),
        Spec("fill/ext_array_partial", _partial((90, 12), "<i4", 4, np.s_[40:55, :],
                                                chunks=(10, 5), maxshape=(None, 12))),
        Spec("fill/resized_grow", _resized_grow),
        Spec("fill/resized_shrink", _resized_shrink),
        Spec("fill/resized_shrink_grow", _resized_shrink_grow),
    ]


def _empty(shape, dtype="<f4", **kwargs):
    return lambda f, p: f.create_dataset(p, shape=shape, dtype=dtype, **kwargs)


def _null(dtype):
    return lambda f, p: f.create_dataset(p, data=h5py.Empty(dtype))


def _empty_specs():
    return [
        Spec("empty/zero_1d_chunked", _empty((0,), chunks=(4,), maxshape=(None,))),
        Spec("empty/zero_2d_contiguous", _empty((0, 5), "<i2")),
        Spec("empty/zero_2d_chunked", _empty((5, 0), "<i8", chunks=(2, 2), maxshape=(None, None))),
        Spec("empty/null_f4", _null("<f4")),
        Spec("empty/null_i8", _null("<i8")),
    ]


DATASET_SPECS: list[Spec] = (_dtype_specs() + _layout_specs() + _filter_specs()
                             + _fill_specs() + _empty_specs())


def supports(libver: str, spec: Spec) -> bool:
    return LIBVER_ORDER.index(libver) >= LIBVER_ORDER.index(spec.min_libver)


def build_data_file(path: Path, libver: str) -> None:
    with h5py.File(path, "w", libver=LIBVERS[libver]) as f:
        for spec in DATASET_SPECS:
            if supports(libver, spec):
                spec.write(f, spec.path)


# --------------------------------------------------------------------------- structure

def attr_values():
    """name -> value of one attribute of every kind (as written by h5py)."""
    rng = rng_for("attrs")
    values = {
        "int_scalar": np.int32(-5),
        "uint64_scalar": np.uint64(2**63 + 7),
        "float_array": rng.standard_normal(10),
        "float16_array": rng.standard_normal(4).astype("f2"),
        "be_ints": np.arange(6, dtype=">i4").reshape(2, 3),
        "be_float_scalar": np.array(3.25, dtype=">f8")[()],
        "bool_scalar": np.bool_(True),
        "bool_array": np.array([True, False, True]),
        "complex_scalar": np.complex128(1 - 2j),
        "complex64_array": np.array([1 + 1j, -2.5j], dtype="c8"),
        "str_vlen": "plain ascii",
        "str_vlen_utf8": "unicode: é € 漢字 🙂",
        "str_vlen_empty": "",
        "str_vlen_array": np.array(["a", "bé", ""], dtype=h5py.string_dtype()),
        "bytes_fixed": np.bytes_(b"fixed"),
        "bytes_fixed_array": np.array([b"ab", b"cde", b""], dtype="S3"),
        "compound_scalar": np.array((1, 2.0, b"xyz"), dtype=COMPOUND)[()],
        "compound_nested_array": _structured(NESTED, (3,), rng),
        "compound_arrays": _structured(WITH_ARRAYS, (2,), rng),
        "enum_array": np.array([0, 42, 1], dtype=ENUM_I1),
        "opaque": _opaque(5)((2,), rng),
        "empty_f4": h5py.Empty("<f4"),
        "int8_2d": _ints(np.dtype("i1"), (3, 4), rng),
        "nan_scalar": np.float64(np.nan),
    }
    return values


def _write_attrs(obj, values):
    for name, value in values.items():
        obj.attrs[name] = value


def _array_dtype_attr(obj):
    obj.attrs.create("array_dtype", data=np.arange(6, dtype="<i2").reshape(2, 3),
                     dtype=np.dtype(("<i2", (3,))))


def _many_attrs(obj, count, prefix):
    for i in range(count):
        obj.attrs[f"{prefix}{(i * 37) % count:03d}"] = np.arange(i % 5 + 1, dtype="<i8") * i


def _many_links(group, count):
    for i in range(count):
        name = f"member_{(i * 53) % count:04d}"
        if i % 10 == 0:
            group.create_dataset(name, data=np.arange(i, i + 3, dtype="<i4"))
        else:
            group.create_group(name)


def _ordered_group(parent, name, count):
    group = parent.create_group(name, track_order=True)
    for i in range(count):
        link = f"z{count - i:03d}_{'abc'[i % 3]}"
        group.create_group(link) if i % 2 else group.create_dataset(link, data=[i])
    return group


def _attr_groups(f, libver):
    plain = f.create_group("attrs_compact")
    _write_attrs(plain, attr_values())
    _array_dtype_attr(plain)
    _many_attrs(f.create_group("attrs_dense"), 40, "attr_")
    ordered = f.create_group("attrs_ordered", track_order=True)
    for name in ["zeta", "alpha", "mid", "beta", "omega"]:
        ordered.attrs[name] = name
    _many_attrs(f.create_group("attrs_dense_ordered", track_order=True), 30, "o_")
    if libver != "earliest":
        big = f.create_group("attrs_big")
        big.attrs["big"] = np.arange(20000, dtype="<f8")  # 160 kB: dense storage
        big.attrs["small"] = 1


def _dataset_attrs(f):
    ds = f.create_dataset("data", data=np.arange(24, dtype="<i4").reshape(4, 6), chunks=(2, 3))
    _write_attrs(ds, attr_values())
    _many_attrs(f.create_dataset("data_dense_attrs", data=np.arange(3.0)), 25, "d_")


def _links(f):
    f["hard_alias"] = f["data"]
    f["soft_data"] = h5py.SoftLink("/data")
    f["soft_group"] = h5py.SoftLink("/dense_group")
    f["soft_relative"] = h5py.SoftLink("nested/a")
    f["dangling"] = h5py.SoftLink("/does/not/exist")
    f["external"] = h5py.ExternalLink(EXTERNAL_TARGET, "/target/values")
    f["nested/a/b/c/d"] = np.arange(5, dtype="<u8")
    f["nested/a/b"].attrs["depth"] = 2
    f["nested/hard_to_group"] = f["attrs_dense"]


def build_structure_file(path: Path, libver: str) -> None:
    with h5py.File(path, "w", libver=LIBVERS[libver]) as f:
        _write_attrs(f, {"root_attr": "root", "root_num": np.arange(3)})
        compact = f.create_group("compact_group")
        for name in ["c", "a", "b"]:
            compact.create_group(name)
        _many_links(f.create_group("dense_group"), 120)
        _ordered_group(f, "ordered_small", 5)
        _ordered_group(f, "ordered_dense", 40)
        f.create_group("empty_group")
        _attr_groups(f, libver)
        _dataset_attrs(f)
        _links(f)


def build_external_target(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f["target/values"] = np.arange(17, dtype=">i4")
        f["target"].attrs["origin"] = "external"


def build_all(directory: Path) -> dict:
    """Write every matrix file under `directory`; return {(kind, libver): path}."""
    build_external_target(directory / EXTERNAL_TARGET)
    paths = {}
    for libver in LIBVERS:
        paths[("data", libver)] = directory / f"data_{libver}.h5"
        build_data_file(paths[("data", libver)], libver)
        paths[("structure", libver)] = directory / f"structure_{libver}.h5"
        build_structure_file(paths[("structure", libver)], libver)
    return paths


# --- fast5-like files (Oxford Nanopore), as MinKNOW / ont_fast5_api lay them out ---

VBZ = {"compression": 32020, "compression_opts": (0, 2, 1, 1)}  # needs ONT's vbz plugin
GZIP = {"compression": "gzip", "compression_opts": 1}


def fast5_read_values(rng: np.random.Generator, length: int) -> tuple[str, np.ndarray, dict, dict]:
    """(read_id, int16 signal, channel attrs, read attrs) of one made-up read."""
    read_id = "%08x-%04x-%04x-%04x-%012x" % tuple(int(rng.integers(0, 16 ** n)) for n in (8, 4, 4, 4, 12))
    # a random walk around a current level: what vbz's delta + zig-zag coding is made for
    signal = (400 + np.cumsum(rng.integers(-12, 13, length))).astype(np.int16)
    channel = {"channel_number": np.bytes_(str(int(rng.integers(1, 513)))), "digitisation": np.float64(8192),
               "offset": np.float64(rng.integers(0, 30)), "range": np.float64(1402.5),
               "sampling_rate": np.float64(4000)}
    read = {"read_id": np.bytes_(read_id),  # fixed-length strings, as MinKNOW writes them
             "read_number": np.int32(rng.integers(0, 10 ** 5)),
            "start_mux": np.uint8(rng.integers(1, 5)), "start_time": np.uint64(rng.integers(0, 10 ** 9)),
            "duration": np.uint32(length), "median_before": np.float64(rng.normal(200, 10))}
    return read_id, signal, channel, read


def _put_attrs(obj, attrs: dict) -> None:
    for key, value in attrs.items():
        obj.attrs[key] = value


def write_fast5_multi(path: Path, lengths: list[int], seed: int = 0, filters: dict = VBZ,
                      libver: str | tuple = "earliest") -> None:
    """A multi-read file: read_<id>/Raw/Signal, read_<id>/channel_id; `filters` for the signals."""
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w", libver=libver) as f:
        f.attrs["file_version"] = np.bytes_("2.0")
        f.attrs["file_type"] = np.bytes_("multi-read")
        for length in lengths:
            read_id, signal, channel, read = fast5_read_values(rng, length)
            group = f.create_group(f"read_{read_id}")
            raw = group.create_group("Raw")
            _put_attrs(raw, read)
            raw.create_dataset("Signal", data=signal, chunks=(min(length, 102400) or 1,),
                               maxshape=(None,), **filters)
            _put_attrs(group.create_group("channel_id"), channel)
            tracking = group.create_group("tracking_id")
            tracking.attrs["run_id"] = np.bytes_("0123456789abcdef")


def write_fast5_single(path: Path, length: int, seed: int = 0, filters: dict = VBZ,
                       libver: str | tuple = "earliest") -> None:
    """A single-read file: Raw/Reads/Read_<n>/Signal, UniqueGlobalKey/channel_id."""
    rng = np.random.default_rng(seed)
    read_id, signal, channel, read = fast5_read_values(rng, length)
    with h5py.File(path, "w", libver=libver) as f:
        f.attrs["file_version"] = np.float64(2.0)
        group = f.create_group(f"Raw/Reads/Read_{int(read['read_number'])}")
        _put_attrs(group, read)
        group.create_dataset("Signal", data=signal, chunks=(min(length, 102400) or 1,),
                             maxshape=(None,), **filters)
        _put_attrs(f.create_group("UniqueGlobalKey/channel_id"), channel)
        f["UniqueGlobalKey"].create_group("tracking_id").attrs["run_id"] = np.bytes_("0123456789abcdef")


def write_revised_reference_file(path):
    """A file whose dataset 'refs' has an HDF5 1.12+ reference type (H5R_OBJECT2): h5py
    writes only the old types, so an object reference type is patched to type 2."""
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("refs", data=np.array([f.ref], dtype=h5py.ref_dtype))
        f.create_dataset("plain", data=np.arange(3))
    data = bytearray(path.read_bytes())
    # datatype message of the reference type: class 7, version 1; bits 0; size 8
    encoded = bytes([0x17, 0, 0, 0, 8, 0, 0, 0])
    assert data.count(encoded) == 1
    data[data.find(encoded) + 1] = 2
    path.write_bytes(bytes(data))
    return path
