"""Damaged copies of HDF5/fast5 files for broken_test (standard library only).

python make_broken.py OUTDIR FILE...

Per source: truncations (inside the superblock, inside the metadata, at 30% and 70%,
one byte short) and eight copies with 32 bytes overwritten at seeded random offsets;
besides: an empty file, 4 KiB of random bytes, and the HDF5 signature followed by
random bytes. Prints the paths written, one a line.
"""

import random
import sys
from pathlib import Path

SIGNATURE = b"\x89HDF\r\n\x1a\n"


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261123)
    written = []

    def write(name, data):
        path = out / name
        path.write_bytes(data)
        written.append(path)

    write("empty.h5", b"")
    write("garbage.h5", rng.randbytes(4096))
    write("signature_then_garbage.h5", SIGNATURE + rng.randbytes(4088))
    for n, source in enumerate(map(Path, sys.argv[2:])):
        data = source.read_bytes()
        stem = f"{n:02d}_{source.stem}"
        suffix = source.suffix
        for cut in sorted({64, 600, len(data) * 3 // 10, len(data) * 7 // 10, len(data) - 1}):
            if 0 < cut < len(data):
                write(f"{stem}.cut{cut}{suffix}", data[:cut])
        for k in range(8):
            damaged = bytearray(data)
            # half the damage in the first 4 KiB, where the metadata usually is
            limit = min(len(data), 4096) if k % 2 == 0 else len(data)
            at = rng.randrange(0, max(1, limit - 32))
            damaged[at:at + 32] = rng.randbytes(32)
            write(f"{stem}.hit{k}_{at}{suffix}", bytes(damaged))
    print("\n".join(map(str, written)))


if __name__ == "__main__":
    main()
