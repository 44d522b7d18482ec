"""Ordered work on a thread pool with a bounded number of tasks in flight."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable


def in_order(pool: ThreadPoolExecutor, tasks: Iterator[Callable[[], Any]], window: int) -> Iterator[Any]:
    """Run tasks on the pool, at most `window` at a time, and give results in task order
    (so memory holds at most `window` results however many tasks there are)."""
    pending: deque = deque()
    for task in tasks:
        pending.append(pool.submit(task))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()
