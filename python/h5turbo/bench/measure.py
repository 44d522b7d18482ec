"""Timing, CPU time, peak memory and page-cache control for the bench harness.

Also what every script in benchmarks/ shares:
the machine line of a report, the timing rule (a checked warm-up, then the median of
repeats), page-cache warming and the codec-only limit.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import platform
import resource
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

def machine() -> str:
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{model}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} {platform.release()}"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def median_time(read, repeats: int, check, before=None) -> tuple[float, list[float]]:
    """A warm-up whose result must pass `check`, then the median of `repeats` runs.
    `before` (untimed) runs ahead of each: `lambda: warm(path)` keeps a warm-cache
    measurement warm on machines that evict page cache while memory is free."""
    if before is not None:
        before()
    check(read())
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        result = read()
        times.append(time.perf_counter() - start)
        del result
    return statistics.median(times), times


def interleaved_times(reads: dict, rounds: int, check, before=None) -> dict:
    """Each reader's checked warm-up, then `rounds` rounds that time every reader once
    in turn: {name: [seconds per round]}. On a machine whose speed drifts (a shared
    VM), a slow minute then slows every reader of that round alike, so the ratio of
    two readers taken round by round (see `paired_ratio`) is steadier than the ratio
    of medians taken minutes apart."""
    for read in reads.values():
        if before is not None:
            before()
        check(read())
    times: dict = {name: [] for name in reads}
    for _ in range(rounds):
        for name, read in reads.items():
            if before is not None:
                before()
            start = time.perf_counter()
            result = read()
            times[name].append(time.perf_counter() - start)
            del result
    return times


def paired_ratio(base: list[float], other: list[float]) -> float:
    """The median over rounds of base / other (see `interleaved_times`)."""
    return statistics.median(b / o for b, o in zip(base, other))


def store_files(path: Path) -> list[Path]:
    """The files of a store: the file itself, or every file under a folder (zarr)."""
    path = Path(path)
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file())


def size_on_disk(path: Path) -> int:
    return sum(p.stat().st_size for p in store_files(path))


def warm(path: Path) -> None:
    """Read every byte once so the timed reads hit the page cache. Call it before every
    timed run, not once per reader: some virtual machines (this project's among them,
    measured 2026-11-22 with mincore) drop clean page cache at ~10 MB/s even with most
    memory free, so a 700 MB file read once is a third out of cache 40 s later."""
    for p in store_files(path):
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


# ---------------------------------------------------------------------- page cache

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_MAP_FAILED = ctypes.c_void_p(-1).value
PAGE = mmap.PAGESIZE


def resident_bytes(path: Path) -> tuple[int, int]:
    """(bytes in the page cache, bytes in all) of a file, by mincore(2) on a mapping."""
    size = os.path.getsize(path)
    if size == 0:
        return 0, 0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap failed on {path}")
        try:
            pages = (size + PAGE - 1) // PAGE
            vec = (ctypes.c_ubyte * pages)()
            if _libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore failed on {path}")
            resident = sum(b & 1 for b in bytes(vec))
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)
    return min(resident * PAGE, size), size


@dataclass
class Eviction:
    """The outcome of dropping a store from the page cache: how much stayed resident."""
    resident: int
    total: int
    error: str = ""

    @property
    def ok(self) -> bool:
        # a page or two can come back at once (metadata read by the next open); 1 % is noise
        return not self.error and self.resident <= max(2 * PAGE, self.total // 100)

    def note(self) -> str:
        if self.error:
            return f"eviction failed: {self.error}"
        if not self.ok:
            return f"eviction failed: {self.resident / max(self.total, 1):.0%} still resident"
        return ""


def evict(path: Path) -> Eviction:
    """Drop every file of a store from the page cache (fsync, then posix_fadvise
    DONTNEED), then check with mincore how much is still resident."""
    resident = total = 0
    try:
        for p in store_files(path):
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)  # dirty pages are not dropped: write them back first
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        for p in store_files(path):
            r, t = resident_bytes(p)
            resident, total = resident + r, total + t
    except (OSError, AttributeError) as exc:  # AttributeError: no posix_fadvise on this OS
        return Eviction(resident, total, str(exc))
    return Eviction(resident, total)


def disk_bandwidth(path: Path, block: int = 16 << 20) -> Optional[tuple[float, int, str]]:
    """Cold sequential read of a store: (seconds, bytes, note), or None for an empty one."""
    ev = evict(path)
    nbytes = 0
    start = time.perf_counter()
    for p in store_files(path):
        with open(p, "rb", buffering=0) as f:
            while True:
                got = f.read(block)
                if not got:
                    break
                nbytes += len(got)
    wall = time.perf_counter() - start
    return (wall, nbytes, ev.note()) if nbytes else None


# ---------------------------------------------------------------------- one measured run


@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    result: Any


class PeakRss:
    """Peak resident memory of this process during a run. Linux lets a process reset
    its high-water mark (/proc/self/clear_refs, 5); elsewhere a sampling thread."""

    def __init__(self):
        self._reset_ok = _reset_hwm()
        self._peak = 0
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        if not self._reset_ok:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self._peak = max(self._peak, _current_rss())

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.mb = (_hwm() if self._reset_ok else max(self._peak, _current_rss())) / 2**20
        return False


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _hwm() > 0
    except OSError:
        return False


def _status_kb(key: str) -> int:
    try:
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _hwm() -> int:
    return _status_kb("VmHWM:")


def _current_rss() -> int:
    rss = _status_kb("VmRSS:")
    return rss or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(run: Callable[[], Any]) -> Sample:
    """Wall time, CPU time (this process's threads and any child processes it waited
    for) and peak RSS of one call."""
    before = os.times()
    with PeakRss() as peak:
        start = time.perf_counter()
        result = run()
        wall = time.perf_counter() - start
    after = os.times()
    cpu = sum(a - b for a, b in zip(after[:4], before[:4]))
    return Sample(wall, cpu, peak.mb, result)


# ---------------------------------------------------------------------- codec-only limit


def codec_limit(path: Path, threads: int, repeats: int, dataset: str = "matrix") -> float | None:
    """Median seconds for decoding every chunk of `dataset` from memory on `threads`
    (the native module's codec_limit: chunks read into memory first, then decoded in
    parallel into a pre-faulted buffer). None, with the reason on stderr, when the
    dataset cannot be measured (not chunked, a filter h5turbo does not decode)."""
    from .. import _native
    try:
        return _native.codec_limit(str(path), dataset, threads, repeats)
    except _native.Error as exc:
        print(f"  codec limit not measured: {exc}", file=sys.stderr)
        return None

