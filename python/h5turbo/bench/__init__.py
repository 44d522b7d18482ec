"""``h5turbo bench``: which storage layout and which reader is fast for an access
pattern on this machine. Strategies x layouts x patterns x threads x cold/warm cache,
every result verified against the source; results.csv, report.md and plots.

    from h5turbo.bench import preset, Runner
"""

from .presets import Config, preset, thread_counts
from .run import Row, Runner
from .strategies import Layout, parse_layout

__all__ = ["Config", "Layout", "Row", "Runner", "parse_layout", "preset", "thread_counts"]
