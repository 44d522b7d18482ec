#!/usr/bin/env python3
"""Generate the datatype fixtures and the expected results h5py gives for them.

Run from this directory with h5py (3.16, HDF5 2.0 here):

    python3 gen_fixtures.py            # fixtures + expected.json
    python3 gen_fixtures.py --corpus ../../../../../tests/data/corpus   # also corpus_expected.json

For every dataset and attribute, expected.json records what the Rust tests compare:
- `addr`: object header address (HDF5 address, relative to the base) of the dataset,
  or of the object owning the attribute;
- `dtype`: h5py's dtype in the canonical text form of `NumpyDtype::to_descr_string`
  (or `error:<exception>` where h5py cannot give one);
- `shape`, and `hex` (numpy bytes, `arr.tobytes()`) for types without objects, or
  `tree` (see `value_tree`) for vlen types; large values are given as `fnv`
  (FNV-1a 64 of the bytes) and `nbytes` instead;
- `fill`: hex of `Dataset.fillvalue` bytes for datasets.
"""
import json
import os
import sys

import h5py
import numpy as np

h5t = h5py.h5t
HERE = os.path.dirname(os.path.abspath(__file__))
MAX_HEX = 2048
# Corpus files whose types this module covers (jhdf and pyfive test files).
CORPUS_PREFIXES = (
    "jhdf/compound_", "jhdf/test_enum_", "jhdf/opaque_", "jhdf/bitfield_datasets", "jhdf/test_string_",
    "jhdf/utf8-fixed-length", "jhdf/var-length-strings-reused", "jhdf/globalheaps_test", "jhdf/test_vlen_",
    "jhdf/float_special_values_", "jhdf/test_attribute_", "jhdf/test_fill_value_", "jhdf/committed_datatypes",
    "jhdf/test_scalar_empty", "jhdf/test_compound_scalar_attribute", "jhdf/test_large_attribute",
    "jhdf/multidim_string", "jhdf/space_padding_problem", "jhdf/test_odd_datasets", "jhdf/hdf_v14",
    "pyfive/attr_datatypes", "pyfive/dataset_datatypes", "pyfive/enum_", "pyfive/opaque_", "pyfive/fillvalue_",
    "pyfive/references", "pyfive/earliest", "pyfive/latest",
)


def dump_records(records, path):
    """One record per line: small diffs, small files."""
    with open(path, "w") as fh:
        fh.write("[\n")
        fh.write(",\n".join(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in records))
        fh.write("\n]\n")


def descr(dt):
    """Canonical dtype text, mirrored by NumpyDtype::to_descr_string in Rust."""
    if dt.kind == "O":
        s = h5py.check_string_dtype(dt)
        if s is not None and s.length is None:
            return "vlen-str" if s.encoding == "utf-8" else "vlen-bytes"
        vl = h5py.check_vlen_dtype(dt)
        if vl is not None:
            return "vlen[%s]" % descr(vl)
        r = h5py.check_ref_dtype(dt)
        if r is h5py.Reference:
            return "ref-object"
        if r is h5py.RegionReference:
            return "ref-region"
        raise TypeError("unknown object dtype %r" % dt)
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return "(%s)%s" % (",".join(str(d) for d in shape), descr(base))
    if dt.names is not None:
        parts = ["%s:%s@%d" % (n, descr(dt.fields[n][0]), dt.fields[n][1]) for n in dt.names]
        return "{%s}/%d" % (",".join(parts), dt.itemsize)
    return dt.str


def meta(dt):
    """h5py's metadata on the top-level dtype, mirrored by DtypeMetadata::to_descr_string."""
    if dt.metadata and dt.metadata.get("h5py_opaque"):
        return "opaque"
    if dt.kind == "S":
        return "enc:" + h5py.check_string_dtype(dt).encoding
    members = h5py.check_enum_dtype(dt)
    if members is not None:
        items = sorted(members.items(), key=lambda kv: (kv[1], kv[0]))
        return "enum:" + ",".join("%s=%d" % (k, v) for k, v in items)
    return None


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def has_object(dt):
    return dt.hasobject


def value_tree(dt, v):
    """JSON form of one element of an object dtype, mirroring values::VlenValue:
    vlen string -> {"s": hex}; vlen sequence of plain base -> {"n": count, "hex": ...};
    sequence of object base -> {"seq": [...]}; compound -> {"fields": [...]};
    subarray -> {"items": [...]}; plain part -> {"hex": ...}; reference -> null."""
    if dt.kind == "O":
        s = h5py.check_string_dtype(dt)
        if s is not None:
            b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            return {"s": b.hex()}
        vl = h5py.check_vlen_dtype(dt)
        if vl is not None:
            if has_object(vl):
                return {"seq": [value_tree(vl, x) for x in v]}
            # Exactly the array h5py returns: its dtype and bytes (for non-native
            # numeric bases h5py labels the unswapped file bytes as native order).
            arr = v if isinstance(v, np.ndarray) else np.asarray(v, dtype=vl)
            return {"dt": descr(arr.dtype), "hex": arr.tobytes().hex(), "n": int(arr.shape[0])}
        return None
    if dt.subdtype is not None and has_object(dt):
        base, _ = dt.subdtype
        return {"items": [value_tree(base, x) for x in np.asarray(v).reshape(-1)]}
    if dt.names is not None and has_object(dt):
        return {"fields": [value_tree(dt.fields[n][0], v[n]) for n in dt.names]}
    return {"hex": element_bytes(dt, v).hex()}


def element_bytes(dt, arr):
    """numpy bytes of `arr` as elements of dt (subarray dtypes expand in numpy)."""
    if dt.subdtype is not None:
        return np.ascontiguousarray(arr, dtype=dt.subdtype[0]).tobytes()
    return np.ascontiguousarray(arr, dtype=dt).tobytes()


def covered(dt):
    """Per byte of one element: does a value live there? h5py leaves padding bytes of
    records (and of x87 long doubles) uninitialised in some results, e.g. fill values."""
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return covered(base) * int(np.prod(shape))
    if dt.names is not None:
        mask = [False] * dt.itemsize
        for n in dt.names:
            fdt, off = dt.fields[n][:2]
            for i, c in enumerate(covered(fdt)):
                mask[off + i] = mask[off + i] or c
        return mask
    if dt.kind in "fc" and dt.itemsize in (16, 32) and np.finfo(dt).nmant == 63:
        part = dt.itemsize // (2 if dt.kind == "c" else 1)
        return ([True] * 10 + [False] * (part - 10)) * (dt.itemsize // part)
    return [True] * dt.itemsize


def masked(dt, data):
    mask = covered(dt)
    return bytes(b if mask[i % len(mask)] else 0 for i, b in enumerate(data))


def values_record(dt, arr):
    rec = {}
    if has_object(dt):
        if h5py.check_ref_dtype(dt) is None:
            rec["tree"] = [value_tree(dt, x) for x in np.asarray(arr, dtype=dt).reshape(-1)]
        return rec
    data = element_bytes(dt, arr)
    if len(data) <= MAX_HEX:
        rec["hex"] = data.hex()
    else:
        rec["fnv"] = fnv1a(data)
        rec["nbytes"] = len(data)
    return rec


def read_all(obj):
    if obj.shape is None:  # null dataspace (h5py.Empty)
        return None
    return obj[()]


def describe_dataset(path, ds):
    rec = {"kind": "dataset", "path": path, "addr": h5py.h5o.get_info(ds.id).addr}
    try:
        dt = ds.dtype
        rec["dtype"] = descr(dt)
        rec["meta"] = meta(dt)
    except Exception as e:  # h5py cannot map the type
        rec["dtype"] = "error:" + type(e).__name__
        return rec
    rec["shape"] = list(ds.shape) if ds.shape is not None else None
    try:
        arr = read_all(ds)
        if arr is not None:
            rec.update(values_record(dt, arr))
    except Exception as e:
        rec["read_error"] = type(e).__name__
    try:
        fv = ds.fillvalue
        if fv is not None and not has_object(dt):
            rec["fill"] = masked(dt, element_bytes(dt, fv)).hex()
    except Exception:
        pass
    return rec


def describe_attribute(path, obj, name):
    rec = {"kind": "attribute", "path": path, "name": name, "addr": h5py.h5o.get_info(obj.id).addr}
    try:
        aid = h5py.h5a.open(obj.id, name.encode("utf-8"))
        dt = aid.dtype
        rec["dtype"] = descr(dt)
        rec["meta"] = meta(dt)
    except Exception as e:
        rec["dtype"] = "error:" + type(e).__name__
        return rec
    shape = aid.shape
    rec["shape"] = list(shape) if shape is not None else None
    try:
        v = obj.attrs[name]
        if not isinstance(v, h5py.Empty):
            arr = np.asarray(v, dtype=dt) if not has_object(dt) else np.array(v, dtype=dt)
            rec.update(values_record(dt, arr.reshape(shape if shape else ())))
    except Exception as e:
        rec["read_error"] = type(e).__name__
    return rec


def describe_file(filename, label):
    records = []
    with h5py.File(filename, "r") as f:
        def visit(path, obj):
            if isinstance(obj, h5py.Dataset):
                rec = describe_dataset(path, obj)
                rec["file"] = label
                records.append(rec)
            for name in obj.attrs.keys():
                rec = describe_attribute(path, obj, name)
                rec["file"] = label
                records.append(rec)
        visit("/", f)
        f.visititems(lambda p, o: visit("/" + p, o))
    return records


# ---------------------------------------------------------------------------
# Fixture construction
# ---------------------------------------------------------------------------

def str_type(size, pad, cset):
    t = h5t.C_S1.copy()
    t.set_size(size)
    t.set_strpad(pad)
    t.set_cset(cset)
    return t


def raw_dataset(group, name, tid, raw, shape):
    """A contiguous dataset of HDF5 type `tid` whose file bytes are exactly `raw`."""
    space = h5py.h5s.create_simple(shape)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dsid = h5py.h5d.create(group.id, name.encode(), tid, space, dcpl=dcpl)
    buf = np.frombuffer(raw, dtype="u1").copy()
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=tid)


def raw_attribute(obj, name, tid, raw, shape):
    space = h5py.h5s.create_simple(shape) if shape else h5py.h5s.create(h5py.h5s.SCALAR)
    aid = h5py.h5a.create(obj.id, name.encode(), tid, space)
    aid.write(np.frombuffer(raw, dtype="u1").copy(), mtype=tid)


def custom_types():
    """(name, HDF5 type, raw bytes of 3 elements) for types numpy cannot make directly."""
    out = []
    for pad, pname in ((h5t.STR_NULLTERM, "nullterm"), (h5t.STR_NULLPAD, "nullpad"), (h5t.STR_SPACEPAD, "spacepad")):
        for cset, cname in ((h5t.CSET_ASCII, "ascii"), (h5t.CSET_UTF8, "utf8")):
            raw = b"ab\0junk" + "h\u00e9    ".encode("utf-8") + b"full!!!"
            assert len(raw) == 21
            out.append(("str_%s_%s" % (pname, cname), str_type(7, pad, cset), raw))
    for tname in ("STD_B8LE", "STD_B16LE", "STD_B32BE", "STD_B64BE"):
        t = getattr(h5t, tname)
        out.append(("bitfield_" + tname.lower(), t, bytes(range(1, 1 + 3 * t.get_size()))))
    opaque = h5t.create(h5t.OPAQUE, 5)
    opaque.set_tag(b"my opaque tag")
    out.append(("opaque_tagged", opaque, bytes(range(15))))
    i12 = h5t.STD_I16LE.copy()
    i12.set_precision(12)
    i12.set_offset(2)
    out.append(("int12_at_bit2_le", i12, bytes([0xFC, 0xFF, 0x04, 0x80, 0xFF, 0x1F])))
    u12 = h5t.STD_U16BE.copy()
    u12.set_precision(12)
    u12.set_offset(4)
    out.append(("uint12_at_bit4_be", u12, bytes([0xFF, 0xFF, 0x12, 0x34, 0x80, 0x01])))
    i24 = h5t.STD_I32LE.copy()
    i24.set_size(3)
    out.append(("int24", i24, bytes(range(9))))
    bool32 = h5t.enum_create(h5t.STD_I32BE)
    bool32.enum_insert(b"FALSE", 0)
    bool32.enum_insert(b"TRUE", 1)
    out.append(("bool_enum_i32be", bool32, bytes([0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7])))
    for name, base in (("bool_enum_i8", h5t.STD_I8LE), ("bool_enum_u8", h5t.STD_U8LE)):
        b = h5t.enum_create(base)
        b.enum_insert(b"TRUE", 1)
        b.enum_insert(b"FALSE", 0)
        out.append((name, b, bytes([1, 0, 7])))
    out.append(("longdouble", h5t.NATIVE_LDOUBLE, np.array([1.5, -2.25, 1e300], dtype=np.longdouble).tobytes()))
    for cname in ("COMPLEX_IEEE_F32LE", "COMPLEX_IEEE_F64BE", "COMPLEX_IEEE_F16LE"):
        t = getattr(h5t, cname)
        out.append(("native_" + cname.lower(), t, bytes(range(3 * t.get_size()))))
    ri = h5t.create(h5t.COMPOUND, 24)
    ri.insert(b"r", 0, h5t.IEEE_F64LE)
    ri.insert(b"i", 16, h5t.IEEE_F64LE)
    raw = b"".join(np.array([v, 0.0, -v], dtype="<f8").tobytes() for v in (1.0, 2.5, -4.0))
    out.append(("complex_compound_with_gap", ri, raw))
    return out


def numpy_datasets():
    """(name, numpy array) for types h5py makes from numpy dtypes."""
    d = {}
    for t in ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"):
        for order in "<>":
            dt = np.dtype(order + t)
            d["num_%s%s" % ("le" if order == "<" else "be", t)] = np.array([0, 1, 100, -3 if "i" in t or "f" in t else 7], dtype=dt)
    d["float_special"] = np.array([np.nan, np.inf, -np.inf, -0.0, 5e-324], dtype="<f8")
    d["complex64"] = np.array([1 + 2j, -3.5j], dtype="<c8")
    d["complex128_be"] = np.array([1 + 2j, -3.5j], dtype=">c16")
    d["bool"] = np.array([True, False, True])
    d["fixed_bytes"] = np.array([b"hello", b"", b"abc\0d"], dtype="S6")
    d["fixed_utf8"] = np.array(["h\u00e9".encode(), b"x"], dtype=h5py.string_dtype("utf-8", 8))
    d["enum_i1"] = np.array([0, 1, 42], dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i1"))
    d["enum_u2_be"] = np.array([3, 65535], dtype=h5py.enum_dtype({"A": 3, "B": 65535}, basetype=">u2"))
    point = np.dtype([("x", "<f4"), ("y", ">i2"), ("tag", "S3")])
    nested = np.dtype({"names": ["id", "p", "arr", "flag"], "formats": ["<u8", point, ("<i2", (2, 3)), "?"],
                       "offsets": [0, 8, 20, 40], "itemsize": 48})
    d["compound_nested"] = np.array([(1, (1.5, -2, b"ab"), np.arange(6).reshape(2, 3), True),
                                     (2, (0.0, 7, b"xyz"), -np.arange(6).reshape(2, 3), False)], dtype=nested)
    d["array_2x2_f8"] = (np.arange(12, dtype="<f8").reshape(3, 2, 2), np.dtype(("<f8", (2, 2))))
    pair = np.dtype([("a", "<i4"), ("b", ">f4")])
    d["array_of_compound"] = (np.array([[(1, 2.0), (3, 4.0), (5, 6.0)], [(7, 8.0), (9, 1.0), (0, -1.0)]], dtype=pair),
                              np.dtype((pair, (3,))))
    d["vlen_str_utf8"] = np.array(["", "h\u00e9llo", "a" * 40], dtype=h5py.string_dtype("utf-8"))
    d["vlen_str_ascii"] = np.array([b"one", b"", b"three"], dtype=h5py.string_dtype("ascii"))
    vi = np.empty(3, dtype=h5py.vlen_dtype("<i4"))
    vi[0], vi[1], vi[2] = np.array([1, 2, 3]), np.array([], dtype="<i4"), np.arange(10)
    d["vlen_int32"] = vi
    vf = np.empty(2, dtype=h5py.vlen_dtype(">f8"))
    vf[0], vf[1] = np.array([1.5]), np.array([2.0, -1.0])
    d["vlen_f8_be"] = vf
    rec = np.dtype([("id", "<i4"), ("name", h5py.string_dtype("utf-8")), ("vals", h5py.vlen_dtype("<i2"))])
    cv = np.empty(2, dtype=rec)
    cv[0] = (1, "first", np.array([1, 2], dtype="<i2"))
    cv[1] = (2, "", np.array([], dtype="<i2"))
    d["compound_with_vlen"] = cv
    d["datetime_ns"] = np.array(["2020-01-01T00:00:00", "1970-01-01"], dtype="<M8[ns]")
    d["timedelta_s"] = np.array([5, -1], dtype="<m8[s]")
    return d


def build(filename, libver):
    with h5py.File(filename, "w", libver=libver) as f:
        dsets = f.create_group("datasets")
        for name, arr in numpy_datasets().items():
            if isinstance(arr, tuple):
                data, dt = arr
                dsets.create_dataset(name, shape=data.shape[:1], dtype=dt)[...] = data
                continue
            dt = arr.dtype
            if dt.kind in "mM":
                dt = h5py.opaque_dtype(dt)
            dsets.create_dataset(name, data=arr.view(dt) if dt is not arr.dtype else arr, dtype=dt)
        dsets.create_dataset("scalar_f8", data=np.float64(3.25))
        dsets.create_dataset("empty_f4", data=h5py.Empty("<f4"))
        dsets.create_dataset("refs", data=[dsets["scalar_f8"].ref, f.ref], dtype=h5py.ref_dtype)
        dsets.create_dataset("region_refs", data=[dsets["num_lei4"].regionref[1:3]], dtype=h5py.regionref_dtype)
        custom = f.create_group("custom")
        for name, tid, raw in custom_types():
            raw_dataset(custom, name, tid, raw, (3,))
        order = f.create_group("member_order")
        swapped = h5t.create(h5t.COMPOUND, 12)
        swapped.insert(b"b", 8, h5t.STD_I32LE)
        swapped.insert(b"a", 0, h5t.IEEE_F64LE)
        raw_dataset(order, "declared_out_of_order", swapped, bytes(range(36)), (3,))
        with_vlen = h5t.create(h5t.COMPOUND, 24)
        with_vlen.insert(b"n", 8, h5t.py_create(h5py.string_dtype(), logical=True))
        with_vlen.insert(b"a", 0, h5t.STD_I32LE)
        h5py.h5d.create(order.id, b"vlen_out_of_order", with_vlen, h5py.h5s.create_simple((2,)))
        mem = np.dtype({"names": ["a", "n"], "formats": ["<i4", h5py.string_dtype()], "offsets": [0, 8], "itemsize": 16})
        order["vlen_out_of_order"][...] = np.array([(1, "one"), (2, "two")], dtype=mem)
        # A float layout numpy lacks: h5py picks float64 and libhdf5 converts on read.
        odd_float = h5t.IEEE_F32LE.copy()
        odd_float.set_fields(31, 20, 11, 0, 20)
        odd_float.set_ebias(1023)
        odd = h5py.h5d.create(custom.id, b"float_e11m20", odd_float, h5py.h5s.create_simple((3,)))
        odd.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([1.5, -2.0, 1e-300], dtype="<f8"))
        try:  # HDF5 time class: h5py has no dtype for it
            h5py.h5d.create(custom.id, b"time_d32le", h5t.UNIX_D32LE, h5py.h5s.create_simple((2,)))
        except Exception as e:
            print("no time dataset:", e)
        committed = f.create_group("committed")
        committed["point_t"] = np.dtype([("x", "<f4"), ("y", "<f4")])
        committed.create_dataset("uses_point", data=np.zeros(2, dtype=[("x", "<f4"), ("y", "<f4")]),
                                 dtype=committed["point_t"])
        committed["uses_point"].attrs.create("also_point", np.ones(1, dtype=[("x", "<f4"), ("y", "<f4")]),
                                             dtype=committed["point_t"])
        fills = f.create_group("fills")
        fills.create_dataset("fill_i4", (4,), dtype="<i4", fillvalue=-7)
        fills.create_dataset("fill_f8_be", (4,), dtype=">f8", fillvalue=2.5)
        fills.create_dataset("fill_default", (4,), dtype="<u2")
        fills.create_dataset("fill_compound", (2,), dtype=[("a", "<i2"), ("b", "S3")], fillvalue=np.array((5, b"xy"), dtype=[("a", "<i2"), ("b", "S3")]))
        fills.create_dataset("fill_str", (2,), dtype="S4", fillvalue=b"zz")
        # Attributes: at most 8 per object so that they stay in the object header.
        attr_sets = list(numpy_datasets().items())
        for k in range(0, len(attr_sets), 6):
            g = f.create_group("attrs_%02d" % k)
            for name, arr in attr_sets[k:k + 6]:
                if isinstance(arr, tuple):
                    g.attrs.create(name, arr[0], dtype=arr[1])
                    continue
                dt = h5py.opaque_dtype(arr.dtype) if arr.dtype.kind in "mM" else arr.dtype
                g.attrs.create(name, arr.view(dt) if dt is not arr.dtype else arr, dtype=dt)
        g = f.create_group("attrs_misc")
        g.attrs["scalar_str"] = "a scalar utf-8 string \u2603"
        g.attrs["scalar_i8"] = np.int64(-5)
        g.attrs["empty"] = h5py.Empty("<i4")
        g.attrs.create("ref", dsets["scalar_f8"].ref, dtype=h5py.ref_dtype)
        g.attrs["n\u00e4me_utf8"] = np.arange(3, dtype="<u1")
        for k, (name, tid, raw) in enumerate(custom_types()):
            if k % 6 == 0:
                g = f.create_group("attrs_custom_%02d" % k)
            raw_attribute(g, name, tid, raw, (3,))


def main():
    out = []
    for libver, fname in (("earliest", "types_earliest.h5"), ("latest", "types_latest.h5")):
        path = os.path.join(HERE, fname)
        build(path, libver)
        out.extend(describe_file(path, fname))
    dump_records(out, os.path.join(HERE, "expected.json"))
    print("fixtures: %d records" % len(out))
    if "--corpus" in sys.argv:
        global MAX_HEX
        MAX_HEX = 256
        root = sys.argv[sys.argv.index("--corpus") + 1]
        corpus = []
        for sub in sorted(os.listdir(root)):
            if sub not in ("jhdf", "pyfive"):
                continue
            for name in sorted(os.listdir(os.path.join(root, sub))):
                if not name.endswith((".hdf5", ".h5", ".nc")):
                    continue
                label = sub + "/" + name
                if not label.startswith(CORPUS_PREFIXES):
                    continue
                try:
                    corpus.extend(describe_file(os.path.join(root, label), label))
                except Exception as e:
                    print("skip", label, type(e).__name__, e)
        dump_records(corpus, os.path.join(HERE, "corpus_expected.json"))
        print("corpus: %d records" % len(corpus))


if __name__ == "__main__":
    main()
