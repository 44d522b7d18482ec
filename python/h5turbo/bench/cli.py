"""The ``h5turbo bench`` subcommand: arguments to a Config, run it, write the outputs."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from . import measure
from . import report
from .patterns import ALL as ALL_PATTERNS
from .presets import CACHES, Config, PRESETS, preset
from .run import Runner
from .source import GENERATORS, Source
from .strategies import ALL as ALL_STRATEGIES, BY_NAME, parse_layout


class BenchUsageError(Exception):
    """Bad arguments: one line, exit status 1."""


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "bench", help="benchmark readers and storage layouts on this machine",
        description="Strategies x layouts x access patterns x threads x cold/warm page cache, every "
        "result verified. Writes results.csv, report.md and PNG plots into --out.")
    p.add_argument("--preset", help=f"one of {', '.join(PRESETS)}")
    p.add_argument("--shape", help="matrix ROWSxCOLS to generate (instead of a preset's)")
    p.add_argument("--dtype", help="numpy dtype of the generated matrix (default int32)")
    p.add_argument("--generator", choices=sorted(GENERATORS), help="how values are generated (default randint)")
    p.add_argument("--file", help="your own HDF5 file (with --dataset): measured with the HDF5 strategies")
    p.add_argument("--dataset", help="a 2-D dataset in --file")
    p.add_argument("--layouts", help="comma-separated CHUNKSxCHUNKS[:CODEC[LEVEL][:shuffle]], e.g. "
                   "'100x100:gzip3,1x500:lzf:shuffle,64x64'")
    p.add_argument("--strategies", help=f"comma-separated, of {', '.join(BY_NAME)}")
    p.add_argument("--patterns", help=f"comma-separated, of {', '.join(ALL_PATTERNS)}")
    p.add_argument("--threads", help="comma-separated thread counts (default 1, 2, 4 ... cores)")
    p.add_argument("--cache", choices=["cold", "warm", "both"], help="page-cache states (default both)")
    p.add_argument("--repeats", type=int, help="timed runs per measurement (after one warm-up)")
    p.add_argument("--scale", type=float, default=1.0, help="quick and h5ad presets: shrink the matrix (tests)")
    p.add_argument("--no-limits", action="store_true", help="skip the reference rows (disk, codec decode-only)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true",
                   help="print the result rows (results.csv's columns) as JSON on stdout")
    p.add_argument("-o", "--out", default="bench-results", help="output folder (default ./bench-results)")
    p.add_argument("--workdir", help="where the stores are written (default: ~/.cache/h5turbo/bench/PRESET; "
                   "reused by later runs of the same matrix)")
    p.set_defaults(run=cmd_bench)
    return p


def _list(text, convert=str):
    return [convert(x.strip()) for x in text.split(",") if x.strip()] if text else None


def config_from(args) -> Config:
    try:
        if args.file:
            return _user_file_config(args)
        if args.preset:
            if not (math.isfinite(args.scale) and args.scale > 0):
                raise BenchUsageError(f"--scale {args.scale}: give a positive factor of the preset's matrix (0.1 shrinks it)")
            cfg = preset(args.preset, args.scale)
        elif args.shape:
            cfg = replace(preset("quick"), name="custom", description="a user-given matrix")
        else:
            raise BenchUsageError("give --preset NAME, --shape ROWSxCOLS, or --file PATH --dataset NAME")
        if args.shape or args.dtype or args.generator:
            if args.dtype:
                _number_dtype(args.dtype)
            rows, cols = _shape(args.shape) if args.shape else cfg.source.shape
            cfg = replace(cfg, source=Source(rows, cols, args.dtype or cfg.source.dtype,
                                             args.generator or cfg.source.generator))
        cfg = _overrides(cfg, args)
        if args.layouts:
            _check_layouts_fit(cfg)
        else:
            cfg = _layouts_clipped(cfg)
        return cfg
    except ValueError as exc:
        raise BenchUsageError(str(exc)) from None


def _number_dtype(text: str) -> None:
    import numpy as np
    try:
        kind = np.dtype(text).kind
    except TypeError:
        kind = None
    if kind not in ("i", "u", "f"):
        raise BenchUsageError(f"bad --dtype {text!r}: a numpy integer or float type, e.g. int32, float64")


def _threads(text: str) -> list[int]:
    try:
        counts = _list(text, int)
    except ValueError:
        counts = None
    if not counts or min(counts) < 1:
        raise BenchUsageError(f"bad --threads {text!r}: comma-separated counts of at least 1, e.g. 1,2,8")
    return counts


def _shape(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise BenchUsageError(f"bad --shape {text!r}: ROWSxCOLS, e.g. 10000x500") from None
    return rows, cols


def _check_layouts_fit(cfg: Config) -> None:
    """Chunks no larger than the matrix: HDF5 refuses such a dataset, so every row
    would fail after the store was begun."""
    rows, cols = cfg.source.shape
    for lay in cfg.layouts:
        if lay.kind == "chunked" and (lay.chunks[0] > rows or lay.chunks[1] > cols):
            raise BenchUsageError(f"layout {lay.name}: chunks {lay.chunks[0]}x{lay.chunks[1]} are larger "
                                  f"than the {rows}x{cols} matrix (give --layouts with smaller chunks)")


def _layouts_clipped(cfg: Config) -> Config:
    """A preset's own layouts on a --shape smaller than its chunks: each chunk clipped
    to the matrix (as h5turbo.demo does), the same layout twice kept once."""
    rows, cols = cfg.source.shape
    layouts = []
    for lay in cfg.layouts:
        if lay.kind == "chunked":
            lay = replace(lay, chunks=(min(lay.chunks[0], rows), min(lay.chunks[1], cols)))
        if lay not in layouts:
            layouts.append(lay)
    return replace(cfg, layouts=layouts)


def _overrides(cfg: Config, args) -> Config:
    changes = {}
    if args.layouts:
        changes["layouts"] = [parse_layout(t) for t in _list(args.layouts)]
    if args.strategies:
        changes["strategies"] = _list(args.strategies)
        unknown = [s for s in changes["strategies"] if s not in BY_NAME]
        if unknown:
            raise BenchUsageError(f"unknown strategy {unknown[0]!r}; one of {', '.join(BY_NAME)}")
    if args.patterns:
        changes["patterns"] = _list(args.patterns)
        unknown = [p for p in changes["patterns"] if p not in ALL_PATTERNS]
        if unknown:
            raise BenchUsageError(f"unknown pattern {unknown[0]!r}; one of {', '.join(ALL_PATTERNS)}")
    if args.threads:
        changes["threads"] = _threads(args.threads)
    if args.cache:
        changes["caches"] = CACHES if args.cache == "both" else (args.cache,)
    if args.repeats is not None:
        if args.repeats < 1:
            raise BenchUsageError(f"--repeats {args.repeats}: give at least 1 timed run")
        changes["repeats"] = args.repeats
    if args.no_limits:
        changes["limits"] = False
    return replace(cfg, **changes)


def _user_file_config(args) -> Config:
    """Your own file: its dataset is the source (values read with h5py, the reference),
    measured in place with the HDF5 strategies; no write pattern."""
    from .source import FileSource
    if not args.dataset:
        raise BenchUsageError("--file needs --dataset NAME")
    generated = [f"--{name}" for name in _GENERATED_ONLY if getattr(args, name)]
    if generated:  # they would label rows with a layout or shape that was never read
        raise BenchUsageError(f"--file measures the dataset as it is stored: not with {', '.join(generated)}, "
                              "which describe a generated matrix (h5turbo repack writes other layouts)")
    src = FileSource(args.file, args.dataset)
    cfg = Config("file", src, [src.layout()], [p for p in ALL_PATTERNS if p != "write"],
                 strategies=list(HDF5_READERS), description=f"{args.file}:{args.dataset}",
                 user_file=args.file)
    cfg = _overrides(cfg, args)
    if "write" in cfg.patterns:
        raise BenchUsageError("--file: the write pattern needs a generated matrix")
    unreadable = [name for name in cfg.strategies if name not in HDF5_READERS]
    if unreadable:
        raise BenchUsageError(f"--file: {', '.join(unreadable)} cannot read an HDF5 file; "
                              f"with --file use {', '.join(HDF5_READERS)}")
    return cfg


# The options that describe a generated matrix, refused with --file.
_GENERATED_ONLY = ("preset", "shape", "dtype", "generator", "layouts")
# The strategies that read a 2-D dataset of an HDF5 file (the others read stores of
# their own, or an AnnData group).
HDF5_READERS = tuple(s.name for s in ALL_STRATEGIES if s.family == "hdf5")


def cache_dir() -> Path:
    from ..demo import cache_dir as cache
    return cache() / "bench"


def versions() -> str:
    parts = []
    for dist in ("h5turbo", "h5py", "hidefix", "zarr", "zarrs", "tensorstore", "pyarrow", "numpy"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            if dist == "h5turbo":
                parts.append("h5turbo (source tree)")
    return ", ".join(parts)


# The pip extra that installs what `h5turbo bench` may use.
BENCH_EXTRA = "pip install 'h5turbo[bench]'"


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def check_dependencies(cfg: Config, args, log) -> None:
    """Before anything runs: h5py is required (it writes the stores and reads the
    reference values); without matplotlib the report is written without plots, without
    tqdm without a progress bar; strategies whose library is missing are named, with
    the extra that installs them, and skipped."""
    if not _importable("h5py"):
        raise BenchUsageError(f"h5turbo bench needs h5py (it writes the stores and the reference): {BENCH_EXTRA}")
    if not args.no_plots and not _importable("matplotlib"):
        args.no_plots = True
        print(f"matplotlib is not installed: the report is written without plots ({BENCH_EXTRA})", file=log)
    if not args.no_progress and not _importable("tqdm"):
        print(f"tqdm is not installed: no progress bar ({BENCH_EXTRA})", file=log)
    missing = [name for name in cfg.strategies if BY_NAME[name].missing()]
    if missing:
        print(f"skipped, their libraries are not installed: {', '.join(missing)} ({BENCH_EXTRA})", file=log)


def cmd_bench(args, out) -> None:
    cfg = config_from(args)
    check_dependencies(cfg, args, sys.stderr)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    workdir = Path(args.workdir) if args.workdir else cache_dir() / cfg.name
    outcome = Runner(cfg, folder, progress=not args.no_progress, workdir=workdir).run()
    report.write_csv(outcome.rows, folder / "results.csv")
    command = "h5turbo " + shlex.join(sys.argv[1:] if args.argv is None else args.argv)
    report.write_markdown(outcome, cfg, folder / "report.md", command, measure.machine(), versions())
    if not args.no_plots:
        report.plot_all(outcome.rows, folder)
    if args.json:
        json.dump([report.row_record(row) for row in outcome.rows], out, indent=1)
        print(file=out)
        return
    bad = sum(r.status == "unverified" for r in outcome.rows)
    print(f"{len(outcome.rows)} rows in {folder / 'results.csv'}; report {folder / 'report.md'}; "
          f"took {outcome.elapsed_s:.0f} s (estimated {outcome.estimate_s:.0f} s)"
          + (f"; {bad} UNVERIFIED rows" if bad else ""), file=out)
