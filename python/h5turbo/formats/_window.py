"""Ordered work on a thread pool with a bounded number of tasks in flight."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from typing import Any, Callable


def in_order(pool: Executor, tasks: Iterator[Callable[[], Any] | Ready], window: int) -> Iterator[Any]:
    """Run tasks on the pool, at most `window` at a time, and give results in task order
    (so memory holds at most `window` results however many tasks there are). A
    `Ready` task is a result already at hand, kept in its place in the order."""
    pending: deque = deque()
    for task in tasks:
        pending.append(_done(task.value) if isinstance(task, Ready) else pool.submit(task))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


class Ready:
    """A result that needs no work, to be given out in order among the others."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def _done(value: Any) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future
