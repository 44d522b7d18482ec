"""What every benchmark script here shares: the machine line of a report, the timing
rule (a checked warm-up, then the median of repeats), page-cache warming and the
codec-only limit (crates/h5turbo-core/examples/codec_limit.rs).

They live in the package (h5turbo.bench.measure, used by `h5turbo bench`); this module
re-exports them for the scripts, with the source tree's python/ on the path when
h5turbo is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

try:
    from h5turbo.bench.measure import codec_limit, interleaved_times, machine, median_time, paired_ratio, warm
except ImportError:  # running from a checkout without an installed h5turbo
    sys.path.insert(0, str(REPO / "python"))
    from h5turbo.bench.measure import codec_limit, interleaved_times, machine, median_time, paired_ratio, warm

__all__ = ["REPO", "codec_limit", "interleaved_times", "machine", "median_time", "paired_ratio", "warm",
           "timing_rows", "publish"]


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
