"""Generate the chunk-index fixtures and record h5py's view of every chunk.

Run from this directory: python3 make_fixtures.py
Writes one .h5.gz file per library-version bound and expected.json with, per dataset:
object header address, dims, max dims, chunk dims, filtered flag, and every allocated
chunk as h5py's get_chunk_info reports it (scaled coords, address, size, filter mask).
"""
import ctypes
import itertools
import zlib
import gzip
import json
import os
import h5py
import numpy as np

UNLIM = None


def chunked(f, name, shape, maxshape, chunks, dtype="i4", compression=None, write=None,
            alloc_early=False, resize_to=None):
    """Create a chunked dataset; write() picks which regions get data."""
    if alloc_early:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(chunks)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        space = h5py.h5s.create_simple(shape, tuple(h5py.h5s.UNLIMITED if m is None else m for m in maxshape))
        dsid = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(np.dtype(dtype)), space, dcpl=dcpl)
        ds = h5py.Dataset(dsid)
    else:
        ds = f.create_dataset(name, shape=shape, maxshape=maxshape, chunks=chunks, dtype=dtype,
                              compression=compression)
    if write is not None:
        write(ds)
    if resize_to is not None:
        ds.resize(resize_to)
    return ds


def fill_all(ds):
    ds[...] = np.arange(int(np.prod(ds.shape)), dtype=ds.dtype).reshape(ds.shape) % 97 + 1


def some(*regions):
    def w(ds):
        for r in regions:
            ds[r] = 7
    return w


def random_chunks(ds):
    # Irregular, incompressible-ish data so filtered chunk sizes differ.
    rng = np.random.default_rng(len(ds.name))
    ds[...] = rng.integers(0, 1000, size=ds.shape).astype(ds.dtype)


def paged_and_big(f):
    gz = "gzip"
    chunked(f, "paged", (3000,), (3000,), (1,), dtype="i1",
            write=some(np.s_[0], np.s_[5], np.s_[1500], np.s_[2999]))
    chunked(f, "paged_gz", (2500,), (2500,), (1,), dtype="i2", compression=gz,
            write=some(np.s_[3], np.s_[1024], np.s_[2048:2051]))
    # Enough chunks to need super blocks (index >= 244) and paged data blocks (>= 131060).
    chunked(f, "ea_big", (140000,), (UNLIM,), (1,), dtype="i1",
            write=some(np.s_[0], np.s_[3], np.s_[4], np.s_[100], np.s_[300], np.s_[5000],
                       np.s_[135000], np.s_[139999]))
    chunked(f, "ea_big_gz", (140000,), (UNLIM,), (1,), dtype="i2", compression=gz,
            write=some(np.s_[1], np.s_[250], np.s_[131100], np.s_[133500]))


def chunk_grid(ds):
    return [-(-s // c) for s, c in zip(ds.shape, ds.chunks)]


def chunk_ids(*which):
    """Fill chunks with their own row-major grid index + 1 (all chunks, or the ones
    whose scaled coords are listed) and mark the dataset. HDF5 2.0's get_chunk_info
    reports wrong offsets for extensible arrays whose unlimited dimension is not the
    first (swizzled); for these datasets describe() derives the coords from content."""
    def w(ds):
        grid = chunk_grid(ds)
        for idx, c in enumerate(itertools.product(*map(range, grid))):
            if which and c not in which:
                continue
            ds[tuple(slice(i * k, min((i + 1) * k, s)) for i, k, s in zip(c, ds.chunks, ds.shape))] = idx + 1
        ds.attrs["coords_from_content"] = 1
    return w


def populate(f, latest):
    """latest: the file uses the v1.10+ indexes; the big paged cases only matter there."""
    gz = "gzip"
    # Fixed maximum dims: fixed array (v4+) or v1 B-tree (earliest).
    chunked(f, "fixed_full", (10, 7), (10, 7), (3, 4), write=fill_all)
    chunked(f, "fixed_full_gz", (10, 7), (10, 7), (3, 4), compression=gz, write=random_chunks)
    chunked(f, "fixed_partial", (10, 7), (10, 7), (3, 4), write=some(np.s_[0:2, 0:2], np.s_[9, 6]))
    chunked(f, "fixed_partial_gz", (10, 7), (10, 7), (3, 4), compression=gz,
            write=some(np.s_[4, 5], np.s_[9, 0]))
    # Current dims smaller than max dims: linear index runs over the max-dims grid.
    chunked(f, "small_of_max", (5,), (50,), (4,), write=fill_all)
    chunked(f, "small_of_max_2d", (5, 6), (11, 13), (2, 3), write=fill_all)
    chunked(f, "small_of_max_2d_gz", (5, 6), (11, 13), (2, 3), compression=gz, write=random_chunks)
    # Many chunks: fixed array data block pages (> 1024 elements).
    if latest:
        paged_and_big(f)
    # Single chunk (v4+): dims == max dims == chunk dims.
    chunked(f, "single", (4, 5), (4, 5), (4, 5), write=fill_all)
    chunked(f, "single_gz", (4, 5), (4, 5), (4, 5), compression=gz, write=random_chunks)
    chunked(f, "single_unwritten", (4, 5), (4, 5), (4, 5))
    # Implicit index (v4+): early allocation, no filter, fixed max dims.
    chunked(f, "implicit", (10, 7), (10, 7), (3, 4), alloc_early=True, write=some(np.s_[0, 0]))
    chunked(f, "implicit_small_of_max", (5, 6), (11, 13), (2, 3), alloc_early=True)
    # One unlimited dim: extensible array (v4+).
    chunked(f, "ea_dim0", (10, 7), (UNLIM, 20), (3, 4), write=fill_all)
    chunked(f, "ea_dim0_gz", (10, 7), (UNLIM, 20), (3, 4), compression=gz, write=random_chunks)
    chunked(f, "ea_dim1", (7, 10), (20, UNLIM), (4, 3), write=chunk_ids())
    chunked(f, "ea_dim1_gz", (7, 10), (20, UNLIM), (4, 3), compression=gz, write=chunk_ids())
    chunked(f, "ea_dim1_partial", (7, 30), (9, UNLIM), (4, 3), write=chunk_ids((0, 0), (1, 9), (1, 4)))
    chunked(f, "ea_3d_mid", (3, 5, 4), (4, UNLIM, 6), (2, 2, 3), write=chunk_ids())
    # Shrunk after writing: chunks beyond the new extent are gone.
    chunked(f, "ea_shrunk", (10, 7), (UNLIM, 7), (3, 4), write=fill_all, resize_to=(5, 7))
    # Two unlimited dims: v2 B-tree (v4+).
    chunked(f, "bt2", (10, 7), (UNLIM, UNLIM), (3, 4), write=fill_all)
    chunked(f, "bt2_gz", (10, 7), (UNLIM, UNLIM), (3, 4), compression=gz, write=random_chunks)
    chunked(f, "bt2_partial", (40, 40), (UNLIM, UNLIM), (2, 2),
            write=some(np.s_[0, 0], np.s_[39, 39], np.s_[20:24, 3]))
    chunked(f, "bt2_many_gz", (60, 60), (UNLIM, UNLIM), (2, 3), dtype="i2", compression=gz,
            write=random_chunks)
    # Non-chunked layouts.
    f.create_dataset("contiguous", data=np.arange(12, dtype="i4"))
    f.create_dataset("contiguous_empty", shape=(3,), dtype="i4")
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    space = h5py.h5s.create_simple((3,))
    dsid = h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16LE, space, dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([1, 2, 3], dtype="<i2"))


def coords_from_content(ds, raw, offset, size):
    chunk = raw[offset:offset + size]
    if ds.compression == "gzip":
        chunk = zlib.decompress(chunk)
    idx = int.from_bytes(chunk[:4], "little") - 1
    return [int(c) for c in np.unravel_index(idx, chunk_grid(ds))]


def describe(f, raw):
    out = {}
    for name, ds in f.items():
        if not isinstance(ds, h5py.Dataset):
            continue
        info = {
            "header": h5py.h5o.get_info(ds.id).addr,
            "dims": list(ds.shape),
            "max_dims": [-1 if m is None else m for m in ds.maxshape],
            "layout": ds.id.get_create_plist().get_layout(),
            "filtered": ds.compression is not None,
        }
        if ds.chunks is not None:
            info["chunk_dims"] = list(ds.chunks)
            chunks = []
            for i in range(ds.id.get_num_chunks()):
                c = ds.id.get_chunk_info(i)
                scaled = [o // d for o, d in zip(c.chunk_offset, ds.chunks)]
                if "coords_from_content" in ds.attrs:
                    scaled = coords_from_content(ds, raw, c.byte_offset, c.size)
                chunks.append([scaled, c.byte_offset, c.size, c.filter_mask])
            info["chunks"] = sorted(chunks)
        elif info["layout"] == h5py.h5d.CONTIGUOUS:
            off = ds.id.get_offset()
            info["address"] = off
            info["size"] = ds.id.get_storage_size()
        else:
            info["data"] = list(ds[...].astype("<i2").tobytes())
        out[name] = info
    return out


def make_groups(f):
    # Old-style (symbol table) groups when written with the earliest format.
    g = f.create_group("many")
    for i in range(30):
        g.create_group(f"grp_{i:03d}")
    for i in range(5):
        g[f"soft_{i}"] = h5py.SoftLink(f"/many/grp_{i:03d}")
    g["hard_again"] = g["grp_010"]
    g.create_dataset("zz_data", data=[1, 2, 3])


def describe_links(g):
    links = []
    for name in sorted(g.keys()):
        link = g.get(name, getlink=True)
        if isinstance(link, h5py.SoftLink):
            links.append([name, "soft", link.path])
        else:
            links.append([name, "hard", h5py.h5o.get_info(g[name].id).addr])
    return links


def hdf5_library():
    """h5py does not wrap H5Pset_istore_k / H5Pset_sym_k: call its bundled libhdf5."""
    libs = os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs")
    names = [n for n in os.listdir(libs) if n.startswith("libhdf5-")]
    return ctypes.CDLL(os.path.join(libs, names[0]))


def small_k_file(path, libver):
    """Tiny v1 B-tree fan-out (K=2 for chunks, 1 for groups), so that a few dozen
    entries already give multi-level trees and several symbol table nodes."""
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    lib = hdf5_library()
    if lib.H5Pset_istore_k(ctypes.c_int64(fcpl.id), ctypes.c_uint(2)) < 0:
        raise RuntimeError("H5Pset_istore_k failed")
    if lib.H5Pset_sym_k(ctypes.c_int64(fcpl.id), ctypes.c_uint(1), ctypes.c_uint(1)) < 0:
        raise RuntimeError("H5Pset_sym_k failed")
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    bounds = {"earliest": (h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_V18),
              "v110": (h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_V110),
              "v200": (h5py.h5f.LIBVER_V200, h5py.h5f.LIBVER_V200)}[libver]
    fapl.set_libver_bounds(*bounds)
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    return h5py.File(fid)


def main():
    expected = {}
    for tag, libver in [("earliest", "earliest"), ("v110", "v110"), ("v200", "v200")]:
        path = f"chunks_{tag}.h5"
        with small_k_file(path, libver) as f:
            populate(f, tag != "earliest")
        with h5py.File(path, "r") as f:
            with open(path, "rb") as fh:
                expected[path] = describe(f, fh.read())
    with small_k_file("groups_earliest.h5", "earliest") as f:
        make_groups(f)
    with h5py.File("groups_earliest.h5", "r") as f:
        expected["groups_earliest.h5"] = {
            "/": describe_links(f),
            "/many": describe_links(f["many"]),
        }
    # Stored gzipped (the tests inflate them in memory) to keep the repository small.
    for path in list(expected):
        with open(path, "rb") as src, gzip.GzipFile(path + ".gz", "wb", 9, mtime=0) as dst:
            dst.write(src.read())
        os.remove(path)
    with open("expected.json", "w") as fh:
        json.dump(expected, fh, separators=(",", ":"), sort_keys=True)


if __name__ == "__main__":
    main()
