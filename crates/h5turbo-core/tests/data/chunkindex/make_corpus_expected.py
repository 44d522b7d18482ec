"""Record h5py's chunk locations for the chunked datasets of the corpus (tests/data/corpus) files
the chunk-index tests read (the corpus is the repository's tests/data/corpus).

Run from this directory: python3 make_corpus_expected.py [corpus dir]
"""
import json
import os
import sys

import h5py

SAMPLE = 8

FILES = [
    "jhdf/chunked_v4_datasets.hdf5",
    "jhdf/fixed_array_paged_datasets.hdf5",
    "jhdf/implicit_index_datasets.hdf5",
    "jhdf/test_chunked_datasets_earliest.hdf5",
    "jhdf/test_chunked_datasets_latest.hdf5",
    "jhdf/tiny_huge_1d_over_maxint.hdf5",
    "jhdf/test_compressed_chunked_datasets_earliest.hdf5",
    "jhdf/test_compressed_chunked_datasets_latest.hdf5",
    "jhdf/hdf_v14_test1.hdf5",
    "jhdf/hdf_v14_test2.hdf5",
    "pyfive/btreev2.hdf5",
    "pyfive/chunked.hdf5",
    "pyfive/resizable.hdf5",
]


def datasets(f):
    found = []
    f.visititems(lambda name, obj: found.append((name, obj)) if isinstance(obj, h5py.Dataset) else None)
    return found


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def digest(chunks):
    """FNV-1a 64 of "c0,c1:address:size:mask;" for every chunk in sorted order: lets
    the tests compare thousands of chunks exactly without storing them all."""
    text = "".join(f"{','.join(map(str, c))}:{a}:{s}:{m};" for c, a, s, m in chunks)
    return f"{fnv1a64(text):016x}"


def describe(ds):
    if ds.chunks is None:
        return describe_contiguous(ds)
    chunks = []
    for i in range(ds.id.get_num_chunks()):
        c = ds.id.get_chunk_info(i)
        scaled = [o // d for o, d in zip(c.chunk_offset, ds.chunks)]
        chunks.append([scaled, c.byte_offset, c.size, c.filter_mask])
    return {
        "header": h5py.h5o.get_info(ds.id).addr,
        "dims": list(ds.shape),
        "max_dims": [-1 if m is None else m for m in ds.maxshape],
        "chunk_dims": list(ds.chunks),
        "filtered": ds.id.get_create_plist().get_nfilters() > 0,
        "count": len(chunks),
        "digest": digest(sorted(chunks)),
        # A sample spelled out, so a failure shows something readable.
        "chunks": sorted(chunks)[:SAMPLE],
    }


def describe_contiguous(ds):
    return {
        "header": h5py.h5o.get_info(ds.id).addr,
        "address": ds.id.get_offset(),
        "size": ds.id.get_storage_size(),
    }


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..", "tests", "data", "corpus")
    expected = {}
    for rel in FILES:
        with h5py.File(os.path.join(corpus, rel), "r") as f:
            expected[rel] = {
                name: describe(ds)
                for name, ds in datasets(f)
                if ds.chunks is not None or ds.id.get_create_plist().get_layout() == h5py.h5d.CONTIGUOUS
            }
    with open("corpus_expected.json", "w") as fh:
        json.dump(expected, fh, separators=(",", ":"), sort_keys=True)


if __name__ == "__main__":
    main()
