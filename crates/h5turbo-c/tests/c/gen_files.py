"""Write the HDF5 files the C tests compare against libhdf5 (run with h5py).

python gen_files.py OUTDIR [FAST5_OUT]

dtypes in both byte orders, chunk shapes that do not divide the shape, every filter
Debian's libhdf5 reads (gzip, shuffle, fletcher32, szip where built in, scale-offset,
n-bit), compounds, enums, strings, attributes, scalars and empty datasets, and
groups with creation order tracked. FAST5_OUT: a multi-read fast5 file whose second
read's Signal claims 2^40 samples (no chunk stored), between two good reads.
OUTDIR/many_fast5: 150 small multi-read files (gzip signals), 3 reads each, every
read id its own: more files than h5turbo_fast5_get_batch opens at once.
OUTDIR/damaged: files broken on purpose for api_test's messages (not compared with
libhdf5).
OUTDIR/external: links.h5, whose external links point into target.h5 (a dataset, the
root, a link back), at a missing file, and round in a loop (api_test opens them).
"""

import sys
from pathlib import Path

import h5py
import numpy as np

NUMERIC = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]


def values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "f":
        data = rng.normal(0, 1000, n)
        data[:: 17] = np.nan if n > 17 else data[:: 17]
        data[1:: 23] = -np.inf if n > 23 else data[1:: 23]
        return data.astype(dtype).reshape(shape)
    info = np.iinfo(dtype)
    native = dtype.newbyteorder("=")
    return rng.integers(info.min, info.max, n, dtype=native, endpoint=True).astype(dtype).reshape(shape)


def dtypes_file(path):
    with h5py.File(path, "w") as f:
        for i, code in enumerate(NUMERIC):
            for order in "<>":
                dt = np.dtype(order + code)
                f.create_dataset(f"contiguous/{order == '<' and 'le' or 'be'}_{code}", data=values(dt, (37, 5), i))
                f.create_dataset(
                    f"chunked/{order == '<' and 'le' or 'be'}_{code}",
                    data=values(dt, (41, 13, 3), i + 50),
                    chunks=(7, 5, 2),
                )
        f.create_dataset("scalar_f8", data=np.float64(3.25))
        f.create_dataset("scalar_be_i4", data=np.array(-7, dtype=">i4"))
        f.create_dataset("empty", shape=(0, 4), dtype="i4")
        f.create_dataset("empty_chunked", shape=(0, 4), dtype="f4", chunks=(3, 2), maxshape=(None, 4))
        f.create_dataset("null", data=h5py.Empty("f8"))
        f.create_dataset("bool", data=np.arange(50) % 3 == 0, chunks=(7,))
        f.create_dataset("fill_only", shape=(20, 20), dtype="i2", chunks=(6, 6), fillvalue=-3)


def filters_file(path):
    with h5py.File(path, "w") as f:
        data = np.arange(97 * 31, dtype="<i4").reshape(97, 31) * 7 - 5000
        floats = values("<f8", (53, 29), 3)
        be = data.astype(">i2")
        for name, kwargs in {
            "gzip": dict(compression="gzip", compression_opts=6),
            "gzip_shuffle": dict(compression="gzip", shuffle=True),
            "shuffle": dict(shuffle=True),
            "fletcher32": dict(fletcher32=True),
            "gzip_shuffle_fletcher32": dict(compression="gzip", shuffle=True, fletcher32=True),
            "scaleoffset_int": dict(scaleoffset=0),
        }.items():
            f.create_dataset(f"{name}/i4", data=data, chunks=(10, 7), **kwargs)
            f.create_dataset(f"{name}/be_i2", data=be, chunks=(9, 8), **kwargs)
            if name != "scaleoffset_int":
                f.create_dataset(f"{name}/f8", data=floats, chunks=(11, 6), **kwargs)
        f.create_dataset("scaleoffset_float/f8", data=floats, chunks=(11, 6), scaleoffset=3)
        if h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP):
            f.create_dataset("szip/i4", data=data, chunks=(10, 7), compression="szip")
        nbit = h5py.h5t.STD_I32LE.copy()
        nbit.set_precision(20)
        space = h5py.h5s.create_simple((40, 9))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8, 4))
        dcpl.set_filter(h5py.h5z.FILTER_NBIT)
        ds = h5py.h5d.create(f.id, b"nbit_i20", nbit, space, dcpl=dcpl)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, (np.arange(360, dtype="<i4").reshape(40, 9) * 1000 - 170000))


def structures_file(path):
    with h5py.File(path, "w", track_order=True) as f:
        point = np.dtype([("x", "<f8"), ("y", ">i4"), ("tag", "S3"), ("flags", "u1"), ("pair", "<i2", (2,))])
        rows = np.zeros(29, dtype=point)
        rows["x"] = np.linspace(-1, 1, 29)
        rows["y"] = np.arange(29) * -3
        rows["tag"] = [b"ab", b"cde", b""] * 9 + [b"x", b"yz"]
        rows["flags"] = np.arange(29) % 4
        rows["pair"] = np.arange(58).reshape(29, 2)
        f.create_dataset("compound", data=rows, chunks=(8,))
        padded = np.dtype({"names": ["a", "b"], "formats": ["<u2", ">f4"], "offsets": [0, 8], "itemsize": 16})
        p = np.zeros(11, dtype=padded)
        p["a"] = np.arange(11)
        p["b"] = np.arange(11) / 3
        f.create_dataset("compound_padded", data=p)
        # a table with variable-length members (strings before and after numbers, two
        # sequences, one big-endian): read into columns (h5turbo_dataset_read_columns)
        table_t = np.dtype([("name", h5py.string_dtype()), ("score", ">f8"), ("count", "<i4"),
                            ("note", h5py.string_dtype("ascii")), ("code", "S4"),
                            ("hits", h5py.vlen_dtype(np.dtype("<i2"))), ("big", h5py.vlen_dtype(np.dtype(">u4")))])
        table = np.zeros(37, dtype=table_t)
        table["name"] = ["gene_%d" % i * (i % 3) for i in range(37)]
        table["score"] = np.arange(37) / 7 - 2
        table["count"] = np.arange(37) * 11 - 100
        table["note"] = [(b"n%d" % i) * (i % 5) for i in range(37)]
        table["code"] = [b"AB", b"CDEF", b""] * 12 + [b"Z"]
        table["hits"] = [np.arange(i % 4, dtype="<i2") for i in range(37)]
        table["big"] = [np.arange(i % 3, dtype=">u4") * 70000 + i for i in range(37)]
        f.create_dataset("table_vlen", data=table, chunks=(10,))
        # complex numbers ({r, i} compounds to libhdf5): read whole and into columns
        f["complex_be"] = (np.arange(7) * (1 + 2j)).astype(">c8")
        f.create_dataset("complex_chunked", data=(np.arange(20) - 3.5j).reshape(4, 5), chunks=(3, 2))
        # ragged rows: vlen sequences of several bases, chunked and filtered
        ragged = f.create_dataset("ragged_f8", shape=(9, 4), dtype=h5py.vlen_dtype(np.dtype("<f8")), chunks=(4, 3),
                                  compression="gzip")
        for i in range(9):
            for j in range(4):
                ragged[i, j] = np.arange((i * 4 + j) % 6, dtype="<f8") / 3 - i
        be = f.create_dataset("ragged_be_u2", shape=(11,), dtype=h5py.vlen_dtype(np.dtype(">u2")))
        for i in range(11):
            be[i] = np.arange(i % 5, dtype=">u2") * 1000 + i
        pairs = f.create_dataset("ragged_pairs", shape=(5,), dtype=h5py.vlen_dtype(np.dtype([("a", "<i4"), ("b", "S2")])))
        for i in range(5):
            pairs[i] = np.array([(k, b"x%d" % k) for k in range(i)], dtype=[("a", "<i4"), ("b", "S2")])
        colour = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i2")
        f.create_dataset("enum", data=np.array([0, 1, 42, 1, 0] * 7, dtype="i2"), dtype=colour)
        big_enum = h5py.enum_dtype({"LOW": -5, "HIGH": 300}, basetype=">i4")
        f.create_dataset("enum_be", data=np.array([-5, 300, 300], dtype=">i4"), dtype=big_enum)
        words = [("word%d" % i) * (i % 4) for i in range(23)]
        f.create_dataset("fixed_strings", data=np.array(words, dtype="S16").reshape(23, 1), chunks=(5, 1))
        f.create_dataset("vlen_strings", data=words, dtype=h5py.string_dtype())
        f.create_dataset("vlen_ascii", data=[w.encode() for w in words], dtype=h5py.string_dtype("ascii"))
        f.create_dataset("utf8", data=["grüße", "日本", ""], dtype=h5py.string_dtype())
        arrays = f.create_dataset("array_elements", shape=(4,), dtype=np.dtype(("<f4", (2, 3))))
        arrays[...] = np.arange(24, dtype="<f4").reshape(4, 2, 3)
        g = f.create_group("ordered", track_order=True)
        for name in ["zeta", "alpha", "mid"]:
            g.create_dataset(name, data=np.arange(3))
        # Dimension scales: two on dimension 0 (in attachment order), none on 1, one
        # unnamed scale (no NAME) on 2, one in a group.
        cube = f.create_dataset("scaled", data=np.arange(24, dtype="i4").reshape(2, 3, 4))
        rows = f.create_dataset("scales/rows", data=np.array([b"r1", b"r2"]))
        rows_num = f.create_dataset("rows_num", data=np.array([10.0, 20.0]))
        depth = f.create_dataset("depth", data=np.arange(4))
        rows.make_scale("dimnames")
        rows_num.make_scale("numbers")
        depth.make_scale()
        cube.dims[0].attach_scale(rows)
        cube.dims[0].attach_scale(rows_num)
        cube.dims[2].attach_scale(depth)
        cube.dims[0].label = "R"
        f["soft"] = h5py.SoftLink("/compound")
        f["hard"] = f["enum"]
        # object references (one null, one to an object with two names, one to a group)
        # and region references (read as unsupported)
        refs = f.create_dataset("refs", shape=(2, 3), dtype=h5py.ref_dtype)
        refs[0, 0] = f["compound"].ref
        refs[0, 2] = f["hard"].ref
        refs[1, 0] = f["ordered"].ref
        refs[1, 1] = f["ordered/mid"].ref
        refs[1, 2] = f.ref
        f.create_dataset("region_refs", data=[f["enum"].regionref[2:5]], dtype=h5py.regionref_dtype)
        attrs = f["compound"].attrs
        attrs["int"] = np.int64(-12)
        attrs["be_float"] = np.array([1.5, -2.25], dtype=">f8")
        attrs["fixed"] = np.bytes_(b"hello")
        attrs["vlen"] = "variable"
        attrs["strings"] = ["a", "bb", "ccc"]
        attrs["matrix"] = np.arange(6, dtype="u2").reshape(2, 3)
        attrs["compound"] = rows[:2]
        attrs["empty"] = h5py.Empty("i4")
        # attributes with variable-length parts: a table (read into columns) and ragged rows
        attrs["table"] = table[:5]
        attrs["table_scalar"] = table[3]
        ragged_t = h5py.vlen_dtype(np.dtype(">i4"))
        attrs.create("ragged", np.array([np.arange(i, dtype=">i4") * 3 for i in range(4)] + [None], dtype=object)[:4], dtype=ragged_t)


def huge_signal_fast5(path):
    """Reads read_a, read_b, read_c: the middle one's signal cannot be allocated. It
    claims 2^40 samples (2 TiB, no chunk stored): room in the address space, so with the
    kernel's overcommit an allocation would succeed and its filling exhaust the machine;
    the library refuses sizes past its memory and swap before allocating."""
    with h5py.File(path, "w") as f:
        f.attrs["file_type"] = "multi-read"
        for i, name in enumerate(["a", "b", "c"]):
            read = f.create_group(f"read_{name}")
            raw = read.create_group("Raw")
            raw.attrs["read_id"] = np.bytes_(name)
            raw.attrs["read_number"] = np.int32(i)
            if name == "b":
                raw.create_dataset("Signal", shape=(2**40,), dtype="<i2", chunks=(1024,))
            else:
                raw.create_dataset("Signal", data=np.arange(100 * (i + 1), dtype="<i2"))
            channel = read.create_group("channel_id")
            for key, value in [("digitisation", 8192.0), ("offset", 10.0), ("range", 1400.0), ("sampling_rate", 4000.0)]:
                channel.attrs[key] = np.float64(value)


def many_fast5(folder, files=150, reads=3):
    """Small multi-read files whose reads (ids m<file>_<read>) have signals of their own."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    for k in range(files):
        with h5py.File(folder / f"batch_{k:03d}.fast5", "w") as f:
            f.attrs["file_type"] = "multi-read"
            for r in range(reads):
                name = f"m{k:03d}_{r}"
                raw = f.create_group(f"read_{name}/Raw")
                raw.attrs["read_id"] = np.bytes_(name)
                raw.attrs["read_number"] = np.int32(r)
                signal = rng.integers(-500, 500, int(rng.integers(64, 400))).astype("<i2")
                raw.create_dataset("Signal", data=signal, chunks=(64,), compression="gzip")
                channel = f.create_group(f"read_{name}/channel_id")
                channel.attrs["digitisation"] = np.float64(8192)
                channel.attrs["offset"] = np.float64(k % 20)


def odd_fast5(folder):
    """Attributes of unusual types, as some writers leave them: a single-read file whose
    read_id is a variable-length string (what h5py writes for a str), one without a
    read_id (ont_fast5_api refuses it), and multi-read
    files with a float start_time, a float32 duration, a read_number too large for
    int32 and one stored as text."""
    folder.mkdir(parents=True, exist_ok=True)
    with h5py.File(folder / "single_vlen_id.fast5", "w") as f:
        f.attrs["file_version"] = 2.0
        raw = f.create_group("Raw/Reads/Read_42")
        raw.attrs["read_id"] = "single-vlen"
        raw.attrs["read_number"] = np.int32(42)
        raw.create_dataset("Signal", data=np.arange(5, dtype="<i2"))
        f.create_group("UniqueGlobalKey/channel_id").attrs["digitisation"] = 8192.0
    # a read without an id: in a file of format 1.1 or later it fails (ont_fast5_api
    # refuses the file); before 1.1 it is named by the file (as ont_fast5_api names it)
    for name, version in [("single_no_id", "2.0"), ("legacy_no_id", "0.6")]:
        with h5py.File(folder / f"{name}.fast5", "w") as f:
            f.attrs["file_version"] = np.bytes_(version)
            raw = f.create_group("Raw/Reads/Read_100")
            raw.attrs["read_number"] = np.int32(100)
            raw.create_dataset("Signal", data=np.arange(4, dtype="<i2"))
            f.create_group("UniqueGlobalKey/channel_id").attrs["digitisation"] = 8192.0
    odd = [("start_float", "start_time", np.float64(123456)), ("duration_float32", "duration", np.float32(77)),
           ("number_too_big", "read_number", np.uint32(4_000_000_000)), ("number_text", "read_number", np.bytes_("9"))]
    for name, key, value in odd:
        with h5py.File(folder / f"{name}.fast5", "w") as f:
            f.attrs["file_type"] = "multi-read"
            raw = f.create_group(f"read_{name}/Raw")
            raw.attrs["read_id"] = np.bytes_(name)
            raw.attrs[key] = value
            raw.create_dataset("Signal", data=np.arange(7, dtype="<i2"))


def link_targets(folder, targets=64, linking=4):
    """`linking` files of `targets` external links each, into the same `targets` small
    files (link_targets/m*.h5 -> t*.h5:/d, t<i>'s d is arange(10) + i)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(targets):
        with h5py.File(folder / f"t{i}.h5", "w") as f:
            f["d"] = np.arange(10, dtype="i8") + i
    for m in range(linking):
        with h5py.File(folder / f"m{m}.h5", "w") as f:
            for i in range(targets):
                f[f"l{i}"] = h5py.ExternalLink(f"t{i}.h5", "/d")


def ont_named_fast5(folder):
    """Reads as ont_fast5_api names and reads them: a multi-read file whose group
    read_b is a second hard link to read_a's group and read_c a soft link to it (each
    read is its link's name, whatever the read_id attribute says), channel numbers
    stored big-endian, as half floats and as a float channel_number."""
    folder.mkdir(parents=True, exist_ok=True)
    with h5py.File(folder / "links_and_types.fast5", "w") as f:
        f.attrs["file_type"] = "multi-read"
        f.attrs["file_version"] = "2.2"
        raw = f.create_group("read_a/Raw")
        raw.attrs["read_id"] = np.bytes_("a")
        raw.attrs.create("read_number", 11, dtype=">i4")
        raw.attrs.create("start_time", 900, dtype=">u8")
        raw.create_dataset("Signal", data=np.arange(6, dtype="<i2"))
        channel = f.create_group("read_a/channel_id")
        channel.attrs["channel_number"] = np.float64(3120)
        channel.attrs.create("digitisation", 8192, dtype="<f2")
        channel.attrs.create("offset", -3.5, dtype=">f8")
        channel.attrs.create("range", 1402.5, dtype=">f4")
        channel.attrs.create("sampling_rate", 4000.0, dtype=">f8")
        f["read_b"] = f["read_a"]
        f["read_c"] = h5py.SoftLink("/read_a")
        other = f.create_group("read_d/Raw")
        other.attrs["read_id"] = np.bytes_("not-d")
        other.create_dataset("Signal", data=np.arange(3, dtype=">i2"))
        f.create_group("read_d/channel_id").attrs["channel_number"] = np.bytes_("7")


def reductions_file(path):
    """Sums past 64 bits, an exact integer mean, half floats, empty selections, scalars and a
    null dataspace."""
    with h5py.File(path, "w") as f:
        f.create_dataset("u8_many", data=np.full(100000, 2**62, dtype="<u8"), chunks=(7001,))
        f.create_dataset("i8_three", data=np.full(3, 2**62, dtype=">i8"))
        f.create_dataset("u8_extremes", data=np.array([2**64 - 1, 2**63, 0], dtype="<u8"))
        f.create_dataset("i4_range", data=np.arange(10000, dtype="<i4").reshape(100, 100), chunks=(7, 13),
                         compression="gzip")
        f.create_dataset("f2", data=np.arange(-8, 8, 0.25).astype("<f2").reshape(8, 8), chunks=(3, 3))
        f.create_dataset("empty", shape=(0, 5), dtype="<i2", chunks=(2, 2), maxshape=(None, 5))
        f.create_dataset("scalar_be_i8", data=np.array(-2**62 - 3, dtype=">i8"))
        f.create_dataset("scalar_f4", data=np.float32(-1.5))
        f.create_dataset("null", data=h5py.Empty("<f8"))


def deep_file(path, depth=400):
    """Groups nested `depth` deep (h5sum walks them with a stack of its own, each child
    opened from its group; libhdf5, the reference, slows down with the square of the
    depth: 77 s at 3000), a dataset every 100 levels, a second hard link to a group
    near the top (its objects visited once, under the first name in h5py's order) and
    a soft link (not followed)."""
    with h5py.File(path, "w") as f:
        g = f
        for level in range(depth):
            g = g.create_group("g")
            if level % 100 == 0:
                g.create_dataset("x", data=np.arange(level, level + 7, dtype="<i4"))
        g.create_dataset("bottom", data=np.full((3, 2), 0.5))
        f["again"] = f["g/g/g"]
        f["soft"] = h5py.SoftLink("/g")


def dangling_reference_file(path):
    """/refs: an object reference to /a, then one whose stored address is patched to
    point inside the superblock, where no object header is."""
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("a", data=np.arange(3))
        refs = f.create_dataset("refs", data=[f["a"].ref, f["a"].ref], dtype=h5py.ref_dtype)
        at = refs.id.get_offset()
    with open(path, "r+b") as raw:
        raw.seek(at + 8)
        raw.write((16).to_bytes(8, "little"))


def huge_rows_file(path):
    """Datasets whose rows (the elements past axis 0) overflow 64 bits of bytes or are
    too large to allocate, between two small ones: h5sum divided by zero (SIGFPE) on the
    first and exited at the second; each is an error on stderr, the others summed."""
    with h5py.File(path, "w") as f:
        f.create_dataset("a_small", data=np.arange(5.0))
        f.create_dataset("huge_row", shape=(4, 2**62, 8), dtype="f8", chunks=(1, 1024, 8))
        f.create_dataset("wide_row", shape=(3, 2**50), dtype="i1", chunks=(1, 1 << 20))
        f.create_dataset("z_small", data=np.arange(3))


def bad_dataspace_version_file(path):
    """/good, and /bad whose dataspace message claims version 9 (object header v1, no
    checksum): the core parses a dataset's dataspace from a copy of its bytes, so its
    error once said "(at byte offset 0)", an offset that names no place in the file."""
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("good", data=np.arange(3))
        f.create_dataset("bad", shape=(123457, 7), dtype="u1")
    raw = bytearray(path.read_bytes())
    dims = (123457).to_bytes(8, "little") + (7).to_bytes(8, "little")
    # dataspace message v1: version, rank, flags, 5 reserved bytes, then the dimensions
    at = raw.find(bytes([1, 2, 1, 0, 0, 0, 0, 0]) + dims)
    assert at > 0, "no dataspace message of /bad found"
    raw[at] = 9
    path.write_bytes(bytes(raw))


def external_link_files(folder):
    folder.mkdir(exist_ok=True)
    with h5py.File(folder / "target.h5", "w") as f:
        f.create_dataset("data", data=np.arange(24, dtype="<i4").reshape(4, 6) * 3)
        f["back"] = h5py.ExternalLink("links.h5", "/to_data")
    with h5py.File(folder / "links.h5", "w") as f:
        f["to_data"] = h5py.ExternalLink("target.h5", "/data")
        f["to_root"] = h5py.ExternalLink("target.h5", "/")
        f["round_trip"] = h5py.ExternalLink("target.h5", "/back")
        f["missing"] = h5py.ExternalLink("no_such_file.h5", "/x")
        f["loop_a"] = h5py.ExternalLink("links.h5", "/loop_b")
        f["loop_b"] = h5py.ExternalLink("links.h5", "/loop_a")
        f["soft_self"] = h5py.SoftLink("/soft_self")
        f.create_group("g")["soft_to_ext"] = h5py.SoftLink("/to_data")


def latin1_names_file(path):
    """Names that are not UTF-8 (Latin-1, as old C programs wrote them), in an old-style
    group, a new-style group with dense storage (past 8 links) and as attribute names."""
    with h5py.File(path, "w", libver="earliest") as f:
        old = f.create_group(b"gr\xfcn")
        old.create_dataset(b"caf\xe9", data=np.arange(3, dtype="<i4"))
        old.create_dataset(b"caf\xe8", data=np.arange(4, dtype="<i4"))
        old.create_dataset("日本", data=np.arange(5, dtype="<i4"))
        old.attrs[b"att\xe9"] = np.int32(7)
    with h5py.File(path, "a", libver="latest") as f:
        dense = f.create_group("dense")
        for i in range(12):
            dense.create_dataset(f"n{i}".encode() + b"\xe9", data=np.full(2, i, dtype="<i2"))
        dense.attrs[b"\xe0 la carte"] = np.float64(1.5)


def main():
    if len(sys.argv) > 2:
        huge_signal_fast5(Path(sys.argv[2]))
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    dtypes_file(out / "dtypes.h5")
    filters_file(out / "filters.h5")
    structures_file(out / "structures.h5")
    latin1_names_file(out / "latin1_names.h5")
    reductions_file(out / "reductions.h5")
    deep_file(out / "deep.h5")
    dangling_reference_file(out / "dangling_ref.h5")
    many_fast5(out / "many_fast5")
    odd_fast5(out / "odd_fast5")
    ont_named_fast5(out / "ont_named_fast5")
    link_targets(out / "link_targets")
    (out / "damaged").mkdir(exist_ok=True)
    bad_dataspace_version_file(out / "damaged" / "dataspace_version.h5")
    huge_rows_file(out / "damaged" / "huge_rows.h5")  # not compared with libhdf5's sums
    external_link_files(out / "external")
    with h5py.File(out / "earliest.h5", "w", libver="earliest") as f:
        f.create_dataset("a", data=values(">f4", (30, 7), 9), chunks=(4, 3), compression="gzip")
        f.create_dataset("b/c", data=np.arange(10, dtype="<u8"))


if __name__ == "__main__":
    main()
