"""Seed corpora for the fuzz targets, under fuzz/corpus/TARGET/.

open_read: the files of tests/data/corpus (up to 1 MB each).
decode_FAMILY: the first stored chunk of every one-filter dataset, from the corpus and
from small files written here with h5py (+ hdf5plugin), prefixed with the header the
decode targets parse (src/lib.rs: element size - 1, decoded size, client data).

    python3 fuzz/seed_corpus.py [CORPUS_DIR]
"""

from __future__ import annotations

import shutil
import struct
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
FAMILIES = {1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset",
            307: "bzip2", 32000: "lzf", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle",
            32015: "zstd", 32020: "vbz"}
MAX_SEED_FILE = 1 << 20


def decode_seed(dset, chunk: bytes, cd: tuple) -> bytes:
    out_len = int(np.prod(dset.chunks)) * dset.dtype.itemsize
    head = struct.pack("<BIB", dset.dtype.itemsize - 1, out_len, len(cd[:32]))
    return head + b"".join(struct.pack("<I", v & 0xFFFFFFFF) for v in cd[:32]) + chunk


def chunk_seeds(path: Path):
    """(family, seed bytes) for every one-filter chunked dataset of an HDF5 file."""
    found = []

    def visit(_name, obj):
        if not isinstance(obj, h5py.Dataset) or obj.chunks is None or obj.dtype.itemsize > 256:
            return
        plist = obj.id.get_create_plist()
        if plist.get_nfilters() != 1 or obj.id.get_num_chunks() == 0:
            return
        code, _flags, cd, _name = plist.get_filter(0)
        if code in FAMILIES:
            offset = obj.id.get_chunk_info(0).chunk_offset
            _mask, chunk = obj.id.read_direct_chunk(offset)
            found.append((FAMILIES[code], decode_seed(obj, chunk, cd)))
    try:
        with h5py.File(path, "r") as f:
            f.visititems(visit)
    except Exception:  # noqa: BLE001 (a corpus file h5py cannot walk gives no seeds)
        pass
    return found


def generated(folder: Path) -> Path:
    """One file with a dataset per filter h5py and hdf5plugin can write."""
    import hdf5plugin
    rng = np.random.default_rng(3)
    ints = rng.integers(0, 1000, (64, 64)).astype("<i4")
    floats = rng.standard_normal((64, 64)).astype("<f4")
    path = folder / "filters.h5"
    specs = {"gzip": dict(compression="gzip"), "lzf": dict(compression="lzf"),
             "shuffle": dict(shuffle=True), "fletcher32": dict(fletcher32=True),
             "scaleoffset": dict(scaleoffset=0), "zstd": hdf5plugin.Zstd(),
             "lz4": hdf5plugin.LZ4(), "bzip2": hdf5plugin.BZip2(),
             "blosc": hdf5plugin.Blosc(), "bitshuffle": hdf5plugin.Bitshuffle(),
             "bitshuffle_zstd": hdf5plugin.Bitshuffle(cname="zstd")}
    with h5py.File(path, "w") as f:
        for name, opts in specs.items():
            f.create_dataset(name, data=ints, chunks=(16, 32), **dict(opts))
            f.create_dataset(name + "_f", data=floats, chunks=(16, 32), **dict(opts)) \
                if name != "scaleoffset" else None
    return path


# Families h5py cannot write here: one hand-made seed each, with typical client data
# (nbit: 8 parameters of an atomic 12-bit int; szip: NN + MSB, 32 pixels a block).
SYNTHETIC = {"nbit": (4, 512 * 4, (8, 0, 512, 1, 4, 0, 12, 0)),
             "szip": (4, 512 * 4, (141, 32, 32, 512))}


def synthetic_seed(elem: int, out_len: int, cd: tuple) -> bytes:
    head = struct.pack("<BIB", elem - 1, out_len, len(cd))
    body = bytes(np.random.default_rng(1).integers(0, 256, 768, dtype=np.uint8))
    return head + b"".join(struct.pack("<I", v) for v in cd) + body


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent / "tests" / "data" / "corpus"
    out = HERE / "corpus"
    files = sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix != ".md")
    (out / "open_read").mkdir(parents=True, exist_ok=True)
    for p in files:
        if p.stat().st_size <= MAX_SEED_FILE:
            shutil.copy(p, out / "open_read" / f"{p.parent.name}_{p.name}")
    with tempfile.TemporaryDirectory() as tmp:
        sources = files + [generated(Path(tmp))]
        counts: dict[str, int] = {}
        for path in sources:
            for family, seed in chunk_seeds(path):
                folder = out / f"decode_{family}"
                folder.mkdir(exist_ok=True)
                counts[family] = counts.get(family, 0) + 1
                (folder / f"{path.stem}_{counts[family]}").write_bytes(seed)
    for family, (elem, out_len, cd) in SYNTHETIC.items():
        folder = out / f"decode_{family}"
        folder.mkdir(exist_ok=True)
        (folder / "synthetic").write_bytes(synthetic_seed(elem, out_len, cd))
    print({k: v for k, v in sorted(counts.items())}, "decode seeds;",
          len(list((out / "open_read").iterdir())), "open_read seeds")


if __name__ == "__main__":
    main()
