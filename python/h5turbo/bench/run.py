"""Runs a Config: writes the stores, measures every (strategy, layout, pattern,
threads, cache) with warm-ups and repeats, verifies every result, and measures the
reference rows (disk bandwidth, codec decode-only throughput)."""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from . import measure
from .patterns import Read, pattern as make_pattern, verify
from .presets import Config
from .strategies import (BY_NAME, Layout, Strategy, Unsupported, dataset_name, remove, run_in_processes,
                         writer_of)

# Expected results are kept between repeats and strategies up to this many bytes.
EXPECTED_CACHE_BYTES = 1 << 30


@dataclass
class Row:
    strategy: str
    layout: str
    pattern: str
    threads: int
    cache: str
    rep: Optional[int] = None
    wall_s: Optional[float] = None
    cpu_s: Optional[float] = None
    peak_rss_mb: Optional[float] = None
    bytes: Optional[int] = None
    bytes_on_disk: Optional[int] = None
    gbps: Optional[float] = None
    limit_gbps: Optional[float] = None
    fraction_of_limit: Optional[float] = None
    verified: bool = False
    status: str = "ok"  # ok, unverified, failed, skipped, reference
    note: str = ""


COLUMNS = list(Row.__dataclass_fields__)


@dataclass
class Task:
    strategy: Strategy
    layout: Layout
    pattern: str
    threads: int
    cache: str


@dataclass
class Outcome:
    rows: list = field(default_factory=list)
    estimate_s: float = 0.0
    elapsed_s: float = 0.0
    load_before: str = ""
    load_after: str = ""
    started: str = ""


# Rough throughputs (GB/s of the logical matrix) for the time estimate only.
_ASSUMED_GBPS = {"h5turbo": 0.6, "h5py": 0.15, "hidefix": 0.4, "zarr-python": 0.1, "zarr-python+zarrs": 0.3,
                 "tensorstore": 0.3, "numpy-memmap": 1.0, "sqlite": 0.05, "parquet": 0.2}


def _first_line(exc: BaseException) -> str:
    cause = exc.__cause__ or exc  # zarrs wraps the useful message
    return f"{type(cause).__name__}: {(str(cause).splitlines() or [''])[0][:160]}"


class Runner:
    def __init__(self, cfg: Config, out: Path, progress: bool = True, log=sys.stderr,
                 workdir: Optional[Path] = None):
        self.cfg, self.out, self.progress, self.log = cfg, Path(out), progress, log
        # the stores live outside the results folder (they are big; results get committed)
        self.stores = Path(workdir) if workdir else self.out / "stores"
        self.rows: list[Row] = []
        self._expected: dict = {}
        self._expected_bytes = 0

    # ------------------------------------------------------------------ planning

    def strategies(self) -> list[Strategy]:
        out = []
        for name in self.cfg.strategies:
            if name not in BY_NAME:
                raise ValueError(f"unknown strategy {name!r}; one of {', '.join(BY_NAME)}")
            out.append(BY_NAME[name])
        return out

    def _skip(self, s: Strategy, layout: str, why: str, pattern: str = "*") -> None:
        self.rows.append(Row(s.name, layout, pattern, 0, "-", status="skipped", note=why))

    def plan(self) -> list[Task]:
        tasks = []
        for s in self.strategies():
            why = s.missing()
            if why:
                self._skip(s, "*", why)
                continue
            for lay in s.layouts(self.cfg.layouts):
                why = s.unsupported(lay, self.cfg.source)
                if why:
                    self._skip(s, lay.name, why)
                    continue
                tasks += self._tasks_for(s, lay)
        return tasks

    def _tasks_for(self, s: Strategy, lay: Layout) -> list[Task]:
        tasks = []
        for p in self.cfg.patterns:
            if p == "write":
                tasks.append(Task(s, lay, p, (os.cpu_count() or 1) if s.parallel_write else 1, "-"))
                continue
            threads = [_fixed_threads(s)] if s.thread_mode == "fixed" else self.cfg.threads
            tasks += [Task(s, lay, p, t, c) for t in threads for c in self.cfg.caches]
        return tasks

    def estimate(self, tasks: list[Task]) -> float:
        """Seconds, from assumed throughputs: a rough guide printed before the run."""
        src = self.cfg.source
        runs = self.cfg.warmups + self.cfg.repeats
        total = 0.0
        for t in tasks:
            gbps = _ASSUMED_GBPS.get(t.strategy.name, 0.1) * (min(t.threads, 4) if t.strategy.thread_mode != "fixed" else 1)
            if t.layout.kind == "sqlite-cells":
                gbps = 0.005
            share = 1.0 if t.pattern in ("write", "read_all", "colsums", "rowsums") else 0.1
            per_run = src.nbytes * share / (gbps * 1e9) + 0.01 + (0.1 if t.strategy.thread_mode == "processes" else 0)
            if t.pattern == "write":
                per_run *= 3
            total += per_run * runs
        stores = {(t.strategy.family, t.layout) for t in tasks}
        return total + len(stores) * src.nbytes / 0.05e9

    # ------------------------------------------------------------------ stores

    def store(self, s: Strategy, lay: Layout) -> Path:
        """The shared store of a strategy's family and layout, written once per run
        (or reused from an earlier run into the same folder: a stamp names its source)."""
        if self.cfg.user_file:
            return Path(self.cfg.user_file)
        path = s.store_path(self.stores, lay)
        stamp = path.with_name(path.name + ".done")
        if path.exists() and stamp.exists() and stamp.read_text() == self.cfg.source.describe():
            return path
        remove(path)
        self.stores.mkdir(parents=True, exist_ok=True)
        try:
            writer_of(s.family).write(path, self.cfg.source, lay)
        except BaseException:  # a store begun and not finished would sit in the workdir
            remove(path)
            raise
        stamp.write_text(self.cfg.source.describe())
        return path

    # ------------------------------------------------------------------ measuring

    def expected(self, key, ops) -> list:
        if key in self._expected:
            return self._expected[key]
        values = [op.expected(self.cfg.source) for op in ops]
        size = sum(_size(v) for v in values)
        if self._expected_bytes + size <= EXPECTED_CACHE_BYTES:
            self._expected[key] = values
            self._expected_bytes += size
        return values

    def pattern_chunks(self, lay: Layout) -> tuple:
        """The chunk shape a pattern aligns to: the layout's, or for unchunked stores
        (raw, SQLite, Parquet) the preset's first chunked layout's, so that every
        strategy runs the same operations."""
        if lay.kind == "chunked":
            return lay.chunks
        chunked = [other for other in self.cfg.layouts if other.kind == "chunked"]
        return chunked[0].chunks if chunked else (self.cfg.source.rows, self.cfg.source.cols)

    def run_task(self, task: Task) -> None:
        try:
            if task.pattern == "write":
                self._measure_write(task)
            else:
                self._measure_read(task)
        except Unsupported as exc:
            self._skip(task.strategy, task.layout.name, str(exc), task.pattern)
        except Exception as exc:  # a library failing on this layout: the row says so
            self.rows.append(Row(task.strategy.name, task.layout.name, task.pattern, task.threads, task.cache,
                                 status="failed", note=_first_line(exc)))

    def _measure_read(self, task: Task) -> None:
        s, lay, src = task.strategy, task.layout, self.cfg.source
        path = self.store(s, lay)
        pat = make_pattern(task.pattern, self.cfg.row_block)
        ops = pat.ops(src.shape, self.pattern_chunks(lay))
        expected = self.expected((task.pattern, self.pattern_chunks(lay)), ops)
        nbytes = sum(op.nbytes(src) for op in ops)
        on_disk = measure.size_on_disk(path)
        procs = s.thread_mode == "processes" and task.threads > 1
        note = s.fixed_note if s.thread_mode == "fixed" else (
            f"{task.threads} forked processes" if procs else "")

        def once():
            """Each run opens the store: library caches (libhdf5 keeps decoded chunks,
            8 MiB by default in HDF5 2.0) start empty, so repeats measure reads, not a cache."""
            if procs:
                return run_in_processes(s, path, src, lay, ops, task.threads)
            reader = s.open(path, src, lay, task.threads)
            try:
                return [reader.run(op) for op in ops]
            finally:
                reader.close()

        for rep in range(-self.cfg.warmups, self.cfg.repeats):
            if task.cache == "warm":  # before every run: see measure.warm
                measure.warm(path)
            evict_note = measure.evict(path).note() if task.cache == "cold" else ""
            sample = measure.measure(once)
            ok, why = self._verify(sample.result, expected, ops)
            if rep < 0:
                continue
            row = Row(s.name, lay.name, task.pattern, task.threads, task.cache, rep, sample.wall_s, sample.cpu_s,
                      sample.peak_rss_mb, nbytes, on_disk, nbytes / sample.wall_s / 1e9 if sample.wall_s else None,
                      verified=ok, status="ok" if ok else "unverified",
                      note="; ".join(x for x in (why, evict_note, note) if x))
            self.rows.append(row)

    def _verify(self, results, expected, ops) -> tuple[bool, str]:
        for res, exp, op in zip(results, expected, ops):
            ok, why = verify(res, exp, op)
            if not ok:
                return False, f"verification failed: {why}"
        return True, ""

    def _measure_write(self, task: Task) -> None:
        s, lay, src = task.strategy, task.layout, self.cfg.source
        if not s.writes:
            raise Unsupported(f"{s.name} does not write")
        folder = self.stores / "write"
        folder.mkdir(parents=True, exist_ok=True)
        path = s.store_path(folder, lay)
        for rep in range(-self.cfg.warmups, self.cfg.repeats):
            remove(path)
            sample = measure.measure(lambda: s.write(path, src, lay))
            on_disk = measure.size_on_disk(path)
            ok, why = self._verify_store(s, path, lay)
            if rep >= 0:
                self.rows.append(Row(s.name, lay.name, "write", task.threads, "-", rep, sample.wall_s, sample.cpu_s,
                                     sample.peak_rss_mb, src.nbytes, on_disk, src.nbytes / sample.wall_s / 1e9,
                                     verified=ok, status="ok" if ok else "unverified", note=why))
        remove(path)

    def _verify_store(self, s: Strategy, path: Path, lay: Layout) -> tuple[bool, str]:
        """Read a written store back, block by block, with the strategy's own reader
        (h5turbo's writes are read back with h5py)."""
        reader_strategy = BY_NAME["h5py"] if s.name == "h5turbo" else s
        reader = reader_strategy.open(path, self.cfg.source, lay, 1)
        try:
            for start, block in self.cfg.source.blocks(64 << 20 // max(1, self.cfg.source.cols)):
                op = Read(slice(start, start + len(block)), slice(0, self.cfg.source.cols))
                ok, why = verify(reader.run(op), block, op)
                if not ok:
                    return False, f"read-back verification failed: {why}"
        finally:
            reader.close()
        return True, ""

    # ------------------------------------------------------------------ references

    def references(self, tasks: list[Task]) -> None:
        """Disk sequential read bandwidth (limit of cold rows) and codec decode-only
        throughput of each HDF5 layout (limit of warm rows), then each row's fraction."""
        stores = {}
        for t in tasks:
            if t.pattern != "write":
                try:
                    stores[(t.strategy.family, t.layout)] = self.store(t.strategy, t.layout)
                except Exception:
                    pass
        disk = self._disk_reference(stores)
        codec = self._codec_references(stores) if "warm" in self.cfg.caches else {}
        src_bytes = self.cfg.source.nbytes
        for row in self.rows:
            if row.status not in ("ok", "unverified") or row.pattern == "write" or not row.gbps:
                continue
            if row.cache == "cold" and disk:
                ratio = (row.bytes_on_disk or src_bytes) / src_bytes
                row.limit_gbps = disk / max(ratio, 1e-9)  # logical bytes per second the disk can feed
            elif row.cache == "warm":
                row.limit_gbps = codec.get((row.layout, row.threads))
            if row.limit_gbps:
                row.fraction_of_limit = row.gbps / row.limit_gbps

    def _disk_reference(self, stores: dict) -> Optional[float]:
        if "cold" not in self.cfg.caches or not stores:
            return None
        path = max(stores.values(), key=measure.size_on_disk)
        runs = [measure.disk_bandwidth(path) for _ in range(max(1, self.cfg.repeats))]
        runs = [r for r in runs if r]
        for rep, (wall, nbytes, note) in enumerate(runs):
            self.rows.append(Row("ref:disk", path.name, "sequential_read", 1, "cold", rep, wall, None, None, nbytes,
                                 nbytes, nbytes / wall / 1e9, verified=True, status="reference",
                                 note=note or "cold sequential read of the largest store, 16 MiB reads"))
        return statistics.median(nbytes / wall / 1e9 for wall, nbytes, _ in runs) if runs else None

    def _codec_references(self, stores: dict) -> dict:
        out = {}
        src = self.cfg.source
        threads = sorted(set(self.cfg.threads) | {os.cpu_count() or 1})
        for (family, lay), path in stores.items():
            if family != "hdf5":
                continue
            for t in threads:
                median = measure.codec_limit(path, t, max(1, self.cfg.repeats), dataset_name(src))
                if median is None:  # the reason went to stderr
                    self.rows.append(Row("ref:codec", lay.name, "decode_only", t, "warm", status="skipped",
                                         note="codec_limit not measured (see the run's log)"))
                    return out
                gbps = src.nbytes / median / 1e9
                out[(lay.name, t)] = gbps
                self.rows.append(Row("ref:codec", lay.name, "decode_only", t, "warm", 0, median, None, None,
                                     src.nbytes, measure.size_on_disk(path), gbps, verified=True, status="reference",
                                     note=f"every chunk decoded from memory, median of {max(1, self.cfg.repeats)}"))
        # zarr stores with the same layout use the same codecs: the same limit applies
        return out

    # ------------------------------------------------------------------ all of it

    def run(self) -> Outcome:
        outcome = Outcome(load_before=measure.load_average(),
                          started=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        tasks = self.plan()
        outcome.estimate_s = self.estimate(tasks)
        print(f"h5turbo bench {self.cfg.name}: {len(tasks)} measurements x "
              f"({self.cfg.warmups} warm-up + {self.cfg.repeats} repeats); estimated {_duration(outcome.estimate_s)}"
              " (rough, from assumed speeds)", file=self.log, flush=True)
        start = time.perf_counter()
        bar = _progress(len(tasks), self.progress, self.log)
        for task in tasks:
            bar.set_description(f"{task.strategy.name} {task.layout.name} {task.pattern} t{task.threads} {task.cache}",
                                refresh=False)
            self.run_task(task)
            bar.update(1)
        bar.close()
        if self.cfg.limits:
            self.references(tasks)
        outcome.rows = self.rows
        outcome.elapsed_s = time.perf_counter() - start
        outcome.load_after = measure.load_average()
        return outcome


def _fixed_threads(s: Strategy) -> int:
    """The thread count a row of a strategy that chooses its own reports: the one it
    runs on, or for a library's own pool the cores."""
    return s.fixed_threads or os.cpu_count() or 1


def _size(value) -> int:
    """Bytes of an expected result: an ndarray, or a scipy sparse matrix's arrays."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    return sum(getattr(value, a).nbytes for a in ("data", "indices", "indptr") if hasattr(value, a))


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


class _NoBar:
    def set_description(self, *_, **__):
        pass

    def update(self, *_):
        pass

    def close(self):
        pass


def _progress(total: int, enabled: bool, log):
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, file=log, unit="run", dynamic_ncols=True, mininterval=1.0)
