"""What every benchmark script here shares: the machine line of a report, the timing
rule (a checked warm-up, then the median of repeats), page-cache warming and the
codec-only limit (crates/h5turbo-core/examples/codec_limit.rs)."""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


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


def median_time(read, repeats: int, check) -> tuple[float, list[float]]:
    """A warm-up whose result must pass `check`, then the median of `repeats` runs."""
    check(read())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = read()
        times.append(time.perf_counter() - start)
        del result
    return statistics.median(times), times


def warm(path: Path) -> None:
    """Read every byte once so the timed reads hit the page cache."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def codec_limit(path: Path, threads: int, repeats: int, dataset: str = "matrix") -> float | None:
    """Median seconds for decoding every chunk of `dataset` from memory on `threads`."""
    cmd = ["cargo", "run", "--release", "-q", "--example", "codec_limit", "--",
           str(path), dataset, str(threads), str(repeats)]
    try:
        out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"  codec limit not measured: {exc}", file=sys.stderr)
        return None
    match = re.search(r"median_s=([0-9.]+)", out)
    return float(match.group(1)) if match else None
