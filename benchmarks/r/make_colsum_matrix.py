"""Writes the R column-sum experiment's matrix once: 30000 x 20000 int32, random
1..100, chunks 100 x 100, gzip level 3 (issue 15). About 1 GB; minutes to write.

    python benchmarks/r/make_colsum_matrix.py [path]   (default ~/.cache/h5turbo/colsum_100x100.h5)
"""
import os
import sys

import h5py
import numpy as np

ROWS, COLS, CHUNK = 30000, 20000, 100


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/h5turbo/colsum_100x100.h5")
    if os.path.exists(path):
        print(path, "exists")
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rng = np.random.default_rng(2024)
    tmp = path + ".part"
    with h5py.File(tmp, "w") as f:
        ds = f.create_dataset("counts", shape=(ROWS, COLS), dtype="i4", chunks=(CHUNK, CHUNK),
                              compression="gzip", compression_opts=3)
        for start in range(0, ROWS, CHUNK):   # one row of chunks at a time: whole chunks written once
            ds[start:start + CHUNK] = rng.integers(1, 101, size=(CHUNK, COLS), dtype="i4")
    os.replace(tmp, path)
    print("wrote", path)


if __name__ == "__main__":
    main()
