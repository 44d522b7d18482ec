"""List every chunked dataset of the corpus (tests/data/corpus) with h5py's chunk count, for the
whole-corpus sweep test (one line per dataset: file, object header address, dims,
max dims (U = unlimited), number of filters, allocated chunks, name).

Run from this directory: python3 make_corpus_sweep.py [corpus dir]
"""
import glob
import os
import sys

import h5py


def chunked_datasets(f):
    found = []

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.chunks is not None:
            found.append((name, obj))

    f.visititems(visit)
    return found


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..", "tests", "data", "corpus")
    lines = []
    for path in sorted(glob.glob(os.path.join(corpus, "*", "*"))):
        try:
            f = h5py.File(path, "r")
        except OSError:
            continue  # not HDF5
        with f:
            for name, ds in chunked_datasets(f):
                dims = ",".join(map(str, ds.shape))
                max_dims = ",".join("U" if m is None else str(m) for m in ds.maxshape)
                nfilters = ds.id.get_create_plist().get_nfilters()
                addr = h5py.h5o.get_info(ds.id).addr
                rel = os.path.relpath(path, corpus)
                lines.append(f"{rel} {addr} {dims} {max_dims} {nfilters} {ds.id.get_num_chunks()} {name}")
    with open("corpus_sweep.txt", "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
