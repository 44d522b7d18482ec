"""Mutants of real HDF5 files and a child-process harness that reads them.

Used by tests/robustness/test_robustness.py (and runnable by hand to replay a case):

    python tests/support/robust_mutants.py replay BASE_FILE SEED INDEX

Mutations aim at metadata: offsets of v1/v2 structures are found by scanning for
their signatures (and the v1 object header prefix), then bytes there are flipped,
set to boundary values or zeroed, files are truncated, and two files are spliced.

The worker (``python robust_mutants.py worker MANIFEST``) runs under an address-space
limit; for each mutant it prints ``START i``, walks and reads everything, then prints
``OK i`` or ``BAD i <why>``. A crash, hang or kill shows up to the parent as a
missing ``OK`` after ``START``.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

SIGNATURES = [b"OHDR", b"OCHK", b"TREE", b"HEAP", b"SNOD", b"BTHD", b"BTIN", b"BTLF",
              b"FRHP", b"FHDB", b"FHIB", b"FAHD", b"FADB", b"EAHD", b"EAIB", b"EASB",
              b"EADB", b"GCOL", b"\x89HDF\r\n\x1a\n"]
# v1 object header: version 1, reserved 0, message count (small), reference count 1.
V1_OHDR = re.compile(rb"\x01\x00[\x01-\x7f]\x00[\x01-\x04]\x00\x00\x00", re.DOTALL)
INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40,
               (1 << 63) - 1, (1 << 64) - 1]
KINDS = ["truncate", "flip", "value", "zero", "splice", "ohdr"]
MAX_READ_BYTES = 64 << 20    # read a dataset fully only below this (what a test reads)
MEMORY_LIMIT = 4 << 30       # RLIMIT_AS of the worker


def metadata_offsets(data: bytes) -> list[int]:
    """Offsets where metadata structures start (sorted, deduplicated)."""
    found = set()
    for sig in SIGNATURES:
        start = data.find(sig)
        while start >= 0:
            found.add(start)
            start = data.find(sig, start + 1)
    found.update(m.start() for m in V1_OHDR.finditer(data))
    return sorted(found)


def _near_metadata(rng: random.Random, data: bytes, offsets: list[int]) -> int:
    """A position inside the first 96 bytes of a metadata structure (or anywhere)."""
    if offsets and rng.random() < 0.9:
        return min(len(data) - 1, rng.choice(offsets) + rng.randrange(96))
    return rng.randrange(len(data))


def mutate(data: bytes, other: bytes, seed: int, kind: str) -> tuple[bytes, str]:
    """(mutant, description) of ``data``; deterministic in (data, other, seed, kind)."""
    rng = random.Random(seed)
    offsets = metadata_offsets(data)
    out = bytearray(data)
    if kind == "truncate":
        cut = _near_metadata(rng, data, offsets) if rng.random() < 0.7 else rng.randrange(len(data))
        return bytes(out[:cut]), f"truncate at {cut}"
    if kind == "flip":
        spots = [_near_metadata(rng, data, offsets) for _ in range(rng.randint(1, 4))]
        for pos in spots:
            out[pos] ^= 1 << rng.randrange(8)
        return bytes(out), f"flip bits at {spots}"
    if kind == "value":
        pos, width = _near_metadata(rng, data, offsets), rng.choice([1, 2, 4, 8])
        value = rng.choice(INTERESTING) & ((1 << (8 * width)) - 1)
        chunk = value.to_bytes(width, "little")[: len(out) - pos]
        out[pos:pos + len(chunk)] = chunk
        return bytes(out), f"set {width} bytes at {pos} to {value:#x}"
    if kind == "zero":
        pos, size = _near_metadata(rng, data, offsets), rng.choice([8, 16, 64, 512, 4096])
        out[pos:pos + size] = bytes(len(out[pos:pos + size]))
        return bytes(out), f"zero {size} bytes at {pos}"
    if kind == "ohdr":
        return mutate_ohdr(rng, data)
    cut = _near_metadata(rng, data, offsets)
    at = rng.randrange(len(other)) if rng.random() < 0.5 else min(cut, len(other) - 1)
    return bytes(out[:cut]) + other[at:], f"splice head[:{cut}] + other[{at}:]"


# ------------------------------------------------------------------ v2 object headers

def lookup3(data: bytes, initval: int = 0) -> int:
    """Bob Jenkins' lookup3 hashlittle, the checksum of HDF5's v2 metadata."""
    m = 0xFFFFFFFF
    rot = lambda x, k: ((x << k) | (x >> (32 - k))) & m  # noqa: E731
    a = b = c = (0xDEADBEEF + len(data) + initval) & m
    n, i = len(data), 0
    while n - i > 12:
        a = (a + int.from_bytes(data[i:i + 4], "little")) & m
        b = (b + int.from_bytes(data[i + 4:i + 8], "little")) & m
        c = (c + int.from_bytes(data[i + 8:i + 12], "little")) & m
        a = (a - c) & m; a ^= rot(c, 4); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 6); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 8); b = (b + a) & m  # noqa: E702
        a = (a - c) & m; a ^= rot(c, 16); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 19); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 4); b = (b + a) & m  # noqa: E702
        i += 12
    if n == i:
        return c
    tail = data[i:] + bytes(12 - (n - i))
    a = (a + int.from_bytes(tail[0:4], "little")) & m
    b = (b + int.from_bytes(tail[4:8], "little")) & m
    c = (c + int.from_bytes(tail[8:12], "little")) & m
    c ^= b; c = (c - rot(b, 14)) & m  # noqa: E702
    a ^= c; a = (a - rot(c, 11)) & m  # noqa: E702
    b ^= a; b = (b - rot(a, 25)) & m  # noqa: E702
    c ^= b; c = (c - rot(b, 16)) & m  # noqa: E702
    a ^= c; a = (a - rot(c, 4)) & m  # noqa: E702
    b ^= a; b = (b - rot(a, 14)) & m  # noqa: E702
    c ^= b; c = (c - rot(b, 24)) & m  # noqa: E702
    return c


def ohdr_extent(data: bytes, start: int):
    """(start, end) of a v2 object header's first chunk, checksum included, when its
    stored checksum verifies; else None."""
    if data[start + 4:start + 5] != b"\x02" or start + 8 > len(data):
        return None
    flags = data[start + 5]
    pos = start + 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
    width = 1 << (flags & 3)
    size = int.from_bytes(data[pos:pos + width], "little")
    end = pos + width + size + 4
    if end > len(data) or lookup3(data[start:end - 4]) != int.from_bytes(data[end - 4:end], "little"):
        return None
    return start, end


def mutate_ohdr(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A flip or boundary value inside a v2 object header's messages, checksum fixed up,
    so the message parsers (not the checksum) meet the damage."""
    starts = [m.start() for m in re.finditer(b"OHDR", data)]
    extents = [e for e in (ohdr_extent(data, s) for s in starts) if e]
    if not extents:
        return data[: rng.randrange(len(data))], "truncate (no v2 object header)"
    start, end = rng.choice(extents)
    out = bytearray(data)
    pos = rng.randrange(start + 6, end - 4)
    if rng.random() < 0.5:
        out[pos] ^= 1 << rng.randrange(8)
        what = f"flip a bit at {pos}"
    else:
        width = rng.choice([1, 2, 4, 8])
        chunk = (rng.choice(INTERESTING) & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        chunk = chunk[: end - 4 - pos]
        out[pos:pos + len(chunk)] = chunk
        what = f"set {len(chunk)} bytes at {pos} to {chunk.hex()}"
    out[end - 4:end] = lookup3(bytes(out[start:end - 4])).to_bytes(4, "little")
    return bytes(out), f"{what} in the object header at {start}, checksum fixed"


def make_mutants(bases: list[Path], count: int, seed: int, folder: Path) -> list[dict]:
    """Write ``count`` mutants of ``bases`` under ``folder``; their manifest entries."""
    rng = random.Random(seed)
    blobs = [p.read_bytes() for p in bases]
    entries = []
    for i in range(count):
        b, o = rng.randrange(len(blobs)), rng.randrange(len(blobs))
        kind, mseed = KINDS[i % len(KINDS)], rng.getrandbits(32)
        data, what = mutate(blobs[b], blobs[o], mseed, kind)
        path = folder / f"m{i:04d}.h5"
        path.write_bytes(data)
        entries.append({"path": str(path), "base": str(bases[b]), "other": str(bases[o]),
                        "seed": mseed, "kind": kind, "what": what})
    return entries


# --------------------------------------------------------------------------- worker

def _allowed():
    """What a damaged file may raise: h5turbo's errors, h5py's KeyError and ValueError,
    and FileNotFoundError for a file the dataset names that is not there (external raw
    data: libhdf5's tfilters.h5 /external), as for any file Python opens."""
    import h5turbo
    return (h5turbo.Error, KeyError, ValueError, FileNotFoundError)


def _read_dataset(ds) -> None:
    """Read fully (when of a size a caller would read) and a strided selection."""
    shape = ds.shape
    if shape is None:
        ds[()]
        return
    if ds.dtype.itemsize * _prod(shape) <= MAX_READ_BYTES:
        ds[()]
    if shape and all(n > 0 for n in shape):
        # A bounded strided block: a huge claimed shape must not size the output.
        ds[tuple(slice(n // 3, min(n, n // 3 + 64), 2) for n in shape)]
        ds[(slice(0, 1),) * len(shape)]


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _guarded(fn, *args):
    """Run one operation; an allowed error is an answer, anything else propagates."""
    try:
        return fn(*args)
    except _allowed() as exc:
        if not _panic_free(exc):  # a Rust panic caught at the binding boundary
            raise RuntimeError(f"panic: {exc}") from None
        return None


def _read_attrs(obj) -> None:
    names = _guarded(list, obj.attrs)
    for name in names or []:
        _guarded(obj.attrs.__getitem__, name)


def _walk(group, seen: set, depth: int) -> None:
    """Every object below ``group``: attributes, datasets, subgroups (each object once)."""
    import h5turbo
    _read_attrs(group)
    for name in _guarded(list, group) or []:
        obj = _guarded(group.__getitem__, name)
        if obj is None:
            continue
        address = obj._obj.address
        if address in seen or depth > 64:
            continue
        seen.add(address)
        _read_attrs(obj)
        if isinstance(obj, h5turbo.Dataset):
            _guarded(_read_dataset, obj)
            for prop in ("chunks", "compression", "fillvalue", "maxshape"):
                _guarded(getattr, obj, prop)
        elif isinstance(obj, h5turbo.Group):
            _walk(obj, seen, depth + 1)


def exercise(path: str) -> None:
    import h5turbo
    f = _guarded(h5turbo.File, path)
    if f is None:
        return
    with f:
        _walk(f, {f._obj.address}, 0)


def _panic_free(exc: BaseException) -> bool:
    return "internal error" not in str(exc)


def worker(manifest: str) -> None:
    """Exercise each mutant of the manifest, reporting START/OK/BAD lines."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    entries = json.loads(Path(manifest).read_text())
    for i, entry in entries:
        print(f"START {i}", flush=True)
        try:
            exercise(entry["path"])
            print(f"OK {i}", flush=True)
        except BaseException as exc:  # noqa: BLE001 (report any escape, MemoryError too)
            print(f"BAD {i} {type(exc).__name__}: {str(exc)[:300]!r}", flush=True)


def replay(base: str, other: str, seed: int, kind: str, out: str) -> None:
    """Rebuild one mutant from its manifest entry and exercise it in this process."""
    data, what = mutate(Path(base).read_bytes(), Path(other).read_bytes(), seed, kind)
    Path(out).write_bytes(data)
    print(what)
    exercise(out)
    print("ok")


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(sys.argv[2])
    elif sys.argv[1] == "replay":
        replay(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
