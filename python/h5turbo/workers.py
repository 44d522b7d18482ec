"""The thread pools h5turbo's Python code hands work to (fast5 files, sparse matrix
parts, genotype blocks, chunks to encode): concurrent.futures' pool, with two cases
it gets wrong for a library mended.

- Once the main thread has returned, Python refuses new work to every
  ThreadPoolExecutor, and a thread of the program that is still running (not a
  daemon, so Python waits for it) failed its reads with "cannot schedule new futures
  after interpreter shutdown". From then on, the work is done in the calling thread.
- A pool shut down from one of its own threads (a reader's generator finalised there
  by the cyclic garbage collector) cannot wait for itself: it printed "cannot join
  current thread" and stopped half way. Nor may the collector wait for any thread: it
  runs wherever an allocation sets it off, inside threading's own locks too (a thread
  starting, holding the lock every thread takes as it ends), and the join waited
  forever. A pool shuts down without waiting in a collection, in one of its own
  threads, and in a forked child, which has none of the parent's threads; its threads
  finish their task in hand and end.

Importing this module imports concurrent.futures.thread too, which registers its
exit hook: a first import after the main thread returned raised "can't register
atexit after shutdown".
"""

from __future__ import annotations

import gc
import os
import threading
from concurrent.futures import BrokenExecutor, Future, ThreadPoolExecutor
from typing import Any, Callable, Optional


# The threads running a garbage collection now (finalisers run within it).
_collecting_on: set[int] = set()


def _note_collection(phase: str, info: dict) -> None:
    if phase == "start":
        _collecting_on.add(threading.get_ident())
    else:
        _collecting_on.discard(threading.get_ident())


gc.callbacks.append(_note_collection)


class WorkerPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor (see the module's docstring for what differs)."""

    def __init__(self, workers: int, name: str = "h5turbo", initializer: Optional[Callable[..., Any]] = None,
                 initargs: tuple = ()):
        idents: set[int] = set()  # the set, not the pool: no cycle through the initializer
        self._worker_idents = idents
        self._owner_pid = os.getpid()
        self._shut_down_here = False

        def start_worker(*args: Any) -> None:
            idents.add(threading.get_ident())
            if initializer is not None:
                initializer(*args)

        super().__init__(workers, thread_name_prefix=name, initializer=start_worker, initargs=initargs)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        try:
            return super().submit(fn, *args, **kwargs)
        except BrokenExecutor:  # an initializer failed: the pool's own error
            raise
        except RuntimeError:
            if self._shut_down_here:  # a pool this code shut down itself: a bug, say so
                raise
            # the interpreter is shutting down (no new work, no new threads): done here,
            # with this thread's settings (io_depth) rather than the pool's initializer's
            return self._run_here(fn, args, kwargs)

    def _run_here(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Future:
        future: Future = Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # the caller's future.result() raises it
            future.set_exception(error)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shut_down_here = True
        here = threading.get_ident()
        may_wait = os.getpid() == self._owner_pid and here not in self._worker_idents and here not in _collecting_on
        super().shutdown(wait=wait and may_wait, cancel_futures=cancel_futures)
