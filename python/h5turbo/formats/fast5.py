"""Oxford Nanopore fast5 files: every read's raw signal, channel and attributes.

``read_fast5(paths)`` walks single-read files (``Raw/Reads/Read_<n>/Signal``,
``UniqueGlobalKey/channel_id``; v0.6 to 2.x) and multi-read files
(``read_<id>/Raw/Signal``, ``read_<id>/channel_id``; groups may be hard links),
gzip or vbz compressed, and yields the reads in file order. Files are listed and
signals decoded on a thread pool (the native reads release the GIL); at most a
window of work is in flight, so memory stays bounded however many files there are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Union

import numpy as np

from .. import _native
from .._attrs import _h5py_value
from ._window import in_order

__all__ = ["read_fast5", "Fast5Read", "Fast5Error"]

PathLike = Union[str, "os.PathLike[str]"]

# Reads per decoding task: big enough that task overhead vanishes, small enough that
# a multi-read file of thousands of reads spreads over every thread.
READS_PER_TASK = 8


class Fast5Error(_native.Error):
    """A fast5 file or one of its reads could not be read. ``read_fast5`` yields it
    in the read's (or the file's) place, or raises it with ``on_error="raise"``.

    ``path``: the file; ``read_id``: the read, or None when the whole file failed;
    ``problem``: what went wrong (the message of the underlying error)."""

    def __init__(self, path: str, problem: str, read_id: str | None = None):
        problem = problem.removeprefix(f"{path}: ")  # native errors already name the file
        where = f"{path}: read {read_id}" if read_id else str(path)
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.read_id = read_id
        self.problem = problem


@dataclass(frozen=True, eq=False)
class Fast5Read:
    """One read. ``signal``: the raw int16 samples (DAQ values, unscaled);
    ``channel``: the ``channel_id`` attributes as ont_fast5_api's ``get_channel_info``
    gives them (digitisation, offset, range, sampling_rate as floats, channel_number
    as int), or None when the file has no ``channel_id`` group; ``attrs``: the
    attributes of the read's raw group (read_number, start_time, duration, ...) with
    h5py's value types."""

    path: str
    read_id: str
    signal: np.ndarray
    channel: dict[str, Any] | None
    attrs: dict[str, Any]

    def __repr__(self) -> str:
        return f"<Fast5Read {self.read_id} ({self.signal.size} samples) of {self.path}>"


def read_fast5(paths: PathLike | Iterable[PathLike], threads: int | None = None,
               on_error: str = "yield") -> Iterator[Fast5Read | Fast5Error]:
    """Yield every read of the given fast5 files, in file order then read order.

    paths: a file, a directory (its ``*.fast5`` files, recursively, in name order) or
    an iterable of those. threads: worker threads (default: ``h5turbo.default_threads()``).
    on_error: ``"yield"`` (default) puts a :class:`Fast5Error` naming the file (and
    read) where the read(s) would have been and goes on with the others; ``"raise"``
    raises it and stops.
    """
    if on_error not in ("yield", "raise"):
        raise ValueError(f"on_error must be 'yield' or 'raise', not {on_error!r}")
    threads = threads if threads and threads > 0 else _native.default_threads()
    window = 4 * threads
    pool = ThreadPoolExecutor(threads, thread_name_prefix="h5turbo-fast5")
    try:
        listings = in_order(pool, (partial(_list_file, p) for p in _expand(paths)), window)
        tasks = (task for listing in listings for task in _read_tasks(listing))
        for items in in_order(pool, tasks, window):
            for item in items:
                if isinstance(item, Fast5Error) and on_error == "raise":
                    raise item
                yield item
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _expand(paths: PathLike | Iterable[PathLike]) -> Iterator[str]:
    """File paths in order: a directory stands for its *.fast5 files (recursively)."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    for p in paths:
        p = os.fsdecode(p)
        if os.path.isdir(p):
            yield from (str(f) for f in sorted(Path(p).rglob("*.fast5")) if f.is_file())
        else:
            yield p


@dataclass
class _Listing:
    """An open file and where its reads are: (read group, raw group, channel group)."""

    path: str
    file: Any
    reads: list[tuple[Any, Any, Any]]


def _list_file(path: str) -> _Listing | Fast5Error:
    try:
        f = _native.File(path)
        root = f.get("/")
        names = [name for name, kind, _ in root.links() if kind != "external"]
        if _is_multi_read(root, names):
            reads = [_multi_read_groups(root, n) for n in names if n.startswith("read_")]
        else:
            reads = _single_read_groups(f, root, names)
        return _Listing(path, f, reads)
    except FileNotFoundError:
        return Fast5Error(path, "no such file")
    except (_native.Error, OSError, KeyError, ValueError) as exc:
        return Fast5Error(path, _problem(exc))


def _is_multi_read(root, names: list[str]) -> bool:
    """As ont_fast5_api decides: the file_type attribute, else the top-level groups."""
    if "file_type" in root.attr_names():
        kind = _clean(root.attr("file_type"))
        if kind in ("multi-read", "single-read"):
            return kind == "multi-read"
        raise _native.UnsupportedError(f"fast5 file_type {kind!r} (only single-read and multi-read)")
    if not names or any(n.startswith("read_") for n in names):
        return True
    if "UniqueGlobalKey" in names:
        return False
    raise _native.FormatError("neither a single-read (UniqueGlobalKey) nor a multi-read (read_*) fast5 file")


def _multi_read_groups(root, name: str) -> tuple[Any, Any, Any]:
    group = root.child(name)
    return group, _child_or_none(group, "Raw"), _child_or_none(group, "channel_id")


def _single_read_groups(f, root, names: list[str]) -> list[tuple[Any, Any, Any]]:
    channel = _child_or_none(f.get("/UniqueGlobalKey"), "channel_id")
    if "Raw" not in names:
        raise KeyError("no Raw/Reads group (a file without raw signal)")
    reads = f.get("/Raw/Reads")
    return [(g, g, channel) for g in (reads.child(n) for n, kind, _ in reads.links() if kind != "external")]


def _child_or_none(group, name: str):
    try:
        return group.child(name)
    except KeyError:
        return None


def _read_tasks(listing: _Listing | Fast5Error) -> Iterator[Callable[[], list]]:
    if isinstance(listing, Fast5Error):
        yield lambda: [listing]
        return
    if not listing.reads:
        return
    for start in range(0, len(listing.reads), READS_PER_TASK):
        yield partial(_read_batch, listing, listing.reads[start:start + READS_PER_TASK])


def _read_batch(listing: _Listing, groups: list[tuple[Any, Any, Any]]) -> list[Fast5Read | Fast5Error]:
    return [_read_one(listing.path, *g) for g in groups]


def _read_one(path: str, group, raw, channel) -> Fast5Read | Fast5Error:
    read_id = None
    try:
        if raw is None:
            raise KeyError("no Raw group")
        attrs = {name: _h5py_value(raw.attr(name)) for name in raw.attr_names()}
        read_id = _clean(attrs["read_id"]) if "read_id" in attrs else _name_id(group.name)
        signal = _signal(raw)
        return Fast5Read(path, read_id, signal, _channel_info(channel), attrs)
    except (_native.Error, OSError, KeyError, ValueError) as exc:
        return Fast5Error(path, _problem(exc), read_id or _name_id(group.name))


def _signal(raw) -> np.ndarray:
    try:
        ds = raw.child("Signal")
    except KeyError:
        raise KeyError("no Raw Signal dataset") from None
    if ds.kind != "dataset" or ds.shape is None or len(ds.shape) != 1:
        raise _native.FormatError(f"Signal is not a 1-D dataset (shape {ds.shape})")
    out = np.empty(ds.shape, dtype=ds.dtype)
    ds.read([(0, ds.shape[0], 1)], out, 1)
    return out


def _channel_info(channel) -> dict[str, Any] | None:
    """ont_fast5_api's get_channel_info: numpy scalars to Python, bytes to str, and
    channel_number as int (files store it as a string)."""
    if channel is None:
        return None
    info = {name: _clean(channel.attr(name)) for name in channel.attr_names()}
    if "channel_number" in info:
        info["channel_number"] = int(info["channel_number"])
    return info


def _clean(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return np.char.decode(value).tolist() if value.dtype.kind == "S" else value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    return value.decode() if isinstance(value, bytes) else value


def _name_id(name: str) -> str:
    """A read's id from its group name (read_<id>, Read_<n>) when it has no read_id."""
    last = name.rsplit("/", 1)[-1]
    return last[5:] if last.startswith("read_") else last


def _problem(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc) or type(exc).__name__
