"""The read-ahead window (``io_depth``): how many bytes beyond those being decoded
h5turbo asks the system to fetch while it decodes (see docs: "Cold reads").

Default: ``H5TURBO_IO_DEPTH`` (bytes, with an optional K, M or G suffix) if set, else
32 MiB. 0 turns reading ahead off. The setting of a ``with h5turbo.io_depth(...)``
block applies to reads started on the calling thread inside it, on any read path
(datasets, reductions, sparse matrices, read_h5ad ...)."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator, Optional, Union

import numpy as np

from . import _native
from .workers import WorkerPool

_UNITS = {"": 0, "K": 10, "M": 20, "G": 30}


def parse_io_depth(value: Union[int, str, None]) -> Optional[int]:
    """Bytes from an int (numpy's too) or a string such as "64M" / "512KiB"; None stays
    None. ValueError naming io_depth for anything else, and past 2**64 - 1 bytes."""
    if value is None:
        return None
    if isinstance(value, str):
        # the grammar of the native H5TURBO_IO_DEPTH parser: ASCII digits, then B, or K,
        # M, G with an optional B or iB (\d took other scripts' digits, and "64iB")
        m = re.fullmatch(r"\s*([0-9]+)\s*(?:([KMG])(?:I?B)?|B)?\s*", value.upper())
        if not m:
            raise ValueError(f"io_depth must be a byte count such as 33554432 or '32M', not {value!r}")
        return _at_most_u64(int(m.group(1)) << _UNITS[m.group(2) or ""], value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"io_depth must be a byte count >= 0 (or a string such as '32M'), not {value!r}")
    return _at_most_u64(int(value), value)


def _at_most_u64(depth: int, given) -> int:
    if depth >= 2**64:
        raise ValueError(f"io_depth {given!r} is past the largest byte count, 2**64 - 1")
    return depth


@contextmanager
def io_depth(value: Union[int, str, None]) -> Iterator[int]:
    """Read ahead ``value`` bytes (an int, or "64M"; 0: off; None: the default) for
    reads started on this thread inside the block; yields the window in force."""
    previous = _native.swap_io_depth(parse_io_depth(value))
    try:
        yield _native.io_depth()
    finally:
        _native.swap_io_depth(previous)


def reading_pool(workers: int) -> WorkerPool:
    """A thread pool whose threads read with the io_depth in force on the calling thread:
    a ``with io_depth(...)`` block sets it for its own thread only, and the reads a
    sparse matrix or a 10x file hands to helper threads are the block's reads too."""
    override = _native.swap_io_depth(None)
    _native.swap_io_depth(override)
    return WorkerPool(workers, initializer=_native.swap_io_depth, initargs=(override,))
