"""Oxford Nanopore fast5 files: every read's raw signal, channel and attributes.

``read_fast5(paths)`` walks single-read files (``Raw/Reads/Read_<n>/Signal``,
``UniqueGlobalKey/channel_id``; v0.6 to 2.x) and multi-read files
(``read_<id>/Raw/Signal``, ``read_<id>/channel_id``; groups may be hard links),
gzip or vbz compressed, and yields the reads in file order. Files are listed and
signals decoded on a thread pool (the native reads release the GIL); at most a
window of work is in flight, so memory stays bounded however many files there are.
``Fast5Index(paths)`` fetches reads by id, in any order (``get_read``, ``get_reads``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any, Union

import numpy as np

from .. import _native
from ..objects.dataset import pool_threads
from ..objects.values import attribute_value
from ..readahead import parse_io_depth
from ..workers import WorkerPool
from ._window import Ready, in_order

__all__ = ["read_fast5", "Fast5Index", "Fast5Read", "Fast5Error"]

PathLike = Union[str, "os.PathLike[str]"]

# Work per native call: enough that the call and thread hand-over costs vanish,
# little enough that a window of calls in flight stays a few tens of MB. A call
# takes the first FIRST_READS reads of FILES_PER_TASK files; a multi-read file's
# remaining reads go READS_PER_TASK per call.
FILES_PER_TASK = 16
FIRST_READS = 16
READS_PER_TASK = 64
# Files up to this size are grouped (the native side reads them whole, as single-read
# files are); a larger one is a multi-read file and has a task of its own.
SMALL_FILE_BYTES = 1 << 20

# The pool read_fast5 uses when neither `threads` nor H5TURBO_THREADS names a count: at
# most this many. Measured on 16 cores (benchmarks/results/scaling.md), read_fast5 was
# fastest at 4 (single-read files) to 8 threads (multi-read) and slower at 16: each pool
# thread's allocator heap zeroes huge pages of its own, which grows with the threads.
DEFAULT_MAX_THREADS = 8


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

    def __reduce__(self):
        # rebuilt from its parts (the default, from the one-message args, failed in the
        # receiving process and broke a ProcessPoolExecutor)
        return (type(self), (self.path, self.problem, self.read_id))


@dataclass(frozen=True, eq=False)
class Fast5Read:
    """One read. ``read_id``: a multi-read file's group name less ``read_`` (as
    ont_fast5_api and :class:`Fast5Index` name it), a single-read file's ``read_id``
    attribute (an integer one in decimal; where it has none, in files before format
    1.1, the file's name, as ont_fast5_api names it; in later files such a read is a
    :class:`Fast5Error`); ``signal``: the raw int16 samples (DAQ values, unscaled);
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
               on_error: str = "yield", io_depth: int | str | None = None) -> Iterator[Fast5Read | Fast5Error]:
    """Yield every read of the given fast5 files, in file order then read order.

    paths: a file, a directory (its ``*.fast5`` files, recursively, in name order) or
    an iterable of those. threads: worker threads (default: ``H5TURBO_THREADS`` if set,
    else every core up to 8: more were slower, see ``DEFAULT_MAX_THREADS``).
    on_error: ``"yield"`` (default) puts a :class:`Fast5Error` naming the file (and
    read) where the read(s) would have been and goes on with the others; ``"raise"``
    raises it and stops. io_depth: bytes of the next files (and of each file's signals)
    fetched ahead while the current ones decode (an int or "64M"; 0: none; default
    ``H5TURBO_IO_DEPTH`` or 32 MiB; see :func:`h5turbo.io_depth`).
    """
    # checked here, at the call (the reads below start at the first next())
    _check_on_error(on_error)
    _check_not_a_file_object(paths)
    return _read_fast5(paths, _threads(threads), on_error, parse_io_depth(io_depth))


def _read_fast5(paths, threads: int, on_error: str, depth: int | None) -> Iterator[Fast5Read | Fast5Error]:
    # Each task in flight may hold its files open: stay within the descriptors left.
    window = max(1, min(2 * threads, _descriptor_budget() // FILES_PER_TASK))
    pool = WorkerPool(threads, "h5turbo-fast5")
    owner = os.getpid()
    try:
        yield from _checked_items(_reads_in_order(pool, _expand(paths), window, depth), on_error, owner, "read_fast5")
    finally:
        pool.shutdown(cancel_futures=True)  # no wait in a forked child or a worker


# Read ids Fast5Index.get_reads looks up and fetches together (its memory: two such
# groups of reads in flight).
IDS_PER_ROUND = 512


class Fast5Index:
    """The reads of fast5 files by read id, fetched in any order (as f5c and bonito take
    them, from a BAM or a list of ids): ont_fast5_api's ``get_read`` over many files.

    paths: as for :func:`read_fast5` (files, directories, or an iterable of those). Every
    file's read ids are read once, here, in parallel: a multi-read file's from its group
    names (``read_<id>``), a single-read file's from its ``read_id`` attribute. A file
    that cannot be indexed is left out (``unindexed`` says how many, and why;
    ``unindexed_files`` lists them); when two
    files hold the same id, the first wins. threads and io_depth: as for read_fast5.

    A fetch opens the read's file and looks its group up by name: a multi-read file is
    not listed again. The index holds the ids natively (about 100 bytes per read). It
    pickles as its list of files, indexed again where it is unpickled (a spawned worker)."""

    def __init__(self, paths: PathLike | Iterable[PathLike], threads: int | None = None,
                 io_depth: int | str | None = None):
        self._threads = _threads(threads)
        self._depth = parse_io_depth(io_depth)
        _check_not_a_file_object(paths)
        self._paths = list(_expand(paths))
        self._index = _native.Fast5ReadIndex(self._paths, self._threads)

    @property
    def paths(self) -> list[str]:
        """The files indexed, in order."""
        return list(self._paths)

    @property
    def read_ids(self) -> list[str]:
        """Every read id, in file order then read order."""
        return self._index.read_ids()

    @property
    def unindexed(self) -> tuple[int, str | None]:
        """How many files could not be indexed, and the first one's error."""
        return self._index.unindexed()

    @property
    def unindexed_files(self) -> list[tuple[str, str]]:
        """Each file that could not be indexed, in file order, with its error."""
        return [(self._paths[k], problem) for k, problem in self._index.unindexed_files()]

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, read_id: object) -> bool:
        return isinstance(read_id, str) and read_id in self._index

    def __repr__(self) -> str:
        return f"<Fast5Index: {len(self)} reads in {len(self._paths)} files>"

    def __reduce__(self):
        # to another process (spawn workers, dask): its files, indexed again there (the
        # ids as they are then: about 0.1 ms a file)
        return (Fast5Index, (self._paths, self._threads, self._depth))

    def get_read(self, read_id: str) -> Fast5Read:
        """The read `read_id`, read on the calling thread. KeyError when no file holds
        it; Fast5Error when its file or group cannot be read."""
        [item] = self._fetch([read_id])
        if isinstance(item, Fast5Error):
            raise item
        return item

    def get_reads(self, read_ids: Iterable[str], on_error: str = "yield",
                  order: str = "asked") -> Iterator[Fast5Read | Fast5Error]:
        """The reads `read_ids` (an id may repeat), decoded on the thread pool: the ids
        are taken IDS_PER_ROUND at a time, each round's files opened once and read in
        file order while the round before is yielded. order: "asked" (default) yields
        them in the order of `read_ids`, and an id that no file holds raises KeyError
        (naming it) when its round is reached; "file" yields them in file order (a
        selection of reads, as pod5's ``reads(selection)``: each file is then opened
        once per READS_PER_TASK of its reads, not in every round), every id looked
        up first. on_error: as for read_fast5 (a read that cannot be read is a
        Fast5Error in its place, or raised)."""
        _check_on_error(on_error)
        if order not in ("asked", "file"):
            raise ValueError(f"order must be 'asked' or 'file', not {order!r}")
        if isinstance(read_ids, (str, bytes)):  # one id would be taken as its characters
            raise TypeError("get_reads takes an iterable of read ids; for one id, call get_read")
        ids = iter(self._in_file_order(read_ids) if order == "file" else read_ids)
        return self._reads_by_id(ids, on_error)

    def _reads_by_id(self, ids: Iterator[str], on_error: str) -> Iterator[Fast5Read | Fast5Error]:
        rounds = iter(lambda: list(islice(ids, IDS_PER_ROUND)), [])
        # Each task running may hold its files open: as many at once as the descriptors
        # left allow (a round's tasks are all submitted; the pool's size bounds them).
        workers = max(1, min(self._threads, _descriptor_budget() // FILES_PER_TASK))
        pool = WorkerPool(workers, "h5turbo-fast5")
        owner = os.getpid()
        try:
            ahead = None
            for asked in rounds:
                try:
                    started = self._start_round(pool, [_checked_id(i) for i in asked])
                except (KeyError, TypeError):
                    # an id of this round no file holds (or not a str): the round started
                    # before it was asked before it, and comes first
                    if ahead is not None:
                        yield from _checked_items(_round_results(*ahead), on_error, owner, "Fast5Index.get_reads")
                    raise
                if ahead is not None:
                    yield from _checked_items(_round_results(*ahead), on_error, owner, "Fast5Index.get_reads")
                ahead = started
            if ahead is not None:
                yield from _checked_items(_round_results(*ahead), on_error, owner, "Fast5Index.get_reads")
        finally:
            pool.shutdown(cancel_futures=True)  # no wait in a forked child or a worker

    def _in_file_order(self, read_ids: Iterable[str]) -> list[str]:
        """The ids sorted by file, then by place in the file (KeyError for one no file holds)."""
        ids = [_checked_id(i) for i in read_ids]
        places = self._index.find(ids)
        return [ids[k] for k in sorted(range(len(ids)), key=lambda k: places[k][:2])]

    def _fetch(self, read_ids: list[str]) -> list:
        """The reads, in order, fetched on the calling thread."""
        return _round_results(*self._start_round(None, [_checked_id(i) for i in read_ids]))

    def _start_round(self, pool: WorkerPool | None, asked: list[str]) -> tuple[int, list]:
        """Submit the fetches of `asked` (by file, in file order; single-read files
        FILES_PER_TASK to a task, a multi-read file's reads READS_PER_TASK to a task);
        returns the round's size and [(places in `asked`, future or result)]."""
        by_file: dict[int, list[tuple[int, int, bool]]] = {}
        for at, (file_no, read, multi) in enumerate(self._index.find(asked)):
            by_file.setdefault(file_no, []).append((at, read, multi))
        tasks: list[tuple[list[int], list]] = []
        small: tuple[list[int], list] = ([], [])
        for file_no in sorted(by_file):
            reads = by_file[file_no]
            path, multi = self._paths[file_no], reads[0][2]
            step = READS_PER_TASK if multi else len(reads)
            for first in range(0, len(reads), step):
                part = reads[first:first + step]
                job = (path, multi, [(asked[at], read) for at, read, _ in part])
                if multi:
                    tasks.append(([at for at, _, _ in part], [job]))
                    continue
                small[0].extend(at for at, _, _ in part)
                small[1].append(job)
                if len(small[1]) == FILES_PER_TASK:
                    tasks.append(small)
                    small = ([], [])
        if small[1]:
            tasks.append(small)
        submitted = []
        for places, jobs in tasks:
            # Small (single-read) files are read whole: hinting a task's files lets the
            # disk fetch them together. A multi-read file is not hinted: its reads asked
            # are a few scattered ones, and hinting it whole for each of them re-read
            # (cold) or re-walked (warm) the whole file every round.
            depth = 0 if jobs[0][1] else self._depth
            run = partial(_native.fast5_fetch, jobs, io_depth=depth)
            submitted.append((places, jobs, pool.submit(run) if pool else run()))
        return len(asked), submitted


def _check_on_error(on_error: str) -> None:
    if on_error not in ("yield", "raise"):
        raise ValueError(f"on_error must be 'yield' or 'raise', not {on_error!r}")


def _threads(threads: int | None) -> int:
    """A positive thread count, or the default for None (0 too, as before)."""
    return pool_threads(threads, _default_threads)


def _checked_id(read_id: object) -> str:
    if not isinstance(read_id, str):
        raise TypeError(f"a read id is a str, not {type(read_id).__name__}: {read_id!r}")
    return read_id


def _round_results(size: int, tasks: list) -> list:
    """A round's reads (or errors) in the order asked: a file that cannot be read is an
    error in the place of each read asked of it."""
    out: list = [None] * size
    for places, jobs, result in tasks:
        results = result.result() if isinstance(result, Future) else result
        items: list = []
        for (path, _, asked), (_, error, reads, _) in zip(jobs, results):
            if error is not None:
                items.extend(Fast5Error(path, error, read_id) for read_id, _ in asked)
            else:
                # each read carries the id it was fetched by
                items.extend(_reads(path, reads, [read_id for read_id, _ in asked]))
        if len(items) != len(places):  # the native side gives one read per id asked
            raise RuntimeError(f"fast5_fetch gave {len(items)} reads for {len(places)} ids")
        for at, item in zip(places, items):
            out[at] = item
    return out


def _checked_items(items: Iterable, on_error: str, owner: int, caller: str) -> Iterator:
    """`items` with a Fast5Error raised under on_error="raise"; `caller` (the function
    whose iterator this is) is named when a forked child goes on with it."""
    for item in items:
        if isinstance(item, Fast5Error) and on_error == "raise":
            raise item
        yield item
        if os.getpid() != owner:
            # a forked child has the pool's queue but none of its threads: it would
            # wait for ever for the next read
            raise RuntimeError(f"a {caller} iterator cannot go on in a forked child process; "
                               f"call {caller} again in the child")


def _default_threads() -> int:
    """H5TURBO_THREADS when it names a count (a positive number, as the core reads it),
    else the cores up to DEFAULT_MAX_THREADS."""
    named = os.environ.get("H5TURBO_THREADS", "").strip()
    if named.isdigit() and int(named) > 0:
        return _native.default_threads()
    return min(_native.default_threads(), DEFAULT_MAX_THREADS)


def _descriptor_budget() -> int:
    """Half the file descriptors this process may still open (the rest stays the
    caller's): RLIMIT_NOFILE less those open now."""
    try:
        import resource
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 1 << 30
    if soft == resource.RLIM_INFINITY:
        return 1 << 30
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:
        used = 64  # a guess where /proc is missing
    return max(FILES_PER_TASK, (soft - used) // 2)


def _check_not_a_file_object(paths) -> None:
    """A file object is iterable (its lines), which would read as paths: refused."""
    if hasattr(paths, "read") or hasattr(paths, "readinto"):
        raise TypeError("fast5 reads take paths (str, bytes, os.PathLike: files or directories, or an "
                        f"iterable of them), not a file object: {paths!r}")


def _expand(paths: PathLike | Iterable[PathLike]) -> Iterator[str]:
    """File paths in order: a directory stands for its *.fast5 files (recursively)."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    for p in paths:
        p = os.fsdecode(p)
        if os.path.isdir(p):
            yield from _fast5_under(p, set(), top=True)
        else:
            yield p


def _fast5_under(folder: str, seen: set, top: bool = False) -> Iterator[str]:
    """The *.fast5 files under `folder`, by name (as bytes, as the C walk sorts them),
    depth first. Links to folders are followed (a run's sub-folders often live on other
    disks; ont_fast5_api follows them too), each folder walked once, so a link back up
    the tree lists nothing twice. A sub-folder that cannot be listed is yielded itself,
    to fail as that entry's error instead of vanishing from the count; the folder given
    failing is the caller's error. Anything else named *.fast5, a link that leads
    nowhere included, is yielded too. A stack of its own, not recursion: any depth."""
    stack = [iter([(folder, True)])]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        path, is_folder = item
        if not is_folder:
            yield path
            continue
        try:
            info = os.stat(path)
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            with os.scandir(path) as listing:
                entries = sorted(listing, key=lambda e: os.fsencode(e.name))
        except OSError:
            if top and len(stack) == 1:  # the folder given
                raise
            yield path
            continue
        found = ((e.path, _is_folder(e)) for e in entries)
        stack.append(iter([(entry, is_dir) for entry, is_dir in found if is_dir or entry.endswith(".fast5")]))


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows links; costs no stat where the listing gives the type
    except OSError:
        return False


def _reads_in_order(pool: WorkerPool, paths: Iterator[str], window: int, depth: int | None) -> Iterator:
    """Files go to the native reader in groups (their first reads each); the reads a
    multi-read file has beyond those become further tasks in the same ordered stream,
    so the pool stays busy across file boundaries. Reading ahead: a group of small
    files is hinted by its own task (all its files at once); large files are hinted by
    one thread in reading order, `depth` bytes beyond the farthest task started (when
    their tasks hinted them, tasks far apart reached the disk interleaved and the first
    reads came last)."""
    depth = _native.io_depth() if depth is None else depth
    hints = _native.FileHints(depth)
    owner = os.getpid()
    try:
        for items in in_order(pool, _tasks(pool, paths, window, depth, hints), window):
            yield from items
    finally:
        if os.getpid() == owner:  # a forked child has no hinting thread to stop
            hints.close()


@dataclass
class _Group:
    """Files whose first reads one task takes: small files, or one large file (then
    `size` is its size). `number`: the large file's number in the hinting thread's
    stream, or for small files the number the next large file will have (the task
    is just before it)."""
    paths: list[str]
    number: int
    size: int
    large: bool


def _tasks(pool: WorkerPool, paths: Iterator[str], window: int, depth: int,
           hints: _native.FileHints) -> Iterator:
    """Ready lists of reads and native tasks for the rest, in output order."""
    grouping = _Grouping(paths, hints)
    for group, results in _group_results(pool, grouping.groups(), hints, window, depth):
        ready: list = []
        for path, (total, error, reads, version) in results:
            ready.extend([Fast5Error(path, error)] if error is not None else _reads(path, reads))
            if error is None and total > FIRST_READS:
                yield Ready(ready)
                ready = []
                if not group.large:  # a multi-read file among small ones: hinted by its tasks
                    grouping.measure_every_file = True
                place = (group.number, total) if group.large else None
                yield from (partial(_more_reads, path, first, version, hints, place, depth)
                            for first in range(FIRST_READS, total, READS_PER_TASK))
        yield Ready(ready)


def _group_results(pool: WorkerPool, groups: Iterator[_Group], hints: _native.FileHints,
                   window: int, depth: int) -> Iterator[tuple[_Group, list]]:
    """Each group with its task's results, in order: at most `window` tasks in flight,
    and, with reading ahead on, no more once the large files waiting hold `depth` bytes
    (a multi-read file's later reads must not wait behind the first reads of files far
    ahead)."""
    pending: deque = deque()
    held = 0
    for group in groups:
        jobs = [(p, 0, FIRST_READS, None) for p in group.paths]
        where = (group.number, 0, 1)
        pending.append((group, pool.submit(_native_task, jobs, hints, where, 0 if group.large else depth)))
        held += group.size
        while pending and (len(pending) >= window or 0 < depth <= held):
            done, future = pending.popleft()
            held -= done.size
            yield done, future.result()
    while pending:
        done, future = pending.popleft()
        yield done, future.result()


class _Grouping:
    """Paths into groups: a large (multi-read) file alone, pushed to the hinting thread;
    else up to FILES_PER_TASK small files. At first only a group's first file is
    measured (a stat per file was 5-8 % of a warm single-read walk on 2 cores); once a
    group of small files turns out to hold a multi-read file (a folder mixing sizes),
    every file is, so that large files keep their own tasks and ordered hints."""

    def __init__(self, paths: Iterator[str], hints: _native.FileHints):
        self.paths = iter(paths)
        self.hints = hints
        self.measure_every_file = False
        self.upcoming = 0  # the number the next large file will have

    def groups(self) -> Iterator[_Group]:
        small: list[str] = []
        for path in self.paths:
            size = _size(path) if not small or self.measure_every_file else 0
            if size > SMALL_FILE_BYTES:
                if small:
                    yield self._small(small)
                    small = []
                number = self.hints.push(path)
                self.upcoming = number + 1
                yield _Group([path], number, size, large=True)
                continue
            small.append(path)
            if len(small) == FILES_PER_TASK:
                yield self._small(small)
                small = []
        if small:
            yield self._small(small)

    def _small(self, paths: list[str]) -> _Group:
        return _Group(paths, self.upcoming, 0, large=False)


def _size(path: str) -> int:
    """A file's size, 0 where it cannot be had (its task then reports why)."""
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0


def _more_reads(path: str, first: int, version: tuple, hints: _native.FileHints,
                place: tuple[int, int] | None, depth: int) -> list:
    """Reads from `first` on of the file as its first task opened it (`version`: one
    replaced or rewritten since is an error, not another file's reads); `place`: (the
    file's number, its reads) when it is with the hinting thread, else the task hints
    the file itself, `depth` bytes."""
    where = (place[0], first, place[1]) if place else None
    job = (path, first, READS_PER_TASK, version)
    [(_, (_, error, reads, _))] = _native_task([job], hints, where, 0 if place else depth)
    return [Fast5Error(path, error)] if error is not None else list(_reads(path, reads))


def _native_task(jobs: list[tuple[str, int, int, tuple | None]], hints: _native.FileHints,
                 where: tuple[int, int, int] | None, depth: int) -> list:
    """Runs on a pool thread; the native side releases the GIL while it reads. The
    hinting thread learns where this task starts (file number, reads done, reads);
    the task itself hints its files `depth` bytes ahead (0 for large files: the
    hinting thread has them)."""
    if where is not None:
        hints.reached(*where)
    return list(zip((path for path, *_ in jobs), _native.fast5_reads(jobs, depth)))


def _reads(path: str, reads: list, asked: list[str] | None = None) -> Iterator[Fast5Read | Fast5Error]:
    """The reads (or errors) of one file's native results; `asked`: the ids they were
    fetched by, which they then carry."""
    for k, (name, signal, attrs, channel, error, read_id, done) in enumerate(reads):
        if not done:  # a value the native side left to the general path
            attrs = {key: attribute_value(value) for key, value in attrs.items()} if attrs is not None else None
        # the native side names a read as Fast5Index does (a multi-read file's by its
        # group's link name, a legacy single-read file's without read_id by the file's
        # name); None: a single-read file's read_id is absent (or neither text nor an
        # integer), a read the index leaves out (as ont_fast5_api refuses it): no made-up id
        if asked is not None:
            read_id = asked[k]
        if read_id is None and error is None:
            error = f"{name}: the read has no read_id attribute (a string)"
        if error is not None:
            yield Fast5Error(path, error, read_id)
            continue
        try:
            if not done and channel is not None:
                channel = {key: _clean(value) for key, value in channel.items()}
            channel = _channel_info(channel)
        except ValueError as exc:  # a channel_number that is not a number, text not UTF-8
            yield Fast5Error(path, f"channel_id: {exc}", read_id)
            continue
        yield Fast5Read(path, read_id, signal, channel, attrs)


def _channel_info(channel: dict | None) -> dict[str, Any] | None:
    """ont_fast5_api's get_channel_info (values already plain Python: see _clean):
    channel_number as int (files store it as a string)."""
    if channel is not None and "channel_number" in channel:
        channel["channel_number"] = int(channel["channel_number"])
    return channel


def _clean(value: Any) -> Any:
    """A channel value as ont_fast5_api gives it: numpy scalars to Python, bytes to
    str (the native side does this itself for scalar numbers and UTF-8 strings)."""
    if isinstance(value, np.ndarray):
        return np.char.decode(value).tolist() if value.dtype.kind == "S" else value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    return value.decode() if isinstance(value, bytes) else value
