"""Output of a run: a tidy results.csv, report.md with the summary tables, and plots."""

from __future__ import annotations

import csv
import datetime
import shlex
import statistics
from collections import defaultdict
from pathlib import Path

from .measure import machine
from .patterns import DESCRIPTIONS
from .run import COLUMNS, Outcome, Row

KEY = ("strategy", "layout", "pattern", "threads", "cache")


def write_csv(rows: list[Row], path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for row in rows:
            w.writerow({k: _csv_value(getattr(row, k)) for k in COLUMNS})


def row_record(row: Row) -> dict:
    """One result row as a dict of results.csv's columns (None where empty), for --json."""
    return {k: getattr(row, k) for k in COLUMNS}


def _csv_value(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def groups(rows: list[Row]) -> dict:
    """Measured rows (ok or unverified) grouped by (strategy, layout, pattern, threads, cache)."""
    out = defaultdict(list)
    for r in rows:
        if r.status in ("ok", "unverified") and r.wall_s is not None:
            out[tuple(getattr(r, k) for k in KEY)].append(r)
    return out


def _fmt(x, spec="{:.3g}"):
    return "" if x is None else spec.format(x)


def summary_lines(rows: list[Row], source_bytes: int = 0) -> list[str]:
    lines = ["| strategy | layout | pattern | threads | cache | median s | min-max s | median GB/s | cpu s | "
             "peak RSS MB | stored/raw | of limit | verified |",
             "|---|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for key, rs in sorted(groups(rows).items(), key=lambda kv: (kv[0][2], kv[0][4], kv[0][0], kv[0][1], kv[0][3])):
        walls = [r.wall_s for r in rs]
        med = statistics.median(walls)
        frac = [r.fraction_of_limit for r in rs if r.fraction_of_limit]
        ok = sum(r.verified for r in rs)
        ratio = rs[0].bytes_on_disk / source_bytes if rs[0].bytes_on_disk and source_bytes else None
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {med:.4g} | "
                     f"{min(walls):.3g}-{max(walls):.3g} | {_fmt(statistics.median([r.gbps for r in rs]))} | "
                     f"{_fmt(statistics.median([r.cpu_s for r in rs]))} | {_fmt(max(r.peak_rss_mb for r in rs), '{:.0f}')} | "
                     f"{_fmt(ratio)} | {_fmt(statistics.median(frac) if frac else None, '{:.0%}')} | "
                     f"{'yes' if ok == len(rs) else f'**NO: {len(rs) - ok} of {len(rs)}**'} |")
    return lines


def headline_lines(rows: list[Row]) -> list[str]:
    """Per pattern and cache: the fastest verified configuration of each strategy."""
    best = {}
    for key, rs in groups(rows).items():
        if not all(r.verified for r in rs):
            continue
        med = statistics.median(r.wall_s for r in rs)
        k = (key[2], key[4], key[0])
        if k not in best or med < best[k][0]:
            best[k] = (med, key[1], key[3])
    strategies = sorted({k[2] for k in best})
    cells = sorted({(k[0], k[1]) for k in best}, key=lambda pc: (list(DESCRIPTIONS).index(pc[0])
                                                                  if pc[0] in DESCRIPTIONS else 99, pc[1]))
    lines = ["| pattern | cache | " + " | ".join(strategies) + " |", "|---|---|" + "---:|" * len(strategies)]
    for pattern, cache in cells:
        vals = [best.get((pattern, cache, s)) for s in strategies]
        fastest = min(v[0] for v in vals if v)
        text = [("" if v is None else (f"**{v[0]:.3g}**" if v[0] == fastest else f"{v[0]:.3g}")) for v in vals]
        lines.append(f"| {pattern} | {cache} | " + " | ".join(text) + " |")
    return lines


def write_markdown(outcome: Outcome, cfg, path: Path, command: str, machine: str, versions: str) -> None:
    rows = outcome.rows
    skipped = [r for r in rows if r.status == "skipped"]
    failed = [r for r in rows if r.status == "failed"]
    unverified = [r for r in rows if r.status == "unverified"]
    refs = [r for r in rows if r.status == "reference"]
    lines = [
        f"# h5turbo bench: {cfg.name}",
        "",
        f"- matrix: {cfg.source.describe()}; {cfg.description}",
        f"- date: {outcome.started}",
        f"- machine: {machine}",
        f"- command: `{command}`",
        f"- versions: {versions}",
        f"- load average (1, 5, 15 min) before: {outcome.load_before}; after: {outcome.load_after}",
        f"- each measurement: {cfg.warmups} warm-up run(s), then {cfg.repeats} repeats, every result verified "
        "against the source array; cold = the store evicted from the page cache before each run "
        "(posix_fadvise DONTNEED, residency checked with mincore); warm = read once first; every run opens "
        "the store afresh (open time included, library chunk caches empty)",
        f"- estimated {outcome.estimate_s:.0f} s, took {outcome.elapsed_s:.0f} s",
        "",
        "## Fastest configuration per strategy (median seconds; best layout and thread count)",
        "",
        *headline_lines(rows),
        "",
        "## All measurements (median of the repeats)",
        "",
        "'of limit': cold rows against the disk's sequential read bandwidth (scaled by the stored/raw ratio), "
        "warm rows against the codec's decode-only throughput on the same thread count (h5turbo's decoders, "
        "h5turbo._native.codec_limit; zarr stores with the same codec use the same figure). "
        "Peak RSS is this process's; h5py's worker processes are not included. cpu s includes the workers'.",
        "",
        *summary_lines(rows, cfg.source.nbytes),
        "",
    ]
    if refs:
        lines += ["## Reference rows", "", "| reference | store / layout | threads | seconds | GB/s | note |",
                  "|---|---|---:|---:|---:|---|"]
        lines += [f"| {r.strategy} | {r.layout} | {r.threads} | {_fmt(r.wall_s)} | {_fmt(r.gbps)} | {r.note} |"
                  for r in refs]
        lines.append("")
    for title, group in (("Unverified (kept in results.csv, marked)", unverified), ("Failed", failed),
                         ("Skipped", skipped)):
        if group:
            seen = set()
            lines += [f"## {title}", ""]
            for r in group:
                item = f"- {r.strategy}, {r.layout}, {r.pattern}: {r.note}"
                if item not in seen:
                    seen.add(item)
                    lines.append(item)
            lines.append("")
    lines += ["## Patterns", ""] + [f"- {p}: {DESCRIPTIONS[p]}" for p in cfg.patterns] + [""]
    lines += ["Plots: time_by_pattern.png, speedup_threads.png, ratio_vs_speed.png. Raw rows: results.csv.", ""]
    path.write_text("\n".join(lines))


# ---------------------------------------------------------------------- plots


def _best_by(rows: list[Row], key_fn) -> dict:
    """Median wall per key, keeping the fastest layout/threads for each key."""
    best = {}
    for key, rs in groups(rows).items():
        k = key_fn(key)
        med = statistics.median(r.wall_s for r in rs)
        if k not in best or med < best[k]:
            best[k] = med
    return best


def plot_all(rows: list[Row], folder: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = [_plot_time(rows, folder, plt), _plot_speedup(rows, folder, plt), _plot_ratio(rows, folder, plt)]
    return paths


def _plot_time(rows, folder, plt) -> Path:
    best = _best_by(rows, lambda k: (k[4], k[2], k[0]))  # cache, pattern, strategy
    caches = sorted({k[0] for k in best}) or ["-"]
    strategies = sorted({k[2] for k in best})
    fig, axes = plt.subplots(1, len(caches), figsize=(5 * len(caches), 4.5), squeeze=False, sharey=True)
    for ax, cache in zip(axes[0], caches):
        patterns = [p for p in DESCRIPTIONS if any(k[0] == cache and k[1] == p for k in best)]
        width = 0.8 / max(1, len(strategies))
        for i, s in enumerate(strategies):
            xs = [j + i * width for j, p in enumerate(patterns) if (cache, p, s) in best]
            ys = [best[(cache, p, s)] for p in patterns if (cache, p, s) in best]
            ax.bar(xs, ys, width, label=s)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(patterns))])
        ax.set_xticklabels(patterns, rotation=45, ha="right", fontsize=7)
        ax.set_yscale("log")
        ax.set_title(f"cache: {cache}", fontsize=9)
    axes[0][0].set_ylabel("median seconds (best layout and threads)")
    axes[0][-1].legend(fontsize=6)
    return _save(fig, folder / "time_by_pattern.png", plt)


def _plot_speedup(rows, folder, plt) -> Path:
    """One panel per pattern, one line per strategy (warm cache; for each strategy the
    layout that is fastest at its highest thread count)."""
    walls = {}
    for key, rs in groups(rows).items():
        if key[2] != "write" and key[4] == "warm":
            walls[key] = statistics.median(r.wall_s for r in rs)
    patterns = [p for p in DESCRIPTIONS if any(k[2] == p for k in walls)]
    cols = min(3, max(1, len(patterns)))
    nrows = max(1, (len(patterns) + cols - 1) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(max(4.5, 3.2 * cols), max(3.5, 2.6 * nrows)), squeeze=False)
    plotted = set()
    strategies = sorted({k[0] for k in walls})
    colour = {s: f"C{i % 10}" for i, s in enumerate(strategies)}  # the same colour in every panel
    for ax, pattern in zip(axes.ravel(), patterns):
        for strategy in strategies:
            line = _best_speedup_line(walls, strategy, pattern)
            if len(line) > 1:
                ax.plot([t for t, _ in line], [x for _, x in line], marker="o", color=colour[strategy])
                plotted.add(strategy)
        ax.set_title(pattern, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(patterns):]:
        ax.axis("off")
    axes[0][0].set_ylabel("speed-up over 1 thread", fontsize=8)
    axes[-1][0].set_xlabel("threads (h5py: processes)", fontsize=8)
    shown = [s for s in strategies if s in plotted]  # fixed-thread strategies have no line
    handles = [plt.Line2D([], [], color=colour[s], marker="o") for s in shown]
    if handles and len(patterns) == 1:
        axes[0][0].legend(handles, shown, fontsize=7, loc="upper left")
    elif handles:
        fig.legend(handles, shown, fontsize=7, loc="lower right")
    return _save(fig, folder / "speedup_threads.png", plt)


def _best_speedup_line(walls: dict, strategy: str, pattern: str) -> list:
    layouts = {k[1] for k in walls if k[0] == strategy and k[2] == pattern}
    best, best_time = [], None
    for layout in layouts:
        times = sorted((k[3], w) for k, w in walls.items() if k[:3] == (strategy, layout, pattern))
        if not times or times[0][0] != 1:
            continue
        if best_time is None or times[-1][1] < best_time:
            best_time = times[-1][1]
            best = [(t, times[0][1] / w) for t, w in times]
    return best


def rows_from_csv(path: Path) -> list[Row]:
    """The rows of a results.csv, typed again (to redraw plots or tables)."""
    out = []
    for rec in read_csv(path):
        values = {}
        for k in COLUMNS:
            v = rec.get(k, "")
            kind = Row.__dataclass_fields__[k].type
            if v == "":
                values[k] = None if k not in ("strategy", "layout", "pattern", "cache", "status", "note") else ""
            elif k == "verified":
                values[k] = v == "True"
            elif k in ("threads", "rep", "bytes", "bytes_on_disk"):
                values[k] = int(v)
            elif "float" in str(kind):
                values[k] = float(v)
            else:
                values[k] = v
        values["threads"] = values["threads"] or 0
        values["verified"] = bool(values["verified"])
        out.append(Row(**values))
    return out


def _plot_ratio(rows, folder, plt) -> Path:
    fig, ax = plt.subplots(figsize=(5, 4))
    points = defaultdict(list)
    for key, rs in groups(rows).items():
        if key[2] in ("read_all", "colsums") and key[4] == "warm" and rs[0].bytes_on_disk:
            gbps = statistics.median(r.gbps for r in rs)
            points[key[0]].append((rs[0].bytes_on_disk / (rs[0].bytes or 1), gbps))
    for s, pts in sorted(points.items()):
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=s, s=12)
    ax.set_xlabel("stored / raw bytes")
    ax.set_ylabel("GB/s, whole-matrix reads, warm")
    ax.legend(fontsize=6)
    return _save(fig, folder / "ratio_vs_speed.png", plt)


def _save(fig, path: Path, plt) -> Path:
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a crowded figure keeps its default margins
        fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------- the scripts in benchmarks/


def timing_rows(rows, base: float) -> list[str]:
    """Markdown rows `| name | median s | runs (s) | speed-up over base |` for
    [(name, median, runs)]."""
    return [f"| {name} | {t:.2f} | {', '.join(f'{x:.2f}' for x in runs)} | {base / t:.2f}x |"
            for name, t, runs in rows]


def publish(lines: list[str], output) -> None:
    """Print a report and, when `output` (a Path) is given, write it there too."""
    text = "\n".join(lines) + "\n"
    print(text)
    if output:
        output.write_text(text)


def run_header(title: str, started: float, load_before, load_after, script: str, argv: list[str]) -> list[str]:
    """The opening lines every report in benchmarks/results shares: title, UTC date,
    machine, load averages before and after (1, 5, 15 min) and the command."""
    loads = " / ".join(", ".join(f"{x:.2f}" for x in load) for load in (load_before, load_after))
    return [
        f"# {title}",
        "",
        f"- date: {datetime.datetime.fromtimestamp(started, datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine()}",
        f"- load average (1, 5, 15 min) before / after: {loads}",
        f"- command: `python benchmarks/{Path(script).name} {shlex.join(argv)}`",
    ]
